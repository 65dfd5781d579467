"""A kernel's values reduced against a column in the kernel's own pass: `h @ w` for one
column w (`kernel_matmul`), and the sums or means of h along its rows (`row_sums`, h
times a column of ones), h never formed; their pullbacks are one seeded pass each
(runtime.seeded_vjp). passes/reverse.py pairs a kernel with the one statement that
reads its values. Signatures seen before run the seeded call kept for them.
"""
from __future__ import annotations

from typing import Any, Sequence

import gast
import numpy as np

from .array_rules import matmul_lhs_bar, matmul_rhs_bar
from .gemm import matmul
from .backends import backend_for
from .runtime import (LAUNCH_PLANS, Kernel, keep, plain_signature, remember, seeded_vjp, apply,
                      broadcast_shapes, compute_dtype, vjp)


# ------------------------------------------------------------------ a kernel times a column
#
# `h = kernel(args); out = h @ w` with w one column (k, 1) or a vector (k,), and h read by
# nothing else (passes/reverse.py finds the pair): the product is the gradient of
# sum(a * w.T * h) w.r.t. a = ones((n, 1)), a column the driver sums each row into, so h
# is never formed; and its pullback is one seeded pass giving the kernel's params their
# gradients (seed out_bar * w.T) and w its own (the right factor's, summed over the rows).
# Otherwise (w of several columns, h not 2-D, the cuda backend) h is formed and numpy
# multiplies: the same numbers up to the order of the sums.

def one_column(shape: tuple[int, ...], w: Any, dtype: np.dtype) -> bool:
    """Do values of `shape` times w take the fused path: 2-D values, w an ndarray of the
    values' dtype that is one column (k, 1) or a vector (k,)?"""
    ws = np.shape(w)
    return (len(shape) == 2 and len(ws) in (1, 2) and ws[0] == shape[1] and (len(ws) == 1 or ws[1] == 1)
            and isinstance(w, np.ndarray) and w.dtype == dtype)


def _seeded_plan(kernel: Kernel, values: list, backend: str, active: tuple[str, ...], factor_grads: tuple[int, ...]):
    """The call `seeded_vjp` kept for these values' signature, or None."""
    sig = plain_signature(values)
    return None if sig is None else kernel.launch_plans.get(("seeded", backend, active, factor_grads, sig))


def kept_matmul(kernel: Kernel, args: Sequence[Any], w: Any, backend):
    """The call `kernel_matmul` kept for this signature (fast(args, w) -> the product), or None."""
    sig = plain_signature([*args, w])
    return None if sig is None else kernel.launch_plans.get(("matmul", backend, sig))


def kept_matmul_vjp(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], w: Any, w_grad: bool,
                    out_bar: Any, backend):
    """The call `kernel_matmul_vjp` kept for this signature (fast(args, w, out_bar) -> the
    gradients), or None."""
    sig = plain_signature([*args, w, out_bar])
    if sig is None or sig[1][-1] is None:
        return None
    return kernel.launch_plans.get(("matmul_vjp", backend, active, w_grad, sig))


def kernel_matmul(kernel: Kernel, args: Sequence[Any], w: Any, backend: str = "auto"):
    """(kernel(args) @ w, the values or None): in the kernel's pass, the values not
    formed (None), where w is one column or a vector and the values 2-D; else the
    values, then numpy's product. A signature seen before (`plain_signature`) runs
    the seeded call it kept, with a column of ones kept too (read-only: a factor)."""
    fast = kept_matmul(kernel, args, w, backend)
    if fast is not None:
        return fast(args, w), None
    sig = plain_signature([*args, w])
    resolved = backend_for(backend, list(args) + [w])
    shape = broadcast_shapes(*(np.shape(a) for a in args))
    dtype = compute_dtype(args)
    if one_column(shape, w, dtype):
        n, k = shape
        factors = [np.ones((n, 1), dtype), w.reshape(1, k)]
        got = seeded_vjp(kernel, args, (), factors, resolved, factor_grads=(0,))
        if got is not None:
            seeded = _seeded_plan(kernel, [*args, *factors], resolved, (), (0,))
            if sig is not None and seeded is not None:
                ones = factors[0]
                ones.flags.writeable = False
                shaped = (n, 1) if w.ndim == 2 else (n,)
                def fast(args, w):
                    return seeded([*args, ones, w.reshape(1, k)])[0].reshape(shaped)
                fast.parts = ("matmul", seeded, ones, k, shaped)     # (array_program lowers it)
                remember(kernel, ("matmul", backend, sig), fast)
            return (got[0] if w.ndim == 2 else got[0].reshape(n)), None

    values = apply(kernel, args, resolved)
    return matmul(values, w, resolved), values


def kernel_matmul_vjp(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], w: Any, w_grad: bool,
                      out_bar: Any, values: Any, backend: str = "auto"):
    """The gradients of sum(out_bar * (kernel(args) @ w)) w.r.t. the active params, then
    w's when `w_grad`. `values` is what `kernel_matmul` returned: None, one pass of the
    seeded kernel (a signature seen before: the seeded call kept for it); else numpy's
    adjoints of the product and the kernel's vjp."""
    if values is None:
        fast = kept_matmul_vjp(kernel, args, active, w, w_grad, out_bar, backend)
        if fast is not None:
            return fast(args, w, out_bar)
        sig = plain_signature([*args, w, out_bar])
        key = ("matmul_vjp", backend, active, w_grad, sig)
        resolved = backend_for(backend, list(args) + [w])
        n, k = broadcast_shapes(*(np.shape(a) for a in args))
        factors = [np.asarray(out_bar, compute_dtype(args)).reshape(n, 1), w.reshape(1, k)]
        fg = (1,) if w_grad else ()
        got = seeded_vjp(kernel, args, active, factors, resolved, factor_grads=fg)
        assert got is not None, "kernel_matmul took this path, so the seeded kernel applies"
        seeded = _seeded_plan(kernel, [*args, *factors], resolved, active, fg)
        if sig is not None and sig[1][-1] is not None and seeded is not None:
            def fast(args, w, out_bar):
                got = seeded([*args, out_bar.reshape(n, 1), w.reshape(1, k)])
                return got[:-1] + [got[-1].reshape(w.shape)] if w_grad else got
            fast.parts = ("matmul_vjp", seeded, n, k, w_grad)
            remember(kernel, key, fast)
        return got[:-1] + [got[-1].reshape(w.shape)] if w_grad else got
    grads = vjp(kernel, args, active, matmul_lhs_bar(out_bar, values, w), backend=backend) if active else []
    return list(grads) + ([matmul_rhs_bar(out_bar, values, w)] if w_grad else [])


# ------------------------------------------------------------------ a kernel summed along its rows
#
# `h = kernel(args); r = np.sum(h, axis=-1)` (or np.mean, keepdims or not) with h read by
# nothing else: r is h @ w for a column w of ones (of 1/k for a mean), which
# `kernel_matmul` computes in the kernel's pass, h never formed, where h is 2-D; its
# pullback is then one seeded pass. Each row is summed in the driver's order (not
# numpy's pairwise one). That pass vectorises along a row: a kernel with transcendental
# calls (an exp) over rows shorter than ROW_PASS_MIN would run their last elements
# through scalar calls, so there `row_sums` declines (None) and the caller (the
# generated code's `kernel_rowsum`, passes/reverse.py) forms the values as the site's
# mode would. The choice depends on the shapes and the kernel only, never on the mode.

_ROW_WEIGHTS: dict = {}
ROW_PASS_MIN = 32


def _row_weights(k: int, dtype: np.dtype, keepdims: bool, mean: bool) -> np.ndarray:
    """The (k, 1) column (or (k,) vector, without keepdims) of ones, or of 1/k for a
    mean; kept, read-only."""
    key = (k, dtype.str, keepdims, mean)
    w = _ROW_WEIGHTS.get(key)
    if w is None:
        if len(_ROW_WEIGHTS) >= LAUNCH_PLANS:
            _ROW_WEIGHTS.clear()
        w = np.full((k, 1) if keepdims else (k,), 1.0 / k if mean else 1.0, dtype)
        w.flags.writeable = False
        _ROW_WEIGHTS[key] = w
    return w


def _row_pass(kernel: Kernel, args: Sequence[Any], axis: int, backend: str):
    """(shape, dtype) when the row reduction runs in the kernel's pass, else None."""
    shape = broadcast_shapes(*(np.shape(a) for a in args))
    if len(shape) != 2 or axis not in (1, -1) or shape[1] == 0 or kernel.program.state \
            or not backend_for(backend, list(args)).ordered_sums:
        return None
    if shape[1] < ROW_PASS_MIN and _calls_math(kernel):
        return None
    return shape, compute_dtype(args)


def _calls_math(kernel: Kernel) -> bool:
    return kernel.cached(("calls math",), lambda: any(
        isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
        for fn in kernel.program.functions.values() for n in gast.walk(fn)))


def row_sums(kernel: Kernel, args: Sequence[Any], axis: int, keepdims: bool, mean: bool = False,
             backend: str = "auto"):
    """np.sum (np.mean) of kernel(args) along `axis`, in the kernel's pass with the
    values never formed; None where that does not apply (`_row_pass`). What a plain
    signature got is kept for it (`kept_row_sums`): the next call is one lookup and the
    kept seeded call (or None at once)."""
    kept = kept_row_sums(kernel, args, axis, keepdims, mean, backend)
    if kept is not None:
        return kept(args)
    sig = plain_signature(list(args))
    key = ("row sums", backend, axis, keepdims, mean, sig)
    got = _row_pass(kernel, args, axis, backend)
    if got is None:
        if sig is not None:
            keep(kernel, key, _declined)
        return None
    (n, k), dtype = got
    w = _row_weights(k, dtype, keepdims, mean)
    out, values = kernel_matmul(kernel, args, w, backend)
    if sig is not None:
        fast = kernel.launch_plans.get(("matmul", backend, plain_signature([*args, w])))
        if values is not None:
            keep(kernel, key, _declined)
        elif fast is not None:
            keep(kernel, key, lambda args: fast(args, w))
    return out if values is None else None


def _declined(*args):
    return None


def kept_row_sums(kernel: Kernel, args: Sequence[Any], axis: int, keepdims: bool, mean: bool, backend):
    """The call `row_sums` kept for this signature (kept(args) -> the sums, or None where
    the row pass declines), or None."""
    sig = plain_signature(list(args))
    return None if sig is None else kernel.kept.get(("row sums", backend, axis, keepdims, mean, sig))


def kept_row_sums_vjp(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], axis: int, keepdims: bool,
                      mean: bool, out_bar: Any, backend):
    """The call `row_sums_vjp` kept for this signature (kept(args, out_bar) -> the
    gradients), or None."""
    sig = plain_signature([*args, out_bar])
    return None if sig is None else \
        kernel.kept.get(("row sums vjp", backend, axis, keepdims, mean, active, sig))


def row_sums_vjp(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], axis: int, keepdims: bool,
                 mean: bool, out_bar: Any, backend: str = "auto"):
    """The gradients (in the params' shapes) of sum(out_bar * row_sums(...)), in one
    seeded pass; only after `row_sums` gave a result. Kept per plain signature, as
    row_sums is."""
    kept = kept_row_sums_vjp(kernel, args, active, axis, keepdims, mean, out_bar, backend)
    if kept is not None:
        return kept(args, out_bar)
    sig = plain_signature([*args, out_bar])
    key = ("row sums vjp", backend, axis, keepdims, mean, active, sig)
    (n, k), dtype = _row_pass(kernel, args, axis, backend)
    w = _row_weights(k, dtype, keepdims, mean)
    grads = kernel_matmul_vjp(kernel, args, active, w, False, out_bar, None, backend)
    if sig is not None:
        fast = kernel.launch_plans.get(("matmul_vjp", backend, active, False, plain_signature([*args, w, out_bar])))
        if fast is not None:
            keep(kernel, key, lambda args, out_bar: fast(args, w, out_bar))
    return grads

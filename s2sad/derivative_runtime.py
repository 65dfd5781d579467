"""What an array-level derivative (passes/reverse.py's generated source) calls at run
time, for one backend: `runtime_names(backend)` is the part of the namespace that source
runs with that launches kernels, matrix products and reductions.

The passes write the derivative; this module, a layer above them, is what it runs on:
`plans` hands `runtime_names` to `array_compiled.ArrayCompiled`, so that the passes never import
the runtime.

Invariants:
- every name the generated source calls at run time and does not bind itself is here or
  in array_rules.HELPERS (passes/arrayprog.RESERVED keeps user names off them), which
  plans hands down too;
- `kernel_vjp` gives each active input the bits store mode gives it (below).
"""
from __future__ import annotations

import inspect

import numpy as np

from . import array_rules, column_products, gemm, gemm_epilogue, productsums, reduce, rowlayernorm, rowsoftmax, runtime, smath, \
    xent_head
from .backends import backend_for, choose
from .passes.rowfusion import SWITCH


def runtime_names(backend: str) -> dict:
    """name -> what the generated source calls by that name, on `backend`."""
    return {
        "apply": with_backend(runtime.apply, backend),
        "sum_dual": with_backend(runtime.sum_dual, backend),
        "sum_grads": with_backend(runtime.sum_grads, backend),
        "not_needed": NOT_NEEDED,
        "store_partials": with_backend(runtime.store_partials, backend),
        "vjp": with_backend(kernel_vjp, backend),
        "unit_vjp": with_backend(unit_vjp, backend),
        "matmul_bias": with_backend(matmul_bias, backend),
        "head_logits": with_backend(head_logits, backend),
        "xent_head_bars": with_backend(xent_head_bars, backend),
        "xent_head_sums": with_backend(xent_head_sums, backend),
        "product_partials": with_backend(gemm_epilogue.product_partials, backend),
        "lhs_bar_sums": with_backend(gemm_epilogue.lhs_bar_sums, backend),
        "jvp": with_backend(runtime.jvp, backend),
        "kernel_matmul": with_backend(column_products.kernel_matmul, backend),
        "kernel_matmul_vjp": with_backend(column_products.kernel_matmul_vjp, backend),
        "kernel_rowsum": with_backend(kernel_rowsum, backend),
        "kernel_rowsum_vjp": with_backend(kernel_rowsum_vjp, backend),
        "matmul": with_backend(gemm.matmul, backend),
        "dot": with_backend(gemm.dot, backend),
        **{f"reduce_{op}": with_backend(getattr(reduce, f"reduce_{op}"), backend)
           for op in ("sum", "mean", "max", "min")},
        # scipy.special's logsumexp, softmax, log_softmax: one pass per row along the last axis
        **{f"row_{f}": with_backend(getattr(rowsoftmax, f"row_{f}"), backend)
           for f in ("logsumexp", "softmax", "log_softmax", "logsumexp_bar", "softmax_bar", "log_softmax_bar",
                     "dot_log_softmax", "dot_log_softmax_bar", "logsumexp_max_bar")},
        **{f: with_backend(getattr(rowlayernorm, f), backend) for f in ("row_layer_norm", "row_layer_norm_bar")},
        "broadcast_size": runtime.broadcast_size,
        "product_sums": with_backend(productsums.product_sums, backend),
    }


def with_backend(fn, backend):
    """functools.partial(fn, backend=backend), as a generated function of fn's other
    parameters (names and defaults kept): a partial with a keyword builds a dict on
    every call, a fifth of a small elementwise site's Python. fn's parameters are all
    positional-or-keyword, one of them `backend`."""
    params = list(inspect.signature(fn).parameters.values())
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params) and "backend" in [p.name for p in params], fn
    ns = {"FN": fn, "BACKEND": backend}
    heads, names = [], []
    for p in params:
        if p.name == "backend":
            names.append("BACKEND")
            continue
        if p.default is p.empty:
            heads.append(p.name)
        else:
            ns[f"D_{p.name}"] = p.default
            heads.append(f"{p.name}=D_{p.name}")
        names.append(p.name)
    text = (f"def {fn.__name__}({', '.join(heads)}):\n"
            f"    return FN({', '.join(names)})\n")
    exec(compile(text, f"<s2sad {fn.__name__} on a backend>", "exec"), ns)
    made = ns[fn.__name__]
    made.__doc__ = fn.__doc__
    return made


# what a scalar dual gets for an input its partials do not read, in a gradient that does
# not compute that input: NaN with IEEE arithmetic (never an exception), so that a value
# computed from it by mistake shows
NOT_NEEDED = smath.Real(float("nan"))


def kernel_vjp(kernel, args, active, out_bar, backend="auto"):
    """runtime.vjp giving each active input the bits store mode gives it: the
    full-shape partial * out_bar, summed back to the input's shape by the generated
    code's `unbroadcast`. An input broadcast along leading axes only (a bias row) is
    summed inside the driver, in element order, which adds as numpy's sum over those
    axes does (runtime.leading_broadcast); any other broadcast input is materialized
    at the full shape, so that its gradient is full-shape too and unbroadcast sums it."""
    if not active:   # the kernel reads no differentiated value: nothing to pull back
        return []
    # which inputs to materialize depends on the shapes, dtype and backend only: kept per
    # plain signature (a training loop's calls share one); where none is, runtime.vjp's
    # call kept for the signature (`keep_signature_call`) is the whole pullback
    inputs = [*args, out_bar]
    if choose(backend).fast_path:
        kept = runtime.kept_vjp(kernel, inputs, active)
        if kept is not None:
            return kept(inputs)
    sig = runtime.plain_signature(inputs)
    key = ("materialized", backend, active, sig)
    spread = kernel.kept.get(key) if sig is not None else None
    if spread is None:
        spread = _materialized(kernel, args, active, backend)
        if sig is not None:
            runtime.keep(kernel, key, spread)
    if not spread[0]:
        return runtime.vjp(kernel, args, active, out_bar, backend=backend)
    indices, shape, dtype = spread
    mat = list(args)
    for i in indices:
        mat[i] = np.ascontiguousarray(np.broadcast_to(np.asarray(args[i], dtype), shape))
    return runtime.vjp(kernel, mat, active, out_bar, backend=backend)


def matmul_bias(a, w, kernel, at, row, backend="auto"):
    """(p, kernel applied to p and row), p = a @ w at the kernel's parameter `at`, the
    kernel `p + row` (passes/biasproducts): where s2sad's product takes a and w and row
    is a row of their dtype (rowfusion's switch on), z = a @ w + row in one pass
    (gemm.product_plus_row: the same bits) and p a read-only zero-stride array of the
    product's shape and dtype (its pullback reads no value of it); else the product and
    the kernel's apply, as the two statements were."""
    if SWITCH.on:
        z = gemm.product_plus_row(a, w, row, backend)
        if z is not None:
            return gemm.stand_in(z.dtype, z.shape), z
    p = gemm.matmul(a, w, backend)
    return p, runtime.apply(kernel, (p, row) if at == 0 else (row, p), backend)


def head_logits(a, w, kernel, at, row, y, backend="auto"):
    """(p, z) of `z = a @ w + row` (passes/xentheads: z read only by the cross-entropy
    against y, whose adjoint xent_head_bars forms): where xent_head's pass takes the
    operands, nothing is computed and both are one read-only zero-stride array of z's
    shape and dtype (xent_head_bars forms z a block of rows at a time); else matmul_bias."""
    if xent_head.takes(a, w, row, y, backend):
        z = gemm.stand_in(a.dtype, (a.shape[0], w.shape[1]))
        return z, z
    return matmul_bias(a, w, kernel, at, row, backend)


def xent_head_bars(g, p, z, y, a, w, kernel, at, row, active, axis=1, values=False, backend="auto"):
    """The adjoints of the kernel's active inputs other than the product p (`active`: the
    kernel's parameter names, the product's among them), then w's, for the seed
    `z_bar = row_dot_log_softmax_bar(0, g, z, y, axis)` of `p, z = head_logits(a, w,
    kernel, at, row, y)`: by xent_head's pass where head_logits left z unformed, else (or
    where the pass declines: z then made by matmul_bias) the calls passes/xentheads
    replaced, in their order: z_bar, unit_vjp, unbroadcast to each input, matmul_rhs_bar.
    With `values` (value_and_grad), the rows' values `row_dot_log_softmax(z, y, axis)`
    first, made in the same pass."""
    if unformed(z):
        got = xent_head.fused_bars(g, y, a, w, row, len(active) == 2, backend, values)
        if got is not None:
            return got
    first, rest, p_bar = _head_seed(g, p, z, y, a, w, kernel, at, row, active, axis, values, backend)
    return (*first, *rest, array_rules.matmul_rhs_bar(p_bar, a, w))


def xent_head_sums(g, p, z, y, a, w, kernel, at, row, active, d, inputs, rhs=False, nxt=None, axis=1,
                   values=False, backend="auto"):
    """As xent_head_bars, where the product's adjoint goes on to the layer below instead of
    to w alone: the rows' values where `values`, the row's adjoint (where active), then
    `lhs_bar_sums(p_bar, a, w, d, inputs, rhs, nxt)`'s results, by xent_head's pass joined
    with the layer's where head_logits left z unformed, else the calls passes/xentheads
    replaced."""
    if unformed(z):
        got = xent_head.fused_head_sums(g, y, a, w, row, len(active) == 2, d, inputs, rhs, nxt, backend, values)
        if got is not None:
            return got
    first, rest, p_bar = _head_seed(g, p, z, y, a, w, kernel, at, row, active, axis, values, backend)
    return (*first, *rest, *gemm_epilogue.lhs_bar_sums(p_bar, a, w, d, inputs, rhs, nxt, backend))


def _head_seed(g, p, z, y, a, w, kernel, at, row, active, axis, values, backend) -> tuple:
    """((the rows' values,) where `values`, (the row's adjoint,) where active, the
    product's adjoint) by the calls passes/xentheads replaced; z made by matmul_bias where
    head_logits left it unformed."""
    if unformed(z):
        p, z = matmul_bias(a, w, kernel, at, row, backend)
    first = (rowsoftmax.row_dot_log_softmax(z, y, axis=axis, backend=backend),) if values else ()
    z_bar = rowsoftmax.row_dot_log_softmax_bar(0, g, z, y, axis=axis, backend=backend)
    grads = unit_vjp(kernel, (p, row) if at == 0 else (row, p), active, z_bar, backend)
    product, rest, p_bar = kernel.params[at], [], None
    for name, got in zip(active, grads):
        if name == product:
            p_bar = array_rules.unbroadcast(got, p)
        else:
            rest.append(array_rules.unbroadcast(got, row))
    return first, tuple(rest), p_bar


def unformed(z) -> bool:
    """Is z head_logits' stand-in (a read-only array of zero strides), not logits made?
    (array_special asks, to specialise the plain derivative where heads run unfused.)"""
    return type(z) is np.ndarray and z.ndim == 2 and z.strides == (0, 0) and not z.flags.writeable


def unit_vjp(kernel, args, active, out_bar, backend="auto"):
    """kernel_vjp of a kernel whose partials are the literal 1 (passes/unitpartials): the
    seed itself for each active input (x * 1.0 is x: the bits of the kernel's pass,
    without its copy; the generated unbroadcast sums it back) where the seed is a float
    ndarray of the operands' broadcast shape and every operand an ndarray of its dtype;
    kernel_vjp elsewhere."""
    if type(out_bar) is np.ndarray and out_bar.dtype.kind == "f" and active and \
            all(type(a) is np.ndarray and a.dtype == out_bar.dtype for a in args) and \
            broadcasts_to([a.shape for a in args], out_bar.shape):
        return [out_bar] * len(active)
    return kernel_vjp(kernel, args, active, out_bar, backend)


def broadcasts_to(shapes: list, full: tuple) -> bool:
    """Is `full` the broadcast shape of `shapes`? (np.broadcast_shapes costs microseconds.)"""
    if any(len(s) > len(full) for s in shapes):
        return False
    for k, d in enumerate(full):
        met = False
        for s in shapes:
            j = k - (len(full) - len(s))
            if j >= 0:
                if s[j] == d:
                    met = True
                elif s[j] != 1:
                    return False
        if not met and d != 1:
            return False
    return True


def _materialized(kernel, args, active, backend) -> tuple:
    """(the indices of the active inputs kernel_vjp materializes at the full shape, that
    shape, the dtype)."""
    shapes = [np.shape(a) for a in args]
    shape = runtime.broadcast_shapes(*shapes)
    dtype = runtime.compute_dtype(args)
    in_order = backend_for(backend, list(args)).ordered_sums
    indices = []
    for a in active:
        i = kernel.params.index(a)
        if shapes[i] != shape and not (in_order and runtime.leading_broadcast(shapes[i], shape)):
            indices.append(i)
    return tuple(indices), shape, dtype


def kernel_grads(kernel, args, active, out_bar, partials=None, backend="auto"):
    """A kernel's pullback: the active params' gradients, in their shapes, of
    sum(out_bar * kernel(args)); from the partials stored in the forward pass (store
    mode: partial * out_bar) or recomputed (`kernel_vjp`), summed back to each input's
    shape by the one unbroadcast. Both modes give the same bits."""
    grads = [p * out_bar for p in partials] if partials is not None else \
        kernel_vjp(kernel, args, active, out_bar, backend)
    return [array_rules.unbroadcast(g, args[kernel.params.index(a)]) for g, a in zip(grads, active)]


def kernel_rowsum(kernel, args, active, axis, keepdims, mean, mode, backend="auto"):
    """(the sum or mean of kernel(args) along `axis`, what `kernel_rowsum_vjp` needs).
    In the kernel's pass where `column_products.row_sums` takes it (the values never formed:
    None); else as the site's `mode` would without the pairing: the values stored with
    their partials ("store") or formed alone ("recompute"), then reduced with numpy's
    bits. Store and recompute agree bit for bit either way, as for any kernel."""
    out = column_products.row_sums(kernel, args, axis, keepdims, mean, backend)
    if out is not None:
        return out, None
    op = "mean" if mean else "sum"
    if mode == "store" and active:
        values, partials = runtime.store_partials(kernel, args, active, backend=backend)
        return reduce.reduce(op, values, axis, keepdims, backend), ("store", values, partials)
    values = runtime.apply(kernel, args, backend)
    return reduce.reduce(op, values, axis, keepdims, backend), ("recompute", values, None)


def kernel_rowsum_vjp(kernel, args, active, axis, keepdims, mean, out_bar, state, backend="auto"):
    """The active params' gradients, in their shapes, of sum(out_bar * kernel_rowsum(...))."""
    if state is None:
        return column_products.row_sums_vjp(kernel, args, active, axis, keepdims, mean, out_bar, backend)
    how, values, partials = state
    bar = (array_rules.mean_bar if mean else array_rules.sum_bar)(out_bar, values, axis, keepdims)
    return kernel_grads(kernel, args, active, bar, partials if how == "store" else None, backend)

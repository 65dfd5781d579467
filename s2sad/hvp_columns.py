"""Forward over reverse through a kernel times a column: `h = kernel(args); out = h @ w`
(the pair passes/kernelpairs.py finds, the gradient's `column_products.kernel_matmul`),
with h and its tangent h_dot never formed where w is one column.

Forward: out = h @ w and out_dot = h_dot @ w + h @ w_dot in ONE pass of h's "rows"
tangent kernel `a * g * h + a_dot * (g * h_dot + g_dot * h)` (tangent_kernels) with the
rows w.T, w_dot.T as g, g_dot: its partials w.r.t. the columns of ones a, a_dot sum every
row against w and w_dot; no n x k array is written, h's operands are read once.
Reverse: h's adjoint and its tangent are outer products kept as factors
(runtime.SeedProduct: the pullback of h's kernel reads them inside its pass); w's
adjoint `h.T @ out_bar` is a pass of h's kernel and its tangent
`h_dot.T @ out_bar + h.T @ out_bar_dot` one of the pair kernel with the columns out_bar,
out_bar_dot (column_products.kernel_matmul_vjp).

With `sums` (the program folds w's adjoint's tangent into h's pullback, hvp_reverse),
that tangent is not computed here where the kernels' passes were taken: a `ColumnSums`
stands for it, whose columns seed the column sums of h's seeded tangent kernel
(tangent_kernels, "with column sums"); `column_sums` gives the result from that pass.

Invariant: where any product does not take a kernel's pass (w of several columns, h
not 2-D, another dtype, the cuda backend), h and h_dot are formed (`values`) and every
number is what the unpaired program computes: numpy's products of the formed arrays.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .array_rules import matmul_factors, matmul_rhs_bar
from .backends import backend_for
from .column_products import kept_matmul_vjp, kernel_matmul_vjp, one_column
from .gemm import matmul
from .runtime import SeedProduct, broadcast_shapes, compute_dtype, jvp, sum_grads
from .twocalls import both, two_calls


def kernel_matmul_jvp(kernel, rows_kernel, args: Sequence[Any], active: tuple[str, ...],
                      tangents: Sequence[Any], w: Any, w_dot: Any, backend: str = "auto"):
    """(h @ w, its tangent, values): values None where both products took ONE pass of
    `rows_kernel` (h, h_dot not formed), else (h, h_dot) and the products numpy's.
    `rows_kernel` is `a * g * h + a_dot * (g * h_dot + g_dot * h)` (tangent_kernels'
    "rows" form): with the rows w.T, w_dot.T as g, g_dot and columns of ones as a, a_dot,
    its partials w.r.t. a and a_dot are h @ w and its tangent h_dot @ w + h @ w_dot.
    The pass takes the kernel's seeded pullback's conditions (a host backend, w a column
    of the values' dtype), so the reverse's passes of h's kernel apply where it ran."""
    shape = broadcast_shapes(*(np.shape(a) for a in args))
    dtype = compute_dtype(args)
    if not (one_column(shape, w, dtype) and np.shape(w_dot) == np.shape(w)
            and backend_for(backend, [*args, w]).ordered_sums):
        return formed(kernel, args, active, tangents, w, w_dot, backend)    # (the product of several columns)
    n, k = shape
    ones = np.ones((n, 1), dtype)
    rows = [w.reshape(1, k), np.asarray(w_dot, dtype).reshape(1, k)]
    out, out_dot = sum_grads(rows_kernel, [*args, *tangents, *rows, ones, ones], tuple(rows_kernel.params[-2:]),
                             backend=backend)
    shaped = (n, 1) if w.ndim == 2 else (n,)
    return out.reshape(shaped), out_dot.reshape(shaped), None


def _shapes(arrays) -> tuple:
    return tuple((np.shape(a), getattr(a, "dtype", None)) for a in arrays)


def _work(args) -> int:
    return int(np.prod(broadcast_shapes(*(np.shape(a) for a in args))))


def formed(kernel, args, active, tangents, w, w_dot, backend: str):
    """The unpaired forward: h and h_dot formed in one pass, then numpy's products."""
    h, h_dot = jvp(kernel, args, active, tangents, backend)
    out = matmul(h, w, backend)
    return out, matmul(h_dot, w, backend) + matmul(h, w_dot, backend), (h, h_dot)


@dataclass(frozen=True)
class ColumnSums:
    """w's adjoint's tangent `h_dot.T @ u + h.T @ u_dot` (w of `k` entries, shaped
    `shape`) still to be summed in h's seeded pullback: u, u_dot the columns out_bar,
    out_bar_dot."""
    u: Any
    u_dot: Any
    k: int
    shape: tuple
    dtype: Any


def column_sum_seeds(w_bar_dot) -> tuple:
    """The seeded kernel's (c, u, u_dot): a row of zeros and the columns where w's
    adjoint's tangent is a ColumnSums, else zeros (its sums are not read)."""
    if isinstance(w_bar_dot, ColumnSums):
        return np.zeros((1, w_bar_dot.k), w_bar_dot.dtype), w_bar_dot.u, w_bar_dot.u_dot
    return 0.0, 0.0, 0.0


def column_sums(w_bar_dot, sums):
    """w's adjoint's tangent: the seeded pass's column sums where it was a ColumnSums."""
    if isinstance(w_bar_dot, ColumnSums):
        return np.asarray(sums).reshape(w_bar_dot.shape)
    return w_bar_dot


def kernel_matmul_hvp_bars(kernel, pair_kernel, args: Sequence[Any], tangents: Sequence[Any], w: Any,
                           w_dot: Any, w_grad: bool, out_bar: Any, out_bar_dot: Any, values,
                           sums: bool = False, backend: str = "auto"):
    """(h_bar, (two terms of h_bar_dot), w_bar, w_bar_dot) of `out = h @ w`; w's pair
    None unless `w_grad`; w_grad "tangent": w_bar None, only its tangent computed (a
    program that reads no gradient, s2sad.hvp's). h's are factors (matmul_factors: a
    SeedProduct where rank 1). `sums`: w_bar_dot a ColumnSums where h is not formed."""
    value = w_grad != "tangent"
    if values is not None:
        h, h_dot = values
        bars = (matmul_factors(0, out_bar, h, w), (matmul_factors(0, out_bar_dot, h, w),
                                                   matmul_factors(0, out_bar, h, w_dot)))
        if not w_grad:
            return bars + (None, None)
        return bars + (matmul_rhs_bar(out_bar, h, w) if value else None,
                       matmul_rhs_bar(out_bar_dot, h, w) + matmul_rhs_bar(out_bar, h_dot, w))
    n, k = broadcast_shapes(*(np.shape(a) for a in args))
    dtype = compute_dtype(args)

    def column(g):
        return np.asarray(g, dtype).reshape(n, 1)

    row, row_dot = np.asarray(w).reshape(1, k), np.asarray(w_dot).reshape(1, k)
    bars = (SeedProduct(column(out_bar), row),
            (SeedProduct(column(out_bar_dot), row), SeedProduct(column(out_bar), row_dot)))
    if not w_grad:
        return bars + (None, None)
    if sums:    # w_bar_dot summed in h's seeded pullback
        deferred = ColumnSums(column(out_bar), column(out_bar_dot), k, np.shape(w), dtype)
        return bars + (_w_bar(kernel, args, w, out_bar, backend) if value else None, deferred)
    # the pair kernel with the columns out_bar and out_bar_dot as g and g_dot: summed
    # over the rows (the gradient w.r.t. a column of ones), h_dot.T @ out_bar + h.T @ out_bar_dot
    ones, pair_args, all_rows = np.ones((k, 1), dtype), [*args, *tangents, column(out_bar), column(out_bar_dot)], \
        np.ones((n, 1), dtype)
    if not value:
        return bars + (None, _w_bar_dot(pair_kernel, pair_args, ones, all_rows, w, backend))
    kept = kept_matmul_vjp(kernel, args, (), w, True, out_bar, backend)
    kept_pair = kept_matmul_vjp(pair_kernel, pair_args, (), ones, True, all_rows, backend) \
        if kept is not None else None
    if kept_pair is not None:       # both passes ran before for these signatures: side by side
        w_bar, w_bar_dot = two_calls(("kernel_matmul_hvp_bars", id(kernel), id(pair_kernel), _shapes(pair_args)),
                                     lambda: kept(args, w, out_bar)[-1],
                                     lambda: kept_pair(pair_args, ones, all_rows)[-1], _work(args))
    else:
        w_bar = kernel_matmul_vjp(kernel, args, (), w, True, out_bar, None, backend)[-1]
        w_bar_dot = kernel_matmul_vjp(pair_kernel, pair_args, (), ones, True, all_rows, None, backend)[-1]
    return bars + (w_bar, w_bar_dot.reshape(np.shape(w)))


def _w_bar(kernel, args, w, out_bar, backend: str):
    """h.T @ out_bar alone: one pass of h's kernel."""
    kept = kept_matmul_vjp(kernel, args, (), w, True, out_bar, backend)
    if kept is not None:
        return kept(args, w, out_bar)[-1]
    return kernel_matmul_vjp(kernel, args, (), w, True, out_bar, None, backend)[-1]


def _w_bar_dot(pair_kernel, pair_args, ones, all_rows, w, backend: str):
    """h_dot.T @ out_bar + h.T @ out_bar_dot alone: one pass of the pair kernel."""
    kept = kept_matmul_vjp(pair_kernel, pair_args, (), ones, True, all_rows, backend)
    if kept is not None:
        return kept(pair_args, ones, all_rows)[-1].reshape(np.shape(w))
    return kernel_matmul_vjp(pair_kernel, pair_args, (), ones, True, all_rows, None, backend)[-1].reshape(np.shape(w))


def runtime_names(backend: str) -> dict:
    """The names the forward-over-reverse program calls from this module, on `backend`
    (passes/array_jvp adds them to the plan's runtime names)."""
    return {"both": both, "column_sum_seeds": column_sum_seeds, "column_sums": column_sums,
            "kernel_matmul_jvp": functools.partial(kernel_matmul_jvp, backend=backend),
            "kernel_matmul_hvp_bars": functools.partial(kernel_matmul_hvp_bars, backend=backend)}

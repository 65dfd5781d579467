"""A dense layer's logits and the softmax cross-entropy's adjoint through them, a block of
rows at a time (issue 17): for `z = X @ W + b` read only by the loss
`sum_r g_r sum_j Y_rj log_softmax(z)_rj`, W's and b's adjoints with X read once and
neither z nor its adjoint ever stored.

Why: the separate calls (matmul_bias, row_dot_log_softmax_bar, unbroadcast,
matmul_rhs_bar) read X twice and write and read z and z_bar: at 100,000 rows of 32
features and 10 classes about 100 MB of memory traffic a gradient, where this pass moves
X and Y once (about 34 MB); the two products over X do not gain from a second thread on
this VM (they are memory-bound), the row pass does.

passes/xentheads.py writes the calls (derivative_runtime.head_logits in the forward sweep,
derivative_runtime.xent_head_bars in the reverse); this module is the pass:
`takes(X, W, b, Y)`: does it take these operands; `fused_bars(g, Y, X, W, b, want_row)`:
(b_bar, W_bar), or (W_bar,) without b's, or None where it does not take them;
`fused_head_sums(...)`: where X is a layer's output and the adjoint goes on to that
layer (a 3-layer MLP's head), gemm_epilogue's sums pass of the layer with the head's
rows made in its blocks (its docstring says how).

Each block of rows [lo, hi) (block_rows_for: a multiple of BLOCK_ROWS rows, X's block,
Y's and the block's two scratches within SCRATCH_BYTES, a core's L2):
  1. X[lo:hi] @ W + b into a scratch (gemm.row_product_plus_row: matmul_bias's bits for
     those rows);
  2. its adjoint g_r (Y - softmax(z) sum_j Y) by the cross-entropy's compiled row pass
     (rowsoftmax.xent_bar_function: row_dot_log_softmax_bar's bits for those rows: a block
     starts at a multiple of its FLUSH_ROWS);
  3. the adjoint's column sums (b's part: gemm.column_sums_part, a row of ones times it,
     each sum a chain over the block's rows in order) into the block's own row of sums;
  4. X[lo:hi].T @ the adjoint (gemm.transposed_rows_product, X's block from cache) into
     the block's own part, or its transpose `adjoint.T @ X[lo:hi]` where that runs fewer
     vectors (gemm.flipped_rows_product: 10 classes of 32 features, 10 x 4 vectors of 8
     float64 a step, not 32 x 2 half masked; the same bits);
then b_bar and W_bar are the blocks' sums and parts added in block order.

Taken from MIN_WORK (gemm.THREAD_WORK) multiply-adds (the two products and EXP_WORK a row element):
below, on one thread with every operand in cache, the separate calls were as fast
(measured, session 21, the znver5, 32 features and 10 classes, the gradient's two
programs alternated in one process: 4,000 and 5,000 rows 1.12-1.16x the time, 6,000
0.87x, 10,000 0.74-0.80x, 100,000 0.63-0.65x).

Invariants: each of b_bar's and W_bar's elements is, per block, one chain over the
block's rows in order from zero, the blocks added in block order: the same bits on any
thread count, within rounding of the unfused `unbroadcast` and `matmul_rhs_bar` (one
chain over all rows), not their bits (as gemm_epilogue's sums and rhs parts). Where a
condition fails (not s2sad's product, another dtype, Y not of z's shape and dtype with
contiguous rows, the row-fusion switch off: S2SAD_ROW_FUSION=0) nothing is run and the
caller makes the unfused calls, the oracle the tests compare against.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from . import gemm
from .backends import choose
from .backends.llvm import ptr
from .blockloop import call
from .gemm_epilogue import BLOCK_ROWS, SCRATCH_BYTES, block_rows, block_sums, row_blocks, scratch
from .passes.rowfusion import SWITCH
from .rowsoftmax import xent_bar_function, xent_bar_value_function, xent_value_function

EXP_WORK = 16            # a row element's exp and softmax, in multiply-adds (for the thread chooser)
MIN_WORK = gemm.THREAD_WORK     # the pass's work from which it is taken (the tests lower it)


def block_rows_for(d: int, k: int, dtype: np.dtype) -> int:
    """Rows a block: X's d and Y's, the logits' and the adjoint's k columns of each row
    within SCRATCH_BYTES, a multiple of BLOCK_ROWS (fixed by the shapes, never the threads)."""
    return max(1, SCRATCH_BYTES // ((d + 3 * k) * dtype.itemsize * BLOCK_ROWS)) * BLOCK_ROWS


def _work(n: int, d: int, k: int) -> int:
    """The pass's multiply-adds (its two products and the rows' exps), as the thread chooser counts work."""
    return n * k * (2 * d + EXP_WORK)


def _row_stride(y: Any, n: int, k: int, dtype: np.dtype) -> int | None:
    """y's row stride in elements where it is a (n, k) array of dtype with contiguous,
    aligned rows, else None."""
    if type(y) is not np.ndarray or y.shape != (n, k) or y.dtype != dtype or not y.flags.aligned:
        return None
    size = dtype.itemsize
    s0, s1 = y.strides
    if (s1 != size and k > 1) or s0 < 0 or s0 % size:
        return None
    return s0 // size if n > 1 else k


def _parts(a: Any, w: Any, row: Any, y: Any, backend: str):
    """(the logits' rows, X.T's parts, Y's row stride) where the pass takes the operands."""
    if not SWITCH.on or not choose(backend).fast_path:
        return None
    rows = gemm.row_product_plus_row(a, w, row, backend)
    if rows is None:
        return None
    x, v = rows.operands[:2]
    (n, d), k = x.shape, v.shape[1]
    if _work(n, d, k) < MIN_WORK:
        return None         # (too small for threads: the separate calls, all in cache, are as fast)
    ys = _row_stride(y, n, k, x.dtype)
    if ys is None:
        return None
    flipped = gemm.flipped_rows_product(x, k, backend)      # (the adjoint's k columns: fewer vectors)
    part = flipped or gemm.transposed_rows_product(x, k, backend)
    return None if part is None else (rows, part, ys, flipped is not None)


def _with_seed(g: Any, y: Any, a: Any, w: Any, row: Any, backend: str):
    """(_parts, X and W as the product takes them, g one contiguous value a row) where the
    pass takes the operands and g is one value of their dtype a row, else None."""
    got = _parts(a, w, row, y, backend)
    if got is None:
        return None
    x, v = got[0].operands[:2]
    if type(g) is not np.ndarray or g.dtype != x.dtype or g.size != x.shape[0]:
        return None
    return got, x, v, np.ascontiguousarray(g).reshape(x.shape[0])


def takes(a: Any, w: Any, row: Any, y: Any, backend: str = "auto") -> bool:
    """Does the pass take the logits `a @ w + row` and the labels y (see the module docstring)?"""
    return _parts(a, w, row, y, backend) is not None


def _row_adjoint(k: int, dtype: np.dtype, values: bool, n: int):
    """(f, first): f(z, y_at, g_at, lo, hi, ys, z_bar) writes a block's row adjoint into
    z_bar (the row pass, its calls made or recorded: blockloop) and, with `values`, the
    rows' values into first[0][lo:hi] (row_dot_log_softmax's: one a row, of n), by the one
    pass that makes both for short rows, else by the value's own pass first
    (xent_value_function: the same bits); first is () without `values`."""
    bar, size = xent_bar_function(k, dtype), dtype.itemsize
    if not values:
        def adjoint(z, y_at, g_at, lo, hi, ys, z_bar):
            call(bar, ptr(z), y_at, g_at, hi - lo, k, k, ys, ptr(z_bar))
        return adjoint, ()
    vals = np.empty(n, dtype)
    both, at = xent_bar_value_function(k, dtype), ptr(vals)
    if both is not None:
        def adjoint_and_values(z, y_at, g_at, lo, hi, ys, z_bar):
            call(both, ptr(z), y_at, g_at, at + lo * size, hi - lo, k, k, ys, ptr(z_bar))
        return adjoint_and_values, (vals,)
    value = xent_value_function(k, dtype)

    def values_then_adjoint(z, y_at, g_at, lo, hi, ys, z_bar):
        call(value, ptr(z), y_at, 0, hi - lo, k, k, ys, at + lo * size)
        call(bar, ptr(z), y_at, g_at, hi - lo, k, k, ys, ptr(z_bar))
    return values_then_adjoint, (vals,)


def fused_bars(g: Any, y: Any, a: Any, w: Any, row: Any, want_row: bool, backend: str = "auto",
               values: bool = False):
    """(row_bar, w_bar), or (w_bar,) where not `want_row`, of the loss whose adjoint w.r.t.
    z = a @ w + row is row_dot_log_softmax_bar(0, g, z, y) (g: one value a row), by the
    pass (see the module docstring); with `values`, row_dot_log_softmax(z, y) first (each
    block's rows' values by the same row pass, from the block's z: the same bits). None
    where it does not take the operands."""
    got = _with_seed(g, y, a, w, row, backend)
    if got is None:
        return None
    (rows, part, ys, flipped), x, v, g = got
    dtype, (n, d), k = x.dtype, x.shape, v.shape[1]
    size = dtype.itemsize
    per = block_rows_for(d, k, dtype)
    column_sums = gemm.column_sums_part(dtype, k, per, backend) if want_row else None
    if want_row and column_sums is None:
        return None
    blocks = -(-n // per)
    parts = np.empty((blocks, k, d) if flipped else (blocks, d, k), dtype)
    sums = np.zeros((blocks, k), dtype) if want_row else None
    row_adjoint, first = _row_adjoint(k, dtype, values, n)
    g_at, y_at = ptr(g), ptr(y)

    def run_block(lo: int, hi: int, z: np.ndarray, i: int) -> None:      # (run or recorded: blockloop)
        rows(lo, hi, z)
        z_bar = scratch(dtype, per, k, "adjoint")[:hi - lo]
        row_adjoint(z, y_at + lo * ys * size, g_at + lo * size, lo, hi, ys, z_bar)
        if sums is not None:
            column_sums(lo, hi, z_bar, sums[i])
        part(lo, hi, z_bar, parts[i])
    row_blocks("xent head", dtype, _work(n, d, k), n, k, run_block, per)
    w_bar = np.add.reduce(parts, axis=0)
    if flipped:
        w_bar = np.ascontiguousarray(w_bar.T)
    if sums is None:
        return (*first, w_bar)
    return (*first, np.add.reduce(sums, axis=0).reshape(np.shape(row)), w_bar)


def fused_head_sums(g: Any, y: Any, a: Any, w: Any, row: Any, want_row: bool, d: Any, inputs: tuple, rhs: bool,
                    nxt, backend: str = "auto", values: bool = False):
    """((row_bar,) if want_row, then lhs_bar_sums(G, a, w, d, inputs, rhs, nxt)'s results)
    for the seed G = z's adjoint of that loss (as fused_bars), where the layer below
    reads it (a 3-layer MLP's head: `h2 @ W3 + b3`, whose adjoint G @ W3.T times h2's
    partial feeds the layer before): G is never stored either; each block of
    gemm_epilogue's sums pass first makes its rows of z and of G (the product plus the
    row, the row pass, G's column sums for row_bar) in this thread's scratches, then
    G[lo:hi] @ W.T from them and, with rhs, a[lo:hi].T @ G[lo:hi] (its orientation and
    blocks, so that W's adjoint has the unjoined pass's bits, as the layer's adjoint).
    With `values`, the rows' values first (as fused_bars'). None where either pass
    declines (nothing run)."""
    got = _with_seed(g, y, a, w, row, backend)
    if got is None:
        return None
    (rows_of_z, _, ys, _), x, v, g = got
    dtype, (n, m), k = x.dtype, x.shape, v.shape[1]
    if m * dtype.itemsize > gemm.MAX_ROW_BYTES:
        return None
    part = gemm.transposed_rows_product(x, k, backend) if rhs else None
    column_sums = gemm.column_sums_part(dtype, k, block_rows(m, dtype), backend) if want_row else None
    if rhs and part is None or want_row and column_sums is None:
        return None
    w_t = np.ascontiguousarray(v.T)          # (k, m): the rows of G @ W.T's right operand
    size, per = dtype.itemsize, block_rows(m, dtype)
    sums = np.zeros((-(-n // per), k), dtype) if want_row else None
    (row_adjoint, first), product = _row_adjoint(k, dtype, values, n), gemm.raw_product(dtype)
    g_at, y_at, w_at = ptr(g), ptr(y), ptr(w_t)

    made = threading.local()      # the block's z_bar on this thread, for head_part right after

    def rows(lo: int, hi: int, out: np.ndarray) -> None:       # (run or recorded: blockloop)
        z = scratch(dtype, per, k, "head")[:hi - lo]
        z_bar = made.z_bar = scratch(dtype, per, k, "head adjoint")[:hi - lo]
        rows_of_z(lo, hi, z)
        row_adjoint(z, y_at + lo * ys * size, g_at + lo * size, lo, hi, ys, z_bar)
        if sums is not None:
            column_sums(lo, hi, z_bar, sums[lo // per])
        call(product, ptr(z_bar), k, 1, w_at, m, ptr(out), m, hi - lo, k, m, 0, 0, hi - lo)

    def head_part(lo: int, hi: int, out: np.ndarray) -> None:
        # the array rows() wrote, not the scratch fetched again: the sums pass makes its
        # own scratch between the two ("adjoint", with nxt), and fetching it again must
        # not depend on how many scratches a thread keeps (gemm_epilogue.scratch)
        part(lo, hi, made.z_bar, out)
    got = block_sums(rows, head_part if rhs else None, k, x, d, inputs, nxt, dtype, backend, "head ")
    if got is None:
        return None
    return first + ((np.add.reduce(sums, axis=0).reshape(np.shape(row)),) if want_row else ()) + got

"""Matrix products in array programs: s2sad's own compiled loop where the right operand
is thin, numpy's (BLAS) elsewhere.

An MLP's gradient is mostly `X @ W1` and `X.T @ G`: a long matrix times one with a few
dozen columns. BLAS is tuned for square blocks; for these shapes `codegen/llvm_gemm`'s
register tiles run 1.3-1.5x faster on one core, about as fast as XLA's dot. `matmul`
and `dot` take that path when

- both operands are 2-D numpy arrays of one float dtype (float64 or float32), their
  inner sizes agree, and the backend is llvm ("auto" with numpy arrays);
- the right operand has at least 2 columns (a single one is a matrix-vector product,
  memory-bound, BLAS's) and rows of at most 1 KiB (a row of it stays within the
  registers' reach; wider products are BLAS's), and the product has at least MIN_WORK
  multiply-adds (below that, numpy's cheaper call wins);
- the right operand's rows are contiguous, or it can be copied so (it is then small
  next to the product).

Everything else is numpy's `@` / `np.dot`, errors included. The result is a new
C-contiguous array either way; no operand is written. Each element of the result is
one multiply-add chain in index order (see llvm_gemm), so it does not depend on the
number of threads. From THREAD_WORK multiply-adds the rows may be split between threads:
how many, a `ThreadChooser` per (dtype, columns, rows' size class) decides by timing the products
(threadchoice.py), unless S2SAD_NUM_THREADS says.

For passes that run a product a block at a time: `row_product` (a range of rows, the
bits `matmul` gives them) and `inner_range_product` (a range of the inner axis: the
caller adds the ranges' parts, in an order it fixes, so those are not `matmul`'s bits).
Their calls go through `blockloop.call`, which a block pass's compiled loop records.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import blockloop
from .backends import choose
from .backends.llvm import ptr
from .blockloop import call
from .codegen import llvm_jit
from .codegen.llvm_gemm import NARROW_ROWS, lanes_for
from .threadchoice import Choosers, ThreadChooser, size_class
from .threads import run_chunks

MIN_COLUMNS = 2
MAX_ROW_BYTES = 1024          # the right operand's row: 128 float64 or 256 float32
MIN_WORK = 1 << 20            # multiply-adds below which numpy's product is as fast (its call is cheaper)
THREAD_WORK = 1 << 22         # multiply-adds from which threads are tried (threadchoice times them against one)
_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_ARGTYPES = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
             ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
             ctypes.c_int64)
_BIAS_ARGTYPES = _ARGTYPES + (ctypes.c_void_p,)
_FUNCS: dict = {}            # dtype -> the product; (dtype, "bias") -> the product plus a row
_CHOOSERS = Choosers()       # (dtype, columns, rows' size class) -> ThreadChooser


def _function(dtype: np.dtype):
    f = _FUNCS.get(dtype)
    if f is None:
        address, keep = llvm_jit.gemm_code(dtype)
        f = _FUNCS[dtype] = llvm_jit.callable_at(address, _ARGTYPES, keep)
    return f


def _bias_function(dtype: np.dtype):
    f = _FUNCS.get((dtype, "bias"))
    if f is None:
        address, keep = llvm_jit.gemm_code(dtype, bias=True)
        f = _FUNCS[(dtype, "bias")] = llvm_jit.callable_at(address, _BIAS_ARGTYPES, keep)
    return f


def _operands(a: Any, b: Any):
    """(a, b) ready for the compiled product (b's rows contiguous), or None where numpy's
    product is the one to take. (Written for speed: it runs before every product.)"""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        return None
    sa, sb = a.shape, b.shape
    if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0] or sa[0] * sa[1] * sb[1] < MIN_WORK:
        return None     # (a small product first: a small batch's are all numpy's)
    dt = a.dtype
    if dt is not b.dtype and dt != b.dtype or dt != _F64 and dt != _F32:
        return None
    size = dt.itemsize
    m = sb[1]
    if m < MIN_COLUMNS or m * size > MAX_ROW_BYTES or sa[0] * sa[1] * m < MIN_WORK:
        return None
    (a0, a1), (b0, b1) = a.strides, b.strides
    if a0 % size or a1 % size or b0 % size or not (a.flags.aligned and b.flags.aligned):
        return None
    if b1 != size:
        if sa[0] < 16:              # copying b would cost about what the product does
            return None
        b = np.ascontiguousarray(b)
    return a, b


def _product(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """a @ b (+ bias, a contiguous row of b.shape[1] values of a's dtype, added to each
    row of the finished product)."""
    (p, q), m = a.shape, b.shape[1]
    size = a.dtype.itemsize
    c = np.empty((p, m), a.dtype)
    if bias is None:
        f = _FUNCS.get(a.dtype) or _function(a.dtype)
    else:
        plain = _FUNCS.get((a.dtype, "bias")) or _bias_function(a.dtype)
        row = ptr(bias)
        f = lambda *args: plain(*args, row)      # noqa: E731 (the row after the range)
    args = (ptr(a), a.strides[0] // size, a.strides[1] // size, ptr(b), b.strides[0] // size, ptr(c), m,
            p, q, m, 0)
    work = p * q * m
    if work < THREAD_WORK or p < 2 * NARROW_ROWS:
        f(*args, 0, p)
        return c
    served = (plain, args, (row,)) if bias is not None else (f, args, ())
    _chooser(a.dtype, m, p).run(work, lambda threads: _rows_served(*served, p, threads)
                                or _rows_on_threads(f, args, p, threads))
    return c


_STAND_INS: dict = {}        # (dtype, shape) -> a product's stand-in (read-only: shared)


def stand_in(dtype: np.dtype, shape: tuple) -> np.ndarray:
    """A read-only zero-stride array of zeros of `shape` and `dtype`: the value a fused
    pass returns for a product it never stored (its pullback reads none of it). One per
    (dtype, shape), kept (at most 64: a few bytes each): np.broadcast_to cost ~5 us a
    call, 7% of the Python of the MLP3's gradient."""
    key = (dtype, shape)
    got = _STAND_INS.get(key)
    if got is None:
        if len(_STAND_INS) >= 64:
            _STAND_INS.clear()
        got = _STAND_INS[key] = np.broadcast_to(np.zeros((), dtype), shape)
    return got


def _chooser(dtype: np.dtype, m: int, p: int) -> ThreadChooser:
    """The thread counts of products with m columns of this dtype and about p rows (the
    chooser's buckets size them by their work).

    Keyed by the rows' size class too, since the rows are what the threads split: a tall
    product (an MLP's `h @ W3`, p = 10,000) and a short one of the same work (its
    adjoint's `h.T @ G`, p = 64: each thread reads all of G) scale differently, and met
    in one bucket they were probed alternately, each call of a gradient in turn: the
    tall one timed on one thread, the short one on two, and the verdict held for both."""
    return _CHOOSERS.of((dtype, m, size_class(p)))


def _rows_on_threads(f, args, p: int, threads: int) -> None:
    """The product's p rows on `threads` threads: one range of whole row tiles (of either
    height) per thread, since a range reads all of b and more ranges would read it more."""
    threads = min(threads, -(-p // NARROW_ROWS))
    if threads <= 1:
        f(*args, 0, p)
        return
    step = -(-p // (threads * NARROW_ROWS)) * NARROW_ROWS
    bounds = [(lo, min(p, lo + step)) for lo in range(0, p, step)]
    run_chunks(lambda i: f(*args, *bounds[i]), len(bounds), len(bounds), linger=True)


SERVED_CHUNKS = 8             # ranges of a product served (the threads take them in turn)


def _rows_served(f, args: tuple, after: tuple, p: int, threads: int) -> bool:
    """The product's rows in SERVED_CHUNKS ranges of whole row tiles, `f(*args, lo, hi,
    *after)` each, on this thread and a pool thread serving block loops
    (blockloop.served_calls): True; or False, nothing run, where the count is not two or
    no pool thread serves. (At the MLP3's 10k rows `h @ W3`, 10 columns, ~0.2 ms, gained
    nothing from a second thread woken for it.) Each row's bits are the same whatever
    range computes it (llvm_gemm)."""
    if threads != 2:
        return False
    step = -(-p // (SERVED_CHUNKS * NARROW_ROWS)) * NARROW_ROWS
    return blockloop.served_calls(f, [(*args, lo, min(p, lo + step), *after) for lo in range(0, p, step)])


def _own(a: Any, b: Any, backend: str) -> np.ndarray | None:
    ops = _operands(a, b) if choose(backend).fast_path else None
    if ops is None:
        return None
    c = _flipped(*ops)
    return _product(*ops) if c is None else c


def _flipped(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """a @ b as (b.T @ a.T).T, where a is the transpose of a C-contiguous array (`X.T @ G`,
    a layer's weight gradient) and that product runs fewer vector multiply-adds: its
    vectors span a's p rows instead of b's m columns (p = 32 inputs against m = 10
    classes: 10 x 4 vectors of 8 float64 lanes a step, not 32 x 2, half of them masked).
    None where it does not. The same bits: each element is the same chain of products
    over the inner axis in order (a * b and b * a are one IEEE product, fused or not).
    (Measured, session 20, the znver5, one thread: `X.T @ G` at 100k x 32 -> 10 3.2 ->
    2.4 ms, at 10k x 64 -> 10 243 -> 158 us; 64 -> 64 at 100k rows the same time, so
    only a count of vectors strictly smaller flips.)"""
    if not _flip_wins(a, b):
        return None
    return np.ascontiguousarray(_product(b.T, a.T).T)


def _flip_wins(a: np.ndarray, b: np.ndarray) -> bool:
    """Is a @ b (operands as `_operands` returns them) flipped, (b.T @ a.T).T? Where a.T
    has contiguous rows (its columns are the flipped product's columns: at most
    MAX_ROW_BYTES of them) and the flipped product's vectors are strictly fewer."""
    size = a.dtype.itemsize
    p, m = a.shape[0], b.shape[1]
    if not FLIP or a.strides[0] != size or p < MIN_COLUMNS or p * size > MAX_ROW_BYTES:
        return False
    return _fewer_vectors_flipped(p, m, a.dtype)


def _fewer_vectors_flipped(p: int, m: int, dtype: np.dtype) -> bool:
    """Does a (p, m) product's transpose, computed as an (m, p) one (its vectors along p,
    not m), run strictly fewer vector multiply-adds a step on this host?"""
    lanes = _LANES.get(dtype) or _lanes(dtype)
    return m * -(-p // lanes) < p * -(-m // lanes)


_LANES: dict = {}        # dtype -> elements per vector register of the product on this host
FLIP = True              # (False: every product as written: the other side of the tests' and an A/B's comparison)


def _lanes(dtype: np.dtype) -> int:
    """Elements of `dtype` per vector register of s2sad's product on this host."""
    got = _LANES[dtype] = lanes_for(llvm_jit.host_vector_bits(llvm_jit.host()), dtype)
    return got


def product_plus_row(a: Any, b: Any, bias: Any, backend: str = "auto") -> np.ndarray | None:
    """a @ b + bias in one pass of s2sad's product (the row added in the tile's store:
    the bits of the product, then of numpy's add), or None where the product is not
    s2sad's or bias is not a row of the product's dtype: shape (m,) or (1, m), m the
    product's columns, contiguous and aligned."""
    ops = _bias_operands(a, b, bias, backend)
    return None if ops is None else _product(*ops, bias)


def _bias_operands(a: Any, b: Any, bias: Any, backend: str):
    """(a, b) as `_operands` gives them where s2sad's product takes them and bias is a row
    it adds in its tile's store (shape (m,) or (1, m), of the product's dtype, contiguous
    and aligned); else None."""
    if not choose(backend).fast_path or type(bias) is not np.ndarray:
        return None
    ops = _operands(a, b)
    if ops is None:
        return None
    a, b = ops
    m = b.shape[1]
    if bias.dtype != a.dtype or bias.shape not in ((m,), (1, m)) or not bias.flags.c_contiguous \
            or not bias.flags.aligned:
        return None
    return a, b


def row_product(a: Any, b: Any, backend: str = "auto"):
    """rows(lo, hi, out): (a @ b)[lo:hi] written into `out` (C-contiguous, hi - lo rows of
    the product's columns, a's dtype), the bits `matmul` gives those rows (each element
    one chain in order, whatever the range); or None where `matmul` would not take s2sad's
    product. For passes that run the product a block of rows at a time (gemm_epilogue)."""
    ops = _operands(a, b) if choose(backend).fast_path else None
    if ops is None:
        return None
    a, b = ops
    f = _FUNCS.get(a.dtype) or _function(a.dtype)
    (p, q), m = a.shape, b.shape[1]
    size = a.dtype.itemsize
    a0, a1 = a.strides[0] // size, a.strides[1] // size
    a_at, b_at, b0 = ptr(a), ptr(b), b.strides[0] // size

    def rows(lo: int, hi: int, out: np.ndarray) -> None:
        # A starts at row lo: the call's rows are [0, hi - lo), written from out's start
        call(f, a_at + lo * a0 * size, a0, a1, b_at, b0, ptr(out), m, hi - lo, q, m, 0, 0, hi - lo)
    rows.operands = (a, b)        # alive while rows is (b may be a contiguous copy)
    return rows


def raw_product(dtype: np.dtype):
    """The compiled product's C function for dtype, for block passes that call it on
    their own scratches: (A, A's row and column strides, B, B's row stride, C, C's row
    stride, rows, inner, columns, 0, first row, end row), strides in elements, B's rows
    contiguous (row_product's call)."""
    return _FUNCS.get(dtype) or _function(dtype)


def row_product_plus_row(a: Any, b: Any, bias: Any, backend: str = "auto"):
    """rows(lo, hi, out): (a @ b + bias)[lo:hi] into `out` as row_product writes it, the
    row added in the tile's store (product_plus_row's bits for those rows); or None where
    product_plus_row would not take a, b and bias."""
    ops = _bias_operands(a, b, bias, backend)
    if ops is None:
        return None
    a, b = ops
    (p, q), m = a.shape, b.shape[1]
    f = _FUNCS.get((a.dtype, "bias")) or _bias_function(a.dtype)
    size = a.dtype.itemsize
    a0, a1 = a.strides[0] // size, a.strides[1] // size
    a_at, b_at, b0, row = ptr(a), ptr(b), b.strides[0] // size, ptr(bias)

    def rows(lo: int, hi: int, out: np.ndarray) -> None:
        call(f, a_at + lo * a0 * size, a0, a1, b_at, b0, ptr(out), m, hi - lo, q, m, 0, 0, hi - lo, row)
    rows.operands = (a, b, bias)
    return rows


def inner_range_product(a: Any, b: Any, backend: str = "auto"):
    """part(lo, hi, out): a[:, lo:hi] @ b[lo:hi] written into `out` (C-contiguous, a's rows
    by b's columns, a's dtype), each element one chain over [lo, hi) in order from zero;
    or None where `matmul(a, b)` would not take s2sad's product. For passes that form a
    product of a long inner axis a block of it at a time (gemm_epilogue: `h.T @ G`
    beside the pass that reads the same rows of h and G), then add the blocks' parts in
    block order: the bits then depend on the blocks (fixed by the caller), never on the
    threads, and are within rounding of `matmul`'s one chain, not its bits."""
    ops = _operands(a, b) if choose(backend).fast_path else None
    if ops is None:
        return None
    a, b = ops
    f = _FUNCS.get(a.dtype) or _function(a.dtype)
    p, m = a.shape[0], b.shape[1]
    size = a.dtype.itemsize
    a0, a1, b0 = a.strides[0] // size, a.strides[1] // size, b.strides[0] // size
    a_at, b_at = ptr(a), ptr(b)

    def part(lo: int, hi: int, out: np.ndarray) -> None:
        call(f, a_at + lo * a1 * size, a0, a1, b_at + lo * b0 * size, b0, ptr(out), m, p, hi - lo, m, 0, 0, p)
    part.operands = (a, b)        # alive while part is (b may be a contiguous copy)
    return part


def transposed_rows_product(x: Any, m: int, backend: str = "auto"):
    """part(lo, hi, b, out): x[lo:hi].T @ b into `out` (C-contiguous, x's columns by m),
    b any (hi - lo, m) array of x's dtype with contiguous aligned rows (a block the
    caller made and drops: the adjoint of a product that is never stored), each element
    one chain over [lo, hi) in order from zero; or None where `matmul(x.T, B)` would not
    take s2sad's product for a (rows of x, m) B of x's dtype with contiguous rows."""
    if type(x) is not np.ndarray or x.ndim != 2 or not choose(backend).fast_path:
        return None
    size = x.dtype.itemsize
    like = np.lib.stride_tricks.as_strided(np.zeros(m, x.dtype), (x.shape[0], m), (0, size))
    if _operands(x.T, like) is None:
        return None
    f = _FUNCS.get(x.dtype) or _function(x.dtype)
    p = x.shape[1]
    x0, x1, x_at = x.strides[0] // size, x.strides[1] // size, ptr(x)

    def part(lo: int, hi: int, b: np.ndarray, out: np.ndarray) -> None:
        assert b.shape == (hi - lo, m) and b.dtype == x.dtype and b.strides[1] == size and out.shape == (p, m)
        call(f, x_at + lo * x0 * size, x1, x0, ptr(b), b.strides[0] // size, ptr(out), m, p, hi - lo, m, 0, 0, p)
    part.operands = (x,)
    return part


def flipped_rows_product(x: Any, m: int, backend: str = "auto"):
    """part(lo, hi, b, out): b.T @ x[lo:hi] into `out` (C-contiguous, m by x's columns), b
    any (hi - lo, m) array of x's dtype with contiguous aligned rows: the transpose of
    transposed_rows_product's part, each element the same chain of the same products (its
    bits), for where that product runs strictly fewer vectors this way (`_flipped`'s
    rule: x's columns span the vectors, not b's m); None where it does not, or where x's
    rows are not contiguous."""
    if type(x) is not np.ndarray or x.ndim != 2 or not choose(backend).fast_path or not FLIP:
        return None
    dtype = x.dtype
    if dtype != _F64 and dtype != _F32:
        return None
    size, d = dtype.itemsize, x.shape[1]
    if x.strides[1] != size or x.strides[0] % size or x.strides[0] < 0 or not x.flags.aligned \
            or d < MIN_COLUMNS or d * size > MAX_ROW_BYTES or m < 1:
        return None
    if not _fewer_vectors_flipped(d, m, dtype):
        return None
    f = _FUNCS.get(dtype) or _function(dtype)
    x0, x_at = x.strides[0] // size, ptr(x)

    def part(lo: int, hi: int, b: np.ndarray, out: np.ndarray) -> None:
        assert b.shape == (hi - lo, m) and b.dtype == dtype and b.strides[1] == size and out.shape == (m, d)
        call(f, ptr(b), 1, b.strides[0] // size, x_at + lo * x0 * size, x0, ptr(out), d, m, hi - lo, d, 0, 0, m)
    part.operands = (x,)
    return part


def column_sums_part(dtype: np.dtype, m: int, rows: int, backend: str = "auto"):
    """part(lo, hi, b, out): the column sums of b (any (hi - lo, m) array of `dtype`, at
    most `rows` rows, contiguous aligned rows) into `out` (m values), as the product
    `ones(1, hi - lo) @ b`: each sum one chain over b's rows in order from zero (a
    multiply by 1.0 is exact, so each step is the add's rounding), m columns to a step
    where a row loop takes one row of m at a time; None where s2sad's product is not taken."""
    if dtype != _F64 and dtype != _F32 or not choose(backend).fast_path or m < 1 or m * dtype.itemsize > MAX_ROW_BYTES:
        return None
    f = _FUNCS.get(dtype) or _function(dtype)
    ones = np.ones(rows, dtype)
    size = dtype.itemsize

    def part(lo: int, hi: int, b: np.ndarray, out: np.ndarray) -> None:
        assert b.shape == (hi - lo, m) and hi - lo <= rows and b.dtype == dtype and b.strides[1] == size \
            and out.size == m
        call(f, ptr(ones), 0, 1, ptr(b), b.strides[0] // size, ptr(out), m, 1, hi - lo, m, 0, 0, 1)
    part.operands = (ones,)
    return part


def numpy_takes(a: Any, b: Any, backend: str = "auto") -> bool:
    """Does `matmul` give numpy's `a @ b` for every pair of ndarrays of these shapes,
    whatever their dtype, strides and alignment (not two 2-D operands that multiply, a
    product below MIN_WORK, or a backend without the fast path: `_operands` declines
    them all)? array_special binds `@` at such a site."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        return False
    sa, sb = a.shape, b.shape
    return (not choose(backend).fast_path or len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0]
            or sa[0] * sa[1] * sb[1] < MIN_WORK)


def matmul(a: Any, b: Any, backend: str = "auto"):
    """a @ b."""
    c = _own(a, b, backend)
    return a @ b if c is None else c


def dot(a: Any, b: Any, backend: str = "auto"):
    """np.dot(a, b) (for 2-D operands, a @ b)."""
    c = _own(a, b, backend)
    return np.dot(a, b) if c is None else c

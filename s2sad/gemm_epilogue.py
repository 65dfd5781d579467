"""A matrix product and the elementwise pass around it run a block of rows at a time, the
block's product kept in a cache-sized scratch, so that the product never goes to memory
(issue 17's MLP: `h = tanh(X @ W + b)` and its adjoint):

- `product_partials` (forward, passes/epilogues.py writes it): the kernel's values and
  its stored partial w.r.t. the product, `h, dh = store_partials(kernel, (X @ W, b))`,
  where each block of rows is first the product's (gemm.row_product) into the scratch,
  then the kernel's driver over that block (runtime.launch) into h and dh;
- `lhs_bar_sums` (reverse): `product_sums(d, matmul_lhs_bar(G, X, W), inputs)`, each
  block G @ W.T into the scratch, then d times it (codegen/llvm_mulsum) into the
  full-shape adjoint, with the block's column sums for the bias; with `rhs` (the
  adjoint program joined `W_bar = matmul_rhs_bar(G, X, W)` to the call:
  passes/epilogues.rhs_line) also the product's other adjoint X.T @ G, each block's
  part `X[lo:hi].T @ G[lo:hi]` (gemm.inner_range_product) right after the block's pass,
  which has just read those rows of G (the product) and, where d is an OutputPartial,
  of X (d.h is X: F(h)), so the part reads them from cache, not memory, and it runs on
  the block loop's threads; with `nxt` = (j, x, v) (the adjoint program joined the
  reversal of `_1 = x @ v`, whose adjoint is inputs[j]'s and read by nothing else:
  passes/epilogues.join_next), that adjoint is never stored: each block of it goes to a
  per-thread scratch, and `x[lo:hi].T @` it (gemm.transposed_rows_product) right after,
  from cache; the call returns `matmul_rhs_bar(adjoint, x, v)` in its place, last.

Invariants:
- h, dh and the full-shape adjoint have the bits of the two unfused calls: each product
  element is one chain in order whatever rows a call covers (llvm_gemm), and the kernel's
  driver runs per row of the same (rows, columns) index space (the other operands are
  rows broadcast down the product, never full-shape).
- the bias's sums: each block of rows (block_rows: fixed, whatever the thread count) is
  summed in row order from 0, then the blocks' sums added in block order: the same bits
  on any number of threads, within rounding of numpy's one chain (not its bits).
- `rhs`'s X.T @ G: each element is, per block of rows (the same fixed blocks), one
  multiply-add chain over the block's rows in order from zero, then the blocks' parts
  added in block order (np.add.reduce on axis 0): the same bits on any number of
  threads; within rounding of the unfused `matmul_rhs_bar` (one chain over all rows),
  not its bits. Where the pass does not run, rhs's result is that call's.
- `nxt`'s x.T @ adjoint: the same, per block of the adjoint's rows (the same fixed
  blocks), the blocks' parts added in block order; the adjoint's own blocks have the
  bits it has when stored. nxt is taken where inputs[j] is the only full-shape input
  (a second one would share the adjoint); elsewhere the pass runs without it and the
  product after it (`matmul_rhs_bar`, its bits), or the unfused calls.
- where any condition does not hold (not s2sad's product, another dtype, a full-shape
  operand, the row-fusion switch off: S2SAD_ROW_FUSION=0), the unfused calls run: the
  oracle the tests compare against.
- the product's own value is never formed: callers get a read-only zero-stride
  array of its shape and dtype in its place (only its shape is read after: the kernel's
  partial was stored).

Measured and rejected (session 11): the next weights' adjoint `W_bar = X.T @ _1_bar`
computed inside lhs_bar_sums's block loop, each block of `_1_bar` consumed while in
cache: the layer's call 2.28 against 2.29 ms, the whole 3-layer MLP gradient 0.99-1.00x
at 10k and 100k (one core, CPU time): X's block still comes from memory, so the product
stays memory-bound; not worth a second rounding of W_bar (runs of block sums) and a
rewrite of the adjoint program.

Blocks of 256 KiB of product (512 rows of 64 float64), not 512 KiB (session 13): with
the product's other adjoint in the block (below) a block's pass touches its scratch and
three blocks of operands (G, h, the adjoint), 2 MiB at 512 KiB, past the AMD's 1 MiB L2
and at the Intel's 2 MiB; twice the blocks also share the work between two threads
more evenly when one of them is slowed. Measured on the Intel Xeon (busy, load 4-5),
the MLP3 gradient in one process, block sizes alternated call by call, medians of 100:
10k 0.96-0.99x the time at 512 KiB (1 MiB: 1.05-1.06x; 128 KiB 0.99-1.02x), 100k
0.96-1.00x; one thread 0.98-1.00x. Again on the znver5 (2026-12-03, session 18), with
the compiled block loop, default threads, sizes alternated call by call, medians of
140: 64 KiB 1.04-1.08x the time of 256 KiB, 128 KiB 1.01-1.03x, 384 KiB 1.00-1.02x,
512 KiB 1.01-1.02x: 256 KiB stays.

Kept (session 15): each pass's blocks made by one compiled loop a thread (blockloop.py;
S2SAD_BLOCK_LOOP=0: the Python loop). perf put 20% of the MLP3's one-thread gradient
at 10k rows in libpython and, on two threads, another 10% in the kernel: the blocks'
Python taking turns at the GIL, each hand-over a futex wake (20-50 us on this KVM
guest). First version rejected: recording five blocks a call cost 1.7 ms of the 0.65
it saved on one thread; kept: a plan moved to each call's arrays from two records
(~0.1 ms a pass). Measured on the znver5 (busy), the four passes' calls alternated in
one process: one thread 0.93x, two 0.89x the Python loop's time.

Kept (session 13): the next product's adjoint where the one it reads is never stored
(`nxt`): the same `X.T @ _1_bar` as the rejected idea above, but _1_bar (5 MB at 10k
rows, 64 float64) is then neither allocated, written nor read again. The MLP3 gradient
0.85-0.94x at 10k, 0.89-0.95x at 100k against `rhs` alone (Intel Xeon, load 5, one
process, the two adjoint programs' calls alternated, medians of 120 / 12).

Kept (session 13): the product's OWN other adjoint (`rhs`), whose operands G and X the
block's pass reads anyway (the next weights' adjoint above reads X from memory; this
one reads nothing more). Measured on the Intel Xeon (2 vCPUs, busy with other jobs),
issue 17's 3-layer MLP gradient, both adjoint programs in one process, calls
alternated, medians of 150: 10k rows 0.97-0.99x the time of the separate products
(default threads and one thread alike); 100k 0.92-0.98x. Alone, the standalone
`h.T @ G` runs at ~30 GFMA/s on one thread (compute-bound: its q blocks stay in L1),
so the gain is the reads of G and X saved and the threads of the block loop (the
standalone product, p = 64 rows split in two, each thread reading all of G, gained
nothing from a second thread there).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from . import blockloop, gemm, runtime
from .array_rules import matmul_lhs_bar, matmul_rhs_bar, plain_product
from .backends import backend_for, choose
from .backends.llvm import ptr
from .gemm_outpartials import OutputPartial, block_launch, out_kernels, out_partials, out_sums
from .kernel import LoopSpec
from .passes.rowfusion import SWITCH
from .productsums import mulsum_function, product_sums
from .threadchoice import Choosers
from .blockloop import call
from .threads import run_chunks

SCRATCH_BYTES = 1 << 18       # a block's product: within a core's L2 (1 MiB on the AMD) with its operands
SCRATCHES = 6                 # scratches a thread keeps (products and adjoints of different widths or dtypes)
BLOCK_ROWS = 64               # blocks are a multiple of this many rows: of every row tile (llvm_gemm)
_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_CHOOSERS = Choosers(block_pass=True)   # (what, dtype, columns) -> ThreadChooser
_LOCAL = threading.local()    # each thread's scratch, by (dtype, rows, columns, what)


def scratch(dtype: np.dtype, rows: int, m: int, what: str = "product") -> np.ndarray:
    """This thread's scratch of (rows, m) `dtype` for `what` (a block's product, its adjoint, ...)."""
    got = getattr(_LOCAL, "buffers", None)
    if got is None:
        got = _LOCAL.buffers = {}
    return _scratch_in(got, (dtype, rows, m, what))


def _scratch_in(got: dict, key: tuple) -> np.ndarray:
    """The scratch of `key` (dtype, rows, columns, what) in the set `got`: this thread's,
    or a serving pool thread's (loopserver). At most SCRATCHES are kept, the least
    recently fetched dropped to make room (the dict's order is the order of use): a
    scratch fetched again before SCRATCHES - 1 other keys were is the same array, with
    what was written into it. (Dropping the whole set once full, as this did first, gave
    a pass that fetched its scratch twice, with a new one made in between, a fresh
    unwritten array: a wrong gradient, session 21.)"""
    buf = got.pop(key, None)
    if buf is None:
        if len(got) >= SCRATCHES:
            del got[next(iter(got))]
        dtype, rows, m, _ = key
        buf = np.empty((rows, m), dtype)
    got[key] = buf
    return buf


def block_rows(m: int, dtype: np.dtype) -> int:
    """Rows per block of a product with m columns: the scratch within SCRATCH_BYTES, a
    multiple of BLOCK_ROWS (fixed by m and the dtype alone, never by the threads)."""
    return max(1, SCRATCH_BYTES // (m * dtype.itemsize * BLOCK_ROWS)) * BLOCK_ROWS


def _blocks(p: int, m: int, dtype: np.dtype) -> int:
    """How many blocks row_blocks cuts p rows of m columns into."""
    return -(-p // block_rows(m, dtype))


def row_blocks(what: str, dtype: np.dtype, work: int, p: int, m: int, run_block, rows: int | None = None) -> None:
    """run_block(lo, hi, scratch, i) for block i, rows [lo, hi), over [0, p) in blocks of
    `rows` rows (default block_rows(m, dtype); a multiple of BLOCK_ROWS), on the threads a
    chooser picks for products of this work (each thread its own (rows, m) scratch)."""
    rows = rows or block_rows(m, dtype)
    bounds = [(lo, min(p, lo + rows)) for lo in range(0, p, rows)]

    def described(lo: int, hi: int, i: int) -> None:       # (run or recorded: blockloop)
        run_block(lo, hi, scratch(dtype, rows, m)[:hi - lo], i)

    def block(i: int) -> None:
        described(*bounds[i], i)
    compiled = _compiled(what, bounds, dtype, rows, m, described) \
        if len(bounds) >= blockloop.MIN_BLOCKS and blockloop.on() else None

    def on_threads(threads: int) -> None:
        if compiled is not None:        # one call a thread, each taking blocks until none is left
            if threads == 2 and compiled.served():      # (a pool thread serving since the last pass)
                return
            run_chunks(compiled, threads, threads, linger=True)
        else:
            run_chunks(block, len(bounds), threads)
    if work < gemm.THREAD_WORK or len(bounds) < 2:
        on_threads(1)
        return
    _CHOOSERS.of((what, dtype, m)).run(work, on_threads)


def _compiled(what: str, bounds: list, dtype: np.dtype, rows: int, m: int, described):
    """blockloop's runner of the pass (`described(lo, hi, i)`: a block on this thread's
    scratch), or None where it declines (the Python loop then runs the blocks)."""
    try:
        plan = blockloop.planned((what, dtype, rows, m, bounds[-1][1]), bounds, described,
                                 lambda: dict(getattr(_LOCAL, "buffers", {})))
    except blockloop.Decline:
        return None
    return blockloop.runner(plan, lambda key: scratch(*key), _scratch_in)


# ---------------------------------------------------------------- forward: the kernel's partials

def _row_operands(args: tuple, at: int, shape: tuple, dtype: np.dtype) -> bool:
    """Is every operand but the product's a scalar or a row broadcast down `shape`, of
    `dtype` where it is an array?"""
    m = shape[1]
    for i, x in enumerate(args):
        if i == at:
            continue
        if isinstance(x, (bool, int, float)):
            continue
        if type(x) is not np.ndarray or x.dtype != dtype or x.shape not in ((), (1,), (m,), (1, 1), (1, m)):
            return False
    return True


def product_partials(a: Any, w: Any, kernel, at: int, args: tuple, active: tuple, from_out: bool = False,
                     backend: str = "auto"):
    """(p, h, [dh]) of `p = matmul(a, w)`, `h, [dh] = store_partials(kernel, args with p
    at `at`, active)`: fused where it can be (see the module docstring; p is then a
    zero-stride stand-in), else those two calls. `from_out` (the adjoint reads dh only
    through lhs_bar_sums): dh may be an OutputPartial, not stored (gemm_outpartials)."""
    fused = _fused_partials(a, w, kernel, at, args, active, from_out, backend) if SWITCH.on else None
    if fused is not None:
        return fused
    p = gemm.matmul(a, w, backend)
    full = args[:at] + (p,) + args[at + 1:]
    h, partials = runtime.store_partials(kernel, full, active, backend)
    return p, h, partials


def _fused_partials(a, w, kernel, at, args, active, from_out, backend):
    if len(active) != 1 or kernel.params.index(active[0]) != at or kernel.program.state:
        return None
    rows = gemm.row_product(a, w, backend)
    if rows is None:
        return None
    a, w = rows.operands
    dtype, shape = a.dtype, (a.shape[0], w.shape[1])
    if not _row_operands(args, at, shape, dtype) or kernel.module(()).result_kind in ("bool", "int"):
        return None
    stand_in = gemm.stand_in(dtype, shape)
    full = args[:at] + (stand_in,) + args[at + 1:]
    if runtime.compute_dtype(full) != dtype:
        return None
    chosen = backend_for(backend, list(full))
    work, p, m = shape[0] * a.shape[1] * shape[1], shape[0], shape[1]
    kernels = out_kernels(kernel, active[0]) if from_out else None
    if kernels is not None:
        got = out_partials(rows, kernels, chosen, args, at, shape, dtype, _blocks(p, m, dtype),
                           lambda run_block: row_blocks("outpartials", dtype, work, p, m, run_block))
        if got is not None:
            return stand_in, got[0], [got[1]]
    # the layouts of a block's launch (a two-row stand-in: a row operand stays a row)
    template = runtime.prepare(args[:at] + (np.empty((2, shape[1]), dtype),) + args[at + 1:], kernel.params, dtype)
    spec = LoopSpec(template.layouts, value="store", partials=True, seed="scalar")
    h, dh = np.empty(shape, dtype), np.empty(shape, dtype)
    launch = block_launch(kernel, chosen, spec, active, template, m, lambda r: [
        (r, m) if j == at else s for j, s in enumerate(template.shapes)])

    def run_block(lo: int, hi: int, scratch: np.ndarray, _: int) -> None:
        rows(lo, hi, scratch)
        values = list(template.values)
        values[at] = scratch
        launch(values, hi - lo, h[lo:hi], [dh[lo:hi]])
    row_blocks("partials", dtype, work, p, m, run_block)
    return stand_in, h, [dh]


# ---------------------------------------------------------------- reverse: the product's adjoint times d

def lhs_bar_sums(g: Any, a: Any, w: Any, d: Any, inputs: tuple, rhs: bool = False, nxt: tuple | None = None,
                 backend: str = "auto") -> tuple:
    """product_sums(d, matmul_lhs_bar(g, a, w), inputs), and with `rhs` the product's other
    adjoint `matmul_rhs_bar(g, a, w)` after them; with `nxt` = (j, x, v), inputs[j]'s
    adjoint t (the product `x @ v`'s, which nothing else reads) is not returned, and
    `matmul_rhs_bar(t, x, v)` is, last. Fused where it can be (see the module
    docstring), else those calls. d may be an OutputPartial (product_partials with
    from_out): F(h) in the product's pass, or its array."""
    fused = _fused_sums(g, a, w, d, inputs, rhs, nxt, backend) if SWITCH.on else None
    if fused is not None:
        return fused
    if nxt is not None:         # the pass without nxt, then its product apart
        return _next_apart(lhs_bar_sums(g, a, w, d, inputs, rhs, None, backend), nxt)
    if isinstance(d, OutputPartial):
        d = d.array()
    sums = product_sums(d, matmul_lhs_bar(g, a, w), inputs, backend)
    return sums + (matmul_rhs_bar(g, a, w),) if rhs else sums


def _next_apart(sums: tuple, nxt: tuple) -> tuple:
    at, x, v = nxt
    return sums[:at] + sums[at + 1:] + (matmul_rhs_bar(sums[at], x, v),)


def _d_rows(d: Any, shape: tuple, dtype: np.dtype) -> int | None:
    """d's row stride in elements where it is a float array of `shape` and `dtype` with
    contiguous aligned rows, else None."""
    if type(d) is not np.ndarray or d.shape != shape or d.dtype != dtype:
        return None
    size = dtype.itemsize
    s0, s1 = d.strides
    if s1 != size or s0 < 0 or s0 % size or not d.flags.aligned:
        return None
    return s0 // size


def _fused_sums(g, a, w, d, inputs, rhs, nxt, backend):
    if not plain_product(g, a, w):
        return None
    rows = gemm.row_product(g, w.T, backend)
    if rows is None:
        return None
    part = gemm.inner_range_product(a.T, g, backend) if rhs else None
    if rhs and part is None:
        return None
    return block_sums(rows, part, g.shape[1], a, d, inputs, nxt, g.dtype, backend)


def block_sums(rows, part, k: int, a, d, inputs: tuple, nxt, dtype: np.dtype, backend, what: str = ""):
    """lhs_bar_sums's fused pass (None where it declines, nothing run) for a seed G of k
    columns known only through `rows(lo, hi, scratch)` (G[lo:hi] @ W.T into the scratch)
    and `part(lo, hi, out)` (a[lo:hi].T @ G[lo:hi] into out; None: no rhs), each called
    on the block's thread, part right after rows: xent_head's seed, made a block at a
    time, as well as a stored G's. `what` prefixes the pass's name (its plan and chooser)."""
    rhs = part is not None
    p, m = a.shape
    shapes = [np.shape(x) for x in inputs]
    if m < 2 or not any(s in ((1, m), (m,)) for s in shapes) or not all(s in ((p, m), (1, m), (m,)) for s in shapes):
        return None
    nxt_part = _next_part(nxt, shapes, p, m, dtype, backend)
    if nxt is not None and nxt_part is None:
        return None
    blocks = _blocks(p, m, dtype)
    sums_of_blocks = np.zeros((blocks, m), dtype)
    work = p * m * (k * (2 if rhs else 1) + (nxt[1].shape[1] if nxt else 0))
    parts = np.empty((blocks, m, k), dtype) if rhs else None
    nxt_parts = np.empty((blocks, nxt[1].shape[1], m), dtype) if nxt else None
    out = None if nxt else np.empty((p, m), dtype)      # with nxt: never stored, a block at a time
    rows_per = block_rows(m, dtype)

    def out_at(lo: int, hi: int) -> np.ndarray:
        return out[lo:hi] if out is not None else scratch(dtype, rows_per, m, "adjoint")[:hi - lo]

    def in_blocks(kind: str, run_block) -> None:
        kind = what + kind
        if parts is None and nxt_parts is None:
            row_blocks(kind, dtype, work, p, m, run_block)
            return

        def with_parts(lo: int, hi: int, scratch: np.ndarray, i: int) -> None:
            run_block(lo, hi, scratch, i)
            if parts is not None:
                part(lo, hi, parts[i])      # the block's rows of a and g: in cache from run_block
            if nxt_parts is not None:
                nxt_part(lo, hi, out_at(lo, hi), nxt_parts[i])      # the block's adjoint, just written
        row_blocks(kind + ("+rhs" if rhs else "") + ("+next" if nxt else ""), dtype, work, p, m, with_parts)
    if isinstance(d, OutputPartial):
        if d.h.shape != (p, m) or d.h.dtype != dtype:
            return None
        out_sums(rows, d, out_at, sums_of_blocks, lambda run_block: in_blocks("outsums", run_block))
    else:
        ds = _d_rows(d, (p, m), dtype)
        if ds is None:
            return None
        f = mulsum_function(dtype)
        size = dtype.itemsize

        def run_block(lo: int, hi: int, scratch: np.ndarray, i: int) -> None:
            rows(lo, hi, scratch)
            call(f, ptr(d) + lo * ds * size, ptr(scratch), ptr(out_at(lo, hi)), ptr(sums_of_blocks) + i * m * size,
                 hi - lo, m, ds, m)
        in_blocks("sums", run_block)
    sums = np.add.reduce(sums_of_blocks, axis=0)
    result, given = [], False
    for j, (x, shape) in enumerate(zip(inputs, shapes)):   # a second bias input gets its own copy: no two alias
        if nxt is None or j != nxt[0]:
            result.append(out if shape == (p, m) else (sums.copy() if given else sums).reshape(shape))
        given = given or shape != (p, m)
    for got in (parts, nxt_parts):      # the blocks' parts added in block order (np.add.reduce on axis 0)
        if got is not None:
            result.append(np.add.reduce(got, axis=0))
    return tuple(result)


def _next_part(nxt, shapes: list, p: int, m: int, dtype: np.dtype, backend):
    """For nxt = (j, x, v): gemm.transposed_rows_product of x where inputs[j] is the one
    full-shape input (its adjoint is then read by nothing but x.T @ it, so it need not be
    stored) and `matmul_rhs_bar(t, x, v)` is `matmul(x.T, t)` for a (p, m) t of dtype
    (plain, v of the product's shape); else None (nxt None: None)."""
    if nxt is None:
        return None
    at, x, v = nxt
    if not isinstance(at, int) or not 0 <= at < len(shapes) or shapes[at] != (p, m) or shapes.count((p, m)) != 1:
        return None
    if type(x) is not np.ndarray or type(v) is not np.ndarray or x.dtype != dtype or v.dtype != dtype \
            or x.ndim != 2 or x.shape[0] != p or v.shape != (x.shape[1], m):
        return None
    return gemm.transposed_rows_product(x, m, backend)

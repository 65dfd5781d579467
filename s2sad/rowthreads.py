"""A row kernel's call (codegen/llvm_rows: log-sum-exp, softmax, the cross-entropy and
their adjoints) cut into blocks of rows run on threads, as the elementwise kernels' are
(fastpath): from THREAD_MIN elements the rows are cut into chunks, and a `ThreadChooser`
per (kernel, dtype) picks one thread or N by timing the calls (threadchoice.py).

The chunks are smaller than fastpath's (CHUNK elements, an eighth of its): these kernels
take 1.4-2.3 ns an element (an exp each) where an elementwise add takes 0.15, so a chunk
is still 20-40 us of work against 1-2 us for its call, and 100,000 rows of 10 classes
make 32 chunks, so that two threads end together (fastpath's chunks made 7: one thread
ran 4). THREAD_MIN is fastpath's: at 10,000 rows (100,000 elements, 140 us a kernel)
the chooser's probes cost more than they found on a busy machine (measured 1.03x). One
thread makes one call: it pays nothing for the chunks.

Why: the row kernels are exp-bound (an exp an element, forward and backward); at
100,000 rows of 10 classes one thread left the other core idle where XLA used both
(s2sad's log-sum-exp read 1.55x JAX's at 100k, 0.76x at 10k).

Invariants: a chunk starts at a multiple of ALIGN rows (llvm_rows.FLUSH_ROWS: the
short-row kernels' blocks and the logs' flush blocks are counted from a call's first
row), so every row meets the same block, the same lanes and the same operations on one
thread or many: results are bit for bit those of one call over all the rows. Rows are
independent (each writes its own out row): which thread runs a chunk changes nothing.
The chunks depend on (n, k) and the threshold alone.

Inside a call whose thread count was chosen for the whole of it (threads.all_calls_on:
a gradient's specialised copy, threadchoice.one_count_for_all) no probe is paid here,
so the rows are split from FORCED_MIN elements on more than one thread: the MLP3's
10-class adjoint at 10,000 rows (100,000 elements, ~300 us on one thread) ran on one
thread beside passes on two.
"""
from __future__ import annotations

from typing import Callable

from . import blockloop
from .codegen.llvm_rows import FLUSH_ROWS
from .fastpath import MAX_CHUNKS, THREAD_MIN
from .threadchoice import Choosers
from .threads import forced_threads, run_chunks

ALIGN = FLUSH_ROWS
CHUNK = 1 << 14               # elements a chunk (about: whole ALIGN-row blocks)
FORCED_MIN = 1 << 16          # elements from which rows are split where the count is forced above one
_CHOOSERS = Choosers()        # (kind, dtype) -> ThreadChooser


def row_chunks(n: int, k: int, least: int = THREAD_MIN) -> list[tuple[int, int]]:
    """[0, n) rows of k elements cut into chunks of whole ALIGN-row blocks: one below
    `least` elements, else about n k / CHUNK of them, at most MAX_CHUNKS."""
    total = n * k
    if n <= ALIGN:
        return [(0, n)]
    count = max(1, min(MAX_CHUNKS, total // CHUNK)) if total >= least else 1
    step = -(-n // count)
    step = -(-step // ALIGN) * ALIGN
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def run_rows(key, n: int, k: int, f, args_of: Callable[[int, int], tuple]) -> None:
    """f(*args_of(lo, hi)) over rows [lo, hi) covering [0, n) (f a row kernel's ctypes
    function): one call on one thread, or the chunks of row_chunks on the threads key's
    chooser picks; on two, handed to a pool thread serving block loops where one is
    (loopserver: no wake-up), else the pool's (which then serves for a while)."""
    forced = forced_threads() if n * k >= FORCED_MIN else None
    chunks = row_chunks(n, k, FORCED_MIN if forced is not None and forced > 1 else THREAD_MIN)
    if len(chunks) <= 1:
        f(*args_of(0, n))
        return

    def work(threads: int) -> None:
        if threads <= 1:
            f(*args_of(0, n))       # the chunks' bits (see the module docstring), in one call
        elif not (threads == 2 and blockloop.served_calls(f, [args_of(lo, hi) for lo, hi in chunks])):
            run_chunks(lambda c: f(*args_of(*chunks[c])), len(chunks), threads, linger=True)

    _CHOOSERS.of(key).run(n * k, work)

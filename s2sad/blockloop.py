"""A pass that runs a block of rows at a time (gemm_epilogue, gemm_outpartials) made by
one compiled loop per thread (codegen/llvm_blocks.py) instead of Python per block.

Why: at the 3-layer MLP's 10,000 rows its five block passes cut 80 blocks a gradient,
each block three or four C calls with their Python (closures, pointer arithmetic,
ctypes' argument conversion): `perf` put 20% of a one-thread gradient in libpython, and
on two threads 18% more in libpython and 10% in the kernel (the blocks' Python taking
turns at the GIL).

How: the pass's own code for a block (`run_block`) runs with calls *recorded* rather than
made (`call`, `call_stub`: the C calls its closures would make, as (C function,
arguments)), for blocks 0, 1, 2, B-2 and B-1 of the B blocks. Every argument is then a
number that is affine in the block's index (row pointers `a + lo * stride`, a block's
cell `sums + i * m`), but the last block's (it may be short): the table's row for block
i < B-1 is w0 + i (w1 - w0), checked against blocks 2 and B-2, and the last row is the
last block's record. A pointer into the recording thread's scratch buffers (the block's
product, its adjoint) is stored as an offset, flagged with its buffer: each thread adds
its own buffer's address. The loop's threads take blocks from one atomic counter.
A plan is kept per pass key; the next call records blocks 0 and B-1 only and moves the
table to its arrays where only addresses changed, alike in both (`planned`, `_moved`).

Invariants:
- the loop makes exactly the C calls the Python loop makes, with the same arguments (up
  to which thread's scratch a block uses, as before): the same bits. Where a block's
  calls are not all recordable (a launch without its C call: runs of leading dims), the
  records of the five blocks disagree in structure, or the affine check fails, the pass
  runs its Python loop (`Decline`), and nothing was called while recording.
- passes of fewer than MIN_BLOCKS blocks run the Python loop (nothing to gain).
- S2SAD_BLOCK_LOOP=0 turns it off (the Python loop everywhere: the tests' oracle).

Measured (session 18, the znver5, the MLP3 gradient at 10k rows on two threads, 4.1 ms):
planning is ~80 us a pass, 0.27 ms a gradient: two records of ~21 us each, `_moved`
~25 us. Rejected: a fast path that diffs this call's two records against the key's last
call's and moves the last plan's table by the words that changed (a training loop's
calls differ in one word or two: an array the allocator placed elsewhere). In-process
A/B, calls alternated: 84 -> 75 us a pass, ~1% of the gradient, for a second cache and
a second way to move a plan that must be right.
"""
from __future__ import annotations

import ctypes
import dataclasses
import re
import struct
import threading
from typing import Any, Callable

import numpy as np

from . import envflags, loopserver
from .backends.llvm import ptr
from .codegen import llvm_blocks, llvm_jit, llvm_launch

MIN_BLOCKS = 6
MAX_PLANS = 64           # plans kept (the last one per pass key), all dropped when full
SWITCH_NAME = "S2SAD_BLOCK_LOOP"
_MASK = 0xFFFFFFFFFFFFFFFF
_ARGTYPES = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
_LOOPS: dict = {}        # structure -> the compiled loop (a ctypes function)
_PLANS: dict = {}        # a pass's key -> (its block 0's record, Planned)


class _Local(threading.local):
    calls: list | None = None


_LOCAL = _Local()


class Decline(Exception):
    """A block whose calls cannot be made by the loop."""


def on() -> bool:
    return envflags.switch(SWITCH_NAME)


def recording() -> bool:
    """Is this thread describing a block (its calls recorded, not made)?"""
    return _LOCAL.calls is not None


def call(f, *args) -> None:
    """f(*args) (a ctypes function of a block pass), or recorded while a block is described."""
    calls = _LOCAL.calls
    if calls is None:
        f(*args)
    else:
        calls.append((f, args))


def call_stub(stub, values: list, out, grads: list) -> None:
    """A launch stub's call `stub(values, out, None, 1.0, grads, None, None)`, or recorded."""
    calls = _LOCAL.calls
    if calls is None:
        stub(values, out, None, 1.0, grads, None, None)
    else:
        calls.append((stub, (values, out, grads)))


# ---------------------------------------------------------------- a block's calls as words

_EXPR = re.compile(r"(vals|grads)\[(\d+)\]|(out|seed)")


def _kinds(cfunc) -> str:
    kinds = ""
    for t in cfunc.argtypes:
        k = llvm_launch.KINDS.get(t)
        if k is None:
            raise Decline(f"a C argument of type {t.__name__}")
        kinds += k
    return kinds


def _stub_sig(stub) -> tuple:
    """(address, kinds, [(how, which, index or word)]) of a launch stub's C call: how 0 a
    constant word, 1 an array's data pointer, 2 a float's bits; which 0 vals, 1 grads,
    2 out, 3 the seed (1.0)."""
    got = getattr(stub, "call", None)
    if got is None:
        raise Decline("a launch stub over runs of leading dims")
    cfunc, argv = got
    kinds, reads = _kinds(cfunc), []
    for text, k in zip(argv, kinds):
        pointer = text.startswith("P(") and text.endswith(")")
        expr = text[2:-1] if pointer else text
        if re.fullmatch(r"-?\d+", expr):
            reads.append((0, 0, int(expr) & _MASK))
            continue
        m = _EXPR.fullmatch(expr)
        if m is None or pointer != (k == "i") or m.group(3) == "seed" and pointer:
            raise Decline(f"a launch reading {text!r}")
        which = (0 if m.group(1) == "vals" else 1) if m.group(1) else (2 if m.group(3) == "out" else 3)
        reads.append((1 if pointer else 2, which, int(m.group(2)) if m.group(2) else 0))
    return llvm_launch.function_address(cfunc), kinds, reads


def _stub_words(sig: tuple, values: list, out, grads: list) -> list:
    words = []
    for how, which, at in sig[2]:
        if how == 0:
            words.append(at)
            continue
        v = values[at] if which == 0 else grads[at] if which == 1 else out if which == 2 else 1.0
        if how == 1 and type(v) is np.ndarray:
            words.append(ptr(v))
        elif how == 2 and isinstance(v, float):
            words.append(_bits(v))
        else:
            raise Decline("a launch given another kind of value")
    return words


def _bits(v: float) -> int:
    return _AS_WORD.unpack(_AS_DOUBLE.pack(v))[0]


_AS_DOUBLE, _AS_WORD = struct.Struct("<d"), struct.Struct("<Q")


def _record(run_block) -> tuple[tuple, list]:
    """(the functions and kinds of the calls run_block() would make, their words: each
    function's address, then its arguments')."""
    _LOCAL.calls = calls = []
    try:
        run_block()
    finally:
        _LOCAL.calls = None
    steps, words = [], []
    for f, args in calls:
        sig = getattr(f, "_blockloop_sig", None)
        if sig is None:
            sig = _stub_sig(f) if not isinstance(f, ctypes._CFuncPtr) else \
                (llvm_launch.function_address(f), _kinds(f), None)
            f._blockloop_sig = sig      # (on the function: it lives as long as its caller's closure)
        words.append(sig[0])
        if sig[2] is None:
            words += [a if type(a) is int and a >= 0 else _bits(a) if type(a) is float else int(a) & _MASK
                      for a in args]
        else:
            words += _stub_words(sig, *args)
        steps.append(sig[1])
    return tuple(steps), words


# ---------------------------------------------------------------- the table and the loop

def _flatten(record: tuple, scratches: list) -> tuple[tuple, np.ndarray]:
    """(structure: per step (kinds, flags), the block's words with scratch pointers made
    offsets into their buffer)."""
    steps, words = record
    w = np.array(words, dtype=np.uint64)
    # ("-": a step's function address, never a scratch pointer)
    pointers = np.fromiter((c == "i" for k in steps for c in "-" + k), bool, len(w))
    flags = np.zeros(len(w), np.int64)
    for j, (lo, size) in enumerate(scratches):
        inside = pointers & (w >= np.uint64(lo)) & (w < np.uint64(lo + size))
        if inside.any():
            flags[inside] = j + 1
            w[inside] -= np.uint64(lo)
    structure, at = [], 0
    for k in steps:
        structure.append((k, tuple(int(q) for q in flags[at + 1:at + 1 + len(k)])))
        at += 1 + len(k)
    return tuple(structure), w


def _loop(structure: tuple):
    f = _LOOPS.get(structure)
    if f is None:
        steps = list(structure)
        name = llvm_blocks.loop_name(steps)
        address, keep = llvm_jit.small_code(name, lambda: llvm_blocks.loop_ir(steps), False)
        f = _LOOPS[structure] = llvm_jit.callable_at(address, _ARGTYPES, keep)
    return f


@dataclasses.dataclass(frozen=True)
class Planned:
    """A pass's loop and table: `want[q - 1]`, the key of scratch buffer q (None: unused)."""

    loop: Any
    table: np.ndarray
    words: int
    want: tuple


ADDRESS_MIN = 1 << 40    # an 'i' word this large is an address (a size, stride or count never is)


def planned(key, bounds: list, run_block: Callable[[int, int, int], None], buffers: Callable[[], dict]) -> Planned:
    """The loop making run_block(lo, hi, i)'s calls for every block of `bounds` (see the
    module docstring); `buffers()`: the calling thread's scratch buffers by key. Raises
    Decline.

    Blocks 0 and B-1 are recorded first (which makes the buffers a block reads: one made
    later could replace another). A plan made before under the same key and functions
    is moved to this call's arrays where its first and last blocks' records differ
    from this call's only in address words (kind 'i', at least ADDRESS_MIN, not into a
    scratch buffer) and by the same amount in both: every number (size, stride, count,
    a double's bits) the same, each array moved as a whole. Else the plan is made."""
    B = len(bounds)
    if B < MIN_BLOCKS:
        raise Decline(f"fewer than {MIN_BLOCKS} blocks")
    first = _record(lambda: run_block(*bounds[0], 0))
    last = _record(lambda: run_block(*bounds[-1], B - 1))
    at, calls = 0, []
    for kinds in first[0]:          # (two layers' passes of one shape differ in the functions they call)
        calls.append(first[1][at])
        at += 1 + len(kinds)
    key = (key, first[0], tuple(calls))
    mine = buffers()
    got = _PLANS.get(key)
    if got is not None:
        moved = _moved(got, first, last, mine)
        if moved is not None:
            return moved
    keys = list(mine)
    scratches = [(ptr(mine[k]), mine[k].nbytes) for k in keys]
    records = [_flatten(first, scratches)]
    records += [_flatten(_record(lambda i=i: run_block(*bounds[i], i)), scratches) for i in (1, 2, B - 2)]
    records.append(_flatten(last, scratches))
    structure = records[0][0]
    if not structure or any(r[0] != structure for r in records):
        raise Decline("blocks whose calls differ")
    now = buffers()
    if any(now.get(k) is not mine[k] for k in keys):
        raise Decline("a scratch buffer made again while the blocks were recorded")
    w = [r[1] for r in records]
    delta = w[1] - w[0]                 # (uint64: wraps, as the pointers' arithmetic does)
    if not (np.array_equal(w[2], w[0] + np.uint64(2) * delta)
            and np.array_equal(w[3], w[0] + np.uint64(B - 2) * delta)):
        raise Decline("a block's arguments not affine in its index")
    table = np.empty((B, len(w[0])), np.uint64)
    table[:-1] = w[0] + np.arange(B - 1, dtype=np.uint64)[:, None] * delta
    table[-1] = w[4]
    flags = np.array([q for kinds, fl in structure for q in (0,) + fl], np.int64)
    used = {int(q) for q in flags if q}
    plan = Planned(_loop(structure), table, len(w[0]), tuple(k if j + 1 in used else None
                                                              for j, k in enumerate(keys)))
    pointers = np.fromiter((c == "i" for k, _ in structure for c in "-" + k), bool, len(flags))
    moves = pointers & (flags == 0) & np.logical_and.reduce([x >= np.uint64(ADDRESS_MIN) for x in w])
    raw0 = [int(x) for x in w[0]]       # (the records as made: scratch words as their addresses)
    rawl = [int(x) for x in w[4]]
    flagged = [(j, int(q)) for j, q in enumerate(flags) if q]
    for j, q in flagged:
        raw0[j], rawl[j] = int(w[0][j]), int(w[4][j])      # (offsets: compared as offsets)
    movable = ([j for j in range(len(flags)) if not moves[j] and not flags[j]], [j for j in range(len(flags)) if moves[j]])
    if len(_PLANS) >= MAX_PLANS:
        _PLANS.clear()
    _PLANS[key] = (plan, raw0, rawl, flagged, movable)
    return plan


def _moved(got: tuple, first: tuple, last: tuple, mine: dict) -> Planned | None:
    """The plan `got` made for arrays at other addresses, moved to this call's (see
    `planned`), or None where this call's first and last blocks do not allow it.
    (Python on ~60 words: numpy's calls on arrays this small cost more.)"""
    plan, w0, wl, flagged, movable = got
    a, b = first[1], last[1]
    if len(a) != len(w0) or len(b) != len(w0):
        return None
    bases = [0] * (len(plan.want) + 1)
    for q, k in enumerate(plan.want, 1):
        if k is not None:
            buf = mine.get(k)
            if buf is None:
                return None
            bases[q] = ptr(buf)
    for j, q in flagged:                # a scratch pointer: the same offset into this thread's buffer
        if a[j] - bases[q] != w0[j] or b[j] - bases[q] != wl[j]:
            return None
    fixed = movable[0]
    for j in fixed:                     # every number the same
        if a[j] != w0[j] or b[j] != wl[j]:
            return None
    shift = [0] * len(w0)
    for j in movable[1]:                # each address moved, in both blocks alike...
        d = a[j] - w0[j]
        if b[j] - wl[j] != d:
            return None
        shift[j] = d & _MASK
    addresses = [a[j] for j in movable[1]] + [b[j] for j in movable[1]]
    for buf in mine.values():           # ...and never into a scratch buffer
        lo = ptr(buf)
        hi = lo + buf.nbytes
        if any(lo <= v < hi for v in addresses):
            return None
    return Planned(plan.loop, plan.table + np.array(shift, np.uint64), plan.words, plan.want)


def direct(function, rows: list) -> Planned:
    """The plan of a loop whose block i is the one call function(*rows[i]) (a ctypes
    function of integer and pointer arguments; rows of non-negative ints), made without
    recording: for a split whose calls the caller knows (gemm's ranges of rows)."""
    kinds = _kinds(function)
    if any(k != "i" for k in kinds) or any(len(r) != len(kinds) for r in rows):
        raise Decline("a direct plan of non-integer arguments")
    address = llvm_launch.function_address(function)
    table = np.array([[address, *(v & _MASK for v in r)] for r in rows], np.uint64)
    return Planned(_loop(((kinds, (0,) * len(kinds)),)), table, table.shape[1], ())


def served_calls(function, rows: list) -> bool:
    """function(*row) for each row of `rows` (calls of integer and pointer arguments
    that write apart), on this thread and a pool thread serving block loops, taken in
    turn: True; or False, nothing run, where no pool thread serves (loopserver), the
    arguments are not all integers or the block loop is off (S2SAD_BLOCK_LOOP=0). For
    a split on two threads whose calls the caller knows (gemm's ranges of rows, a row
    kernel's chunks): a server spinning since the pass before starts at once, where one
    woken for it starts 30-60 us late."""
    if not loopserver.serving() or not on():
        return False
    try:
        plan = direct(function, rows)
    except Decline:
        return False
    return runner(plan, _no_scratch, _no_scratch).served()


def _no_scratch(*key):
    raise KeyError(key)      # (a direct plan's calls use no scratch: never called)


def runner(plan: Planned, buffer: Callable[[Any], np.ndarray], server_buffer: Callable[[dict, Any], np.ndarray]):
    """run(c): the plan's loop on the calling thread, its scratch buffers buffer(key),
    taking blocks until none is left (each of several threads running it takes its
    share of the blocks). run.served(): the loop on this thread and a serving pool
    thread (loopserver.run_served, its scratch server_buffer(its dict, key)), True; or
    False, nothing run, where no pool thread serves."""
    return _Runner(plan, buffer, server_buffer)


class _Runner:
    """`runner`'s result. An object, not a closure with `served` as an attribute: that
    closure and its attribute referred to each other, a cycle of ~16 objects a pass that
    only Python's cyclic collector freed (the MLP3's gradient at 10k rows made 94 such
    objects a call and spent ~120 us a call in the collector, session 19)."""

    __slots__ = ("plan", "buffer", "server_buffer", "counter", "at", "n", "count_at")

    def __init__(self, plan: Planned, buffer, server_buffer) -> None:
        self.plan, self.buffer, self.server_buffer = plan, buffer, server_buffer
        self.counter = np.zeros(1, np.int64)        # (kept alive with the table by this object)
        self.at, self.n, self.count_at = ptr(plan.table), plan.table.shape[0], ptr(self.counter)

    def __call__(self, _: int) -> None:
        buffer, plan = self.buffer, self.plan
        held = [buffer(k) if k is not None else None for k in plan.want]     # (alive through the call)
        bases = np.array([ptr(b) if b is not None else 0 for b in held], np.uint64)
        plan.loop(self.at, plan.words, self.n, self.count_at, ptr(bases))

    def served(self) -> bool:
        plan = self.plan
        return loopserver.run_served(ctypes.cast(plan.loop, ctypes.c_void_p).value, self.at, plan.words, self.n,
                                     self.count_at, plan.want, self.server_buffer, lambda: self(0))

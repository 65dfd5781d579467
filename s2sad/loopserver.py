"""A pool thread that waits for the next block loop spinning in machine code.

Why: work handed to the pool the usual way (ThreadPoolExecutor.submit) starts on the
pool thread 30-60 us later: a futex wake, and on this project's Firecracker guests
(cpuidle haltpoll with guest_halt_poll_ns=0) an idle vCPU halts at once, so every wake
is the host's. A block pass (gemm_epilogue, blockloop's compiled loop) loses half of
that; a split of 0.1-0.3 ms of work loses all it gains: at the MLP3's 10k rows
`h2 @ W3` (10 columns) and the cross-entropy's row adjoint took as long on two threads
as on one. OpenMP's runtimes (and XLA's pool) spin for a while after a parallel region
for the same reason.

How: inside a gradient timed whole (threadchoice.one_count_for_all: an array program
with a block pass large enough to split, whose passes follow one another closely), after
its share of a split (threads.run_chunks with linger: block passes, gemm's rows, a row
kernel's chunks) the pool thread enters `serve`, a compiled function called
with the GIL released, which spins on a mailbox (a few words of int64) for SPINS pauses
(~0.4-1 ms). A split made meanwhile on two threads is posted there (`run_served`, by
blockloop's runner: a pass's loop, or `served_calls`' plan of a product's ranges or a
row kernel's chunks): the loop's address and its five arguments, the server's own
scratch bases among them; the calling thread runs its share of the same loop (the
blocks from one atomic counter) and waits for the server's `done`. The server then
spins again. No Python runs on the server between splits. The end of the gradient timed
whole kicks it (threadchoice.one_count_for_all: the only calls that let a pool thread
linger): the spinning stays inside the call, never taking a core from what the user runs
next.

Measured (2026-12-03, the znver5 guest, 2 vCPUs, busy): the MLP3 gradient at 10k rows,
two `grad` objects in one process, calls alternated with S2SAD_POOL_SPIN 0 and 1,
medians of 225: 0.90x and 0.91x the time with default threads (5.1 -> 4.6 ms and 7.0 ->
6.3 ms), 0.92x forced to two; 100k rows 0.96x. Beside JAX's process (bench/fusion_rows'
setting: s2sad's calls, spin off and on, alternated between JAX's): 0.87-1.00x over five
runs. The softmax cross-entropy (10k, 100k), log-sum-exp and layer norm at 100k:
1.00-1.02x alone; but beside JAX's process the cross-entropy at 100k (ms-long splits, no
gradient timed whole) read 0.99-1.15x (per round 1.00-1.21x) with its splits lingering:
so only a gradient timed whole lingers, where the passes come back to back and the
wake-up is a part worth saving. Session 17's first version served block passes alone and
read 0.98-1.00x; the products and row kernels between the passes, served too, made the
difference.

Measured and rejected (session 20, the znver5, the MLP3 gradient at 10k rows, one
process, default threads):
- waking the server at the start of a gradient timed whole on two threads (a pool task
  entering `linger` before the first pass's Python), so that its wake-up overlaps that
  Python instead of delaying the first split: calls alternated with and without it,
  medians of 750-940, 1.05-1.08x the time (default threads and forced to two alike).
  Likely the GIL: the woken thread needs it for the few lines before `serve`, and takes
  it while the calling thread runs Python, each hand-over a futex wake on this guest;
  woken by a split, it finds the calling thread in machine code.
- a kick that leaves the server a short tail of spins (TAIL pauses) rather than at
  once, so that back-to-back calls find it serving at their first pass: ~110 us of tail
  (5,000 pauses) was shorter than the Python from one call's end to the next's first
  split, and served nothing more; ~450 us (20,000) served the first pass in most calls,
  for 0.985x the time (blocks of calls alternated, medians of 1,190): not worth a core
  spinning after every call.

The mailbox: 0 state (0 nobody serving, 1 serving and free, 2 claimed by a poster who is
writing, 3 posted, 4 taken by the server), 1 the last posted number, 2 the last done, 3
the function, 4-8 its arguments, 9 the kicks so far (the end of a call: a server leaves
at once when they pass the count its task was made with; counted, not set and cleared,
so a kick made before the thread reaches `serve` is not lost), 10 make-way (other pool
work submitted: the serving thread leaves, and the executor's thread takes the work; a
thread that lingers later clears it, since the next split of the call is posted to it).

Invariants:
- the loop run is the same loop with the same table: the same bits as the pool's way
  (each thread its own scratch; blocks from one counter);
- a post is claimed by compare-and-swap from 1 only: a server that has left (state 0)
  is never posted to; one that leaves races a poster through the same CAS (1 -> 0);
- the calling thread returns only after the server's `done` (release/acquire), or
  having taken back a post the server never started: nothing of the split is still
  written when the caller reads it;
- in a forked child the mailbox is zeroed (no server thread there);
- never a hang, nor a wait on a thread without a core: `serve` returns after SPINS
  pauses with nothing posted, or when kicked; the poster, its share done (every block,
  where the server has not started), takes a post the server has not claimed back
  (3 -> 1, by the same compare-and-swap the server claims it with, 3 -> 4), and waits
  only for a loop the server took and is running, yielding its core every WAIT_SPINS
  pauses.
- S2SAD_POOL_SPIN=0 turns it off (the pool's way everywhere).
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import threading

import numpy as np

from . import envflags
from .codegen import llvm_jit

SWITCH_NAME = "S2SAD_POOL_SPIN"
SPINS = 20000            # pauses a server waits for a post before it leaves (~0.4-1 ms)
WAIT_SPINS = 2000        # pauses a poster waits for a claimed loop between yields (~50-100 us)
_VERSION = "v5"


def on() -> bool:
    return envflags.switch(SWITCH_NAME)


def _pause() -> tuple[str, str]:
    """(the declaration, the call) of a spin-wait hint on this machine (x86's pause)."""
    if platform.machine().lower() in ("x86_64", "amd64", "i686", "i386"):
        return "declare void @llvm.x86.sse2.pause()\n", "  call void @llvm.x86.sse2.pause()\n"
    return "", ""


def _serve_ir(name: str) -> str:
    decl, pause = _pause()
    return (decl + f"define void @{name}(ptr %mb, i64 %spins, i64 %kicks) {{\n"
            "entry:\n"
            "  %seq.at = getelementptr inbounds i64, ptr %mb, i64 1\n"
            "  %done.at = getelementptr inbounds i64, ptr %mb, i64 2\n"
            "  %kick.at = getelementptr inbounds i64, ptr %mb, i64 9\n"
            "  %way.at = getelementptr inbounds i64, ptr %mb, i64 10\n"
            "  br label %loop\n"
            "loop:\n"
            "  %left = phi i64 [ %spins, %entry ], [ %left.next, %spin ], [ %spins, %run ], [ 0, %claimed ]\n"
            "  %st = load atomic i64, ptr %mb acquire, align 8\n"
            "  %posted = icmp eq i64 %st, 3\n"
            "  br i1 %posted, label %claim, label %check\n"
            "claim:\n"                   # (the poster may retract it first: then 1, and no run)
            "  %c = cmpxchg ptr %mb, i64 3, i64 4 acq_rel acquire\n"
            "  %took = extractvalue { i64, i1 } %c, 1\n"
            "  br i1 %took, label %run, label %check\n"
            "check:\n"
            "  %kick = load atomic i64, ptr %kick.at monotonic, align 8\n"
            "  %kicked = icmp ne i64 %kick, %kicks\n"
            "  %way = load atomic i64, ptr %way.at monotonic, align 8\n"
            "  %asked = icmp ne i64 %way, 0\n"
            "  %none = icmp eq i64 %left, 0\n"
            "  %out0 = or i1 %kicked, %asked\n"
            "  %out = or i1 %out0, %none\n"
            "  br i1 %out, label %leave, label %spin\n"
            "leave:\n"
            "  %r = cmpxchg ptr %mb, i64 1, i64 0 acq_rel acquire\n"
            "  %ok = extractvalue { i64, i1 } %r, 1\n"
            "  br i1 %ok, label %exit, label %claimed\n"
            "claimed:\n"                 # a poster holds the mailbox: its post comes next
            + pause +
            "  br label %loop\n"
            "spin:\n"
            + pause +
            "  %left.next = sub i64 %left, 1\n"
            "  br label %loop\n"
            "run:\n"
            + "".join(f"  %w{k}.at = getelementptr inbounds i64, ptr %mb, i64 {3 + k}\n"
                      f"  %w{k} = load i64, ptr %w{k}.at, align 8\n" for k in range(6)) +
            "  %fn = inttoptr i64 %w0 to ptr\n"
            "  %T = inttoptr i64 %w1 to ptr\n"
            "  %counter = inttoptr i64 %w4 to ptr\n"
            "  %bases = inttoptr i64 %w5 to ptr\n"
            "  call void %fn(ptr %T, i64 %w2, i64 %w3, ptr %counter, ptr %bases)\n"
            "  %seq = load i64, ptr %seq.at, align 8\n"
            "  store atomic i64 1, ptr %mb release, align 8\n"        # free again before done:
            "  store atomic i64 %seq, ptr %done.at release, align 8\n"   # the next post may claim it
            "  br label %loop\n"
            "exit:\n"
            "  ret void\n"
            "}\n")


def _post_ir(name: str) -> str:
    args = ", ".join(f"i64 %w{k}" for k in range(6))
    return (f"define i64 @{name}(ptr %mb, {args}) {{\n"
            "entry:\n"
            "  %r = cmpxchg ptr %mb, i64 1, i64 2 acq_rel acquire\n"
            "  %ok = extractvalue { i64, i1 } %r, 1\n"
            "  br i1 %ok, label %write, label %no\n"
            "no:\n"
            "  ret i64 0\n"
            "write:\n"
            + "".join(f"  %w{k}.at = getelementptr inbounds i64, ptr %mb, i64 {3 + k}\n"
                      f"  store i64 %w{k}, ptr %w{k}.at, align 8\n" for k in range(6)) +
            "  %seq.at = getelementptr inbounds i64, ptr %mb, i64 1\n"
            "  %seq0 = load i64, ptr %seq.at, align 8\n"
            "  %seq = add i64 %seq0, 1\n"
            "  store i64 %seq, ptr %seq.at, align 8\n"
            "  store atomic i64 3, ptr %mb release, align 8\n"
            "  ret i64 %seq\n"
            "}\n")


def _wait_ir(name: str) -> str:
    decl, pause = _pause()
    return (decl + f"define i64 @{name}(ptr %mb, i64 %seq, i64 %spins) {{\n"
            "entry:\n"
            "  %done.at = getelementptr inbounds i64, ptr %mb, i64 2\n"
            "  br label %loop\n"
            "loop:\n"
            "  %left = phi i64 [ %spins, %entry ], [ %left.next, %spin ]\n"
            "  %d = load atomic i64, ptr %done.at acquire, align 8\n"
            "  %eq = icmp eq i64 %d, %seq\n"
            "  br i1 %eq, label %exit, label %more\n"
            "more:\n"
            "  %none = icmp eq i64 %left, 0\n"
            "  br i1 %none, label %later, label %spin\n"
            "spin:\n"
            + pause +
            "  %left.next = sub i64 %left, 1\n"
            "  br label %loop\n"
            "later:\n"
            "  ret i64 0\n"
            "exit:\n"
            "  ret i64 1\n"
            "}\n")


def _swap_ir(expect: int, put: int):
    """The IR of a function (mb) -> 1 where it swapped the state `expect` for `put`, else 0:
    enter (0 -> 1, nobody serving: this thread serves), retract (3 -> 1, a post not yet
    taken: the poster takes it back)."""
    def ir(name: str) -> str:
        return (f"define i64 @{name}(ptr %mb) {{\n"
                "entry:\n"
                f"  %r = cmpxchg ptr %mb, i64 {expect}, i64 {put} acq_rel acquire\n"
                "  %ok = extractvalue { i64, i1 } %r, 1\n"
                "  %v = zext i1 %ok to i64\n"
                "  ret i64 %v\n"
                "}\n")
    return ir


_I64, _P = ctypes.c_int64, ctypes.c_void_p
_FUNCTIONS = {"serve": (_serve_ir, None, (_P, _I64, _I64)), "post": (_post_ir, _I64, (_P,) + (_I64,) * 6),
              "wait": (_wait_ir, _I64, (_P, _I64, _I64)), "enter": (_swap_ir(0, 1), _I64, (_P,)),
              "retract": (_swap_ir(3, 1), _I64, (_P,))}


class _Server:
    """The mailbox, its compiled functions (made on first use) and the server's scratch."""

    def __init__(self) -> None:
        self.mailbox = np.zeros(16, np.int64)
        self.at = self.mailbox.ctypes.data
        self.lock = threading.Lock()         # one poster at a time (the server's scratch is one set)
        self.buffers: dict = {}
        self.fns: dict | None = None
        self.served = 0                      # posts a server ran (for tests)
        self.retracted = 0                   # posts taken back, the poster's share all of it

    def functions(self) -> dict:
        if self.fns is None:
            fns = {}
            for what, (ir, restype, argtypes) in _FUNCTIONS.items():
                name = f"s2sad_loopserver_{what}_{_VERSION}"
                address, keep = llvm_jit.small_code(name, lambda ir=ir, name=name: ir(name), False)
                f = ctypes.CFUNCTYPE(restype, *argtypes)(address)
                f._s2sad_code = keep
                fns[what] = f
            self.fns = fns
        return self.fns

    def forget(self) -> None:
        """In a forked child: no server thread there."""
        self.mailbox[:] = 0
        self.lock = threading.Lock()
        self.buffers = {}


SERVER = _Server()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=SERVER.forget)


class _Allowed(threading.local):
    on = False


_ALLOWED = _Allowed()


def allowed() -> bool:
    """May a split made on this thread now leave a pool thread serving after it? (Inside a
    gradient timed whole: threadchoice.one_count_for_all.)"""
    return _ALLOWED.on


@contextlib.contextmanager
def allowing():
    """Within: this thread's splits on two threads leave a pool thread serving after
    them (a gradient timed whole, whose passes come one after the other; its end kicks
    the server)."""
    was, _ALLOWED.on = _ALLOWED.on, True
    try:
        yield
    finally:
        _ALLOWED.on = was


def serving() -> bool:
    """Is a pool thread serving now, free for a post (and the switch on)?"""
    return SERVER.mailbox[0] == 1 and on()


def kicks() -> int:
    """The kicks so far: a pool task made now carries it to `linger`."""
    return int(SERVER.mailbox[9])


def linger(since: int, spins: int | None = None) -> None:
    """On a pool thread after its share of a split: serve posted loops until `spins`
    (SPINS) pauses pass with none, or a kick after the `since`-th (kicks() when the task
    was made: the end of the call it served, even one that came before this thread got
    here), or other pool work (make_way); nothing if another thread serves already."""
    if not on():
        return
    fns = SERVER.functions()
    SERVER.mailbox[10] = 0          # (a make_way before now was for a server gone since)
    if fns["enter"](SERVER.at):
        fns["serve"](SERVER.at, SPINS if spins is None else spins, since)


def kick() -> None:
    """At the end of a call: a serving thread leaves at once, and one on its way to serve,
    given its task before now, does not start. Two threads kicking at once may count one
    kick, never none."""
    SERVER.mailbox[9] += 1


def make_way() -> None:
    """Before other work is submitted to the pool: a serving thread leaves, so that the
    executor's thread takes it. (A thread on its way to serve still serves: the caller
    posts its next split there.)"""
    if SERVER.mailbox[0]:
        SERVER.mailbox[10] = 1


def run_served(loop_address: int, table: int, words: int, n: int, counter: int, want, buffer, run_own) -> bool:
    """Post the loop to a serving pool thread (its scratch from `buffer(key)` per key of
    `want`), run_own() its share on this thread, wait for the server's: True; or False,
    nothing run, where no thread serves (or another poster holds it)."""
    if not serving() or not SERVER.lock.acquire(blocking=False):
        return False
    try:
        held = [buffer(SERVER.buffers, k) if k is not None else None for k in want]
        bases = np.array([b.ctypes.data if b is not None else 0 for b in held], np.uint64)
        fns = SERVER.functions()
        seq = fns["post"](SERVER.at, loop_address, table, words, n, counter, bases.ctypes.data)
        if not seq:
            return False
        try:
            run_own()
        finally:
            # not yet claimed (the server descheduled, or slow to see it): taken back,
            # since this thread's share took every block; else its blocks written and
            # its scratch free, yielding the core now and then (the server may need it)
            retracted = fns["retract"](SERVER.at)
            while not retracted and not fns["wait"](SERVER.at, seq, WAIT_SPINS):
                os.sched_yield()
        if retracted:
            SERVER.retracted += 1
        else:
            SERVER.served += 1
        return True
    finally:
        SERVER.lock.release()

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
whole parks it (`in_call`; threadchoice.one_count_for_all: the only calls that let a
pool thread linger): the spinning stays inside the call, never taking a core from what
the user runs next. Parked, the server waits in the kernel (a futex wait on a mailbox
word, at most NAP_NS, still in machine code); the next gradient timed whole on two
threads wakes it at its start, so that it spins again by the first pass's split without
taking the GIL; anything else the pool is given (make_way), a kick, or the nap's end
sends the thread back to the pool. Where the host has no futex (not Linux on x86-64 or
AArch64), it leaves at the end of the call instead.

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

Kept (session 20, the znver5, the MLP3 gradient at 10k rows, default threads, blocks of
ten calls alternated with the end of the call kicking its server, the first two of each
block left out, medians of ~1,900): 0.95x the time, twice; 100k rows 1.00x; the
cross-entropy (no gradient timed whole) unchanged. A server spinning at the first pass
had been worth 0.95-0.96x (a thread started by hand before each call); each call's
first split had gone to the pool's way. A first form parked on a count of the calls'
ends (an edge): a server descheduled past one call's end saw it during the next call and
parked there, its splits going to the pool's way (found by the tests on a loaded
machine); the level (word 11) keeps it serving.

The mailbox: 0 state (0 nobody serving, 1 serving and free, 2 claimed by a poster who is
writing, 3 posted, 4 taken by the server, 5 parked), 1 the last posted number, 2 the
last done, 3 the function, 4-8 its arguments, 9 the kicks so far (a server leaves at
once when they pass the count its task was made with; counted, not set and cleared, so
a kick made before the thread reaches `serve` is not lost), 10 make-way (other pool
work submitted: the serving thread leaves, and the executor's thread takes the work; a
thread that lingers later clears it, since the next split of the call is posted to it),
11 a gradient timed whole on two threads in progress (1; 0 at its end: the server parks
when it sees 0, a level rather than a count, so that a server descheduled past the end of
one call and into the next keeps serving that one), 12 the futex word (its low 32 bits,
bumped by each wake).

Invariants:
- the loop run is the same loop with the same table: the same bits as the pool's way
  (each thread its own scratch; blocks from one counter);
- a post is claimed by compare-and-swap from 1 only: a server that has left (state 0)
  is never posted to; one that leaves races a poster through the same CAS (1 -> 0);
- the calling thread returns only after the server's `done` (release/acquire), or
  having taken back a post the server never started: nothing of the split is still
  written when the caller reads it;
- in a forked child the mailbox is zeroed (no server thread there);
- a parked server (5) is never posted to (posts claim from 1 only); it parks by 1 -> 5
  and a wake sets 5 -> 1 before bumping the word, and it reads the word before it looks
  at the state again, so a wake is never lost (the wait returns at once where the word
  moved); after its wait it serves where the state is 1, else leaves (5 -> 0) or, where
  a wake came between, serves;
- never a hang, nor a wait on a thread without a core: `serve` returns after SPINS
  pauses with nothing posted, when kicked or given other pool work (both wake a parked
  server), or a parked server after NAP_NS; at exit, a parked server is kicked before
  the pool's threads are joined; the poster, its share done (every block,
  where the server has not started), takes a post the server has not claimed back
  (3 -> 1, by the same compare-and-swap the server claims it with, 3 -> 4), and waits
  only for a loop the server took and is running, yielding its core every WAIT_SPINS
  pauses.
- S2SAD_POOL_SPIN=0 turns it off (the pool's way everywhere).
"""
from __future__ import annotations

import concurrent.futures.thread  # noqa: F401 (its exit hook registered before this module's)
import contextlib
import ctypes
import os
import platform
import threading
import time

import numpy as np

from . import envflags
from .codegen import llvm_jit

SWITCH_NAME = "S2SAD_POOL_SPIN"
SPINS = 20000            # pauses a server waits for a post before it leaves (~0.4-1 ms)
NAP_NS = 200_000_000     # a parked server's wait for the next gradient, at most (then its thread goes back)
WAIT_SPINS = 2000        # pauses a poster waits for a claimed loop between yields (~50-100 us)
_VERSION = "v6"


def on() -> bool:
    return envflags.switch(SWITCH_NAME)


def _pause() -> tuple[str, str]:
    """(the declaration, the call) of a spin-wait hint on this machine (x86's pause)."""
    if platform.machine().lower() in ("x86_64", "amd64", "i686", "i386"):
        return "declare void @llvm.x86.sse2.pause()\n", "  call void @llvm.x86.sse2.pause()\n"
    return "", ""


def _serve_ir(name: str) -> str:
    decl, pause = _pause()
    return (decl + f"define void @{name}(ptr %mb, i64 %spins, i64 %kicks, i64 %sys, i64 %futex, i64 %nap) {{\n"
            "entry:\n"
            "  %seq.at = getelementptr inbounds i64, ptr %mb, i64 1\n"
            "  %done.at = getelementptr inbounds i64, ptr %mb, i64 2\n"
            "  %kick.at = getelementptr inbounds i64, ptr %mb, i64 9\n"
            "  %way.at = getelementptr inbounds i64, ptr %mb, i64 10\n"
            "  %call.at = getelementptr inbounds i64, ptr %mb, i64 11\n"
            "  %word.at = getelementptr inbounds i64, ptr %mb, i64 12\n"
            "  %ts = alloca { i64, i64 }, align 8\n"
            "  %ts.ns = getelementptr inbounds { i64, i64 }, ptr %ts, i32 0, i32 1\n"
            "  %nap.s = udiv i64 %nap, 1000000000\n"       # (a timespec: seconds, nanoseconds under 1e9)
            "  %nap.ns = urem i64 %nap, 1000000000\n"
            "  store i64 %nap.s, ptr %ts, align 8\n"
            "  store i64 %nap.ns, ptr %ts.ns, align 8\n"
            "  %can.rest = icmp ne i64 %sys, 0\n"
            "  br label %loop\n"
            "loop:\n"
            "  %left = phi i64 [ %spins, %entry ], [ %left.next, %spin ], [ %spins, %run ], [ 0, %claimed ], "
            "[ %spins, %resumed ]\n"
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
            "  br i1 %out, label %leave, label %rest.check\n"
            "rest.check:\n"              # no gradient in progress: rest (where the host can), else leave
            "  %call = load atomic i64, ptr %call.at monotonic, align 8\n"
            "  %idle = icmp eq i64 %call, 0\n"
            "  br i1 %idle, label %rest.go, label %spin\n"
            "rest.go:\n"
            "  br i1 %can.rest, label %rest.enter, label %leave\n"
            "rest.enter:\n"              # 1 -> 5: no post is taken while parked
            "  %re = cmpxchg ptr %mb, i64 1, i64 5 acq_rel acquire\n"
            "  %re.ok = extractvalue { i64, i1 } %re, 1\n"
            "  br i1 %re.ok, label %parked, label %claimed\n"
            "parked:\n"                  # the word first, then the state: a wake between them changes the word
            "  %w = load atomic i32, ptr %word.at acquire, align 8\n"
            "  %st.n = load atomic i64, ptr %mb acquire, align 8\n"
            "  %still = icmp eq i64 %st.n, 5\n"
            "  br i1 %still, label %wait, label %resumed\n"
            "wait:\n"                    # futex(word, FUTEX_WAIT_PRIVATE, w, nap): woken, timed out, or not w
            "  %sysf = inttoptr i64 %sys to ptr\n"
            "  %w64 = zext i32 %w to i64\n"
            "  %sr = call i64 (i64, ...) %sysf(i64 %futex, ptr %word.at, i64 128, i64 %w64, ptr %ts)\n"
            "  %st.w = load atomic i64, ptr %mb acquire, align 8\n"
            "  %woken = icmp eq i64 %st.w, 1\n"
            "  br i1 %woken, label %resumed, label %give.up\n"
            "give.up:\n"                 # still parked after one nap: the thread goes back to the pool
            "  %gu = cmpxchg ptr %mb, i64 5, i64 0 acq_rel acquire\n"
            "  %gu.ok = extractvalue { i64, i1 } %gu, 1\n"
            "  br i1 %gu.ok, label %exit, label %resumed\n"
            "resumed:\n"                 # a wake set 1: serving again, for the next call
            "  br label %loop\n"
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


def _wake_ir(name: str) -> str:
    """(mb, sys, futex) -> 1 where a parked server was set serving (5 -> 1) and its word
    bumped and woken (futex FUTEX_WAKE_PRIVATE, one waiter), else 0."""
    return (f"define i64 @{name}(ptr %mb, i64 %sys, i64 %futex) {{\n"
            "entry:\n"
            "  %word.at = getelementptr inbounds i64, ptr %mb, i64 12\n"
            "  %r = cmpxchg ptr %mb, i64 5, i64 1 acq_rel acquire\n"
            "  %ok = extractvalue { i64, i1 } %r, 1\n"
            "  br i1 %ok, label %wake, label %no\n"
            "no:\n"
            "  ret i64 0\n"
            "wake:\n"
            "  %old = atomicrmw add ptr %word.at, i32 1 acq_rel, align 8\n"
            "  %sysf = inttoptr i64 %sys to ptr\n"
            "  %sr = call i64 (i64, ...) %sysf(i64 %futex, ptr %word.at, i64 129, i64 1)\n"
            "  ret i64 1\n"
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
_FUNCTIONS = {"serve": (_serve_ir, None, (_P, _I64, _I64, _I64, _I64, _I64)),
              "wake": (_wake_ir, _I64, (_P, _I64, _I64)), "post": (_post_ir, _I64, (_P,) + (_I64,) * 6),
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
# at exit, before the pool's threads are joined, a parked server leaves: threading's exit
# hooks run newest first, and the pool's join is registered when concurrent.futures.thread
# is first imported (so it is imported here first)
getattr(threading, "_register_atexit", lambda f: None)(lambda: kick() if SERVER.fns is not None else None)


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


def _futex() -> tuple[int, int]:
    """(the address of libc's `syscall`, this machine's futex syscall number), or (0, 0)
    where there is no futex (not Linux on x86-64 or AArch64): a server then leaves where it
    would park."""
    number = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}.get(platform.machine().lower())
    if number is None or not platform.system() == "Linux":
        return 0, 0
    try:
        return ctypes.cast(ctypes.CDLL(None).syscall, ctypes.c_void_p).value or 0, number
    except (OSError, AttributeError):
        return 0, 0


_SYSCALL, _FUTEX = _futex()


def linger(since: int, spins: int | None = None) -> None:
    """On a pool thread after its share of a split: serve posted loops until `spins`
    (SPINS) pauses pass with none, or a kick after the `since`-th (kicks() when the task
    was made: even one that came before this thread got here), or other pool work
    (make_way); nothing if another thread serves already. With no gradient timed whole
    in progress (`in_call`), it parks (state 5) for up to NAP_NS, woken by the next one."""
    if not on():
        return
    fns = SERVER.functions()
    SERVER.mailbox[10] = 0          # (a make_way before now was for a server gone since)
    if fns["enter"](SERVER.at):
        fns["serve"](SERVER.at, SPINS if spins is None else spins, since, _SYSCALL, _FUTEX, NAP_NS)


def _wake() -> bool:
    """A parked server (state 5) set serving and woken (True), else nothing (False)."""
    return SERVER.mailbox[0] == 5 and bool(SERVER.functions()["wake"](SERVER.at, _SYSCALL, _FUTEX))


@contextlib.contextmanager
def in_call(threads: int):
    """Around a gradient timed whole (threadchoice.one_count_for_all) on `threads`: on two,
    a server parked since the last one spins again (woken in machine code: no GIL to wait
    for), so that the first pass's split is served at once; at its end (mailbox word 11
    back to 0) a serving thread parks (a futex wait, no core taken) for the next one, or,
    where the host has no futex, leaves. Level, not edge: a server that sees the end of
    one call only after the next began (descheduled between them) keeps serving."""
    if threads != 2:
        yield
        return
    SERVER.mailbox[11] = 1          # (before the wake: a woken server finds a call in progress)
    if on():
        _wake()
    try:
        yield
    finally:
        SERVER.mailbox[11] = 0


def kick() -> None:
    """A serving or parked thread leaves at once, and one on its way to serve, given its
    task before now, does not start. Two threads kicking at once may count one kick,
    never none."""
    SERVER.mailbox[9] += 1
    _wake()


def make_way() -> None:
    """Before other work is submitted to the pool: a serving or parked thread leaves, so
    that the executor's thread takes it. (A thread on its way to serve still serves: the
    caller posts its next split there.)"""
    if SERVER.mailbox[0]:
        SERVER.mailbox[10] = 1
        _wake()


def yield_core() -> None:
    """Give the core away for a moment: os.sched_yield where the OS has it (not on
    Windows: there a zero sleep, which lets another thread run)."""
    give = getattr(os, "sched_yield", None)
    if give is not None:
        give()
    else:
        time.sleep(0)


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
                yield_core()
        if retracted:
            SERVER.retracted += 1
        else:
            SERVER.served += 1
        return True
    finally:
        SERVER.lock.release()

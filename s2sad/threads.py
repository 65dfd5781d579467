"""The threads the runtime splits a large call across (fastpath.threaded_sum_dual,
fastpath.fast_apply, gemm): the count allowed, the pool, running chunks on it. How many
of them a call uses is threadchoice.py's choice, unless S2SAD_NUM_THREADS forces it.

Invariants:
- `num_threads()` is always in 1..max_threads(): S2SAD_NUM_THREADS when it is such an
  integer; otherwise (not an integer, 0, negative) a warning naming the variable, the
  bad value and the value used, and the default (the cores this process may run on,
  at most OMP_NUM_THREADS); above max_threads() (MAX_PER_CORE threads a core: more only
  adds switching) a warning and that cap.
- At most max_threads() - 1 pool threads exist at a time (the calling thread is the
  other): a larger pool replaces a smaller one, whose idle threads end once it is
  dropped (concurrent.futures' own weakref callback).
- A forked child never uses its parent's pool: the pool's threads do not exist in the
  child, and a task queued to it would wait forever. `os.register_at_fork` drops the
  pool and renews the lock in the child, which makes its own pool on its first large
  call.

- A split that may pass to a serving thread (run_chunks' `linger`): the pool thread,
  its chunks done, waits for the next split spinning in compiled code for ~0.5 ms
  (loopserver.py, which says why and what it gained); any other submission first sends
  it back to the pool (loopserver.make_way).
"""
from __future__ import annotations

import contextlib
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from . import loopserver

ENV = "S2SAD_NUM_THREADS"
MAX_PER_CORE = 4


def _cores() -> int:
    """The cores this process may run on: its CPU affinity (taskset, a container's cpuset,
    a batch scheduler's), not the machine's count, which would oversubscribe them."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _omp_cap(cores: int) -> int:
    """OMP_NUM_THREADS, when a positive integer, caps the default: it is how a process is
    told how many threads its libraries may use (dask's workers get 1, so that two workers
    on two cores do not run four threads; BLAS and PyTorch honour it too)."""
    try:
        n = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        return cores
    return min(cores, n) if n >= 1 else cores


# read once, at import (as BLAS reads OMP_NUM_THREADS): each costs microseconds a call
_CORES = _cores()
_DEFAULT = _omp_cap(_CORES)


def default_threads() -> int:
    """Threads for a large call when S2SAD_NUM_THREADS does not say: the cores this process
    may run on, at most OMP_NUM_THREADS."""
    return _DEFAULT


def max_threads() -> int:
    """The most threads a call is split across (MAX_PER_CORE per core it may run on)."""
    return MAX_PER_CORE * _CORES


def num_threads() -> int:
    """Threads for a large call: S2SAD_NUM_THREADS within 1..max_threads(), else the
    default or the cap, with a warning (see the module docstring)."""
    env = os.environ.get(ENV)
    if not env:
        return default_threads()
    try:
        n = int(env)
    except ValueError:
        return _bad(env, "is not an integer", default_threads())
    if n < 1:
        return _bad(env, "is not a positive integer", default_threads())
    cap = max_threads()
    if n > cap:
        return _bad(env, f"is more than {MAX_PER_CORE} threads per core ({default_threads()} cores)", cap)
    return n


_LOCAL = threading.local()


@contextlib.contextmanager
def one_thread():
    """Calls made inside run on the calling thread alone, nothing timed: for a caller that is
    itself one of several threads sharing the cores (dask's threaded scheduler runs a task
    per core; each task splitting its call across the cores again ran four threads on two,
    and their timings misled the choosers)."""
    with _forced(1):
        yield


@contextlib.contextmanager
def sharing_cores(callers: int):
    """Calls made inside run alongside `callers - 1` others of the same kind (a dask call's
    block tasks on the scheduler's threads): each gets its share of the cores, at least one
    thread, nothing timed (calls that share the cores would mislead the choosers); a caller
    alone (1) is left to the chooser. Results never depend on the count."""
    if callers <= 1:
        yield
        return
    with _forced(max(1, default_threads() // callers)):
        yield


class all_calls_on:
    """Every call made inside runs on n threads (where it is large enough to be split at
    all), nothing timed: for a caller that chose the count for a whole sequence of calls
    (threadchoice.one_count_for_all: a gradient's passes share rows between the cores'
    caches, so one pass's count changes the next one's time, and each pass's own
    chooser, timing it alone, was misled). A class, not a generator: it wraps every
    call of a gradient."""

    __slots__ = ("n", "before")

    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self) -> None:
        self.before = getattr(_LOCAL, "forced", None)
        _LOCAL.forced = self.n

    def __exit__(self, *exc) -> None:
        _LOCAL.forced = self.before


@contextlib.contextmanager
def _forced(n: int):
    before = getattr(_LOCAL, "forced", None)
    _LOCAL.forced = n
    try:
        yield
    finally:
        _LOCAL.forced = before


def forced_threads() -> int | None:
    """The count `one_thread` or S2SAD_NUM_THREADS forces (as num_threads reads it, bad
    values warned about and replaced), or None when neither does: the count is then chosen
    per kernel by timing (threadchoice.py)."""
    local = getattr(_LOCAL, "forced", None)
    if local is not None:
        return local
    if not os.environ.get(ENV):
        return None
    return num_threads()


def _bad(value: str, why: str, used: int) -> int:
    warnings.warn(f"s2sad: {ENV}={value!r} {why}; using {used} threads", RuntimeWarning, stacklevel=4)
    return used


class _Pool:
    """The process's worker pool, made on first use (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.executor: ThreadPoolExecutor | None = None
        self.size = 0

    def get(self, n: int) -> ThreadPoolExecutor:
        with self.lock:
            if self.executor is None or self.size < n:
                self.executor = ThreadPoolExecutor(max_workers=n, thread_name_prefix="s2sad")
                self.size = n
            return self.executor

    def forget(self) -> None:
        """In a forked child: the parent's pool and lock are not this process's."""
        self.lock = threading.Lock()
        self.executor, self.size = None, 0


_POOL = _Pool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_POOL.forget)


def pool_size() -> int:
    """How many threads the pool may run now (0: none made in this process)."""
    return _POOL.size


def run_chunks(run: Callable[[int], None], n_chunks: int, n_threads: int, linger: bool = False) -> None:
    """run(c) for every chunk c, on n_threads threads: the calling thread and
    n_threads - 1 of the pool's, each taking the next chunk not yet taken. A thread
    that starts late or is descheduled takes fewer chunks instead of finishing last
    with half the work. (Which thread runs a chunk does not change any result: each
    chunk writes its own slice and its own accumulators.)

    The call returns once every chunk has run, not once every pool thread has: on a
    busy machine a pool thread may wait milliseconds for a core, and by then the
    caller has taken its chunks; it finds none left and ends. What it was given is
    dropped first (`_Chunks.close`), so it keeps no array alive. The first exception a
    chunk raised is raised here, after the other chunks ran.

    `linger` (on two threads): the pool thread, its chunks done, then serves the next
    split for a while (loopserver.linger); any submission first sends a serving thread
    back to the pool (loopserver.make_way)."""
    if n_threads <= 1 or n_chunks <= 1:
        for c in range(n_chunks):
            run(c)
        return
    chunks = _Chunks(run, n_chunks)
    pool = _POOL.get(n_threads - 1)
    loopserver.make_way()
    since = loopserver.kicks()
    # (a server is posted to by splits on two threads only: more would spin for nothing;
    # and only inside a gradient timed whole, whose passes follow one another closely)
    serve = linger and n_threads == 2 and loopserver.allowed()
    task = (lambda: (chunks.work(), loopserver.linger(since))) if serve else chunks.work
    for _ in range(n_threads - 1):
        pool.submit(task)
    chunks.work()
    chunks.wait_and_close()


class _Chunks:
    """The chunks of one run_chunks call, taken in turn by whichever threads run `work`."""

    def __init__(self, run: Callable[[int], None], n_chunks: int) -> None:
        self.run: Callable[[int], None] | None = run
        self.taken = iter(range(n_chunks))     # next() on it is atomic under the GIL
        self.left = n_chunks
        self.error: BaseException | None = None
        self.lock = threading.Lock()
        self.all_done = threading.Event()

    def work(self) -> None:
        run = self.run
        if run is None:                        # a pool thread that started after the call ended
            return
        for c in self.taken:
            try:
                run(c)
            except BaseException as e:         # noqa: BLE001 - raised by the caller, in wait_and_close
                with self.lock:
                    self.error = self.error or e
            finally:
                with self.lock:
                    self.left -= 1
                    if self.left == 0:
                        self.all_done.set()

    def wait_and_close(self) -> None:
        """Wait until every chunk has run (never return while a chunk still writes)."""
        self.all_done.wait()
        self.run = None
        error, self.error = self.error, None
        if error is not None:
            raise error

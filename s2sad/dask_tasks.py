"""What a dask task of s2sad runs (dask_grad builds the graphs): the loss's value and
gradients on one block (`BlockTask`), the gradient alone in a blockwise layer
(`BlockGrad`), a function broadcast over one block (`BlockApply`), each kernel call with
its share of the cores (`tasks_at_once`).

Invariants: a task object is picklable and ships no compiled code (the loss by
reference or by value, its file's lines; a Derivative made in a process is left out of
its pickle), so a fresh worker process plans and compiles for itself or maps its kernels
from its machine's disk cache; each block's result is the in-memory call's on that block
(weighted for a mean), on any thread count.

Layer: plan (with dask_grad; dask and distributed are read only when a task runs).
"""
from __future__ import annotations

import hashlib
import linecache
import multiprocessing
import pickle
import sys
import threading
import types
from collections import OrderedDict
from typing import Callable

import numpy as np

from . import mempool
from .dask_blocks import pick
from .derivative import Derivative
from .threads import sharing_cores


class BlockTask:
    """value_and_grad (or, `what`="grad", the gradients alone: value None) of the loss on
    one block, times `weight`: picklable (the loss and its file's lines; no compiled code,
    the Derivative it made left out), so a fresh worker process plans and compiles for
    itself (or maps the kernels from its machine's disk cache). The blocks of one call
    that share this object share its Derivative (made at the first, ~60 us a block)."""

    PREFIX = "s2sad_grad_"      # of its dask name (and of its tasks' keys)

    def __init__(self, fun: "Callable | Shipped", argnums: tuple[int, ...], backend, mode: str, weight: float,
                 picks: tuple = (), blocks: int = 0, what: str = "value_and_grad"):
        # the loss as tasks ship it: one `Shipped` for all the blocks of a call (pickled once)
        self.shipped = fun if isinstance(fun, Shipped) else Shipped(fun)
        fun = self.shipped.fun
        self.fun, self.argnums, self.backend, self.mode, self.weight = fun, argnums, backend, mode, weight
        self.what = what
        self.derivative: Derivative | None = None
        self.picks = picks                # the items it takes of its inputs (dask_blocks.pick)
        self.blocks = blocks              # the call's block tasks (0: not known, as many as run at once)
        # dask names a task after its callable's __name__: "s2sad_grad_loss" on the dashboard
        self.__name__ = self.PREFIX + getattr(fun, "__name__", type(fun).__name__).replace("<lambda>", "lambda")
        code = getattr(fun, "__code__", None)
        self.filename = code.co_filename if code is not None else None
        self.lines = tuple(linecache.getlines(self.filename)) if self.filename else ()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__, derivative=None)      # never compiled code in a task
        del state["fun"]                                  # (shipped once, in `shipped`)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.fun = self.shipped.fun

    def __call__(self, *blocks):
        return self.run(pick(blocks, self.picks), self.weight)

    def made(self) -> Derivative:
        """The Derivative this object's blocks run, made at the first (two blocks meeting
        here at once may each make one: the same plan, from the process's caches)."""
        d = self.derivative
        if d is None:
            if self.filename and self.lines and not linecache.getlines(self.filename):
                # the source is not readable here (another machine): the shipped lines stand in
                linecache.cache[self.filename] = (sum(map(len, self.lines)), None, list(self.lines), self.filename)
            if self.filename:
                restore_filenames(self.fun, self.filename)
            d = self.derivative = Derivative(self.fun, self.argnums, self.backend, self.what, self.mode)
        return d

    def run(self, blocks, weight: float):
        """(value, grads) of the loss on `blocks`, times `weight`."""
        d = self.made()
        token = mempool.enter(blocks)     # a block's gradient from the pool: warm on the next call
        try:
            with sharing_cores(tasks_at_once(self.blocks)), np.errstate(all="ignore" if weight == 0.0 else None):
                value, grads = d(*blocks)     # (the parallelism is dask's first; an empty block's 0/0 unsaid)
        finally:
            mempool.leave(token)
        if weight == 0.0:     # a block of no element in a mean adds nothing (its own mean is 0/0)
            return (None if value is None else 0.0), tuple(np.zeros_like(g) for g in grads)
        if weight != 1.0:
            value = None if value is None else value * weight
            grads = tuple(g * np.asarray(weight, dtype=np.result_type(g)) for g in grads)
        return value, tuple(grads)


def tasks_at_once(blocks: int) -> int:
    """How many of a call's `blocks` block tasks (0: not known) run at once in this process,
    by what is running them: a distributed worker its threads; dask's threaded scheduler
    its pool's (`num_workers`, `pool`, else dask's count of the cores); on the main thread
    of the user's process (the synchronous scheduler) one; a `processes` scheduler's child
    as the threaded one. Each kernel call then takes its share of the cores
    (threads.sharing_cores): measured at 10M in 4 blocks on 2 cores,
    each block on both cores ran four threads on two and was slower than one thread each;
    a single block on one thread left a core idle.

    Measured and rejected (session 13, Intel Xeon VM, 2 vCPUs, 10M in 4 blocks persisted,
    against the same code without it, interleaved per round): block tasks helping each
    other finish (a task done, once every block of its call had started, took the chunks
    not yet taken of the blocks still running, so that a slow block leaves no core idle
    at the end). 0.94-0.96x at load ~1, but 1.04-1.06x at load 5 (3 blocks: 1.07-1.15x):
    on a loaded machine a task that waits for the chunk a descheduled helper took gives
    its core away, and a block's kernel cut into chunks, rather than one call, cost 5-12%
    on one thread here. On this VM a block's kernel time varies up to 2x from call to
    call with the memory it reads and writes (the same kernel, the same block length;
    `perf stat`: the slow calls spend ~30% of their time off the CPU). Timelines of the
    4-block row there: the four kernels' time summed to the numpy call's (29.5 ms against
    2 x 14.6); the rest was the first task starting 1.2-1.6 ms into the call (dask's floor
    for the whole held graph: 0.6-0.9 ms) and one block 1.6x slower than the others
    finishing alone, where the numpy call's 32 chunks, taken in turn, share a slow spell."""
    slots = _worker_threads()
    if slots is None:
        if threading.current_thread() is threading.main_thread() and multiprocessing.parent_process() is None:
            return 1            # the synchronous scheduler: one task at a time
        slots = _scheduler_threads()
    return max(1, min(blocks, slots) if blocks else slots)


def _worker_threads() -> int | None:
    """The threads of the distributed workers in this process (one, with its own threads,
    in a worker process; several in a cluster of threads, processes=False), None outside
    a worker."""
    dist = sys.modules.get("distributed")
    if dist is None:
        return None
    try:
        worker = dist.get_worker()
    except ValueError:
        return None
    workers = [w for w in getattr(type(worker), "_instances", ()) if str(getattr(w, "status", "")).endswith("running")]
    workers = workers or [worker]       # (closed workers not yet collected left out)
    return sum(int(getattr(getattr(w, "state", None), "nthreads", 1) or 1) for w in workers)


def _scheduler_threads() -> int:
    """The tasks dask's local threaded (or processes) scheduler runs at once."""
    from dask import config
    from dask.system import CPU_COUNT

    pool = config.get("pool", None)
    if pool is not None:
        return int(getattr(pool, "_max_workers", None) or getattr(pool, "_processes", None) or CPU_COUNT)
    n = config.get("num_workers", None)
    return int(n) if isinstance(n, int) and n >= 1 else CPU_COUNT


ARRIVED_MAX = 8              # losses a process keeps as they arrived (by their pickle's digest)
ARRIVED_MAX_BYTES = 1 << 20  # a larger pickle (a loss carrying data by value) is not kept


class Shipped:
    """A loss as a call's tasks ship it: pickled once for the call (cloudpickle: by reference
    where it is importable, else by value, code and globals), and named by the digest of
    those bytes. A process that receives it (a worker) unpickles each digest once and gives
    every task of it the same function object (`arrived`).

    Why: s2sad's plans serve a function whose code object is the one planned (frontend.
    Assumptions); a loss shipped by value (defined in __main__, as a script's is) arrived
    as a new function with a new code object in every task, and the worker planned it again
    per task (measured: the out-of-core example's block tasks took 36-52 ns of CPU a row
    where the same loss imported by reference took 18-26). Equal bytes are an equal
    function (its code, and the values of the globals and cells it reads), so the one
    object stands for all of them; a loss whose globals changed between calls pickles to
    other bytes and arrives as a new function."""

    def __init__(self, fun: Callable):
        self.fun = fun
        self._payload: tuple[bytes, bytes] | None = None

    def payload(self) -> tuple[bytes, bytes]:
        """(digest, pickled bytes), made at the first pickling (once per call)."""
        if self._payload is None:
            import cloudpickle     # (dask's own dependency: a Shipped is pickled only by dask)

            data = cloudpickle.dumps(self.fun)
            self._payload = (hashlib.blake2b(data, digest_size=20).digest(), data)
        return self._payload

    def __reduce__(self):
        return arrived, self.payload()


_ARRIVED: "OrderedDict[bytes, Callable]" = OrderedDict()
_ARRIVING = threading.Lock()


def arrived(digest: bytes, data: bytes) -> Shipped:
    """Unpickling a Shipped: the function that arrived with these bytes before, while this
    process keeps it (the last ARRIVED_MAX, each of at most ARRIVED_MAX_BYTES: a loss that
    carries big data by value is unpickled per task, as dask would, not kept), else the
    bytes unpickled."""
    with _ARRIVING:
        fun = _ARRIVED.get(digest)
        if fun is not None:
            _ARRIVED.move_to_end(digest)
    if fun is None:
        fun = pickle.loads(data)
        if len(data) > ARRIVED_MAX_BYTES:
            return Shipped(fun)
        with _ARRIVING:
            fun = _ARRIVED.setdefault(digest, fun)      # (two tasks meeting here: the first one's)
            while len(_ARRIVED) > ARRIVED_MAX:
                _ARRIVED.popitem(last=False)
    shipped = Shipped(fun)
    shipped._payload = (digest, data)       # (shipped on as it came, if dask sends it on)
    return shipped


def arrived_losses() -> int:
    """How many shipped losses this process keeps (for tests and explain)."""
    return len(_ARRIVED)


class BlockGrad:
    """blockwise's function (`lazy_grad`): the gradient w.r.t. the one differentiated
    argument, at position `which`, of the loss on one block; for a mean, weighted by that
    block's share (its size over `total`), as BlockTask's weight is."""

    def __init__(self, task: BlockTask, which: int, total: int | None):
        self.task, self.which, self.total = task, which, total
        self.__name__ = task.__name__

    def __call__(self, *blocks):
        weight = np.size(blocks[self.which]) / self.total if self.total else 1.0
        return self.task.run(blocks, weight)[1][0]


PICKLED_BY_VALUE = "<dynamic-code>"    # the file name cloudpickle gives the code it ships by value


def restore_filenames(fun: Callable, filename: str) -> None:
    """A loss shipped by value (defined in __main__) arrives with its code's file name
    replaced: give it, and the functions of its file it reads, their file back, so s2sad
    finds their source (the shipped lines) as in the user's process."""
    todo = [fun] + [v for v in getattr(fun, "__globals__", {}).values() if isinstance(v, types.FunctionType)]
    for f in todo:
        if f.__code__.co_filename == PICKLED_BY_VALUE:
            f.__code__ = _renamed(f.__code__, filename)


def _renamed(code: types.CodeType, filename: str) -> types.CodeType:
    consts = tuple(_renamed(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


class BlockApply:
    """`apply(f, *blocks)` on one block (apply: s2sad.broadcast, passed down by the api)."""

    def __init__(self, apply: Callable, f: "Callable | Shipped", backend, picks: tuple = (), blocks: int = 0):
        self.shipped = f if isinstance(f, Shipped) else Shipped(f)      # (as BlockTask's loss)
        self.apply, self.f, self.backend, self.picks, self.blocks = apply, self.shipped.fun, backend, picks, blocks

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["f"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.f = self.shipped.fun

    def __call__(self, *blocks):
        blocks = pick(blocks, self.picks)
        with sharing_cores(tasks_at_once(self.blocks)):      # see BlockTask
            return self.apply(self.f, *blocks, backend=self.backend)

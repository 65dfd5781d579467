"""The threads a kernel takes inside a dask block task (dask_tasks.tasks_at_once,
threads.sharing_cores): its share of the cores, by what dask runs at once in this process
(the call's blocks, the scheduler's threads), never more threads than cores in all, one
block alone left to the chooser; the results are the same bits on any count."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import s2sad
from s2sad import dask_tasks, threadchoice, threads

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
dask = pytest.importorskip("dask")


def loss(x):
    return np.sum(np.log1p(x * x) * np.tanh(x))


@pytest.fixture
def cores(monkeypatch):
    """The default thread count this process would use, set (the machine's is not the test's)."""
    monkeypatch.delenv(threads.ENV, raising=False)

    def set_to(n):
        monkeypatch.setattr(threads, "_DEFAULT", n)
    return set_to


@pytest.fixture
def seen(monkeypatch):
    """The counts the choosers were forced to (None: left to the chooser), per large call."""
    got = []
    real = threadchoice.forced_threads

    def spy():
        f = real()
        got.append(f)
        return f
    monkeypatch.setattr(threadchoice, "forced_threads", spy)
    return got


def in_thread(fn):
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("v", fn()))
    t.start()
    t.join()
    return out["v"]


def test_sharing_cores_gives_each_caller_its_share(cores):
    cores(4)
    with threads.sharing_cores(1):
        assert threads.forced_threads() is None           # alone: the chooser decides
    with threads.sharing_cores(2):
        assert threads.forced_threads() == 2
        with threads.sharing_cores(3):
            assert threads.forced_threads() == 1
        assert threads.forced_threads() == 2
        assert in_thread(threads.forced_threads) is None  # this thread only
    with threads.sharing_cores(16):
        assert threads.forced_threads() == 1
    assert threads.forced_threads() is None


def test_sharing_cores_alone_keeps_the_environment(cores, monkeypatch):
    cores(4)
    monkeypatch.setenv(threads.ENV, "3")
    with threads.sharing_cores(1):
        assert threads.forced_threads() == 3
    with threads.sharing_cores(2):
        assert threads.forced_threads() == 2


def test_tasks_at_once_reads_the_scheduler():
    assert dask_tasks.tasks_at_once(4) == 1                  # the main thread: the synchronous scheduler
    with dask.config.set(num_workers=3):
        assert in_thread(lambda: dask_tasks.tasks_at_once(4)) == 3
        assert in_thread(lambda: dask_tasks.tasks_at_once(2)) == 2
        assert in_thread(lambda: dask_tasks.tasks_at_once(0)) == 3     # blocks not known
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(5) as pool, dask.config.set(pool=pool):
        assert in_thread(lambda: dask_tasks.tasks_at_once(8)) == 5


@pytest.fixture
def chunked(monkeypatch):
    """The thread counts that fastpath.large_call's calls ran their chunks on (none: the
    large entry's one call on one thread)."""
    from s2sad import fastpath
    got = []
    real = fastpath.threaded_sum_dual

    def spy(*args, threads=None, **kw):
        if threads is not None:
            got.append(threads)
        return real(*args, threads=threads, **kw)
    monkeypatch.setattr(fastpath, "threaded_sum_dual", spy)
    return got


@pytest.mark.parametrize("blocks, workers, want", [(1, 2, None), (4, 2, 1), (2, 4, 2), (3, 4, 1)])
def test_kernel_threads_in_block_tasks(cores, seen, chunked, blocks, workers, want):
    cores(4)
    n = 1_000_000 * blocks
    x = np.random.default_rng(blocks).uniform(-2, 2, n)
    for _ in range(2):      # the kernel's entries made (from its second call): a block's calls are large_call's
        s2sad.grad(loss)(x[:n // blocks])
    seen.clear()
    chunked.clear()
    X = da.from_array(x, chunks=n // blocks)
    with dask.config.set(scheduler="threads", num_workers=workers):
        got = s2sad.grad(loss)(X).compute()
    share = 4 // min(blocks, workers) if want else None
    if share == 1:      # each block on one thread: the large entry's one call, no chunks
        assert seen and set(seen) == {1} and not chunked
    elif share:
        assert seen and set(seen) == {share} and set(chunked) == {share}, (seen, chunked)
    else:
        assert seen and set(seen) == {None}
    assert got.tobytes() == s2sad.grad(loss)(x).tobytes()


def test_synchronous_scheduler_leaves_the_kernel_to_the_chooser(cores, seen):
    cores(2)
    x = np.random.default_rng(0).uniform(-2, 2, 2_000_000)
    with dask.config.set(scheduler="sync"):
        got = s2sad.grad(loss)(da.from_array(x, chunks=1_000_000)).compute()
    assert seen and set(seen) == {None}
    assert got.tobytes() == s2sad.grad(loss)(x).tobytes()


def test_a_worker_of_one_thread_runs_its_kernels_on_one():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        assert client.submit(dask_tasks.tasks_at_once, 8, pure=False).result() == 1
        assert client.submit(dask_tasks.tasks_at_once, 0, pure=False).result() == 1


def test_workers_in_one_process_share_its_cores():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        assert client.submit(dask_tasks.tasks_at_once, 8, pure=False).result() == 2

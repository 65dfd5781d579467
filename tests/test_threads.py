"""Threads on the fast path (fastpath.py): from THREAD_MIN elements the index space is
cut into chunks (by its size alone) that S2SAD_NUM_THREADS threads take in turn, each
chunk with its own accumulators; the answer is the one-thread answer, bit for bit. No
timing here (see bench/; the choice of the count by timing: test_thread_choice.py)."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import s2sad
from s2sad import fastpath, threads

N = 1_000_000


def user(x):
    return np.sum(np.tanh(x) * x / (1.0 + x * x))


def scaled(x, a):
    return np.sum(np.tanh(a * x) + a * x)


def elementwise(z):
    return z * math.tanh(z) + 1.0


@pytest.fixture
def spy(monkeypatch):
    """Counts threaded launches and records each one's (number of chunks, threads)."""
    calls = {"threaded": 0, "splits": []}
    on_threads, threaded = fastpath.on_threads, fastpath.threaded_sum_dual

    def recording(chooser, n, n_chunks, work):
        def counted(t):
            calls["splits"].append((n_chunks, t))
            work(t)
        on_threads(chooser, n, n_chunks, counted)

    def counting_threaded(*args, **kw):
        calls["threaded"] += 1
        return threaded(*args, **kw)

    monkeypatch.setattr(fastpath, "on_threads", recording)
    monkeypatch.setattr(fastpath, "threaded_sum_dual", counting_threaded)
    return calls


def _with_threads(monkeypatch, n: int, fn):
    monkeypatch.setenv("S2SAD_NUM_THREADS", str(n))
    return fn()


def test_one_and_two_threads_agree(monkeypatch, spy):
    x = np.random.default_rng(1).uniform(-3.0, 3.0, N)
    vg = s2sad.value_and_grad(user)
    chunks = fastpath.chunks_of(N)
    v1, g1 = _with_threads(monkeypatch, 1, lambda: vg(x))
    assert spy["threaded"] == 1 and spy["splits"] == [(len(chunks), 1)]
    v2, g2 = _with_threads(monkeypatch, 2, lambda: vg(x))
    assert spy["threaded"] == 2 and spy["splits"][1] == (len(chunks), 2)
    assert len(chunks) > 2
    assert chunks[0][0] == 0 and chunks[-1][1] == N and all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    assert v2 == v1                        # the same chunks, summed in the same order
    np.testing.assert_array_equal(g2, g1)
    t = np.tanh(x)
    np.testing.assert_allclose(v1, np.sum(t * x / (1 + x * x)), rtol=1e-12)
    d = ((1 - t * t) * x + t) / (1 + x * x) - t * x * 2 * x / (1 + x * x) ** 2
    np.testing.assert_allclose(g1, d, rtol=1e-12, atol=1e-15)


def test_scalar_gradients_are_summed_across_threads(monkeypatch, spy):
    x = np.random.default_rng(2).uniform(-2.0, 2.0, N)
    vg = s2sad.value_and_grad(scaled, argnums=(0, 1))
    v1, (gx1, ga1) = _with_threads(monkeypatch, 1, lambda: vg(x, 0.7))
    v2, (gx2, ga2) = _with_threads(monkeypatch, 2, lambda: vg(x, 0.7))
    assert spy["threaded"] == 2 and [t for _, t in spy["splits"]] == [1, 2]
    assert v2 == v1 and ga2 == ga1
    np.testing.assert_array_equal(gx2, gx1)
    sech2 = 1 - np.tanh(0.7 * x) ** 2
    np.testing.assert_allclose(ga1, np.sum(sech2 * x + x), rtol=1e-10)


def test_elementwise_apply_splits_too(monkeypatch, spy):
    x = np.random.default_rng(3).uniform(-4.0, 4.0, N)
    y1 = _with_threads(monkeypatch, 1, lambda: s2sad.broadcast(elementwise, x))
    y2 = _with_threads(monkeypatch, 2, lambda: s2sad.broadcast(elementwise, x))
    assert [t for _, t in spy["splits"]] == [1, 2] and spy["splits"][1][0] > 2
    np.testing.assert_array_equal(y2, y1)
    np.testing.assert_allclose(y1, x * np.tanh(x) + 1.0, rtol=1e-12)


def test_small_arrays_stay_on_the_calling_thread(monkeypatch, spy):
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    x = np.linspace(-1.0, 1.0, fastpath.THREAD_MIN - 1)
    v, g = s2sad.value_and_grad(user)(x)
    assert spy["threaded"] == 0
    np.testing.assert_allclose(v, np.sum(np.tanh(x) * x / (1 + x * x)), rtol=1e-12)
    assert g.shape == x.shape


def test_thread_count_from_the_environment(monkeypatch):
    monkeypatch.setenv("S2SAD_NUM_THREADS", "3")
    assert threads.num_threads() == 3
    monkeypatch.delenv("S2SAD_NUM_THREADS")
    import os
    assert threads.num_threads() == (os.cpu_count() or 1)
    # bad values (warned about and replaced): tests/test_trust_runtime.py


def test_chunks_run_once_each_on_the_caller_and_the_pool():
    import threading

    ran: dict[int, str] = {}
    lock = threading.Lock()

    def run(c):
        with lock:
            assert c not in ran
            ran[c] = threading.current_thread().name
        threading.Event().wait(0.002)     # a chunk takes a while (and lets go of the GIL)

    threads.run_chunks(run, 40, 3)
    assert sorted(ran) == list(range(40))
    assert threading.current_thread().name in ran.values()
    assert len(set(ran.values())) >= 2
    # one thread: in order on the caller
    order = []
    threads.run_chunks(order.append, 5, 1)
    assert order == [0, 1, 2, 3, 4]


def test_a_failing_chunk_waits_for_the_others(monkeypatch):
    done = []

    def run(c):
        if c == 0:
            raise RuntimeError("chunk 0")
        done.append(c)

    with pytest.raises(RuntimeError, match="chunk 0"):
        threads.run_chunks(run, 16, 2)
    # every other chunk was taken by a thread that was waited for
    assert len(done) >= 1


def _default_in_child(env: dict, prelude: str = "") -> int:
    import subprocess
    import sys
    code = prelude + "import s2sad.threads as t; print(t.default_threads(), t.max_threads())"
    full = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", threads.ENV)}
    r = subprocess.run([sys.executable, "-c", code], env={**full, **env}, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return tuple(map(int, r.stdout.split()))


def test_default_honours_omp_num_threads_and_the_cpu_affinity():
    """A dask worker runs with OMP_NUM_THREADS=1 (two workers on two cores must not run four
    threads): the default is capped by it, while S2SAD_NUM_THREADS may still ask up to the
    cap; a process pinned to one core (taskset, a cpuset) defaults to one thread."""
    cores = len(os.sched_getaffinity(0))
    assert _default_in_child({}) == (cores, threads.MAX_PER_CORE * cores)
    assert _default_in_child({"OMP_NUM_THREADS": "1"}) == (1, threads.MAX_PER_CORE * cores)
    assert _default_in_child({"OMP_NUM_THREADS": "junk"})[0] == cores
    assert _default_in_child({}, "import os; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); ") \
        == (1, threads.MAX_PER_CORE)


def test_one_thread_forces_one_on_this_thread_only(monkeypatch):
    """threads.one_thread (dask's block tasks run inside it): the calls it wraps are forced to
    one thread and not timed, on the calling thread only; outside it, the environment rules."""
    import threading as th

    monkeypatch.delenv(threads.ENV, raising=False)
    assert threads.forced_threads() is None
    seen = {}
    with threads.one_thread():
        assert threads.forced_threads() == 1
        other = th.Thread(target=lambda: seen.setdefault("other", threads.forced_threads()))
        other.start()
        other.join()
        with threads.one_thread():
            assert threads.forced_threads() == 1
        assert threads.forced_threads() == 1
    assert seen["other"] is None and threads.forced_threads() is None
    monkeypatch.setenv(threads.ENV, "2")
    with threads.one_thread():
        assert threads.forced_threads() == 1
    assert threads.forced_threads() == 2

"""The 2-worker bench row (bench/dask_bench.py run_workers) reads what it claims: chunks of
about 100 MB (dask's advice) in a count both workers share alike, how each call split its
blocks between the workers (from the task stream: the block tasks, not the reduction's),
and the workers' CPU over a call. Nothing is timed against a bound here."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import s2sad
from conftest import two_worker_client

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
distributed = pytest.importorskip("distributed")

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def bench(monkeypatch):
    """bench/dask_bench.py, imported as run.py imports it (its folder on sys.path)."""
    monkeypatch.syspath_prepend(str(BENCH))
    import dask_bench
    yield dask_bench
    for name in ("dask_bench", "cases"):
        sys.modules.pop(name, None)


@pytest.mark.parametrize("m", [50_000_000, 37_000_001, 200_000_000, 5_000_000, 3, 1])
def test_chunks_about_100_mb_and_as_many_for_each_worker(bench, m):
    chunk = bench.worker_chunks(m)
    blocks = -(-m // chunk)
    if m * 8 >= bench.CHUNK_BYTES * 2:
        assert blocks % 2 == 0, (m, chunk)                 # 2 workers take the same count
        assert 0.5 <= chunk * 8 / bench.CHUNK_BYTES <= 1.5, (m, chunk)
    else:
        assert blocks <= 2                                  # one block a worker at most
    assert chunk * blocks >= m and chunk * (blocks - 1) < m     # every element, no empty block


def test_the_50m_row_is_4_chunks_of_100_mb(bench):
    assert bench.worker_chunks(50_000_000) == 12_500_000


def stream_task(key, worker, seconds):
    return {"key": key, "worker": worker, "startstops": [
        {"action": "transfer", "start": 0.0, "stop": 5.0},       # not computing: not counted
        {"action": "compute", "start": 10.0, "stop": 10.0 + seconds}]}


def test_tasks_per_worker_counts_the_heaviest_group(bench):
    stream = ([stream_task(("uniform-sum-abc", i), "A" if i < 5 else "B", 0.1) for i in range(8)]
              + [stream_task(("sum-abc", i), "B", 0.0) for i in range(8)]         # aliases: many, no work
              + [stream_task("finalize-hlgfinalizecompute-abc", "A", 0.0)])
    assert bench.tasks_per_worker(stream) == {"A": 5, "B": 3}
    assert bench.tasks_per_worker([]) == {}


def test_split_counts_most_frequent_first(bench):
    said = bench.split_counts([{"A": 2, "B": 2}, {"A": 3, "B": 1}, {"B": 2, "A": 2}])
    assert said == "2+2 (2 calls), 3+1 (1 call)"


def test_in_turn_keeps_what_each_call_returned(bench):
    calls = []
    ways = {"a": lambda: calls.append("a") or len(calls), "b": lambda: calls.append("b") or -len(calls)}
    got = bench.in_turn(ways, 3)
    assert calls == ["a", "b"] * 4                                      # a warm-up, then in turn
    assert got == {"a": (3, 5, 7), "b": (-4, -6, -8)}


def cube_sum(x):
    return np.sum(x * x * x)


@pytest.fixture(scope="module")
def client():
    yield from two_worker_client()


def test_a_timed_call_on_the_cluster_sees_every_block(bench, client):
    """A real 2-worker call: the split covers the 4 block tasks, the workers' CPU is read."""
    X = da.from_array(np.linspace(-1.0, 1.0, 40_000), chunks=10_000)
    g = s2sad.grad(cube_sum)
    cpu = bench.WorkerCpu(client)
    assert len(cpu.procs) == 2
    wall, used, split = bench.timed_call(client, cpu, lambda: g(X).sum())
    assert wall > 0 and used >= 0
    assert sum(split.values()) == 4 and set(split) <= set(client.scheduler_info()["workers"])
    assert float(client.compute(g(X).sum()).result()) == pytest.approx(float(np.sum(3 * X.compute() ** 2)))

"""A block's producer run inside the block's task (dask_blocks.with_producers_inlined): a
task that only one s2sad block task reads (a block read from a file, a slice of an
in-memory array) runs inside it, so the scheduler handles one task per block, not two;
a producer read by two tasks, a task that is itself a result, and a graph whose layers
carry annotations are left as they are. Each block is still read once, and results stay
the numpy gradient's."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad.dask_blocks import with_producers_inlined

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
dask = pytest.importorskip("dask")

reads: list = []


def read(seed: int, n: int = 40):
    reads.append(seed)
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 3))


def logreg(w, X):
    return np.mean(np.log1p(np.exp(-(X @ w)))) + 0.1 * np.sum(w * w)


def loss(x):
    return np.sum(np.log1p(x * x))


def stored(blocks=4, n=40):
    reads.clear()
    parts = [da.from_delayed(dask.delayed(read, pure=False)(s, n), shape=(n, 3), dtype=np.float64)
             for s in range(blocks)]
    return da.concatenate(parts), np.concatenate([read(s, n) for s in range(blocks)])


def graph_keys(monkeypatch, call):
    seen, real = [], dask.compute

    def compute(*objs, **kw):
        found, _ = dask.base.unpack_collections(*objs)
        for c in found:
            seen.extend(dict(c.__dask_graph__()))
        return real(*objs, **kw)
    monkeypatch.setattr(dask, "compute", compute)
    try:
        out = call()
    finally:
        monkeypatch.setattr(dask, "compute", real)
    return [str(k[0] if isinstance(k, tuple) else k) for k in seen], out


def test_one_task_per_block_each_block_read_once(monkeypatch):
    X, X_mem = stored()
    w = np.array([0.3, -0.2, 0.1])
    reads.clear()
    with dask.config.set(scheduler="threads"):
        keys, (v, g) = graph_keys(monkeypatch, lambda: s2sad.value_and_grad(logreg)(w, X))
    assert sorted(reads) == [0, 1, 2, 3]
    assert sum(k.startswith("read") for k in keys) == 0
    assert sum(k.startswith("s2sad_grad_logreg") for k in keys) == 4
    v0, g0 = s2sad.value_and_grad(logreg)(w, X_mem)
    assert v == pytest.approx(v0, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-14)


def test_an_in_memory_array_in_blocks_same_bits(monkeypatch):
    x = np.random.default_rng(3).uniform(-2, 2, 1000)
    X = da.from_array(x, chunks=250)
    vg = s2sad.value_and_grad(loss, argnums=(0,))
    with dask.config.set(scheduler="threads"):
        keys, (v, (g,)) = graph_keys(monkeypatch, lambda: vg(X))
    # (the gradient, kept with the value, is in the same compute: its blocks' graphs repeat the tasks)
    assert len({k for k in keys if k.startswith("s2sad_grad_loss")}) == 4
    v0, (g0,) = vg(x)
    assert v == pytest.approx(v0, rel=1e-12)
    np.testing.assert_array_equal(g.compute(), g0)


def test_a_producer_read_by_two_tasks_stays_a_task():
    shared = dask.delayed(read, pure=False)(7)
    a = dask.delayed(np.sum, pure=False)(shared, dask_key_name="s2sad_grad_a")
    b = dask.delayed(np.sum, pure=False)(shared, dask_key_name="s2sad_grad_b")
    own = dask.delayed(read, pure=False)(8)
    c = dask.delayed(np.sum, pure=False)(own, dask_key_name="s2sad_grad_c")
    out = with_producers_inlined((a, [b, c]), "s2sad_grad_")
    graph = dict(out[0].dask)
    assert shared.key in graph and own.key not in graph
    reads.clear()
    got = dask.compute(*out, scheduler="sync")
    assert sorted(reads) == [7, 8]                             # the shared read ran once
    assert got[0] == pytest.approx(read(7).sum()) and got[1][1] == pytest.approx(read(8).sum())


def test_a_result_and_an_annotated_graph_are_left_alone():
    src = dask.delayed(read, pure=False)(1)
    top = dask.delayed(np.sum, pure=False)(src, dask_key_name="s2sad_grad_t")
    out = with_producers_inlined((top, src), "s2sad_grad_")     # src is itself asked for
    assert src.key in dict(out[0].dask)
    with dask.annotate(retries=2):
        marked = dask.delayed(read, pure=False)(2)
    top2 = dask.delayed(np.sum, pure=False)(marked, dask_key_name="s2sad_grad_u")
    same = with_producers_inlined((top2,), "s2sad_grad_")
    assert same[0] is top2
    assert with_producers_inlined((None, {}), "s2sad_grad_") == (None, {})


def test_on_a_cluster_of_processes():
    distributed = pytest.importorskip("distributed")
    X, X_mem = stored(blocks=6)
    w = np.array([0.3, -0.2, 0.1])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        v, g = s2sad.value_and_grad(logreg)(w, X)
    v0, g0 = s2sad.value_and_grad(logreg)(w, X_mem)
    assert v == pytest.approx(v0, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-14)


def test_a_graph_of_tuple_tasks_is_left_whole():
    """A node that does not name its dependencies (an older dask's tuple task): nothing is
    culled or inlined, the call's objects come back as they were."""
    from dask.delayed import Delayed

    graph = {"src": (read, 3), "s2sad_grad_x": (np.sum, "src")}
    top = Delayed("s2sad_grad_x", graph)
    assert with_producers_inlined((top,), "s2sad_grad_")[0] is top

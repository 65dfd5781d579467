"""The gradient of a dask array held in memory (from_array of numpy, a persisted array) as
one layer of tasks given the blocks' data (dask_grad.held_graph, dask_blocks.held_blocks):
the graph depends on nothing, holds the argument's own blocks (no copy), culls to the
blocks asked for, falls back to the blockwise layer for anything else, and every result
is the numpy gradient's bits."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import s2sad
from s2sad import dask_blocks, dask_tasks
from test_dask_blockwise import scaled, sum_loss

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
dask = pytest.importorskip("dask")


loss = sum_loss         # (the blockwise tests' losses, written once)


def data(n, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, n)


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


def layer_of(a):
    graph = a.__dask_graph__()
    return graph.layers[a.name], graph.dependencies[a.name]


def test_from_array_blocks_are_passed_as_they_are():
    x = data(4000)
    X = da.from_array(x, chunks=1000)
    g = s2sad.grad(loss)(X)
    layer, deps = layer_of(g)
    assert type(layer).__name__ == "MaterializedLayer" and not deps and len(layer) == 4
    blocks = dict(X.dask)
    for k in range(4):
        (arg,) = layer[(g.name, k)].args
        assert arg is blocks[(X.name, k)]            # the argument's own block: nothing copied
    assert g.compute().tobytes() == s2sad.grad(loss)(x).tobytes()
    assert g.persist().compute().tobytes() == s2sad.grad(loss)(x).tobytes()


def test_a_persisted_array_is_held():
    x = data(3000, 1)
    P = (da.from_array(x, chunks=700) * 2.0).persist()
    assert dask_blocks.held_blocks(P) is not None
    g = s2sad.grad(loss)(P)
    assert not layer_of(g)[1]
    assert g.compute().tobytes() == s2sad.grad(loss)(2.0 * x).tobytes()


def test_blocks_made_by_tasks_are_not_held():
    x = data(2000, 2)
    assert dask_blocks.held_blocks(da.from_array(x, chunks=500) + 1.0) is None
    assert dask_blocks.held_blocks(da.random.default_rng(0).uniform(size=100, chunks=25)) is None
    lazy = da.from_array(x, chunks=500).rechunk(400)
    assert dask_blocks.held_blocks(lazy) is None
    g = s2sad.grad(loss)(lazy)
    assert type(layer_of(g)[0]).__name__ == "Blockwise"
    assert g.compute().tobytes() == s2sad.grad(loss)(x).tobytes()


def test_the_graph_culls_to_the_blocks_asked_for(monkeypatch):
    x = data(4000, 3)
    ran = []
    real = dask_tasks.BlockGrad.__call__

    def counted(self, *blocks):
        ran.append(blocks[0].shape)
        return real(self, *blocks)
    monkeypatch.setattr(dask_tasks.BlockGrad, "__call__", counted)
    g = s2sad.grad(loss)(da.from_array(x, chunks=1000))
    part = g[1500:1800].compute()
    assert ran == [(1000,)]                          # one block's task ran, not four
    assert part.tobytes() == s2sad.grad(loss)(x)[1500:1800].tobytes()
    optimized = dask.optimize(g[:10])[0].__dask_graph__()
    assert sum(1 for k in optimized if str(k[0] if isinstance(k, tuple) else k).startswith("s2sad_grad_")) == 1


def test_a_number_argument_is_in_the_tasks_an_array_one_is_not():
    x = np.random.default_rng(4).standard_normal((600, 4))
    X = da.from_array(x, chunks=(200, 4))
    g = s2sad.grad(scaled)(X, 0.25)
    assert not layer_of(g)[1]
    assert g.compute().tobytes() == s2sad.grad(scaled)(x, 0.25).tobytes()
    g0 = s2sad.grad(scaled)(X, np.array(0.25))     # a 0-d array: blockwise passes it as it is
    assert type(layer_of(g0)[0]).__name__ == "Blockwise"
    assert g0.compute().tobytes() == g.compute().tobytes()


def test_without_dask_task_objects_the_blockwise_layer(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.task_spec", None)      # an older dask: no such module
    x = data(1000, 5)
    g = s2sad.grad(loss)(da.from_array(x, chunks=250))
    assert type(layer_of(g)[0]).__name__ == "Blockwise"
    assert g.compute().tobytes() == s2sad.grad(loss)(x).tobytes()


def test_a_later_change_to_the_loss_is_not_answered_from_an_earlier_graph():
    X = da.from_array(data(800, 6), chunks=200)
    a, b = s2sad.grad(loss)(X), s2sad.grad(loss)(X)
    assert a.name != b.name and not set(dict(a.dask)) & set(dict(b.dask))


def test_on_a_cluster_the_held_blocks_travel_with_the_graph():
    distributed = pytest.importorskip("distributed")
    x = data(5000, 7)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        X = da.from_array(x, chunks=1000)
        g = s2sad.grad(loss)(X)
        assert not layer_of(g)[1]
        got, total = dask.compute(g, g.sum())
        kept = g.persist()
        again = kept.compute()
    want = s2sad.grad(loss)(x)
    assert got.tobytes() == want.tobytes() and again.tobytes() == want.tobytes()
    np.testing.assert_allclose(total, want.sum(), rtol=1e-13)


def test_annotations_reach_the_layer_as_any_layer_of_dask():
    X = da.from_array(data(400, 8), chunks=100)
    with dask.annotate(priority=7):
        g = s2sad.grad(loss)(X)
    assert layer_of(g)[0].annotations == {"priority": 7}
    assert layer_of(s2sad.grad(loss)(X))[0].annotations is None


def mean_loss(x, w):
    return np.mean(np.tanh(x * w) ** 2 + 0.5 * x)


@pytest.fixture
def runs(monkeypatch):
    """The blocks the value-and-gradient tasks (BlockTask.run) ran, as they run."""
    ran = []
    real = dask_tasks.BlockTask.run

    def counted(self, blocks, weight):
        ran.append(np.shape(blocks[0]))
        return real(self, blocks, weight)
    monkeypatch.setattr(dask_tasks.BlockTask, "run", counted)
    return ran


def test_value_and_grad_keeps_the_gradient_it_computed_with_the_value(runs):
    x = data(4000, 9)
    X = da.from_array(x, chunks=1000)
    vg = s2sad.value_and_grad(loss)
    v, g = vg(X)
    assert len(runs) == 4 and dask_blocks.held_blocks(g) is not None and g.chunks == X.chunks
    got = g.compute()
    assert len(runs) == 4                            # computing the gradient ran no task again
    v0, g0 = s2sad.value_and_grad(loss)(x)
    assert got.tobytes() == g0.tobytes()
    assert v == pytest.approx(v0, rel=1e-13)
    assert "kept as dask arrays of the computed blocks" in str(s2sad.explain(vg))


def test_an_in_memory_argument_computed_now_keeps_the_dask_ones_too(runs):
    x = np.random.default_rng(10).standard_normal((600, 3))
    X = da.from_array(x, chunks=(200, 3))
    grad = s2sad.grad(mean_loss, argnums=(0, 1))
    gx, gw = grad(X, 0.7)
    assert len(runs) == 3 and dask_blocks.held_blocks(gx) is not None
    wx, ww = s2sad.grad(mean_loss, argnums=(0, 1))(x, 0.7)
    np.testing.assert_allclose(gx.compute(), wx, rtol=1e-12, atol=1e-15)
    assert gw == pytest.approx(ww, rel=1e-12)
    assert len(runs) == 3
    assert "kept as dask arrays of the computed blocks" in str(s2sad.explain(grad))


def test_data_not_in_memory_keeps_the_gradient_lazy(runs):
    x = data(2000, 11)
    X = da.from_array(x, chunks=500).map_blocks(np.copy, dtype=x.dtype)     # blocks made by tasks
    v, g = s2sad.value_and_grad(loss)(X)
    assert len(runs) == 4 and dask_blocks.held_blocks(g) is None
    assert g.compute().tobytes() == s2sad.grad(loss)(x).tobytes()
    assert len(runs) == 8                            # lazy: computed when asked for


def test_a_kept_gradient_on_a_cluster():
    distributed = pytest.importorskip("distributed")
    x = data(3000, 12)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        v, g = s2sad.value_and_grad(loss)(da.from_array(x, chunks=1000))
        got, total = dask.compute(g, g.sum())
    v0, g0 = s2sad.value_and_grad(loss)(x)
    assert got.tobytes() == g0.tobytes() and v == pytest.approx(v0, rel=1e-13)
    np.testing.assert_allclose(total, g0.sum(), rtol=1e-13)


def test_a_broadcast_dask_argument_kept_summed_over_the_blocks_it_met(runs):
    x, s = np.random.default_rng(13).standard_normal((600, 4)), np.random.default_rng(14).standard_normal((1, 4))
    X, S = da.from_array(x, chunks=(200, 2)), da.from_array(s, chunks=(1, 2))
    v, (gx, gs) = s2sad.value_and_grad(scaled, argnums=(0, 1))(X, S)
    assert len(runs) == 6
    assert dask_blocks.held_blocks(gx) is not None and dask_blocks.held_blocks(gs) is not None
    assert gx.chunks == X.chunks and gs.chunks == S.chunks
    v0, (wx, ws) = s2sad.value_and_grad(scaled, argnums=(0, 1))(x, s)
    assert gx.compute().tobytes() == wx.tobytes()
    np.testing.assert_allclose(gs.compute(), ws, rtol=1e-12)
    assert v == pytest.approx(v0, rel=1e-12) and len(runs) == 6

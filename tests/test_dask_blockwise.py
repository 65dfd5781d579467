"""The gradient alone w.r.t. one dask argument as one layer of a task per block
(dask_grad.lazy_grad): given the blocks' data when the arguments hold them in memory
(from_array of numpy, a persisted array), else a blockwise layer, which dask fuses with
the tasks that make its blocks and the ones that reduce it; so a call is a task per
block. Each test runs on both (`source`: blocks held as data, blocks made by tasks);
every result is checked against the numpy gradient (the same bits for a sum: each
element's partials are its own) and against the general graph."""
from __future__ import annotations

import math

import numpy as np
import pytest

import s2sad
from s2sad import dask_grad

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
dask = pytest.importorskip("dask")


def f(z):
    return math.tanh(z) * z / (1 + z * z)


def sum_loss(x):
    return np.sum(s2sad.broadcast(f, x))


def mean_loss(x, w):
    return np.mean(np.tanh(x * w) ** 2 + 0.5 * x)


def scaled(x, s):
    return np.sum(np.log1p(x * x) * s)


K = 1.0


def closure_loss(x):
    return np.sum(np.sin(x) * K)


def data(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def general(monkeypatch, call):
    """The call through value_and_grad's general graph (delayed tasks, getitems, da.block)."""
    monkeypatch.setattr(dask_grad, "blockwise_applies", lambda *a: False)
    try:
        return call()
    finally:
        monkeypatch.undo()


def blockwise(a) -> str | None:
    """The name of the loss whose gradient layer (lazy_grad's: a blockwise layer, or the
    one of tasks given their blocks held as data) makes `a`, else None."""
    layer = a.__dask_graph__().layers[a.name]
    ours = a.name.startswith("s2sad_grad_") and type(layer).__name__ in ("Blockwise", "MaterializedLayer")
    return a.name.split("-")[0] if ours else None


def held(a) -> bool:
    """`a`'s layer is a task per block given its blocks' data (it depends on no layer)."""
    graph = a.__dask_graph__()
    return type(graph.layers[a.name]).__name__ == "MaterializedLayer" and not graph.dependencies[a.name]


@pytest.fixture(params=["held", "tasks"])
def source(request):
    """Makes a dask array of a numpy array's values: its blocks held in its graph as data
    (from_array), or made by tasks (a copy per block)."""
    def make(x, chunks):
        X = da.from_array(x, chunks=chunks)
        return X if request.param == "held" else X.map_blocks(np.copy, dtype=x.dtype)
    make.held = request.param == "held"
    return make


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


@pytest.mark.parametrize("chunks", [2500, 1000, 997, 10_000])
def test_sum_same_bits_as_numpy_and_the_general_graph(monkeypatch, source, chunks):
    x = data(10_000)
    X = source(x, chunks)
    g = s2sad.grad(sum_loss)(X)
    assert blockwise(g) == "s2sad_grad_sum_loss" and g.chunks == X.chunks and held(g) == source.held
    got = g.compute()
    assert got.tobytes() == s2sad.grad(sum_loss)(x).tobytes()
    assert got.tobytes() == general(monkeypatch, lambda: s2sad.grad(sum_loss)(X)).compute().tobytes()


def test_one_task_per_block_after_dask_fuses(source):
    X = source(data(4000), 1000)
    g = s2sad.grad(sum_loss)(X)
    optimized = dask.optimize(g)[0].__dask_graph__()
    # each block: one task (held: the gradient given its block; else fused with the task that
    # makes the block), and, fused, dask's alias to it
    runs = [k for k, v in optimized.items() if type(v).__name__ != "Alias"]
    assert len(runs) == 4
    s = dask.optimize(g.sum())[0].__dask_graph__()
    assert len([k for k, v in s.items() if type(v).__name__ != "Alias"]) == 5    # 4 fused + the total


def test_mean_weights_each_block_by_its_share(monkeypatch, source):
    x = data((1001, 3), 2)
    X = source(x, (300, 2))      # blocks of unequal sizes along both axes
    g = s2sad.grad(mean_loss)(X, 0.7)
    assert blockwise(g) == "s2sad_grad_mean_loss"
    np.testing.assert_allclose(g.compute(), s2sad.grad(mean_loss)(x, 0.7), rtol=1e-12, atol=1e-15)
    assert g.compute().tobytes() == general(monkeypatch, lambda: s2sad.grad(mean_loss)(X, 0.7)).compute().tobytes()


def test_other_dask_argument_broadcast_along_the_rows(source):
    x, s = data((600, 4), 4), data((1, 4), 5)
    X, S = source(x, (200, 3)), source(s, (1, 3))
    g = s2sad.grad(scaled)(X, S)
    assert blockwise(g) == "s2sad_grad_scaled" and g.chunks == X.chunks and held(g) == source.held
    assert g.compute().tobytes() == s2sad.grad(scaled)(x, s).tobytes()
    # S in other chunks: rechunked to X's by tasks, so a blockwise layer over them
    g = s2sad.grad(scaled)(X, source(s, (1, 2)))
    assert blockwise(g) == "s2sad_grad_scaled" and not held(g)
    assert g.compute().tobytes() == s2sad.grad(scaled)(x, s).tobytes()


def test_float32_keeps_its_dtype(source):
    x = data(3000, 6, np.float32)
    g = s2sad.grad(sum_loss)(source(x, 700))
    assert g.dtype == np.float32 and g.compute().dtype == np.float32
    assert g.compute().tobytes() == s2sad.grad(sum_loss)(x).tobytes()


def test_nan_block_gives_nan_where_numpy_does(source):
    x = data(1000, 7)
    x[640] = np.nan
    got = s2sad.grad(sum_loss)(source(x, 250)).compute()
    want = s2sad.grad(sum_loss)(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[640]) and np.isfinite(got[:640]).all()


def test_each_call_a_fresh_graph_a_closure_read_anew(source):
    X = source(data(800, 8), 200)
    global K
    K = 1.0
    g1 = s2sad.grad(closure_loss)(X)
    K = 3.0
    try:
        g3 = s2sad.grad(closure_loss)(X)
        assert g1.name != g3.name
        np.testing.assert_allclose(g3.compute(), 3.0 * np.cos(data(800, 8)), rtol=1e-14)
    finally:
        K = 1.0


def test_other_cases_keep_the_general_graph():
    x, s = data((600, 4), 4), data((600, 4), 5)
    X = da.from_array(x, chunks=(200, 4))
    assert blockwise(s2sad.grad(scaled)(X, s)) is None      # an in-memory array: sliced
    v, g = s2sad.value_and_grad(sum_loss)(da.from_array(x[:, 0], chunks=200))
    assert blockwise(g) is None                          # the value wanted too
    np.testing.assert_allclose(v, s2sad.value_and_grad(sum_loss)(x[:, 0])[0], rtol=1e-13)


def test_explain_says_how_the_layer_was_built(source):
    g = s2sad.grad(sum_loss)
    g(source(data(1000), 250))
    text = str(s2sad.explain(g))
    assert "4 task(s)" in text
    assert ("each given its blocks' data" in text) == source.held and ("one blockwise layer" in text) != source.held


def test_on_a_cluster_of_processes(source):
    distributed = pytest.importorskip("distributed")
    x = data((5000,), 9)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        Z = source(x, 1000)
        got, total = dask.compute(s2sad.grad(sum_loss)(Z), s2sad.grad(sum_loss)(Z).sum())
    want = s2sad.grad(sum_loss)(x)
    assert got.tobytes() == want.tobytes()
    np.testing.assert_allclose(total, want.sum(), rtol=1e-13)


COMPILES = [0]


def count_compiles() -> None:
    """On a worker: count the machine code it maps into the process from now on, compiled
    or loaded from the disk cache (both link it: llvm_jit._link)."""
    from s2sad.codegen import llvm_jit
    real = llvm_jit._link

    def counted(*a, **k):
        COMPILES[0] += 1
        return real(*a, **k)
    llvm_jit._link = counted


def worker_state() -> tuple[int, int]:
    from s2sad.plans import PLANS
    return COMPILES[0], len(PLANS)


def test_a_warm_worker_plans_and_compiles_nothing_again():
    """The first call on a fresh worker plans and compiles (or maps from the disk cache) its
    kernels; every later call, a new graph each time, finds them in the process."""
    distributed = pytest.importorskip("distributed")
    x = data((4000,), 10)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        client.run(count_compiles)
        Z = da.from_array(x, chunks=1000)
        first = s2sad.grad(mean_loss)(Z, 0.3).sum().compute()
        (compiles, plans), = client.run(worker_state).values()
        assert compiles >= 1 and plans >= 1
        for _ in range(3):
            assert s2sad.grad(mean_loss)(Z, 0.3).sum().compute() == first
        assert list(client.run(worker_state).values()) == [(compiles, plans)]


def test_a_block_task_reuses_its_derivative_and_never_pickles_it():
    import pickle

    from s2sad.dask_tasks import BlockTask

    task = BlockTask(sum_loss, (0,), "auto", "auto", 1.0, blocks=2, what="grad")
    a, b = data(300, 1), data(300, 2)
    value, (ga,) = task(a)
    made = task.derivative
    assert value is None and made is not None
    assert task(b)[1][0].tobytes() == s2sad.grad(sum_loss)(b).tobytes() and task.derivative is made
    copy = pickle.loads(pickle.dumps(task))
    assert copy.derivative is None and task.derivative is made
    assert copy(a)[1][0].tobytes() == ga.tobytes()

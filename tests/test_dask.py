"""Gradients over dask arrays (s2sad/dask_grad.py), on the threaded scheduler and on a real
`distributed.LocalCluster` of 2 worker processes started here: every result is checked
against the in-memory numpy gradient; refusals come before any work is submitted."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import s2sad
from s2sad.errors import DaskSplitError
from conftest import two_worker_client

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
distributed = pytest.importorskip("distributed")


def f(z):
    return math.tanh(z) * z / (1 + z * z)


def sum_loss(x, b):
    return np.sum(s2sad.broadcast(f, x + b))


def mean_loss(x, w):
    return np.mean(np.tanh(x * w) ** 2 + 0.5 * x)


def map_loss(xs):
    return sum(map(f, xs))


def scaled(x, s):
    return np.sum(np.log1p(x * x) * s)


def array_program(W, X):
    return np.mean(np.tanh(X @ W) ** 2)


def unreduced(x):
    return np.tanh(x)


count = [0.0]


def counted(z):
    count[0] += z
    return z * z


def stateful_loss(x):
    return np.sum(s2sad.broadcast(counted, x))


def data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def client():
    yield from two_worker_client()


@pytest.fixture(params=["threads", "cluster"])
def scheduler(request):
    if request.param == "threads":
        with __import__("dask").config.set(scheduler="threads"):
            yield None
    else:
        c = request.getfixturevalue("client")
        with c.as_current():
            yield c


# ------------------------------------------------------------------ results


@pytest.mark.parametrize("chunks", [(250, 8), (1000, 3), (97, 5), (1000, 8)])
def test_elementwise_sum_any_chunking(scheduler, chunks):
    x, b = data((1000, 8)), data(8, 1)
    X = da.from_array(x, chunks=chunks)
    gx, gb = s2sad.grad(sum_loss, argnums=(0, 1))(X, b)
    wx, wb = s2sad.grad(sum_loss, argnums=(0, 1))(x, b)
    assert isinstance(gx, da.Array) and gx.chunks == X.chunks       # lazy, with X's chunks
    assert isinstance(gb, np.ndarray) and gb.shape == b.shape      # in memory, summed over blocks
    close(gx.compute(), wx)
    close(gb, wb)


def test_mean_weights_blocks_by_their_size(scheduler):
    x, w = data((1001,), 2), 0.7
    X = da.from_array(x, chunks=300)            # blocks of 300, 300, 300, 101
    v, (gx, gw) = s2sad.value_and_grad(mean_loss, argnums=(0, 1))(X, w)
    v0, (wx, ww) = s2sad.value_and_grad(mean_loss, argnums=(0, 1))(x, w)
    close(v, v0)
    close(gx.compute(), wx)
    assert isinstance(gw, float)
    close(gw, ww)


def test_map_over_a_chunked_vector(scheduler):
    x = data(5000, 3)
    g = s2sad.grad(map_loss)(da.from_array(x, chunks=1200))
    close(g.compute(), s2sad.grad(map_loss)(x))


def test_two_dask_arguments_with_different_chunks(scheduler):
    x, s = data((600, 4), 4), data((600, 4), 5)
    X, S = da.from_array(x, chunks=(200, 4)), da.from_array(s, chunks=(150, 2))
    gx, gs = s2sad.grad(scaled, argnums=(0, 1))(X, S)
    wx, ws = s2sad.grad(scaled, argnums=(0, 1))(x, s)
    assert gs.shape == s.shape
    close(gx.compute(), wx)
    close(gs.compute(), ws)


def test_in_memory_full_size_argument_sliced_with_the_blocks(scheduler):
    x, s = data((600, 4), 6), data((600, 4), 7)
    gx, gs = s2sad.grad(scaled, argnums=(0, 1))(da.from_array(x, chunks=(200, 4)), s)
    wx, ws = s2sad.grad(scaled, argnums=(0, 1))(x, s)
    assert isinstance(gs, np.ndarray)
    close(gx.compute(), wx)
    close(gs, ws)


def test_grad_wrt_dask_only_submits_nothing():
    """grad w.r.t. the dask argument alone is lazy: nothing runs until compute."""
    x = data((400, 3), 8)
    calls = []

    def spy(block):
        calls.append(block.shape)
        return block

    X = da.from_array(x, chunks=(100, 3)).map_blocks(spy, dtype=x.dtype)
    g = s2sad.grad(sum_loss)(X, np.zeros(3))
    assert calls == [] or all(c == (0, 0) or 0 in c or len(c) < 2 for c in calls)   # dask may probe with empty blocks
    close(g.compute(), s2sad.grad(sum_loss)(x, np.zeros(3)))


def test_nan_in_a_block_gives_nan_where_numpy_does(scheduler):
    x = data((400,), 9)
    x[123] = np.nan
    v, g = s2sad.value_and_grad(mean_loss)(da.from_array(x, chunks=100), 0.5)
    v0, g0 = s2sad.value_and_grad(mean_loss)(x, 0.5)
    assert np.isnan(v) and np.isnan(v0)
    np.testing.assert_array_equal(np.isnan(g.compute()), np.isnan(g0))


def test_float32_blocks_keep_their_dtype(scheduler):
    x = data((300, 2), 10).astype(np.float32)
    g = s2sad.grad(sum_loss)(da.from_array(x, chunks=(100, 2)), np.ones(2, np.float32))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.compute(), s2sad.grad(sum_loss)(x, np.ones(2, np.float32)), rtol=1e-6)


def test_explain_says_how_the_last_dask_call_was_split():
    g = s2sad.grad(sum_loss, argnums=(0, 1))
    with __import__("dask").config.set(scheduler="threads"):
        g(da.from_array(data((100, 4)), chunks=(25, 4)), np.zeros(4))
    text = str(s2sad.explain(g))
    assert "4 task(s)" in text and "elementwise-sum" in text and "tree reduction" in text


# ------------------------------------------------------------------ refusals, before any work


@pytest.mark.parametrize("loss,args,says", [
    # the parameters chunked, the data in memory: the rows would be the parameters' rows
    (array_program, lambda: (da.ones((3, 2), chunks=(1, 2)), np.ones((100, 3))), "does not split over blocks of rows"),
    (unreduced, lambda: (da.ones(10, chunks=5),), "scalar"),
    (stateful_loss, lambda: (da.ones(10, chunks=5),), "state"),
])
def test_refused_before_work_with_location(loss, args, says):
    submitted = []
    with __import__("dask").config.set(scheduler=lambda dsk, keys, **kw: submitted.append(keys)):
        with pytest.raises(DaskSplitError) as e:
            s2sad.grad(loss, argnums=0)(*args())
    assert says in str(e.value) and "test_dask.py" in str(e.value) and not submitted


def test_int_dask_argument_refused_before_work():
    with pytest.raises(DaskSplitError, match="dtype int64"):
        s2sad.grad(sum_loss)(da.arange(10, chunks=5), np.zeros(1))


def test_unknown_chunk_sizes_refused():
    x = da.from_array(data(100), chunks=10)
    x = x[x > 0]            # chunks of unknown size
    with pytest.raises(DaskSplitError, match="unknown size"):
        s2sad.grad(sum_loss)(x, 0.0)


# ------------------------------------------------------------------ workers


def test_workers_plan_for_themselves(client):
    """Each worker process computes its blocks with kernels it planned itself: the task
    ships the loss and its source lines, never compiled code."""
    x = data((2000, 4), 11)
    with client.as_current():
        g = s2sad.grad(sum_loss)(da.from_array(x, chunks=(250, 4)), np.zeros(4)).compute()
    close(g, s2sad.grad(sum_loss)(x, np.zeros(4)))
    pids = client.run(os.getpid)
    assert len(pids) == 2 and os.getpid() not in pids.values()
    planned = client.run(planned_here)
    assert all(v >= 1 for v in planned.values()), planned


def planned_here() -> int:
    """How many plans this process made (run on a worker)."""
    from s2sad.plans import PLANS
    return len(PLANS)


def test_a_killed_worker_is_retried(client):
    """A worker killed while the gradient runs: dask reruns its blocks elsewhere, the result
    is still right."""
    x = data((4000, 4), 12)
    X = da.from_array(x, chunks=(250, 4))
    slow = X.map_blocks(lambda b: (__import__("time").sleep(0.3), b)[1], dtype=x.dtype)
    with client.as_current():
        g = s2sad.grad(sum_loss)(slow, np.zeros(4))
        fut = client.compute(g)
        pid = next(iter(client.run(os.getpid).values()))
        __import__("time").sleep(0.6)
        os.kill(pid, 9)          # the nanny starts a fresh worker process
        got = fut.result(timeout=120)
    assert pid not in client.run(os.getpid).values()
    close(got, s2sad.grad(sum_loss)(x, np.zeros(4)))


# ------------------------------------------------------------------ broadcast and vjp


def two(z, w):
    return math.tanh(z) * w + z


def test_broadcast_is_lazy_blockwise(scheduler):
    x, w = data((300, 6), 13), np.arange(6.0)
    X = da.from_array(x, chunks=(70, 4))
    r = s2sad.broadcast(two, X, w)
    assert isinstance(r, da.Array) and r.shape == x.shape
    np.testing.assert_array_equal(r.compute(), s2sad.broadcast(two, x, w))


def positive(z):
    return z > 0


def test_broadcast_keeps_the_kernels_dtype():
    x = data(50, 14)
    r = s2sad.broadcast(positive, da.from_array(x, chunks=20))
    assert r.dtype == np.bool_
    np.testing.assert_array_equal(r.compute(), x > 0)


def test_vjp_over_dask(scheduler):
    x, b = data((200, 3), 15), data(3, 16)
    v, pull = s2sad.vjp(sum_loss, da.from_array(x, chunks=(50, 3)), b)
    v0, pull0 = s2sad.vjp(sum_loss, x, b)
    close(v, v0)
    (gx, gb), (wx, wb) = pull(-0.5), pull0(-0.5)
    close(gx.compute(), wx)
    close(gb, wb)


# ------------------------------------------------------------------ array programs over blocks of rows


def logreg(w, X, y):
    p = 1 / (1 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)) + 0.1 * np.sum(w ** 2)


def least_squares(w, X, y):
    return np.sum((X @ w - y) ** 2) + 3.0 * np.sum(w ** 2) + 1.5


def softmax_xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def mlp(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)
    for _ in range(2):
        h = h * 0.5 + np.tanh(h)
    return np.mean((h @ W2 - y) ** 2)


def centred(w, X):
    z = X @ w
    return np.sum((z - np.mean(z)) ** 2)


def max_over_rows(w, X):
    return np.max(X @ w)


def manual_mean(w, X):
    return np.sum(np.tanh(X @ w)) / X.shape[0]


def gram(w, X):
    return np.sum((X.T @ X) * w)


def rows_then_columns(w, X):
    return np.sum(np.tanh(X @ w), axis=0)


def rows_data(n=1000, d=6, k=4, seed=20):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    return rng, X, (rng.random(n) > 0.5) * 1.0, np.eye(k)[rng.integers(0, k, n)]


def check_rows(loss, args, dask_at, argnums, chunks=300):
    dargs = [da.from_array(a, chunks=(chunks,) + a.shape[1:]) if i in dask_at else a for i, a in enumerate(args)]
    v, g = s2sad.value_and_grad(loss, argnums=argnums)(*dargs)
    v0, g0 = s2sad.value_and_grad(loss, argnums=argnums)(*args)
    np.testing.assert_allclose(v, v0, rtol=1e-12, atol=1e-12)
    for j, (a, b) in enumerate(zip(g, g0)):
        if argnums[j] in dask_at:
            assert isinstance(a, da.Array) and a.chunks[0] == dargs[argnums[j]].chunks[0]
            a = a.compute()
        else:
            assert isinstance(a, np.ndarray)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_rows_logistic_regression_with_penalty(scheduler):
    rng, X, y, _ = rows_data()
    check_rows(logreg, (rng.standard_normal(6) * 0.3, X, y), {1, 2}, (0, 1))


def test_rows_sum_with_offset_taken_off_once(scheduler):
    rng, X, y, _ = rows_data(seed=21)
    check_rows(least_squares, (rng.standard_normal(6), X, y), {1, 2}, (0, 1, 2), chunks=170)


def test_rows_softmax_cross_entropy(scheduler):
    rng, X, _, Y = rows_data(seed=22)
    check_rows(softmax_xent, (rng.standard_normal((6, 4)) * 0.3, np.zeros(4), X, Y), {2, 3}, (0, 1))


def test_rows_mlp_with_a_loop(scheduler):
    rng, X, _, _ = rows_data(seed=23)
    y = rng.standard_normal((1000, 1))
    args = (rng.standard_normal((6, 8)) * 0.4, np.zeros(8), rng.standard_normal((8, 1)), X, y)
    check_rows(mlp, args, {3, 4}, (0, 1, 2))


def test_rows_in_memory_labels_split_with_the_data():
    rng, X, y, _ = rows_data(seed=24)
    w = rng.standard_normal(6) * 0.3
    g = s2sad.grad(logreg, argnums=(0, 2))(w, da.from_array(X, chunks=(250, 6)), y)
    want = s2sad.grad(logreg, argnums=(0, 2))(w, X, y)
    assert isinstance(g[1], np.ndarray)
    close(g[0], want[0])
    close(g[1], want[1])


@pytest.mark.parametrize("loss,says", [
    (centred, "sum over rows"),
    (max_over_rows, "max over all rows"),
    (manual_mean, "static parameter computed from the rows|read"),
    (gram, "mixes rows|transpose"),
    (rows_then_columns, "rows' axis|not reduced"),
])
def test_rows_refused_where_the_loss_does_not_split(loss, says):
    X = da.from_array(data((100, 3), 25), chunks=(25, 3))
    submitted = []
    with __import__("dask").config.set(scheduler=lambda dsk, keys, **kw: submitted.append(keys)):
        with pytest.raises(DaskSplitError) as e:
            s2sad.grad(loss)(np.ones(3), X)
    import re
    assert re.search(says, str(e.value)) and "test_dask.py" in str(e.value) and not submitted, str(e.value)


def test_rows_parameters_sent_once_per_call(monkeypatch):
    """The in-memory parameters are one node of the graph, which every block's task reads:
    a scheduler sends them once per worker, not once per task."""
    import dask

    rng, X, y, _ = rows_data(seed=26)
    w = rng.standard_normal(6)
    graphs = []
    real = dask.compute

    def compute(*collections, **kw):
        found, _ = dask.base.unpack_collections(*collections)
        graph = {}
        for c in found:
            graph.update(dict(c.__dask_graph__()))
        graphs.append(graph)
        return real(*collections, **kw)

    monkeypatch.setattr(dask, "compute", compute)
    s2sad.grad(logreg)(w, da.from_array(X, chunks=(100, 6)), da.from_array(y, chunks=100))
    nodes = [v for v in graphs[0].values() if isinstance(getattr(v, "value", v), np.ndarray)
             and getattr(v, "value", v).shape == w.shape]
    assert len(nodes) == 1


loads = []


def load_pair(seed, n):
    loads.append(seed)
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 6)), (rng.random(n) > 0.5) * 1.0


@pytest.mark.parametrize("kind", ["rows", "elementwise"])
def test_a_block_read_by_one_task_for_two_arrays_is_read_once(kind):
    """X and y of a block loaded by one task (examples/dask_logistic_regression.py does this):
    the gradient's graph reads each block once, not once per array (to_delayed's default graph
    optimisation fused a copy of the task into each array's graph)."""
    import dask

    n, blocks = 50, 4
    X_parts, y_parts = [], []
    for seed in range(blocks):
        both = dask.delayed(load_pair, pure=True, nout=2)(seed, n)
        X_parts.append(da.from_delayed(both[0], shape=(n, 6), dtype=np.float64))
        y_parts.append(da.from_delayed(both[1], shape=(n,), dtype=np.float64))
    X, y = da.concatenate(X_parts), da.concatenate(y_parts)
    X_mem, y_mem = np.concatenate([load_pair(s, n)[0] for s in range(blocks)]), \
        np.concatenate([load_pair(s, n)[1] for s in range(blocks)])
    loads.clear()
    with dask.config.set(scheduler="sync"):
        if kind == "rows":
            w = np.linspace(-0.3, 0.3, 6)
            g = s2sad.grad(logreg)(w, X, y)
            close(g, s2sad.grad(logreg)(w, X_mem, y_mem))
        else:
            g = s2sad.grad(scaled, argnums=(0, 1))(X[:, 0], y)
            close(g[0].compute(), s2sad.grad(scaled, argnums=(0, 1))(X_mem[:, 0], y_mem)[0])
    assert sorted(loads) == list(range(blocks)), loads


def test_example_out_of_core_logistic_regression():
    """examples/dask_logistic_regression.py, small: it trains, stays under the workers'
    memory limit and reaches its accuracy (exit status 0)."""
    import subprocess
    import sys

    example = os.path.join(os.path.dirname(__file__), "..", "examples", "dask_logistic_regression.py")
    r = subprocess.run([sys.executable, example, "--rows", "300000", "--chunk", "75000", "--steps", "3",
                        "--memory-limit", "700MB"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "rows-mean+offset" in r.stdout and "rows/s over dask" in r.stdout

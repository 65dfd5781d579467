"""What a gradient over dask arrays costs the scheduler (s2sad/dask_grad.py): the blocks'
results are summed by a wide tree (few tasks, few transfers), each block's parts reach its
task without a task per part; results stay right (checked against the numpy gradient)."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import dask_grad

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
dask = pytest.importorskip("dask")


def logreg(w, b, X, y):
    p = 1 / (1 + np.exp(-(X @ w + b)))
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)) + 0.1 * np.sum(w ** 2)


def elementwise(x, s):
    return np.sum(np.log1p(x * x) * s)


def data(n=2000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), (rng.random(n) > 0.5) * 1.0, rng.standard_normal(d)


def graph_of_call(monkeypatch, call) -> dict:
    """The graph the call hands to dask.compute, culled to what its results need (the tasks
    the scheduler would run)."""
    graphs = []
    real = dask.compute

    def compute(*collections, **kw):
        found, _ = dask.base.unpack_collections(*collections)
        graph = {}
        for c in found:
            graph.update(needed(dict(c.__dask_graph__()), c.__dask_keys__()))
        graphs.append(graph)
        return real(*collections, **kw)

    monkeypatch.setattr(dask, "compute", compute)
    out = call()
    monkeypatch.undo()
    assert len(graphs) == 1
    return graphs[0], out


def needed(graph: dict, keys) -> dict:
    """The tasks of `graph` that `keys` depend on (dask's graph nodes name their dependencies)."""
    todo, seen = list(dask.core.flatten(keys)), {}
    while todo:
        k = todo.pop()
        if k in seen or k not in graph:
            continue
        seen[k] = graph[k]
        todo.extend(getattr(graph[k], "dependencies", ()))
    return seen


def named(graph: dict, prefix: str) -> int:
    return sum(1 for k in graph if str(k[0] if isinstance(k, tuple) else k).startswith(prefix))


def adds(n: int, fan_in: int) -> int:
    """Tasks of a tree that adds n results, fan_in at a time (a lone leftover is no task)."""
    count = 0
    while n > 1:
        full, rest = divmod(n, fan_in)
        count += full + (rest > 1)
        n = full + (rest > 0)
    return count


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("blocks", [1, 2, 15, 16, 17, 40])
def test_blocks_summed_by_a_wide_tree(monkeypatch, blocks):
    X, y, w = data(n=50 * blocks)
    dX, dy = da.from_array(X, chunks=(50, 5)), da.from_array(y, chunks=50)
    vg = s2sad.value_and_grad(logreg, argnums=(0, 1))
    with dask.config.set(scheduler="sync"):
        graph, (v, (gw, gb)) = graph_of_call(monkeypatch, lambda: vg(w, 0.3, dX, dy))
    v0, (gw0, gb0) = vg(w, 0.3, X, y)
    close(v, v0), close(gw, gw0), close(gb, gb0)
    assert named(graph, "tree_add") == adds(blocks, dask_grad.FAN_IN) <= 1 + blocks // 8


def test_split_every_config_sets_the_fan_in(monkeypatch):
    X, y, w = data(n=400)
    dX, dy = da.from_array(X, chunks=(50, 5)), da.from_array(y, chunks=50)
    vg = s2sad.value_and_grad(logreg, argnums=(0, 1))
    with dask.config.set(scheduler="sync", split_every=2):
        graph, (v, (gw, gb)) = graph_of_call(monkeypatch, lambda: vg(w, 0.3, dX, dy))
    assert named(graph, "tree_add") == 7          # 8 blocks added pairwise: 4 + 2 + 1
    close(gw, vg(w, 0.3, X, y)[1][0])


@pytest.mark.parametrize("every", [{0: 4}, 1, 0, "x"])
def test_split_every_not_a_fan_in_is_ignored(every):
    X, y, w = data(n=400)
    dX, dy = da.from_array(X, chunks=(50, 5)), da.from_array(y, chunks=50)
    with dask.config.set(scheduler="sync", split_every=every):
        g = s2sad.grad(logreg)(w, 0.3, dX, dy)
    close(g, s2sad.grad(logreg)(w, 0.3, X, y))


def test_elementwise_in_memory_gradient_summed_by_the_tree(monkeypatch):
    x = np.random.default_rng(3).standard_normal((340, 4))
    s = np.linspace(0.5, 2.0, 4)
    g = s2sad.grad(elementwise, argnums=(0, 1))
    with dask.config.set(scheduler="sync"):
        graph, (gx, gs) = graph_of_call(monkeypatch, lambda: g(da.from_array(x, chunks=(10, 4)), s))
        gx = gx.compute()
    gx0, gs0 = g(x, s)
    close(gx, gx0), close(gs, gs0)
    assert named(graph, "tree_add") == adds(34, dask_grad.FAN_IN) == 4    # 16 + 16 + 2, then one


def test_tree_adds_in_order_into_new_objects():
    a, b, c = np.ones(3), np.full(3, 2.0), np.full(3, 4.0)
    out = dask_grad.tree_add(lambda p, q: p * 10 + q, a, b, c)
    np.testing.assert_array_equal(out, (a * 10 + b) * 10 + c)
    np.testing.assert_array_equal(a, np.ones(3))          # inputs untouched


# ------------------------------------------------------------------ a block's parts, no task each

loads = []


def load_pair(seed, n):
    loads.append(seed)
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 5)), (rng.random(n) > 0.5) * 1.0


def read_together(blocks=4, n=60):
    """X and y whose blocks are read by one task each (examples/dask_logistic_regression.py)."""
    X_parts, y_parts = [], []
    for seed in range(blocks):
        both = dask.delayed(load_pair, pure=True, nout=2)(seed, n)
        X_parts.append(da.from_delayed(both[0], shape=(n, 5), dtype=np.float64))
        y_parts.append(da.from_delayed(both[1], shape=(n,), dtype=np.float64))
    X_mem = np.concatenate([load_pair(s, n)[0] for s in range(blocks)])
    y_mem = np.concatenate([load_pair(s, n)[1] for s in range(blocks)])
    loads.clear()
    return da.concatenate(X_parts), da.concatenate(y_parts), X_mem, y_mem


def test_items_of_one_read_reach_the_block_task_without_getitem_tasks(monkeypatch):
    X, y, X_mem, y_mem = read_together()
    w = np.linspace(-0.4, 0.4, 5)
    vg = s2sad.value_and_grad(logreg, argnums=(0, 1))
    with dask.config.set(scheduler="sync"):
        graph, (v, (gw, gb)) = graph_of_call(monkeypatch, lambda: vg(w, 0.2, X, y))
    v0, (gw0, gb0) = vg(w, 0.2, X_mem, y_mem)
    close(v, v0), close(gw, gw0), close(gb, gb0)
    assert sorted(loads) == [0, 1, 2, 3]                      # each block read once
    # the reads run inside the block tasks (dask_blocks.with_producers_inlined): 4 tasks, not 8
    assert named(graph, "getitem") == 0 and named(graph, "load_pair") == 0
    assert named(graph, "s2sad_grad_logreg") == 4


def test_items_picked_in_the_elementwise_and_broadcast_paths():
    X, y, X_mem, y_mem = read_together()
    g = s2sad.grad(elementwise, argnums=(0, 1))
    with dask.config.set(scheduler="sync"):
        gx, gs = g(X, y[:, None] * np.ones(5))
        close(gx.compute(), g(X_mem, y_mem[:, None] * np.ones(5))[0])
        close(s2sad.broadcast(lambda a, b: a * b + 1.0, X, 2.0).compute(), X_mem * 2.0 + 1.0)


def test_items_on_a_cluster_of_processes():
    distributed = pytest.importorskip("distributed")
    X, y, X_mem, y_mem = read_together(blocks=6)
    w = np.linspace(-0.4, 0.4, 5)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster):
        v, (gw, gb) = s2sad.value_and_grad(logreg, argnums=(0, 1))(w, 0.2, X, y)
    v0, (gw0, gb0) = s2sad.value_and_grad(logreg, argnums=(0, 1))(w, 0.2, X_mem, y_mem)
    close(v, v0), close(gw, gw0), close(gb, gb0)


def test_item_of_reads_getitems_of_a_constant_int_only():
    from operator import getitem

    from s2sad.dask_blocks import item_of

    def f(a):
        return a

    legacy = {"src": (f, 1), "it": (getitem, "src", 1), "name": (getitem, "src", "x"),
              "bool": (getitem, "src", True), "away": (getitem, "elsewhere", 0), "self": (getitem, "self", 0),
              "other": (f, "src")}
    assert item_of(legacy, "it") == ("src", 1)
    for key in ("name", "bool", "away", "self", "other", "src", "missing"):
        assert item_of(legacy, key) is None, key
    X, _, _, _ = read_together(blocks=1)
    block = X.to_delayed(optimize_graph=False).flat[0]
    graph = dict(block.dask)
    assert any(item_of(graph, k) is not None for k in graph)   # dask's own task objects read too


def test_pick_takes_items_and_passes_the_rest():
    from s2sad.dask_blocks import pick

    pair, other = (np.zeros(2), np.ones(3)), np.full(4, 2.0)
    got = pick((pair, other), ((0, 1), (0, 0), (1, None)))
    assert got[0] is pair[1] and got[1] is pair[0] and got[2] is other
    assert pick((pair,), ()) == (pair,)


def test_an_items_source_is_one_input_however_many_items_are_taken():
    """X's and y's blocks of one read: the read's result is handed to the task once (one
    dependency, and one run once the read is inlined into the task)."""
    from s2sad.dask_blocks import Item, as_task_inputs

    read, w = dask.delayed(load_pair)(0, 5), np.ones(5)
    inputs, picks = as_task_inputs([w, Item(read, 0), Item(read, 1), 0.5])
    assert len(inputs) == 3 and inputs[1] is read and inputs[0] is w and inputs[2] == 0.5
    assert picks == ((0, None), (1, 0), (1, 1), (2, None))
    assert as_task_inputs([w, 0.5]) == ([w, 0.5], ())

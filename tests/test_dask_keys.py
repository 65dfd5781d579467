"""The keys of the tasks s2sad adds to a dask graph (s2sad/dask_grad.py): fresh on every
call, never derived by hashing the tasks. A hashed key (dask's `pure=True`) cost a pickle of
each block's task object, the loss's file lines with it (a third of a call's graph building
at 50 blocks, measured), and named two calls alike whenever their inputs hashed alike, so a
cluster still holding the first call's result could hand it to the second though the loss
read another value of a global meanwhile. Results stay the numpy gradient's."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import dask_tasks

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
dask = pytest.importorskip("dask")

SCALE = [1.0]


def logreg(w, b, X, y):
    p = 1 / (1 + np.exp(-(X @ w + b)))
    return -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)) + 0.1 * np.sum(w ** 2)


def elementwise(x, s):
    return np.sum(np.log1p(x * x) * s * SCALE[0])


def data(n=1200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), (rng.random(n) > 0.5) * 1.0, rng.standard_normal(d)


def keys_of_call(monkeypatch, call) -> tuple[set, object]:
    """The keys of the graph the call hands to dask.compute, and the call's result."""
    seen = []
    real = dask.compute

    def compute(*collections, **kw):
        found, _ = dask.base.unpack_collections(*collections)
        for c in found:
            seen.extend(dict(c.__dask_graph__()))
        return real(*collections, **kw)
    monkeypatch.setattr(dask, "compute", compute)
    try:
        out = call()
        return set(seen), out
    finally:
        monkeypatch.setattr(dask, "compute", real)


def ours(keys: set) -> set:
    names = ("s2sad_grad_", "tree_add", "ndarray")
    return {k for k in keys if str(k[0] if isinstance(k, tuple) else k).startswith(names)}


def test_two_calls_of_the_rows_split_share_no_task_key(monkeypatch):
    X, y, w = data()
    Xd, yd = da.from_array(X, chunks=300), da.from_array(y, chunks=300)
    vg = s2sad.value_and_grad(logreg, argnums=(0, 1))
    with dask.config.set(scheduler="threads"):
        first, a = keys_of_call(monkeypatch, lambda: vg(w, 0.5, Xd, yd))
        second, b = keys_of_call(monkeypatch, lambda: vg(w, 0.5, Xd, yd))
    assert len(ours(first)) >= 5 and not ours(first) & ours(second)
    want = vg(w, 0.5, X, y)
    assert a[0] == b[0] == pytest.approx(want[0], rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(a[1][0], want[1][0], rtol=1e-12, atol=1e-12)


def test_two_calls_of_the_elementwise_split_share_no_task_key(monkeypatch):
    x = np.random.default_rng(1).uniform(-2, 2, 1000)
    X = da.from_array(x, chunks=250)
    vg = s2sad.value_and_grad(elementwise, argnums=(0, 1))
    with dask.config.set(scheduler="threads"):
        first, _ = keys_of_call(monkeypatch, lambda: vg(X, 1.5))
        second, _ = keys_of_call(monkeypatch, lambda: vg(X, 1.5))
    assert len(ours(first)) >= 4 and not ours(first) & ours(second)


def test_no_block_task_is_pickled_to_name_it(monkeypatch):
    """On the threaded scheduler nothing is shipped: a pickle of a block task would be its
    key's hash, paid per block per call."""
    pickled = []
    real = dask_tasks.BlockTask.__getstate__
    monkeypatch.setattr(dask_tasks.BlockTask, "__getstate__", lambda self: pickled.append(1) or real(self))
    X, y, w = data()
    with dask.config.set(scheduler="threads"):
        s2sad.value_and_grad(logreg, argnums=(0, 1))(w, 0.5, da.from_array(X, chunks=300), da.from_array(y, chunks=300))
        s2sad.value_and_grad(elementwise, argnums=(0, 1))(da.from_array(X[:, 0], chunks=300), 2.0)
    assert pickled == []


def test_a_global_changed_between_calls_is_read_anew():
    x = np.random.default_rng(2).uniform(-2, 2, 800)
    X = da.from_array(x, chunks=200)
    vg = s2sad.value_and_grad(elementwise, argnums=(0,))
    try:
        with dask.config.set(scheduler="threads"):
            v1, (g1,) = vg(X, 1.0)
            g1 = g1.compute()           # lazy: read the global when computed, as any dask task would
            SCALE[0] = 3.0
            v3, (g3,) = vg(X, 1.0)
            g3 = g3.compute()
    finally:
        SCALE[0] = 1.0
    assert v3 == pytest.approx(3.0 * v1, rel=1e-12)
    np.testing.assert_allclose(g3, 3.0 * g1, rtol=1e-12)

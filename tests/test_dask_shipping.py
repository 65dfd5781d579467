"""A loss shipped by value (defined in a script's __main__, or any module a worker cannot
import) arrives on a worker as one function per distinct pickle (dask_tasks.Shipped), so
the worker plans it once, not once per task; a loss whose globals changed arrives as a
new function and is planned anew (never a stale plan's number); a loss carrying big data
by value is not kept."""
from __future__ import annotations

import importlib
import pickle
import sys
import textwrap

import numpy as np
import pytest

import s2sad
from s2sad.dask_tasks import ARRIVED_MAX_BYTES, BlockApply, BlockTask, Shipped
from conftest import two_worker_client

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")

SOURCE = textwrap.dedent("""
    import numpy as np

    SCALE = 2.0
    BIG = np.zeros(1)


    def term(x):
        return np.log1p(x * x) * SCALE


    def loss(x):
        return np.sum(term(x) + np.tanh(x) * BIG[0])
""")


@pytest.fixture
def by_value(tmp_path, monkeypatch):
    """A module of losses that cloudpickle ships by value (as it does a script's __main__)."""
    name = f"shipped_losses_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module(name)
    cloudpickle.register_pickle_by_value(mod)
    yield mod
    cloudpickle.unregister_pickle_by_value(mod)
    sys.modules.pop(name, None)


def shipped_twice(fun) -> tuple:
    """The loss as two tasks of one call would each receive it (pickled apart)."""
    ship = Shipped(fun)
    tasks = [BlockTask(ship, (0,), "llvm", "reverse", 1.0) for _ in range(2)]
    return tuple(pickle.loads(cloudpickle.dumps(t)).fun for t in tasks)


def test_one_function_per_distinct_pickle(by_value):
    a, b = shipped_twice(by_value.loss)
    assert a is b and a is not by_value.loss            # by value, and unpickled once
    c, _ = shipped_twice(by_value.loss)                 # the next call, the same bytes
    assert c is a


def test_a_changed_global_arrives_as_a_new_function(by_value):
    a, _ = shipped_twice(by_value.loss)
    by_value.SCALE = 3.0
    b, _ = shipped_twice(by_value.loss)
    assert b is not a and b.__globals__["term"].__globals__["SCALE"] == 3.0
    assert a.__globals__["term"].__globals__["SCALE"] == 2.0


def test_a_loss_carrying_big_data_is_not_kept(by_value):
    by_value.BIG = np.zeros(ARRIVED_MAX_BYTES // 8 + 1)
    a, b = shipped_twice(by_value.loss)
    assert a is not b and a.__globals__["BIG"].size == ARRIVED_MAX_BYTES // 8 + 1


@pytest.fixture(scope="module")
def client():
    yield from two_worker_client()


def plans_made() -> int:
    """How many plans this process has made (run on a worker)."""
    from s2sad.plans import PLANS
    return PLANS.made


def test_workers_plan_a_by_value_loss_once_and_follow_its_globals(client, by_value):
    x = np.random.default_rng(3).uniform(-2, 2, 8000)
    X = da.from_array(x, chunks=1000)
    g = s2sad.grad(by_value.loss)
    with client.as_current():
        first = g(X).compute()
        before = client.run(plans_made)
        again = g(X).compute()
        after = client.run(plans_made)
        assert all(after[w] == before[w] for w in after), (before, after)     # 8 blocks: no plan made again
        assert np.array_equal(first, g(x)) and np.array_equal(again, first)
        by_value.SCALE = 3.0                         # a new loss: its new value used, not the kept plan's
        changed = g(X).compute()
    assert np.array_equal(changed, g(x))
    np.testing.assert_allclose(changed, first * 1.5, rtol=1e-12)


def test_broadcast_ships_its_function_the_same_way(client, by_value):
    ship = Shipped(by_value.term)
    a, b = (pickle.loads(cloudpickle.dumps(BlockApply(s2sad.broadcast, ship, "llvm"))).f for _ in range(2))
    assert a is b and a is not by_value.term
    x = np.random.default_rng(4).uniform(-2, 2, 4000)
    with client.as_current():
        got = s2sad.broadcast(by_value.term, da.from_array(x, chunks=500)).compute()
    np.testing.assert_array_equal(got, s2sad.broadcast(by_value.term, x))

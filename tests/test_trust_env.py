"""The environment (session 8, trust): S2SAD_ROW_FUSION is read when a plan is built (and by
rowsoftmax.enabled()), not at each call of a row function (it cost a lookup in os.environ
a call); S2SAD_NUM_THREADS set to 0, -1 or garbage warns and gives the right gradient."""
import os
import warnings

import numpy as np
import pytest

import s2sad
from s2sad import rowlayernorm as L
from s2sad import rowsoftmax as R
from s2sad.plans import PLANS
from conftest import central_fd


class CountingEnviron(dict):
    reads = 0

    def get(self, key, default=None):
        if key == "S2SAD_ROW_FUSION":
            CountingEnviron.reads += 1
        return super().get(key, default)


def test_the_row_functions_do_not_read_the_environment_at_each_call(monkeypatch):
    x = np.random.default_rng(0).normal(size=(8, 5))
    assert R.enabled()
    env = CountingEnviron(os.environ)
    monkeypatch.setattr(os, "environ", env)
    CountingEnviron.reads = 0
    for _ in range(5):
        R.row_softmax(x, axis=1)
        R.row_log_softmax(x, axis=-1)
        R.row_logsumexp(x, axis=1, keepdims=False)
        L.row_layer_norm(x, 1e-5)
    assert CountingEnviron.reads == 0
    env["S2SAD_ROW_FUSION"] = "0"
    assert not R.enabled() and CountingEnviron.reads == 1


def xent(z, Y):
    zs = z - np.max(z, axis=1, keepdims=True)
    return -np.sum(Y * (zs - np.log(np.sum(np.exp(zs), axis=1, keepdims=True))))


def test_the_switch_set_when_a_plan_is_built_still_turns_fusion_off(monkeypatch):
    rng = np.random.default_rng(1)
    z, Y = rng.normal(size=(6, 4)), np.eye(4)[rng.integers(0, 4, 6)]
    g = s2sad.grad(xent)
    np.testing.assert_allclose(g(z, Y), central_fd(xent, [z, Y], 0), rtol=1e-6, atol=1e-8)
    assert "row_" in s2sad.source(g)
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    PLANS.clear()
    try:
        g = s2sad.grad(xent)
        np.testing.assert_allclose(g(z, Y), central_fd(xent, [z, Y], 0), rtol=1e-6, atol=1e-8)
        assert "row_" not in s2sad.source(g)
        np.testing.assert_allclose(g(z, Y), central_fd(xent, [z, Y], 0), rtol=1e-6, atol=1e-8)
    finally:
        PLANS.clear()


def big(x):
    return np.sum(np.sin(x) * x)


@pytest.mark.parametrize("value", ["0", "-1", "garbage", "2.5"])
def test_bad_thread_counts_warn_and_give_the_right_gradient(value, monkeypatch):
    x = np.linspace(-1.0, 1.0, 300_000)
    monkeypatch.setenv("S2SAD_NUM_THREADS", value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = s2sad.grad(big)(x)
    np.testing.assert_allclose(got, np.sin(x) + x * np.cos(x), rtol=1e-12, atol=1e-15)
    assert any("S2SAD_NUM_THREADS" in str(w.message) for w in caught)

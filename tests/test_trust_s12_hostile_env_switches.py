"""S2SAD_* switches given a bad value (session 12, hostile pass; DESIGN: "bad values warn").

S2SAD_VECMATH=junk made the first gradient raise a raw ValueError from s2sad's insides;
S2SAD_ROW_FUSION=off, S2SAD_LIBMVEC=no and S2SAD_OBJLOAD=false were silently taken as
"on" (only "0" turns them off), so a user who switched fusion off to compare numbers
compared fused against fused. Now each bad value is a RuntimeWarning naming the variable
(once a process), the default is used, and the gradient is right; 0 and 1 mean what the
README's table says.
"""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad import envflags
from s2sad.passes import rowfusion


def xent(z):
    z = z - np.max(z, axis=1, keepdims=True)
    return -np.mean(z[:, 0] - np.log(np.sum(np.exp(z), axis=1)))


def softmax(z):
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


Z = np.random.default_rng(0).normal(size=(6, 4))
WANT = (softmax(Z) - np.eye(4)[np.zeros(6, int)]) / 6


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(envflags, "_warned", set())
    yield
    rowfusion.enabled()         # (the switch as the environment says once the test's variable is gone)


@pytest.mark.parametrize("name, value", [("S2SAD_VECMATH", "junk"), ("S2SAD_ROW_FUSION", "off"),
                                         ("S2SAD_LIBMVEC", "no"), ("S2SAD_OBJLOAD", "false")])
def test_a_bad_value_warns_and_the_gradient_is_right(name, value, monkeypatch):
    monkeypatch.setenv(name, value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rowfusion.enabled()
        envflags.choice("S2SAD_VECMATH", ("libmvec", "s2sad", "libm"))
        envflags.switch("S2SAD_LIBMVEC")
        envflags.switch("S2SAD_OBJLOAD")
        got = s2sad.grad(xent)(Z)
    np.testing.assert_allclose(got, WANT, rtol=1e-12, atol=1e-15)
    named = [w for w in caught if name in str(w.message)]
    assert len(named) == 1 and issubclass(named[0].category, RuntimeWarning) and repr(value) in str(named[0].message)


@pytest.mark.parametrize("value, on", [("0", False), ("1", True), ("", True), (" 0 ", False)])
def test_zero_and_one_mean_what_the_readme_says(value, on, monkeypatch):
    monkeypatch.setenv("S2SAD_ROW_FUSION", value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert envflags.switch("S2SAD_ROW_FUSION") is on
        assert rowfusion.enabled() is on


def test_each_bad_value_warns_once(monkeypatch):
    monkeypatch.setenv("S2SAD_OBJLOAD", "maybe")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert envflags.switch("S2SAD_OBJLOAD") is True
    assert len(caught) == 1

"""User rules (s2sad.defrule) win over a function's own source, inside broadcasts and
compiled kernels, and make functions without source usable."""
import math

import numpy as np
import pytest

import s2sad


def hard_round(z):
    return float(round(z))


def loss_ste(x):
    return np.sum(s2sad.broadcast(hard_round, x))


def test_rule_wins_over_source(backend):
    x = np.array([0.2, 1.7, -2.4])
    assert not s2sad.grad(loss_ste, backend=backend)(x).any()  # from source: round has zero derivative
    s2sad.defrule(hard_round, "1.0")  # straight-through estimator
    try:
        np.testing.assert_array_equal(s2sad.grad(loss_ste, backend=backend)(x), np.ones(3))
        assert "defrule" in str(s2sad.explain(loss_ste))
        assert s2sad.grad(hard_round, backend=backend)(0.3) == 1.0
    finally:
        from s2sad import rules
        rules.USER_RULES.pop(hard_round)
        s2sad.plans.PLANS.clear()


_ns: dict = {}
exec("def c_softplus(z):\n    import math\n    return math.log1p(math.exp(z))\n", _ns)
c_softplus = _ns["c_softplus"]  # stands for a function with no Python source


def softplus_impl(z):
    return math.log1p(math.exp(z))


def loss_c(x, w):
    return np.sum(s2sad.broadcast(lambda z: w * c_softplus(z), x))


def test_function_without_source_through_a_rule(backend):
    x = np.linspace(-2, 2, 5)
    with pytest.raises(s2sad.NoSourceError):
        s2sad.grad(loss_c)(x, 2.0)
    s2sad.defrule(c_softplus, "out * 0.0 + 1.0 / (1.0 + math.exp(-z))", impl=softplus_impl)
    try:
        g = s2sad.grad(loss_c, backend=backend)(x, 2.0)
        np.testing.assert_allclose(g, 2.0 / (1.0 + np.exp(-x)), rtol=1e-14)
    finally:
        from s2sad import rules
        rules.USER_RULES.pop(c_softplus)
        s2sad.plans.PLANS.clear()


def test_bad_rules_are_refused():
    with pytest.raises(s2sad.S2SADError, match="1 parameter"):
        s2sad.defrule(hard_round, "1.0", "2.0")
    with pytest.raises(s2sad.S2SADError, match="not a Python expression"):
        s2sad.defrule(hard_round, "1.0 +")
    with pytest.raises(s2sad.NoSourceError, match="impl="):
        s2sad.defrule(c_softplus, "1.0")

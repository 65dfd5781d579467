"""Each rule's partials against central finite differences of its own function, at
random points and where the other argument is a signed zero or has either sign (a
random-program soak found copysign's slope taken as sign(x) * sign(y): zero where
y = 0.0, whose copysign(x, 0.0) is |x|)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import s2sad
from s2sad import rules, smath

rng = np.random.default_rng(11)


def copysign_zero(x):
    return np.sum(s2sad.broadcast(lambda z: math.copysign(z, 0.0), x))


def copysign_minus_zero(x):
    return np.sum(s2sad.broadcast(lambda z: math.copysign(z, -0.0), x))


def copysign_both(x, y):
    return np.sum(s2sad.broadcast(math.copysign, x, y))


def test_copysign_slope_follows_the_sign_of_y(backend):
    x = np.array([0.5, -0.9, -1.8, 3.0])
    np.testing.assert_array_equal(s2sad.grad(copysign_zero, backend=backend)(x), np.sign(x))
    np.testing.assert_array_equal(s2sad.grad(copysign_minus_zero, backend=backend)(x), -np.sign(x))
    y = np.array([0.0, -0.0, 2.0, -2.0])
    gx, gy = s2sad.grad(copysign_both, argnums=(0, 1), backend=backend)(x, y)
    np.testing.assert_array_equal(gx, np.sign(x) * np.copysign(1.0, y))
    np.testing.assert_array_equal(gy, np.zeros(4))


def _copysign(z, y):
    return math.copysign(z, y)


def _atan2(z, y):
    return math.atan2(z, y)


def _hypot(z, y):
    return math.hypot(z, y)


def _fmod(z, y):
    return math.fmod(z, y)


TWO = {"copysign": _copysign, "atan2": _atan2, "hypot": _hypot, "fmod": _fmod}


def test_every_two_argument_math_rule_is_checked_here():
    assert set(TWO) == {name for name, r in rules.RULES.items() if r.arity == 2 and r.spelling == "math"}


@pytest.mark.parametrize("name", sorted(TWO))
def test_partials_where_the_other_argument_is_zero_or_signed(name, backend):
    """d/dx f(x, y) and d/dy f(x, y) for y in {0.0, -0.0, 2.5, -2.5} and x away from 0,
    against central differences of the function itself (smath, the python backend's
    arithmetic)."""
    f = TWO[name]
    ref = getattr(smath, name, None) or getattr(math, name)

    def loss(v, y):
        return np.sum(s2sad.broadcast(f, v, y))
    xs = rng.uniform(0.3, 3.0, 6) * np.array([1.0, -1.0] * 3)
    h = 1e-6
    for y in (0.0, -0.0, 2.5, -2.5):
        if name == "fmod" and y == 0.0:
            continue
        gx, gy = s2sad.grad(loss, argnums=(0, 1), backend=backend)(xs, y)
        fdx = [(float(ref(x + h, y)) - float(ref(x - h, y))) / (2 * h) for x in xs]
        np.testing.assert_allclose(gx, fdx, rtol=1e-6, atol=1e-6, err_msg=f"d/dx {name}(x, {y!r})")
        if y != 0.0:     # f is not differentiable in y at 0 for copysign/atan2 (a jump or a kink)
            fdy = sum((float(ref(x, y + h)) - float(ref(x, y - h))) / (2 * h) for x in xs)
            assert gy == pytest.approx(fdy, rel=1e-6, abs=1e-6), f"d/dy {name}(x, {y!r})"

"""Issue 14: second derivatives of random scalar programs (tests/randprog.py).

For each generated scalar function `f(a[, b[, c]])`:
- grad(grad(f, argnums=i), argnums=j) on Python floats equals central differences of
  s2sad's own first derivative grad(f, argnums=i), where those can be trusted (steps h
  and h/10 agree: no kink or branch threshold within reach);
- the llvm backend agrees with the python backend (the oracle), for the second
  derivative and for the diagonal second derivative of a loss that applies the
  derivative elementwise, `np.sum(s2sad.broadcast(grad(f, argnums=i), *arrays))`;
- that loss's gradient in its i-th array is grad(grad(f, i), i) element by element.

Examples are derandomized; inputs come from a numpy generator seeded by hypothesis.
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import s2sad
from randprog import load, programs

H = 1e-5
FD_RTOL, FD_ATOL = 1e-5, 1e-6
BACKEND_RTOL = 1e-12


def _settings(n: int):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def central(g, point: list, j: int, h: float) -> float:
    hi, lo = list(point), list(point)
    hi[j], lo[j] = point[j] + h, point[j] - h
    return (g(*hi) - g(*lo)) / (hi[j] - lo[j])


def close(x, y, rtol, atol=0.0) -> bool:
    return abs(x - y) <= rtol * max(abs(x), abs(y)) + atol


@_settings(25)
@given(program=programs(), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_second_derivatives_of_random_scalar_programs(program, seed, data):
    note(program.source)
    ns = load(program)
    f = ns["f"]
    rng = np.random.default_rng(seed)
    point = [float(v) for v in rng.uniform(-2.0, 2.0, program.nparams)]
    i = data.draw(st.integers(0, program.nparams - 1))
    j = data.draw(st.integers(0, program.nparams - 1))
    note(f"point {point}, d/d{i} then d/d{j}")
    g = s2sad.grad(f, argnums=i, backend="python")
    second = s2sad.grad(g, argnums=j, backend="python")(*point)
    assert isinstance(second, float)
    second_llvm = s2sad.grad(s2sad.grad(f, argnums=i, backend="llvm"), argnums=j, backend="llvm")(*point)
    assert close(second_llvm, second, BACKEND_RTOL, 1e-13), (second_llvm, second)
    fd1, fd2 = central(g, point, j, H), central(g, point, j, H / 10)
    if close(fd1, fd2, FD_RTOL, FD_ATOL) and math.isfinite(fd1):   # trustworthy here
        best = fd2 + (fd2 - fd1) / 99.0
        assert close(second, best, 1e-4, 1e-5), (second, best)


@_settings(15)
@given(program=programs(), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_the_diagonal_second_derivative_of_a_loss_applying_a_grad(program, seed, data):
    note(program.source)
    ns = load(program)
    f = ns["f"]
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-2.0, 2.0, 4) for _ in range(program.nparams)]
    i = data.draw(st.integers(0, program.nparams - 1))
    dg = s2sad.grad(f, argnums=i)

    loss = [lambda a: np.sum(s2sad.broadcast(dg, a)),
            lambda a, b: np.sum(s2sad.broadcast(dg, a, b)),
            lambda a, b, c: np.sum(s2sad.broadcast(dg, a, b, c))][program.nparams - 1]

    got = {be: s2sad.grad(loss, argnums=i, backend=be)(*arrays) for be in ("python", "llvm")}
    scale = max(float(np.abs(got["python"]).max()), 1.0)
    np.testing.assert_allclose(got["llvm"], got["python"], rtol=BACKEND_RTOL, atol=BACKEND_RTOL * scale)
    h = s2sad.grad(s2sad.grad(f, argnums=i, backend="python"), argnums=i, backend="python")
    want = [h(*[float(a[k]) for a in arrays]) for k in range(4)]
    np.testing.assert_allclose(got["python"], want, rtol=1e-12, atol=1e-12 * scale)

"""value_and_grad's value is a Python number on every path (np.float32 for a float32 loss, session 12): the unrolled small plan (a
float from its entry), the generated program (numpy's np.float64 for `x @ x`, a
kernel's smath.Real for np.mean), its warm hot path, the python backend, a fused kernel.
Before, the type depended on the path: np.float64 on some, smath.Real on others (a
float whose `/ 0` gives inf instead of raising ZeroDivisionError, as a float does), a
float on the unrolled one. The same holds for jvp's primal output of a scalar loss."""
import numpy as np
import pytest

import s2sad


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def fused(x):
    return np.sum(np.sin(x) * x)


def dotted(x):
    return x @ x


def meaned(x):
    return np.mean(np.tanh(x)) * 2.0


def with_aux(x):
    return x @ x, np.sum(x)


FUNS = [rosen, fused, dotted, meaned]


def _check(v, want):
    assert type(v) is float, type(v)
    assert v == pytest.approx(float(want), rel=1e-12)
    with pytest.raises(ZeroDivisionError):      # (a float's arithmetic, not smath.Real's)
        v / 0.0


@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("n", [5, 200], ids=["unrolled-size", "general-size"])
@pytest.mark.parametrize("fun", FUNS, ids=lambda f: f.__name__)
def test_the_value_is_a_float_on_every_path(fun, n, backend):
    x = np.linspace(0.1, 0.9, n)
    vg = s2sad.value_and_grad(fun, backend=backend)
    for _ in range(4):                  # first call, then the warm / hot paths
        _check(vg(x)[0], fun(x))


@pytest.mark.parametrize("fun", FUNS, ids=lambda f: f.__name__)
def test_float32_data_too(fun):
    """(session 12: a float32 loss's value is np.float32, its dtype; tests/test_value_dtype.py)"""
    x = np.linspace(0.1, 0.9, 7, dtype=np.float32)
    vg = s2sad.value_and_grad(fun)
    for _ in range(3):
        v = vg(x)[0]
        assert type(v) is np.float32 and v == pytest.approx(float(fun(x)), rel=1e-5)


def test_has_aux_and_two_argnums():
    x = np.linspace(0.1, 0.9, 6)
    for _ in range(3):
        (v, aux), g = s2sad.value_and_grad(with_aux, has_aux=True)(x)
        _check(v, x @ x)
    vg = s2sad.value_and_grad(lambda a, b: a @ b, argnums=(0, 1))
    for _ in range(3):
        _check(vg(x, x)[0], x @ x)


@pytest.mark.parametrize("fun", FUNS, ids=lambda f: f.__name__)
def test_jvp_primal_output_of_a_loss(fun):
    x = np.linspace(0.1, 0.9, 6)
    for _ in range(3):
        out, _ = s2sad.jvp(fun, (x,), (np.ones_like(x),))
        _check(out, fun(x))

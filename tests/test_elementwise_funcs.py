"""numpy's elementwise functions beyond the math primitives (s2sad.ewfuncs, partials in
rules.ELEMENTWISE_RULES; tests/test_rule_partials.py checks each partial and the
conventions): their values against numpy's at ordinary and special points (NaN, +-inf,
signed zeros, ties) and their tangents against central differences, at the array level,
on both backends and in both float dtypes; the zero-gradient roundings; np.select as
nested selects; the CUDA C of kernels calling them compiled by NVRTC."""
from __future__ import annotations

import math

import numpy as np
import pytest

import s2sad
from s2sad import rules
from s2sad.errors import S2SADError

NAN, INF = math.nan, math.inf
ODD = np.array([NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 2.5, -3.5, 1e-30])
ODD2 = np.array([0.0, NAN, 1.0, -0.0, 0.0, 1.0, INF, -INF, -3.5, 2e-30])

# name -> (numpy's function, its arity)
FUNCS = {
    "deg2rad": (np.deg2rad, 1), "radians": (np.radians, 1), "rad2deg": (np.rad2deg, 1), "degrees": (np.degrees, 1),
    "sinc": (np.sinc, 1), "fmax": (np.fmax, 2), "fmin": (np.fmin, 2), "real": (np.real, 1), "imag": (np.imag, 1),
    "conj": (np.conj, 1), "conjugate": (np.conjugate, 1), "angle": (np.angle, 1), "heaviside": (np.heaviside, 2),
    "logaddexp": (np.logaddexp, 2), "logaddexp2": (np.logaddexp2, 2),
}


def test_every_numpy_spelling_is_checked_here():
    assert set(FUNCS) == set(rules.NUMPY_ELEMENTWISE)


def _points(arity, dtype):
    rng = np.random.default_rng(5)
    xs = [np.concatenate([ODD, rng.uniform(-4, 4, 6)]), np.concatenate([ODD2, rng.uniform(-4, 4, 6)])]
    return [x.astype(dtype) for x in xs[:arity]]


@pytest.mark.parametrize("backend", ["python", "llvm"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_values_match_numpy_and_tangents_central_differences(name, dtype, backend):
    f, arity = FUNCS[name]
    args = _points(arity, dtype)
    with np.errstate(all="ignore"):
        want = f(*args)
    for i in range(arity):
        tangents = [np.zeros_like(a) for a in args]
        tangents[i] = np.ones_like(args[i])
        value, tangent = s2sad.jvp(f, args, tangents, backend=backend)
        assert value.dtype == np.dtype(dtype)
        # (float32: numpy's sinc multiplies by pi rounded to float32, s2sad's python backend by pi)
        np.testing.assert_allclose(value, want, rtol=1e-15 if dtype == "float64" else 1e-6,
                                   atol=0 if dtype == "float64" else 1e-7,
                                   err_msg=f"{name} {backend} {dtype}")
        if dtype == "float64":     # at the ordinary points (the last six), against central differences
            h = 1e-6
            up, down = list(args), list(args)
            up[i], down[i] = args[i] + h, args[i] - h
            with np.errstate(all="ignore"):      # (NaN and inf among the special points)
                fd = (f(*up) - f(*down)) / (2 * h)
            np.testing.assert_allclose(tangent[-6:], fd[-6:], rtol=1e-6, atol=1e-7, err_msg=f"d{name}/d{i}")


def each_rounding(x):
    return np.sum(np.round(x) + np.around(x) + np.rint(x) + np.floor(x) + np.ceil(x) + np.trunc(x)
                  + np.sign(x) + x)


@pytest.mark.parametrize("backend", ["python", "llvm"])
def test_roundings_have_zero_gradient_and_numpy_values(backend):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.7, 2.2, 0.0])
    value, g = s2sad.value_and_grad(each_rounding, backend=backend)(x)
    assert value == pytest.approx(each_rounding(x), abs=1e-12)
    np.testing.assert_array_equal(g, np.ones_like(x))


def round_decimals(x):
    return np.sum(np.round(x, 2) * x)


def test_round_with_decimals_has_numpys_values_and_zero_slope():
    """np.round(x, 2) is rint(x * 100) / 100 as numpy computes it: the slope of x alone
    (tests/test_numpy_coverage_issue16.py has the rest)."""
    x = np.array([2.675, 1.005, -0.125, 13.37])
    value, g = s2sad.value_and_grad(round_decimals)(x)
    assert value == round_decimals(x)
    np.testing.assert_array_equal(g, np.round(x, 2))


def degrees_in_a_scalar_function(v, w):
    return math.degrees(v) * np.fmax(v, w) + math.radians(np.logaddexp(v, w)) + np.sinc(v * w)


def test_scalar_spellings_inside_a_broadcast_match_central_differences():
    x, y = np.array([0.3, -1.2, 0.7]), np.array([0.5, 0.1, -2.0])
    f = np.vectorize(degrees_in_a_scalar_function)

    def loss(a, b):
        return np.sum(s2sad.broadcast(degrees_in_a_scalar_function, a, b))
    for backend in ("python", "llvm"):
        gx, gy = s2sad.grad(loss, argnums=(0, 1), backend=backend)(x, y)
        h = 1e-6
        np.testing.assert_allclose(gx, (f(x + h, y) - f(x - h, y)) / (2 * h), rtol=1e-6)
        np.testing.assert_allclose(gy, (f(x, y + h) - f(x, y - h)) / (2 * h), rtol=1e-6)


# ------------------------------------------------------------------ np.select

def select_loss(x, y):
    return np.sum(np.sin(np.select([x > 1.0, y < 0.7], [x * y, np.sin(x)], default=y ** 2)))


def select_default_zero(x):
    return np.sum(np.select([x > 1.0, x < 0.6], [x * 3.0, 2.0]) * x)


def select_variable_lists(x):
    conds = [x > 1.0]
    return np.sum(np.select(conds, [x]))


@pytest.mark.parametrize("backend", ["python", "llvm"])
def test_select_is_nested_where(backend):
    x, y = np.array([0.55, 1.2, 0.9, 1.4, 0.8]), np.array([0.5, 0.8, 1.2, 0.3, 0.6])
    value, (gx, gy) = s2sad.value_and_grad(select_loss, argnums=(0, 1), backend=backend)(x, y)
    assert value == pytest.approx(select_loss(x, y), rel=1e-14)
    h = 1e-6
    for got, i in ((gx, 0), (gy, 1)):
        for k in range(5):
            up, down = [x.copy(), y.copy()], [x.copy(), y.copy()]
            up[i][k] += h
            down[i][k] -= h
            assert got[k] == pytest.approx((select_loss(*up) - select_loss(*down)) / (2 * h), abs=1e-7)
    g = s2sad.grad(select_default_zero, backend=backend)(x)
    np.testing.assert_allclose(g, np.select([x > 1.0, x < 0.6], [6.0 * x, 2.0]), rtol=1e-14)


def test_select_of_lists_held_in_variables_is_refused():
    with pytest.raises(S2SADError) as e:
        s2sad.grad(select_variable_lists)(np.ones(3))
    assert "np.select" in str(e.value)


# ------------------------------------------------------------------ CUDA C

def every_function(x, y):
    return np.sum(np.deg2rad(x) * np.rad2deg(y) + np.sinc(x) + np.fmax(x, y) + np.fmin(x, y) + np.real(x)
                  + np.imag(y) + np.conj(x) + np.angle(x) + np.heaviside(x, y) + np.logaddexp(x, y)
                  + np.logaddexp2(x, y))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cuda_c_of_a_kernel_calling_every_function_compiles(dtype):
    pytest.importorskip("cuda.bindings.nvrtc")
    from s2sad.codegen import cuda
    from s2sad.kernel import LoopSpec

    d = s2sad.grad(every_function, argnums=(0, 1)).__s2sad__
    x = np.linspace(-1, 1, 5)
    d(x, x)        # plans and compiles
    c = d.c
    kmod = c.kernel.module(c.active_for(d.argnums))
    spec = LoopSpec(tuple("contig" for _ in c.kernel.params), value="sum", partials=True, seed="scalar")
    source = cuda.lower(kmod, spec, dtype)
    for fn in ("sinc", "fmax", "logaddexp", "logaddexp2", "heaviside", "angle"):
        assert fn in source
    name = cuda.driver_name(kmod, spec, cuda.dtype_tag(dtype))
    ptx = cuda.compile_ptx(source, name, arch="sm_90")
    assert f".entry {name}(" in ptx


@pytest.mark.parametrize("shape", [(0,), (), (2, 0)])
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_empty_and_zero_dimensional_operands(name, shape):
    f, arity = FUNCS[name]
    args = [np.full(shape, 0.7 + 0.4 * k) for k in range(arity)]

    def loss1(x):
        return np.sum(np.sin(f(x)))

    def loss2(x, y):
        return np.sum(np.sin(f(x, y)))
    loss = loss1 if arity == 1 else loss2
    grads = s2sad.grad(loss, argnums=tuple(range(arity)))(*args)
    h = 1e-6
    for i, g in enumerate(grads):
        assert np.shape(g) == shape
        if shape == ():
            up, down = list(args), list(args)
            up[i], down[i] = args[i] + h, args[i] - h
            assert float(g) == pytest.approx((loss(*up) - loss(*down)) / (2 * h), abs=1e-7)


def parts_as_attributes(x):
    return np.sum(np.sin(x.real) * x.conj() + x.imag + np.cos(x.conjugate()))


@pytest.mark.parametrize("backend", ["python", "llvm"])
def test_real_imag_conj_as_attributes_and_methods_of_a_real_array(backend):
    x = np.array([0.3, -1.2, 2.0])
    value, g = s2sad.value_and_grad(parts_as_attributes, backend=backend)(x)
    assert value == pytest.approx(parts_as_attributes(x), rel=1e-14)
    np.testing.assert_allclose(g, np.cos(x) * x + np.sin(x) - np.sin(x), rtol=1e-13)

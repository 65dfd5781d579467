"""value_and_grad's value has its loss's dtype, as JAX gives a 0-d array of it: a
float32 loss (float32 arrays in) gives np.float32, on every path (the unrolled small
plan, the fused kernel, the array program, their warm hot paths, containers, has_aux,
a method, dask), equal to what f gives to float32's precision; a float64 loss stays a
Python float (session 11's rule; np.float64 is one). Before session 12 a float32 loss's
value was a Python float (its dtype lost)."""
from collections import OrderedDict

import numpy as np
import pytest

import s2sad
from test_trust_s11_value_type import dotted, fused, meaned, rosen, with_aux   # (the value-type losses, written once)


def scaled(x, s):
    return np.sum(np.sin(x) * s)


def from_dict(p):
    return np.sum(np.tanh(p["w"]) * p["b"])


FUNS = [rosen, fused, dotted, meaned]


def _is32(v, want):
    assert type(v) is np.float32, type(v)
    assert v == pytest.approx(float(want), rel=1e-5)


@pytest.mark.parametrize("n", [5, 200], ids=["unrolled-size", "general-size"])
@pytest.mark.parametrize("fun", FUNS, ids=lambda f: f.__name__)
def test_a_float32_loss_gives_a_float32_value_on_every_path(backend, fun, n):
    x = np.linspace(0.1, 0.9, n, dtype=np.float32)
    vg = s2sad.value_and_grad(fun, backend=backend)
    for _ in range(4):      # first call, then the warm / hot paths
        v, g = vg(x)
        _is32(v, fun(x))
        assert g.dtype == np.float32
    v64, _ = vg(x.astype(np.float64))       # the same grad object, float64 data: a Python float
    assert type(v64) is float and v64 == pytest.approx(float(fun(x.astype(np.float64))), rel=1e-12)
    _is32(vg(x)[0], fun(x))


def test_python_numbers_beside_do_not_count_and_float64_arrays_do(backend):
    x = np.linspace(0.1, 0.9, 50, dtype=np.float32)
    vg = s2sad.value_and_grad(scaled, backend=backend)
    for _ in range(2):
        _is32(vg(x, 2.0)[0], scaled(x, np.float32(2.0)))
        v = vg(x, np.float64(2.0))[0]
        assert type(v) is float
        v = vg(x, np.full(50, 2.0))[0]
        assert type(v) is float and v == pytest.approx(scaled(x, np.full(50, 2.0)), rel=1e-6)


def test_containers_has_aux_and_methods(backend):
    w = np.linspace(-0.5, 1.0, 30, dtype=np.float32)
    for p in ({"w": w, "b": np.float32(0.5)}, OrderedDict([("w", w), ("b", np.float32(0.5))])):
        vg = s2sad.value_and_grad(from_dict, backend=backend)
        for _ in range(3):
            _is32(vg(p)[0], from_dict(p))
    for _ in range(2):
        (v, aux), g = s2sad.value_and_grad(with_aux, has_aux=True, backend=backend)(w)
        _is32(v, w @ w)
        assert g.dtype == np.float32

    class Model:
        def loss(self, x):
            return np.sum(x ** 2)
    for _ in range(2):
        _is32(s2sad.value_and_grad(Model().loss, backend=backend)(w)[0], np.sum(w ** 2))


def test_grad_alone_is_unchanged():
    x = np.linspace(0.1, 0.9, 20, dtype=np.float32)
    for _ in range(2):
        g = s2sad.grad(fused)(x)
        assert type(g) is np.ndarray and g.dtype == np.float32


def test_a_count_stays_an_int():
    def counted(x):
        return np.sum(x > 0.5) + 0.0 * np.sum(x)
    v, _ = s2sad.value_and_grad(counted)(np.linspace(0.0, 1.0, 10, dtype=np.float32))
    assert v == pytest.approx(5.0)


def test_dask():
    da = pytest.importorskip("dask.array")
    x = np.linspace(-1.0, 1.0, 40, dtype=np.float32)
    v, g = s2sad.value_and_grad(fused)(da.from_array(x, chunks=10))
    _is32(v, fused(x))

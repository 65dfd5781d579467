"""Arrays in non-native byte order (session 13, trust brief 2).

A big-endian '>f4' array is float32 to numpy (np.tanh of one gives native float32);
s2sad's dtype choices compared the dtype with np.float32, which a '>f4' is not, so
s2sad.broadcast, value_and_grad's value and jvp gave float64 for it. Every route on a
byte-swapped array now gives what it gives on the native array of the same numbers:
the same dtype (up to byte order, which only a gradient keeps: it has its argument's
dtype) and the same numbers; integers and bools byte-swapped are refused or converted as
their native twins are.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad

X = np.linspace(-1.1, 1.3, 7)
RNG = np.random.default_rng(3)
W = RNG.normal(size=(3, 7))


def loss(x):
    return np.sum(np.tanh(x) * x)


def elem(v):
    return np.tanh(v) * 2.0 + v * v


def two(a, b):
    return a * b + np.sin(a)


def mlp(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


ROUTES = {
    "grad": lambda x: s2sad.grad(loss)(x),
    "value": lambda x: s2sad.value_and_grad(loss)(x)[0],
    "value_and_grad": lambda x: s2sad.value_and_grad(loss)(x)[1],
    "broadcast": lambda x: s2sad.broadcast(elem, x),
    "broadcast_2d": lambda x: s2sad.broadcast(two, np.stack([x, x[::-1]]), x),
    "broadcast_float": lambda x: s2sad.broadcast(two, x, 0.5),
    "jvp": lambda x: s2sad.jvp(elem, (x,), (np.ones_like(x),))[1],
    "jvp_value": lambda x: s2sad.jvp(elem, (x,), (np.ones_like(x),))[0],
    "vjp": lambda x: s2sad.vjp(elem, x)[1](np.ones_like(x))[0],
    "hessian": lambda x: s2sad.hessian(loss)(x),
    "array_grad": lambda x: s2sad.grad(mlp, argnums=(0, 1))(W.astype(x.dtype), x),
    "array_value": lambda x: s2sad.value_and_grad(mlp)(W.astype(x.dtype), x)[0],
}

FLOATS = [">f4", ">f8", ">f2"]
RTOL = {">f4": 1e-6, ">f8": 1e-14, ">f2": 1e-3}


def native(dt):
    return np.dtype(dt).newbyteorder("=")


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("dt", FLOATS)
def test_swapped_floats_as_their_native_twins(route, dt):
    x = X.astype(dt)
    want = ROUTES[route](X.astype(native(dt)))
    for _ in range(3):      # (cold and warm)
        got = ROUTES[route](x)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert np.asarray(g).dtype.newbyteorder("=") == np.asarray(w).dtype
            assert type(g) is type(w)
            # (the same numbers up to rounding: a swapped array may take another loop than
            # its native twin, s2sad's own gemm or numpy's, which add in another order)
            np.testing.assert_allclose(np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64),
                                       rtol=RTOL[dt], atol=RTOL[dt])


@pytest.mark.parametrize("dt", [">f4", ">f8"])
def test_broadcast_matches_numpys_dtype(dt):
    x = X.astype(dt)
    assert s2sad.broadcast(elem, x).dtype == elem(x).dtype
    assert s2sad.broadcast(two, x, x.astype(native(dt))).dtype == two(x, x.astype(native(dt))).dtype
    np.testing.assert_allclose(s2sad.broadcast(elem, x), elem(x), rtol=1e-6 if dt == ">f4" else 1e-15)


def test_mixed_widths_and_orders_widen_as_numpy():
    a, b = X.astype(">f4"), X.astype("<f8")
    assert s2sad.broadcast(two, a, b).dtype == two(a, b).dtype == np.float64
    assert s2sad.value_and_grad(lambda u, v: np.sum(u * v), argnums=(0, 1))(a, b)[0].__class__ is float


@pytest.mark.parametrize("dt", [">i4", ">i8", ">i2", ">u2", ">u4"])
def test_swapped_integers_as_their_native_twins(dt):
    x = (np.arange(7) - 2).astype(dt) if dt[1] == "i" else np.arange(7).astype(dt)
    nat = x.astype(native(dt))
    got, want = s2sad.broadcast(elem, x), s2sad.broadcast(elem, nat)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.grad(loss)(x)
    with pytest.raises(type(e.value)):
        s2sad.grad(loss)(nat)
    assert "test_trust_s13_byteorder.py" in str(e.value)


def test_swapped_complex_refused_as_native():
    for dt in (">c8", ">c16"):
        with pytest.raises(s2sad.S2SADError):
            s2sad.grad(loss)(X.astype(dt))
        with pytest.raises(s2sad.S2SADError):
            s2sad.broadcast(elem, X.astype(dt))


@pytest.mark.parametrize("dt", ["<f4", ">f4"])
def test_a_python_float_is_weak_beside_float32_on_every_layout(dt):
    """numpy 2 (NEP 50): float32 array * 0.5 is float32. The fast path (a contiguous
    array) gave float32, the general one (a strided or swapped array) float64."""
    x = np.linspace(-1, 1, 14).astype(dt)
    for a in (x, x[::2], x.reshape(2, 7).T):
        assert s2sad.broadcast(two, a, 0.5).dtype == two(a, 0.5).dtype == np.float32
        np.testing.assert_allclose(s2sad.broadcast(two, a, 0.5), two(a, 0.5), rtol=1e-6)
        g = s2sad.grad(lambda u: np.sum(two(u, 0.5)))(a)
        assert g.dtype == a.dtype
        np.testing.assert_allclose(g, 0.5 + np.cos(a.astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize("dt", [">f4", ">f8"])
def test_a_gradients_tangent_keeps_its_byte_order(dt):
    """grad keeps its argument's dtype, byte order included; so do jvp(grad)'s output and
    tangent and hvp's product (they came back native), on the fused and array paths, for
    one argument and several; the numbers are the native twin's."""
    cases = [lambda w, a, b: s2sad.jvp(s2sad.grad(loss), (a,), (b,)),
             lambda w, a, b: (s2sad.hvp(loss, (a,), (b,)),),
             lambda w, a, b: s2sad.jvp(s2sad.grad(mlp), (w, a), (w, b)),
             lambda w, a, b: s2sad.hvp(mlp, (w, a), (w, b), argnums=(0, 1)),
             lambda w, a, b: (s2sad.hvp(mlp, (w, a), (w, b), argnums=1),)]
    for fn in cases:
        got = fn(W.astype(dt), X.astype(dt), np.cos(X).astype(dt))
        want = fn(W.astype(native(dt)), X.astype(native(dt)), np.cos(X).astype(native(dt)))
        flat = [g for part in got for g in (part if isinstance(part, tuple) else (part,))]
        flat_want = [g for part in want for g in (part if isinstance(part, tuple) else (part,))]
        assert len(flat) == len(flat_want) >= 1
        for g, wnt in zip(flat, flat_want):
            assert type(g) is np.ndarray and g.dtype == np.dtype(dt) and wnt.dtype == native(dt)
            np.testing.assert_allclose(g.astype(np.float64), wnt.astype(np.float64), rtol=RTOL[dt], atol=RTOL[dt])

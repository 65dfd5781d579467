"""Kept calls and odd float dtypes (session 12, hostile pass).

A kernel site keeps, per `runtime.plain_signature` of its operands, the call that repeats
its launch without `prepare` (which converts what is not a native float32/float64 array).
The signature keyed a float dtype by its number and kind only, so a byte-swapped ('>f8',
'>f4'), float16 or long double operand, converted by `prepare` on its first call, was
handed to the kept call AS IT IS on the next one: its bytes read as native doubles.
s2sad.broadcast answered [1, 1] for v * v + 1 at [1, 1.33] in long double, 1.4e206 for a
'>f8' element, and grad of a loss whose data argument was '>f8' or float16 returned
another gradient (NaN for float16) from its second call on: silent wrong numbers.
"""
import numpy as np
import pytest

import s2sad



def plus_one(v):
    return v * v + 1.0


def data_through_a_kernel(w, X):
    h = np.sin(X) * 2.0
    return np.sum(h @ w)


@pytest.mark.parametrize("dtype", ["<f2", ">f8", ">f4"])      # (long double: refused, broadcast_numbers)
def test_broadcast_of_an_odd_float_dtype_follows_numpy_on_every_call(dtype):
    x = np.linspace(1.0, 2.0, 4).astype(dtype)
    want = plus_one(np.asarray(x, dtype=np.float64))
    for _ in range(3):      # the first call keeps the launch; the later ones ran it on x's raw bytes
        np.testing.assert_allclose(s2sad.broadcast(plus_one, x), want, rtol=1e-3)


@pytest.mark.parametrize("dtype", ["<f2", ">f8", ">f4"])
def test_grad_with_an_odd_float_data_argument_on_every_call(dtype):
    rng = np.random.default_rng(0)
    w, X = rng.normal(size=3), rng.normal(size=(5, 3)).astype(dtype)
    before = X.copy()
    want = np.sum(np.sin(np.asarray(X, dtype=np.float64)) * 2.0, axis=0)
    g = s2sad.grad(data_through_a_kernel)
    for _ in range(4):      # full path, hot path, specialised copy
        got = g(w, X)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(X, before)
    assert X.dtype == np.dtype(dtype)


def test_a_native_signature_seen_first_is_not_taken_by_a_swapped_one():
    """The kept call of float64 operands, then the same shapes byte-swapped."""
    x = np.linspace(1.0, 2.0, 4)
    for _ in range(3):
        s2sad.broadcast(plus_one, x)
    swapped = x.astype(">f8")
    np.testing.assert_allclose(s2sad.broadcast(plus_one, swapped), plus_one(x), rtol=1e-15)
    np.testing.assert_allclose(s2sad.broadcast(plus_one, x), plus_one(x), rtol=1e-15)

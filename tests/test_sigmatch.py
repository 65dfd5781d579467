"""sigmatch: the compiled matcher of a call's signature (array_hot asks it first) says
True exactly where comparing signature_of(args) with the signature would, the dtype by
identity: checked against the Python comparison on hostile arguments (other counts,
types, subclasses, dtypes, shapes, strides, 0-d, empty, views) and on random arrays;
it leaks no reference and keeps its dtypes alive.
"""
from __future__ import annotations

import gc
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import s2sad
from s2sad import sigmatch

needs_compiled = pytest.mark.skipif(sigmatch.matcher(()) is None, reason="no compiled matcher in this process")


def python_says(sig, args) -> bool:
    return (all(type(a) is np.ndarray for a in args) and len(args) * 3 == len(sig)
            and all(x is y if isinstance(y, np.dtype) else x == y for x, y in zip(sigmatch.signature_of(args), sig)))


class Sub(np.ndarray):
    pass


def base_args():
    return np.zeros((4, 3)), np.ones((1, 3), np.float32), np.arange(5)


def hostile(args):
    a, b, c = args
    yield args[:2]
    yield args + (a,)
    yield ()
    yield (a, b, 1.0)
    yield (a, b, list(c))
    yield (a, b, None)
    yield (a.view(Sub), b, c)
    yield (a, b, c.astype(np.int32))
    yield (a, b.astype(np.float64), c)
    yield (a.astype(np.dtype(">f8")), b, c)
    yield (np.asfortranarray(a), b, c)
    yield (np.zeros((3, 4)).T, b, c)            # the shape, other strides
    yield (np.zeros((4, 6))[:, ::2], b, c)
    yield (a.reshape(3, 4), b, c)
    yield (a[None], b, c)
    yield (a, b.reshape(3, 1), c)
    yield (a, b, c[:4])
    yield (a, b, np.zeros(0, c.dtype))
    yield (a, b, np.array(1))
    yield (a[:, :], b[:], c[:])                 # views of the same signature: a match
    yield (a.copy(), b.copy(), c.copy())


@needs_compiled
def test_agrees_with_the_python_comparison_on_hostile_arguments():
    args = base_args()
    sig = sigmatch.signature_of(args)
    m = sigmatch.matcher(sig)
    assert m(*args) is True
    for other in hostile(args):
        assert m(*other) is python_says(sig, other), other
        assert sigmatch.python_matcher(sig)(*other) is python_says(sig, other), other


@needs_compiled
def test_zero_dimensional_and_empty_signatures():
    x0, e = np.array(2.0), np.zeros((0, 3))
    m = sigmatch.matcher(sigmatch.signature_of((x0, e)))
    assert m(np.array(5.0), np.zeros((0, 3)))
    assert not m(np.array([5.0]), np.zeros((0, 3)))
    assert not m(np.array(5.0), np.zeros((3, 0)))
    assert not m(np.array(5.0), 2.0)
    assert sigmatch.matcher(())() and not sigmatch.matcher(())(x0)


@needs_compiled
def test_an_equal_dtype_of_another_object_is_a_miss_never_a_match():
    meta = np.dtype(np.float64, metadata={"unit": "m"})
    a = np.zeros(3, meta)
    assert a.dtype == np.float64 and a.dtype is not np.dtype(np.float64)
    m = sigmatch.matcher(sigmatch.signature_of((np.zeros(3),)))
    assert not m(a) and m(np.zeros(3))


@needs_compiled
@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 4), max_size=3), st.sampled_from(["f8", "f4", "i8", "?"]),
                          st.booleans()), min_size=0, max_size=4), st.integers(0, 2**31))
def test_random_arrays_against_the_python_comparison(specs, seed):
    rng = np.random.default_rng(seed)

    def make(shape, dt, fortran):
        a = np.zeros(shape, dt)
        return np.asfortranarray(a) if fortran else a
    args = tuple(make(*s) for s in specs)
    sig = sigmatch.signature_of(args)
    m = sigmatch.matcher(sig)
    assert m(*args)
    others = [tuple(make(*s) for s in specs)]
    if specs:
        k = int(rng.integers(len(specs)))
        shape, dt, fortran = specs[k]
        others.append(args[:k] + (make(shape + [1], dt, fortran),) + args[k + 1:])
        others.append(args[:k] + (make(shape, "f2", fortran),) + args[k + 1:])
        others.append(args[:k] + (make(shape, dt, not fortran),) + args[k + 1:])
    for other in others:
        assert m(*other) is python_says(sig, other)


@needs_compiled
def test_no_reference_leaks_and_the_dtypes_live_with_it():
    a = np.zeros(3, np.dtype(np.float64, metadata={"k": 1}))
    m = sigmatch.matcher(sigmatch.signature_of((a,)))
    dtype_id = id(a.dtype)
    del a
    gc.collect()
    b = np.zeros(2)
    before = sys.getrefcount(True), sys.getrefcount(False), sys.getrefcount(b)
    for _ in range(1000):
        m(b), m(np.zeros(3))
    assert (sys.getrefcount(True), sys.getrefcount(False), sys.getrefcount(b)) == before
    assert id(m.__module__.signature[2]) == dtype_id     # held by the matcher


def test_the_hot_path_takes_an_equal_dtype_of_another_object():
    meta = np.dtype(np.float64, metadata={"unit": "m"})

    def loss(W, X):
        return np.sum(np.tanh(X @ W))
    rng = np.random.default_rng(1)
    W, X = rng.normal(size=(5, 3)), rng.normal(size=(8, 5))
    Wm, Xm = W.astype(meta), X.astype(meta)
    g = s2sad.grad(loss)
    want = X.T @ (1.0 - np.tanh(X @ W) ** 2)
    for _ in range(4):      # the two dtype objects alternate: each call right
        np.testing.assert_allclose(g(W, X), want, rtol=1e-13)
        np.testing.assert_allclose(g(Wm, Xm), want, rtol=1e-13)

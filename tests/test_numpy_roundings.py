"""numpy's roundings (np.floor, ceil, trunc, rint, round) give floats where math's give ints:
the value of np.sum(np.floor(x)) is numpy's float64 (a NaN element gives nan, not a raw
ValueError from turning the sum into an int), on both backends."""
import math

import numpy as np
import pytest

import s2sad


def s_floor(x):
    return np.sum(np.floor(x))


def s_ceil(x):
    return np.sum(np.ceil(x))


def s_trunc(x):
    return np.sum(np.trunc(x))


def s_rint(x):
    return np.sum(np.rint(x))


def s_round(x):
    return np.sum(np.round(x))


def s_floor_log(x):
    return np.sum(np.floor(np.log(x)))


def m_floor(x):
    return math.floor(x) * x


@pytest.mark.parametrize("backend", ["python", "llvm"])
@pytest.mark.parametrize("loss", [s_floor, s_ceil, s_trunc, s_rint, s_round, s_floor_log])
@pytest.mark.parametrize("x", [[1.5, 2.5, -3.0], [1.5, np.nan], [1e30, 2.5], [-1.0, 0.5]])
def test_the_value_is_numpys_float(backend, loss, x):
    x = np.array(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = loss(x)
    value, g = s2sad.value_and_grad(loss, backend=backend)(x)
    assert isinstance(value, float) and not isinstance(value, bool)
    np.testing.assert_array_equal(value, want)
    np.testing.assert_array_equal(g, np.zeros_like(x))


@pytest.mark.parametrize("backend", ["python", "llvm"])
def test_math_floor_stays_python_int_valued(backend):
    value, g = s2sad.value_and_grad(m_floor, backend=backend)(2.5)
    assert value == 5.0 and g == 2.0

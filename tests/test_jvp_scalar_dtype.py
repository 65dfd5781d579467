"""jvp of a scalar function gives its output and tangent in the function's dtype, as
value_and_grad's value (arguments.value_like_arguments): np.float32 for float32
arguments (it gave Python floats, float64, where the elementwise jvp and grad already
kept float32), Python floats otherwise. The numbers are the same as before."""
import numpy as np
import pytest

import s2sad


def summed(x):
    return np.sum(np.sin(x) * x)


def two(x, w):
    return np.sum(np.tanh(w * x))


X64 = np.linspace(0.1, 1.0, 7)
X32 = X64.astype(np.float32)


def test_float32_arguments_give_float32_output_and_tangent():
    out, tan = s2sad.jvp(summed, (X32,), (np.ones_like(X32),))
    assert type(out) is np.float32 and type(tan) is np.float32
    want_out, want_tan = summed(X64), float(np.sum(np.cos(X64) * X64 + np.sin(X64)))
    assert out == pytest.approx(want_out, rel=1e-6) and tan == pytest.approx(want_tan, rel=1e-6)


def test_float64_and_python_floats_stay_python_floats():
    for x in (X64, 0.4):
        out, tan = s2sad.jvp(summed, (x,), (np.ones_like(x) if isinstance(x, np.ndarray) else 1.0,))
        assert type(out) is float and type(tan) is float


def test_a_float64_argument_beside_float32_gives_python_floats():
    out, tan = s2sad.jvp(two, (X32, np.float64(0.5)), (np.ones_like(X32), 0.0))
    assert type(out) is float and type(tan) is float
    out32, tan32 = s2sad.jvp(two, (X32, np.float32(0.5)), (np.ones_like(X32), np.float32(0.0)))
    assert type(out32) is np.float32 and out32 == pytest.approx(out, rel=1e-6)
    assert tan32 == pytest.approx(tan, rel=1e-6)

"""s2sad.broadcast outside a loss, given numbers its kernel would change (session 12,
hostile pass).

grad refuses complex and long double arguments; s2sad.broadcast took them: a complex
array came back as float64 with its imaginary part dropped (a raw ComplexWarning and a
silent wrong number), a long double one rounded to float64. Now both are a located
NonDifferentiableInputError at the function's def, on numpy and dask arrays alike; a
numpy ufunc is still numpy's to apply (complex included), and every other dtype keeps
numpy's answer, checked here against numpy's own evaluation.
"""
import math

import numpy as np
import pytest

import s2sad


def softplus(x, a=2.0):
    return math.log1p(math.exp(a * x)) if x < 20 else a * x


def poly(v):
    return v * v + 1.0


LOSSY = {
    "complex array": lambda: np.linspace(-1, 1, 5) + 0.5j,
    "complex64 array": lambda: (np.linspace(-1, 1, 5) + 0.5j).astype(np.complex64),
    "long double array": lambda: np.linspace(-1, 1, 5).astype(np.longdouble),
    "complex number": lambda: 1.0 + 2.0j,
    "complex list": lambda: [1.0, 2.0j],
    "long double scalar": lambda: np.longdouble(1.5),
}


@pytest.mark.parametrize("fun", [softplus, poly, lambda v: abs(v) + 1.0])
@pytest.mark.parametrize("what", list(LOSSY))
def test_numbers_the_kernel_would_change_are_refused_at_the_def(fun, what):
    with pytest.raises(s2sad.NonDifferentiableInputError) as e:
        s2sad.broadcast(fun, LOSSY[what]())
    assert e.value.location is not None and e.value.location.lineno == fun.__code__.co_firstlineno
    assert "float64" in e.value.hint


def test_a_lossy_second_argument_is_refused_too():
    with pytest.raises(s2sad.NonDifferentiableInputError, match="argument 1"):
        s2sad.broadcast(softplus, np.ones(3), np.ones(3, dtype=complex))


def test_dask_arrays_of_complex_or_long_double_are_refused_before_any_task():
    da = pytest.importorskip("dask.array")
    for dtype in (complex, np.longdouble):
        x = da.from_array(np.linspace(1, 2, 4).astype(dtype), chunks=2)
        with pytest.raises(s2sad.NonDifferentiableInputError):
            s2sad.broadcast(poly, x)


def test_a_numpy_ufunc_still_applies_to_complex_numbers_as_numpy_does():
    z = np.linspace(-1, 1, 5) + 0.5j
    np.testing.assert_array_equal(s2sad.broadcast(np.sin, z), np.sin(z))


@pytest.mark.parametrize("dtype", ["f8", "f4", "<f2", ">f8", "i8", "u1", "?"])
def test_other_dtypes_keep_numpys_answer(dtype):
    x = np.linspace(-3, 3, 7).astype(dtype)
    want = np.array([softplus(float(v)) for v in x])
    for _ in range(2):
        np.testing.assert_allclose(s2sad.broadcast(softplus, x), want, rtol=1e-3 if "4" in dtype or "2" in dtype
                                   else 1e-13)


@pytest.mark.parametrize("value", [None, "2", object(), np.datetime64("2020-01-01"), np.array(["a", "b"])],
                         ids=["None", "str", "object", "datetime", "str array"])
def test_values_that_are_no_numbers_are_refused_at_the_def(value):
    """None was read as NaN and "2" as 2.0, where numpy's arithmetic refuses both."""
    def times(a, b):
        return a * b
    with pytest.raises(s2sad.NonDifferentiableInputError, match="argument 1") as e:
        s2sad.broadcast(times, np.ones(2), value)
    assert e.value.location.lineno == times.__code__.co_firstlineno

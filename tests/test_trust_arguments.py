"""A number given where the function needs an array (session 8, trust): `grad(neighbours)(0.5)`
for `np.sum(a[1:] * a[:-1])` raised a raw TypeError from the generated code (IndexError for a
numpy scalar or a 0-d array, AttributeError for `a.shape[0]`, TypeError for `len(a)`), through
every entry point, and the hot path took the number after an array call had made it. Now each
is a located ShapeError at the use (arguments.check_dimensions, paramuses.array_uses); a
function that uses its argument whole still takes a number."""
import warnings

import numpy as np
import pytest

import s2sad
from s2sad.errors import ShapeError
from conftest import central_fd


def neighbours(a):
    return np.sum(a[1:] * a[:-1])


def first_item(a):
    return a[0] * 2.0 + np.sum(a ** 2)


def by_length(a):
    s = 0.0
    for i in range(len(a)):
        s = s + a[i] ** 2
    return s


def by_dimension(a):
    return np.sum(a ** 2) * a.shape[0]


def over_rows(a):
    s = 0.0
    for r in a:
        s = s + np.sum(r ** 2)
    return s


def data_indexed(w, X):
    return np.sum(np.tanh(w * X[0]))


def whole(a):
    return np.sum(np.tanh(a))


def whole_index(a):
    return np.sum(np.tanh(a[...])) + a[()] * 0.0


def rebound_first(a):
    a = np.atleast_1d(a)
    return np.sum(a[:1] ** 2)


def guarded(a):
    if np.ndim(a) == 0:
        return a ** 2
    return np.sum(a[1:] ** 2)


USES = {neighbours: "indexes it", first_item: "indexes it", by_length: "takes its length",
        by_dimension: "reads a dimension of it", over_rows: "loops over it"}
NUMBERS = [0.5, np.float64(0.5), np.float32(0.5), np.array(0.5)]
ENTRIES = {
    "grad": lambda f, a: s2sad.grad(f)(a),
    "value_and_grad": lambda f, a: s2sad.value_and_grad(f)(a),
    "jvp": lambda f, a: s2sad.jvp(f, (a,), (a,)),
    "vjp": lambda f, a: s2sad.vjp(f, a)[1](1.0),
    "hessian": lambda f, a: s2sad.hessian(f)(a),
    "jacfwd": lambda f, a: s2sad.jacfwd(f)(a),
    "jacrev": lambda f, a: s2sad.jacrev(f)(a),
    "grad python": lambda f, a: s2sad.grad(f, backend="python")(a),
}


@pytest.mark.parametrize("f", list(USES), ids=lambda f: f.__name__)
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_a_number_where_an_array_is_used_is_a_located_refusal(f, entry):
    for a in NUMBERS:
        with pytest.raises(ShapeError) as info:
            ENTRIES[entry](f, a)
        msg = str(info.value)
        assert "test_trust_arguments.py:" in msg and USES[f] in msg and "np.atleast_1d(a)" in msg


@pytest.mark.parametrize("f", list(USES), ids=lambda f: f.__name__)
def test_the_hot_path_does_not_take_a_number_after_an_array(f):
    g = s2sad.grad(f)
    x = np.array([0.5, -1.0, 2.0])
    for _ in range(3):      # the full path, then the hot path and its specialised copy
        np.testing.assert_allclose(g(x), central_fd(f, [x], 0), rtol=1e-6)
    for a in NUMBERS:
        with pytest.raises(ShapeError):
            g(a)
    np.testing.assert_allclose(g(x), central_fd(f, [x], 0), rtol=1e-6)


def test_a_data_argument_given_as_a_number_is_refused_too():
    g = s2sad.grad(data_indexed)
    X = np.array([[0.5, 1.0], [2.0, 3.0]])
    np.testing.assert_allclose(g(0.3, X), central_fd(data_indexed, [0.3, X], 0), rtol=1e-6)
    np.testing.assert_allclose(g(0.3, X), central_fd(data_indexed, [0.3, X], 0), rtol=1e-6)
    with pytest.raises(ShapeError, match="argument 'X'"):
        g(0.3, 2.0)


@pytest.mark.parametrize("f", [whole, rebound_first, guarded], ids=lambda f: f.__name__)
def test_numbers_still_taken_where_the_function_runs_on_them(f):
    for a in [0.5, np.float64(0.5), np.array(0.5)]:
        got = s2sad.grad(f)(a)
        assert float(got) == pytest.approx(float(central_fd(f, [float(a)], 0)), rel=1e-6)


def test_a_whole_index_takes_numpy_numbers_not_a_python_float():
    g = s2sad.grad(whole_index)
    for a in [np.float64(0.5), np.array(0.5)]:
        assert float(g(a)) == pytest.approx(1 - np.tanh(0.5) ** 2, rel=1e-12)
    with pytest.raises(ShapeError, match="indexes it"):
        g(0.5)


def squares(v):
    return np.sum(v ** 2)


def scaled(w, X):
    return np.sum((X * w) ** 2)


MASKED = np.ma.array([1.0, 2.0], mask=[0, 1])
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)
    MATRIX = np.matrix([[1.0, 2.0]])


@pytest.mark.parametrize("f,args", [(squares, (MASKED,)), (scaled, (1.0, MASKED)), (neighbours, (MASKED,)),
                                    (squares, (MATRIX,))], ids=["sum", "data", "array", "matrix"])
def test_masked_arrays_and_matrices_are_refused_not_read_as_plain_arrays(f, args):
    """numpy leaves masked elements out of the sum (the loss is 1.0 here) and reads ** on a
    matrix as a matrix power: s2sad computed 5.0 and the gradient of the plain array."""
    from s2sad.errors import NonDifferentiableInputError
    g = s2sad.grad(f)
    plain = tuple(np.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    for _ in range(3):      # the full path, then the hot paths: they decline a subclass
        g(*plain)
    for call in (lambda: g(*args), lambda: s2sad.value_and_grad(f)(*args), lambda: s2sad.jvp(f, args, args)):
        with pytest.raises(NonDifferentiableInputError, match="masked array|np.matrix") as info:
            call()
        assert "test_trust_arguments.py:" in str(info.value)


def repeated(a):
    return np.sum(np.tanh(a * 2))


def joined(a):
    return np.sum(np.tanh(a + a))


def shifted_product(a):
    return np.sum(a[1:] * a[:-1])


def as_array(a):
    return np.sum(np.tanh(np.asarray(a) * 2))


@pytest.mark.parametrize("f", [repeated, joined, shifted_product], ids=lambda f: f.__name__)
def test_a_list_under_an_operator_is_not_read_as_an_array(f):
    """`a * 2` repeats a list and `a + a` joins it: s2sad read the list as numpy's array
    and returned 1.726 (and its gradient) where the function's value is 2.447; `a[1:] *
    a[:-1]` raises for lists and s2sad returned a gradient."""
    for a in ([0.5, 1.0], (0.5, 1.0)):
        with pytest.raises(s2sad.S2SADError, match="a list or tuple is used here") as info:
            s2sad.value_and_grad(f)(a)
        assert "test_trust_arguments.py:" in str(info.value) and "np.asarray" in str(info.value)


def test_a_list_used_whole_is_still_numpys_array():
    v, g = s2sad.value_and_grad(as_array)([0.5, 1.0])
    assert v == pytest.approx(as_array([0.5, 1.0]))
    assert type(g) is list
    np.testing.assert_allclose(g, 2 * (1 - np.tanh(2 * np.array([0.5, 1.0])) ** 2), rtol=1e-12)
    np.testing.assert_allclose(s2sad.grad(by_length)([0.5, 1.0, 2.0]), [1.0, 2.0, 4.0])


def list_times_array(a, x):
    return np.sum(np.tanh(a * x)) + np.sum(np.asarray(a) @ x)


def test_a_list_beside_an_array_takes_numpys_operator():
    """list * ndarray and list @ ndarray run numpy's operators (ndarray's reflected ones):
    read as an array, as before."""
    a, x = [0.5, 1.0], np.array([2.0, -1.0])
    g = s2sad.grad(list_times_array)(a, x)
    want = x * (1 - np.tanh(np.array(a) * x) ** 2) + x
    assert type(g) is list
    np.testing.assert_allclose(g, want, rtol=1e-12)

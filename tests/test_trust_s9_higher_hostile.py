"""A hostile user's pass over hessian / jacfwd / jacrev / jacobian / hvp / jvp (session
9). Each case was a raw exception, a misleading or unlocated message, or a number where
Python (or grad) refuses; each is now right or a located S2SADError:
- keyword arguments to a Jacobian/Hessian function: raw TypeError ("unexpected keyword
  argument 'y'" for a parameter the function has); now bound as Python binds them, and a
  wrong one is an ArgumentError at the user's function;
- argnums=True / 1.0 / None / 'x' to jacfwd/jacrev: "out of range"; now "must be an int";
- a list argument: hessian and jacrev(grad) gave a matrix for a function Python refuses
  (`x ** 3` on a list), jacfwd a tree-structure message, hessian of an array program a
  raw TypeError; jvp(grad(f), (list,)) a number where grad(f)(list) refuses;
- a complex tangent to jvp / hvp: its imaginary part silently dropped (a wrong number);
  a string tangent: raw ValueError; a complex number: raw TypeError;
- hvp(f, x, v) with arrays, not tuples: the rows taken as primals, an error located in
  s2sad's generated file; a call with too many arguments located there too;
- a dask call with argnums out of range: raw IndexError; its dtype refusal unlocated;
- hessian(3): "s2sad.grad needs a function" (the entry point the user did not call)."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import ArgumentError, NonDifferentiableInputError, S2SADError

X = np.array([1.0, 2.0])
Y = np.array([3.0, 4.0])
ENTRIES = ["hessian", "jacfwd", "jacrev", "jacobian"]


def two(x, y):
    return np.sum(x ** 2 * y)


def cubes(x):
    return np.sum(x ** 3)


def sorted_cubes(x):     # (an array program: indexing)
    return np.sum(x[::-1] ** 3)


def by_index(x):
    return x[0] * x[1] ** 2


def _here(e, fun):
    assert e.value.location is not None and e.value.location.filename == __file__
    assert e.value.location.lineno == fun.__code__.co_firstlineno


@pytest.mark.parametrize("entry", ENTRIES)
def test_keyword_arguments_are_bound_as_python_binds_them(entry, backend):
    E = getattr(s2sad, entry)
    np.testing.assert_array_equal(E(two, backend=backend)(X, y=Y), E(two, backend=backend)(X, Y))
    np.testing.assert_array_equal(E(two, argnums=1, backend=backend)(X, y=Y), E(two, argnums=1, backend=backend)(X, Y))
    np.testing.assert_array_equal(E(two, backend=backend)(x=X, y=Y), E(two, backend=backend)(X, Y))


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("args, kwargs, says", [((X,), {"z": Y}, "unexpected keyword argument 'z'"),
                                                ((X, Y, Y), {}, "takes 2 positional arguments but 3"),
                                                ((X,), {}, "missing 1 required positional argument: 'y'"),
                                                ((X,), {"x": X}, "multiple values for argument 'x'")])
def test_a_call_the_function_would_not_take_is_located_at_it(entry, args, kwargs, says):
    with pytest.raises(ArgumentError, match=says) as e:
        getattr(s2sad, entry)(two)(*args, **kwargs)
    _here(e, two)
    assert isinstance(e.value, TypeError)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("argnums", [True, 1.0, None, "x", (0, False)])
def test_argnums_that_are_not_ints_say_so(entry, argnums):
    with pytest.raises(S2SADError, match="argnums must be an int or a tuple of ints") as e:
        getattr(s2sad, entry)(two, argnums=argnums)(X, Y)
    _here(e, two)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("argnums", [2, -3, 10 ** 20, (0, 5)])
def test_argnums_out_of_range_are_located(entry, argnums):
    with pytest.raises(S2SADError, match="out of range") as e:
        getattr(s2sad, entry)(two, argnums=argnums)(X, Y)
    _here(e, two)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("fun", [cubes, sorted_cubes, by_index])
def test_a_list_argument_is_refused_at_the_function(entry, fun):
    if entry == "hessian":      # (session 13: a container, as grad takes it; tests/test_trust_s13_tree_hessian.py)
        if fun is by_index:     # x[0] * x[1] ** 2: JAX's list of lists
            H = s2sad.hessian(fun)([1.0, 2.0])
            assert H == [[0.0, 4.0], [4.0, 2.0]]
        else:       # x ** 3 on a list: refused where grad refuses it
            with pytest.raises(S2SADError, match="list or tuple is used here") as e:
                s2sad.hessian(fun)([1.0, 2.0])
            assert e.value.location.filename == __file__
        return
    with pytest.raises(NonDifferentiableInputError, match="argument 0 is a list") as e:
        getattr(s2sad, entry)(fun)([1.0, 2.0])
    _here(e, fun)
    if fun is not by_index:     # (an array is taken)
        np.asarray(getattr(s2sad, entry)(fun)(np.array([1.0, 2.0])))


def test_jacobians_of_a_grad_refuse_a_list_too():
    for entry in ("jacfwd", "jacrev"):     # (the grad's own refusal, or the container's)
        with pytest.raises(S2SADError, match="is a list|list or tuple is used here") as e:
            getattr(s2sad, entry)(s2sad.grad(cubes))([1.0, 2.0])
        assert e.value.location.filename == __file__
    with pytest.raises(S2SADError, match="list or tuple is used here"):   # (grad's refusal, session 13)
        s2sad.hvp(cubes, ([1.0, 2.0],), ([1.0, 0.0],))


def test_jvp_of_a_grad_refuses_a_list_where_grad_does():
    with pytest.raises(S2SADError, match="list or tuple is used here"):
        s2sad.grad(cubes)([1.0, 2.0])
    with pytest.raises(S2SADError, match="list or tuple is used here"):
        s2sad.jvp(s2sad.grad(cubes), ([1.0, 2.0],), ([1.0, 0.0],))
    # a list the function indexes is one grad takes; its jvp: right, or refused where located
    np.testing.assert_allclose(np.asarray(s2sad.grad(by_index)([2.0, 3.0]), dtype=float), [9.0, 12.0], rtol=1e-15)
    try:
        out, dot = s2sad.jvp(s2sad.grad(by_index), ([2.0, 3.0],), ([1.0, 0.0],))
    except S2SADError as e:
        assert e.location is not None and e.location.filename == __file__
    else:
        np.testing.assert_allclose(np.asarray(dot, dtype=float), [0.0, 6.0], rtol=1e-15)


@pytest.mark.parametrize("tangent", [np.array([1j, 1.0]), np.array(["a", "b"]), 1j, "ab", [1j, 2.0]],
                         ids=["complex array", "str array", "complex", "str", "complex list"])
def test_a_tangent_that_is_not_real_is_refused(tangent):
    def fx(x):
        return np.sum(x ** 2)

    def fs(x):
        return x ** 2
    primal = 2.0 if np.ndim(tangent) == 0 and not isinstance(tangent, str) else X
    f = fs if np.ndim(primal) == 0 else fx
    with pytest.raises(NonDifferentiableInputError, match="tangent given for argument 'x'") as e:
        s2sad.jvp(f, (primal,), (tangent,))
    assert e.value.location.filename == __file__


def test_an_hvp_with_a_complex_tangent_is_refused_at_the_users_function():
    for fun in (cubes, sorted_cubes):
        with pytest.raises(NonDifferentiableInputError, match="complex") as e:
            s2sad.hvp(fun, (X,), (np.array([1j, 1.0]),))
        _here(e, fun)


def test_integer_tangents_are_still_numbers(backend):
    np.testing.assert_allclose(s2sad.hvp(cubes, (X,), (np.array([1, 1]),), backend=backend), 6 * X, rtol=1e-15)
    assert s2sad.jvp(cubes, (X,), (np.array([1, 0]),), backend=backend)[1] == pytest.approx(3.0, rel=1e-15)


@pytest.mark.parametrize("primals, tangents", [(X, Y), ((X,), Y), (iter([X]), (Y,))], ids=["arrays", "tangents", "iterator"])
def test_hvp_takes_tuples_as_jvp_does(primals, tangents):
    with pytest.raises(S2SADError, match="tuples or lists") as e:
        s2sad.hvp(cubes, primals, tangents)
    _here(e, cubes)


def test_a_hessian_called_with_too_many_arguments_is_located_at_the_users_function():
    with pytest.raises(ArgumentError, match="takes 2 positional arguments but 3") as e:
        s2sad.hessian(two)(X, Y, Y)
    _here(e, two)


@pytest.mark.parametrize("entry", ["hessian", "jacfwd", "jacrev", "jacobian"])
def test_not_a_function_names_the_entry_point(entry):
    name = "jacrev" if entry == "jacobian" else entry
    with pytest.raises(S2SADError, match=f"s2sad.{name} needs a function, not a int"):
        getattr(s2sad, entry)(3)
    with pytest.raises(S2SADError, match="s2sad.hvp needs a function"):
        s2sad.hvp(3, (X,), (Y,))


def test_dask_argnums_out_of_range_and_dtypes_are_located():
    da = pytest.importorskip("dask.array")
    D = da.from_array(np.random.default_rng(0).random((8, 3)), chunks=(4, 3))

    def loss(X, w):
        return np.sum(X ** 2 * w)
    with pytest.raises(S2SADError, match="argnums 5 is out of range") as e:
        s2sad.grad(loss, argnums=5)(D, 2.0)
    _here(e, loss)
    with pytest.raises(S2SADError, match="dtype int64") as e:
        s2sad.grad(loss)(da.from_array(np.ones((4, 2), int), chunks=2), 2.0)
    _here(e, loss)
    np.testing.assert_allclose(np.asarray(s2sad.grad(loss)(D, w=2.0)), 4 * D.compute(), rtol=1e-14)


def test_the_right_answers_stay_right(backend):
    """duplicate and negative argnums, 0-d, float32 and NaN inputs, as before"""
    H = s2sad.hessian(two, argnums=(0, 0), backend=backend)(X, Y)
    np.testing.assert_allclose(H[0][1], np.diag(2 * Y), rtol=1e-15)
    np.testing.assert_allclose(s2sad.jacfwd(two, argnums=-1, backend=backend)(X, Y), X ** 2, rtol=1e-15)
    assert float(s2sad.hessian(cubes, backend=backend)(np.array(2.0))) == pytest.approx(12.0, rel=1e-15)
    H32 = s2sad.hessian(cubes, backend=backend)(X.astype(np.float32))
    assert H32.dtype == np.float32
    np.testing.assert_allclose(H32, np.diag(6 * X), rtol=1e-6)
    Hn = s2sad.hessian(cubes, backend=backend)(np.array([np.nan, 1.0]))
    assert np.isnan(Hn[0, 0]) and Hn[1, 1] == 6.0


def squares_map(x):
    return x ** 2


def with_a_string(x):
    return (np.sum(x), "a")


def test_a_map_whose_grad_is_refused_is_refused_at_every_level():
    """grad(squares_map)(x) refuses (not a scalar loss); its Hessian, hvp, and jvp / vjp /
    jacfwd / jacrev of its grad gave the elementwise second derivative (a diagonal)."""
    with pytest.raises(S2SADError, match="not a scalar loss"):
        s2sad.grad(squares_map)(X)
    calls = [lambda: s2sad.hessian(squares_map)(X), lambda: s2sad.hvp(squares_map, (X,), (Y,)),
             lambda: s2sad.jvp(s2sad.grad(squares_map), (X,), (Y,)), lambda: s2sad.vjp(s2sad.grad(squares_map), X),
             lambda: s2sad.jacfwd(s2sad.grad(squares_map))(X), lambda: s2sad.jacrev(s2sad.grad(squares_map))(X),
             lambda: s2sad.jvp(s2sad.value_and_grad(squares_map), (X,), (Y,))]
    for call in calls:
        with pytest.raises(S2SADError, match="returns an array of 2 elements, not a scalar loss") as e:
            call()
        assert e.value.location.filename == __file__
    # a number is a scalar: its second derivative stands
    assert s2sad.hessian(squares_map)(1.5) == pytest.approx(2.0, rel=1e-15)
    assert s2sad.jvp(s2sad.grad(squares_map), (1.5,), (1.0,)) == pytest.approx((3.0, 2.0), rel=1e-15)


@pytest.mark.parametrize("entry", ["jacfwd", "jacrev"])
def test_a_string_among_the_outputs_is_refused(entry):
    with pytest.raises(S2SADError, match="returns str 'a' among its outputs") as e:
        getattr(s2sad, entry)(with_a_string)(X)
    _here(e, with_a_string)

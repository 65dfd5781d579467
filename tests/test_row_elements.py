"""Rows and small vectors as elements (issue 15): a scalar function that indexes its
parameter with constant positions, applied over the rows of a 2-D array (map,
broadcast with signature=, comprehensions) or zip(...) of arrays, runs on the fused
dual path; wrong shapes and whole uses of a row are refused, located."""
import os

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError, ShapeError, UnsupportedOperationError
from conftest import central_fd

RNG = np.random.default_rng(15)
X = RNG.normal(size=(7, 3))


def energy(p):
    return p[0] ** 2 + p[1] * p[2]


def unpacked(p):
    a, b, c = p
    return a * np.sin(b) + c ** 3 * p[-1]


def pair_term(q):
    return q[1] * np.exp(q[0])


def passes_row_on(p):
    return pair_term(p) + p[-1] ** 2


def via_map(X):
    return sum(map(energy, X))


def via_broadcast(X):
    return np.sum(s2sad.broadcast(energy, X, signature="(3)->()"))


def via_broadcast_inferred(X):
    return np.sum(s2sad.broadcast(energy, X))


def via_genexp(X):
    return sum(energy(row) for row in X)


def via_listcomp(X):
    return sum([energy(r) for r in X])


def via_inline_comp(X):
    return np.mean([r[0] * r[2] - r[1] for r in X])


def via_lambda(X):
    return sum(map(lambda p: p[0] * p[1] + np.cos(p[2]), X))


def via_local_def(X):
    def local(p):
        x, y, z = p
        return x * y * z
    return sum(map(local, X))


def via_unpacked(X):
    return sum(map(unpacked, X))


def via_helper(X):
    return sum(map(passes_row_on, X))


LOSSES = [via_map, via_broadcast, via_broadcast_inferred, via_genexp, via_listcomp, via_inline_comp,
          via_lambda, via_local_def, via_unpacked, via_helper]


@pytest.mark.parametrize("loss", LOSSES)
def test_rows_against_central_differences(loss, backend):
    value, g = s2sad.value_and_grad(loss, backend=backend)(X)
    assert g.shape == X.shape and g.dtype == X.dtype
    np.testing.assert_allclose(value, loss(X), rtol=1e-12)
    np.testing.assert_allclose(g, central_fd(loss, [X], 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("loss", LOSSES)
def test_python_backend_agrees_with_llvm(loss):
    gp = s2sad.grad(loss, backend="python")(X)
    gl = s2sad.grad(loss, backend="llvm")(X)
    np.testing.assert_allclose(gp, gl, rtol=1e-13, atol=1e-14)


def test_runs_fused_one_partial_per_component():
    text = str(s2sad.explain(via_map))
    assert "dual with 3 partial(s) per element" in text
    src = s2sad.source(s2sad.grad(via_map))
    assert "X_bar = rows_gradient(X" in src and "def energy(p__0, p__1, p__2)" in src


def test_exact_answer_analytic():
    g = s2sad.grad(via_map)(X)
    np.testing.assert_allclose(g, np.stack([2 * X[:, 0], X[:, 2], X[:, 1]], axis=1), rtol=1e-14)


# ---------------------------------------------------------------- tuples of several arrays' elements

def triple(t):
    return t[0] * t[1] + t[2]


def zip_map(a, b, c):
    return sum(map(triple, zip(a, b, c)))


def zip_genexp(a, b, c):
    return sum(triple(t) for t in zip(a, b, c))


def zip_unpacked_comp(a, b, c):
    return sum([x * y - z for x, y, z in zip(a, b, c)])


@pytest.mark.parametrize("loss", [zip_map, zip_genexp, zip_unpacked_comp])
def test_zip_elements_as_tuples(loss, backend):
    args = [X[:, 0].copy(), X[:, 1].copy(), X[:, 2].copy()]
    gs = s2sad.grad(loss, argnums=(0, 1, 2), backend=backend)(*args)
    for i in range(3):
        np.testing.assert_allclose(gs[i], central_fd(loss, args, i), rtol=1e-6, atol=1e-7)


def test_zip_of_too_few_arrays_is_refused():
    def short(a, b):
        return sum(map(triple, zip(a, b)))
    with pytest.raises(ShapeError, match="index 2 of zip"):
        s2sad.grad(short)(X[:, 0].copy(), X[:, 1].copy())


# ---------------------------------------------------------------- rows with other arguments

def scaled(p, s):
    return p[0] * s + p[1] ** 2


def with_scalars(X, s):
    return sum(map(scaled, X, s))


def test_row_and_number_arguments(backend):
    s = RNG.normal(size=7)
    gX, gs = s2sad.grad(with_scalars, argnums=(0, 1), backend=backend)(X[:, :2].copy(), s)
    np.testing.assert_allclose(gX, central_fd(with_scalars, [X[:, :2].copy(), s], 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gs, X[:, 0], rtol=1e-14)


DATA_ROWS = RNG.normal(size=(7, 2))


def free_rows(x):
    return sum(map(lambda p, z: p[0] * z + p[1], DATA_ROWS, x))


def test_rows_of_a_free_array_are_data():
    x = RNG.normal(size=7)
    np.testing.assert_allclose(s2sad.grad(free_rows)(x), DATA_ROWS[:, 0], rtol=1e-14)


def test_int_rows_are_data():
    Xi = np.arange(14).reshape(7, 2)
    s = np.ones(7)
    np.testing.assert_allclose(s2sad.grad(with_scalars, argnums=1)(Xi, s), Xi[:, 0])


# ---------------------------------------------------------------- layouts and dtypes

def test_wider_rows_unread_columns_get_zero():
    W = RNG.normal(size=(5, 6))
    g = s2sad.grad(via_map)(W)
    assert g.shape == (5, 6)
    np.testing.assert_array_equal(g[:, 3:], 0)
    np.testing.assert_allclose(g, central_fd(via_map, [W], 0), rtol=1e-6, atol=1e-7)


def test_same_column_through_two_indices_accumulates():
    def first_and_last(X):
        return sum(map(lambda p: p[0] * p[-1], X))
    one = RNG.normal(size=(4, 1))
    np.testing.assert_allclose(s2sad.grad(first_and_last)(one), 2 * one, rtol=1e-14)


def test_non_contiguous_rows_and_input_untouched():
    big = RNG.normal(size=(9, 5))
    view = big[::2, 1:4]
    keep = big.copy()
    g = s2sad.grad(via_map)(view)
    np.testing.assert_allclose(g, s2sad.grad(via_map)(view.copy()), rtol=1e-15)
    np.testing.assert_array_equal(big, keep)
    Xf = np.asfortranarray(X)
    np.testing.assert_allclose(s2sad.grad(via_map)(Xf), s2sad.grad(via_map)(X), rtol=1e-15)


def test_float32_rows():
    g = s2sad.grad(via_map)(X.astype(np.float32))
    assert g.dtype == np.float32 and g.shape == X.shape
    np.testing.assert_allclose(g, s2sad.grad(via_map)(X), rtol=1e-5, atol=1e-6)


def test_list_of_rows_and_other_ranks():
    rows = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    np.testing.assert_allclose(s2sad.grad(via_map)(rows), [[2, 3, 2], [8, 6, 5]])
    for bad in (np.ones((2, 3, 3)), np.float64(1.0)):
        with pytest.raises(ShapeError, match="2-D array is needed"):
            s2sad.grad(via_map)(bad)
    one = np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(s2sad.grad(via_map)(one), [[2, 3, 2]])


def test_empty_rows():
    value, g = s2sad.value_and_grad(via_map)(np.zeros((0, 3)))
    assert value == 0 and g.shape == (0, 3)


def test_nan_propagates_to_its_row_only():
    Y = X.copy()
    Y[2, 1] = np.nan
    g = s2sad.grad(via_map)(Y)
    assert np.isnan(g[2, 2]) and not np.isnan(np.delete(g, 2, axis=0)).any()


def test_vjp_through_rows():
    out, pull = s2sad.vjp(via_map, X)
    np.testing.assert_allclose(out, via_map(X), rtol=1e-12)
    np.testing.assert_allclose(pull(2.0)[0], 2 * s2sad.grad(via_map)(X), rtol=1e-14)


def per_row(X):
    return s2sad.broadcast(energy, X, signature="(3)->()")


def test_jvp_and_vjp_of_the_unreduced_broadcast():
    T = RNG.normal(size=X.shape)
    G = s2sad.grad(via_map)(X)            # row i's partials are row i of the gradient of the sum
    out, dot = s2sad.jvp(per_row, [X], [T])
    np.testing.assert_allclose(out, [energy(r) for r in X], rtol=1e-14)
    np.testing.assert_allclose(dot, np.sum(G * T, axis=1), rtol=1e-12, atol=1e-14)
    out, pull = s2sad.vjp(per_row, X)
    w = RNG.normal(size=len(X))
    np.testing.assert_allclose(pull(w)[0], w[:, None] * G, rtol=1e-12, atol=1e-14)


def test_dask_whole_rows_split_and_cut_rows_refused():
    da = pytest.importorskip("dask.array")
    from s2sad.errors import DaskSplitError
    first = lambda X: sum(map(lambda p: p[0] ** 2 + p[2], X))   # noqa: E731
    g = s2sad.grad(first)(da.from_array(X, chunks=(3, 3)))
    np.testing.assert_allclose(np.asarray(g), s2sad.grad(first)(X), rtol=1e-14)
    with pytest.raises(DaskSplitError, match="whole rows"):
        s2sad.grad(first)(da.from_array(X, chunks=(3, 2)))
    with pytest.raises(S2SADError, match="dask"):
        s2sad.broadcast(energy, da.from_array(X, chunks=(3, 3)))


# ---------------------------------------------------------------- s2sad.broadcast outside a loss

def test_broadcast_values_of_rows():
    np.testing.assert_allclose(s2sad.broadcast(energy, X, signature="(3)->()"),
                               [energy(r) for r in X], rtol=1e-14)
    np.testing.assert_allclose(s2sad.broadcast(scaled, X[:, :2], 2.0, signature="(2),()->()"),
                               [scaled(r, 2.0) for r in X[:, :2]], rtol=1e-14)
    np.testing.assert_allclose(s2sad.broadcast(unpacked, X), [unpacked(r) for r in X], rtol=1e-13)


@pytest.mark.parametrize("args, kw, match", [
    ((X[:, :2],), {}, r"shape \(7, 2\), but index 2 of its rows is read"),
    ((X[0],), {}, "2-D array is needed"),
    ((X,), {"signature": "(4)->()"}, "exactly 4"),
    ((X,), {"signature": "(2)->()"}, "reads 3 components"),
    ((X,), {"signature": "()->()"}, "is a number"),
    ((X,), {"signature": "(3)->(2)"}, "numbers per element"),
    ((X,), {"signature": "(3)->(2"}, "not supported"),
])
def test_broadcast_refusals(args, kw, match):
    with pytest.raises(S2SADError, match=match) as e:
        s2sad.broadcast(energy, *args, **kw)
    assert e.value.location is not None


# ---------------------------------------------------------------- right or refused in a loss

def test_too_few_columns_names_index_and_shape():
    with pytest.raises(ShapeError, match=r"'X' has shape \(7, 2\), but index 2 of its rows is read") as e:
        s2sad.grad(via_map)(X[:, :2])
    assert e.value.location.lineno == via_map.__code__.co_firstlineno + 1


def test_negative_index_beyond_the_row():
    def far(X):
        return sum(map(lambda p: p[-3], X))
    with pytest.raises(ShapeError, match="index -3"):
        s2sad.grad(far)(X[:, :2])


def test_one_dimensional_array_needs_2d():
    with pytest.raises(ShapeError, match="2-D array is needed"):
        s2sad.grad(via_map)(X[:, 0].copy())


def test_unpacking_needs_exactly_that_many_columns():
    with pytest.raises(ShapeError, match="exactly 3"):
        s2sad.grad(via_unpacked)(RNG.normal(size=(4, 4)))


def test_signature_disagreeing_with_the_function():
    def sig2(X):
        return np.sum(s2sad.broadcast(energy, X, signature="(2)->()"))
    with pytest.raises(ShapeError, match="signature= says have 2"):
        s2sad.grad(sig2)(X)

    def sig_scalar(X):
        return np.sum(s2sad.broadcast(energy, X, signature="()->()"))
    with pytest.raises(ShapeError, match="is a number"):
        s2sad.grad(sig_scalar)(X)


def uses_len(p):
    return p[0] * len(p)


def uses_matmul(p):
    return p[0] + p @ np.ones(3)


def uses_sum(p):
    return np.sum(p) - p[1]


def uses_loop(p):
    acc = p[0]
    for v in p:
        acc = acc + v
    return acc


def uses_variable_index(p):
    i = 1
    return p[0] + p[i]


@pytest.mark.parametrize("fn", [uses_len, uses_matmul, uses_sum, uses_loop, uses_variable_index])
def test_row_used_whole_is_refused_located(fn):
    def loss(X):
        return sum(map(fn, X))
    with pytest.raises(UnsupportedOperationError, match="used whole") as e:
        s2sad.grad(loss)(X)
    assert e.value.location.filename == __file__
    assert "Index its components" in str(e.value)


def test_rows_of_a_computed_array_are_refused():
    def computed(X):
        return sum(map(energy, X * 2.0))
    with pytest.raises(UnsupportedOperationError, match="argument of the loss or a free array"):
        s2sad.grad(computed)(X)


def test_scalar_function_given_zip_is_refused():
    def not_rows(a, b):
        return sum(map(lambda z: z * 2.0, zip(a, b)))
    with pytest.raises(S2SADError, match="zip"):
        s2sad.grad(not_rows)(X[:, 0].copy(), X[:, 1].copy())


def test_rows_inside_an_array_program_are_refused():
    def program(X, w):
        e = np.array(list(map(energy, X)))
        return np.sum(e * w) + np.sum(X @ np.ones(3))
    with pytest.raises(UnsupportedOperationError, match="function of rows is applied inside an array program"):
        s2sad.grad(program)(X, np.ones(7))


# ---------------------------------------------------------------- calls, defaults, captures, aliasing

def two_rows(p, q):
    return p[0] * q[1] + p[2]


def with_default(p, s=2.0):
    return p[0] * s + p[1]


def inner_default(q, t=3.0):
    return q[0] * t


def outer_default(p):
    return inner_default(p) + p[1]


FREE = np.array([1.5, 2.0])


def captures_free(p):
    return p[0] * FREE[1] + p[1]


def aliased(X):
    return sum(map(two_rows, X, X))


def defaulted(X):
    return sum(map(with_default, X))


def defaulted_inside(X):
    return sum(map(outer_default, X))


def captured(X):
    return sum(map(captures_free, X))


@pytest.mark.parametrize("loss", [aliased, defaulted, defaulted_inside, captured])
def test_row_functions_calls_defaults_captures(loss, backend):
    g = s2sad.grad(loss, backend=backend)(X)
    np.testing.assert_allclose(g, central_fd(loss, [X], 0), rtol=1e-6, atol=1e-7)


def test_captured_element_of_a_differentiated_argument():
    def loss(X, w):
        return sum(map(lambda p: p[0] * w[0] + p[2] * w[1], X))
    w = np.array([2.0, 3.0])
    gX, gw = s2sad.grad(loss, argnums=(0, 1))(X, w)
    np.testing.assert_allclose(gX, central_fd(loss, [X, w], 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gw, [X[:, 0].sum(), X[:, 2].sum()], rtol=1e-12)


def test_missing_argument_is_refused_not_miscompiled():
    def no_default(p, s):
        return p[0] * s

    def loss(X):
        return sum(map(no_default, X))
    with pytest.raises(ShapeError, match="takes 2 arguments, 1 given"):
        s2sad.grad(loss)(X)


# ---------------------------------------------------------------- small tuples out, summed by the loss

def pair_out(p):
    a, b, c = p
    if a > 0:
        return a * b, np.sin(c) + p[0]
    return b * c, a


def sum_of_tuples(X):
    return sum(sum(pair_out(r)) for r in X)


def scaled_tuples(X):
    return sum([2.0 * sum(pair_out(r)) for r in X])


def broadcast_tuples(X):
    return np.sum(s2sad.broadcast(pair_out, X, signature="(3)->(2)"))


def lambda_tuples(X):
    return np.sum(s2sad.broadcast(lambda p: (p[0] * p[1], p[2] ** 2, p[0]), X, signature="(3)->(3)"))


@pytest.mark.parametrize("loss", [sum_of_tuples, scaled_tuples, broadcast_tuples, lambda_tuples])
def test_tuple_outputs_summed_by_the_loss(loss, backend):
    def plain(Z):   # the same loss in plain Python: each element's tuple summed
        if loss is lambda_tuples:
            return sum(r[0] * r[1] + r[2] ** 2 + r[0] for r in Z)
        return (2.0 if loss is scaled_tuples else 1.0) * sum(sum(pair_out(r)) for r in Z)
    value, g = s2sad.value_and_grad(loss, backend=backend)(X)
    np.testing.assert_allclose(value, plain(X), rtol=1e-12)
    np.testing.assert_allclose(g, central_fd(plain, [X], 0), rtol=1e-6, atol=1e-7)


def test_tuple_outputs_need_a_sum_of_the_whole_broadcast():
    def mean_of(X):
        return np.mean(s2sad.broadcast(pair_out, X, signature="(3)->(2)"))

    def squares_of(X):
        return np.sum(s2sad.broadcast(pair_out, X, signature="(3)->(2)") ** 2)

    for loss in (mean_of, squares_of):
        with pytest.raises(UnsupportedOperationError, match="only a sum of the whole broadcast"):
            s2sad.grad(loss)(X)

    def wrong_length(X):
        return np.sum(s2sad.broadcast(pair_out, X, signature="(3)->(3)"))
    with pytest.raises(ShapeError, match="returns 3 numbers, but it returns 2"):
        s2sad.grad(wrong_length)(X)

    def number_out(X):
        return np.sum(s2sad.broadcast(energy, X, signature="(3)->(2)"))
    with pytest.raises(ShapeError, match="not every return is a tuple"):
        s2sad.grad(number_out)(X)


# ---------------------------------------------------------------- random programs (tests/randprog.py)

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from randprog import load, programs  # noqa: E402


@settings(max_examples=int(30 * float(os.environ.get("S2SAD_RANDPROG_SCALE", "1"))), deadline=None,
          derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(program=programs(), n=st.integers(2, 5), seed=st.integers(0, 2**31 - 1))
def test_random_programs_over_rows(program, n, seed):
    """loss_rows(X), f over X's rows through frow(p), has the gradient of loss(*columns) in X's columns."""
    ns = load(program)
    rng = np.random.default_rng(seed)
    args = [rng.uniform(-2.0, 2.0, n) for _ in program.params]
    X = np.stack(args, axis=1)
    argnums = tuple(range(program.nparams))
    value, grads = s2sad.value_and_grad(ns["loss"], argnums=argnums, backend="python")(*args)
    for backend in ("python", "llvm"):
        v_rows, g_rows = s2sad.value_and_grad(ns["loss_rows"], backend=backend)(X)
        assert g_rows.shape == X.shape
        np.testing.assert_allclose(v_rows, value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g_rows, np.stack(grads, axis=1), rtol=1e-10, atol=1e-10)

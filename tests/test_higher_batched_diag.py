"""Issue 14, per-call speed: jacfwd and jacrev of an elementwise map take the diagonal from
one gradient of the map's sum, decided once per plan and, from the third call, through the
driver's entry (s2sad/jacdiag.py). Checked here: the same numbers as the column-by-column
jvps (to the bit against a jvp along ones) and central differences, on every call (the
first, the full path, and the hot path after it), both backends, both float dtypes, 1-d
and 2-d, tuple argnums; and what a hostile caller does between calls: change a global the
map reads, swap its code, change dtype or shape, pass a view, a one-element array, ints,
a larger argument that broadcasts x (not diagonal).
"""
import numpy as np
import pytest

import s2sad
from conftest import central_fd

SCALE = 2.0


def emap(x):
    return np.tanh(x) * x


def emap_diag(x):
    t = np.tanh(x)
    return (1 - t * t) * x + t


def scaled(x):
    return np.sin(x) * SCALE


def two(x, y):
    return np.exp(x) * y + x * x


def with_scalar(x, a):
    return np.cos(x) * a


def fd_jacobian(f, args, i, h=1e-6):
    """d f(args)_k / d args[i]_j by central differences, shape out + in."""
    x = np.asarray(args[i], dtype=np.float64)
    out = np.asarray(f(*args))
    jac = np.zeros(out.shape + x.shape)
    for j in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[j] = h
        plus, minus = list(args), list(args)
        plus[i], minus[i] = x + e, x - e
        jac[(...,) + j] = (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * h)
    return jac


def calls(jac, *args, n=4):
    """n calls (the first: the full path; from the third: the hot path); all the same."""
    first = jac(*args)
    for _ in range(n - 1):
        again = jac(*args)
        if isinstance(first, tuple):
            for a, b in zip(first, again):
                np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_array_equal(first, again)
    return first


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev, s2sad.jacobian])
@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("shape", [(10,), (3, 4)])
def test_diagonal_matches_analytic_and_fd(make, backend, shape):
    x = np.linspace(-1.2, 1.5, int(np.prod(shape))).reshape(shape)
    jac = calls(make(emap, backend=backend), x)
    assert jac.shape == shape + shape and jac.dtype == np.float64
    n = x.size
    np.testing.assert_allclose(jac.reshape(n, n), np.diag(emap_diag(x).ravel()), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(jac, fd_jacobian(emap, (x,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_diagonal_is_the_jvp_along_ones_to_the_bit(make):
    x = np.linspace(-2.0, 2.0, 17)
    _, tangent = s2sad.jvp(emap, (x,), (np.ones_like(x),))
    jac = calls(make(emap), x)
    np.testing.assert_array_equal(np.diag(jac), tangent)
    assert np.count_nonzero(jac - np.diag(np.diag(jac))) == 0


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_float32_keeps_its_dtype(make):
    x = np.linspace(-1.0, 1.0, 8, dtype=np.float32)
    jac = calls(make(emap), x)
    assert jac.dtype == np.float32
    np.testing.assert_allclose(np.diag(jac), emap_diag(x.astype(np.float64)), rtol=1e-5)
    x64 = x.astype(np.float64)      # the same wrapper, the other dtype: the entry declines, then its own
    jac64 = calls(make(emap), x64)
    assert jac64.dtype == np.float64
    np.testing.assert_allclose(np.diag(jac64), emap_diag(x64), rtol=1e-13)


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_tuple_argnums_both_diagonals(make):
    x, y = np.linspace(-1.0, 1.0, 6), np.linspace(0.5, 2.0, 6)
    jx, jy = calls(make(two, argnums=(0, 1)), x, y)
    np.testing.assert_allclose(jx, np.diag(np.exp(x) * y + 2 * x), rtol=1e-13)
    np.testing.assert_allclose(jy, np.diag(np.exp(x)), rtol=1e-13)
    (only_y,) = calls(make(two, argnums=(1,)), x, y)
    np.testing.assert_array_equal(only_y, jy)
    jy_neg = calls(make(two, argnums=-1), x, y)
    np.testing.assert_array_equal(jy_neg, jy)


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_a_float_argument_beside_x(make):
    x = np.linspace(-1.0, 1.0, 5)
    jac = calls(make(with_scalar), x, 3.0)
    np.testing.assert_allclose(jac, np.diag(-np.sin(x) * 3.0), rtol=1e-13)
    da = calls(make(with_scalar, argnums=1), x, 3.0)     # a float x: one column, not a diagonal
    np.testing.assert_allclose(da, np.cos(x), rtol=1e-13)


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_a_global_changed_between_calls_is_read(make):
    global SCALE
    x = np.linspace(-1.0, 1.0, 5)
    jac = make(scaled)
    calls(jac, x)
    try:
        SCALE = 5.0
        np.testing.assert_allclose(calls(jac, x), np.diag(np.cos(x) * 5.0), rtol=1e-13)
    finally:
        SCALE = 2.0
    np.testing.assert_allclose(jac(x), np.diag(np.cos(x) * 2.0), rtol=1e-13)


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_swapped_code_is_planned_again(make):
    def f(x):
        return np.tanh(x) * x
    x = np.linspace(-1.0, 1.0, 5)
    jac = make(f)
    calls(jac, x)
    f.__code__ = (lambda x: np.exp(x) * 2.0).__code__
    np.testing.assert_allclose(calls(jac, x), np.diag(np.exp(x) * 2.0), rtol=1e-13)


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_broadcast_against_a_larger_argument_is_not_a_diagonal(make):
    x, y = np.linspace(-1.0, 1.0, 3), np.linspace(0.5, 1.5, 6).reshape(2, 3)
    jac = calls(make(two), x, y)
    assert jac.shape == (2, 3, 3)
    np.testing.assert_allclose(jac, fd_jacobian(two, (x, y), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_views_one_element_and_zero_d(make):
    base = np.linspace(-1.0, 1.0, 12)
    view = base[::2]                    # not contiguous: the entry declines
    np.testing.assert_allclose(calls(make(emap), view), np.diag(emap_diag(view)), rtol=1e-13)
    one = np.array([0.3])
    np.testing.assert_allclose(calls(make(emap), one), np.diag(emap_diag(one)), rtol=1e-13)
    zero_d = np.array(0.3)
    got = calls(make(emap), zero_d)
    np.testing.assert_allclose(got, emap_diag(0.3), rtol=1e-13)
    assert np.shape(got) == ()
    np.testing.assert_allclose(calls(make(emap), 0.3), emap_diag(0.3), rtol=1e-13)


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_shape_change_between_calls(make):
    jac = make(emap)
    for n in (4, 7, 4, 2):
        x = np.linspace(-1.0, 1.0, n)
        np.testing.assert_allclose(calls(jac, x), np.diag(emap_diag(x)), rtol=1e-13)


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_ints_refused_after_hot_calls(make):
    jac = make(emap)
    calls(jac, np.linspace(-1.0, 1.0, 4))
    with pytest.raises(s2sad.NonDifferentiableInputError):
        jac(np.arange(4))
    with pytest.raises(s2sad.S2SADError):
        make(emap, argnums=3)(np.ones(4))


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_input_not_written_and_results_fresh(make):
    x = np.linspace(-1.0, 1.0, 6)
    keep = x.copy()
    jac = make(emap)
    results = [jac(x) for _ in range(4)]
    np.testing.assert_array_equal(x, keep)
    results[-1][0, 0] = 123.0       # a caller writing into one result changes no other
    np.testing.assert_array_equal(results[-2], results[0])
    assert jac(x)[0, 0] != 123.0


def test_nan_propagates():
    x = np.array([0.5, np.nan, -0.5])
    jac = calls(s2sad.jacfwd(emap), x)
    assert np.isnan(jac[1, 1]) and np.isfinite(jac[0, 0]) and jac[0, 1] == 0.0


def test_fd_of_a_random_map():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1.0, 1.0, 9)

    def m(x):
        return np.sin(x) * np.exp(-x * x) + np.log1p(x * x)
    for make in (s2sad.jacfwd, s2sad.jacrev):
        np.testing.assert_allclose(calls(make(m), x), fd_jacobian(m, (x,), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.diag(calls(s2sad.jacfwd(m), x)), central_fd(lambda x: np.sum(m(x)), (x,), 0),
                               rtol=1e-6)


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev])
def test_from_the_third_call_one_entry_call(make, monkeypatch):
    """The hot path runs no planning and no runtime.sum_dual: the driver's entry only."""
    x = np.linspace(-1.0, 1.0, 6)
    jac = make(emap)
    want = calls(jac, x, n=3)

    def not_called(*args, **kwargs):
        raise AssertionError("the full path ran")
    monkeypatch.setattr(s2sad.runtime, "sum_dual", not_called)
    monkeypatch.setattr(s2sad.jacdiag, "compiled", not_called)
    np.testing.assert_array_equal(jac(x), want)
    y = np.linspace(-2.0, 2.0, 9)      # another shape: the entry takes it too
    np.testing.assert_allclose(jac(y), np.diag(emap_diag(y)), rtol=1e-13)
    with pytest.raises(AssertionError, match="the full path ran"):
        jac(x.astype(np.float32))       # another dtype: the entry declines, the full path runs

"""Issue 14: jacfwd(grad(f)) and jacrev(grad(f)) of a small fixed-shape program take
hessian(f)'s unrolled plan (small_hessian.OfGrad: the grad's function and argnums read
from its mark), with hessian's numbers, the grad's layout for tuples of argnums (its
outputs outside, the Jacobian's argnums inside), and fall back where hessian's does.
"""
import numpy as np
import pytest

import s2sad
from conftest import hessian_per_column as per_column, rosen, rosen_hessian

JACS = [s2sad.jacfwd, s2sad.jacrev]


def mixed(x, y):
    return np.sum(np.exp(x[1:]) * y[:-1] ** 3) + np.mean(np.sin(x) * np.log1p(y * y)) + np.sum(x / (2.0 + y))


def looped(x):
    s = x * 1.0
    for _ in range(3):
        s = np.tanh(s)
    return np.sum(s ** 2)


def with_aux(x):
    return np.sum(x[1:] * x[:-1] ** 2), np.sum(x)


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(want)))))


@pytest.mark.parametrize("jac", JACS)
def test_jac_of_grad_is_the_unrolled_hessian(jac):
    x = np.linspace(-1.2, 1.1, 10)
    w = jac(s2sad.grad(rosen))
    for _ in range(3):      # full path, then the hot path
        got = w(x)
        assert w.took == ("unrolled",)
        close(got, rosen_hessian(x))
        np.testing.assert_array_equal(got, s2sad.hessian(rosen)(x))
    assert "unrolled" in str(s2sad.explain(w, x)) and "second" in str(s2sad.explain(w, x))


@pytest.mark.parametrize("jac", JACS)
@pytest.mark.parametrize("grad_nums, jac_nums", [(0, 1), ((0, 1), 0), (1, (0, 1)), ((0, 1), (1, 0)),
                                                 (-1, -2), ((1,), (0,))])
def test_argnums_layout_is_the_grads(jac, grad_nums, jac_nums):
    x, y = np.linspace(-1.0, 1.0, 6), np.linspace(0.3, 2.0, 6)
    w = jac(s2sad.grad(mixed, grad_nums), jac_nums)
    got = w(x, y)
    assert w.took == ("unrolled",)

    def block(i, j):
        return per_column(mixed, (x, y), i % 2, j % 2)

    def row(i):
        return tuple(block(i, j) for j in jac_nums) if isinstance(jac_nums, tuple) else block(i, jac_nums)
    want = tuple(row(i) for i in grad_nums) if isinstance(grad_nums, tuple) else row(grad_nums)
    assert type(got) is type(want)
    for g, e in zip(np.asarray(got, dtype=object).ravel() if isinstance(got, tuple) else [got],
                    np.asarray(want, dtype=object).ravel() if isinstance(want, tuple) else [want]):
        close(np.asarray(g, dtype=float), np.asarray(e, dtype=float))


@pytest.mark.parametrize("jac", JACS)
def test_falls_back_as_hessian_does(jac):
    x = np.linspace(-1.0, 1.0, 5)
    w = jac(s2sad.grad(looped))
    close(w(x), per_column(looped, (x,), 0, 0))
    assert w.took != ("unrolled",) and w.small.why_not == "a loop"
    w = jac(s2sad.grad(rosen))
    xs = np.linspace(-1.0, 1.0, 10)
    for bad in (xs.astype(np.float32), xs[::2]):        # float32, a strided view: the batched path
        got = w(bad)
        assert w.took != ("unrolled",)
        np.testing.assert_allclose(got, rosen_hessian(np.asarray(bad, dtype=np.float64)), rtol=1e-5, atol=1e-3)
        assert got.dtype == bad.dtype
    xn = np.linspace(-1.0, 1.0, 5)
    xn[2] = np.nan
    got = w(xn)
    assert w.took != ("unrolled",) and np.isnan(got).any()


@pytest.mark.parametrize("jac", JACS)
def test_has_aux_grad_is_refused_as_before(jac):
    with pytest.raises(s2sad.S2SADError, match="one value"):
        jac(s2sad.grad(with_aux, has_aux=True))(np.linspace(-1.0, 1.0, 5))


@pytest.mark.parametrize("jac", JACS)
def test_shapes_change_between_calls(jac):
    w = jac(s2sad.grad(rosen))
    for n in (4, 7, 4, 12):
        x = np.linspace(-1.0, 1.3, n)
        close(w(x), rosen_hessian(x))
        assert w.took == ("unrolled",)

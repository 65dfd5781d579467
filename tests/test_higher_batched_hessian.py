"""Issue 14, per-call speed: hessian, jacfwd of a grad and jacfwd of an array program run
one sweep whose tangents carry a leading batch axis of K directions (the identity), not
one sweep per column (s2sad/batched_jac.py, passes/batched_sweep.py). Checked here: the
batched result against the per-column jvps (the unbatched program, column by column),
analytic values and central differences; both backends, float32 and float64, 1-d and
2-d inputs, tuple argnums, blocks that are zero, chunks of columns; a program with a
statement that has no batched form (a loop, an in-place write) falls back to the
per-column path, says why (`.batched.why_not`) and gives the same numbers.
"""
import numpy as np
import pytest

import s2sad
from s2sad import batched_jac
from conftest import central_fd, rosen, rosen_hessian

DATA = np.linspace(-0.5, 0.7, 9).reshape(3, 3)


def layer(W, x):
    return np.mean(np.tanh(x @ W) ** 2) + 0.1 * np.sum(W * W)


def rows(A):
    return np.sum(np.sin(A[:, 1:]) * A[:, :-1]) + np.sum(np.mean(A, axis=0) ** 2)


def two(x, y):
    return np.sum(x[1:] * y[:-1] ** 2) + np.sum(x[:2] ** 3)


def linear_in_y(x, y):
    return np.sum(np.exp(x[1:]) * x[:-1]) + np.sum(y[1:] * 2.0)


def with_data(w):
    return np.sum(np.cos(DATA @ w[:3]) * w[1:]) + np.prod(w[:2])


def transposed(A):
    return np.sum(A.T[1:] ** 2 * A.T[:-1]) + np.sum(A.reshape(-1)[::2] ** 3)


def looped(x):
    s = x * 1.0
    for _ in range(3):
        s = np.tanh(s * 1.1)
    return np.sum(s[1:] * s[:-1] ** 2)


def written(x):
    y = x.copy()
    y[0] = y[-1] * 2.0
    return np.sum(y[1:] * y[:-1] ** 2)


def per_column(fun, args, i, j, backend="auto"):
    """d grad_i fun / d x_j column by column: jvp of the grad along each basis vector."""
    g = s2sad.grad(fun, argnums=i, backend=backend)
    x = np.asarray(args[j])
    cols = []
    for k in range(x.size):
        tangents = [np.zeros_like(np.asarray(a, dtype=float)) if np.ndim(a) else 0.0 for a in args]
        e = np.zeros(x.size, dtype=x.dtype)
        e[k] = 1.0
        tangents[j] = e.reshape(x.shape)
        cols.append(np.asarray(s2sad.jvp(g, tuple(args), tuple(tangents), backend=backend)[1]))
    out_shape = np.shape(args[i])
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


def fd_hessian_block(fun, args, i, j, h=1e-5):
    g = s2sad.grad(fun, argnums=i)
    x = np.asarray(args[j], dtype=float)
    out = np.zeros(np.shape(args[i]) + x.shape)
    for k in np.ndindex(x.shape):
        plus, minus = list(args), list(args)
        e = np.zeros_like(x)
        e[k] = h
        plus[j], minus[j] = x + e, x - e
        out[(...,) + k] = (g(*plus) - g(*minus)) / (2 * h)
    return out


@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_rosenbrock_batched_matches_analytic_and_columns(backend):
    x = np.linspace(-1.0, 1.3, 10)
    h = s2sad.hessian(rosen, backend=backend)
    got = h(x)
    assert h.batched.why_not is None
    np.testing.assert_allclose(got, rosen_hessian(x), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(got, per_column(rosen, (x,), 0, 0, backend), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(h(x), got)        # again: the cached program
    assert got.shape == (10, 10) and got.dtype == np.float64


def test_float32_keeps_its_dtype():
    x = np.linspace(-1.0, 1.3, 6, dtype=np.float32)
    got = s2sad.hessian(rosen)(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, rosen_hessian(x.astype(np.float64)), rtol=2e-5, atol=1e-3)
    np.testing.assert_allclose(got, per_column(rosen, (x,), 0, 0), rtol=1e-6, atol=1e-4)


@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("fun, args", [
    (layer, (np.linspace(-0.4, 0.5, 6).reshape(3, 2), np.linspace(-1.0, 1.0, 12).reshape(4, 3))),
    (rows, (np.linspace(-0.9, 1.1, 12).reshape(3, 4),)),
    (with_data, (np.linspace(0.2, 1.2, 4),)),
    (transposed, (np.linspace(-0.7, 0.9, 6).reshape(2, 3),)),
])
def test_array_programs_2d_matmul_reductions_free_data(fun, args, backend):
    h = s2sad.hessian(fun, backend=backend)
    got = h(*args)
    assert h.batched.why_not is None, h.batched.why_not
    want = per_column(fun, args, 0, 0, backend)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(got, fd_hessian_block(fun, args, 0, 0), rtol=1e-5, atol=1e-6)
    n = np.size(args[0])
    flat = got.reshape(n, n)
    np.testing.assert_allclose(flat, flat.T, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_tuple_argnums_every_block(backend):
    x, y = np.linspace(-0.8, 1.1, 5), np.linspace(0.3, 1.5, 5)
    got = s2sad.hessian(two, argnums=(0, 1), backend=backend)(x, y)
    for a in range(2):
        for b in range(2):
            np.testing.assert_allclose(got[a][b], per_column(two, (x, y), a, b, backend), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(got[a][b], fd_hessian_block(two, (x, y), a, b), rtol=1e-5, atol=1e-6)
    zero = s2sad.hessian(linear_in_y, argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(zero[1][1], np.zeros((5, 5)))     # linear in y: that block is zero
    np.testing.assert_array_equal(zero[0][1], np.zeros((5, 5)))
    np.testing.assert_allclose(zero[0][0], per_column(linear_in_y, (x, y), 0, 0), rtol=1e-12)
    neg = s2sad.hessian(two, argnums=-1)(x, y)
    np.testing.assert_array_equal(neg, got[1][1])


def test_chunks_of_columns_give_the_same(monkeypatch):
    x = np.linspace(-1.0, 1.3, 10)
    whole = s2sad.hessian(rosen)(x)
    monkeypatch.setattr(batched_jac, "BUDGET", 30)      # 3 columns a sweep
    np.testing.assert_array_equal(s2sad.hessian(rosen)(x), whole)
    W, X = np.linspace(-0.4, 0.5, 6).reshape(3, 2), np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    monkeypatch.setattr(batched_jac, "BUDGET", 25)      # 2 columns a sweep: X (12 elements) bounds it
    np.testing.assert_allclose(s2sad.hessian(layer)(W, X), per_column(layer, (W, X), 0, 0), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("fun, why", [(looped, "loop"), (written, "in-place write")])
def test_no_batched_form_falls_back_column_by_column(fun, why):
    x = np.linspace(-0.6, 0.9, 5)
    h = s2sad.hessian(fun)
    got = h(x)
    assert h.batched.why_not is not None and why in h.batched.why_not
    np.testing.assert_allclose(got, per_column(fun, (x,), 0, 0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, fd_hessian_block(fun, (x,), 0, 0), rtol=1e-5, atol=1e-6)


def test_jacfwd_of_a_grad_and_of_an_array_program():
    x = np.linspace(-1.0, 1.3, 7)
    jg = s2sad.jacfwd(s2sad.grad(rosen))
    np.testing.assert_allclose(jg(x), rosen_hessian(x), rtol=1e-12, atol=1e-10)
    assert jg.batched.why_not is None

    def slide(x):
        return x[1:] * x[:-1] ** 2 + np.sum(x)
    jf = s2sad.jacfwd(slide)
    got = jf(x)
    assert got.shape == (6, 7) and jf.batched.why_not is None
    want = np.zeros((6, 7))
    for k in range(6):
        want[k] += 1.0
        want[k, k + 1] += x[k] ** 2
        want[k, k] += 2 * x[k] * x[k + 1]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    two_grads = s2sad.jacfwd(s2sad.grad(two, argnums=(0, 1)), argnums=(0, 1))(x, x * 0.5)
    ref = s2sad.hessian(two, argnums=(0, 1))(x, x * 0.5)
    for a in range(2):
        for b in range(2):
            np.testing.assert_allclose(two_grads[a][b], ref[a][b], rtol=1e-12, atol=1e-12)


def test_zero_d_and_one_element_and_views():
    def f(x):
        return np.sum(x[1:] * np.sin(x[:-1])) + np.sum(x ** 4)
    one = np.array([0.7])
    np.testing.assert_allclose(s2sad.hessian(f)(one), [[12 * 0.7 ** 2]], rtol=1e-12)
    base = np.linspace(-1.0, 1.0, 12)
    view = base[::3]
    np.testing.assert_allclose(s2sad.hessian(f)(view), per_column(f, (view.copy(),), 0, 0), rtol=1e-12)
    np.testing.assert_array_equal(base, np.linspace(-1.0, 1.0, 12))     # not written


def test_bad_input_is_refused_located():
    h = s2sad.hessian(rosen)
    with pytest.raises(s2sad.NonDifferentiableInputError):
        h(np.arange(5))
    with pytest.raises(s2sad.S2SADError):
        s2sad.hessian(rosen, argnums=2)(np.ones(4))

    def not_scalar(x):
        return x[1:] * x[:-1]
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.hessian(not_scalar)(np.ones(4))
    assert e.value.location is not None


def test_nan_stays_where_it_belongs():
    x = np.array([0.5, np.nan, -0.3, 0.8])
    got = s2sad.hessian(rosen)(x)
    want = per_column(rosen, (x,), 0, 0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-12)


def test_central_fd_of_the_gradient_agrees():
    x = np.linspace(-0.3, 0.8, 5)
    got = s2sad.hessian(rosen)(x)
    for k in range(5):
        np.testing.assert_allclose(got[k], central_fd(lambda x: s2sad.grad(rosen)(x)[k], (x,), 0), rtol=1e-6,
                                   atol=1e-5)


def test_jacrev_of_a_grad_takes_the_batched_sweep():
    x, y = np.linspace(-1.0, 1.3, 6), np.linspace(0.2, 0.9, 6)
    jr = s2sad.jacrev(s2sad.grad(rosen))
    np.testing.assert_allclose(jr(x), rosen_hessian(x), rtol=1e-12, atol=1e-10)
    assert jr.batched.why_not is None
    got = s2sad.jacrev(s2sad.grad(two, argnums=(0, 1)), argnums=(0, 1))(x, y)
    for a in range(2):
        for b in range(2):
            np.testing.assert_allclose(got[a][b], per_column(two, (x, y), a, b), rtol=1e-12, atol=1e-12)
    one = s2sad.jacrev(s2sad.grad(two, argnums=1), argnums=0)(x, y)
    np.testing.assert_allclose(one, per_column(two, (x, y), 1, 0), rtol=1e-12, atol=1e-12)
    jl = s2sad.jacrev(s2sad.grad(looped))       # no batched form: its rows, one pullback each
    np.testing.assert_allclose(jl(x), per_column(looped, (x,), 0, 0), rtol=1e-11, atol=1e-12)
    assert "loop" in jl.batched.why_not

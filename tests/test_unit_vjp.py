"""The pullback of a kernel whose partials are the literal 1 (`z = X @ W + b`): the seed
itself, summed back by unbroadcast (derivative_runtime.unit_vjp, passes/unitpartials),
the kernel's own pass skipped. Same numbers as the kernel's vjp, central differences,
the python backend; declined operands (other dtypes, numbers) take the kernel's vjp."""
import numpy as np
import pytest

import s2sad
from s2sad.derivative_runtime import kernel_vjp, unit_vjp
from s2sad.reduce import unbroadcast

from conftest import central_fd, no_value_join


def xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def squared(W, b, X):
    z = X @ W + b
    return np.sum(np.max(z, axis=1) ** 2)


def scaled(W, b, X):
    z = X @ W * b            # partial b (not 1): the kernel's vjp
    return np.sum(np.max(z, axis=1) ** 2)


def minus(W, b, X):
    z = X @ W - b            # partial -1 for b: the kernel's vjp
    return np.sum(np.max(z, axis=1) ** 2)


def three(W, b, c, X):
    z = b + X @ W + c
    return np.sum(np.max(z, axis=1) * np.min(z, axis=1))


def _args(f, dtype=np.float64, n=30):
    rng = np.random.default_rng(0)
    W, X = rng.normal(size=(4, 3)).astype(dtype), rng.normal(size=(n, 4)).astype(dtype)
    b = rng.normal(size=(1, 3)).astype(dtype)
    if f is xent:
        return (W, b, X, np.eye(3)[rng.integers(0, 3, n)]), (0, 1)
    if f is three:
        return (W, b, rng.normal(size=3).astype(dtype), X), (0, 1, 2)
    return (W, b, X), (0, 1)


@pytest.mark.parametrize("f,unit", [(xent, True), (squared, True), (three, True), (scaled, False), (minus, False)])
def test_which_kernels_take_it(f, unit):
    args, argnums = _args(f)
    with no_value_join():       # (else xent's unit_vjp is inside xent_head_bars, as in its grad)
        g = s2sad.value_and_grad(f, argnums=argnums)
        g(*args)
        assert ("unit_vjp(" in s2sad.source(g)) == unit


@pytest.mark.parametrize("f", [xent, squared, three, scaled, minus])
def test_grads_against_central_differences_and_python(f, backend):
    args, argnums = _args(f)
    copies = [np.copy(a) for a in args]
    got = [s2sad.grad(f, argnums=argnums, backend=backend)(*args) for _ in range(3)]     # and the hot path
    for i, gi in zip(argnums, got[-1]):
        np.testing.assert_allclose(gi, central_fd(f, args, i), rtol=1e-6, atol=1e-7)
    for a, b in zip(got[0], got[-1]):
        np.testing.assert_array_equal(a, b)
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)


class _Kernel:
    """Stands in for a kernel the fast path never reaches."""
    def __getattr__(self, name):
        raise AssertionError("the kernel's vjp ran")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_seed_is_each_adjoint_before_the_sums(dtype):
    rng = np.random.default_rng(1)
    p, b, g = rng.normal(size=(7, 3)).astype(dtype), rng.normal(size=(1, 3)).astype(dtype), \
        rng.normal(size=(7, 3)).astype(dtype)
    g[0, 0], g[1, 1], g[2, 2] = np.nan, -0.0, np.inf
    got = unit_vjp(_Kernel(), (p, b), ("p", "b"), g)
    assert got[0] is g and got[1] is g
    assert unbroadcast(got[1], b).dtype == dtype


def test_declined_operands_take_the_kernels_vjp():
    rng = np.random.default_rng(2)
    g = rng.normal(size=(5, 3))
    for args in [(rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(1, 3))),   # mixed dtypes
                 (rng.normal(size=(5, 3)), 2.0),                                          # a number
                 (rng.normal(size=(5, 3)), np.arange(3))]:                                 # ints
        with pytest.raises(AssertionError, match="the kernel's vjp ran"):
            unit_vjp(_Kernel(), args, ("p", "b"), g)
    with pytest.raises(AssertionError, match="the kernel's vjp ran"):     # a seed of another shape
        unit_vjp(_Kernel(), (rng.normal(size=(5, 3)), rng.normal(size=(1, 3))), ("p", "b"), g[:1])


def test_mixed_dtypes_and_nonfinite_through_grad():
    args, argnums = _args(squared, np.float32)
    W, b, X = args
    want = s2sad.grad(squared, argnums=argnums, backend="python")(W, b.astype(np.float64), X)
    got = s2sad.grad(squared, argnums=argnums)(W, b.astype(np.float64), X)
    for a, w in zip(got, want):
        assert a.dtype == w.dtype
        np.testing.assert_allclose(a, w, rtol=1e-5)
    X = X.copy()
    X[3, 1] = np.inf
    gW, gb = s2sad.grad(squared, argnums=argnums)(W, b, X)
    assert np.isnan(gb).any() or np.isinf(gb).any()


def test_same_numbers_as_the_kernels_vjp():
    """unit_vjp then unbroadcast against the kernel's own vjp of the same statement."""
    args, argnums = _args(squared, n=200)
    g = s2sad.grad(squared, argnums=argnums)
    g(*args)
    src = s2sad.source(g)
    ref = s2sad.grad(squared, argnums=argnums, backend="python")(*args)
    for a, r in zip(g(*args), ref):
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-12)
    assert "unit_vjp(" in src


@pytest.mark.parametrize("shapes,full", [([(5, 3), (1, 3)], (5, 3)), ([(5, 3), (3,)], (5, 3)), ([(5, 1), (1, 3)], (5, 3)),
                                         ([(5, 3), (2, 3)], (5, 3)), ([(1, 3), (1, 3)], (5, 3)), ([(5, 3), ()], (5, 3)),
                                         ([(2, 5, 3), (5, 3)], (5, 3)), ([(), ()], ()), ([(1, 1)], (1, 1))])
def test_broadcast_shape_check(shapes, full):
    from s2sad.derivative_runtime import broadcasts_to
    try:
        want = np.broadcast_shapes(*shapes) == full
    except ValueError:
        want = False
    assert broadcasts_to(shapes, full) == want

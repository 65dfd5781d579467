"""`z = X @ W + b` with the bias row added in the product's own pass (a gemm epilogue:
passes/biasproducts, derivative_runtime.matmul_bias, gemm.product_plus_row): the same
bits as the product then the kernel's add (S2SAD_ROW_FUSION=0 runs those), gradients
against central differences and the python backend, and the shapes, dtypes and
programs it declines."""
import numpy as np
import pytest

import s2sad
from s2sad import gemm, rowsoftmax

from conftest import central_fd

N, Q, M = 4000, 32, 10        # n q m >= gemm.MIN_WORK: s2sad's product takes it


def peak(W, b, X):
    z = X @ W + b
    return np.sum(np.max(z, axis=1) ** 2)


def peak_swapped(W, b, X):
    z = b + X @ W
    return np.sum(np.max(z, axis=1) ** 2)


def through(W, b, V, X):
    z = X @ W + b             # z's value is not needed for W's gradient, the product's shape is
    return np.sum(np.cumsum(z, axis=1) * V[0, 0])


def product_read_twice(W, b, X):
    p = X @ W
    z = p + b
    return np.sum(np.max(z, axis=1) ** 2) + np.sum(np.max(p, axis=1))


def scaled_bias(W, b, X):
    z = X @ W + 2.0 * b
    return np.sum(np.max(z, axis=1) ** 2)


def xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def _args(f, n=N, dtype=np.float64, bias_shape=(1, M)):
    rng = np.random.default_rng(n)
    W, X = rng.normal(size=(Q, M)).astype(dtype) / 5, rng.normal(size=(n, Q)).astype(dtype)
    b = rng.normal(size=bias_shape).astype(dtype)
    if f is through:
        return (W, b, rng.normal(size=(M, 3)).astype(dtype), X), (0,)
    if f is xent:
        return (W, b, X, np.eye(M)[rng.integers(0, M, n)]), (0, 1)
    return (W, b, X), (0, 1)


def _fused(f, argnums):
    g = s2sad.grad(f, argnums=argnums)
    return g, s2sad.source(g)


@pytest.mark.parametrize("f,fused", [(peak, True), (peak_swapped, True), (through, True), (xent, True),
                                     (product_read_twice, False), (scaled_bias, False)])
def test_which_programs_take_it(f, fused, monkeypatch):
    args, argnums = _args(f)
    g, _ = _fused(f, argnums)
    g(*args)
    src = s2sad.source(g)
    # (xent's grad and value_and_grad: matmul_bias joined with the cross-entropy's adjoint as
    # head_logits, passes/xentheads; matmul_bias where head_logits does not take the
    # operands, and where the head is not joined)
    assert ("matmul_bias(" in src or "head_logits(" in src) == fused
    if f is xent:
        assert "head_logits(" in src and "head_logits(" in s2sad.source(s2sad.value_and_grad(f, argnums=argnums))
        from s2sad.passes import xentheads
        from s2sad.plans import PLANS
        monkeypatch.setattr(xentheads, "join", lambda *a: 0)
        PLANS.clear()
        assert "matmul_bias(" in s2sad.source(s2sad.value_and_grad(f, argnums=argnums))
        PLANS.clear()


@pytest.mark.parametrize("f", [peak, peak_swapped, through, product_read_twice])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("bias_shape", [(1, M), (M,)])
def test_the_unfused_bits(f, dtype, bias_shape, monkeypatch):
    args, argnums = _args(f, dtype=dtype, bias_shape=bias_shape)
    copies = [np.copy(a) for a in args]
    fused = [s2sad.value_and_grad(f, argnums=argnums)(*args) for _ in range(3)]      # the hot path too
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    assert not rowsoftmax.enabled()
    value, grads = s2sad.value_and_grad(lambda *a: f(*a), argnums=argnums)(*args)
    for v, gs in fused:
        assert np.asarray(v).tobytes() == np.asarray(value).tobytes()
        for a, b in zip(gs, grads):
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("f", [peak, through, xent])
def test_against_central_differences_and_python(f, backend):
    args, argnums = _args(f, n=40 if backend == "python" else N)
    got = s2sad.grad(f, argnums=argnums, backend=backend)(*args)
    small, _ = _args(f, n=40)
    if backend == "llvm":       # the big product's gradient against python's, the small one by differences
        want = s2sad.grad(f, argnums=argnums, backend="python")(*args)
        for a, w in zip(got, want):
            np.testing.assert_allclose(a, w, rtol=1e-10, atol=1e-10)
    got_small = s2sad.grad(f, argnums=argnums, backend=backend)(*small)
    for i, gi in zip(argnums, got_small):
        np.testing.assert_allclose(gi, central_fd(f, small, i), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["mixed_dtypes", "full_bias", "small", "empty", "nan", "strided_bias", "int_bias"])
def test_declined_or_odd_operands(case):
    args, argnums = _args(peak)
    W, b, X = args
    if case == "mixed_dtypes":
        X = X.astype(np.float32)
    elif case == "full_bias":
        b = np.random.default_rng(1).normal(size=(N, M))
    elif case == "small":
        X = X[:5]
    elif case == "empty":
        X = X[:0]
    elif case == "nan":
        X = X.copy()
        X[7, 3] = np.nan
    elif case == "strided_bias":
        b = np.random.default_rng(2).normal(size=(1, 2 * M))[:, ::2]
    elif case == "int_bias":
        b = np.arange(M).reshape(1, M)
    argnums = (0,) if case == "int_bias" else argnums
    got = s2sad.value_and_grad(peak, argnums=argnums)(W, b, X)
    want = s2sad.value_and_grad(peak, argnums=argnums, backend="python")(W, b, X)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10)
        for a, w in zip(got[1], want[1]):
            assert a.shape == w.shape and a.dtype == w.dtype
            np.testing.assert_allclose(a, w, rtol=1e-9, atol=1e-9)


def test_product_plus_row_bits_and_declines():
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32):
        for n, q, m in ((1000, 32, 64), (10000, 64, 10), (3000, 600, 7)):     # q past one block: 256
            a, w = rng.normal(size=(n, q)).astype(dtype), rng.normal(size=(q, m)).astype(dtype)
            row = rng.normal(size=(1, m)).astype(dtype)
            got = gemm.product_plus_row(a, w, row)
            assert got.tobytes() == (gemm.matmul(a, w) + row).tobytes()
            assert gemm.product_plus_row(a, w, row.astype(np.float16)) is None
            assert gemm.product_plus_row(a, w, np.ones((2, m), dtype)) is None
            assert gemm.product_plus_row(a, w, row, backend="python") is None


@pytest.mark.parametrize("f", [peak, peak_swapped])
def test_small_batches_on_the_hot_path_keep_the_bits(f, monkeypatch):
    """Below gemm.MIN_WORK numpy multiplies: the specialised copy (array_special's
    matmul_bias) runs numpy's product and the kernel's kept apply, from the second call."""
    args, argnums = _args(f, n=32)
    fused = [s2sad.grad(f, argnums=argnums)(*args) for _ in range(5)]
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    rowsoftmax.enabled()
    plain = s2sad.grad(lambda *a: f(*a), argnums=argnums)(*args)
    for got in fused:
        for a, b in zip(got, plain):
            assert a.tobytes() == b.tobytes()

"""A kernel's shared partial times its seed with the bias's column sums in one pass
(productsums.product_sums, codegen/llvm_mulsum): bit for bit the unfused
`unbroadcast(d * g, x)` for each input, on every layout it takes and every one it
declines; and the gradients of layers with a bias through grad against central
differences, the python backend, and S2SAD_ROW_FUSION=0 (the same bits)."""
import numpy as np
import pytest

import s2sad
from s2sad import rowsoftmax
from s2sad.productsums import product_sums
from s2sad.reduce import unbroadcast

from conftest import central_fd


def _unfused(d, g, inputs):
    p = d * g
    return tuple(unbroadcast(p, x) for x in inputs)


def _same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(a, b)     # NaN == NaN here; and the bits otherwise:
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k", [(1, 2), (3, 5), (1000, 64), (257, 10), (40, 129)])
@pytest.mark.parametrize("bias", [(1, None), (None,), (None, 1)])
def test_bits_are_the_unfused_ones(dtype, n, k, bias):
    rng = np.random.default_rng(n * k)
    d = rng.normal(size=(n, k)).astype(dtype)
    g = (rng.normal(size=(n, k)) * 1e3).astype(dtype)
    inputs = tuple(np.zeros((n, k), dtype) if b is None else np.zeros((b, k) if b else k, dtype)
                   for b in bias) + (np.zeros((1, k), dtype),)
    _same(product_sums(d, g, inputs), _unfused(d, g, inputs))


def test_nonfinite_and_signed_zeros():
    d = np.array([[np.nan, 1.0, -0.0, np.inf], [1.0, np.inf, 0.0, -np.inf], [2.0, 0.0, -0.0, 1.0]])
    g = np.array([[1.0, 2.0, 1.0, 1.0], [0.0, 0.0, -1.0, -np.inf], [1.0, 3.0, -2.0, np.nan]])
    inputs = (d, np.zeros((1, 4)), np.zeros(4))
    with np.errstate(all="ignore"):
        _same(product_sums(d, g, inputs), _unfused(d, g, inputs))


@pytest.mark.parametrize("case", ["strided_rows", "column_step", "fortran", "mixed_dtype", "one_column", "no_bias",
                                  "three_d", "scalar_input", "row_bias", "empty", "int_seed"])
def test_declined_layouts_give_the_unfused_results(case):
    rng = np.random.default_rng(1)
    d, g = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    inputs = (d, np.zeros((1, 4)))
    if case == "strided_rows":
        big = rng.normal(size=(12, 4))
        d = big[::2]                       # rows apart, still contiguous: taken, same bits
    elif case == "column_step":
        d = rng.normal(size=(6, 8))[:, ::2]
    elif case == "fortran":
        g = np.asfortranarray(g)
    elif case == "mixed_dtype":
        g = g.astype(np.float32)
    elif case == "one_column":
        d, g, inputs = d[:, :1], g[:, :1], (d[:, :1], np.zeros((1, 1)))
    elif case == "no_bias":
        inputs = (d, d)
    elif case == "three_d":
        d, g = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
        inputs = (d, np.zeros((1, 1, 4)))
    elif case == "scalar_input":
        inputs = (d, 2.0)
    elif case == "row_bias":
        inputs = (d, np.zeros((6, 1)))
    elif case == "empty":
        d, g, inputs = np.zeros((0, 4)), np.zeros((0, 4)), (np.zeros((0, 4)), np.zeros((1, 4)))
    elif case == "int_seed":
        g = np.arange(24).reshape(6, 4)
    _same(product_sums(d, g, inputs), _unfused(d, g, inputs))


def test_two_bias_inputs_do_not_alias_and_operands_are_not_written():
    rng = np.random.default_rng(2)
    d, g = rng.normal(size=(50, 8)), rng.normal(size=(50, 8))
    d0, g0 = d.copy(), g.copy()
    p, b1, b2 = product_sums(d, g, (d, np.zeros((1, 8)), np.zeros(8)))
    assert not np.shares_memory(b1, b2) and not np.shares_memory(p, d) and not np.shares_memory(p, g)
    b1[...] = 0.0
    assert np.all(b2 != 0.0)
    np.testing.assert_array_equal(d, d0)
    np.testing.assert_array_equal(g, g0)


def test_python_backend_and_switch_take_numpy(monkeypatch):
    rng = np.random.default_rng(3)
    d, g = rng.normal(size=(30, 6)), rng.normal(size=(30, 6))
    inputs = (d, np.zeros((1, 6)))
    _same(product_sums(d, g, inputs, backend="python"), _unfused(d, g, inputs))
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    assert not rowsoftmax.enabled()
    _same(product_sums(d, g, inputs), _unfused(d, g, inputs))


# ---------------------------------------------------------------- through grad


def layer(W, b, X):
    h = np.tanh(X @ W + b)
    return np.sum((h @ W.T) ** 2)


def two_biases(W, b, c, X):
    h = np.sin(X @ W + b + c)
    return np.sum(h @ h.T)


def mlp(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    z = np.maximum(h @ W2 + b2, 0.0)
    return np.mean((z - Y) ** 2)


def _cases():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 5))
    yield layer, (rng.normal(size=(5, 3)), rng.normal(size=(1, 3)), X), (0, 1)
    yield layer, (rng.normal(size=(5, 3)), rng.normal(size=3), X), (0, 1)
    yield two_biases, (rng.normal(size=(5, 3)), rng.normal(size=(1, 3)), rng.normal(size=3), X), (0, 1, 2)
    yield mlp, (rng.normal(size=(5, 8)), rng.normal(size=(1, 8)), rng.normal(size=(8, 2)), rng.normal(size=(1, 2)), X,
                rng.normal(size=(40, 2))), (0, 1, 2, 3)


@pytest.mark.parametrize("case", list(range(4)))
def test_grads_against_central_differences_and_python(case, backend):
    f, args, argnums = list(_cases())[case]
    got = s2sad.grad(f, argnums=argnums, backend=backend)(*args)
    for i, gi in zip(argnums, got):
        np.testing.assert_allclose(gi, central_fd(f, args, i), rtol=1e-6, atol=1e-7)
    src = s2sad.source(s2sad.grad(f, argnums=argnums))
    assert "product_sums(" in src or "lhs_bar_sums(" in src      # with the product's adjoint: gemm_epilogue


@pytest.mark.parametrize("case", list(range(4)))
def test_grads_are_the_unfused_bits(case, monkeypatch):
    f, args, argnums = list(_cases())[case]
    copies = [np.copy(a) for a in args]
    fused = [s2sad.grad(f, argnums=argnums)(*args) for _ in range(3)]      # the hot path's too
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    unfused = s2sad.grad(lambda *a: f(*a), argnums=argnums)(*args)
    for got in fused:
        for a, b in zip(got, unfused):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)


def test_big_layer_float32_and_nan_seed():
    rng = np.random.default_rng(6)
    W = rng.normal(size=(16, 64)).astype(np.float32)
    b = rng.normal(size=(1, 64)).astype(np.float32)
    X = rng.normal(size=(3000, 16)).astype(np.float32)
    gW, gb = s2sad.grad(layer, argnums=(0, 1))(W, b, X)
    rW, rb = s2sad.grad(layer, argnums=(0, 1), backend="python")(W, b, X)
    assert gW.dtype == np.float32 and gb.dtype == np.float32 and gb.shape == (1, 64)
    np.testing.assert_allclose(gb, rb, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(gW, rW, rtol=1e-4, atol=1e-3)
    X[7, 3] = np.nan
    gW, gb = s2sad.grad(layer, argnums=(0, 1))(W, b, X)
    assert np.all(np.isnan(gb)) and np.isnan(gW).any()

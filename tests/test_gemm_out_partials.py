"""A dense layer's partial recomputed from its output (gemm_outpartials.py,
passes/outpartials.py): `h = act(X @ W + b)` stores h alone where act's partial is a
function of h, and the adjoint computes it from h. Against S2SAD_GEMM_EPILOGUE=0 (the
same program unfused) and central differences, for each activation: the ones taken
(tanh, exp, sqrt, relu, minimum), relu on ties (the runtime check stores the partial),
the ones declined (leaky relu with a user slope, a user scalar function, a chain factor
other than 1), float32; the derivation itself on kernels."""
import gast
import numpy as np
import pytest

import s2sad
from s2sad import gemm_outpartials
from s2sad.passes.outpartials import output_partial
from s2sad.plans import PLANS

from conftest import central_fd, directional_fd

N, D, H, C = 3000, 32, 64, 10          # N D H >= gemm.MIN_WORK: s2sad's product takes it
SLOPE = 0.2


def tanh_layer(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    return np.sum((h @ W2 - Y) ** 2)


def relu_layer(W1, b1, W2, X, Y):
    h = np.maximum(X @ W1 + b1, 0.0)
    return np.sum((h @ W2 - Y) ** 2)


def exp_layer(W1, b1, W2, X, Y):
    h = np.exp(X @ W1 + b1)
    return np.sum((h @ W2 - Y) ** 2)


def sqrt_layer(W1, b1, W2, X, Y):
    h = np.sqrt(X @ W1 + b1)           # the arguments are made positive (_args)
    return np.sum((h @ W2 - Y) ** 2)


def min_layer(W1, b1, W2, X, Y):
    h = np.minimum(0.5, X @ W1 + b1)   # the product second: maximum/minimum's other partial
    return np.sum((h @ W2 - Y) ** 2)


def leaky_user_slope(W1, b1, W2, X, Y, slope):
    z = X @ W1 + b1
    h = np.maximum(z, slope * z)
    return np.sum((h @ W2 - Y) ** 2)


def leaky_where(W1, b1, W2, X, Y, slope):
    z = X @ W1 + b1
    h = np.where(z > 0.0, z, slope * z)
    return np.sum((h @ W2 - Y) ** 2)


def _softsign(z):
    return z / (1.0 + abs(z))


def user_scalar(W1, b1, W2, X, Y):
    h = s2sad.broadcast(_softsign, X @ W1 + b1)
    return np.sum((h @ W2 - Y) ** 2)


def scaled_tanh(W1, b1, W2, X, Y):
    h = np.tanh(2.0 * (X @ W1) + b1)   # the partial is 2 (1 - h h): not the rule's own
    return np.sum((h @ W2 - Y) ** 2)


UNSTORED = [tanh_layer, relu_layer, exp_layer, sqrt_layer, min_layer]
STORED = [leaky_user_slope, leaky_where, user_scalar, scaled_tanh]
WITH_SLOPE = (leaky_user_slope, leaky_where)


def _args(f, n=N, dtype=np.float64, ties=False):
    rng = np.random.default_rng(n + 11)
    W1 = rng.normal(size=(D, H)) / np.sqrt(D)
    b1 = rng.normal(size=(1, H)) * 0.1
    X = rng.normal(size=(n, D))
    if f is sqrt_layer:
        W1, b1, X = np.abs(W1), np.abs(b1) + 0.1, np.abs(X)
    if f is exp_layer:
        W1 = W1 * 0.3
    if ties:                           # z == 0 exactly: whole rows of X and entries of b are 0
        X[::7] = 0.0
        b1[0, ::3] = 0.0
    args = [W1, b1, rng.normal(size=(H, C)) / 8, X, rng.normal(size=(n, C))]
    args = [a.astype(dtype) for a in args]
    if f in WITH_SLOPE:
        args.append(SLOPE)
    return tuple(args), (0, 1, 2)


def _grads(f, args, monkeypatch, on: bool):
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1" if on else "0")
    PLANS.clear()
    g = s2sad.grad(f, argnums=(0, 1, 2))
    got = [g(*args) for _ in range(2)]         # the hot path too
    return got, s2sad.source(g)


@pytest.fixture
def unstored(monkeypatch):
    """How many OutputPartials the runtime makes (the partial not stored)."""
    made = []
    real = gemm_outpartials.OutputPartial.__init__

    def counting(self, *a):
        made.append(self)
        real(self, *a)
    monkeypatch.setattr(gemm_outpartials.OutputPartial, "__init__", counting)
    return made


def _close(got, want, dtype):
    tol = 1e-12 if dtype == np.float64 else 1e-5
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.max(np.abs(b)))


@pytest.mark.parametrize("f", UNSTORED + STORED)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_against_the_unfused_program(f, dtype, monkeypatch, unstored):
    args, _ = _args(f, dtype=dtype)
    copies = [np.copy(a) for a in args]
    fused, src = _grads(f, args, monkeypatch, True)
    assert ("from_out=True" in src) == (f in UNSTORED), src
    assert len(unstored) == (2 if f in UNSTORED else 0)     # each call: one layer
    (want,), _ = _grads(f, args, monkeypatch, False)[0][:1], None
    for got in fused:
        _close(got, want, dtype)
        # (W1 = X.T @ _1_bar is made by blocks in the pass that makes _1_bar, which is never
        # stored: rounding apart from the unfused W1, _close's check; _1_bar's bits are
        # test_gemm_epilogue's, lhs_bar_sums called without nxt)
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("f", [relu_layer, min_layer, tanh_layer])
def test_ties_store_the_partial(f, monkeypatch, unstored):
    """relu at 0: numpy's maximum splits a tie 0.5/0.5 (as JAX), which h = 0 cannot
    tell from z < 0; the check finds the tie and the layer stores its partial."""
    args, _ = _args(f, ties=True)
    if f is min_layer:
        args = list(args)
        args[1] = args[1] + 0.5        # ties at 0.5 where b was 0 and the row is 0
        args = tuple(args)
    fused, src = _grads(f, args, monkeypatch, True)
    assert "from_out=True" in src
    assert len(unstored) == (2 if f is tanh_layer else 0)
    (want,), _ = _grads(f, args, monkeypatch, False)[0][:1], None
    for got in fused:
        _close(got, want, np.float64)
    if f is relu_layer:                # the tie's half slope reached b1's adjoint
        z = args[3] @ args[0] + args[1]
        assert np.any(z == 0.0)


@pytest.mark.parametrize("f", UNSTORED + STORED)
def test_against_central_differences(f, monkeypatch):
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1")
    args, argnums = _args(f, n=1100)
    PLANS.clear()
    got = s2sad.grad(f, argnums=argnums)(*args)
    fd = central_fd(f, args, 1)       # (the loss is ~1e4: differences carry ~1e-6 of noise)
    np.testing.assert_allclose(got[1], fd, rtol=1e-6, atol=1e-7 * np.max(np.abs(fd)))
    rng = np.random.default_rng(1)
    for i in (0, 2):
        v = rng.normal(size=args[i].shape)
        tans = [v if j == i else np.zeros_like(a) for j, a in enumerate(args)]
        np.testing.assert_allclose(np.sum(got[i] * v), directional_fd(f, args, tans), rtol=1e-6)


def test_relu_tie_against_the_convention(monkeypatch):
    """One tie, by hand: z = 0 at one element, slope 0.5 there (numpy's maximum, JAX)."""
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1")
    args, _ = _args(relu_layer)
    W1, b1, W2, X, Y = args
    X = X.copy()
    X[0] = 0.0
    b1 = b1.copy()
    b1[0, 0] = 0.0
    PLANS.clear()
    g = s2sad.grad(relu_layer, argnums=(0, 1))       # W1 too: the product is differentiated
    assert "from_out=True" in s2sad.source(g)
    got = g(W1, b1, W2, X, Y)[1]
    z = X @ W1 + b1
    h = np.maximum(z, 0.0)
    g = 2.0 * (h @ W2 - Y) @ W2.T
    slope = np.where(z > 0, 1.0, np.where(z == 0, 0.5, 0.0))
    np.testing.assert_allclose(got, np.sum(slope * g, axis=0, keepdims=True), rtol=1e-12, atol=1e-12)


def test_nan_and_inf_agree_with_the_unfused(monkeypatch):
    args, _ = _args(tanh_layer)
    X = args[3].copy()
    X[5, 3], X[9, 0] = np.nan, np.inf
    args = args[:3] + (X,) + args[4:]
    with np.errstate(all="ignore"):
        fused, _ = _grads(relu_layer, args, monkeypatch, True)
        (want,), _ = _grads(relu_layer, args, monkeypatch, False)[0][:1], None
    for got in fused:
        for a, b in zip(got, want):
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b))


def test_an_unfused_adjoint_reads_the_partial_as_its_array(monkeypatch, unstored):
    """lhs_bar_sums where its own pass does not run (the python backend here): the
    OutputPartial becomes F(h), the array the stored way keeps, bit for bit."""
    from s2sad import gemm_epilogue
    from s2sad.array_rules import matmul_lhs_bar
    from s2sad.productsums import product_sums
    args, _ = _args(tanh_layer)
    _grads(tanh_layer, args, monkeypatch, True)
    d = unstored[-1]
    h = d.h
    assert d.array().tobytes() == (1.0 - h * h).tobytes()
    rng = np.random.default_rng(3)
    g, w, b = rng.normal(size=(N, C)), rng.normal(size=(H, C)), np.zeros((1, H))
    inputs = (np.zeros((N, H)), b)
    got = gemm_epilogue.lhs_bar_sums(g, h, w, d, inputs, backend="python")
    want = product_sums(1.0 - h * h, matmul_lhs_bar(g, h, w), inputs, backend="python")
    for a, c in zip(got, want):
        assert a.tobytes() == c.tobytes()


def _kernel_dual(text: str, param: str):
    """A KernelModule-like object holding the dual `text` for (param,)."""
    fn = gast.parse(text).body[0]

    class K:
        dual_entry, active, functions = fn.name, (param,), {fn.name: fn}
    return K


@pytest.mark.parametrize("text,want", [
    ("def d(x, b):\n    t = x + b\n    u = math.tanh(t)\n    return (u, 1.0 - u * u)", "1.0 - out * out"),
    ("def d(x, b):\n    t = x + b\n    u = math.exp(t)\n    return (u, u)", "out"),
    ("def d(x, b):\n    t = x + b\n    return (math.maximum(t, 0.0), 0.5 if t == 0.0 else 1.0 if t > 0.0 else 0.0)",
     "1.0 if out > 0.0 else 0.0"),
    ("def d(x, b):\n    t = x + b\n    return (math.maximum(-1.5, t), 0.5 if -1.5 == t else 1.0 if t > -1.5 else 0.0)",
     "1.0 if out > -1.5 else 0.0"),
    # the chain factor is 2, not 1: not the rule's partial
    ("def d(x, b):\n    t = 2.0 * x + b\n    u = math.tanh(t)\n    return (u, (1.0 - u * u) * 2.0)", None),
    # two arguments move: leaky relu as maximum(z, a z)
    ("def d(x, a):\n    t = a * x\n    return (math.maximum(x, t), 0.5 * (1.0 + a) if x == t else 1.0 if x > t else a)",
     None),
    # a partial that reads the argument: log
    ("def d(x, b):\n    t = x + b\n    return (math.log(t), 1.0 / t)", None),
    # a branch: not straight-line
    ("def d(x, b):\n    if x > 0.0:\n        return (x, 1.0)\n    return (0.0, 0.0)", None)])
def test_output_partial_of_duals(text, want):
    k = _kernel_dual(text, "x")
    assert output_partial(k, "x") == want

"""Row fusion of layer normalisation (passes/layernorm.py, s2sad/rowlayernorm.py,
codegen/llvm_rownorm.py): the mean, centring, variance, sqrt and divide of each row,
as users write them with numpy, run as one compiled pass per row forward and one
backward. Checked against central differences, against the unfused program
(S2SAD_ROW_FUSION=0 when the plan is built keeps the statements) on the llvm and
python backends, and against the numpy formula on NaN/inf/constant rows.

Tolerance against the unfused program: 1e-11 (float64) / 2e-4 (float32) relative to
the gradient's scale: the fused row sums are vectorised partial sums (numpy's are
pairwise), the fused kernel multiplies by 1/sqrt(v + eps) where numpy divides, and
the fused adjoint is the exact-math formula r (g - mean g - h mean(g h)) where the
unfused one sums the mean's and the variance's adjoints separately.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import rowlayernorm as L
from s2sad import rowsoftmax as R
from s2sad.errors import S2SADError
from s2sad.plans import PLANS

from conftest import central_fd

EPS = 1e-5


def ln_methods(x, g, b):
    h = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    return np.sum(np.tanh(h))


def ln_statements(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    v = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    h = g * (x - mu) / np.sqrt(v + EPS) + b
    return np.sum(h ** 3 - h)


def ln_centred(x, g, b):
    mu = np.mean(x, axis=1, keepdims=True)
    xc = x - mu
    v = np.mean(xc * xc, axis=1, keepdims=True)
    return np.sum(np.sin(xc * (1.0 / np.sqrt(v + EPS)) * g + b))


def ln_var_call(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    v = np.var(x, axis=-1, keepdims=True)
    return np.sum(np.sin(xc / np.sqrt(1e-3 + v) * g) * b)


def ln_square(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    v = np.mean(np.square(xc), axis=-1, keepdims=True)
    y = xc * g / np.sqrt(v + 0.1)
    return np.sum(np.cos(y + b))


def ln_then_mean(x, g, b):
    """A normalised value read whole (the fused statement is the variable itself)."""
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    v = np.mean(xc ** 2, axis=-1, keepdims=True)
    h = xc / np.sqrt(v + EPS)
    return np.mean((h * g + b) ** 2) + np.sum(h[:, :1])


SPELLINGS = [ln_methods, ln_statements, ln_centred, ln_var_call, ln_square, ln_then_mean]


def mean_read_twice(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    v = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return np.sum(np.tanh((x - mu) / np.sqrt(v + EPS) * g + b)) + np.sum(mu)


def variance_read_twice(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    v = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return np.sum(np.tanh((x - mu) / np.sqrt(v + EPS) * g + b) + v)


def first_axis(x, g, b):
    mu = np.mean(x, axis=0, keepdims=True)
    v = np.mean((x - mu) ** 2, axis=0, keepdims=True)
    return np.sum(np.tanh((x - mu) / np.sqrt(v + EPS)) * g + b)


def sample_variance(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    return np.sum(np.tanh((x - mu) / np.sqrt(np.var(x, axis=-1, ddof=1, keepdims=True) + EPS) * g + b))


def eps_outside_sqrt(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    v = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return np.sum(np.tanh((x - mu) / (np.sqrt(v) + EPS) * g + b))


def eps_an_argument(x, g, b, eps=1e-5):
    mu = np.mean(x, axis=-1, keepdims=True)
    v = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return np.sum(np.tanh((x - mu) / np.sqrt(v + eps) * g + b))


NOT_FUSED = [mean_read_twice, variance_read_twice, first_axis, sample_variance, eps_outside_sqrt]


def _args(n, k, dtype=np.float64, seed=0, lead=()):
    rng = np.random.default_rng(seed + 31 * n + k)
    x = (rng.normal(size=(*lead, n, k)) * 3 + 1).astype(dtype)
    g = (rng.normal(size=(k,)) * 0.5 + 1).astype(dtype)
    b = (rng.normal(size=(k,)) * 0.1).astype(dtype)
    return x, g, b


def _source(f, args, backend="auto"):
    gr = s2sad.grad(f, argnums=(0, 1, 2), backend=backend)
    gr(*args)
    return s2sad.source(gr)


@pytest.mark.parametrize("f", SPELLINGS)
def test_each_spelling_is_one_row_fused_statement(f):
    src = _source(f, _args(4, 5))
    assert "row_layer_norm(" in src and "row_layer_norm_bar(" in src
    assert "reduce_mean" not in src and "mean_bar" not in src and "var_bar" not in src
    assert "one pass per row forward and one backward" in str(s2sad.explain(f, (0, 1, 2)))


@pytest.mark.parametrize("f", NOT_FUSED + [eps_an_argument])
def test_chains_read_elsewhere_or_written_otherwise_are_not_fused(f):
    args = _args(4, 5)
    assert "row_layer_norm" not in _source(f, args)
    got = s2sad.grad(f, argnums=(0, 1, 2))(*args)
    for i in range(3):
        np.testing.assert_allclose(got[i], central_fd(f, args, i), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", SPELLINGS)
@pytest.mark.parametrize("n,k,lead", [(1, 1, ()), (3, 10, ()), (2, 64, ()), (3, 8, (2,))])
def test_gradients_against_central_differences(f, n, k, lead):
    args = _args(n, k, lead=lead)
    got = s2sad.grad(f, argnums=(0, 1, 2))(*args)
    for i in range(3):
        fd = central_fd(f, args, i)
        np.testing.assert_allclose(got[i], fd, rtol=1e-5, atol=2e-6 * (1 + np.abs(fd).max()))


def _value_and_grad(f, args, fused: bool, monkeypatch, backend="auto"):
    monkeypatch.setenv("S2SAD_ROW_FUSION", "1" if fused else "0")
    PLANS.clear()
    try:
        return s2sad.value_and_grad(f, argnums=(0, 1, 2), backend=backend)(*args)
    finally:
        PLANS.clear()


def _agree(a, b, dtype):
    tol = {np.float64: 1e-11, np.float32: 2e-4}[dtype]
    assert np.shape(a) == np.shape(b) and np.result_type(a) == np.result_type(b)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * (1 + np.abs(b).max(initial=0)))


@pytest.mark.parametrize("backend", ["auto", "python"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k", [(0, 64), (1, 1), (10_000, 64), (7, 1000)])
@pytest.mark.parametrize("f", [ln_methods, ln_statements, ln_centred])
def test_fused_and_unfused_programs_agree(f, n, k, dtype, backend, monkeypatch):
    if backend == "python":          # its kernels run as Python per element: fewer rows
        n = min(n, 200)
    args = _args(n, k, dtype)
    v1, g1 = _value_and_grad(f, args, True, monkeypatch, backend)
    v2, g2 = _value_and_grad(f, args, False, monkeypatch, backend)
    _agree(v1, v2, dtype)
    for a, b in zip(g1, g2):
        assert a.dtype == dtype
        _agree(a, b, dtype)


def test_the_switch_is_read_when_the_plan_is_built(monkeypatch):
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    PLANS.clear()
    try:
        src = _source(ln_statements, _args(4, 5))
    finally:
        PLANS.clear()
    assert "row_layer_norm" not in src and "reduce_mean" in src


def test_the_python_backend_runs_the_numpy_formula_as_the_oracle():
    args = _args(50, 16)
    fast = s2sad.grad(ln_centred, argnums=(0, 1, 2))(*args)
    oracle = s2sad.grad(ln_centred, argnums=(0, 1, 2), backend="python")(*args)
    for a, b in zip(fast, oracle):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("make", [lambda x: x[:, ::2], lambda x: x.T.copy().T, lambda x: x[::2, 1:],
                                  lambda x: np.asfortranarray(x)])
def test_layouts_the_loop_does_not_take_or_takes_strided(make):
    x, g, b = _args(6, 16)
    xs = make(x)
    gs, bs = g[:xs.shape[1]], b[:xs.shape[1]]
    got = s2sad.grad(ln_statements, argnums=(0, 1, 2))(xs, gs, bs)
    for i, a in enumerate((xs, gs, bs)):
        np.testing.assert_allclose(got[i], central_fd(ln_statements, (xs, gs, bs), i), rtol=1e-5, atol=1e-6)


def test_inputs_are_not_mutated():
    args = _args(20, 9)
    keep = [a.copy() for a in args]
    s2sad.value_and_grad(ln_methods, argnums=(0, 1, 2))(*args)
    for a, k in zip(args, keep):
        np.testing.assert_array_equal(a, k)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_inf_and_constant_rows_give_what_the_numpy_statements_give(dtype, monkeypatch):
    x = np.array([[1, np.nan, 2, 3], [np.inf, 1, 2, 3], [2, 2, 2, 2], [1e300, -1e300, 0, 1], [0, 1, 2, 3]],
                 dtype=dtype)
    g, b = np.ones(4, dtype), np.zeros(4, dtype)
    with np.errstate(all="ignore"):
        v1, g1 = _value_and_grad(ln_centred, (x, g, b), True, monkeypatch)
        v2, g2 = _value_and_grad(ln_centred, (x, g, b), False, monkeypatch)
    assert np.isnan(v1) and np.isnan(v2)
    good = np.isfinite(g2[0]).all(axis=1)
    assert good[2] and good[4] and not good[0]
    _agree(g1[0][good], g2[0][good], dtype)
    assert np.array_equal(np.isnan(g1[0]).any(axis=1), np.isnan(g2[0]).any(axis=1))


def test_a_zero_eps_and_a_constant_row_give_nan_as_numpy_does():
    x = np.array([[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(L.row_layer_norm(x, 0.0), L.reference_layer_norm(x, 0.0))
    assert np.isnan(L.row_layer_norm(x, 0.0)[0]).all()


def test_integer_inputs_are_refused_as_unfused():
    x = np.arange(12).reshape(3, 4)
    g, b = np.ones(4), np.zeros(4)
    with pytest.raises(S2SADError):
        s2sad.grad(ln_statements)(x, g, b)


def test_forward_mode_and_forward_over_reverse():
    x, g, b = _args(3, 6)
    t = np.random.default_rng(5).normal(size=x.shape)
    h = 1e-6
    _, tangent = s2sad.jvp(ln_statements, (x, g, b), (t, np.zeros_like(g), np.zeros_like(b)))
    fd = (ln_statements(x + h * t, g, b) - ln_statements(x - h * t, g, b)) / (2 * h)
    np.testing.assert_allclose(tangent, fd, rtol=1e-6)
    grad = s2sad.grad(ln_statements)
    _, hv = s2sad.jvp(grad, (x, g, b), (t, np.zeros_like(g), np.zeros_like(b)))
    fd = (grad(x + h * t, g, b) - grad(x - h * t, g, b)) / (2 * h)
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-6 * (1 + np.abs(fd).max()))


# ---------------------------------------------------------------- the runtime entries


TOL = {np.float64: 1e-13, np.float32: 2e-6}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(0, 10), (1, 1), (10, 1), (1, 1000), (10_000, 64), (3, 7), (2, 3, 5), (5,)])
def test_compiled_rows_match_the_numpy_formula(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    x = (rng.normal(size=shape) * 4 + 2).astype(dtype)
    gs = rng.normal(size=shape).astype(dtype)
    for eps in (1e-5, 0.5):
        got, ref = L.row_layer_norm(x, eps), L.reference_layer_norm(x, eps)
        assert got.dtype == dtype and got.shape == x.shape
        np.testing.assert_allclose(got, ref, rtol=0, atol=TOL[dtype] * 10)
        got, ref = L.row_layer_norm_bar(gs, x, eps), L.reference_layer_norm_bar(gs, x, eps)
        assert got.dtype == dtype and got.shape == x.shape
        np.testing.assert_allclose(got, ref, rtol=0, atol=TOL[dtype] * 10 * (1 + np.abs(ref).max(initial=0)))


def test_the_adjoint_is_the_transposed_tangent():
    x, _, _ = _args(4, 7)
    rng = np.random.default_rng(9)
    u, w = rng.normal(size=x.shape), rng.normal(size=x.shape)
    out = L.row_layer_norm(x, EPS)
    lhs = np.sum(L.layer_norm_jvp(u, x, out, EPS) * w)
    rhs = np.sum(u * L.row_layer_norm_bar(w, x, EPS))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)


def test_the_python_backend_and_the_switch_take_the_formula(monkeypatch):
    x = np.random.default_rng(4).normal(size=(6, 5))
    np.testing.assert_array_equal(L.row_layer_norm(x, EPS, backend="python"), L.reference_layer_norm(x, EPS))
    monkeypatch.setenv("S2SAD_ROW_FUSION", "0")
    assert not R.enabled()      # (read when a plan is built or when asked, not at each call)
    np.testing.assert_array_equal(L.row_layer_norm(x, EPS), L.reference_layer_norm(x, EPS))
    np.testing.assert_array_equal(L.row_layer_norm(x, EPS, axis=0), L.reference_layer_norm(x, EPS, axis=0))


def normalised_in_a_loop(x, g, b):
    """The statistics outside a loop, the normalisation inside: across blocks, kept."""
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    v = np.mean(xc ** 2, axis=-1, keepdims=True)
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(np.tanh(xc / np.sqrt(v + 1e-5) * g * i + b))
    return acc


def layers_in_a_loop(x, g, b):
    """A layer norm in a loop's body (one block): fused there."""
    acc = 0.0
    for i in range(2):
        mu = np.mean(x, axis=-1, keepdims=True)
        xc = x - mu
        v = np.mean(xc ** 2, axis=-1, keepdims=True)
        x = np.tanh(xc / np.sqrt(v + 1e-5) * g + b)
        acc = acc + np.sum(x)
    return acc


@pytest.mark.parametrize("f,fused", [(normalised_in_a_loop, False), (layers_in_a_loop, True)])
def test_loops(f, fused):
    args = _args(5, 4)
    assert ("row_layer_norm(" in _source(f, args)) == fused
    got = s2sad.grad(f, argnums=(0, 1, 2))(*args)
    for i in range(3):
        np.testing.assert_allclose(got[i], central_fd(f, args, i), rtol=1e-6, atol=1e-8)

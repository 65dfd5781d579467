"""s2sad.gemm: the compiled product of thin shapes against numpy's, its tails, strides,
dtypes and threads; when numpy's product is taken instead; and an MLP's gradient
through it."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s2sad
from s2sad import gemm
from s2sad.codegen import llvm_gemm, llvm_jit


def _close(c, a, b):
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-12 if c.dtype == np.float64 else 1e-5
    assert c.shape == ref.shape and c.dtype == a.dtype
    np.testing.assert_allclose(c, ref, rtol=tol, atol=tol * max(1.0, float(np.abs(ref).max(initial=0))))


def _views(rng, p, q, m, dt):
    """Operands a (p, q), b (q, m) in the layouts the product meets: C order, Fortran
    order, a transpose, reversed and strided views."""
    a = rng.standard_normal((p, q)).astype(dt)
    b = rng.standard_normal((q, m)).astype(dt)
    at = np.ascontiguousarray(a.T).T                       # a.T of a C array: X.T in X.T @ G
    a_rev = rng.standard_normal((p, 2 * q)).astype(dt)[::-1, ::2]
    b_wide = rng.standard_normal((q, m + 3)).astype(dt)[:, 1:m + 1]    # rows contiguous, longer stride
    return [(a, b), (np.asfortranarray(a), b), (at, b), (a_rev, b), (a, b_wide), (a, np.asfortranarray(b)),
            (a, b[::-1])]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("p,q,m", [(1, 1, 1), (3, 5, 7), (4, 8, 8), (7, 11, 5), (13, 37, 37), (9, 300, 17),
                                   (6, 600, 64), (33, 2, 129), (5, 257, 3), (17, 40, 10), (64, 33, 3), (25, 300, 2)])
def test_product_matches_numpy(dt, p, q, m):
    rng = np.random.default_rng(p * 1000 + q * 10 + m)
    for a, b in _views(rng, p, q, m, dt):
        a0, b0 = a.copy(), b.copy()
        if b.strides[1] != b.itemsize:
            b = np.ascontiguousarray(b)
        _close(gemm._product(a, b), a, b)
        np.testing.assert_array_equal(a, a0)        # operands are never written
        np.testing.assert_array_equal(b, b0)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(p=st.integers(1, 40), q=st.integers(1, 70), m=st.integers(1, 140), transposed=st.booleans(),
       f32=st.booleans())
def test_random_shapes(p, q, m, transposed, f32):
    dt = np.float32 if f32 else np.float64
    rng = np.random.default_rng(p + 41 * q + 997 * m)
    a = rng.standard_normal((q, p) if transposed else (p, q)).astype(dt)
    a = a.T if transposed else a
    b = rng.standard_normal((q, m)).astype(dt)
    _close(gemm._product(a, b), a, b)


def test_each_element_is_one_chain_in_order():
    """A row's result does not depend on the tile it ran in (4-row tile, single row),
    nor on the q blocks: the same bits as that row alone, and as the sum in order."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((9, 700))
    b = rng.standard_normal((700, 21))
    whole = gemm._product(a, b)
    for k in range(9):
        np.testing.assert_array_equal(gemm._product(a[k:k + 1], b)[0], whole[k])
    # against the chain itself: an element computed with fma in index order (as
    # llvm.fmuladd does on an FMA host) or as multiply-then-add (elsewhere)
    fma = getattr(__import__("math"), "fma", None)
    if fma is not None:
        acc = 0.0
        for t in range(700):
            acc = fma(float(a[3, t]), float(b[t, 5]), acc)
        plain = 0.0
        for t in range(700):
            plain += float(a[3, t]) * float(b[t, 5])
        assert whole[3, 5] in (acc, plain)


def test_threads_give_the_same_bits(monkeypatch):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3001, 32))
    w = rng.standard_normal((32, 64))
    g = rng.standard_normal((3001, 64))
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    one = gemm.matmul(x, w), gemm.matmul(x.T, g)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "3")
    monkeypatch.setattr(gemm, "THREAD_WORK", 0)
    three = gemm.matmul(x, w), gemm.matmul(x.T, g)
    for u, v in zip(one, three):
        np.testing.assert_array_equal(u, v)
    _close(three[0], x, w)
    _close(three[1], x.T, g)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("n,p,m", [(100_000, 32, 10), (3001, 64, 10), (30_000, 17, 3), (4096, 128, 9), (20_000, 40, 2)])
def test_a_weight_gradient_flipped_has_the_bits_as_written(monkeypatch, dt, n, p, m):
    """`X.T @ G` with fewer vectors the other way round runs as (G.T @ X).T (gemm._flipped):
    each element the same chain, so the bits of the product as written, on one thread or
    several; X reversed, G's rows strided or a copy: the same."""
    # (the lanes of an AVX-512 host, whatever this one has: the choice, not the product, reads them)
    monkeypatch.setitem(gemm._LANES, np.dtype(dt), 8 if dt == np.float64 else 16)
    rng = np.random.default_rng(n + p + m)
    x = rng.standard_normal((n, p)).astype(dt)
    g = rng.standard_normal((n, m)).astype(dt)
    cases = [(x, g), (x[::-1], g), (x, rng.standard_normal((n, m + 5)).astype(dt)[:, 2:m + 2]),
             (x, np.asfortranarray(g)), (x, g[::-1])]
    for xx, gg in cases:
        a, b = gemm._operands(xx.T, gg)
        assert gemm._flip_wins(a, b)
        monkeypatch.setattr(gemm, "FLIP", False)
        assert not gemm._flip_wins(a, b)
        want = gemm.matmul(xx.T, gg)
        monkeypatch.setattr(gemm, "FLIP", True)
        for threads in ("1", "2"):
            monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
            got = gemm.matmul(xx.T, gg)
            assert got.flags.c_contiguous and got.shape == (p, m) and got.dtype == dt
            np.testing.assert_array_equal(got, want)
        _close(got, xx.T, gg)


def test_only_fewer_vectors_flip(monkeypatch):
    """Square weights (64 x 64: as many vectors either way), a product whose left operand
    is not a transpose, and one whose flipped rows would pass MAX_ROW_BYTES run as written."""
    monkeypatch.setitem(gemm._LANES, np.dtype(np.float64), 8)
    rng = np.random.default_rng(5)
    x, g = rng.standard_normal((5000, 64)), rng.standard_normal((5000, 64))
    assert not gemm._flip_wins(*gemm._operands(x.T, g))
    w = rng.standard_normal((64, 10))
    assert not gemm._flip_wins(*gemm._operands(x, w))
    wide = rng.standard_normal((3000, 200))
    assert not gemm._flip_wins(*gemm._operands(wide.T, rng.standard_normal((3000, 10))))


def test_when_numpy_multiplies(monkeypatch):
    """Only 2-D float arrays of one dtype with a thin right operand take s2sad's loop;
    the rest is numpy's product, its errors included."""
    calls = []
    real = gemm._product
    monkeypatch.setattr(gemm, "_product", lambda a, b: calls.append((a.shape, b.shape)) or real(a, b))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((600, 32))
    w = rng.standard_normal((32, 64))
    np.testing.assert_allclose(gemm.matmul(x, w), x @ w, rtol=1e-12)
    assert calls == [((600, 32), (32, 64))]
    calls.clear()
    for a, b in [(x, rng.standard_normal((32, 300))),          # wide: BLAS's
                 (x, w[:, :1]),                                # one column: a matrix-vector product
                 (x[:3, :4], w[:4, :8]),                       # tiny
                 (x.astype(np.float32), w),                    # mixed dtypes
                 (x.astype(int), w.astype(int)),               # integers
                 (x[None], w),                                 # 3-D
                 (x[0], w)]:                                   # 1-D
        np.testing.assert_array_equal(gemm.matmul(a, b), a @ b)
        np.testing.assert_array_equal(gemm.dot(a, b), np.dot(a, b))
    np.testing.assert_array_equal(gemm.matmul(x, w, backend="python"), x @ w)
    assert calls == []
    with pytest.raises(ValueError) as ours:
        gemm.matmul(x, w[:31])
    with pytest.raises(ValueError) as numpys:
        x @ w[:31]
    assert str(ours.value) == str(numpys.value)


@pytest.mark.parametrize("lanes,vectors", [(4, 2), (2, 4), (16, 1)])
def test_other_hosts_tiles(lanes, vectors):
    """The IR for another host's vector width (AVX2: 4 doubles, 128-bit: 2), compiled
    here (LLVM splits or widens the vectors): the same products."""
    ir = llvm_gemm.gemm_ir(np.float64, lanes=lanes, vectors=vectors)
    mod, _ = llvm_jit.optimize(ir)
    obj = llvm_jit._llvm()["tm"].emit_object(mod)
    name = llvm_gemm.symbol(np.float64)
    addresses, keep = llvm_jit._link(obj, [name])
    f = ctypes.CFUNCTYPE(None, *gemm._ARGTYPES)(addresses[name])
    rng = np.random.default_rng(lanes)
    for p, q, m in [(7, 300, 13), (4, 3, 1), (10, 9, 2 * lanes * vectors + 1)]:
        a = rng.standard_normal((p, q))
        b = rng.standard_normal((q, m))
        c = np.full((p, m), np.nan)
        f(a.ctypes.data, q, 1, b.ctypes.data, m, c.ctypes.data, m, p, q, m, 0, 0, p)
        _close(c, a, b)
        f(a.ctypes.data, q, 1, b.ctypes.data, m, c.ctypes.data, m, p, q, m, 1, 0, p)   # accumulate: C += A @ B
        _close(c / 2, a, b)
    del keep


def _mlp(W1, b1, W2, X, y):
    h = s2sad.broadcast(lambda z: z if z > 0 else 0.01 * z, X @ W1 + b1)
    return np.mean((h @ W2 - y) ** 2)


def _mlp_hand(W1, b1, W2, X, y):
    a = X @ W1 + b1
    h = np.where(a > 0, a, 0.01 * a)
    r = 2.0 * (h @ W2 - y) / y.size
    dh = (r @ W2.T) * np.where(a > 0, 1.0, 0.01)
    return X.T @ dh, dh.sum(axis=0, keepdims=True), h.T @ r


@pytest.mark.parametrize("outputs", [1, 3])
def test_mlp_gradient_through_gemm(outputs):
    """An MLP big enough that X @ W1 and its adjoint take s2sad's product: the gradient
    against the hand-written one, every mode the same bits."""
    rng = np.random.default_rng(4)
    n, d, hidden = 1500, 24, 40
    args = (rng.standard_normal((d, hidden)) / 5, rng.standard_normal((1, hidden)) / 10,
            rng.standard_normal((hidden, outputs)) / 6, rng.standard_normal((n, d)), rng.standard_normal((n, outputs)))
    g = s2sad.grad(_mlp, argnums=(0, 1, 2))
    assert "matmul(X, W1)" in s2sad.source(g)
    grads = {mode: s2sad.grad(_mlp, argnums=(0, 1, 2), mode=mode)(*args) for mode in ("store", "recompute", "auto")}
    for mode in ("recompute", "auto"):
        for u, v in zip(grads["store"], grads[mode]):
            np.testing.assert_array_equal(u, v)
    for got, ref in zip(grads["auto"], _mlp_hand(*args)):
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_special_values_propagate_as_numpys():
    """NaN and infinities in either operand reach the same elements as numpy's product."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((37, 50))
    b = rng.standard_normal((50, 40))
    a[3, 7], a[20, 0], b[11, 5], b[0, 39] = np.nan, np.inf, -np.inf, np.nan
    with np.errstate(invalid="ignore"):          # numpy warns of inf - inf; the loop does not
        c, ref = gemm._product(a, b), a @ b
    np.testing.assert_array_equal(np.isnan(c), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(c), np.isposinf(ref))
    np.testing.assert_array_equal(np.isneginf(c), np.isneginf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(c[finite], ref[finite], rtol=1e-12, atol=1e-12)


def test_float32_mlp_gradient_stays_float32():
    rng = np.random.default_rng(7)
    n, d, hidden = 2000, 32, 48
    args = [a.astype(np.float32) for a in (rng.standard_normal((d, hidden)) / 6, rng.standard_normal((1, hidden)) / 10,
                                          rng.standard_normal((hidden, 1)) / 7, rng.standard_normal((n, d)),
                                          rng.standard_normal((n, 1)))]
    got = s2sad.grad(_mlp, argnums=(0, 1, 2))(*args)
    ref = _mlp_hand(*[a.astype(np.float64) for a in args])
    for g, r in zip(got, ref):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, r, rtol=2e-4, atol=2e-5 * float(np.abs(r).max()))


def test_a_products_stand_in_is_shared_read_only_zeros():
    """gemm.stand_in: one per (dtype, shape), kept; read-only, so sharing it between calls
    cannot let one call's write show in another's."""
    a = gemm.stand_in(np.dtype(np.float64), (5, 3))
    assert gemm.stand_in(np.dtype(np.float64), (5, 3)) is a
    assert a.shape == (5, 3) and a.dtype == np.float64 and a.strides == (0, 0) and not a.any()
    with pytest.raises(ValueError):
        a[0, 0] = 1.0
    b = gemm.stand_in(np.dtype(np.float32), (5, 3))
    assert b is not a and b.dtype == np.float32
    for k in range(70):         # the cache is bounded: cleared when full, never grows past 64
        gemm.stand_in(np.dtype(np.float64), (k + 1, 2))
    assert len(gemm._STAND_INS) <= 64

"""The weights' adjoint in the activation adjoint's pass (issue 17's MLP): where
`W_bar = matmul_rhs_bar(_1_bar, X, W)` follows the lhs_bar_sums line that binds
`_1_bar`, passes/epilogues.py moves it into that line, `lhs_bar_sums(G, h, W2, dh,
(_1, b), (0, X, W))`, and gemm_epilogue takes `X.T @ _1_bar` a block of `_1_bar`'s rows
at a time while the block is in cache (gemm.inner_blocks), the blocks in fixed runs.

Checked against the separate calls (lhs_bar_sums without rhs, then matmul_rhs_bar):
the adjoint and the bias's sums keep their bits, the weights' adjoint is within
rounding (its bits where there is one block), the same bits on one thread or two,
odd row counts, float32, strided and transposed X, X aliasing W, NaN rows, inputs
never written; and the text rewrite's refusals."""
import numpy as np
import pytest

import s2sad
from s2sad import gemm, gemm_epilogue
from s2sad.array_rules import matmul_rhs_bar
from s2sad.passes.epilogues import fused_rhs_bar
from s2sad.plans import PLANS

H = 64


def _operands(n, q=32, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed + n)
    G = rng.normal(size=(n, H)).astype(dtype)
    h = np.tanh(rng.normal(size=(n, H))).astype(dtype)
    W2 = (rng.normal(size=(H, H)) / 8).astype(dtype)
    d = rng.uniform(size=(n, H)).astype(dtype)
    b = (rng.normal(size=(1, H)) * 0.1).astype(dtype)
    X = rng.normal(size=(n, q)).astype(dtype)
    W1 = (rng.normal(size=(q, H)) / 6).astype(dtype)
    return G, h, W2, d, b, X, W1


def _both(G, h, W2, d, b, X, W1):
    stand_in = np.broadcast_to(np.zeros((), G.dtype), (G.shape[0], H))
    copies = [np.copy(a) for a in (G, h, W2, d, b, X, W1)]
    fused = gemm_epilogue.lhs_bar_sums(G, h, W2, d, (stand_in, b), (0, X, W1))
    for a, c in zip((G, h, W2, d, b, X, W1), copies):
        np.testing.assert_array_equal(a, c)          # nothing written
    out, sums = gemm_epilogue.lhs_bar_sums(G, h, W2, d, (stand_in, b))
    return fused, (out, sums, matmul_rhs_bar(out, X, W1))


def _close(a, b, dtype):
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, np.nanmax(np.abs(b), initial=0.0)))


def test_the_generated_gradient_moves_the_weights_adjoint(monkeypatch):
    def mlp(W1, b1, W2, b2, W3, X, Y):
        h1 = np.tanh(X @ W1 + b1)
        h2 = np.maximum(h1 @ W2 + b2, 0.0)
        return np.mean((h2 @ W3 - Y) ** 2)
    rng = np.random.default_rng(1)
    n = 3000
    args = (rng.normal(size=(32, H)) / 6, rng.normal(size=(1, H)) * 0.1, rng.normal(size=(H, H)) / 8,
            rng.normal(size=(1, H)) * 0.1, rng.normal(size=(H, 10)) / 8, rng.normal(size=(n, 32)),
            rng.normal(size=(n, 10)))
    results = {}
    for on in ("1", "0"):
        monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", on)
        PLANS.clear()
        g = s2sad.grad(mlp, argnums=(0, 1, 2, 3, 4))
        results[on] = (g(*args), g(*args), s2sad.source(g))
    src = results["1"][2]
    assert "(0, X, W1))" in src and "(0, h1, W2))" in src
    assert src.count("matmul_rhs_bar(") == 1              # W3's: no lhs_bar_sums binds its G
    assert results["0"][2].count("matmul_rhs_bar(") == 3
    for got in results["1"][:2]:
        for a, b in zip(got, results["0"][0]):
            _close(a, b, np.float64)


@pytest.mark.parametrize("n", [1, 63, 1000, 1024, 1025, 3001, 9 * 1024 + 5, 20000])
def test_against_the_separate_calls(n):
    fused, (out, sums, wbar) = _both(*_operands(n))
    assert fused[0].tobytes() == out.tobytes()
    _close(fused[1], sums, np.float64)
    assert fused[2].shape == (32, H) and fused[2].dtype == np.float64
    if n <= gemm_epilogue.block_rows(H, np.dtype(np.float64)):     # one block: one chain, in order
        assert fused[2].tobytes() == wbar.tobytes()
    else:
        _close(fused[2], wbar, np.float64)


def test_more_blocks_than_runs_are_split_evenly():
    for blocks in (1, 2, 7, 8, 9, 98):
        runs = gemm_epilogue.block_groups(blocks)
        assert len(runs) == min(blocks, gemm_epilogue.PARTIALS)
        assert [i for r in runs for i in r] == list(range(blocks))
        assert max(map(len, runs)) - min(map(len, runs)) <= 1


def test_float32():
    fused, (out, sums, wbar) = _both(*_operands(5000, dtype=np.float32))
    assert all(a.dtype == np.float32 for a in fused)
    assert fused[0].tobytes() == out.tobytes()
    _close(fused[2], wbar, np.float32)


@pytest.mark.parametrize("layout", ["column_step", "fortran", "negative_rows", "x_is_other_dtype"])
def test_odd_x(layout):
    G, h, W2, d, b, X, W1 = _operands(3000)
    if layout == "column_step":
        X = np.repeat(X, 2, axis=1)[:, ::2]
    elif layout == "fortran":
        X = np.asfortranarray(X)
    elif layout == "negative_rows":
        X = X[::-1]
    else:
        X = X.astype(np.float32)             # not s2sad's product: matmul_rhs_bar after the pass
    fused, (out, sums, wbar) = _both(G, h, W2, d, b, X, W1)
    assert fused[2].dtype == wbar.dtype and fused[2].shape == wbar.shape
    _close(fused[2], wbar, np.float64)


def test_x_aliasing_the_weights():
    rng = np.random.default_rng(5)
    n = H * 2
    G, h, W2, d, b, _, _ = _operands(n, seed=5)
    A = rng.normal(size=(H, H))
    G, h, d = G[:H], h[:H], d[:H]             # p = q = m: X and W one array
    fused, (out, sums, wbar) = _both(G, h, W2, d, b, A, A)
    _close(fused[2], wbar, np.float64)
    np.testing.assert_allclose(fused[2], A.T @ out, rtol=1e-12, atol=1e-12)


def test_nan_rows():
    G, h, W2, d, b, X, W1 = _operands(3000)
    X = X.copy()
    X[17] = np.nan
    X[2500, 3] = np.inf
    G = G.copy()
    G[1200] = np.nan
    with np.errstate(all="ignore"):
        fused, (out, sums, wbar) = _both(G, h, W2, d, b, X, W1)
    np.testing.assert_array_equal(np.isnan(fused[2]), np.isnan(wbar))
    assert np.isnan(fused[2]).all()         # a NaN row of G reaches every weight


def test_threads_do_not_change_the_bits(monkeypatch):
    ops = _operands(20000)
    got = []
    for threads in ("1", "2"):
        monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
        got.append(_both(*ops)[0])
    for a, b in zip(*got):
        assert a.tobytes() == b.tobytes()


def test_inner_blocks_declines_b_it_would_copy():
    X, G = np.ones((3000, 32)), np.ones((3000, H))
    assert gemm.inner_blocks(X.T, G) is not None
    assert gemm.inner_blocks(X.T, np.asfortranarray(G)) is None      # b is read as it is written
    part = gemm.inner_blocks(X.T, G)
    c = np.empty((32, H))
    part(0, 1000, c, False)
    part(1000, 3000, c, True)
    assert c.tobytes() == gemm.matmul(X.T, G).tobytes()          # runs in order: one chain


SUMS = "    (_1_bar, b_bar) = lhs_bar_sums(G, h, W2, dh, (_1, b))"


@pytest.mark.parametrize("between,moved", [
    ([], True), (["    # a comment"], True), (["    y = h + 1"], True),
    (["    X = X * 2"], False), (["    _1_bar = _1_bar * 2"], False), (["    z = W_bar"], False),
    (["    for i in range(2):"], False), (["    X += 1"], False), (["        y = 1"], False)])
def test_the_rewrite_moves_only_what_it_may(between, moved):
    out = [SUMS] + between
    done = fused_rhs_bar(out, "W_bar", "matmul_rhs_bar(_1_bar, X, W)", "    ")
    assert done is moved
    if moved:
        assert out[0] == "    (_1_bar, b_bar, W_bar) = lhs_bar_sums(G, h, W2, dh, (_1, b), (0, X, W))"
    else:
        assert out == [SUMS] + between


def test_the_rewrite_declines_other_lines(monkeypatch):
    out = [SUMS]
    assert not fused_rhs_bar(out, "W_bar", "matmul_rhs_bar(_1_bar, X, W)", "        ")    # inside a block
    assert not fused_rhs_bar(out, "W_bar", "matmul_rhs_bar(g, X, W)", "    ")       # another G
    assert not fused_rhs_bar(out, "W_bar", "matmul_lhs_bar(_1_bar, X, W)", "    ")
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "0")
    assert not fused_rhs_bar(out, "W_bar", "matmul_rhs_bar(_1_bar, X, W)", "    ")
    assert out == [SUMS]
    twice = ["    (_1_bar, b_bar, V_bar) = lhs_bar_sums(G, h, W2, dh, (_1, b), (0, Z, V))"]
    assert not fused_rhs_bar(twice, "W_bar", "matmul_rhs_bar(_1_bar, X, W)", "    ")   # already given one

"""A product and the elementwise pass next to it run a block of rows at a time, the product
never stored (passes/epilogues.py, gemm_epilogue.py): `h = k(X @ W + b)` with its stored
partial (product_partials), and the adjoint `dh * (G @ W.T)` with the bias's sums
(lhs_bar_sums), with the product's other adjoint `h.T @ G` in the same pass. Against
S2SAD_GEMM_EPILOGUE=0 (the same program unfused): the same bits, the bias's sums and the
weights' adjoint made in the pass within rounding (they are summed by blocks: exactly the
blocks' chains added in order); central differences; the programs and operands it
declines; threads; inputs never written."""
import numpy as np
import pytest

import s2sad
from s2sad import gemm_epilogue
from s2sad.plans import PLANS

from conftest import central_fd, directional_fd

N, D, H, C = 3000, 32, 64, 10          # N D H >= gemm.MIN_WORK: s2sad's product takes it


def mlp3(W1, b1, W2, b2, W3, X, Y):
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    z = h2 @ W3
    return np.mean((z - Y) ** 2)


def sigmoid_layer(W1, b1, W2, X, Y):
    h = 0.5 * (np.tanh(0.5 * (X @ W1 + b1)) + 1.0)       # the logistic sigmoid
    return np.sum((h @ W2 - Y) ** 2)


def leaky_numpy(W1, b1, W2, X, Y):
    z = X @ W1 + b1
    h = np.maximum(z, 0.01 * z)
    return np.sum((h @ W2 - Y) ** 2)


def _leaky(z):
    return z if z > 0.0 else 0.01 * z


def leaky_broadcast(W1, b1, W2, X, Y):
    h = s2sad.broadcast(_leaky, X @ W1 + b1)
    return np.sum((h @ W2 - Y) ** 2)


def no_bias(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1)
    return np.sum((h @ W2 - Y) ** 2) + np.sum(b1 ** 2)


def product_read_twice(W1, b1, W2, X, Y):
    p = X @ W1
    h = np.tanh(p + b1)
    return np.sum((h @ W2 - Y) ** 2) + np.sum(p)


def full_bias(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)           # b1 is full-shape here: the runtime declines it
    return np.sum((h @ W2 - Y) ** 2)


def in_a_loop(W1, b1, W2, X, Y):
    total = 0.0
    for k in range(2):
        h = np.tanh(X @ W1 + b1 + 0.5 * k)
        total = total + np.sum((h @ W2 - Y) ** 2)
    return total


def _args(f, n=N, dtype=np.float64, bias_shape=(1, H)):
    rng = np.random.default_rng(n + 7)
    W1 = (rng.normal(size=(D, H)) / np.sqrt(D)).astype(dtype)
    b1 = (rng.normal(size=bias_shape) * 0.1).astype(dtype)
    X = rng.normal(size=(n, D)).astype(dtype)
    if f is mlp3:
        return (W1, b1, (rng.normal(size=(H, H)) / 8).astype(dtype), (rng.normal(size=bias_shape) * 0.1).astype(dtype),
                (rng.normal(size=(H, C)) / 8).astype(dtype), X, rng.normal(size=(n, C)).astype(dtype)), (0, 1, 2, 3, 4)
    if f is full_bias:
        b1 = (rng.normal(size=(n, H)) * 0.1).astype(dtype)
    return (W1, b1, (rng.normal(size=(H, C)) / 8).astype(dtype), X, rng.normal(size=(n, C)).astype(dtype)), (0, 1, 2)


def _grads(f, args, argnums, monkeypatch, on: bool, calls: int = 2):
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1" if on else "0")
    PLANS.clear()
    g = s2sad.value_and_grad(f, argnums=argnums)
    got = [g(*args) for _ in range(calls)]         # the hot path too
    return got, s2sad.source(s2sad.grad(f, argnums=argnums))


def _same_or_close(got, want, bias_like):
    value, grads = got
    v0, g0 = want
    assert np.asarray(value).tobytes() == np.asarray(v0).tobytes()
    for k, (a, b) in enumerate(zip(grads, g0)):
        assert a.dtype == b.dtype and a.shape == b.shape
        if k in bias_like:       # summed by blocks: rounding apart
            tol = 1e-12 if a.dtype == np.float64 else 1e-5
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.max(np.abs(b)))
        else:
            assert a.tobytes() == b.tobytes(), k


@pytest.mark.parametrize("f,forward,reverse", [
    (mlp3, 2, 2), (no_bias, 1, 0), (product_read_twice, 0, 1), (full_bias, 1, 1), (in_a_loop, 1, 0),
    (sigmoid_layer, 1, 1), (leaky_numpy, 1, 1),     # partials proven equal: one stored (activity.same_partials)
    (leaky_broadcast, 0, 0)])       # its kernel runs with the next product (kernel_matmul): h never formed
def test_which_programs_take_it(f, forward, reverse, monkeypatch):
    args, argnums = _args(f)
    _, src = _grads(f, args, argnums, monkeypatch, True, calls=1)
    assert src.count("product_partials(") == forward
    assert src.count("lhs_bar_sums(") == reverse
    _, src = _grads(f, args, argnums, monkeypatch, False, calls=1)
    assert "product_partials(" not in src and "lhs_bar_sums(" not in src


@pytest.mark.parametrize("f", [mlp3, no_bias, product_read_twice, full_bias, in_a_loop, sigmoid_layer, leaky_numpy])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_unfused_bits(f, dtype, monkeypatch):
    args, argnums = _args(f, dtype=dtype)
    copies = [np.copy(a) for a in args]
    fused, _ = _grads(f, args, argnums, monkeypatch, True)
    (want,), _ = _grads(f, args, argnums, monkeypatch, False, calls=1)
    # lhs_bar_sums' sums (biases) and the weights' adjoint it makes (rhs): summed by blocks
    by_blocks = {0, 1, 2, 3, 4} if f is mlp3 else set() if f in (no_bias, in_a_loop) else {1} if f is full_bias \
        else {1, 2} if f is product_read_twice else {0, 1, 2}
    for got in fused:
        _same_or_close(got, want, by_blocks)
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("bias_shape", [(1, H), (H,)])
def test_mlp_against_central_differences(bias_shape, monkeypatch):
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1")
    args, argnums = _args(mlp3, n=1200, bias_shape=bias_shape)
    PLANS.clear()
    got = s2sad.grad(mlp3, argnums=argnums)(*args)
    assert "lhs_bar_sums(" in s2sad.source(s2sad.grad(mlp3, argnums=argnums))
    for i in (1, 3):             # the biases: every entry
        np.testing.assert_allclose(got[i], central_fd(mlp3, args, i), rtol=1e-6, atol=1e-9)
    rng = np.random.default_rng(0)
    for i in (0, 2, 4):          # the weights: a random direction each
        v = rng.normal(size=args[i].shape)
        tans = [v if j == i else np.zeros_like(a) for j, a in enumerate(args)]
        np.testing.assert_allclose(np.sum(got[i] * v), directional_fd(mlp3, args, tans), rtol=1e-6)


def test_threads_do_not_change_the_bits(monkeypatch):
    args, argnums = _args(mlp3, n=20000)
    runs = []
    for threads in ("1", "2"):
        monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
        runs.append(_grads(mlp3, args, argnums, monkeypatch, True)[0][-1])
    for a, b in zip(runs[0][1], runs[1][1]):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("case", ["x_transposed", "x_column_step", "fortran_w", "nan", "zero_rows", "one_row",
                                  "mixed_dtypes", "int_x"])
def test_odd_operands_give_the_unfused_results(case, monkeypatch):
    args, argnums = _args(mlp3)
    W1, b1, W2, b2, W3, X, Y = args
    if case == "x_transposed":
        X = np.ascontiguousarray(X.T).T            # columns contiguous: taken, its rows strided
    elif case == "x_column_step":
        X = np.repeat(X, 2, axis=1)[:, ::2]
    elif case == "fortran_w":
        W2 = np.asfortranarray(W2)
    elif case == "nan":
        X = X.copy()
        X[5, 3] = np.nan
        X[7, 1] = np.inf
    elif case == "zero_rows":
        X, Y = X[:0], Y[:0]
    elif case == "one_row":
        X, Y = X[:1], Y[:1]
    elif case == "mixed_dtypes":
        b1 = b1.astype(np.float32)
    elif case == "int_x":
        X = np.round(X * 3).astype(np.int64)
    args = (W1, b1, W2, b2, W3, X, Y)
    copies = [np.copy(a) for a in args]
    with np.errstate(all="ignore"):
        fused, _ = _grads(mlp3, args, argnums, monkeypatch, True)
        (want,), _ = _grads(mlp3, args, argnums, monkeypatch, False, calls=1)
    for got in fused:
        v, gs = got
        np.testing.assert_array_equal(v, want[0])
        for a, b in zip(gs, want[1]):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, np.nanmax(np.abs(b), initial=0.0)))
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)


def square_layer(A, b):
    h = np.tanh(A @ A + b)             # one array on both sides of the product, and after it
    return np.sum((h @ A) ** 2)


def test_aliased_operands(monkeypatch):
    rng = np.random.default_rng(3)
    A, b = rng.normal(size=(128, 128)) / 12, rng.normal(size=(1, 128)) * 0.1
    fused, src = _grads(square_layer, (A, b), (0, 1), monkeypatch, True)
    assert "product_partials(" in src
    (want,), _ = _grads(square_layer, (A, b), (0, 1), monkeypatch, False, calls=1)
    for got in fused:
        _same_or_close(got, want, set())
    small = (A[:12, :12].copy(), b[:, :12].copy())
    got = s2sad.grad(square_layer, argnums=(0, 1))(*small)
    for i in (0, 1):
        np.testing.assert_allclose(got[i], central_fd(square_layer, small, i), rtol=1e-6, atol=1e-8)


def test_block_rows_are_fixed_by_the_columns_and_dtype():
    for m in (2, 10, 64, 100, 128):
        for dt in (np.float64, np.float32):
            rows = gemm_epilogue.block_rows(m, np.dtype(dt))
            assert rows % gemm_epilogue.BLOCK_ROWS == 0 and rows >= gemm_epilogue.BLOCK_ROWS


def test_same_partials_reads_equal_expressions():
    """activity.same_partials: one call-free expression of the same values, or names
    bound once to the same number, is one partial; a name bound twice, another
    expression or a call is not."""
    import gast

    from s2sad.passes.activity import same_partials

    def firsts(text):
        fn = gast.parse(text).body[0]
        return same_partials({"f": fn}, "f")
    assert firsts("def f(x, b):\n    d = x + b\n    return (d, 0.5 * (d * 0.5), 0.5 * (d * 0.5))") == (0, 0)
    assert firsts("def f(x, b):\n    u = 1.0\n    v = 1.0\n    return (x, 2.0 * u + x, 2.0 * v + x)") == (0, 0)
    assert firsts("def f(x, b):\n    u = 1.0\n    u = 2.0\n    v = 1.0\n    return (x, 2.0 * u, 2.0 * v)") == (0, 1)
    assert firsts("def f(x, b):\n    return (x, 2.0 * x, x * 2.0)") == (0, 1)
    assert firsts("def f(x, b):\n    return (x, math.exp(x), math.exp(x))") == (0, 1)
    assert firsts("def f(u, b):\n    if b > 0:\n        u = 1.0\n    return (u, u, 1.0)") == (0, 1)


def test_the_weights_adjoint_joins_the_sums(monkeypatch):
    """`W_bar = matmul_rhs_bar(G, h, W)` moves into the lhs_bar_sums call of the same
    product (its rows of G and h are the pass's own); the first layer's, X.T @ _1_bar,
    into the call that makes _1_bar (nxt), which then never stores it."""
    args, argnums = _args(mlp3)
    _, src = _grads(mlp3, args, argnums, monkeypatch, True, calls=1)
    assert "(_2_bar, b2_bar, W3_bar) = lhs_bar_sums(" in src
    assert "(b1_bar, W2_bar, W1_bar) = lhs_bar_sums(_2_bar, h1, W2, dh1_d1, (_1, b1), rhs=True, nxt=(0, X, W1))" in src
    assert "matmul_rhs_bar(" not in src and "_1_bar" not in src
    _, src = _grads(mlp3, args, argnums, monkeypatch, False, calls=1)
    assert src.count("matmul_rhs_bar(") == 3


def x_active(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    return np.sum((h @ W2 - Y) ** 2)


def w1_twice(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    return np.sum((h @ W2 - Y) ** 2) + np.sum(W1 ** 2)


@pytest.mark.parametrize("f,argnums,joined", [(x_active, (0, 1, 2, 3), False), (w1_twice, (0, 1, 2), False),
                                              (x_active, (0, 1, 2), True)])
def test_the_first_layers_adjoint_joins_only_where_nothing_else_reads_it(f, argnums, joined, monkeypatch):
    """X's adjoint wanted (it reads _1_bar), or W1's adjoint bound before (another use of
    W1): the product's reversal stays; the gradients against the unfused program's."""
    args, _ = _args(sigmoid_layer)
    fused, src = _grads(f, args, argnums, monkeypatch, True)
    assert ("(0, X, W1))" in src) == joined and ("matmul_rhs_bar(_1_bar, X, W1)" not in src) == joined, src
    (want,), _ = _grads(f, args, argnums, monkeypatch, False, calls=1)
    for got in fused:
        for a, b in zip(got[1], want[1]):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.max(np.abs(b)))


def _output_partial(h, k, monkeypatch):
    """The OutputPartial of `tanh(X @ W + b)` whose output is h (n x m), as a gradient
    builds it (caught on its way into lhs_bar_sums)."""
    n, m = h.shape
    seen = []
    original = gemm_epilogue._fused_sums

    def catch(g, a, w, d, *rest):
        seen.append(d)
        return original(g, a, w, d, *rest)
    monkeypatch.setattr(gemm_epilogue, "_fused_sums", catch)
    rng = np.random.default_rng(5)
    W, b, V = np.eye(m, dtype=h.dtype), np.zeros((1, m), h.dtype), rng.normal(size=(m, k)).astype(h.dtype)
    X = np.arctanh(np.clip(h, -0.999, 0.999)).astype(h.dtype)
    PLANS.clear()
    s2sad.grad(lambda W, b, V, X: np.sum((np.tanh(X @ W + b) @ V) ** 2), argnums=(0, 1, 2))(W, b, V, X)
    monkeypatch.setattr(gemm_epilogue, "_fused_sums", original)
    d = seen[-1]
    h[...] = d.h               # the layer's own output (X @ I + 0 rounds to X; tanh of it ~ h)
    return d


def _blockwise(a, g, rows):
    """a.T @ g as the fused pass makes it: one s2sad product per block of `rows` rows
    (each element one chain over the block), the blocks' parts added in block order."""
    from s2sad import gemm
    floor, gemm.MIN_WORK = gemm.MIN_WORK, 0     # s2sad's product for every block, the last (short) one too:
    try:                                         # numpy's chains are its BLAS's, in order on some hosts only
        parts = [gemm.matmul(np.ascontiguousarray(a[lo:lo + rows].T), g[lo:lo + rows])
                 for lo in range(0, len(a), rows)]
    finally:
        gemm.MIN_WORK = floor
    return np.add.reduce(np.stack(parts), axis=0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("from_out", [True, False])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_the_rhs_adjoint_is_the_blocks_chains_in_order(dtype, from_out, threads, monkeypatch):
    """lhs_bar_sums(..., rhs=True)'s last result: bit for bit the blocks' own products
    added in block order (block_rows rows each, whatever the threads), within rounding of
    numpy's h.T @ G; the other results the bits of rhs=False."""
    from s2sad import gemm_outpartials
    monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1")
    rng = np.random.default_rng(3)
    n, m, k = 5000, 64, 48
    h = np.tanh(rng.normal(size=(n, m))).astype(dtype)
    g = rng.normal(size=(n, k)).astype(dtype)
    w = rng.normal(size=(m, k)).astype(dtype)
    b = np.zeros((1, m), dtype)
    stand = np.broadcast_to(np.zeros((), dtype), (n, m))
    d = (1 - h * h).astype(dtype)
    if from_out:                 # the OutputPartial a tanh layer's gradient hands lhs_bar_sums
        d = _output_partial(h, k, monkeypatch)
        assert isinstance(d, gemm_outpartials.OutputPartial)
    plain = gemm_epilogue.lhs_bar_sums(g, h, w, d, (stand, b))
    got = gemm_epilogue.lhs_bar_sums(g, h, w, d, (stand, b), True)
    assert len(got) == 3
    for x, y in zip(got[:2], plain):
        assert x.tobytes() == y.tobytes()
    rows = gemm_epilogue.block_rows(m, np.dtype(dtype))
    assert rows < n           # several blocks
    want = _blockwise(h, g, rows)
    assert got[2].dtype == dtype and got[2].shape == w.shape
    assert got[2].tobytes() == want.tobytes()
    tol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(got[2], h.astype(np.float64).T @ g.astype(np.float64), rtol=tol, atol=tol * n)


def test_the_rhs_adjoint_where_the_pass_declines():
    """The python backend (no fused pass): the unfused calls, the adjoint matmul_rhs_bar's."""
    from s2sad.array_rules import matmul_rhs_bar
    rng = np.random.default_rng(4)
    h, g, w = rng.normal(size=(300, 8)), rng.normal(size=(300, 5)), rng.normal(size=(8, 5))
    d, b = rng.normal(size=(300, 8)), np.zeros((1, 8))
    got = gemm_epilogue.lhs_bar_sums(g, h, w, d, (np.broadcast_to(0.0, (300, 8)), b), True, backend="python")
    assert got[2].tobytes() == matmul_rhs_bar(g, h, w).tobytes()
    np.testing.assert_allclose(got[0], d * (g @ w.T))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_the_next_products_adjoint_is_the_blocks_chains_in_order(dtype, threads, monkeypatch):
    """lhs_bar_sums(..., nxt=(0, x, v)): the product's adjoint t (inputs[0]'s) not
    returned; x.T @ t last, bit for bit the blocks' own products of t's blocks added in
    block order, and within rounding of numpy's; the rest the bits of the plain call."""
    monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1")
    rng = np.random.default_rng(6)
    n, m, k, q = 5000, 64, 48, 32
    h = np.tanh(rng.normal(size=(n, m))).astype(dtype)
    g, w = rng.normal(size=(n, k)).astype(dtype), rng.normal(size=(m, k)).astype(dtype)
    x, v = rng.normal(size=(n, q)).astype(dtype), rng.normal(size=(q, m)).astype(dtype)
    b, d = np.zeros((1, m), dtype), (1 - h * h).astype(dtype)
    inputs = (np.broadcast_to(np.zeros((), dtype), (n, m)), b)
    t, b_bar, w_bar = gemm_epilogue.lhs_bar_sums(g, h, w, d, inputs, True)
    got = gemm_epilogue.lhs_bar_sums(g, h, w, d, inputs, True, (0, x, v))
    assert len(got) == 3
    assert got[0].tobytes() == b_bar.tobytes() and got[1].tobytes() == w_bar.tobytes()
    rows = gemm_epilogue.block_rows(m, np.dtype(dtype))
    assert got[2].dtype == dtype and got[2].shape == v.shape
    assert got[2].tobytes() == _blockwise(x, t, rows).tobytes()
    tol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(got[2], x.astype(np.float64).T @ t.astype(np.float64), rtol=tol, atol=tol * n)


def test_the_next_products_adjoint_where_the_pass_declines():
    """Two full-shape inputs (their adjoint is shared), or the python backend: the
    unfused calls, then matmul_rhs_bar of the dropped adjoint, its bits."""
    from s2sad.array_rules import matmul_rhs_bar
    rng = np.random.default_rng(7)
    n, m = 3000, 64
    h, g, w = np.tanh(rng.normal(size=(n, m))), rng.normal(size=(n, 10)), rng.normal(size=(m, 10))
    x, v, d = rng.normal(size=(n, 32)), rng.normal(size=(32, m)), rng.normal(size=(n, m))
    full, row = np.broadcast_to(0.0, (n, m)), np.zeros((1, m))
    for inputs, backend in (((full, row, full), "auto"), ((full, row), "python")):
        plain = gemm_epilogue.lhs_bar_sums(g, h, w, d, inputs, False, None, backend)
        got = gemm_epilogue.lhs_bar_sums(g, h, w, d, inputs, False, (0, x, v), backend)
        assert len(got) == len(inputs)
        for a, want in zip(got[:-1], plain[1:]):
            assert a.tobytes() == want.tobytes()
        assert got[-1].tobytes() == matmul_rhs_bar(plain[0], x, v).tobytes()


def test_a_threads_scratches_drop_the_least_recently_fetched():
    """A full set makes room by dropping the scratch fetched longest ago: one fetched again
    before SCRATCHES - 1 other keys were is the same array, what was written in it kept
    (a pass that fetches its scratch twice, another made in between, reads its own)."""
    from s2sad import gemm_epilogue as ge
    f64 = np.dtype(np.float64)
    got = {}
    first = [ge._scratch_in(got, (f64, 64, m, "p")) for m in range(1, ge.SCRATCHES + 1)]
    assert len(got) == ge.SCRATCHES
    mine = ge._scratch_in(got, (f64, 64, 1, "p"))        # used again: now the most recent
    assert mine is first[0]
    mine[:] = 7.0
    for m in range(ge.SCRATCHES + 1, 2 * ge.SCRATCHES - 1):      # SCRATCHES - 2 new keys
        ge._scratch_in(got, (f64, 64, m, "p"))
    assert len(got) == ge.SCRATCHES
    again = ge._scratch_in(got, (f64, 64, 1, "p"))
    assert again is mine and np.all(again == 7.0)
    assert (f64, 64, 2, "p") not in got                   # the least recently fetched went first
    for m in range(2 * ge.SCRATCHES, 3 * ge.SCRATCHES):
        ge._scratch_in(got, (f64, 64, m, "p"))
    assert (f64, 64, 1, "p") not in got and len(got) == ge.SCRATCHES
    assert ge.scratch(f64, 64, 3, "x").shape == (64, 3)

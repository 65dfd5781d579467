"""A dense layer's logits joined with the softmax cross-entropy's adjoint (issue 17:
passes/xentheads writes `head_logits` and `xent_head_bars`, s2sad.xent_head runs them a
block of rows at a time, X read once).

Checked: which programs are joined (the gradient alone; z, the product and the adjoints
read nowhere else; the bias on either side; b differentiated or not) and that
S2SAD_GEMM_EPILOGUE=0 keeps the separate calls; the gradients against a hand-written
numpy gradient, against the unjoined program (the oracle) and across thread counts (the
same bits); operands the pass declines (Fortran X, strided or integer Y, float32 against
float64, sizes below its threshold) give the unjoined results; inputs never mutated; NaN
where the unjoined program has it; a small batch specialises the plain program.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import s2sad
from s2sad import derivative_runtime, xent_head
from s2sad.plans import PLANS

from conftest import central_fd, function_from_source

N = 8000          # rows: the pass's work past gemm.THREAD_WORK for d = 32, k = 10


def xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def xent_bias_first(W, b, X, Y):
    z = b + X @ W
    z = z - np.max(z, axis=-1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return -np.sum(np.sum(logp * Y, axis=-1)) * 0.25


def xent_z_read_again(W, b, X, Y):
    z = X @ W + b
    s = z - np.max(z, axis=1, keepdims=True)
    logp = s - np.log(np.sum(np.exp(s), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1)) + 1e-3 * np.sum(z * z)


def xent_labels_made_after(W, b, X, Y):
    z = X @ W + b
    T = Y * 0.5 + 0.25
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(T * logp, axis=1))


def _args(n=N, d=32, k=10, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed + n + 31 * k)
    return [(rng.normal(size=(d, k)) / np.sqrt(d)).astype(dtype), (rng.normal(size=(1, k)) * 0.1).astype(dtype),
            rng.normal(size=(n, d)).astype(dtype), np.eye(k, dtype=dtype)[rng.integers(0, k, n)]]


def _hand(W, b, X, Y, scale):
    """The gradient by hand: z_bar = scale (softmax(z) sum(Y) - Y), then X.T z_bar and its column sums."""
    z = X @ W + b
    z = z - z.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    zb = scale * (p * Y.sum(1, keepdims=True) - Y)
    return X.T @ zb, zb.sum(0).reshape(b.shape)


def _grad(f, args, argnums=(0, 1), joined=True, monkeypatch=None, calls=3):
    """(the gradients of the last of `calls` calls, the grad program's source)."""
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1" if joined else "0")
    PLANS.clear()
    g = s2sad.grad(f, argnums=argnums)
    got = [g(*args) for _ in range(calls)]          # the first call, then the specialised copy's
    for a, b in zip(got[0], got[-1]):
        assert a.tobytes() == b.tobytes()
    return got[-1], s2sad.source(g)


def _close(got, want, tol=1e-12):
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.max(np.abs(b)))


@pytest.mark.parametrize("f,argnums,joined", [
    (xent, (0, 1), True), (xent_bias_first, (0, 1), True), (xent, (0,), True),
    (xent, (1,), False),                  # W not differentiated: no W_bar line to join
    (xent, (0, 1, 2), False),             # X differentiated: its adjoint reads the product's
    (xent_z_read_again, (0, 1), False), (xent_labels_made_after, (0, 1), False)])
def test_which_programs_are_joined(f, argnums, joined, monkeypatch):
    args = _args()
    _, src = _grad(f, args, argnums, True, monkeypatch, calls=1)
    assert ("xent_head_bars(" in src) == joined and ("head_logits(" in src) == joined
    _, src = _grad(f, args, argnums, False, monkeypatch, calls=1)
    assert "xent_head_bars(" not in src and "head_logits(" not in src
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1")
    PLANS.clear()
    vsrc = s2sad.source(s2sad.value_and_grad(f, argnums=argnums))
    assert ("xent_head_bars(" in vsrc) == joined      # (the value after it: passes/xentvalues)


@pytest.mark.parametrize("f", [xent, xent_bias_first, xent_z_read_again, xent_labels_made_after])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("n", [N, 10007, 20000])
def test_against_the_unjoined_program_and_by_hand(f, dtype, n, monkeypatch):
    args = _args(n, dtype=dtype)
    copies = [a.copy() for a in args]
    got, src = _grad(f, args, (0, 1), True, monkeypatch)
    want, _ = _grad(f, args, (0, 1), False, monkeypatch)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    _close(got, want, tol)
    if f is xent:
        assert "xent_head_bars(" in src
        _close(got, [v.astype(dtype) for v in _hand(*[a.astype(np.float64) for a in args], -(-1.0 / n))], tol)
    for a, c in zip(args, copies):
        assert a.tobytes() == c.tobytes()


def xent_decay(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1)) + 1e-2 * np.sum(W * W) + 1e-3 * np.sum(b ** 2)


def xent_decay_first(W, b, X, Y):
    penalty = 0.5 * np.sum(W ** 2)
    z = b + X @ W
    z = z - np.max(z, axis=-1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))
    return penalty - np.sum(np.sum(logp * Y, axis=-1)) / 3.0


@pytest.mark.parametrize("f", [xent_decay, xent_decay_first])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_a_weight_decay_joins(f, dtype, monkeypatch):
    """W's (and b's) adjoint summed from the penalty's line and the product's (`W_bar =
    W_bar + matmul_rhs_bar(...)`, other lines between z's adjoint and unit_vjp's): the
    head's part joined as W_bar_head and added as the line was; against the unjoined
    program, central differences and the gradient by hand."""
    args = _args(N, dtype=dtype)
    got, src = _grad(f, args, (0, 1), True, monkeypatch)
    assert "xent_head_bars(" in src
    if f is xent_decay:       # (both adjoints made first by the penalties' lines)
        assert "W_bar = W_bar + W_bar_head" in src and "b_bar = b_bar + b_bar_head" in src
    want, wsrc = _grad(f, args, (0, 1), False, monkeypatch)
    assert "xent_head_bars(" not in wsrc
    tol = 1e-12 if dtype == np.float64 else 2e-5
    _close(got, want, tol)
    if dtype == np.float64:
        scale = max(1.0, abs(float(f(*args))))      # (central differences of a loss this large: ~1e-9 of it)
        for i in (0, 1):
            np.testing.assert_allclose(got[i], central_fd(f, args, i), rtol=1e-6, atol=1e-9 * scale)
        if f is xent_decay:
            hand_w, hand_b = _hand(*args, 1.0 / N)
            _close(got, [hand_w + 2e-2 * args[0], hand_b + 2e-3 * args[1]], 1e-12)


def test_against_central_differences(monkeypatch):
    args = _args(6000, d=5, k=3)
    got, src = _grad(xent, args, (0, 1), True, monkeypatch)
    assert "xent_head_bars(" in src
    for i in (0, 1):
        np.testing.assert_allclose(got[i], central_fd(xent, args, i), rtol=1e-6, atol=1e-10)


def test_the_pass_runs_and_threads_keep_its_bits(monkeypatch):
    args = _args(30000)
    ran = []
    real = xent_head.fused_bars

    def counted(*a, **kw):
        got = real(*a, **kw)
        ran.append(got is not None)
        return got
    monkeypatch.setattr(xent_head, "fused_bars", counted)
    runs = []
    for threads in ("1", "2", "2"):
        monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
        runs.append(_grad(xent, args, (0, 1), True, monkeypatch)[0])
    assert ran and all(ran)
    for a, b in zip(runs[0], runs[1]):
        assert a.tobytes() == b.tobytes()
    for a, b in zip(runs[0], runs[2]):
        assert a.tobytes() == b.tobytes()
    monkeypatch.setenv("S2SAD_BLOCK_LOOP", "0")        # the blocks in Python: the same calls, the same bits
    for a, b in zip(runs[0], _grad(xent, args, (0, 1), True, monkeypatch)[0]):
        assert a.tobytes() == b.tobytes()


def mlp2_tanh(W, b, X, Y, W1, b1):
    h = np.tanh(X @ W1 + b1)
    z = h @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def mlp3_relu(W, b, X, Y, W1, b1, W2, b2):
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    z = h2 @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def mlp2_sigmoid(W, b, X, Y, W1, b1):
    h = 1.0 / (1.0 + np.exp(-(X @ W1 + b1)))
    z = h @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def _layers(f, n=N, dtype=np.float64, seed=0):
    """The head's arguments with a first layer of 64 (and a second, for mlp3_relu) beneath."""
    rng = np.random.default_rng(seed + 5)
    X = rng.normal(size=(n, 32)).astype(dtype)
    W1, b1 = (rng.normal(size=(32, 64)) / 6).astype(dtype), (rng.normal(size=(1, 64)) * 0.1).astype(dtype)
    W, b = (rng.normal(size=(64, 10)) / 8).astype(dtype), (rng.normal(size=(1, 10)) * 0.1).astype(dtype)
    Y = np.eye(10, dtype=dtype)[rng.integers(0, 10, n)]
    if f is mlp3_relu:
        W2, b2 = (rng.normal(size=(64, 64)) / 8).astype(dtype), (rng.normal(size=(1, 64)) * 0.1).astype(dtype)
        return [W, b, X, Y, W1, b1, W2, b2], (0, 1, 4, 5, 6, 7)
    return [W, b, X, Y, W1, b1], (0, 1, 4, 5)


def _unjoined(f, args, argnums, monkeypatch):
    """The gradients with the heads not joined but every other fusion as it is (the bits
    the joined pass keeps but b's)."""
    from s2sad.passes import xentheads
    monkeypatch.setattr(xentheads, "join", lambda *a: 0)
    try:
        return _grad(f, args, argnums, True, monkeypatch)
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("f", [mlp2_tanh, mlp3_relu, mlp2_sigmoid])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_a_head_over_layers_keeps_the_layers_bits(f, dtype, monkeypatch):
    """The head's adjoint feeding the layer below (xent_head_sums: lhs_bar_sums's pass with
    the head's rows made in its blocks): every gradient has the bits of the unjoined
    program's (its fused layers' passes) but b's, summed by blocks; all agree with the
    fully unfused program (S2SAD_GEMM_EPILOGUE=0)."""
    args, argnums = _layers(f, dtype=dtype)
    copies = [a.copy() for a in args]
    got, src = _grad(f, args, argnums, True, monkeypatch)
    assert "xent_head_sums(" in src and "head_logits(" in src
    want, wsrc = _unjoined(f, args, argnums, monkeypatch)
    assert "xent_head_sums(" not in wsrc and "head_logits(" not in wsrc
    for j, (a, w) in enumerate(zip(got, want)):
        if argnums[j] == 1:
            _close([a], [w], 1e-12 if dtype == np.float64 else 2e-5)
        else:
            assert a.tobytes() == w.tobytes(), argnums[j]
    unfused, _ = _grad(f, args, argnums, False, monkeypatch)
    _close(got, unfused, 1e-11 if dtype == np.float64 else 5e-4)
    for a, c in zip(args, copies):
        assert a.tobytes() == c.tobytes()


def test_a_head_over_layers_against_central_differences(monkeypatch):
    args, argnums = _layers(mlp2_tanh, n=6000)
    got, src = _grad(mlp2_tanh, args, argnums, True, monkeypatch)
    assert "xent_head_sums(" in src
    np.testing.assert_allclose(got[1], central_fd(mlp2_tanh, args, 1), rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(got[3], central_fd(mlp2_tanh, args, 5), rtol=1e-6, atol=1e-10)
    rng = np.random.default_rng(1)
    for j, i in ((0, 0), (2, 4)):
        v = rng.normal(size=args[i].shape)
        plus, minus = list(args), list(args)
        plus[i], minus[i] = args[i] + 1e-6 * v, args[i] - 1e-6 * v
        fd = (mlp2_tanh(*plus) - mlp2_tanh(*minus)) / 2e-6
        np.testing.assert_allclose(np.sum(got[j] * v), fd, rtol=1e-6)


def test_a_head_over_layers_threads_keep_the_bits(monkeypatch):
    args, argnums = _layers(mlp3_relu, n=20000)
    runs = []
    for threads in ("1", "2"):
        monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
        runs.append(_grad(mlp3_relu, args, argnums, True, monkeypatch)[0])
    for a, b in zip(*runs):
        assert a.tobytes() == b.tobytes()


def test_a_head_over_layers_below_the_threshold(monkeypatch):
    """Small batches: the separate calls, and the signature's copy is the plain program's."""
    args, argnums = _layers(mlp3_relu, n=32)
    got, src = _grad(mlp3_relu, args, argnums, True, monkeypatch)
    assert "xent_head_sums(" in src
    want, _ = _unjoined(mlp3_relu, args, argnums, monkeypatch)
    for a, w in zip(got, want):
        assert a.tobytes() == w.tobytes()


def _fortran(args):
    return [args[0], args[1], np.asfortranarray(args[2]), args[3]]


def _strided_y(args):
    wide = np.zeros((args[3].shape[0], 2 * args[3].shape[1]))
    wide[:, ::2] = args[3]
    return args[:3] + [wide[:, ::2]]


def _int_y(args):
    return args[:3] + [args[3].astype(np.int64)]


def _f32_x(args):
    return args[:2] + [args[2].astype(np.float32), args[3]]


def _reversed_rows(args):
    return args[:2] + [args[2][::-1], args[3][::-1]]


def _small(args):
    return [args[0], args[1], args[2][:3000], args[3][:3000]]


@pytest.mark.parametrize("odd", [_fortran, _strided_y, _int_y, _f32_x, _reversed_rows, _small])
def test_odd_operands_give_the_unjoined_results(odd, monkeypatch):
    args = odd(_args())
    copies = [np.copy(a) for a in args]
    got, src = _grad(xent, args, (0, 1), True, monkeypatch)
    want, _ = _grad(xent, args, (0, 1), False, monkeypatch)
    assert "xent_head_bars(" in src
    _close(got, want, 1e-12 if got[0].dtype == np.float64 else 2e-5)
    for a, c in zip(args, copies):
        assert a.tobytes() == c.tobytes()


def test_nan_where_the_unjoined_program_has_it(monkeypatch):
    args = _args()
    args[2][17, 3] = np.nan
    got, _ = _grad(xent, args, (0, 1), True, monkeypatch)
    want, _ = _grad(xent, args, (0, 1), False, monkeypatch)
    for a, b in zip(got, want):
        assert np.array_equal(np.isnan(a), np.isnan(b)) and np.isnan(a).any()


def test_a_small_batch_specialises_the_plain_program(tmp_path, monkeypatch):
    """Below the pass's threshold the heads run unfused: the signature's specialised copy
    is the unjoined program's (its sites bound; at n = 32 one compiled program), at the
    large one the joined copy's."""
    g, small, large, why = small_and_large_copies(tmp_path, monkeypatch, s2sad.grad)
    assert why is None            # (why no program: None, there is one)
    _close(g(*small), _hand(*small, 1.0 / 32), 1e-12)


def small_and_large_copies(tmp_path, monkeypatch, make):
    """(make(xent) of a function of its own, a batch of 32 rows and one of N, why the small
    batch has no compiled program): called on both, the small batch's specialised copy is
    the program without the join and the large one's the joined program's (asserted)."""
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1")
    PLANS.clear()
    f = function_from_source(tmp_path, "xent_small", "import numpy as np\n\n" + _source(xent), "xent")
    g = make(f, argnums=(0, 1))
    assert "xent_head_bars(" in s2sad.source(g)
    small, large = _args(32), _args(N)
    for args in (small, large):
        for _ in range(3):
            g(*args)
    special = g.__s2sad__.leaf_hot.special
    key = lambda args: tuple(x for a in args for x in (a.shape, a.strides, a.dtype))    # noqa: E731
    small_copy, large_copy = special.specs[key(small)][3], special.specs[key(large)][3]
    assert "head_logits" not in small_copy.__code__.co_names
    assert any(name.startswith("head_logits") for name in large_copy.__code__.co_names)
    return g, small, large, special.specs[key(small)][2]


def _source(f) -> str:
    import inspect
    return inspect.getsource(f)


def test_stand_in_is_never_taken_for_logits():
    z = np.zeros((4, 3))
    assert not derivative_runtime.unformed(z) and not derivative_runtime.unformed(z[:, :1].repeat(3, 1))
    s = np.broadcast_to(np.zeros(()), (4, 3))
    assert derivative_runtime.unformed(s)


def xent_hidden(W, b, X, Y, W0):
    """The head's rows made by a layer before it (not differentiated: its product's
    adjoint is W's alone, so the head joins with an intermediate as its X)."""
    h = np.tanh(X @ W0)
    z = h @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def xent_layer(W, b, X, Y, W0, b0):
    """xent_hidden with the layer's bias, W0 and b0 differentiated: the head's adjoint
    feeds that layer's sums pass (xent_head_sums)."""
    h = np.tanh(X @ W0 + b0)
    z = h @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(n=st.integers(1, 3000), d=st.integers(1, 40), k=st.integers(1, 20), dtype=st.sampled_from([np.float64, np.float32]),
       shape=st.sampled_from(["plain", "bias_first", "hidden", "layer", "decay"]), with_b=st.booleans(),
       seed=st.integers(0, 10 ** 6))
def test_random_heads_against_numpy(n, d, k, dtype, shape, with_b, seed):
    """Random sizes (one block or many, a short last one, one class), dtypes, bias sides,
    argnums and an intermediate as the head's rows, every one through the pass (its
    threshold and the product's lowered), against the gradient by hand in float64."""
    from s2sad import gemm
    args = _args(n, d, k, dtype, seed)
    f = {"plain": xent, "bias_first": xent_bias_first, "hidden": xent_hidden, "layer": xent_layer,
         "decay": xent_decay}[shape]
    rows = args[2]
    if shape in ("hidden", "layer"):
        r = np.random.default_rng(seed)
        W0, b0 = (r.normal(size=(d, d)) / np.sqrt(d)).astype(dtype), (r.normal(size=(1, d)) * 0.1).astype(dtype)
        args = args + ([W0, b0] if shape == "layer" else [W0])
        rows = np.tanh(args[2].astype(np.float64) @ W0.astype(np.float64) + (b0 if shape == "layer" else 0.0))
    # ("layer": W0, b0 differentiated too, so the head's adjoint feeds that layer: xent_head_sums)
    argnums = ((0, 1) if with_b else (0,)) + ((4, 5) if shape == "layer" else ())
    saved = xent_head.MIN_WORK, gemm.MIN_WORK, gemm.MIN_COLUMNS, xent_head.fused_bars, xent_head.fused_head_sums
    ran = []

    def counted(real):
        def run(*a, **kw):
            got = real(*a, **kw)
            ran.append(got is not None)
            return got
        return run
    xent_head.MIN_WORK, gemm.MIN_WORK, gemm.MIN_COLUMNS = 0, 0, 1
    xent_head.fused_bars, xent_head.fused_head_sums = counted(saved[3]), counted(saved[4])
    PLANS.clear()       # (a plan another test built with S2SAD_GEMM_EPILOGUE=0 would not join)
    try:
        g = s2sad.grad(f, argnums=argnums)
        got = [g(*args) for _ in range(3)][-1]
        assert ("xent_head_sums(" if shape == "layer" else "xent_head_bars(") in s2sad.source(g)
    finally:
        xent_head.MIN_WORK, gemm.MIN_WORK, gemm.MIN_COLUMNS, xent_head.fused_bars, xent_head.fused_head_sums = saved
    # (the layer's sums pass declines a layer of one column, and one row, where its bias
    # and its product have one shape: then the separate calls ran)
    assert len(ran) == 3 and (all(ran) or shape == "layer" and (d < 2 or n < 2))
    W, b, X, Y = (a.astype(np.float64) for a in args[:4])
    want = _hand(W, b, rows, Y, 0.25 if shape == "bias_first" else 1.0 / n)
    if shape == "decay":        # (xent_decay's penalties: 1e-2 |W|^2 + 1e-3 |b|^2)
        want = (want[0] + 2e-2 * W, want[1] + 2e-3 * b)
    if not with_b:
        want = want[:1]
    if shape == "layer":        # W0's: X.T ((z_bar W.T) (1 - h^2)), z_bar from the hand gradient's
        z = rows @ W + b
        z = z - z.max(1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(1, keepdims=True)
        zb = (p * Y.sum(1, keepdims=True) - Y) / n
        seed_1 = (zb @ W.T) * (1.0 - rows ** 2)
        want = want + (X.T @ seed_1, seed_1.sum(0, keepdims=True))
    tol = 1e-11 if dtype == np.float64 else 5e-4
    assert len(got) == len(want)
    for a, w in zip(got, want):
        assert a.dtype == dtype and a.shape == w.shape
        np.testing.assert_allclose(a, w, rtol=tol, atol=tol * max(np.max(np.abs(w)), 1e-300))


def test_a_joined_head_keeps_no_user_object_alive(tmp_path):
    """The specialiser's way to the program without the join holds the plan weakly and no
    grad object: once the user drops the loss, its grad and its data, none is alive (a
    closure over an array, as training code writes, at a large and a small batch)."""
    assert user_objects_left(tmp_path, s2sad.grad, "xent_head_bars(") == [None, None, None]


def user_objects_left(tmp_path, make, mark: str) -> list:
    """What is left of a loss of its own, a closure over it and an array the closure reads
    once make(...) of each ran at a large and a small batch (`mark` in the loss's source)
    and all were dropped: [None, None, None] where nothing kept them."""
    import gc
    import weakref
    f = function_from_source(tmp_path, "xent_leak", "import numpy as np\n\n" + _source(xent), "xent")
    scale = np.ones((1, 10))

    def loss(W, b, X, Y):
        return f(W * scale, b, X, Y)
    refs = [weakref.ref(f), weakref.ref(loss), weakref.ref(scale)]
    g = make(f, argnums=(0, 1))
    for args in (_args(N), _args(32)):
        for _ in range(3):
            g(*args)
    assert mark in s2sad.source(g)
    g2 = make(loss, argnums=(0, 1))
    g2(*_args(32))
    g2(*_args(N))
    del f, loss, scale, g, g2
    gc.collect()
    return [r() for r in refs]


def test_a_composition_with_the_joined_gradient(monkeypatch):
    """hvp of the loss (forward over the reverse sweep, never joined) against central
    differences of the joined gradient along the same direction; and no rows at all give
    the unjoined program's gradient."""
    args = _args()
    rng = np.random.default_rng(3)
    V = [rng.normal(size=a.shape) for a in args[:2]]
    got, src = _grad(xent, args, (0, 1), True, monkeypatch)
    assert "xent_head_bars(" in src
    h = s2sad.hvp(xent, tuple(args), (V[0], V[1], np.zeros_like(args[2]), np.zeros_like(args[3])), argnums=(0, 1))
    g = s2sad.grad(xent, argnums=(0, 1))
    eps = 1e-6
    plus = g(args[0] + eps * V[0], args[1] + eps * V[1], *args[2:])
    minus = g(args[0] - eps * V[0], args[1] - eps * V[1], *args[2:])
    for a, p, m in zip(h, plus, minus):
        np.testing.assert_allclose(a, (p - m) / (2 * eps), rtol=1e-6, atol=1e-9 * np.max(np.abs(a)))
    empty = _args(0)
    with np.errstate(all="ignore"):
        joined, _ = _grad(xent, empty, (0, 1), True, monkeypatch)
        plain, _ = _grad(xent, empty, (0, 1), False, monkeypatch)
    for a, b in zip(joined, plain):
        assert a.shape == b.shape and a.tobytes() == b.tobytes()


def test_a_head_over_layers_with_the_threads_scratches_nearly_full(monkeypatch):
    """The blocks in Python (S2SAD_BLOCK_LOOP=0), one thread, its set of scratches holding
    three of other passes: making the sums pass's own scratch dropped the whole set (as
    gemm_epilogue.scratch did then), and the head's weight part must read the z_bar its
    block wrote, not a scratch made afresh (found in CI: W's gradient read other bits
    once earlier tests had filled the set)."""
    from s2sad import gemm_epilogue
    args, argnums = _layers(mlp2_tanh, n=6000)
    want, _ = _grad(mlp2_tanh, args, argnums, True, monkeypatch)
    monkeypatch.setenv("S2SAD_BLOCK_LOOP", "0")
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    for _ in range(3):
        gemm_epilogue._LOCAL.buffers = {}
        for j in range(3):
            gemm_epilogue.scratch(np.dtype(np.float32), 64, 3 + j, "another pass")
        got = s2sad.grad(mlp2_tanh, argnums=argnums)(*args)
        for a, b in zip(got, want):
            assert a.tobytes() == b.tobytes()

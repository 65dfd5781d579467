"""value_and_grad with the cross-entropy's dense head joined (passes/xentvalues): the
gradient's program with the head joined, the rows' values made in the same pass
(`xent_head_bars(..., values=True)`), the loss's value computed after the reverse sweep
from them by value_and_grad's own lines.

Checked: which programs join (where grad's does, and the value can be made after it);
the value with the bits of value_and_grad written without the join (every other fusion
as it is: the oracle), the gradients with the bits of grad's joined program; heads over
layers (xent_head_sums), float32, thread counts, odd operands, NaN, a small batch (the
plain program specialised), a value that needs lines grad's forward leaves out, values
whose partials read them (not joined), random heads through the pass (hypothesis), and no
user object kept alive.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import s2sad
from s2sad import gemm, xent_head
from s2sad.passes import xentvalues
from s2sad.plans import PLANS

from conftest import central_fd
from test_xent_head import (N, _args, _f32_x, _fortran, _hand, _int_y, _layers, _reversed_rows, _small,
                            _strided_y, mlp2_sigmoid, mlp2_tanh, mlp3_relu, small_and_large_copies,
                            user_objects_left, xent, xent_bias_first, xent_hidden, xent_labels_made_after,
                            xent_layer, xent_z_read_again)


def xent_regularised(W, b, X, Y):
    """The value needs a line grad's forward leaves out (the penalty on the data: its value
    is not read by the gradient)."""
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    penalty = 1e-3 * np.mean(X * X)
    return -np.mean(np.sum(Y * logp, axis=1)) + penalty


def xent_weight_decay(W, b, X, Y):
    """W's adjoint summed from two lines (`W_bar = W_bar + matmul_rhs_bar(...)`, the
    decay's adjoint between z's and the product's): the head's part joined as
    `W_bar_head`, added as the line was."""
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1)) + 1e-3 * np.sum(W * W)


def xent_log(W, b, X, Y):
    """The loss's partial reads its value (log of the mean): grad's forward needs the rows'
    values, so neither program joins."""
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return np.log(-np.mean(np.sum(Y * logp, axis=1)))


def xent_rows_twice(W, b, X, Y):
    """The rows' values read by two value lines."""
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    r = np.sum(Y * logp, axis=1)
    return -np.mean(r) - 0.5 * np.sum(r) / 1000.0


def xent_rows_max(W, b, X, Y):
    """The rows' values read by a max, whose adjoint reads them: grad's forward makes
    them, so neither program joins."""
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    r = np.sum(Y * logp, axis=1)
    return -np.mean(r) + 0.5 * np.max(r)


def _run(f, args, argnums, monkeypatch, joined=True, grad=False, calls=3):
    """(value, gradients) of the last of `calls` calls (all alike, bit for bit), the source.
    `joined` False: value_and_grad written without the value's join (the oracle)."""
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1")
    if not joined:
        monkeypatch.setattr(xentvalues, "value_lines", lambda *a: None)
    PLANS.clear()
    try:
        g = (s2sad.grad if grad else s2sad.value_and_grad)(f, argnums=argnums)
        got = [g(*args) for _ in range(calls)]
        src = s2sad.source(g)
    finally:
        if not joined:
            monkeypatch.setattr(xentvalues, "value_lines", REAL_VALUE_LINES)
    got = [(None, r) if grad else r for r in got]
    for v, gs in got[1:]:
        assert np.asarray(v).tobytes() == np.asarray(got[0][0]).tobytes()
        assert all(a.tobytes() == b.tobytes() for a, b in zip(gs, got[0][1]))
    return got[-1], src


REAL_VALUE_LINES = xentvalues.value_lines


def _same_bits(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("f,argnums,joined", [
    (xent, (0, 1), True), (xent_bias_first, (0, 1), True), (xent, (0,), True), (xent_regularised, (0, 1), True),
    (xent_rows_twice, (0, 1), True), (xent_rows_max, (0, 1), False),
    (xent, (1,), False), (xent, (0, 1, 2), False), (xent_z_read_again, (0, 1), False),
    (xent_labels_made_after, (0, 1), False), (xent_log, (0, 1), False), (xent_weight_decay, (0, 1), True)])
def test_which_programs_join(f, argnums, joined, monkeypatch):
    (_, _), src = _run(f, _args(), argnums, monkeypatch, calls=1)
    assert ("values=True" in src) == joined and ("head_logits(" in src) == joined
    if joined:       # the value after the reverse sweep, the row line gone
        assert "row_dot_log_softmax(" not in src
        assert src.index(xentvalues.VALUE_COMMENT.strip()) > src.index("# reverse sweep")


@pytest.mark.parametrize("f", [xent, xent_bias_first, xent_regularised, xent_rows_twice, xent_rows_max, xent_log,
                               xent_z_read_again, xent_weight_decay])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("n", [N, 10007])
def test_the_value_has_the_unjoined_bits_and_the_gradients_grads(f, dtype, n, monkeypatch):
    args = _args(n, dtype=dtype)
    copies = [a.copy() for a in args]
    (value, grads), src = _run(f, args, (0, 1), monkeypatch)
    (want_value, want_grads), wsrc = _run(f, args, (0, 1), monkeypatch, joined=False)
    assert "values=True" not in wsrc
    assert np.asarray(value).dtype == np.asarray(want_value).dtype
    assert np.asarray(value).tobytes() == np.asarray(want_value).tobytes()
    tol = 1e-12 if dtype == np.float64 else 2e-5
    (_, grad_alone), _ = _run(f, args, (0, 1), monkeypatch, grad=True)
    # (unjoined, value_and_grad's sums may run in another order than grad's; with a decay,
    # value_and_grad scales the decay's partials after its sum, grad inside it)
    if "values=True" in src and f is not xent_weight_decay:
        _same_bits(grads, grad_alone)
    for a, b in zip(grads, grad_alone):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.max(np.abs(b)))
    for a, b in zip(grads, want_grads):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.max(np.abs(b)))
    np.testing.assert_allclose(value, f(*[a.astype(np.float64) for a in args]), rtol=tol)
    for a, c in zip(args, copies):
        assert a.tobytes() == c.tobytes()


def test_against_central_differences_and_by_hand(monkeypatch):
    args = _args(6000)
    (value, grads), src = _run(xent_regularised, args, (0, 1), monkeypatch)
    assert "values=True" in src
    np.testing.assert_allclose(value, xent_regularised(*args), rtol=1e-13)
    np.testing.assert_allclose(grads[0], central_fd(xent_regularised, args, 0), rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(grads[1], central_fd(xent_regularised, args, 1), rtol=1e-6, atol=1e-10)
    hand_w, hand_b = _hand(*args, -(-1.0 / 6000))
    np.testing.assert_allclose(grads[0], hand_w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(grads[1], hand_b, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("f", [mlp2_tanh, mlp3_relu, mlp2_sigmoid])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_a_head_over_layers(f, dtype, monkeypatch):
    """xent_head_sums with the rows' values: the value has the unjoined bits (a wrong
    buffer here once gave -0.0), every gradient grad's joined bits."""
    args, argnums = _layers(f, dtype=dtype)
    (value, grads), src = _run(f, args, argnums, monkeypatch)
    assert "xent_head_sums(" in src and "values=True" in src
    (want_value, _), _ = _run(f, args, argnums, monkeypatch, joined=False)
    assert np.asarray(value).tobytes() == np.asarray(want_value).tobytes()
    (_, grad_alone), _ = _run(f, args, argnums, monkeypatch, grad=True)
    _same_bits(grads, grad_alone)
    np.testing.assert_allclose(value, f(*[a.astype(np.float64) for a in args]),
                               rtol=1e-12 if dtype == np.float64 else 2e-5)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_threads_keep_the_bits(threads, monkeypatch):
    args, argnums = _layers(mlp3_relu, n=20000)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    (v2, g2), _ = _run(mlp3_relu, args, argnums, monkeypatch)
    monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
    monkeypatch.setenv("S2SAD_BLOCK_LOOP", "0")
    (v, g), _ = _run(mlp3_relu, args, argnums, monkeypatch)
    assert np.asarray(v).tobytes() == np.asarray(v2).tobytes()
    _same_bits(g, g2)


@pytest.mark.parametrize("odd", [_fortran, _strided_y, _int_y, _f32_x, _reversed_rows, _small])
def test_odd_operands(odd, monkeypatch):
    args = odd(_args())
    copies = [np.copy(a) for a in args]
    (value, grads), src = _run(xent, args, (0, 1), monkeypatch)
    (want_value, want_grads), _ = _run(xent, args, (0, 1), monkeypatch, joined=False)
    assert "values=True" in src
    assert np.asarray(value).tobytes() == np.asarray(want_value).tobytes()
    tol = 1e-12 if grads[0].dtype == np.float64 else 2e-5
    for a, b in zip(grads, want_grads):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * np.max(np.abs(b)))
    for a, c in zip(args, copies):
        assert a.tobytes() == c.tobytes()


def test_nan_where_the_unjoined_program_has_it(monkeypatch):
    args = _args()
    args[2][17, 3] = np.nan
    (value, grads), _ = _run(xent, args, (0, 1), monkeypatch)
    (want_value, want_grads), _ = _run(xent, args, (0, 1), monkeypatch, joined=False)
    assert np.isnan(value) and np.isnan(want_value)
    for a, b in zip(grads, want_grads):
        assert np.array_equal(np.isnan(a), np.isnan(b)) and np.isnan(a).any()


def test_a_small_batch_specialises_the_plain_program(tmp_path, monkeypatch):
    """Below the pass's threshold the signature's specialised copy is value_and_grad's
    program without the join, at a large batch the joined one's (no compiled program for
    either: value_and_grad's value is not an array); the values and gradients of both
    batches right."""
    g, small, large, _ = small_and_large_copies(tmp_path, monkeypatch, s2sad.value_and_grad)
    assert "values=True" in s2sad.source(g)
    for args in (small, large):
        value, grads = g(*args)
        np.testing.assert_allclose(value, xent(*args), rtol=1e-13)
        hand = _hand(*args, 1.0 / args[2].shape[0])
        for a, b in zip(grads, hand):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(n=st.integers(1, 3000), d=st.integers(1, 40), k=st.integers(1, 20), dtype=st.sampled_from([np.float64, np.float32]),
       shape=st.sampled_from(["plain", "bias_first", "hidden", "layer", "regularised", "decay"]), with_b=st.booleans(),
       seed=st.integers(0, 10 ** 6))
def test_random_heads_value_and_grad(n, d, k, dtype, shape, with_b, seed):
    """Random heads through the pass (its threshold and the product's lowered): the value
    against the program written without the value's join (its bits) and numpy, the
    gradients against grad's joined program (their bits)."""
    args = _args(n, d, k, dtype, seed)
    f = {"plain": xent, "bias_first": xent_bias_first, "hidden": xent_hidden, "layer": xent_layer,
         "regularised": xent_regularised, "decay": xent_weight_decay}[shape]
    if shape in ("hidden", "layer"):
        r = np.random.default_rng(seed)
        W0, b0 = (r.normal(size=(d, d)) / np.sqrt(d)).astype(dtype), (r.normal(size=(1, d)) * 0.1).astype(dtype)
        args = args + ([W0, b0] if shape == "layer" else [W0])
    argnums = ((0, 1) if with_b else (0,)) + ((4, 5) if shape == "layer" else ())
    saved = xent_head.MIN_WORK, gemm.MIN_WORK, gemm.MIN_COLUMNS
    xent_head.MIN_WORK, gemm.MIN_WORK, gemm.MIN_COLUMNS = 0, 0, 1
    mp = pytest.MonkeyPatch()
    try:
        (value, grads), src = _run(f, args, argnums, mp)
        (want_value, _), _ = _run(f, args, argnums, mp, joined=False)
        (_, grad_alone), _ = _run(f, args, argnums, mp, grad=True)
    finally:
        xent_head.MIN_WORK, gemm.MIN_WORK, gemm.MIN_COLUMNS = saved
        mp.undo()
    assert "values=True" in src
    assert np.asarray(value).tobytes() == np.asarray(want_value).tobytes()
    tol = 1e-11 if dtype == np.float64 else 5e-4
    if shape != "decay":        # (the decay's partials scaled after their sum here, inside it in grad)
        _same_bits(grads, grad_alone)
    for a, b in zip(grads, grad_alone):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(np.max(np.abs(b)), 1e-300))
    np.testing.assert_allclose(value, f(*[a.astype(np.float64) for a in args]), rtol=tol)


def test_no_user_object_kept_alive(tmp_path):
    assert user_objects_left(tmp_path, s2sad.value_and_grad, "values=True") == [None, None, None]


def test_compositions_with_the_joined_value_and_grad(monkeypatch):
    """A loss over value_and_grad's value and gradient (its derivative: forward over the
    joined program's reverse), jvp of the value and grad of it, against central
    differences and value_and_grad itself."""
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "1")
    PLANS.clear()
    W, b, X, Y = _args(6000)
    vg = s2sad.value_and_grad(xent)
    assert "values=True" in s2sad.source(vg)

    def outer(W):
        v, gW = vg(W, b, X, Y)
        return v + 0.5 * np.sum(gW * gW)
    V = np.random.default_rng(3).normal(size=W.shape)
    eps = 1e-6
    fd = (outer(W + eps * V) - outer(W - eps * V)) / (2 * eps)
    np.testing.assert_allclose(np.sum(s2sad.grad(outer)(W) * V), fd, rtol=1e-6)
    _, out_dot = s2sad.jvp(lambda W: vg(W, b, X, Y)[0], (W,), (V,))
    np.testing.assert_allclose(out_dot, (xent(W + eps * V, b, X, Y) - xent(W - eps * V, b, X, Y)) / (2 * eps),
                               rtol=1e-6)
    np.testing.assert_allclose(s2sad.grad(lambda W: vg(W, b, X, Y)[0])(W), vg(W, b, X, Y)[1], rtol=1e-12,
                               atol=1e-15)

"""The sites of a softmax cross-entropy's adjoint specialised per signature
(array_special: unit_vjp, unbroadcast, mean_bar, row_dot_like, row_dot_log_softmax_bar,
a scalar kernel's dual on NOT_NEEDED;
reduce.kept_unbroadcast, rowsoftmax.kept_dot_log_softmax_bar): the specialised copy
gives the bits of the generated program's full calls (float64 and float32, one-hot and
soft labels, short and long rows), keeps them where a signature does not fix what the
compiled loops need (an unaligned label array of the same shape and strides, the row
fusion switch turned off between calls), and the kept calls alone agree with the full
ones bit for bit or decline."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import reduce, rowsoftmax
from s2sad.backends.llvm import LAUNCH_MAX
from s2sad.passes.rowfusion import SWITCH
from conftest import central_fd, function_from_source

rng = np.random.default_rng(23)

SOURCE = """
import numpy as np


def loss(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))
"""


def _loss(tmp_path, name):
    return function_from_source(tmp_path, name, SOURCE, "loss")


def _args(n, d, k, dtype, onehot=True):
    Y = np.eye(k)[rng.integers(0, k, n)] if onehot else rng.dirichlet(np.ones(k), n)
    return [a.astype(dtype) for a in (rng.normal(size=(d, k)) * 0.3, rng.normal(size=(1, k)) * 0.1,
                                      rng.normal(size=(n, d)), Y)]


def _special(g):
    hot = g.__s2sad__.leaf_hot
    return hot.special


def _warm(g, args):
    """Calls until the signature's specialised copy runs; its result, the full program's."""
    for _ in range(3):
        g(*args)
    sp = _special(g)
    assert sp.specialised(args)
    copy = sp.specs[tuple(x for a in args for x in (a.shape, a.strides, a.dtype))][3]   # (the copy; [0]: what runs)
    return copy, sp.fn


def _same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert type(a) is type(b) and np.shape(a) == np.shape(b)
        assert np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b), (a, b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("n,d,k,onehot", [(32, 8, 10, True), (7, 3, 20, False), (64, 5, 3, True)])
def test_the_specialised_sites_give_the_full_calls_bits(tmp_path, dtype, n, d, k, onehot):
    g = s2sad.grad(_loss(tmp_path, "ce"), argnums=(0, 1))
    args = _args(n, d, k, dtype, onehot)
    copy, full = _warm(g, args)
    names = copy.__code__.co_names
    for site in ("unit_vjp", "unbroadcast", "mean_bar", "row_dot_like", "row_dot_log_softmax_bar"):
        bound = [copy.__globals__[s] for s in names if s.startswith(site + "__site")]
        assert bound and all(f is not copy.__globals__[site] for f in bound), site    # each bound: not the full call
    duals = [s for s in names if "__dual__site" in s]      # (-np.mean's dual on NOT_NEEDED: its constant partial)
    assert duals and all(copy.__globals__[s].__name__ == "dual" for s in duals)
    _same(list(copy(*args)), list(full(*args)))
    _same(list(g(*args)), list(full(*args)))
    if dtype == np.float64:
        loss = _loss(tmp_path, "ce_value")
        for i in range(2):
            np.testing.assert_allclose(g(*args)[i], central_fd(loss, args, i), rtol=1e-6, atol=1e-9)


def _unaligned_like(a):
    raw = np.zeros(a.nbytes + a.itemsize, np.uint8)
    u = np.frombuffer(raw.data, dtype=a.dtype, count=a.size, offset=1).reshape(a.shape)
    u[...] = a
    assert not u.flags.aligned and u.strides == a.strides
    return u


def test_an_unaligned_label_array_takes_the_full_calls(tmp_path):
    g = s2sad.grad(_loss(tmp_path, "ce_unaligned"), argnums=(0, 1))
    args = _args(32, 8, 10, np.float64)
    copy, full = _warm(g, args)
    moved = args[:3] + [_unaligned_like(args[3])]
    _same(list(g(*moved)), list(full(*moved)))
    np.testing.assert_allclose(g(*moved)[0], g(*args)[0], rtol=1e-12, atol=1e-15)


def test_the_row_fusion_switch_turned_off_between_calls(tmp_path):
    g = s2sad.grad(_loss(tmp_path, "ce_switch"), argnums=(0, 1))
    args = _args(32, 8, 10, np.float64)
    copy, full = _warm(g, args)
    was = SWITCH.on
    try:
        SWITCH.on = False
        _same(list(g(*args)), list(full(*args)))
    finally:
        SWITCH.on = was
    _same(list(g(*args)), list(full(*args)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("shape", [(32, 10), (2, 2), (5, 40), (300, 150)])
def test_kept_unbroadcast_gives_unbroadcasts_bits(dtype, shape):
    g = rng.normal(size=shape).astype(dtype)
    for x in (np.zeros((1, shape[1]), dtype), np.zeros(shape, dtype)):
        kept = reduce.kept_unbroadcast(g, x, LAUNCH_MAX)
        assert kept is not None
        for _ in range(2):
            _same([kept(g, x)], [reduce.unbroadcast(g, x)])
    strided = np.zeros((shape[0], 2 * shape[1]), dtype)[:, ::2]
    strided[...] = g
    row = np.zeros((1, shape[1]), dtype)
    assert reduce.kept_unbroadcast(strided, row, LAUNCH_MAX) is None      # (the full call: numpy's)
    assert reduce.kept_unbroadcast(g, np.zeros(shape[1], dtype), LAUNCH_MAX) is None
    assert reduce.kept_unbroadcast(g[:, :1], np.zeros((1, 1), dtype), LAUNCH_MAX) is None
    unaligned = _unaligned_like(g)
    kept = reduce.kept_unbroadcast(g, row, LAUNCH_MAX)
    _same([kept(unaligned, row)], [reduce.unbroadcast(unaligned, row)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("n,k", [(32, 10), (3, 17), (1, 4), (50, 1)])
def test_kept_dot_log_softmax_bar_gives_the_full_calls_bits(dtype, n, k):
    z = rng.normal(size=(n, k)).astype(dtype)
    y = np.eye(k)[rng.integers(0, k, n)].astype(dtype)
    gr = rng.normal(size=n).astype(dtype)
    kept = rowsoftmax.kept_dot_log_softmax_bar((0, gr, z, y), 1, "auto", LAUNCH_MAX)
    assert kept is not None
    for _ in range(2):
        _same([kept(0, gr, z, y, axis=1)], [rowsoftmax.row_dot_log_softmax_bar(0, gr, z, y, axis=1)])
    assert rowsoftmax.kept_dot_log_softmax_bar((1, gr, z, y), 1, "auto", LAUNCH_MAX) is None   # y's adjoint
    assert rowsoftmax.kept_dot_log_softmax_bar((0, gr, z, y), 0, "auto", LAUNCH_MAX) is None   # another axis
    assert rowsoftmax.kept_dot_log_softmax_bar((0, gr[::-1][::-1].astype(np.float16), z, y), 1, "auto",
                                               LAUNCH_MAX) is None


def test_kept_dot_log_softmax_bar_declines_rows_split_between_threads():
    n, k = 200_000, 10
    z = np.zeros((n, k))
    assert rowsoftmax.kept_dot_log_softmax_bar((0, np.zeros(n), z, z.copy()), 1, "auto", LAUNCH_MAX) is None


def test_without_launchers_the_same_bits(monkeypatch, tmp_path):
    from s2sad.backends import llvm as llvm_backend

    args = _args(32, 8, 10, np.float64)
    on = s2sad.grad(_loss(tmp_path, "ce_launchers"), argnums=(0, 1))
    got = [on(*args) for _ in range(4)]
    monkeypatch.setattr(llvm_backend, "LAUNCHERS", False)
    off = s2sad.grad(_loss(tmp_path, "ce_ctypes"), argnums=(0, 1))
    want = [off(*args) for _ in range(4)]
    assert _special(off).specialised(args)
    for g, w in zip(got, want):
        _same(list(g), list(w))

"""Issue 15, in-place writes one element at a time (`y[i] = ...` in a loop of n): the
write reuses its array when nothing else needs the old contents (passes/arraywrites.py
mark_in_place, checked again at run time by write_helpers), the reverse sweep zeroes the
overwritten adjoint elements in place and adds x[i]'s adjoint into x's in place
(array_rules.index_add): O(1) per element instead of O(n). Checked: the same bits as
the copying versions (every in-place path forced off), gradients against central
differences, the user's arrays untouched, and the copies counted (none in the loop)."""
import numpy as np
import pytest

import s2sad
from s2sad import array_rules
from s2sad.passes import write_helpers
from tests.conftest import central_fd

rng = np.random.default_rng(4)


def fill(x):
    n = x.shape[0]
    y = np.zeros(n)
    for i in range(n):
        y[i] = np.sin(x[i]) * x[i]
    return np.sum(y ** 2)


def recurrence(x, a):
    y = np.zeros(x.shape[0])
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = y[i - 1] * a + x[i]          # reads y: its write copies (the old value is read)
    return np.sum(y * y)


def read_in_the_loop(x, w):
    y = np.zeros(x.shape[0])
    s = 0.0
    for i in range(x.shape[0]):
        y[i] = x[i] * x[i]
        s = s + np.sum(y * w)               # the tape keeps y: copies
    return s


def copy_then_write(x):
    y = x.copy()
    y[0] = 0.0
    y[2:4] = y[2:4] * 0.0 + x[1]
    return np.sum(np.tanh(y) * x)


def two_loops(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] = x[i] ** 2
    t = np.sum(y)
    for i in range(x.shape[0]):
        y[i] = y[i] * t                     # the second loop reads y: its writes copy
    return np.sum(y)


def column_writes(X):
    Y = np.zeros(X.shape)
    for j in range(X.shape[1]):
        Y[:, j] = np.tanh(X[:, j]) * (j + 1.0)
    return np.sum(Y ** 2)


CASES = [(fill, (rng.normal(size=12),)), (recurrence, (rng.normal(size=9), 0.7)),
         (read_in_the_loop, (rng.normal(size=7), rng.normal(size=7))), (copy_then_write, (rng.normal(size=6),)),
         (two_loops, (rng.normal(size=8),)), (column_writes, (rng.normal(size=(5, 4)),))]


@pytest.fixture
def copying(monkeypatch):
    """Every in-place path off: the copying versions."""
    def force():
        monkeypatch.setattr(write_helpers, "ONE_LOCAL", -100)
        monkeypatch.setattr(write_helpers, "ONE_LOCAL_SETTER", -100)
        monkeypatch.setattr(array_rules, "ONE_LOCAL", -100)
    return force


@pytest.mark.parametrize("loss, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_same_bits_as_the_copying_version_and_right(backend, loss, args, copying):
    argnums = tuple(range(len(args)))
    keep = [np.copy(a) for a in args]
    got = s2sad.value_and_grad(loss, argnums=argnums, backend=backend)(*args)
    for a, k in zip(args, keep):
        np.testing.assert_array_equal(a, k)         # the user's arrays are never written
    for i, g in enumerate(got[1]):
        np.testing.assert_allclose(g, central_fd(loss, args, i), rtol=1e-6, atol=1e-7)
    copying()
    want = s2sad.value_and_grad(loss, argnums=argnums, backend=backend)(*args)
    assert got[0] == want[0]
    for g, w in zip(got[1], want[1]):
        np.testing.assert_array_equal(g, w)


def test_the_filling_loop_copies_nothing(monkeypatch):
    calls = {"set_items": 0, "zeroed_copy": 0, "index_bar": 0}

    def counting(module, name):
        real = getattr(module, name)

        def wrapped(*a, **k):
            calls[name] += 1
            return real(*a, **k)
        monkeypatch.setattr(module, name, wrapped)
    counting(write_helpers, "set_items")
    counting(write_helpers, "zeroed_copy")
    counting(array_rules, "index_bar")
    x = rng.normal(size=300)
    g = s2sad.grad(fill)(x)
    np.testing.assert_allclose(g, 2 * (np.sin(x) * x) * (np.cos(x) * x + np.sin(x)), rtol=1e-12, atol=1e-12)
    # at most the first element's adjoint is copied (the loss's own gradient array may be held twice)
    assert calls == {"set_items": 0, "zeroed_copy": calls["zeroed_copy"], "index_bar": 0}, calls
    assert calls["zeroed_copy"] <= 1


def test_the_filling_loop_is_linear():
    """n = 10,000 and 40,000 in one process: the per-element time may not grow with n
    (copying made it ~5x slower per element at 40,000; a loose bound for a loaded machine)."""
    import time
    g = s2sad.grad(fill)
    per = []
    for n in (10_000, 40_000):
        x = rng.normal(size=n)
        g(x[:10])
        t = time.perf_counter()
        g(x)
        per.append((time.perf_counter() - t) / n)
    assert per[1] < 2.5 * per[0], per


def test_helpers_copy_what_another_name_holds():
    g = np.ones(5)
    other = g                                   # a second holder: never zeroed in place
    out = write_helpers.set_items_base_bar(g, np.s_[1])
    assert out is not g and other[1] == 1.0 and out[1] == 0.0
    acc = np.zeros(4)
    alias = acc
    got = array_rules.index_add(acc, 2.0, acc, np.s_[0])
    assert got is not acc and alias[0] == 0.0 and got[0] == 2.0
    view = np.zeros(6)[::2]                     # not owning its memory
    got = array_rules.index_add(view, 1.0, view, np.s_[0])
    assert got is not view and view[0] == 0.0
    setter = write_helpers.in_place_setter(None, 1)
    y = np.zeros(3)
    held = y
    out = setter(y, np.s_[0], 5.0)
    assert out is not y and held[0] == 0.0 and out[0] == 5.0


def test_fancy_indices_keep_the_copying_sum():
    acc = np.zeros(4)
    got = array_rules.index_add(acc, np.array([1.0, 2.0]), np.zeros(4), np.array([1, 1]))
    np.testing.assert_array_equal(got, [0.0, 3.0, 0.0, 0.0])

"""The hot path of grad and value_and_grad (derivative.Derivative._hot_path): the fused
driver's Python entry called with the user's arguments.

It gives the full path's results to the bit, is taken for the plain fused sum, and
hands everything else to the full path, whose checks and errors stay what they were.
"""
from __future__ import annotations

import math
import sys
import time

import numpy as np
import pytest

import s2sad
from s2sad import derivative
from s2sad.arguments import value_like_arguments
from s2sad.codegen import llvm_entry

pytestmark = pytest.mark.skipif(not llvm_entry.supported(), reason="entries are not supported in this process")

K = 1.5


def user(z, w):
    return math.tanh(w * z) * z / (1.0 + z * z)


def sum_loss(x, w):
    return np.sum(s2sad.broadcast(user, x, w))


def mean_loss(x, w):
    return np.mean(np.tanh(w * x) * x / (1.0 + x * x))


def const_loss(x):
    return np.sum(np.sin(x) * K)


def count_loss(x):
    return np.sum(x > 0.1)


def full_path(fun, args):
    """What the full path returns (the hot path bypassed), the value in the loss's dtype
    as grad's wrapper gives it (session 12)."""
    return as_wrapped(fun.__s2sad__(*args), args)


def as_wrapped(r, args):
    return (value_like_arguments(r[0], args), r[1]) if isinstance(r, tuple) and type(r[0]) is float else r


def same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for u, v in zip(a, b):
            same(u, v)
    elif isinstance(a, np.ndarray):
        assert type(b) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)
    else:
        assert type(a) is type(b) and (a == b or (math.isnan(a) and math.isnan(b))), (a, b)


@pytest.mark.parametrize("loss", [sum_loss, mean_loss], ids=["sum", "mean"])
@pytest.mark.parametrize("argnums", [0, 1, (0,), (1, 0)])
@pytest.mark.parametrize("what", ["grad", "value_and_grad"])
@pytest.mark.parametrize("dtype,shape", [(np.float64, (7,)), (np.float64, (3, 5)), (np.float32, (40,))])
def test_hot_path_gives_the_full_paths_results(loss, argnums, what, dtype, shape):
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, shape).astype(dtype)
    for w in (0.7, rng.uniform(0.5, 1.5, shape).astype(dtype)):
        f = getattr(s2sad, what)(loss, argnums=argnums)
        first = f(x, w)                        # the full path (on a signature's second call, it
        same(f(x, w), first)                   # makes the entry, unless an earlier test did)
        d = f.__s2sad__
        assert d.hot is not derivative.decline
        hot = d.hot(x, w)
        assert hot is not NotImplemented        # taken
        same(as_wrapped(hot, (x, w)) if what == "value_and_grad" else hot, first)
        same(f(x, w), full_path(f, (x, w)) if what == "value_and_grad" else full_path(f, (x, w))[1])


def test_entry_is_made_on_a_signatures_second_call():
    """A first result does not wait for the entry (the warm-start latency); the second
    call makes it, and the third takes the hot path."""
    def fresh_loss(x):
        return np.sum(np.sin(x) * 3.0)

    g = s2sad.grad(fresh_loss)
    x = np.linspace(-1, 1, 9)
    g(x)
    assert g.__s2sad__.hot(x) is NotImplemented
    g(x)
    assert g.__s2sad__.hot(x) is not NotImplemented


def test_hot_path_checks_against_finite_differences():
    x = np.linspace(-1.5, 1.5, 11)
    g = s2sad.grad(sum_loss, argnums=(0, 1))
    g(x, 0.8)
    g(x, 0.8)
    gx, gw = g(x, 0.8)
    h = 1e-6
    fd_w = (np.sum([user(z, 0.8 + h) for z in x]) - np.sum([user(z, 0.8 - h) for z in x])) / (2 * h)
    fd_x = np.array([(user(z + h, 0.8) - user(z - h, 0.8)) / (2 * h) for z in x])
    np.testing.assert_allclose(gx, fd_x, atol=1e-8)
    assert abs(gw - fd_w) < 1e-7 and type(gw) is float


def test_hot_path_declines_to_the_full_path():
    g = s2sad.grad(sum_loss)
    x = np.linspace(-1, 1, 12)
    g(x, 0.5)
    g(x, 0.5)
    d = g.__s2sad__
    for args in [(list(x), 0.5), (x[::2], 0.5), (x.astype(np.float32), 0.5), (x, np.float64(0.5)),
                 (x.reshape(3, 4).T, 0.5), (x[:1], 0.5), (np.linspace(-1, 1, llvm_entry.ENTRY_MAX + 3), 0.5)]:
        assert d.hot(*args) is NotImplemented
        got = g(*args)
        want = full_path(g, args)[1]
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(s2sad.S2SADError):
        g(np.arange(12), 0.5)                                  # an int array: the full path's error
    with pytest.raises(s2sad.S2SADError):
        g(x, np.linspace(0, 1, 5))                             # shapes that do not broadcast
    with pytest.raises((TypeError, s2sad.S2SADError)):
        g(x)                                                    # an argument missing
    two = s2sad.grad(sum_loss, argnums=(0, 1))
    two(x, x)
    two(x, x)
    assert two.__s2sad__.hot(x, x.reshape(3, 4)) is NotImplemented


def test_hot_path_leaves_inputs_alone_and_returns_fresh_arrays():
    x = np.linspace(-1, 1, 20)
    keep = x.copy()
    g = s2sad.grad(sum_loss)
    a = g(x, 0.3)
    b = g(x, 0.3)
    assert np.array_equal(x, keep) and a is not b and not np.shares_memory(a, x)
    assert np.array_equal(a, b)


def test_hot_path_follows_a_rebound_global():
    global K
    x = np.linspace(-1, 1, 9)
    g = s2sad.grad(const_loss)
    g(x)
    np.testing.assert_allclose(g(x), np.cos(x) * 1.5, rtol=1e-15)
    try:
        K = 2.5
        np.testing.assert_allclose(g(x), np.cos(x) * 2.5, rtol=1e-15)
    finally:
        K = 1.5
    np.testing.assert_allclose(g(x), np.cos(x) * 1.5, rtol=1e-15)


def rounded(z):
    return round(z * 3.0)


def rounded_mean(x):
    return np.mean(s2sad.broadcast(rounded, x))


def rounded_sum(x):
    return np.sum(s2sad.broadcast(rounded, x))


def test_the_mean_of_an_integer_valued_function_is_a_float(backend):
    """numpy's mean of ints is a float; only a sum of them is a count (a random-program
    soak found the mean rounded to an int)."""
    x = np.array([0.1, 0.5, 0.7, 1.0, 1.2])
    counts = s2sad.broadcast(rounded, x)
    assert counts.dtype == np.int64
    for _ in range(3):    # the first call, then the compiled paths
        v, g = s2sad.value_and_grad(rounded_mean, backend=backend)(x)
        assert type(v) is float and v == np.mean(counts) == 2.2 and np.array_equal(g, np.zeros_like(x))
        v, _ = s2sad.value_and_grad(rounded_sum, backend=backend)(x)
        assert type(v) is int and v == 11


def test_an_integer_valued_loss_keeps_its_int_value():
    x = np.linspace(-1, 1, 9)
    vg = s2sad.value_and_grad(count_loss)
    for _ in range(3):
        v, g = vg(x)
        assert type(v) is int and v == int(np.sum(x > 0.1)) and np.array_equal(g, np.zeros_like(x))
    g = s2sad.grad(count_loss)
    g(x)
    g(x)
    assert g.__s2sad__.hot(x) is not NotImplemented and np.array_equal(g(x), np.zeros_like(x))


def test_differentiate_decorator_takes_the_hot_path():
    @s2sad.differentiate
    def loss(x):
        return np.sum(np.sin(x) ** 2)

    x = np.linspace(-1, 1, 16)
    g0 = loss.grad(x)
    np.testing.assert_allclose(loss.grad(x), np.sin(2 * x), rtol=1e-14)
    assert loss._g.hot(x) is not NotImplemented and np.array_equal(loss.grad(x), g0)
    v, g = loss.value_and_grad(x)
    v2, g2 = loss.value_and_grad(x)
    assert v == v2 and np.array_equal(g, g2)


# ---------------------------------------------------------------- scans

s_total = 0.0
S_list = [0.0]


def accumulate(x):
    global s_total
    s_total += x
    return s_total


def item_state(x):
    S_list[0] += x * x
    return S_list[0] * 0.5


def product_state(x):            # d state'/d x reads the state: the reverse sweep needs a tape
    global s_total
    s_total = s_total * 0.5 + x * s_total + x
    return s_total


def scan_sum(x):
    return sum(map(accumulate, x))


def scan_item_mean(x):
    return np.mean(np.array(list(map(item_state, x))))


def scan_product(x):
    return sum(map(product_state, x))


def plain_loop(f, x):
    return [f(float(v)) for v in x]


@pytest.mark.parametrize("loss,f,reset", [
    (scan_sum, accumulate, lambda: globals().__setitem__("s_total", 0.0)),
    (scan_item_mean, item_state, lambda: S_list.__setitem__(0, 0.0)),
    (scan_product, product_state, lambda: globals().__setitem__("s_total", 0.0)),
], ids=["global", "item-mean", "tape"])
@pytest.mark.parametrize("what", ["grad", "value_and_grad"])
def test_scan_hot_path_matches_the_full_path_and_the_state(loss, f, reset, what):
    x = np.linspace(-0.9, 0.8, 23)
    fun = getattr(s2sad, what)(loss)
    reset()
    fun(x)                                    # the full path
    reset()
    fun(x)                                    # the full path again; makes the entry
    reset()
    plain_loop(f, x)
    want_state = (s_total, S_list[0])
    reset()
    hot = fun.__s2sad__.hot(x)
    taken = hot is not NotImplemented
    assert taken == (loss is not scan_product and not (loss is scan_item_mean and what == "value_and_grad"))
    if taken:
        assert (s_total, S_list[0]) == want_state             # written back once, as a loop leaves it
        reset()
        full = full_path(fun, (x,))
        same(hot, full if what == "value_and_grad" else full[1])
    reset()
    got = fun(x)
    assert (s_total, S_list[0]) == want_state
    g = got[1] if what == "value_and_grad" else got
    h = 1e-6
    fd = []
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        reset()
        up = loss(x + e)
        reset()
        down = loss(x - e)
        fd.append((up - down) / (2 * h))
    np.testing.assert_allclose(g, fd, atol=1e-6)
    reset()


# ---------------------------------------------------------------- llvm_entry's large entry

def mean_loss(x, w):
    return np.mean(s2sad.broadcast(user, x, w))


LARGE = llvm_entry.ENTRY_MAX * 8 + 5


@pytest.mark.parametrize("loss", [sum_loss, mean_loss])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_large_call_on_one_thread_is_one_call_of_the_large_entry_with_the_threads_bits(monkeypatch, loss, dtype):
    """Beyond ENTRY_MAX elements, on one thread (S2SAD_NUM_THREADS=1), the hot path answers
    with the large entry (one driver call, the GIL released): the bits of the full path
    on two threads (its chunks, taken by either thread), in the arguments' dtype."""
    x = np.linspace(-2, 2, LARGE).astype(dtype)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    want = s2sad.grad(loss)(x, 0.7)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    g = s2sad.grad(loss)
    first = [g(x, 0.7) for _ in range(3)]
    got = g.__s2sad__.hot(x, 0.7)
    assert got is not NotImplemented
    for r in first + [got]:
        assert r.dtype == dtype
        np.testing.assert_array_equal(r, want)


def test_the_large_entry_runs_its_driver_without_the_gil(monkeypatch):
    """Another Python thread runs while a large call's driver does (held, it would wait the
    whole call: a dask task beside it, a GUI). Removing the entry's PyEval_SaveThread
    makes this fail."""
    import threading

    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    x = np.linspace(-2, 2, 6_000_000)
    g = s2sad.grad(sum_loss)
    g(x, 0.7)
    g(x, 0.7)
    hot = g.__s2sad__.hot
    assert hot(x, 0.7) is not NotImplemented
    count, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1
    t = threading.Thread(target=spin)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)          # (the GIL handed back at once: spin runs only while it is free)
    t.start()
    try:
        ran = 0
        for _ in range(5):
            before = count[0]
            hot(x, 0.7)                  # (no Python runs on this thread while the driver does)
            ran = max(ran, count[0] - before)
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(interval)
    assert ran > 10_000         # (measured: 38,000-58,000 over 4M elements; the GIL held, 530-720)


@pytest.fixture
def chunked(monkeypatch):
    """The thread counts fastpath.large_call ran chunks on (threaded_sum_dual with a count),
    each after `delay` seconds more (settable: `chunked.delay`)."""
    from s2sad import fastpath
    real = fastpath.threaded_sum_dual

    class Spy(list):
        delay = 0.0

        def __call__(self, *args, threads=None, **kw):
            if threads is not None:
                self.append(threads)
                time.sleep(self.delay)
            return real(*args, threads=threads, **kw)
    spy = Spy()
    monkeypatch.setattr(fastpath, "threaded_sum_dual", spy)
    return spy


def large_chooser(g):
    """The ThreadChooser of the large calls g's hot path makes (fastpath.large_call's)."""
    ns = g.__s2sad__.hot.__globals__
    return ns["entries"][ns["LARGE"]].chooser


def test_a_large_call_with_threads_to_use_is_chosen_whole(monkeypatch, chunked):
    """Nothing forced, two cores: beyond ENTRY_MAX the hot path answers through
    fastpath.large_call, whose chooser probes the large entry on one thread against the
    chunks on two, and settles; forced to one on this thread only (threads.one_thread, as
    dask's block tasks are), or one core: the large entry, no chunks. The same bits on each."""
    from s2sad import threads

    monkeypatch.delenv("S2SAD_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_DEFAULT", 2)
    x = np.linspace(-2, 2, LARGE)
    g = s2sad.grad(sum_loss)
    want = g(x, 0.7)
    g(x, 0.7)
    large_chooser(g).buckets.clear()
    outs = [g.__s2sad__.hot(x, 0.7) for _ in range(12)]   # (more than a probe's 2 x 4 calls)
    assert all(o is not NotImplemented and o.tobytes() == want.tobytes() for o in outs)
    assert set(chunked) == {2}
    assert set(large_chooser(g).choices().values()) <= {1, 2} and 0 not in large_chooser(g).choices().values()
    chunked.clear()
    with threads.one_thread():
        assert g.__s2sad__.hot(x, 0.7).tobytes() == want.tobytes()
    monkeypatch.setattr(threads, "_DEFAULT", 1)         # one core to run on, nothing forced
    assert g.__s2sad__.hot(x, 0.7).tobytes() == want.tobytes()
    assert not chunked


def test_the_large_calls_chooser_times_the_chunks_python_too(monkeypatch, chunked):
    """The chunks' whole call is timed, not their kernel alone: chunks made 20 ms slower
    outside the kernel (as their Python and the pool's hand-over are, a little) lose to the
    large entry on one thread."""
    from s2sad import threads

    monkeypatch.delenv("S2SAD_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_DEFAULT", 2)
    chunked.delay = 0.02
    x = np.linspace(-2, 2, LARGE)
    g = s2sad.grad(sum_loss)
    g(x, 0.7)
    g(x, 0.7)
    large_chooser(g).buckets.clear()        # (the kernel's, shared with the tests before: measured afresh)
    for _ in range(12):
        g.__s2sad__.hot(x, 0.7)
    assert chunked and set(large_chooser(g).choices().values()) == {1}


def test_what_the_large_entry_does_not_take_stays_the_full_paths(monkeypatch):
    """A value to sum (value_and_grad), a scalar parameter's sum (argnums with w), a
    strided or list argument: the large entry is not made or declines; the results are
    the full path's on two threads."""
    x = np.linspace(-2, 2, LARGE)
    for make, args in [(lambda: s2sad.value_and_grad(sum_loss), (x, 0.7)),
                       (lambda: s2sad.grad(sum_loss, argnums=(0, 1)), (x, 0.7)),
                       (lambda: s2sad.grad(sum_loss), (np.linspace(-2, 2, 2 * LARGE)[::2], 0.7))]:
        monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
        want = make()(*args)
        monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
        g = make()
        for _ in range(3):
            got = g(*args)
        assert g.__s2sad__.hot(*args) is NotImplemented
        same(got, want)


@pytest.mark.parametrize("loss", [sum_loss, mean_loss])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("w", [0.7, 1])
def test_large_calls_on_either_count_give_one_threads_bits(monkeypatch, chunked, loss, dtype, w):
    """While the large calls' chooser probes (one thread's large entry, two threads'
    chunks, in turn), every answer is one thread's, to the bit: a mean's seed (scale / n),
    float32, an int scalar (which the large entry declines: the chunks take it on one
    thread then)."""
    from s2sad import threads

    x = np.linspace(-2, 2, LARGE).astype(dtype)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    want = s2sad.grad(loss)(x, w)
    monkeypatch.delenv("S2SAD_NUM_THREADS")
    monkeypatch.setattr(threads, "_DEFAULT", 2)
    g = s2sad.grad(loss)
    g(x, w)
    g(x, w)
    large_chooser(g).buckets.clear()
    outs = [g(x, w) for _ in range(10)]
    assert 2 in chunked
    for r in outs:
        assert r.dtype == dtype and r.tobytes() == want.tobytes()

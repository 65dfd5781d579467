"""A pool thread serving block loops (s2sad/loopserver.py): never a hang, the same bits
as the pool's way, off with S2SAD_POOL_SPIN=0, parked at the end of a gradient timed
whole (never spinning after it), woken by the next, sent back by other pool work, a
kick, the nap's end or the process's exit."""
from __future__ import annotations

import multiprocessing
import os
import threading
import time

import numpy as np
import pytest

import s2sad
from s2sad import blockloop, gemm, loopserver, rowsoftmax, threads
from s2sad.backends.llvm import ptr


def mlp3(W1, b1, W2, b2, W3, b3, X, Y):
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    z = h2 @ W3 + b3
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def mlp3_args(n: int, dtype):
    rng = np.random.default_rng(n)
    shapes = ((32, 64), (1, 64), (64, 64), (1, 64), (64, 10), (1, 10), (n, 32))
    args = tuple((rng.normal(size=s) * 0.3).astype(dtype) for s in shapes)
    return args + (np.eye(10, dtype=dtype)[rng.integers(0, 10, n)],), (0, 1, 2, 3, 4, 5)


@pytest.fixture(autouse=True)
def _spin_on(monkeypatch):
    monkeypatch.delenv("S2SAD_POOL_SPIN", raising=False)
    monkeypatch.delenv("S2SAD_BLOCK_LOOP", raising=False)
    yield
    loopserver.SERVER.mailbox[11] = 0      # (no gradient in progress: see _serve_forever)
    loopserver.kick()           # (a server a test started leaves)
    _wait_gone()


def _wait_gone(limit: float = 5.0) -> bool:
    end = time.monotonic() + limit
    while loopserver.SERVER.mailbox[0] and time.monotonic() < end:
        time.sleep(0.001)
    return not loopserver.SERVER.mailbox[0]


def _serve_forever(monkeypatch) -> threading.Thread:
    """A thread serving until kicked (its spins all but endless), started and serving, as
    inside a gradient timed whole (mailbox word 11: outside one, a server parks)."""
    _wait_gone()
    loopserver.SERVER.mailbox[11] = 1
    t = threading.Thread(target=loopserver.linger, args=(loopserver.kicks(), 1 << 62), daemon=True)
    t.start()
    end = time.monotonic() + 5
    while loopserver.SERVER.mailbox[0] != 1 and time.monotonic() < end:
        time.sleep(0.0005)
    assert loopserver.serving()
    return t


def test_a_server_with_nothing_posted_leaves_after_its_spins(monkeypatch):
    _wait_gone()
    loopserver.SERVER.mailbox[11] = 1      # (in a call: else it parks)
    t = threading.Thread(target=loopserver.linger, args=(loopserver.kicks(), 2000), daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive() and loopserver.SERVER.mailbox[0] == 0


def test_a_kick_made_before_a_thread_reaches_serve_still_sends_it_away():
    _wait_gone()
    since = loopserver.kicks()
    loopserver.kick()           # (the end of the call came before the pool thread lingered)
    t = threading.Thread(target=loopserver.linger, args=(since, 1 << 62), daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive() and loopserver.SERVER.mailbox[0] == 0


def test_a_kick_sends_a_serving_thread_away_at_once(monkeypatch):
    t = _serve_forever(monkeypatch)
    loopserver.kick()
    t.join(5)
    assert not t.is_alive() and loopserver.SERVER.mailbox[0] == 0


def test_a_post_with_nobody_serving_runs_nothing_and_says_so():
    assert _wait_gone()
    ran = []
    assert not loopserver.run_served(0, 0, 0, 0, 0, (), None, lambda: ran.append(1))
    assert ran == [] and not loopserver.serving()
    assert not blockloop.served_calls(None, [(1, 2)])


def _mulsum_plan(d, g, out, sums, rows):
    from s2sad import productsums
    f = productsums.mulsum_function(d.dtype)
    size, (p, m) = d.itemsize, d.shape
    bounds = [(lo, min(p, lo + rows)) for lo in range(0, p, rows)]

    def run_block(lo, hi, i):
        blockloop.call(f, ptr(d) + lo * m * size, ptr(g) + lo * m * size, ptr(out) + lo * m * size,
                       ptr(sums) + i * m * size, hi - lo, m, m, m)
    return bounds, blockloop.planned(("served test", p), bounds, run_block, dict)


def _loop_address(plan) -> int:
    import ctypes
    return ctypes.cast(plan.loop, ctypes.c_void_p).value


def test_a_served_pass_runs_every_block_once_on_both_threads(monkeypatch):
    rng = np.random.default_rng(0)
    p, m = 5000, 24
    d, g = rng.normal(size=(p, m)), rng.normal(size=(p, m))
    out, sums = np.full((p, m), np.nan), np.zeros((-(-p // 64), m))
    bounds, plan = _mulsum_plan(d, g, out, sums, 64)
    t = _serve_forever(monkeypatch)
    before = loopserver.SERVER.served
    run = blockloop.runner(plan, lambda key: None, lambda buffers, key: None)
    mine = []

    def after_the_server_took_it():     # this thread's share starts once the server has the post
        end = time.monotonic() + 30
        while loopserver.SERVER.mailbox[0] == 3 and time.monotonic() < end:
            pass
        mine.append(int(loopserver.SERVER.mailbox[0]))      # 4 running, or 1 done already
        run(0)
    counter = run.counter
    assert loopserver.run_served(_loop_address(plan), ptr(plan.table), plan.words, plan.table.shape[0],
                                 ptr(counter), plan.want, None, after_the_server_took_it)
    assert mine in ([4], [1])
    assert loopserver.SERVER.served == before + 1 and loopserver.serving()     # (serving again after)
    np.testing.assert_array_equal(out, d * g)
    want = np.array([np.add.reduce(d[lo:hi] * g[lo:hi], axis=0) for lo, hi in bounds])
    np.testing.assert_allclose(sums, want, rtol=1e-13)
    assert run.counter[0] >= len(bounds)        # every block taken from the one counter
    loopserver.kick()
    t.join(5)
    assert not t.is_alive()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_served_products_and_row_kernels_have_one_threads_bits(monkeypatch, dtype):
    rng = np.random.default_rng(1)
    h, w, b = (rng.normal(size=s).astype(dtype) for s in ((10_000, 64), (64, 10), (10,)))
    z, y = rng.normal(size=(10_000, 10)).astype(dtype), np.eye(10, dtype=dtype)[rng.integers(0, 10, 10_000)]
    gr = np.full(10_000, -1e-4, dtype)
    with threads.all_calls_on(1):
        want = gemm._product(h, w, b), rowsoftmax.row_dot_log_softmax_bar(0, gr, z, y, axis=1)
    _serve_forever(monkeypatch)
    before = loopserver.SERVER.served + loopserver.SERVER.retracted
    with threads.all_calls_on(2):
        got = gemm._product(h, w, b), rowsoftmax.row_dot_log_softmax_bar(0, gr, z, y, axis=1)
    # both posted (run by the server, or taken back where this thread's share came first)
    assert loopserver.SERVER.served + loopserver.SERVER.retracted == before + 2
    for a, b_ in zip(got, want):
        np.testing.assert_array_equal(a, b_)


def test_a_product_with_negative_strides_served_has_its_bits(monkeypatch):
    rng = np.random.default_rng(2)
    h = rng.normal(size=(10_000, 64))[::-1]
    w = rng.normal(size=(64, 10))
    with threads.all_calls_on(1):
        want = gemm.matmul(h, w)
    _serve_forever(monkeypatch)
    with threads.all_calls_on(2):
        got = gemm.matmul(h, w)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, h @ w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_mlp3_gradient_served_has_the_bits_of_the_pools_way(monkeypatch, dtype):
    """Each call given a thread serving before it starts (on a loaded machine the pool's
    own thread may come too late to serve: what is served is timing's choice, the bits
    are not); the call's end sends it away."""
    args, argnums = mlp3_args(10_000, dtype)
    g = s2sad.grad(mlp3, argnums=argnums)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    monkeypatch.setenv("S2SAD_POOL_SPIN", "0")
    want = g(*args)
    before = loopserver.SERVER.served
    for _ in range(2):
        g(*args)
    assert loopserver.SERVER.served == before        # off: never served
    monkeypatch.setenv("S2SAD_POOL_SPIN", "1")
    monkeypatch.setattr(loopserver, "NAP_NS", 20_000_000)
    for _ in range(3):
        server = _serve_forever(monkeypatch)
        at = loopserver.SERVER.served + loopserver.SERVER.retracted
        for a, b in zip(g(*args), want):
            np.testing.assert_array_equal(a, b)
        # the four block passes at least posted (run by the server, or taken back where
        # this thread's share was all of it before the server came to it)
        assert loopserver.SERVER.served + loopserver.SERVER.retracted >= at + 4
        server.join(5)
        assert not server.is_alive()                # (parked at the call's end, gone after its nap)


@pytest.mark.parametrize("pool", ["1", "0"])
def test_a_gradient_timed_whole_parks_its_server_when_it_returns(monkeypatch, pool):
    """Spins made endless: the whole call's rest at its end parks the server (state 5: a
    futex wait, no core taken), never left spinning after the call; parked, it gives its
    thread back after NAP_NS (with s2sad's memory pool on and off)."""
    args, argnums = mlp3_args(10_000, np.float64)
    monkeypatch.delenv("S2SAD_NUM_THREADS", raising=False)
    monkeypatch.setenv("S2SAD_POOL", pool)
    monkeypatch.setattr(loopserver, "SPINS", 1 << 62)
    monkeypatch.setattr(loopserver, "NAP_NS", 50_000_000)
    g = s2sad.grad(mlp3, argnums=argnums)
    for _ in range(3):
        g(*args)
        assert _wait_not_spinning()
        assert _wait_gone(2.0)


def _wait_not_spinning(limit: float = 2.0) -> bool:
    """Wait until the server has seen the call's end (resting, or gone where the host has
    no futex)."""
    end = time.monotonic() + limit
    while loopserver.SERVER.mailbox[0] == 1 and time.monotonic() < end:
        time.sleep(0.0005)
    return loopserver.SERVER.mailbox[0] != 1


def _resting(monkeypatch, g, args) -> None:
    """g(*args) (two threads forced) with naps long enough for a test, and spins endless
    (on a loaded machine a server may otherwise leave between two passes, as it should):
    its server parked."""
    if not loopserver._SYSCALL:
        pytest.skip("no futex on this host: a whole call's end kicks its server (tested below)")
    monkeypatch.setattr(loopserver, "NAP_NS", 5_000_000_000)
    monkeypatch.setattr(loopserver, "SPINS", 1 << 62)
    loopserver.kick()
    assert _wait_gone()
    for _ in range(4):                      # (specialised and timed whole from its third or fourth
        g(*args)                            # call: its pool thread lingers, then parks at the end)
    end = time.monotonic() + 5
    while loopserver.SERVER.mailbox[0] != 5 and time.monotonic() < end:
        time.sleep(0.0005)
    assert loopserver.SERVER.mailbox[0] == 5


def test_a_parked_server_serves_the_next_gradients_first_pass(monkeypatch):
    """The next gradient timed whole wakes it (5 -> 1, a futex wake: no GIL to wait for), so
    that every split of that call is posted, the first one too (its four block passes:
    the two layers' forward, the head joined with the relu layer's sums: xent_head, the
    first layer's sums); the bits are one thread's."""
    args, argnums = mlp3_args(10_000, np.float64)
    g = s2sad.grad(mlp3, argnums=argnums)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    want = g(*args)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    g(*args)
    for _ in range(3):
        _resting(monkeypatch, g, args)
        at = loopserver.SERVER.served + loopserver.SERVER.retracted
        for a, b in zip(g(*args), want):
            np.testing.assert_array_equal(a, b)
        assert loopserver.SERVER.served + loopserver.SERVER.retracted == at + 4


def test_other_pool_work_sends_a_parked_server_back_to_the_pool(monkeypatch):
    """make_way wakes it to leave: the executor's one thread then takes the new work at
    once, not after the nap (5 s here)."""
    args, argnums = mlp3_args(10_000, np.float64)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    g = s2sad.grad(mlp3, argnums=argnums)
    _resting(monkeypatch, g, args)
    ran = []
    t0 = time.monotonic()
    threads.run_chunks(lambda c: ran.append(threading.get_ident()), 2, 2)
    assert len(ran) == 2 and time.monotonic() - t0 < 2.0
    # (a pool task of the last call still queued may then linger, and park: never spin)
    assert _wait_not_spinning()


def test_a_kick_sends_a_parked_server_away_at_once(monkeypatch):
    args, argnums = mlp3_args(10_000, np.float64)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    g = s2sad.grad(mlp3, argnums=argnums)
    _resting(monkeypatch, g, args)
    loopserver.kick()
    assert _wait_gone(2.0)


def test_a_child_forked_while_a_server_is_parked_runs_gradients(monkeypatch):
    args, argnums = mlp3_args(10_000, np.float64)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    g = s2sad.grad(mlp3, argnums=argnums)
    want = g(*args)
    _resting(monkeypatch, g, args)
    for a, b in zip(_forked_gradients(args, argnums), want):
        np.testing.assert_array_equal(a, b)
    assert loopserver.SERVER.mailbox[0] == 5         # (the parent's server, still parked)


_EXIT_CHILD = """
import sys, time
sys.path.insert(0, {tests!r})
import s2sad
from s2sad import loopserver
from test_loopserver import mlp3, mlp3_args
loopserver.NAP_NS = 20_000_000_000
loopserver.SPINS = 1 << 62          # (never leaving between passes, even on a loaded machine)
args, argnums = mlp3_args(10_000, float)
g = s2sad.grad(mlp3, argnums=argnums)
for _ in range(6):
    g(*args)
time.sleep(0.05)
print(loopserver.SERVER.mailbox[0], time.time(), flush=True)
"""


def test_a_process_exits_at_once_with_its_server_parked(monkeypatch, tmp_path):
    """At exit, before the pool's threads are joined, a parked server is kicked: the
    process does not wait out its nap (20 s here)."""
    import subprocess
    import sys
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    script = tmp_path / "exit_child.py"          # (a file: s2sad reads the loss's source)
    script.write_text(_EXIT_CHILD.format(tests=os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    ended = time.time()
    assert proc.returncode == 0, proc.stderr
    state, printed = proc.stdout.split()
    assert ended - float(printed) < 5.0
    assert state == ("5" if loopserver._SYSCALL else "0")      # (parked; gone where the host has no futex)


def test_two_python_threads_timing_gradients_whole_at_once_share_the_server(monkeypatch):
    """Two user threads, each a gradient timed whole in turn (one parks the server at its
    end while the other's is in progress, the other wakes it): the bits of one thread,
    every call, and no call waits on a parked server (each finishes)."""
    from concurrent.futures import ThreadPoolExecutor
    args, argnums = mlp3_args(10_000, np.float64)
    g = s2sad.grad(mlp3, argnums=argnums)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    want = g(*args)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(lambda: [g(*args) for _ in range(12)]) for _ in range(2)]
        results = [r for run in runs for r in run.result(timeout=120)]
    assert len(results) == 24
    for r in results:
        for a, b in zip(r, want):
            np.testing.assert_array_equal(a, b)
    assert _wait_not_spinning()


def test_without_a_futex_a_gradients_end_kicks_its_server(monkeypatch):
    args, argnums = mlp3_args(10_000, np.float64)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    monkeypatch.setattr(loopserver, "_SYSCALL", 0)
    g = s2sad.grad(mlp3, argnums=argnums)
    loopserver.kick()
    assert _wait_gone()
    for _ in range(3):
        g(*args)
        assert _wait_gone(2.0)


def _xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    return -np.mean(np.sum(Y * (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))), axis=1))


def test_a_call_not_timed_whole_leaves_no_server_spinning(monkeypatch):
    """A cross-entropy on two threads (a product's rows, a row kernel's chunks: no block
    pass, so no gradient timed whole): its splits leave no pool thread serving after
    them (measured beside JAX's process at 100k rows, spinning there read 1.00-1.2x),
    and its bits are one thread's."""
    rng = np.random.default_rng(3)
    n = 100_000
    args = (rng.normal(size=(32, 10)) * 0.2, rng.normal(size=(1, 10)), rng.normal(size=(n, 32)),
            np.eye(10)[rng.integers(0, 10, n)])
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    g = s2sad.grad(_xent, argnums=(0, 1))
    lingered = []
    real = loopserver.linger
    monkeypatch.setattr(loopserver, "linger", lambda *a: (lingered.append(1), real(*a)))
    posts = loopserver.SERVER.served + loopserver.SERVER.retracted
    for _ in range(3):
        got = g(*args)
    assert lingered == [] and loopserver.SERVER.served + loopserver.SERVER.retracted == posts
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    for a, b in zip(got, g(*args)):
        np.testing.assert_array_equal(a, b)


def _child(conn, args, argnums):
    g = s2sad.grad(mlp3, argnums=argnums)
    conn.send([np.asarray(a) for a in g(*args)])
    conn.close()


def _forked_gradients(args, argnums) -> list:
    """The gradients a forked child computes (it must not hang: no server thread there)."""
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(child, args, argnums))
    proc.start()
    assert parent.poll(120), "the forked child hung"
    got = parent.recv()
    proc.join(30)
    assert proc.exitcode == 0
    return got


def test_a_child_forked_while_a_thread_serves_runs_gradients(monkeypatch):
    """The child has no server thread: its mailbox is zeroed (no post waits for nobody)."""
    args, argnums = mlp3_args(10_000, np.float64)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    want = s2sad.grad(mlp3, argnums=argnums)(*args)
    _serve_forever(monkeypatch)
    for a, b in zip(_forked_gradients(args, argnums), want):
        np.testing.assert_array_equal(a, b)


def test_a_post_no_server_takes_is_taken_back_not_waited_for():
    """A server that has no core when the post comes (here: none at all behind a mailbox
    that says 'serving'): the poster's share takes every block, takes the post back and
    returns at once, the results whole."""
    assert _wait_gone()
    rng = np.random.default_rng(4)
    d, g = rng.normal(size=(2000, 16)), rng.normal(size=(2000, 16))
    out, sums = np.full(d.shape, np.nan), np.zeros((-(-2000 // 64), 16))
    bounds, plan = _mulsum_plan(d, g, out, sums, 64)
    run = blockloop.runner(plan, lambda key: None, lambda buffers, key: None)
    box = loopserver.SERVER.mailbox
    before = loopserver.SERVER.retracted
    box[0] = 1                              # 'serving and free', with no thread behind it
    try:
        t0 = time.monotonic()
        assert run.served()
        assert time.monotonic() - t0 < 1.0
        assert box[0] == 1 and loopserver.SERVER.retracted == before + 1
    finally:
        box[0] = 0
    np.testing.assert_array_equal(out, d * g)


def test_yielding_the_core_where_the_os_has_no_sched_yield(monkeypatch):
    """Windows has no os.sched_yield: the wait between a served pass's checks sleeps 0."""
    loopserver.yield_core()
    monkeypatch.delattr(os, "sched_yield", raising=False)
    assert not hasattr(os, "sched_yield")
    loopserver.yield_core()

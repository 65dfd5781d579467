"""s2sad's memory pool (s2sad/mempool.py): numpy's handler is s2sad's only inside s2sad's
calls, the arrays a call returns come from the pool and go back to it when dropped,
values are the same with the pool off, the pool is bounded and thread- and fork-safe,
and S2SAD_POOL=0 turns it off."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import s2sad
from s2sad import mempool

from conftest import wait_for_child

handler_name = np._core.multiarray.get_handler_name
N = 200_000          # 1.6 MB of float64: above the pool's threshold


def loss(x):
    return np.sum(np.tanh(x) * x)


def mlp(W, X):
    return np.mean(np.tanh(X @ W) ** 2)


pytestmark = pytest.mark.skipif(not mempool.stats()["on"], reason="pool unavailable: " + mempool.stats().get("why", ""))


def test_handler_is_s2sads_only_inside_a_call():
    x = np.linspace(-1, 1, N)
    before = handler_name()
    g = s2sad.grad(loss)(x)
    assert handler_name() == before == "default_allocator"
    assert handler_name(g) == "s2sad_pool"           # the gradient came from the pool
    assert handler_name(np.empty(N)) == "default_allocator"


def test_small_calls_do_not_touch_the_pool():
    g = s2sad.grad(loss)(np.linspace(-1, 1, 100))
    assert handler_name(g) == "default_allocator"


def test_dropped_gradient_is_reused_warm():
    x = np.linspace(-1, 1, N)
    f = s2sad.grad(loss)
    f(x)
    before = mempool.stats()["reuses"]
    for _ in range(5):
        g = f(x)
        del g
    assert mempool.stats()["reuses"] >= before + 4


def test_values_match_numpys_allocator(tmp_path):
    """The same gradients bit for bit with S2SAD_POOL=0 (a child process)."""
    x = np.random.default_rng(3).standard_normal(N)
    rng = np.random.default_rng(4)
    W, X = rng.standard_normal((8, 16)), rng.standard_normal((5000, 8))
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "wx.npz", W=W, X=X)
    here = (s2sad.grad(loss)(x), s2sad.grad(mlp)(W, X))
    code = textwrap.dedent(f"""
        import sys, numpy as np
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import s2sad
        from s2sad import mempool
        from test_mempool import loss, mlp
        assert not mempool.stats()["on"] and mempool.stats()["why"] == "S2SAD_POOL=0"
        x = np.load({str(tmp_path / 'x.npy')!r}); d = np.load({str(tmp_path / 'wx.npz')!r})
        g1 = s2sad.grad(loss)(x); g2 = s2sad.grad(mlp)(d["W"], d["X"])
        assert np._core.multiarray.get_handler_name(g1) == "default_allocator"
        np.save({str(tmp_path / 'g1.npy')!r}, g1); np.save({str(tmp_path / 'g2.npy')!r}, g2)
    """)
    env = dict(os.environ, S2SAD_POOL="0")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)
    assert np.array_equal(here[0], np.load(tmp_path / "g1.npy"))
    assert np.array_equal(here[1], np.load(tmp_path / "g2.npy"))


def test_pool_is_bounded(tmp_path):
    """S2SAD_POOL_MB=2: however many blocks are dropped, at most 2 MB are kept."""
    code = textwrap.dedent("""
        import numpy as np
        from s2sad import mempool
        with mempool.scope():
            blocks = [np.empty(100_000 + k) for k in range(40)]     # 40 sizes of ~0.8 MB
        del blocks
        s = mempool.stats()
        assert s["on"] and 0 < s["cached_bytes"] <= 2 << 20, s
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, S2SAD_POOL_MB="2"),
                         capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "ok"


def test_reused_blocks_are_right_sized_and_zeroed():
    """calloc from the pool zeroes; realloc (resize) keeps the data; a block is reused only
    for its own size (no overrun: the guard bytes around survive)."""
    with mempool.scope():
        a = np.empty(N)
        a[:] = 7.0
        del a
        z = np.zeros(N)
        assert not z.any()
        b = np.empty(N + 1)
        b[:] = 1.0
        b.resize(2 * N, refcheck=False)
        assert (b[:N + 1] == 1.0).all()
        b.resize(10, refcheck=False)
        assert (b == 1.0).all()
        del b, z
        c = np.empty(N - 1)
        c[:] = 2.0
        assert (c == 2.0).all()
        s = np.array(["x" * 40] * 10_000)       # not float data, through the same handler
        assert s[-1] == "x" * 40


def test_threads_allocating_at_once():
    """Eight threads computing gradients through the pool at once: every result right."""
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(N) for _ in range(8)]
    want = [np.tanh(x) + x * (1 - np.tanh(x) ** 2) for x in xs]
    f = s2sad.grad(loss)
    bad = []

    def work(k):
        for _ in range(10):
            if not np.allclose(f(xs[k]), want[k], rtol=1e-12, atol=1e-12):
                bad.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads) and not bad


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_child_of_fork_allocates():
    """A fork while the pool is in use: the child allocates and frees through it."""
    x = np.linspace(-1, 1, N)
    f = s2sad.grad(loss)
    g = f(x)
    pid = os.fork()
    if pid == 0:     # the child: no pytest from here on
        try:
            ok = np.allclose(f(x), g) and np.allclose(f(x), g)
        finally:
            os._exit(0 if ok else 1)
    wait_for_child(pid, 120, "a forked child hung allocating through the pool")


def test_arrays_alive_at_exit_are_freed_safely():
    """Arrays made under the pool and freed during interpreter shutdown (after s2sad's
    globals are cleared) still find the handler's code and state: no crash at exit."""
    pytest.importorskip("dask.array")
    child = os.path.join(os.path.dirname(__file__), "mempool_exit_child.py")
    for _ in range(2):
        r = subprocess.run([sys.executable, child], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, (r.returncode, r.stderr[-2000:])

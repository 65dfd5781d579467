"""The pool evicts its least recently freed blocks to make room (codegen/llvm_pool.py):
a program that dropped many odd-sized arrays still gets its steady-state buffers back
warm, the cap holds after every free, a block over the cap is never kept, live arrays
are never touched by an eviction, threads freeing at once keep the counts consistent,
and S2SAD_POOL=0 is unaffected."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2sad
from s2sad import mempool
from s2sad.codegen import llvm_pool

handler_name = np._core.multiarray.get_handler_name
N = 200_000          # 1.6 MB of float64: above the pool's threshold

pytestmark = pytest.mark.skipif(not mempool.stats()["on"], reason="pool unavailable: " + mempool.stats().get("why", ""))


def loss(x):
    return np.sum(np.tanh(x) * x)


def run_child(code: str, **env) -> str:
    """`code` run in a fresh interpreter (the pool's cap is read once a process)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=dict(os.environ, **env),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


def drop_odd_sizes(count: int, base: int) -> None:
    """`count` arrays of distinct sizes (above the threshold) made in the pool, dropped."""
    with mempool.scope():
        blocks = [np.empty(base + 3 * k) for k in range(count)]
    del blocks


def minor_faults() -> int:
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def test_steady_gradient_reused_after_many_odd_sizes():
    """40 distinct sizes dropped (more than the pool's slots): the gradient's blocks are
    still kept and reused, no new misses, and (Linux) no page faults to speak of."""
    drop_odd_sizes(40, 41_011)         # first: the pool full before the loop's sizes come
    x = np.linspace(-1, 1, N + 3)      # (a size no other test's gradient has)
    f = s2sad.grad(loss)
    for _ in range(3):
        g = f(x)
        del g
    before = mempool.stats()
    faults = minor_faults() if os.path.exists("/proc/self/stat") else None
    for _ in range(10):
        g = f(x)
        assert handler_name(g) == "s2sad_pool"
        del g
    after = mempool.stats()
    assert after["misses"] == before["misses"], (before, after)
    assert after["reuses"] >= before["reuses"] + 10
    if faults is not None:
        assert (minor_faults() - faults) / 10 < 40      # a fresh 1.6 MB block: ~400 faults
    assert before["evictions"] > 0


def test_oldest_blocks_go_first():
    """The blocks evicted are the least recently freed: the newest size is kept."""
    drop_odd_sizes(llvm_pool.SLOTS + 5, 52_027)
    kept = mempool.stats()["kept"]
    assert len(kept) <= llvm_pool.SLOTS
    with mempool.scope():
        newest = np.empty(63_001)
    del newest
    s = mempool.stats()
    assert s["kept"][-1] == 63_001 * 8 and s["kept"][:-1] == kept[-(len(s["kept"]) - 1):]


def test_cap_holds_after_every_free():
    """S2SAD_POOL_MB=2: after each of many frees the pool holds at most 2 MB; a block
    over the cap is never kept and evicts nothing; one that fits evicts the oldest."""
    out = run_child("""
        import numpy as np
        from s2sad import mempool
        cap = mempool.stats()["cap_bytes"]
        assert cap == 2 << 20
        rng = np.random.default_rng(1)
        sizes = [int(n) for n in rng.integers(33_000, 200_000, 300)]
        with mempool.scope():
            live = []
            for n in sizes:
                live.append(np.empty(n))
                if len(live) > 3:
                    live.pop(int(rng.integers(0, 4)))
                s = mempool.stats()
                assert 0 <= s["cached_bytes"] <= cap and s["cached_bytes"] == sum(s["kept"]), s
            del live
            s = mempool.stats()
            assert s["evictions"] > 0 and s["cached_bytes"] == sum(s["kept"]) <= cap, s
            before = mempool.stats()
            big = np.empty(cap // 8 + 1)
            del big
            s = mempool.stats()
            assert s["kept"] == before["kept"] and s["evictions"] == before["evictions"], (before, s)
            whole = np.empty(cap // 8)          # exactly the cap: everything else goes
            del whole
            s = mempool.stats()
            assert s["kept"] == [cap] and s["cached_bytes"] == cap, s
        print("ok")
    """, S2SAD_POOL_MB="2")
    assert out == "ok"


def test_live_arrays_untouched_and_aligned():
    """Arrays alive while others are dropped and evicted keep their bytes; every block
    handed out, before and after evictions, starts on a 64-byte boundary."""
    rng = np.random.default_rng(7)
    before = mempool.stats()["evictions"]
    with mempool.scope():
        alive = []
        for round_ in range(4):
            made = [np.empty(70_001 + 5 * k + 1000 * round_) for k in range(40)]
            for k, a in enumerate(made):
                assert a.ctypes.data % llvm_pool.ALIGN == 0
                a[:] = rng.standard_normal(a.size)
            alive += [(a, a.copy()) for a in made[::7]]
            del made, a
    assert mempool.stats()["evictions"] > before
    for a, want in alive:
        assert np.array_equal(a, want)


def test_threads_freeing_at_once_keep_counts_consistent():
    """Eight threads allocating and freeing odd sizes at once (each in its own scope):
    the data right, and afterwards: kept = kept before + blocks freed - reuses -
    evictions, every allocation counted once, the pool within its cap and slots."""
    out = run_child("""
        import threading, numpy as np
        from s2sad import mempool
        from s2sad.codegen import llvm_pool
        before = mempool.stats()
        count = [0] * 8
        bad = []
        def work(t):
            rng = np.random.default_rng(t)
            with mempool.scope():
                live = []
                for i in range(300):
                    n = int(rng.choice([40_000, 41_000, 52_013, 60_007]) + rng.integers(0, 3) + 3 * t)
                    a = np.empty(n)
                    a[:] = t + i
                    count[t] += 1
                    live.append((a, t + i))
                    if len(live) > 2:
                        b, v = live.pop(int(rng.integers(0, 3)))
                        if b.ctypes.data % 64 or not (b == v).all():
                            bad.append(t)
                        del b
                del live
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads: th.start()
        for th in threads: th.join(120)
        assert not any(th.is_alive() for th in threads) and not bad, bad
        s = mempool.stats()
        made = sum(count)
        assert s["reuses"] - before["reuses"] + s["misses"] - before["misses"] == made, (before, s, made)
        assert len(s["kept"]) == len(before["kept"]) + made - (s["reuses"] - before["reuses"]) \
            - (s["evictions"] - before["evictions"]), (before, s, made)
        assert len(s["kept"]) <= llvm_pool.SLOTS and s["cached_bytes"] == sum(s["kept"]) <= s["cap_bytes"], s
        assert s["evictions"] > before["evictions"] and s["reuses"] > before["reuses"], s
        print("ok")
    """)
    assert out == "ok"


def test_pool_off_unaffected():
    """S2SAD_POOL=0: numpy's own handler, many odd sizes dropped, gradients right."""
    code = """
        import sys, numpy as np
        import s2sad
        from s2sad import mempool
        assert mempool.stats() == {"on": False, "why": "S2SAD_POOL=0"}
        with mempool.scope():
            blocks = [np.empty(41_011 + 3 * k) for k in range(40)]
            assert all(np._core.multiarray.get_handler_name(b) == "default_allocator" for b in blocks)
        del blocks
        sys.path.insert(0, HERE)
        from test_mempool_evict import loss
        x = np.linspace(-1, 1, 200_000)
        g = s2sad.grad(loss)(x)
        want = np.tanh(x) + x * (1 - np.tanh(x) ** 2)
        assert np.allclose(g, want, rtol=1e-12, atol=1e-12)
        print("ok")
    """
    out = run_child(code.replace("HERE", repr(os.path.dirname(__file__))), S2SAD_POOL="0")
    assert out == "ok"

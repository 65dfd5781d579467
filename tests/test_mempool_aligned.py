"""The pool's blocks start on 64-byte boundaries (codegen/llvm_pool.py: a block 32 bytes
off a cache line made every AVX-512 load of the generated kernels straddle two lines),
and the header that makes that possible (libc's pointer and the size, before the block)
keeps every allocation right: realloc keeps the bytes when libc moves them to another
offset, calloc zeroes, free takes the block back, gradients are the pool-off ones."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import mempool
from s2sad.codegen import llvm_pool

pytestmark = pytest.mark.skipif(not mempool.stats()["on"], reason="pool unavailable: " + mempool.stats().get("why", ""))

# The pool keeps what it is given until its slots are full: the tests' pooled blocks are
# of the one size test_mempool uses (N), so that they leave no slot taken by a size that
# no later test asks for; every other size stays below the pool's threshold (libc's, aligned too)
N = 200_000
SMALL = mempool.THRESHOLD // 8 - 1
SIZES = [0, 1, 3, 8, 100, 4095, 4096, 32_767, SMALL, N]


def handler(a: np.ndarray) -> str:
    return np._core.multiarray.get_handler_name(a)


def test_every_block_is_64_byte_aligned():
    assert llvm_pool.ALIGN == 64
    with mempool.scope():
        made = [np.empty(n) for n in SIZES] + [np.zeros(n, dtype=np.uint8) for n in SIZES]
    for a in made:
        assert handler(a) == "s2sad_pool"
        assert a.ctypes.data % 64 == 0, (a.size, a.ctypes.data % 64)


def test_reused_block_is_aligned_and_zeroed_by_calloc():
    n = N
    with mempool.scope():
        dirty = np.full(n, np.nan)
        cached = mempool.stats()["cached_bytes"]
        del dirty                                   # back to the pool, NaN-filled...
        kept = mempool.stats()["cached_bytes"] == cached + n * 8   # ...unless earlier tests filled it
        before = mempool.stats()["reuses"]
        z = np.zeros(n)                             # calloc: that block again, zeroed
    if kept:                                        # (ours, or another cached block of that size)
        assert mempool.stats()["reuses"] == before + 1
    assert z.ctypes.data % 64 == 0
    assert not np.any(z) and not np.any(np.signbit(z))


@pytest.mark.parametrize("start", [5, 1000, SMALL, N])
def test_realloc_keeps_the_bytes_and_the_alignment(start):
    rng = np.random.default_rng(start)
    with mempool.scope():
        a = rng.standard_normal(start)
    assert handler(a) == "s2sad_pool"
    want = a.copy()
    size = start
    # grow and shrink across libc's kinds of chunk (small bins, the heap's top, mmapped):
    # each resize is a realloc through the array's own handler, libc may move the bytes
    for new in (start * 3 + 1, start + 7, 2, 500_000, 1, start):
        a.resize(new, refcheck=False)
        kept = min(size, new, want.size)
        assert a.ctypes.data % 64 == 0, (new, a.ctypes.data % 64)
        np.testing.assert_array_equal(a[:kept], want[:kept])
        want = a.copy()
        size = new


def test_many_blocks_freed_in_any_order():
    rng = np.random.default_rng(1)
    with mempool.scope():
        arrays = [np.full(int(n), float(i)) for i, n in enumerate(rng.integers(0, SMALL, 200))]
    for i in rng.permutation(len(arrays)):
        a = arrays[i]
        assert a.ctypes.data % 64 == 0 and (a.size == 0 or (a[0] == i and a[-1] == i))
        arrays[i] = None


def mlp(W, X):
    return np.mean(np.tanh(X @ W) ** 2)


def test_gradients_from_aligned_blocks_match_the_pool_off(monkeypatch):
    rng = np.random.default_rng(2)
    W, X = rng.standard_normal((10, 64)) * 0.3, rng.standard_normal((10_000, 10))
    g = s2sad.grad(mlp)
    on = [g(W, X) for _ in range(3)]
    monkeypatch.setattr(mempool, "enter", lambda args: None)      # numpy's own allocator
    off = g(W, X)
    for got in on:
        np.testing.assert_allclose(got, off, rtol=1e-12, atol=0)

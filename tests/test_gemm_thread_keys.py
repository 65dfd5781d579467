"""The products' thread choosers are keyed by the rows the threads split (gemm._chooser):
a tall product and a short one of the same work and columns (an MLP's `h @ W3` and its
adjoint's `h.T @ G`, met in turn in every gradient) are timed and chosen apart. In one
bucket the probe alternated one thread and N call by call, so one shape was only ever
timed on one thread and the other only on N, and the verdict held for both."""
from __future__ import annotations

import numpy as np
import pytest

from s2sad import gemm, threadchoice
from s2sad.threadchoice import PROBES, size_class

ROUND = 2 * (PROBES + 1)


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.delenv("S2SAD_NUM_THREADS", raising=False)
    monkeypatch.setattr(threadchoice, "default_threads", lambda: 2)
    # (the products as written: flipped, `h.T @ G` is a product of 10 rows, one thread's)
    monkeypatch.setattr(gemm, "FLIP", False)


def _pair(n: int = 10_000):
    rng = np.random.default_rng(17)
    h, w, g = rng.standard_normal((n, 64)), rng.standard_normal((64, 10)), rng.standard_normal((n, 10))
    return (h, w), (h.T, g)


def test_a_tall_and_a_short_product_of_one_work_have_their_own_choosers(two_cores):
    (h, w), (ht, g) = _pair()
    work = h.shape[0] * 64 * 10
    assert work >= gemm.THREAD_WORK and size_class(work) == size_class(ht.shape[0] * ht.shape[1] * 10)
    tall, short = gemm._chooser(h.dtype, 10, h.shape[0]), gemm._chooser(h.dtype, 10, ht.shape[0])
    assert tall is not short
    tall.buckets.clear()
    short.buckets.clear()
    for _ in range(ROUND):            # in turn, as a gradient calls them
        gemm.matmul(h, w)
        gemm.matmul(ht, g)
    for chooser in (tall, short):
        bucket = chooser.buckets[size_class(work)]
        # each shape timed on both counts (or given up on N after a slow call: chosen)
        assert bucket.choice or (bucket.samples[1] and bucket.samples[2])


def test_the_products_bits_do_not_depend_on_the_count(monkeypatch, two_cores):
    (h, w), (ht, g) = _pair(7_000)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    ref = gemm.matmul(h, w), gemm.matmul(ht, g)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    two = gemm.matmul(h, w), gemm.matmul(ht, g)
    monkeypatch.delenv("S2SAD_NUM_THREADS")
    for _ in range(ROUND):
        chosen = gemm.matmul(h, w), gemm.matmul(ht, g)
        for a, b, c in zip(ref, two, chosen):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, c)
    np.testing.assert_allclose(ref[0], h @ w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ref[1], ht @ g, rtol=1e-12, atol=1e-12)

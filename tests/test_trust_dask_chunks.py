"""dask inputs with odd chunks (session 8, trust): one-row chunks, a chunk per column,
uneven and empty chunks, X and y chunked differently, float32, no rows at all; each
gradient the in-memory one (all passed when written: a guard)."""
import numpy as np
import pytest

import s2sad

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")


def loss(W, X, y):
    return np.sum((np.tanh(X @ W)[:, 0] - y) ** 2)


def elementwise(x):
    return np.sum(np.sin(x) * x)


RNG = np.random.default_rng(0)
N, D = 103, 4
X, W, Y = RNG.normal(size=(N, D)), RNG.normal(size=(D, 2)), RNG.normal(size=N)


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.mark.parametrize("chunks", [(10, 4), (1, 4), (N, 4), (50, 2), (7, 1), ((3, 100), (4,)), ((0, N), (4,)),
                                    ((N, 0), (4,))], ids=str)
def test_odd_row_chunks(chunks):
    want = s2sad.grad(loss)(W, X, Y)
    Xd = da.from_array(X, chunks=chunks)
    yd = da.from_array(Y, chunks=(chunks[0],))
    for got in (s2sad.grad(loss)(W, Xd, yd), s2sad.grad(loss)(W, Xd, Y), s2sad.value_and_grad(loss)(W, Xd, yd)[1]):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)


def test_mismatched_chunks_float32_and_no_rows():
    want = s2sad.grad(loss)(W, X, Y)
    got = s2sad.grad(loss)(W, da.from_array(X, chunks=(10, 4)), da.from_array(Y, chunks=(20,)))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-12)
    g32 = s2sad.grad(loss)(W.astype(np.float32), da.from_array(X.astype(np.float32), chunks=(10, 4)),
                           Y.astype(np.float32))
    np.testing.assert_allclose(np.asarray(g32), want, rtol=1e-3, atol=1e-3)
    g0 = s2sad.grad(loss)(W, da.from_array(X[:0], chunks=(10, 4)), Y[:0])
    assert np.asarray(g0).shape == W.shape and not np.any(np.asarray(g0))


@pytest.mark.parametrize("chunks", [1000, 1, 333, (0, 1001)], ids=str)
def test_elementwise_over_odd_chunks(chunks):
    x = RNG.normal(size=1001)
    got = s2sad.grad(elementwise)(da.from_array(x, chunks=chunks))
    np.testing.assert_allclose(np.asarray(got), np.sin(x) + x * np.cos(x), rtol=1e-12, atol=1e-14)

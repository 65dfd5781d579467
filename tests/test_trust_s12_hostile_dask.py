"""dask arguments a hostile user passes (session 12, hostile pass), on the threaded
scheduler: each checked against the in-memory numpy gradient, or refused located. Three
were wrong when found (a dask array inside a dict, a list beside one, a mean's empty
block): fixed in treecalls / dask_grad / dask_tasks.

Found right: NaN chunks, uneven chunks, chunks of no element in a sum, float32, int
data, byte-swapped blocks, a 2-D elementwise loss, labels chunked otherwise than X.
"""
import numpy as np
import pytest

import s2sad

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
dask = pytest.importorskip("dask")


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


def computed(a):
    return np.asarray(a.compute() if hasattr(a, "compute") else a)


def sines(x):
    return np.sum(np.sin(x) * x)


def mean_sines(x):
    return np.mean(np.sin(x) * x)


def logreg(w, X, y):
    return np.mean(np.log1p(np.exp(-y * (X @ w)))) + 0.01 * np.sum(w ** 2)


RNG = np.random.default_rng(3)
XS = RNG.normal(size=400)
W, XM, Y = RNG.normal(size=3), RNG.normal(size=(400, 3)), np.sign(RNG.normal(size=400))


@pytest.mark.parametrize("make", [
    lambda: np.where(np.arange(400) >= 200, np.nan, XS),
    lambda: XS.astype(np.float32),
    lambda: XS.astype(">f8"),
], ids=["nan chunks", "float32", "byte-swapped"])
@pytest.mark.parametrize("chunks", [100, ((1, 300, 0, 99),)], ids=["even", "uneven with an empty chunk"])
def test_an_elementwise_sum_over_odd_chunks(make, chunks):
    x = make()
    value, g = s2sad.value_and_grad(sines)(da.from_array(x, chunks=chunks))
    want_value, want = s2sad.value_and_grad(sines)(np.asarray(x, dtype=x.dtype.newbyteorder("=")))
    np.testing.assert_allclose(computed(value), want_value, rtol=1e-5, equal_nan=True)
    np.testing.assert_allclose(computed(g), want, rtol=1e-5, equal_nan=True)


def test_rows_with_int_labels_and_other_chunks():
    want = s2sad.grad(logreg)(W, XM, Y)
    for X, y in [(da.from_array(XM, chunks=(100, 3)), da.from_array(Y.astype(np.int64), chunks=100)),
                 (da.from_array(XM, chunks=((100, 300), 3)), da.from_array(Y, chunks=((300, 100),))),
                 (da.from_array(XM, chunks=(100, 1)), Y)]:
        np.testing.assert_allclose(s2sad.grad(logreg)(W, X, y), want, rtol=1e-10)


@pytest.mark.parametrize("case", ["elementwise mean", "rows mean"])
def test_a_mean_with_an_empty_chunk_has_the_numpy_value(case):
    if case == "elementwise mean":
        value, _ = s2sad.value_and_grad(mean_sines)(da.from_array(XS, chunks=((200, 0, 200),)))
        want = mean_sines(XS)
    else:
        X, y = da.from_array(XM, chunks=((1, 0, 399), 3)), da.from_array(Y, chunks=((1, 0, 399),))
        value, _ = s2sad.value_and_grad(logreg)(W, X, y)
        want = logreg(W, XM, Y)
    assert computed(value) == pytest.approx(want, rel=1e-12)


def test_a_dask_array_inside_a_dict_is_differentiated_or_refused():
    def loss(p, X):
        return np.sum((X @ p["w"]) ** 2) + p["b"] ** 2
    p = {"w": da.from_array(W, chunks=3), "b": 1.0}
    try:
        g = s2sad.grad(loss)(p, XM)
    except s2sad.S2SADError as e:
        assert e.location is not None
        return
    want = s2sad.grad(loss)({"w": W, "b": 1.0}, XM)
    np.testing.assert_allclose(computed(g["w"]), want["w"], rtol=1e-10)


def test_a_container_beside_a_dask_array_is_differentiated_or_refused_by_name():
    def loss(p, X):
        return np.sum((X @ p[0]) ** 2) + p[1] ** 2
    with pytest.raises(s2sad.S2SADError, match="container|list|dict|tuple"):
        s2sad.grad(loss)([W, 1.0], da.from_array(XM, chunks=(100, 3)))

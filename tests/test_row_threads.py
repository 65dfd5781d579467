"""The row kernels (log-sum-exp, softmax, log-softmax, the cross-entropy and their
adjoints) on threads (rowthreads.py): the same bits on one thread and on several, and
the same bits as one call over all the rows; the chunks cover the rows, whole blocks."""
import numpy as np
import pytest

from s2sad import rowsoftmax, rowthreads
from s2sad.codegen.llvm_rows import FLUSH_ROWS


@pytest.mark.parametrize("n,k", [(0, 10), (1, 10), (64, 10), (26_215, 10), (100_003, 10), (40_000, 33),
                                 (9_000, 300), (5, 1_000_000)])
def test_chunks_cover_the_rows_in_whole_blocks(n, k):
    chunks = rowthreads.row_chunks(n, k)
    assert chunks[0][0] == 0 and chunks[-1][1] == n
    assert all(hi == lo2 for (_, hi), (lo2, _) in zip(chunks, chunks[1:]))
    assert all(lo % FLUSH_ROWS == 0 and hi > lo for lo, hi in chunks if n)
    if n * k >= rowthreads.THREAD_MIN and n >= 2 * FLUSH_ROWS:
        assert len(chunks) > 1


def _calls(x, y, g, lse):
    """Every threaded row entry's result on x (n, k), y like x, g and lse one a row."""
    return {
        "lse": rowsoftmax.row_logsumexp(x, axis=1),
        "lseraw": rowsoftmax.row_logsumexp(x, axis=1, keepdims=True, shift="max"),
        "softmax": rowsoftmax.row_softmax(x, axis=-1),
        "logsoftmax": rowsoftmax.row_log_softmax(x, axis=1),
        "logsoftmaxraw": rowsoftmax.row_log_softmax(x, axis=1, shift="max"),
        "softmaxbar": rowsoftmax.row_softmax_bar(y, rowsoftmax.row_softmax(x, axis=1), axis=1),
        "logsoftmaxbar": rowsoftmax.row_log_softmax_bar(y, rowsoftmax.row_log_softmax(x, axis=1), axis=1),
        "lsebar": rowsoftmax.row_logsumexp_bar(0, g, x, None, lse, axis=1),
        "xent": rowsoftmax.row_dot_log_softmax(x, y, axis=1),
        "xent_keep": rowsoftmax.row_dot_log_softmax(x, y, axis=1, keepdims=True),
        "xentbar": rowsoftmax.row_dot_log_softmax_bar(0, g, x, y, axis=1),
    }


def _data(n, k, dtype, strided):
    rng = np.random.default_rng(n + k)
    x = (rng.normal(size=(n, k + 3 if strided else k)) * 3).astype(dtype)
    if strided:
        x = x[:, :k]                 # rows with a stride: the chunks' offsets use it
    x[7, 2] = np.nan                 # a NaN row and an inf row land in some chunk
    x[n // 2, 0] = -np.inf
    y = np.eye(k, dtype=dtype)[rng.integers(0, k, n)]
    g = rng.normal(size=n).astype(dtype)
    return x, y, g, rowsoftmax.row_logsumexp(x, axis=1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n,k,strided", [(100_003, 10, False), (70_001, 10, True), (9_001, 40, False)])
def test_threads_give_the_one_thread_bits(monkeypatch, dtype, n, k, strided):
    x, y, g, lse = _data(n, k, dtype, strided)
    assert len(rowthreads.row_chunks(n, k)) > 1
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    one = _calls(x, y, g, lse)
    for threads in ("2", "3"):
        monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
        many = _calls(x, y, g, lse)
        for name in one:
            assert many[name].shape == one[name].shape, name
            np.testing.assert_array_equal(many[name], one[name], err_msg=f"{name} on {threads} threads")


def test_the_values_are_the_numpy_formulas_on_threads(monkeypatch):
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    x, y, g, lse = _data(100_003, 10, np.float64, False)
    x = np.nan_to_num(x, nan=0.5, neginf=-3.0)
    got = _calls(x, y, g, rowsoftmax.row_logsumexp(x, axis=1))
    ref_lse = rowsoftmax.reference_logsumexp(x, axis=1)
    np.testing.assert_allclose(got["lse"], ref_lse, rtol=1e-13)
    np.testing.assert_allclose(got["xent"], rowsoftmax.reference_dot_log_softmax(x, y, axis=1), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(got["lsebar"], g[:, None] * np.exp(x - ref_lse[:, None]), rtol=1e-12, atol=1e-300)


def test_a_whole_calls_forced_count_splits_rows_from_forced_min_with_the_same_bits(monkeypatch):
    """Under threads.all_calls_on(n > 1) (a gradient timed whole) a row pass of 10,000 rows
    of 10 classes, below THREAD_MIN, is split; on one thread it is one call; the bits are
    the same either way."""
    from s2sad import threads
    n, k = 10_000, 10
    assert n * k < rowthreads.THREAD_MIN and n * k >= rowthreads.FORCED_MIN
    x, y, g, lse = _data(n, k, np.float64, False)
    monkeypatch.delenv("S2SAD_NUM_THREADS", raising=False)
    spans = []
    run = rowthreads.run_chunks
    monkeypatch.setattr(rowthreads, "run_chunks", lambda f, c, t, **k: (spans.append((c, t)), run(f, c, t, **k)))
    served = rowthreads.blockloop.served_calls      # (or handed to a serving pool thread: loopserver)
    monkeypatch.setattr(rowthreads.blockloop, "served_calls",
                        lambda f, rows: served(f, rows) and (spans.append((len(rows), 2)) or True))
    with threads.all_calls_on(1):
        one = _calls(x, y, g, lse)
    assert spans == []
    with threads.all_calls_on(2):
        many = _calls(x, y, g, lse)
    assert spans and all(c > 1 and t == 2 for c, t in spans)
    for name in one:
        np.testing.assert_array_equal(many[name], one[name], err_msg=name)

"""The row kernels' vectorised max (integer keys of the floats) and the cross-entropy
adjoint's one exp an element (llvm_rows' xentbar keeps exp(a - m) in out): checked
against numpy's formulas on rows a hostile user would pass (all negative, signed zeros,
subnormals, NaN first / last / alone, -inf, +inf, rows shorter and longer than a
vector), both dtypes, and the adjoint against central differences."""
import numpy as np
import pytest

from s2sad import rowsoftmax as rs
from tests.conftest import central_fd

TINY = np.finfo(np.float64).tiny / 4         # a subnormal


def _rows(k: int, dtype) -> np.ndarray:
    rng = np.random.default_rng(k)
    base = rng.normal(size=(12, k)) * 3
    base[0] = -np.abs(base[0]) - 5                            # all negative
    base[1] = 0.0
    base[1, ::2] = -0.0                                       # signed zeros
    base[2] = -TINY
    base[2, -1] = TINY                                        # subnormals
    base[3, 0] = np.nan                                       # NaN first
    base[4, -1] = np.nan                                      # NaN last
    base[5] = -np.inf                                         # all -inf
    base[6, k // 2] = np.inf                                  # +inf
    base[7, -1] = -np.inf
    base[8] = np.arange(k)[::-1]                              # max first
    base[9] = np.arange(k)                                    # max last
    base[10] = 1e300 if dtype == np.float64 else 1e30         # equal large
    return base.astype(dtype)


def _same(got, ref, tol):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    fin = np.isfinite(ref)
    assert np.array_equal(got[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)])
    scale = np.maximum(1.0, np.abs(ref[fin]))
    assert np.all(np.abs(got[fin] - ref[fin]) <= tol * scale)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-13), (np.float32, 1e-5)])
@pytest.mark.parametrize("k", [1, 2, 7, 8, 9, 10, 17, 33])
def test_the_vectorised_max_gives_numpys_shift(k, dtype, tol):
    x = _rows(k, dtype)
    with np.errstate(all="ignore"):
        for shift in ("max", "finite"):
            _same(rs.row_logsumexp(x, axis=1, shift=shift), rs.reference_logsumexp(x, 1, shift=shift), tol)
            _same(rs.row_log_softmax(x, axis=1, shift=shift), rs.reference_log_softmax(x, 1, shift=shift), tol)
        _same(rs.row_softmax(x, axis=1), rs.reference_softmax(x, 1), tol)
        y = np.eye(k, dtype=dtype)[np.arange(12) % k]
        _same(rs.row_dot_log_softmax(x, y, axis=1), rs.reference_dot_log_softmax(x, y, 1), tol)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-13), (np.float32, 1e-5)])
@pytest.mark.parametrize("k", [1, 3, 10, 19])
def test_the_xent_adjoint_matches_the_numpy_formula(k, dtype, tol):
    x = _rows(k, dtype)
    y = (np.random.default_rng(1).random((12, k)) * 2).astype(dtype)     # weights, not one-hot
    g = np.linspace(-1, 2, 12).astype(dtype)
    with np.errstate(all="ignore"):
        got = rs.row_dot_log_softmax_bar(0, g, x, y, axis=1)
        ref = rs.row_dot_log_softmax_bar(0, g, x, y, axis=1, backend="python")     # the numpy formula
    assert got.dtype == dtype
    _same(got, ref, tol)


def test_the_xent_adjoint_agrees_with_central_differences():
    rng = np.random.default_rng(7)
    z, y = rng.normal(size=(6, 10)) * 3, rng.random((6, 10))
    g = rng.normal(size=6)
    got = rs.row_dot_log_softmax_bar(0, g, z, y, axis=1)
    ref = central_fd(lambda zz: float(np.dot(g, rs.reference_dot_log_softmax(zz, y, 1))), (z,), 0)
    assert np.allclose(got, ref, rtol=1e-6, atol=1e-8)


def test_the_xent_adjoint_writes_no_input():
    rng = np.random.default_rng(3)
    z, y, g = rng.normal(size=(5, 10)), rng.random((5, 10)), rng.normal(size=5)
    copies = [a.copy() for a in (z, y, g)]
    rs.row_dot_log_softmax_bar(0, g, z, y, axis=1)
    assert all(np.array_equal(a, c) for a, c in zip((z, y, g), copies))


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 128, 129, 1000])
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-13), (np.float32, 1e-5)])
def test_every_row_of_every_block_of_logs_is_written(n, dtype, tol):
    """lse and xent take their logs 64 rows at a time: first, middle and last blocks,
    a part block, strided rows."""
    rng = np.random.default_rng(n)
    wide = (rng.normal(size=(2 * n, 13)) * 4).astype(dtype)
    for x in (wide[:n, :10].copy(), wide[::2, :10], wide[:n, 3:]):
        onehot = np.eye(x.shape[1], dtype=dtype)[rng.integers(0, x.shape[1], n)]
        weights = rng.random((2 * n, 2 * x.shape[1])).astype(dtype)[::2, :x.shape[1]]     # strided rows
        for shift in ("max", "finite"):
            _same(rs.row_logsumexp(x, axis=1, shift=shift), rs.reference_logsumexp(x, 1, shift=shift), tol)
        g = rng.normal(size=n).astype(dtype)
        for y in (onehot, weights):
            got = rs.row_dot_log_softmax(x, y, axis=1)
            assert got.shape == (n,) and got.dtype == dtype
            _same(got, rs.reference_dot_log_softmax(x, y, 1), 10 * tol)
            bar = rs.row_dot_log_softmax_bar(0, g, x, y, axis=1)
            assert bar.shape == x.shape and bar.dtype == dtype and bar.flags.c_contiguous
            _same(bar, rs.row_dot_log_softmax_bar(0, g, x, y, axis=1, backend="python"), 10 * tol)

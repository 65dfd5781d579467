"""Narrow products (fewer columns than a wide tile: a 10-class layer, `h @ W3`, `h.T @
G`) run tiles of NARROW_ROWS rows by two vectors where the host has 32 vector registers
(llvm_gemm.narrow_vectors), the second vector masked, so that 9-16 float64 columns are
one pass over A instead of two. Each element stays one multiply-add chain in order:
against the same IR built for a host without the pair (one-vector narrow tiles), the
same bits for every width, row count, q length (across q blocks), A's layout, the
accumulate flag and the bias row; and against numpy."""
import ctypes

import numpy as np
import pytest

from s2sad import gemm
from s2sad.codegen import llvm_gemm, llvm_jit


def _compiled(dt, lanes, vectors, bias):
    ir = llvm_gemm.gemm_ir(dt, lanes=lanes, vectors=vectors)
    mod, _ = llvm_jit.optimize(ir)
    obj = llvm_jit._llvm()["tm"].emit_object(mod)
    name = llvm_gemm.symbol(dt, bias=bias)
    addresses, keep = llvm_jit._link(obj, [name])
    return ctypes.CFUNCTYPE(None, *(gemm._BIAS_ARGTYPES if bias else gemm._ARGTYPES))(addresses[name]), keep


def test_the_pair_is_taken_only_with_wide_tiles_of_four():
    assert llvm_gemm.narrow_vectors(4) == 2 and llvm_gemm.narrow_vectors(2) == 1
    assert "@tile_8_2(" in llvm_gemm.gemm_ir(np.float64, lanes=8, vectors=4)
    assert "@tile_8_2(" not in llvm_gemm.gemm_ir(np.float64, lanes=4, vectors=2)


@pytest.mark.parametrize("dt,lanes", [(np.float64, 8), (np.float32, 16)])
@pytest.mark.parametrize("bias", [False, True])
def test_same_bits_as_one_vector_tiles(dt, lanes, bias):
    paired, keep1 = _compiled(dt, lanes, 4, bias)
    single, keep2 = _compiled(dt, lanes, 2, bias)        # narrow tiles of one vector (a 16-register host)
    size = np.dtype(dt).itemsize
    rng = np.random.default_rng(lanes + bias)
    for m in list(range(1, 2 * lanes + 3)) + [4 * lanes - 1]:
        for p, q in ((1, 3), (8, 1), (9, 300), (29, 70)):
            for transposed in (False, True):
                a = rng.standard_normal((q, p) if transposed else (p, q)).astype(dt)
                a = a.T if transposed else a             # A's rows strided: the short q blocks
                b = rng.standard_normal((q, m)).astype(dt)
                row = rng.standard_normal(m).astype(dt)
                start = rng.standard_normal((p, m)).astype(dt)
                got = []
                for f in (paired, single):
                    c = start.copy()
                    args = [a.ctypes.data, a.strides[0] // size, a.strides[1] // size, b.ctypes.data, m,
                            c.ctypes.data, m, p, q, m]
                    extra = [row.ctypes.data] if bias else []
                    f(*args, 0, 0, p, *extra)
                    fresh = c.copy()
                    c[...] = start
                    f(*args, 1, 2, p, *extra)            # accumulate, rows [2, p) only
                    got.append((fresh, c.copy()))
                    want = a.astype(np.float64) @ b.astype(np.float64) + (row if bias else 0)
                    tol = 1e-12 if dt == np.float64 else 2e-4
                    np.testing.assert_allclose(fresh, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))
                    np.testing.assert_array_equal(c[:2], start[:2])     # rows outside the range untouched
                assert got[0][0].tobytes() == got[1][0].tobytes(), (m, p, q, transposed)
                assert got[0][1].tobytes() == got[1][1].tobytes(), (m, p, q, transposed)
    del keep1, keep2


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
def test_special_values_in_a_ten_class_product(special):
    rng = np.random.default_rng(4)
    h, w = rng.standard_normal((3000, 64)), rng.standard_normal((64, 10))
    h[17, 5] = special
    w[3, 9] = special
    with np.errstate(all="ignore"):
        got, want = gemm.matmul(h, w), h @ w
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-12)

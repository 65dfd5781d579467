"""s2sad.gemm's row tiles prefetch A's rows PREFETCH_ROWS ahead (codegen/llvm_gemm):
the rows past A's last are prefetched too, which must be harmless even where no page
is mapped there, and change no value."""
from __future__ import annotations

import ctypes
import mmap

import numpy as np
import pytest

from s2sad import gemm
from s2sad.codegen import llvm_gemm

PAGE = mmap.PAGESIZE


def _guarded(rows: int, q: int, dtype) -> tuple[np.ndarray, mmap.mmap]:
    """An (rows, q) C array that ends exactly where an inaccessible page starts."""
    size = rows * q * np.dtype(dtype).itemsize
    pages = -(-size // PAGE)
    buf = mmap.mmap(-1, (pages + 1) * PAGE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    if libc.mprotect(base + pages * PAGE, PAGE, 0) != 0:      # PROT_NONE
        pytest.skip("mprotect refused")
    start = pages * PAGE - size
    a = np.frombuffer(buf, dtype=dtype, count=rows * q, offset=start).reshape(rows, q)
    return a, buf


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", [10, 64])        # the narrow tiles and the wide ones
def test_prefetch_past_the_last_row_is_harmless(dtype, m):
    rows, q = 4096, 32                         # at least gemm.MIN_WORK multiply-adds
    a, buf = _guarded(rows, q, dtype)
    rng = np.random.default_rng(m)
    a[...] = rng.standard_normal((rows, q))
    b = rng.standard_normal((q, m)).astype(dtype)
    assert gemm._operands(a, b) is not None          # the compiled product, not numpy's
    c = gemm.matmul(a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(c, ref, rtol=tol, atol=tol * np.abs(ref).max())
    del a, c
    buf.close()


def test_prefetch_changes_no_bit(monkeypatch):
    """The product's bits are the same from row tiles started anywhere (threads split the
    rows between tiles): prefetching reads nothing into the result."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3001, 40))
    b = rng.standard_normal((40, 10))
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    one = gemm.matmul(a, b)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    np.testing.assert_array_equal(gemm.matmul(a, b), one)
    assert llvm_gemm.PREFETCH_ROWS > llvm_gemm.NARROW_ROWS

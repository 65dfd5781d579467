"""numpy's own BLAS call for a product, as a C call a program launcher can make
(array_program.py): the same routine of the OpenBLAS numpy is linked against, with the
arguments numpy's matmul loop passes it, so the product is numpy's to the bit.

    product_call(a, b) -> (address, kinds, args) | None

`a @ b` for float64 or float32 operands of one dtype, each 2-D (b may be 1-D), the
output a fresh C-contiguous array: `args` lists the C arguments, each ("a",), ("b",)
or ("out",) (that operand's data pointer) or a constant (an int, or a float for a
double/float kind). What numpy's matmul inner loop decides from the operands' shapes
and strides (numpy/_core/src/umath/matmul: `is_blasable2d`):
- m, n, p all above 1, each operand "blasable" (its last or first stride the item size,
  the other a multiple of it at least the row length): cblas ?gemm, row major, each
  operand NoTrans or Trans with its leading dimension from its strides;
- p == 1 (b a vector or one column), m, n above 1, a blasable, b's stride a multiple of
  the item size: cblas ?gemv, column major Trans where a's rows are contiguous, else
  row major Trans (numpy's gemv call).
Declined (None: the caller keeps numpy's `@`): a dimension of 1 elsewhere (numpy's own
loops for scalar or outer products, vector @ matrix), an operand numpy would not hand to
BLAS, a @ a.T on one buffer (numpy's syrk), dtypes other than float64/float32 or mixed,
more than BLAS_MAXSIZE along a dimension, and a process whose numpy does not bundle the
`scipy_cblas_*64_` symbols (an ILP64 scipy-openblas build) -- `available()`.

Measured (tests/test_program_launch.py): bitwise equal to numpy's `@` over random
shapes from 2 to 70 along each dimension, transposed, Fortran-ordered and vector
operands, float64 and float32.
"""
from __future__ import annotations

import ctypes
import glob
import os

import numpy as np

ROW_MAJOR, COL_MAJOR, NO_TRANS, TRANS = 101, 102, 111, 112
BLAS_MAXSIZE = (1 << 31) - 1       # numpy's bound for a dimension handed to BLAS (its int checks)
_SYMBOLS = {("gemm", "d"): "scipy_cblas_dgemm64_", ("gemm", "f"): "scipy_cblas_sgemm64_",
            ("gemv", "d"): "scipy_cblas_dgemv64_", ("gemv", "f"): "scipy_cblas_sgemv64_"}
_state: dict = {}


def _library():
    """numpy's bundled scipy-openblas (ILP64), or None."""
    if "lib" not in _state:
        lib = None
        try:
            cfg = np.show_config(mode="dicts")
            blas = cfg.get("Build Dependencies", {}).get("blas", {})
            ilp64 = "USE64BITINT" in str(blas.get("openblas configuration", ""))
            if blas.get("name") == "scipy-openblas" and ilp64:
                here = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
                found = sorted(glob.glob(os.path.join(here, "libscipy_openblas64_*.so")))
                if len(found) == 1:
                    lib = ctypes.CDLL(found[0])
        except Exception:   # noqa: BLE001 - no library found: products stay numpy's `@`
            lib = None
        _state["lib"] = lib
    return _state["lib"]


def address(routine: str, kind: str) -> int | None:
    """The address of cblas `routine` ('gemm', 'gemv') for kind 'd' or 'f', or None."""
    lib = _library()
    if lib is None:
        return None
    try:
        return ctypes.cast(getattr(lib, _SYMBOLS[(routine, kind)]), ctypes.c_void_p).value
    except AttributeError:
        return None


def available() -> bool:
    return address("gemm", "d") is not None


def _blasable(s1: int, s2: int, d1: int, d2: int, size: int) -> bool:
    """numpy's is_blasable2d: rows of d2 unit-stride items, `s1` bytes apart."""
    return s2 == size and s1 % size == 0 and d2 <= s1 // size <= BLAS_MAXSIZE


def _lead(s1: int, s2: int, d1: int, d2: int, size: int) -> tuple[bool, int] | None:
    """An operand of d1 x d2 items, strides s1, s2 (bytes), as BLAS takes it: (True, its
    leading dimension) where its rows are blasable as they are, (False, it) where its
    columns are (BLAS reads it transposed), None where neither (numpy's own loop)."""
    if _blasable(s1, s2, d1, d2, size):
        return True, s1 // size
    if _blasable(s2, s1, d2, d1, size):
        return False, s2 // size
    return None


def product_call(a, b):
    """(address, kinds, args) of the BLAS call numpy's matmul makes for `a @ b` into a
    fresh C-contiguous output, or None (see the docstring)."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype != b.dtype or a.ndim != 2 \
            or b.ndim not in (1, 2) or a.dtype not in (np.float64, np.float32):
        return None
    if not (a.flags.aligned and b.flags.aligned and a.dtype.isnative):
        return None
    kind = "d" if a.dtype == np.float64 else "f"
    size = a.itemsize
    m, n = a.shape
    p = b.shape[1] if b.ndim == 2 else 1
    if b.shape[0] != n or max(m, n, p) > BLAS_MAXSIZE or min(m, n) < 2:
        return None
    is1_m, is1_n = a.strides
    is2_n = b.strides[0]
    la = _lead(is1_m, is1_n, m, n, size)
    if la is None:
        return None
    if p == 1:      # matrix @ vector: numpy's gemv
        if is2_n % size or is2_n // size < 1:
            return None
        at = address("gemv", kind)
        return None if at is None else (
            at, "wwiifiiiifii".replace("f", kind),
            [COL_MAJOR if la[0] else ROW_MAJOR, TRANS, n, m, 1.0, ("a",), la[1], ("b",), is2_n // size, 0.0,
             ("out",), 1])
    is2_p = b.strides[1]
    lb = _lead(is2_n, is2_p, n, p, size)
    if lb is None:
        return None
    if a.ctypes.data == b.ctypes.data and m == p and is1_m == is2_p and is1_n == is2_n:
        return None     # a @ a.T on one buffer: numpy's syrk (the one product it writes half of)
    ta, tb = (NO_TRANS if la[0] else TRANS), (NO_TRANS if lb[0] else TRANS)
    at = address("gemm", kind)
    return None if at is None else (
        at, "wwwiiifiiiifii".replace("f", kind),
        [ROW_MAJOR, ta, tb, m, p, n, 1.0, ("a",), la[1], ("b",), lb[1], 0.0, ("out",), p])

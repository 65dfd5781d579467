"""The adjoints of a kernel's inputs that share one stored partial, `d * g` summed back
to each input's shape, in one pass where one input is a bias row: `h = tanh(X @ W + b)`
stores dh = 1 - h*h once for both `X @ W` (full shape) and b (one row), and its adjoint
is `p = dh * h_bar` for the product and p's column sums for b. numpy makes that two
passes over p (the product, then the sums); codegen/llvm_mulsum makes one.

    product_sums(d, g, inputs) == tuple(unbroadcast(d * g, x) for x in inputs)

bit for bit (llvm_mulsum: numpy's products, and its column sums in numpy's order), a
new array for the product (the full-shape inputs' adjoint, one array shared by them as
the unfused text shared it) and one for each bias input's sums. The compiled pass is taken when

- row fusion is on (passes/rowfusion.SWITCH, S2SAD_ROW_FUSION) and the backend is llvm
  ("auto" with numpy arrays);
- d and g are 2-D numpy arrays of one shape (n, k), n >= 1 and k >= 2 (a single column
  numpy sums pairwise), of one dtype, float64 or float32, with contiguous aligned rows;
- some input has the shape (1, k) or (k,) (a bias row: the column sums), and every
  input has that shape or (n, k);

and the unfused expression otherwise. One thread: the column sums are one chain each,
in row order (threads would change their bits).
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .backends import choose
from .backends.llvm import ptr
from .codegen import llvm_jit, llvm_rows
from .passes.rowfusion import SWITCH
from .reduce import unbroadcast

_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_ARGTYPES = (ctypes.c_void_p,) * 4 + (ctypes.c_int64,) * 4
_FUNCS: dict = {}


def mulsum_function(dtype: np.dtype):
    """llvm_mulsum's compiled `sums += d * g` over rows, for dtype (loaded once)."""
    f = _FUNCS.get(dtype)
    if f is None:
        addresses, keep = llvm_jit.rows_code(dtype)
        f = _FUNCS[dtype] = llvm_jit.callable_at(addresses[llvm_rows.symbol("mulsum", dtype)], _ARGTYPES, keep)
    return f


def _rows(x: np.ndarray, size: int) -> int | None:
    """x's row stride in elements where its rows are contiguous and aligned, else None."""
    s0, s1 = x.strides
    if s1 != size or s0 < 0 or s0 % size or not x.flags.aligned:
        return None
    return s0 // size


def _layout(d: Any, g: Any, inputs: tuple, backend: str):
    """(n, k, d's row stride, g's row stride) where the compiled pass takes these, else None."""
    if not SWITCH.on or type(d) is not np.ndarray or type(g) is not np.ndarray or not choose(backend).fast_path:
        return None
    if d.ndim != 2 or d.shape != g.shape or d.dtype != g.dtype or (d.dtype != _F64 and d.dtype != _F32):
        return None
    n, k = d.shape
    if n < 1 or k < 2:
        return None
    shapes = [np.shape(x) for x in inputs]
    if not any(s in ((1, k), (k,)) for s in shapes) or not all(s in ((n, k), (1, k), (k,)) for s in shapes):
        return None
    size = d.dtype.itemsize
    ds, gs = _rows(d, size), _rows(g, size)
    if ds is None or gs is None:
        return None
    return n, k, ds, gs


def product_sums(d: Any, g: Any, inputs: tuple, backend: str = "auto") -> tuple:
    """unbroadcast(d * g, x) for each x of `inputs` (see the module docstring)."""
    layout = _layout(d, g, inputs, backend)
    if layout is None:
        p = d * g
        return tuple(unbroadcast(p, x) for x in inputs)
    n, k, ds, gs = layout
    p = np.empty((n, k), d.dtype)
    sums = np.zeros(k, d.dtype)
    mulsum_function(d.dtype)(ptr(d), ptr(g), ptr(p), ptr(sums), n, k, ds, gs)
    out, given = [], False
    for x in inputs:        # a second bias input gets its own copy: no two adjoints alias
        shape = np.shape(x)
        out.append(p if shape == (n, k) else (sums.copy() if given else sums).reshape(shape))
        given = given or shape != (n, k)
    return tuple(out)

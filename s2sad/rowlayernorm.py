"""Row-fused layer normalisation along the last axis: each row's mean, centring,
variance, reciprocal square root and scaling in one compiled pass over the row
(codegen/llvm_rownorm), where numpy's statements make five or six passes over the
whole array and two row reductions, forward, and about twice that backward.

    row_layer_norm(x, eps, axis)        (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)
    row_layer_norm_bar(g, x, eps, axis) its adjoint: r (g - mean(g) - xhat mean(g xhat)),
                                        r = 1 / sqrt(var + eps), recomputed from x
    layer_norm_jvp(t, x, out, eps, axis)            the tangent (numpy)
    row_layer_norm_bar_dot(g, x, x_dot, eps, axis)  the adjoint's tangent with g held
                                        fixed (forward over reverse; numpy)

passes/layernorm builds `row_layer_norm` from the numpy statements a user writes. The
compiled path is taken when row fusion is on (S2SAD_ROW_FUSION unset or not "0"), the
backend is llvm ("auto" with numpy arrays), x is a numpy float64/float32 array of at
least one dimension whose last axis is `axis` (-1 or ndim - 1), that holds at least
one element a row and whose rows are contiguous (a 2-D array with a row stride, or any
C-contiguous array); the numpy formula (`reference_layer_norm`, the unfused program's
algorithm) runs otherwise: other axes, other layouts, integers, cupy arrays, the
python and cuda backends.

Tolerance: the compiled row sums are vectorised partial sums (numpy's are pairwise)
and it multiplies by 1/sqrt(v + eps) where the formula divides: values agree with the
numpy formula to about 1e-14 (float64) / 1e-6 (float32) relative to the output's
scale, not bit for bit (tests/test_row_fusion_layernorm.py).
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .backends import choose
from .backends.llvm import ptr
from .codegen import llvm_jit, llvm_rows
from .passes.rowfusion import SWITCH

_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_ARGTYPES = {"ln": (ctypes.c_void_p,) + (ctypes.c_int64,) * 3 + (ctypes.c_double, ctypes.c_void_p),
             "lnbar": (ctypes.c_void_p,) * 2 + (ctypes.c_int64,) * 4 + (ctypes.c_double, ctypes.c_void_p)}
_FUNCS: dict = {}


def _function(kind: str, dtype: np.dtype):
    f = _FUNCS.get((kind, dtype))
    if f is None:
        addresses, keep = llvm_jit.rows_code(dtype)
        for k, types in _ARGTYPES.items():
            _FUNCS[(k, dtype)] = llvm_jit.callable_at(addresses[llvm_rows.symbol(k, dtype)], types, keep)
        f = _FUNCS[(kind, dtype)]
    return f


def _rows(x: Any, axis: Any, backend: str):
    """x as (n, k) rows with their row stride in elements, where the compiled loop takes
    it; else None."""
    if not SWITCH.on or type(x) is not np.ndarray or x.ndim < 1 or (x.dtype != _F64 and x.dtype != _F32):
        return None
    if type(axis) is not int or axis not in (-1, x.ndim - 1) or not choose(backend).fast_path:
        return None
    k = x.shape[-1]
    if k == 0 or not x.flags.aligned:
        return None
    size = x.dtype.itemsize
    if x.ndim != 2:
        if not x.flags.c_contiguous:
            return None
        x = x.reshape(-1, k)
    n = x.shape[0]
    s0, s1 = x.strides
    if (s1 != size and k > 1) or s0 < 0 or s0 % size:
        return None
    return x, n, k, (s0 // size if n > 1 else k)


def _same_rows(g: Any, x: np.ndarray):
    """g as rows beside x's (same shape and dtype, contiguous rows), else None."""
    if type(g) is not np.ndarray or g.shape != x.shape or g.dtype != x.dtype:
        return None
    return _rows(g, -1, "llvm")


# ---------------------------------------------------------------- numpy's formulas


def _stats(x, axis, eps):
    """(centred x, 1/sqrt(var + eps)) as the numpy statements compute them."""
    c = x - x.mean(axis=axis, keepdims=True)
    return c, 1 / np.sqrt((c * c).mean(axis=axis, keepdims=True) + eps)


def reference_layer_norm(x, eps, axis=-1):
    """(x - mean) / sqrt(mean((x - mean)^2) + eps) along `axis`, in numpy."""
    with np.errstate(divide="ignore", invalid="ignore"):
        c = x - x.mean(axis=axis, keepdims=True)
        return c / np.sqrt((c * c).mean(axis=axis, keepdims=True) + eps)


def reference_layer_norm_bar(g, x, eps, axis=-1):
    with np.errstate(divide="ignore", invalid="ignore"):
        c, r = _stats(x, axis, eps)
        h = c * r
        return r * (g - g.mean(axis=axis, keepdims=True) - h * (g * h).mean(axis=axis, keepdims=True))


# ---------------------------------------------------------------- the entries


def row_layer_norm(x, eps, axis=-1, backend="auto"):
    """The layer normalisation of x along `axis` (the compiled loop where it takes x)."""
    rows = _rows(x, axis, backend)
    if rows is None:
        return reference_layer_norm(x, eps, axis)
    xr, n, k, stride = rows
    out = np.empty(x.shape, x.dtype)
    if n:
        _function("ln", x.dtype)(ptr(xr), n, k, stride, float(eps), ptr(out))
    return out


def row_layer_norm_bar(g, x, eps, axis=-1, backend="auto"):
    """The adjoint of row_layer_norm w.r.t. x, for the seed g (of x's shape)."""
    rows = _rows(x, axis, backend)
    grows = _same_rows(g, x) if rows is not None else None
    if grows is None:
        return reference_layer_norm_bar(np.broadcast_to(g, np.shape(x)), x, eps, axis)
    xr, n, k, stride = rows
    out = np.empty(x.shape, x.dtype)
    if n:
        _function("lnbar", x.dtype)(ptr(grows[0]), ptr(xr), n, k, grows[3], stride, float(eps), ptr(out))
    return out


# ---------------------------------------------------------------- tangents (numpy, any layout)


def layer_norm_jvp(t, x, out, eps, axis=-1):
    """d out = r (dc - out mean(out dc)), dc = t - mean(t)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        _, r = _stats(x, axis, eps)
        dc = t - np.mean(t, axis=axis, keepdims=True)
        return r * (dc - out * np.mean(out * dc, axis=axis, keepdims=True))


def row_layer_norm_bar_dot(g, x, x_dot, eps, axis=-1):
    """d/dt of r (gc - h mean(h gc)) (gc = g - mean(g)) along x + t x_dot: with
    dr = -r^2 mean(h dc) and dh = r (dc - h mean(h dc))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        c, r = _stats(x, axis, eps)
        h = c * r
        gc = g - np.mean(g, axis=axis, keepdims=True)
        dc = x_dot - np.mean(x_dot, axis=axis, keepdims=True)
        hdc = np.mean(h * dc, axis=axis, keepdims=True)
        a = np.mean(h * gc, axis=axis, keepdims=True)
        dh = r * (dc - h * hdc)
        dr = -r * r * hdc
        return dr * (gc - h * a) - r * (dh * a + h * np.mean(dh * gc, axis=axis, keepdims=True))


# what array_rules.HELPERS takes in (array_prims/rowfused's HELPER_NAMES name them); the
# generated code's namespace binds the entries again per backend (derivative_runtime)
HELPERS = {"row_layer_norm_bar": row_layer_norm_bar, "layer_norm_jvp": layer_norm_jvp,
           "row_layer_norm_bar_dot": row_layer_norm_bar_dot}

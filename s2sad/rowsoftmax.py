"""Row-fused log-sum-exp, softmax and log-softmax along the last axis: each row's max,
shift, exp, sum, log and divide in one compiled pass over the row (codegen/llvm_rows),
where numpy's formula makes four to six passes over the whole array, each with numpy's
per-row reduction cost (about 20 ns a row).

`row_logsumexp(a, axis, keepdims)`, `row_softmax(x, axis)`, `row_log_softmax(x, axis)`
compute scipy.special's logsumexp (without b), softmax and log_softmax (shift="finite"),
or the numpy idioms passes/rowfusion replaces (shift="max": the max as written);
`row_*_bar` their adjoints (softmax_rules' formulas), `row_*_bar_dot` the adjoints'
tangents (forward over reverse, numpy). The compiled path is taken when

- row fusion is on (S2SAD_ROW_FUSION unset or not "0" when a plan was last built or
  `enabled()` last asked: passes/rowfusion.SWITCH) and the backend is llvm ("auto" with
  numpy arrays);
- x is a 2-D numpy array of float64 or float32 with contiguous rows, at least one
  element a row, and axis is the last one (1 or -1, or a 1-tuple of it);

and scipy.special's own function otherwise: other shapes, other axes, cupy arrays, the
python and cuda backends, S2SAD_ROW_FUSION=0. `reference_*` are the numpy formulas of
the same algorithm (the tests' unfused oracle). All follow scipy's conventions for non-finite rows (the max shift taken as 0 when it is not
finite, for logsumexp and log_softmax; softmax shifts by the max as it is).

Tolerance: the compiled sums run in order where numpy's are pairwise, and exp/log are
s2sad's own (within 4 ulp of glibc's), so results agree with the numpy formula to a
few ulp relative (tests/test_row_fusion.py: 1e-13 float64, 1e-5 float32, relative to
the row's scale), not bit for bit.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from . import rowthreads, softmax_rules
from .reduce import unbroadcast
from .backends import choose
from .backends.llvm import ptr
from .codegen import llvm_jit, llvm_launch, llvm_rows
from .rowthreads import row_chunks, run_rows
from .threads import forced_threads
from .passes import rowfusion
from .passes.rowfusion import SWITCH

_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
_ARGTYPES = (ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_BAR_ARGTYPES = (ctypes.c_void_p,) * 3 + (ctypes.c_int64,) * 4 + (ctypes.c_void_p,)
_VALUE_BAR_ARGTYPES = (ctypes.c_void_p,) * 4 + (ctypes.c_int64,) * 4 + (ctypes.c_void_p,)
_FUNCS: dict = {}


def enabled() -> bool:
    """Row fusion on? (S2SAD_ROW_FUSION=0 turns it off, for comparisons and tests.) Reads
    the environment (passes/rowfusion.enabled): a plan's build does too; the row
    functions read the switch it sets."""
    return rowfusion.enabled()


def _function(kind: str, dtype: np.dtype):
    f = _FUNCS.get((kind, dtype))
    if f is None:
        addresses, keep = llvm_jit.rows_code(dtype)
        for k in llvm_rows.KINDS + llvm_rows.BAR_KINDS + llvm_rows.DOT_KINDS + llvm_rows.SHORT_KINDS \
                + llvm_rows.SHORT_BAR_KINDS + llvm_rows.SHORT_VALUE_KINDS:
            types = _ARGTYPES if k in llvm_rows.KINDS or k in ("lseshort", "lserawshort") else \
                _VALUE_BAR_ARGTYPES if k in llvm_rows.SHORT_VALUE_KINDS else _BAR_ARGTYPES
            _FUNCS[(k, dtype)] = llvm_jit.callable_at(addresses[llvm_rows.symbol(k, dtype)], types, keep)
        f = _FUNCS[(kind, dtype)]
    return f


def _sized(kind: str, k: int) -> str:
    """The row kernel `kind` for rows of k elements: its short-row form (llvm_rows'
    SHORT_KINDS and SHORT_BAR_KINDS, 64 rows at a time across the rows) up to SHORT_K."""
    return kind + "short" if k <= llvm_rows.SHORT_K else kind


def xent_value_function(k: int, dtype: np.dtype):
    """The compiled row pass of row_dot_log_softmax for rows of k elements (its BAR_KINDS
    signature, C unread: z, y, 0, rows, k, z's row stride, y's, out), for passes that call
    it a block of rows at a time (xent_head: a row's value has the same bits in any block)."""
    return _function(_sized("xent", k), dtype)


def xent_bar_value_function(k: int, dtype: np.dtype):
    """xent_bar_function's pass that also writes each row's row_dot_log_softmax value (the
    same bits) to one more pointer after g (z, y, g, values, rows, k, z's row stride, y's,
    out), for rows of at most SHORT_K elements; None for longer rows."""
    return _function("xentbarvalshort", dtype) if k <= llvm_rows.SHORT_K else None


def xent_bar_function(k: int, dtype: np.dtype):
    """The compiled row pass of row_dot_log_softmax_bar's z adjoint for rows of k elements
    (its BAR_KINDS signature: z, y, g, rows, k, z's row stride, y's, out), for passes that
    call it a block of rows at a time (xent_head)."""
    return _function(_sized("xentbar", k), dtype)


def _last_axis(axis: Any) -> bool:
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    return type(axis) is int and axis in (1, -1)


def _row_layout(x: Any, axis: Any, backend: str):
    """(n, k, row stride in elements) where the compiled loop takes x, else None."""
    if not SWITCH.on or type(x) is not np.ndarray or x.ndim != 2 or (x.dtype != _F64 and x.dtype != _F32):
        return None
    if not _last_axis(axis) or not choose(backend).fast_path:
        return None
    n, k = x.shape
    size = x.dtype.itemsize
    s0, s1 = x.strides
    if k == 0 or (s1 != size and k > 1) or s0 < 0 or s0 % size or not x.flags.aligned:
        return None
    return n, k, (s0 // size if n > 1 else k)


def _run(kind: str, x: np.ndarray, layout, shape) -> np.ndarray:
    n, k, stride = layout
    out = np.empty(shape, x.dtype)
    if n:
        f, size = _function(kind, x.dtype), x.dtype.itemsize
        a, o, o_row = ptr(x), ptr(out), out.size // n      # out: k values a row, or one
        run_rows((kind, x.dtype), n, k, f,
                 lambda lo, hi: (a + lo * stride * size, hi - lo, k, stride, o + lo * o_row * size))
    return out


# ---------------------------------------------------------------- numpy's formulas


def _shift(x: np.ndarray, axis, zero_nonfinite: bool) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    if zero_nonfinite:
        m = np.where(np.isfinite(m), m, np.zeros((), m.dtype))
    return m


def _float(x):
    """x as a float array (an array of another module, cupy's, kept as it is)."""
    if getattr(x, "dtype", None) is not None and x.dtype.kind == "f":
        return x
    return np.asarray(x).astype(np.float64)


def reference_logsumexp(a, axis=None, keepdims=False, shift="finite"):
    """log(sum(exp(a - m))) + m, m the max (0 where not finite; as it is for shift
    "max"), in numpy."""
    a = _float(a)
    if a.size == 0 and shift == "finite":     # scipy's answer; the numpy idiom's max raises on empty rows
        with np.errstate(divide="ignore"):
            return np.log(np.sum(np.exp(a), axis=axis, keepdims=keepdims))
    m = _shift(a, axis, shift == "finite")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = np.sum(np.exp(a - m), axis=axis, keepdims=True)
        out = np.log(s) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def reference_softmax(x, axis=None):
    x = _float(x)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - _shift(x, axis, False))
        return e / np.sum(e, axis=axis, keepdims=True)


def reference_log_softmax(x, axis=None, shift="finite"):
    x = _float(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = x - _shift(x, axis, shift == "finite")
        return t - np.log(np.sum(np.exp(t), axis=axis, keepdims=True))


# ---------------------------------------------------------------- the entries


def _scipy(name: str):
    """scipy.special's function: what the user called, where the compiled loop is not taken."""
    import scipy.special
    return getattr(scipy.special, name)


def row_logsumexp(a, axis=None, keepdims=False, shift="finite", backend="auto"):
    """shift "finite": scipy.special.logsumexp (scipy's own where the loop does not take
    a); "max": the numpy idiom log(sum(exp(a - max))) + max (its numpy formula there)."""
    layout = _row_layout(a, axis, backend)
    if layout is None:
        if shift == "max":
            return reference_logsumexp(a, axis, keepdims, shift)
        return _scipy("logsumexp")(a, axis=axis, keepdims=keepdims)
    n, k = layout[0], layout[1]
    kind = _sized("lse" if shift == "finite" else "lseraw", k)
    return _run(kind, a, layout, (n, 1) if keepdims else (n,))


def row_softmax(x, axis=None, shift="finite", backend="auto"):
    """softmax shifts by the max as it is either way; shift "max": the numpy idiom."""
    layout = _row_layout(x, axis, backend)
    if layout is None:
        if shift == "max":
            return reference_softmax(x, axis)
        return _scipy("softmax")(x, axis=axis)
    return _run("softmax", x, layout, x.shape)


def row_log_softmax(x, axis=None, shift="finite", backend="auto"):
    """As row_logsumexp: shift "max" is the numpy idiom (a - max) - log(sum(exp(a - max)))."""
    layout = _row_layout(x, axis, backend)
    if layout is None:
        if shift == "max":
            return reference_log_softmax(x, axis, shift)
        return _scipy("log_softmax")(x, axis=axis)
    return _run("logsoftmax" if shift == "finite" else "logsoftmaxraw", x, layout, x.shape)


# ---------------------------------------------------------------- the adjoints


def _same_rows(x: Any, like: np.ndarray):
    """x's row stride where the compiled adjoint reads it beside `like` (same shape and
    dtype, contiguous rows), else None."""
    if type(x) is not np.ndarray or x.shape != like.shape or x.dtype != like.dtype or not x.flags.aligned:
        return None
    size = x.dtype.itemsize
    n, k = x.shape
    s0, s1 = x.strides
    if (s1 != size and k > 1) or s0 < 0 or s0 % size:
        return None
    return s0 // size if n > 1 else k


def _run_bar(kind: str, a: np.ndarray, b: np.ndarray, c, a_stride: int, b_stride: int, shape=None) -> np.ndarray:
    """A BAR_KINDS-signature kernel over the rows of a and b (c: one value a row, or
    None), into a new array of `shape` (a's by default; one value a row, or k)."""
    n, k = a.shape
    out = np.empty(a.shape if shape is None else shape, a.dtype)
    if n:
        f, size, out_row = _function(kind, a.dtype), a.dtype.itemsize, out.size // n
        pa, pb, pc, po = ptr(a), ptr(b), ptr(c) if c is not None else 0, ptr(out)

        def rows(lo, hi):
            return (pa + lo * a_stride * size, pb + lo * b_stride * size, pc and pc + lo * size, hi - lo, k,
                    a_stride, b_stride, po + lo * out_row * size)
        run_rows((kind, a.dtype), n, k, f, rows)
    return out


def _pair_layout(g: Any, out: Any, axis: Any, backend: str):
    layout = _row_layout(out, axis, backend)
    if layout is None:
        return None
    gs = _same_rows(g, out)
    return None if gs is None else (gs, layout[2])


def row_softmax_bar(g, out, axis=None, backend="auto"):
    """softmax_rules.softmax_bar, one pass per row where the loop takes g and out."""
    strides = _pair_layout(g, out, axis, backend)
    if strides is None:
        return softmax_rules.softmax_bar(g, out, axis)
    return _run_bar("softmaxbar", g, out, None, *strides)


def row_log_softmax_bar(g, out, axis=None, backend="auto"):
    """softmax_rules.log_softmax_bar, one pass per row where the loop takes g and out."""
    strides = _pair_layout(g, out, axis, backend)
    if strides is None:
        return softmax_rules.log_softmax_bar(g, out, axis)
    return _run_bar("logsoftmaxbar", g, out, None, *strides)


def row_logsumexp_bar(i, g, a, b, out, axis=None, keepdims=False, backend="auto"):
    """softmax_rules.logsumexp_bar; a's adjoint without b in one pass per row where the
    loop takes a, and g and out hold one value a row of a's dtype: g_r softmax(a) from a
    (the lsezbar kernels, as row_logsumexp_max_bar), never g exp(a - out), which rounds
    wrong where out's log(sum) is lost (a row of 1e308). Rows whose value is +inf (an
    inf in a) take the numpy formula: scipy's shift gives NaN at the infs and 0 beside
    them, the max shift NaN throughout."""
    layout = _row_layout(a, axis, backend) if i == 0 and b is None else None
    n = layout[0] if layout else 0
    if layout is None or not all(type(v) is np.ndarray and v.dtype == a.dtype and v.size == n
                                 and v.shape in ((n,), (n, 1)) for v in (g, out)):
        return softmax_rules.logsumexp_bar(i, g, a, b, out, axis, keepdims)
    stride = layout[2]
    bar = _run_bar(_sized("lsezbar", layout[1]), a, a,
                   np.ascontiguousarray(g), stride, stride)
    inf_rows = np.isposinf(out.reshape(n))
    if inf_rows.any():
        bar[inf_rows] = softmax_rules.logsumexp_bar(0, g[inf_rows], a[inf_rows], None, out[inf_rows], axis,
                                                    keepdims)
    return bar


def row_logsumexp_max_bar(g, a, axis=None, keepdims=False, backend="auto"):
    """The adjoint w.r.t. a of row_logsumexp(a, axis, keepdims, shift="max") (the numpy
    idiom's) from a alone, not its value: g_r exp(a - m_r) / sum_j exp(a - m_r), one pass
    per row and one exp an element where the loop takes a and g holds one value a row of
    a's dtype, so that a gradient whose forward line only gave a shape (a loss's sum of
    the rows' log-sum-exps: Prim.like) runs one pass, not the forward's and this one.
    Elsewhere the forward's value and row_logsumexp_bar (numpy's formula)."""
    layout = _row_layout(a, axis, backend)
    if layout is not None and type(g) is np.ndarray and g.dtype == a.dtype and g.size == layout[0] \
            and g.shape in ((layout[0],), (layout[0], 1)):
        n, k, stride = layout
        return _run_bar(_sized("lsezbar", k), a, a, np.ascontiguousarray(g),
                        stride, stride)
    out = row_logsumexp(a, axis, keepdims, shift="max", backend=backend)
    return row_logsumexp_bar(0, g, a, None, out, axis, keepdims, backend)


def row_logsumexp_like(a, axis=None, keepdims=False):
    """An array of row_logsumexp(a, axis, keepdims, shift="max")'s shape and dtype, for
    an adjoint that reads only those (array_prims.Prim.like): read-only zero-stride zeros
    where a is a float numpy array with at least one element along axis, one of its axes;
    the value itself elsewhere (its shape and errors exactly the forward line's)."""
    if type(a) is np.ndarray and a.dtype.kind == "f":
        like = _reduced_like(a, axis, keepdims)
        if like is not None:
            return like
    return row_logsumexp(a, axis, keepdims, shift="max")


# ---------------------------------------------------------------- the log-softmax's product, summed


def reference_dot_log_softmax(z, y, axis=None, keepdims=False):
    """sum(y * log_softmax(z), axis) with the numpy idiom's log-softmax (shift "max")."""
    with np.errstate(invalid="ignore"):
        return np.sum(y * reference_log_softmax(z, axis, shift="max"), axis=axis, keepdims=keepdims)


def _dot_layout(z, y, axis, backend):
    """(n, k, z's row stride, y's) where the compiled loop takes z and y, else None."""
    layout = _row_layout(z, axis, backend)
    ys = _same_rows(y, z) if layout is not None else None
    return None if ys is None else (*layout, ys)


def row_dot_log_softmax(z, y, axis=None, keepdims=False, backend="auto"):
    """sum(y * log_softmax(z), axis) (passes/rowdot's op: the cross-entropy's one-hot
    product and its row sum in the log-softmax's pass): one compiled pass per row where
    the loop takes z and y (same shape and dtype), the numpy formula elsewhere."""
    layout = _dot_layout(z, y, axis, backend)
    if layout is None:
        return reference_dot_log_softmax(z, y, axis, keepdims)
    n, k, zs, ys = layout
    return _run_bar(_sized("xent", k), z, y, None, zs, ys,
                    (n, 1) if keepdims else (n,))


_ZERO_BYTES = bytes(16)        # one zero of any float dtype, for row_dot_like's zero strides


def row_dot_like(z, y, axis=None, keepdims=False):
    """An array of row_dot_log_softmax(z, y, axis, keepdims)'s shape and dtype, for an
    adjoint that reads only those (a loss's mean over the rows: array_prims.Prim.like):
    read-only zeros with zero strides, made without a pass over z, where z and y are
    float arrays of one shape and dtype with at least one element a row and axis one
    of their axes (so that the value has z's dtype and z's shape less that axis); the
    value itself elsewhere (its shape and errors exactly the forward line's)."""
    if type(z) is np.ndarray and type(y) is np.ndarray and z.dtype.kind == "f" and y.dtype == z.dtype \
            and y.shape == z.shape:
        like = _reduced_like(z, axis, keepdims)
        if like is not None:
            return like
    return row_dot_log_softmax(z, y, axis, keepdims)


def _reduced_like(z: np.ndarray, axis, keepdims) -> np.ndarray | None:
    """Read-only zeros with zero strides of z's shape less `axis` (kept as 1 if keepdims)
    and z's dtype, where axis is one of z's axes (an int or a 1-tuple of one) along which
    z has at least one element; else None."""
    ax = axis[0] if isinstance(axis, tuple) and len(axis) == 1 else axis
    if z.ndim and type(ax) is int and -z.ndim <= ax < z.ndim and z.shape[ax] > 0:
        ax %= z.ndim
        shape = z.shape[:ax] + ((1,) if keepdims else ()) + z.shape[ax + 1:]
        # over immutable bytes: read-only; cheaper to make than np.broadcast_to's
        return np.ndarray(shape, z.dtype, buffer=_ZERO_BYTES, strides=(0,) * len(shape))
    return None


def row_dot_log_softmax_bar(i, g, z, y, axis=None, keepdims=False, backend="auto"):
    """The adjoint w.r.t. z (i = 0: g (y - softmax(z) sum(y)), one pass per row where
    the loop takes them) or y (i = 1: g log_softmax(z)), g one value a row."""
    layout = _dot_layout(z, y, axis, backend) if i == 0 else None
    if layout is not None and type(g) is np.ndarray and g.dtype == z.dtype and g.size == layout[0]:
        n, k, zs, ys = layout
        return _run_bar(_sized("xentbar", k), z, y, np.ascontiguousarray(g),
                        zs, ys)
    ge = g if keepdims else np.expand_dims(g, axis)
    logp = reference_log_softmax(z, axis, shift="max")
    if i == 1:
        return unbroadcast(ge * logp, y)
    return unbroadcast(softmax_rules.log_softmax_bar(ge * y, np.broadcast_to(logp, np.broadcast_shapes(
        np.shape(logp), np.shape(y))), axis), z)


def dot_log_softmax_jvp(i, t, z, y, axis=None, keepdims=False):
    """The tangent from z's (i = 0: sum(y (t - sum(softmax t)))) or y's (i = 1: sum(t log_softmax))."""
    logp = reference_log_softmax(z, axis, shift="max")
    if i == 1:
        return np.sum(t * logp, axis=axis, keepdims=keepdims)
    return np.sum(y * softmax_rules.log_softmax_jvp(t, logp, axis), axis=axis, keepdims=keepdims)


def row_dot_log_softmax_bar_dot(i, g, z, y, z_dot, y_dot, axis=None, keepdims=False):
    """d/dt of row_dot_log_softmax_bar(i, g, z + t z_dot, y + t y_dot), g held fixed."""
    ge = g if keepdims else np.expand_dims(g, axis)
    logp = reference_log_softmax(z, axis, shift="max")
    if i == 1:
        return unbroadcast(ge * softmax_rules.log_softmax_jvp(z_dot, logp, axis), y)
    p = np.exp(logp)
    p_dot = p * (z_dot - np.sum(p * z_dot, axis=axis, keepdims=True))
    sy, sy_dot = (np.sum(np.broadcast_to(v, np.broadcast_shapes(np.shape(v), p.shape)), axis=axis, keepdims=True)
                  for v in (y, y_dot))
    return unbroadcast(ge * (y_dot - p_dot * sy - p * sy_dot), z)


# ---------------------------------------------------------------- the adjoints' tangents
# (forward over reverse: the tangent of each adjoint with its seed g held fixed, the
# output's tangent out_dot given; numpy, any layout)


def _expand(v, like, axis, keepdims):
    v = np.asarray(v)
    return v if keepdims else np.expand_dims(v, axis)


def row_softmax_bar_dot(g, out, out_dot, axis=None):
    """d/dt of g s - s sum(g s) with s = out + t out_dot."""
    return g * out_dot - out_dot * np.sum(g * out, axis=axis, keepdims=True) \
        - out * np.sum(g * out_dot, axis=axis, keepdims=True)


def row_log_softmax_bar_dot(g, out, out_dot, axis=None):
    """d/dt of g - exp(out) sum(g)."""
    return -(np.exp(out) * out_dot) * np.sum(np.broadcast_to(g, np.shape(out)), axis=axis, keepdims=True)


def row_logsumexp_bar_dot(g, a, a_dot, out, out_dot, axis=None, keepdims=False):
    """d/dt of g w along the rows, w = e^a / sum e^a (g, out with one value a row): g w
    (a_dot - out_dot), w from a shifted (softmax_rules' weights), not e^(a - out)."""
    ge, de = (_expand(v, a, axis, keepdims) for v in (g, out_dot))
    w = softmax_rules.logsumexp_weights(a, out, axis, keepdims)
    return ge * w * (a_dot - de)


# what array_rules.HELPERS takes in (array_prims' HELPER_NAMES name them); the generated
# code's namespace binds the adjoints again per backend (derivative_runtime)
HELPERS = {f"row_{f}{kind}": globals()[f"row_{f}{kind}"] for f in ("logsumexp", "softmax", "log_softmax")
           for kind in ("_bar", "_bar_dot")}
HELPERS.update(row_dot_log_softmax_bar=row_dot_log_softmax_bar, dot_log_softmax_jvp=dot_log_softmax_jvp,
               row_dot_log_softmax_bar_dot=row_dot_log_softmax_bar_dot, row_dot_like=row_dot_like,
               row_logsumexp_max_bar=row_logsumexp_max_bar, row_logsumexp_like=row_logsumexp_like)


def kept_dot_log_softmax_bar(args: tuple, axis: Any, backend: str, short_max: int):
    """row_dot_log_softmax_bar(*args) made once for operands of these shapes, strides and
    dtypes (array_special binds it in a copy specialised to a signature): z's adjoint
    (i = 0) by the compiled row pass, as the full call runs it, where the loop takes
    z, y and g and the rows are one chunk (no threads to choose); through a compiled
    launcher where z has at most `short_max` elements. Else None (the full call). The
    call it returns checks what a signature does not fix (the row fusion switch, the
    arrays' alignment, a thread count above one forced for a whole call, under which
    run_rows splits rows from rowthreads.FORCED_MIN) and takes the full path without it."""
    if len(args) != 4:
        return None
    i, g, z, y = args
    layout = _dot_layout(z, y, axis, backend) if i == 0 else None
    if layout is None or type(g) is not np.ndarray or g.dtype != z.dtype or g.size != layout[0] \
            or not g.flags.c_contiguous or len(row_chunks(layout[0], layout[1])) > 1 or layout[0] == 0:
        return None
    n, k, zs, ys = layout
    kind = _sized("xentbar", k)
    rows = llvm_launch.array_call(_function(kind, z.dtype), [("array", 0), ("array", 1), ("array", 2), n, k, zs, ys,
                                                             ("array", 3)], 4, z.size <= short_max)
    shape, dt = z.shape, z.dtype
    splits = z.size >= rowthreads.FORCED_MIN      # (on more than one forced thread: run_rows's chunks)

    def dot_log_softmax_bar(i, g, z, y, axis=None, keepdims=False):    # (the site's axis: a constant)
        if not (SWITCH.on and z.flags.aligned and y.flags.aligned and g.flags.aligned) \
                or splits and (forced_threads() or 1) > 1:
            return row_dot_log_softmax_bar(i, g, z, y, axis, keepdims, backend)
        out = np.empty(shape, dt)
        rows(z, y, g, out)
        return out
    dot_log_softmax_bar.parts = ("array_call", rows, (2, 3, 1), (shape, dt, shape), SWITCH)   # (array_program)
    return dot_log_softmax_bar


def kept_dot_log_softmax(args: tuple, axis: Any, keepdims: bool, backend: str, short_max: int):
    """row_dot_log_softmax(z, y) made once for operands of these shapes, strides and dtypes
    (array_special binds it: a value_and_grad's value line), as kept_dot_log_softmax_bar is:
    the rows' values by the same compiled row pass the full call runs, where the rows are
    one chunk; else None (the full call). Without the row fusion switch or with arrays not
    aligned, the full call."""
    if len(args) != 2:
        return None
    z, y = args
    layout = _dot_layout(z, y, axis, backend)
    if layout is None or len(row_chunks(layout[0], layout[1])) > 1 or layout[0] == 0:
        return None
    n, k, zs, ys = layout
    rows = llvm_launch.array_call(_function(_sized("xent", k), z.dtype),
                                  [("array", 0), ("array", 1), 0, n, k, zs, ys, ("array", 2)], 3,
                                  z.size <= short_max)
    shape, dt = ((n, 1) if keepdims else (n,)), z.dtype
    splits = z.size >= rowthreads.FORCED_MIN      # (on more than one forced thread: run_rows's chunks)

    def dot_log_softmax(z, y, axis=None, keepdims=False):      # (the site's axis and keepdims: constants)
        if not (SWITCH.on and z.flags.aligned and y.flags.aligned) or splits and (forced_threads() or 1) > 1:
            return row_dot_log_softmax(z, y, axis, keepdims, backend)
        out = np.empty(shape, dt)
        rows(z, y, out)
        return out
    dot_log_softmax.parts = ("array_call", rows, (0, 1), (shape, dt, shape), SWITCH)   # (array_program)
    return dot_log_softmax

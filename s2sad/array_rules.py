"""What the adjoints of array primitives run: the helpers generated code calls.

The rules themselves (the text of each primitive's VJP) are one table,
`s2sad.array_prims`; the source they write calls the helpers below by name (`HELPERS`
is that part of the namespace generated code runs with; its names are
`array_prims.HELPER_NAMES`, which the passes keep user names off). Each helper returns
a new array (never a view of its input), of the operand's shape and dtype. The user's
rules (`s2sad.defvjp`) are recorded in array_prims/user.py.

Layer: runtime (the helpers run gemm's and reduce's loops and give runtime.SeedProduct);
derivative_runtime hands HELPERS to the generated code, so no pass imports this module.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from . import product_rules, reduction_rules, rowlayernorm, rowsoftmax, softmax_rules
from .gemm import matmul
from .reduce import float_dtype, reduce, unbroadcast
from .linalg_rules import HELPERS as LINALG_HELPERS
from .runtime import SeedProduct
from .shape_helpers import HELPERS as SHAPE_HELPERS

_float_dtype = float_dtype   # (the name the helpers below use)


# ------------------------------------------------------------------ helpers
#
# What generated adjoint code calls. Each returns a new array (never a view of its
# input), of the operand's shape and dtype. `unbroadcast` is reduce's (the one there is).

def zeros_bar(x):
    """The zero adjoint of a value: 0.0 for a Python number, else zeros of its shape."""
    if isinstance(x, (float, int, bool)):
        return 0.0
    return np.zeros(np.shape(x), _float_dtype(x))


def _expand(g, x, axis, keepdims):
    """The adjoint of a reduction's output, with the reduced axes back as size 1."""
    g = np.asarray(g)
    nd = np.ndim(x)
    if axis is None:
        return g.reshape((1,) * nd) if nd else g
    if not keepdims:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        axes = sorted(a % nd for a in axes)
        for a in axes:
            g = np.expand_dims(g, a)
    return g


def sum_bar(g, x, axis=None, keepdims=False):
    if axis is None and type(x) is np.ndarray:   # the whole array's sum: its one number everywhere
        v = np.asarray(g)
        if v.size == 1:     # (np.full casts it as np.array of the broadcast does: the same bits)
            return np.full(x.shape, v.reshape(()), x.dtype if x.dtype.kind == "f" else _F64)
    return np.array(np.broadcast_to(_expand(g, x, axis, keepdims), np.shape(x)), dtype=_float_dtype(x))


_F64 = np.dtype(np.float64)


def _count(x, axis):
    shape = np.shape(x)
    if axis is None:
        return int(np.prod(shape, dtype=np.int64))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def mean_bar(g, x, axis=None, keepdims=False):
    n = math.prod(np.shape(x)) if axis is None else _count(x, axis)
    return sum_bar(np.asarray(g) / n, x, axis, keepdims)


def maxmin_bar(g, x, out, axis=None, keepdims=False):
    """The adjoint of max/min: shared equally among the elements that attain it."""
    x = np.asarray(x)
    hit = (x == _expand(out, x, axis, keepdims))
    # the counts as float64 (exact; g / n divides as by the integer counts)
    n = reduce("sum", hit.astype(np.float64), axis, keepdims=True) if axis is not None else \
        np.sum(hit, axis=axis, keepdims=True)
    return (hit * (_expand(g, x, axis, keepdims) / n)).astype(_float_dtype(x), copy=False)


def prod_bar(g, x, axis=None, keepdims=False):
    """The adjoint of prod: the product of the other elements (exact with zeros)."""
    x = np.asarray(x, dtype=_float_dtype(x))
    shape = x.shape
    if axis is None:
        flat = x.reshape(-1)
        others = _exclusive_products(flat, 0)
        return (others * np.asarray(g).reshape(())).reshape(shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(sorted(a % x.ndim for a in axes))
    rest = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, rest + list(axes))
    lead = moved.shape[:len(rest)]
    # the reduced length spelled out: -1 is ambiguous when a leading axis is empty
    flat = moved.reshape(lead + (math.prod(moved.shape[len(rest):]),))
    others = _exclusive_products(flat, -1).reshape(moved.shape)
    res = np.transpose(others, np.argsort(rest + list(axes)))
    return res * _expand(g, x, axis, keepdims)


def prod_bar_dot(g, x, t, axis=None, keepdims=False):
    """The tangent of `prod_bar(g, x)` along x's tangent `t` (g held): g times the
    tangent of the product of the other elements (forward over reverse through prod;
    exact with zeros, as prod_bar)."""
    x = np.asarray(x, dtype=_float_dtype(x))
    t = np.broadcast_to(np.asarray(t, dtype=x.dtype), x.shape)
    axes = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(sorted(a % x.ndim for a in axes)) if x.ndim else ()
    rest = [a for a in range(x.ndim) if a not in axes]
    order = rest + list(axes)
    moved, moved_t = np.transpose(x, order), np.transpose(t, order)
    lead = moved.shape[:len(rest)]
    span = (math.prod(moved.shape[len(rest):]),)      # not -1: a leading axis may be empty
    dots = _exclusive_products_dot(moved.reshape(lead + span), moved_t.reshape(lead + span))
    res = np.transpose(dots.reshape(moved.shape), np.argsort(order))
    return res * _expand(g, x, axis, keepdims)


def _exclusive_products_dot(a, da):
    """Along the last axis: the tangent of each product of the other elements, by the
    prefix and suffix products and their tangents (no division: exact with zeros)."""
    n = a.shape[-1]
    out = np.empty(a.shape, a.dtype)
    pre, dpre = np.ones(a.shape[:-1], a.dtype), np.zeros(a.shape[:-1], a.dtype)
    prefix = []
    for k in range(n):
        prefix.append((pre, dpre))
        pre, dpre = pre * a[..., k], dpre * a[..., k] + pre * da[..., k]
    suf, dsuf = np.ones(a.shape[:-1], a.dtype), np.zeros(a.shape[:-1], a.dtype)
    for k in range(n - 1, -1, -1):
        p, dp = prefix[k]
        out[..., k] = dp * suf + p * dsuf
        suf, dsuf = suf * a[..., k], dsuf * a[..., k] + suf * da[..., k]
    return out


def _exclusive_products(a, axis):
    if a.shape[axis] == 0:      # no element, no other factors (the prefix trick would make one)
        return np.ones(a.shape, a.dtype)
    a = np.moveaxis(a, axis, -1)
    ones = np.ones(a.shape[:-1] + (1,), a.dtype)
    left = np.cumprod(np.concatenate([ones, a[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, a[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return np.moveaxis(left * right, -1, axis)


def _rank1(i, g, a, b):
    """The two factors (left, right) whose broadcast product is the adjoint of operand i
    of `a @ b` (2-D or 1-D operands) when that adjoint is an outer product: `b` one
    column or a vector (i = 0), `a` one row or a vector (i = 1). None otherwise."""
    if a.ndim > 2 or b.ndim > 2 or (a.ndim == 1 and b.ndim == 1):
        return None
    if i == 0 and a.ndim == 2 and (b.ndim == 1 or b.shape[1] == 1):
        return (g[:, None], b[None, :]) if b.ndim == 1 else (g, b.T)
    if i == 1 and b.ndim == 2 and (a.ndim == 1 or a.shape[0] == 1):
        return (a[:, None], g[None, :]) if a.ndim == 1 else (a.T, g)
    return None


def matmul_factors(i, g, a, b):
    """The adjoint of operand i of `a @ b` for a kernel's pullback: a rank-1 adjoint as
    a runtime.SeedProduct of its two factors (never formed), else the array."""
    a, b, g = np.asarray(a), np.asarray(b), np.asarray(g)
    pair = _rank1(i, g, a, b)
    if pair is not None:
        return SeedProduct(*pair)
    return matmul_lhs_bar(g, a, b) if i == 0 else matmul_rhs_bar(g, a, b)


def seed_factors(s):
    """An adjoint given to a kernel's pullback as two factors: a SeedProduct's own, an
    array's (the array, 1.0)."""
    if isinstance(s, SeedProduct):
        return s.left, s.right
    return s, 1.0


def plain_product(g, a, b) -> bool:
    """Is `a @ b` with adjoint g a product of 2-D arrays of one shape each, g of the
    product's, neither adjoint an outer product (`_rank1`)? Its adjoints are then one
    product each, taken before the general case's conversions (a small batch's time)."""
    return (type(g) is np.ndarray and type(a) is np.ndarray and type(b) is np.ndarray and g.ndim == 2
            and a.ndim == 2 and b.ndim == 2 and a.shape[0] != 1 and b.shape[1] != 1
            and g.shape == (a.shape[0], b.shape[1]))


def matmul_lhs_bar(g, a, b):
    if plain_product(g, a, b):
        return unbroadcast(matmul(g, b.T), a)
    a, b, g = np.asarray(a), np.asarray(b), np.asarray(g)
    pair = _rank1(0, g, a, b)
    if pair is not None:
        return np.multiply(*pair)     # an outer product: one multiply per element, no BLAS call
    if a.ndim == 1 and b.ndim == 1:
        return g * b
    if b.ndim == 1:
        return unbroadcast(g[..., :, None] * b, a)
    if a.ndim == 1:
        return unbroadcast(g[..., None, :] @ np.swapaxes(b, -1, -2), a[None, :]).reshape(a.shape) \
            if b.ndim > 2 else b @ g
    return unbroadcast(matmul(g, np.swapaxes(b, -1, -2)), a)


def matmul_rhs_bar(g, a, b):
    if plain_product(g, a, b):
        return unbroadcast(matmul(a.T, g), b)
    a, b, g = np.asarray(a), np.asarray(b), np.asarray(g)
    pair = _rank1(1, g, a, b)
    if pair is not None:
        return np.multiply(*pair)
    if a.ndim == 1 and b.ndim == 1:
        return g * a
    if a.ndim == 1:
        return unbroadcast(a[:, None] * g[..., None, :], b)
    if b.ndim == 1:
        return unbroadcast(np.swapaxes(a, -1, -2) @ g[..., :, None], b[:, None]).reshape(b.shape) \
            if a.ndim > 2 else a.T @ g
    return unbroadcast(matmul(np.swapaxes(a, -1, -2), g), b)


def dot_factors(i, g, a, b):
    """matmul_factors for np.dot (whose 1-D and 2-D products are matmul's)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0 or np.ndim(a) > 2 or np.ndim(b) > 2:
        return dot_lhs_bar(g, a, b) if i == 0 else dot_rhs_bar(g, a, b)
    return matmul_factors(i, g, a, b)


def dot_lhs_bar(g, a, b):
    if np.ndim(a) > 2 or np.ndim(b) > 2:
        return product_rules.dot_nd_bar(0, g, a, b)
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(np.asarray(g) * b, a)
    return matmul_lhs_bar(g, a, b)


def dot_rhs_bar(g, a, b):
    if np.ndim(a) > 2 or np.ndim(b) > 2:
        return product_rules.dot_nd_bar(1, g, a, b)
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(np.asarray(g) * a, b)
    return matmul_rhs_bar(g, a, b)


def repeat_bar(g, x, repeats, axis=None):
    x = np.asarray(x)
    g = np.asarray(g)
    if axis is None:
        flat = x.reshape(-1)
        n = flat.size
        ax, shape = 0, x.shape
    else:
        ax = axis % max(x.ndim, 1)
        n = x.shape[ax]
        shape = x.shape
    if np.ndim(repeats) == 0 or np.size(repeats) == 1:
        r = int(np.reshape(repeats, -1)[0]) if np.ndim(repeats) else int(repeats)
        split = g.reshape(g.shape[:ax] + (n, r) + g.shape[ax + 1:])
        res = split.sum(axis=ax + 1)
    else:
        starts = np.concatenate([[0], np.cumsum(repeats)[:-1]]).astype(np.intp)
        res = np.add.reduceat(g, starts, axis=ax) if g.shape[ax] else np.zeros_like(g)
        res = np.where(np.reshape(np.asarray(repeats) == 0, [-1 if a == ax else 1 for a in range(g.ndim)]), 0.0, res)
    return np.asarray(res, dtype=_float_dtype(x)).reshape(shape)


def tile_bar(g, x, reps):
    x = np.asarray(x)
    g = np.asarray(g)
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    d = max(x.ndim, len(reps))
    xs = (1,) * (d - x.ndim) + x.shape
    rs = (1,) * (d - len(reps)) + reps
    split = g.reshape(tuple(v for pair in zip(rs, xs) for v in pair))
    res = split.sum(axis=tuple(range(0, 2 * d, 2)))
    return np.asarray(res, dtype=_float_dtype(x)).reshape(x.shape)


def concatenate_bar(g, i, arrays, axis=0):
    g = np.asarray(g)
    if axis is None:
        sizes = [np.size(a) for a in arrays]
        start = sum(sizes[:i])
        return g[start:start + sizes[i]].reshape(np.shape(arrays[i]))
    sizes = [np.shape(a)[axis] for a in arrays]
    start = sum(sizes[:i])
    index = [slice(None)] * g.ndim
    index[axis] = slice(start, start + sizes[i])
    return np.array(g[tuple(index)])


def r_bar(g, i, arrays):
    """The adjoint of piece i of np.r_[a, b, ...]: along axis 0, a number counting as one
    element (r_ makes it a 1-element array)."""
    sizes = [np.shape(a)[0] if np.ndim(a) else 1 for a in arrays]
    start = sum(sizes[:i])
    return np.array(np.asarray(g)[start:start + sizes[i]]).reshape(np.shape(arrays[i]))


def c_bar(g, i, arrays):
    """The adjoint of piece i of np.c_[a, b, ...]: along the last axis, a vector or a
    number counting as one column (c_ makes it a column)."""
    widths = [np.shape(a)[-1] if np.ndim(a) >= 2 else 1 for a in arrays]
    start = sum(widths[:i])
    return np.array(np.asarray(g)[..., start:start + widths[i]]).reshape(np.shape(arrays[i]))


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (slice, int, np.integer)) for i in items)


def index_bar(g, x, index):
    """The adjoint of x[index]: g scattered into zeros of x's shape; repeated integer
    indices accumulate (np.add.at)."""
    z = np.zeros(np.shape(x), _float_dtype(x))
    if isinstance(index, list):
        index = np.asarray(index)
    if _is_basic(index):
        z[index] = g
    elif isinstance(index, np.ndarray) and index.dtype == bool:
        z[index] = g
    else:
        np.add.at(z, index, g)
    return z


def index_add(acc, g, x, index):
    """`acc + index_bar(g, x, index)`, the same bits: with a basic index or a mask, added
    into acc in place when acc is the generated sweep's own (an exact float ndarray owning
    its memory, held by the caller's one name: sys.getrefcount as write_helpers measures
    it), so a loop reading x[i] one element at a time accumulates in O(1) per read."""
    refs = sys.getrefcount(acc)
    if refs <= ONE_LOCAL and type(acc) is np.ndarray and acc.flags.owndata and acc.flags.writeable \
            and acc.shape == np.shape(x) and acc.dtype == _float_dtype(x) and _same_sum(acc, g) \
            and (_is_basic(index) or (isinstance(index, np.ndarray) and index.dtype == bool)):
        acc[index] += g
        return acc
    return acc + index_bar(g, x, index)


def _same_sum(acc, g) -> bool:
    """Whether acc[i] + g rounds as acc + (g cast into acc's dtype) does."""
    gd = getattr(g, "dtype", None)
    return gd is None or gd == acc.dtype or (acc.dtype == np.float64 and gd.kind == "f")


def _refs_of_one_local(a) -> int:
    return sys.getrefcount(a)


def _one_local() -> int:
    x = np.empty(1)
    return _refs_of_one_local(x)


ONE_LOCAL = _one_local()    # sys.getrefcount inside a helper of an array one local of its caller holds


HELPERS = {
    "np": np, "zeros_bar": zeros_bar, "unbroadcast": unbroadcast, "sum_bar": sum_bar,
    "mean_bar": mean_bar, "maxmin_bar": maxmin_bar, "prod_bar": prod_bar,
    "matmul_lhs_bar": matmul_lhs_bar, "matmul_rhs_bar": matmul_rhs_bar, "matmul_factors": matmul_factors,
    "dot_factors": dot_factors, "dot_lhs_bar": dot_lhs_bar,
    "dot_rhs_bar": dot_rhs_bar, "repeat_bar": repeat_bar, "tile_bar": tile_bar,
    "concatenate_bar": concatenate_bar, "index_bar": index_bar, "index_add": index_add, "r_bar": r_bar, "c_bar": c_bar,
    **SHAPE_HELPERS,
    **LINALG_HELPERS,
    "seed_factors": seed_factors, "prod_bar_dot": prod_bar_dot,
}
# the contractions' helpers (product_rules), the statistics' and scans' (reduction_rules),
# scipy.special's logsumexp family's (softmax_rules)
HELPERS.update(product_rules.HELPERS)
HELPERS.update(reduction_rules.HELPERS)
HELPERS.update(softmax_rules.HELPERS)
# the row-fused softmax family's adjoints and their tangents (rowsoftmax)
HELPERS.update(rowsoftmax.HELPERS)
HELPERS.update(rowlayernorm.HELPERS)

"""Spec-table rows of the statistics and scans (tests/test_array_prims.py collects them):
var, std, median, percentile, quantile, nansum, nanmean, cumsum, cumprod, prod with
zeros, sort, partition, diff, gradient, convolve, correlate, interp; math.fsum and
math.prod of a 1-D array. Each loss wraps
the primitive in sin(1.3 * . + 0.2), and weights positions where order matters."""
from __future__ import annotations

import math

import numpy as np

from prim_rows import Row

try:
    import scipy.special as sps
except ImportError:     # scipy is optional: its entries (and rows) exist only with it
    sps = None

COORDS = np.array([0.0, 0.3, 1.0, 1.2, 2.0])


def wrap(y):
    return np.sin(1.3 * y + 0.2)


def with_zeros(shape, dtype, seed):
    """Uniform values with exact zeros: one lane with two, one with one."""
    x = np.random.default_rng(seed).uniform(0.5, 1.5, shape)
    flat = x.reshape(-1)
    for k in (1, 3, 4):
        if k < flat.size:
            flat[k] = 0.0
    return x.astype(dtype)


def with_nans(shape, dtype, seed):
    x = np.random.default_rng(seed).uniform(0.5, 1.5, shape)
    flat = x.reshape(-1)
    flat[::3] = np.nan
    return x.astype(dtype)


# ------------------------------------------------------------------ statistics


def var_axis(x):
    return np.sum(wrap(np.var(x, axis=0)))


def var_all_ddof(x):
    return wrap(np.var(x, ddof=1))


def var_method(x):
    return np.sum(wrap(x.var(axis=-1, keepdims=True)))


def var_zero_d(x):
    return wrap(np.var(x)) + np.sum(x)


def std_axis_ddof(x):
    return np.sum(wrap(np.std(x, axis=1, ddof=1)))


def std_method(x):
    return wrap(x.std())


def median_axis(x):
    return np.sum(wrap(np.median(x, axis=0)))


def median_all(x):
    return wrap(np.median(x))


def percentile_q(x, q):
    return wrap(np.percentile(x, 20.0 + 50.0 * (q - 0.5)))


def quantile_array_q(x):
    return np.sum(wrap(np.quantile(x, [0.3, 0.65], axis=1, keepdims=True)) * np.arange(1.0, 3.0).reshape(2, 1, 1))


def quantile_q_operand(x, q):
    return np.sum(wrap(np.quantile(x, 0.2 + 0.5 * (q - 0.5), axis=0)))


def nansum_axis(x):
    return np.sum(wrap(np.nansum(x, axis=0)))


def nanmean_all(x):
    return wrap(np.nanmean(x))


def fsum_of_array(x):
    return wrap(math.fsum(x)) + wrap(math.fsum(x * x))


def math_prod_of_array(x):
    return wrap(math.prod(x)) + wrap(math.prod(x[::-1] - 1.0))


def math_prod_of_rows(x):
    return np.sum(wrap(math.prod(x)) * np.arange(1.0, 1.0 + x.shape[1]))


def prod_with_zeros(x):
    return np.sum(wrap(np.prod(x, axis=1))) + wrap(np.prod(x))


# ------------------------------------------------------------------ scans


def cumsum_flat(x):
    return np.sum(wrap(np.cumsum(x)) * np.arange(1.0, 1.0 + np.size(x)))


def cumsum_axis(x):
    return np.sum(wrap(np.cumsum(x, axis=1)))


def cumsum_method(x):
    return np.sum(wrap(x.cumsum(axis=0)))


def cumprod_axis(x):
    return np.sum(wrap(np.cumprod(x, axis=1)))


def cumprod_flat(x):
    return np.sum(wrap(x.cumprod()))


def sort_last(x):
    return np.sum(wrap(np.sort(x)) * np.arange(np.size(x)).reshape(np.shape(x)))


def sort_axis0(x):
    return np.sum(wrap(np.sort(x, axis=0)) * np.arange(np.size(x)).reshape(np.shape(x)))


def sort_flat(x):
    return np.sum(wrap(np.sort(x, axis=None)) * np.arange(np.size(x)))


def partition_kth(x):
    return np.sum(wrap(np.partition(x, 2)) * np.arange(np.size(x)).reshape(np.shape(x)))


def diff_once(x):
    return np.sum(wrap(np.diff(x)))


def diff_twice_axis0(x):
    return np.sum(wrap(np.diff(x, n=2, axis=0)))


def diff_pieces(x, p, a):
    return np.sum(wrap(np.diff(x, prepend=p, append=a)) * np.arange(1.0, 6.0))


def gradient_1d(x):
    return np.sum(wrap(np.gradient(x)) * np.arange(1.0, 1.0 + np.size(x)))


def gradient_axis_spacing(x):
    return np.sum(wrap(np.gradient(x, 0.5, axis=1, edge_order=2)))


def gradient_spacing_operand(x, h):
    return np.sum(wrap(np.gradient(x, h)))


def gradient_coordinates(x):
    return np.sum(wrap(np.gradient(x, COORDS, edge_order=2)) * np.arange(5.0))


def convolve_full(a, v):
    return np.sum(wrap(np.convolve(a, v)) * np.arange(1.0, np.size(a) + np.size(v)))


def convolve_same(a, v):
    return np.sum(wrap(np.convolve(a, v, mode="same")))


def convolve_valid(a, v):
    return np.sum(wrap(np.convolve(a, v, "valid")))


def correlate_valid(a, v):
    return np.sum(wrap(np.correlate(a, v)))


def correlate_modes(a, v):
    return np.sum(wrap(np.correlate(a, v, "same"))) + np.sum(wrap(np.correlate(a, v, mode="full")))


def interp_all(x, xp, fp):
    return np.sum(wrap(np.interp(7.0 * (x - 0.5) - 1.0, np.cumsum(xp), fp)))


def interp_left_right(x, fp, lo, hi):
    return np.sum(wrap(np.interp(7.0 * (x - 0.5) - 1.0, COORDS * 2.0, fp, left=lo, right=hi)))


# ------------------------------------------------------------------ scipy.special


def logsumexp_axis(x):
    return np.sum(wrap(sps.logsumexp(x, axis=1)))


def logsumexp_all(x):
    return wrap(sps.logsumexp(x))


def logsumexp_b(x, w):
    return np.sum(wrap(sps.logsumexp(x, axis=-1, b=w, keepdims=True)))


def softmax_axis(x):
    return np.sum(wrap(sps.softmax(x, axis=-1)) * np.arange(np.size(x)).reshape(np.shape(x)))


def log_softmax_all(x):
    return np.sum(wrap(sps.log_softmax(x)) * np.arange(np.size(x)).reshape(np.shape(x)))


SCIPY_ROWS = [
    Row("logsumexp", logsumexp_axis, (((3, 4),),)),
    Row("logsumexp", logsumexp_all, (((3, 4),), ((),))),
    Row("logsumexp", logsumexp_b, (((3, 4), (4,)), ((3, 4), (3, 4)), ((3, 4), ()))),
    Row("softmax", softmax_axis, (((3, 4),), ((5,),))),
    Row("log_softmax", log_softmax_all, (((3, 4),), ((),))),
] if sps is not None else []

ROWS = SCIPY_ROWS + [
    Row("var", var_axis, (((3, 4),), ((5,),))),
    Row("var", var_all_ddof, (((3, 4),),)),
    Row("var", var_method, (((3, 4),),)),
    Row("var", var_zero_d, (((),),)),
    Row("std", std_axis_ddof, (((3, 4),),)),
    Row("std", std_method, (((2, 3),), ((5,),))),
    Row("median", median_axis, (((3, 4),), ((4, 3),))),
    Row("median", median_all, (((5,),), ((2, 3),), ((),))),
    Row("percentile", percentile_q, (((7,), ()), ((3, 4), ()))),
    Row("quantile", quantile_array_q, (((2, 5, 3),),)),
    Row("quantile", quantile_q_operand, (((6, 2), ()), ((6, 2), (3,)))),
    Row("nansum", nansum_axis, (((4, 3),),), make=with_nans),
    Row("nanmean", nanmean_all, (((4, 3),), ((5,),)), make=with_nans),
    Row("nanmean", nanmean_all, (((4, 3),), ((),))),
    Row("prod", prod_with_zeros, (((3, 4),), ((2, 5),)), make=with_zeros),
    Row("fsum", fsum_of_array, (((5,),), ((0,),))),
    Row("math_prod", math_prod_of_array, (((4,),), ((0,),))),
    Row("math_prod", math_prod_of_array, (((5,),),), make=with_zeros),
    Row("math_prod", math_prod_of_rows, (((4, 3),), ((0, 2),))),
    Row("cumsum", cumsum_flat, (((3, 4),), ((),), ((0,),))),
    Row("cumsum", cumsum_axis, (((3, 4),),)),
    Row("cumsum", cumsum_method, (((3, 4),),)),
    Row("cumprod", cumprod_axis, (((3, 4),), ((2, 5),)), make=with_zeros),
    Row("cumprod", cumprod_axis, (((3, 4),), ((3, 0),))),
    Row("cumprod", cumprod_flat, (((2, 3),), ((),)), make=with_zeros),
    Row("sort", sort_last, (((3, 4),), ((5,),), ((0,),))),
    Row("sort", sort_axis0, (((3, 4),),)),
    Row("sort", sort_flat, (((3, 4),),)),
    Row("partition", partition_kth, (((3, 5),), ((6,),))),
    Row("diff", diff_once, (((5,),), ((3, 4),), ((1,),))),
    Row("diff", diff_twice_axis0, (((4, 3),),)),
    Row("diff", diff_pieces, (((3,), (), (2,)),)),
    Row("gradient", gradient_1d, (((5,),), ((2,),))),
    Row("gradient", gradient_axis_spacing, (((2, 4),),)),
    Row("gradient", gradient_spacing_operand, (((6,), ()),)),
    Row("gradient", gradient_coordinates, (((5,),),)),
    Row("convolve", convolve_full, (((5,), (3,)), ((3,), (5,)), ((1,), (4,)))),
    Row("convolve", convolve_same, (((5,), (3,)), ((3,), (6,)), ((4,), (4,)))),
    Row("convolve", convolve_valid, (((5,), (3,)), ((3,), (5,)))),
    Row("correlate", correlate_valid, (((5,), (3,)), ((3,), (5,)))),
    Row("correlate", correlate_modes, (((5,), (3,)), ((3,), (6,)), ((4,), (7,)))),
    Row("interp", interp_all, (((7,), (5,), (5,)), ((2, 3), (4,), (4,)), ((), (3,), (3,)))),
    Row("interp", interp_left_right, (((9,), (5,), (), ()),)),
]

"""Spec-table rows (tests/test_array_prims.py) of the shape primitives: moves (roll,
flip, rot90, moveaxis, swapaxes, rollaxis, broadcast_to, atleast_*d), promoting joins
(hstack, vstack, dstack, column_stack, row_stack, append), pad, and selections (tril,
triu, diag, diagonal, take, take_along_axis), plus the spellings of reshape and copy
they pin (squeeze, order="F", astype between float types).

Each loss wraps the primitive in sin(1.3 * . + 0.2), so the adjoint reaching it differs
from element to element; shapes include empty and 0-d operands where numpy takes them.
"""
from __future__ import annotations

import numpy as np

from prim_rows import Row

IDX = np.array([[2, 0, 1, 1], [0, 0, 2, 1], [1, 2, 2, 0]])


def w(y):
    return np.sin(1.3 * y + 0.2)


# ------------------------------------------------------------------ moves

def roll_flat(x):
    return np.sum(np.sin(1.3 * np.roll(x, 2) + 0.2) * np.cos(np.arange(np.size(x)).reshape(np.shape(x))))


def roll_axes(x):
    return np.sum(np.sin(1.3 * np.roll(x, (1, -2), axis=(0, 1)) + 0.2) * np.arange(np.size(x)).reshape(np.shape(x)))


def roll_axis_kw(x):
    return np.sum(np.sin(1.3 * np.roll(x, shift=-1, axis=1) + 0.2) * np.arange(np.size(x)).reshape(np.shape(x)))


def flip_all(x):
    return np.sum(np.sin(1.3 * np.flip(x) + 0.2) * np.cos(np.arange(np.size(x)).reshape(np.shape(x))))


def flip_axis(x):
    return np.sum(np.sin(1.3 * np.flip(x, axis=1) + 0.2) * np.arange(np.size(x)).reshape(np.shape(x)))


def fliplr_fn(x):
    return np.sum(np.sin(1.3 * np.fliplr(x) + 0.2) * np.arange(np.size(x)).reshape(np.shape(x)))


def flipud_fn(x):
    return np.sum(np.sin(1.3 * np.flipud(x) + 0.2) * np.arange(np.size(x)).reshape(np.shape(x)))


def rot90_once(x):
    return np.sum(np.sin(1.3 * np.rot90(x) + 0.2) * np.arange(np.size(x)).reshape(np.shape(x)[::-1]))


def rot90_k_axes(x):
    return np.sum(np.sin(1.3 * np.rot90(x, -1, axes=(1, 2)) + 0.2) * np.arange(24.0).reshape(2, 4, 3))


def rot90_twice(x):
    return np.sum(np.sin(1.3 * np.rot90(x, k=2) + 0.2) * np.arange(np.size(x)).reshape(np.shape(x)))


def moveaxis_fn(x):
    return np.sum(np.sin(1.3 * np.moveaxis(x, 0, -1) + 0.2) * np.arange(24.0).reshape(3, 4, 2))


def moveaxis_tuples(x):
    return np.sum(np.sin(1.3 * np.moveaxis(x, (0, 1), (2, 0)) + 0.2) * np.arange(24.0).reshape(3, 4, 2))


def swapaxes_fn(x):
    return np.sum(np.sin(1.3 * np.swapaxes(x, 0, 2) + 0.2) * np.arange(24.0).reshape(4, 3, 2))


def swapaxes_method(x):
    return np.sum(np.sin(1.3 * x.swapaxes(-1, 0) + 0.2) * np.arange(np.size(x)).reshape(np.shape(x)[::-1]))


def rollaxis_fn(x):
    return np.sum(np.sin(1.3 * np.rollaxis(x, 2) + 0.2) * np.arange(24.0).reshape(4, 2, 3))


def rollaxis_start(x):
    return np.sum(np.sin(1.3 * np.rollaxis(x, 0, 3) + 0.2) * np.arange(24.0).reshape(3, 4, 2))


def broadcast_rows(x):
    return np.sum(np.sin(1.3 * np.broadcast_to(x, (2, 3)) + 0.2) * np.arange(6.0).reshape(2, 3))


def broadcast_empty(x):
    return np.sum(w(np.broadcast_to(x, (2, 0))))


def broadcast_ones(x):
    return np.sum(np.sin(1.3 * np.broadcast_to(x, (4, 3)) + 0.2) * np.arange(12.0).reshape(4, 3))


def atleast_each(x):
    return np.sum(w(np.atleast_1d(x))) + np.sum(np.sin(2.0 * np.atleast_2d(x))) + np.sum(np.cos(np.atleast_3d(x)))


# ------------------------------------------------------------------ joins

def hstack_fn(a, b):
    return np.sum(np.sin(1.3 * np.hstack([a, b]) + 0.2) * np.cos(np.arange(np.size(a) + np.size(b) + 0.0)).reshape(
        np.shape(np.hstack([a, b]))))


def hstack_three(a, b):
    return np.sum(w(np.hstack((a, 2.0 * b, a))))


def vstack_fn(a, b):
    return np.sum(np.sin(1.3 * np.vstack([a, b]) + 0.2) * np.cos(np.arange(np.size(a) + np.size(b) + 0.0)).reshape(
        np.shape(np.vstack([a, b]))))


def dstack_fn(a, b):
    return np.sum(np.sin(1.3 * np.dstack([a, b]) + 0.2) * np.cos(np.arange(np.size(a) + np.size(b) + 0.0)).reshape(
        np.shape(np.dstack([a, b]))))


def column_stack_fn(a, b):
    return np.sum(np.sin(1.3 * np.column_stack([a, b]) + 0.2) * np.cos(np.arange(np.size(a) + np.size(b) + 0.0))
                  .reshape(np.shape(np.column_stack([a, b]))))


def row_stack_fn(a, b):
    return np.sum(w(np.row_stack([a, b])) * np.cos(np.arange(np.size(a) + np.size(b) + 0.0)).reshape(
        np.shape(np.vstack([a, b]))))


def append_flat(a, b):
    return np.sum(np.sin(1.3 * np.append(a, b) + 0.2) * np.cos(np.arange(np.size(a) + np.size(b) + 0.0)))


def append_axis(a, b):
    return np.sum(np.sin(1.3 * np.append(a, b, axis=0) + 0.2) * np.cos(np.arange(np.size(a) + np.size(b) + 0.0))
                  .reshape(np.shape(np.append(a, b, axis=0))))


def append_number(a):
    return np.sum(w(np.append(a, 2.5)) * np.cos(np.arange(np.size(a) + 1.0)))


# ------------------------------------------------------------------ pad

def pad_constant(x):
    return np.sum(w(np.pad(x, 1)) * np.cos(np.arange(np.size(np.pad(x, 1)) + 0.0)).reshape(np.shape(np.pad(x, 1))))


def pad_constant_value(x):
    return np.sum(w(np.pad(x, (1, 2), constant_values=2.5)))


def pad_edge(x):
    y = np.pad(x, ((1, 2), (0, 3)), mode="edge")
    return np.sum(w(y) * np.cos(np.arange(np.size(y) + 0.0)).reshape(np.shape(y)))


def pad_reflect(x):
    y = np.pad(x, 2, "reflect")
    return np.sum(w(y) * np.cos(np.arange(np.size(y) + 0.0)).reshape(np.shape(y)))


def pad_symmetric_wrap(x):
    return np.sum(w(np.pad(x, (2, 1), mode="symmetric"))) + np.sum(np.cos(np.pad(x, ((1, 1), (2, 0)), mode="wrap")))


# ------------------------------------------------------------------ selections

def tril_fn(x):
    return np.sum(w(np.tril(x)) * np.cos(np.arange(np.size(np.tril(x)) + 0.0)).reshape(np.shape(np.tril(x))))


def triu_k(x):
    return np.sum(w(np.triu(x, 1)) * np.cos(np.arange(np.size(np.triu(x, 1)) + 0.0)).reshape(np.shape(np.triu(x, 1))))


def tril_k_kw(x):
    return np.sum(w(np.tril(x, k=-1)))


def diag_of_vector(x):
    return np.sum(w(np.diag(x)) * np.cos(np.arange(np.size(x) ** 2 + 0.0)).reshape(np.size(x), np.size(x)))


def diag_k(x):
    return np.sum(w(np.diag(x, 1))) + np.sum(np.cos(np.diag(x, k=-1)))


def diagonal_fn(x):
    return np.sum(w(np.diagonal(x)) * np.cos(np.arange(np.size(np.diagonal(x)) + 0.0)).reshape(
        np.shape(np.diagonal(x))))


def diagonal_axes(x):
    return np.sum(w(np.diagonal(x, 1, 1, 2)) * np.cos(np.arange(6.0)).reshape(2, 3))


def diagonal_method(x):
    return np.sum(w(x.diagonal(offset=-1)))


def take_flat(x):
    return np.sum(w(np.take(x, [0, 3, 3, 5])) * np.arange(4.0))


def take_axis(x):
    return np.sum(w(np.take(x, [2, 0, 2], axis=1)) * np.cos(np.arange(9.0)).reshape(3, 3))


def take_scalar(x):
    return w(np.take(x, 4)) + np.sum(np.cos(np.take(x, -1, axis=0)))


def take_modes(x):
    return np.sum(w(np.take(x, [-2, 7, 1], mode="wrap"))) + np.sum(np.cos(np.take(x, [9, -4], axis=0, mode="clip")))


def take_method(x):
    return np.sum(w(x.take(IDX[0], axis=0)))


def take_along(x):
    return np.sum(w(np.take_along_axis(x, IDX, axis=0)) * np.cos(np.arange(12.0)).reshape(3, 4))


def take_along_sorted(x):
    order = np.argsort(x, axis=1)
    return np.sum(w(np.take_along_axis(x, order, axis=1)) * np.arange(12.0).reshape(3, 4))


def take_along_flat(x):
    return np.sum(w(np.take_along_axis(x, IDX[1], None)) * np.arange(4.0))


def nan_to_num_fn(x):
    return np.sum(w(np.nan_to_num(x)) * np.cos(np.arange(np.size(x)).reshape(np.shape(x))))


def nan_to_num_values(x):
    return np.sum(w(np.nan_to_num(2.0 * x, nan=1.5, posinf=3.0, neginf=-2.0)))


def with_non_finite(shape, dtype, seed):
    """Uniform in [0.5, 1.5) with a NaN, an inf and a -inf where there is room."""
    x = np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(dtype)
    flat = x.reshape(-1)
    flat[: min(3, flat.size)] = [np.nan, np.inf, -np.inf][: min(3, flat.size)]
    return x


# ------------------------------------------------------------------ reshape and copy spellings

def squeeze_spellings(x):
    return np.sum(w(np.squeeze(x)) * np.arange(3.0)) + np.sum(np.cos(x.squeeze(axis=0))) + np.sum(np.sin(np.squeeze(x, 2)))


def reshape_fortran(x):
    return (np.sum(w(np.ravel(x, "F")) * np.arange(6.0)) + np.sum(np.cos(x.flatten("F")) * np.arange(6.0))
            + np.sum(np.sin(x.reshape((3, 2), order="F")) * np.arange(6.0).reshape(3, 2)))


def astype_double(x):
    return np.sum(w(x.astype(np.float64)) * np.arange(np.size(x)).reshape(np.shape(x)))


ROWS = [
    Row("roll", roll_flat, (((3, 4),), ((5,),), ((0,),))),
    Row("roll", roll_axes, (((3, 4),),)),
    Row("roll", roll_axis_kw, (((2, 3),), ((2, 3, 2),))),
    Row("flip", flip_all, (((3, 4),), ((),), ((0, 2),))),
    Row("flip", flip_axis, (((3, 4),), ((2, 3, 2),))),
    Row("fliplr", fliplr_fn, (((3, 4),), ((2, 3, 2),))),
    Row("flipud", flipud_fn, (((3,),), ((3, 4),))),
    Row("rot90", rot90_once, (((3, 4),),)),
    Row("rot90", rot90_k_axes, (((2, 3, 4),),)),
    Row("rot90", rot90_twice, (((3, 4),), ((0, 3),))),
    Row("moveaxis", moveaxis_fn, (((2, 3, 4),),)),
    Row("moveaxis", moveaxis_tuples, (((2, 3, 4),),)),
    Row("swapaxes", swapaxes_fn, (((2, 3, 4),),)),
    Row("swapaxes", swapaxes_method, (((2, 3),), ((2, 3, 4),))),
    Row("rollaxis", rollaxis_fn, (((2, 3, 4),),)),
    Row("rollaxis", rollaxis_start, (((2, 3, 4),),)),
    Row("broadcast_to", broadcast_rows, (((3,),), ((),), ((2, 3),), ((1, 1),))),
    Row("broadcast_to", broadcast_empty, (((0,),), ((1,),))),
    Row("broadcast_to", broadcast_ones, (((1, 3),), ((3,),), ((4, 1),))),
    Row("atleast", atleast_each, (((),), ((3,),), ((2, 3),), ((0,),))),
    Row("hstack", hstack_fn, (((3,), (2,)), ((2, 3), (2, 1)), ((), ()), ((0,), (2,)))),
    Row("hstack", hstack_three, (((2, 2), (2, 1)),)),
    Row("vstack", vstack_fn, (((3,), (3,)), ((2, 3), (1, 3)), ((), ()), ((0, 3), (2, 3)))),
    Row("dstack", dstack_fn, (((3,), (3,)), ((2, 3), (2, 3)), ((2, 3, 1), (2, 3, 2)))),
    Row("column_stack", column_stack_fn, (((3,), (3,)), ((3, 2), (3,)), ((), ()))),
    Row("row_stack", row_stack_fn, (((3,), (3,)), ((1, 2), (2,)))),
    Row("append", append_flat, (((2, 3), (4,)), ((), (2,)), ((0,), (0,)), ((3,), ()))),
    Row("append", append_axis, (((2, 3), (1, 3)), ((0, 2), (3, 2)))),
    Row("append", append_number, (((3,),), ((2, 2),))),
    Row("pad", pad_constant, (((3,),), ((2, 3),), ((0,),), ((),))),
    Row("pad", pad_constant_value, (((3,),), ((0,),))),
    Row("pad", pad_edge, (((2, 3),), ((1, 1),))),
    Row("pad", pad_reflect, (((4,),), ((3, 4),))),
    Row("pad", pad_symmetric_wrap, (((3, 3),),)),
    Row("tril", tril_fn, (((3, 3),), ((3, 4),), ((4,),), ((2, 3, 3),), ((0, 0),))),
    Row("triu", triu_k, (((3, 3),), ((4, 3),), ((3,),), ((2, 2, 3),))),
    Row("tril", tril_k_kw, (((4, 4),),)),
    Row("diag", diag_of_vector, (((3,),), ((1,),), ((0,),))),
    Row("diag", diag_k, (((3, 4),), ((4,),))),
    Row("diagonal", diagonal_fn, (((3, 3),), ((3, 4),), ((0, 2),))),
    Row("diagonal", diagonal_axes, (((2, 3, 4),),)),
    Row("diagonal", diagonal_method, (((3, 3),), ((4, 3),))),
    Row("take", take_flat, (((2, 3),), ((6,),))),
    Row("take", take_axis, (((3, 4),),)),
    Row("take", take_scalar, (((5,),), ((2, 3),))),
    Row("take", take_modes, (((5,),),)),
    Row("take", take_method, (((4, 3),),)),
    Row("take_along_axis", take_along, (((3, 4),),)),
    Row("take_along_axis", take_along_sorted, (((3, 4),),)),
    Row("take_along_axis", take_along_flat, (((2, 3),), ((6,),))),
    Row("nan_to_num", nan_to_num_fn, (((2, 3),), ((),), ((0,),))),
    Row("nan_to_num", nan_to_num_values, (((5,),),), make=with_non_finite),
    Row("reshape", squeeze_spellings, (((1, 3, 1),),)),
    Row("reshape", reshape_fortran, (((2, 3),),)),
    Row("copy", astype_double, (((3, 4),), ((0,),)), dtypes=("float32",)),
]

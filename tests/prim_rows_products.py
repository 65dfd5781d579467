"""Spec-table rows of the contractions (tests/test_array_prims.py collects them): einsum
in every subscript form numpy takes, tensordot, inner, kron, cross, vdot, N-D dot and
batched matmul. Each loss wraps the product in sin(1.3 * . + 0.2), so a misplaced
adjoint shows."""
from __future__ import annotations

import numpy as np

from prim_rows import Row


def wrap(y):
    return np.sin(1.3 * y + 0.2)


# ------------------------------------------------------------------ einsum


def einsum_explicit(a, b):
    return np.sum(wrap(np.einsum("ij,jk->ik", a, b)))


def einsum_implicit(a, b):
    return np.sum(wrap(np.einsum("ij,jk", a, b)) * 1.5)


def einsum_trace(a):
    return wrap(np.einsum("ii", a))


def einsum_diagonal(a):
    return np.sum(wrap(np.einsum("ii->i", a)) * np.arange(1.0, 1.0 + a.shape[0]))


def einsum_repeated_with_other(a, v):
    return np.sum(wrap(np.einsum("iij,j->i", a, v)))


def einsum_ellipsis(a, b):
    return np.sum(wrap(np.einsum("...ij,...jk->...ik", a, b)))


def einsum_ellipsis_implicit(a):
    return np.sum(wrap(np.einsum("...ji", a)))


def einsum_one_operand(a):
    return np.sum(wrap(np.einsum("ijk->kj", a)))


def einsum_three(a, b, c):
    return np.sum(wrap(np.einsum("ij,jk,kl->il", a, b, c, optimize=True)))


def einsum_scalar_operand(s, v):
    return np.sum(wrap(np.einsum(",i->i", s, v)))


def einsum_broadcast_label(a, b):
    return np.sum(wrap(np.einsum("ij,ij->ij", a, b)))


def einsum_sum_only_here(a, b):
    return np.sum(wrap(np.einsum("ij,k->ik", a, b)))


def einsum_same_operand(a):
    return wrap(np.einsum("i,i", a, a))


def einsum_sublists(a, b):
    return np.sum(wrap(np.einsum(a, [0, 1], b, [1, 2], [0, 2])))


def einsum_sublists_ellipsis(a, v):
    return np.sum(wrap(np.einsum(a, [Ellipsis, 1], v, [1])))


# ------------------------------------------------------------------ the others


def tensordot_int(a, b):
    return np.sum(wrap(np.tensordot(a, b)))


def tensordot_pairs(a, b):
    return np.sum(wrap(np.tensordot(a, b, axes=([0, 2], [1, 0]))))


def tensordot_outer(a, b):
    return np.sum(wrap(np.tensordot(a, b, 0)))


def inner_fn(a, b):
    return np.sum(wrap(np.inner(a, b)))


def kron_fn(a, b):
    return np.sum(wrap(np.kron(a, b)) * np.arange(np.size(a) * np.size(b)).reshape(np.shape(np.kron(a, b))))


def cross_fn(a, b):
    return np.sum(wrap(np.cross(a, b)))


def cross_axis(a, b):
    return np.sum(wrap(np.cross(a, b, axis=0)))


def cross_axes(a, b):
    return np.sum(wrap(np.cross(a, b, axisa=0, axisb=-1, axisc=0)))


def vdot_fn(a, b):
    return wrap(np.vdot(a, b))


def dot_nd(a, b):
    return np.sum(wrap(np.dot(a, b)))


def matmul_batched(a, b):
    return np.sum(wrap(a @ b))


ROWS = [
    Row("einsum", einsum_explicit, (((3, 4), (4, 2)), ((0, 4), (4, 2)), ((3, 0), (0, 2)))),
    Row("einsum", einsum_implicit, (((3, 4), (4, 2)),)),
    Row("einsum", einsum_trace, (((3, 3),), ((1, 1),))),
    Row("einsum", einsum_diagonal, (((4, 4),), ((0, 0),))),
    Row("einsum", einsum_repeated_with_other, (((3, 3, 2), (2,)),)),
    Row("einsum", einsum_ellipsis, (((2, 3, 4), (4, 2)), ((1, 3, 4), (2, 4, 5)), ((3, 4), (2, 4, 2)))),
    Row("einsum", einsum_ellipsis_implicit, (((2, 3, 4),), ((3, 2),))),
    Row("einsum", einsum_one_operand, (((2, 3, 4),),)),
    Row("einsum", einsum_three, (((2, 3), (3, 4), (4, 2)),)),
    Row("einsum", einsum_scalar_operand, (((), (3,)),)),
    Row("einsum", einsum_broadcast_label, (((1, 3), (2, 3)), ((2, 1), (2, 3)))),
    Row("einsum", einsum_sum_only_here, (((2, 3), (4,)),)),
    Row("einsum", einsum_same_operand, (((5,),), ((0,),))),
    Row("einsum", einsum_sublists, (((2, 3), (3, 4)),)),
    Row("einsum", einsum_sublists_ellipsis, (((2, 4, 3), (3,)),)),
    Row("tensordot", tensordot_int, (((2, 3, 4), (3, 4, 2)),)),
    Row("tensordot", tensordot_pairs, (((2, 3, 4), (4, 2, 3)),)),
    Row("tensordot", tensordot_outer, (((2, 3), (3,)),)),
    Row("inner", inner_fn, (((3,), (3,)), ((2, 3), (4, 3)), ((), (3,)), ((0,), (0,)))),
    Row("kron", kron_fn, (((2, 3), (3, 2)), ((3,), (2, 2)), ((), (3,)))),
    Row("cross", cross_fn, (((3,), (3,)), ((4, 3), (3,)), ((2, 1, 3), (4, 3)))),
    Row("cross", cross_axis, (((3, 4), (3, 4)),)),
    Row("cross", cross_axes, (((3, 2), (2, 3)),)),
    Row("vdot", vdot_fn, (((3, 4), (4, 3)), ((0,), (0,)), ((), ()))),
    Row("dot", dot_nd, (((2, 3, 4), (4, 5)), ((2, 3, 4), (5, 4, 2)), ((3,), (2, 3, 4)), ((), (2, 3, 2)))),
    Row("matmul", matmul_batched, (((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (2, 4, 5)), ((3, 4), (2, 4, 5)),
                                   ((2, 1, 3, 4), (5, 4, 2)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)))),
]

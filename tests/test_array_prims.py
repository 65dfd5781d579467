"""The spec table of array primitives (in the style of JAX's LAX_GRAD_OPS): one row per
entry of `s2sad.array_prims.PRIMS` and per spelling worth pinning, each a loss through
the primitive, a few argument shapes and dtypes. Every row's gradient, by s2sad.grad on
the python and llvm backends and by s2sad.vjp, must match central finite differences;
a table entry with no row fails `test_every_entry_has_a_row`.

Each loss wraps the primitive in `sin(1.3 * . + 0.2)`, so the adjoint reaching the
primitive differs from element to element (a transposed or misplaced adjoint shows).
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import array_prims
from s2sad.frontend import parse_function
from s2sad.passes.arrayir import ArrayStmt, walk_stmts
from s2sad.passes.arrayprog import build_program
from s2sad.runtime import Kernel

from conftest import central_fd
from prim_rows import Row, family_rows


def my_cumsum(x):
    return np.cumsum(x)


s2sad.defvjp(my_cumsum, lambda g, out, x: np.cumsum(g[::-1])[::-1])


def wrap(y):
    return np.sin(1.3 * y + 0.2)


# ------------------------------------------------------------------ the losses


def sum_axis(x):
    return np.sum(np.sin(1.3 * np.sum(x, axis=0) + 0.2))


def sum_method_keepdims(x):
    return np.sum(np.sin(1.3 * x.sum(axis=-1, keepdims=True) + 0.2))


def builtin_sum(x):
    return np.sum(np.sin(1.3 * sum(x) + 0.2))


def mean_axis(x):
    return np.sum(np.sin(1.3 * np.mean(x, axis=1) + 0.2))


def max_axis(x):
    return np.sum(np.sin(1.3 * np.max(x, axis=0) + 0.2))


def amax_all(x):
    return np.sin(1.3 * np.amax(x) + 0.2)


def min_method(x):
    return np.sum(np.sin(1.3 * x.min(axis=-1) + 0.2))


def prod_axis(x):
    return np.sum(np.sin(1.3 * np.prod(x, axis=0) + 0.2))


def matmul_op(a, b):
    return np.sum(np.sin(1.3 * (a @ b) + 0.2))


def matmul_fn(a, b):
    return np.sum(np.sin(1.3 * np.matmul(a, b) + 0.2))


def dot_fn(a, b):
    return np.sum(np.sin(1.3 * np.dot(a, b) + 0.2))


def dot_method(a, b):
    return np.sum(np.sin(1.3 * a.dot(b) + 0.2))


def outer_fn(a, b):
    return np.sum(np.sin(1.3 * np.outer(a, b) + 0.2))


def transpose_axes(x):
    return np.sum(np.sin(1.3 * np.transpose(x, (2, 0, 1)) + 0.2) * np.arange(24.0).reshape(4, 2, 3))


def transpose_t(x):
    return np.sum(np.sin(1.3 * x.T + 0.2) * np.arange(6.0).reshape(3, 2))


def transpose_method(x):
    return np.sum(np.sin(1.3 * x.transpose(1, 2, 0) + 0.2) * np.arange(24.0).reshape(3, 4, 2))


def reshape_fn(x):
    return np.sum(np.sin(1.3 * np.reshape(x, (2, -1)) + 0.2) * np.arange(12.0).reshape(2, 6))


def reshape_spellings(x):
    return np.sum(np.sin(1.3 * (x.ravel() + x.flatten() + np.ravel(x)) + 0.2) * np.arange(12.0)) \
        + np.sum(np.sin(np.expand_dims(x, 0)))


def copy_spellings(x):
    return np.sum(np.sin(1.3 * (np.copy(x) + np.asarray(x) * x.copy() + x.astype(float)) + 0.2))


def repeat_fn(x):
    return np.sum(np.sin(1.3 * np.repeat(x, 2, axis=0) + 0.2) * np.arange(24.0).reshape(6, 4))


def repeat_method(x):
    return np.sum(np.sin(1.3 * x.repeat(3) + 0.2) * np.arange(36.0))


def tile_fn(x):
    return np.sum(np.sin(1.3 * np.tile(x, (2, 1)) + 0.2) * np.arange(24.0).reshape(6, 4))


def index_slices(x):
    return np.sum(np.sin(1.3 * x[1:, ::2] + 0.2)) + np.sum(np.sin(x[None]))


def index_repeated(x):
    return np.sum(np.sin(1.3 * x[[0, 2, 0]] + 0.2))


def concatenate_fn(a, b):
    return np.sum(np.sin(1.3 * np.concatenate([a, b], axis=0) + 0.2) * np.arange(15.0).reshape(5, 3))


def stack_fn(a, b):
    return np.sum(np.sin(1.3 * np.stack([a, b], axis=1) + 0.2) * np.arange(12.0).reshape(3, 2, 2))


def array_of_list(a, b):
    return np.sum(np.sin(1.3 * np.array([a, b]) + 0.2) * np.arange(12.0).reshape(2, 3, 2))


def r_fn(a, b):
    return np.sum(np.sin(1.3 * np.r_[a, b] + 0.2) * np.arange(7.0))


def c_fn(a, b):
    return np.sum(np.sin(1.3 * np.c_[a, b] + 0.2) * np.arange(6.0).reshape(3, 2))


def user_fn(x):
    return np.sum(np.sin(1.3 * my_cumsum(x) + 0.2))


# ------------------------------------------------------------------ the table


CORE_ROWS = [
    Row("sum", sum_axis, (((3, 4),), ((2, 3, 2),))),
    Row("sum", sum_method_keepdims, (((3, 4),),)),
    Row("sum", builtin_sum, (((3, 4),),)),
    Row("mean", mean_axis, (((3, 4),), ((2, 3, 2),))),
    Row("max", max_axis, (((3, 4),),)),
    Row("max", amax_all, (((3, 4),), ((5,),))),
    Row("min", min_method, (((3, 4),),)),
    Row("prod", prod_axis, (((3, 4),), ((2, 3),))),
    Row("matmul", matmul_op, (((3, 4), (4, 2)), ((4,), (4, 3)), ((2, 3, 4), (4, 2)), ((3, 4), (4,)))),
    Row("matmul", matmul_fn, (((3, 4), (4, 1)),)),
    Row("dot", dot_fn, (((3, 4), (4, 2)), ((4,), (4,)))),
    Row("dot", dot_method, (((3, 4), (4,)),)),
    Row("outer", outer_fn, (((3,), (4,)),)),
    Row("transpose", transpose_axes, (((2, 3, 4),),)),
    Row("transpose", transpose_t, (((2, 3),),)),
    Row("transpose", transpose_method, (((2, 3, 4),),)),
    Row("reshape", reshape_fn, (((3, 4),), ((12,),))),
    Row("reshape", reshape_spellings, (((3, 4),),)),
    Row("copy", copy_spellings, (((3, 4),),)),
    Row("repeat", repeat_fn, (((3, 4),),)),
    Row("repeat", repeat_method, (((3, 4),),)),
    Row("tile", tile_fn, (((3, 4),),)),
    Row("index", index_slices, (((3, 4),),)),
    Row("index", index_repeated, (((3, 4),),)),
    Row("concatenate", concatenate_fn, (((2, 3), (3, 3)),)),
    Row("stack", stack_fn, (((3, 2), (3, 2)),)),
    Row("stack", array_of_list, (((3, 2), (3, 2)),)),
    Row("r_", r_fn, (((3,), (4,)),)),
    Row("c_", c_fn, (((3,), (3,)),)),
    Row("user", user_fn, (((5,),),)),
]

# each further family keeps its rows (and their losses) in tests/prim_rows_<family>.py,
# as a list named ROWS: one spec table, written in several files
ROWS = CORE_ROWS + family_rows()

CASES = [pytest.param(row, shapes, id=f"{row.fn.__name__}-{'x'.join(map(str, sum(shapes, ())))}")
         for row in ROWS for shapes in row.shapes]


def _args(shapes, dtype, seed=0, make=None):
    if make is not None:
        return [make(s, dtype, seed + k) for k, s in enumerate(shapes)]
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 1.5, s).astype(dtype) for s in shapes]


def _fd(fn, args):
    wide = [a.astype(np.float64) for a in args]
    return [central_fd(fn, wide, i) for i in range(len(args))]


def _tol(dtype, row=None):
    if dtype == "float64":
        return (row.tol64 if row is not None and row.tol64 else None) or dict(rtol=1e-5, atol=1e-6)
    return dict(rtol=2e-3, atol=2e-3)


def test_every_entry_has_a_row():
    assert {row.prim for row in ROWS} == set(array_prims.PRIMS)


def test_each_callable_and_method_stands_for_one_entry():
    """Recognition by identity is unambiguous: a callable is in one entry's `funcs`
    (np.array is also stack's literal-list spelling), a method in one entry."""
    funcs = [f for p in array_prims.PRIMS.values() for f in p.funcs]
    assert len({id(f) for f in funcs}) == len(funcs)
    methods = [m for p in array_prims.PRIMS.values() for m in p.methods]
    assert len(set(methods)) == len(methods)
    assert [p.name for p in array_prims.for_function(np.array)] == ["stack", "copy"]
    assert array_prims.for_function(np.sin) == () and array_prims.for_method("argsort") is None


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.fn.__name__)
def test_row_builds_its_primitive(row):
    """The row's loss is an array program with a statement of its entry's op."""
    prog = build_program(parse_function(row.fn), Kernel)
    names = {st.op.name for st in walk_stmts(prog.body) if isinstance(st, ArrayStmt)
             and isinstance(st.op, array_prims.PrimOp)}
    assert row.prim in names


@pytest.mark.parametrize("row,shapes", CASES)
def test_grad_matches_finite_differences(row, shapes):
    argnums = tuple(range(len(shapes)))
    for dtype in row.dtypes:
        args = _args(shapes, dtype, make=row.make)
        want = _fd(row.fn, args)
        for backend in ("python", "llvm"):
            got = s2sad.grad(row.fn, argnums=argnums, backend=backend)(*args)
            for g, w, a in zip(got, want, args):
                assert np.shape(g) == a.shape
                assert np.asarray(g).dtype == a.dtype, (backend, dtype)
                np.testing.assert_allclose(g, w, **_tol(dtype, row), err_msg=f"{backend} {dtype}")


@pytest.mark.parametrize("row,shapes", CASES)
def test_vjp_matches_finite_differences(row, shapes):
    args = _args(shapes, "float64", seed=1, make=row.make)
    value, pullback = s2sad.vjp(row.fn, *args)
    np.testing.assert_allclose(value, row.fn(*args), rtol=1e-12)
    got = pullback(np.float64(-0.7))
    for g, w in zip(got, _fd(row.fn, args)):
        np.testing.assert_allclose(g, -0.7 * w, **_tol("float64", row))

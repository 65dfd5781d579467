"""Forward mode over the array-primitive spec table (tests/test_array_prims.py's ROWS,
with the rows other families keep in tests/prim_rows_*.py): every row's s2sad.jvp, on
the python and llvm backends, must match central differences along a random tangent.
A row whose entry has no `jvp` text fails here (a new entry brings its JVP), except the
user's defvjp rule, which gives a VJP only and is refused, located.

Also: array results of any shape, loops and branches carrying tangents, and the bad
inputs a user may try (a tangent of the wrong shape, int arguments, empty and 0-d arrays).
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import array_prims

from test_array_prims import CASES, ROWS, _args, _tol

BACKENDS = ("python", "llvm")


def _directional_fd(fn, args, tans, h=1e-6):
    wide = [a.astype(np.float64) if np.asarray(a).dtype.kind == "f" else a for a in args]
    moved = [np.asarray(a).dtype.kind == "f" for a in wide]
    plus = fn(*[a + h * t if m else a for a, t, m in zip(wide, tans, moved)])
    minus = fn(*[a - h * t if m else a for a, t, m in zip(wide, tans, moved)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * h)


def _tangents(args, seed=7):
    """A random tangent per float argument (zero for an int one: it gets none)."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, np.shape(a)).astype(a.dtype) if np.asarray(a).dtype.kind == "f"
            else np.zeros(np.shape(a)) for a in args]


def test_every_entry_but_the_users_has_a_jvp():
    missing = {name for name, prim in array_prims.PRIMS.items() if prim.jvp is None}
    assert missing == {"user"}


# rows whose forward mode is refused, as JAX refuses it: the tangent of the extra columns
# of a full svd / complete qr of a non-square matrix (any orthonormal completion) is not
# defined, and forward mode cannot know that the loss reads only the first ones
JVP_REFUSED = {"svd_full_first_columns": "svd", "qr_complete": "qr"}


@pytest.mark.parametrize("row,shapes", CASES)
def test_jvp_matches_finite_differences(row, shapes):
    if row.prim == "user":
        pytest.skip("a defvjp rule has no JVP: test_jvp_through_a_defvjp_rule_is_refused")
    if row.fn.__name__ in JVP_REFUSED and shapes[0][-1] != shapes[0][-2]:
        args = _args(shapes, "float64", make=row.make)
        with pytest.raises(s2sad.UnsupportedOperationError) as err:
            s2sad.jvp(row.fn, tuple(args), tuple(_tangents(args)))
        e = err.value
        assert JVP_REFUSED[row.fn.__name__] in e.message and "not defined" in e.message
        assert e.location is not None and "np.linalg" in e.location.source_line()
        return
    for dtype in row.dtypes:
        args = _args(shapes, dtype, make=row.make)
        tans = _tangents(args)
        want = _directional_fd(row.fn, args, [t.astype(np.float64) for t in tans])
        for backend in BACKENDS:
            value, dot = s2sad.jvp(row.fn, tuple(args), tuple(tans), backend=backend)
            np.testing.assert_allclose(value, row.fn(*args), **_tol(dtype, row), err_msg=f"{backend} {dtype}")
            np.testing.assert_allclose(dot, want, **_tol(dtype, row), err_msg=f"{backend} {dtype}")


def test_jvp_through_a_defvjp_rule_is_refused():
    row = next(r for r in ROWS if r.prim == "user")
    x = np.linspace(0.5, 1.5, 5)
    with pytest.raises(s2sad.UnsupportedOperationError) as err:
        s2sad.jvp(row.fn, (x,), (np.ones(5),))
    e = err.value
    assert "jvp" in e.message and "user" in e.message and e.location is not None
    assert "my_cumsum" in e.message and "my_cumsum(x)" in str(e)


# ------------------------------------------------------------------ array results, control flow


def layer(w, b, x):
    return np.tanh(x @ w + b)


def rows_then_cols(x):
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=1, keepdims=True)


def looped(x, n):
    acc = x
    for i in range(n):
        acc = np.sin(acc) @ np.full((3, 3), 0.4)
        if i % 2 == 0:
            acc = acc * 2.0 + acc[0]
    return acc


def scalar_loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + np.sum(x[i] * x)
    return s


RNG = np.random.default_rng(3)
PROGRAMS = [
    (layer, (RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=(5, 3))), ()),
    (rows_then_cols, (RNG.normal(size=(4, 6)),), ()),
    (looped, (RNG.normal(size=(2, 3)),), (3,)),
    (scalar_loop, (RNG.normal(size=(4,)),), (4,)),
]


@pytest.mark.parametrize("fn,floats,ints", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_of_array_results_loops_and_branches(fn, floats, ints, backend):
    tans = _tangents(floats, seed=11)
    value, dot = s2sad.jvp(fn, floats + ints, tuple(tans) + tuple(0 for _ in ints), backend=backend)
    want = _directional_fd(lambda *a: fn(*a, *ints), list(floats), tans)
    np.testing.assert_allclose(value, fn(*floats, *ints), rtol=1e-12, atol=1e-12)
    assert np.shape(dot) == np.shape(value)
    np.testing.assert_allclose(dot, want, rtol=1e-6, atol=1e-7)


def test_jvp_agrees_with_vjp_on_an_array_result():
    """<J t, u> from jvp equals <t, J^T u> from vjp (two independent paths)."""
    w, b, x = PROGRAMS[0][1]
    tw, tb, tx = _tangents((w, b, x), seed=5)
    _, dot = s2sad.jvp(layer, (w, b, x), (tw, tb, tx))
    u = np.random.default_rng(9).normal(size=dot.shape)
    _, pull = s2sad.vjp(layer, w, b, x)
    gw, gb, gx = pull(u)
    assert np.sum(dot * u) == pytest.approx(np.sum(gw * tw) + np.sum(gb * tb) + np.sum(gx * tx), rel=1e-12)


def test_float32_stays_float32():
    w, b, x = (a.astype(np.float32) for a in PROGRAMS[0][1])
    value, dot = s2sad.jvp(layer, (w, b, x), tuple(_tangents((w, b, x))))
    assert value.dtype == np.float32 and dot.dtype == np.float32


# ------------------------------------------------------------------ bad input


def test_a_tangent_of_the_wrong_shape_is_refused():
    w, b, x = PROGRAMS[0][1]
    with pytest.raises(s2sad.ShapeError) as err:
        s2sad.jvp(layer, (w, b, x), (np.ones((4, 3)), np.ones(4), np.ones((5, 3))))
    assert err.value.location is not None and "shape" in err.value.hint


def test_inputs_are_not_changed():
    w, b, x = (a.copy() for a in PROGRAMS[0][1])
    tans = _tangents((w, b, x))
    keep = [a.copy() for a in (w, b, x, *tans)]
    s2sad.jvp(layer, (w, b, x), tuple(tans))
    for a, k in zip((w, b, x, *tans), keep):
        np.testing.assert_array_equal(a, k)


def test_int_argument_gets_no_tangent():
    def scaled(x, k):
        return np.sum(x, axis=0) * k
    x = np.arange(6.0).reshape(2, 3)
    value, dot = s2sad.jvp(scaled, (x, 3), (np.ones((2, 3)), 0))
    np.testing.assert_allclose(value, scaled(x, 3))
    np.testing.assert_allclose(dot, np.full(3, 6.0))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
def test_empty_arrays(shape):
    x = np.ones(shape)
    value, dot = s2sad.jvp(lambda x: np.sum(np.tanh(x), axis=0) @ np.ones(shape[1]), (x,), (np.ones(shape),))
    assert value == 0.0 and dot == 0.0


def test_zero_d_arrays():
    x = np.array(0.7)
    value, dot = s2sad.jvp(lambda x: np.sum(np.sin(x) * np.reshape(x, (1,))), (x,), (np.array(2.0),))
    assert value == pytest.approx(np.sin(0.7) * 0.7)
    assert dot == pytest.approx(2.0 * (np.cos(0.7) * 0.7 + np.sin(0.7)))


def test_nan_flows_through_without_an_exception():
    x = np.array([1.0, np.nan, 2.0])
    value, dot = s2sad.jvp(lambda x: np.sum(x) * x, (x,), (np.ones(3),))
    assert np.isnan(value).all() and np.isnan(dot).all()


def test_zero_tangents_give_zeros_of_the_results_shape_and_dtype():
    w, b, x = (a.astype(np.float32) for a in PROGRAMS[0][1])
    value, dot = s2sad.jvp(layer, (w, b, x), (np.zeros_like(w), np.zeros_like(b), np.zeros_like(x)))
    assert dot.shape == value.shape and dot.dtype == np.float32 and not np.any(dot)
    # a zero tangent beside a nonzero one: the same as carrying it
    tw = _tangents((w,))[0]
    _, one = s2sad.jvp(layer, (w, b, x), (tw, np.zeros_like(b), np.zeros_like(x)))
    _, want = s2sad.jvp(lambda w: layer(w, b, x), (w,), (tw,))
    np.testing.assert_allclose(one, want, rtol=1e-6)

"""The shape primitives beyond the spec table (tests/prim_rows_shapes.py): each entry's
JVP text against central differences of numpy's own function and against its VJP text
(<vjp(g), t> = <g, jvp(t)>), the refusals of what they cannot differentiate through,
and the gradient of x.astype between float types cast back to x's dtype."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import array_prims, array_rules
from s2sad.errors import UnsupportedOperationError

IDX = np.array([[2, 0, 1], [0, 0, 2]])

# (entry, numpy's function of the operands, operand shapes, static parameters as source)
CASES = [
    ("roll", lambda x: np.roll(x, (1, -2), axis=(0, 1)), [(3, 4)], {"shift": "(1, -2)", "axis": "(0, 1)"}),
    ("roll", lambda x: np.roll(x, 2), [(5,)], {"shift": "2"}),
    ("flip", lambda x: np.flip(x, 1), [(2, 3)], {"axis": "1"}),
    ("flip", np.flip, [(2, 3)], {}),
    ("fliplr", np.fliplr, [(2, 3)], {}),
    ("flipud", np.flipud, [(2, 3)], {}),
    ("rot90", lambda x: np.rot90(x, 3, (1, 2)), [(2, 3, 4)], {"k": "3", "axes": "(1, 2)"}),
    ("rot90", np.rot90, [(2, 3)], {}),
    ("moveaxis", lambda x: np.moveaxis(x, (0, 1), (2, 0)), [(2, 3, 4)], {"source": "(0, 1)", "destination": "(2, 0)"}),
    ("swapaxes", lambda x: np.swapaxes(x, 0, -1), [(2, 3, 4)], {"axis1": "0", "axis2": "-1"}),
    ("rollaxis", lambda x: np.rollaxis(x, 0, 3), [(2, 3, 4)], {"axis": "0", "start": "3"}),
    ("rollaxis", lambda x: np.rollaxis(x, -1), [(2, 3, 4)], {"axis": "-1"}),
    ("broadcast_to", lambda x: np.broadcast_to(x, (2, 3, 4)), [(3, 1)], {"shape": "(2, 3, 4)"}),
    ("atleast", np.atleast_3d, [(3,)], {}),
    ("hstack", lambda a, b: np.hstack([a, b]), [(2, 3), (2, 2)], {}),
    ("vstack", lambda a, b: np.vstack([a, b]), [(3,), (2, 3)], {}),
    ("dstack", lambda a, b: np.dstack([a, b]), [(3,), (3,)], {}),
    ("column_stack", lambda a, b: np.column_stack([a, b]), [(3,), (3, 2)], {}),
    ("row_stack", lambda a, b: np.vstack([a, b]), [(2,), (1, 2)], {}),
    ("append", np.append, [(2, 2), (3,)], {}),
    ("append", lambda a, b: np.append(a, b, axis=1), [(2, 2), (2, 3)], {"axis": "1"}),
    ("pad", lambda x: np.pad(x, ((1, 2), (2, 0))), [(2, 3)], {"pad_width": "((1, 2), (2, 0))"}),
    ("pad", lambda x: np.pad(x, 1, "constant", constant_values=3.0), [(2, 3)],
     {"pad_width": "1", "mode": "'constant'", "constant_values": "3.0"}),
    ("pad", lambda x: np.pad(x, 2, "reflect"), [(3, 4)], {"pad_width": "2", "mode": "'reflect'"}),
    ("pad", lambda x: np.pad(x, (3, 1), "edge"), [(2, 3)], {"pad_width": "(3, 1)", "mode": "'edge'"}),
    ("pad", lambda x: np.pad(x, 4, "wrap"), [(3,)], {"pad_width": "4", "mode": "'wrap'"}),
    ("tril", lambda x: np.tril(x, 1), [(2, 3, 3)], {"k": "1"}),
    ("triu", np.triu, [(4,)], {}),
    ("diag", lambda x: np.diag(x, -1), [(3,)], {"k": "-1"}),
    ("diag", lambda x: np.diag(x, 2), [(3, 5)], {"k": "2"}),
    ("diagonal", lambda x: np.diagonal(x, -1, 2, 0), [(3, 2, 4)], {"offset": "-1", "axis1": "2", "axis2": "0"}),
    ("take", lambda x: np.take(x, [[1, 1], [5, 0]]), [(2, 3)], {"indices": "[[1, 1], [5, 0]]"}),
    ("take", lambda x: np.take(x, [4, -1], axis=0, mode="wrap"), [(3, 2)],
     {"indices": "[4, -1]", "axis": "0", "mode": "'wrap'"}),
    ("take_along_axis", lambda x: np.take_along_axis(x, IDX, 1), [(2, 4)], {"indices": "IDX", "axis": "1"}),
    ("take_along_axis", lambda x: np.take_along_axis(x, IDX[:1], 0), [(3, 3)], {"indices": "IDX[:1]", "axis": "0"}),
    ("nan_to_num", lambda x: np.nan_to_num(x, posinf=2.0), [(2, 3)], {"posinf": "2.0"}),
    ("reshape", lambda x: np.ravel(x, order="F"), [(2, 3)], {"order": "'F'"}),
    ("transpose", lambda x: np.transpose(x, (1, 2, 0)), [(2, 3, 4)], {"axes": "(1, 2, 0)"}),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=1), [(2, 3), (2, 1)], {"axis": "1"}),
    ("concatenate", lambda a, b: np.concatenate([a, b], axis=None), [(2, 3), (4,)], {"axis": "None"}),
    ("stack", lambda a, b: np.stack([a, b], axis=-1), [(2, 3), (2, 3)], {"axis": "-1"}),
    ("r_", lambda a, b: np.r_[a, b], [(3,), ()], {}),
    ("c_", lambda a, b: np.c_[a, b], [(3,), (3, 2)], {}),
    ("index", lambda x: np.array(x[np.s_[1:, ::2]]), [(3, 4)], {"index": "np.s_[1:, ::2]"}),
    ("copy", np.copy, [(2, 3)], {}),
    ("repeat", lambda x: np.repeat(x, 2, axis=1), [(2, 3)], {"repeats": "2", "axis": "1"}),
    ("tile", lambda x: np.tile(x, (2, 1)), [(2, 3)], {"reps": "(2, 1)"}),
]


def _names(n):
    return [f"a{k}" for k in range(n)]


def _run(text, ns):
    return eval(text, {**array_rules.HELPERS, "IDX": IDX}, ns)


@pytest.mark.parametrize("name,fn,shapes,p", CASES, ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_jvp_text_matches_central_differences_and_the_vjp(name, fn, shapes, p):
    prim = array_prims.PRIMS[name]
    rng = np.random.default_rng(3)
    args = [rng.uniform(-1, 1, s) for s in shapes]
    out = fn(*args)
    g = rng.uniform(-1, 1, np.shape(out))
    h = 1e-6
    for i in range(len(args)):
        t = rng.uniform(-1, 1, shapes[i])
        ns = dict(zip(_names(len(args)), args), out=out, t=t, g=g)
        tangent = _run(prim.jvp(i, "t", _names(len(args)), "out", p), ns)
        plus, minus = list(args), list(args)
        plus[i], minus[i] = args[i] + h * t, args[i] - h * t
        np.testing.assert_allclose(tangent, (fn(*plus) - fn(*minus)) / (2 * h), rtol=1e-7, atol=1e-8)
        adjoint = _run(prim.vjp(i, "g", _names(len(args)), "out", p), ns)
        assert np.shape(adjoint) == np.shape(args[i])
        assert np.sum(adjoint * t) == pytest.approx(np.sum(g * tangent), rel=1e-12, abs=1e-12)


def test_every_shape_entry_has_a_jvp():
    from s2sad.array_prims import joins, moves, padding, selecting, shapes, stacking  # noqa: PLC0415
    for family in (moves, padding, selecting, stacking, joins, shapes):
        for prim in family.PRIMS:
            if prim.name == "user":      # (s2sad.defvjp gives a VJP only)
                continue
            assert prim.jvp is not None, prim.name
            assert prim.name in {c[0] for c in CASES}, prim.name


# ------------------------------------------------------------------ refusals


def pad_mean(x):
    return np.sum(np.pad(x, 1, mode="mean"))


def pad_odd(x):
    return np.sum(np.pad(x, 1, mode="reflect", reflect_type="odd"))


def pad_active_constant(x):
    c = np.sum(x)
    return np.sum(np.pad(x, 1, constant_values=c))


def take_unknown_keyword(x):
    return np.sum(np.take(x, [0], out=None))


def take_mode_variable(x, mode="clip"):
    return np.sum(np.take(x, [0], mode=mode + ""))


def roll_no_shift(x):
    return np.sum(np.roll(x))


def atleast_two(x):
    a, b = np.atleast_1d(x, x)
    return np.sum(a)


def ravel_order_a(x):
    return np.sum(np.sin(np.ravel(x, order="A")))


def nan_to_num_in_place(x):
    return np.sum(np.nan_to_num(x, copy=False))


def nan_to_num_active(x):
    return np.sum(np.nan_to_num(x, nan=np.sum(x)))


def stack_dtype(x):
    return np.sum(np.hstack([x, x], dtype=np.float32))


@pytest.mark.parametrize("fn,words", [
    (pad_mean, "mode"), (pad_odd, "reflect_type"), (pad_active_constant, "constant_values"),
    (take_unknown_keyword, "'out='"), (take_mode_variable, "mode"), (roll_no_shift, "'shift'"),
    (atleast_two, "more arguments"), (ravel_order_a, "order"), (stack_dtype, "'dtype='"),
    (nan_to_num_in_place, "copy="), (nan_to_num_active, "literal number"),
])
def test_what_the_shape_entries_cannot_differentiate_is_refused_at_the_call(fn, words):
    with pytest.raises(UnsupportedOperationError) as e:
        s2sad.grad(fn)(np.ones(4))
    msg = str(e.value)
    assert words in msg and "test_shape_prims.py" in msg, msg
    first = fn.__code__.co_firstlineno
    assert e.value.location is not None and first < e.value.location.lineno <= first + 2


# ------------------------------------------------------------------ astype


def through_single(x):
    return np.sum(np.sin(x.astype(np.float32)) * 2.0)


def test_astype_to_single_gives_the_gradient_in_double():
    x = np.linspace(-1.0, 1.0, 7)
    for backend in ("python", "llvm"):
        g = s2sad.grad(through_single, backend=backend)(x)
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, 2.0 * np.cos(x), rtol=1e-6)


def test_shape_primitives_leave_their_operands_alone():
    def f(x):
        return np.sum(np.sin(np.pad(np.flip(x), 1, mode="edge"))) + np.sum(np.tril(x) + np.take(x, [0, 0]).sum())
    x = np.arange(9.0).reshape(3, 3) / 7
    keep = x.copy()
    s2sad.grad(f)(x)
    np.testing.assert_array_equal(x, keep)

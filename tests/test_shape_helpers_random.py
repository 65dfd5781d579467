"""The shape primitives' adjoint helpers (s2sad/shape_helpers.py) over random
parameters: each adjoint is the transpose of numpy's own linear map,
<bar(g), t> = <g, f(t)>, for random shapes (empty axes included), pad widths and modes,
offsets, axes, index arrays with repeats and negative entries, and piece shapes."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from s2sad import shape_helpers as sh

SETTINGS = settings(max_examples=60, deadline=None)


def _transpose_holds(f, bar, x_shape, seed):
    rng = np.random.default_rng(seed)
    t = rng.normal(size=x_shape)
    y = f(t)
    g = rng.normal(size=np.shape(y))
    adj = bar(g)
    assert np.shape(adj) == tuple(x_shape)
    assert np.isclose(np.sum(adj * t), np.sum(g * y), rtol=1e-10, atol=1e-10)


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


@st.composite
def pads(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    mode = draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]))
    form = draw(st.sampled_from(["int", "pair", "per-axis"]))
    w = st.integers(0, 5)
    width = {"int": draw(w), "pair": (draw(w), draw(w)),
             "per-axis": tuple((draw(w), draw(w)) for _ in shape)}[form]
    return shape, width, mode


@SETTINGS
@given(pads(), st.integers(0, 99))
def test_pad(case, seed):
    shape, width, mode = case
    _transpose_holds(lambda t: np.pad(t, width, mode=mode), lambda g: sh.pad_bar(g, np.zeros(shape), width, mode),
                     shape, seed)


@SETTINGS
@given(st.lists(st.integers(0, 4), min_size=2, max_size=4).map(tuple), st.integers(-3, 3), st.booleans(),
       st.integers(0, 99))
def test_tril_triu(shape, k, lower, seed):
    f = np.tril if lower else np.triu
    _transpose_holds(lambda t: f(t, k), lambda g: sh.tri_bar(g, np.zeros(shape), k, lower), shape, seed)


@SETTINGS
@given(st.integers(0, 5), st.integers(-4, 4), st.integers(0, 99))
def test_diag_of_a_vector(n, k, seed):
    _transpose_holds(lambda t: np.diag(t, k), lambda g: sh.diag_bar(g, np.zeros(n), k), (n,), seed)


@SETTINGS
@given(st.integers(1, 5), st.integers(1, 5), st.integers(-5, 5), st.integers(0, 99))
def test_diag_of_a_matrix(n, m, k, seed):
    _transpose_holds(lambda t: np.diag(t, k), lambda g: sh.diag_bar(g, np.zeros((n, m)), k), (n, m), seed)


@SETTINGS
@given(st.lists(st.integers(1, 4), min_size=2, max_size=4).map(tuple), st.integers(-3, 3), st.data())
def test_diagonal(shape, offset, data):
    nd = len(shape)
    a1 = data.draw(st.integers(-nd, nd - 1))
    a2 = data.draw(st.integers(-nd, nd - 1).filter(lambda a: a % nd != a1 % nd))
    _transpose_holds(lambda t: np.diagonal(t, offset, a1, a2),
                     lambda g: sh.diagonal_bar(g, np.zeros(shape), offset, a1, a2), shape, data.draw(st.integers(0, 99)))


@SETTINGS
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), st.data())
def test_take(shape, data):
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    lo, hi = (-n, n - 1) if mode == "raise" else (-3 * n, 3 * n)
    idx = np.array(data.draw(st.lists(st.integers(lo, hi), min_size=0, max_size=6)), dtype=np.intp)
    if data.draw(st.booleans()) and idx.size:
        idx = idx.reshape(-1, 1)
    _transpose_holds(lambda t: np.take(t, idx, axis=axis, mode=mode),
                     lambda g: sh.take_bar(g, np.zeros(shape), idx, axis, mode), shape, data.draw(st.integers(0, 99)))


@SETTINGS
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), st.data())
def test_take_along_axis(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    ishape = tuple(data.draw(st.sampled_from([1, s])) if d != axis % len(shape) else data.draw(st.integers(0, 5))
                   for d, s in enumerate(shape))
    idx = np.random.default_rng(data.draw(st.integers(0, 99))).integers(-n, n, size=ishape)
    _transpose_holds(lambda t: np.take_along_axis(t, idx, axis),
                     lambda g: sh.take_along_axis_bar(g, np.zeros(shape), idx, axis), shape, data.draw(st.integers(0, 99)))


@SETTINGS
@given(st.integers(1, 4), st.data())
def test_rollaxis(nd, data):
    shape = tuple(data.draw(st.integers(1, 4)) for _ in range(nd))
    axis = data.draw(st.integers(-nd, nd - 1))
    start = data.draw(st.integers(-nd, nd))
    _transpose_holds(lambda t: np.rollaxis(t, axis, start), lambda g: sh.rollaxis_bar(g, np.zeros(shape), axis, start),
                     shape, data.draw(st.integers(0, 99)))
    t = np.random.default_rng(0).normal(size=shape)
    np.testing.assert_array_equal(sh.rollaxis_jvp(t, axis, start), np.rollaxis(t, axis, start))


@st.composite
def pieces(draw):
    kind = draw(st.sampled_from(["hstack", "vstack", "dstack", "column_stack", "row_stack"]))
    nd = draw(st.integers(0, 3))
    base = [draw(st.integers(1, 3)) for _ in range(nd)]
    axis = {"hstack": 0 if nd <= 1 else 1, "vstack": 0, "row_stack": 0, "dstack": 2, "column_stack": 1}[kind]
    shapes_ = []
    for _ in range(draw(st.integers(1, 3))):
        s = list(base)
        if nd > axis or (kind == "hstack" and nd == 1):
            s[axis] = draw(st.integers(0, 3))
        shapes_.append(tuple(s))
    return kind, shapes_


def _join(kind):
    return np.vstack if kind == "row_stack" else getattr(np, kind)


@SETTINGS
@given(pieces(), st.integers(0, 99))
def test_promoting_joins(case, seed):
    kind, shapes_ = case
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=s) for s in shapes_]
    try:
        out = _join(kind)(arrays)
    except ValueError:       # shapes numpy does not join
        return
    g = rng.normal(size=out.shape)
    for i in range(len(arrays)):
        t = rng.normal(size=shapes_[i])
        tangent = sh.join_jvp(kind, t, i, arrays)
        adj = sh.join_bar(kind, g, i, arrays)
        assert np.shape(adj) == shapes_[i]
        assert np.isclose(np.sum(adj * t), np.sum(g * tangent), rtol=1e-10, atol=1e-10)


@SETTINGS
@given(shapes, shapes, st.data())
def test_append(a_shape, v_shape, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    axis = data.draw(st.one_of(st.none(), st.integers(-3, 2)))
    arr, values = rng.normal(size=a_shape), rng.normal(size=v_shape)
    try:
        out = np.append(arr, values, axis=axis)
    except (ValueError, np.exceptions.AxisError):
        return
    g = rng.normal(size=out.shape)
    for i, operand in enumerate((arr, values)):
        t = rng.normal(size=operand.shape)
        tangent = sh.append_jvp(t, i, arr, values, axis)
        adj = sh.append_bar(g, i, arr, values, axis)
        assert np.shape(adj) == operand.shape
        assert np.isclose(np.sum(adj * t), np.sum(g * tangent), rtol=1e-10, atol=1e-10)

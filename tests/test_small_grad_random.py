"""grad / value_and_grad through the unrolled plan (s2sad/small_grad.py) on random
programs, against the python backend (the generated program run by Python, an
independent implementation) and central differences:

- the smooth programs of test_small_hessian_random (every math function the unroller
  differentiates, + - * /, powers, slices, sums, means, dot products) of two short
  vectors, with a third argument drawn here: a float or a vector taken as data;
- the random array programs of tests/randarray.py (matrix products, bias rows,
  reductions along an axis, piecewise functions, loops, in-place writes): those that
  unroll are checked, those that do not say why and still answer right.
The hot path (a second call) gives the first call's bits; the value is the function's
own to 1e-13 (its sums in numpy's order). The share of programs that unroll is bounded
below, so the tests keep testing the path. S2SAD_RANDPROG_SCALE multiplies the counts.
"""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import s2sad

from conftest import central_fd
from randarray import draw_program, load
from test_small_hessian_random import draw_smooth, load_source

SCALE = float(os.environ.get("S2SAD_RANDPROG_SCALE", "1"))
SETTINGS = dict(deadline=None, derandomize=True, database=None, print_blob=False,
                phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=list(HealthCheck))
SMOOTH: list[int] = []
SMOOTH_SEEN: list[int] = []
ARRAYS: list[int] = []
DECLINED: list[str] = []


def close(a, b, rtol=1e-12):
    if isinstance(a, tuple):
        for p, q in zip(a, b):
            close(p, q, rtol)
        return
    # (a value: a float; the general path's is np.float64, a float too, where numpy computed it last)
    assert type(a) is type(b) or (isinstance(a, float) and isinstance(b, float))
    assert np.shape(a) == np.shape(b)
    scale = max(1.0, float(np.max(np.abs(b)))) if np.size(b) else 1.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


def was_unrolled(g) -> bool:
    d = g.__s2sad__
    return d.small is not None and d.small.current[0] is not None


@st.composite
def smooth_programs(draw):
    src, n = draw_smooth(draw)
    third = draw(st.sampled_from(["float", "vector", "none"]))
    argnums = draw(st.sampled_from([0, 1, (0, 1), (1, 0)]))
    return src, n, third, argnums


def with_third(src: str, third: str) -> str:
    """The program with a data argument `s` scaling its result (none: unchanged)."""
    if third == "none":
        return src
    lines = src.replace("def loss(x, y):", "def loss(x, y, s):").splitlines()
    body = lines[-1].replace("return ", "return np.sum(s) * (", 1) + ")"
    return "\n".join(lines[:-1] + [body]) + "\n"


@settings(max_examples=max(1, int(40 * SCALE)), **SETTINGS)
@given(program=smooth_programs(), seed=st.integers(0, 2**16))
def test_smooth_random_programs(program, seed):
    src, n, third, argnums = program
    src = with_third(src, third)
    note(src)
    loss = load_source(src)
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=n), rng.normal(size=n)]
    if third != "none":
        args.append(float(rng.uniform(0.5, 1.5)) if third == "float" else rng.uniform(0.5, 1.5, size=3))
    with np.errstate(all="ignore"):
        if not np.isfinite(loss(*args)):
            return
    vg = s2sad.value_and_grad(loss, argnums)
    got = vg(*args)
    if vg.__s2sad__.small is not None:      # (an array program; a fused sum is one kernel already)
        SMOOTH_SEEN.append(1)
    want = s2sad.value_and_grad(loss, argnums, backend="python")(*args)
    close(got, want)
    assert abs(got[0] - float(loss(*args))) <= 1e-13 * max(1.0, abs(got[0]))
    if was_unrolled(vg):
        SMOOTH.append(1)
    again = vg(*args)
    assert again[0] == got[0] or (np.isnan(again[0]) and np.isnan(got[0]))
    for p, q in zip(again[1] if isinstance(argnums, tuple) else (again[1],),
                    got[1] if isinstance(argnums, tuple) else (got[1],)):
        np.testing.assert_array_equal(p, q)
    first = argnums[0] if isinstance(argnums, tuple) else argnums
    g0 = got[1][0] if isinstance(argnums, tuple) else got[1]
    np.testing.assert_allclose(g0, central_fd(loss, args, first), rtol=1e-5, atol=1e-5)


def test_most_smooth_programs_unrolled():
    """(runs after the test above, in this module's order)"""
    if not SMOOTH_SEEN:
        return      # deselected
    assert len(SMOOTH) >= len(SMOOTH_SEEN) * 3 // 4, (len(SMOOTH), len(SMOOTH_SEEN))


@st.composite
def programs(draw):
    return draw_program(draw, st)


@settings(max_examples=max(1, int(30 * SCALE)), **SETTINGS)
@given(program=programs(), seed=st.integers(0, 2**16), what=st.sampled_from(["grad", "value_and_grad"]))
def test_random_array_programs(program, seed, what):
    note(program.source)
    loss = load(program)["loss"]
    args = program.args(seed)
    with np.errstate(all="ignore"):
        if not np.isfinite(loss(*args)):
            return
    argnums = (0, 1, 2)
    make = getattr(s2sad, what)
    g = make(loss, argnums)
    got = g(*args)
    want = make(loss, argnums, backend="python")(*args)
    close(got, want, rtol=1e-11)
    if not was_unrolled(g):
        why = str(s2sad.explain(g, *args)).splitlines()[-1]
        assert "not unrolled" in why or "fused" in why, why
        DECLINED.append(why)
        return
    ARRAYS.append(1)
    again = g(*args)
    grads = again[1] if what == "value_and_grad" else again
    for p, q in zip(grads, got[1] if what == "value_and_grad" else got):
        np.testing.assert_array_equal(p, q)


def test_enough_random_array_programs_unrolled():
    """(runs after the test above)"""
    if not ARRAYS and not DECLINED:
        return
    print(f"unrolled {len(ARRAYS)}, declined {len(DECLINED)}, smooth {len(SMOOTH)} of {len(SMOOTH_SEEN)}")
    assert len(ARRAYS) >= len(DECLINED) / 4, (len(ARRAYS), sorted(set(DECLINED))[:5])

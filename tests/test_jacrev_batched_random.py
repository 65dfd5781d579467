"""jacrev by one batched pullback on random array programs (tests/randarray.py, the
generator test_higher_batched_random uses): the random `loss(W, b, v, c, X)` made to
return the array its last line reduces (so the output is not a scalar), and its
Jacobian in one argument from the batched pullback (s2sad/batched_rows.py) checked
against the per-row pullbacks (s2sad.vjp seeded with each basis cotangent: the
unbatched program), on both backends, and llvm against python. A program with a
statement that has no batched reverse form must say which (why_not) and answer None
(jacrev then runs per row); one s2sad refuses must be refused located, never a wrong
number. The share of programs batched is bounded below. S2SAD_RANDPROG_SCALE
multiplies the number of programs.
"""
from __future__ import annotations

import os
import re

import numpy as np
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import s2sad
from s2sad.batched_rows import Rows

from randarray import ArrayProgram, draw_program, load

SCALE = float(os.environ.get("S2SAD_RANDPROG_SCALE", "1"))
BATCHED: list[int] = []
FELL_BACK: list[str] = []


def unreduced(program: ArrayProgram) -> ArrayProgram:
    """The program returning the array its last line reduces to a scalar loss."""
    head, final = program.source.rsplit("    return ", 1)
    last = re.findall(r"\bt\d+\b", final)[0]
    return ArrayProgram(f"{head}    return {last}\n", program.b_shape, program.v_shape)


@st.composite
def programs(draw):
    return unreduced(draw_program(draw, st))


def per_row(fun, args, i, backend):
    out, pullback = s2sad.vjp(fun, *args, backend=backend)
    shape = np.shape(out)
    rows = [pullback(e.reshape(shape))[i] for e in np.eye(int(np.prod(shape)))]
    return np.array(rows).reshape(shape + np.shape(args[i]))


@settings(max_examples=max(1, int(25 * SCALE)), deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate], print_blob=False,
          suppress_health_check=list(HealthCheck))
@given(program=programs(), seed=st.integers(0, 2**16), i=st.sampled_from([0, 1, 2, 4]))
def test_batched_rows_of_random_programs(program, seed, i):
    note(program.source)
    note(f"d out / d x_{i}")
    fun = load(program)["loss"]
    args = program.args(seed)
    if not np.all(np.isfinite(fun(*args))):
        return
    got = {}
    for backend in ("python", "llvm"):
        rows = Rows(fun, backend)
        try:
            out = rows(tuple(args), (i,))
        except s2sad.S2SADError as e:       # refused: located
            assert e.location is not None, str(e)
            note(f"refused: {e}")
            return
        if out is None:
            assert rows.why_not, "no batched pullback and no reason given"
            FELL_BACK.append(rows.why_not)
            note(f"not batched: {rows.why_not}")
            return
        got[backend] = out[i]
        try:
            want = per_row(fun, args, i, backend)
        except s2sad.S2SADError as e:
            note(f"the per-row path refuses: {e}")
            return
        note(f"batched {got[backend]}\nper row {want}")
        scale = max(1.0, float(np.max(np.abs(want))))
        np.testing.assert_allclose(got[backend], want, rtol=1e-12, atol=1e-12 * scale)
    BATCHED.append(1)
    a, b = got["python"], got["llvm"]
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9 * max(1.0, float(np.max(np.abs(a)))))


def test_most_random_programs_were_batched():
    """(runs after the test above, in this module's order)"""
    if not BATCHED and not FELL_BACK:
        return      # the test above was deselected
    assert len(BATCHED) >= len(FELL_BACK) / 3, (len(BATCHED), sorted(set(FELL_BACK)))

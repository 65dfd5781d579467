"""Batched tangents on random array programs (tests/randarray.py): for a random
`loss(W, b, v, c, X)`, the block d grad_i loss / d x_j of its Hessian from one sweep of
batched tangents (s2sad/batched_jac.py) is checked against the same block column by
column (jvp of grad_i along each basis vector of x_j: the unbatched forward-over-reverse
program), on both backends, and the llvm backend against the python one. A program with
a statement that has no batched form must say which (why_not) and answer None (the
caller then goes column by column); one s2sad refuses must be refused located, never a
wrong number. The share of programs batched is bounded below, so the test keeps testing
the batched sweep. S2SAD_RANDPROG_SCALE multiplies the number of programs.
"""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import s2sad
from s2sad.batched_jac import Blocks

from conftest import hessian_per_column as per_column
from randarray import draw_program, load

SCALE = float(os.environ.get("S2SAD_RANDPROG_SCALE", "1"))
BATCHED: list[int] = []
FELL_BACK: list[str] = []


@st.composite
def programs(draw):
    return draw_program(draw, st)




@settings(max_examples=max(1, int(25 * SCALE)), deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate], print_blob=False,
          suppress_health_check=list(HealthCheck))
@given(program=programs(), seed=st.integers(0, 2**16), i=st.integers(0, 2), j=st.integers(0, 2))
def test_batched_hessian_blocks_of_random_programs(program, seed, i, j):
    note(program.source)
    note(f"block d grad_{i} / d x_{j}")
    loss = load(program)["loss"]
    args = program.args(seed)
    if not np.isfinite(loss(*args)):
        return
    got = {}
    for backend in ("python", "llvm"):
        blocks = Blocks(loss, backend, "hessian")
        try:
            out = blocks(tuple(args), (i,), (j,))
        except s2sad.S2SADError as e:       # refused: located
            assert e.location is not None, str(e)
            note(f"refused: {e}")
            return
        if out is None:
            assert blocks.why_not, "no batched program and no reason given"
            FELL_BACK.append(blocks.why_not)
            note(f"not batched: {blocks.why_not}")
            return
        got[backend] = out[(i, j)]
        try:
            want = per_column(loss, args, i, j, backend)
        except s2sad.S2SADError as e:
            note(f"the per-column path refuses: {e}")
            return
        scale = max(1.0, float(np.max(np.abs(want))))
        note(f"batched {got[backend]}\nper column {want}")
        np.testing.assert_allclose(got[backend], want, rtol=1e-9, atol=1e-9 * scale)
    BATCHED.append(1)
    a, b = got["python"], got["llvm"]
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9 * max(1.0, float(np.max(np.abs(a)))))


def test_most_random_programs_were_batched():
    """(runs after the test above, in this module's order)"""
    if not BATCHED and not FELL_BACK:
        return      # the test above was deselected
    assert len(BATCHED) >= len(FELL_BACK) / 3, (len(BATCHED), sorted(set(FELL_BACK)))

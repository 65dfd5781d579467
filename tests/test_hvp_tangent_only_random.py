"""`s2sad.hvp` (the product alone: the forward-over-reverse program less the gradient
lines no tangent reads, passes/dead_lines.py) on random array programs
(tests/randarray.py): for a random `loss(W, b, v, c, X)` and a random direction, the
product equals `jvp(grad(loss, argnums))[1]` (the program that keeps every line) on both
backends, and the llvm backend agrees with the python one; where one refuses, both do,
located. S2SAD_RANDPROG_SCALE multiplies the number of programs.
"""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import s2sad

from randarray import draw_program, load

SCALE = float(os.environ.get("S2SAD_RANDPROG_SCALE", "1"))
COMPARED: list[int] = []
REFUSED: list[str] = []
ARGNUMS = ((0, 1, 2), (0,), (2, 3), (1,))


@st.composite
def programs(draw):
    return draw_program(draw, st)


def _tangents(args, seed: int) -> tuple:
    rng = np.random.default_rng(seed + 1)
    return tuple(rng.normal(size=np.shape(a)) if isinstance(a, np.ndarray) else float(rng.normal()) for a in args)


def _close(got, want) -> None:
    for g, w in zip(got, want):
        scale = max(1.0, float(np.max(np.abs(w)))) if np.size(w) else 1.0
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12 * scale)


@settings(max_examples=max(1, int(25 * SCALE)), deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate], print_blob=False,
          suppress_health_check=list(HealthCheck))
@given(program=programs(), seed=st.integers(0, 2**16), which=st.integers(0, len(ARGNUMS) - 1))
def test_the_product_alone_of_random_programs(program, seed, which):
    note(program.source)
    argnums = ARGNUMS[which]
    loss = load(program)["loss"]
    args = program.args(seed)
    if not np.isfinite(loss(*args)):
        return
    tans = _tangents(args, seed)
    got = {}
    for backend in ("python", "llvm"):
        try:
            want = s2sad.jvp(s2sad.grad(loss, argnums=argnums, backend=backend), tuple(args), tans,
                             backend=backend)[1]
        except s2sad.S2SADError as e:       # jvp(grad) refuses: hvp must refuse too, located
            note(f"refused: {e}")
            try:
                s2sad.hvp(loss, tuple(args), tans, argnums=argnums, backend=backend)
            except s2sad.S2SADError as e2:
                assert e2.location is not None, str(e2)
                REFUSED.append(type(e2).__name__)
                return
            raise AssertionError(f"jvp(grad) refuses ({e}) where hvp answers")
        got[backend] = s2sad.hvp(loss, tuple(args), tans, argnums=argnums, backend=backend)
        _close(got[backend], want)
    a, b = got["python"], got["llvm"]
    for x, y in zip(a, b):
        np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-9 * max(1.0, float(np.max(np.abs(x)))))
    COMPARED.append(1)


def test_most_random_products_were_compared():
    """(runs after the test above, in this module's order)"""
    if not COMPARED and not REFUSED:
        return      # the test above was deselected
    assert len(COMPARED) >= 2 * len(REFUSED), (len(COMPARED), REFUSED)

"""The small Hessian (s2sad/small_hessian.py) on random programs, against the per-column
path (jvp of grad_i along each basis vector of x_j: the unbatched forward-over-reverse
program, an independent derivation):

- the random array programs of tests/randarray.py (the batched path's test programs:
  matrix products, bias rows, transposes, slices, reductions along an axis, smooth and
  piecewise elementwise functions, loops, in-place writes), block (i, j) of the Hessian;
  a program that does not unroll says why and answers None;
- random smooth programs of two short vectors written here (`draw_smooth`): every math
  function the unroller differentiates twice, +, -, *, / and powers by constants,
  slices, sums, means and dot products, so each second-derivative formula of
  passes/small_second.py meets the others.
The share of programs that unroll is bounded below, so the tests keep testing the path.
S2SAD_RANDPROG_SCALE multiplies the number of programs.
"""
from __future__ import annotations

import linecache
import os

import numpy as np
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import s2sad
from s2sad.small_hessian import SmallHessian

from conftest import hessian_per_column as per_column
from randarray import draw_program, load

SCALE = float(os.environ.get("S2SAD_RANDPROG_SCALE", "1"))
UNROLLED: list[int] = []
DECLINED: list[str] = []
SMOOTH_UNROLLED: list[int] = []
SETTINGS = dict(deadline=None, derandomize=True, database=None, print_blob=False,
                phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=list(HealthCheck))




def assert_close(got, want):
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * scale)


@st.composite
def programs(draw):
    return draw_program(draw, st)


@settings(max_examples=max(1, int(25 * SCALE)), **SETTINGS)
@given(program=programs(), seed=st.integers(0, 2**16), i=st.integers(0, 2), j=st.integers(0, 2))
def test_blocks_of_random_array_programs(program, seed, i, j):
    note(program.source)
    loss = load(program)["loss"]
    args = program.args(seed)
    if not np.isfinite(loss(*args)):
        return
    nums = (i, j) if i != j else (i,)
    small = SmallHessian(loss, nums, "llvm")
    got = small(tuple(args))
    if got is None:
        assert small.why_not, "declined without a reason"
        DECLINED.append(small.why_not)
        note(f"declined: {small.why_not}")
        return
    UNROLLED.append(1)
    block = got[0][-1]
    assert block.shape == np.shape(args[i]) + np.shape(args[j])
    assert_close(block, per_column(loss, args, i, j))
    again = small(tuple(args))      # the hot path
    np.testing.assert_array_equal(again[0][-1], block)


def test_enough_random_array_programs_unrolled():
    """(runs after the test above, in this module's order)"""
    if not UNROLLED and not DECLINED:
        return      # deselected
    assert len(UNROLLED) >= len(DECLINED) / 4, (len(UNROLLED), sorted(set(DECLINED)))


# ------------------------------------------------------------------ smooth programs

UNARY = {   # name -> (text, does it need a positive operand)
    "exp": ("np.exp(np.tanh({a}))", False), "log": ("np.log({a} * {a} + 0.5)", False),
    "sqrt": ("np.sqrt({a} * {a} + 1.0)", False), "sin": ("np.sin({a})", False), "cos": ("np.cos({a})", False),
    "tanh": ("np.tanh({a})", False), "arctan": ("np.arctan({a})", False), "tan": ("np.tan(0.5 * np.tanh({a}))", False),
    "sinh": ("np.sinh(0.5 * {a})", False), "cosh": ("np.cosh(0.5 * {a})", False),
    "expm1": ("np.expm1(np.tanh({a}))", False), "log1p": ("np.log1p({a} * {a})", False),
    "cbrt": ("np.cbrt({a} * {a} + 1.0)", False), "log2": ("np.log2({a} * {a} + 2.0)", False),
    "log10": ("np.log10({a} * {a} + 2.0)", False), "exp2": ("np.exp2(np.tanh({a}))", False),
    "square": ("np.square({a})", False), "reciprocal": ("np.reciprocal(2.0 + np.tanh({a}))", False),
    "pow3": ("{a} ** 3", False), "pow_half": ("({a} * {a} + 1.0) ** 0.5", False),
    "pow_neg": ("(1.5 + np.sin({a})) ** -1.5", False), "scale": ("2.5 * {a}", False), "neg": ("-{a}", False),
}
BINARY = {"add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "div": "{a} / (2.0 + np.tanh({b}))"}
FINAL = ["np.sum({a})", "np.mean({a})", "np.dot({a}, {b})", "np.sum({a} * {b}) * np.sum({a})",
         "np.sum({a}[1:] * {b}[:-1])"]


def draw_smooth(draw) -> tuple[str, int]:
    n = draw(st.integers(1, 6))
    names = ["x", "y"]
    lines = []
    for k in range(draw(st.integers(1, 6))):
        t = f"t{k}"
        if draw(st.booleans()):
            text, _ = UNARY[draw(st.sampled_from(sorted(UNARY)))]
            lines.append(f"    {t} = {text.format(a=draw(st.sampled_from(names)))}")
        else:
            a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
            lines.append(f"    {t} = {BINARY[draw(st.sampled_from(sorted(BINARY)))].format(a=a, b=b)}")
        names.append(t)
    final = draw(st.sampled_from(FINAL)) if n > 1 else "np.sum({a} * {b})"
    a, b = draw(st.sampled_from(names[2:] or names)), draw(st.sampled_from(names))
    lines.append(f"    return {final.format(a=a, b=b)}")
    return "import numpy as np\n\n\ndef loss(x, y):\n" + "\n".join(lines) + "\n", n


_files = iter(range(10**9))


def load_source(src: str):
    filename = f"<s2sad-small-random-{next(_files)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {"__name__": filename}
    exec(compile(src, filename, "exec"), ns)
    return ns["loss"]


@st.composite
def smooth_programs(draw):
    return draw_smooth(draw)


@settings(max_examples=max(1, int(40 * SCALE)), **SETTINGS)
@given(program=smooth_programs(), seed=st.integers(0, 2**16))
def test_smooth_random_programs_match_the_per_column_path(program, seed):
    src, n = program
    note(src)
    loss = load_source(src)
    rng = np.random.default_rng(seed)
    args = (rng.normal(size=n), rng.normal(size=n))
    if not np.isfinite(loss(*args)):
        return
    h = s2sad.hessian(loss, argnums=(0, 1))
    got = h(*args)
    if not h.small.warm:
        DECLINED.append(h.small.why_not)
        note(f"declined: {h.small.why_not}")
        return
    SMOOTH_UNROLLED.append(1)
    for i in range(2):
        for j in range(2):
            assert_close(got[i][j], per_column(loss, args, i, j))
    np.testing.assert_array_equal(got[0][1], got[1][0].T)


def test_every_smooth_program_unrolled():
    """Every smooth program is in the unroller's language (runs after the test above)."""
    if not SMOOTH_UNROLLED:
        return
    assert len(SMOOTH_UNROLLED) >= int(40 * SCALE) // 2, sorted(set(d for d in DECLINED if d))

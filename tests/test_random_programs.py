"""Random scalar programs (tests/randprog.py) differentiated by s2sad.

For each generated program `f` and its loss `np.sum(s2sad.broadcast(f, ...))`:
- the value equals f applied element by element in plain Python, summed;
- every gradient matches central finite differences of the plain-Python loss, at the
  elements where the finite differences can be trusted (h and h/10 agree: no branch
  threshold, abs/min/max kink or jump within reach of the step);
- jvp's out_dot equals sum(grad * tangent); jvp and vjp of the unreduced
  `s2sad.broadcast(f, ...)` equal the per-element partials times tangents/cotangents;
- the same loss spelled differently (np.mean, .sum(), map, comprehensions, a lambda
  around f) has the same value and gradients, scaled;
- the llvm backend agrees with the python backend (values, gradients, jvp, broadcast);
- grad of f itself on Python floats returns Python floats equal to finite differences;
- programs of hundreds to thousands of terms (randprog.long_programs) plan and agree;
- with float32 arguments over 300,001 elements, the loss and a float32 scalar's gradient
  are their terms' sums rounded once, on one thread and on three;
- with broadcasting shapes ((3,1) and (1,4) and a Python float, non-contiguous arrays),
  gradients have their argument's shape and type and match finite differences.

Examples are derandomized (reproducible in CI); the inputs come from a numpy generator
seeded by hypothesis, so that they are continuous values, not hypothesis's favourite
ties (0.0, 1.0, equal arguments), at which f has kinks that finite differences cannot
see. On a failure, the program's source and the inputs are printed.

    pytest --hypothesis-show-statistics tests/test_random_programs.py   # constructs generated
    S2SAD_RANDPROG_SCALE=10 pytest tests/test_random_programs.py        # a soak run
    S2SAD_RANDPROG_SHRINK=1 pytest ...                                   # shrink a failure (slow)

The last section holds minimal reproducers of the bugs these tests found.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, event, given, note, settings
from hypothesis import strategies as st

import s2sad
from conftest import assert_same_grads
from randprog import Program, load, long_programs, programs

BACKENDS = ["python", "llvm"]

H = 1e-6                   # finite-difference step; h/10 is the cross-check
FD_RTOL, FD_ATOL = 1e-5, 1e-6
VALUE_RTOL = 1e-12         # python backend vs plain Python (same arithmetic)
BACKEND_RTOL = 1e-13       # llvm vs python, relative to max(|value|, largest |value| of the array, 1)


# Shrinking a failing program takes minutes (every step recompiles it): off by default so a
# failure is reported fast; S2SAD_RANDPROG_SHRINK=1 turns it on to get a smaller program.
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + (
    [Phase.shrink] if os.environ.get("S2SAD_RANDPROG_SHRINK") else [])


# S2SAD_RANDPROG_SCALE=10 runs ten times as many examples (a soak run; CI uses 1).
SCALE = float(os.environ.get("S2SAD_RANDPROG_SCALE", "1"))


def _settings(n: int):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=True, database=None,
                    print_blob=False, phases=PHASES, report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


seeds = st.integers(0, 2**32 - 1)


# ------------------------------------------------------------------ plain-Python oracle

def reference(f, args) -> np.ndarray:
    """f applied element by element in plain Python floats, over the broadcast shape."""
    arrays = np.broadcast_arrays(*[np.asarray(a, dtype=float) for a in args])
    out = np.empty(arrays[0].shape)
    for idx in np.ndindex(out.shape):
        out[idx] = float(f(*[float(x[idx]) for x in arrays]))
    return out


def fd_partials(f, args, i: int, h: float):
    """Central differences of sum(f(args)) w.r.t. each element of args[i] (its shape)."""
    a = args[i]

    def diff(plus, minus):
        hi, lo = list(args), list(args)
        hi[i], lo[i] = plus, minus
        # elements that do not read the perturbed one cancel exactly
        return math.fsum((reference(f, hi) - reference(f, lo)).ravel())

    if not isinstance(a, np.ndarray):
        plus, minus = a + h, a - h
        return diff(plus, minus) / (plus - minus)
    g = np.empty(a.shape)
    for idx in np.ndindex(a.shape):
        plus, minus = a.copy(), a.copy()
        plus[idx] += h
        minus[idx] -= h
        g[idx] = diff(plus, minus) / (plus[idx] - minus[idx])
    return g


def check_against_fd(f, args, grads, argnums) -> None:
    """Each gradient equals finite differences wherever those are trustworthy."""
    trusted = total = 0
    for i, g in zip(argnums, grads):
        # the programs are smooth almost everywhere and bounded: no inf or NaN anywhere
        assert np.all(np.isfinite(g)), f"gradient of argument {i} is not finite: {g}"
        fd1 = np.asarray(fd_partials(f, args, i, H))
        fd2 = np.asarray(fd_partials(f, args, i, H / 10))
        ok = np.abs(fd1 - fd2) <= FD_RTOL * np.abs(fd1) + FD_ATOL
        best = fd2 + (fd2 - fd1) / 99.0  # Richardson: the h^2 error terms cancel
        g = np.asarray(g, dtype=float)
        close = np.abs(g - best) <= FD_RTOL * np.abs(best) + FD_ATOL
        bad = ok & ~close
        trusted += int(ok.sum())
        total += ok.size
        assert not bad.any(), (
            f"gradient of argument {i} disagrees with finite differences"
            f"{' at ' + str(np.argwhere(bad).tolist()) if bad.ndim else ''}:\n"
            f"  s2sad: {g[bad]}\n  fd:    {best[bad]}\n  inputs: {args}")
    event(f"fd-trusted elements: {'all' if trusted == total else 'some' if trusted else 'none'}")


def assert_same_as_grad(loss, argnums, backend, args, grads) -> None:
    """grad (its kernel without the value) gives value_and_grad's gradients."""
    assert_same_grads(s2sad.grad(loss, argnums=argnums, backend=backend)(*args), tuple(grads))


def record(program: Program) -> None:
    note(program.source)
    for feat in sorted(program.features):
        event(f"construct: {feat}")


def close(x, y, rtol, scale=0.0) -> bool:
    return abs(x - y) <= rtol * max(abs(x), abs(y), scale)


# ------------------------------------------------------------------ 1. python backend vs plain Python, 4. jvp

@_settings(150)
@given(program=programs(), n=st.integers(3, 5), seed=seeds)
def test_value_and_grad_match_plain_python(program, n, seed):
    record(program)
    ns = load(program)
    f, loss = ns["f"], ns["loss"]
    rng = np.random.default_rng(seed)
    args = [rng.uniform(-2.0, 2.0, n) for _ in program.params]
    note(f"inputs: {args}")
    argnums = tuple(range(program.nparams))
    ref = reference(f, args)

    out = s2sad.broadcast(f, *args, backend="python")
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=VALUE_RTOL, atol=0)

    value, grads = s2sad.value_and_grad(loss, argnums=argnums, backend="python")(*args)
    assert close(value, math.fsum(ref), VALUE_RTOL, scale=float(np.abs(ref).sum()))
    assert isinstance(grads, tuple) and len(grads) == len(args)
    for g, a in zip(grads, args):
        assert isinstance(g, np.ndarray) and g.shape == a.shape and g.dtype == np.float64
    check_against_fd(f, args, grads, argnums)

    # the same loss spelled another way (np.mean, .sum(), map, a comprehension, a lambda)
    k = 1.0 / ref.size if ns["ALT_SCALE"] == "mean" else float(ns["ALT_SCALE"])
    alt_value, alt_grads = s2sad.value_and_grad(ns["loss_alt"], argnums=argnums, backend="python")(*args)
    assert close(alt_value, k * value, VALUE_RTOL, scale=k * float(np.abs(ref).sum()))
    for g, ga in zip(grads, alt_grads):
        assert ga.shape == g.shape
        np.testing.assert_allclose(ga, k * g, rtol=1e-12, atol=1e-12 * k * float(np.abs(g).max()))

    tangents = [rng.normal(size=n) for _ in args]
    v2, dot = s2sad.jvp(loss, args, tangents, backend="python")
    assert close(v2, value, VALUE_RTOL, scale=float(np.abs(ref).sum()))
    terms = np.concatenate([g * t for g, t in zip(grads, tangents)])
    assert close(dot, math.fsum(terms), 1e-12, scale=float(np.abs(terms).sum()))

    # jvp and vjp of the unreduced f (equal-length 1-D arguments: the gradient of the sum
    # holds each element's own partials)
    fmap = ns["fmap"]
    out, out_dot = s2sad.jvp(fmap, args, tangents, backend="python")
    np.testing.assert_allclose(out, ref, rtol=VALUE_RTOL, atol=0)
    expected_dot = sum(g * t for g, t in zip(grads, tangents))
    np.testing.assert_allclose(out_dot, expected_dot, rtol=1e-12,
                               atol=1e-12 * float(sum(np.abs(g * t) for g, t in zip(grads, tangents)).max()))
    out, pullback = s2sad.vjp(fmap, *args, backend="python")
    np.testing.assert_allclose(out, ref, rtol=VALUE_RTOL, atol=0)
    w = rng.normal(size=n)
    bars = pullback(w)
    assert len(bars) == len(args)
    for g, bar in zip(grads, bars):
        assert bar.shape == g.shape
        np.testing.assert_allclose(bar, w * g, rtol=1e-12, atol=1e-300)


# ------------------------------------------------------------------ 2. llvm vs python

def assert_backends_agree(py, ll, what: str) -> None:
    py, ll = np.asarray(py, dtype=float), np.asarray(ll, dtype=float)
    assert py.shape == ll.shape, what
    scale = max(1.0, float(np.abs(py).max(initial=0.0)))
    bad = np.abs(py - ll) > BACKEND_RTOL * np.maximum(np.abs(py), scale)
    assert not bad.any(), f"{what}: python {py[bad]} llvm {ll[bad]}"


@_settings(80)
@given(program=programs(), n=st.integers(3, 5), seed=seeds)
def test_llvm_agrees_with_python(program, n, seed):
    record(program)
    ns = load(program)
    f, loss = ns["f"], ns["loss"]
    rng = np.random.default_rng(seed)
    args = [rng.uniform(-2.0, 2.0, n) for _ in program.params]
    note(f"inputs: {args}")
    argnums = tuple(range(program.nparams))

    assert_backends_agree(s2sad.broadcast(f, *args, backend="python"),
                          s2sad.broadcast(f, *args, backend="llvm"), "broadcast values")
    vp, gp = s2sad.value_and_grad(loss, argnums=argnums, backend="python")(*args)
    vl, gl = s2sad.value_and_grad(loss, argnums=argnums, backend="llvm")(*args)
    assert_same_as_grad(loss, argnums, "llvm", args, gl)
    assert_backends_agree(vp, vl, "loss value")
    for k, (a, b) in enumerate(zip(gp, gl)):
        assert isinstance(b, np.ndarray) and b.shape == a.shape and b.dtype == a.dtype
        assert_backends_agree(a, b, f"gradient {k}")
    tangents = [rng.normal(size=n) for _ in args]
    jp = s2sad.jvp(loss, args, tangents, backend="python")
    jl = s2sad.jvp(loss, args, tangents, backend="llvm")
    assert_backends_agree(jp[0], jl[0], "jvp value")
    assert_backends_agree(jp[1], jl[1], "jvp tangent")
    jp = s2sad.jvp(ns["fmap"], args, tangents, backend="python")
    jl = s2sad.jvp(ns["fmap"], args, tangents, backend="llvm")
    assert_backends_agree(jp[0], jl[0], "jvp of fmap: values")
    assert_backends_agree(jp[1], jl[1], "jvp of fmap: tangents")
    w = rng.normal(size=n)
    bp = s2sad.vjp(ns["fmap"], *args, backend="python")[1](w)
    bl = s2sad.vjp(ns["fmap"], *args, backend="llvm")[1](w)
    for k, (a, b) in enumerate(zip(bp, bl)):
        assert_backends_agree(a, b, f"vjp of fmap: adjoint {k}")


# ------------------------------------------------------------------ 3. scalars: grad of f itself

@pytest.mark.parametrize("backend", BACKENDS)
@_settings(60)
@given(program=st.booleans().flatmap(lambda s: programs(straight=s)), seed=seeds)
def test_scalar_grad_of_f(program, seed, backend):
    record(program)
    ns = load(program)
    f = ns["f"]
    rng = np.random.default_rng(seed)
    xs = [float(v) for v in rng.uniform(-2.0, 2.0, program.nparams)]
    note(f"inputs: {xs}")
    if program.nparams == 1:
        g = s2sad.grad(f, backend=backend)(xs[0])
        assert type(g) is float
        grads = (g,)
    else:
        grads = s2sad.grad(f, argnums=tuple(range(program.nparams)), backend=backend)(*xs)
        assert isinstance(grads, tuple) and all(type(g) is float for g in grads)
    value, again = s2sad.value_and_grad(f, argnums=tuple(range(program.nparams)), backend=backend)(*xs)
    expected = float(f(*xs))
    assert close(value, expected, VALUE_RTOL if backend == "python" else 1e-12, scale=1e-300)
    assert again == grads
    check_against_fd(f, xs, grads, range(program.nparams))


# ------------------------------------------------------------------ broadcasting shapes

def _arg(rng, spec):
    if spec == "float":
        return float(rng.uniform(-2.0, 2.0))
    if spec == "fortran":
        return np.asfortranarray(rng.uniform(-2.0, 2.0, (3, 4)))
    if spec == "transposed":
        return rng.uniform(-2.0, 2.0, (4, 3)).T
    return rng.uniform(-2.0, 2.0, spec)


SHAPES = {
    1: [((2, 3),), ("float",), ("transposed",)],
    2: [((3, 1), (1, 4)), ((2, 3), "float"), ((3,), (2, 1)), ("fortran", (4,))],
    3: [((3, 1), (1, 4), "float"), ((2, 1, 2), (3, 1), (2,)), ("float", "transposed", (1, 4))],
}


@pytest.mark.parametrize("backend", BACKENDS)
@_settings(40)
@given(program=programs(max_stmts=4), which=st.integers(0, 2), seed=seeds)
def test_broadcasting_shapes(program, which, seed, backend):
    record(program)
    ns = load(program)
    f, loss = ns["f"], ns["loss"]
    rng = np.random.default_rng(seed)
    specs = SHAPES[program.nparams][which % len(SHAPES[program.nparams])]
    args = [_arg(rng, s) for s in specs]
    note(f"inputs: {args}")
    argnums = tuple(range(program.nparams))
    ref = reference(f, args)

    value, grads = s2sad.value_and_grad(loss, argnums=argnums, backend=backend)(*args)
    assert close(value, math.fsum(ref.ravel()), 1e-12, scale=float(np.abs(ref).sum()))
    for g, a in zip(grads, args):
        if isinstance(a, np.ndarray):
            assert isinstance(g, np.ndarray) and g.shape == a.shape and g.dtype == a.dtype
        else:
            assert type(g) is float
    check_against_fd(f, args, grads, argnums)
    assert_same_as_grad(loss, argnums, backend, args, grads)

    out = s2sad.broadcast(f, *args, backend=backend)
    expected_shape = np.broadcast_shapes(*[np.shape(a) for a in args])
    if expected_shape == ():
        assert np.ndim(out) == 0
    else:
        assert out.shape == expected_shape
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=0)


# ------------------------------------------------------------------ programs of many terms

@_settings(3)
@given(program=long_programs(), seed=seeds)
def test_long_programs(program, seed):
    """Hundreds to thousands of terms in one expression, or hundreds of elif arms: planned
    (no RecursionError), right on both backends, the backends agree."""
    record(program)
    ns = load(program)
    f = ns["f"]
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, 4)
    ref = reference(f, [x])
    grads = {}
    for backend in BACKENDS:
        value, g = s2sad.value_and_grad(ns["loss"], backend=backend)(x)
        assert close(value, math.fsum(ref), 1e-12, scale=float(np.abs(ref).sum()))
        check_against_fd(f, [x], (g,), (0,))
        grads[backend] = g
        s = s2sad.grad(f, backend=backend)(float(x[0]))
        assert close(s, float(grads[backend][0]), 1e-12, scale=1.0)
    assert_backends_agree(grads["python"], grads["llvm"], "gradient")


# ------------------------------------------------------------------ float32 sums

F32_N = 300_001        # above the size at which threads split the elements (and odd)


def ulps32(x) -> float:
    return float(np.spacing(np.float32(abs(x))))


@_settings(6)
@given(program=programs(nparams=2), seed=seeds)
def test_float32_sums_are_rounded_once(program, seed):
    """float32 arguments: the loss is the sum of the float32 element values added in
    float64 and rounded once (within an ulp or two of their exact sum, where float32
    accumulation would be off by hundreds), and a float32 scalar's gradient is the
    same sum of its per-element partials; on one thread and on three."""
    record(program)
    ns = load(program)
    f, loss = ns["f"], ns["loss"]
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2.0, 2.0, F32_N).astype(np.float32)
    b = np.float32(rng.uniform(-2.0, 2.0))
    note(f"b = {b!r}")
    values = s2sad.broadcast(f, a, b)
    assert values.dtype == np.float32
    exact_value = math.fsum(values.astype(np.float64))
    partials = s2sad.grad(loss, argnums=1)(a, np.full(F32_N, b))   # each element's d/db
    assert partials.dtype == np.float32
    exact_grad = math.fsum(partials.astype(np.float64))
    for threads in ("1", "3"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("S2SAD_NUM_THREADS", threads)
            value, (ga, gb) = s2sad.value_and_grad(loss, argnums=(0, 1))(a, b)
        assert type(gb) is np.float32 and ga.dtype == np.float32
        assert abs(value - exact_value) <= 2 * ulps32(exact_value) + 1e-30, (threads, value, exact_value)
        assert abs(gb - exact_grad) <= 2 * ulps32(exact_grad) + 1e-30, (threads, gb, exact_grad)
        np.testing.assert_array_equal(ga, s2sad.grad(loss, argnums=0)(a, np.full(F32_N, b)))


# ------------------------------------------------------------------ minimal reproducers
# Bugs the random programs found, cut down by hand. Fixed ones stay as regression tests;
# open ones would be strict xfails, with the generator steering around them (when a fix
# lands, the xfail fails: delete its mark and lift the restriction). None is open now.

REPRODUCERS = Program(source='''\
import math


def bool_times_neg(a):
    return (a > 0.5) * (-a)


def bool_plus_bool(a):
    return (a > 0.5) + (a > 0.25)


def one_line_ifexp(a):
    return a if a > 0.0 else -a


def one_line_and(a):
    return a > 0.0 and a


def one_line_or(a):
    return (a < 0.0 or a) * a


def call_in_or(a):
    return a > 5.0 or abs(a) + math.cos(a)


def h_while(x):
    n = 0
    while n < 2:
        x = x * 1.5
        n += 1
    return x


def h_early(x):
    if x > 0.0:
        return x * x
    x **= 2
    return -x


def helpers_with_control_flow(a):
    return (a < 5.0 and h_while(a)) + h_early(math.cos(a))


def loop_var_assigned_in_body(a):
    for i in range(2):
        a = a + i
        i = a * 2.0
    return a


def loop_var_assigned_after(a):
    for i in range(2):
        a = a * 1.0
    if a > 0.0:
        i = a
    return i


def break_in_loop_inside_tuple_loop(a):
    for w in (0.5, 2.0):
        for i in range(3):
            if i > 0:
                break
            a = a * w
    return a
''', nparams=1, straight=True, features=frozenset())


@pytest.fixture(scope="module")
def rep():
    return load(REPRODUCERS)


def fd_scalar(f, x):
    return (f(x + H) - f(x - H)) / (2 * H)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["bool_times_neg", "bool_plus_bool"])
def test_regression_arithmetic_on_comparisons(rep, case, backend):
    # the python backend gave numpy bools: -(a > b) raised, (a > b) + (c > d) was a logical or
    f = rep[case]
    x = np.array([1.0, 0.3, 0.0])
    np.testing.assert_array_equal(s2sad.broadcast(f, x, backend=backend), [f(1.0), f(0.3), f(0.0)])
    expected_grad = -1.0 if case == "bool_times_neg" else 0.0
    assert s2sad.value_and_grad(f, backend=backend)(1.0) == (f(1.0), expected_grad)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["one_line_ifexp", "one_line_and", "one_line_or", "call_in_or",
                                  "helpers_with_control_flow"])
@pytest.mark.parametrize("x", [0.5, -0.7])
def test_regression_grad_of_straight_line_f(rep, case, x, backend):
    # grad(f) plans a straight-line f at the array level: it refused conditional
    # expressions, gave and/or a zero gradient, and choked on helpers with loops,
    # early returns or augmented assignments to their parameters
    f = rep[case]
    value, g = s2sad.value_and_grad(f, backend=backend)(x)
    assert value == pytest.approx(float(f(x)), rel=1e-12)
    assert g == pytest.approx(fd_scalar(f, x), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case,x,expected", [("loop_var_assigned_in_body", 0.5, (1.5, 1.0)),
                                             ("loop_var_assigned_after", -0.5, (1, 0.0))])
def test_regression_assigned_loop_variable(rep, case, x, expected, backend):
    # the dual did not reset the tangent of a for loop's variable that the loop body or
    # the code after the loop assigns: python backend UnboundLocalError, llvm NaN or a
    # wrong gradient
    f = rep[case]
    assert f(x) == expected[0]
    assert s2sad.value_and_grad(f, backend=backend)(x) == expected



@pytest.mark.parametrize("backend", BACKENDS)
def test_regression_break_in_loop_inside_tuple_loop(rep, backend):
    # normalize refused break/continue anywhere inside a for loop over a tuple, also when
    # they belonged to a loop nested in it
    f = rep["break_in_loop_inside_tuple_loop"]
    assert f(0.5) == 0.5
    assert s2sad.value_and_grad(f, backend=backend)(0.5) == (0.5, 1.0)


LLVM_INVARIANT_MATH = """\
import math

import numpy as np

import s2sad


def f(a):
    return a * math.sin(0.5)


print(s2sad.broadcast(f, np.linspace(-1.0, 1.0, 4), backend="llvm"))
"""


def test_regression_llvm_loop_invariant_math_call(tmp_path):
    # the llvm backend in its default math mode (libmvec) aborted the process in LLVM's
    # loop vectorizer ("invalid name for a VFABI variant: _ZGVeN8v_libmvec.sin(...)") on a
    # math call with a loop-invariant argument; in a subprocess, since that kills the
    # interpreter
    script = tmp_path / "invariant_math.py"
    script.write_text(LLVM_INVARIANT_MATH)
    env = {k: v for k, v in os.environ.items() if k not in ("S2SAD_VECMATH", "S2SAD_LIBMVEC")}
    env["S2SAD_CACHE"] = "0"
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]

"""The llvm backend against the python backend's `run_driver`, the oracle.

Kernels are written by hand in the core scalar language (kernel.py), compiled with
`s2sad.codegen.llvm.compile_driver`, called through ctypes with `arr.ctypes.data`,
and compared element by element with `run_driver` on the same inputs.
"""
from __future__ import annotations

import ctypes
import math
import re
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import kernel
from s2sad import rules
from s2sad.codegen import llvm as L
from s2sad.codegen.python import compile_module, run_driver
from s2sad.kernel import KernelModule, LoopSpec

F64, F32 = np.float64, np.float32
RTOL = {F64: 1e-13, F32: 1e-5}
HYPO = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------
# operands: one flat buffer per pointer argument, addressed like the C ABI does

class Flat:
    """`buf[off + k]` for any integer k: the python oracle's view of a pointer argument."""

    def __init__(self, buf: np.ndarray, off: int = 0) -> None:
        self.buf, self.off = buf, off

    def __getitem__(self, k):
        return self.buf[self.off + k]

    def __setitem__(self, k, v):
        self.buf[self.off + k] = v

    def address(self) -> int:
        return self.buf.ctypes.data + self.off * self.buf.itemsize


STRIDED_KINDS = ("padded", "transposed", "bcast_outer", "bcast_inner", "bcast_all", "reversed")


def strided_geometry(kind: str, no: int, ni: int) -> tuple[int, int, int, int]:
    """(buffer size, offset, so, si) of a strided operand over the (no, ni) index space."""
    if kind == "padded":
        return max(1, no * (2 * ni + 1)), 0, 2 * ni + 1, 2
    if kind == "transposed":
        return max(1, no * ni), 0, 1, no
    if kind == "bcast_outer":      # one row, broadcast over o
        return max(1, ni), 0, 0, 1
    if kind == "bcast_inner":      # one column, broadcast over i
        return max(1, no), 0, 1, 0
    if kind == "bcast_all":
        return 1, 0, 0, 0
    if kind == "reversed":         # negative strides, as a reversed numpy view has
        n = max(1, no * ni)
        return n, n - 1, -ni, -1
    raise ValueError(kind)


class Operand:
    """A kernel operand in some layout: what ctypes gets and what run_driver gets."""

    def __init__(self, layout: str, dtype, no: int, ni: int, fill, kind: str = "padded") -> None:
        self.layout = layout
        if layout == "scalar":
            self.value = float(dtype(fill(1)[0]))
            return
        if layout == "contig":
            size, off, so, si = max(1, no * ni), 0, ni, 1
        else:
            size, off, so, si = strided_geometry(kind, no, ni)
        with np.errstate(over="ignore"):
            self.buf = np.asarray(fill(size), dtype=dtype)
        self.off, self.so, self.si = off, so, si

    def c_args(self, buf=None) -> list:
        if self.layout == "scalar":
            return [self.value]
        b = self.buf if buf is None else buf
        ptr = b.ctypes.data + self.off * b.itemsize
        return [ptr] if self.layout == "contig" else [ptr, self.so, self.si]

    def py_arg(self, buf=None):
        if self.layout == "scalar":
            return self.value
        b = self.buf if buf is None else buf
        return (Flat(b, self.off), self.so, self.si)


def run_both(kmod: KernelModule, spec: LoopSpec, dtype, no: int, ni: int, seed: int = 0,
             params=None, vector_math=None):
    """Run the compiled driver and the oracle on the same inputs; return both result dicts."""
    rng = np.random.default_rng(seed)
    layouts = spec.layouts
    active_idx = tuple(kmod.params.index(a) for a in kmod.active) if spec.needs_dual else ()
    kinds = [STRIDED_KINDS[(seed + k) % len(STRIDED_KINDS)] for k in range(3 * len(layouts) + 3)]
    if params is None:
        params = [Operand(lay, dtype, no, ni, lambda n: rng.uniform(-1.0, 1.0, n) if k == 0
                          else rng.uniform(0.5, 2.0, n), kinds[k])
                  for k, lay in enumerate(layouts)]
    n = no * ni
    outs: dict[str, Operand | None] = {}
    acc0 = np.array([0.25], dtype=np.float64)     # sums are double for every dtype (kernel.py)
    seed_op = None
    if spec.partials:
        seed_op = (Operand("scalar", dtype, no, ni, lambda n: [0.75]) if spec.seed == "scalar"
                   else Operand("contig", dtype, no, ni, lambda n: rng.uniform(0.5, 1.5, n)))
    grads = []
    for j, k in enumerate(active_idx):
        lay = layouts[k]
        if not spec.partials:
            break
        if lay == "scalar":
            g = Operand("contig", np.float64, 1, 1, lambda n: [0.5])
            g.layout = "gsum"
        else:
            g = Operand(lay, dtype, no, ni, lambda n: rng.uniform(0.0, 1.0, n),
                        kinds[len(layouts) + j])
        grads.append(g)
    tangents = [Operand(layouts[k], dtype, no, ni, lambda n: rng.uniform(0.5, 1.5, n),
                        kinds[2 * len(layouts) + j]) for j, k in enumerate(active_idx)] if spec.tangents else []

    def fresh_buffers():
        out = np.full(max(1, n), -7.0, dtype=dtype)
        out_dot = np.full(max(1, n), -7.0, dtype=dtype)
        acc = acc0.copy()
        gbufs = [g.buf.copy() for g in grads]
        return out, out_dot, acc, gbufs

    # compiled
    drv = L.compile_driver(kmod, spec, dtype, vector_math=vector_math)
    out, out_dot, acc, gbufs = fresh_buffers()
    args: list = [no, ni]
    for p in params:
        args += p.c_args()
    if spec.value == "store":
        args.append(out.ctypes.data)
    elif spec.value == "sum":
        args.append(acc.ctypes.data)
    if spec.partials:
        args += seed_op.c_args()
    for g, b in zip(grads, gbufs):
        args += [b.ctypes.data] if g.layout == "gsum" else g.c_args(b)
    for t in tangents:
        args += t.c_args()
    if spec.tangents:
        args.append(out_dot.ctypes.data)
    assert len(args) == len(drv.argtypes)
    drv.cfunc(*args)
    got = dict(out=out, out_dot=out_dot, acc=acc, grads=gbufs)

    # oracle
    fn = compile_module(kmod)[kmod.dual_entry if spec.needs_dual else kmod.entry]
    out, out_dot, acc, gbufs = fresh_buffers()
    py_grads = [Flat(b) if g.layout == "gsum" else g.py_arg(b) for g, b in zip(grads, gbufs)]
    seed_arg = None
    if spec.partials:
        seed_arg = seed_op.value if spec.seed == "scalar" else Flat(seed_op.buf)
    run_driver(fn, spec, active_idx, no, ni, [p.py_arg() for p in params], out=out, acc=Flat(acc),
               seed=seed_arg, grads=py_grads, tangents=[t.py_arg() for t in tangents], out_dot=out_dot)
    want = dict(out=out, out_dot=out_dot, acc=acc, grads=gbufs)
    return got, want


def assert_close(got, want, rtol, what="", signed_zeros=False):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True, err_msg=what)
    if signed_zeros:
        z = want == 0
        np.testing.assert_array_equal(np.signbit(got[z]), np.signbit(want[z]), err_msg=what + " (sign of zero)")


def assert_same_results(got, want, dtype, what=""):
    """Values here are O(1): an absolute floor of rtol covers sums that nearly cancel."""
    rtol = RTOL[dtype]
    for key in ("out", "out_dot", "acc"):
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=rtol, err_msg=f"{what} {key}")
    for k, (a, b) in enumerate(zip(got["grads"], want["grads"])):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, err_msg=f"{what} grad {k}")


# ---------------------------------------------------------------------------------
# every driver flavour

TANH = kernel('''
def f(x, y):
    t = math.tanh(x)
    return (t + 2.0) * y
def f__dual(x, y):
    t = math.tanh(x)
    return ((t + 2.0) * y, (1.0 - t * t) * y, t + 2.0)
''', "f", dual="f__dual", active=("x", "y"))
# the same shape with a function that libmvec computes (tanh is s2sad's own: OWN_BEFORE_LIBMVEC)
SIN = kernel('''
def f(x, y):
    t = math.sin(x)
    return (t + 2.0) * y
def f__dual(x, y):
    t = math.sin(x)
    return ((t + 2.0) * y, math.sin(x + 1.5707963267948966) * y, t + 2.0)    # cos, through sin
''', "f", dual="f__dual", active=("x", "y"))

FLAVOURS = [
    dict(value="store"),
    dict(value="sum"),
    dict(value="sum", partials=True, seed="scalar"),
    dict(value="store", partials=True, seed="array", tangents=True),
    dict(value="none", tangents=True),
    dict(value="none", partials=True, seed="scalar", tangents=True),
    dict(value="sum", partials=True, seed="array"),
]
LAYOUT_PAIRS = [(a, b) for a in ("scalar", "contig", "strided") for b in ("scalar", "contig", "strided")]


@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
@pytest.mark.parametrize("layouts", LAYOUT_PAIRS, ids=lambda p: "".join(x[0] for x in p))
def test_driver_flavours(layouts, dtype):
    for k, fl in enumerate(FLAVOURS):
        spec = LoopSpec(layouts=layouts, **fl)
        for seed, (no, ni) in enumerate([(3, 13), (2, 37)]):
            got, want = run_both(TANH, spec, dtype, no, ni, seed=seed + 7 * k)
            assert_same_results(got, want, dtype, spec.tag())


@pytest.mark.parametrize("shape", [(0, 5), (4, 0), (1, 1), (1, 67), (67, 1)])
def test_driver_edge_sizes(shape):
    for layouts in [("strided", "contig"), ("contig", "scalar")]:
        spec = LoopSpec(layouts=layouts, value="sum", partials=True, seed="array")
        got, want = run_both(TANH, spec, F64, *shape, seed=3)
        assert_same_results(got, want, F64, str(shape))


def test_stride_zero_grads_accumulate():
    """A broadcast (stride-0) gradient receives the sum over the broadcast dimension."""
    no, ni = 4, 5
    spec = LoopSpec(layouts=("strided", "contig"), value="none", partials=True, seed="scalar")
    x = Operand("strided", F64, no, ni, lambda n: np.linspace(-0.5, 0.5, n), "bcast_outer")
    y = Operand("contig", F64, no, ni, lambda n: np.full(n, 2.0))
    drv = L.compile_driver(TANH, spec, F64)
    g_x = np.zeros(ni)          # stride-0 over o: one row of partial sums
    g_y = np.zeros(no * ni)
    drv.cfunc(no, ni, *x.c_args(), *y.c_args(), 1.0, g_x.ctypes.data, 0, 1, g_y.ctypes.data)
    t = np.tanh(np.linspace(-0.5, 0.5, ni))
    np.testing.assert_allclose(g_x, no * (1 - t * t) * 2.0, rtol=1e-14)
    np.testing.assert_allclose(g_y, np.tile(t + 2.0, no), rtol=1e-14)


def test_active_subset_in_its_own_order():
    """Partials follow kmod.active (not the parameter order); inactive params are plain inputs."""
    k = kernel('''
    def g(x, y, z):
        return x * y + z * z * y
    def g__dual(x, y, z):
        return (x * y + z * z * y, 2.0 * z * y, y)
    ''', "g", dual="g__dual", active=("z", "x"))
    for layouts in [("contig", "scalar", "strided"), ("strided", "contig", "scalar")]:
        for fl in [dict(value="sum", partials=True, seed="array", tangents=True),
                   dict(value="store", partials=True, seed="scalar")]:
            spec = LoopSpec(layouts=layouts, **fl)
            for dtype in (F64, F32):
                got, want = run_both(k, spec, dtype, 3, 11, seed=5)
                assert_same_results(got, want, dtype, spec.tag())


def test_dual_returns_a_helpers_tuple():
    """`return helper(...)` of a tuple-returning helper, with returns in branches and a loop."""
    k = kernel('''
    def parts(x, y):
        if x > y:
            return (x * y, y, x)
        for j in range(3):
            if x + j > y:
                return (x * y, y + j, x)
        return (x * y, 2.0 * y, 3.0 * x)
    def h(x, y):
        return x * y
    def h__dual(x, y):
        return parts(x, y)
    ''', "h", dual="h__dual", active=("x", "y"))
    for dtype in (F64, F32):
        spec = LoopSpec(layouts=("contig", "strided"), value="store", partials=True, seed="array",
                        tangents=True)
        got, want = run_both(k, spec, dtype, 4, 9, seed=11)
        assert_same_results(got, want, dtype)


# ---------------------------------------------------------------------------------
# control flow and the semantics of the core language

def check_elementwise(kmod: KernelModule, dtype, columns: list, signed_zeros=True, rtol=None):
    """Store driver over contig inputs `columns` (one array per param) against the oracle."""
    n = len(columns[0])
    spec = LoopSpec(layouts=("contig",) * len(columns), value="store")
    params = []
    for col in columns:
        op = Operand("contig", dtype, 1, n, lambda m, col=col: np.asarray(col, dtype=np.float64))
        params.append(op)
    got, want = run_both(kmod, spec, dtype, 1, n, params=params)
    assert_close(got["out"][:n], want["out"][:n], RTOL[dtype] if rtol is None else rtol,
                 kmod.name, signed_zeros=signed_zeros)


IF_ELIF = kernel('''
def k(x, y):
    if x > y:
        r = x - y
    elif x < -y:
        r = x * y
    elif x == y:
        return 0.5
    else:
        r = y
        if r > 1.0:
            r = r + 100.0
    return r
''', "k")

WHILE_BREAK_CONTINUE = kernel('''
def k(x, n):
    s = 0.0
    i = 0.0
    while i < n:
        i = i + 1.0
        if i == 3.0:
            continue
        if s > 10.0:
            break
        s = s + x * i
    return s + i * 1000.0
''', "k")

FOR_NEGATIVE_STEP = kernel('''
def k(x, n):
    s = 0.0
    for j in range(9, -3, -2):
        if j < n:
            s = s * x + j
    return s + 10.0 * j
''', "k")

FOR_RETURN_BREAK = kernel('''
def k(x, n):
    t = 0.0
    for j in range(0, 10, 1):
        if j * x > n:
            return j + t
        if j > 7:
            break
        t = t + 0.5
        if t > 2.0:
            continue
        t = t + 0.25
    return -1.0 - t - j
''', "k")

FOR_VAR_KEEPS_VALUE = kernel('''
def k(x, n):
    j = x
    for j in range(3, 8, 1):
        if j > n:
            break
        j = j * 10.0
    i = x + 1.0
    for i in range(5, 2, 1):
        i = 7.0
    s = 0.0
    for a in range(4):
        for b in range(a, 3):
            s = s + a * x - b
    return j + 1000.0 * i + s
''', "k")

WHILE_RETURN = kernel('''
def k(x):
    y = abs(x)
    n = 0.0
    while True:
        n = n + 1.0
        if y > 100.0:
            return y + n
        y = y * 2.0 + 1.0
''', "k")

NESTED_LOOPS = kernel('''
def k(x, n):
    s = 0.0
    for a in range(0, 8, 1):
        if a >= n:
            break
        b = 0.0
        while b < a:
            b = b + 1.0
            if b == 2.0:
                continue
            s = s + x * b
            if s > 50.0:
                break
        if s > 80.0:
            break
    return s
''', "k")

HELPERS = kernel('''
def polar(a, b):
    r = math.hypot(a, b)
    return (r, math.atan2(b, a))
def order(a, b):
    if a < b:
        return (a, b)
    return (b, a)
def scale(v, s):
    return v * s
def k(x, y):
    r, th = polar(x, y)
    lo, hi = order(x, y)
    q = scale(r, 2.0)
    return q + th * 10.0 + lo * 100.0 + hi * 1000.0
''', "k")


def _grid(values, n_params):
    mesh = np.meshgrid(*[np.asarray(values, dtype=np.float64)] * n_params, indexing="ij")
    return [m.ravel() for m in mesh]


@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
def test_control_flow(dtype):
    vals = [-3.0, -1.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, 7.0]
    check_elementwise(IF_ELIF, dtype, _grid(vals + [math.inf, -math.inf], 2))
    ns = [-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 9.0]
    xs = [-2.0, -0.5, 0.0, 0.5, 1.0, 3.0]
    cols = [np.repeat(xs, len(ns)), np.tile(ns, len(xs))]
    for km in (WHILE_BREAK_CONTINUE, FOR_NEGATIVE_STEP, FOR_RETURN_BREAK, FOR_VAR_KEEPS_VALUE,
               NESTED_LOOPS):
        check_elementwise(km, dtype, cols)
    check_elementwise(WHILE_RETURN, dtype, [np.array(vals + [1e300, math.inf, 5e-324])])
    check_elementwise(HELPERS, dtype, _grid(vals, 2))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e3, 1e3), st.integers(-4, 12).map(float)), min_size=1, max_size=40))
def test_loops_hypothesis(pairs):
    cols = [np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])]
    for km in (WHILE_BREAK_CONTINUE, FOR_NEGATIVE_STEP, FOR_RETURN_BREAK, NESTED_LOOPS):
        check_elementwise(km, F64, cols)


# expression kernels: (expression in x and y, domain); "any" has non-finite values,
# zeros of both signs and NaN; "finite" leaves out what a Python int would not survive
EXPRESSIONS = [
    ("x and y", "any"), ("x or y", "any"), ("not x", "any"), ("x and y or 2.5", "any"),
    ("(x > 0.0 and y > 0.0) or not (x < y)", "any"),
    ("1.0 if x > 1.0 else (2.0 if x > 0.0 else (3.0 if x == 0.0 else 4.0))", "any"),
    ("x if x > y else y", "any"),
    ("(x > y) + (x >= y) * 2.0 + (x == y) * 4.0 + (x != y) * 8.0 + (x <= y) * 16.0 + (x < y) * 32.0", "any"),
    ("x // y", "any"), ("x % y", "any"), ("(x // y) * y + x % y", "any"),
    ("-x // y", "any"), ("x % -y", "any"), ("x // 3.0 + x % 3.0", "any"),
    ("round(x)", "any"), ("round(x * 0.5)", "any"), ("int(x)", "any"), ("int(x * 0.3)", "any"),
    ("min(x, y)", "any"), ("max(x, y)", "any"), ("min(x, y, 0.25)", "any"), ("max(x, -y, 0.5)", "any"),
    ("abs(x)", "any"), ("float(x)", "any"), ("-x", "any"), ("+x", "any"), ("x ** 2", "any"),
    ("x - y * 2.0 / 3.0", "any"), ("x / y", "any"), ("x ** y", "any"), ("math.pi * x + math.e", "any"),
]


def _domain(kind: str, dtype):
    big = 1e10 if dtype == F64 else 1e4     # exact sums of big and small numbers in T
    base = [-3.5, -2.5, -2.0, -1.5, -1.0, -0.5, -0.0, 0.0, 0.3, 0.5, 1.0, 1.5, 2.0, 2.5, 3.5, 7.0, big]
    if kind == "any":
        base += [math.inf, -math.inf, math.nan]
    return _grid(base, 2)


@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
@pytest.mark.parametrize("expr,domain", EXPRESSIONS, ids=[e for e, _ in EXPRESSIONS])
def test_expressions(expr, domain, dtype):
    km = kernel(f"def k(x, y):\n    return {expr}\n", "k")
    rtol = RTOL[dtype] if "**" not in expr else (1e-13 if dtype == F64 else 1e-4)
    check_elementwise(km, dtype, _domain(domain, dtype), rtol=rtol)


# ---------------------------------------------------------------------------------
# every primitive spelled math.f(...) or as a builtin

def _prims():
    out = []
    for name, rule in rules.RULES.items():
        if rule.spelling in ("math", "builtin"):
            out.append(name)
    return out


# domains chosen where the oracle (Python's math, via s2sad.smath) is defined the IEEE way
_DOMAIN = {
    "acosh": (1.0, 50.0), "atanh": (-0.99, 0.99), "log1p": (-0.99, 50.0), "asin": (-1.0, 1.0),
    "acos": (-1.0, 1.0), "sinh": (-30.0, 30.0), "cosh": (-30.0, 30.0), "exp": (-50.0, 50.0),
    "exp2": (-50.0, 50.0), "expm1": (-20.0, 20.0), "tan": (-1.5, 1.5),
}
_NONFINITE_OK = {"fabs", "sign", "copysign", "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2",
                 "log10", "sin", "cos", "tan", "atan", "atan2", "tanh", "asinh", "erf", "erfc",
                 "hypot", "square", "reciprocal", "abs", "min", "max", "float", "asin", "acos",
                 "fmod", "int", "round"}


@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", _prims())
def test_primitive(name, dtype):
    rule = rules.RULES[name]
    args = ", ".join(("x", "y")[: rule.arity])
    call = f"math.{name}({args})" if rule.spelling == "math" else f"{name}({args})"
    km = kernel(f"def k(x, y):\n    return {call}\n", "k")
    lo, hi = _DOMAIN.get(name, (-8.0, 8.0))
    rng = np.random.default_rng(zlib.crc32(name.encode()))   # (not hash(): it changes per process)
    xs = list(rng.uniform(lo, hi, 120)) + [lo, hi, 0.0, -0.0 if lo < 0 else 0.0, 0.5 * (lo + hi)]
    if name in _NONFINITE_OK:
        xs += [math.inf, -math.inf, math.nan]
    xs = np.array(xs)
    ys = rng.uniform(-8.0, 8.0, len(xs))
    if name == "fmod":
        ys[ys == 0] = 1.0
    if name in ("min", "max", "copysign", "atan2", "hypot"):
        ys[:4] = [0.0, -0.0, 3.0, -3.0]
    # the oracle's math.floor/ceil/trunc return Python ints, which have no -0.0; libm's lgamma
    # and CPython's (the oracle's) are each within an ulp or so of the true value, which is a
    # large relative difference near lgamma's zeros (x = 1, 2 and between negative integers)
    rtol = 1e-11 if name in ("libm_lgamma", "libm_gamma") and dtype == F64 else None
    check_elementwise(km, dtype, [xs, ys], signed_zeros=name not in ("floor", "ceil", "trunc"), rtol=rtol)


def test_every_primitive_is_lowered():
    """No math/builtin primitive in the rules table is missing from the backend."""
    for name in _prims():
        rule = rules.RULES[name]
        args = ", ".join(("x", "y")[: rule.arity])
        call = f"math.{name}({args})" if rule.spelling == "math" else f"{name}({args})"
        km = kernel(f"def k(x, y):\n    return {call}\n", "k")
        L.lower(km, LoopSpec(layouts=("contig", "contig")), F32)


# ---------------------------------------------------------------------------------
# libmvec: vectorised transcendental functions stay within 4 ulp of libm

VECTOR_ISAS, _AVAILABLE = L.vector_math_support()
HAS_LIBMVEC = bool(VECTOR_ISAS)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units in the last place between same-dtype arrays (0 for NaN vs NaN)."""
    itype = np.int64 if a.dtype == np.float64 else np.int32
    lowest = np.int64(np.iinfo(itype).min)

    def ordered(v):                 # monotone map of floats to integers; -0.0 and 0.0 -> 0
        i = v.view(itype).astype(np.int64)
        return np.where(i < 0, lowest - i, i)

    oa, ob = ordered(a), ordered(b)
    same_side = (oa >= 0) == (ob >= 0)
    d = np.where(same_side, np.abs(np.where(same_side, oa - ob, 0)).astype(np.float64),
                 np.abs(oa).astype(np.float64) + np.abs(ob).astype(np.float64))
    d[np.isnan(a) & np.isnan(b)] = 0
    d[np.isnan(a) != np.isnan(b)] = np.inf
    return d


_VEC_DOMAINS = {
    "acosh": st.floats(1.0, 1e300), "atanh": st.floats(-1.0, 1.0), "log1p": st.floats(-1.0, 1e300),
    "asin": st.floats(-1.0, 1.0), "acos": st.floats(-1.0, 1.0), "log": st.floats(0.0, 1e300),
    "log2": st.floats(0.0, 1e300), "log10": st.floats(0.0, 1e300),
}


def _vec_values(name: str, width: int):
    general = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=width)
    small = st.floats(-20.0, 20.0, width=width)
    t = 1e-300 if width == 64 else float(np.float32(1e-37))
    tiny = st.floats(-t, t, width=width)
    parts = [general, small, tiny, st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan])]
    if name in _VEC_DOMAINS:
        d = _VEC_DOMAINS[name]
        if width == 32:
            d = d.map(lambda v: float(np.float32(min(v, 3e38))))
        parts.append(d)
    return st.one_of(*parts)


def _vec_kernel(name: str) -> KernelModule:
    args = "x, y" if name in ("atan2", "hypot", "pow") else "x"
    return kernel(f"def v_{name}(x, y):\n    return math.{name}({args})\n", f"v_{name}")


@pytest.mark.skipif(not HAS_LIBMVEC, reason="glibc's libmvec is not available")
@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(L.LIBMVEC_FUNCTIONS))
def test_libmvec_within_4ulp(name, dtype):
    km = _vec_kernel(name)
    spec = LoopSpec(layouts=("contig", "contig"), value="store")
    vec = L.compile_driver(km, spec, dtype, vector_math=True)
    ref = L.compile_driver(km, spec, dtype, vector_math=False)
    if (name, "double" if dtype == F64 else "float") in L.OWN_BEFORE_LIBMVEC:   # s2sad's own, vectorised
        assert re.search(r"<\d+ x double>", vec.optimized_ir), f"{name} did not vectorise"
        assert not re.search(rf"call \w+ @{name}f?\(", vec.optimized_ir), f"{name} calls libm"
    else:
        assert re.search(r"call <\d+ x \w+> @_ZGV", vec.optimized_ir), f"{name} did not vectorise"
    assert "_ZGV" not in ref.optimized_ir
    width = 64 if dtype == F64 else 32
    values = st.lists(_vec_values(name, width), min_size=1, max_size=64)

    @HYPO
    @given(values, values)
    def check(xs, ys):
        n = 128
        x = np.resize(np.array(xs, dtype=dtype), n)
        y = np.resize(np.array(ys, dtype=dtype), n)
        if name == "pow":           # keep pow's result finite often enough to matter
            with np.errstate(invalid="ignore"):
                y = np.where(np.abs(y) > 50, np.float64(y) % 7, y).astype(dtype)
        a, b = np.empty(n, dtype), np.empty(n, dtype)
        vec.cfunc(1, n, x.ctypes.data, y.ctypes.data, a.ctypes.data)
        ref.cfunc(1, n, x.ctypes.data, y.ctypes.data, b.ctypes.data)
        d = ulp_distance(a, b)
        bad = d > 4
        assert not bad.any(), (name, x[bad][:4], y[bad][:4], a[bad][:4], b[bad][:4])
        z = b == 0
        assert (np.signbit(a[z]) == np.signbit(b[z])).all(), (name, "sign of zero", x[z], a[z], b[z])

    check()


# ---------------------------------------------------------------------------------
# an element's result does not depend on where it falls

def _where_values(name: str, dtype, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n values of x and y for math.`name`, with zeros, infinities, NaN and subnormals."""
    rng = np.random.default_rng(37)
    x = rng.standard_normal(n) * (3.0 if name != "exp" else 30.0)
    if name == "log1p":
        x = np.abs(x) - 0.9
    specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-310 if dtype == F64 else 1e-40, -1e-42,
                700.0, -750.0, 1e30]
    x[3:3 + len(specials)] = specials
    y = rng.standard_normal(n) * 2.0
    with np.errstate(over="ignore"):
        return x.astype(dtype), y.astype(dtype)


@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
@pytest.mark.parametrize("mode", ["libmvec", "s2sad"])
@pytest.mark.parametrize("name", ["tanh", "exp", "log1p", "cbrt", "atan2"])
def test_each_element_gets_the_same_bits_wherever_it_falls(name, mode, dtype):
    """Vector body, vector epilogue or scalar remainder, any array length or offset (so
    any thread split): a driver gives an element the same bits. (37 elements: a vector
    body, then an epilogue or a scalar remainder, at every vector width.)"""
    km = _vec_kernel(name)
    drv = L.compile_driver(km, LoopSpec(layouts=("contig", "contig"), value="store"), dtype, vector_math=mode)
    if (mode == "libmvec" and HAS_LIBMVEC) or name in L.VECMATH_FUNCTIONS:
        assert re.search(r"<\d+ x (double|float)>", drv.optimized_ir), "the loop did not vectorise"
    n = 37
    x, y = _where_values(name, dtype, n)
    itype = np.int64 if dtype == F64 else np.int32

    def run(lo: int, hi: int) -> np.ndarray:
        out = np.full(hi - lo, np.nan, dtype)
        drv.cfunc(1, hi - lo, x[lo:].ctypes.data, y[lo:].ctypes.data, out.ctypes.data)
        return out.view(itype)

    whole = run(0, n)
    alone = np.concatenate([run(k, k + 1) for k in range(n)])
    np.testing.assert_array_equal(alone, whole, err_msg="each element alone")
    for off in (1, 2, 3, 4, 5, 7, 8, 13, 16, 21):
        np.testing.assert_array_equal(run(off, n), whole[off:], err_msg=f"x[{off}:]")
        np.testing.assert_array_equal(run(0, n - off), whole[:n - off], err_msg=f"x[:{n - off}]")
        np.testing.assert_array_equal(run(off // 2, n - off), whole[off // 2:n - off])


def test_libmvec_calls_one_routine_per_function():
    """One ISA per function: scalar code calls lane 0 of the variant the loop calls."""
    spec = LoopSpec(layouts=("contig", "scalar"), value="sum", partials=True, seed="scalar")
    ir = L.lower(SIN, spec, F64)
    assert ir.count("declare <8 x double> @_ZGVeN8v_sin(<8 x double>) #2") == 1
    assert "_ZGVdN4v_sin" not in ir and "_ZGVbN2v_sin" not in ir and "@sin(" not in ir
    assert "%t = call double @libmvec.sin(double %x) #4" in ir
    assert ('#4 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.sin(_ZGVeN8v_sin),'
            '_ZGV_LLVM_N4v_libmvec.sin(libmvec.sin.v4),_ZGV_LLVM_N2v_libmvec.sin(libmvec.sin.v2)" }') in ir
    assert "%sin.wide = call <8 x double> @_ZGVeN8v_sin(<8 x double> %x.wide)" in ir
    # the narrower lane counts (remainder loops) are the same routine on repeated lanes
    assert "define internal <4 x double> @libmvec.sin.v4(<4 x double> %x) #3" in ir
    assert ("@llvm.compiler.used = appending global [3 x ptr] [ptr @libmvec.sin, ptr @libmvec.sin.v4, ptr @libmvec.sin.v2]"
            in ir)
    assert 'attributes #1 = { nounwind "prefer-vector-width"="512" }' in ir
    avx2 = L.lower_module(SIN, spec, F64, vector_isas=("b", "d"))
    assert "_ZGVdN4v_libmvec.sin(_ZGVdN4v_sin)" in avx2 and "_ZGVe" not in avx2
    # without libmvec: s2sad's own tanh, inlined; libm only where it has none
    own = L.lower_module(TANH, spec, F64, vector_isas=())
    assert "define internal double @s2sad.tanh(double %x) #0" in own
    assert "%t = call double @s2sad.tanh(double %x)" in own
    assert "_ZGV" not in own and "@tanh(" not in own and "prefer-vector-width" not in own
    scalar = L.lower_module(TANH, spec, F64, vector_isas=(), own_math=False)
    assert "%t = call double @tanh(double %x)" in scalar and "s2sad.tanh" not in scalar
    if HAS_LIBMVEC:
        opt = L.compile_driver(SIN, spec, F64, vector_math=True).optimized_ir
        assert len(set(re.findall(r"@_ZGV\w+", opt))) == 1, "one routine, in the loop and in scalar code"


def test_own_vector_math_is_wired_like_a_libmvec_variant():
    """float64 tanh (OWN_BEFORE_LIBMVEC): s2sad's own vector function on the widest lanes,
    called by the vectoriser, lane 0 of it in scalar code, inlined into the loop after
    the vectoriser ran; the same routine everywhere."""
    assert ("tanh", "double") in L.OWN_BEFORE_LIBMVEC
    spec = LoopSpec(layouts=("contig", "scalar"), value="sum", partials=True, seed="scalar")
    ir = L.lower(TANH, spec, F64)
    assert "%t = call double @vecmath.tanh(double %x) #4" in ir
    assert ('"vector-function-abi-variant"="_ZGV_LLVM_N8v_vecmath.tanh(s2sad.tanh.v8),'
            '_ZGV_LLVM_N4v_vecmath.tanh(vecmath.tanh.v4),_ZGV_LLVM_N2v_vecmath.tanh(vecmath.tanh.v2)"') in ir
    assert "define internal <8 x double> @s2sad.tanh.v8(<8 x double> %x) #0" in ir
    assert "%tanh.wide = call <8 x double> @s2sad.tanh.v8(<8 x double> %x.wide)" in ir
    assert "ptr @s2sad.tanh.v8" in ir.split("@llvm.compiler.used")[1].split("\n")[0]
    assert "_ZGVeN8v_tanh" not in ir
    avx2 = L.lower_module(TANH, spec, F64, vector_isas=("b", "d"))
    assert "@s2sad.tanh.v4(" in avx2 and "s2sad.tanh.v8" not in avx2
    if HAS_LIBMVEC:
        opt = L.compile_driver(TANH, spec, F64, vector_math=True).optimized_ir
        driver = opt[opt.index("define void @"):]
        loop = driver[driver.index("vector.body:"):]
        assert "llvm.fma.v8f64" in loop and "call <8 x double> @s2sad.tanh" not in driver, driver
        got, want = run_both(TANH, spec, F64, 3, 101)
        assert_same_results(got, want, F64)


# ---------------------------------------------------------------------------------
# the IR: deterministic, readable, vectorised

def test_ir_is_deterministic_and_host_independent():
    spec = LoopSpec(layouts=("contig", "strided"), value="sum", partials=True, seed="array",
                    tangents=True)
    a = L.lower(TANH, spec, F64)
    b = L.lower(TANH, spec, F64)
    assert a == b
    assert "target triple" not in a and "datalayout" not in a
    name = L.driver_name(TANH, spec, F64)
    assert name == "f__cx_sum_grada_jvp_f64"
    sig = re.search(rf"define void @{name}\((.*)\) #1", a).group(1)
    assert sig == ("i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %y, i64 %y.so, i64 %y.si, "
                   "ptr noalias %acc, ptr noalias %seed, ptr noalias %x_bar, ptr noalias %y_bar, "
                   "i64 %y_bar.so, i64 %y_bar.si, ptr noalias %x_dot, ptr noalias %y_dot, "
                   "i64 %y_dot.so, i64 %y_dot.si, ptr noalias %out_dot")
    # the user's names name the SSA values; helper functions are internal and alwaysinline
    assert "%t = call double @vecmath.tanh(double %x) #4" in a
    assert "define internal double @f(double %x, double %y) #0" in a
    assert "attributes #0 = { alwaysinline nounwind }" in a
    # fast-math flags on the accumulators only
    assert len(re.findall(r"reassoc", a)) == 1
    assert "fadd reassoc nsz double %value.sum.i, %value" in a
    f32 = L.lower(TANH, spec, F32)
    assert "call float @libmvec.tanhf(float %x)" in f32 and "_ZGVeN16v_tanhf" in f32


def test_compile_cache_and_abi():
    spec = LoopSpec(layouts=("contig", "scalar"), value="store")
    d1 = L.compile_driver(TANH, spec, F64)
    d2 = L.compile_driver(TANH, spec, F64)
    assert d1 is d2
    assert d1.address == ctypes.cast(d1.cfunc, ctypes.c_void_p).value
    assert d1.argtypes == (ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_double, ctypes.c_void_p)
    assert d1.ir == L.lower_module(TANH, spec, F64, vector_isas=VECTOR_ISAS, available=_AVAILABLE)
    d3 = L.compile_driver(TANH, spec, F32)
    assert d3 is not d1 and d3.argtypes[3] is ctypes.c_float
    x = np.linspace(-1, 1, 1000)
    out = np.empty_like(x)
    d1.cfunc(1, 1000, x.ctypes.data, 1.5, out.ctypes.data)
    np.testing.assert_allclose(out, (np.tanh(x) + 2.0) * 1.5, rtol=1e-15)


def _has_avx2() -> bool:
    import llvmlite.binding as llvm
    return bool(llvm.get_host_cpu_features().get("avx2"))


@pytest.mark.skipif(not _has_avx2(), reason="no AVX2 on this CPU")
@pytest.mark.parametrize("body,dual", [
    ("abs(x)", "(abs(x), math.sign(x))"),
    ("x * x * 3.0 + x * 2.0 - 1.0", "(x * x * 3.0 + x * 2.0 - 1.0, 6.0 * x + 2.0)"),
])
def test_contig_dual_sum_vectorises(body, dual):
    km = kernel(f"def p(x):\n    return {body}\ndef p__dual(x):\n    return {dual}\n", "p",
                dual="p__dual", active=("x",))
    spec = LoopSpec(layouts=("contig",), value="sum", partials=True, seed="scalar")
    ir = L.compile_driver(km, spec, F64).optimized_ir
    assert re.search(r"<(4|8) x double>", ir), ir
    got, want = run_both(km, spec, F64, 3, 101)
    assert_same_results(got, want, F64)


@pytest.mark.skipif(not (HAS_LIBMVEC and "d" in VECTOR_ISAS), reason="no libmvec AVX2 variants here")
def test_tanh_dual_sum_vectorises():
    """float64 tanh is s2sad's own (inlined into the vector loop), float32 libmvec's tanhf."""
    spec = LoopSpec(layouts=("contig", "scalar"), value="sum", partials=True, seed="scalar")
    ir = L.compile_driver(TANH, spec, F64).optimized_ir
    assert re.search(r"<(4|8) x double>", ir) and not re.search(r"call \w+ @tanh\(", ir)
    ir32 = L.compile_driver(TANH, spec, F32).optimized_ir
    assert re.search(r"call <(8|16) x float> @_ZGV[de]N(8|16)v_tanhf", ir32)


def test_unsupported_call_is_reported():
    from s2sad.errors import BackendUnavailableError
    km = kernel("def k(x):\n    return math.gamma(x)\n", "k")
    with pytest.raises(BackendUnavailableError):
        L.lower(km, LoopSpec(layouts=("contig",)), F64)


def test_names_that_clash():
    """User names equal to libm symbols, LLVM words or non-ASCII identifiers still compile."""
    km = kernel('''
    def exp(x, y):
        return x + y
    def tanh(α, β):
        i = exp(α, β)
        o = i * 2.0
        if o > 1.0:
            o = o - 1.0
        return math.exp(o) + math.tanh(α)
    ''', "tanh")
    spec = LoopSpec(layouts=("contig", "scalar"), value="store")
    check_elementwise(km, F64, [np.linspace(-1, 1, 17), np.full(17, 0.25)])
    L.compile_driver(km, spec, F32)


def _record_drivers(monkeypatch) -> list:
    """The drivers the runtime asks llvm_jit for from now on (in this test), in order."""
    from s2sad.codegen import llvm_jit

    seen = []
    driver = llvm_jit.driver

    def recording(*args, **kw):
        seen.append(driver(*args, **kw))
        return seen[-1]

    monkeypatch.setattr(llvm_jit, "driver", recording)
    return seen


def _without_python_entry(ir: str) -> str:
    """The module's IR without the driver's Python entry (llvm_entry), which reads
    Python objects, not the kernel's data."""
    return "".join(f for f in ir.split("\ndefine ") if "__py(" not in f.split("\n")[0])


def _grad_sum_abs(x):
    return np.sum(np.abs(x))


def _grad_sum_gt(x):
    return np.sum(x > 0.1)


@pytest.mark.skipif(not _has_avx2(), reason="no AVX2 on this CPU")
@pytest.mark.parametrize("loss", [_grad_sum_abs, _grad_sum_gt], ids=["abs", "gt"])
def test_grad_of_memory_bound_sums_vectorises(loss, monkeypatch):
    """Through s2sad.value_and_grad: the fused value + gradient + sum driver runs SIMD,
    the sum carried in vector registers; through s2sad.grad, the driver has no value
    (LoopSpec value "none") and still runs SIMD."""
    import s2sad

    seen = _record_drivers(monkeypatch)
    fresh = type(loss)(loss.__code__, loss.__globals__, loss.__name__)    # a plan of its own
    x = np.linspace(-1.0, 1.0, 101)
    v, g = s2sad.value_and_grad(fresh)(x)
    # abs'(0) is 1, JAX's convention (README "Numerical conventions"); x[50] is 0.0
    want = np.where(x >= 0.0, 1.0, -1.0) if loss is _grad_sum_abs else np.zeros_like(x)
    np.testing.assert_array_equal(g, want)
    (drv,) = [d for d in seen if d.spec.value == "sum" and d.spec.partials]
    ir = drv.optimized_ir
    assert re.search(r"load <(4|8|16) x double>", ir), ir
    assert re.search(r"fadd reassoc nsz <(4|8|16) x double>", ir), ir
    seen.clear()
    np.testing.assert_array_equal(s2sad.grad(fresh)(x), want)
    (drv,) = seen
    assert drv.spec.value == "none" and drv.spec.partials
    assert re.search(r"store <(4|8|16) x double>", drv.optimized_ir), drv.optimized_ir
    if loss is _grad_sum_gt:   # a zero partial: without the value to sum, x is not even read
        assert not re.search(r"load .*double", _without_python_entry(drv.optimized_ir)), drv.optimized_ir


def test_math_of_a_loop_invariant_value_compiles():
    """tanh of a value that does not depend on the element: the interprocedural passes
    must not rewrite the libmvec lane wrapper (the vectoriser then emitted invalid IR
    and LLVM aborted the process)."""
    import math as _math
    import s2sad

    def const_tanh(a):
        c = -2.0 if 1.5 > 1.0 else 0.5
        return _math.tanh(c) + _math.exp(0.25) * 0.0

    x = np.linspace(-1.0, 1.0, 37)
    np.testing.assert_array_equal(s2sad.broadcast(const_tanh, x, backend="llvm"), np.full(37, _math.tanh(-2.0)))


def _grad_sum_quotient(x, y):
    return np.sum(x / y)


def test_a_quotient_and_its_partials_divide_twice(monkeypatch):
    """d(x/y) = (1/y) dx - (x/y)(1/y) dy: the rules table writes the reciprocal in both
    partials, so the optimised kernel has one reciprocal per quotient (divisions are
    what a Newton iteration spends its time on)."""
    import s2sad

    seen = _record_drivers(monkeypatch)
    fresh = type(_grad_sum_quotient)(_grad_sum_quotient.__code__, _grad_sum_quotient.__globals__,
                                      _grad_sum_quotient.__name__)
    x, y = np.linspace(-1.0, 1.0, 101), np.linspace(0.5, 2.0, 101)
    gx, gy = s2sad.grad(fresh, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 1.0 / y, rtol=1e-15)
    np.testing.assert_allclose(gy, -x / y ** 2, rtol=1e-14)
    (drv,) = [d for d in seen if d.spec.partials]
    kernel_ir = _without_python_entry(drv.optimized_ir)
    # per divisor: the quotient and the reciprocal (before, a third: out / y)
    divisors = re.findall(r"= fdiv (?:fast |arcp |contract )*(?:<[^>]*>|double) .*, (%[\w.]+)$", kernel_ir, re.M)
    per_divisor = {d: divisors.count(d) for d in divisors}
    assert per_divisor and max(per_divisor.values()) <= 2, drv.optimized_ir

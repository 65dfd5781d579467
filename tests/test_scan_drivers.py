"""Scan drivers (kernel.py, "Scan drivers"): sequential drivers of state-passing entries.

Kernels are hand-written in the core scalar language: an entry f(p1..pn, s1..sk) ->
(value, s1'..sk') and its dual w.r.t. the active params then the states, returning
(value, s1'..sk', d value/d w..., d s1'/d w..., ..., d sk'/d w...). The llvm scan driver
is compared with `run_scan`, the python reference, and run_scan's gradients with
central finite differences of a plain Python loop over the elements.
"""
from __future__ import annotations

import ctypes
import math
import re

import numpy as np
import pytest

from s2sad.codegen import llvm as L
from s2sad.codegen.python import compile_module, run_scan
from s2sad.kernel import KernelModule, ScanSpec
from s2sad.passes.scansplit import scan_plan

from test_llvm_backend import STRIDED_KINDS, Flat, Operand, kernel

F64, F32 = np.float64, np.float32
RTOL = {F64: 1e-13, F32: 1e-5}


def scan_kernel(src: str, entry: str, n_state: int, active: tuple) -> KernelModule:
    """`entry` and `entry__dual`; kmod.active = the active params, then every state."""
    km = kernel(src, entry, dual=entry + "__dual")
    km.active = tuple(active) + km.params[len(km.params) - n_state:]
    return km


# the running sum: value and state are both s + x
RUNSUM = scan_kernel('''
def f(x, s):
    s = s + x
    return (s, s)
def f__dual(x, s):
    s2 = s + x
    return (s2, s2, 1.0, 1.0, 1.0, 1.0)
''', "f", 1, ("x",))

# two states, a counter n and a running product p; y enters the value only, c is inactive
TWO = scan_kernel('''
def g(x, y, c, n, p):
    n2 = n + 1.0
    p2 = p * x
    return (p2 * n2 * c + y, n2, p2)
def g__dual(x, y, c, n, p):
    n2 = n + 1.0
    p2 = p * x
    return (p2 * n2 * c + y, n2, p2,
            1.0, p * n2 * c, p2 * c, x * n2 * c,
            0.0, 0.0, 1.0, 0.0,
            0.0, p, 0.0, x)
''', "g", 2, ("y", "x"))

# a state fed back through tanh, with a weight w; a helper computes the dual's partials
TANH = scan_kernel('''
def h(x, w, s):
    s = math.tanh(s * w + x)
    return (s * x, s)
def h__parts(x, w, s):
    t = math.tanh(s * w + x)
    dt = 1.0 - t * t
    return (t * x, t, dt * x + t, dt * s * x, dt * w * x, dt, dt * s, dt * w)
def h__dual(x, w, s):
    return h__parts(x, w, s)
''', "h", 1, ("x", "w"))

# a state update with a branch and a loop: clipped accumulation, squared value
CLIP = scan_kernel('''
def r(x, s):
    s2 = s + x
    if s2 > 1.5:
        s2 = s2 * 0.5
    v = 0.0
    for j in range(0, 2, 1):
        v = v + s2 * x
    return (v, s2)
def r__dual(x, s):
    s2 = s + x
    h = 1.0
    if s2 > 1.5:
        s2 = s2 * 0.5
        h = 0.5
    return (2.0 * s2 * x, s2, 2.0 * (h * x + s2), 2.0 * h * x, h, h)
''', "r", 1, ("x",))

# kernel -> value ranges of its non-state params and of its initial state
# a heavy state-free part (split into a vectorised pre-pass) and partials that do not
# read the state (no tape), through a helper
HEAVY = scan_kernel('''
def part(x, c):
    return math.tanh(x) * c
def f(x, c, s):
    t = part(x, c)
    s = s + t
    return (s * 0.5 + t, s)
def part__dual(x, c):
    th = math.tanh(x)
    return (th * c, (1.0 - th * th) * c, th)
def f__dual(x, c, s):
    t, t_x, t_c = part__dual(x, c)
    s2 = s + t
    return (s2 * 0.5 + t, s2, 0.5 * t_x + t_x, 0.5 * t_c + t_c, 0.5, t_x, t_c, 1.0)
''', "f", 1, ("x", "c"))


SCANS = {
    "runsum": (RUNSUM, [(0.1, 1.0)], (0.5, 1.0)),
    "two": (TWO, [(0.8, 1.25), (-1.0, 1.0), (0.5, 1.5)], (0.5, 1.0)),
    "tanh": (TANH, [(-1.0, 1.0), (0.3, 0.9)], (-0.5, 0.5)),
    "clip": (CLIP, [(-0.5, 1.0)], (0.0, 1.0)),
    "heavy": (HEAVY, [(-1.0, 1.0), (0.5, 1.5)], (-0.5, 0.5)),
}


# ---------------------------------------------------------------------------------
# running a scan both ways

def run_both(kmod: KernelModule, spec: ScanSpec, dtype, no: int, ni: int, ranges, s_range,
             seed: int = 0):
    """The llvm driver and run_scan on the same inputs; (got, want, the buffers before)."""
    rng = np.random.default_rng(seed)
    k = spec.n_state
    names = kmod.params[:len(spec.layouts)]
    active = kmod.active[:len(kmod.active) - k] if spec.grads else ()
    active_idx = tuple(names.index(a) for a in active)
    kinds = [STRIDED_KINDS[(seed + j) % len(STRIDED_KINDS)] for j in range(2 * len(names))]
    params = [Operand(lay, dtype, no, ni, lambda m, r=r: rng.uniform(*r, m), kinds[j])
              for j, (lay, r) in enumerate(zip(spec.layouts, ranges))]
    n = no * ni
    state0 = rng.uniform(*s_range, k).astype(dtype)
    sbar0 = rng.uniform(-1.0, 1.0, k).astype(dtype)
    seed_op = None
    if spec.grads:
        seed_op = (Operand("scalar", dtype, no, ni, lambda m: [0.75]) if spec.seed == "scalar"
                   else Operand("contig", dtype, no, ni, lambda m: rng.uniform(0.5, 1.5, m)))
    grads = []
    for j, a in enumerate(active_idx):
        lay = spec.layouts[a]
        if lay == "scalar":     # a sum: double for every dtype (kernel.py)
            g = Operand("contig", np.float64, 1, 1, lambda m: [0.5])
            g.layout = "gsum"
        else:
            g = Operand(lay, dtype, no, ni, lambda m: rng.uniform(0.0, 1.0, m), kinds[len(names) + j])
        grads.append(g)

    def fresh():
        return dict(out=np.full(max(1, n), -7.0, dtype=dtype), acc=np.array([0.25], dtype=np.float64),
                    state=state0.copy(), state_bar=sbar0.copy(), grads=[g.buf.copy() for g in grads],
                    tape=np.full(max(1, n * k), -7.0, dtype=dtype))

    # compiled
    drv = L.compile_driver(kmod, spec, dtype)
    got = fresh()
    args: list = [no, ni]
    for p in params:
        args += p.c_args()
    args.append(got["state"].ctypes.data)
    if spec.value in ("store", "sum"):
        args.append(got["out" if spec.value == "store" else "acc"].ctypes.data)
    if spec.grads:
        args += seed_op.c_args()
        for g, b in zip(grads, got["grads"]):
            args += [b.ctypes.data] if g.layout == "gsum" else g.c_args(b)
        args += [got["state_bar"].ctypes.data, got["tape"].ctypes.data]
    assert len(args) == len(drv.argtypes)
    drv.cfunc(*args)

    # reference
    fns = compile_module(kmod)
    want = fresh()
    py_grads = [Flat(b) if g.layout == "gsum" else g.py_arg(b) for g, b in zip(grads, want["grads"])]
    seed_arg = None
    if spec.grads:
        seed_arg = seed_op.value if spec.seed == "scalar" else Flat(seed_op.buf)
    run_scan(fns[kmod.entry], fns[kmod.dual_entry], spec, active_idx, no, ni, [p.py_arg() for p in params],
             want["state"], out=want["out"], acc=want["acc"], seed=seed_arg, grads=py_grads,
             state_bar=want["state_bar"])
    return got, want, fresh()


def assert_same(got, want, dtype, what=""):
    """Values are O(1); an absolute floor of rtol covers values that nearly cancel."""
    rtol = RTOL[dtype]
    for key in ("out", "acc", "state", "state_bar"):
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=rtol, err_msg=f"{what} {key}")
    for j, (a, b) in enumerate(zip(got["grads"], want["grads"])):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, err_msg=f"{what} grad {j}")


FLAVOURS = [
    dict(value="store"),
    dict(value="sum"),
    dict(value="none"),
    dict(value="sum", grads=True, seed="scalar"),
    dict(value="store", grads=True, seed="array"),
    dict(value="none", grads=True, seed="array"),
    dict(value="none", grads=True, seed="scalar"),
]
LAYOUTS = ("contig", "strided", "scalar")


def layout_choices(n: int) -> list[tuple[str, ...]]:
    """Three rotations of LAYOUTS over n params: each param takes every layout once."""
    return [tuple(LAYOUTS[(r + j) % 3] for j in range(n)) for r in range(3)]


# ---------------------------------------------------------------------------------
# llvm against run_scan

@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", list(SCANS))
def test_scan_flavours(name, dtype):
    kmod, ranges, s_range = SCANS[name]
    n_state = len(kmod.params) - len(ranges)
    for lay in layout_choices(len(ranges)):
        for f, fl in enumerate(FLAVOURS):
            spec = ScanSpec(layouts=lay, n_state=n_state, **fl)
            for s, (no, ni) in enumerate([(3, 13), (2, 37)]):
                got, want, _ = run_both(kmod, spec, dtype, no, ni, ranges, s_range, seed=s + 7 * f)
                assert_same(got, want, dtype, f"{name} {spec.tag()} {(no, ni)}")


@pytest.mark.parametrize("shape", [(0, 5), (4, 0), (1, 1), (1, 67), (67, 1)])
def test_scan_edge_sizes(shape):
    kmod, ranges, s_range = SCANS["two"]
    for lay in layout_choices(3)[:2]:
        spec = ScanSpec(layouts=lay, n_state=2, value="store", grads=True, seed="array")
        got, want, before = run_both(kmod, spec, F64, *shape, ranges, s_range, seed=3)
        assert_same(got, want, F64, str(shape))
        if shape[0] * shape[1] == 0:    # no elements: the state and its adjoint pass through
            np.testing.assert_array_equal(got["state"], before["state"])
            np.testing.assert_array_equal(got["state_bar"], before["state_bar"])


@pytest.mark.parametrize("shape", [(1, 513), (3, 200), (257, 1)])
@pytest.mark.parametrize("name", ["heavy", "tanh", "runsum"])
def test_scan_many_blocks(name, shape):
    """More elements than a block (and not a multiple of one): the pre-pass, the mirror
    blocks of the tape-free sweep, the tape's blocks; without transcendentals (whose last
    bits are libm's vs libmvec's) the state bitwise as run_scan's."""
    kmod, ranges, s_range = SCANS[name]
    n_state = len(kmod.params) - len(ranges)
    for f, fl in enumerate(FLAVOURS):
        spec = ScanSpec(layouts=("contig", "scalar", "strided")[:len(ranges)], n_state=n_state, **fl)
        got, want, _ = run_both(kmod, spec, F64, *shape, ranges, s_range, seed=f)
        assert_same(got, want, F64, f"{name} {spec.tag()} {shape}")
        if name == "runsum":
            np.testing.assert_array_equal(got["state"], want["state"])


def test_heavy_is_split_without_tape():
    plan = scan_plan(HEAVY, 1, True)
    assert plan.primal.pre is not None and plan.dual.pre is not None and not plan.tape
    assert scan_plan(SCANS["tanh"][0], 1, True).tape     # its partials read the state
    ir = L.lower(HEAVY, ScanSpec(layouts=("contig", "scalar"), n_state=1, value="sum", grads=True,
                                 seed="scalar"), F64)
    assert "__scan_pre" in ir and "alloca" in ir and "tape.ptr" not in ir


def test_runsum_closed_form():
    """s_e = s0 + x_0 + ... + x_e; the flattened dual order and the adjoint of the state."""
    n = 10
    x = np.arange(1.0, n + 1)
    spec = ScanSpec(layouts=("contig",), n_state=1, value="sum", grads=True, seed="scalar")
    drv = L.compile_driver(RUNSUM, spec, F64)
    state, acc, g = np.array([0.5]), np.zeros(1), np.full(n, -1.0)
    state_bar, tape = np.array([2.0]), np.zeros(n)
    drv.cfunc(1, n, x.ctypes.data, state.ctypes.data, acc.ctypes.data, 3.0, g.ctypes.data,
              state_bar.ctypes.data, tape.ctypes.data)
    s = 0.5 + np.cumsum(x)
    assert state[0] == s[-1]
    assert acc[0] == s.sum()
    # the partials of a running sum do not depend on the state: no tape (scansplit.scan_plan)
    assert not scan_plan(RUNSUM, 1, True).tape
    np.testing.assert_array_equal(tape, np.zeros(n))
    # x_e is in the values s_e..s_{n-1} (seed 3 each) and in the final state (adjoint 2)
    np.testing.assert_array_equal(g, 3.0 * (n - np.arange(n)) + 2.0)
    assert state_bar[0] == 3.0 * n + 2.0


def test_tape_and_row_major_order():
    """The state threads through the rows in order (o outer, i inner), whatever the strides."""
    kmod, ranges, s_range = SCANS["tanh"]
    no, ni = 4, 5
    spec = ScanSpec(layouts=("strided", "scalar"), n_state=1, value="store", grads=True, seed="scalar")
    xs = np.linspace(-1.0, 1.0, no * ni)
    buf = xs.reshape(no, ni).T.copy().ravel()        # a transposed view: so = 1, si = no
    state, out, g, sb, tape = np.array([0.25]), np.zeros(no * ni), np.zeros(no * ni), np.zeros(1), np.zeros(no * ni)
    drv = L.compile_driver(kmod, spec, F64)
    drv.cfunc(no, ni, buf.ctypes.data, 1, no, 0.5, state.ctypes.data, out.ctypes.data, 1.0,
              g.ctypes.data, 1, no, np.zeros(1).ctypes.data, sb.ctypes.data, tape.ctypes.data)
    s, states, values = 0.25, [], []
    for x in xs:                                     # the plain loop, in element order
        states.append(s)
        s = math.tanh(s * 0.5 + x)
        values.append(s * x)
    np.testing.assert_allclose(tape, states, rtol=1e-15)
    np.testing.assert_allclose(out, values, rtol=1e-15)
    assert state[0] == pytest.approx(s, rel=1e-15)


# ---------------------------------------------------------------------------------
# run_scan against finite differences of a plain loop

def plain_loss(kmod: KernelModule, layouts, geometry, bufs, scalars, s0, seeds, sbar, no, ni) -> float:
    """sum_e seed_e * value_e + sbar . s_final, by a Python loop over the elements."""
    ns: dict = {"math": math}
    exec(compile(kmod.source(), "<plain>", "exec"), ns)
    f = ns[kmod.entry]
    s = list(s0)
    total = 0.0
    for o in range(no):
        for i in range(ni):
            args = []
            for j, lay in enumerate(layouts):
                if lay == "scalar":
                    args.append(scalars[j])
                else:
                    off, so, si = geometry[j]
                    args.append(float(bufs[j][off + o * so + i * si]))
            res = f(*args, *s)
            total += seeds[o * ni + i] * res[0]
            s = list(res[1:])
    return total + sum(b * v for b, v in zip(sbar, s))


@pytest.mark.parametrize("name,layouts,kinds", [
    ("runsum", ("contig",), ("padded",)),
    ("runsum", ("strided",), ("bcast_outer",)),
    ("two", ("strided", "scalar", "contig"), ("reversed", "padded", "padded")),
    ("two", ("contig", "strided", "scalar"), ("padded", "bcast_inner", "padded")),
    ("tanh", ("contig", "scalar"), ("padded", "padded")),
    ("tanh", ("strided", "strided"), ("transposed", "bcast_all")),
    ("clip", ("strided",), ("padded",)),
])
def test_gradients_match_finite_differences(name, layouts, kinds):
    kmod, ranges, s_range = SCANS[name]
    k = len(kmod.params) - len(layouts)
    no, ni = 2, 4
    rng = np.random.default_rng(42)
    names = kmod.params[:len(layouts)]
    active = kmod.active[:len(kmod.active) - k]
    active_idx = tuple(names.index(a) for a in active)
    ops = [Operand(lay, F64, no, ni, lambda m, r=r: rng.uniform(*r, m), kind)
           for lay, r, kind in zip(layouts, ranges, kinds)]
    s0 = rng.uniform(*s_range, k)
    seeds = rng.uniform(0.5, 1.5, no * ni)
    sbar = rng.uniform(-1.0, 1.0, k)

    # run_scan's gradients: every gradient starts at zero
    grads = []
    for a in active_idx:
        grads.append(np.zeros(1) if layouts[a] == "scalar" else np.zeros_like(ops[a].buf))
    py_grads = [g if layouts[a] == "scalar" else (Flat(g, ops[a].off), ops[a].so, ops[a].si)
                for a, g in zip(active_idx, grads)]
    fns = compile_module(kmod)
    state, state_bar = s0.copy(), sbar.copy()
    spec = ScanSpec(layouts=layouts, n_state=k, value="none", grads=True, seed="array")
    run_scan(fns[kmod.entry], fns[kmod.dual_entry], spec, active_idx, no, ni, [op.py_arg() for op in ops],
             state, seed=seeds, grads=py_grads, state_bar=state_bar)

    geometry = [None if op.layout == "scalar" else (op.off, op.so, op.si) for op in ops]
    bufs = [None if op.layout == "scalar" else op.buf for op in ops]
    scalars = [op.value if op.layout == "scalar" else None for op in ops]

    def loss(bufs=bufs, scalars=scalars, s0=s0):
        return plain_loss(kmod, layouts, geometry, bufs, scalars, s0, seeds, sbar, no, ni)

    h = 1e-6

    def fd(perturb) -> float:
        return (loss(**perturb(h)) - loss(**perturb(-h))) / (2 * h)

    for a, g in zip(active_idx, grads):
        if layouts[a] == "scalar":
            want = fd(lambda d: dict(scalars=[v + d if j == a else v for j, v in enumerate(scalars)]))
            np.testing.assert_allclose(g[0], want, rtol=1e-6, atol=1e-7, err_msg=f"{name} d/d{names[a]}")
            continue
        want = np.zeros_like(g)
        for idx in range(len(g)):
            def perturb(d, idx=idx):
                b = bufs[a].copy()
                b[idx] += d
                return dict(bufs=[b if j == a else v for j, v in enumerate(bufs)])
            want[idx] = fd(perturb)
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7, err_msg=f"{name} d/d{names[a]}")
    for j in range(k):
        want = fd(lambda d: dict(s0=s0 + d * (np.arange(k) == j)))
        np.testing.assert_allclose(state_bar[j], want, rtol=1e-6, atol=1e-7,
                                   err_msg=f"{name} d/d initial {kmod.params[len(layouts) + j]}")
    np.testing.assert_allclose(state, plain_final_state(kmod, ops, layouts, s0, no, ni), rtol=1e-14)


def plain_final_state(kmod, ops, layouts, s0, no, ni):
    fns = compile_module(kmod)
    s = list(s0)
    for o in range(no):
        for i in range(ni):
            args = [op.value if lay == "scalar" else op.buf[op.off + o * op.so + i * op.si]
                    for op, lay in zip(ops, layouts)]
            s = list(fns[kmod.entry](*args, *s)[1:])
    return s


# ---------------------------------------------------------------------------------
# the ABI, the IR, errors

def test_scan_abi_and_ir():
    spec = ScanSpec(layouts=("strided", "scalar", "contig"), n_state=2, value="sum", grads=True, seed="array")
    name = L.driver_name(TWO, spec, F64)
    assert name == "g__scan_xsc_s2_sum_grada_f64"
    ir = L.lower(TWO, spec, F64)
    assert ir == L.lower(TWO, spec, F64)
    sig = re.search(rf"define void @{name}\((.*)\) #1", ir).group(1)
    assert sig == ("i64 %n_outer, i64 %n_inner, ptr noalias %x, i64 %x.so, i64 %x.si, double %y, "
                   "ptr noalias %c, ptr noalias %state, ptr noalias %acc, ptr noalias %seed, "
                   "ptr noalias %y_bar, ptr noalias %x_bar, i64 %x_bar.so, i64 %x_bar.si, "
                   "ptr noalias %state_bar, ptr noalias %tape")
    i64, ptr, T = ctypes.c_int64, ctypes.c_void_p, ctypes.c_double
    drv = L.compile_driver(TWO, spec, F64)
    assert drv.argtypes == (i64, i64, ptr, i64, i64, T, ptr, ptr, ptr, ptr, ptr, ptr, i64, i64, ptr, ptr)
    assert L.compile_driver(TWO, spec, F64) is drv
    plain = ScanSpec(layouts=("contig", "scalar", "contig"), n_state=2, value="store")
    assert L.compile_driver(TWO, plain, F32).argtypes == (i64, i64, ptr, ctypes.c_float, ptr, ptr, ptr)
    # the primal runs forwards, the dual backwards; the state lives in registers
    assert "call { double, double, double } @g(" in ir
    assert re.search(r"call \{ (double, ){14}double \} @g__dual\(", ir)
    assert "alloca" not in ir.split(f"@{name}(")[1]


def test_scan_lowering_errors():
    spec = ScanSpec(layouts=("contig",), n_state=1, grads=True, seed="scalar")
    bad_order = scan_kernel(RUNSUM.source(), "f", 1, ())
    bad_order.active = ("s", "x")
    with pytest.raises(L.LoweringError, match="states"):
        L.lower(bad_order, spec, F64)
    short = kernel('''
    def f(x, s):
        return (s + x, s + x)
    def f__dual(x, s):
        return (s + x, s + x, 1.0, 1.0)
    ''', "f", dual="f__dual", active=("x", "s"))
    with pytest.raises(L.LoweringError, match="returns 4 values"):
        L.lower(short, spec, F64)
    with pytest.raises(L.LoweringError, match="layouts"):
        L.lower(RUNSUM, ScanSpec(layouts=("contig", "contig"), n_state=1), F64)
    with pytest.raises(L.LoweringError, match="states are due"):
        L.lower(kernel("def f(x, s):\n    return s + x\n", "f"), ScanSpec(layouts=("contig",), n_state=1), F64)

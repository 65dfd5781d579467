"""The CUDA backend: generated source compiles (NVRTC + ptxas) and computes what the
python backend's `run_driver` computes (`run_scan` for scan drivers), run on the CPU
through g++ host emulation over several grid shapes. Kernel modules are written by hand
in the core scalar language (and, for scans, also made by s2sad's passes)."""
from __future__ import annotations

import functools
import re

import gast
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s2sad.backends import cuda_host, cuda_launch
from s2sad.codegen import cuda
from s2sad.codegen import python as pyback
from s2sad.errors import BackendUnavailableError
from s2sad.kernel import KernelModule, LoopSpec, ScanSpec, active_indices

SHAPES = [(1, 1), (3, 32), (7, 64)]     # (grid, block)
N_OUTER, N_INNER = 5, 101               # 505 elements > 7 * 64 threads: the grid-stride loop wraps

# name -> (source, entry, params, dual entry, active, domain per param: list of intervals)
MODULES: dict[str, tuple] = {
    "tanh": ('''
def f(x, y):
    t = math.tanh(x)
    return t * y

def f__dual(x, y):
    t = math.tanh(x)
    return (t * y, (1.0 - t * t) * y, t)
''', "f", ("x", "y"), "f__dual", ("x", "y"), [[(-2.0, 2.0)], [(-3.0, 3.0)]]),

    "cbrt": ('''
def f(x):
    return math.cbrt(x)

def f__dual(x):
    out = math.cbrt(x)
    return (out, 1.0 / (3.0 * out * out))
''', "f", ("x",), "f__dual", ("x",), [[(-8.0, -0.2), (0.2, 8.0)]]),

    "abs": ('''
def f(x):
    return abs(x)

def f__dual(x):
    return (abs(x), math.sign(x))
''', "f", ("x",), "f__dual", ("x",), [[(-3.0, 3.0)]]),

    "softplus": ('''
def softplus(z):
    if z > 20.0:
        return z
    elif z < -20.0:
        return math.exp(z)
    else:
        return math.log1p(math.exp(z))

def softplus__dual(z):
    if z > 20.0:
        return (z, 1.0)
    elif z < -20.0:
        e = math.exp(z)
        return (e, e)
    else:
        e = math.exp(z)
        return (math.log1p(e), e / (1.0 + e))
''', "softplus", ("z",), "softplus__dual", ("z",), [[(-30.0, 30.0)]]),

    "newton": ('''
def nsqrt(a):
    x = a if a > 1.0 else 1.0
    n = 0.0
    while n < 40.0 and abs(x * x - a) > 1e-13 * a:
        x = 0.5 * (x + a / x)
        n = n + 1.0
    return x

def nsqrt__dual(a):
    x = nsqrt(a)
    return (x, 0.5 / x)
''', "nsqrt", ("a",), "nsqrt__dual", ("a",), [[(0.01, 100.0)]]),

    "polar": ('''
def polar(x, y):
    r = math.hypot(x, y)
    return (r, math.atan2(y, x))

def g(x, y):
    r, t = polar(x, y)
    return r * math.cos(2.0 * t)

def g__dual(x, y):
    r, t = polar(x, y)
    c = math.cos(2.0 * t)
    s = math.sin(2.0 * t)
    return (r * c, x / r * c + 2.0 * s * y / r, y / r * c - 2.0 * s * x / r)
''', "g", ("x", "y"), "g__dual", ("x", "y"), [[(-3.0, -0.3), (0.3, 3.0)]] * 2),

    "loop": ('''
def h(x):
    acc = 0.0
    for k in range(0, 20, 1):
        if acc > 5.0:
            break
        if k % 2 == 1:
            continue
        acc = acc + x * k
    for j in range(6, 0, -2):
        acc = acc - 0.1 * j * x
    return acc

def h__dual(x):
    acc = 0.0
    dacc = 0.0
    for k in range(0, 20, 1):
        if acc > 5.0:
            break
        if k % 2 == 1:
            continue
        acc = acc + x * k
        dacc = dacc + k
    for j in range(6, 0, -2):
        acc = acc - 0.1 * j * x
        dacc = dacc - 0.1 * j
    return (acc, dacc)
''', "h", ("x",), "h__dual", ("x",), [[(-2.0, 2.0)]]),

    "floordiv_mod": ('''
def fm(x, y):
    return x // y + x % y * 0.5

def fm__dual(x, y):
    return (x // y + x % y * 0.5, 0.5, -0.5 * math.floor(x / y))
''', "fm", ("x", "y"), "fm__dual", ("x", "y"), [[(-10.0, 10.0)], [(-3.0, -0.5), (0.5, 3.0)]]),

    "minmax": ('''
def mm(x, y):
    return max(min(x, y), -1.0) * y

def mm__dual(x, y):
    m = min(x, y)
    dmx = 0.0 if y < x else 1.0
    dmy = 1.0 if y < x else 0.0
    v = max(m, -1.0)
    dv = 0.0 if -1.0 > m else 1.0
    return (v * y, dv * dmx * y, dv * dmy * y + v)
''', "mm", ("x", "y"), "mm__dual", ("x", "y"), [[(-2.0, 2.0)]] * 2),

    "three": ('''
def three(x, y, w):
    s = x * y + w ** 2
    return math.sin(s) if s > 0 else -s

def three__dual(x, y, w):
    s = x * y + w ** 2
    ds = math.cos(s) if s > 0 else -1.0
    return (math.sin(s) if s > 0 else -s, ds * y, ds * 2.0 * w)
''', "three", ("x", "y", "w"), "three__dual", ("x", "w"), [[(-2.0, 2.0)]] * 3),

    "logic": ('''
def sq(t):
    return t * t

def lg(x, y):
    a = x > 0.0 and (x * 2.0 or y)
    b = (y < 0.5 or x) and not x > 1.0
    c = sq(x) if x < y else (y * 3.0 and sq(y) or 1.0)
    d = (x != y) * 1.0 + (x == 0.25) * 1.0 - (x <= y) * 2.0 + (x >= 0.0) * 1.0
    if a and (b or sq(y) > 0.5):
        d = d + 1.0
    while (x > 0.0 and d < 3.0) or (d < -5.0 and y * 1.0):
        d = d + 0.75
    m = 0.0
    while (m if m > 2.0 else (m * 2.0 and (y or m))) < 3.0 and m < 10.0:
        m = m + 1.0
        if m < 1.5:
            continue
        d = d + 0.5 * m
    return a + b * 2.0 + c + d + m

def lg__dual(x, y):
    v = lg(x, y)
    return (v, 2.0 * x if x < y else 0.0, 0.0 if x < y else (y * 3.0 and 6.0 * y or 0.0))
''', "lg", ("x", "y"), "lg__dual", ("x", "y"), [[(-2.0, 2.0)]] * 2),

    "mathzoo": ('''
def z(x):
    a = math.fabs(-x) + math.copysign(2.0, -x) + math.floor(3.0 * x) + math.ceil(3.0 * x) + math.trunc(-3.0 * x)
    b = math.sqrt(x) + math.cbrt(x) + math.exp(x) + math.exp2(x) + math.expm1(x) + math.log(x)
    b = b + math.log2(x) + math.log10(x) + math.log1p(x)
    c = math.sin(x) + math.cos(x) + math.tan(x) + math.asin(x) + math.acos(x) + math.atan(x) + math.atan2(x, 0.5)
    d = math.sinh(x) + math.cosh(x) + math.tanh(x) + math.asinh(x) + math.acosh(1.0 + x) + math.atanh(x)
    e = math.erf(x) + math.erfc(x) + math.hypot(x, 2.0) + math.fmod(7.0 * x, 0.3) + math.sign(x - 0.5)
    e = e + math.square(x) + math.reciprocal(x)
    f = round(10.0 * x) + int(-7.0 * x) + float(x) + x ** 1.5 + -x // 0.3 + -x % 0.3 + -(-x)
    return a + b + c + d + e + f

def z__dual(x):
    v = z(x)
    return (v, math.cos(x) * v)
''', "z", ("x",), "z__dual", ("x",), [[(0.1, 0.9)]]),

    # names that are C++ keywords, math functions, CUDA builtins or the driver's own
    "names": ('''
def y0(new, k, out):
    exp = math.exp(new)
    signed = exp * k
    threadIdx = signed + out
    _t1 = threadIdx * 2.0
    j0 = _t1 if new > 0.0 and k else k
    return j0 + exp

def y0__dual(new, k, out):
    exp = math.exp(new)
    return (y0(new, k, out), exp * k * 2.0 + exp, 2.0 * exp, 2.0)
''', "y0", ("new", "k", "out"), "y0__dual", ("new", "k", "out"), [[(-1.0, 1.0)]] * 3),
}


def make_kmod(name: str) -> KernelModule:
    src, entry, params, dual, active, _ = MODULES[name]
    fns = {f.name: f for f in gast.parse(src).body}
    return KernelModule(name=f"m_{name}", functions=fns, entry=entry, params=params,
                        dual_entry=dual, active=active)


@functools.lru_cache(maxsize=None)
def kmod_of(name: str) -> KernelModule:
    return make_kmod(name)


@functools.lru_cache(maxsize=None)
def namespace_of(name: str) -> dict:
    return pyback.compile_module(kmod_of(name))


_CYCLE = ("contig", "strided", "scalar")


def specs_for(p: int) -> list[LoopSpec]:
    def rot(shift: int) -> tuple[str, ...]:
        return tuple(_CYCLE[(j + shift) % 3] for j in range(p))

    return [
        LoopSpec(("contig",) * p, "store"),
        LoopSpec(rot(0), "sum", partials=True, seed="scalar"),
        LoopSpec(rot(1), "none", partials=True, seed="array"),
        LoopSpec(rot(2), "store", tangents=True),
        LoopSpec(("strided",) * p, "sum", partials=True, seed="array", tangents=True),
        LoopSpec(("scalar",) * p, "sum", partials=True, seed="scalar"),
        LoopSpec(rot(0), "store", partials=True, seed="array", tangents=True),
    ]


CASES = [(m, s, tag) for m in MODULES for s in specs_for(len(MODULES[m][2])) for tag in ("f64", "f32")]
# NVRTC takes 0.05-0.7 s a kernel: the driver depends on the spec and the number of
# params only, the device functions on the module only, so every spec is compiled for
# modules of one, two and three params, and two specs (primal; dual with everything)
# for the others; all in both dtypes.
_ALL_SPECS = {"cbrt", "tanh", "three"}
NVRTC_CASES = [(m, s, tag) for m, s, tag in CASES
               if m in _ALL_SPECS or s in (specs_for(len(MODULES[m][2]))[0], specs_for(len(MODULES[m][2]))[4])]


def case_id(case) -> str:
    m, s, tag = case
    return f"{m}-{s.tag()}-{tag}"


@pytest.fixture(scope="session")
def gxx():
    """g++ for the host emulation (drivers are then built on demand)."""
    if cuda_host.available() is not None:
        pytest.skip(cuda_host.available())


@pytest.fixture(scope="module")
def built():
    """Every case's driver in g++-built libraries (one g++ run; cached on disk)."""
    if cuda_host.available() is not None:
        pytest.skip(cuda_host.available())
    cuda_host.build((kmod_of(m), s, tag) for m, s, tag in CASES)
    return True


# ------------------------------------------------------------------------------------
# data for one case: the same inputs for the reference (float64) and the kernel (tag)

# strided layouts: (so, si, length) given n_outer, n_inner; stride-0 broadcasts included
def _strided_patterns(no: int, ni: int) -> list[tuple[int, int, int]]:
    return [(0, 1, ni), (1, 0, no), (ni, 1, no * ni), (1, no, no * ni), (0, 0, 1)]


def _sample(rng, intervals, size):
    lo_hi = np.array(intervals, dtype=float)
    pick = rng.integers(0, len(intervals), size=size)
    return rng.uniform(lo_hi[pick, 0], lo_hi[pick, 1])


def _km(name) -> KernelModule:
    return kmod_of(name) if isinstance(name, str) else name


def _ns(name) -> dict:
    return namespace_of(name) if isinstance(name, str) else pyback.compile_module(name)


def make_data(name, spec: LoopSpec, seed: int, no: int = N_OUTER, ni: int = N_INNER, domain=None):
    """Inputs and initial outputs as lists of float64 arrays in run_driver's conventions,
    for a module of MODULES (by name) or a KernelModule with a `domain` per param."""
    kmod = _km(name)
    params, active = kmod.params, kmod.active
    domain = domain or MODULES[name][5]
    rng = np.random.default_rng(seed)
    n = no * ni
    pats = _strided_patterns(no, ni)
    layout_of = []
    vals = []
    for j, lay in enumerate(spec.layouts):
        if lay == "scalar":
            vals.append(float(_sample(rng, domain[j], 1)[0]))
            layout_of.append(None)
        elif lay == "contig":
            vals.append((_sample(rng, domain[j], n), ni, 1))
            layout_of.append((ni, 1, n))
        else:
            so, si, length = pats[(j + seed) % len(pats)]
            vals.append((_sample(rng, domain[j], length), so, si))
            layout_of.append((so, si, length))
    data = {"params": vals}
    if spec.value == "store":
        data["out"] = np.full(n, np.nan)
    elif spec.value == "sum":
        data["acc"] = rng.normal(size=1)
    act = [params.index(a) for a in active]
    if spec.partials:
        data["seed"] = float(rng.normal()) if spec.seed == "scalar" else rng.normal(size=n)
        grads = []
        for j in act:
            lay = spec.layouts[j]
            if lay == "scalar":
                grads.append(rng.normal(size=1))
            elif lay == "contig":
                grads.append((np.full(n, np.nan), ni, 1))
            else:
                so, si, length = layout_of[j]
                grads.append((rng.normal(size=length), so, si))
        data["grads"] = grads
    if spec.tangents:
        tans = []
        for j in act:
            lay = spec.layouts[j]
            if lay == "scalar":
                tans.append(float(rng.normal()))
            else:
                so, si, length = layout_of[j]
                tans.append((rng.normal(size=length), so, si))
        data["tangents"] = tans
        data["out_dot"] = np.full(n, np.nan)
    return data


def _map_arrays(obj, f):
    if isinstance(obj, np.ndarray):
        return f(obj)
    if isinstance(obj, tuple):
        return (_map_arrays(obj[0], f),) + obj[1:]
    if isinstance(obj, list):
        return [_map_arrays(o, f) for o in obj]
    if isinstance(obj, dict):
        return {k: _map_arrays(v, f) for k, v in obj.items()}
    return obj


def _round(data, tag):
    """Round every number to the kernel's dtype (scalars included), kept as float64."""
    dt = np.float64 if tag == "f64" else np.float32

    def r(x):
        if isinstance(x, np.ndarray):
            return x.astype(dt).astype(np.float64)
        if isinstance(x, float):
            return float(dt(x))
        if isinstance(x, tuple):
            return (r(x[0]),) + x[1:]
        if isinstance(x, list):
            return [r(v) for v in x]
        if isinstance(x, dict):
            return {k: r(v) for k, v in x.items()}
        return x

    return r(data)


def _flat_outputs(data) -> dict[str, np.ndarray]:
    outs = {}
    for key in ("out", "acc", "out_dot"):
        if key in data:
            outs[key] = data[key]
    for m, g in enumerate(data.get("grads", [])):
        outs[f"grad{m}"] = g[0] if isinstance(g, tuple) else g
    return outs


def reference(name, spec: LoopSpec, data, n_outer=N_OUTER, n_inner=N_INNER):
    """run_driver's outputs, and the magnitude of what was summed into each of them
    (the same run on absolute values), to scale tolerances of reordered sums."""
    kmod = _km(name)
    ns = _ns(name)
    fn = ns[kmod.dual_entry if spec.needs_dual else kmod.entry]
    act = tuple(kmod.params.index(a) for a in kmod.active)
    ref = _map_arrays(data, np.copy)
    pyback.run_driver(fn, spec, act, n_outer, n_inner, **ref)

    def absfn(*args):
        res = fn(*args)
        return tuple(abs(v) for v in res) if isinstance(res, tuple) else abs(res)

    mag = _map_arrays(data, np.copy)
    for key in ("acc",):
        if key in mag:
            mag[key][:] = 0.0
    if "seed" in mag:
        mag["seed"] = abs(mag["seed"]) if isinstance(mag["seed"], float) else np.abs(mag["seed"])
    if "grads" in mag:
        for g in mag["grads"]:
            (g[0] if isinstance(g, tuple) else g)[:] = 0.0
    if "tangents" in mag:
        mag["tangents"] = [abs(t) if isinstance(t, float) else (np.abs(t[0]),) + t[1:]
                           for t in mag["tangents"]]
    pyback.run_driver(absfn, spec, act, n_outer, n_inner, **mag)
    return _flat_outputs(ref), _flat_outputs(mag)


def run_host(name, spec: LoopSpec, tag: str, data, grid, block, n_outer=N_OUTER, n_inner=N_INNER):
    dt = np.float64 if tag == "f64" else np.float32
    mine = _map_arrays(data, lambda a: a.astype(dt))
    cuda_host.launch(_km(name), spec, tag, n_outer, n_inner, mine["params"], out=mine.get("out"),
                     acc=mine.get("acc"), seed=mine.get("seed"), grads=mine.get("grads"),
                     tangents=mine.get("tangents"), out_dot=mine.get("out_dot"), grid=grid, block=block)
    return _flat_outputs(mine)


def assert_matches(got, ref, mag, tag, what=""):
    rtol, atol = (1e-12, 1e-300) if tag == "f64" else (1e-5, 1e-5)
    for key in ref:
        g = np.asarray(got[key], dtype=np.float64)
        r = ref[key]
        m = mag[key]
        same = (g == r) | (np.isnan(g) & np.isnan(r))
        close = np.abs(g - r) <= rtol * (np.abs(r) + np.abs(m)) + atol
        bad = ~(same | close)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise AssertionError(f"{what} {key}[{k}]: got {g[k]!r}, reference {r[k]!r} "
                                 f"({bad.sum()} of {bad.size} differ)")


# ------------------------------------------------------------------------------------
# (a) NVRTC + ptxas

@pytest.mark.parametrize("case", NVRTC_CASES, ids=case_id)
def test_nvrtc_and_ptxas(case):
    name, spec, tag = case
    kmod = kmod_of(name)
    source = cuda.lower(kmod, spec, tag)
    dname = cuda.driver_name(kmod, spec, tag)
    ptx = cuda.compile_ptx(source, dname, arch="sm_90")
    assert f".entry {dname}(" in ptx
    if cuda.reduced(kmod, spec):
        assert f".entry {dname}__finish(" in ptx
    cuda.check_ptxas(ptx, arch="sm_90")


# (b) host emulation against the python backend's run_driver

@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_host_matches_run_driver(built, case):
    name, spec, tag = case
    data = _round(make_data(name, spec, seed=CASES.index(case)), tag)
    ref, mag = reference(name, spec, data)
    for grid, block in SHAPES:
        got = run_host(name, spec, tag, data, grid, block)
        assert_matches(got, ref, mag, tag, f"{case_id(case)} grid={grid} block={block}:")


def test_every_layout_value_seed_and_tangent_flavour_is_covered():
    seen = set()
    for _, s, tag in CASES:
        seen |= {("layout", lay) for lay in s.layouts}
        seen |= {("value", s.value), ("seed", s.seed), ("tangents", s.tangents), ("dtype", tag)}
    assert seen >= {("layout", "scalar"), ("layout", "contig"), ("layout", "strided"),
                    ("value", "store"), ("value", "sum"), ("value", "none"), ("seed", "scalar"),
                    ("seed", "array"), ("seed", "none"), ("tangents", True), ("dtype", "f64"),
                    ("dtype", "f32")}


# ------------------------------------------------------------------------------------
# properties (float64, where g++'s libm is Python's: agreement is to rounding of sums)

_SPEC_1 = LoopSpec(("contig",), "store", partials=True, seed="array", tangents=True)
_SPEC_2 = LoopSpec(("contig", "contig"), "store", partials=True, seed="array", tangents=True)


def _interval_floats(intervals):
    return st.one_of(*[st.floats(lo, hi, allow_nan=False) for lo, hi in intervals])


@st.composite
def _inputs(draw, name):
    domain = MODULES[name][5]
    n = draw(st.integers(1, 24))
    cols = [np.array(draw(st.lists(_interval_floats(d), min_size=n, max_size=n))) for d in domain]
    return n, cols, draw(st.sampled_from(SHAPES))


def _run_contig(name, n, cols, grid, block):
    spec = _SPEC_1 if len(cols) == 1 else _SPEC_2
    rng = np.random.default_rng(n)
    data = {"params": [(c, n, 1) for c in cols], "out": np.full(n, np.nan), "seed": rng.normal(size=n),
            "grads": [(np.full(n, np.nan), n, 1) for _ in cols],
            "tangents": [(rng.normal(size=n), n, 1) for _ in cols], "out_dot": np.full(n, np.nan)}
    ref, mag = reference(name, spec, data, 1, n)
    got = run_host(name, spec, "f64", data, grid, block, 1, n)
    assert_matches(got, ref, mag, "f64", name)


@pytest.mark.parametrize("name", ["softplus", "polar", "floordiv_mod", "minmax", "logic", "loop", "newton"])
def test_hypothesis_elementwise(name, gxx):
    kmod = kmod_of(name)
    cuda_host.build([(kmod, _SPEC_1 if len(kmod.params) == 1 else _SPEC_2, "f64")])

    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_inputs(name))
    def check(inp):
        n, cols, (grid, block) = inp
        _run_contig(name, n, cols, grid, block)

    check()


_FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(_FLOATS, _FLOATS), min_size=1, max_size=16))
def test_hypothesis_floordiv_mod_are_pythons(gxx, pairs):
    """x // y and x % y bit for bit as numpy/CPython compute them, over all finite floats."""
    pairs = [(x, y) for x, y in pairs if y != 0.0] or [(1.0, 3.0)]
    n = len(pairs)
    xs = np.array([p[0] for p in pairs])
    ys = np.array([p[1] for p in pairs])
    spec = LoopSpec(("contig", "contig"), "store")
    got = run_host("floordiv_mod", spec, "f64", {"params": [(xs, n, 1), (ys, n, 1)],
                                                  "out": np.full(n, np.nan)}, 1, 1, 1, n)["out"]
    with np.errstate(all="ignore"):
        want = xs // ys + xs % ys * 0.5
    np.testing.assert_array_equal(got, want)


_RED_SPEC = LoopSpec(("contig", "scalar"), "sum", partials=True, seed="array")


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(grid=st.integers(1, 9), block=st.integers(1, cuda.MAX_BLOCK), n=st.integers(0, 700))
def test_hypothesis_any_launch_shape_reduces_correctly(gxx, grid, block, n):
    """The shared-memory block sum and the finish kernel for any grid, any block <= 256
    (not only powers of two), any n (empty included)."""
    rng = np.random.default_rng(n)
    data = {"params": [(rng.uniform(-2, 2, n), n, 1), 0.75], "acc": np.array([0.5]),
            "seed": rng.normal(size=n), "grads": [(np.full(n, np.nan), n, 1), np.array([-1.25])]}
    ref, mag = reference("tanh", _RED_SPEC, data, 1, n)
    got = run_host("tanh", _RED_SPEC, "f64", data, grid, block, 1, n)
    assert_matches(got, ref, mag, "f64", f"grid={grid} block={block} n={n}")


@st.composite
def _loop_specs(draw, p: int):
    layouts = tuple(draw(st.sampled_from(_CYCLE)) for _ in range(p))
    seed = draw(st.sampled_from(["none", "scalar", "array"]))
    return LoopSpec(layouts, draw(st.sampled_from(["store", "sum", "none"])), partials=seed != "none",
                    seed=seed, tangents=draw(st.booleans()))


def test_random_programs_through_the_passes(gxx):
    """Programs of tests/randprog.py, normalized and given duals by s2sad's own passes:
    NVRTC + ptxas accept them and the host emulation agrees with run_driver."""
    randprog = pytest.importorskip("randprog")
    from hypothesis import reject

    from s2sad.frontend import parse_function
    from s2sad.passes.normalize import normalize
    from s2sad.runtime import Kernel

    @settings(max_examples=12, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(program=randprog.programs(), data=st.data())
    def check(program, data):
        f = randprog.load(program)["f"]
        prog = normalize(parse_function(f))
        kmod = Kernel(prog, prog.entry).module(tuple(prog.params))
        spec = data.draw(_loop_specs(len(kmod.params)))
        inputs = make_data(kmod, spec, seed=data.draw(st.integers(0, 2**16)), no=3, ni=7,
                           domain=[[(-2.0, 2.0)]] * len(kmod.params))
        try:
            ref, mag = reference(kmod, spec, inputs, 3, 7)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            reject()   # the python reference itself cannot run this program
        source = cuda.lower(kmod, spec, "f64")
        cuda.check_ptxas(cuda.compile_ptx(source, cuda.driver_name(kmod, spec, "f64")))
        for grid, block in [(1, 1), (2, 8)]:
            got = run_host(kmod, spec, "f64", inputs, grid, block, 3, 7)
            assert_matches(got, ref, mag, "f64", f"{spec.tag()} grid={grid} block={block}:\n{source}")
        ran.append(spec)

    ran: list[LoopSpec] = []
    check()
    assert len(ran) >= 6, f"only {len(ran)} programs could be checked"


# ------------------------------------------------------------------------------------
# the source itself

def test_lowering_is_deterministic_and_readable():
    kmod = make_kmod("tanh")
    spec = LoopSpec(("contig", "strided"), "sum", partials=True, seed="scalar", tangents=True)
    a = cuda.lower(kmod, spec, np.float64)
    b = cuda.lower(make_kmod("tanh"), spec, "float64")
    assert a == b
    assert "__device__ f__dual_ret f__dual(double x, double y)" in a
    assert "double f(" not in a     # only what the driver reaches
    assert "__device__ double f(double x, double y)" in cuda.lower(kmod, LoopSpec(("contig", "contig")), "f64")
    assert "struct f__dual_ret { double r0, r1, r2; };" in a
    assert "t = tanh(x);" in a
    assert "atomicAdd(&y_bar[o * y_bar_so + i * y_bar_si], r.r2 * seed);" in a
    assert "x_bar[k] = r.r1 * seed;" in a
    assert "k += stride" in a and "long long k" in a
    f32 = cuda.lower(kmod, spec, np.float32)
    assert "tanhf(x)" in f32 and "1.0f - t * t" in f32
    # double only in the sums (cuda.ACC): the thread's, the block's and the partials
    doubles = [line for line in f32.splitlines() if "double" in line]
    assert doubles and all(any(w in line for w in ("sum_", "red[", "partials", "t0", "block_sum"))
                           for line in doubles), doubles
    assert cuda.driver_name(kmod, spec, "float32") == "m_tanh__cx_sum_grads_jvp_f32"


def test_driver_abi_follows_kernel_contract():
    kmod = make_kmod("three")   # active: x, w
    spec = LoopSpec(("strided", "scalar", "contig"), "sum", partials=True, seed="array", tangents=True)
    src = cuda.lower(kmod, spec, "f64")
    head = src[src.index('extern "C" __global__ void m_three__'):]
    decl = head[head.index("(") + 1:head.index(")")]
    params = [p.strip() for p in decl.split(",")]
    assert params == [
        "long long n_outer", "long long n_inner",
        "const double* x", "long long x_so", "long long x_si", "double y", "const double* w",
        "double* acc", "const double* seed",
        "double* x_bar", "long long x_bar_so", "long long x_bar_si", "double* w_bar",
        "const double* x_dot", "long long x_dot_so", "long long x_dot_si", "const double* w_dot",
        "double* out_dot", "double* partials"]
    fin = [a.name for a in cuda.finish_args(kmod, spec)]
    assert fin == ["n_parts", "partials", "acc"]


def test_scalar_grads_reduce_through_partials():
    kmod = make_kmod("three")
    spec = LoopSpec(("scalar", "contig", "scalar"), "none", partials=True, seed="scalar")
    assert cuda.reduced(kmod, spec) == [("grad", 0), ("grad", 2)]
    assert [a.name for a in cuda.finish_args(kmod, spec)] == ["n_parts", "partials", "x_bar", "w_bar"]


def test_lazy_operands_become_statements_only_when_needed():
    src = cuda.lower(make_kmod("logic"), LoopSpec(("contig", "contig"), "store"), "f64")
    # `x > 0.0 and (x * 2.0 or y)`: the inner `or` needs a temporary, so the `and` is an if
    assert re.search(r"if \(_t\d+ != 0\.0\) \{\n\s+const double _t\d+ = x \* 2\.0;", src)
    # a condition of and/or stays a lazy C expression
    assert "while ((x > 0.0 && d < 3.0) || (d < -5.0 && y * 1.0 != 0.0))" in src
    # a loop test that needs statements is evaluated at the top of every iteration
    assert re.search(r"while \(true\) \{\n(\s+.*\n)+?\s+if \(!\(_t\d+ < 3\.0 && m < 10\.0\)\) break;\n\s+m = m \+ 1\.0;", src), src


def test_names_are_mangled_away_from_c_and_cuda():
    src = cuda.lower(make_kmod("names"), LoopSpec(("contig", "strided", "scalar"), "store",
                                                   partials=True, seed="array"), "f64")
    assert "__device__ double y0_(double new_, double k, double out)" in src
    assert "exp_ = exp(new_);" in src and "threadIdx_ = " in src
    assert "const double* k_," in src and "double out_," in src   # driver params vs driver locals


def test_params_named_like_functions_and_driver_locals(gxx):
    src = ("def f(f, sum_acc, f__dual_ret):\n    return f * sum_acc + f__dual_ret\n\n"
           "def f__dual(f, sum_acc, f__dual_ret):\n    return (f * sum_acc + f__dual_ret, sum_acc, f, 1.0)\n")
    fns = {fn.name: fn for fn in gast.parse(src).body}
    kmod = KernelModule(name="clash", functions=fns, entry="f", params=("f", "sum_acc", "f__dual_ret"),
                        dual_entry="f__dual", active=("f", "sum_acc", "f__dual_ret"))
    spec = LoopSpec(("contig", "scalar", "strided"), "sum", partials=True, seed="array", tangents=True)
    source = cuda.lower(kmod, spec, "f64")
    cuda.compile_ptx(source, cuda.driver_name(kmod, spec, "f64"))
    data = make_data(kmod, spec, seed=1, no=3, ni=5, domain=[[(-1.0, 1.0)]] * 3)
    ref, mag = reference(kmod, spec, data, 3, 5)
    assert_matches(run_host(kmod, spec, "f64", data, 2, 4, 3, 5), ref, mag, "f64")


def test_compile_error_shows_generated_line():
    kmod = make_kmod("tanh")
    spec = LoopSpec(("contig", "contig"), "store")
    src = cuda.lower(kmod, spec, "f64").replace("t = tanh(x);", "t = tanh(x, oops);")
    with pytest.raises(cuda.CudaCompileError) as info:
        cuda.compile_ptx(src, cuda.driver_name(kmod, spec, "f64"))
    msg = str(info.value)
    line = next(k for k, text in enumerate(src.splitlines(), 1) if "oops" in text)
    assert "oops" in msg and re.search(rf">\s+{line} \|\s+t = tanh\(x, oops\);", msg), msg


def test_ptxas_rejects_bad_ptx():
    if cuda.ptxas_path() is None:
        pytest.skip("no ptxas")
    with pytest.raises(cuda.CudaCompileError):
        cuda.check_ptxas(".version 9.0\n.target sm_90\n.address_size 64\nthis is not ptx\n")


def test_user_primitive_without_cuda_implementation_is_refused():
    fns = {f.name: f for f in gast.parse("def f(x):\n    return math.my_special(x)\n").body}
    kmod = KernelModule(name="u", functions=fns, entry="f", params=("x",))
    with pytest.raises(BackendUnavailableError, match="my_special"):
        cuda.lower(kmod, LoopSpec(("contig",)), "f64")


def test_comparisons_are_numbers(gxx):
    """Booleans are 1.0/0.0 in arithmetic (kernel.py), so (x < y) + (x < y) is 2.0."""
    src = "def f(x, y):\n    return (x < y) + (x < y) - (x > y)\n"
    fns = {f.name: f for f in gast.parse(src).body}
    kmod = KernelModule(name="cmp", functions=fns, entry="f", params=("x", "y"))
    spec = LoopSpec(("contig", "scalar"), "store")
    x = np.array([-1.0, 0.0, 1.0, np.nan])
    out = np.full(4, np.nan)
    cuda_host.launch(kmod, spec, "f64", 1, 4, [(x, 4, 1), 0.0], out=out, grid=2, block=2)
    np.testing.assert_array_equal(out, [2.0, 0.0, -1.0, 0.0])


# ------------------------------------------------------------------------------------
# the emulator and the launch logic

def test_emulator_detects_threads_diverging_at_a_barrier(gxx):
    src = ('extern "C" __global__ void diverge(double* p)\n{\n'
           "    if (threadIdx.x == 0) return;\n    __syncthreads();\n    p[threadIdx.x] = 1.0;\n}\n")
    arg = cuda.Arg("p", "ptr", "out")
    cuda_host.build_sources([(src, "f64", [("diverge", [arg])])])
    p = np.zeros(4)
    with pytest.raises(RuntimeError, match="diverged"):
        cuda_host.call(src, "diverge", "f64", 1, 4, [(arg, p)])
    cuda_host.call(src, "diverge", "f64", 1, 1, [(arg, p)])   # one thread: nothing to wait for


def test_emulator_shared_memory_is_per_block_and_barriers_order_it(gxx):
    src = ('extern "C" __global__ void rev(const double* a, double* b)\n{\n'
           "    __shared__ double s[64];\n"
           "    const unsigned int t = threadIdx.x, base = blockIdx.x * blockDim.x;\n"
           "    s[t] = a[base + t];\n    __syncthreads();\n"
           "    b[base + t] = s[blockDim.x - 1 - t];\n}\n")
    args = [cuda.Arg("a", "cptr", "param", 0), cuda.Arg("b", "ptr", "out")]
    cuda_host.build_sources([(src, "f64", [("rev", args)])])
    a = np.arange(3 * 16, dtype=float)
    b = np.zeros_like(a)
    cuda_host.call(src, "rev", "f64", 3, 16, list(zip(args, [a, b])))
    np.testing.assert_array_equal(b, a.reshape(3, 16)[:, ::-1].ravel())


def test_launch_config():
    assert cuda_launch.launch_config(0) == (1, 256)
    assert cuda_launch.launch_config(1000, 256, 1024) == (4, 256)
    assert cuda_launch.launch_config(10**9, 256, 1056) == (1056, 256)


def test_reducing_driver_refuses_oversized_block(gxx):
    data = {"params": [(np.zeros(4), 4, 1), 0.0], "acc": np.zeros(1), "seed": np.ones(4),
            "grads": [(np.zeros(4), 4, 1), np.zeros(1)]}
    with pytest.raises(ValueError, match="at most 256"):
        run_host("tanh", _RED_SPEC, "f64", data, 1, 512, 1, 4)


def test_host_default_launch_shape_and_dtype_checks(gxx):
    kmod = kmod_of("tanh")
    spec = LoopSpec(("contig", "scalar"), "sum")
    x = np.linspace(-1, 1, 1000)
    acc = np.zeros(1)
    cuda_host.launch(kmod, spec, "float64", 10, 100, [(x, 100, 1), 2.0], acc=acc)
    assert acc[0] == pytest.approx(float(np.sum(np.tanh(x) * 2.0)), rel=1e-12, abs=1e-12)
    with pytest.raises(TypeError, match="float64"):
        cuda_host.launch(kmod, spec, "float64", 10, 100, [(x.astype(np.float32), 100, 1), 2.0], acc=acc)


def test_available_says_what_is_missing():
    msg = cuda_launch.available()
    assert msg is None or "cupy" in msg or "device" in msg
    if msg is not None:
        with pytest.raises(BackendUnavailableError):
            cuda_launch.launch(kmod_of("tanh"), LoopSpec(("scalar", "scalar")), "f64", 1, 1, [0.0, 0.0],
                        out=None)


# ------------------------------------------------------------------------------------
# cuda_launch.launch's own code path, with a stand-in for cupy that runs kernels on the host

_KERNEL_DECL = re.compile(r'extern "C" __global__ void (\w+)\(\n(.*?)\)\n\{', re.S)


def _parse_kernels(source: str) -> list[tuple[str, list]]:
    kinds = [(r"long long (\w+)", "index"), (r"const double\* (partials)", "csums"), (r"double\* (partials)", "sums"),
             (r"const \w+\* (\w+)", "cptr"), (r"\w+\* (\w+)", "ptr"),
             (r"\w+ (\w+)", "value")]
    kernels = []
    for name, params in _KERNEL_DECL.findall(source):
        args = []
        for decl in (p.strip() for p in params.split(",")):
            kind, pname = next((k, m.group(1)) for pat, k in kinds if (m := re.fullmatch(pat, decl)))
            args.append(cuda.Arg(pname, kind, "?"))
        kernels.append((name, args))
    return kernels


class _FakeRawKernel:
    launches: list = []

    def __init__(self, code, name, options=()):
        assert "--std=c++17" in options
        self.code, self.name = code, name
        self.tag = "f64" if "float64" in code.splitlines()[0] else "f32"
        self.kernels = dict(_parse_kernels(code))

    def __call__(self, grid, block, args):
        cuda_host.build_sources([(self.code, self.tag, list(self.kernels.items()))])
        spec_args = self.kernels[self.name]
        assert len(spec_args) == len(args)
        for a, v in zip(spec_args, args):   # what cupy would be handed
            want = {"index": np.int64, "value": np.float64 if self.tag == "f64" else np.float32}.get(a.kind)
            assert isinstance(v, want or np.ndarray), (a, type(v))
        _FakeRawKernel.launches.append((self.name, grid, block))
        cuda_host.call(self.code, self.name, self.tag, grid[0], block[0], list(zip(spec_args, args)))


@pytest.fixture
def fake_cupy(monkeypatch):
    import sys
    import types

    fake = types.ModuleType("cupy")
    fake.ndarray = np.ndarray
    fake.empty = lambda n, dtype: np.full(n, np.nan, dtype=dtype)
    fake.RawKernel = _FakeRawKernel
    fake.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
        Device=lambda: types.SimpleNamespace(attributes={"MultiProcessorCount": 2}))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(cuda_launch, "_RAW_KERNELS", {})
    _FakeRawKernel.launches = []
    return fake


@pytest.mark.parametrize("tag", ["f64", "f32"])
def test_cuda_launch_code_path_with_stand_in_cupy(gxx, fake_cupy, tag):
    assert cuda_launch.available() is None
    name = "three"
    spec = LoopSpec(("strided", "scalar", "contig"), "sum", partials=True, seed="array", tangents=True)
    no, ni = 9, 500
    data = _round(make_data(name, spec, seed=5, no=no, ni=ni), tag)
    ref, mag = reference(name, spec, data, no, ni)
    dt = np.float64 if tag == "f64" else np.float32
    mine = _map_arrays(data, lambda a: a.astype(dt))
    cuda_launch.launch(kmod_of(name), spec, tag, no, ni, mine["params"], acc=mine["acc"], seed=mine["seed"],
                grads=mine["grads"], tangents=mine["tangents"], out_dot=mine["out_dot"])
    assert_matches(_flat_outputs(mine), ref, mag, tag, "cuda_launch.launch")
    driver = cuda.driver_name(kmod_of(name), spec, tag)
    # 4500 elements, block 256, at most 2 SMs * 8 blocks: the grid-stride loop wraps
    assert _FakeRawKernel.launches == [(driver, (16,), (256,)), (driver + "__finish", (1,), (1,))]
    with pytest.raises(TypeError, match="contiguous"):
        cuda_launch.launch(kmod_of(name), spec, tag, no, ni, mine["params"], acc=mine["acc"][::1].astype(np.int64),
                    seed=mine["seed"], grads=mine["grads"], tangents=mine["tangents"], out_dot=mine["out_dot"])


# ------------------------------------------------------------------------------------
# scan drivers (ScanSpec, stateful functions): one thread, against python.run_scan

def _scan_kernels() -> dict:
    """The hand-written state-passing kernels of test_scan_drivers (name -> (kmod,
    ranges of the non-state params, range of the initial state))."""
    from test_scan_drivers import SCANS

    return SCANS


from test_scan_drivers import FLAVOURS as SCAN_FLAVOURS  # noqa: E402  (the llvm scan tests' flavours)


def scan_specs(name: str) -> list[ScanSpec]:
    kmod, ranges, _ = _scan_kernels()[name]
    p, k = len(ranges), len(kmod.params) - len(ranges)
    return [ScanSpec(tuple(_CYCLE[(r + j) % 3] for j in range(p)), k, **fl)
            for r in range(3) for fl in SCAN_FLAVOURS]


SCAN_NAMES = ["runsum", "two", "tanh", "clip"]
SCAN_CASES = [(m, s, tag) for m in SCAN_NAMES for s in scan_specs(m) for tag in ("f64", "f32")]
SCAN_SIZES = [(3, 13), (2, 37), (1, 1), (0, 5)]


def scan_case_id(case) -> str:
    m, s, tag = case
    return f"{m}-{s.tag()}-{tag}"


def make_scan_data(name: str, spec: ScanSpec, seed: int, no: int, ni: int):
    """Inputs and initial outputs in run_scan's conventions (float64)."""
    kmod, ranges, s_range = _scan_kernels()[name]
    rng = np.random.default_rng(seed)
    n, k = no * ni, spec.n_state
    pats = _strided_patterns(no, ni)
    params, geometry = [], []
    for j, (lay, r) in enumerate(zip(spec.layouts, ranges)):
        if lay == "scalar":
            params.append(float(rng.uniform(*r)))
            geometry.append(None)
        elif lay == "contig":
            params.append((rng.uniform(*r, n), ni, 1))
            geometry.append((ni, 1, n))
        else:
            so, si, length = pats[(j + seed) % len(pats)]
            params.append((rng.uniform(*r, length), so, si))
            geometry.append((so, si, length))
    data = {"params": params, "state": rng.uniform(*s_range, k)}
    if spec.value == "store":
        data["out"] = np.full(n, np.nan)
    elif spec.value == "sum":
        data["acc"] = rng.normal(size=1)
    if spec.grads:
        data["seed"] = float(rng.uniform(0.5, 1.5)) if spec.seed == "scalar" else rng.uniform(0.5, 1.5, n)
        grads = []
        for a in active_indices(kmod, spec):
            if spec.layouts[a] == "scalar":
                grads.append(rng.normal(size=1))
            elif spec.layouts[a] == "contig":
                grads.append((np.full(n, np.nan), ni, 1))
            else:
                so, si, length = geometry[a]
                grads.append((rng.normal(size=length), so, si))
        data["grads"] = grads
        data["state_bar"] = rng.uniform(-1.0, 1.0, k)
    return data


def _scan_outputs(data) -> dict[str, np.ndarray]:
    outs = _flat_outputs(data)
    for key in ("state", "state_bar"):
        if key in data:
            outs[key] = data[key]
    return outs


def scan_reference(kmod: KernelModule, spec: ScanSpec, data, no: int, ni: int) -> dict:
    fns = pyback.compile_module(kmod)
    ref = _map_arrays(data, np.copy)
    pyback.run_scan(fns[kmod.entry], fns[kmod.dual_entry] if spec.grads else None, spec,
                    active_indices(kmod, spec), no, ni, ref["params"], ref["state"],
                    out=ref.get("out"), acc=ref.get("acc"), seed=ref.get("seed"),
                    grads=ref.get("grads"), state_bar=ref.get("state_bar"))
    return _scan_outputs(ref)


def run_scan_host(kmod: KernelModule, spec: ScanSpec, tag: str, data, no: int, ni: int,
                  grid=None, block=None) -> dict:
    dt = np.float64 if tag == "f64" else np.float32
    mine = _map_arrays(data, lambda a: a.astype(dt))
    cuda_host.launch(kmod, spec, tag, no, ni, mine["params"], out=mine.get("out"), acc=mine.get("acc"),
                     seed=mine.get("seed"), grads=mine.get("grads"), state=mine["state"],
                     state_bar=mine.get("state_bar"), grid=grid, block=block)
    return _scan_outputs(mine)


def assert_scan_matches(got, ref, tag, what=""):
    """The one thread sums the value and scalar grads in a local, as the llvm driver
    does (run_scan adds each term to acc/g): agreement to rounding; float32 kernels also
    thread the state in float32 (run_scan in float64)."""
    rtol = 1e-12 if tag == "f64" else 2e-5
    for key in ref:
        r = np.asarray(ref[key], dtype=np.float64)
        g = np.asarray(got[key], dtype=np.float64)
        scale = max(1.0, float(np.nanmax(np.abs(r)))) if r.size else 1.0
        np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol * scale, err_msg=f"{what} {key}")


@pytest.fixture(scope="module")
def built_scans():
    if cuda_host.available() is not None:
        pytest.skip(cuda_host.available())
    scans = _scan_kernels()
    cuda_host.build((scans[m][0], s, tag) for m, s, tag in SCAN_CASES)
    return True


@pytest.mark.parametrize("case", SCAN_CASES, ids=scan_case_id)
def test_scan_host_matches_run_scan(built_scans, case):
    name, spec, tag = case
    kmod = _scan_kernels()[name][0]
    for s, (no, ni) in enumerate(SCAN_SIZES):
        data = _round(make_scan_data(name, spec, seed=s + 7 * SCAN_CASES.index(case), no=no, ni=ni), tag)
        ref = scan_reference(kmod, spec, data, no, ni)
        got = run_scan_host(kmod, spec, tag, data, no, ni)
        assert_scan_matches(got, ref, tag, f"{scan_case_id(case)} {(no, ni)}")
        if no * ni == 0:   # no elements: the state and its adjoint pass through
            np.testing.assert_array_equal(got["state"], data["state"].astype(got["state"].dtype))


# NVRTC + ptxas: every flavour for one kernel with one state and one with two, in both
# dtypes; two specs for the others
_SCAN_NVRTC = [c for c in SCAN_CASES
               if c[0] in ("runsum", "two") or c[1] in (scan_specs(c[0])[0], scan_specs(c[0])[4])]


@pytest.mark.parametrize("case", _SCAN_NVRTC, ids=scan_case_id)
def test_scan_nvrtc_and_ptxas(case):
    name, spec, tag = case
    kmod = _scan_kernels()[name][0]
    source = cuda.lower(kmod, spec, tag)
    dname = cuda.driver_name(kmod, spec, tag)
    ptx = cuda.compile_ptx(source, dname, arch="sm_90")
    assert f".entry {dname}(" in ptx and "__finish" not in ptx
    cuda.check_ptxas(ptx, arch="sm_90")


def test_scan_any_launch_shape_runs_one_thread(built_scans):
    """Launched wider than one thread, the scan still runs once, in thread 0 of block 0."""
    name = "two"
    kmod = _scan_kernels()[name][0]
    spec = scan_specs(name)[4 + 7]   # strided/scalar/contig rotation, store + grads, array seed
    data = make_scan_data(name, spec, seed=11, no=3, ni=13)
    one = run_scan_host(kmod, spec, "f64", data, 3, 13, grid=1, block=1)
    for grid, block in [(2, 1), (1, 5), (3, 4)]:
        got = run_scan_host(kmod, spec, "f64", data, 3, 13, grid=grid, block=block)
        for key in one:
            np.testing.assert_array_equal(got[key], one[key], err_msg=f"{key} grid={grid} block={block}")


def test_scan_source_and_abi():
    kmod = _scan_kernels()["two"][0]
    spec = ScanSpec(("strided", "scalar", "contig"), 2, value="sum", grads=True, seed="array")
    src = cuda.lower(kmod, spec, "f64")
    assert src == cuda.lower(kmod, spec, np.float64)
    name = cuda.driver_name(kmod, spec, "f64")
    assert name == "g__scan_xsc_s2_sum_grada_f64"
    head = src[src.index(f'extern "C" __global__ void {name}('):]
    params = [p.strip() for p in head[head.index("(") + 1:head.index(")")].split(",")]
    # kernel.py's scan ABI, parameter for parameter (llvm: test_scan_drivers.test_scan_abi_and_ir)
    assert params == [
        "long long n_outer", "long long n_inner", "const double* x", "long long x_so", "long long x_si",
        "double y", "const double* c", "double* state", "double* acc", "const double* seed",
        "double* y_bar", "double* x_bar", "long long x_bar_so", "long long x_bar_si",
        "double* state_bar", "double* tape"]
    assert [a.role for a in cuda.driver_args(kmod, spec)][-2:] == ["state_bar", "tape"]
    assert cuda.reduced(kmod, spec) == []
    assert "if (blockIdx.x != 0 || threadIdx.x != 0) return;" in src
    assert "atomicAdd" not in src and "__shared__" not in src and "__finish" not in src
    # the state is a local named after its param ("n" is the driver's own: n_)
    assert "double n_ = state[0];" in src and "tape[k * 2 + 1] = p;" in src
    assert "for (long long k = n - 1; k >= 0; --k) {" in src
    f32 = cuda.lower(kmod, ScanSpec(("contig", "contig", "scalar"), 2, value="store"), "f32")
    assert "double" not in f32 and "tape" not in f32 and "g__dual" not in f32


def test_scan_names_clash_with_the_scan_drivers_own():
    """Params and functions named like the scan driver's locals are renamed."""
    src = ("def state(tape, sd):\n    sd = sd + tape\n    return (sd * 2.0, sd)\n\n"
           "def state__dual(tape, sd):\n    s2 = sd + tape\n    return (s2 * 2.0, s2, 2.0, 2.0, 1.0, 1.0)\n")
    fns = {f.name: f for f in gast.parse(src).body}
    kmod = KernelModule(name="clash", functions=fns, entry="state", params=("tape", "sd"),
                        dual_entry="state__dual", active=("tape", "sd"))
    spec = ScanSpec(("contig",), 1, value="sum", grads=True, seed="scalar")
    source = cuda.lower(kmod, spec, "f64")
    cuda.compile_ptx(source, cuda.driver_name(kmod, spec, "f64"))
    if cuda_host.available() is None:
        x = np.linspace(0.1, 1.0, 9)
        data = {"params": [(x, 9, 1)], "state": np.array([0.5]), "acc": np.zeros(1), "seed": 1.5,
                "grads": [(np.full(9, np.nan), 9, 1)], "state_bar": np.array([0.25])}
        ref = scan_reference(kmod, spec, data, 1, 9)
        assert_scan_matches(run_scan_host(kmod, spec, "f64", data, 1, 9), ref, "f64")


def test_scan_contract_errors():
    scans = _scan_kernels()
    runsum = scans["runsum"][0]
    with pytest.raises(ValueError, match="layouts"):
        cuda.lower(runsum, ScanSpec(("contig", "contig"), 1), "f64")
    bad = KernelModule(name="bad", functions=runsum.functions, entry=runsum.entry, params=runsum.params,
                       dual_entry=runsum.dual_entry, active=("s", "x"))
    with pytest.raises(ValueError, match="states"):
        cuda.lower(bad, ScanSpec(("contig",), 1, grads=True, seed="scalar"), "f64")
    plain = make_kmod("tanh")   # returns one value: no state comes back
    with pytest.raises(ValueError, match="states are due"):
        cuda.lower(plain, ScanSpec(("contig",), 1), "f64")
    with pytest.raises(ValueError, match="state"):
        cuda_host.launch(runsum, ScanSpec(("contig",), 1), "f64", 1, 3, [(np.ones(3), 3, 1)],
                         acc=np.zeros(1), state=np.zeros(0))


def test_stateful_functions_through_the_passes(gxx):
    """The state-passing kernels s2sad's own passes make for stateful_funcs (a global, a
    list item, an array item, a dict, a nonlocal): NVRTC + ptxas accept their scan
    drivers and the host emulation agrees with run_scan."""
    import s2sad
    import stateful_funcs as sf
    from s2sad.api import compiled

    losses = {"global": lambda x: sum(map(sf.f_global, x)), "list": lambda x: sum(map(sf.f_list, x)),
              "array": lambda x: sum(map(sf.f_array, x)), "dict": lambda x: sum(map(sf.f_dict, x)),
              "nonlocal": lambda x: sum(map(sf.f_nonlocal, x))}
    rng = np.random.default_rng(0)
    for what, loss in losses.items():
        s2sad.grad(loss)   # plan it
        c = compiled(loss)
        state = c.plan.program.state
        params = c.kernel.params
        n_p = len(params) - len(state)
        kmod = c.kernel.module(c.active_for((0,)) + params[n_p:])
        for spec in [ScanSpec(("contig",) * n_p, len(state), value="sum", grads=True, seed="scalar"),
                     ScanSpec(("contig",) * n_p, len(state), value="store", grads=True, seed="array"),
                     ScanSpec(("contig",) * n_p, len(state), value="store")]:
            source = cuda.lower(kmod, spec, "f64")
            cuda.check_ptxas(cuda.compile_ptx(source, cuda.driver_name(kmod, spec, "f64")))
            n = 17
            data = {"params": [(rng.uniform(-1.0, 1.0, n), n, 1) for _ in range(n_p)],
                    "state": rng.uniform(-0.5, 0.5, len(state))}
            if spec.value == "store":
                data["out"] = np.full(n, np.nan)
            else:
                data["acc"] = np.zeros(1)
            if spec.grads:
                data["seed"] = 0.75 if spec.seed == "scalar" else rng.uniform(0.5, 1.5, n)
                data["grads"] = [(np.full(n, np.nan), n, 1)]
                data["state_bar"] = np.zeros(len(state))
            ref = scan_reference(kmod, spec, data, 1, n)
            assert_scan_matches(run_scan_host(kmod, spec, "f64", data, 1, n), ref, "f64", f"{what} {spec.tag()}")


# ------------------------------------------------------------------------------------
# a real device

@pytest.mark.gpu
@pytest.mark.skipif(cuda_launch.available() is not None, reason=str(cuda_launch.available()))
@pytest.mark.parametrize("name", ["tanh", "three", "newton", "logic"])
def test_launch_on_cupy_matches_numpy_reference(name):
    import cupy

    kmod = kmod_of(name)
    p = len(kmod.params)
    for spec in specs_for(p):
        for tag in ("f64", "f32"):
            no, ni = 7, 301
            data = _round(make_data(name, spec, seed=3, no=no, ni=ni), tag)
            ref, mag = reference(name, spec, data, no, ni)
            dt = np.float64 if tag == "f64" else np.float32
            dev = _map_arrays(data, lambda a: cupy.asarray(a.astype(dt)))
            cuda_launch.launch(kmod, spec, tag, no, ni, dev["params"], out=dev.get("out"), acc=dev.get("acc"),
                        seed=dev.get("seed"), grads=dev.get("grads"), tangents=dev.get("tangents"),
                        out_dot=dev.get("out_dot"))
            got = {k: cupy.asnumpy(v) for k, v in _flat_outputs(dev).items()}
            # the GPU contracts a * b + c into FMAs and has its own libm: 1e-12 / 1e-5
            assert_matches(got, ref, mag, tag, f"{name} {spec.tag()} {tag}")


@pytest.mark.gpu
@pytest.mark.skipif(cuda_launch.available() is not None, reason=str(cuda_launch.available()))
@pytest.mark.parametrize("name", SCAN_NAMES)
def test_scan_launch_on_cupy_matches_run_scan(name):
    import cupy

    kmod = _scan_kernels()[name][0]
    for spec in scan_specs(name):
        for tag in ("f64", "f32"):
            no, ni = 3, 41
            data = _round(make_scan_data(name, spec, seed=5, no=no, ni=ni), tag)
            ref = scan_reference(kmod, spec, data, no, ni)
            dt = np.float64 if tag == "f64" else np.float32
            d = _map_arrays(data, lambda a: cupy.asarray(a.astype(dt)))
            cuda_launch.launch(kmod, spec, tag, no, ni, d["params"], out=d.get("out"), acc=d.get("acc"),
                        seed=d.get("seed"), grads=d.get("grads"), state=d["state"], state_bar=d.get("state_bar"))
            got = {k: cupy.asnumpy(v) for k, v in _scan_outputs(d).items()}
            # the GPU contracts a * b + c into FMAs and has its own libm
            assert_scan_matches(got, ref, tag, f"{name} {spec.tag()} {tag}")

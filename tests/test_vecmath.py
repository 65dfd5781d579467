"""s2sad's own vector math (codegen/vecmath.py: exp, expm1, log, log1p, tanh, cbrt), used
where glibc's libmvec is not (S2SAD_LIBMVEC=0, or a machine without it), against Python's
math (glibc's libm; numpy where math raises) to within 4 ulp over the whole domain:
signed zeros, infinities, NaN, subnormals, the overflow and underflow edges. The loops
that call them vectorise."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import kernel
from s2sad import envflags
from s2sad.codegen import llvm as L
from s2sad.codegen import llvm_jit
from s2sad.kernel import LoopSpec

F64, F32 = np.float64, np.float32
NAMES = sorted(L.VECMATH_FUNCTIONS)
HYPO = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])
STORE = LoopSpec(layouts=("contig",), value="store")


_drivers: dict = {}


def driver(name: str, dtype, monkeypatch):
    """The store driver of math.<name>(x), compiled with S2SAD_LIBMVEC=0."""
    key = (name, dtype)
    if key not in _drivers:
        monkeypatch.setenv("S2SAD_LIBMVEC", "0")
        monkeypatch.delenv("S2SAD_VECMATH", raising=False)
        km = kernel(f"def vm_{name}(x):\n    return math.{name}(x)\n", f"vm_{name}")
        d = L.compile_driver(km, STORE, dtype)
        assert f"@s2sad.{name}" in d.ir and not re.search(r"_ZGV[bcde]N", d.ir)     # no libmvec
        # straight-line code: nothing left to call but (scalar remainders) lane 0 of the
        # vector function (float64 exp, expm1, log, log1p, tanh: llvm_lower.own_vector_fn)
        calls = [line for line in d.optimized_ir.splitlines()
                 if " call " in line and "@llvm." not in line and "@vecmath." not in line]
        assert not calls, calls
        _drivers[key] = d
    return _drivers[key]


def run(d, x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    d.cfunc(1, x.size, x.ctypes.data, out.ctypes.data)
    return out


def reference(name: str, x: np.ndarray) -> np.ndarray:
    """Python's math.<name> (glibc's libm) at each value; numpy's answer where math raises
    (overflow: inf; outside the domain: nan; log(0): -inf); float32: that, rounded."""
    fn = getattr(math, name, None) or getattr(np, name)         # math.cbrt: Python >= 3.11
    out = []
    with np.errstate(all="ignore"):
        for v in x.astype(np.float64):
            try:
                out.append(fn(float(v)))
            except (OverflowError, ValueError):
                out.append(float(getattr(np, name)(v)))
        return np.array(out).astype(x.dtype)


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between same-dtype arrays: 0 for NaN and NaN, inf where one
    is NaN or infinite and the other is not."""
    itype = np.int64 if a.dtype == np.float64 else np.int32
    lowest = np.int64(np.iinfo(itype).min)

    def ordered(v):                 # a monotone map of floats to integers; -0.0 and 0.0 -> 0
        i = v.view(itype).astype(np.int64)
        return np.where(i < 0, lowest - i, i)

    oa, ob = ordered(a), ordered(b)
    same_side = (oa >= 0) == (ob >= 0)         # no int64 overflow; exact where it matters
    d = np.where(same_side, np.abs(np.where(same_side, oa - ob, 0)).astype(np.float64),
                 np.abs(oa).astype(np.float64) + np.abs(ob).astype(np.float64))
    d[np.isnan(a) & np.isnan(b)] = 0
    d[(np.isnan(a) != np.isnan(b)) | (np.isinf(a) != np.isinf(b))] = np.inf
    return d


def check(name: str, dtype, x: np.ndarray, monkeypatch) -> None:
    x = np.asarray(x, dtype=dtype)
    got, want = run(driver(name, dtype, monkeypatch), x), reference(name, x)
    d = ulp_distance(got, want)
    bad = d > 4
    assert not bad.any(), (name, x[bad][:4], got[bad][:4], want[bad][:4], d[bad][:4])
    zero = want == 0
    assert (np.signbit(got[zero]) == np.signbit(want[zero])).all(), (name, "the sign of zero", x[zero])


# ---------------------------------------------------------------------------------
# the values

def _edges(name: str, dtype) -> np.ndarray:
    """Special values and the neighbourhoods where the algorithms change course."""
    fi = np.finfo(dtype)
    tiny, sub = float(fi.tiny), float(fi.smallest_subnormal)
    points = [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan, sub, -sub, tiny, -tiny, tiny / 3,
              -tiny / 7, float(fi.max), -float(fi.max), 1.0, -1.0, 0.5, 2.0, 1e-300, -1e-300,
              math.log(2) / 2, -math.log(2) / 2, 1.5 * math.log(2), 37.0 * math.log(2), 52.5 * math.log(2),
              709.782712893384, 709.7827128933841, 709.78, 710.0, -708.3964185322641,
              -708.4, -709.0, -744.0, -745.1332191019411, -745.1332191019412, -746.0, 88.72283, 88.7229,
              -87.33655, -103.97208, -103.9721, 22.0, -22.0, 0.999999, 1.000001, 18.4, 19.0, -37.5, -40.0,
              -0.9999999, -0.5, -0.29, 0.41, 1e300, math.sqrt(0.5), math.sqrt(2.0), 8.0, 27.0, -27.0]
    if name == "tanh":          # its clamp, where it rounds to 1, its switch, its reduction's steps
        points += [20.0, -20.0, 19.06, 19.07, 0.4, -0.4, 0.1733, 0.5199]
        points += [(k + 0.5) * math.log(2) / 2 for k in range(60)]
    with np.errstate(all="ignore"):
        x = np.array(points, dtype=np.float64).astype(dtype)
        near = [np.nextafter(x, np.array(np.inf, dtype)), np.nextafter(x, np.array(-np.inf, dtype))]
    return np.concatenate([x, *near])


def _sweep(dtype, n: int = 4000) -> np.ndarray:
    """Magnitudes log-uniform over the whole range, both signs, and denser where it matters."""
    rng = np.random.default_rng(2024)
    fi = np.finfo(dtype)
    lo, hi = math.log(float(fi.smallest_subnormal)), math.log(float(fi.max))
    with np.errstate(all="ignore"):
        parts = [np.exp(rng.uniform(lo, hi, n)) * rng.choice([-1.0, 1.0], n),
                 rng.uniform(-2.0, 2.0, n), rng.uniform(-30.0, 30.0, n), rng.uniform(-800.0, 800.0, n),
                 rng.uniform(-1.0, -0.25, n), 1.0 + rng.uniform(-1e-3, 1e-3, n)]
        return np.concatenate(parts).astype(dtype)


def _values(name: str, width: int):
    def floats(lo: float, hi: float):
        if width == 32:
            lo, hi = float(np.float32(lo)), float(np.float32(hi))
        return st.floats(lo, hi, width=width)

    tiny = 1e-300 if width == 64 else 1e-37
    parts = [st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=width),
             floats(-3.0, 3.0), floats(-50.0, 50.0), floats(-800.0, 800.0), floats(-tiny, tiny),
             st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan])]
    if name in ("log", "log1p"):
        parts.append(floats(-1.0, 1e300 if width == 64 else 3e38))
    if name == "tanh":
        parts += [floats(-1.0, 1.0), floats(-21.0, 21.0)]
    if name in ("exp", "expm1"):
        parts.append(floats(-746.0, -700.0) if width == 64 else floats(-104.0, -87.0))
        parts.append(floats(700.0, 710.0) if width == 64 else floats(85.0, 89.0))
    return st.lists(st.one_of(*parts), min_size=1, max_size=64)


# ---------------------------------------------------------------------------------
# the tests

@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", NAMES)
def test_edges_and_sweep_within_4ulp(name, dtype, monkeypatch):
    check(name, dtype, _edges(name, dtype), monkeypatch)
    check(name, dtype, _sweep(dtype), monkeypatch)


@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", NAMES)
def test_hypothesis_within_4ulp(name, dtype, monkeypatch):
    driver(name, dtype, monkeypatch)

    @HYPO
    @given(_values(name, 64 if dtype == F64 else 32))
    def within(xs):
        check(name, dtype, np.array(xs, dtype=np.float64), monkeypatch)

    within()


@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
def test_tanh_dense_within_4ulp(dtype, monkeypatch):
    """tanh's worst stretch (|x| < 0.7, where its errors and libm's are largest), densely."""
    rng = np.random.default_rng(11)
    check("tanh", dtype, np.concatenate([rng.uniform(-0.7, 0.7, 200_000), rng.uniform(-21.0, 21.0, 50_000)]),
          monkeypatch)


def test_vectorised_lanes_equal_scalar_calls(monkeypatch):
    """Plain IEEE arithmetic: the vector body and the scalar remainder agree bit for bit."""
    x = _sweep(F64, 500)
    for name in NAMES:
        d = driver(name, F64, monkeypatch)
        whole = run(d, x).view(np.int64)
        alone = np.concatenate([run(d, x[k:k + 1]) for k in range(0, x.size, 97)]).view(np.int64)
        np.testing.assert_array_equal(alone, whole[::97])


TANH_DUAL = kernel('''
def th(x):
    return math.tanh(x)
def th__dual(x):
    t = math.tanh(x)
    return (t, 1.0 - t * t)
''', "th", dual="th__dual", active=("x",))


@pytest.mark.parametrize("dtype", [F64, F32], ids=["f64", "f32"])
def test_tanh_dual_sum_vectorises_without_libmvec(dtype, monkeypatch):
    monkeypatch.setenv("S2SAD_LIBMVEC", "0")
    monkeypatch.delenv("S2SAD_VECMATH", raising=False)
    spec = LoopSpec(layouts=("contig",), value="sum", partials=True, seed="scalar")
    d = L.compile_driver(TANH_DUAL, spec, dtype)
    ir = d.optimized_ir
    assert re.search(r"fdiv <(2|4|8|16) x double>", ir), "tanh did not vectorise"
    assert re.search(r"call <(2|4|8|16) x double> @llvm\.fma\.v", ir)
    assert "@tanh" not in ir and not re.search(r"_ZGV[bcde]N", ir)
    x = np.linspace(-5.0, 5.0, 1001).astype(dtype)
    acc, g = np.zeros(1, np.float64), np.empty_like(x)     # the sum is double for every dtype
    d.cfunc(1, x.size, x.ctypes.data, acc.ctypes.data, 1.0, g.ctypes.data)
    t = np.tanh(x.astype(np.float64))
    rtol = 1e-13 if dtype == F64 else 1e-5
    np.testing.assert_allclose(acc[0], np.sum(t), rtol=rtol, atol=1e-11 if dtype == F64 else 1e-3)
    np.testing.assert_allclose(g, 1.0 - t * t, rtol=rtol, atol=1e-15 if dtype == F64 else 1e-6)


def test_math_mode_from_the_environment(monkeypatch):
    monkeypatch.delenv("S2SAD_VECMATH", raising=False)
    monkeypatch.delenv("S2SAD_LIBMVEC", raising=False)
    assert llvm_jit.math_mode() == "libmvec"
    monkeypatch.setenv("S2SAD_LIBMVEC", "0")
    assert llvm_jit.math_mode() == "s2sad"
    monkeypatch.setenv("S2SAD_VECMATH", "libm")
    assert llvm_jit.math_mode() == "libm"
    assert llvm_jit.math_mode(True) == "libmvec" and llvm_jit.math_mode(False) == "libm"
    monkeypatch.setenv("S2SAD_VECMATH", "fast")      # a bad value warns and keeps the default (envflags)
    monkeypatch.setattr(envflags, "_warned", set())  # (warned once a process: this test's own warning)
    with pytest.warns(RuntimeWarning, match="S2SAD_VECMATH"):
        assert llvm_jit.math_mode() == "s2sad"       # (S2SAD_LIBMVEC=0, set above)
    km = kernel("def k(x):\n    return math.exp(x) + math.sin(x)\n", "k")
    own = L.lower_module(km, STORE, F64, vector_isas=())
    assert "@s2sad.exp" in own and "declare double @sin(double) #2" in own     # libm where it has none
    scalar = L.lower_module(km, STORE, F64, vector_isas=(), own_math=False)
    assert "declare double @exp(double) #2" in scalar and "s2sad." not in scalar


@pytest.mark.parametrize("name", sorted(L.VECMATH_FUNCTIONS & {"exp", "expm1", "log", "log1p", "tanh"}))
def test_vector_functions_equal_the_scalar_ones(name, monkeypatch):
    """define_vector's functions give the scalar function's bits: a driver that calls the
    vector function (the vectoriser's calls, lane 0 of it in scalar remainders) against
    one with the scalar body inlined (no known vector width), in the vector body, the
    remainders and scalar calls alike; for OWN_BEFORE_LIBMVEC, in libmvec mode too."""
    from s2sad.codegen import vecmath
    from s2sad.codegen.llvm_lower import VECTOR_ISA_BITS

    for isa in ("b", "d", "e"):
        lanes = VECTOR_ISA_BITS[isa] // 64
        sym, text, _ = vecmath.define_vector(name, lanes)
        assert sym == f"s2sad.{name}.v{lanes}" and f"<{lanes} x double>" in text
    x = np.concatenate([_edges(name, F64), _sweep(F64, 300)])
    km = kernel(f"def vv_{name}(x):\n    return math.{name}(x)\n", f"vv_{name}")
    monkeypatch.setattr(llvm_jit, "_cache", {})
    with monkeypatch.context() as m:
        m.setattr(llvm_jit, "host_vector_bits", lambda h: None)
        inline = L.compile_driver(km, STORE, F64, vector_math="s2sad")
    assert f"@s2sad.{name}.v" not in inline.ir
    scalar = run(inline, x)
    drivers = [L.compile_driver(km, STORE, F64, vector_math="s2sad")]
    if (name, "double") in L.OWN_BEFORE_LIBMVEC and L.vector_math_support()[0]:
        drivers.append(L.compile_driver(km, STORE, F64, vector_math=True))
    if llvm_jit.host_vector_bits(llvm_jit.host()) is None:
        pytest.skip("no known vector width on this host")
    for d in drivers:
        assert f"@s2sad.{name}.v" in d.ir
        for n in (x.size, 1, 3, 7, 13):       # whole vectors, remainders, scalar calls
            got = np.concatenate([run(d, x[k:k + n]) for k in range(0, x.size, n)])
            np.testing.assert_array_equal(got.view(np.int64), scalar.view(np.int64))

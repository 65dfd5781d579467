"""Special functions (s2sad/special.py, rules.SPECIAL_RULES): math.lgamma/gamma, log(x, b),
n-argument hypot, and scipy.special's, recognised by identity.

- values against scipy, through s2sad.broadcast on both backends, float64 and float32:
  float64 to 1e-13 relative (digamma and lgamma: of max(|f|, 1), absolute near their
  roots; ndtr/log_ndtr in the far tails to 1e-11, where erfc's argument x/sqrt2 carries
  its rounding, magnified 2 x^2 times); float32 against the float64 result rounded
  to float, to 1e-5 (lgamma, digamma: of max(|f|, 1); ndtr's tails as float64's);
- gradients against central differences, scalar and fused array sums, scipy's callables
  and math's, float64 and float32 (tests/test_rule_partials.py checks each row too);
- the points scipy defines (poles, +-1 for erfinv, xlogy(0, 0)) and their slopes;
- the refusals: polygamma of order 2 or of a variable order, special.py's value-only
  functions called by a user;
- s2sad imports and differentiates math.lgamma with scipy unimportable;
- the CUDA C of a fused special-function kernel, run by the host emulation.
"""
from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2sad
from s2sad import special
from s2sad.errors import S2SADError

sc = pytest.importorskip("scipy.special")
rng = np.random.default_rng(16)
INF, NAN = math.inf, math.nan


def _avoid_poles(x):
    return x[np.abs(x - np.round(x)) > 1e-3]


def _wide(lo, hi, n=200):
    return rng.uniform(lo, hi, n)


# name -> (scipy function, arguments (float64), float64 rtol, of max(|f|, floor))
VALUES = {
    "gammaln": (sc.gammaln, _avoid_poles(np.concatenate([_wide(1e-3, 50), np.logspace(-5, 300, 40),
                                                         _wide(-30, 0)])), 1e-14, 1.0),
    "gamma": (sc.gamma, _avoid_poles(_wide(-20, 171)), 1e-14, 0.0),
    "digamma": (sc.digamma, _avoid_poles(np.concatenate([_wide(1e-3, 50), np.logspace(-5, 300, 40),
                                                         _wide(-30, 0)])), 1e-13, 1.0),
    "psi": (sc.psi, _avoid_poles(_wide(-10, 10)), 1e-13, 1.0),
    "erfinv": (sc.erfinv, np.concatenate([_wide(-1, 1), 1 - np.logspace(-15, -1, 40),
                                          -np.logspace(-300, -1, 30)]), 1e-13, 0.0),
    "ndtr": (sc.ndtr, _wide(-37, 40), 1e-11, 0.0),
    "log_ndtr": (sc.log_ndtr, np.concatenate([_wide(-60, 40), -np.logspace(0, 150, 40)]), 1e-11, 0.0),
    "expit": (sc.expit, _wide(-800, 800), 1e-15, 0.0),
    "logit": (sc.logit, _wide(0, 1), 1e-13, 0.0),
}
TWO_VALUES = {
    "xlogy": (sc.xlogy, _wide(-3, 3), _wide(0, 5), 1e-15),
    "xlog1py": (sc.xlog1py, _wide(-3, 3), _wide(-1, 5), 1e-15),
    "betaln": (sc.betaln, _wide(0.1, 40), _wide(0.1, 40), 1e-12),   # lgamma(a)+lgamma(b)-lgamma(a+b)
}


def _rel_err(got, want, floor):
    with np.errstate(all="ignore"):
        err = np.abs(got - want) / np.maximum(np.abs(want), floor)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    return np.where(same, 0.0, err)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_against_scipy(name, backend):
    fn, x, rtol, floor = VALUES[name]
    want = fn(x)
    got = s2sad.broadcast(fn, x, backend=backend)
    tiny = np.abs(want) < 1e-300          # subnormal results carry fewer digits
    err = _rel_err(got, want, floor)[~tiny]
    assert err.max() <= rtol, f"{name}: {err.max():.2e} at x = {x[~tiny][np.argmax(err)]!r}"
    # float32: against float64's result rounded to float
    with np.errstate(all="ignore"):
        x32 = x.astype(np.float32)     # (log_ndtr's -1e150 becomes -inf)
        want32 = fn(x32.astype(np.float64)).astype(np.float32).astype(np.float64)
    got32 = s2sad.broadcast(fn, x32, backend=backend)
    assert got32.dtype == np.float32
    keep = np.abs(want32) > 1e-37
    tol32 = 1e-5
    err32 = _rel_err(got32.astype(np.float64), want32, floor)[keep]
    assert err32.max() <= tol32, f"{name} float32: {err32.max():.2e} at x = {x32[keep][np.argmax(err32)]!r}"


@pytest.mark.parametrize("name", sorted(TWO_VALUES))
def test_two_argument_values_against_scipy(name, backend):
    fn, x, y, rtol = TWO_VALUES[name]
    if name != "betaln":    # x = 0 gives 0 for every y but NaN
        x = np.concatenate([x, [0.0, 0.0, 0.0]])
        y = np.concatenate([y, [0.0, 2.0, NAN]])
    want = fn(x, y)
    got = s2sad.broadcast(fn, x, y, backend=backend)
    assert _rel_err(got, want, 0.0).max() <= rtol


def test_math_functions_against_math(backend):
    def f(x):
        return math.lgamma(x) + math.gamma(x) + math.log(x, 7.0) + math.hypot(x, 2.0, -3.0, 0.5)
    for x in (0.3, 1.7, 6.25, 30.5):
        want = math.lgamma(x) + math.gamma(x) + math.log(x, 7.0) + math.hypot(x, 2.0, -3.0, 0.5)
        assert s2sad.value_and_grad(f, backend=backend)(x)[0] == pytest.approx(want, rel=1e-14)


# ---------------------------------------------------------------- gradients

def _fd(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


def scalar_model(x):
    return (sc.gammaln(x) + 0.5 * sc.digamma(x) + sc.polygamma(1, x) + sc.polygamma(0, x) * 0.25
            + sc.erfinv(x / 40.0) + sc.log_ndtr(x - 3.0) + sc.ndtr(x - 2.0) + sc.expit(x - 1.0)
            + sc.logit(1.0 / (1.0 + x)) + sc.xlogy(x, x + 1.0) + sc.xlog1py(x, x) + sc.betaln(x, 2.5)
            + math.lgamma(x) + math.gamma(x) / 10.0 + math.log(x, 3.0) + math.hypot(x, 1.0, 2.0))


def array_model(x):
    return np.sum(sc.gammaln(x) * sc.digamma(x) + sc.log_ndtr(-x * 5.0) + sc.xlogy(x, x) + sc.betaln(x, x + 1.0)
                  + sc.erfinv(1.0 / (x + 1.5)) + sc.polygamma(1, x))


@pytest.mark.parametrize("x", [0.35, 1.4616, 2.5, 7.75, 19.0])
def test_scalar_gradients_against_central_differences(x, backend):
    g = s2sad.grad(scalar_model, backend=backend)(x)
    assert g == pytest.approx(_fd(scalar_model, x, 1e-6), rel=1e-7, abs=1e-7)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_array_gradients_against_central_differences(dtype, backend):
    x = rng.uniform(0.2, 9.0, 33).astype(dtype)
    g = s2sad.grad(array_model, backend=backend)(x)
    assert g.dtype == dtype
    x64 = x.astype(np.float64)
    want = np.array([_fd(lambda v: array_model(np.where(np.arange(33) == i, v, x64)), x64[i], 1e-6)
                     for i in range(33)])
    tol = 1e-6 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(g, want, rtol=tol, atol=tol)


def test_broadcast_and_fused_sums_of_scipy_callables(backend):
    x = rng.uniform(0.5, 6.0, 17)
    g = s2sad.grad(lambda v: np.sum(s2sad.broadcast(sc.digamma, v)), backend=backend)(x)
    np.testing.assert_allclose(g, sc.polygamma(1, x), rtol=1e-13)
    g = s2sad.grad(lambda v: np.sum(s2sad.broadcast(lambda z: sc.polygamma(1, z), v)), backend=backend)(x)
    np.testing.assert_allclose(g, sc.polygamma(2, x), rtol=1e-13)


# ---------------------------------------------------------------- defined points

def _lgamma(x): return math.lgamma(x)
def _gamma(x): return math.gamma(x)
def _digamma(x): return sc.digamma(x)
def _trigamma(x): return sc.polygamma(1, x)
def _erfinv(x): return sc.erfinv(x)
def _log_ndtr(x): return sc.log_ndtr(x)
def _expit(x): return sc.expit(x)
def _xlogy(x, y): return sc.xlogy(x, y)


# (label, f, args, value, gradient): scipy's values at poles and edges; the slopes there
POINTS = [
    ("lgamma at 0", _lgamma, (0.0,), INF, (-INF,)),       # digamma(0) is -inf (scipy)
    ("lgamma at -2", _lgamma, (-2.0,), INF, (NAN,)),
    ("gamma at 0", _gamma, (0.0,), INF, (NAN,)),
    ("gamma at -0.0", _gamma, (-0.0,), -INF, (NAN,)),
    ("gamma at -1", _gamma, (-1.0,), NAN, (NAN,)),
    ("digamma at 0", _digamma, (0.0,), -INF, (INF,)),
    ("digamma at -3", _digamma, (-3.0,), NAN, (INF,)),
    ("trigamma at -3", _trigamma, (-3.0,), INF, (NAN,)),
    ("erfinv at 1", _erfinv, (1.0,), INF, (INF,)),
    ("erfinv at -1", _erfinv, (-1.0,), -INF, (INF,)),
    ("erfinv past 1", _erfinv, (1.5,), NAN, (NAN,)),
    ("log_ndtr at -40", _log_ndtr, (-40.0,), float(sc.log_ndtr(-40.0)),
     (math.exp(-800.0 - 0.5 * math.log(2 * math.pi) - float(sc.log_ndtr(-40.0))),)),   # pdf / cdf
    ("expit at -800", _expit, (-800.0,), 0.0, (0.0,)),
    ("xlogy(0, 0)", _xlogy, (0.0, 0.0), 0.0, (-INF, 0.0)),
    ("xlogy(0, NaN)", _xlogy, (0.0, NAN), NAN, (NAN, 0.0)),
]


@pytest.mark.parametrize("label, f, args, value, grads", POINTS, ids=[p[0] for p in POINTS])
def test_values_and_slopes_at_defined_points(label, f, args, value, grads, backend):
    argnums = tuple(range(len(args)))
    v, g = s2sad.value_and_grad(f, argnums=argnums, backend=backend)(*args)
    want_v = float(sc.gammaln(args[0]) if f is _lgamma else value)
    np.testing.assert_allclose(v, want_v, rtol=1e-15, err_msg=label)
    if f is not _gamma:
        np.testing.assert_allclose(np.array(g, dtype=float).reshape(-1), grads, rtol=1e-12, err_msg=label)


# ---------------------------------------------------------------- refusals

def test_polygamma_past_order_one_is_refused_where_it_is_called():
    def f(x):
        return sc.polygamma(2, x)
    with pytest.raises(S2SADError, match=r"constant order 0, 1 only \(order 2 given\)") as e:
        s2sad.grad(f)(1.5)
    assert "test_special_functions.py" in str(e.value) and "sc.polygamma(2, x)" in str(e.value)


def test_polygamma_of_a_variable_order_is_refused():
    def f(x, n):
        return sc.polygamma(n, x)
    with pytest.raises(S2SADError, match="constant order"):
        s2sad.grad(f)(1.5, 1.0)


def test_array_polygamma_of_order_two_is_refused():
    def f(x):
        return np.sum(sc.polygamma(2, x))
    with pytest.raises(S2SADError, match="constant order"):
        s2sad.grad(f)(np.ones(3))


@pytest.mark.parametrize("fn", [special.tetragamma, special.libm_lgamma, special.libm_gamma])
def test_value_only_functions_are_refused_to_users(fn):
    def f(x):
        return fn(x) * 2.0
    with pytest.raises(S2SADError, match="no derivative|value-only"):
        s2sad.grad(f)(1.5)


# ---------------------------------------------------------------- without scipy

def test_s2sad_works_without_scipy(tmp_path):
    """With scipy unimportable, s2sad imports, never imports scipy, and differentiates
    math.lgamma on both backends."""
    script = textwrap.dedent("""
        import math, sys
        sys.modules["scipy"] = None          # `import scipy` now raises ImportError
        import numpy as np
        import s2sad
        def f(x):
            return math.lgamma(x) * math.log(x, 2.0)
        for backend in ("python", "llvm"):
            print(repr(s2sad.grad(f, backend=backend)(3.5)))
        print(repr(float(s2sad.grad(lambda v: np.sum(s2sad.broadcast(math.lgamma, v)))(np.array([1.0]))[0])))
        print(sys.modules.get("scipy") is None and "scipy.special" not in sys.modules)
    """)
    path = tmp_path / "no_scipy.py"
    path.write_text(script)
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                         cwd=str(tmp_path), env=_env_with_s2sad())
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    x = 3.5
    want = float(sc.digamma(x)) * math.log(x, 2.0) + math.lgamma(x) / (x * math.log(2.0))
    assert float(lines[0]) == pytest.approx(want, rel=1e-13)
    assert float(lines[1]) == pytest.approx(want, rel=1e-13)
    assert float(lines[2]) == pytest.approx(-0.5772156649015329, rel=1e-14)   # digamma(1)
    assert lines[3] == "True"


def _env_with_s2sad():
    import os
    env = dict(os.environ)
    root = str(__import__("pathlib").Path(s2sad.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root
    return env


# ---------------------------------------------------------------- CUDA C

@pytest.mark.parametrize("tag", ["f64", "f32"])
def test_cuda_source_of_special_functions_matches_the_python_backend(tag):
    """The CUDA C of a kernel calling digamma, trigamma, erfinv, log_ndtr, lgamma and
    tgamma (lgamma/tgamma are CUDA's own), its value and partials, through the host
    emulation, against the python backend's run_driver."""
    from s2sad.backends import cuda_host
    from s2sad.codegen import cuda
    from s2sad.codegen import python as pyback
    from s2sad.frontend import parse_function
    from s2sad.kernel import LoopSpec
    from s2sad.passes.normalize import normalize
    from s2sad.runtime import Kernel

    if cuda_host.available() is not None:
        pytest.skip(cuda_host.available())

    def f(x):
        return (sc.digamma(x) + sc.polygamma(1, x) + sc.erfinv(1.0 / (1.0 + x)) + sc.log_ndtr(-3.0 * x)
                + math.lgamma(x) + math.gamma(x))

    prog = normalize(parse_function(f))
    kmod = Kernel(prog, prog.entry).module(tuple(prog.params))
    spec = LoopSpec(("contig",), "store", partials=True, seed="array")
    source = cuda.lower(kmod, spec, tag)
    assert re.search(r"\blgammaf?\(", source) and re.search(r"\btgammaf?\(", source)
    n = 64
    dt = np.float64 if tag == "f64" else np.float32
    x = np.concatenate([rng.uniform(0.1, 12.0, n - 4), [0.5, 1.0, 3.0, 20.0]]).astype(dt)
    out, grads = np.zeros(n, dt), [(np.zeros(n, dt), n, 1)]
    cuda_host.launch(kmod, spec, tag, 1, n, [(x, n, 1)], out=out, seed=np.ones(n, dt), grads=grads, grid=2,
                     block=8)
    fn = pyback.compile_module(kmod)[kmod.dual_entry]
    act = tuple(kmod.params.index(a) for a in kmod.active)
    x64 = x.astype(np.float64)
    ref_out, ref_grads = np.zeros(n), [(np.zeros(n), n, 1)]
    pyback.run_driver(fn, spec, act, 1, n, [(x64, n, 1)], out=ref_out, seed=np.ones(n), grads=ref_grads)
    rtol = 1e-13 if tag == "f64" else 2e-5    # float: the python backend computes in double
    np.testing.assert_allclose(out, ref_out, rtol=rtol)
    np.testing.assert_allclose(grads[0][0], ref_grads[0][0], rtol=rtol * 10)
    h = 1e-6
    np.testing.assert_allclose(ref_grads[0][0], [(f(v + h) - f(v - h)) / (2 * h) for v in x64], rtol=1e-6)


# log B(a, b) to 20 digits by mpmath (40-digit arithmetic): where lgamma(a) + lgamma(b) -
# lgamma(a + b) cancels (lgamma(1e15) is 3e16) and scipy 1.17 itself errs by 1e-9
BETALN = [((0.5, 1e15), -16.697023254530642418), ((0.030752428414352006, 643094.2315047277), 3.0535175460255782922),
          ((1e10, 1e10), -13862943621.44631953), ((12.5, 3e8), -225.25681563540282398),
          ((3.0, 25.0), -9.0796620483340665594), ((1e5, 3.0), -33.845659214100742951)]


def test_betaln_of_large_arguments_against_mpmath(backend):
    a = np.array([p[0][0] for p in BETALN])
    b = np.array([p[0][1] for p in BETALN])
    want = np.array([p[1] for p in BETALN])
    np.testing.assert_allclose(s2sad.broadcast(special.betaln, a, b, backend=backend), want, rtol=2e-15)
    np.testing.assert_allclose(s2sad.broadcast(special.betaln, b, a, backend=backend), want, rtol=2e-15)
    got = s2sad.broadcast(special.betaln, np.array([NAN, 1.0]), np.array([1.0, NAN]), backend=backend)
    assert np.isnan(got).all()

"""Issue 12, "Derivatives that are 0 come out NaN": derivatives at the points where a
naive rule meets 0 * inf or log(0) (x ** 0 at 0, 0 ** y, d/dy x ** y at 0), the
conventions where mathematics leaves a choice (README "Numerical conventions"; each
value compared with JAX 0.10.2, float64), and the python backend's IEEE arithmetic
(x / 0.0 is inf there as in compiled code, never ZeroDivisionError).

Each case runs on the python and llvm backends (the `backend` fixture) in three
places: a scalar function (`grad(f)(x)`), a fused elementwise sum
(`np.sum(s2sad.broadcast(f, x))`) and, where numpy has the operation, the array level
(`np.sum(np.power(x, y))`). tests/test_rule_partials.py checks every rule against
central differences; here are the reproducers and what a hostile user would try."""
from __future__ import annotations

import math

import numpy as np
import pytest

import s2sad
from s2sad.backends import cuda_host
from s2sad.codegen import cuda
from s2sad.codegen import python as pyback
from s2sad.errors import BackendUnavailableError
from s2sad.kernel import LoopSpec

NAN, INF = math.nan, math.inf


def grads_three_ways(f, arrays, backend, array_level=None):
    """d sum(f) / d each argument: in a scalar function (per element), in a fused
    elementwise sum, and at the array level (array_level(*arrays) summed) when given."""
    argnums = tuple(range(len(arrays)))
    arrays = [np.asarray(a, dtype=float) for a in arrays]
    g = s2sad.grad(f, argnums=argnums, backend=backend)
    scalar = np.array([g(*(float(a[k]) for a in arrays)) for k in range(arrays[0].size)]).T
    if len(arrays) == 1:
        fused = s2sad.grad(lambda v: np.sum(s2sad.broadcast(f, v)), backend=backend)(arrays[0])[None]
    else:
        fused = np.array(s2sad.grad(lambda v, w: np.sum(s2sad.broadcast(f, v, w)), argnums=(0, 1),
                                    backend=backend)(*arrays))
    out = [scalar.reshape(fused.shape), fused]
    if array_level is not None:
        loss = (lambda v: np.sum(array_level(v))) if len(arrays) == 1 else \
            (lambda v, w: np.sum(array_level(v, w)))
        arr = s2sad.grad(loss, argnums=argnums, backend=backend)(*arrays)
        out.append(np.array(arr).reshape(fused.shape))
    return out


def assert_same_bits(mine, want, what=""):
    """The same float64 bits, except that a NaN is any NaN (its sign and payload depend on
    the instruction that made it)."""
    mine, want = np.atleast_1d(np.asarray(mine, np.float64)), np.atleast_1d(np.asarray(want, np.float64))
    np.testing.assert_array_equal(np.isnan(mine), np.isnan(want), err_msg=f"{what}: NaNs")
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(mine[ok].view(np.int64), want[ok].view(np.int64), err_msg=f"{what}: bits")


def assert_all(got: list, want, what: str):
    for where, g in zip(("scalar function", "fused sum", "array level"), got):
        np.testing.assert_array_equal(g, np.broadcast_to(want, g.shape), err_msg=f"{what}, {where}")


# ---------------------------------------------------------------- the reproducers

def pow_float_zero(x):
    return x ** 0.0


def pow_int_zero(x):
    return x ** 0


def zero_to_the(y):
    return 0.0 ** y


def power(x, y):
    return x ** y


def np_power(x, y):
    return np.power(x, y)


def math_pow(x, y):
    return math.pow(x, y)


def test_x_to_the_zero_has_slope_zero_at_zero(backend):
    """The issue: x ** 0.0 and x ** 0 at 0 gave NaN (0 * 0 ** -1). JAX 0.10.2: 0.0 for
    x ** 0, nan for x ** 0.0; s2sad 0 for both, x ** 0 being the constant 1."""
    xs = [0.0, -0.0, 1.5, -2.0]
    assert_all(grads_three_ways(pow_float_zero, [xs], backend, lambda x: x ** 0.0), 0.0, "x ** 0.0")
    assert_all(grads_three_ways(pow_int_zero, [xs], backend, lambda x: x ** 0), 0.0, "x ** 0")
    assert_all(grads_three_ways(lambda x: np.power(x, 0.0), [xs], backend, lambda x: np.power(x, 0)),
               0.0, "np.power(x, 0)")
    assert_all(grads_three_ways(lambda x: math.pow(x, 0.0), [xs], backend), 0.0, "math.pow(x, 0.0)")


def test_zero_to_a_positive_power_has_slope_zero_in_y(backend):
    """0.0 ** y is 0 for every y > 0 (and 1 at y = 0): d/dy is 0, not 0 * log(0) = NaN.
    JAX 0.10.2: 0.0 at y = 0, 0.5, 2."""
    ys = [0.5, 1.0, 2.0, 3.7, 0.0]
    assert_all(grads_three_ways(zero_to_the, [ys], backend, lambda y: 0.0 ** y), 0.0, "0.0 ** y")


@pytest.mark.parametrize("f", [power, np_power, math_pow], ids=["**", "np.power", "math.pow"])
def test_both_slopes_of_a_power_at_x_zero(f, backend):
    """d/dx x ** y at x = 0 is y * 0 ** (y - 1): 0 for y > 1, 1 at y = 1, inf for
    0 < y < 1, 0 at y = 0, -inf for y < 0 (JAX 0.10.2: 0.0, 1.0, inf, 0.0 for an int
    0, -inf); d/dy is 0 (JAX replaces log(0) by 0), NaN for y < 0 (0 ** y = inf there:
    JAX nan too)."""
    ys = np.array([2.0, 3.0, 2.5, 1.0, 0.5, 0.0, -1.0, -2.0])
    xs = np.zeros_like(ys)
    want_x = [0.0, 0.0, 0.0, 1.0, INF, 0.0, -INF, -INF]
    want_y = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, NAN, NAN]
    array_level = (lambda x, y: np.power(x, y)) if f is not math_pow else None
    for got in grads_three_ways(f, [xs, ys], backend, array_level):
        np.testing.assert_array_equal(got[0], want_x, err_msg=f"d/dx {f.__name__}")
        np.testing.assert_array_equal(got[1], want_y, err_msg=f"d/dy {f.__name__}")


def test_integer_and_negative_powers(backend):
    """`**` with int exponents (and negative ones): y * x ** (y - 1), as JAX: x ** 2 at 0
    -> 0, x ** 3 at 0 -> 0, x ** 1 at 0 -> 1, x ** -2 at -2 -> 0.25, x ** -1 at 0 ->
    -inf, x ** 0.5 at 0 -> inf."""
    cases = [(lambda x: x ** 2, 0.0, 0.0), (lambda x: x ** 3, 0.0, 0.0), (lambda x: x ** 1, 0.0, 1.0),
             (lambda x: x ** -2, -2.0, 0.25), (lambda x: x ** -1, 0.0, -INF), (lambda x: x ** 0.5, 0.0, INF),
             (lambda x: x ** -2, 0.0, -INF), (lambda x: x ** 3, -2.0, 12.0)]
    for f, x, want in cases:
        assert_all(grads_three_ways(f, [[x]], backend, f), want, f"{x} in {f}")


def polynomial(x):
    """Horner-free polynomial code, the exponent a loop counter (not a literal the
    compiler could fold): the k = 0 term must not make the slope at 0 NaN."""
    total = 0.0
    for k in range(4):
        total = total + (k + 1.0) * x ** k
    return total


def test_a_loop_counter_exponent_at_zero(backend):
    """d/dx (1 + 2x + 3x^2 + 4x^3) = 2 at 0 and 2 + 6 + 12 = 20 at 1."""
    assert_all(grads_three_ways(polynomial, [[0.0]], backend), 2.0, "polynomial at 0")
    assert_all(grads_three_ways(polynomial, [[1.0]], backend), 20.0, "polynomial at 1")


def test_forward_mode_and_vjp_agree_at_zero(backend):
    """jvp and vjp use the same rules: x ** 0.0 and 0.0 ** y at 0 give 0 there too."""
    x = np.array([0.0, -0.0, 2.0])
    _, tangent = s2sad.jvp(lambda v: np.sum(v ** 0.0 + 0.0 ** (v + 1.0)), (x,), (np.ones(3),), backend=backend)
    assert tangent == 0.0
    _, pull = s2sad.vjp(lambda v: v ** 0.0 + 0.0 ** (v + 1.0), x, backend=backend)
    np.testing.assert_array_equal(pull(np.ones(3))[0], np.zeros(3))


def test_float32_arrays_give_the_same_zeros(backend):
    x = np.zeros(5, np.float32)
    g = s2sad.grad(lambda v: np.sum(v ** 0.0 + v ** 2.0), backend=backend)(x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, np.zeros(5, np.float32))
    y = np.array([0.5, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(s2sad.grad(lambda v: np.sum(0.0 ** v), backend=backend)(y), np.zeros(3))
    relu = s2sad.grad(lambda v: np.sum(np.maximum(v, 0.0) + np.abs(v)), backend=backend)(x)
    np.testing.assert_array_equal(relu, np.full(5, 1.5, np.float32))     # JAX: 0.5 + 1.0


# ---------------------------------------------------------------- conventions, array level

def test_abs_slope_at_zero_is_one(backend):
    """JAX 0.10.2: grad(jnp.abs)(0.) = 1.0, and 1.0 at -0.0 too; s2sad keeps NaN at NaN
    (JAX: -1.0)."""
    x = np.array([0.0, -0.0, 2.0, -2.0, NAN])
    want = [1.0, 1.0, 1.0, -1.0, NAN]
    assert_all(grads_three_ways(lambda v: abs(v), [x], backend, np.abs), want, "abs")
    assert_all(grads_three_ways(lambda v: math.fabs(v), [x], backend, np.fabs), want, "fabs")


def test_maximum_and_minimum_split_a_tie_and_propagate_nan(backend):
    """np.maximum/np.minimum: JAX 0.10.2 gives 0.5/0.5 on a tie (-0.0 vs 0.0 included)
    and 0/0 where either is NaN; the value is numpy's (NaN if either is NaN)."""
    x = np.array([1.0, -0.0, NAN, 1.0, 3.0, -3.0])
    y = np.array([1.0, 0.0, 1.0, NAN, 2.0, 2.0])
    want_max = ([0.5, 0.5, 0.0, 0.0, 1.0, 0.0], [0.5, 0.5, 0.0, 0.0, 0.0, 1.0])
    want_min = ([0.5, 0.5, 0.0, 0.0, 0.0, 1.0], [0.5, 0.5, 0.0, 0.0, 1.0, 0.0])
    for f, want in ((np.maximum, want_max), (np.minimum, want_min)):
        for got in grads_three_ways(lambda a, b: f(a, b), [x, y], backend, f):
            np.testing.assert_array_equal(got, want, err_msg=f.__name__)
        value, _ = s2sad.value_and_grad(lambda a, b: np.sum(f(a, b) * np.arange(6.0)), argnums=(0, 1),
                                        backend=backend)(x, y)
        assert math.isnan(value)     # row 2 or 3 is NaN, as numpy has it
        kept = s2sad.broadcast(lambda a, b: f(a, b), x, y, backend=backend)
        np.testing.assert_array_equal(kept, f(x, y))


def test_builtin_max_and_min_give_the_returned_argument_the_slope(backend):
    """Python's max(a, b) returns a on a tie (and max(nan, 1) the NaN, max(1, nan) the
    1): that argument takes the whole slope. JAX 0.10.2 on concrete values:
    grad(lambda x: max(x, 1.))(1.) = 1.0, grad(lambda x: max(1., x))(1.) = 0.0."""
    x = np.array([1.0, NAN, 1.0, 3.0])
    y = np.array([1.0, 1.0, NAN, 2.0])
    for got in grads_three_ways(lambda a, b: max(a, b), [x, y], backend):
        np.testing.assert_array_equal(got, [[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    for got in grads_three_ways(lambda a, b: min(a, b), [x, y], backend):
        np.testing.assert_array_equal(got, [[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])


def test_clip_at_its_bounds(backend):
    """np.clip is numpy's minimum(hi, maximum(lo, x)): JAX 0.10.2 gives 0.5 at either
    bound (to x and to the bound), 0.25 when x == lo == hi, 0 everywhere for lo > hi;
    NaN anywhere gives a NaN value (numpy) and slope 0 (JAX)."""
    x = np.array([0.0, 1.0, 0.5, 2.0, -1.0, 1.0, 0.5, NAN, 0.5])
    lo = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, NAN])
    hi = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0])
    gx, glo, ghi = s2sad.grad(lambda a, b, c: np.sum(np.clip(a, b, c)), argnums=(0, 1, 2), backend=backend)(x, lo, hi)
    np.testing.assert_array_equal(gx, [0.5, 0.5, 1.0, 0.0, 0.0, 0.25, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(glo, [0.5, 0.0, 0.0, 0.0, 1.0, 0.25, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ghi, [0.0, 0.5, 0.0, 1.0, 0.0, 0.5, 1.0, 0.0, 0.0])
    kept = s2sad.value_and_grad(lambda a: np.sum(np.clip(a, lo, hi) * 0.0 + np.clip(a, lo, hi)),
                                backend=backend)(x)[0]
    assert math.isnan(kept)


def test_hypot_at_the_origin(backend):
    """JAX 0.10.2: grad of jnp.hypot at (0, 0) is (0.5, 0.5) (and at (-0.0, 0)); at
    (0, 2) it is (0, 1), at (-2, 0) (-1, 0)."""
    x = np.array([0.0, -0.0, 0.0, -2.0, 3.0])
    y = np.array([0.0, 0.0, 2.0, 0.0, 4.0])
    for got in grads_three_ways(lambda a, b: math.hypot(a, b), [x, y], backend, np.hypot):
        np.testing.assert_allclose(got, [[0.5, 0.5, 0.0, -1.0, 0.6], [0.5, 0.5, 1.0, 0.0, 0.8]], rtol=1e-15)
    tiny = np.array([1e-310, -5e-324, 3e-320])         # subnormal: 1 / hypot overflows
    for got in grads_three_ways(lambda a, b: math.hypot(a, b), [tiny, np.zeros(3)], backend, np.hypot):
        np.testing.assert_array_equal(got, [[1.0, -1.0, 1.0], [0.0, 0.0, 0.0]])


def test_copysign_and_sign_at_zero(backend):
    """JAX 0.10.2: d/dx copysign(x, y) at x = 0 is +1 or -1 by y's sign bit
    (copysign(x, 0.0) -> 1.0, copysign(x, -0.0) -> -1.0); d/dy is 0; sign's slope is 0."""
    x = np.array([0.0, 0.0, 0.0, 0.0, -0.0])
    y = np.array([1.0, -1.0, 0.0, -0.0, 1.0])
    for got in grads_three_ways(lambda a, b: math.copysign(a, b), [x, y], backend, np.copysign):
        np.testing.assert_array_equal(got, [[1.0, -1.0, 1.0, -1.0, 1.0], [0.0] * 5])
    assert_all(grads_three_ways(lambda a: np.sign(a), [[0.0, -0.0, 2.0]], backend, np.sign), 0.0, "sign")


# ---------------------------------------------------------------- the oracle's IEEE arithmetic

def divide_by_zero(x):
    return x / 0.0


def constants_divided(x):
    return x + 1.0 / 0.0 - 1.0 // 0.0 + 0.0 % 0.0


def counter_divided(x):
    total = x
    for i in range(3):
        total = total + x / i + i / 0.0 + (i // 0.0) + (i % 0.0) + x ** (-i)
    return total


def truth_divided(x):
    return (x < 1.0) / 0.0 + (not x) / 0.0 + x // (x > 5.0) + x % (x > 5.0)


def overflowing(x):
    return x ** 400.0 + 10.0 ** 400 + (x * 1e300) * 1e300 + 2 ** 100000


def floor_and_mod(x, y):
    return x // y + x % y


ORACLE = [divide_by_zero, constants_divided, counter_divided, truth_divided, overflowing]


@pytest.mark.parametrize("f", ORACLE, ids=[f.__name__ for f in ORACLE])
def test_python_backend_gives_ieee_results_like_llvm(f):
    """The python backend (the tests' oracle) gives inf/-inf/NaN where Python raises
    (ZeroDivisionError, OverflowError), bit for bit what llvm gives, in values and
    gradients, scalar and fused."""
    x = np.array([1.0, -1.0, 0.0, -0.0, 2.5, NAN, INF])
    results = {}
    for backend in ("python", "llvm"):
        v, g = s2sad.value_and_grad(lambda a: np.sum(s2sad.broadcast(f, a) * np.arange(1.0, 8.0)),
                                    backend=backend)(x)
        kept = s2sad.broadcast(f, x, backend=backend)
        per = [s2sad.value_and_grad(f, backend=backend)(float(a)) for a in x]
        results[backend] = [np.float64(v), g, kept, np.array(per)]
    for what, mine, ref in zip(("value", "gradient", "broadcast", "scalar value_and_grad"),
                               results["python"], results["llvm"]):
        assert_same_bits(mine, ref, what)


def test_floor_division_and_remainder_by_zero_are_numpys(backend):
    """x // 0.0 and x % 0.0 as numpy float64 gives them (inf/-inf/NaN, NaN), on every
    backend, and the slopes (0 and 1, -floor(x / y)) follow."""
    x = np.array([1.0, -1.0, 0.0, 2.5, 7.0])
    y = np.array([0.0, 0.0, 0.0, -0.0, 2.0])
    with np.errstate(all="ignore"):
        want = np.floor_divide(x, y) + np.remainder(x, y)
    np.testing.assert_array_equal(s2sad.broadcast(floor_and_mod, x, y, backend=backend), want)
    gx, gy = s2sad.grad(lambda a, b: np.sum(s2sad.broadcast(floor_and_mod, a, b)), argnums=(0, 1),
                        backend=backend)(x, y)
    np.testing.assert_array_equal(gx, np.ones(5))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(gy, -np.floor(x / y))


def test_python_kernels_are_still_readable_python():
    """The IEEE numbers are put in when the python backend compiles, not in the source
    s2sad shows (s2sad.source, golden files)."""
    text = s2sad.grad(divide_by_zero).__s2sad__.source()
    assert "1.0 / 0.0" in text and "Real" not in text and "__s2sad_k" not in text


# ---------------------------------------------------------------- CUDA C of the changed rules

def rules_mix(x, y):
    """Every rule this issue changed, in one kernel."""
    a = x ** y + abs(x) + math.fabs(y) + np.maximum(x, y) + np.minimum(x, y)
    return a + math.hypot(x, y) + math.copysign(x, y) + 0.0 ** y


SPECIAL = np.array([0.0, -0.0, 1.0, -2.0, 0.5, NAN, 2.0, 3.0])


def test_cuda_c_of_the_changed_rules_computes_what_the_python_backend_does():
    """The dual of a kernel using every changed rule, lowered to CUDA C, built for the host
    (g++ emulation) and run on ties, signed zeros and NaNs: the python backend's values
    and partials, bit for bit (float64; the same libm)."""
    if cuda_host.available() is not None:
        pytest.skip(cuda_host.available())
    d = s2sad.grad(rules_mix, argnums=(0, 1)).__s2sad__
    kernel = d.c.kernel
    kmod = kernel.module(d.c.active_for(d.argnums))
    xs, ys = (a.ravel() for a in np.meshgrid(SPECIAL, SPECIAL))
    n = xs.size
    spec = LoopSpec(("contig", "contig"), "store", partials=True, seed="array")
    seed = np.ones(n)
    ref = {"out": np.full(n, NAN), "grads": [(np.full(n, NAN), n, 1), (np.full(n, NAN), n, 1)]}
    ns = pyback.compile_module(kmod)
    pyback.run_driver(ns[kmod.dual_entry], spec, (0, 1), 1, n, [(xs, n, 1), (ys, n, 1)], out=ref["out"],
                      seed=seed, grads=ref["grads"])
    got = {"out": np.full(n, NAN), "grads": [(np.full(n, NAN), n, 1), (np.full(n, NAN), n, 1)]}
    cuda_host.launch(kmod, spec, "f64", 1, n, [(xs, n, 1), (ys, n, 1)], out=got["out"], seed=seed,
                     grads=got["grads"], grid=2, block=32)
    for what, mine, want in [("value", got["out"], ref["out"]), ("d/dx", got["grads"][0][0], ref["grads"][0][0]),
                             ("d/dy", got["grads"][1][0], ref["grads"][1][0])]:
        assert_same_bits(mine, want, what)


@pytest.mark.parametrize("tag", ["f64", "f32"])
def test_cuda_c_of_the_changed_rules_compiles_with_nvrtc(tag):
    """The same kernel's CUDA C, value + gradient driver, through NVRTC (and ptxas where
    installed), in both dtypes."""
    d = s2sad.grad(rules_mix, argnums=(0, 1)).__s2sad__
    kmod = d.c.kernel.module(d.c.active_for(d.argnums))
    spec = LoopSpec(("contig", "contig"), "sum", partials=True, seed="scalar")
    source = cuda.lower(kmod, spec, tag)
    assert "s2sad_maximum" in source and "s2sad_minimum" in source
    try:
        ptx = cuda.compile_ptx(source, cuda.driver_name(kmod, spec, tag), arch="sm_90")
    except BackendUnavailableError as e:
        pytest.skip(str(e))
    cuda.check_ptxas(ptx, arch="sm_90")

"""Gradients that are zero by the rules (issue 17, `sum(x > 0.1)`): a kernel whose dual's
partials are all the constant +0 (`KernelPlan.zero_partials`) gets its gradients made as
zeros, not computed (zerograds.py); its value, when asked, from a kernel
without partials. Checked: zeros of the argument's shape and dtype, the value numpy's,
in both backends, float32/float64, 0-d, empty, broadcast and scalar params; results
identical (type, dtype, shape, bits, the sign of zero) to the kernel's with the shortcut
off; and the cases that look zero but are not keep their kernel."""
from __future__ import annotations

import math

import numpy as np
import pytest

import s2sad
from s2sad import errors, runtime, zerograds
from s2sad.codegen.llvm_entry import ENTRY_MAX
from s2sad.frontend import parse_function
from s2sad.passes.kernelplan import KernelPlan
from s2sad.passes.normalize import normalize

BIG = ENTRY_MAX + 1001          # past the driver's one-call entry: the lean path's shortcut


def gt_loss(x):
    return np.sum(x > 0.1)


def floor_loss(x):
    return np.sum(np.floor(x))


def sign_loss(x):
    return np.sum(np.sign(x))


def round_loss(x):
    return np.sum(np.round(x))


def where_loss(x):
    return np.sum(np.where(x > 0, 1.0, 2.0))


def mean_loss(x):
    return np.mean(np.floor(x) + np.sign(x))


def step(z):
    if z > 0:
        return 1.0
    return 0.0


def step_loss(x):
    return np.sum(s2sad.broadcast(step, x))


def two_loss(x, y):
    return np.sum(np.floor(x) + np.sign(y))


# look zero, are not
def masked_loss(x):
    return np.sum(x * (x > 0.1))


def where_x_loss(x):
    return np.sum(np.where(x > 0, x, 2.0))


def half_step(z):
    if z > 0:
        return z
    return 0.0


def half_step_loss(x):
    return np.sum(s2sad.broadcast(half_step, x))


ZERO = {gt_loss: lambda x: np.sum(x > 0.1), floor_loss: lambda x: np.sum(np.floor(x)),
        sign_loss: lambda x: np.sum(np.sign(x)), round_loss: lambda x: np.sum(np.round(x)),
        where_loss: lambda x: np.sum(np.where(x > 0, 1.0, 2.0)),
        mean_loss: lambda x: np.mean(np.floor(x) + np.sign(x)),
        step_loss: lambda x: np.sum(np.where(x > 0, 1.0, 0.0))}
NOT_ZERO = {masked_loss: lambda x: (x > 0.1).astype(x.dtype), where_x_loss: lambda x: (x > 0).astype(x.dtype),
            half_step_loss: lambda x: (x > 0).astype(x.dtype)}


def _input(n, dtype):
    rng = np.random.default_rng(n)
    if n is None:
        return np.asarray(0.7, dtype)
    return (rng.standard_normal(n) * 3).astype(dtype)


@pytest.fixture
def taken(monkeypatch):
    """How many sum_dual calls took the zero shortcut."""
    count = [0]

    def spy_fast(*a, real=runtime.zero_sum_fast, **k):
        got = real(*a, **k)
        count[0] += got is not None
        return got

    def spy_seed(*a, real=runtime.zero_seed, **k):
        got = real(*a, **k)
        count[0] += got is not None
        return got
    monkeypatch.setattr(runtime, "zero_sum_fast", spy_fast)
    monkeypatch.setattr(runtime, "zero_seed", spy_seed)
    return count


def _same(a, b):
    """Equal in type, dtype, shape and bits (the sign of zero included)."""
    assert type(a) is type(b)
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for p, q in zip(a, b):
            _same(p, q)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    else:
        assert a == b or (a != a and b != b)
        if isinstance(a, float):
            assert math.copysign(1.0, a) == math.copysign(1.0, b)


def _without_shortcut(monkeypatch, call):
    with monkeypatch.context() as m:
        m.setattr(KernelPlan, "zero_partials", lambda self, active: False)
        return call()


@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("loss", list(ZERO), ids=lambda f: f.__name__)
def test_zero_gradient_without_a_derivative_kernel(loss, dtype, backend, taken, monkeypatch):
    n = BIG if backend == "llvm" else 300
    x = _input(n, dtype)
    x_before = x.copy()
    vg = s2sad.value_and_grad(loss, backend=backend)
    g = s2sad.grad(loss, backend=backend)
    for _ in range(2):      # the first call plans, the second runs what the first kept
        value, grad = vg(x)
        assert grad.shape == x.shape and grad.dtype == x.dtype and not grad.any()
        assert not np.signbit(grad).any()
        np.testing.assert_allclose(value, ZERO[loss](x.astype(np.float64)), rtol=1e-5 if dtype == np.float32 else 1e-12)
        _same(g(x), grad)
    assert taken[0] >= 3        # (not the kernel's first call: proven_zero)
    np.testing.assert_array_equal(x, x_before)
    _same(_without_shortcut(monkeypatch, lambda: s2sad.value_and_grad(loss, backend=backend)(x)), vg(x))


@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("n", [None, 0, 1, 2, 10, BIG], ids=["0d", "empty", "1", "2", "10", "big"])
def test_sizes_give_the_kernels_results(n, backend, monkeypatch):
    """0-d, empty and small arrays (where the lean path keeps the kernel's one-call
    entry) and a large one: the same results as the kernel's, shortcut or not."""
    if backend == "python" and n == BIG:
        n = 2000
    for loss in (gt_loss, floor_loss, mean_loss):
        x = _input(n, np.float64)
        want = _without_shortcut(monkeypatch, lambda: s2sad.value_and_grad(loss, backend=backend)(x))
        got = s2sad.value_and_grad(loss, backend=backend)(x)
        _same(got, want)
        assert np.shape(got[1]) == x.shape and not np.any(got[1])


@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_nan_and_inf_inputs(backend, taken):
    x = _input(BIG if backend == "llvm" else 50, np.float64)
    x[::7], x[1::7], x[2::7] = np.nan, np.inf, -np.inf
    vg = s2sad.value_and_grad(sign_loss, backend=backend)
    first = vg(x)
    value, grad = vg(x)
    assert not grad.any() and not np.isnan(grad).any()
    assert np.isnan(value)
    assert taken[0] >= 1          # (the plan, and so its kernel, may be another test's)
    _same(first, (value, grad))


@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("shapes", [((BIG,), (BIG,)), ((300, 120), (120,)), ((300, 120), ()), ((40, 1), (1, 30))],
                         ids=["same", "row", "scalar", "outer"])
def test_two_params_broadcast(shapes, backend, taken, monkeypatch):
    """Broadcast and scalar params: their gradients of their own shapes, the kernel's bits."""
    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal(s) if s else 0.4 for s in shapes)
    vg = s2sad.value_and_grad(two_loss, argnums=(0, 1), backend=backend)
    vg(x, y)
    got = vg(x, y)
    want = _without_shortcut(monkeypatch, lambda: s2sad.value_and_grad(two_loss, argnums=(0, 1), backend=backend)(x, y))
    _same(got, want)
    assert np.shape(got[1][0]) == np.shape(x) and np.shape(got[1][1]) == np.shape(y)
    assert taken[0] >= 1


@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_shape_mismatch_is_still_refused(backend):
    with pytest.raises(errors.ShapeError):
        s2sad.grad(two_loss, argnums=(0, 1), backend=backend)(np.ones(BIG), np.ones(7))


def test_non_contiguous_and_int_inputs(taken, monkeypatch):
    x = _input(2 * BIG, np.float64)[::2]
    s2sad.value_and_grad(floor_loss)(x)
    got = s2sad.value_and_grad(floor_loss)(x)
    _same(got, _without_shortcut(monkeypatch, lambda: s2sad.value_and_grad(floor_loss)(x)))
    assert got[1].shape == x.shape and not got[1].any() and taken[0] >= 1


@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("loss", list(NOT_ZERO), ids=lambda f: f.__name__)
def test_looks_zero_but_is_not(loss, backend, taken):
    """A partial that is a comparison (x * (x > 0.1)), or zero on one branch only, is
    computed by the kernel: the gradient is not zero."""
    x = _input(BIG if backend == "llvm" else 300, np.float64)
    s2sad.grad(loss, backend=backend)(x)
    grad = s2sad.grad(loss, backend=backend)(x)
    np.testing.assert_array_equal(grad, NOT_ZERO[loss](x))
    assert grad.any() and taken[0] == 0


# ------------------------------------------------------------ the kernel-level proof and seeds

def k_gt(z):
    return z > 0.1


def k_two(z, b):
    return math.floor(z) + (1.0 if b > 0 else 2.0)


def k_mask(z):
    return z * (z > 0.1)


def k_half(z):
    if z > 0:
        return z
    return 0.0


def _kernel(fn) -> runtime.Kernel:
    p = normalize(parse_function(fn))
    return runtime.Kernel(p, p.entry)


def test_the_size_below_which_the_entry_runs_is_the_entrys():
    assert zerograds.ENTRY_MAX == ENTRY_MAX


def test_the_proof():
    assert _kernel(k_gt).zero_partials(("z",))
    assert _kernel(k_two).zero_partials(("z", "b")) and _kernel(k_two).zero_partials(("b",))
    assert not _kernel(k_mask).zero_partials(("z",))
    assert not _kernel(k_half).zero_partials(("z",))
    assert not _kernel(k_gt).zero_partials(())


@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("scale", [1.0, 0.25, -1.0, -0.0, 0.0, 3, np.float32(-2.0)], ids=str)
@pytest.mark.parametrize("layout", ["contig", "row", "scalar"])
def test_seeds_sign_the_zeros_as_the_kernel_does(scale, layout, backend, monkeypatch, taken):
    """A stored partial times a negative seed is -0.0; a broadcast param's sum takes the
    terms' sign; a scalar's sum from +0 stays +0: the shortcut gives the same bits."""
    rng = np.random.default_rng(2)
    n = BIG if backend == "llvm" else 200
    z = rng.standard_normal(n)
    b = {"contig": rng.standard_normal(n), "row": rng.standard_normal((1, n)),
         "scalar": 0.5}[layout]
    if layout == "row":
        z = np.stack([z, -z])
    k = _kernel(k_two)
    runtime.sum_dual(k, [z, b], ("z", "b"), scale=scale, backend=backend)     # the first call runs the kernel
    for value in (True, False):
        got = runtime.sum_dual(k, [z, b], ("z", "b"), scale=scale, backend=backend, value=value)
        want = _without_shortcut(monkeypatch, lambda: runtime.sum_dual(
            _kernel(k_two), [z, b], ("z", "b"), scale=scale, backend=backend, value=value))
        _same(got, want)
    assert taken[0] == 2


@pytest.mark.parametrize("scale", [math.inf, -math.inf, math.nan], ids=str)
def test_a_seed_that_is_not_finite_runs_the_kernel(scale, taken):
    """0 * inf is NaN: the kernel's answer, not zeros."""
    k = _kernel(k_gt)
    for _ in range(2):
        got = runtime.sum_dual(k, [np.linspace(-1, 1, BIG)], ("z",), scale=scale, value=False)[1][0]
        assert np.isnan(got).all() and taken[0] == 0


@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_a_first_call_does_not_wait_for_the_proof(backend, taken):
    """The proof makes the dual, which a warm start from the disk cache does not
    otherwise make: the first call runs the kernel, the second proves and takes the
    shortcut."""
    k = _kernel(k_gt)
    x = np.linspace(-1, 1, BIG if backend == "llvm" else 100)
    first = runtime.sum_dual(k, [x], ("z",), backend=backend, value=False)
    assert taken[0] == 0 and ("zero partials", ("z",)) not in k._derived
    second = runtime.sum_dual(k, [x], ("z",), backend=backend, value=False)
    assert taken[0] == 1
    _same(first, second)

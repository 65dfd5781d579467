"""Issue 14, the Hessian of a small fixed-shape array program in one call into machine
code (s2sad/small_hessian.py: the program unrolled per argument shapes, its second
derivatives by sparse forward mode, one LLVM function with a Python entry). Checked
here: the analytic Rosenbrock Hessian, the batched path's blocks (batched_jac.Blocks)
and the per-column jvps, central differences of the gradient, random programs; the
hot path's guards (shapes changing, a global changed, the function's code replaced);
what it declines and leaves to the general path (ints, float32, 0-d, empty, NaN, inf,
strided arrays, a loop, too many elements), with that path's numbers or its located
refusal; no argument written, the function not kept alive.
"""
import gc
import math
import weakref

import numpy as np
import pytest

import s2sad
from s2sad import small_hessian
from s2sad.batched_jac import Blocks
from s2sad.passes import unroll_small
from conftest import hessian_per_column as per_column, central_fd, rosen, rosen_hessian

RNG = np.random.default_rng(7)
SCALE = 100.0


def close(got, want, rtol=1e-12):
    scale = max(1.0, float(np.max(np.abs(want)))) if np.size(want) else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def batched(fun, args, i, j):
    return Blocks(fun, "llvm", "hessian")(tuple(args), (i,), (j,))[(i, j)]




def mixed(x, y):
    return np.sum(np.exp(x[1:]) * y[:-1] ** 3) + np.mean(np.sin(x) * np.log1p(y * y)) + np.sum(x / (2.0 + y))


def functions(x):
    z = np.sqrt(x * x + 1.0)
    return np.sum(np.tanh(z) * np.cos(x)) + np.sum(np.arctan(x) ** 2) + np.sum(np.cbrt(z) + np.log(z) / z)


def matrices(W, v):
    return np.sum(np.tanh(W @ v) ** 2) + 0.5 * np.sum(W.T[1:] * W.T[:-1]) + np.dot(v, v) ** 2


def with_float(x, c):
    return np.sum(c * x[1:] * x[:-1] ** 2) + c * c * np.sum(x)


def looped(x):
    s = x * 1.0
    for _ in range(3):
        s = np.tanh(s)
    return np.sum(s ** 2)


def kinked(x):
    return np.sum(np.abs(x) * x)


def sorted_(x):
    return np.sum(x * np.max(x))


# ------------------------------------------------------------------ right numbers

@pytest.mark.parametrize("n", [2, 3, 10, 64])
def test_rosenbrock_is_the_analytic_hessian(n):
    x = RNG.normal(size=n)
    h = s2sad.hessian(rosen)
    for _ in range(3):      # the full path, then the hot path
        close(h(x), rosen_hessian(x))
    assert h.small.why_not is None and h.small.warm
    close(h(x), batched(rosen, (x,), 0, 0))


def test_rosenbrock_hessian_at_jax_numbers():
    """Rosenbrock's Hessian at (1, ..., 1): 802, -400, 1002 (the bands by hand)."""
    x = np.ones(6)
    want = np.diag([802.0] + [1002.0] * 4 + [200.0]) + np.diag([-400.0] * 5, 1) + np.diag([-400.0] * 5, -1)
    np.testing.assert_array_equal(s2sad.hessian(rosen)(x), want)


def test_past_the_bound_falls_back_with_the_reason():
    x = RNG.normal(size=65)
    h = s2sad.hessian(rosen)
    close(h(x), rosen_hessian(x))
    assert "more than 64 elements" in h.small.why_not


@pytest.mark.parametrize("fun,args", [
    (mixed, (RNG.normal(size=5), RNG.normal(size=5))),
    (functions, (RNG.normal(size=(2, 3)),)),
    (matrices, (RNG.normal(size=(3, 4)) * 0.5, RNG.normal(size=4))),
])
def test_blocks_equal_the_batched_and_per_column_paths(fun, args):
    n = len(args)
    nums = tuple(range(n))
    h = s2sad.hessian(fun, argnums=nums)
    got = h(*args)
    assert h.small.why_not is None and h.small.warm   # (the small path answered)
    for i in nums:
        for j in nums:
            assert got[i][j].shape == args[i].shape + args[j].shape and got[i][j].dtype == np.float64
            close(got[i][j], per_column(fun, args, i, j))
            close(got[i][j], batched(fun, args, i, j), rtol=1e-11)
    again = h(*args)       # the hot path: the same numbers
    for i in nums:
        for j in nums:
            np.testing.assert_array_equal(again[i][j], got[i][j])


def test_against_central_differences_of_the_gradient():
    x = RNG.normal(size=4)
    y = RNG.uniform(0.5, 1.5, size=4)
    h = s2sad.hessian(mixed, argnums=1)(x, y)
    g = s2sad.grad(mixed, argnums=1)
    fd = np.stack([central_fd(lambda y_: g(x, y_)[k], (y,), 0) for k in range(4)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6)


def test_a_float_argument_is_an_input_not_a_constant():
    x = RNG.normal(size=6)
    h = s2sad.hessian(with_float)
    for c in (0.5, 2.0, -1.5):
        close(h(x, c), per_column(with_float, (x, c), 0, 0))
    assert len(h.small.plans) == 1 and h.small.warm


def test_negative_argnums_and_one_of_two():
    x, y = RNG.normal(size=4), RNG.normal(size=4)
    close(s2sad.hessian(mixed, argnums=-1)(x, y), per_column(mixed, (x, y), 1, 1))
    got = s2sad.hessian(mixed, argnums=(1, 0))(x, y)
    close(got[0][1], per_column(mixed, (x, y), 1, 0))


def test_the_same_array_for_two_arguments():
    x = RNG.normal(size=5)
    got = s2sad.hessian(mixed, argnums=(0, 1))(x, x)
    for i in range(2):
        for j in range(2):
            close(got[i][j], per_column(mixed, (x, x), i, j))


# ------------------------------------------------------------------ the hot path and its guards

def test_shapes_changing_between_calls_replan():
    h = s2sad.hessian(rosen)
    for n in (10, 5, 10, 7, 5):
        x = RNG.normal(size=n)
        close(h(x), rosen_hessian(x))
    assert len(h.small.plans) == 3


def test_the_hot_path_does_not_plan_again(monkeypatch):
    x = RNG.normal(size=10)
    h = s2sad.hessian(rosen)
    h(x)
    made = []
    monkeypatch.setattr(small_hessian, "plan_for", lambda *a: made.append(a))
    monkeypatch.setattr(small_hessian, "compiled_array", lambda *a: made.append(a))
    for _ in range(3):
        close(h(x), rosen_hessian(x))
    assert not made


K = 100.0


def uses_global(x):
    return np.sum(K * (x[1:] - x[:-1] ** 2) ** 2)


def test_a_global_changed_between_calls():
    global K
    x = RNG.normal(size=5)
    h = s2sad.hessian(uses_global)
    first = h(x)
    h(x)
    try:
        K = 3.0
        close(h(x), first * 0.03)
    finally:
        K = 100.0
    close(h(x), first)


def test_the_function_redefined_between_calls():
    def f(x):
        return np.sum(x ** 3)

    def other(x):
        return np.sum(np.sin(x) * x[0])
    x = RNG.normal(size=4)
    h = s2sad.hessian(f)
    close(h(x), np.diag(6 * x))
    close(h(x), np.diag(6 * x))
    f.__code__ = other.__code__
    close(h(x), per_column(other, (x,), 0, 0))


def test_a_closure_cell_changed_between_calls():
    scale = 2.0

    def f(x):
        return np.sum(scale * x ** 4)
    x = RNG.normal(size=3)
    h = s2sad.hessian(f)
    close(h(x), np.diag(24.0 * x * x))
    close(h(x), np.diag(24.0 * x * x))
    scale = 1.0
    close(h(x), np.diag(12.0 * x * x))


def test_the_function_is_not_kept_alive():
    def make():
        def f(x):
            return np.sum(x[1:] * x[:-1] ** 2)
        return f
    f = make()
    ref = weakref.ref(f)
    h = s2sad.hessian(f)
    x = RNG.normal(size=6)
    h(x)
    h(x)
    del f, h
    gc.collect()
    assert ref() is None


def test_no_argument_is_written():
    x, y = RNG.normal(size=5), RNG.normal(size=5)
    x0, y0 = x.copy(), y.copy()
    h = s2sad.hessian(mixed, argnums=(0, 1))
    h(x, y)
    h(x, y)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)


# ------------------------------------------------------------------ declined: the general path answers

def test_ints_are_refused_located():
    with pytest.raises(s2sad.NonDifferentiableInputError):
        s2sad.hessian(rosen)(np.arange(5))
    with pytest.raises(s2sad.S2SADError):
        s2sad.hessian(rosen, argnums=3)(np.ones(4))


def test_float32_float64_strided_and_fortran_arrays():
    x = RNG.normal(size=8)
    h = s2sad.hessian(rosen)
    h(x)
    got = h(x.astype(np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, rosen_hessian(x), rtol=1e-4, atol=1e-3)
    wide = RNG.normal(size=16)
    close(h(wide[::2]), rosen_hessian(wide[::2]))
    A = np.asfortranarray(RNG.normal(size=(3, 4)))
    close(s2sad.hessian(functions)(A), per_column(functions, (np.ascontiguousarray(A),), 0, 0))


def test_zero_d_and_empty_arguments():
    h = s2sad.hessian(lambda x: np.sum(x ** 3))
    np.testing.assert_allclose(h(np.array(2.0)), 12.0)
    assert h(np.zeros(0)).shape == (0, 0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_spread_as_the_general_path_spreads_them(bad):
    x = np.array([0.5, 0.3, -0.3, 0.8])
    x[1] = bad
    got = s2sad.hessian(rosen)(x)
    want = per_column(rosen, (x,), 0, 0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isfinite(want)], want[np.isfinite(want)])


def test_an_overflow_inside_is_left_to_the_general_path():
    x = np.array([800.0, 1.0, 2.0])
    f = lambda x: np.sum(np.exp(x) * x[0])     # noqa: E731
    got = s2sad.hessian(f)(x)
    want = per_column(f, (x,), 0, 0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


def test_what_does_not_unroll_falls_back_and_says_why():
    x = RNG.normal(size=4)
    h = s2sad.hessian(looped)
    close(h(x), per_column(looped, (x,), 0, 0))
    assert "loop" in h.small.why_not
    h = s2sad.hessian(sorted_)
    close(h(x), per_column(sorted_, (x,), 0, 0))
    assert "not unrolled" in h.small.why_not


def leaky(z):
    return z if z > 0 else 0.1 * z


def softplus(z):
    return math.log(1.0 + math.exp(-abs(z))) + max(z, 0.0) + min(z, 0.5) ** 2


def piecewise(x, y):
    a = np.where(x > 0, x * y, 0.5 * x)
    return np.sum(np.maximum(a, y) ** 2 + np.minimum(x, y) * x) + np.sum(s2sad.broadcast(softplus, a * y)) \
        + np.sum(s2sad.broadcast(leaky, x) ** 3)


@pytest.mark.parametrize("tie", [False, True])
def test_piecewise_programs_take_the_slopes_of_the_rules_table(tie):
    """if-expressions, comparisons, abs, min, max, np.maximum / np.minimum (a tie: 0.5
    to each, as the rules table and JAX) unroll as selects."""
    x = np.array([0.7, -0.4, 1.3, -1.1, 0.2])
    y = x.copy() if tie else np.array([0.3, 0.5, -0.8, 0.9, 0.25])
    h = s2sad.hessian(piecewise, argnums=(0, 1))
    got = h(x, y)
    assert h.small.warm, h.small.why_not
    for i in range(2):
        for j in range(2):
            close(got[i][j], per_column(piecewise, (x, y), i, j))
    x = np.array([0.7, -0.4, 0.0, -0.0])
    close(s2sad.hessian(kinked)(x), per_column(kinked, (x,), 0, 0))


def test_too_many_operations_fall_back(monkeypatch):
    monkeypatch.setattr(unroll_small, "MAX_NODES", 20)
    x = RNG.normal(size=10)
    h = s2sad.hessian(rosen)
    close(h(x), rosen_hessian(x))
    assert "scalar operations" in h.small.why_not


def test_a_result_that_is_not_one_number_is_refused_located():
    def not_scalar(x):
        return x[1:] * x[:-1]
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.hessian(not_scalar)(np.ones(4))
    assert e.value.location is not None


def test_the_python_backend_is_not_taken():
    x = RNG.normal(size=5)
    h = s2sad.hessian(rosen, backend="python")
    close(h(x), rosen_hessian(x))
    assert not h.small.plans


# ------------------------------------------------------------------ the program shown

def test_the_source_is_the_program_that_runs():
    x = RNG.normal(size=5)
    text = small_hessian.source(rosen, (x,))
    assert text.startswith("def rosen__small_hessian(x, out):")
    ns = {"math": math, "np": np}
    exec(text, ns)
    out = np.zeros(25)
    ns["rosen__small_hessian"](x, out)
    close(out.reshape(5, 5), rosen_hessian(x))
    assert small_hessian.source(looped, (x,)).startswith("# no small program: a loop")


# ------------------------------------------------------------------ structural primitives

def joins(x, y):
    z = np.concatenate([x, y * 2.0])
    s = np.stack([x, y])
    return np.sum(np.tanh(z) ** 2) + np.sum(s.T @ s) + np.sum(np.outer(x, y) ** 2)


def axes(A):
    return np.sum(np.mean(A ** 2, axis=1) ** 2) + np.sum(np.sum(A, axis=0, keepdims=True) * A) \
        + np.sum(A.reshape(-1)[::3] ** 3) + np.sum(np.transpose(A) @ A)


@pytest.mark.parametrize("fun,args", [(joins, (RNG.normal(size=4), RNG.normal(size=4))),
                                      (axes, (RNG.normal(size=(3, 4)),))])
def test_joins_reshapes_and_reductions_along_an_axis(fun, args):
    nums = tuple(range(len(args)))
    h = s2sad.hessian(fun, argnums=nums)
    got = h(*args)
    assert h.small.warm, h.small.why_not
    for i in nums:
        for j in nums:
            close(got[i][j], per_column(fun, args, i, j))


def traced(x, y):
    return np.trace(np.outer(x, y)) ** 2


def test_a_primitive_with_no_second_order_rule_unrolls_right():
    """np.trace has no forward-over-reverse rule (the batched and per-column paths
    refuse its Hessian, located); unrolled it is a sum of products: (x . y)^2 by hand."""
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    got = s2sad.hessian(traced, argnums=(0, 1))(x, y)
    close(got[0][0], 2 * np.outer(y, y))
    close(got[0][1], 2 * np.outer(y, x) + 2 * (x @ y) * np.eye(3))
    close(got[1][1], 2 * np.outer(x, x))


def test_threads_calling_one_hessian_with_different_shapes():
    from concurrent.futures import ThreadPoolExecutor
    h = s2sad.hessian(rosen)
    xs = [RNG.normal(size=n) for n in (4, 7, 10, 4, 7, 10) * 4]

    def one(x):
        return np.max(np.abs(h(x) - rosen_hessian(x))) / np.max(np.abs(rosen_hessian(x)))
    with ThreadPoolExecutor(4) as pool:
        errors = list(pool.map(one, xs))
    assert max(errors) < 1e-12

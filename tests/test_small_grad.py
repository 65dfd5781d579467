"""grad and value_and_grad of small fixed-shape array programs in one call into machine
code (s2sad/small_grad.py, passes/small_reverse.py): right against the python backend
(an independent implementation), the general llvm path and central differences; its
value bit-identical to the function's own; and everything outside its envelope (NaN and
inf, other shapes, float32 and int arguments, big arrays, loops, changed globals and
closures) still right or refused as before.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad.errors import NonDifferentiableInputError, S2SADError
from s2sad.small_grad import SmallGrad

from conftest import central_fd


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def two_args(x, y):
    return np.sum(np.tanh(x[1:] * y[:-1]) + y[1:] ** 2 / (1.5 + np.sin(x[:-1])))


def matrix_loss(A, v):
    return np.sum(np.tanh(A @ v) ** 2) + np.mean(A[:, 0] * v[0])


def xs(n, seed=0):
    return np.random.default_rng(seed).uniform(-1.2, 1.2, size=n)


def reference(f, args, argnums=0):
    """The python backend's (value, gradients): the generated program run by Python."""
    return s2sad.value_and_grad(f, argnums, backend="python")(*args)


def close(a, b, rtol=1e-13):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for p, q in zip(a, b):
            close(p, q, rtol)
        return
    assert type(a) is type(b) and np.shape(a) == np.shape(b)
    if not np.size(b):
        return
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


def unrolled(g) -> bool:
    """Did the unrolled plan answer (its hot path is the derivative's, a plan made)?"""
    d = g.__s2sad__
    return d.small is not None and d.hot is d.small.router and d.small.current[0] is not None


def general(monkeypatch, f, args, argnums=0, what=s2sad.value_and_grad):
    """The llvm backend's generated program, the unrolled plan turned off."""
    with monkeypatch.context() as m:
        m.setattr(SmallGrad, "full", lambda self, args: None)
        return what(f, argnums)(*args)


# ---------------------------------------------------------------- right, and the path taken

@pytest.mark.parametrize("n", [2, 3, 7, 8, 9, 10, 17, 33])
def test_rosenbrock_value_and_gradient(n):
    x = xs(n, seed=n)
    vg = s2sad.value_and_grad(rosen)
    value, g = vg(x)
    assert type(value) is float and value == rosen(x)      # np.sum's order: the same bits
    assert g.dtype == np.float64 and g.shape == x.shape
    close((value, g), reference(rosen, (x,)))
    np.testing.assert_allclose(g, central_fd(rosen, [x], 0), rtol=1e-6, atol=1e-5)
    assert unrolled(vg)
    again = vg(x)       # the hot path: the same bits
    assert again[0] == value and np.array_equal(again[1], g)
    gr = s2sad.grad(rosen)
    assert np.array_equal(gr(x), g) and np.array_equal(gr(x), g) and unrolled(gr)


def test_against_the_general_llvm_path(monkeypatch):
    for f, args in ((rosen, (xs(10),)), (two_args, (xs(6, 1), xs(6, 2))),
                    (matrix_loss, (xs(12, 3).reshape(4, 3), xs(3, 4)))):
        want = general(monkeypatch, f, args)
        got = s2sad.value_and_grad(f)(*args)
        close(got, want)


def test_bitwise_where_the_arithmetic_is_the_same(monkeypatch):
    """A gradient that is the data itself (d sum(c * x) / dx = c): the same bits on every path."""
    c = xs(12, 5)

    def f(x):
        return np.sum(c * x)
    x = xs(12, 6)
    got = s2sad.grad(f)(x)
    assert np.array_equal(got, c)
    assert np.array_equal(general(monkeypatch, f, (x,), what=s2sad.grad), got)


def test_the_value_is_the_functions_own_bits():
    rng = np.random.default_rng(7)
    for n in range(2, 34, 3):
        x = rng.normal(size=n) * 10.0 ** rng.integers(-3, 3, size=n)
        for f in (rosen, lambda x: np.mean(np.cos(x[1:]) * x[:-1]), lambda x: np.sum(x[::2] * x[1::2][:1])):
            value, _ = s2sad.value_and_grad(f)(x)
            if "cos" in getattr(f, "__code__").co_names:
                assert value == pytest.approx(float(f(x)), rel=1e-14)     # (numpy's cos is its own)
            else:
                assert value == f(x)


def test_argnums_tuples_and_negative_argnums():
    x, y = xs(6, 1), xs(6, 2)
    for argnums in (0, 1, -1, (0, 1), (1, 0), (1,), (0,)):
        got = s2sad.value_and_grad(two_args, argnums)(x, y)
        close(got, reference(two_args, (x, y), argnums))
        g = s2sad.grad(two_args, argnums)
        assert type(g(x, y)) is type(got[1])
        close(g(x, y), got[1])
        close(g(x, y), got[1])      # (hot)
    for k, i in enumerate((0, 1)):
        np.testing.assert_allclose(s2sad.grad(two_args, (0, 1))(x, y)[k], central_fd(two_args, [x, y], i),
                                   rtol=1e-6, atol=1e-6)


def test_two_dimensional_arguments_and_a_float_datum():
    A, v = xs(12, 3).reshape(4, 3), xs(3, 4)
    got = s2sad.grad(matrix_loss, (0, 1))(A, v)
    assert got[0].shape == (4, 3) and got[1].shape == (3,)
    close(got, reference(matrix_loss, (A, v), (0, 1))[1])

    def scaled(x, s):
        return s * np.sum(x[1:] * x[:-1])
    close(s2sad.value_and_grad(scaled)(xs(5), 2.5), reference(scaled, (xs(5), 2.5)))


def test_keyword_arguments():
    x, y = xs(6, 1), xs(6, 2)
    g = s2sad.grad(two_args, (0, 1))
    want = g(x, y)
    close(g(x, y=y), want)
    close(g(x=x, y=y), want)
    close(g(y=y, x=x), want)
    with pytest.raises(TypeError):
        g(x, z=y)


def test_inputs_are_not_written():
    x, y = xs(6, 1), xs(6, 2)
    x0, y0 = x.copy(), y.copy()
    s2sad.value_and_grad(two_args, (0, 1))(x, y)
    s2sad.value_and_grad(two_args, (0, 1))(x, y)
    assert np.array_equal(x, x0) and np.array_equal(y, y0)


def test_explain_says_which_path():
    g = s2sad.grad(rosen)
    assert "unrolled: one call into machine code" in str(s2sad.explain(g, xs(10)))
    big = str(s2sad.explain(g, xs(100)))
    assert "not unrolled: an argument of more than 64 elements" in big
    assert "explain(grad(f), *example_args)" in str(s2sad.explain(g))
    fused = s2sad.grad(lambda x: np.sum(np.tanh(x)))
    assert "fused kernel's entry" in str(s2sad.explain(fused, xs(10)))
    assert "path" not in str(s2sad.explain(fused)).split("\n")[-2]


# ---------------------------------------------------------------- outside the envelope

@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_inputs_take_the_general_path(bad):
    vg = s2sad.value_and_grad(rosen)
    x = xs(10)
    vg(x)       # warm
    y = x.copy()
    y[3] = bad
    with np.errstate(all="ignore"):
        got = vg(y)
        want = reference(rosen, (y,))
    assert (np.isnan(got[0]) and np.isnan(want[0])) or got[0] == want[0]
    np.testing.assert_array_equal(np.isnan(got[1]), np.isnan(want[1]))
    finite = np.isfinite(want[1])
    close(got[1][finite], want[1][finite])
    assert np.array_equal(vg(x)[1], s2sad.grad(rosen)(x))       # and back on the unrolled plan


def test_an_overflow_inside_takes_the_general_path():
    def f(x):
        return np.sum(np.exp(x * 1000.0) - np.exp(x * 1000.0))
    x = np.array([1.0, 2.0])
    with np.errstate(all="ignore"):
        got, want = s2sad.grad(f)(x), s2sad.grad(f, backend="python")(x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


def test_another_shape_on_a_later_call():
    g = s2sad.value_and_grad(rosen)
    for n in (10, 5, 100, 10, 64, 65, 5, 3):
        x = xs(n, seed=n)
        got = g(x)
        close(got, reference(rosen, (x,)))
        assert got[0] == rosen(x) or n > 33        # (33: the longest Rosenbrock unrolled)
    assert unrolled(g)


def test_a_shape_error_stays_a_shape_error():
    def f(x, y):
        return np.sum(x * y)
    g = s2sad.grad(f)
    g(xs(3), xs(3))
    for _ in range(2):
        with pytest.raises(S2SADError):
            g(xs(3), xs(4))
    h = s2sad.grad(f)
    with pytest.raises(S2SADError):         # (the first call too)
        h(xs(3), xs(4))


def test_float32_and_int_arguments():
    g = s2sad.grad(rosen)
    g(xs(10))
    x32 = xs(10).astype(np.float32)
    got = g(x32)
    assert got.dtype == np.float32 and got.shape == (10,)
    np.testing.assert_allclose(got, s2sad.grad(rosen, backend="python")(x32), rtol=1e-5)
    with pytest.raises(NonDifferentiableInputError):
        g(np.arange(10))

    def f(x, k):
        return np.sum(x * k)
    k = np.arange(4)
    close(s2sad.grad(f)(xs(4), k), k.astype(float))
    close(s2sad.grad(f)(xs(4), 3), np.full(4, 3.0))


def test_non_contiguous_zero_d_and_empty_arguments():
    g = s2sad.grad(rosen)
    g(xs(10))
    x = xs(20)[::2]
    close(g(x), reference(rosen, (np.ascontiguousarray(x),))[1])

    def f(x):
        return np.sum(x * x)
    for a in (np.array(2.0), np.zeros(0)):
        want = s2sad.grad(f, backend="python")(a)
        got = s2sad.grad(f)(a)
        assert type(got) is type(want) and np.shape(got) == np.shape(want)
        close(got, want)


def test_a_global_array_changed_between_calls():
    global WEIGHTS
    WEIGHTS = xs(5, 9)
    g = s2sad.value_and_grad(weighted)
    x = xs(5)
    close(g(x), reference(weighted, (x,)))
    WEIGHTS[2] = 7.0        # written in place
    close(g(x), reference(weighted, (x,)))
    assert g(x)[1][2] == pytest.approx(7.0 * np.cos(x[2]))
    WEIGHTS = xs(5, 10)     # rebound
    close(g(x), reference(weighted, (x,)))
    WEIGHTS = xs(6, 10)     # another shape: refused or right, as the general path
    with pytest.raises(S2SADError):
        g(x)
    WEIGHTS = xs(5, 11)
    close(g(x), reference(weighted, (x,)))


WEIGHTS = None


def weighted(x):
    return np.sum(WEIGHTS * np.sin(x))


def test_a_closure_over_an_array_that_changes():
    def make(w):
        def f(x):
            return np.sum(w * x[1:] * x[:-1])
        return f
    x = xs(5)
    for w in (xs(4, 1), xs(4, 2)):
        f = make(w)
        close(s2sad.grad(f)(x), reference(f, (x,))[1])
        close(s2sad.grad(f)(x), reference(f, (x,))[1])

    w = xs(4, 3)

    def g(x):
        return np.sum(w * x[1:] * x[:-1])
    d = s2sad.grad(g)
    d(x)
    w[0] = 5.0      # the cell's array written in place
    close(d(x), reference(g, (x,))[1])
    w = xs(4, 4)    # the cell rebound
    close(d(x), reference(g, (x,))[1])


def test_a_program_too_long_to_compile_well_takes_the_general_path():
    """Past LONG_LINES of IR the entry would be compiled unoptimised (slower than the
    general path): declined, said so, right."""
    x = xs(64)
    g = s2sad.value_and_grad(rosen)
    close(g(x), reference(rosen, (x,)))
    assert "IR lines (more than 2000)" in str(s2sad.explain(g, x))
    close(g(x), reference(rosen, (x,)))
    close(g(xs(10)), reference(rosen, (xs(10),)))     # a shorter one still unrolls
    assert unrolled(g)


def test_programs_that_do_not_unroll_say_why_and_stay_right():
    def looped(x):
        s = 0.0
        for i in range(3):
            s = s + np.sum(x * i)
        return s

    def branch(x):
        if np.sum(x) > 0:
            return np.sum(x * x)
        return np.sum(x)
    for f in (looped, branch):
        x = xs(4)
        g = s2sad.value_and_grad(f)
        close(g(x), reference(f, (x,)))
        close(g(x), reference(f, (x,)))
        text = str(s2sad.explain(g, x))
        assert "not unrolled" in text or "unrolled: one call" in text


def test_the_fused_sums_hot_path_is_untouched():
    g = s2sad.grad(lambda x: np.sum(np.tanh(x) ** 2))
    g(xs(10))
    d = g.__s2sad__
    assert d.small is None and d.hot is not None


def cube_of(z):
    return z * z * z


def with_cube(x):
    return np.sum(s2sad.broadcast(cube_of, x[1:]) * x[:-1])


def test_a_rule_registered_after_the_first_call():
    """A rule of the user's registered since the unrolled plan was made wins (here a slope
    that is not the function's own, so that which one ran shows)."""
    g = s2sad.grad(with_cube)
    x = xs(6)
    close(g(x), s2sad.grad(with_cube, backend="python")(x))
    assert unrolled(g)
    s2sad.defrule(cube_of, "5.0 * z")
    want = np.zeros(6)
    want[1:] = 5.0 * x[1:] * x[:-1]
    want[:-1] += x[1:] ** 3
    close(g(x), want)
    close(g(x), want)
    close(s2sad.grad(with_cube)(x), want)


def test_a_new_grad_object_per_call_is_right():
    x = xs(10)
    want = s2sad.grad(rosen)(x)
    for _ in range(3):
        assert np.array_equal(s2sad.grad(rosen)(x), want)
        assert np.array_equal(s2sad.value_and_grad(rosen)(x)[1], want)


def test_the_shown_program_is_the_one_that_runs():
    """small_grad.source (golden rosen_small.sgrad.py) run by Python gives the compiled
    entry's value and gradient bit for bit (the same IEEE operations in the same order)."""
    import math

    from s2sad import small_grad
    for n in (3, 10, 17):
        x = xs(n, seed=n)
        ns = {"np": np, "math": math}
        exec(small_grad.source(rosen, (x,)), ns)
        out = np.zeros(n)
        value = ns["rosen__small_value_and_grad"](x, out)
        got = s2sad.value_and_grad(rosen)(x)
        assert value == got[0] == rosen(x) and np.array_equal(out, got[1])
    assert small_grad.source(rosen, (xs(100),)).startswith("# no small program: an argument of 100 elements")


def test_aliased_arguments_and_fresh_results():
    x = xs(6, 1)
    got = s2sad.value_and_grad(two_args, (0, 1))(x, x)      # one array as both arguments
    close(got, reference(two_args, (x, x), (0, 1)))
    g = s2sad.grad(rosen)
    a, b = g(x), g(x)
    assert a is not b and not np.shares_memory(a, b) and not np.shares_memory(a, x)
    a[:] = 0.0      # the caller's to write: the next call is not affected
    assert np.array_equal(g(x), b)


def test_a_list_argument_is_refused_as_before():
    """(Python's operators would join or repeat it: refused, located, as on every path)"""
    for backend in ("auto", "python"):
        with pytest.raises(S2SADError, match="a list or tuple is used here"):
            s2sad.value_and_grad(rosen, backend=backend)(xs(10).tolist())


def make_tanh_loss(X):
    return lambda w: np.sum(np.tanh(X @ w) ** 2)


def test_closures_of_one_code_each_read_their_own_data():
    """Two closures of the same code share a plan and an unrolled program, but each call
    reads its own closure's array (first call and hot path alike)."""
    rng = np.random.default_rng(21)
    w = rng.normal(size=3)
    losses = [make_tanh_loss(rng.normal(size=(5, 3)) * s) for s in (1.0, 3.0, 0.5)]
    grads = [s2sad.grad(f) for f in losses]
    for _ in range(3):
        for f, g in zip(losses, grads):
            close(g(w), reference(f, (w,))[1])
            close(s2sad.value_and_grad(f)(w), reference(f, (w,)))


def make_tanh_map(X):
    return lambda w: np.tanh(X @ w)


def test_jacobians_of_closures_of_one_code_read_their_own_data():
    """(small_jacobian read the free data of the closure its plan was first made for:
    a wrong Jacobian for the second closure, first call and hot path)"""
    rng = np.random.default_rng(22)
    w = rng.normal(size=3)
    for s in (1.0, 3.0, 0.5):
        X = rng.normal(size=(4, 3)) * s
        t = np.tanh(X @ w)
        want = (1 - t * t)[:, None] * X
        for jac in (s2sad.jacfwd, s2sad.jacrev):
            J = jac(make_tanh_map(X))
            for _ in range(3):
                np.testing.assert_allclose(J(w), want, rtol=1e-13, atol=1e-15)


def picks(a, b):
    return np.sum(np.array([a[0, 0], b[1, 2]]) ** 3) + np.sum(a * b)


def test_an_array_built_of_elements_declines_not_raises():
    """(unroll_small's guard raised a raw TypeError here, on hessian and jacfwd too)"""
    rng = np.random.default_rng(23)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    close(s2sad.grad(picks, (0, 1))(a, b), reference(picks, (a, b), (0, 1))[1])
    h = s2sad.hessian(picks, (0, 1))(a, b)
    assert h[0][0].shape == (2, 3, 2, 3)
    assert h[0][0][0, 0, 0, 0] == pytest.approx(6.0 * a[0, 0])
    assert h[0][1][1, 2, 1, 2] == pytest.approx(1.0) and h[0][1][0, 0, 0, 0] == pytest.approx(1.0)


def step_loss(w, batch):
    return np.sum(np.tanh(w * batch) + 0.5 * w * w)


def step_expected(w, batch, k=1.0):
    return k * (batch * (1.0 - np.tanh(w * batch) ** 2) + w)


def scaled_step_loss(w, batch, k):
    return k * np.sum(np.tanh(w * batch) + 0.5 * w * w)


@pytest.mark.parametrize("n", [8, 64])
def test_a_new_closure_per_step_reuses_the_small_plan_and_reads_its_own_values(n, monkeypatch):
    """`grad(lambda w: loss(w, batch))(w)` with a new lambda each step: every wrapper of
    the plan shares the small planner's verdict (SmallHessian.shared_plan), so a step
    unrolls nothing after the first (session 19: each step unrolled, differentiated and
    wrote the IR again, 0.9 ms a step at 8 elements and 7 ms at 64, 20x a long-lived
    grad's); and each closure's batch is read per call, never compiled in."""
    from s2sad import small_hessian
    rng = np.random.default_rng(n)
    w = rng.normal(size=n)

    def step(batch, k):
        return s2sad.grad(lambda w: scaled_step_loss(w, batch, k))(w)
    for _ in range(2):
        step(rng.normal(size=n), 1.0)
    made = []
    unroll = small_hessian.unroll
    monkeypatch.setattr(small_hessian, "unroll", lambda *a, **kw: (made.append(1), unroll(*a, **kw))[1])
    for trial in range(6):
        batch = rng.normal(size=n)
        np.testing.assert_allclose(step(batch, 1.0), step_expected(w, batch), rtol=1e-12, atol=1e-14)
    assert made == []
    for trial in range(3):      # a number in the cell that changes: right (a plan per value: plans.py)
        batch, k = rng.normal(size=n), float(trial) - 2.5
        np.testing.assert_allclose(step(batch, k), step_expected(w, batch, k), rtol=1e-12, atol=1e-14)


def test_the_shared_small_plan_follows_the_shapes_and_the_planner():
    """The verdicts are kept by shapes, argnums and planner: another batch length plans
    afresh and is right; value_and_grad's plan is not grad's; hessian's not grad's."""
    rng = np.random.default_rng(2)
    for n in (3, 5, 3):
        w, batch = rng.normal(size=n), rng.normal(size=n)
        np.testing.assert_allclose(s2sad.grad(lambda w: step_loss(w, batch))(w), step_expected(w, batch),
                                   rtol=1e-12, atol=1e-14)
        v, g = s2sad.value_and_grad(lambda w: step_loss(w, batch))(w)
        assert v == pytest.approx(float(np.sum(np.tanh(w * batch) + 0.5 * w * w)), rel=1e-12)
        np.testing.assert_allclose(g, step_expected(w, batch), rtol=1e-12, atol=1e-14)
        h = s2sad.hessian(lambda w: step_loss(w, batch))(w)
        t = np.tanh(w * batch)
        np.testing.assert_allclose(h, np.diag(-2.0 * batch ** 2 * t * (1.0 - t ** 2) + 1.0), rtol=1e-10,
                                   atol=1e-12)

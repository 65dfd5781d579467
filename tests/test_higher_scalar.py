"""Issue 14, scalar side: derivatives of derivatives of scalar functions, compiled.

A derivative s2sad made of a scalar function is its own program (the forward dual
selecting a partial); differentiating it again dualizes that program: nested duals in
one kernel, to any depth. Every number is checked against the analytic derivative and
against central differences of the first derivative, on the python and llvm backends.
"""
import gc
import math
import weakref

import numpy as np
import pytest

import s2sad
from conftest import central_fd

X = np.array([0.5, -1.25, 2.0, 0.1])


def cubic(z):
    return z**3 + math.sin(z)


def d1_cubic(z):
    return 3 * z**2 + math.cos(z)


def d2_cubic(z):
    return 6 * z - math.sin(z)


def d3_cubic(z):
    return 6 - math.cos(z)


def two(x, y):
    return x * x * y + math.exp(x * y)


def branchy(z):
    if z > 0.0:
        return z * math.log1p(z * z)
    return math.tanh(z) * z


def looped(z):
    acc = 0.0
    for k in range(1, 4):
        acc = acc + math.sin(k * z) / k
    return acc


# ---------------------------------------------------------------- grad of grad, to any depth

def test_grad_of_grad_and_of_its_grad(backend):
    g = s2sad.grad(cubic, backend=backend)
    g2 = s2sad.grad(g, backend=backend)
    g3 = s2sad.grad(g2, backend=backend)
    g4 = s2sad.grad(g3, backend=backend)
    for z in (0.7, -1.3, 0.0, 2.5):
        assert g2(z) == pytest.approx(d2_cubic(z), rel=1e-13, abs=1e-13)
        assert g3(z) == pytest.approx(d3_cubic(z), rel=1e-13)
        assert g4(z) == pytest.approx(math.sin(z), rel=1e-12, abs=1e-13)
        assert g2(z) == pytest.approx(central_fd(g, [z], 0), rel=1e-7, abs=1e-7)


@pytest.mark.parametrize("f", [branchy, looped, math.tanh, np.sin])
def test_second_derivative_against_central_differences_of_the_first(f, backend):
    g = s2sad.grad(f, backend=backend)
    g2 = s2sad.grad(g, backend=backend)
    for z in (0.3, -0.8, 1.7):
        assert g2(z) == pytest.approx(central_fd(g, [z], 0), rel=1e-6, abs=1e-7)


def test_tanh_second_derivative_is_exact(backend):
    g2 = s2sad.grad(s2sad.grad(math.tanh, backend=backend), backend=backend)
    for z in (0.3, -0.8, 1.7):
        t = math.tanh(z)
        assert g2(z) == pytest.approx(-2 * t * (1 - t * t), rel=1e-14)


def test_mixed_partials_with_argnums(backend):
    x, y = 0.4, -0.9
    e = math.exp(x * y)
    gx = s2sad.grad(two, argnums=0, backend=backend)
    gy = s2sad.grad(two, argnums=1, backend=backend)
    hxx = s2sad.grad(gx, argnums=0, backend=backend)(x, y)
    hxy = s2sad.grad(gx, argnums=1, backend=backend)(x, y)
    hyx = s2sad.grad(gy, argnums=0, backend=backend)(x, y)
    hyy = s2sad.grad(gy, argnums=1, backend=backend)(x, y)
    assert hxx == pytest.approx(2 * y + y * y * e, rel=1e-14)
    assert hxy == pytest.approx(2 * x + e + x * y * e, rel=1e-14)
    assert hyx == pytest.approx(hxy, rel=1e-14)
    assert hyy == pytest.approx(x * x * e, rel=1e-14)
    both = s2sad.grad(gx, argnums=(0, 1), backend=backend)(x, y)
    assert both == (pytest.approx(hxx, rel=1e-14), pytest.approx(hxy, rel=1e-14))


def test_value_and_grad_of_a_grad(backend):
    v, d = s2sad.value_and_grad(s2sad.grad(cubic, backend=backend), backend=backend)(0.7)
    assert (v, d) == (pytest.approx(d1_cubic(0.7), rel=1e-14), pytest.approx(d2_cubic(0.7), rel=1e-14))


def test_jvp_and_vjp_of_a_grad(backend):
    g = s2sad.grad(cubic, backend=backend)
    out, tan = s2sad.jvp(g, (0.7,), (2.0,), backend=backend)
    assert (out, tan) == (pytest.approx(d1_cubic(0.7), rel=1e-14), pytest.approx(2 * d2_cubic(0.7), rel=1e-14))
    out, pullback = s2sad.vjp(g, 0.7, backend=backend)
    assert out == pytest.approx(d1_cubic(0.7), rel=1e-14)
    (bar,) = pullback(3.0)
    assert bar == pytest.approx(3 * d2_cubic(0.7), rel=1e-14)


def test_jvp_of_a_mixed_grad(backend):
    gx = s2sad.grad(two, argnums=0, backend=backend)
    x, y = 0.4, -0.9
    _, tan = s2sad.jvp(gx, (x, y), (1.0, 0.5), backend=backend)
    hxx = s2sad.grad(gx, argnums=0, backend=backend)(x, y)
    hxy = s2sad.grad(gx, argnums=1, backend=backend)(x, y)
    assert tan == pytest.approx(hxx + 0.5 * hxy, rel=1e-14)


# ---------------------------------------------------------------- a derivative inside the loss

dc = s2sad.grad(cubic)
vgc = s2sad.value_and_grad(cubic)
gtwo = s2sad.grad(two, argnums=(0, 1))


def loss_broadcast(a):
    return np.sum(s2sad.broadcast(dc, a))


def loss_broadcast_inline(a):
    return np.sum(s2sad.broadcast(s2sad.grad(cubic), a))


def loss_map(a):
    return sum(map(dc, a))


def loss_comprehension(a):
    return np.sum([dc(z) * z for z in a])


@pytest.mark.parametrize("loss", [loss_broadcast, loss_broadcast_inline, loss_map])
def test_diagonal_second_derivative_through_a_loss(loss, backend):
    got = s2sad.grad(loss, backend=backend)(X)
    np.testing.assert_allclose(got, [d2_cubic(z) for z in X], rtol=1e-14)
    v, got2 = s2sad.value_and_grad(loss, backend=backend)(X)
    assert v == pytest.approx(sum(d1_cubic(z) for z in X), rel=1e-14)
    np.testing.assert_allclose(got2, got, rtol=1e-15)


def test_a_comprehension_reading_a_derivative(backend):
    got = s2sad.grad(loss_comprehension, backend=backend)(X)
    np.testing.assert_allclose(got, [d2_cubic(z) * z + d1_cubic(z) for z in X], rtol=1e-14)


def test_broadcast_of_the_grad_of_tanh(backend):
    got = s2sad.broadcast(s2sad.grad(math.tanh), X, backend=backend)
    np.testing.assert_allclose(got, 1 - np.tanh(X) ** 2, rtol=1e-14)
    got = s2sad.grad(lambda a: np.sum(s2sad.broadcast(s2sad.grad(math.tanh), a)), backend=backend)(X)
    np.testing.assert_allclose(got, -2 * np.tanh(X) * (1 - np.tanh(X) ** 2), rtol=1e-13)


def scalar_vg_value(z):
    return vgc(z)[0] * 2.0


def scalar_vg_grad(z):
    return vgc(z)[1] ** 2


def scalar_mixed(x, y):
    return gtwo(x, y)[0] + 3.0 * gtwo(x, y)[1]


def test_items_of_a_value_and_grad_on_scalars(backend):
    assert s2sad.grad(scalar_vg_value, backend=backend)(0.7) == pytest.approx(2 * d1_cubic(0.7), rel=1e-14)
    want = 2 * d1_cubic(0.7) * d2_cubic(0.7)
    assert s2sad.grad(scalar_vg_grad, backend=backend)(0.7) == pytest.approx(want, rel=1e-14)


def test_items_of_a_grad_with_argnums(backend):
    x, y = 0.4, -0.9
    e = math.exp(x * y)
    hxx, hxy, hyy = 2 * y + y * y * e, 2 * x + e + x * y * e, x * x * e
    got = s2sad.grad(scalar_mixed, argnums=(0, 1), backend=backend)(x, y)
    assert got == (pytest.approx(hxx + 3 * hxy, rel=1e-14), pytest.approx(hxy + 3 * hyy, rel=1e-14))


def test_a_derivative_of_a_derivative_inside_the_loss(backend):
    d2 = s2sad.grad(dc)
    got = s2sad.grad(lambda a: np.sum(s2sad.broadcast(d2, a)), backend=backend)(X)
    np.testing.assert_allclose(got, [d3_cubic(z) for z in X], rtol=1e-13)


def test_a_closure_derivative_differentiated_again(backend):
    def make(c):
        def f(z):
            return math.sin(c * z) * c
        return f
    f = make(1.5)
    g2 = s2sad.grad(s2sad.grad(f, backend=backend), backend=backend)
    assert g2(0.3) == pytest.approx(-1.5**3 * math.sin(1.5 * 0.3), rel=1e-14)


# ---------------------------------------------------------------- refusals: located, never a wrong number

COUNT = [0.0]


def stateful(z):
    COUNT[0] += z
    return z * z


def cube_sum(a):
    return np.sum(a**3)


def neighbours(a):
    return np.sum(a[1:] * a[:-1] ** 2)


def vg_whole(z):
    return vgc(z) * 2.0


def vg_out_of_range(z):
    return vgc(z)[2]


def _line(fn):
    return fn.__code__.co_firstlineno


def test_a_stateful_function_differentiated_twice_is_refused_naming_it(backend):
    before = COUNT[0]
    for make in (lambda: s2sad.grad(s2sad.grad(stateful, backend=backend), backend=backend)(0.5),
                 lambda: s2sad.broadcast(s2sad.grad(stateful), X, backend=backend)):
        with pytest.raises(s2sad.HigherOrderNotSupportedError) as err:
            make()
        e = err.value
        assert "s2sad.grad(stateful)" in e.message and "writes state" in e.message
        assert e.location is not None and e.location.lineno == _line(stateful)
    assert COUNT[0] == before


def test_the_grad_of_an_array_program_differentiated_again_is_reverse_over_reverse():
    # its gradient is a vector, not a scalar loss (as any vector-valued function's); a sum
    # of it is differentiated through the Hessian (tests/test_higher_rr.py for the rest)
    with pytest.raises(s2sad.NonScalarLossError):
        s2sad.grad(s2sad.grad(neighbours))(X)
    g = s2sad.grad(neighbours)
    np.testing.assert_allclose(s2sad.grad(lambda a: np.sum(g(a)))(X), np.sum(s2sad.hessian(neighbours)(X), axis=0),
                               rtol=1e-14)


def test_the_grad_of_a_summed_loss_is_elementwise_and_not_a_scalar_loss():
    # grad(sum(a**3)) is 3 a**2 element by element: a scalar at a scalar, an array to reduce at an array
    assert s2sad.grad(s2sad.grad(cube_sum))(0.5) == pytest.approx(3.0, rel=1e-15)
    with pytest.raises(s2sad.NonScalarLossError):
        s2sad.grad(s2sad.grad(cube_sum))(X)
    np.testing.assert_allclose(s2sad.grad(lambda a: np.sum(s2sad.grad(cube_sum)(a)))(X), 6 * X, rtol=1e-15)


@pytest.mark.parametrize("loss, what", [(vg_whole, "returns a tuple"), (vg_out_of_range, r"no item \[2\]")])
def test_a_tuple_output_must_be_indexed(loss, what):
    with pytest.raises(s2sad.HigherOrderNotSupportedError, match=what) as err:
        s2sad.grad(loss)(0.7)
    assert err.value.location.lineno == _line(loss) + 1


def test_a_tuple_output_given_to_an_entry_point_is_refused():
    for d in (s2sad.value_and_grad(cubic), s2sad.grad(two, argnums=(0, 1))):
        with pytest.raises(s2sad.HigherOrderNotSupportedError, match="tuple"):
            s2sad.grad(d)(0.7, 0.2) if d.__name__ == "two" else s2sad.grad(d)(0.7)


def test_a_value_only_partial_is_refused_not_zero():
    # digamma''' needs polygamma(2)', which s2sad does not have: never 0
    scipy_special = pytest.importorskip("scipy.special")
    d2 = s2sad.grad(s2sad.grad(scipy_special.digamma))
    assert d2(1.5) == pytest.approx(float(scipy_special.polygamma(2, 1.5)), rel=1e-9)
    with pytest.raises(s2sad.HigherOrderNotSupportedError, match="polygamma of order 2"):
        s2sad.grad(d2)(1.5)
    with pytest.raises(s2sad.HigherOrderNotSupportedError, match="polygamma of order 2"):
        s2sad.grad(s2sad.grad(s2sad.grad(s2sad.grad(math.lgamma))))(1.5)


def softplus(z):
    return math.log1p(math.exp(z))


def test_a_defrule_partial_is_differentiated_again(backend):
    s2sad.defrule(softplus, "1.0 / (1.0 + math.exp(-z))")
    try:
        got = s2sad.grad(s2sad.grad(softplus, backend=backend), backend=backend)(0.3)
    finally:
        s2sad.rules.USER_RULES.pop(softplus, None)
        s2sad.api.PLANS.clear()
    s = 1 / (1 + math.exp(-0.3))
    assert got == pytest.approx(s * (1 - s), rel=1e-14)


def test_wrong_arguments_to_a_second_derivative():
    g2 = s2sad.grad(s2sad.grad(cubic))
    with pytest.raises(s2sad.S2SADError):
        g2(3)            # an int is not differentiated, as for grad
    with pytest.raises(TypeError):
        g2(0.5, 0.7)
    np.testing.assert_allclose(g2(np.float32(0.7)), d2_cubic(0.7), rtol=1e-6)
    assert math.isnan(g2(float("nan")))


# ---------------------------------------------------------------- source and explain

def test_source_shows_the_second_order_program():
    text = s2sad.source(s2sad.grad(s2sad.grad(cubic)))
    assert "def cubic__dual(z)" in text and "def cubic__dual__dual(z)" in text
    assert "def cubic__d_z(z)" in text and "cubic__dual(z)" in text.split("def cubic__d_z(z)")[1]
    namespace = {"math": math}
    exec(text.split("# Kernel")[1].split("\n", 2)[2], namespace)    # the kernel's functions run as Python
    value, first, again, second = namespace["cubic__dual__dual"](0.7)
    assert (first, second) == (pytest.approx(d1_cubic(0.7), rel=1e-15), pytest.approx(d2_cubic(0.7), rel=1e-15))


def test_explain_says_the_path_of_each_level():
    text = str(s2sad.explain(s2sad.grad(s2sad.grad(s2sad.grad(cubic)))))
    assert "a derivative of order 3" in text
    for level, made in ((3, "s2sad.grad(s2sad.grad(s2sad.grad(cubic)))"), (2, "s2sad.grad(s2sad.grad(cubic))"),
                        (1, "s2sad.grad(cubic)")):
        assert f"level {level}: {made}" in text
    assert "level 0: cubic" in text
    assert "forward dual" in str(s2sad.explain(loss_broadcast))


# ---------------------------------------------------------------- what a nested derivative keeps and reads

class Held:
    pass


def _closure_with_a_held_object():
    held = Held()
    k = 1.5

    def f(z):
        return math.sin(k * z)
    f.held = held
    return f, weakref.ref(held)


def test_a_nested_derivative_keeps_no_user_object_alive():
    f, alive = _closure_with_a_held_object()
    g2 = s2sad.grad(s2sad.grad(f))
    assert g2(0.3) == pytest.approx(-1.5**2 * math.sin(0.45), rel=1e-14)
    s2sad.broadcast(s2sad.grad(f), X)
    s2sad.hessian(lambda v: np.sum(s2sad.broadcast(f, v)))(X)
    del f, g2
    gc.collect()
    assert alive() is None


SCALE = 2.0


def scaled_cube(z):
    return SCALE * z**3


def test_a_rebound_global_is_read_again_by_a_second_derivative(backend):
    global SCALE
    g2 = s2sad.grad(s2sad.grad(scaled_cube, backend=backend), backend=backend)
    assert g2(1.0) == pytest.approx(12.0, rel=1e-15)
    SCALE = 3.0
    try:
        assert g2(1.0) == pytest.approx(18.0, rel=1e-15)
    finally:
        SCALE = 2.0


def test_third_derivative_through_copied_wrapper_dicts():
    # grad's wrapper copies its function's __dict__: each level must still plan its own caller
    g = s2sad.grad(cubic)
    g(0.7)
    g2 = s2sad.grad(g)
    g2(0.7)
    g3 = s2sad.grad(g2)
    assert g3(0.7) == pytest.approx(d3_cubic(0.7), rel=1e-14)
    assert s2sad.grad(g3)(0.7) == pytest.approx(math.sin(0.7), rel=1e-12)

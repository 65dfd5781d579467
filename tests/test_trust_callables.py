"""Issue 12, callables: what s2sad is given to differentiate is read as what it is.

- A derivative s2sad made (grad, value_and_grad, a vjp pullback) is recognised by
  s2sad's own mark, wherever it is met (passed in, or called inside the differentiated
  code), never read as the function it came from: a grad of a scalar function is
  differentiated again (issue 14); a tuple output, a pullback, a derivative of an array
  program are refused. An @s2sad.differentiate object is the user's function.
- A user's decorator is code to differentiate: its own code, not what it wraps.
- Defaults and keywords bind as Python binds them (the values the `def` computed).
- numpy and math callables can be passed directly.
- Arguments whose numbers s2sad would change (complex, long double) are refused.
Gradients are checked against analytic derivatives or central differences.
"""
import functools
import math
import operator

import numpy as np
import pytest

import s2sad
from s2sad import rules
from conftest import central_fd

X = np.array([0.5, -1.25, 2.0])
V = np.array([0.3, 1.0, -0.7])


def _line_of(fn) -> int:
    return fn.__code__.co_firstlineno


# ---------------------------------------------------------------- derivatives of derivatives

def cubic(z):
    return z**3 + math.sin(z)


def cubic_sum(z):
    return np.sum(z**3)


def d2_cubic(z):
    return 6 * z - np.sin(z)


MAKERS = {
    "grad": lambda f: s2sad.grad(f)(0.7),
    "value_and_grad": lambda f: s2sad.value_and_grad(f)(0.7)[1],
    "jvp": lambda f: s2sad.jvp(f, (0.7,), (1.0,))[1],
    "vjp": lambda f: s2sad.vjp(f, 0.7)[1](1.0)[0],
    "broadcast": lambda f: s2sad.broadcast(f, X),
    "differentiate": lambda f: s2sad.differentiate(f).grad(0.7),
}


@pytest.mark.parametrize("outer", sorted(MAKERS))
def test_a_grad_given_to_s2sad_is_differentiated_again(outer):
    # issue 14: a derivative of a scalar function is its own program, differentiated again
    got = MAKERS[outer](s2sad.grad(cubic))
    want = 3 * X**2 + np.cos(X) if outer == "broadcast" else d2_cubic(0.7)
    np.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.parametrize("outer", sorted(MAKERS) + ["explain of a pullback"])
def test_a_value_and_grad_or_a_pullback_given_to_s2sad_is_refused(outer):
    # a tuple output is differentiated one item at a time; a pullback has no program
    d = s2sad.value_and_grad(cubic)
    with pytest.raises(s2sad.HigherOrderNotSupportedError) as err:
        if outer == "explain of a pullback":
            s2sad.explain(s2sad.vjp(lambda z: z * z, X)[1])
        else:
            MAKERS[outer](d)
    e = err.value
    assert isinstance(e, s2sad.S2SADError) and e.location is not None
    if outer != "explain of a pullback":
        assert "s2sad.value_and_grad(cubic)" in e.message and e.location.lineno == _line_of(cubic)
        assert "tuple" in e.message
    else:
        assert "pullback" in e.message
    assert "defrule" in e.hint


def test_grad_of_grad_is_never_the_first_derivative(backend):
    # the silent wrong result of main: f'(0.7) = 2.2348 for f''(0.7) = 3.5558; now f''
    f = lambda z: z**3 + math.sin(z)   # noqa: E731
    got = s2sad.grad(s2sad.grad(f, backend=backend), backend=backend)(0.7)
    assert got == pytest.approx(d2_cubic(0.7), rel=1e-14)


def neighbours(z):
    return np.sum(z[1:] * z[:-1])


dh = s2sad.grad(cubic_sum)
dn = s2sad.grad(neighbours)
vg = s2sad.value_and_grad(cubic_sum)
dc = s2sad.grad(cubic)
_, PULLBACK = s2sad.vjp(lambda z: z * z, X)


def loss_sum_of_grad(a):
    return np.sum(dh(a))


def loss_sum_of_array_grad(a):
    return np.sum(dn(a) ** 2)


def loss_value_of_vg(a):
    return vg(a)[0]


def loss_scalar_grad(z):
    return 2.0 * dc(z)


def loss_map_grad(a):
    return sum(map(dc, a))


def loss_broadcast_grad(a):
    return np.sum(s2sad.broadcast(dc, a))


def loss_pullback(a):
    return np.sum(PULLBACK(a)[0])


@pytest.mark.parametrize("loss, arg, want", [(loss_scalar_grad, 0.7, 2 * d2_cubic(0.7)),
                                             (loss_map_grad, X, d2_cubic(X)), (loss_broadcast_grad, X, d2_cubic(X)),
                                             (loss_sum_of_grad, X, 6 * X)])   # a summed loss's grad: elementwise
def test_a_grad_of_a_scalar_function_called_inside_the_code_is_differentiated(loss, arg, want, backend):
    np.testing.assert_allclose(s2sad.grad(loss, backend=backend)(arg), want, rtol=1e-14)
    _, tangent = s2sad.jvp(loss, (arg,), (np.ones_like(arg),), backend=backend)
    np.testing.assert_allclose(tangent, np.sum(want), rtol=1e-14)


@pytest.mark.parametrize("entry", ["grad", "value_and_grad", "jvp", "vjp"])
def test_a_derivative_of_an_array_program_called_inside_the_code_is_differentiated(entry, backend):
    # reverse over reverse (array_higher.derivative_vjp): d/da sum(dn(a)^2) = 2 H dn(a)
    a = X
    dn_a = np.concatenate([a[1:], [0.0]]) + np.concatenate([[0.0], a[:-1]])
    hess = np.eye(len(a), k=1) + np.eye(len(a), k=-1)
    want = 2 * hess @ dn_a
    if entry in ("grad", "value_and_grad"):
        got = getattr(s2sad, entry)(loss_sum_of_array_grad, backend=backend)(a)
        got = got if entry == "grad" else got[1]
    elif entry == "jvp":
        got = s2sad.jvp(loss_sum_of_array_grad, (a,), (np.ones_like(a),), backend=backend)[1]
        want = np.sum(want)
    else:
        got = s2sad.vjp(loss_sum_of_array_grad, a, backend=backend)[1](1.0)[0]
    np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("loss, arg", [(loss_value_of_vg, X), (loss_pullback, X)])
@pytest.mark.parametrize("entry", ["grad", "value_and_grad", "jvp", "vjp"])
def test_a_derivative_of_an_array_program_called_inside_the_code_is_refused_where_it_is_called(loss, arg, entry,
                                                                                             backend):
    with pytest.raises(s2sad.HigherOrderNotSupportedError) as err:
        if entry in ("grad", "value_and_grad"):
            getattr(s2sad, entry)(loss, backend=backend)(arg)
        elif entry == "jvp":
            s2sad.jvp(loss, (arg,), (np.ones_like(arg),), backend=backend)
        else:
            s2sad.vjp(loss, arg, backend=backend)
    e = err.value
    assert e.location is not None and e.location.lineno == _line_of(loss) + 1   # the line that calls it
    assert "a derivative made by s2sad" in e.message


def test_functools_wraps_of_a_derivative_is_the_users_code(backend):
    # the copied __dict__ carries s2sad's mark, but the code is the user's: differentiated as written
    own = functools.wraps(dh)(lambda a: np.sum(a**2))
    np.testing.assert_allclose(s2sad.grad(own, backend=backend)(X), 2 * X, rtol=1e-14)
    calls = functools.wraps(dh)(lambda a: 2.0 * np.sum(dh(a)))     # differentiated again: d/da 2 sum(3 a^2)
    np.testing.assert_allclose(s2sad.grad(calls, backend=backend)(X), 12 * X, rtol=1e-14)


def test_a_copied_marker_attribute_is_not_trusted():
    def fake(a):
        return np.sum(a**2)
    fake.__s2sad_derivative__ = dh.__s2sad_derivative__
    np.testing.assert_allclose(s2sad.grad(fake)(X), 2 * X, rtol=1e-14)


def test_explain_and_source_of_a_grad_still_describe_its_function():
    g = s2sad.grad(cubic_sum)
    assert "cubic_sum" in str(s2sad.explain(g))
    assert "def cubic_sum__grad" in s2sad.source(g)


# ---------------------------------------------------------------- @s2sad.differentiate

@s2sad.differentiate
def d_cube(z):
    return np.sum(z**3)


@s2sad.differentiate
def d_square(z):
    return z * z


def test_a_differentiable_is_the_users_function(backend):
    want = 3 * X**2
    np.testing.assert_allclose(s2sad.grad(d_cube, backend=backend)(X), want, rtol=1e-14)
    np.testing.assert_allclose(s2sad.grad(lambda a: 2.0 * d_cube(a), backend=backend)(X), 2 * want, rtol=1e-14)
    np.testing.assert_allclose(d_cube.grad(X), want, rtol=1e-14)
    assert s2sad.grad(lambda z: 2.0 * d_square(z) + 1.0, backend=backend)(1.5) == pytest.approx(6.0, rel=1e-15)
    got = s2sad.grad(lambda a: np.sum(s2sad.broadcast(d_square, a)), backend=backend)(X)
    np.testing.assert_allclose(got, 2 * X, rtol=1e-14)
    np.testing.assert_allclose(s2sad.broadcast(d_square, X, backend=backend), X * X)


def test_a_decorator_wrapping_a_differentiable_is_differentiated_as_written(backend):
    scaled = functools.wraps(d_cube)(lambda a: 10.0 * d_cube(a))   # copies d_cube's __dict__ too
    np.testing.assert_allclose(s2sad.grad(scaled, backend=backend)(X), 30 * X**2, rtol=1e-14)


# ---------------------------------------------------------------- a user's decorators

def scaled(fn):
    return functools.wraps(fn)(lambda x: 10 * fn(x))


def times_ten(fn):
    @functools.wraps(fn)
    def wrapper(z):
        return 10.0 * fn(z)
    return wrapper


@scaled
def square(x):
    return x * x


@scaled
def sum_squares(x):
    return np.sum(x * x)


@times_ten
def sine(z):
    return math.sin(z)


@times_ten
def sum_tanh(z):
    return np.sum(np.tanh(z))


def test_a_functools_wraps_decorator_is_differentiated_not_skipped(backend):
    assert s2sad.grad(square, backend=backend)(3.0) == pytest.approx(60.0, rel=1e-15)
    np.testing.assert_allclose(s2sad.grad(sum_squares, backend=backend)(X), 20 * X, rtol=1e-14)
    assert s2sad.grad(sine, backend=backend)(0.3) == pytest.approx(10 * math.cos(0.3), rel=1e-14)
    np.testing.assert_allclose(s2sad.grad(sum_tanh, backend=backend)(X), 10 / np.cosh(X)**2, rtol=1e-13)
    value, g = s2sad.value_and_grad(sum_squares, backend=backend)(X)
    assert value == pytest.approx(10 * np.sum(X * X)) and np.allclose(g, 20 * X)


def test_decorated_functions_called_inside_a_loss(backend):
    assert s2sad.grad(lambda z: square(z) + 1.0, backend=backend)(3.0) == pytest.approx(60.0, rel=1e-15)
    got = s2sad.grad(lambda a: np.sum(s2sad.broadcast(sine, a)), backend=backend)(X)
    np.testing.assert_allclose(got, 10 * np.cos(X), rtol=1e-14)
    got = s2sad.grad(lambda a: sum_squares(a) * 0.5 + np.sum(a @ np.eye(3)), backend=backend)(X)
    np.testing.assert_allclose(got, 10 * X + 1, rtol=1e-14)
    out, pull = s2sad.vjp(lambda a: s2sad.broadcast(sine, a), X, backend=backend)
    np.testing.assert_allclose(pull(V)[0], 10 * np.cos(X) * V, rtol=1e-14)


def test_a_hand_set_wrapped_attribute_is_not_followed():
    def other(x):
        return np.sum(x**3)

    def mine(x):
        return np.sum(x * x)
    mine.__wrapped__ = other
    np.testing.assert_allclose(s2sad.grad(mine)(X), 2 * X, rtol=1e-14)


def forwarding(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


def forwarding_times_ten(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        s = 10.0
        return s * fn(*args, **kwargs)
    return wrapper


def doubling_args_only(fn):
    def wrapper(*a):
        return fn(*a) * 2.0
    return wrapper


def peeking(fn):
    def wrapper(*args):
        return fn(*args) + args[0]
    return wrapper


@forwarding
def forwarded(x):
    return np.sum(x * x)


@forwarding_times_ten
def forwarded_with_default(x, k=2.0, *, p=2.0):
    return np.sum(k * x**p)


@doubling_args_only
def doubled_product(x, y):
    return x * y


@forwarding
@forwarding_times_ten
def twice_wrapped(x):
    return x**3


@peeking
def peeked(x):
    return x * x


def test_a_forwarding_decorator_is_differentiated_as_written(backend):
    np.testing.assert_allclose(s2sad.grad(forwarded, backend=backend)(X), 2 * X, rtol=1e-15)
    np.testing.assert_allclose(s2sad.grad(lambda a: 3.0 * forwarded(a), backend=backend)(X), 6 * X, rtol=1e-15)
    g = s2sad.grad(forwarded_with_default, backend=backend)
    np.testing.assert_allclose(g(X), 40 * X, rtol=1e-15)
    np.testing.assert_allclose(g(X, k=3.0), 60 * X, rtol=1e-15)
    np.testing.assert_allclose(g(X, 1.0, p=3.0), 30 * X**2, rtol=1e-14)
    assert s2sad.grad(forwarded_with_default, argnums=1, backend=backend)(X) == pytest.approx(10 * np.sum(X * X))
    got = s2sad.grad(doubled_product, argnums=(0, 1), backend=backend)(2.0, 3.0)
    assert got == (pytest.approx(6.0, rel=1e-15), pytest.approx(4.0, rel=1e-15))
    got = s2sad.grad(lambda a: np.sum(s2sad.broadcast(doubled_product, a, 3.0)), backend=backend)(X)
    np.testing.assert_allclose(got, 6.0, rtol=1e-15)
    assert s2sad.grad(twice_wrapped, backend=backend)(2.0) == pytest.approx(120.0, rel=1e-15)
    value, tangent = s2sad.jvp(forwarded_with_default, (X,), (V,), backend=backend)
    assert value == pytest.approx(forwarded_with_default(X)) and tangent == pytest.approx(np.sum(40 * X * V))


def lambda_forwarding(fn):
    return functools.wraps(fn)(lambda *a, **k: 3.0 * fn(*a, **k))


@lambda_forwarding
def lambda_forwarded(x, k=2.0):
    return k * x * x


def test_a_lambda_forwarder(backend):
    g = s2sad.grad(lambda_forwarded, backend=backend)
    assert (g(1.5), g(1.5, k=1.0)) == (pytest.approx(18.0, rel=1e-15), pytest.approx(9.0, rel=1e-15))
    got = s2sad.grad(lambda a: np.sum(s2sad.broadcast(lambda_forwarded, a)), backend=backend)(X)
    np.testing.assert_allclose(got, 12 * X, rtol=1e-15)


def test_a_wrapper_that_reads_its_args_otherwise_is_refused_where_it_is_defined():
    with pytest.raises(s2sad.UnsupportedSyntaxError, match=r"\*args") as err:
        s2sad.grad(peeked)(2.0)
    assert err.value.location.lineno == _line_of(peeking) + 1
    with pytest.raises(s2sad.UnsupportedSyntaxError):
        s2sad.grad(lambda a: np.sum(peeked(a) @ np.eye(3)))(X)


def test_a_forwarding_wrapper_of_a_derivative_is_differentiated_again():
    assert s2sad.grad(forwarding(dc))(0.7) == pytest.approx(d2_cubic(0.7), rel=1e-14)


# ---------------------------------------------------------------- defaults and keywords

def with_default(x, k=2.0):
    return np.sum(k * x * x)


def scalar_default(x, k=2.0):
    return k * x * x


def keyword_only(x, *, k=2.0, p=3.0):
    return np.sum(k * x**p)


def positional_only(x, /, k=2.0):
    return np.sum(k * x * x)


W = np.array([1.0, 2.0, 3.0])


def array_default(x, w=W):
    return np.sum(w * np.sin(x))


def test_defaults_and_keywords_of_the_differentiated_function(backend):
    g = s2sad.grad(with_default, backend=backend)
    np.testing.assert_allclose(g(X), 4 * X, rtol=1e-15)
    np.testing.assert_allclose(g(X, 3.0), 6 * X, rtol=1e-15)
    np.testing.assert_allclose(g(X, k=3.0), 6 * X, rtol=1e-15)
    np.testing.assert_allclose(g(x=X, k=3.0), 6 * X, rtol=1e-15)
    gk = s2sad.grad(with_default, argnums=1, backend=backend)
    assert gk(X) == pytest.approx(np.sum(X * X), rel=1e-15)
    assert gk(X, k=5.0) == pytest.approx(np.sum(X * X), rel=1e-15)
    both = s2sad.grad(with_default, argnums=(0, 1), backend=backend)(X, k=3.0)
    np.testing.assert_allclose(both[0], 6 * X, rtol=1e-15)
    assert both[1] == pytest.approx(np.sum(X * X), rel=1e-15)
    value, gx = s2sad.value_and_grad(with_default, backend=backend)(X, k=3.0)
    assert value == pytest.approx(3 * np.sum(X * X), rel=1e-15) and np.allclose(gx, 6 * X)
    assert s2sad.grad(scalar_default, backend=backend)(1.5) == pytest.approx(6.0, rel=1e-15)
    assert s2sad.grad(scalar_default, backend=backend)(1.5, k=4.0) == pytest.approx(12.0, rel=1e-15)


def test_keyword_only_and_positional_only_parameters(backend):
    Y = np.abs(X) + 0.5
    g = s2sad.grad(keyword_only, backend=backend)
    np.testing.assert_allclose(g(Y), 6 * Y**2, rtol=1e-14)
    np.testing.assert_allclose(g(Y, p=2.0), 4 * Y, rtol=1e-14)
    np.testing.assert_allclose(g(Y, k=1.0, p=4.0), 4 * Y**3, rtol=1e-14)
    np.testing.assert_allclose(s2sad.grad(positional_only, backend=backend)(X, k=3.0), 6 * X, rtol=1e-15)
    with pytest.raises(TypeError, match="keyword_only"):
        g(Y, 1.0)           # keyword-only, as Python says
    with pytest.raises(TypeError, match="with_default"):
        s2sad.grad(with_default)(X, q=1.0)


def test_an_array_default_is_data(backend):
    g = s2sad.grad(array_default, backend=backend)
    np.testing.assert_allclose(g(X), W * np.cos(X), rtol=1e-14)
    np.testing.assert_allclose(g(X, w=2 * W), 2 * W * np.cos(X), rtol=1e-14)
    gw = s2sad.grad(array_default, argnums=1, backend=backend)(X)
    np.testing.assert_allclose(gw, np.sin(X), rtol=1e-14)


def test_defaults_in_jvp_vjp_and_broadcast(backend):
    value, tangent = s2sad.jvp(with_default, (X,), (V,), backend=backend)
    assert value == pytest.approx(2 * np.sum(X * X)) and tangent == pytest.approx(np.sum(4 * X * V))
    out, pull = s2sad.vjp(scalar_default, X, backend=backend)
    np.testing.assert_allclose(out, 2 * X * X)
    adjoints = pull(V)
    assert len(adjoints) == 1
    np.testing.assert_allclose(adjoints[0], 4 * X * V, rtol=1e-15)
    np.testing.assert_allclose(s2sad.broadcast(scalar_default, X, backend=backend), 2 * X * X)
    np.testing.assert_allclose(s2sad.broadcast(scalar_default, X, 3.0, backend=backend), 3 * X * X)


num = 3.0


def uses_num(x, y, num=num):
    return x * y * num


def make_local_num():
    num = 3.0

    def fun(x, y, num=num):
        return x * y * num
    return fun


local_num = make_local_num()
num = 5.0          # after the def: the default stays 3.0, as Python's does


@pytest.mark.parametrize("fun", [uses_num, local_num], ids=["global", "closure"])
def test_a_default_that_captures_a_name_is_the_value_the_def_computed(fun, backend):
    assert fun(1.0, 2.0) == 6.0
    assert s2sad.grad(fun, backend=backend)(1.0, 2.0) == pytest.approx(6.0, rel=1e-15)
    assert s2sad.grad(lambda x: fun(x, 2.0), backend=backend)(1.0) == pytest.approx(6.0, rel=1e-15)
    np.testing.assert_allclose(s2sad.grad(lambda a: np.sum(fun(a, 2.0)), backend=backend)(X), 6.0)
    np.testing.assert_allclose(s2sad.grad(lambda a: np.sum(fun(a, 2.0) @ np.eye(3)), backend=backend)(X), 6.0)
    np.testing.assert_allclose(s2sad.grad(lambda a: np.sum(s2sad.broadcast(fun, a, 2.0)), backend=backend)(X), 6.0)
    np.testing.assert_allclose(s2sad.broadcast(fun, X, 2.0, backend=backend), 6.0 * X)


def helper_kw(x, k=2.0, *, p=1.0):
    return k * x**p


def test_helpers_called_with_keywords(backend):
    assert s2sad.grad(lambda z: helper_kw(z, k=3.0), backend=backend)(1.5) == pytest.approx(3.0, rel=1e-15)
    got = s2sad.grad(lambda a: np.sum(helper_kw(a, p=2.0, k=3.0) @ np.eye(3)), backend=backend)(X)
    np.testing.assert_allclose(got, 6 * X, rtol=1e-15)
    got = s2sad.grad(lambda a: np.sum(helper_kw(a, k=3.0)), backend=backend)(X)
    np.testing.assert_allclose(got, 3.0, rtol=1e-15)
    with pytest.raises(s2sad.S2SADError, match="no parameter 'q'"):
        s2sad.grad(lambda a: np.sum(helper_kw(a, q=3.0) @ np.eye(3)))(X)


W_HELPER = np.array([1.0, 2.0, 3.0])


def helper_array_default(z, w=W_HELPER):
    return w * np.sin(z)


def helper_function_default(z, act=np.tanh):
    return act(z)


def test_a_helpers_array_default_is_data_read_when_the_derivative_runs(backend):
    fused = s2sad.grad(lambda a: np.sum(helper_array_default(a)), backend=backend)
    program = s2sad.grad(lambda a: np.sum(helper_array_default(a) @ np.eye(3)), backend=backend)
    for g in (fused, program):
        np.testing.assert_allclose(g(X), W_HELPER * np.cos(X), rtol=1e-14)
    W_HELPER[0] = 10.0      # the default's object, mutated: read at the next call, as Python reads it
    try:
        for g in (fused, program):
            np.testing.assert_allclose(g(X), W_HELPER * np.cos(X), rtol=1e-14)
    finally:
        W_HELPER[0] = 1.0


def test_a_helpers_function_default_is_refused_where_it_is_called():
    for loss in (lambda a: np.sum(helper_function_default(a) @ np.eye(3)),
                 lambda a: np.sum(helper_function_default(a))):
        with pytest.raises(s2sad.S2SADError) as err:
            s2sad.grad(loss)(X)
        assert err.value.location.lineno == _line_of(helper_function_default) + 1


def test_a_local_functions_computed_default_is_refused_not_guessed():
    k = 3.0   # noqa: F841  (the default below reads it when the def runs)

    def loss(a):
        c = 2.0

        def h(z, c=c):
            return z * c
        return np.sum(h(a) @ np.eye(3))
    with pytest.raises(s2sad.S2SADError, match="default of 'c'"):
        s2sad.grad(loss)(X)


# ---------------------------------------------------------------- numpy and math callables

def test_numpy_and_math_callables_passed_directly(backend):
    assert s2sad.grad(np.sin, backend=backend)(0.3) == pytest.approx(math.cos(0.3), rel=1e-15)
    assert s2sad.grad(math.sin, backend=backend)(0.3) == pytest.approx(math.cos(0.3), rel=1e-15)
    np.testing.assert_array_equal(s2sad.grad(np.sum, backend=backend)(X), np.ones(3))
    np.testing.assert_allclose(s2sad.grad(np.prod, backend=backend)(X), central_fd(np.prod, (X,), 0), rtol=1e-8)
    value, g = s2sad.value_and_grad(np.exp, backend=backend)(1.0)
    assert value == pytest.approx(math.e) and g == pytest.approx(math.e, rel=1e-15)
    out, pull = s2sad.vjp(np.tanh, X, backend=backend)
    np.testing.assert_allclose(out, np.tanh(X))
    np.testing.assert_allclose(pull(V)[0], V * (1 - np.tanh(X)**2), rtol=1e-14)
    out, tangent = s2sad.jvp(np.tanh, (X,), (V,), backend=backend)
    np.testing.assert_allclose(tangent, V * (1 - np.tanh(X)**2), rtol=1e-14)
    gx, gy = s2sad.grad(np.arctan2, argnums=(0, 1), backend=backend)(1.0, 2.0)
    assert (gx, gy) == (pytest.approx(0.4, rel=1e-15), pytest.approx(-0.2, rel=1e-15))
    assert s2sad.grad(abs, backend=backend)(-2.0) == -1.0
    np.testing.assert_allclose(s2sad.grad(np.dot, backend=backend)(X, V), V, rtol=1e-15)
    np.testing.assert_allclose(s2sad.differentiate(np.sin).grad(0.3), math.cos(0.3), rtol=1e-15)
    assert "np.sin" in s2sad.source(s2sad.grad(np.sin))


def test_callables_without_source_or_rule_are_refused_with_what_to_do():
    with pytest.raises(s2sad.NoSourceError, match="defrule"):
        s2sad.grad(operator.mul)
    with pytest.raises(s2sad.NoSourceError):
        s2sad.grad(np.linalg.norm)
    # (functools.partial is differentiated since issue 15: tests/test_callables_bound.py)
    with pytest.raises(s2sad.UnsupportedOperationError, match="np.ptp") as err:
        s2sad.grad(np.ptp)(X)
    assert err.value.location is not None and "np.ptp" in err.value.location.source_line()
    with pytest.raises(s2sad.S2SADError, match="needs a function"):
        s2sad.grad(3.0)
    cached = functools.lru_cache(cubic)     # a C wrapper: not seen through, whatever __wrapped__ says
    with pytest.raises(s2sad.NoSourceError, match="__wrapped__") as err:
        s2sad.grad(cached)
    assert err.value.location.lineno == _line_of(cubic)


def test_a_c_function_with_a_user_rule_passed_directly(backend):
    def neg_impl(x):
        return -x
    s2sad.defrule(operator.neg, "-1.0", impl=neg_impl)
    try:
        assert s2sad.grad(operator.neg, backend=backend)(2.0) == -1.0
    finally:
        del rules.USER_RULES[operator.neg]


# ---------------------------------------------------------------- jvp of array-valued functions

A = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])


def test_jvp_of_an_elementwise_array_function(backend):
    out, tangent = s2sad.jvp(lambda x: np.sin(x) * x, (X,), (V,), backend=backend)
    np.testing.assert_allclose(tangent, (np.cos(X) * X + np.sin(X)) * V, rtol=1e-14)


def test_jvp_of_an_array_program_with_a_scalar_result(backend):
    value, tangent = s2sad.jvp(lambda x: np.sum(np.tanh(A @ x)), (X,), (V,), backend=backend)
    want = np.sum((1 - np.tanh(A @ X)**2) * (A @ V))
    assert value == pytest.approx(np.sum(np.tanh(A @ X))) and tangent == pytest.approx(want, rel=1e-13)


def test_jvp_of_an_array_program_with_an_array_result(backend):
    """Forward mode through array operations (once refused): the tangent program."""
    out, tangent = s2sad.jvp(lambda x: A @ x, (X,), (V,), backend=backend)
    np.testing.assert_allclose(out, A @ X, rtol=1e-14)
    np.testing.assert_allclose(tangent, A @ V, rtol=1e-14)


# ---------------------------------------------------------------- arguments s2sad would change

LONG = np.longdouble


@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8, reason="long double is float64 here")
@pytest.mark.parametrize("call", [
    lambda b: s2sad.grad(lambda x: np.sum(x * x), backend=b)(np.ones(3, dtype=LONG)),
    lambda b: s2sad.grad(lambda x: x * x, backend=b)(LONG(2.0)),
    lambda b: s2sad.grad(lambda x, z: np.sum(x * z), backend=b)(np.ones(3), np.ones(3, dtype=LONG) / 3),
    lambda b: s2sad.value_and_grad(lambda x: np.sum(x @ A.T), backend=b)(np.ones(3, dtype=LONG)),
    lambda b: s2sad.vjp(np.tanh, np.ones(3, dtype=LONG), backend=b),
    lambda b: s2sad.jvp(np.tanh, (np.ones(3, dtype=LONG),), (np.ones(3),), backend=b),
], ids=["array", "scalar", "data", "array-program", "vjp", "jvp"])
def test_long_double_arguments_are_refused(call, backend):
    with pytest.raises(s2sad.NonDifferentiableInputError) as err:
        call(backend)
    assert err.value.location is not None and ("float64" in str(err.value))


@pytest.mark.parametrize("call", [
    lambda b: s2sad.grad(lambda x: np.sum(x * x), backend=b)(np.ones(3, dtype=complex)),
    lambda b: s2sad.grad(lambda x, z: np.sum(x * z), backend=b)(np.ones(3), np.ones(3) * (1 + 2j)),
    lambda b: s2sad.grad(lambda x, z: np.sum(x @ z), backend=b)(np.ones(3), np.ones(3) * (1 + 2j)),
    lambda b: s2sad.grad(lambda x, z: x * z, backend=b)(1.0, 1 + 2j),
], ids=["argument", "data", "array-program-data", "scalar-data"])
def test_complex_arguments_are_refused(call, backend):
    with pytest.raises(s2sad.NonDifferentiableInputError) as err:
        call(backend)
    assert err.value.location is not None and "complex" in str(err.value)


def test_float32_and_float64_are_still_fine(backend):
    g = s2sad.grad(lambda x, z: np.sum(x * z), backend=backend)
    x32 = X.astype(np.float32)
    got = g(x32, V.astype(np.float32))
    assert got.dtype == np.float32 and np.allclose(got, V, rtol=1e-6)
    np.testing.assert_array_equal(g(X, V), V)


# ---------------------------------------------------------------- binding, against Python's

def _plain(x, k=2.0):
    return x


def _mixed(x, /, y, *, k=1.0, m):
    return x


def _kw_defaults(x, y=1.0, *, z=2.0):
    return x


CALLS = [((1.0,), {}), ((1.0, 2.0), {}), ((1.0, 2.0, 3.0), {}), ((), {"x": 1.0}), ((1.0,), {"k": 3.0}),
         ((1.0,), {"y": 2.0, "m": 4.0}), ((1.0, 2.0), {"m": 4.0}), ((1.0,), {"x": 2.0}), ((1.0, 2.0), {"y": 3.0}),
         ((1.0,), {"z": 5.0}), ((1.0,), {"q": 1.0}), ((), {}), ((1.0, 2.0), {"k": 1.0, "m": 2.0})]


@pytest.mark.parametrize("fun", [_plain, _mixed, _kw_defaults])
@pytest.mark.parametrize("args, kwargs", CALLS)
def test_binding_is_pythons(fun, args, kwargs):
    import inspect
    from s2sad.targets import bind
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except TypeError:
        with pytest.raises(TypeError, match=fun.__name__):
            bind(fun, args, kwargs)
        return
    bound.apply_defaults()
    assert bind(fun, args, kwargs) == tuple(bound.arguments.values())

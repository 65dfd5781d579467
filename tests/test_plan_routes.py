"""Planning picks its route by analysis (passes/routes.py), once, and builds only that
route: fused kernel, scalar function, or array program. A refusal by the chosen route is
the user's error, located; explain says the route and why."""
import math

import numpy as np
import pytest

import s2sad
from s2sad import plans
from s2sad.errors import S2SADError, UnsupportedOperationError
from s2sad.frontend import parse_function
from s2sad.passes.routes import ARRAY, FUSED, SCALAR, first_array_use, route_of
from s2sad.targets import entry_function

W = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def route(fun):
    return route_of(entry_function(parse_function(fun)))


def fused_sum(x, y):
    return np.sum(np.sin(x) * y)


def fused_mean_of_lambda(x):
    f = lambda z: z * z + 1.0
    return np.mean(s2sad.broadcast(f, x))


def layer(x):
    return np.tanh(x @ W)


def applies_an_array_helper(x):
    return np.sum(layer(x))


def matmul_loss(x):
    return np.sum(x @ W)


def scalar_control_flow(x):
    if x > 0.0:
        return x * x
    return -x


def scalar_and_as_value(x):
    return (x > 0.5 and x) + math.cos(x)


def array_loop(x):
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum(x * i)
    return acc


def indexed_tuple(x):
    coeffs = (1.0, -0.5, 0.25)
    acc = 0.0
    for i in range(len(coeffs)):
        acc = acc * x + coeffs[i]
    return acc


@pytest.mark.parametrize("fun, kind", [
    (fused_sum, FUSED), (fused_mean_of_lambda, FUSED), (applies_an_array_helper, ARRAY), (matmul_loss, ARRAY),
    (scalar_control_flow, SCALAR), (scalar_and_as_value, SCALAR), (array_loop, ARRAY), (indexed_tuple, SCALAR),
])
def test_the_route_is_the_analysis(fun, kind):
    r = route(fun)
    assert r.kind == kind, r
    assert r.reason


def test_array_use_names_what_and_where():
    use = first_array_use(entry_function(parse_function(layer)))
    assert use is not None and use.what == "'@'" and "test_plan_routes.py" in use.where
    assert "'@'" in route(applies_an_array_helper).reason
    assert first_array_use(entry_function(parse_function(scalar_control_flow))) is None


def test_a_plan_is_built_by_its_route_only(monkeypatch):
    """An array program is never first tried by the fused planner (no exception cascade)."""
    def refuse(pf):
        raise AssertionError("the fused planner was tried")
    monkeypatch.setattr(plans, "plan_loss", refuse)
    plans.PLANS.clear()
    x = np.linspace(0.1, 1.0, 3)
    v, g = s2sad.value_and_grad(matmul_loss)(x)
    assert np.isclose(v, np.sum(x @ W))
    np.testing.assert_allclose(g, W.sum(axis=1))
    assert plans.compiled(matmul_loss).route.kind == ARRAY


def test_scalar_route_gradients():
    xs = np.array([-1.5, 0.25, 0.75, 2.0])
    g = s2sad.grad(lambda x: np.sum(s2sad.broadcast(scalar_and_as_value, x)))(xs)
    want = [(1.0 if x > 0.5 else 0.0) - math.sin(x) for x in xs]
    np.testing.assert_allclose(g, want, rtol=1e-12)
    g2 = s2sad.grad(indexed_tuple)(0.7)
    assert math.isclose(g2, 2 * 0.7 * 1.0 - 0.5, rel_tol=1e-12)


def lambda_with_bad_syntax(x):
    f = lambda z: len({z}) * z
    return np.sum(s2sad.broadcast(f, x))


def test_a_refusal_of_the_chosen_route_is_located():
    assert route(lambda_with_bad_syntax).kind == FUSED
    with pytest.raises(S2SADError) as e:
        s2sad.grad(lambda_with_bad_syntax)(np.ones(3))
    assert e.value.location is not None and e.value.location.filename.endswith("test_plan_routes.py")


def test_explain_says_the_route_and_why():
    text = str(s2sad.explain(fused_sum))
    assert "route: fused: the sum of one elementwise expression" in text
    text = str(s2sad.explain(matmul_loss))
    assert "route: array:" in text and "'@'" in text
    text = str(s2sad.explain(scalar_control_flow))
    assert "route: scalar: control flow ('if'" in text


def test_the_route_is_made_once_per_plan():
    c = plans.compiled(fused_sum)
    assert c.route is plans.compiled(fused_sum).route


@pytest.mark.parametrize("fun", [fused_sum, matmul_loss, scalar_control_flow])
def test_every_plan_has_the_plan_protocol(fun):
    """Compiled and ArrayCompiled answer the same calls (plans.Plan): callers ask the
    plan, not its type."""
    c = plans.compiled(fun)
    members = [m for m in vars(plans.Plan) if not m.startswith("_")] + list(plans.Plan.__annotations__)
    for m in members:
        assert hasattr(c, m), m
    assert c.fused == (c.route.kind != ARRAY)
    nums = (0,)
    assert c.source(nums, "auto", "grad") == s2sad.source(s2sad.grad(fun))
    assert c.explain(nums, "auto")


def elementwise_product(x, b):
    return np.sin(x) * b


@pytest.mark.parametrize("mode", ["store", "recompute"])
def test_a_fused_vjp_pulls_back_through_the_runtimes_kernel_pullback(monkeypatch, mode):
    from s2sad import derivative_runtime
    calls = []
    real = derivative_runtime.kernel_grads
    monkeypatch.setattr(derivative_runtime, "kernel_grads", lambda *a: calls.append(1) or real(*a))
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    b = np.array([0.5, -1.0, 2.0, 0.25])
    out, pull = s2sad.vjp(elementwise_product, x, b, mode=mode)
    v = np.arange(12.0).reshape(3, 4)
    gx, gb = pull(v)
    assert calls
    np.testing.assert_allclose(out, np.sin(x) * b, rtol=1e-15)
    np.testing.assert_allclose(gx, np.cos(x) * b * v, rtol=1e-14)
    np.testing.assert_allclose(gb, np.sum(np.sin(x) * v, axis=0), rtol=1e-14)
    assert gb.shape == b.shape


KS = (0.5, 2.0)


def chained_helper(x):
    a = b = x * 2.0
    return a * b


def tuple_item_and_helper(x):
    return math.tanh(x + KS[0]) * chained_helper(x)


def test_scalar_code_that_is_not_a_fused_loss_is_one_scalar_function():
    """No array operation anywhere: the scalar route, even where an array program would
    refuse a helper's statement (a chained assignment), as the old fallback did."""
    assert route(tuple_item_and_helper).kind == SCALAR
    x = 0.3
    t = math.tanh(x + 0.5)
    want = (1.0 - t * t) * 4.0 * x * x + t * 8.0 * x
    assert math.isclose(s2sad.grad(tuple_item_and_helper)(x), want, rel_tol=1e-12)
    xs = np.array([-0.4, 0.1, 0.9])
    g = s2sad.grad(lambda v: np.sum(s2sad.broadcast(tuple_item_and_helper, v)))(xs)
    ts = np.tanh(xs + 0.5)
    np.testing.assert_allclose(g, (1.0 - ts * ts) * 4.0 * xs * xs + ts * 8.0 * xs, rtol=1e-12)

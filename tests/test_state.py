"""Stateful functions take the scan path: elements in order, state threaded through,
a reverse sweep for the adjoint, and the side effects happen once, as the primal's."""
import numpy as np
import pytest

import s2sad
import stateful_funcs as sf
from conftest import central_fd

X = np.arange(1.0, 11.0)
EXPECTED = np.arange(10.0, 0.0, -1.0)  # d/dx_j of sum_i prefix_i = number of prefixes containing x_j


def reset():
    sf.s = 0.0
    sf.S[:] = [0.0]
    sf.A[:] = 0.0
    sf.D["n"] = 0.0
    sf.f_nonlocal = sf.make_counter()


@pytest.fixture(autouse=True)
def _reset():
    reset()
    yield
    reset()


def test_global(backend):
    g = s2sad.grad(lambda x: sum(map(sf.f_global, x)), backend=backend)(X)
    np.testing.assert_array_equal(g, EXPECTED)
    assert sf.s == 55.0  # what a plain call leaves behind


@pytest.mark.parametrize("name", ["f_list", "f_array"])
def test_container_items(name, backend):
    f = getattr(sf, name)
    g = s2sad.grad(lambda x: sum(map(f, x)), backend=backend)(X)
    np.testing.assert_array_equal(g, EXPECTED)
    assert (sf.S[0] if name == "f_list" else sf.A[0]) == 55.0


def test_nonlocal_counter(backend):
    f = sf.f_nonlocal
    g = s2sad.grad(lambda x: sum(map(f, x)), backend=backend)(X)
    np.testing.assert_array_equal(g, EXPECTED)
    assert f(0.0) == 55.0  # the closure cell holds what the primal would have left


def test_local_list_captured_by_a_nested_function(backend):
    np.testing.assert_array_equal(s2sad.grad(sf.loss_local_list, backend=backend)(X), EXPECTED)
    np.testing.assert_array_equal(s2sad.grad(sf.loss_local_list, backend=backend)(X), EXPECTED)  # fresh each call


@pytest.mark.parametrize("site", ["map", "listcomp", "genexp", "broadcast"])
def test_every_site_kind(site, backend):
    losses = {
        "map": lambda x: sum(map(sf.f_global, x)),
        "listcomp": lambda x: sum([sf.f_global(z) for z in x]),
        "genexp": lambda x: sum(sf.f_global(z) for z in x),
        "broadcast": lambda x: np.sum(s2sad.broadcast(sf.f_global, x)),
    }
    np.testing.assert_array_equal(s2sad.grad(losses[site], backend=backend)(X), EXPECTED)
    assert sf.s == 55.0


def test_nonlinear_state_against_finite_differences(backend):
    x = np.linspace(-1.0, 1.5, 6)

    def plain(x):
        sf.D["n"] = 0.0
        return sum(sf.f_dict(float(z)) for z in x)

    expected = central_fd(plain, [x], 0)
    sf.D["n"] = 0.0
    value, g = s2sad.value_and_grad(lambda x: sum(map(sf.f_dict, x)), backend=backend)(x)
    sf.D["n"] = 0.0
    assert value == pytest.approx(plain(x), rel=1e-13)
    np.testing.assert_allclose(g, expected, rtol=1e-7, atol=1e-9)


def test_stateful_helper_called_by_a_pure_looking_function(backend):
    g = s2sad.grad(lambda x: sum(map(sf.calls_stateful, x)), backend=backend)(np.array([1.0, 2.0]))
    # y1 = 2 x1, y2 = 2 x1 + 2 x2; loss = y1^2 + y2^2
    assert g[0] == pytest.approx(2 * 2 * 2.0 + 2 * 6.0 * 2.0)
    assert g[1] == pytest.approx(2 * 6.0 * 2.0)
    assert sf.s == 6.0


def test_broadcast_outside_differentiation_runs_in_order(backend):
    out = s2sad.broadcast(sf.f_global, X, backend=backend)
    np.testing.assert_array_equal(out, np.cumsum(X))
    assert sf.s == 55.0


def test_explain_names_the_write():
    report = str(s2sad.explain(lambda x: sum(map(sf.f_global, x))))
    assert "scan" in report and "global s" in report and "stateful_funcs.py:" in report


def test_mutating_method_is_refused():
    with pytest.raises(s2sad.StatefulError) as e:
        s2sad.grad(lambda x: sum(map(sf.appends, x)))(X)
    assert "append" in str(e.value) and "stateful_funcs.py:" in str(e.value)


def test_vjp_side_effects_happen_once(backend):
    out, pullback = s2sad.vjp(lambda x: sum(map(sf.f_global, x)), X, backend=backend)
    assert out == 220.0 and sf.s == 55.0
    (g,) = pullback(2.0)
    np.testing.assert_array_equal(g, 2 * EXPECTED)
    assert sf.s == 55.0

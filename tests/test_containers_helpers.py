"""Issue 15, containers passed on: a dict (or namedtuple, dataclass, a method's self,
an entry of one) given whole to a helper function the loss calls, helpers calling
helpers, and a list or tuple argument indexed by a loop counter (`for i in
range(len(Ws)): h = np.tanh(h @ Ws[i])`) whose length the call fixes. Gradients
against central differences and the same loss written with positional arrays, on
both backends; the refusals that remain (recursion, a helper of another module,
*args, a dict still used whole) are located."""
import dataclasses
from collections import namedtuple

import numpy as np
import pytest

import s2sad
from tests import containers_other_module as other
from tests.containers_other_module import layer as other_layer
from tests.conftest import central_fd

rng = np.random.default_rng(77)
W1, B1 = rng.normal(size=(4, 3)) * 0.5, rng.normal(size=3)
W2, B2 = rng.normal(size=(3, 2)) * 0.5, rng.normal(size=2)
X = rng.normal(size=(5, 4))
U, V = rng.normal(size=6), rng.normal(size=6)


def layer(p, x):
    return np.tanh(x @ p["W"] + p["b"])


def block(p, x):
    return layer(p["second"], layer(p["first"], x))


def loss_one_layer(p, x):
    return np.sum(layer(p, x) ** 2)


def loss_nested(p, x):
    return np.sum(block(p, x))


def loss_layers_list(p, x):
    h = x
    for lp in p["layers"]:
        h = layer(lp, h)
    return np.sum(h)


def loss_keyword(p, x):
    return np.sum(layer(x=x, p=p))


def positional_two(W1_, b1, W2_, b2, x):
    return np.sum(np.tanh(np.tanh(x @ W1_ + b1) @ W2_ + b2))


def _params():
    return {"first": {"W": W1.copy(), "b": B1.copy()}, "second": {"W": W2.copy(), "b": B2.copy()}}


def _copied(t):
    return {k: _copied(v) for k, v in t.items()} if isinstance(t, dict) else t


def _fd_leaf(loss, p, x, path):
    """Central differences w.r.t. the leaf at `path` in p."""
    def at(a):
        q = _copied(p)
        node = q
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = a
        return loss(q, x)
    leaf = p
    for key in path:
        leaf = leaf[key]
    return central_fd(at, (leaf,), 0)


def test_a_dict_passed_whole_to_a_helper(backend):
    p = {"W": W1, "b": B1}
    g = s2sad.grad(loss_one_layer, backend=backend)(p, X)
    np.testing.assert_allclose(g["W"], _fd_leaf(loss_one_layer, p, X, ["W"]), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g["b"], _fd_leaf(loss_one_layer, p, X, ["b"]), rtol=1e-6, atol=1e-8)


def test_nested_helpers_and_entries_passed_whole_agree_with_positional(backend):
    p = _params()
    got = s2sad.grad(loss_nested, backend=backend)(p, X)
    want = s2sad.grad(positional_two, argnums=(0, 1, 2, 3), backend=backend)(W1, B1, W2, B2, X)
    for (k, leaf), w in zip([("first", "W"), ("first", "b"), ("second", "W"), ("second", "b")], want):
        np.testing.assert_allclose(got[k][leaf], w, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(got["first"]["W"], _fd_leaf(loss_nested, p, X, ["first", "W"]), rtol=1e-6,
                               atol=1e-8)


def test_a_loop_over_a_list_of_dicts_calls_the_helper_with_each(backend):
    p = {"layers": [{"W": W1, "b": B1}, {"W": W2, "b": B2}]}
    got = s2sad.grad(loss_layers_list, backend=backend)(p, X)
    want = s2sad.grad(positional_two, argnums=(0, 1, 2, 3), backend=backend)(W1, B1, W2, B2, X)
    np.testing.assert_allclose(got["layers"][0]["W"], want[0], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(got["layers"][1]["b"], want[3], rtol=1e-13, atol=1e-14)


def test_the_container_passed_by_keyword(backend):
    p = {"W": W1, "b": B1}
    got = s2sad.grad(loss_keyword, backend=backend)(p, X)
    want = s2sad.grad(loss_one_layer_plain, argnums=(0, 1), backend=backend)(W1, B1, X)
    np.testing.assert_allclose(got["W"], want[0], rtol=1e-13, atol=1e-14)


def loss_one_layer_plain(W, b, x):
    return np.sum(np.tanh(x @ W + b))


def ew_helper(p, x):
    return np.tanh(p["w"] * x + p["b"])


def ew_loss(p, x):
    return np.sum(ew_helper(p, x) ** 2)


def test_an_elementwise_helper_given_the_dict(backend):
    p = {"w": U, "b": V}
    x = rng.normal(size=6)
    got = s2sad.value_and_grad(ew_loss, backend=backend)(p, x)
    assert got[0] == pytest.approx(np.sum(np.tanh(U * x + V) ** 2), rel=1e-13)
    np.testing.assert_allclose(got[1]["w"], _fd_leaf(ew_loss, p, x, ["w"]), rtol=1e-6, atol=1e-8)


def test_a_local_helper_given_the_dict(backend):
    def loss(p, x):
        def inner(q, y):
            return np.tanh(y @ q["W"] + q["b"])
        return np.sum(inner(p, x))
    p = {"W": W1, "b": B1}
    got = s2sad.grad(loss, backend=backend)(p, X)
    want = s2sad.grad(loss_one_layer_plain, argnums=(0, 1), backend=backend)(W1, B1, X)
    np.testing.assert_allclose(got["W"], want[0], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(got["b"], want[1], rtol=1e-13, atol=1e-14)


Params = namedtuple("Params", ["W", "b"])


@dataclasses.dataclass
class DParams:
    W: np.ndarray
    b: np.ndarray


def nt_layer(p, x):
    return np.tanh(x @ p.W + p.b)


def nt_loss(p, x):
    return np.sum(nt_layer(p, x))


@pytest.mark.parametrize("kind", [Params, DParams])
def test_namedtuples_and_dataclasses_passed_whole(backend, kind):
    got = s2sad.grad(nt_loss, backend=backend)(kind(W1, B1), X)
    assert type(got) is kind
    want = s2sad.grad(loss_one_layer_plain, argnums=(0, 1), backend=backend)(W1, B1, X)
    np.testing.assert_allclose(got.W, want[0], rtol=1e-13, atol=1e-14)


class Model:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def loss(self, x):
        return np.sum(nt_layer(self, x) ** 2)


def test_a_methods_self_passed_to_a_helper(backend):
    m = Model(W1, B1)
    got = s2sad.grad(m.loss, backend=backend)(X)
    np.testing.assert_allclose(got, central_fd(m.loss, (X,), 0), rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------- a list indexed by a loop counter

def loss_indexed(Ws, x):
    h = x
    for i in range(len(Ws)):
        h = np.tanh(h @ Ws[i])
    return np.sum(h)


def loss_indexed_offsets(Ws, x):
    h = x @ Ws[0]
    for i in range(1, len(Ws)):
        h = np.tanh(h) @ Ws[i] + 0.1 * np.sum(Ws[i - 1])
    return np.sum(h ** 2)


@pytest.mark.parametrize("container", [list, tuple])
def test_a_list_indexed_by_the_loop_counter(backend, container):
    Ws = container([W1, W2, rng.normal(size=(2, 2))])
    got = s2sad.grad(loss_indexed, backend=backend)(Ws, X)
    assert type(got) is container and len(got) == 3
    for k in range(3):
        def at(w, k=k):
            ws = list(Ws)
            ws[k] = w
            return loss_indexed(container(ws), X)
        np.testing.assert_allclose(got[k], central_fd(at, (Ws[k],), 0), rtol=1e-6, atol=1e-8)


def test_loop_counter_arithmetic_in_the_index(backend):
    Ws = [W1, W2, rng.normal(size=(2, 2))]
    got = s2sad.grad(loss_indexed_offsets, backend=backend)(Ws, X)
    for k in range(3):
        def at(w, k=k):
            ws = list(Ws)
            ws[k] = w
            return loss_indexed_offsets(ws, X)
        np.testing.assert_allclose(got[k], central_fd(at, (Ws[k],), 0), rtol=1e-6, atol=1e-7)


def test_a_new_length_is_a_new_layout(backend):
    g = s2sad.grad(loss_indexed, backend=backend)
    assert len(g([W1, W2], X)) == 2
    got = g([W1], X)
    assert len(got) == 1
    np.testing.assert_allclose(got[0], central_fd(lambda w: loss_indexed([w], X), (W1,), 0), rtol=1e-6, atol=1e-8)
    with pytest.raises(s2sad.NonDifferentiableInputError):     # nothing to differentiate
        s2sad.grad(loss_indexed, backend=backend)([], X)
    assert s2sad.grad(loss_indexed, argnums=1, backend=backend)([], X).shape == X.shape


def loss_runtime_count(Ws, x, n):
    h = x
    for i in range(n):
        h = np.tanh(h @ Ws[i])
    return np.sum(h)


def test_an_index_the_call_does_not_fix_is_refused_located():
    with pytest.raises(s2sad.S2SADError) as err:
        s2sad.grad(loss_runtime_count)([W1, W2], X, 2)
    assert err.value.location is not None and "Ws[i]" in err.value.location.source_line()


# ---------------------------------------------------------------- refusals

def recursive(p, x, k):
    if k == 0:
        return x
    return recursive(p, np.tanh(x @ p["W"]), k - 1)


def loss_recursive(p, x):
    return np.sum(recursive(p, x, 2))


def ping(p, x, k):
    return x if k == 0 else pong(p, np.tanh(x @ p["W"]), k - 1)


def pong(p, x, k):
    return ping(p, x, k)


def loss_mutual(p, x):
    return np.sum(ping(p, x, 2))


def loss_other_module(p, x):
    return np.sum(other_layer(p, x))


def loss_other_module_attribute(p, x):
    return np.sum(other.layer(p, x))


def star_helper(*args):
    return args[0]["W"]


def loss_star(p, x):
    return np.sum(star_helper(p, x))


def returns_whole(p):
    return p


def loss_returns_whole(p, x):
    return np.sum(returns_whole(p)["W"] * 0.0 + x)


def loss_sums_dict(p, x):
    return np.sum(p) + np.sum(x)


@pytest.mark.parametrize("loss, error, words", [
    (loss_recursive, s2sad.RecursionNotSupportedError, "recursion"),
    (loss_mutual, s2sad.RecursionNotSupportedError, "recursion"),
    (loss_other_module, s2sad.UnsupportedSyntaxError, "same module"),
    (loss_other_module_attribute, s2sad.UnsupportedSyntaxError, "used whole"),
    (loss_star, s2sad.UnsupportedSyntaxError, r"\*args"),
    (loss_returns_whole, s2sad.UnsupportedSyntaxError, "used whole"),
    (loss_sums_dict, s2sad.UnsupportedSyntaxError, "used whole"),
])
def test_what_stays_refused_is_located(loss, error, words):
    with pytest.raises(error, match=words) as err:
        s2sad.grad(loss)({"W": W1, "b": B1}, X)
    assert err.value.location is not None and err.value.location.lineno > 0
    assert err.value.hint


def swap_me(p, x):
    return np.sum(x @ p["W"])


def loss_swapped(p, x):
    return swap_me(p, x)


def test_a_helper_rebound_between_calls_is_planned_again(backend):
    global swap_me
    p = {"W": W1, "b": B1}
    g = s2sad.grad(loss_swapped, backend=backend)
    first = g(p, X)
    np.testing.assert_allclose(first["W"], np.repeat(X.sum(0)[:, None], 3, axis=1))
    saved = swap_me
    try:
        def swap_me(p, x):          # noqa: F811  (the new helper the loss now calls)
            return np.sum(2.0 * x @ p["W"])
        got = s2sad.grad(loss_swapped, backend=backend)(p, X)
        np.testing.assert_allclose(got["W"], 2.0 * first["W"])
        np.testing.assert_allclose(g(p, X)["W"], 2.0 * first["W"])
    finally:
        swap_me = saved


def two_line_helper(p, x):
    z = x * p["w"]
    return np.tanh(z + p["b"])


def loss_two_line(p, x):
    return np.sum(two_line_helper(p, x) ** 2)


def loss_helper_twice_with_expressions(p, x):
    return np.sum(ew_helper(p, x * 2.0) + ew_helper(p, x + 1.0))


def test_one_line_helpers_are_inlined_and_keep_the_fused_route(backend):
    p, x = {"w": U, "b": V}, rng.normal(size=6)
    g = s2sad.grad(ew_loss, backend=backend)
    got = g(p, x)
    assert "route: fused" in str(s2sad.explain(g))
    g2 = s2sad.grad(loss_two_line, backend=backend)     # two statements: a copy of the helper, inlined later
    got2 = g2(p, x)
    for k in ("w", "b"):
        np.testing.assert_allclose(got2[k], got[k], rtol=1e-13, atol=1e-14)
    g3 = s2sad.grad(loss_helper_twice_with_expressions, backend=backend)
    got3 = g3(p, x)
    np.testing.assert_allclose(got3["w"], _fd_leaf(loss_helper_twice_with_expressions, p, x, ["w"]), rtol=1e-6,
                               atol=1e-8)


SCALE = 3.0


def scaled(p, x):
    return SCALE * np.sum(x * p["w"])


def loss_shadowing(p, x):
    SCALE = 100.0       # a local of the caller named like the helper's global: not inlined over it
    return scaled(p, x) + 0.0 * SCALE


def test_a_helper_global_named_like_a_caller_local_is_refused_not_misread(backend):
    p, x = {"w": U}, V
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="SCALE") as err:
        s2sad.grad(loss_shadowing, backend=backend)(p, x)
    assert "scaled(p, x)" in err.value.location.source_line() and "Rename" in err.value.hint

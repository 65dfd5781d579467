"""Issue 15, containers in s2sad.explain and s2sad.source: a grad object called with
containers says how its last call was flattened (each leaf's path -> the plan's
parameter, which are differentiated, the strings compiled in) and shows the plan of
those leaves (its route, its kernel, its derivative's source), not the plan of the
function read with its parameters as arrays."""
import numpy as np

import s2sad

rng = np.random.default_rng(3)
W, B, X = rng.normal(size=(3, 2)), rng.normal(size=2), rng.normal(size=(4, 3))
U, V = rng.normal(size=5), rng.normal(size=5)


def ew_loss(p, x):
    return np.sum(np.tanh(p["w"] * x + p["b"]) ** 2)


def layer(p, x):
    return np.tanh(x @ p["W"] + p["b"])


def mlp_loss(p, x, opts):
    h = layer(p, x)
    if opts["kind"] == "l2":
        return np.mean(h ** 2)
    return np.mean(np.abs(h))


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return np.sum((self.w * x) ** 2)


def test_explain_of_a_dict_call_lists_the_flattening_and_the_leaf_plan():
    g = s2sad.grad(ew_loss)
    before = str(s2sad.explain(g))
    assert "containers:" not in before          # not called yet: no layout to tell
    g({"w": U, "b": V}, U)
    text = str(s2sad.explain(g))
    assert "containers: the last call's arguments flattened into the plan's 3 parameter(s)" in text
    assert "p['b'] -> p_b (differentiated)" in text and "p['w'] -> p_w (differentiated)" in text
    assert "    x -> x\n" in text                  # a plain argument, not differentiated
    assert "route: fused" in text and "kernel ew_loss__elementwise(p_b, p_w, x)" in text
    assert "fast path" in text


def test_source_of_a_dict_call_shows_the_flattening_and_the_leaf_derivative():
    g = s2sad.value_and_grad(ew_loss, argnums=(0, 1))
    g({"w": U, "b": V}, U)
    text = s2sad.source(g)
    assert "#   p['w'] -> p_w (differentiated)" in text
    assert "#   x -> x (differentiated)" in text
    assert "(p_b, p_w, x):" in text.split("def ", 1)[1].split("\n")[0]
    assert "n1 = a0['b']" in text                # the fast path's reading of a call


def test_strings_compiled_in_and_helpers_given_the_dict():
    g = s2sad.grad(mlp_loss)
    g({"W": W, "b": B}, X, {"kind": "l2"})
    text = str(s2sad.explain(g))
    assert "opts['kind'] = 'l2': a string, compiled in" in text
    assert "p['W'] -> p_W (differentiated)" in text
    src = s2sad.source(g)
    assert "def mlp_loss__grad(p_W, p_b, x):" in src        # the string is compiled in: no parameter
    assert "matmul_rhs_bar(_1_bar, x, p_W)" in src           # the helper's product, inlined
    assert "abs" not in src                                  # the branch the string decided away


def test_explain_follows_the_last_new_layout():
    g = s2sad.grad(ew_loss)
    g({"w": U, "b": V}, U)
    g({"w": U, "b": V, "c": U}, U)
    text = str(s2sad.explain(g))
    assert "p['c'] -> p_c (differentiated)" in text and "4 parameter(s)" in text


def test_explain_of_a_method_names_self_attributes():
    m = Model(U)
    g = s2sad.grad(m.loss)
    g(V)
    text = str(s2sad.explain(g))
    assert "self.w -> self_w\n" in text and "x -> x (differentiated)" in text

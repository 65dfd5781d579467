"""Issue 15, containers: arguments, outputs and gradients as nested dicts, lists,
tuples, namedtuples and dataclasses (pytrees), with JAX's semantics: the gradient in
the argument's structure, argnums selecting whole containers, vjp's cotangent in the
output's structure, jvp's tangents in the primals'. Checked against central
differences over every float leaf, on every backend, and the refusals a hostile user
would meet (mismatched structures, keys the call lacks, int-only containers...)."""
import dataclasses
import math
from collections import namedtuple

import numpy as np
import pytest

import s2sad
from s2sad import tree

rng = np.random.default_rng(15)
W = rng.normal(size=(3, 4))
B = rng.normal(size=3)
X = rng.normal(size=4)
U = rng.normal(size=5)
V = rng.normal(size=5)


def fd_tree(f, args, i, h=1e-6):
    """Central differences of scalar f(*args) w.r.t. every float leaf of args[i], in its structure."""
    leaves, td = tree.flatten(args[i])

    def at(new_leaves):
        a = list(args)
        a[i] = tree.unflatten(td, new_leaves)
        return f(*a)

    out = []
    for k, leaf in enumerate(leaves):
        if isinstance(leaf, (int, np.integer)):      # data: a zero gradient
            out.append(0.0)
            continue
        if not (isinstance(leaf, float) or (isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f")):
            out.append(None)
            continue
        arr = np.array(leaf, dtype=float)
        g = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            plus, minus = arr.copy(), arr.copy()
            plus[idx] += h
            minus[idx] -= h
            lp, lm = list(leaves), list(leaves)
            lp[k] = plus if isinstance(leaf, np.ndarray) else float(plus)
            lm[k] = minus if isinstance(leaf, np.ndarray) else float(minus)
            g[idx] = (at(lp) - at(lm)) / (2 * h)
        out.append(g if isinstance(leaf, np.ndarray) else float(g))
    return tree.unflatten(td, out)


def assert_trees_close(got, want, rtol=1e-6, atol=1e-8):
    gl, gtd = tree.flatten(got)
    wl, wtd = tree.flatten(want)
    assert gtd == wtd, (gtd, wtd)
    for g, w in zip(gl, wl):
        if w is None:
            assert g is None or np.all(np.asarray(g) == 0)
            continue
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- losses of containers

def dict_loss(p, x):
    return np.sum((p["W"] @ x + p["b"]) ** 2)


def tuple_loss(params, x):
    w, b = params
    return np.sum(np.tanh(w @ x + b))


def list_loss(params, x):
    return np.sum((params[0] @ x) * params[1]) + params[-1][0]


def nested_loss(p, x):
    h = np.tanh(p["layers"][0]["W"] @ x + p["layers"][0]["b"])
    return np.sum(h * p["layers"][1]["w"]) + p["scale"] ** 2


def elementwise_dict(p):
    return np.sum(p["u"] * np.sin(p["v"]) + p["u"] ** 2)


def scalar_pair(p):
    a, b = p
    return a * a + math.sin(b) * a


Params = namedtuple("Params", "W b")


def named_loss(p, x):
    return np.sum((p.W @ x + p.b) ** 2) + np.sum(p[1])


@dataclasses.dataclass
class Layer:
    W: np.ndarray
    b: np.ndarray
    name: str = "dense"
    steps: int = 3


def dataclass_loss(layer, x):
    return np.sum(np.tanh(layer.W @ x + layer.b)) * layer.steps


CASES = [
    ("dict", dict_loss, ({"W": W, "b": B}, X)),
    ("tuple", tuple_loss, ((W, B), X)),
    ("list", list_loss, ([W, B, np.array([0.5, 1.0])], X)),
    ("nested", nested_loss, ({"layers": [{"W": W, "b": B}, {"w": B * 2}], "scale": 0.7}, X)),
    ("elementwise", elementwise_dict, ({"u": U, "v": V},)),
    ("scalar pair", scalar_pair, ((0.3, 1.1),)),
    ("namedtuple", named_loss, (Params(W, B), X)),
    ("dataclass", dataclass_loss, (Layer(W, B), X)),
]


@pytest.mark.parametrize("name,loss,args", CASES, ids=[c[0] for c in CASES])
def test_grad_in_the_arguments_structure(name, loss, args, backend):
    g = s2sad.grad(loss, backend=backend)(*args)
    assert type(g) is type(args[0])
    assert_trees_close(g, fd_tree(loss, args, 0))
    value, g2 = s2sad.value_and_grad(loss, backend=backend)(*args)
    assert value == pytest.approx(loss(*args), rel=1e-12)
    assert_trees_close(g2, g, rtol=1e-12)


def test_a_dataclass_gradient_keeps_its_type_and_its_data_fields(backend):
    g = s2sad.grad(dataclass_loss, backend=backend)(Layer(W, B), X)
    assert isinstance(g, Layer) and g.name is None and g.steps == 0.0
    assert g.W.shape == W.shape


def test_argnums_selects_whole_containers(backend):
    p, q = {"W": W, "b": B}, (X, 2.0)

    def loss(p, q):
        return np.sum((p["W"] @ q[0] + p["b"]) ** 2) * q[1]
    gp, gq = s2sad.grad(loss, argnums=(0, 1), backend=backend)(p, q)
    assert_trees_close(gp, fd_tree(loss, (p, q), 0))
    assert_trees_close(gq, fd_tree(loss, (p, q), 1))
    only_q = s2sad.grad(loss, argnums=1, backend=backend)(p, q)
    assert isinstance(only_q, tuple) and len(only_q) == 2
    assert_trees_close(only_q, gq, rtol=1e-12)


def test_float32_leaves_keep_their_dtype(backend):
    p = {"u": U.astype(np.float32), "v": V.astype(np.float32)}
    g = s2sad.grad(elementwise_dict, backend=backend)(p)
    assert g["u"].dtype == np.float32 and g["v"].dtype == np.float32
    want = fd_tree(elementwise_dict, ({"u": U, "v": V},), 0)
    np.testing.assert_allclose(g["u"], want["u"], rtol=1e-4)


def test_a_string_leaf_is_compiled_in_and_a_new_string_plans_again(backend):
    def loss(p, x):
        power = 2.0 if p["kind"] == "l2" else 1.0
        return np.sum(p["w"] * x ** power)
    g2 = s2sad.grad(loss, backend=backend)({"kind": "l2", "w": U}, V)
    g1 = s2sad.grad(loss, backend=backend)({"kind": "l1", "w": U}, V)
    np.testing.assert_allclose(g2["w"], V ** 2)
    np.testing.assert_allclose(g1["w"], V)
    assert g2["kind"] is None


# ---------------------------------------------------------------- vjp and jvp

def pair_out(x, y):
    return np.sin(x) * y, x * 2.0 + y


def dict_out(p):
    return {"prod": p["u"] * p["v"], "exp": np.exp(p["u"])}


def test_vjp_cotangent_in_the_outputs_structure(backend):
    out, pull = s2sad.vjp(dict_out, {"u": U, "v": V}, backend=backend)
    assert set(out) == {"prod", "exp"}
    np.testing.assert_allclose(out["exp"], np.exp(U))
    ct = {"prod": np.ones(5) * 0.5, "exp": np.arange(5.0)}
    (adj,) = pull(ct)
    np.testing.assert_allclose(adj["u"], 0.5 * V + np.arange(5.0) * np.exp(U), rtol=1e-10)
    np.testing.assert_allclose(adj["v"], 0.5 * U, rtol=1e-10)
    out, pull = s2sad.vjp(pair_out, U, V, backend=backend)
    gx, gy = pull((np.ones(5), np.ones(5)))
    np.testing.assert_allclose(gx, np.cos(U) * V + 2.0, rtol=1e-10)
    np.testing.assert_allclose(gy, np.sin(U) + 1.0, rtol=1e-10)


def test_jvp_tangents_in_the_primals_structure(backend):
    p, t = {"u": U, "v": V}, {"u": np.ones(5), "v": np.full(5, 2.0)}
    out, dot = s2sad.jvp(dict_out, (p,), (t,), backend=backend)
    np.testing.assert_allclose(dot["prod"], V + 2.0 * U, rtol=1e-12)
    np.testing.assert_allclose(dot["exp"], np.exp(U), rtol=1e-12)
    value, dot = s2sad.jvp(dict_loss, ({"W": W, "b": B}, X), ({"W": np.ones_like(W), "b": np.zeros(3)}, X * 0))
    want = fd_tree(dict_loss, ({"W": W, "b": B}, X), 0)
    assert value == pytest.approx(dict_loss({"W": W, "b": B}, X))
    assert dot == pytest.approx(float(np.sum(want["W"])), rel=1e-6)


def test_mismatched_cotangent_and_tangent_structures_are_refused():
    _, pull = s2sad.vjp(dict_out, {"u": U, "v": V})
    with pytest.raises(s2sad.S2SADError, match="cotangent"):
        pull({"prod": np.ones(5)})
    with pytest.raises(s2sad.S2SADError, match="cotangent"):
        pull((np.ones(5), np.ones(5)))
    with pytest.raises(s2sad.ShapeError):
        pull({"prod": np.ones(4), "exp": np.ones(5)})
    with pytest.raises(s2sad.S2SADError, match="tangent"):
        s2sad.jvp(dict_out, ({"u": U, "v": V},), ({"u": U},))
    with pytest.raises(s2sad.ShapeError):
        s2sad.jvp(dict_out, ({"u": U, "v": V},), ({"u": U, "v": np.ones(2)},))


# ---------------------------------------------------------------- keys, mutation, data

def test_a_dict_with_int_and_tuple_keys(backend):
    def loss(p):
        return np.sum(p[0] * p[1]) + np.sum(p[-1] ** 2)
    g = s2sad.grad(loss, backend=backend)({0: U, 1: V, -1: np.array([1.5])})
    np.testing.assert_allclose(g[0], V)
    np.testing.assert_allclose(g[-1], [3.0])

    def by_pairs(p):
        return np.sum(p[0, "a"] * p[(1, "b")])
    g = s2sad.grad(by_pairs, backend=backend)({(0, "a"): U, (1, "b"): V})
    np.testing.assert_allclose(g[(0, "a")], V)


def test_a_dict_whose_keys_cannot_be_ordered_is_refused():
    with pytest.raises(s2sad.S2SADError, match="ordered"):
        s2sad.grad(lambda p: p[0] + p["a"])({0: 1.0, "a": 2.0})


def test_a_container_mutated_between_calls_is_read_anew(backend):
    def loss(p):
        return np.sum(p["u"] ** 2) + (np.sum(p["v"]) if "v" in p else 0.0)

    def loss_keys(p):
        return np.sum(p["u"] ** 2)
    g = s2sad.grad(loss_keys, backend=backend)
    p = {"u": U}
    np.testing.assert_allclose(g(p)["u"], 2 * U)
    p["u"] = V                          # a new value
    np.testing.assert_allclose(g(p)["u"], 2 * V)
    p["extra"] = np.ones(2)             # a new key: a new layout, its gradient included
    got = g(p)
    assert set(got) == {"u", "extra"}
    np.testing.assert_array_equal(got["extra"], np.zeros(2))
    lst = [U, V]
    gl = s2sad.grad(lambda q: np.sum(q[0] * q[-1]), backend=backend)
    np.testing.assert_allclose(gl(lst)[0], V)
    lst.append(np.ones(5))              # q[-1] is another leaf now
    np.testing.assert_allclose(gl(lst)[0], np.ones(5))


def test_integer_leaves_are_data(backend):
    def loss(p):
        return np.sum(p["w"] ** 2) * p["n"]
    g = s2sad.grad(loss, backend=backend)({"w": U, "n": 3})
    np.testing.assert_allclose(g["w"], 6 * U)
    assert g["n"] == 0.0


def test_a_container_with_no_float_leaf_is_refused_located():
    def loss(p, x):
        return np.sum(x * p["n"])
    with pytest.raises(s2sad.NonDifferentiableInputError, match="no float leaf") as err:
        s2sad.grad(loss)({"n": 3, "s": "a"}, U)
    assert err.value.location is not None and err.value.location.lineno == loss.__code__.co_firstlineno
    with pytest.raises(s2sad.NonDifferentiableInputError, match="no float leaf"):
        s2sad.grad(loss)({}, U)
    assert s2sad.grad(loss, argnums=1)({"n": 3}, U)[0] == 3.0


def test_empty_containers_as_data(backend):
    def loss(x, opts):
        return np.sum(x ** 2)
    np.testing.assert_allclose(s2sad.grad(loss, backend=backend)(U, {}), 2 * U)
    np.testing.assert_allclose(s2sad.grad(loss, backend=backend)(U, []), 2 * U)
    np.testing.assert_allclose(s2sad.grad(loss, backend=backend)(U, None), 2 * U)


def test_reads_the_call_cannot_satisfy_are_refused_located():
    def missing(p):
        return np.sum(p["nope"])
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="no key 'nope'") as err:
        s2sad.grad(missing)({"u": U})
    assert "p[\"nope\"]" in err.value.location.source_line()

    def whole(p):     # (a dict passed whole to a helper is taken: tests/test_containers_helpers.py)
        return np.sum(p)
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="used whole") as err:
        s2sad.grad(whole)({"u": U})
    assert "Read the entries" in err.value.hint

    def rebound(p):
        p = p["u"]
        return np.sum(p)
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="assigned"):
        s2sad.grad(rebound)({"u": U})

    def out_of_range(p):
        return p[2]
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="out of range"):
        s2sad.grad(out_of_range)((1.0, 2.0))


def test_a_list_of_numbers_used_whole_is_still_an_array(backend):
    def loss(x):
        return np.sum(np.asarray(x) ** 2)
    g = s2sad.grad(loss, backend=backend)([1.0, 2.0, 3.0])
    assert isinstance(g, list) and g == [2.0, 4.0, 6.0]


# ---------------------------------------------------------------- has_aux

def aux_loss(p, x):
    pred = p["W"] @ x + p["b"]
    return np.sum(pred ** 2), {"pred": pred, "note": "kept"}


def test_has_aux_on_grad_value_and_grad_and_vjp(backend):
    p = {"W": W, "b": B}
    g, aux = s2sad.grad(aux_loss, has_aux=True, backend=backend)(p, X)
    assert_trees_close(g, fd_tree(lambda q, x: aux_loss(q, x)[0], (p, X), 0))
    np.testing.assert_allclose(aux["pred"], W @ X + B)
    assert aux["note"] == "kept"
    (value, aux2), g2 = s2sad.value_and_grad(aux_loss, has_aux=True, backend=backend)(p, X)
    assert value == pytest.approx(np.sum((W @ X + B) ** 2))
    assert_trees_close(g2, g, rtol=1e-12)
    out, pull, aux3 = s2sad.vjp(aux_loss, p, X, has_aux=True, backend=backend)
    gp, gx = pull(2.0)
    assert_trees_close(gp, tree.map(lambda v: 2 * v, g), rtol=1e-12)
    np.testing.assert_allclose(aux3["pred"], aux["pred"])


def test_has_aux_of_plain_arguments_and_scalars(backend):
    def f(x):
        y = x * x
        return np.sum(np.sin(y)), np.mean(y)
    g, aux = s2sad.grad(f, has_aux=True, backend=backend)(U)
    np.testing.assert_allclose(g, np.cos(U * U) * 2 * U, rtol=1e-12)
    assert aux == pytest.approx(np.mean(U * U))


def test_has_aux_needs_a_pair():
    def f(x):
        return np.sum(x)
    with pytest.raises(s2sad.S2SADError, match="has_aux"):
        s2sad.grad(f, has_aux=True)(U)


# ---------------------------------------------------------------- s2sad.tree

def test_tree_round_trip_and_map():
    t = {"b": [1.0, (2.0, None)], "a": Params(np.ones(2), 3), "c": Layer(W, B)}
    leaves, td = tree.flatten(t)
    assert leaves[0] is t["a"].W      # sorted keys, leaves not copied
    back = tree.unflatten(td, leaves)
    assert back["b"] == [1.0, (2.0, None)] and isinstance(back["a"], Params) and isinstance(back["c"], Layer)
    doubled = tree.map(lambda v: v * 2 if not isinstance(v, str) else v, t)
    assert doubled["b"][1][0] == 4.0 and doubled["c"].name == "densedense" or doubled["c"].name == "dense"
    summed = tree.map(lambda a, b: a + b, {"x": 1.0, "y": 2.0}, {"x": 10.0, "y": 20.0})
    assert summed == {"x": 11.0, "y": 22.0}
    with pytest.raises(s2sad.S2SADError, match="structure"):
        tree.map(lambda a, b: a + b, {"x": 1.0}, {"y": 1.0})
    with pytest.raises(s2sad.S2SADError, match="leaves"):
        tree.unflatten(td, leaves[:-1])


# ---------------------------------------------------------------- loops over a container's entries

def mlp(params, x):
    h = x
    for layer in params["layers"]:
        h = np.tanh(layer["W"] @ h + layer["b"])
    return np.sum(h * params["out"])


def weighted(ws, x):
    total = 0.0
    for i, w in enumerate(ws):
        total = total + (i + 1.0) * np.sum(w * x)
    return total


def test_a_loop_over_a_container_argument_is_unrolled(backend):
    layers = [{"W": rng.normal(size=(4, 4)), "b": rng.normal(size=4)} for _ in range(3)]
    params = {"layers": layers, "out": rng.normal(size=4)}
    g = s2sad.grad(mlp, backend=backend)(params, X)
    assert_trees_close(g, fd_tree(mlp, (params, X), 0))
    ws = (U, V, U * 2)
    g = s2sad.grad(weighted, backend=backend)(ws, V)
    np.testing.assert_allclose(g[2], 3.0 * V, rtol=1e-12)
    assert isinstance(g, tuple) and len(g) == 3


@s2sad.differentiate
def decorated_loss(p, x):
    return np.sum((p["W"] @ x + p["b"]) ** 2)


def test_a_differentiate_function_takes_containers():
    p = {"W": W, "b": B}
    assert_trees_close(decorated_loss.grad(p, X), fd_tree(dict_loss, (p, X), 0))
    value, g = decorated_loss.value_and_grad(p, X)
    assert value == pytest.approx(dict_loss(p, X))


def test_a_write_into_a_container_argument_is_refused_located():
    def writes(p):
        p["W"] = p["W"] * 2.0
        return np.sum(p["W"])

    def augments(p):
        p[0] += 1.0
        return p[0] * p[1]
    for f, arg in ((writes, {"W": U}), (augments, [1.0, 2.0])):
        before = tree.map(lambda v: np.copy(v), arg)
        with pytest.raises(s2sad.UnsupportedSyntaxError, match="writes into") as err:
            s2sad.grad(f)(arg)
        assert err.value.location.lineno > f.__code__.co_firstlineno
        assert_trees_close(arg, before, rtol=0)         # not mutated


def scalar_dict(p):
    return p["a"] * math.sin(p["b"])


def masked(p, x):
    if p["mask"] is None:
        return np.sum(p["w"] * x)
    return np.sum(p["w"] * x * p["mask"])


def test_scalar_leaves_none_entries_and_zero_d_arrays(backend):
    g = s2sad.grad(scalar_dict, backend=backend)({"a": 2.0, "b": 0.5})
    assert g["a"] == pytest.approx(math.sin(0.5), rel=1e-14) and g["b"] == pytest.approx(2 * math.cos(0.5))
    assert type(g["a"]) is float
    x = np.arange(3.0)
    g = s2sad.grad(masked, backend=backend)({"w": np.ones(3), "mask": None}, x)
    assert g["mask"] is None
    np.testing.assert_array_equal(g["w"], x)
    mask = np.array([1.0, 0.0, 1.0])
    g = s2sad.grad(masked, backend=backend)({"w": np.ones(3), "mask": mask}, x)
    np.testing.assert_array_equal(g["w"], x * mask)
    np.testing.assert_array_equal(g["mask"], x)

    def h(p):
        return np.sum(p["z"] * 2.0) + p["s"] ** 2
    g = s2sad.grad(h, backend=backend)({"z": np.array(3.0), "s": np.float32(2.0)})
    assert g["z"].shape == () and float(g["z"]) == 2.0
    assert isinstance(g["s"], np.float32) and g["s"] == 4.0


def map_reads_dict(p, x):
    return sum(map(lambda z: math.tanh(z * p["a"]) + p["b"], x))


def map_reads(p, x):
    return sum(map(lambda z: z * p[0] ** 2, x))


def test_a_scalar_function_inside_reads_container_entries(backend):
    p = {"a": 2.0, "b": 1.0}
    g = s2sad.grad(map_reads_dict, backend=backend)(p, U)
    assert_trees_close(g, fd_tree(map_reads_dict, (p, U), 0))
    g = s2sad.grad(map_reads, backend=backend)((3.0,), U)
    assert g[0] == pytest.approx(6.0 * float(np.sum(U)), rel=1e-12)

"""hessian and hvp of functions of containers (session 13, reach brief 3).

They were refused ("argument 0 is a dict; Jacobians and Hessians are taken in arrays");
JAX takes them: `jax.hessian` of a function of a dict gives a dict of dicts, `H[ki][kj]`
of shape `p[ki].shape + p[kj].shape`, and `hvp` takes tangents in the primals' structure.
s2sad now gives the same layout (s2sad/tree_higher.py). Each result is checked against
central differences of the gradient and, where /tmp/benchenv's JAX is importable,
against JAX's own (values and nesting).
"""
from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest

import s2sad
from s2sad import tree

P = collections.namedtuple("P", "w b")


@dataclasses.dataclass
class D:
    u: np.ndarray
    v: float


def f_dict(p):
    return np.sum(np.tanh(p["w"]) * p["b"][0] ** 2) + np.sum(p["w"] ** 2) * p["c"]


def g_list(l):
    return np.sum(l[0] ** 3) * np.sum(l[1])


def h_named(p):
    return np.sum(p.w * p.b) ** 2


def mlp(params, x):
    return np.sum(np.tanh(params["W"] @ x + params["b"]) ** 2)


def nested(p):
    return np.sum(p["a"][0] * p["a"][1]) * np.sum(p["b"][0] ** 2)


def dataclass_loss(d):
    return np.sum(np.sin(d.u)) * d.v ** 2


def with_data(p, x, y):
    return np.sum((p["w"] * x - y) ** 2) * p["s"] ** 2


RNG = np.random.default_rng(7)
CASES = {
    "dict": (f_dict, ({"w": RNG.normal(size=3), "b": RNG.normal(size=2), "c": 0.7},), 0),
    "list": (g_list, ([RNG.normal(size=2), RNG.normal(size=3)],), 0),
    "namedtuple": (h_named, (P(RNG.normal(size=2), RNG.normal(size=2)),), 0),
    "mlp": (mlp, ({"W": RNG.normal(size=(2, 3)), "b": RNG.normal(size=2)}, RNG.normal(size=3)), 0),
    "mlp_both": (mlp, ({"W": RNG.normal(size=(2, 3)), "b": RNG.normal(size=2)}, RNG.normal(size=3)), (0, 1)),
    "nested": (nested, ({"a": [RNG.normal(size=2), RNG.normal(size=2)], "b": (RNG.normal(size=3),)},), 0),
    "dataclass": (dataclass_loss, (D(RNG.normal(size=3), 1.3),), 0),
    "data_beside": (with_data, ({"w": RNG.normal(size=4), "s": 0.9}, RNG.normal(size=4), RNG.normal(size=4)), 0),
}


def _leaves(x):
    return tree.flatten(x)[0] if not isinstance(x, (np.ndarray, float)) else [x]


def fd_hessian(fun, args, argnums, eps=1e-6):
    """{(a, i, b, j): block} by central differences of s2sad.grad (in the leaves' order)."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    g = s2sad.grad(fun, argnums=nums)
    out = {}
    for b in nums:
        leaves_b, td_b = (tree.flatten(args[b]) if not isinstance(args[b], np.ndarray) else ([args[b]], None))
        for j, leaf in enumerate(leaves_b):
            shape = np.shape(leaf)
            cols = []
            for k in range(int(np.prod(shape))):
                def moved(h):
                    new = [np.array(x, dtype=float) if isinstance(x, np.ndarray) else x for x in leaves_b]
                    if shape:
                        flat = new[j].reshape(-1)
                        flat[k] += h
                    else:
                        new[j] = new[j] + h
                    a = list(args)
                    a[b] = tree.unflatten(td_b, new) if td_b is not None else new[0]
                    return [_leaves(x) for x in g(*a)]
                plus, minus = moved(eps), moved(-eps)
                cols.append([[(np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(pa, ma)]
                             for pa, ma in zip(plus, minus)])
            for ai, a in enumerate(nums):
                for i in range(len(cols[0][ai]) if cols else 0):
                    block = np.stack([np.reshape(c[ai][i], -1) for c in cols], axis=-1)
                    out[(a, i, b, j)] = block.reshape(np.shape(cols[0][ai][i]) + shape)
    return out


def nested_blocks(H, args, argnums):
    """{(a, i, b, j): block} of a Hessian in JAX's nesting, each level checked to be its
    argument's structure and each block of shape leaf_i.shape + leaf_j.shape."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    out = {}
    for ka, a in enumerate(nums):
        for kb, b in enumerate(nums):
            # (a tuple of argnums: JAX's H[a], a's structure, then a tuple over b, b's structure)
            Ha = H[ka] if isinstance(argnums, tuple) else H
            la, lb = _leaves(args[a]), _leaves(args[b])
            outer = tree.flatten_up_to(tree.structure(args[a]), Ha) if not isinstance(args[a], np.ndarray) else [Ha]
            assert len(outer) == len(la)
            for i, inner in enumerate(outer):
                if isinstance(argnums, tuple):
                    assert type(inner) is tuple and len(inner) == len(nums)
                    inner = inner[kb]
                blocks = tree.flatten_up_to(tree.structure(args[b]), inner) \
                    if not isinstance(args[b], np.ndarray) else [inner]
                assert len(blocks) == len(lb)
                for j, blk in enumerate(blocks):
                    assert np.shape(blk) == np.shape(la[i]) + np.shape(lb[j]), (a, i, b, j)
                    out[(a, i, b, j)] = np.asarray(blk)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_hessian_of_containers_against_finite_differences(case, backend):
    fun, args, argnums = CASES[case]
    want = fd_hessian(fun, args, argnums)
    for _ in range(2):
        H = s2sad.hessian(fun, argnums=argnums, backend=backend)(*args)
        got = nested_blocks(H, args, argnums)
        assert got.keys() == want.keys()
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=str(k))


@pytest.mark.parametrize("case", sorted(CASES))
def test_hvp_of_containers_is_the_hessian_times_the_tangent(case):
    fun, args, argnums = CASES[case]
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    tangents = tuple(tree.map(lambda x: np.asarray(RNG.normal(size=np.shape(x))) if np.shape(x) else float(RNG.normal()),
                              a) if not isinstance(a, np.ndarray) else RNG.normal(size=a.shape) for a in args)
    got = s2sad.hvp(fun, args, tangents, argnums=argnums)
    got = got if isinstance(argnums, tuple) else (got,)
    H = nested_blocks(s2sad.hessian(fun, argnums=nums)(*args), args, nums)
    for ka, a in enumerate(nums):
        assert tree.structure(got[ka]) == tree.structure(args[a]) if not isinstance(args[a], np.ndarray) else True
        for i, gi in enumerate(_leaves(got[ka])):
            want = sum(np.tensordot(H[(a, i, b, j)], np.asarray(tj), axes=np.ndim(tj))
                       for b in nums for j, tj in enumerate(_leaves(tangents[b])))
            np.testing.assert_allclose(gi, want, rtol=1e-10, atol=1e-12)
            assert np.shape(gi) == np.shape(_leaves(args[a])[i])


def test_float32_leaves_stay_float32():
    p = {"w": RNG.normal(size=3).astype(np.float32), "b": RNG.normal(size=2).astype(np.float32), "c": np.float32(0.5)}
    H = s2sad.hessian(f_dict)(p)
    assert H["w"]["w"].dtype == np.float32 and H["w"]["b"].shape == (3, 2)
    want = fd_hessian(f_dict, ({k: np.asarray(v, dtype=np.float64) for k, v in p.items()},), 0)
    np.testing.assert_allclose(H["w"]["b"], want[(0, 2, 0, 0)], rtol=1e-4, atol=1e-5)   # (leaves by sorted key: b, c, w)


def test_a_non_float_leaf_is_refused_located():
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.hessian(f_dict)({"w": np.ones(3), "b": np.ones(2), "c": 2})
    assert "test_trust_s13_tree_hessian.py" in str(e.value) and "int" in str(e.value)
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.hvp(f_dict, ({"w": np.ones(3), "b": np.ones(2), "c": 2},), ({"w": np.ones(3), "b": np.ones(2), "c": 0.0},))
    assert "test_trust_s13_tree_hessian.py" in str(e.value)


def test_a_tangent_of_another_structure_is_refused():
    p = {"w": np.ones(3), "b": np.ones(2), "c": 0.5}
    with pytest.raises(s2sad.S2SADError):
        s2sad.hvp(f_dict, (p,), ({"w": np.ones(3), "b": np.ones(2)},))
    with pytest.raises(s2sad.S2SADError):
        s2sad.hvp(f_dict, (p,), ({"w": np.ones(4), "b": np.ones(2), "c": 0.0},))


def _jax():
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        return jax
    except ImportError:
        return None


@pytest.mark.parametrize("case", ["dict", "list", "namedtuple", "mlp", "mlp_both", "nested"])
def test_hessian_of_containers_as_jax(case):
    jx = _jax()
    if jx is None:
        pytest.skip("JAX is not in the test extras: `pip install jax` (make bench installs it) runs these comparisons")
    import jax.numpy as jnp
    fun, args, argnums = CASES[case]
    jfun = _jax_twin(case, jnp)
    H = s2sad.hessian(fun, argnums=argnums)(*args)
    J = jx.hessian(jfun, argnums=argnums)(*_to_jax(args, jnp))
    want = jx.tree_util.tree_map(np.asarray, J)
    got_leaves, got_td = jx.tree_util.tree_flatten(H)
    want_leaves, want_td = jx.tree_util.tree_flatten(want)
    assert got_td == want_td
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def _to_jax(args, jnp):
    import jax
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype=jnp.float64), args)


def _jax_twin(case, jnp):
    if case == "dict":
        return lambda p: jnp.sum(jnp.tanh(p["w"]) * p["b"][0] ** 2) + jnp.sum(p["w"] ** 2) * p["c"]
    if case == "list":
        return lambda l: jnp.sum(l[0] ** 3) * jnp.sum(l[1])
    if case == "namedtuple":
        return lambda p: jnp.sum(p.w * p.b) ** 2
    if case in ("mlp", "mlp_both"):
        return lambda params, x: jnp.sum(jnp.tanh(params["W"] @ x + params["b"]) ** 2)
    return lambda p: jnp.sum(p["a"][0] * p["a"][1]) * jnp.sum(p["b"][0] ** 2)


@pytest.mark.parametrize("case", ["dict", "list", "namedtuple", "mlp", "dataclass", "data_beside"])
@pytest.mark.parametrize("made_by", ["grad", "value_and_grad"])
def test_jvp_of_grad_of_containers(case, made_by):
    """jvp(grad(f)) with containers: a raw TypeError for a namedtuple ("float() argument
    must be ... not 'P'"), a refusal for a dict; now (grad, hvp) in grad's structure."""
    fun, args, argnums = CASES[case]
    tangents = tuple(tree.map(lambda x: np.asarray(RNG.normal(size=np.shape(x))) if np.shape(x) else float(RNG.normal()),
                              a) if not isinstance(a, np.ndarray) else RNG.normal(size=a.shape) for a in args)
    only = tuple(t if k == argnums else tree.map(lambda x: np.zeros_like(np.asarray(x)) if np.shape(x) else 0.0, t)
                 for k, t in enumerate(tangents))
    d = getattr(s2sad, made_by)(fun, argnums=argnums)
    out, out_dot = s2sad.jvp(d, args, only)
    g_want = s2sad.grad(fun, argnums=argnums)(*args)
    h_want = s2sad.hvp(fun, args, only, argnums=argnums)
    if made_by == "value_and_grad":
        assert out[0] == pytest.approx(fun(*args), rel=1e-12)
        eps = 1e-6
        moved = [tree.map(lambda x, t: x + s * eps * t, a, t) if not isinstance(a, np.ndarray) else a + s * eps * t
                 for s in (1, -1) for a, t in [(args[argnums], only[argnums])]]
        rest = lambda m: tuple(m if k == argnums else a for k, a in enumerate(args))     # noqa: E731
        assert out_dot[0] == pytest.approx((fun(*rest(moved[0])) - fun(*rest(moved[1]))) / (2 * eps), rel=1e-6)
        out, out_dot = out[1], out_dot[1]
    assert tree.structure(out) == tree.structure(g_want) and tree.structure(out_dot) == tree.structure(h_want)
    for a, b in zip(tree.leaves(out), tree.leaves(g_want)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for a, b in zip(tree.leaves(out_dot), tree.leaves(h_want)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)

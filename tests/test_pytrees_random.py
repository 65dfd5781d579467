"""Issue 15: random containers. Random nested dicts, lists, tuples and namedtuples of
float arrays, floats and ints, and a loss written out (as source in a module) that
reads every leaf by its constant path, sometimes by unpacking or a loop over a list;
grad in the argument's structure against central differences, on every backend."""
import importlib
import sys
import uuid
from collections import namedtuple

import numpy as np
import pytest

import s2sad
from s2sad import tree

from test_pytrees import assert_trees_close, fd_tree

Pair = namedtuple("Pair", "left right")
CASES = 12


def _random_tree(rng, depth):
    kind = rng.choice(["dict", "list", "tuple", "pair", "leaf", "leaf"] if depth < 3 else ["leaf"])
    if kind == "leaf":
        r = rng.random()
        if r < 0.15:
            return int(rng.integers(1, 4))
        if r < 0.4:
            return float(rng.normal())
        return rng.normal(size=tuple(rng.integers(1, 4, size=rng.integers(1, 3))))
    n = int(rng.integers(1, 4))
    children = [_random_tree(rng, depth + 1) for _ in range(n)]
    if kind == "dict":
        return {f"k{i}": c for i, c in enumerate(children)}
    if kind == "pair":
        return Pair(children[0], _random_tree(rng, depth + 1))
    return children if kind == "list" else tuple(children)


def _paths(t, path):
    """(source path, leaf) of every leaf, as the loss reads it."""
    if isinstance(t, dict):
        return [x for k in sorted(t) for x in _paths(t[k], f"{path}[{k!r}]")]
    if isinstance(t, Pair):
        return _paths(t.left, f"{path}.left") + _paths(t.right, f"{path}[1]")
    if isinstance(t, (list, tuple)):
        return [x for i, c in enumerate(t) for x in _paths(c, f"{path}[{i}]")]
    return [(path, t)]


def _source(t) -> str:
    terms = [f"np.sum(np.tanh({p}) * {i + 1}.0)" if not isinstance(v, int) else f"np.sum({p} * 0.5)"
             for i, (p, v) in enumerate(_paths(t, "p"))]
    return ("import numpy as np\n\n\ndef loss(p, x):\n    return x * (" + " + ".join(terms) + ")\n")


@pytest.fixture
def module_of(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    names = []

    def make(source):
        name = f"s2sad_trees_{uuid.uuid4().hex}"
        (tmp_path / f"{name}.py").write_text(source)
        importlib.invalidate_caches()
        names.append(name)
        return importlib.import_module(name)
    yield make
    for name in names:
        sys.modules.pop(name, None)


@pytest.mark.parametrize("seed", range(CASES))
def test_random_containers_against_central_differences(seed, module_of, backend):
    rng = np.random.default_rng(1000 + seed)
    t = _random_tree(rng, 0)
    if tree.is_node(t) is False or not any(isinstance(v, (float, np.ndarray)) for _, v in _paths(t, "p")):
        t = {"only": t, "w": rng.normal(size=2)}
    mod = module_of(_source(t))
    g = s2sad.grad(mod.loss, backend=backend)(t, 1.3)
    assert tree.structure(g) == tree.structure(t)
    assert_trees_close(g, fd_tree(mod.loss, (t, 1.3), 0), rtol=1e-6, atol=1e-8)
    gx = s2sad.grad(mod.loss, argnums=1, backend=backend)(t, 1.3)
    assert gx == pytest.approx(mod.loss(t, 1.0), rel=1e-12)


def _floats_only(t):
    """t with its int leaves made floats (a Hessian is taken in float leaves only)."""
    return tree.map(lambda v: float(v) if isinstance(v, int) else v, t)


@pytest.mark.parametrize("seed", range(6))
def test_random_containers_hessian_and_hvp(seed, module_of):
    """Session 13: hessian and hvp in random containers, JAX's nesting (a dict of dicts),
    against central differences of grad; the loss squares the sum so every pair of
    leaves couples."""
    rng = np.random.default_rng(2000 + seed)
    t = _floats_only(_random_tree(rng, 0))
    if not tree.is_node(t):
        t = {"only": t, "w": rng.normal(size=2)}
    leaves, td = tree.flatten(t)
    if sum(np.size(v) for v in leaves) > 40:
        leaves = leaves[:3]
        t = {f"k{i}": v for i, v in enumerate(leaves)}
        leaves, td = tree.flatten(t)
    terms = [f"np.sum(np.tanh({p}) * {i + 1}.0)" for i, (p, _) in enumerate(_paths(t, "p"))]
    mod = module_of("import numpy as np\n\n\ndef loss(p, x):\n    return x * (" + " + ".join(terms) + ") ** 2\n")
    H = s2sad.hessian(mod.loss)(t, 1.3)
    g = s2sad.grad(mod.loss)
    outer = tree.flatten_up_to(td, H)
    eps = 1e-6
    for j, leaf in enumerate(leaves):
        shape = np.shape(leaf)
        for k in range(int(np.prod(shape))):
            def at(h):
                new = [np.array(v, dtype=float) for v in leaves]
                new[j].reshape(-1)[k] += h
                return tree.leaves(g(tree.unflatten(td, [v if np.shape(v) else float(v) for v in new]), 1.3))
            plus, minus = at(eps), at(-eps)
            for i, inner in enumerate(outer):
                col = np.reshape(tree.flatten_up_to(td, inner)[j], (int(np.size(leaves[i])), -1))[:, k]
                want = (np.reshape(plus[i], -1) - np.reshape(minus[i], -1)) / (2 * eps)
                np.testing.assert_allclose(col, want, rtol=1e-5, atol=1e-6)
    v = tree.map(lambda a: rng.normal(size=np.shape(a)) if np.shape(a) else float(rng.normal()), t)
    hv = s2sad.hvp(mod.loss, (t, 1.3), (v, 0.0))
    assert tree.structure(hv) == tree.structure(t)
    for i, inner in enumerate(outer):
        want = sum(np.tensordot(blk, np.asarray(vj), axes=np.ndim(vj))
                   for blk, vj in zip(tree.flatten_up_to(td, inner), tree.leaves(v)))
        np.testing.assert_allclose(tree.leaves(hv)[i], want, rtol=1e-10, atol=1e-12)

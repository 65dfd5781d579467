"""The contractions as a hostile user calls them: refused keywords, mixed dtypes,
integer operands, subscripts held in a name, views written in place, the same array
as several operands, results against finite differences."""
from __future__ import annotations

import itertools
import linecache

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError, UnsupportedOperationError

from conftest import central_fd

_counter = itertools.count()
SPEC = "ij,jk->ik"


def load(src: str) -> dict:
    filename = f"<products-{next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {"__name__": filename, "np": np, "s2sad": s2sad, "SPEC": SPEC}
    exec(compile(src, filename, "exec"), ns)
    return ns


def r(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(dtype)


def grads_match(f, args, argnums, rtol=1e-6):
    got = s2sad.grad(f, argnums=argnums)(*args)
    for g, i in zip(got, argnums):
        want = central_fd(f, [np.asarray(a, np.float64) for a in args], i)
        np.testing.assert_allclose(g, want, rtol=rtol, atol=1e-6)
        assert g.dtype == args[i].dtype and g.shape == args[i].shape
    return got


@pytest.mark.parametrize("call,word", [
    ("np.einsum('ij,jk->ik', a, b, out=c)", "out="),
    ("np.einsum('ij,jk->ik', a, b, dtype=np.float32)", "dtype="),
    ("np.tensordot(a, b, axes=1, out=c)", "out="),
    ("np.cross(a, b, 0, 0, 0, 0, 0)", "positional"),
])
def test_refused_calls_name_the_operation_and_line(call, word):
    ns = load(f"def f(a, b):\n    c = np.zeros((3, 3))\n    return np.sum({call})\n")
    with pytest.raises(UnsupportedOperationError) as e:
        s2sad.grad(ns["f"])(r(3, 3), r(3, 3))
    msg = str(e.value)
    assert word in msg and ":3:" in msg and call.split("(")[0] in msg


def test_interleaved_sublists_must_be_literal():
    ns = load("def f(a, b):\n    s = [0, 1]\n    return np.sum(np.einsum(a, s, b, [1, 2]))\n")
    with pytest.raises(S2SADError):
        s2sad.grad(ns["f"])(r(2, 3), r(3, 4))


def test_subscripts_from_a_module_constant_and_a_local():
    ns = load("def f(a, b):\n    return np.sum(np.sin(np.einsum(SPEC, a, b)))\n"
              "def g(a, b):\n    s = 'ij,jk->ik'\n    return np.sum(np.sin(np.einsum(s, a, b)))\n")
    for name in ("f", "g"):
        grads_match(ns[name], [r(2, 3), r(3, 4, seed=1)], (0, 1))


def test_mixed_dtypes_keep_each_operands_dtype():
    ns = load("def f(a, b):\n    return np.sum(np.sin(np.einsum('ij,j->i', a, b)))\n")
    a, b = r(3, 4, dtype=np.float32), r(4, seed=1)
    ga, gb = s2sad.grad(ns["f"], argnums=(0, 1))(a, b)
    assert ga.dtype == np.float32 and gb.dtype == np.float64
    np.testing.assert_allclose(gb, central_fd(ns["f"], [a.astype(float), b], 1), rtol=1e-4)


def test_integer_operand_not_differentiated():
    ns = load("def f(a, n):\n    return np.sum(np.sin(np.einsum('ij,jk->ik', a, n)))\n")
    n = np.arange(12).reshape(3, 4)
    grads_match(ns["f"], [r(2, 3), n], (0,))


def test_same_array_as_every_operand():
    ns = load("def f(a):\n    return np.sum(np.sin(np.einsum('ij,jk,kl->il', a, a, a)))\n")
    grads_match(ns["f"], [r(3, 3)], (0,))


def test_view_result_updated_in_place_is_right_or_refused():
    ns = load("def f(a):\n    y = np.einsum('ij->ji', a)\n    y += 1.0\n    return np.sum(np.sin(y) * a)\n")
    a = r(3, 3)
    try:
        got = s2sad.grad(ns["f"])(a.copy())
    except S2SADError:
        return
    np.testing.assert_allclose(got, central_fd(ns["f"], [a.copy()], 0), rtol=1e-6)


def test_input_not_mutated_and_empty_operands():
    ns = load("def f(a, b):\n    return np.sum(np.einsum('...ij,...jk->...ik', a, b)) + 0.0\n")
    a, b = r(2, 3, 0), r(0, 4)
    a0, b0 = a.copy(), b.copy()
    ga, gb = s2sad.grad(ns["f"], argnums=(0, 1))(a, b)
    assert ga.shape == a.shape and gb.shape == b.shape and not gb.any()
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


def test_nd_dot_and_batched_matmul_against_einsum():
    ns = load("def f(a, b):\n    return np.sum(np.sin(np.dot(a, b)))\n"
              "def g(a, b):\n    return np.sum(np.sin(np.einsum('abi,cij->abcj', a, b)))\n"
              "def h(a, b):\n    return np.sum(np.sin(a @ b))\n")
    a, b = r(2, 3, 4), r(5, 4, 2, seed=1)
    want = s2sad.grad(ns["g"], argnums=(0, 1))(a, b)
    for got, w in zip(s2sad.grad(ns["f"], argnums=(0, 1))(a, b), want):
        np.testing.assert_allclose(got, w, rtol=1e-12)
    grads_match(ns["h"], [r(3, 1, 2, 4), r(5, 4, 2, seed=2)], (0, 1))


def test_einsum_through_vjp_and_python_backend():
    ns = load("def f(a, b):\n    return np.sin(np.einsum('i...,i...->...', a, b))\n")
    a, b = r(3, 2), r(3, 2, seed=1)
    value, pull = s2sad.vjp(ns["f"], a, b)
    g = np.array([0.3, -1.2])
    ga, gb = pull(g)
    jac = np.cos(np.einsum("i...,i...->...", a, b))
    np.testing.assert_allclose(ga, b * (g * jac), rtol=1e-12)
    np.testing.assert_allclose(gb, a * (g * jac), rtol=1e-12)
    loss = load("def f(a, b):\n    return np.sum(np.sin(np.einsum('i...,i...->...', a, b)))\n")["f"]
    for backend in ("python", "llvm"):
        got = s2sad.grad(loss, argnums=(0, 1), backend=backend)(a, b)
        np.testing.assert_allclose(got[0], b * jac, rtol=1e-12)


def _random_einsum(rng):
    """A random einsum numpy accepts: 1-3 operands, repeated labels, ellipses of 0-2
    dimensions (some broadcast from size 1), size-1 labelled dimensions, implicit or
    explicit output."""
    size = {"a": 2, "b": 3, "c": 1, "d": 4}
    ell = [int(n) for n in rng.choice([1, 2, 3], size=2)]
    subs, shapes = [], []
    for _ in range(int(rng.integers(1, 4))):
        labels = "".join(rng.choice(list("abcd"), size=int(rng.integers(0, 4))))
        shape = [size[c] if rng.random() > 0.15 else 1 for c in labels]
        for c in set(labels):           # a repeated label: one size (a diagonal)
            shape = [shape[labels.index(c)] if x == c else n for x, n in zip(labels, shape)]
        if rng.random() < 0.4:
            k = int(rng.integers(0, 3))
            lead = [ell[2 - k + j] if rng.random() > 0.2 else 1 for j in range(k)]
            subs.append("..." + labels)
            shapes.append(tuple(lead + shape))
        else:
            subs.append(labels)
            shapes.append(tuple(shape))
    spec = ",".join(subs)
    if rng.random() < 0.5:
        seen = sorted(set("".join(subs).replace(".", "")))
        out = "".join(c for c in seen if rng.random() < 0.5)
        spec += "->" + ("..." if any("..." in s for s in subs) else "") + out
    return spec, shapes


def test_random_einsums_vjp_is_the_transpose_of_numpys_einsum():
    """<einsum_bar(i, g), t> = <g, einsum(spec, ..., t, ...)>: the adjoint against numpy's
    own einsum (the tangent), over random subscripts."""
    from s2sad.product_rules import einsum_bar
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(400):
        spec, shapes = _random_einsum(rng)
        ops = [rng.normal(size=s) for s in shapes]
        try:
            out = np.einsum(spec, *ops)
        except ValueError:
            continue            # a combination numpy refuses
        g = rng.normal(size=np.shape(out))
        for i in range(len(ops)):
            t = rng.normal(size=shapes[i])
            tan = np.einsum(spec, *[t if k == i else o for k, o in enumerate(ops)])
            bar = einsum_bar(i, g, spec, *ops)
            assert np.shape(bar) == shapes[i], spec
            np.testing.assert_allclose(np.sum(bar * t), np.sum(g * tan), rtol=1e-10, atol=1e-10, err_msg=spec)
        checked += 1
    assert checked > 150

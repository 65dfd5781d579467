"""The JVP and VJP texts of the contraction, reduction and scan entries, read straight
from the table (s2sad.array_prims) and run with the helpers generated code runs with
(array_rules.HELPERS): each JVP against a central difference along a random tangent,
and each VJP against its JVP (<vjp(g), t> = <g, jvp(t)>: the two are one linear map
and its transpose)."""
from __future__ import annotations

import numpy as np
import pytest

from s2sad import array_prims, array_rules

H = 1e-6


def _texts(params: dict) -> dict:
    return {k: repr(v) if not isinstance(v, str) else v for k, v in params.items()}


def _run(text, ns):
    return eval(text, dict(array_rules.HELPERS), ns)   # noqa: S307 - the table's own source


def check(prim: str, fn, args, params=None, active=None, seed=0):
    """fn(*args) is the forward value of `prim` with static parameters `params` (values,
    rendered as source); every operand index in `active` (default: all) is checked."""
    rule = array_prims.PRIMS[prim]
    params = _texts(params or {})
    rng = np.random.default_rng(seed)
    args = [np.asarray(a, dtype=float) if a is not None else None for a in args]
    names = [f"a{k}" for k in range(len(args))]
    out = fn(*args)
    ns = dict(zip(names, args), out=out)
    g = rng.normal(size=np.shape(out))
    for i in (active if active is not None else range(len(args))):
        t = rng.normal(size=np.shape(args[i]))
        plus = [a if k != i else a + H * t for k, a in enumerate(args)]
        minus = [a if k != i else a - H * t for k, a in enumerate(args)]
        want = (np.asarray(fn(*plus)) - np.asarray(fn(*minus))) / (2 * H)
        tan = _run(rule.jvp(i, "t", names, "out", params), dict(ns, t=t))
        assert np.shape(tan) == np.shape(out), (prim, i)
        np.testing.assert_allclose(tan, want, rtol=1e-5, atol=1e-6, err_msg=f"{prim} jvp {i}")
        bar = _run(rule.vjp(i, "g", names, "out", params), dict(ns, g=g))
        assert np.shape(bar) == np.shape(args[i]), (prim, i)
        np.testing.assert_allclose(np.sum(bar * t), np.sum(g * tan), rtol=1e-9, atol=1e-9,
                                   err_msg=f"{prim} vjp {i}")


def _r(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).uniform(0.5, 1.5, shape)


EINSUM = [
    ("'ij,jk->ik'", (_r(3, 4), _r(4, 2))),
    ("'ij,jk'", (_r(3, 4), _r(4, 2))),
    ("'ii'", (_r(3, 3),)),
    ("'ii->i'", (_r(3, 3),)),
    ("'iij,j->i'", (_r(3, 3, 2), _r(2))),
    ("'...ij,...jk->...ik'", (_r(1, 3, 4), _r(2, 4, 5))),
    ("'...ji'", (_r(2, 3, 4),)),
    ("'ij,jk,kl->il'", (_r(2, 3), _r(3, 4), _r(4, 2))),
    ("',i->i'", (np.float64(1.3), _r(3))),
    ("'ij,ij->ij'", (_r(1, 3), _r(2, 3))),
    ("'ij,k->ik'", (_r(2, 3), _r(4))),
]


@pytest.mark.parametrize("spec,args", EINSUM, ids=[s for s, _ in EINSUM])
def test_einsum_texts(spec, args):
    check("einsum", lambda *ops: np.einsum(eval(spec), *ops), args, {"subscripts": spec})


@pytest.mark.parametrize("prim,fn,args,params", [
    ("tensordot", lambda a, b: np.tensordot(a, b), (_r(2, 3, 4), _r(3, 4, 2)), {}),
    ("tensordot", lambda a, b: np.tensordot(a, b, axes=([0, 2], [1, 0])), (_r(2, 3, 4), _r(4, 2, 3)),
     {"axes": ([0, 2], [1, 0])}),
    ("inner", np.inner, (_r(2, 3), _r(4, 3)), {}),
    ("kron", np.kron, (_r(2, 3), _r(3, 2)), {}),
    ("vdot", np.vdot, (_r(3, 4), _r(4, 3)), {}),
    ("cross", np.cross, (_r(4, 3), _r(3)), {}),
    ("cross", lambda a, b: np.cross(a, b, axis=0), (_r(3, 4), _r(3, 4)), {"axis": 0}),
])
def test_contraction_texts(prim, fn, args, params):
    check(prim, fn, args, params)

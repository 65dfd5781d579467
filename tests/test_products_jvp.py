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


def _zeros(*shape):
    x = _r(*shape)
    x.reshape(-1)[[1, 3, 4]] = 0.0
    return x


XP = np.array([0.0, 0.3, 1.0, 1.2, 2.0])


@pytest.mark.parametrize("prim,fn,args,params,active", [
    ("var", lambda x: np.var(x, axis=0, ddof=1), (_r(3, 4),), {"axis": 0, "ddof": 1}, None),
    ("std", lambda x: np.std(x, axis=(0, 2), keepdims=True), (_r(2, 3, 4),), {"axis": (0, 2), "keepdims": True},
     None),
    ("median", lambda x: np.median(x, axis=1), (_r(3, 4),), {"axis": 1}, None),
    ("quantile", lambda x, q: np.quantile(x, q, axis=0), (_r(6, 2), np.array([0.3, 0.55])), {"axis": 0}, None),
    ("percentile", lambda x, q: np.percentile(x, q), (_r(7), np.float64(40.0)), {}, None),
    ("nansum", lambda x: np.nansum(x, axis=0), (_r(3, 4),), {"axis": 0}, None),
    ("nanmean", np.nanmean, (_r(3, 4),), {}, None),
    ("cumsum", lambda x: np.cumsum(x, axis=1), (_r(3, 4),), {"axis": 1}, None),
    ("cumprod", lambda x: np.cumprod(x, axis=1), (_zeros(3, 4),), {"axis": 1}, None),
    ("cumprod", np.cumprod, (_zeros(2, 3),), {}, None),
    ("sort", lambda x: np.sort(x, axis=0), (_r(3, 4),), {"axis": 0}, None),
    ("sort", lambda x: np.sort(x, axis=None), (_r(3, 4),), {"axis": None}, None),
    ("partition", lambda x: np.partition(x, 2), (_r(3, 5),), {"kth": 2}, None),
    ("diff", lambda x, p, a: np.diff(x, n=2, prepend=p, append=a), (_r(4), np.float64(0.7), _r(2)), {"n": 2}, None),
    ("diff", lambda x, p, a: np.diff(x, axis=0), (_r(4, 3), None, None), {"axis": 0}, (0,)),
    ("gradient", lambda f, h: np.gradient(f, h, edge_order=2), (_r(6), np.float64(0.4)), {"edge_order": 2}, None),
    ("gradient", lambda f, xs: np.gradient(f, xs, axis=1), (_r(3, 5), XP), {"axis": 1}, (0,)),
    ("convolve", lambda a, v: np.convolve(a, v, "same"), (_r(3), _r(6)), {"mode": "'same'"}, None),
    ("correlate", lambda a, v: np.correlate(a, v, "same"), (_r(4), _r(7)), {"mode": "'same'"}, None),
    ("correlate", np.correlate, (_r(5), _r(3)), {}, None),
    ("interp", lambda x, xp, fp, lo, hi: np.interp(x, xp, fp, lo, hi),
     (np.linspace(-0.5, 2.5, 11) + 0.01, XP, _r(5), np.float64(0.2), np.float64(-0.3)), {}, None),
    ("interp", lambda x, xp, fp, lo, hi: np.interp(x, xp, fp),
     (np.linspace(-0.5, 2.5, 11) + 0.01, XP, _r(5), None, None), {}, (0, 1, 2)),
])
def test_reduction_and_scan_texts(prim, fn, args, params, active):
    check(prim, fn, args, params, active)


def test_scipy_special_texts():
    sps = pytest.importorskip("scipy.special")
    check("logsumexp", lambda a, b: sps.logsumexp(a, axis=1, b=b), (_r(3, 4), _r(4)), {"axis": 1})
    check("logsumexp", lambda a, b: sps.logsumexp(a, axis=0, b=b, keepdims=True), (_r(3, 4), _r(3, 4)),
          {"axis": 0, "keepdims": True})
    check("logsumexp", lambda a, b: sps.logsumexp(a), (_r(2, 3), None), {}, active=(0,))
    check("softmax", lambda x: sps.softmax(x, axis=0), (_r(3, 4),), {"axis": 0})
    check("log_softmax", sps.log_softmax, (_r(3, 4),), {})

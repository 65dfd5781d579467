"""The JVP texts of the linear-algebra entries (s2sad/array_prims/linalg.py), run as
generated code runs them (array_rules.HELPERS as the namespace): each tangent against
central differences of the numpy/scipy function along the tangent, and each VJP
against its JVP by the dot-product identity <g, J t> = <J^T g, t>.

Until forward mode over array programs consumes the `jvp` slots (issue 17), this is
what checks them; the spec table (test_array_prims) checks the VJPs through grad.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from s2sad import array_prims, array_rules
from s2sad.linalg_base import Parts

from prim_rows_linalg import distinct_sv, separated, signed, spd, well_conditioned


class Case:
    def __init__(self, prim, fn, args, p=None, outputs=None, ids=""):
        self.prim, self.fn, self.args, self.p = prim, fn, args, p or {}
        self.outputs = outputs            # indices of a tuple's float outputs; None: one array
        self.id = f"{prim}{ids}"


def _a(make, shape, seed=0):
    return make(shape, "float64", seed)


def _kw(p):
    """The static parameters' values from their source texts."""
    return {k: eval(v, {"np": np}) for k, v in p.items()}


CASES = [
    Case("inv", np.linalg.inv, [_a(well_conditioned, (2, 3, 3))]),
    Case("det", np.linalg.det, [_a(well_conditioned, (3, 3))]),
    Case("slogdet", np.linalg.slogdet, [_a(well_conditioned, (2, 3, 3))], outputs=(1,)),
    Case("cholesky", np.linalg.cholesky, [_a(spd, (3, 3))]),
    Case("cholesky", np.linalg.cholesky, [_a(spd, (3, 3))], {"upper": "True"}, ids="-upper"),
    Case("eigh", np.linalg.eigh, [_a(separated, (3, 3))], outputs=(0, 1)),
    Case("eigh", np.linalg.eigh, [_a(separated, (3, 3))], {"UPLO": "'U'"}, outputs=(0, 1), ids="-U"),
    Case("eigvalsh", np.linalg.eigvalsh, [_a(separated, (2, 3, 3))]),
    Case("svd", np.linalg.svd, [_a(distinct_sv, (4, 3))], {"full_matrices": "False"}, outputs=(0, 1, 2), ids="-tall"),
    Case("svd", np.linalg.svd, [_a(distinct_sv, (3, 5))], {"full_matrices": "False"}, outputs=(0, 1, 2), ids="-wide"),
    Case("svd", np.linalg.svd, [_a(distinct_sv, (3, 3))], outputs=(0, 1, 2), ids="-square"),
    Case("svd", np.linalg.svd, [_a(distinct_sv, (4, 3))], {"compute_uv": "False"}, ids="-values"),
    Case("qr", np.linalg.qr, [_a(well_conditioned, (4, 3))], outputs=(0, 1), ids="-tall"),
    Case("qr", np.linalg.qr, [_a(well_conditioned, (3, 5))], outputs=(0, 1), ids="-wide"),
    Case("qr", np.linalg.qr, [_a(well_conditioned, (4, 3))], {"mode": "'r'"}, ids="-r"),
    Case("pinv", np.linalg.pinv, [_a(distinct_sv, (4, 3))]),
    Case("matrix_power", np.linalg.matrix_power, [_a(signed, (3, 3))], {"n": "3"}),
    Case("matrix_power", np.linalg.matrix_power, [_a(well_conditioned, (3, 3))], {"n": "-2"}, ids="-neg"),
    Case("norm", np.linalg.norm, [_a(signed, (3, 4))]),
    Case("norm", np.linalg.norm, [_a(signed, (3, 4))], {"ord": "np.inf", "axis": "1"}, ids="-inf"),
    Case("norm", np.linalg.norm, [_a(distinct_sv, (3, 4))], {"ord": "'nuc'"}, ids="-nuc"),
    Case("norm", np.linalg.norm, [_a(signed, (3, 4))], {"ord": "1"}, ids="-1"),
    Case("trace", np.trace, [_a(signed, (3, 4))], {"offset": "1"}),
    Case("solve", np.linalg.solve, [_a(well_conditioned, (3, 3)), _a(signed, (3, 2), 1)]),
    Case("solve", np.linalg.solve, [_a(well_conditioned, (2, 3, 3)), _a(signed, (3,), 1)], ids="-vector"),
    Case("lstsq", np.linalg.lstsq, [_a(signed, (5, 3)), _a(signed, (5, 2), 1)], outputs=(0, 1, 3)),
    Case("multi_dot", lambda *xs: np.linalg.multi_dot(xs), [_a(signed, (3, 4)), _a(signed, (4, 2), 1),
                                                            _a(signed, (2,), 2)]),
    Case("scipy_cholesky", scipy.linalg.cholesky, [_a(spd, (3, 3))]),
    Case("cho_factor", scipy.linalg.cho_factor, [_a(spd, (3, 3))], outputs=(0,)),
    Case("expm", scipy.linalg.expm, [_a(signed, (3, 3))]),
    Case("solve_triangular", scipy.linalg.solve_triangular, [_a(well_conditioned, (3, 3)), _a(signed, (3, 2), 1)],
         {"lower": "True", "trans": "1"}),
    Case("cho_solve", lambda c, low, b: scipy.linalg.cho_solve((c, low), b),
         [_a(well_conditioned, (3, 3)), True, _a(signed, (3,), 1)]),
    Case("split", np.split, [_a(signed, (6, 2))], {"indices_or_sections": "[1, 4]"}, outputs=(0, 1, 2)),
    Case("array_split", np.array_split, [_a(signed, (2, 5))], {"indices_or_sections": "2", "axis": "1"},
         outputs=(0, 1)),
    Case("hsplit", np.hsplit, [_a(signed, (2, 4))], {"indices_or_sections": "2"}, outputs=(0, 1)),
    Case("vsplit", np.vsplit, [_a(signed, (4, 2))], {"indices_or_sections": "2"}, outputs=(0, 1)),
    Case("dsplit", np.dsplit, [_a(signed, (1, 2, 4))], {"indices_or_sections": "[1]"}, outputs=(0, 1)),
]


def _float_arg(a):
    return isinstance(a, np.ndarray)


def _run(case, text, **names):
    ns = dict(array_rules.HELPERS)
    ns.update(names)
    return eval(text, ns)


def _call(case, args):
    return case.fn(*args, **_kw(case.p))


def _names(case):
    return [f"a{k}" for k in range(len(case.args))]


def _outputs(case, value):
    return [np.asarray(value[k]) for k in case.outputs] if case.outputs else [np.asarray(value)]


def _linalg_names():
    from s2sad.array_prims import linalg
    return {p.name for p in linalg.PRIMS}


def test_every_linalg_entry_has_a_jvp_and_a_case():
    """`item`'s JVP is t[k]: the cases of the tuple-valued entries run it through Parts."""
    assert all(array_prims.PRIMS[n].jvp is not None for n in _linalg_names())
    assert {c.prim for c in CASES} == _linalg_names() - {"item"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_jvp_matches_finite_differences(case):
    prim = array_prims.PRIMS[case.prim]
    rng = np.random.default_rng(3)
    out = _call(case, case.args)
    names = dict(zip(_names(case), case.args), out=out)
    for i, a in enumerate(case.args):
        if not _float_arg(a):
            continue
        t = rng.normal(size=a.shape)
        got = _run(case, prim.jvp(i, "t", _names(case), "out", case.p), t=t, **names)
        h = 1e-6
        plus = list(case.args)
        minus = list(case.args)
        plus[i], minus[i] = a + h * t, a - h * t
        want = [(p - m) / (2 * h) for p, m in zip(_outputs(case, _call(case, plus)), _outputs(case, _call(case, minus)))]
        got = _outputs(case, got)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"operand {i}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_vjp_is_the_transpose_of_the_jvp(case):
    """<g, J t> = <J^T g, t> for random g and t, operand by operand."""
    prim = array_prims.PRIMS[case.prim]
    rng = np.random.default_rng(4)
    out = _call(case, case.args)
    names = dict(zip(_names(case), case.args), out=out)
    outs = _outputs(case, out)
    gs = [rng.normal(size=o.shape) for o in outs]
    if case.outputs:
        g = Parts(gs[case.outputs.index(k)] if k in case.outputs else None for k in range(len(out)))
    else:
        g = gs[0]
    for i, a in enumerate(case.args):
        if not _float_arg(a):
            continue
        t = rng.normal(size=a.shape)
        tangent = _outputs(case, _run(case, prim.jvp(i, "t", _names(case), "out", case.p), t=t, **names))
        adjoint = _run(case, prim.vjp(i, "g", _names(case), "out", case.p), g=g, **names)
        assert np.shape(adjoint) == a.shape
        lhs = sum(np.sum(gk * tk) for gk, tk in zip(gs, tangent))
        np.testing.assert_allclose(lhs, np.sum(adjoint * t), rtol=1e-9, atol=1e-10)


def test_flags_and_counts_have_zero_tangents():
    """lstsq's rank and cho_factor's lower are ints/flags: their tangent is 0, not their value."""
    a, b = _a(signed, (5, 3)), _a(signed, (5,), 1)
    out = np.linalg.lstsq(a, b)
    t = _run(None, array_prims.PRIMS["lstsq"].jvp(0, "t", ["a0", "a1"], "out", {}), t=np.ones((5, 3)), a0=a, a1=b,
             out=out)
    assert t[2] == 0
    c = scipy.linalg.cho_factor(_a(spd, (3, 3)))
    t = _run(None, array_prims.PRIMS["cho_factor"].jvp(0, "t", ["a0"], "out", {}), t=np.ones((3, 3)),
             a0=_a(spd, (3, 3)), out=c)
    assert t[1] == 0

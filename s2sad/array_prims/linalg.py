"""Linear algebra (np.linalg, scipy.linalg), the split family, and `item`: the element
`t[k]` of a tuple-valued primitive's result.

A tuple-valued entry (`outputs` set: slogdet, eigh, svd, qr, lstsq, cho_factor, the
splits) is one statement whose value is the tuple; passes/primcalls follows it with one
`item` statement per output and hands the builder their list, so `w, V = eigh(A)`,
`res = qr(A); res[0]` and loops over the pieces read those. Its VJP receives the
tuple's adjoint as a `linalg_base.Parts` (one entry per output, None where none
reached it), which the items' VJPs (`item_bar`) make and the reverse sweep adds.

The helpers the texts call are linalg_rules.HELPERS (their names `HELPER_NAMES` here).
Conventions where a derivative is undefined follow JAX (README "Linear algebra").
scipy's functions are recognised by identity once the process has imported
scipy.linalg (`module_funcs`): s2sad never imports scipy itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gast
import numpy as np

from .ops import PrimOp
from .prim import Prim, kw, pieces

# the names of linalg_rules.HELPERS (tests/test_layers.py checks them with the rest)
HELPER_NAMES = frozenset({
    "parts", "item_bar", "inv_bar", "inv_jvp", "solve_bar", "solve_jvp", "det_bar", "det_jvp", "slogdet_bar",
    "slogdet_jvp", "cholesky_bar", "cholesky_jvp", "cho_factor_bar", "cho_factor_jvp", "cho_solve_bar",
    "cho_solve_jvp", "solve_triangular_bar", "solve_triangular_jvp", "eigh_bar", "eigh_jvp", "eigvalsh_bar",
    "eigvalsh_jvp", "svd_bar", "svd_jvp", "qr_bar", "qr_jvp", "pinv_bar", "pinv_jvp", "lstsq_bar", "lstsq_jvp",
    "expm_bar", "expm_jvp", "matrix_power_bar", "matrix_power_jvp", "multi_dot_bar", "multi_dot_jvp",
    "trace_bar", "split_bar", "split_jvp", "norm_bar", "norm_jvp"})


@dataclass(frozen=True)
class Linalg(PrimOp):
    """A linear-algebra or split call; `params`: its static parameters present, as
    (name, gast expression) pairs in the order read."""
    kind: str
    params: tuple = ()

    def statics(self) -> dict[str, Any]:
        return dict(self.params)

    def located(self, where) -> "Linalg":
        """The op with `where`, the call's (file, line, column) as a gast tuple: a VJP that
        refuses while it runs (a full svd's extra columns) names the line."""
        return Linalg(self.kind, self.params + (("where", where),))


@dataclass(frozen=True)
class Item(PrimOp):
    """t[k] of a tuple-valued primitive's result t; `index` the constant k."""
    index: Any = None
    STATIC = ("index",)


def _op(kind):
    return lambda **p: Linalg(kind, tuple(p.items()))


def _const(p, name, default):
    """A static parameter's value when it is a literal (or absent: `default`), else the
    reason it is not known."""
    e = p.get(name)
    if e is None:
        return default
    if isinstance(e, gast.Constant):
        return e.value
    return f"needs {name}= as a literal (True, 'reduced', 3...), which says how many values it returns"


def _svd_outputs(p):
    uv = _const(p, "compute_uv", True)
    return uv if isinstance(uv, str) else (3 if uv else None)


def _qr_outputs(p):
    mode = _const(p, "mode", "reduced")
    if mode in ("reduced", "complete"):
        return 2
    if mode == "r":
        return None
    return mode if isinstance(mode, str) and mode.startswith("needs") else \
        f"is called with mode={mode!r}, which s2sad does not differentiate (only 'reduced', 'complete', 'r')"


def _split_outputs(p):
    e = p.get("indices_or_sections")
    if isinstance(e, gast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, (gast.List, gast.Tuple)):
        return len(e.elts) + 1
    return ("needs the number of sections as a literal (or a module constant), or the split points as a literal "
            "list, which say how many pieces it returns")


def _funcs(module, *names):
    return tuple(getattr(module, n) for n in names if hasattr(module, n))


def _unary(name, vjp, jvp, statics=(), keywords=None, outputs=None, funcs=None, module_funcs=(), methods=()):
    """An entry of one array and static parameters (by position `statics`, by keyword
    `keywords`; any other keyword refused)."""
    return Prim(name, _op(name), vjp, statics=statics, keywords=keywords if keywords is not None else statics,
                funcs=funcs if funcs is not None else _funcs(np.linalg, name), module_funcs=module_funcs,
                methods=methods, outputs=outputs, jvp=jvp)


def _call(helper, *names, i=False, out=True):
    """The text `helper(g, a..., out, name=...)` (i: the operand's index first)."""
    def text(k, g, args, o, p):
        lead = f"{k}, " if i else ""
        return f"{helper}({lead}{g}, {', '.join(args)}{', ' + o if out else ''}{kw(p, *names)})"
    return text


def _scipy(name):
    return (("scipy.linalg", name),)


def _cholesky_np(helper):
    def text(k, g, args, o, p):
        return f"{helper}({g}, {args[0]}, {o}, lower=not {p.get('upper', 'False')})"
    return text


def _cholesky_sp(helper):
    def text(k, g, args, o, p):
        return f"{helper}({g}, {args[0]}, {o}, lower={p.get('lower', 'False')})"
    return text


def _split_entry(name):
    axis = ("axis",) if name in ("split", "array_split") else ()

    def vjp(k, g, args, o, p):
        return f"split_bar({g}, {args[0]}, {o}, {name!r}{kw(p, *axis)})"

    def jvp(k, t, args, o, p):
        return f"split_jvp({t}, {name!r}, {p['indices_or_sections']}{kw(p, *axis)})"
    return Prim(name, _op(name), vjp, statics=("indices_or_sections",) + axis,
                keywords=("indices_or_sections",) + axis, funcs=(getattr(np, name),), result="view",
                outputs=_split_outputs, jvp=jvp)


def _item_vjp(k, g, args, o, p):
    return f"item_bar({g}, {args[0]}, {p['index']})"


def _multi_dot_vjp(k, g, args, o, p):
    return f"multi_dot_bar({g}, {k}, {pieces(args)})"


def _multi_dot_jvp(k, t, args, o, p):
    return f"multi_dot_jvp({t}, {k}, {pieces(args)})"


def _cho_solve_vjp(k, g, args, o, p):
    return f"cho_solve_bar({k}, {g}, {', '.join(args)}, {o})"


def _cho_solve_jvp(k, t, args, o, p):
    return f"cho_solve_jvp({k}, {t}, {', '.join(args)}, {o})"


_TRI = ("trans", "lower", "unit_diagonal")

PRIMS = [
    # t[k] of a tuple-valued result (primcalls makes these; no call spells it)
    Prim("item", lambda index=None, **_: Item(index), _item_vjp, form="syntax", results={"piece": "plain"},
         jvp=lambda k, t, args, o, p: f"{t}[{p['index']}]"),
    _unary("inv", _call("inv_bar"), _call("inv_jvp")),
    _unary("det", _call("det_bar"), _call("det_jvp")),
    _unary("slogdet", _call("slogdet_bar"), _call("slogdet_jvp"), outputs=lambda p: 2),
    _unary("cholesky", _cholesky_np("cholesky_bar"), _cholesky_np("cholesky_jvp"), keywords=("upper",)),
    _unary("eigh", _call("eigh_bar", "UPLO"), _call("eigh_jvp", "UPLO"), statics=("UPLO",), outputs=lambda p: 2),
    _unary("eigvalsh", _call("eigvalsh_bar", "UPLO"), _call("eigvalsh_jvp", "UPLO"), statics=("UPLO",)),
    _unary("svd", _call("svd_bar", "full_matrices", "compute_uv", "where"),
           _call("svd_jvp", "full_matrices", "compute_uv", "where"),
           statics=("full_matrices", "compute_uv"), outputs=_svd_outputs),
    _unary("qr", _call("qr_bar", "mode", "where"), _call("qr_jvp", "mode", "where"), statics=("mode",),
           outputs=_qr_outputs),
    _unary("pinv", _call("pinv_bar"), _call("pinv_jvp"), statics=("rcond",), keywords=("rcond", "rtol")),
    _unary("matrix_power", _call("matrix_power_bar", "n"), _call("matrix_power_jvp", "n"), statics=("n",)),
    _unary("norm", _call("norm_bar", "ord", "axis", "keepdims"), _call("norm_jvp", "ord", "axis", "keepdims"),
           statics=("ord", "axis", "keepdims")),
    _unary("trace", _call("trace_bar", "offset", "axis1", "axis2", out=False),
           lambda k, t, args, o, p: f"np.trace({t}{kw(p, 'offset', 'axis1', 'axis2')})",
           statics=("offset", "axis1", "axis2"), funcs=(np.trace,), methods=("trace",)),
    Prim("solve", _op("solve"), _call("solve_bar", i=True), form="binary", funcs=(np.linalg.solve,),
         jvp=_call("solve_jvp", i=True)),
    Prim("lstsq", _op("lstsq"), _call("lstsq_bar", "rcond", i=True), form="binary", statics=("rcond",),
         keywords=("rcond",), funcs=(np.linalg.lstsq,), outputs=lambda p: 4, jvp=_call("lstsq_jvp", "rcond", i=True)),
    Prim("multi_dot", _op("multi_dot"), _multi_dot_vjp, form="sequence", keywords=(), funcs=(np.linalg.multi_dot,),
         jvp=_multi_dot_jvp),
    # scipy.linalg
    _unary("scipy_cholesky", _cholesky_sp("cholesky_bar"), _cholesky_sp("cholesky_jvp"), statics=("lower",),
           keywords=("lower", "check_finite"), funcs=(), module_funcs=_scipy("cholesky")),
    _unary("cho_factor", _call("cho_factor_bar"), _call("cho_factor_jvp"), statics=("lower",),
           keywords=("lower", "check_finite"), funcs=(), module_funcs=_scipy("cho_factor"), outputs=lambda p: 2),
    _unary("expm", _call("expm_bar"), _call("expm_jvp"), funcs=(), module_funcs=_scipy("expm")),
    Prim("solve_triangular", _op("solve_triangular"), _call("solve_triangular_bar", *_TRI, i=True), form="binary",
         statics=_TRI, keywords=_TRI + ("check_finite",), module_funcs=_scipy("solve_triangular"),
         jvp=_call("solve_triangular_jvp", *_TRI, i=True)),
    # cho_solve((c, lower), b): the pair is two operands, c and lower (no derivative)
    Prim("cho_solve", _op("cho_solve"), _cho_solve_vjp, form="binary", keywords=("check_finite",), packed=(0,),
         module_funcs=_scipy("cho_solve"), jvp=_cho_solve_jvp),
] + [_split_entry(n) for n in ("split", "array_split", "hsplit", "vsplit", "dsplit")]

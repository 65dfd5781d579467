"""Row-fused softmax family: what passes/rowfusion makes of the numpy idioms

    m = np.max(z, axis=-1, keepdims=True); t = z - m
    t - np.log(np.sum(np.exp(t), axis=-1, keepdims=True))     -> row_log_softmax(z)
    e = np.exp(t); e / np.sum(e, axis=-1, keepdims=True)       -> row_softmax(z)
    np.log(np.sum(np.exp(t), axis=-1, keepdims=K)) + m         -> row_logsumexp(z)

    mu = mean(x, -1, keepdims); xc = x - mu; v = mean(xc ** 2, -1, keepdims) (or x.var)
    xc / np.sqrt(v + eps)                                      -> row_layer_norm(x)
                                       (passes/layernorm.py, s2sad.rowlayernorm)
    np.sum(y * row_log_softmax(z), axis=-1)                    -> row_dot_log_softmax(z, y)
                                       (passes/rowdot.py: the cross-entropy's product)

No call spells them ("syntax": only the rewrite builds them). Their forward lines and
adjoints call s2sad.rowsoftmax's row_* with shift="max" (the max as the user wrote it,
so NaN and inf rows give what the numpy statements give): one compiled pass per row
over 2-D float arrays along the last axis, the numpy formula elsewhere. Their tangents
are softmax_rules' helpers; `second` gives the VJP's tangent for forward over reverse.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .ops import PrimOp
from .prim import Prim, kw


# the adjoints' tangents (forward over reverse), array_rules.HELPERS from s2sad.rowsoftmax
HELPER_NAMES = frozenset({"row_logsumexp_bar_dot", "row_softmax_bar_dot", "row_log_softmax_bar_dot",
                          "row_layer_norm_bar", "layer_norm_jvp", "row_layer_norm_bar_dot",
                          "row_dot_log_softmax_bar", "dot_log_softmax_jvp", "row_dot_log_softmax_bar_dot",
                          "row_dot_like", "row_logsumexp_max_bar", "row_logsumexp_like"})


@dataclass(frozen=True)
class RowFused(PrimOp):
    """kind: row_log_softmax | row_softmax | row_logsumexp | row_layer_norm |
    row_dot_log_softmax, along `axis` (a gast constant, the last axis); keepdims
    (row_logsumexp and row_dot_log_softmax) and eps
    (row_layer_norm only: the constant added to the variance) gast constants."""
    kind: str
    axis: Any = None
    keepdims: Any = None
    eps: Any = None
    STATIC = ("axis", "keepdims", "eps")


def row_fused(kind: str, axis, keepdims=None, eps=None) -> RowFused:
    return RowFused(kind, axis, keepdims, eps)


def _normalised(name: str) -> Prim:
    """row_softmax / row_log_softmax: the adjoint reads the output only."""
    def second(i, g, args, arg_dots, out, out_dot, p):
        return f"{name}_bar_dot({g}, {out}, {out_dot}{kw(p, 'axis')})"
    return Prim(name, row_fused, lambda i, g, args, out, p: f"{name}_bar({g}, {out}{kw(p, 'axis')})",
                form="syntax", forward=lambda args, p: f"{name}({args[0]}{kw(p, 'axis')}, shift='max')",
                jvp=lambda i, t, args, out, p: f"{name[4:]}_jvp({t}, {out}{kw(p, 'axis')})", second=second)


def _lse_second(i, g, args, arg_dots, out, out_dot, p):
    return f"row_logsumexp_bar_dot({g}, {args[0]}, {arg_dots[0]}, {out}, {out_dot}{kw(p, 'axis', 'keepdims')})"


PRIMS = [
    _normalised("row_log_softmax"),
    _normalised("row_softmax"),
    # the adjoint from a alone (one pass, one exp an element), so that a loss's sum of the
    # rows' values, which reads their shape only, runs no forward pass for them
    Prim("row_logsumexp", row_fused,
         lambda i, g, args, out, p: f"row_logsumexp_max_bar({g}, {args[0]}{kw(p, 'axis', 'keepdims')})",
         form="syntax", forward=lambda args, p: f"row_logsumexp({args[0]}{kw(p, 'axis', 'keepdims')}, shift='max')",
         jvp=lambda i, t, args, out, p: f"logsumexp_jvp(0, {t}, {args[0]}, None, {out}{kw(p, 'axis', 'keepdims')})",
         second=_lse_second,
         like=lambda args, p: f"row_logsumexp_like({args[0]}{kw(p, 'axis', 'keepdims')})"),
    # the adjoint recomputes the row's mean and variance from x (one pass over g and x)
    Prim("row_layer_norm", row_fused,
         lambda i, g, args, out, p: f"row_layer_norm_bar({g}, {args[0]}{kw(p, 'eps', 'axis')})",
         form="syntax", forward=lambda args, p: f"row_layer_norm({args[0]}{kw(p, 'eps', 'axis')})",
         jvp=lambda i, t, args, out, p: f"layer_norm_jvp({t}, {args[0]}, {out}{kw(p, 'eps', 'axis')})",
         second=lambda i, g, args, arg_dots, out, out_dot, p:
             f"row_layer_norm_bar_dot({g}, {args[0]}, {arg_dots[0]}{kw(p, 'eps', 'axis')})"),
    # sum(y * log_softmax(z)) along the rows: operands z and y (y's adjoint g log_softmax(z))
    Prim("row_dot_log_softmax", row_fused,
         lambda i, g, args, out, p: f"row_dot_log_softmax_bar({i}, {g}, {args[0]}, {args[1]}{kw(p, 'axis', 'keepdims')})",
         form="syntax",
         forward=lambda args, p: f"row_dot_log_softmax({args[0]}, {args[1]}{kw(p, 'axis', 'keepdims')})",
         jvp=lambda i, t, args, out, p: f"dot_log_softmax_jvp({i}, {t}, {args[0]}, {args[1]}{kw(p, 'axis', 'keepdims')})",
         second=lambda i, g, args, arg_dots, out, out_dot, p:
             f"row_dot_log_softmax_bar_dot({i}, {g}, {args[0]}, {args[1]}, {arg_dots[0]}, {arg_dots[1]}"
             f"{kw(p, 'axis', 'keepdims')})",
         # a loss's mean or sum over the rows reads their shape only: the rows' pass not run for it
         like=lambda args, p: f"row_dot_like({args[0]}, {args[1]}{kw(p, 'axis', 'keepdims')})"),
]

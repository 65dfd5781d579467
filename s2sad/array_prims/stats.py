"""Statistics: var, std (ddof), median, percentile, quantile (linear interpolation),
nansum, nanmean. Their adjoints and tangents are reduction_rules' helpers; the
conventions (ties, std at zero variance) are stated there."""
from __future__ import annotations

import numpy as np

from .callops import Moment, call_op, constant_in
from .ops import Reduce
from .prim import Prim, kw

HELPER_NAMES = frozenset({"var_bar", "std_bar", "var_jvp", "std_jvp", "nan_bar", "nan_jvp", "quantile_bar",
                          "quantile_jvp", "median_bar", "median_jvp"})

_RED = ("axis", "keepdims")


def _reduce(kind):
    return lambda axis=None, keepdims=None, **_: Reduce(kind, axis, keepdims)


def _moment(kind):
    return lambda axis=None, keepdims=None, ddof=None, **_: Moment(kind, axis, keepdims, ddof)


def _quantile(name, per):
    """np.quantile / np.percentile(a, q, axis, ..., method='linear', keepdims): q is an
    operand (its derivative is the slope between two order statistics)."""
    return Prim(name, call_op(name, constant_in("method", ("linear",), "only linear interpolation is "
                                                 "differentiated")),
                lambda i, g, args, out, p: f"quantile_bar({i}, {g}, {args[0]}, {args[1]}{kw(p, *_RED)}, per={per})",
                form="signature", statics=("a", "q", "axis"), operands=("a", "q"),
                keywords=("a", "q", "axis", "keepdims", "method"), funcs=(getattr(np, name),),
                jvp=lambda i, t, args, out, p: f"quantile_jvp({i}, {t}, {args[0]}, {args[1]}, {out}{kw(p, *_RED)}, "
                                               f"per={per})")


def _nan(name, mean):
    return Prim(name, _reduce(name),
                lambda i, g, args, out, p: f"nan_bar({g}, {args[0]}{kw(p, *_RED)}, mean={mean})",
                statics=("axis",), keywords=_RED, funcs=(getattr(np, name),),
                jvp=lambda i, t, args, out, p: f"nan_jvp({t}, {args[0]}{kw(p, *_RED)}, mean={mean})")


_MOM = ("axis", "ddof", "keepdims")

PRIMS = [
    Prim("var", _moment("var"), lambda i, g, args, out, p: f"var_bar({g}, {args[0]}{kw(p, *_MOM)})",
         statics=("axis",), keywords=_MOM, funcs=(np.var,), methods=("var",),
         jvp=lambda i, t, args, out, p: f"var_jvp({t}, {args[0]}{kw(p, *_MOM)})"),
    Prim("std", _moment("std"), lambda i, g, args, out, p: f"std_bar({g}, {args[0]}, {out}{kw(p, *_MOM)})",
         statics=("axis",), keywords=_MOM, funcs=(np.std,), methods=("std",),
         jvp=lambda i, t, args, out, p: f"std_jvp({t}, {args[0]}, {out}{kw(p, *_MOM)})"),
    Prim("median", _reduce("median"), lambda i, g, args, out, p: f"median_bar({g}, {args[0]}{kw(p, *_RED)})",
         statics=("axis",), keywords=_RED, funcs=(np.median,),
         jvp=lambda i, t, args, out, p: f"median_jvp({t}, {args[0]}, {out}{kw(p, *_RED)})"),
    _quantile("quantile", 1),
    _quantile("percentile", 100),
    _nan("nansum", False),
    _nan("nanmean", True),
]

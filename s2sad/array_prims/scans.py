"""Scans and reorderings: cumsum, cumprod, sort and partition (their values), diff,
gradient, convolve, correlate (1-D), interp (w.r.t. all of x, xp, fp, left, right).
Their adjoints and tangents are reduction_rules' helpers."""
from __future__ import annotations

import numpy as np

import gast

from .callops import call_op
from .prim import Prim, StaticRefusal, kw

HELPER_NAMES = frozenset({"cumsum_bar", "cumprod_bar", "cumprod_jvp", "sort_bar", "sort_jvp", "partition_bar",
                          "partition_jvp", "diff_bar", "diff_jvp", "gradient_bar", "gradient_jvp", "convolve_bar",
                          "correlate_bar", "interp_bar", "interp_jvp"})


def _one_array(name, vjp, jvp, statics=("axis",), keywords=("axis",), methods=()):
    """A function of one array and static parameters (keywords checked)."""
    return Prim(name, call_op(name), vjp, statics=statics, keywords=keywords, funcs=(getattr(np, name),),
                methods=methods, jvp=jvp)


def _filter(name):
    """np.convolve / np.correlate(a, v, mode): bilinear in a and v."""
    return Prim(name, call_op(name), lambda i, g, args, out, p: f"{name}_bar({i}, {g}, {args[0]}, {args[1]}{kw(p, 'mode')})",
                form="signature", statics=("a", "v", "mode"), operands=("a", "v"), funcs=(getattr(np, name),),
                jvp=lambda i, t, args, out, p: f"np.{name}({t if i == 0 else args[0]}, "
                                               f"{t if i == 1 else args[1]}{kw(p, 'mode')})")


_INTERP = ("x", "xp", "fp", "left", "right")


def _one_gradient_axis(p):
    """np.gradient along several axes written as a literal (axis=(0, 1)) returns a list:
    refused where it is read. axis=None of an N-D array is refused when it runs, at the
    call's line (`where`, which primcalls adds to the op)."""
    axis = p.get("axis")
    if isinstance(axis, (gast.Tuple, gast.List)) and len(axis.elts) > 1:
        raise StaticRefusal("is called along several axes: it returns a list of arrays, and s2sad differentiates "
                            "np.gradient along one axis", "Pass axis=k, one call per axis.")

PRIMS = [
    _one_array("cumsum", lambda i, g, args, out, p: f"cumsum_bar({g}, {args[0]}{kw(p, 'axis')})",
               lambda i, t, args, out, p: f"np.cumsum({t}{kw(p, 'axis')})", methods=("cumsum",)),
    _one_array("cumprod", lambda i, g, args, out, p: f"cumprod_bar({g}, {args[0]}{kw(p, 'axis')})",
               lambda i, t, args, out, p: f"cumprod_jvp({t}, {args[0]}{kw(p, 'axis')})", methods=("cumprod",)),
    # (x.sort() and x.partition() sort in place: not these)
    _one_array("sort", lambda i, g, args, out, p: f"sort_bar({g}, {args[0]}{kw(p, 'axis')})",
               lambda i, t, args, out, p: f"sort_jvp({t}, {args[0]}{kw(p, 'axis')})", keywords=("axis", "kind")),
    _one_array("partition", lambda i, g, args, out, p: f"partition_bar({g}, {args[0]}, {out}{kw(p, 'axis')})",
               lambda i, t, args, out, p: f"partition_jvp({t}, {args[0]}, {out}{kw(p, 'axis')})",
               statics=("kth", "axis"), keywords=("kth", "axis", "kind")),
    Prim("diff", call_op("diff"),
         lambda i, g, args, out, p: f"diff_bar({i}, {g}, {', '.join(args)}{kw(p, 'n', 'axis')})",
         form="signature", statics=("a", "n", "axis", "prepend", "append"), operands=("a", "prepend", "append"),
         funcs=(np.diff,), jvp=lambda i, t, args, out, p: f"diff_jvp({i}, {t}, {', '.join(args)}{kw(p, 'n', 'axis')})"),
    Prim("gradient", call_op("gradient", _one_gradient_axis),
         lambda i, g, args, out, p: f"gradient_bar({i}, {g}, {', '.join(args)}{kw(p, 'axis', 'edge_order', 'where')}, "
                                    f"out={out})",
         form="signature", statics=("f", "spacing"), operands=("f", "spacing"),
         keywords=("f", "axis", "edge_order"), funcs=(np.gradient,),
         jvp=lambda i, t, args, out, p: f"gradient_jvp({i}, {t}, {', '.join(args)}{kw(p, 'axis', 'edge_order', 'where')}, "
                                        f"out={out})"),
    _filter("convolve"),
    _filter("correlate"),
    Prim("interp", call_op("interp"), lambda i, g, args, out, p: f"interp_bar({i}, {g}, {', '.join(args)})",
         form="signature", statics=_INTERP, operands=_INTERP, funcs=(np.interp,),
         jvp=lambda i, t, args, out, p: f"interp_jvp({i}, {t}, {', '.join(args)})"),
]

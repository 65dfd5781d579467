"""scipy.special's logsumexp (b=, axis=, keepdims=; return_sign refused), softmax and
log_softmax (axis=) as array primitives.

scipy is optional: these entries exist when it is installed, and a call is recognised
by identity once the user's code has imported scipy.special (s2sad never imports it:
`module_funcs`). Their adjoints and tangents are softmax_rules' helpers.
"""
from __future__ import annotations

import importlib.util

from .callops import call_op, constant_in
from .prim import Prim, kw

HELPER_NAMES = frozenset({"logsumexp_bar", "logsumexp_jvp", "softmax_bar", "softmax_jvp", "log_softmax_bar",
                          "log_softmax_jvp", "row_logsumexp_bar", "row_softmax_bar", "row_log_softmax_bar"})
# the forward lines call row_<name> (s2sad.rowsoftmax: one pass per row where it can),
# which derivative_runtime binds per backend and passes/arrayprog.RESERVED keeps off user
# names; the adjoints call row_<name>_bar (helpers, bound per backend there as well)

_LSE = ("axis", "keepdims")


def _row_forward(name):
    """The forward line through s2sad.rowsoftmax (one compiled pass per row along the last
    axis, scipy's function elsewhere); a call with b= stays scipy's."""
    def forward(args, p):
        if len(args) > 1 and args[1] != "None":
            return None
        return f"row_{name}({args[0]}{kw(p, 'axis', 'keepdims') if name == 'logsumexp' else kw(p, 'axis')})"
    return forward


def _normalised(name):
    """softmax / log_softmax(x, axis): the adjoint and tangent read the output only."""
    return Prim(name, call_op(name), lambda i, g, args, out, p: f"row_{name}_bar({g}, {out}{kw(p, 'axis')})",
                form="signature", statics=("x", "axis"), operands=("x",), module_funcs=(("scipy.special", name),),
                jvp=lambda i, t, args, out, p: f"{name}_jvp({t}, {out}{kw(p, 'axis')})", forward=_row_forward(name))


PRIMS = [
    Prim("logsumexp", call_op("logsumexp", constant_in("return_sign", (False,), "the sign has no derivative; "
                                                       "use b= with positive weights")),
         lambda i, g, args, out, p: f"row_logsumexp_bar({i}, {g}, {args[0]}, {args[1]}, {out}{kw(p, *_LSE)})",
         form="signature", statics=("a", "axis", "b", "keepdims", "return_sign"), operands=("a", "b"),
         module_funcs=(("scipy.special", "logsumexp"),),
         jvp=lambda i, t, args, out, p: f"logsumexp_jvp({i}, {t}, {args[0]}, {args[1]}, {out}{kw(p, *_LSE)})",
         forward=_row_forward("logsumexp")),
    _normalised("softmax"),
    _normalised("log_softmax"),
] if importlib.util.find_spec("scipy") is not None else []

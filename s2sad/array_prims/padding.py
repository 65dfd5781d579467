"""np.pad in the modes that copy elements: constant, edge, reflect, symmetric, wrap.

Each output element is a copy of one operand element or the constant, so the adjoint
adds each output element's adjoint to the element it copies (shape_helpers.pad_bar:
the pad of an index array says which). The mode, reflect_type and constant_values must
be literals: a mode that computes (mean, linear_ramp...), reflect_type="odd" (which
subtracts) and a constant that is a value of the program (whose derivative would be
lost) are refused at the call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .ops import PrimOp
from .prim import Prim, StaticRefusal, kw
from .strict import is_number_literal, literal_string, strict

HELPER_NAMES = frozenset({"pad_bar", "pad_jvp"})
MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


@dataclass(frozen=True)
class Pad(PrimOp):
    pad_width: Any = None
    mode: Any = None
    constant_values: Any = None
    reflect_type: Any = None
    STATIC = ("pad_width", "mode", "constant_values", "reflect_type")


def _pad_op(pad_width=None, mode=None, constant_values=None, reflect_type=None):
    literal_string(mode, MODES, "mode")
    literal_string(reflect_type, ("even",), "reflect_type")
    if constant_values is not None and not is_number_literal(constant_values):
        raise StaticRefusal("is called with constant_values that are not literal numbers: their derivative "
                            "would be lost", "Pad with literal numbers (np.pad(x, w, constant_values=0.0)) and "
                            "add a value of the program to the padding with a mask, if needed.")
    return Pad(pad_width, mode, constant_values, reflect_type)


def _args(p):
    return f"{p['pad_width']}{kw(p, 'mode', 'reflect_type')}"


PRIMS = [
    Prim("pad", strict(_pad_op, Pad.STATIC, ("pad_width",)),
         lambda i, g, args, out, p: f"pad_bar({g}, {args[0]}, {_args(p)})", statics=("pad_width", "mode"),
         funcs=(np.pad,), jvp=lambda i, t, args, out, p: f"pad_jvp({t}, {_args(p)})"),
]

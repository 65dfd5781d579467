"""Products of two arrays: matmul (and `@`), dot, outer."""
from __future__ import annotations

import numpy as np

from .ops import Product
from .prim import Prim


def _gemm(name):
    # s2sad.gemm: its own product for thin operands, else numpy's
    return lambda args, p: f"{name}({args[0]}, {args[1]})"


def _factors(name):
    return lambda i, g, args, out, p: f"{name}_factors({i}, {g}, {', '.join(args)})"


def _lhs_rhs(name):
    return lambda i, g, args, out, p: f"{name}_{'lhs' if i == 0 else 'rhs'}_bar({g}, {args[0]}, {args[1]})"


def _bilinear(name):
    # the product of the tangent with the other operand (the output's tangent sums both)
    return lambda i, t, args, out, p: f"{name}({t}, {args[1]})" if i == 0 else f"{name}({args[0]}, {t})"


def _outer(i, g, args, out, p):
    a, b = args
    return (f"np.reshape({g} @ np.ravel({b}), np.shape({a}))" if i == 0
            else f"np.reshape(np.ravel({a}) @ {g}, np.shape({b}))")


PRIMS = [
    Prim("matmul", lambda **_: Product("matmul"), _lhs_rhs("matmul"), form="binary", funcs=(np.matmul,),
         result="plain", forward=_gemm("matmul"), factors=_factors("matmul"), jvp=_bilinear("matmul")),
    Prim("dot", lambda **_: Product("dot"), _lhs_rhs("dot"), form="binary", funcs=(np.dot,), methods=("dot",),
         result="plain", forward=_gemm("dot"), factors=_factors("dot"), jvp=_bilinear("dot")),
    Prim("outer", lambda **_: Product("outer"), _outer, form="binary", funcs=(np.outer,), result="plain",
         jvp=_bilinear("np.outer")),
]

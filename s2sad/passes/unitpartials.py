"""Kernels whose partials are the literal 1 (an add: `z = X @ W + b`): their pullback is
the seed itself for every active input, summed back to each input's shape, so the
reverse sweep calls `unit_vjp` (derivative_runtime), which skips the kernel's pass that
multiplies the seed by 1.0 into a new array (a copy of the seed) where the operands
allow, and is the kernel's `vjp` elsewhere.

Invariant: proven from the dual's text only (every return gives (value, 1, ..., 1),
each partial the literal +1, int or float; the body ends in a return). x * 1.0 is x,
bit for bit (NaN stays NaN, -0.0 stays -0.0), so the seed is what the kernel's pass
would have written.
"""
from __future__ import annotations

import gast

from .kernelplan import literal_partials


def unit_partials(kernel, active: tuple[str, ...]) -> bool:
    """Is every partial of `kernel`'s dual for `active` the literal 1 on every path?"""
    if not active:
        return False
    module = kernel.module(active)
    return literal_partials(module.functions[module.dual_entry], len(active), _is_one)


def _is_one(node) -> bool:
    return isinstance(node, gast.Constant) and type(node.value) in (int, float) and node.value == 1

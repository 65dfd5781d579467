"""The array primitives: one table, one entry (`Prim`) per primitive.

An array primitive is a numpy operation that is not elementwise: `@`, reductions,
reshapes, indexing, joins. Its entry says which numpy/Python callables (by identity)
and ndarray methods it stands for, how a call reads (`form`, `statics`), the typed op
it builds (ops.py), how its forward line prints, its VJP, and room for a JVP:

    Prim("tile", lambda reps=None, **_: Tile(reps),
         lambda i, g, args, out, p: f"tile_bar({g}, {args[0]}, {p['reps']})",
         statics=("reps",), funcs=(np.tile,))

passes/arrayprog.Builder recognises calls through `for_function` / `for_method` and
builds the op; passes/forward_sweep and reverse_sweep print the forward line and the adjoint through
`of(op)`. Adding a primitive is its entry here (in the family's module) and a row in
tests/test_array_prims.py (a test fails when an entry has no row).

Elementwise operations (arithmetic, ufuncs, `np.where`, `np.maximum`, `np.clip`,
`s2sad.broadcast`) are not here: they run as kernels, whose derivatives come from
`rules.RULES`, the one table of partials. Layer: rules (imports no pass, runtime or api).
"""
from __future__ import annotations

import sys

from . import (contractions, derivcall, joins, linalg, moves, padding, prim, products, reductions, rowfused, scans,
               selecting, shapes, softmaxes, stacking, stats)
from .linalg import Linalg
from .ops import Copy, Index, Join, PrimOp, Product, Reduce, Repeat, Reshape, Tile, Transpose, User
from .prim import Prim, StaticRefusal
from .user import USER_VJPS, register_vjp, user_vjp

FAMILIES = (reductions, products, shapes, joins, moves, stacking, padding, selecting, linalg, contractions, stats,
            scans, softmaxes, rowfused, derivcall)
PRIMS: dict[str, Prim] = {p.name: p for family in FAMILIES for p in family.PRIMS}
# every name VJP/JVP texts may call (array_rules.HELPERS): prim.py's, and those a family module lists
HELPER_NAMES = prim.HELPER_NAMES.union(*(getattr(family, "HELPER_NAMES", ()) for family in FAMILIES))

_BY_METHOD: dict[str, Prim] = {m: p for p in PRIMS.values() for m in p.methods}


def for_function(value) -> tuple[Prim, ...]:
    """The primitives a called object may stand for (by identity), in the order to try
    them: a literal-list spelling (np.array([a, b]): stack) before the plain one (copy)."""
    literal = [p for p in PRIMS.values() if any(value is f for f in p.literal_funcs)]
    return tuple(literal + [p for p in PRIMS.values() if any(value is f for f in p.funcs)
                            or any(value is f for f in module_funcs(p))])


def module_funcs(prim: Prim) -> list:
    """The callables of `prim.module_funcs` whose module the process has imported."""
    found = []
    for module, name in prim.module_funcs:
        m = sys.modules.get(module)
        f = getattr(m, name, None) if m is not None else None
        if f is not None:
            found.append(f)
    return found


def for_method(name: str) -> Prim | None:
    """The primitive an ndarray method `x.<name>(...)` stands for, else None."""
    return _BY_METHOD.get(name)


def of(op) -> Prim | None:
    """The entry of a statement's op (None for the ops that are not primitives)."""
    return PRIMS.get(op.name) if isinstance(op, PrimOp) else None


__all__ = ["PRIMS", "Prim", "PrimOp", "StaticRefusal", "HELPER_NAMES", "USER_VJPS", "register_vjp", "user_vjp", "for_function", "for_method", "module_funcs", "of", "Copy", "Index", "Join", "Product",
           "Reduce", "Repeat", "Reshape", "Tile", "Transpose", "User", "Linalg"]

"""The typed ops of array primitives: one small frozen dataclass per family.

An `ArrayStmt` (passes/arrayprog.py) of a primitive carries one of these as its `op`.
Fields named in `STATIC` are the primitive's static parameters, each a gast expression
(an axis, a shape, an index: rendered as source, never differentiated) or None when the
call leaves it out; `statics()` gives those present, by name, in field order. `name` is
the primitive's entry in the table (`array_prims.PRIMS`).

This module imports nothing of s2sad: ops are plain data, below the passes that build
them and the generator that prints them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gast


class PrimOp:
    STATIC: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return getattr(self, "kind", None) or type(self).__name__.lower()

    def statics(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.STATIC if getattr(self, f) is not None}


def _is_const(e, value) -> bool:
    return isinstance(e, gast.Constant) and e.value is value


@dataclass(frozen=True)
class Reduce(PrimOp):
    """sum, mean, max, min, prod over `axis` (all axes when None)."""
    kind: str
    axis: Any = None
    keepdims: Any = None
    STATIC = ("axis", "keepdims")

    @property
    def full(self) -> bool:
        """Reduces every axis to a scalar (no axis, or None; keepdims absent or False)."""
        keep = self.keepdims is not None and not _is_const(self.keepdims, False)
        return (self.axis is None or _is_const(self.axis, None)) and not keep


@dataclass(frozen=True)
class Product(PrimOp):
    """matmul (also `@`), dot, outer: two array operands."""
    kind: str


@dataclass(frozen=True)
class Transpose(PrimOp):
    axes: Any = None
    STATIC = ("axes",)


@dataclass(frozen=True)
class Reshape(PrimOp):
    """reshape, ravel, flatten, squeeze, expand_dims: only the shape changes; `order` is
    "F" (a gast constant) when elements are read in Fortran order, else None."""
    order: Any = None
    STATIC = ("order",)


@dataclass(frozen=True)
class Copy(PrimOp):
    """np.copy, np.array / np.asarray of one array, x.copy(), x.astype(float)."""


@dataclass(frozen=True)
class Repeat(PrimOp):
    repeats: Any = None
    axis: Any = None
    STATIC = ("repeats", "axis")


@dataclass(frozen=True)
class Tile(PrimOp):
    reps: Any = None
    STATIC = ("reps",)


@dataclass(frozen=True)
class Join(PrimOp):
    """concatenate, stack (along `axis`), r_, c_ (np.r_[...], np.c_[...]): the pieces are
    the operands."""
    kind: str
    axis: Any = None
    STATIC = ("axis",)


@dataclass(frozen=True)
class Index(PrimOp):
    """x[index]; `index` is an `np.s_[...]` expression. `capture` is set for a closure's
    captured element read by a fused kernel (passes/fusion.make_kernel)."""
    index: Any = None
    capture: Any = None
    STATIC = ("index",)


@dataclass(frozen=True)
class User(PrimOp):
    """A function with a rule from s2sad.defvjp; `vjp` names the rule's functions."""
    vjp: Any = None
    STATIC = ("vjp",)

"""Typed ops of the primitives read from their call's signature (einsum, tensordot,
the scans and statistics, scipy's logsumexp family): `Call`, and `Moment` for var/std.

Plain data, like ops.py: `Call.params` holds the static parameters the call gave, by
name, as gast expressions; `statics()` gives them to the VJP/JVP texts as source.
An op's constructor raises ValueError for a static parameter s2sad refuses (a call
form reader turns it into a located error).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gast

from .ops import PrimOp, Reduce


@dataclass(frozen=True)
class Call(PrimOp):
    """A primitive called with named static parameters: `kind` is its entry's name."""
    kind: str
    params: tuple = ()          # ((name, gast expression), ...), in the call's order

    def statics(self) -> dict[str, Any]:
        return dict(self.params)


@dataclass(frozen=True)
class Moment(Reduce):
    """var and std: a reduction with `ddof`."""
    ddof: Any = None
    STATIC = ("axis", "keepdims", "ddof")


def call_op(kind: str, check=None):
    """The op constructor of entry `kind`: check(params) may raise ValueError."""
    def make(**p):
        if check is not None:
            check(p)
        return Call(kind, tuple(p.items()))
    return make


def constant_in(name: str, allowed: tuple, why: str):
    """A check: parameter `name`, when given, is a literal among `allowed`."""
    def check(p):
        e = p.get(name)
        if e is not None and not (isinstance(e, gast.Constant) and e.value in allowed):
            raise ValueError(f"is called with {name}= other than {' or '.join(map(repr, allowed))} ({why})")
    return check

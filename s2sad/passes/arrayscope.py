"""What the array-program builder's parts share about the user's names: the scopes
it lowers code in, the values a name can stand for there, and two small readings of
operands and nodes.

A name in a `Scope` maps to one of: an SSA name (str) or a `Const` (arrayir), a list
of them (a tuple), a `LocalFn` (a def or lambda of the code being differentiated,
inlined or applied elementwise where it is called), or a `Bound` (a module or
function the generated code refers to). `UNBOUND` marks a local read before it is
assigned. Scopes are read by passes/arrayprog.py (the builder) and by its parts:
arraystmts.py, ewexprs.py, inlining.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kernel_text import unparse
from .arrayir import Const, Ctx
from .trees import dotted


@dataclass
class LocalFn:
    node: Any                        # gast FunctionDef or Lambda
    scope: "Scope"                   # where it was defined (its closure, read late)
    name: str


@dataclass
class Scope:
    ctx: Ctx
    vars: dict
    locals: set
    parent: "Scope | None" = None

    def child_copy(self) -> "Scope":
        return Scope(self.ctx, dict(self.vars), self.locals, self.parent)


class Bound:
    """A module or function a name holds: generated code refers to it, bound at plan time."""

    def __init__(self, value, label):
        self.value = value
        self.label = label


UNBOUND = object()


def is_number(op) -> bool:
    return isinstance(op, Const) and isinstance(op.value, (int, float, np.integer, np.floating)) \
        and not isinstance(op.value, bool)


def source_text(node) -> str:
    """The user's spelling of a node, for messages."""
    try:
        return unparse(node)
    except Exception:
        return dotted(node)

"""The scope a scalar function is normalized in (passes/normalize.py and its mixins).

A `Scope` is one user function being normalized: its file and resolver, its locals, the
local functions (defs and lambdas) it defines, and what the capture, state and tuple
mixins record for it. Scopes chain to the function that defines them (`parent`); a
`LocalFunction` is lifted to a helper once, at its first call.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import gast

from ..frontend import Resolver
from .captures import Capture
from .state import StateCell


@dataclass
class LocalFunction:
    node: gast.FunctionDef | gast.Lambda
    helper: str | None = None
    captured: tuple[str, ...] = ()


@dataclass
class Scope:
    filename: str
    resolver: Resolver
    locals: set[str]
    local_functions: dict[str, LocalFunction]
    parent: "Scope | None" = None
    temps: int = 0
    # names whose elements may be captured (`y[0]`): lifted locals and synthesized entries' params
    capturable: set[str] = field(default_factory=set)
    captures: list[Capture] = field(default_factory=list)
    state: list[StateCell] = field(default_factory=list)
    stateful_call_ok: bool = False   # set while normalizing `v = f(...)`, `return f(...)`, `f(...)`
    tuples: dict = field(default_factory=dict)   # tuple locals -> their elements (passes/tuples.py)

    def state_cell(self, kind: str, base: str, index: tuple) -> StateCell | None:
        for c in self.state:
            if c.kind == kind and c.base == base and c.index == index:
                return c
        return None

    def temp(self) -> str:
        while True:
            self.temps += 1
            t = f"_t{self.temps}"
            if t not in self.locals:
                self.locals.add(t)
                return t

    def find_local_function(self, id_: str) -> tuple["Scope", LocalFunction] | None:
        scope: Scope | None = self
        while scope is not None:
            if id_ in scope.local_functions:
                return scope, scope.local_functions[id_]
            if id_ in scope.locals:
                return None
            scope = scope.parent
        return None

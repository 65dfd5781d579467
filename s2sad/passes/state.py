"""State cells: the numbers a stateful scalar function reads and writes outside itself.

A function that writes a global or a nonlocal, or an item of a container it does not
own (`S[0] += x` on a list, an array or a dict), is made *state-passing* by normalize:
every such number becomes a `StateCell`, passed in as a trailing parameter and
returned, updated, after the value (`return (value, s1', ..., sk')`). The scan driver
threads the cells through the elements in order; `get`/`set` read the cells before a
run and write them back after it, so the side effects happen once, as the primal's
would.

Invariants: a cell is a single number; an item's key is a constant; a container is
found at call time through the same lookup Python would do (globals, closure cells,
or a local container of the loss created per call).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gast

from ..errors import SourceLocation
from ..frontend import MISSING, Resolver


@dataclass(frozen=True)
class StateCell:
    kind: str                     # "global" | "nonlocal" | "item"
    base: str                     # the name (the container's name for items)
    index: tuple                  # () for names, the item's key for items
    param: str                    # the parameter (and returned slot) that carries it
    location: SourceLocation      # where it is written
    resolver: Resolver | None = field(default=None, compare=False, repr=False)
    local_value: Any = field(default=None, compare=False, repr=False)  # a loss's local container

    def key(self) -> tuple:
        return (self.kind, self.base, self.index)

    def describe(self) -> str:
        if self.kind == "item":
            return f"{self.base}[{', '.join(map(repr, self.index))}]"
        return f"{self.kind} {self.base}"

    def _container(self):
        if self.local_value is not None:
            return self.local_value
        value = self.resolver.lookup(self.base)
        if value is MISSING:
            raise NameError(self.base)
        return value

    def get(self) -> float:
        if self.local_value is not None:  # a loss's local list: fresh, as written, every call
            c = self.local_value
            for i in self.index:
                c = c[i]
            return c
        if self.kind == "global":
            return self.resolver.fn.__globals__[self.base]
        if self.kind == "nonlocal":
            return self.resolver.cell(self.base).cell_contents
        c = self._container()
        for i in self.index[:-1]:
            c = c[i]
        return c[self.index[-1]]

    def set(self, value: float) -> None:
        if self.local_value is not None:
            return  # the loss's local list dies with the call
        if self.kind == "global":
            self.resolver.fn.__globals__[self.base] = value
        elif self.kind == "nonlocal":
            self.resolver.cell(self.base).cell_contents = value
        else:
            c = self._container()
            for i in self.index[:-1]:
                c = c[i]
            c[self.index[-1]] = value


def written_items(body: list[gast.stmt]) -> list[tuple[gast.AST, str, gast.expr]]:
    """(target node, container name, index expression) of every item assignment in a
    function body (not looking into nested functions)."""
    out = []

    def visit(node):
        if isinstance(node, (gast.FunctionDef, gast.Lambda)):
            return
        if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            targets = node.targets if isinstance(node, gast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, gast.Subscript) and isinstance(t.value, gast.Name):
                    out.append((t, t.value.id, t.slice))
        for child in gast.iter_child_nodes(node):
            visit(child)

    for s in body:
        visit(s)
    return out


MUTATING_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                    "popitem", "add", "discard", "fill", "sort", "reverse", "resize", "itemset", "put"}

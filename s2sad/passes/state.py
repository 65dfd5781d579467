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
import numpy as np

from ..errors import SourceLocation, StatefulError
from ..frontend import MISSING, Resolver, location_of
from .trees import constant_index, name, walk_no_nested


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


def _first_write(body: list[gast.stmt], nm: str):
    """The first target (in source order) that assigns the name `nm`, or None."""
    for st in body:
        for x in walk_no_nested(st):
            if isinstance(x, gast.Name) and x.id == nm and isinstance(x.ctx, gast.Store):
                return x
    return None


class StateMixin:
    """Normalizer methods that make stateful functions state-passing."""

    def declare_state(self, body: list[gast.stmt], scope, fnode) -> None:
        """Every global/nonlocal name and every written item of an outside container
        becomes a state cell of this function (see passes/state.py)."""
        for n in (x for st in body for x in walk_no_nested(st)):
            if isinstance(n, (gast.Global, gast.Nonlocal)):
                for nm in n.names:
                    if isinstance(n, gast.Nonlocal) and scope.resolver.cell(nm) is None:
                        raise self.err(scope, n, f"'nonlocal {nm}' refers to a variable of an enclosing "
                                       "scalar function", "Return the value instead.", StatefulError)
                    kind = "global" if isinstance(n, gast.Global) else "nonlocal"
                    if scope.state_cell(kind, nm, ()) is None:
                        where = _first_write(body, nm) or n   # the line that writes, not `global s`
                        scope.state.append(StateCell(kind, nm, (), nm, location_of(scope.filename, where),
                                                     scope.resolver))
                        scope.locals.add(nm)
        for target, base, index_node in written_items(body):
            key = item_key(index_node)
            if base in scope.locals:
                raise self.err(scope, target, f"'{base}' is written by item, but it is a local number",
                               "Keep state in a container defined outside the function.", StatefulError)
            if key is None:
                raise self.err(scope, target, f"'{base}' is written at a position computed per element",
                               "Write state at constant positions (S[0]).", StatefulError)
            container = self.local_data.get(base, MISSING)
            local = container is not MISSING
            if not local:
                container = scope.resolver.lookup(base)
            if container is MISSING or not isinstance(container, (list, dict, np.ndarray)):
                raise self.err(scope, target, f"'{base}' is not a list, array or dict s2sad can carry as state",
                               "Keep state in a global number or an item of a list, array or dict.",
                               StatefulError)
            if scope.state_cell("item", base, key) is None:
                param = self._cell_param(scope, base + "_" + "_".join(str(k) for k in key))
                scope.state.append(StateCell("item", base, key, param, location_of(scope.filename, target),
                                             scope.resolver, container if local else None))

    def _cell_param(self, scope, base: str) -> str:
        param = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in base)
        while param in scope.locals:
            param += "_"
        scope.locals.add(param)
        return param

    def check_stateful(self, call: gast.Call, helper: str, scope, node) -> gast.expr:
        """A call of a function that threads state: allowed only as a whole statement
        (`v = f(...)`, `return f(...)`, `f(...)`), where the state is unpacked after it."""
        cells = self.state_of.get(helper)
        if not cells:
            return call
        if not (scope.stateful_call_ok and scope.call_depth == 1):
            raise self.err(scope, node, f"'{helper}' writes state, so it must be called as a statement "
                           "(`v = f(...)`, `return f(...)` or `f(...)`)",
                           "Assign its result to a variable first.", StatefulError)
        call.args += [name(self.caller_cell(scope, c).param) for c in cells]
        call._s2sad_state = [self.caller_cell(scope, c).param for c in cells]
        return call

    def caller_cell(self, scope, c: StateCell) -> StateCell:
        mine = scope.state_cell(c.kind, c.base, c.index)
        if mine is None:
            param = c.param if c.kind != "item" and c.param not in scope.locals else self._cell_param(scope, c.param)
            scope.locals.add(param)
            mine = StateCell(c.kind, c.base, c.index, param, c.location, c.resolver, c.local_value)
            scope.state.append(mine)
        return mine

    def maybe_stateful_call(self, value: gast.expr, scope) -> tuple[list[gast.stmt], gast.expr]:
        """Normalize a statement's value; a stateful call becomes `t, s... = f(..., s...)`."""
        scope.stateful_call_ok = isinstance(value, gast.Call)
        try:
            v = self.expr(value, scope)
        finally:
            scope.stateful_call_ok = False
        state = getattr(v, "_s2sad_state", None)
        if not state:
            return [], v
        tmp = scope.temp()
        target = gast.Tuple(elts=[name(t, gast.Store()) for t in [tmp] + state], ctx=gast.Store())
        return [gast.Assign(targets=[target], value=v, type_comment=None)], name(tmp)


def item_key(e) -> tuple | None:
    """The constant key of an item: integers (S[0], A[1, 2]) or a string (D["n"])."""
    if isinstance(e, gast.Constant) and isinstance(e.value, str):
        return (e.value,)
    return constant_index(e)

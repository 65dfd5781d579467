"""Tuples in scalar functions: how polynomial code is written.

    coeffs = (1.0, -0.5, 0.25)
    for c in coeffs: ...                for i, c in enumerate(coeffs): ...
    for a, b in zip(coeffs, other): ... for i in range(len(coeffs)): acc += coeffs[i]
    t = (x, x * x); a, b = t

The core language has no tuples, so they are taken apart here (a mixin of the
Normalizer): a *tuple local* is a local name assigned exactly once, by a top-level
statement `name = (e1, e2, ...)` of its function. Its elements are evaluated there, as
Python evaluates the tuple: constants stay constants, other elements go to temporaries
(`_t3 = x * x`). Afterwards the name stands for those elements: loops over it (also
through enumerate and zip) are unrolled, `len` is a constant, `t[k]` is the element
(`t[i]` with a variable i, a chain of conditional expressions), `a, b = t` assigns the
elements. Module-level tuples of numbers (free names) and tuple literals are read the
same way. A local function may read its encloser's tuple locals of constants only
(temporaries are not captured). Anything else with a tuple is refused where it is,
by the Normalizer's usual errors.
"""
from __future__ import annotations

import builtins
import copy
import math

import gast

from ..errors import UnsupportedSyntaxError
from .trees import assign, const, literal, name, walk_no_nested


def tuple_locals(body: list[gast.stmt], params: set[str]) -> set[str]:
    """Names bound once, by a top-level `name = (...)` (a tuple or list display)."""
    stores: dict[str, int] = {}
    for st in body:
        for n in walk_no_nested(st):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
    return {st.targets[0].id for st in body
            if isinstance(st, gast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], gast.Name)
            and isinstance(st.value, (gast.Tuple, gast.List)) and stores.get(st.targets[0].id) == 1
            and st.targets[0].id not in params and not any(isinstance(e, gast.Starred) for e in st.value.elts)}


class TupleMixin:
    """Tuple locals, loops over tuples, enumerate/zip/len; needs `expr`, `err`."""

    def declare_tuples(self, body: list[gast.stmt], scope, params) -> None:
        scope.tuples = {n: None for n in tuple_locals(body, set(params))}

    def tuple_assign(self, s: gast.Assign, scope) -> list[gast.stmt] | None:
        """`t = (e1, ...)` of a tuple local: its elements evaluated now, remembered."""
        t = s.targets[0]
        if not (isinstance(t, gast.Name) and t.id in scope.tuples and scope.tuples[t.id] is None):
            return None
        pre, elts = self.evaluated(s.value.elts, scope)
        scope.tuples[t.id] = elts
        return pre

    def evaluated(self, exprs, scope) -> tuple[list[gast.stmt], list[gast.expr]]:
        """Each expression normalized; those that are not constants go to temporaries."""
        pre, elts = [], []
        for e in exprs:
            v = self.expr(e, scope)
            if literal(v) is None and not (isinstance(v, gast.Constant) and isinstance(v.value, bool)):
                tmp = scope.temp()
                pre.append(assign(tmp, v))
                v = name(tmp)
            elts.append(v)
        return pre, elts

    def tuple_elements(self, node, scope, pre: list | None = None) -> list[gast.expr] | None:
        """The elements of a tuple `node` names or displays (fresh trees), else None. A
        display's non-constant elements are evaluated into `pre` (None: displays of
        constants only)."""
        if isinstance(node, (gast.Tuple, gast.List)):
            vals = [literal(e) for e in node.elts]
            if all(v is not None for v in vals):
                return [const(v) for v in vals]
            if pre is None or any(isinstance(e, gast.Starred) for e in node.elts):
                return None
            stmts, elts = self.evaluated(node.elts, scope)
            pre.extend(stmts)
            return elts
        if not isinstance(node, gast.Name):
            return None
        s = scope
        while s is not None:
            tuples = getattr(s, "tuples", {})
            if node.id in tuples:
                elts = tuples[node.id]
                if elts is None:
                    raise self.err(scope, node, f"'{node.id}' is read before it is assigned",
                                   "Assign the tuple before using it.")
                if s is not scope and not all(isinstance(e, gast.Constant) or literal(e) is not None
                                              for e in elts):
                    raise self.err(scope, node, f"a local function reads the tuple '{node.id}' of "
                                   "differentiated values of the function around it",
                                   "Pass its elements as arguments.")
                return [copy.deepcopy(e) for e in elts]
            if node.id in s.locals:
                return None
            s = s.parent
        r = scope.resolver.resolve(node.id)
        if r is not None and r.kind == "tuple":
            return [const(v) for v in r.value]
        return None

    def builtin_call(self, e, scope, fn) -> bool:
        """Whether `e` is a call of the builtin `fn` (not shadowed by a local or global)."""
        return (isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and not e.keywords
                and scope.find_local_function(e.func.id) is None and e.func.id not in scope.locals
                and scope.resolver.lookup(e.func.id) is fn)

    def iteration(self, it, scope) -> tuple[list[gast.stmt], list] | None:
        """(statements, items) of a loop over a tuple, enumerate(tuple[, start]) or
        zip(tuples...): an item is an element, or a list of them for enumerate/zip."""
        pre: list[gast.stmt] = []
        if self.builtin_call(it, scope, builtins.enumerate) and len(it.args) in (1, 2):
            elts = self.tuple_elements(it.args[0], scope, pre)
            start = literal(self.expr(it.args[1], scope)) if len(it.args) == 2 else 0
            if elts is None or start is None or start != int(start):
                return None
            return pre, [[const(int(start) + k), v] for k, v in enumerate(elts)]
        if self.builtin_call(it, scope, builtins.zip) and it.args:
            cols = [self.tuple_elements(a, scope, pre) for a in it.args]
            if any(c is None for c in cols):
                return None
            return pre, [list(row) for row in zip(*cols)]
        elts = self.tuple_elements(it, scope, pre)
        return None if elts is None else (pre, elts)

    def unrolled_for(self, s: gast.For, scope) -> list[gast.stmt] | None:
        """A for loop over a tuple (or enumerate/zip of tuples), unrolled; None if it is not one."""
        found = self.iteration(s.iter, scope)
        if found is None:
            return None
        pre, items = found
        out = list(pre)
        for item in items:
            out.extend(self.bind_item(s.target, item, scope, s))
            out.extend(self.block(s.body, scope))
        return out

    def bind_item(self, target, item, scope, s) -> list[gast.stmt]:
        if isinstance(target, gast.Name):
            if isinstance(item, list):
                raise self.err(scope, s, "the loop variable of enumerate/zip must be unpacked",
                               "Write `for i, c in enumerate(t):`.")
            return [assign(target.id, item)]
        if isinstance(target, (gast.Tuple, gast.List)) and isinstance(item, list) \
                and len(target.elts) == len(item) and all(isinstance(n, gast.Name) for n in target.elts):
            return [assign(n.id, v) for n, v in zip(target.elts, item)]
        raise self.err(scope, s, "the loop variables do not match the items of the tuple",
                       "Unpack into as many plain variables as each item has.", UnsupportedSyntaxError)

    def tuple_len(self, e: gast.Call, scope) -> gast.expr | None:
        """`len(t)` of a tuple: a constant."""
        if self.builtin_call(e, scope, builtins.len) and len(e.args) == 1:
            elts = self.tuple_elements(e.args[0], scope)
            if elts is not None:
                return const(len(elts))
        return None

    def tuple_item(self, e: gast.Subscript, scope) -> gast.expr | None:
        """`t[k]` of a tuple: the element; `t[i]`: a chain of conditional expressions."""
        elts = self.tuple_elements(e.value, scope)
        if elts is None:
            return None
        index = self.expr(e.slice, scope)
        k = literal(index)
        if k is not None:
            if k != int(k) or not -len(elts) <= int(k) < len(elts):
                raise self.err(scope, e, f"index {k} is out of range for a tuple of {len(elts)}",
                               "Fix the index.")
            return elts[int(k)]
        # a chain of selects: i == 0, ..., n - 1, then -n, ..., -1 (negative indices count
        # from the end, as in Python); NaN for an index out of range, where Python raises
        # IndexError: a kernel cannot raise per element, and a NaN is never taken for a
        # right number (the last element was, before)
        n = len(elts)
        result: gast.expr = const(math.nan)
        for i in reversed(list(range(n)) + list(range(-n, 0))):
            test = gast.Compare(left=copy.deepcopy(index), ops=[gast.Eq()], comparators=[const(i)])
            result = gast.IfExp(test=test, body=copy.deepcopy(elts[i]), orelse=result)
        return result

    def tuple_unpack(self, names, value, scope, s) -> list[gast.stmt] | None:
        """`a, b = t` of a tuple local (or module tuple): the elements assigned."""
        elts = self.tuple_elements(value, scope)
        if elts is None:
            return None
        if len(elts) != len(names):
            raise self.err(scope, s, f"cannot unpack a tuple of {len(elts)} into {len(names)} names",
                           "Unpack into as many names as the tuple has elements.")
        # through temporaries, as Python assigns after evaluating: `x, y = t` with t = (y, x)
        temps = [scope.temp() for _ in names]
        return [assign(t, v) for t, v in zip(temps, elts)] + [assign(n.id, name(t)) for n, t in zip(names, temps)]

    def tuple_as_value(self, e: gast.Name, scope) -> None:
        s = scope
        while s is not None:
            if e.id in getattr(s, "tuples", {}):
                raise self.err(scope, e, f"'{e.id}' is a tuple, used here as a number",
                               "Index it (t[0]), loop over it, or unpack it (a, b = t).")
            if e.id in s.locals:
                return
            s = s.parent


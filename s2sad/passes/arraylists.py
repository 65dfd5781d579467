"""Lists of arrays at the array level, lowered by the array-program builder's
statements (passes/arraystmts.Statements): a list the function builds is a Python list
of operands while the program is built (its length is known then), so what reads it is
unrolled:

- `[f(a) for a in hs]`, over a list, `zip`/`enumerate` of lists, or `range(k)` with a
  constant k: one value per item (`comprehension`); a comprehension over an array stays
  elementwise (passes/ewexprs.py);
- `hs.append(v)` (a loop over range(<constant>) that appends to a list made before it is
  unrolled; in other loops and in branches, the list is kept as one array:
  passes/arraystacks.py),
  `hs[k]` with a constant k, `sum(hs)` (the items added: elementwise), `len(hs)`;
- `for a in hs`, `for a, b in zip(hs, gs)`, `for i, a in enumerate(hs)`: unrolled
  (passes/arrayloops.py); over arrays, `for row in X`, `zip(X, Y)`, `enumerate(X)` are
  loops over `range(len(X))` that index the rows (`rows_loop`, a rewrite of the user's
  tree).

Invariants: a list value is never mutated once bound (append rebinds the name to a new
list), so two names never see one list change.
"""
from __future__ import annotations

import builtins

import gast

from ..errors import UnsupportedOperationError
from .arrayir import Const
from .arrayscope import Scope


# a comprehension over range(<constant>), or a loop over one that appends to a list,
# is unrolled up to this many items
MAX_UNROLLED = 256


def _name(nm: str, store=False):
    return gast.Name(id=nm, ctx=gast.Store() if store else gast.Load(), annotation=None, type_comment=None)


class Lists:
    """The builder's reading of local lists; `stmts` is the Statements part."""

    def __init__(self, builder, stmts):
        self.b = builder
        self.s = stmts
        self.temps = 0
        # how many names each list value is bound to (by id; `kept` holds the lists, so
        # no id is reused): an append through one of two names would not reach the other
        self.names_of: dict[int, int] = {}
        self.kept: list = []

    def note_bound(self, seq: list) -> None:
        if id(seq) not in self.names_of:
            self.kept.append(seq)
        self.names_of[id(seq)] = self.names_of.get(id(seq), 0) + 1

    def check_unshared(self, nm: str, seq, s, scope: Scope) -> None:
        """Refuse appending to a list another name also holds (Python would show the
        append through it)."""
        shared = self.names_of.get(id(seq), 0) > 1 if isinstance(seq, list) else seq in self.b.aliased
        if shared:
            raise self.b.err(scope.ctx, s, f"'{nm}' is appended to here, and the list is also held by another name "
                             f"(an alias, or a function's parameter), which Python would show the append through",
                             f"Append where the list is made, or return the new list from the function and "
                             f"assign it.", UnsupportedOperationError)

    # -------------------------------------------------------------- values

    def items(self, e, scope: Scope, ranges: bool = True) -> list | None:
        """The items a loop or comprehension runs over when they are known now (a list,
        a tuple, zip/enumerate of them, range of constants when `ranges`, at most
        MAX_UNROLLED), each an operand or a tuple (a list) of operands; None otherwise."""
        if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and self.b.lookup_local(e.func.id, scope) is None \
                and not e.keywords:
            fn = scope.ctx.resolver.lookup(e.func.id)
            if fn is builtins.zip and e.args:
                cols = [self.items(a, scope, ranges) for a in e.args]
                if any(c is None for c in cols):
                    return None
                return [list(t) for t in zip(*cols)]
            if fn is builtins.enumerate and len(e.args) == 1:
                col = self.items(e.args[0], scope, ranges)
                return None if col is None else [[Const(i), v] for i, v in enumerate(col)]
            if ranges and fn is builtins.range and e.args \
                    and all(isinstance(a, gast.Constant) and type(a.value) is int for a in e.args) \
                    and len(range(*[a.value for a in e.args])) <= MAX_UNROLLED:
                return [Const(i) for i in range(*[a.value for a in e.args])]
        return self.sequence(e, scope)

    def sequence(self, e, scope: Scope) -> list | None:
        """A list or tuple known now: a display, or a name bound to one."""
        if isinstance(e, (gast.Tuple, gast.List)):
            return self.b.expr(e, scope)
        if isinstance(e, gast.Name):
            v = self.b.lookup_local(e.id, scope)
            if v is None:
                v = self.b.lookup(e.id, scope, e)
            if isinstance(v, list):
                return v
            if isinstance(v, Const) and isinstance(v.value, tuple):
                return [Const(x) for x in v.value]
        return None

    def bind_target(self, target, item, scope: Scope, node) -> None:
        """`for a, b in ...`: the target bound to the item (unpacked)."""
        if isinstance(target, gast.Name):
            self.s.bind(scope, target.id, item)
            return
        if isinstance(target, (gast.Tuple, gast.List)) and isinstance(item, list) and len(item) == len(target.elts):
            for t, v in zip(target.elts, item):
                self.bind_target(t, v, scope, node)
            return
        raise self.b.err(scope.ctx, node, "the loop's target does not match its items",
                         "Unpack as many names as each item has.", UnsupportedOperationError)

    def expr(self, e, scope: Scope, want=None):
        """A list construct this part reads (a comprehension over known items, hs[k],
        sum(hs)); None for anything else. An operator on a list grown at run time is
        refused here (arraystacks)."""
        self.s.stacks.check_use(e, scope)
        if isinstance(e, (gast.ListComp, gast.GeneratorExp)) and len(e.generators) == 1 \
                and not e.generators[0].ifs:
            items = self.items(e.generators[0].iter, scope)
            if items is not None:
                return self.comprehension(e, items, scope)
            return None
        if isinstance(e, gast.Subscript) and isinstance(e.value, gast.Name):
            seq = self.b.lookup_local(e.value.id, scope)
            if isinstance(seq, list):
                return self.item(seq, e, scope)
            return None
        if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and len(e.args) == 1 and not e.keywords \
                and self.b.lookup_local(e.func.id, scope) is None \
                and scope.ctx.resolver.lookup(e.func.id) is builtins.sum:
            seq = self.sequence(e.args[0], scope) if isinstance(e.args[0], gast.Name) else None
            if seq is None and isinstance(e.args[0], (gast.ListComp, gast.GeneratorExp)):
                seq = self.expr(e.args[0], scope)
            if isinstance(seq, list):
                return self.total(seq, e, scope, want)
        return None

    def comprehension(self, e, items: list, scope: Scope) -> list:
        out = []
        for item in items:
            inner = scope.child_copy()
            self.bind_target(e.generators[0].target, item, inner, e)
            v = self.b.expr(e.elt, inner)
            out.append(v)
        return out

    def item(self, seq: list, e: gast.Subscript, scope: Scope):
        k = e.slice
        if isinstance(k, gast.UnaryOp) and isinstance(k.op, gast.USub) and isinstance(k.operand, gast.Constant):
            k = gast.Constant(value=-k.operand.value, kind=None)
        if isinstance(k, gast.Constant) and type(k.value) is int and -len(seq) <= k.value < len(seq):
            return seq[k.value]
        if isinstance(k, gast.Slice) and all(x is None or (isinstance(x, gast.Constant) and type(x.value) is int)
                                             for x in (k.lower, k.upper, k.step)):
            return seq[slice(*[None if x is None else x.value for x in (k.lower, k.upper, k.step)])]
        if isinstance(k, gast.Constant) and type(k.value) is int:     # a literal out of range
            raise self.b.err(scope.ctx, e, f"a list or tuple of {len(seq)} values is indexed here at {k.value}: "
                             f"index it within its {len(seq)} items", "Index with a constant in range, or unpack "
                             "it (a, b = ...).", UnsupportedOperationError)
        raise self.b.err(scope.ctx, e, "a local list is indexed here with an index known only at run time "
                         "(or out of its range)",
                         "Index with a constant (hs[0], hs[-1]), loop over the list (for h in hs), or stack it "
                         "(np.stack(hs)[i]).", UnsupportedOperationError)

    def total(self, seq: list, e, scope: Scope, want=None):
        """sum(hs): the items added in order (Python's sum, from 0)."""
        if not seq:
            return Const(0)
        inner = Scope(scope.ctx, {}, set(), scope)
        names = []
        for v in seq:
            self.temps += 1
            nm = f"_list_item_{self.temps}"
            inner.vars[nm] = v
            names.append(nm)
        acc = _name(names[0])
        for nm in names[1:]:
            acc = gast.copy_location(gast.BinOp(left=acc, op=gast.Add(), right=_name(nm)), e)
        gast.copy_location(acc, e)
        return self.b.expr(acc, inner, want) if len(names) > 1 else seq[0]

    # -------------------------------------------------------------- statements

    def append(self, s: gast.Expr, scope: Scope) -> bool:
        """`hs.append(v)` on a local list: hs rebound to a new list; False if `s` is not one."""
        call = s.value
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr in ("append", "extend") and isinstance(call.func.value, gast.Name)):
            return False
        nm = call.func.value.id
        seq = self.b.lookup_local(nm, scope)
        stacked = isinstance(seq, str) and seq in self.s.stacks.stacked
        if not isinstance(seq, list) and not stacked:
            return False
        if len(call.args) != 1 or call.keywords:
            raise self.b.err(scope.ctx, s, f"'{nm}.{call.func.attr}' takes one value", "Fix the call.",
                             UnsupportedOperationError)
        self.check_unshared(nm, seq, s, scope)
        if stacked:       # a list grown at run time (arraystacks)
            if call.func.attr != "append":
                raise self.b.err(scope.ctx, s, f"'{nm}.extend' on a list grown in a loop", f"Append the items one "
                                 f"by one ({nm}.append(v)).", UnsupportedOperationError)
            self.s.bind(scope, nm, self.s.stacks.append(seq, self.b.expr(call.args[0], scope), nm, s, scope))
            return True
        if call.func.attr == "append":
            new = seq + [self.b.expr(call.args[0], scope)]
        else:
            more = self.items(call.args[0], scope)
            if more is None:
                raise self.b.err(scope.ctx, s, f"'{nm}.extend' needs a list known here", "Append the items.",
                                 UnsupportedOperationError)
            new = seq + list(more)
        self.s.bind(scope, nm, new)
        return True


def lists_appended(body) -> set:
    """Names `body` calls .append/.extend on (not in nested functions)."""
    out = set()
    for st in body:
        for n in gast.walk(st):
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr in ("append", "extend") \
                    and isinstance(n.func.value, gast.Name):
                out.add(n.func.value.id)
    return out


def rows_loop(s: gast.For, iterable_is_array, fresh) -> list | None:
    """`for row in X`, `for a, b in zip(X, Y)`, `for i, row in enumerate(X)` over arrays
    -> [`_n = len(X)` ..., `for _i in range(_n): row = X[_i]; ...`] (the user's tree
    rewritten; `iterable_is_array(node)` tells which expressions are arrays; `fresh(base)`
    gives unused names); None when `s` is not one of these."""
    it, target = s.iter, s.target
    arrays, index_target = None, None
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and not it.keywords:
        if it.func.id == "zip" and it.args and all(iterable_is_array(a) for a in it.args) \
                and isinstance(target, (gast.Tuple, gast.List)) and len(target.elts) == len(it.args):
            arrays, targets = it.args, target.elts
        elif it.func.id == "enumerate" and len(it.args) == 1 and iterable_is_array(it.args[0]) \
                and isinstance(target, (gast.Tuple, gast.List)) and len(target.elts) == 2:
            arrays, targets, index_target = it.args, [target.elts[1]], target.elts[0]
    elif iterable_is_array(it):
        arrays, targets = [it], [target]
    if arrays is None:
        return None
    pre, names = [], []
    for a in arrays:
        if isinstance(a, gast.Name):
            names.append(a.id)
        else:       # computed once, before the loop
            nm = fresh("_rows")
            pre.append(gast.copy_location(gast.Assign(targets=[_name(nm, True)], value=a, type_comment=None), s))
            names.append(nm)
    i = index_target.id if isinstance(index_target, gast.Name) else fresh("_row")
    lens = [gast.Call(func=_name("len"), args=[_name(n)], keywords=[]) for n in names]
    n_rows = fresh("_rows_n")    # an int (arrayints): len, and min for zip
    count = lens[0] if len(lens) == 1 else gast.Call(func=_name("min"), args=lens, keywords=[])
    pre.append(gast.copy_location(gast.Assign(targets=[_name(n_rows, True)], value=count, type_comment=None), s))
    count = _name(n_rows)
    body = [gast.copy_location(gast.Assign(targets=[t], value=gast.Subscript(value=_name(n), slice=_name(i),
                                                                              ctx=gast.Load()), type_comment=None), s)
            for t, n in zip(targets, names)]
    loop = gast.For(target=_name(i, True), iter=gast.Call(func=_name("range"), args=[count], keywords=[]),
                    body=body + s.body, orelse=s.orelse, type_comment=None)
    for attr in ("s2sad_stop",):
        if hasattr(s, attr):
            setattr(loop, attr, getattr(s, attr))
    gast.copy_location(loop, s)
    for made in pre + [loop]:
        for n in gast.walk(made):
            if getattr(n, "lineno", None) is None and getattr(s, "lineno", None) is not None:
                gast.copy_location(n, s)
    return pre + [loop]

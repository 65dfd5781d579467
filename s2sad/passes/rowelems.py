"""Rows and small vectors as elements: a scalar function whose parameter is a row.

    def energy(p): return p[0] ** 2 + p[1] * p[2]        sum(map(energy, X))   # X: (n, 3)
    def pair(t): a, b = t; return a * b                   sum(map(pair, zip(x, y)))

A parameter is a *row parameter* when every use of it in the function's body is a
constant index (`p[0]`, `p[-1]`), an unpacking (`a, b, c = p`) or an argument of a
Python function whose own parameter there is a row parameter; it has at least one
such use. The function is then rewritten (`rewritten`): the row parameter becomes one
scalar parameter per position read (`p__0, p__1, p__m1`: the kernel's parameters, one
partial each), its indices and unpackings read them. A row parameter used whole as
well (`len(p)`, `p @ w`, `np.sum(p)`, a loop over it) is refused where it is so used.

At the array level (`RowCalls`, used by passes/elementwise.py) the array given for a
row parameter is a 2-D argument or free array `X`, whose columns `X[:, j]` become
kernel inputs (`Column`, passes/rowcolumns.py: read at call time, shape-checked there;
the gradient is scattered back into `X`'s column), or `zip(a, b, ...)`, whose arrays
are the components. Whether a parameter is a row is decided by the function's code, never by
shapes: the plan is the same for every X, and X's shape is checked at each call
(`Column.read`: 2-D, enough columns for the highest index read, exactly as many as an
unpacking or a `signature=` says).

Invariant: a rewritten function computes what the original computes on a row whose
components it reads; names with `__` are derived (never the user's), so the component
parameters and the synthesized functions' names do not collide with user code.
"""
from __future__ import annotations

import builtins
import copy
import types
from dataclasses import dataclass, field

import gast

from ..errors import S2SADError, ShapeError, SourceLocation, UnsupportedOperationError
from ..frontend import MISSING, ParsedFunction, Resolver, attribute_value, classify, location_of, parse_function
from .rowcolumns import Column, row_error
from .trees import const, constant_index, name, walk_no_nested


# ---------------------------------------------------------------- the analysis

@dataclass
class RowUse:
    """How a function reads its row parameter: the constant positions, and the exact
    length an unpacking needs (None: any length with enough components)."""

    reads: set[int] = field(default_factory=set)
    exact: int | None = None
    location: SourceLocation | None = None     # its first row read

    def need(self) -> int:
        """The fewest components a row may have for every read to exist."""
        return max([i + 1 for i in self.reads if i >= 0] + [-i for i in self.reads if i < 0] + [0])

    def widest(self) -> int:
        """The position read that needs the most components."""
        return max(self.reads, key=lambda i: i + 1 if i >= 0 else -i)

    def order(self) -> list[int]:
        """The positions read: non-negative ascending, then negative ascending."""
        return sorted(i for i in self.reads if i >= 0) + sorted(i for i in self.reads if i < 0)


def component(p: str, i: int) -> str:
    return f"{p}__{i}" if i >= 0 else f"{p}__m{-i}"


WHOLE_HINT = ("Index its components with constant positions (p[0], p[1], p[-1]) or unpack it "
              "(a, b, c = p); a row is not an array inside a scalar function.")


class _Analysis:
    """Row parameters of Python functions, each function analysed once (`uses`)."""

    def __init__(self) -> None:
        self.done: dict[int, dict[str, RowUse]] = {}
        self.stack: list[int] = []

    def function_uses(self, fn) -> dict[str, RowUse]:
        """The row parameters of a Python function (by parameter name)."""
        key = id(fn)
        if key in self.done:
            return self.done[key]
        if key in self.stack:   # recursion: the normalizer refuses it where it is
            return {}
        self.stack.append(key)
        try:
            pf = parse_function(fn)
            uses = self.uses(pf.node, pf.resolver, pf.filename)
        finally:
            self.stack.pop()
        self.done[key] = uses
        return uses

    def uses(self, node, resolver: Resolver, filename: str) -> dict[str, RowUse]:
        """Row parameters of a def or lambda; a row parameter also used whole is refused."""
        params = [a.id for a in node.args.args]
        out: dict[str, RowUse] = {}
        for p in params:
            row, whole = RowUse(), []
            self.scan(node, p, resolver, filename, row, whole)
            if row.reads:
                if whole:
                    raise row_error(f"'{p}' is a row (its components are read at {row.location}) and is "
                                    f"used whole here", location_of(filename, whole[0]), WHOLE_HINT)
                out[p] = row
        return out

    def scan(self, node, p: str, resolver, filename, row: RowUse, whole: list) -> None:
        body = [node.body] if isinstance(node, gast.Lambda) else node.body
        handled: set[int] = set()
        for st in body:
            for n in gast.walk(st):
                if isinstance(n, gast.Subscript) and _is(n.value, p):
                    index = constant_index(n.slice)
                    if index is not None and len(index) == 1 and isinstance(n.ctx, gast.Load):
                        self.read(row, [index[0]], None, location_of(filename, n))
                        handled.add(id(n.value))
                elif isinstance(n, gast.Assign) and _is(n.value, p) and len(n.targets) == 1 \
                        and isinstance(n.targets[0], (gast.Tuple, gast.List)) \
                        and not any(isinstance(t, gast.Starred) for t in n.targets[0].elts):
                    k = len(n.targets[0].elts)
                    self.read(row, list(range(k)), k, location_of(filename, n))
                    handled.add(id(n.value))
                elif isinstance(n, gast.Call) and not n.keywords:
                    callee = self.callee(n, resolver)
                    for pos, a in enumerate(n.args):
                        if _is(a, p) and callee is not None and pos < len(callee[0]) and callee[0][pos] in callee[1]:
                            use = callee[1][callee[0][pos]]
                            self.read(row, sorted(use.reads), use.exact, location_of(filename, n))
                            handled.add(id(a))
            for n in gast.walk(st):
                if isinstance(n, gast.Name) and n.id == p and id(n) not in handled:
                    whole.append(n)
                elif isinstance(n, (gast.Lambda, gast.FunctionDef)) and p in _names(n):
                    whole.append(n)     # a local function reading the row: refused, not captured

    def read(self, row: RowUse, positions, exact, loc) -> None:
        row.reads.update(positions)
        if row.location is None:
            row.location = loc
        if exact is not None:
            if row.exact is not None and row.exact != exact:
                raise row_error(f"the row is unpacked into {row.exact} and into {exact} names", loc,
                                "Unpack it into as many names as it has components, everywhere.",
                                ShapeError)
            row.exact = exact

    def callee(self, call: gast.Call, resolver) -> tuple[list[str], dict[str, RowUse]] | None:
        """(parameter names, row parameters) of a called Python function, else None."""
        value = attribute_value(resolver, call.func)
        if value is MISSING or not isinstance(value, types.FunctionType) or classify(value).kind != "function":
            return None
        try:
            uses = self.function_uses(value)
        except S2SADError as e:
            if isinstance(e, (UnsupportedOperationError, ShapeError)):
                raise
            return None     # no source: the normalizer says so where it is called
        code = value.__code__
        return list(code.co_varnames[:code.co_argcount]), uses


def default_args(fn, given: int, rows, loc) -> list[gast.expr]:
    """Constants for the parameters of `fn` after the first `given`: their defaults."""
    code = fn.__code__
    names = code.co_varnames[:code.co_argcount]
    defaults = fn.__defaults__ or ()
    first = len(names) - len(defaults)
    out = []
    for i in range(given, len(names)):
        v = defaults[i - first] if i >= first else None
        if i < first or names[i] in rows or not isinstance(v, (int, float)) or isinstance(v, bool):
            raise row_error(f"'{fn.__name__}' takes {len(names)} arguments, {given} given, and the default "
                            f"of '{names[i]}' is not a number s2sad can use" if i >= first else
                            f"'{fn.__name__}' takes {len(names)} arguments, {given} given", loc,
                            "Pass every parameter that has no number as its default.", ShapeError)
        out.append(const(v))
    return out


def _is(e, p: str) -> bool:
    return isinstance(e, gast.Name) and e.id == p


def _names(node) -> set[str]:
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


# ---------------------------------------------------------------- the rewrite

class _Rewrite(gast.NodeTransformer):
    """A function's row parameters -> their components (see the module docstring);
    `sum(g(...))` of a g that returns a tuple -> g's summed rewrite."""

    def __init__(self, rows: dict[str, RowUse], calls, resolver=None) -> None:
        self.rows, self.calls, self.resolver = rows, calls, resolver

    def visit_Subscript(self, n):
        if isinstance(n.value, gast.Name) and n.value.id in self.rows:
            index = constant_index(n.slice)
            if index is not None and len(index) == 1:
                return gast.copy_location(name(component(n.value.id, index[0])), n)
        return self.generic_visit(n)

    def visit_Assign(self, n):
        if isinstance(n.value, gast.Name) and n.value.id in self.rows:
            k = len(n.targets[0].elts)
            n.value = gast.Tuple(elts=[name(component(n.value.id, i)) for i in range(k)], ctx=gast.Load())
            return n
        return self.generic_visit(n)

    def visit_Call(self, n):
        if self.resolver is not None and len(n.args) == 1 and not n.keywords and isinstance(n.args[0], gast.Call) \
                and attribute_value(self.resolver, n.func) is builtins.sum:
            inner = n.args[0]
            self.generic_visit(inner)
            summed = self.calls(inner, self.rows, True)
            if summed is not None:
                return summed
            n.args[0] = self.calls(inner, self.rows) or inner
            return n
        self.generic_visit(n)
        return self.calls(n, self.rows) or n


def tuple_returns(node) -> int | None:
    """The length of the tuple display every return of a def/lambda writes
    (`return a, b`), else None."""
    if isinstance(node, gast.Lambda):
        values = [node.body]
    else:
        values = [n.value for st in node.body for n in walk_no_nested(st) if isinstance(n, gast.Return)]
    lengths = {len(v.elts) if isinstance(v, gast.Tuple) and v.elts
               and not any(isinstance(e, gast.Starred) for e in v.elts) else None for v in values}
    return lengths.pop() if len(lengths) == 1 and None not in lengths else None


def _total(elts) -> gast.expr:
    """a + b + c, added left to right as Python's sum adds them."""
    out = elts[0]
    for e in elts[1:]:
        out = gast.BinOp(left=out, op=gast.Add(), right=e)
    return out


def summed_returns(node):
    """`node` (rewritten already, a copy) with each `return a, b` made `return a + b`."""
    if isinstance(node, gast.Lambda):
        node.body = gast.copy_location(_total(node.body.elts), node.body)
        return node
    for st in node.body:
        for n in walk_no_nested(st):
            if isinstance(n, gast.Return):
                n.value = gast.copy_location(_total(n.value.elts), n.value)
    return node


def rewritten(node, rows: dict[str, RowUse], calls, resolver=None):
    """A copy of the def/lambda `node` with its row parameters taken apart."""
    node = copy.deepcopy(node)
    args = []
    for a in node.args.args:
        if a.id in rows:
            args.extend(gast.Name(id=component(a.id, i), ctx=gast.Param(), annotation=None, type_comment=None)
                        for i in rows[a.id].order())
        else:
            args.append(a)
    node.args.args = args
    body = [node.body] if isinstance(node, gast.Lambda) else node.body
    body = [_Rewrite(rows, calls, resolver).visit(st) for st in body]
    if isinstance(node, gast.Lambda):
        node.body = body[0]
    else:
        node.body = body
    return node


# ---------------------------------------------------------------- the array level

def is_zip(resolver, e) -> bool:
    return isinstance(e, gast.Call) and not e.keywords and bool(e.args) \
        and attribute_value(resolver, e.func) is builtins.zip and not any(isinstance(a, gast.Starred) for a in e.args)


class _CallsMixin:
    """RowCalls' kernel calls of the function map/broadcast/a comprehension applies."""

    def local_call(self, prelude: list, fname: str, arrays, site, signature, origin) -> gast.expr:
        """A lambda or local def of the loss (in `prelude`), rewritten there once if it
        takes rows or (signature's output "(2)") returns a tuple whose entries are summed."""
        for k, st in enumerate(prelude):
            node = st.value if isinstance(st, gast.Assign) and st.targets[0].id == fname else \
                st if isinstance(st, gast.FunctionDef) and st.name == fname else None
            if node is None or not isinstance(node, (gast.Lambda, gast.FunctionDef)):
                continue
            out = signature[1] if signature is not None else None
            if out is not None:
                self.check_tuple(node, out, site)
            if id(st) not in self.rewritten_locals:
                rows = self.node_rows(node)
                self.local_rows[fname] = (rows, [a.id for a in node.args.args])
                if rows or out is not None:
                    new = self.rewrite_local(node)
                    new = summed_returns(new if new is not node else copy.deepcopy(node)) if out is not None else new
                    st = prelude[k] = gast.Assign(targets=st.targets, value=new, type_comment=None) \
                        if isinstance(st, gast.Assign) else new
                self.rewritten_locals.add(id(st))
            rows, params = self.local_rows.get(fname, ({}, []))
            return self.expand(name(fname), rows, params, arrays, site, signature, origin)
        return self.plain_call(name(fname), arrays, site, signature)

    def function_call(self, fnode, fn, arrays, site, signature, origin) -> gast.expr:
        """A Python function: its rewrite, called on the columns, when it takes rows or
        returns a tuple whose entries the loss sums (signature's output "(2)")."""
        rows = self.function_rows(fn) if isinstance(fn, types.FunctionType) else {}
        out = signature[1] if signature is not None else None
        if out is not None:
            if not isinstance(fn, types.FunctionType):
                raise row_error("signature= gives this function's output a core dimension, but it is not "
                                "a Python function returning a tuple", location_of(self.pf.filename, site),
                                "Write the output as () for a function returning a number.", ShapeError)
            self.check_tuple(parse_function(fn).node, out, site)
        elif not rows:
            return self.plain_call(fnode, arrays, site, signature)
        code = fn.__code__
        params = list(code.co_varnames[:code.co_argcount])
        call = self.expand(name(self.synthesize(fn, out is not None)), rows, params, arrays, site, signature, origin)
        call.args.extend(default_args(fn, len(arrays), rows, location_of(self.pf.filename, site)))
        return call

    def check_tuple(self, node, out, site) -> None:
        k = tuple_returns(node)
        if k is None or (isinstance(out, int) and k != out):
            raise row_error(f"signature= says the function returns {out} numbers, but "
                            + ("not every return is a tuple display (return a, b)" if k is None else
                               f"it returns {k}"), location_of(self.pf.filename, site),
                            "Return a tuple written out (return a, b) of as many numbers as the signature "
                            "says, on every path.", ShapeError)

    def plain_call(self, fnode, arrays, site, signature) -> gast.expr:
        if signature is not None and signature[1] is not None:
            raise row_error("signature= gives the output a core dimension, but the function is not "
                            "a Python function returning a tuple", location_of(self.pf.filename, site),
                            "Write the output as () for a function returning a number.", ShapeError)
        return self.expand(fnode, {}, [], arrays, site, signature, lambda a: None)

    def expand(self, func, rows, params, arrays, site, signature, origin) -> gast.expr:
        loc = location_of(self.pf.filename, site)
        signature = signature[0] if signature is not None else None
        if signature is not None and len(signature) != len(arrays):
            raise row_error(f"signature= has {len(signature)} argument(s), the call passes {len(arrays)}", loc,
                            "Write one core dimension, or (), per array.", ShapeError)
        args: list[gast.expr] = []
        for pos, a in enumerate(arrays):
            q = params[pos] if pos < len(params) else None
            core = signature[pos] if signature is not None else None
            if q in rows and signature is not None and core is None:
                raise row_error(f"signature= says argument {pos + 1} is a number, but the function indexes "
                                f"its parameter '{q}'", loc, "Write its core dimension: signature=\"(3)->()\".",
                                ShapeError)
            if q in rows:
                args.extend(self.columns_of(a, rows[q], origin(a), site, core))
                continue
            if core is not None or is_zip(self.pf.resolver, a):
                what = "signature= gives it rows" if core is not None else "it is given zip(...)"
                raise row_error(f"argument {pos + 1} of the function is a number (never indexed), but {what}",
                                loc, "Index the parameter's components (p[0], p[1]) or unpack them in the "
                                "function, or pass an array of numbers.", ShapeError)
            args.append(a)
        return gast.Call(func=func, args=args, keywords=[])


class RowCalls(_CallsMixin):
    """Row functions applied at the array level: their rewrites (`synthesized`: name
    -> ParsedFunction the normalizer emits for a call of that name) and the columns
    they read (`columns`: kernel parameter -> Column)."""

    def __init__(self, pf: ParsedFunction) -> None:
        self.pf = pf
        self.analysis = _Analysis()
        self.synthesized: dict[str, ParsedFunction] = {}
        self.names: dict[int, str] = {}          # id(function) -> its synthesized name
        self.columns: dict[str, Column] = {}
        self.rewritten_locals: set[int] = set()
        self.local_rows: dict[str, tuple] = {}    # local function -> (row uses, its parameters)

    # -- functions
    def function_rows(self, fn) -> dict[str, RowUse]:
        return self.analysis.function_uses(fn)

    def node_rows(self, node) -> dict[str, RowUse]:
        return self.analysis.uses(node, self.pf.resolver, self.pf.filename)

    def synthesize(self, fn, summed: bool = False) -> str:
        """The name under which the rewrite of the Python function `fn` is called
        (`summed`: its returned tuple's entries added, for `sum(fn(...))`)."""
        key = (id(fn), summed)
        if key not in self.names:
            pf = parse_function(fn)
            rows = self.function_rows(fn)
            label = pf.name if pf.name.isidentifier() else "lambda"
            self.names[key] = f"{label}__{'sum' if summed else 'rows'}{len(self.names) + 1}"
            node = rewritten(pf.node, rows, self.inner_calls(pf.resolver), pf.resolver)
            if summed:
                node = summed_returns(node)
            self.synthesized[self.names[key]] = ParsedFunction(None, node, pf.filename, pf.resolver)
        return self.names[key]

    def rewrite_local(self, node):
        """A lambda or local def of the loss, rewritten (its free names are the loss's)."""
        rows = self.node_rows(node)
        return rewritten(node, rows, self.inner_calls(self.pf.resolver), self.pf.resolver) if rows else node

    def inner_calls(self, resolver):
        """A call inside a rewritten function that passes a row on: to the callee's rewrite."""
        def calls(n: gast.Call, rows: dict[str, RowUse], summed: bool = False):
            if n.keywords or not (summed or any(isinstance(a, gast.Name) and a.id in rows for a in n.args)):
                return None
            value = attribute_value(resolver, n.func)
            if value is MISSING or not isinstance(value, types.FunctionType):
                return None
            if summed and (classify(value).kind != "function" or tuple_returns(parse_function(value).node) is None):
                return None
            callee_rows = self.function_rows(value)
            code = value.__code__
            names = list(code.co_varnames[:code.co_argcount])
            args = []
            for pos, a in enumerate(n.args):
                q = names[pos] if pos < len(names) else None
                if isinstance(a, gast.Name) and a.id in rows and q in callee_rows:
                    args.extend(name(component(a.id, i)) for i in callee_rows[q].order())
                else:
                    args.append(a)
            args.extend(default_args(value, len(n.args), callee_rows, location_of(parse_function(value).filename, n)))
            return gast.copy_location(gast.Call(func=name(self.synthesize(value, summed)), args=args, keywords=[]), n)
        return calls

    # -- arrays
    def columns_of(self, array: gast.expr, use: RowUse, origin: str, site, core) -> list[gast.expr]:
        """Kernel expressions for the components a row function reads of `array`."""
        loc = location_of(self.pf.filename, site)
        if isinstance(core, int):
            if use.need() > core:
                raise row_error(f"the function reads index {max(use.reads, key=abs)} of rows that "
                                f"signature= says have {core} components", loc, "Fix the signature or the index.",
                                ShapeError)
            if use.exact is not None and use.exact != core:
                raise row_error(f"the function unpacks its rows into {use.exact} names, but signature= "
                                f"says they have {core} components", loc, "Fix the signature.", ShapeError)
        exact = core if isinstance(core, int) else use.exact
        if is_zip(self.pf.resolver, array):
            return self.zip_components(array, use, exact, loc)
        if not isinstance(array, gast.Name) or origin is None:
            raise row_error("the rows a row function reads must be an argument of the loss or a free array",
                            loc, "Pass the 2-D array itself (map(f, X)); compute other arrays before, as "
                            "arguments.")
        out = []
        for i in use.order():
            param = f"{array.id}__c{i}" if i >= 0 else f"{array.id}__cm{-i}"
            self.columns[param] = Column(origin, array.id, i, param, loc, use.need(), exact, use.widest(),
                                         self.pf.resolver if origin == "free" else None)
            out.append(name(param))
        return out

    def zip_components(self, z: gast.Call, use: RowUse, exact, loc) -> list[gast.expr]:
        k = len(z.args)
        if exact is not None and exact != k:
            raise row_error(f"the function unpacks {exact} components, but zip(...) gives {k}", loc,
                            "Zip as many arrays as the function unpacks.", ShapeError)
        if use.need() > k:
            raise row_error(f"the function reads index {max(use.reads, key=abs)} of zip(...) of {k} arrays",
                            loc, "Fix the index or zip more arrays.", ShapeError)
        return [copy.deepcopy(z.args[i]) for i in use.order()]


# ---------------------------------------------------------------- s2sad.broadcast of a row function

def row_parameters(pf: ParsedFunction) -> list[RowUse | None] | None:
    """Per parameter of `pf`, how it reads its rows (None: a number); None when none does."""
    uses = _Analysis().uses(pf.node, pf.resolver, pf.filename)
    if not uses:
        return None
    return [uses.get(a.id) for a in pf.node.args.args]


def row_program(pf: ParsedFunction, normalizer):
    """`pf` rewritten for its row parameters, normalized by `normalizer` (a fresh
    Normalizer): the program s2sad.broadcast runs on the columns (`row_arguments`)."""
    calls = RowCalls(pf)
    rows = calls.node_rows(pf.node)
    node = rewritten(pf.node, rows, calls.inner_calls(pf.resolver))
    normalizer.synthesized = calls.synthesized
    return normalizer.program(ParsedFunction(None, node, pf.filename, pf.resolver))

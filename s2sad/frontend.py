"""Python function -> gast tree, with free names resolved and a source map.

Invariants of what this module hands on:
- `parse_function(fn)` returns a `ParsedFunction` whose `node` is the function's own
  `FunctionDef` or `Lambda`, taken from a parse of the *whole* file, so every node's
  lineno/col_offset are the file's (errors quote them directly).
- `Resolver.resolve(name)` looks a free name up the way Python would at call time
  (closure cells, then globals, then builtins) and classifies its value; it never
  evaluates user code.
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import linecache
import math
import types
from dataclasses import dataclass
from typing import Any, Callable

import gast
import numpy as np

from .deep import check_nesting, deep_recursion
from .errors import NoSourceError, SourceLocation, UnsupportedSyntaxError


@dataclass
class ParsedFunction:
    fn: Callable
    node: gast.FunctionDef | gast.Lambda
    filename: str
    resolver: "Resolver"

    @property
    def name(self) -> str:
        if isinstance(self.node, gast.Lambda):
            return f"lambda_{self.node.lineno}"
        return self.node.name

    def location(self, node: gast.AST | None = None) -> SourceLocation:
        return location_of(self.filename, node if node is not None else self.node)


def location_of(filename: str, node: gast.AST) -> SourceLocation:
    return SourceLocation(filename, getattr(node, "lineno", 0) or 0, getattr(node, "col_offset", 0) or 0)


_FILE_TREES: dict[tuple[str, str], ast.Module] = {}
_NODES: dict[tuple[int, int], gast.AST] = {}  # (id of the file's tree, id of the ast node) -> gast


def _file_tree(filename: str) -> ast.Module | None:
    """The file's tree, parsed once per content with the (fast, C) ast parser; only the
    functions s2sad differentiates are converted to gast (see _find_node)."""
    lines = linecache.getlines(filename)
    if not lines:
        return None
    text = "".join(lines)
    key = (filename, hashlib.sha1(text.encode()).hexdigest())
    tree = _FILE_TREES.get(key)
    if tree is None:
        try:
            with deep_recursion():  # a long sum is a deep tree
                tree = ast.parse(text)
        except SyntaxError:
            return None
        _FILE_TREES[key] = tree
    return tree


def has_source(fn: Callable) -> bool:
    return isinstance(fn, types.FunctionType) and _find_node(fn) is not None


def _find_node(fn: types.FunctionType) -> gast.AST | None:
    code = fn.__code__
    filename = code.co_filename
    tree = _file_tree(filename)
    if tree is None:
        return None
    node = _find_ast_node(fn, tree)
    if node is None:
        return None
    key = (id(tree), id(node))
    if key not in _NODES:
        check_nesting(node, filename)
        with deep_recursion():
            _NODES[key] = gast.ast_to_gast(node)
    return _NODES[key]


def _find_ast_node(fn: types.FunctionType, tree: ast.Module) -> ast.AST | None:
    code = fn.__code__
    first = code.co_firstlineno
    argnames = list(code.co_varnames[: code.co_argcount])
    if fn.__name__ == "<lambda>":
        candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == first
                      and [a.arg for a in n.args.args] == argnames]
        if len(candidates) > 1:
            col = _first_column(code)
            inside = [n for n in candidates if col is not None and n.col_offset <= col <= (n.end_col_offset or 10**9)]
            if not inside:
                raise UnsupportedSyntaxError(
                    f"line {first} has {len(candidates)} lambdas with the parameters ({', '.join(argnames)}), "
                    "and this Python cannot tell which one is being differentiated",
                    location_of(code.co_filename, candidates[0]),
                    hint="Put each lambda on its own line, or give it a name with def.")
            candidates = [max(inside, key=lambda n: n.col_offset)]  # the innermost one
        return candidates[0] if candidates else None
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == fn.__name__:
            start = min([n.lineno] + [d.lineno for d in n.decorator_list])
            if start == first:
                return n
    return None


def _first_column(code: types.CodeType) -> int | None:
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return None
    # the body's first column (the RESUME instruction at column 0 says nothing)
    cols = [p[2] for p in positions() if p[2] is not None and p[3] is not None and p[3] > p[2]]
    return min(cols) if cols else None


def parse_function(fn: Callable, used_at: SourceLocation | None = None) -> ParsedFunction:
    """Find and parse `fn`'s source; NoSourceError (OPAQUE) when there is none."""
    fn = inspect.unwrap(fn)
    if not isinstance(fn, types.FunctionType):
        name = getattr(fn, "__name__", repr(fn))
        raise NoSourceError(
            f"'{name}' has no Python source s2sad can read and no derivative rule",
            used_at,
            hint=f"Register a rule for it: s2sad.defrule({name}, \"<d out/d x>\", impl=<a Python "
                 f"function computing it>), or call a function written in Python.")
    node = _find_node(fn)
    if node is None:
        raise NoSourceError(
            f"cannot find the source of '{fn.__qualname__}' (defined in {fn.__code__.co_filename})",
            used_at,
            hint="s2sad reads the source of the functions it differentiates: define the function "
                 "in a .py file (not in exec or an interactive prompt), or register a rule with "
                 "s2sad.defrule.")
    if isinstance(node, gast.AsyncFunctionDef):
        raise UnsupportedSyntaxError("async functions cannot be differentiated",
                                     location_of(fn.__code__.co_filename, node),
                                     hint="Write it as a plain def.")
    return ParsedFunction(fn, node, fn.__code__.co_filename, Resolver(fn))


# ---------------------------------------------------------------- free names

# ---------------------------------------------------------------- assumptions

_RECORDING: list[list] = []


class Assumptions:
    """The free names a plan compiled in (numbers, tuples, functions), with the values
    they had: a plan is reused only while every one still holds the same object, so
    rebinding a global constant or function makes s2sad plan again instead of silently
    using the old value. Modules and containers are not recorded (containers are read
    at every call)."""

    def __init__(self, log: list) -> None:
        seen, self.entries = set(), []
        for resolver, name, value in log:
            if isinstance(value, (types.ModuleType, np.ndarray, list, dict)) or (id(resolver), name) in seen:
                continue
            seen.add((id(resolver), name))
            self.entries.append((resolver, name, value))
        # what hold() reads, once each: a module's globals dict or a closure cell (a
        # resolver's fixed `extra` values cannot change)
        self._globals, self._cells, where = [], [], set()
        for r, n, v in self.entries:
            cell = r.cell(n)
            if cell is not None and id(cell) not in where:
                where.add(id(cell))
                self._cells.append((cell, v))
            elif cell is None and n not in r.cells and (id(r.fn.__globals__), n) not in where:
                where.add((id(r.fn.__globals__), n))
                self._globals.append((r.fn.__globals__, n, v))

    def hold(self) -> bool:
        """Whether every recorded name still holds its object (as Resolver.current reads
        it; this runs on every call, so it reads the dicts and cells directly)."""
        for g, n, v in self._globals:
            if g.get(n, _MISSING) is not v:
                return False
        for cell, v in self._cells:
            try:
                if cell.cell_contents is not v:
                    return False
            except ValueError:      # emptied
                return False
        return True


class recording:
    """`with recording() as log:` collects every free-name lookup made inside."""

    def __enter__(self) -> list:
        _RECORDING.append([])
        return _RECORDING[-1]

    def __exit__(self, *exc) -> None:
        _RECORDING.pop()


@dataclass(frozen=True)
class Resolved:
    """A free name's value and what s2sad makes of it.

    kind: "module", "primitive" (value is the primitive name), "user_rule" (value is the
    rules.UserRule registered for it), "function" (user Python function), "constant" (a number), "tuple" (a tuple of numbers), "array",
    "container" (list/dict/other mutable object), "s2sad" (an s2sad entry point such
    as s2sad.broadcast), "unknown".
    """

    kind: str
    value: Any


_MISSING = object()


class Resolver:
    """Looks up free names of one Python function as Python would when it runs."""

    def __init__(self, fn: types.FunctionType, extra: dict[str, Any] | None = None):
        self.fn = fn
        self.cells: dict[str, Any] = dict(extra or {})
        self._cell_objects: dict[str, Any] = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                self._cell_objects[name] = cell
                try:
                    self.cells[name] = cell.cell_contents
                except ValueError:  # empty cell
                    pass

    def cell(self, name: str):
        """The closure cell of a free variable (for nonlocal state), or None."""
        return self._cell_objects.get(name)

    def lookup(self, name: str) -> Any:
        if name in self.cells:
            value = self.cells[name]
        elif name in self.fn.__globals__:
            value = self.fn.__globals__[name]
        else:
            return getattr(builtins, name, _MISSING)
        if _RECORDING:
            _RECORDING[-1].append((self, name, value))
        return value

    def current(self, name: str) -> Any:
        """The name's value now (closure cells are read afresh), without recording."""
        cell = self._cell_objects.get(name)
        if cell is not None:
            try:
                return cell.cell_contents
            except ValueError:
                return _MISSING
        if name in self.cells:
            return self.cells[name]
        g = self.fn.__globals__
        if name in g:       # (not g.get(name, getattr(...)): a failed getattr raises inside, ~1 us)
            return g[name]
        return getattr(builtins, name, _MISSING)

    def is_closure(self, name: str) -> bool:
        return name in self.cells

    def resolve(self, name: str) -> Resolved | None:
        value = self.lookup(name)
        if value is _MISSING:
            return None
        return classify(value)


def classify(value: Any) -> Resolved:
    from . import rules

    if isinstance(value, types.ModuleType):
        return Resolved("module", value)
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return Resolved("constant", value)
    if isinstance(value, tuple) and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in value):
        return Resolved("tuple", value)
    if isinstance(value, np.ndarray):
        return Resolved("array", value)
    rule = rules.user_rule(value)
    if rule is not None:
        return Resolved("user_rule", rule)
    try:
        prim = rules.python_callables().get(value)
    except TypeError:  # unhashable
        prim = None
    if prim is not None:
        return Resolved("primitive", prim)
    if getattr(value, "__module__", "") and str(getattr(value, "__module__", "")).startswith("s2sad"):
        return Resolved("s2sad", value)
    if isinstance(value, types.FunctionType):
        return Resolved("function", value)
    if isinstance(value, (list, dict, set)):
        return Resolved("container", value)
    return Resolved("unknown", value)


def attribute_value(resolver: Resolver, node: gast.AST) -> Any:
    """The value of a dotted name `a.b.c` made of module attributes; _MISSING if not one."""
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, gast.Name):
        return _MISSING
    value = resolver.lookup(node.id)
    for attr in reversed(parts):
        if not isinstance(value, types.ModuleType) and value is not np:
            return _MISSING
        value = getattr(value, attr, _MISSING)
        if value is _MISSING:
            return _MISSING
    return value


MISSING = _MISSING
CONSTANT_ATTRS = {math.pi: "pi", math.e: "e"}

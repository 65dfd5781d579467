"""Python function -> gast tree, with free names resolved and a source map.

Invariants of what this module hands on:
- `parse_function(fn)` returns a `ParsedFunction` whose `node` is the function's own
  `FunctionDef` or `Lambda`, taken from a parse of the *whole* file, so every node's
  lineno/col_offset are the file's (errors quote them directly).
- The node is the source of the code Python runs: `sourcecheck.matches` compares the
  text's compiled code with `fn.__code__` (once per code object); a text that is not the
  running code is refused with StaleSourceError, never differentiated.
- `Resolver.resolve(name)` looks a free name up the way Python would at call time
  (closure cells, then globals, then builtins) and classifies its value; it never
  evaluates user code.
- Nothing here keeps a user's function, its globals or its closure's values alive: a
  Resolver holds its function by a weak reference and reads cells and globals when
  asked. While `bound(fn)` is active in a thread, the resolvers of fn's code read fn
  (a new closure of planned code, the training-loop pattern, reuses its plan).
- Free-name recording is per thread (`recording`), so plans made in parallel threads
  each record their own names; `attribute_value` records a dotted module name's value
  (`np.tanh`) too, so the plan's Assumptions (assumptions.py) notice a monkeypatch.
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import linecache
import math
import threading
import types
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import gast
import numpy as np

from . import forwarders, marks, rules, sourcecheck
from .assumptions import MISSING as _MISSING, Assumptions  # noqa: F401 (Assumptions: the plans' import)
from .deep import check_nesting, deep_recursion
from .errors import NoSourceError, S2SADError, SourceLocation, StaleSourceError, UnsupportedSyntaxError
from .parsing import ast_parse


class ParsedFunction:
    """A function's tree, file and resolver; `fn` is read through the resolver (weakly
    held, or the function bound in this thread), never kept."""

    def __init__(self, fn: Callable, node: gast.FunctionDef | gast.Lambda, filename: str,
                 resolver: "Resolver") -> None:
        self.node, self.filename, self.resolver = node, filename, resolver

    @property
    def fn(self) -> Callable:
        return self.resolver.fn

    @property
    def name(self) -> str:
        if isinstance(self.node, gast.Lambda):
            return f"lambda_{self.node.lineno}"
        return self.node.name

    def location(self, node: gast.AST | None = None) -> SourceLocation:
        return location_of(self.filename, node if node is not None else self.node)


def location_of(filename: str, node: gast.AST) -> SourceLocation:
    return SourceLocation(filename, getattr(node, "lineno", 0) or 0, getattr(node, "col_offset", 0) or 0)


def source_line(filename: str, node: gast.AST) -> str:
    """The text of the line `node` starts on, stripped ("" where there is none)."""
    return linecache.getline(filename, getattr(node, "lineno", 0) or 0).strip()


# the folder that holds the s2sad package (the project's checkout, for its examples and tests)
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def shown_location(loc: SourceLocation) -> str:
    """`loc` as generated derivative source shows it: relative to PROJECT_ROOT when the
    file is under it, so that text made from the project's own examples is the same in
    every checkout."""
    s = str(loc)
    root = str(PROJECT_ROOT) + "/"
    return s[len(root):] if s.startswith(root) else s


_FILE_TREES: dict[tuple[str, str], ast.Module] = {}
_NODES: dict[tuple[int, int], gast.AST] = {}  # (id of the file's tree, id of the ast node) -> gast


def _file_tree(filename: str) -> tuple[ast.Module, str] | None:
    """The file's tree and text, parsed once per content with the (fast, C) ast parser;
    only the functions s2sad differentiates are converted to gast (see _find_node)."""
    lines = linecache.getlines(filename)
    if not lines:
        return None
    text = "".join(lines)
    key = (filename, hashlib.sha1(text.encode()).hexdigest())
    tree = _FILE_TREES.get(key)
    if tree is None:
        try:
            with deep_recursion():  # a long sum is a deep tree
                tree = ast_parse(text)
        except SyntaxError:
            return None
        _FILE_TREES[key] = tree
    return tree, text


def has_source(fn: Callable) -> bool:
    return isinstance(fn, types.FunctionType) and _find_node(fn) is not None


# code object -> its checked gast node: the check and the search run once per code
_NODE_OF: "weakref.WeakKeyDictionary[types.CodeType, gast.AST]" = weakref.WeakKeyDictionary()


def _find_node(fn: types.FunctionType) -> gast.AST | None:
    """fn's node in its file's text, checked to be the code that runs; None when the
    file has no text or no such node; StaleSourceError when the text is not fn's code
    (linecache's text refreshed from disk first, in case only it was old)."""
    code = fn.__code__
    node = _NODE_OF.get(code)
    if node is not None:
        return node
    filename = code.co_filename
    found = None
    for attempt in range(2):
        got = _file_tree(filename)
        if got is not None:
            tree, text = got
            found = _find_ast_node(fn, tree)
            if found is not None and (sourcecheck.matches(code, text, filename) or _has_assert(found)):
                key = (id(tree), id(found))
                if key not in _NODES:
                    check_nesting(found, filename)
                    with deep_recursion():
                        _NODES[key] = gast.ast_to_gast(found)
                _NODE_OF[code] = _NODES[key]
                return _NODES[key]
        if attempt == 0:
            linecache.checkcache(filename)
    if found is None:
        return None
    raise StaleSourceError(
        f"the source of '{fn.__qualname__}' in {filename} is not the code Python runs: the file "
        "changed after it was imported (or the function's code was replaced), and s2sad will not "
        "differentiate text that does not run",
        SourceLocation(filename, code.co_firstlineno, 0),
        hint="Reload the module (importlib.reload) or restart, so that Python runs what the file says.")


def _has_assert(node: ast.AST) -> bool:
    """An `assert` in the function: pytest rewrites asserts in the modules it imports, so
    their code is not the text's; such a function is refused as unsupported syntax later."""
    return any(isinstance(n, ast.Assert) for n in ast.walk(node))


def _find_ast_node(fn: types.FunctionType, tree: ast.Module) -> ast.AST | None:
    code = fn.__code__
    first = code.co_firstlineno
    argnames = list(code.co_varnames[: code.co_argcount])
    # the code's own name and line, not fn.__name__: the code is what runs (functools.wraps
    # rewrites __name__; a swapped __code__ keeps the function's old name)
    if code.co_name == "<lambda>":
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
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == code.co_name:
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
    """Find and parse `fn`'s source; NoSourceError (OPAQUE) when there is none.
    The source is `fn`'s own code, never what a decorator wraps (no inspect.unwrap: a
    user's decorator is code to differentiate); an @s2sad.differentiate object stands
    for its function; a derivative s2sad made is refused (HigherOrderNotSupportedError)."""
    mark = marks.derivative_mark(fn)
    if mark is not None:
        raise marks.higher_order_error(mark, used_at)
    fn = marks.user_function_of(fn) or forwarded(fn) or fn
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


_FORWARDED: "weakref.WeakKeyDictionary[types.FunctionType, tuple]" = weakref.WeakKeyDictionary()


def forwarded(fn: Any) -> types.FunctionType | None:
    """A decorator's forwarding wrapper (`def wrapper(*args, **kwargs): return
    fn(*args, **kwargs)`) spelled out with its callee's parameters (forwarders.py), or
    None. Made again when the callee's name holds another function."""
    if type(fn) is not types.FunctionType or not fn.__code__.co_flags & (0x04 | 0x08):  # *args, **kwargs
        return None
    got = _FORWARDED.get(fn)
    resolver = Resolver(fn)
    if got is None or resolver.current(got[0]) is not got[1]:
        node = _find_node(fn)
        got = forwarders.expand(fn, node, resolver.current, forwarded) if node is not None else None
        if got is None:
            return None
        _FORWARDED[fn] = got
    return got[2]


# ---------------------------------------------------------------- free names

# ---------------------------------------------------------------- assumptions

_LOCAL = threading.local()   # .recording: this thread's stack of logs; .root: (code, fn) bound


def _recording_stack() -> list:
    stack = getattr(_LOCAL, "recording", None)
    if stack is None:
        stack = _LOCAL.recording = []
    return stack


class recording:
    """`with recording() as log:` collects every free-name lookup made inside."""

    def __enter__(self) -> list:
        stack = _recording_stack()
        stack.append([])
        return stack[-1]

    def __exit__(self, *exc) -> None:
        _recording_stack().pop()


class bound:
    """`with bound(fn):` the resolvers of fn's code read fn in this thread (its closure
    cells and globals): a plan made for another closure of the same code runs on fn's
    values. Holds fn only while active."""

    __slots__ = ("fn", "prev")

    def __init__(self, fn) -> None:
        self.fn = fn

    def __enter__(self):
        self.prev = getattr(_LOCAL, "root", None)
        _LOCAL.root = (getattr(self.fn, "__code__", None), self.fn)
        return self.fn

    def __exit__(self, *exc) -> None:
        _LOCAL.root = self.prev


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




class Resolver:
    """Looks up free names of one Python function as Python would when it runs.

    The function is held weakly; while `bound(g)` is active for a function g of the same
    code, g is read instead (its cells and globals), so a plan made for one closure runs
    on another's values."""

    def __init__(self, fn: types.FunctionType, extra: dict[str, Any] | None = None):
        self.code = fn.__code__
        self.freevars = fn.__code__.co_freevars
        self.extra: dict[str, Any] = dict(extra or {})
        self._ref = weakref.ref(fn)

    @property
    def fn(self) -> types.FunctionType:
        root = getattr(_LOCAL, "root", None)
        if root is not None and root[0] is self.code:
            return root[1]
        fn = self._ref()
        if fn is None:
            raise S2SADError(f"s2sad lost the function '{self.code.co_name}' a plan reads",
                             hint="This is a bug in s2sad: please report it with the code that called it.")
        return fn

    @property
    def cells(self) -> dict[str, Any]:
        """The closure's values now (and the fixed `extra` ones), by name."""
        out = dict(self.extra)
        fn = self.fn
        for name, cell in zip(self.freevars, fn.__closure__ or ()):
            try:
                out[name] = cell.cell_contents
            except ValueError:  # empty cell
                pass
        return out

    def cell(self, name: str):
        """The closure cell of a free variable (for nonlocal state), or None."""
        if name not in self.freevars:
            return None
        closure = self.fn.__closure__
        return closure[self.freevars.index(name)] if closure else None

    def _cell_value(self, fn, name: str) -> Any:
        if name in self.freevars and fn.__closure__:
            try:
                return fn.__closure__[self.freevars.index(name)].cell_contents
            except ValueError:
                pass
        return _MISSING

    def lookup(self, name: str) -> Any:
        fn = self.fn
        value = self._cell_value(fn, name)
        if value is _MISSING:
            if name in self.extra:
                value = self.extra[name]
            elif name in fn.__globals__:
                value = fn.__globals__[name]
            else:
                return getattr(builtins, name, _MISSING)
        stack = getattr(_LOCAL, "recording", None)
        if stack:
            stack[-1].append((self, name, value))
        return value

    def record(self, path: tuple, value: Any) -> None:
        """Record what the dotted name `path` (("np", "tanh")) resolved to, as lookup
        records a name: a plan that compiled it in is planned again when it changes."""
        stack = getattr(_LOCAL, "recording", None)
        if stack:
            stack[-1].append((self, path, value))

    def function_now(self):
        """The function whose names this resolves now (the call's own while it is the
        root being called), or None when it is gone."""
        root = getattr(_LOCAL, "root", None)
        return root[1] if root is not None and root[0] is self.code else self._ref()

    def is_plain_global(self, name: str) -> bool:
        """Does `name` resolve through the function's globals (then builtins) alone?"""
        return name not in self.freevars and name not in self.extra

    def current(self, name: str) -> Any:
        """The name's value now, without recording (_MISSING when its function is gone)."""
        fn = self.function_now()
        if fn is None:
            return _MISSING
        if name in self.freevars and fn.__closure__:
            try:
                return fn.__closure__[self.freevars.index(name)].cell_contents
            except ValueError:
                return _MISSING
        if name in self.extra:
            return self.extra[name]
        g = fn.__globals__
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
    # s2sad's own functions by its marks (functools.wraps copies __module__): a derivative
    # is a "function" whose parse refuses it; a @differentiate object is its user function
    if marks.derivative_mark(value) is not None:
        return Resolved("function", value)
    inner = marks.user_function_of(value) or forwarded(value)
    if inner is not None:
        return Resolved("function", inner)
    if isinstance(value, types.FunctionType) and value.__module__ == "s2sad.special":
        return Resolved("function", value)   # a helper of the special functions' kernel source
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
    if parts and not isinstance(value, types.ModuleType):
        resolver.record((node.id, *reversed(parts)), value)     # (a plan's assumption: Assumptions)
    return value


MISSING = _MISSING
CONSTANT_ATTRS = {math.pi: "pi", math.e: "e"}

"""Deep trees: Python's recursion limit raised, with a bound, while s2sad walks them.

Python's parser, gast's conversion, s2sad's passes and code generators all walk trees
recursively, a few Python frames per level. A sum of 250 terms `a + b + ...` is a chain
of BinOps 250 deep and an `if`/`elif` chain of 500 arms nests 500 Ifs: past Python's
default limit of 1,000 frames. So:

- `deep_recursion()` raises the limit to at least FRAME_LIMIT for the code inside it (the
  limit is process-wide, as Python's is: it is raised when the first thread enters and
  put back when the last one leaves, unless someone else changed it meanwhile). Python
  >= 3.11 keeps Python-to-Python calls off the C stack, so the frames cost heap memory,
  not C stack; on 3.10 they take C stack, and both bounds are lower.
- `check_nesting(tree, filename)` refuses, with a located UnsupportedSyntaxError, a
  function nested deeper than MAX_NESTING levels (a 6,000-term sum written as one
  expression), before any recursive walk; it walks iteratively.
- `deeply(fn)` wraps s2sad's entry points: a call that hits the limit is run again
  inside deep_recursion(); `refuse_recursion(fun)` is the located refusal for a
  RecursionError that escapes even then.

Invariant: no RecursionError leaves s2sad; within MAX_NESTING a program is planned.
"""
from __future__ import annotations

import ast
import functools
import sys
import threading
from contextlib import contextmanager
from typing import Any

from .errors import SourceLocation, UnsupportedSyntaxError
from .locks import ForkSafeLock

if sys.version_info >= (3, 11):
    MAX_NESTING = 6_000       # levels of nested expressions/statements s2sad plans
    FRAME_LIMIT = 200_000     # Python frames allowed while planning (about 30 per level)
else:   # before 3.11 every Python frame also takes C stack: stay well inside 8 MB
    MAX_NESTING = 1_000
    FRAME_LIMIT = 16_000

_lock = ForkSafeLock()
_inside = 0               # threads inside deep_recursion()
_saved: int | None = None  # the limit before the first of them entered


@contextmanager
def deep_recursion():
    global _inside, _saved
    with _lock:
        if _inside == 0 and sys.getrecursionlimit() < FRAME_LIMIT:
            _saved = sys.getrecursionlimit()
            sys.setrecursionlimit(FRAME_LIMIT)
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0 and _saved is not None:
                if sys.getrecursionlimit() == FRAME_LIMIT:  # nobody else changed it meanwhile
                    sys.setrecursionlimit(_saved)
                _saved = None


def nesting_depth(tree: ast.AST) -> tuple[int, ast.AST]:
    """The deepest nesting in `tree` and the deepest node with a source position
    (operators and contexts have none) (iterative)."""
    deepest, at, at_depth = 0, tree, 0
    stack = [(tree, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if d > at_depth and hasattr(node, "lineno"):
            at, at_depth = node, d
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(node))
    return deepest, at


def check_nesting(tree: ast.AST, filename: str) -> None:
    depth, node = nesting_depth(tree)
    if depth > MAX_NESTING:
        where = SourceLocation(filename, getattr(node, "lineno", 0) or getattr(tree, "lineno", 0) or 0,
                               getattr(node, "col_offset", 0) or 0)
        raise UnsupportedSyntaxError(
            f"this function nests {depth} levels deep (a sum of that many terms, or an if/elif "
            f"chain of that many arms); s2sad plans up to {MAX_NESTING}", where,
            hint="Split the expression into partial sums assigned to variables (s = a + b; "
                 "s = s + c ...), or the chain into a loop over a tuple of constants.")


def refuse_recursion(fun: Any) -> UnsupportedSyntaxError:
    """The located refusal for a RecursionError escaping the planning of `fun`."""
    code = getattr(getattr(fun, "fun", fun), "__code__", None)
    where = SourceLocation(code.co_filename, code.co_firstlineno, 0) if code is not None else None
    return UnsupportedSyntaxError(
        "this function is nested too deeply for s2sad to plan (Python's recursion limit was reached "
        f"at {FRAME_LIMIT} frames)", where,
        hint="Split long expressions into partial sums assigned to variables, and long if/elif "
             "chains into loops.")


class _Local(threading.local):
    deep = False   # this thread runs inside deeply's second try (a class default: no AttributeError)


_local = _Local()


def deeply(fn):
    """`fn` run as is, and if a deep tree made it hit the recursion limit, once more
    inside deep_recursion() (planning writes its caches only when it succeeds, so the
    first try leaves nothing behind); a RecursionError then is the located refusal
    (located at the first function among the arguments, or at `self.fun`). The common
    call, planned already, costs a try block: no lock, no change of the limit."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if _local.deep:
            return fn(*args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            pass
        _local.deep = True
        try:
            with deep_recursion():
                return fn(*args, **kwargs)
        except RecursionError:
            fun = next((a for a in args if callable(a) or hasattr(a, "fun")), None)
            raise refuse_recursion(fun) from None
        finally:
            _local.deep = False
    return run

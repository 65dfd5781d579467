"""Is the source text s2sad read for a function the code Python runs?

A module's file can change after the module was imported (edited on disk, no reload),
linecache can hold an older text than the module's code (reloaded, cache not
refreshed), and `f.__code__` can be swapped (IPython's autoreload). Differentiating a
text that is not the running code gives a wrong gradient with no error, so the
frontend asks `matches(code, text, filename)` before it uses a function's source.

How: the whole text is compiled as Python would compile the module (the same future
flags, every nested function, lambda and class body in place, so closures, decorators
and `from __future__ import annotations` come out as they did at import), and the code
objects it makes are compared with the function's: bytecode, constants (nested code
objects recursively), names, variables, free and cell variables, argument counts and
the line table. Invariant: a True answer means the code that text compiles to at the
function's first line, under its name, is the function's code.

The compiled index is kept per (file, text digest, flags), at most MAX_TEXTS of them.
"""
from __future__ import annotations

import __future__
import hashlib
import types
from collections import OrderedDict

FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag

MAX_TEXTS = 64
_INDEXES: "OrderedDict[tuple, dict | None]" = OrderedDict()

_FIELDS = ("co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_argcount",
           "co_posonlyargcount", "co_kwonlyargcount", "co_name", "co_linetable", "co_firstlineno")
_FLAG_MASK = 0xFF  # CO_OPTIMIZED .. CO_NOFREE: the kind of function, not how it was compiled


def matches(code: types.CodeType, text: str, filename: str) -> bool:
    """Whether `text` compiles, at `code`'s first line and under its name, to `code`."""
    index = _index(text, filename, code.co_flags & FUTURE_FLAGS)
    if index is None:
        return False
    return any(same_code(code, c) for c in index.get((code.co_firstlineno, code.co_name), ()))


def _index(text: str, filename: str, flags: int) -> dict | None:
    """(first line, name) -> the code objects the text compiles to; None if it does not."""
    key = (filename, hashlib.sha1(text.encode()).hexdigest(), flags)
    if key in _INDEXES:
        _INDEXES.move_to_end(key)
        return _INDEXES[key]
    try:
        module = compile(text, filename, "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError):
        index = None
    else:
        index = {}
        stack = [module]
        while stack:
            c = stack.pop()
            index.setdefault((c.co_firstlineno, c.co_name), []).append(c)
            stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    _INDEXES[key] = index
    while len(_INDEXES) > MAX_TEXTS:
        _INDEXES.popitem(last=False)
    return index


def same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """Two code objects that run the same instructions on the same constants and names."""
    if any(getattr(a, f) != getattr(b, f) for f in _FIELDS):
        return False
    if (a.co_flags & _FLAG_MASK) != (b.co_flags & _FLAG_MASK):
        return False
    return len(a.co_consts) == len(b.co_consts) and all(
        _same_constant(x, y) for x, y in zip(a.co_consts, b.co_consts))


def _same_constant(x, y) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, types.CodeType):
        return same_code(x, y)
    if isinstance(x, (tuple, frozenset)):
        if isinstance(x, frozenset):
            return x == y
        return len(x) == len(y) and all(_same_constant(p, q) for p, q in zip(x, y))
    if isinstance(x, (float, complex)):
        return repr(x) == repr(y)   # 0.0 is not -0.0; nan is nan
    return x == y

"""Calls that write into an operand in place, refused where an array program would run
them as plain Python (arrayprog.py's `py_stmt`: data computed as written).

A data statement runs the user's call as it is, on the arrays it names: `y = b.fill(0.0)`
or `z = np.exp(b, out=b)` wrote into the caller's own argument `b` (s2sad never changes
its arguments), and one whose value is never read (`y` above) was dropped as dead code
in some derivatives and run in others: the value and the gradient were another
function's. These are refused, located, with what to write instead.

Invariant: `inplace_write(call, value)` names the in-place write of every call it is
given that numpy documents as one (an `out=` keyword, a ufunc's positional outputs, a
ufunc's `.at`, numpy's in-place functions, an array's or a list's mutating methods);
None for anything else (a pure call keeps running as written).
"""
from __future__ import annotations

from typing import Any

import gast
import numpy as np

# numpy functions that write into their first operand
_NUMPY_INPLACE = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "shuffle"})
# methods that change their object: arrays' (ndarray), lists' and the in-place operators'
_METHODS = frozenset({"fill", "sort", "partition", "resize", "put", "itemset", "setfield", "setflags", "byteswap",
                      "__setitem__", "__delitem__", "append", "extend", "insert", "pop", "remove", "clear",
                      "reverse", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
                      "__ipow__", "__imatmul__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"})


def inplace_write(call: gast.Call, value: Any, method: str | None) -> str | None:
    """What `call` writes in place ("out=", "its output operands", "np.add.at", "np.copyto",
    ".fill()"...), or None. `value`: the object the call resolves to (or None where it is
    a method of a local value); `method`: the attribute called on a local value."""
    if any(k.arg == "out" and not (isinstance(k.value, gast.Constant) and k.value.value is None) for k in call.keywords):
        return "out="
    if isinstance(value, np.ufunc) and len(call.args) > value.nin:
        return f"np.{value.__name__}'s output operand"
    owner = getattr(value, "__self__", None)
    name = getattr(value, "__name__", None)
    if isinstance(owner, np.ufunc) and name == "at":
        return f"np.{owner.__name__}.at"
    if value is not None and name in _NUMPY_INPLACE and getattr(np, name, None) is value \
            or name == "shuffle" and getattr(np.random, "shuffle", None) is value:
        return f"np.{'random.' if name == 'shuffle' else ''}{name}"
    if method in _METHODS:
        return f".{method}()"
    return None

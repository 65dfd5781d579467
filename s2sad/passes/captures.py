"""Captured values: numbers a scalar function reads from outside its arguments.

`y[0]` of a differentiated argument of the loss (read by a lambda or local def), or an
element of a free array, list or dict (data), becomes a `Capture`: an extra kernel
parameter whose value is read just before the kernel runs. Captures pass upwards
through callers (each caller captures the same value and passes it down) up to the
entry, whose trailing parameters carry them. The partial of the loss w.r.t. a captured
differentiated element is computed in the kernel like any other and scattered back to
where it was read (plans.Compiled.per_argument).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import gast
import numpy as np

from ..errors import FreeVariableError, SourceLocation
from ..frontend import Resolver, location_of
from .trees import constant_index, dotted, name


@dataclass(frozen=True)
class Capture:
    """A value a scalar function reads from outside its arguments: `base[index]` (or
    `base` itself when index is ()), evaluated before the kernel runs and passed in as
    the extra parameter `param`. origin "param": `base` is a parameter of the entry
    (a differentiated value, whose gradient is scattered back to where it was read);
    "free": a free name holding data (an array, list or number)."""

    origin: str
    base: str
    index: tuple[int, ...]
    param: str
    location: SourceLocation
    resolver: Resolver | None = field(default=None, compare=False, repr=False)  # for "free"

    def key(self) -> tuple:
        return (self.origin, self.base, self.index)

    def read(self, value=None):
        """The captured number, from the base's value (looked up now for "free")."""
        if value is None:
            value = self.resolver.lookup(self.base)
        for i in self.index:
            value = value[i]
        return value




class CaptureMixin:
    """Normalizer methods for captured values (see Normalizer for `err` and scopes)."""

    def captured_element(self, e: gast.Subscript, base: str, scope) -> gast.expr | None:
        """`y[0]` of a differentiated value or of data outside the function, as a capture."""
        if base in scope.locals:
            if base not in scope.capturable:
                return None
            origin = "param"
        elif base in self.local_data:
            raise self.err(scope, e, f"'{base}' is a local container of the loss that is read but never "
                           "written here", "Pass its values as arguments instead.", FreeVariableError)
        else:
            r = scope.resolver.resolve(base)
            if r is None or r.kind not in ("array", "container"):
                return None
            origin = "free"
        index = constant_index(e.slice)
        if index is None:
            raise self.err(scope, e, f"'{base}' is indexed with a value computed per element",
                           "Read elements of captured arrays at constant positions (y[0]); pass arrays "
                           "that vary per element as arguments of s2sad.broadcast.", FreeVariableError)
        if origin == "free":
            try:
                v = Capture(origin, base, index, "", None).read(scope.resolver.lookup(base))
                ok = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
            except (IndexError, KeyError, TypeError):
                ok = False
            if not ok:
                raise self.err(scope, e, f"'{dotted(e.value)}{list(index)}' is not a number",
                               "Index down to a single number.", FreeVariableError)
        return name(self.capture(scope, origin, base, index, e))

    def capture(self, scope, origin: str, base: str, index: tuple[int, ...], node,
                location: SourceLocation | None = None, resolver: Resolver | None = None) -> str:
        """The parameter of this function that carries `base[index]`, added once;
        `location` is where the user's code reads it (kept as captures pass upwards)."""
        for c in scope.captures:
            if c.key() == (origin, base, index):
                return c.param
        suffix = "_".join(str(i) if i >= 0 else f"m{-i}" for i in index)
        param = f"{base}_{suffix}" if suffix else base
        while param in scope.locals:
            param += "_"
        scope.locals.add(param)
        scope.captures.append(Capture(origin, base, index, param, location or location_of(scope.filename, node),
                                      resolver or scope.resolver))
        return param

    def pass_captures(self, caps: list[Capture], scope, node, _unused) -> list[gast.expr]:
        """Arguments for a callee's capture params: the caller captures the same values."""
        args = []
        for c in caps:
            if c.origin == "free":
                args.append(name(self.capture(scope, "free", c.base, c.index, node, c.location, c.resolver)))
            elif c.base in scope.capturable:
                args.append(name(self.capture(scope, "param", c.base, c.index, node, c.location)))
            else:
                raise self.err(scope, node, f"'{c.base}{list(c.index)}' is read from a local variable of "
                               "an enclosing scalar function", "Pass the value as an argument.",
                               FreeVariableError)
        return args

"""Op builders that refuse what they do not know: a keyword the entry does not list,
a required static parameter left out, a string parameter that is not a literal.

An entry's `op` receives its static parameters by name (positional ones under the
entry's `statics` names, keywords as written). A builder that swallowed unknown
keywords (`**_`) would differentiate np.take(x, i, mode="clip") as if mode were absent;
`strict` raises prim.StaticRefusal instead, which the passes locate at the call.
"""
from __future__ import annotations

from typing import Callable

import gast

from .prim import StaticRefusal


def strict(make: Callable, names: tuple[str, ...], required: tuple[str, ...] = ()) -> Callable:
    """The builder `make(**p)` for parameters among `names`, with `required` present."""
    def build(**p):
        for k in p:
            if k not in names:
                raise StaticRefusal(f"is called with '{k}=', which s2sad does not differentiate through",
                                    f"Leave '{k}=' out (s2sad knows {', '.join(names) or 'no parameters'} here), "
                                    "or register a rule with s2sad.defvjp.")
        for k in required:
            if k not in p:
                raise StaticRefusal(f"needs its '{k}' argument", f"Pass '{k}' as numpy documents it.")
        return make(**p)
    return build


def literal_string(v, allowed: tuple[str, ...], what: str) -> str | None:
    """The value of a literal string parameter among `allowed` (None when absent)."""
    if v is None:
        return None
    if isinstance(v, gast.Constant) and v.value in allowed:
        return v.value
    raise StaticRefusal(f"is called with a {what} s2sad does not differentiate through (it knows "
                        f"{', '.join(repr(a) for a in allowed)}, written as a literal string)",
                        f"Pass {what} as one of {', '.join(repr(a) for a in allowed)}.")


def is_number_literal(v) -> bool:
    """A number written in the source (or a tuple/list of them, signs allowed)."""
    if isinstance(v, gast.Constant):
        return isinstance(v.value, (int, float)) and not isinstance(v.value, bool)
    if isinstance(v, gast.UnaryOp) and isinstance(v.op, (gast.USub, gast.UAdd)):
        return is_number_literal(v.operand)
    if isinstance(v, (gast.Tuple, gast.List)):
        return all(is_number_literal(e) for e in v.elts)
    return False

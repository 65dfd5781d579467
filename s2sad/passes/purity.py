"""The purity test: which path an elementwise site's function can take.

For a scalar function used elementwise (and every user function it calls, whose
verdicts join the caller's), read its source and decide:

    PURE      reads only its arguments, numbers and functions      -> path "dual"
    CLOSURE   reads free values that are arrays or containers      -> path "dual+closure"
    STATEFUL  writes global/nonlocal state or into a captured container -> path "scan"
    OPAQUE    no source and no rule                                 -> error

Each verdict carries the line and the reason that decided it (the first write for
STATEFUL, the captured names and where each is read for CLOSURE). The verdict is
exact for what the source says: a write hidden behind a call is found by looking at
the callee's source, and a call with no source and no rule is OPAQUE, never assumed
pure.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field

import gast

from .. import marks
from ..errors import SourceLocation
from ..frontend import MISSING, classify, location_of, parse_function
from ..nested import is_taken_again

ORDER = {"PURE": 0, "CLOSURE": 1, "STATEFUL": 2}
PATHS = {"PURE": "dual", "CLOSURE": "dual+closure", "STATEFUL": "scan"}


@dataclass
class Verdict:
    kind: str                       # PURE | CLOSURE | STATEFUL
    reason: str
    location: SourceLocation | None = None
    captured: list[tuple[str, str]] = field(default_factory=list)  # (name, where read)

    @property
    def path(self) -> str:
        return PATHS[self.kind]


def classify_function(fn, used_at: SourceLocation | None = None, _seen: set | None = None) -> Verdict:
    seen = _seen if _seen is not None else set()
    if id(fn) in seen:
        return Verdict("PURE", "recursive reference")
    seen.add(id(fn))
    mark = marks.derivative_mark(fn)
    if mark is not None:     # a derivative s2sad made: its function's verdict (normderiv.py)
        return _derivative_verdict(mark, used_at, seen)
    pf = parse_function(fn, used_at)
    node = pf.node
    params = {a.id for a in node.args.args}
    local: set[str] = set(params)
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Param)):
            local.add(n.id)
        if isinstance(n, (gast.FunctionDef, gast.Lambda)) and n is not node:
            if isinstance(n, gast.FunctionDef):
                local.add(n.name)
            local |= {a.id for a in n.args.args}
    verdict = Verdict("PURE", "pure: reads only its arguments, numbers and functions")
    declared: set[str] = set()
    for n in gast.walk(node):
        if isinstance(n, (gast.Global, gast.Nonlocal)):
            declared |= set(n.names)
    for n in gast.walk(node):
        loc = location_of(pf.filename, n)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and n.id in declared:
            kw = "global" if n.id in pf.fn.__globals__ and n.id not in pf.resolver.cells else "nonlocal"
            return Verdict("STATEFUL", f"writes the {kw} '{n.id}' at {loc}", loc)
        if isinstance(n, (gast.Subscript, gast.Attribute)) and isinstance(n.ctx, gast.Store):
            base = n.value
            while isinstance(base, (gast.Subscript, gast.Attribute)):
                base = base.value
            if isinstance(base, gast.Name):
                return Verdict("STATEFUL", f"writes into '{base.id}' at {loc}", loc)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id not in local:
            value = pf.resolver.lookup(n.id)
            if value is MISSING:
                continue
            r = classify(value)
            kind, value = r.kind, (r.value if r.kind == "function" else value)  # (an @differentiate's function)
            if kind in ("array", "container"):
                if verdict.kind == "PURE":
                    verdict = Verdict("CLOSURE", "", loc)
                verdict.captured.append((n.id, str(loc)))
            elif kind == "function" and isinstance(value, types.FunctionType):
                sub = classify_function(value, loc, seen)
                if ORDER[sub.kind] > ORDER[verdict.kind]:
                    if sub.kind == "STATEFUL":
                        return Verdict("STATEFUL", f"calls '{n.id}', which {sub.reason}", sub.location)
                    verdict = Verdict(sub.kind, "", sub.location, list(sub.captured))
                elif sub.kind == "CLOSURE":
                    verdict.captured += sub.captured
    if verdict.kind == "CLOSURE":
        names = ", ".join(f"{n} (read at {w})" for n, w in verdict.captured)
        verdict.reason = f"closure: reads free values {names}"
    return verdict


def _derivative_verdict(mark: marks.DerivativeMark, used_at: SourceLocation | None, seen: set) -> Verdict:
    """A derivative s2sad made, applied elementwise: the path of its function, whose
    dual program it runs (nested duals when differentiated again)."""
    if not is_taken_again(mark):
        raise marks.higher_order_error(mark, used_at, "a pullback has no program s2sad can differentiate again")
    sub = classify_function(mark.derivative.fun, used_at, seen)
    reason = f"{mark.describe()}, a derivative s2sad made: its forward dual program is the helper ({sub.reason})"
    return Verdict(sub.kind, reason, sub.location, list(sub.captured))

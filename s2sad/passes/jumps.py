"""`break`, `continue` and early `return` at the array level -> flags, before the
array-program builder lowers a function body (passes/arrayprog.Builder.function_body).

The rewrite is on the user's tree (gast) and keeps Python's meaning:

    break            ->  broke = True                  (broke = False before the loop)
    continue         ->  skipped = True                (skipped = False at the top of the body)
    return v         ->  result = v; returned = True   (and every enclosing loop's broke = True)

and the statements after one that may jump run under `if not (flags):`; the body ends
with its one `return result`. A loop whose body may leave it gets `s2sad_stop`, the
name of its flag: the builder ends the loop when the flag is set at the end of an
iteration (ForStmt.stop). So the builder sees only `if`s and loops, and the tape of
each loop records the path taken: its iterations, and each `if`'s test.

Invariants: names added are fresh (not used anywhere in the function); a body that
does not return on every path is left as it is (the builder refuses it); nested
function definitions are not entered (their jumps are their own).
"""
from __future__ import annotations

import gast

from .trees import definitely_returns


def _walk(node, into_loops: bool):
    """The nodes under `node`, not entering nested functions (nor loops, unless asked)."""
    for child in gast.iter_child_nodes(node):
        if isinstance(child, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        yield child
        if into_loops or not isinstance(child, (gast.For, gast.While)):
            yield from _walk(child, into_loops)


def _has(node, kinds, into_loops: bool) -> bool:
    if isinstance(node, (gast.FunctionDef, gast.Lambda, gast.ClassDef)):
        return False
    if isinstance(node, kinds):
        return True
    return any(isinstance(n, kinds) for n in _walk(node, into_loops))


def _loop_jumps(s) -> bool:
    """A break or continue of this block's loop (not of a loop nested in it)."""
    return _has(s, (gast.Break, gast.Continue), into_loops=False)


def _returns(s) -> bool:
    return _has(s, gast.Return, into_loops=True)


def needs_rewrite(body) -> bool:
    if any(_returns(s) for s in body[:-1]) or not isinstance(body[-1], gast.Return):
        return True
    return any(_has(s, (gast.Break, gast.Continue), into_loops=True) for s in body)


def _name(nm: str, store: bool = False):
    return gast.Name(id=nm, ctx=gast.Store() if store else gast.Load(), annotation=None, type_comment=None)


def _located(node, like):
    """`node` and the nodes made under it without a place: at `like`'s (errors locate them)."""
    for n in gast.walk(node):
        if getattr(n, "lineno", None) is None and getattr(like, "lineno", None) is not None:
            gast.copy_location(n, like)
    return node


def _set(nm: str, value, like):
    value = gast.Constant(value=value, kind=None) if isinstance(value, (bool, float)) else value
    return _located(gast.Assign(targets=[_name(nm, True)], value=value, type_comment=None), like)


def _not_any(flags: list, like):
    test = _name(flags[0]) if len(flags) == 1 else gast.BoolOp(op=gast.Or(), values=[_name(f) for f in flags])
    return _located(gast.UnaryOp(op=gast.Not(), operand=test), like)


class _Rewriter:
    def __init__(self, used: set):
        self.used = used
        self.returned = self.fresh("returned")
        self.result = self.fresh("result")

    def fresh(self, base: str) -> str:
        nm, k = base, 2
        while nm in self.used:
            nm, k = f"{base}_{k}", k + 1
        self.used.add(nm)
        return nm

    def block(self, stmts, loop) -> list:
        """`loop`: (broke, skipped, enclosing broke flags) of the innermost loop, or None."""
        out: list = []
        for k, s in enumerate(stmts):
            flags = self.guard_flags(s, loop)      # before stmt rewrites the jumps in s
            out.extend(self.stmt(s, loop))
            if flags and k + 1 < len(stmts):
                rest = self.block(stmts[k + 1:], loop)
                guard = gast.If(test=_not_any(flags, stmts[k + 1]), body=rest or [gast.Pass()], orelse=[])
                out.append(_located(guard, stmts[k + 1]))
                return out
        return out

    def guard_flags(self, s, loop) -> list:
        """The flags the statements after `s` are guarded by: those s may set."""
        if loop is None:
            return [self.returned] if _returns(s) else []
        broke, skipped, _ = loop
        flags = []
        if _has(s, gast.Break, into_loops=False) or _returns(s):
            flags.append(broke)
        if _has(s, gast.Continue, into_loops=False):
            flags.append(skipped)
        return flags

    def stmt(self, s, loop) -> list:
        if isinstance(s, gast.Break):
            return [_set(loop[0], True, s)]
        if isinstance(s, gast.Continue):
            return [_set(loop[1], True, s)]
        if isinstance(s, gast.Return):
            if s.value is None:
                return [s]      # the builder refuses it, located
            out = [_set(self.result, s.value, s), _set(self.returned, True, s)]
            return out + [_set(b, True, s) for b in (loop[2] if loop else [])]
        if isinstance(s, gast.If):
            s.body = self.block(s.body, loop) or [gast.Pass()]
            s.orelse = self.block(s.orelse, loop)
            return [s]
        if isinstance(s, (gast.For, gast.While)):
            return self.loop(s, loop)
        return [s]

    def loop(self, s, outer) -> list:
        leaves = any(_loop_jumps(x) or _returns(x) for x in s.body)
        if not leaves:      # loops nested in it may still jump
            s.body = self.block(s.body, (None, None, outer[2] if outer else []))
            return [s]
        broke = self.fresh("broke")
        skipped = self.fresh("skipped")
        enclosing = (outer[2] if outer else []) + [broke]
        body = self.block(s.body, (broke, skipped, enclosing))
        s.body = [_set(skipped, False, s.body[0])] + body
        s.s2sad_stop = broke
        return [_set(broke, False, s), s]


def remove_jumps(body: list, fnode) -> list:
    """`body` (a function's statements, docstring dropped) with break, continue and
    early returns turned into flags (see the module docstring); unchanged when it has
    none, or when it does not return on every path (the builder refuses that)."""
    if not body or not needs_rewrite(body) or not definitely_returns(body):
        return body
    used = {n.id for s in body for n in gast.walk(s) if isinstance(n, gast.Name)}
    used |= {a.arg if hasattr(a, "arg") else getattr(a, "id", "") for a in fnode.args.args}
    r = _Rewriter(used)
    out = [_set(r.returned, False, body[0]), _set(r.result, 0.0, body[0])] + r.block(body, None)
    last = next((s for s in reversed(body) if isinstance(s, gast.Return)), body[-1])
    out.append(_located(gast.Return(value=_name(r.result)), last))
    return out

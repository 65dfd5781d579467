"""Two call forms of array primitives, read for primcalls.PrimCalls: "signature" (a
call bound to the entry's parameter names, some of them arrays) and "einsum" (a
subscripts string or numpy's interleaved sublists, then the arrays).

Invariants: every operand slot of a "signature" entry is filled, in the entry's
`operands` order, an absent one with the operand None (its VJP is then never asked for),
so a VJP's operand index always names the same parameter; the forward line is the
user's call with its arguments renamed, absent parameters left absent (numpy's defaults
stay numpy's); a keyword the entry does not list, and a static parameter the entry's op
refuses (its `ValueError`), is refused with the call's location (`fail(what)`: the
located error, made by primcalls).
"""
from __future__ import annotations

import ast

import gast

from ..array_prims import StaticRefusal
from ..kernel_text import unparse

from .arrayir import Const, operand_expr


def _bind(prim, e: gast.Call, fail) -> dict:
    """{parameter name: argument expression} of the call, by position then keyword."""
    names = prim.statics
    if len(e.args) > len(names):
        raise fail("is called with more positional arguments than s2sad knows for it")
    bound = dict(zip(names, e.args))
    allowed = prim.keywords if prim.keywords is not None else names
    for k in e.keywords:
        if k.arg not in allowed:
            raise fail(f"is called with '{k.arg}=', which s2sad does not differentiate "
                       f"(it takes {', '.join(allowed)})")
        if k.arg in bound:
            raise fail(f"is given '{k.arg}' twice")
        bound[k.arg] = k.value
    return bound


def _operand(b, expr, scope, fail):
    """An array operand; a literal list of numbers (np.quantile(x, [0.25, 0.75])) is a
    constant (a list holding differentiated values: np.array([...]) stacks them)."""
    if isinstance(expr, (gast.List, gast.Tuple)):
        try:
            return Const(ast.literal_eval(unparse(expr)))
        except (ValueError, SyntaxError, TypeError):
            raise fail("takes a list of values here only as literal numbers: write np.array([...]) for "
                       "computed ones") from None
    return b.array(expr, scope)


def signature_call(calls, prim, value, e: gast.Call, scope, want, fail) -> str:
    """np.percentile(x, q, axis=0), np.interp(x, xp, fp), logsumexp(a, b=w)...: the
    arrays (`prim.operands`) are operands, the rest static parameters."""
    b = calls.b
    bound = _bind(prim, e, fail)
    missing = [n for n in prim.operands[:1] if n not in bound]
    if missing:
        raise fail(f"needs its argument '{missing[0]}'")
    xs, p, reads, given = [], {}, set(), {}
    for name in prim.operands:
        x = _operand(b, bound[name], scope, fail) if name in bound else Const(None)
        xs.append(x)
        given[name] = operand_expr(x)
    for name, expr in bound.items():
        if name in prim.operands:
            continue
        p[name], rr = b.static(expr, scope)
        reads |= rr
        given[name] = p[name]
    try:
        prim.op(**p)
    except ValueError as why:
        raise fail(str(why)) from None
    except StaticRefusal as r:      # (with its own hint)
        err = fail(r.what)
        raise type(err)(err.message, err.location, hint=r.hint or err.hint) from None
    npos = len(e.args)
    fwd = gast.Call(func=b.rename(e.func, scope, set()), args=[given[n] for n in prim.statics[:npos]],
                    keywords=[gast.keyword(arg=k.arg, value=given[k.arg]) for k in e.keywords])
    return calls.emit_prim(prim, getattr(value, "__name__", b.label(e.func)), xs, p, e, scope, want, fwd, reads)


# ------------------------------------------------------------------ einsum


def _sublist_letters(node, fail) -> str:
    """numpy's interleaved sublist [0, 1, Ellipsis] -> its subscripts ('AB...'): labels
    0-25 are A-Z, 26-51 a-z, as numpy maps them."""
    if not isinstance(node, (gast.List, gast.Tuple)):
        raise fail("takes interleaved operands and sublists only when each sublist is a literal list")
    out = []
    for it in node.elts:
        if isinstance(it, gast.Constant) and it.value is Ellipsis:
            out.append("...")
        elif (isinstance(it, gast.Attribute) and it.attr == "Ellipsis") or (isinstance(it, gast.Name)
                                                                         and it.id == "Ellipsis"):
            out.append("...")
        elif isinstance(it, gast.Constant) and isinstance(it.value, int) and 0 <= it.value < 52:
            out.append(chr(ord("A") + it.value) if it.value < 26 else chr(ord("a") + it.value - 26))
        else:
            raise fail("takes sublists of literal integers 0-51 and Ellipsis only")
    return "".join(out)


def _interleaved(args, fail):
    """(subscripts, operand expressions) of einsum(a, [0, 1], b, [1, 2], [0, 2])."""
    ops, subs = args[0::2], args[1::2]
    out = None
    if len(ops) > len(subs):    # a trailing output sublist sits where an operand would
        out = ops[-1]
        ops = ops[:-1]
    spec = ",".join(_sublist_letters(s, fail) for s in subs)
    if out is not None:
        spec += "->" + _sublist_letters(out, fail)
    return spec, ops


def einsum_call(calls, prim, value, e: gast.Call, scope, want, fail) -> str:
    """np.einsum('ij,jk->ik', a, b, optimize=...), or its interleaved form (read as the
    subscripts string it stands for)."""
    b = calls.b
    for k in e.keywords:
        if k.arg != "optimize":
            raise fail(f"is called with '{k.arg}=', which s2sad does not differentiate (only optimize=)")
    if not e.args:
        raise fail("needs its subscripts and operands")
    first = e.args[0]
    is_string = isinstance(first, gast.Constant) and isinstance(first.value, str)
    if not is_string and len(e.args) >= 2 and isinstance(e.args[1], (gast.List, gast.Tuple)):
        spec, op_exprs = _interleaved(e.args, fail)
        subscripts, reads = gast.Constant(value=spec, kind=None), set()
    else:
        subscripts, reads = b.static(first, scope)
        op_exprs = e.args[1:]
    if not op_exprs:
        raise fail("needs at least one operand")
    xs = [b.array(a, scope) for a in op_exprs]
    p = {"subscripts": subscripts}
    for k in e.keywords:
        p[k.arg], rr = b.static(k.value, scope)
        reads |= rr
    fwd = gast.Call(func=b.rename(e.func, scope, set()), args=[subscripts] + [operand_expr(x) for x in xs],
                    keywords=[gast.keyword(arg=k, value=v) for k, v in p.items() if k != "subscripts"])
    return calls.emit_prim(prim, "einsum", xs, p, e, scope, want, fwd, reads)


# form name -> reader(calls, prim, value, call, scope, want, fail)
FORMS = {"signature": signature_call, "einsum": einsum_call}

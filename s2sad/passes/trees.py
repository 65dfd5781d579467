"""Small gast tree builders and queries that the passes share.

Constructors produce nodes in the core language of kernel.py (`const` writes negative
numbers as unary minus, since printers mangle `-2.0 ** 2`); the queries read user trees.
"""
from __future__ import annotations

import math

import gast
import numpy as np

from .. import rules


def name(id_: str, ctx=None) -> gast.Name:
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def const(value) -> gast.expr:
    """A numeric literal; negative numbers as unary minus (printers mangle -2.0 ** 2)."""
    if isinstance(value, (bool, np.bool_)):
        return gast.Constant(value=bool(value), kind=None)
    if isinstance(value, (np.integer,)):
        value = int(value)
    if isinstance(value, np.floating):
        value = float(value)
    if value < 0 or (isinstance(value, float) and math.copysign(1.0, value) < 0 and value == 0):
        return gast.UnaryOp(op=gast.USub(), operand=gast.Constant(value=-value, kind=None))
    return gast.Constant(value=value, kind=None)


def assign(target: str, value: gast.expr) -> gast.Assign:
    return gast.Assign(targets=[name(target, gast.Store())], value=value, type_comment=None)


def function_def(fname: str, params: list[str], body: list[gast.stmt]) -> gast.FunctionDef:
    args = gast.arguments(args=[name(p, gast.Param()) for p in params], posonlyargs=[], vararg=None,
                          kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return gast.FunctionDef(name=fname, args=args, body=body, decorator_list=[], returns=None,
                            type_comment=None, type_params=[])


def primitive_call(prim: str, args: list[gast.expr]) -> gast.expr:
    """The core-language spelling of primitive `prim` applied to `args`."""
    rule = rules.RULES[prim]
    if rule.spelling == "op":
        if prim in ("neg", "pos", "not"):
            op = {"neg": gast.USub, "pos": gast.UAdd, "not": gast.Not}[prim]()
            return gast.UnaryOp(op=op, operand=args[0])
        for cls, p in rules.BINOPS.items():
            if p == prim:
                return gast.BinOp(left=args[0], op=cls(), right=args[1])
        for cls, p in rules.CMPOPS.items():
            if p == prim:
                return gast.Compare(left=args[0], ops=[cls()], comparators=[args[1]])
        raise AssertionError(prim)
    if rule.spelling == "builtin":
        return gast.Call(func=name(prim), args=args, keywords=[])
    return gast.Call(func=gast.Attribute(value=name("math"), attr=prim, ctx=gast.Load()), args=args, keywords=[])


def assigned_names(body: list[gast.stmt]) -> set[str]:
    """Names a function body binds (its locals), not looking into nested functions."""
    out: set[str] = set()
    stack = list(body)   # iterative: a long sum is a deep tree
    while stack:
        node = stack.pop()
        if isinstance(node, (gast.FunctionDef, gast.Lambda)):
            if isinstance(node, gast.FunctionDef):
                out.add(node.name)
            continue
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            out.add(node.id)
        stack.extend(gast.iter_child_nodes(node))
    return out


def definitely_returns(body: list[gast.stmt]) -> bool:
    for s in body:
        if isinstance(s, gast.Return):
            return True
        if isinstance(s, gast.If) and definitely_returns(s.body) and definitely_returns(s.orelse):
            return True
        if isinstance(s, gast.While) and isinstance(s.test, gast.Constant) and s.test.value is True \
                and not any(isinstance(n, gast.Break) for n in gast.walk(s)):
            return True
    return False


def walk_no_nested(node):
    """`node` and its descendants in preorder, leaving out nested functions and lambdas;
    iterative, since a long sum is a deep tree."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed([c for c in gast.iter_child_nodes(n)
                               if not isinstance(c, (gast.FunctionDef, gast.Lambda))]))


def literal(e) -> float | None:
    if isinstance(e, gast.Constant) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        v = literal(e.operand)
        return -v if v is not None else None
    return None


def constant_value(e) -> float | None:
    return literal(e)


def constant_index(e) -> tuple[int, ...] | None:
    """(i, j, ...) of a constant integer subscript, else None."""
    elts = e.elts if isinstance(e, gast.Tuple) else [e]
    out = []
    for x in elts:
        v = literal(x)
        if v is None or isinstance(v, float):
            return None
        out.append(int(v))
    return tuple(out)


def dotted(node) -> str:
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, gast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return "<expression>"

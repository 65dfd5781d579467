"""A kernel's partial as a function of its own output (issue 17's dense layers): where
`h = act(X @ W + b)` keeps its partial w.r.t. the product only so that the adjoint can
multiply by it, the adjoint may instead recompute it from h, as JAX's `1 - h * h` for
tanh, and the forward never stores it (gemm_outpartials.py runs both).

    output_partial(kmod, param) -> "1.0 - out * out"      (tanh(_1 + b1), param _1)

Found from the rules table (rules.Rule.output_partial) and the kernel's dual, never by
guessing from names:
- the dual entry is straight-line (assignments, one return) and returns (V, P), one
  partial; V is a call of one primitive R (directly, or the name one assignment binds
  to it), every argument of which but one is a number literal;
- P is exactly R's partial for that argument with R's params replaced by the call's
  arguments (the dual folded the chain factor 1: the argument moves one-for-one with
  the param, `_1 + b1`), and R's table gives that partial in `out` and the other params
  (`1.0 if out > y else 0.0` for maximum's x);
- the result is that expression with the other params replaced by their literals: a
  core-language expression reading `out` alone.
Anything else is None (the partial is stored, as before). A table entry may be exact
only almost everywhere (maximum at a tie): the runtime compares the two on every
element and stores the true partial where any differs, so this module is a
performance decision, never a correctness one.
"""
from __future__ import annotations

import copy

import gast

from ..kernel_text import unparse
from ..parsing import gast_parse
from ..rules import RULES

OUT = "out"


def output_partial(kmod, param: str) -> str | None:
    """The partial of `kmod`'s entry w.r.t. `param` as an expression of its output `out`
    (see the module docstring), from kmod's dual for (param,), or None."""
    if kmod.dual_entry is None or kmod.active != (param,):
        return None
    found = _value_and_partial(kmod.functions[kmod.dual_entry])
    if found is None:
        return None
    call, out_expr, partial = found
    rule = _rule_of(call)
    if rule is None or len(call.args) != rule.arity:
        return None
    moving = [i for i, a in enumerate(call.args) if not _is_literal(a)]
    if len(moving) != 1:
        return None
    i = moving[0]
    given = rule.partial_tree(i)
    from_out = rule.output_partial(i)
    if given is None or from_out is None:
        return None
    names = {p: a for p, a in zip(rule.params, call.args)}
    names[OUT] = out_expr
    if unparse(_substitute(given, names)) != unparse(partial):
        return None
    others = {p: a for j, (p, a) in enumerate(zip(rule.params, call.args)) if j != i}
    return unparse(_substitute(gast_parse(from_out, mode="eval").body, others))


def _value_and_partial(dual: gast.FunctionDef):
    """(V's call, what `out` stands for in P, P) of a straight-line dual returning (V, P)."""
    bound: dict = {}
    for st in dual.body[:-1]:
        if not (isinstance(st, gast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], gast.Name)):
            return None
        name = st.targets[0].id
        if name in bound:
            return None
        bound[name] = st.value
    ret = dual.body[-1] if dual.body else None
    if not isinstance(ret, gast.Return) or not isinstance(ret.value, gast.Tuple) or len(ret.value.elts) != 2:
        return None
    value, partial = ret.value.elts
    if isinstance(value, gast.Name):
        call = bound.get(value.id)
        return (call, value, partial) if isinstance(call, gast.Call) else None
    return (value, value, partial) if isinstance(value, gast.Call) else None


def _rule_of(call: gast.Call):
    f = call.func
    if not (isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and f.value.id == "math"):
        return None
    rule = RULES.get(f.attr)
    return rule if rule is not None and rule.spelling == "math" else None


def _is_literal(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) in (int, float)


class _Replace(gast.NodeTransformer):
    def __init__(self, names: dict):
        self.names = names

    def visit_Name(self, node):
        got = self.names.get(node.id)
        return copy.deepcopy(got) if got is not None else node


def _substitute(tree, names: dict):
    """A copy of `tree` with each Name in `names` replaced by (a copy of) its expression."""
    return _Replace(names).visit(copy.deepcopy(tree))

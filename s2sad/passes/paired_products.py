"""Two adjacent products of a forward-over-reverse program joined into one call that may
run them side by side (twocalls.both, at run time).

Forward over reverse writes each product beside its tangent, one line after the other:

    _1 = matmul(X, W1)                          W1_bar = matmul_rhs_bar(_1_bar, X, W1)
    _1_dot = matmul(X, W1_dot)                  W1_bar_dot = matmul_rhs_bar(_1_bar_dot, X, W1)

become

    _1, _1_dot = both(matmul, (X, W1), (X, W1_dot))
    W1_bar, W1_bar_dot = both(matmul_rhs_bar, (_1_bar, X, W1), (_1_bar_dot, X, W1))

Invariants (what makes the joined line mean what the two meant), checked on the records
the sweeps wrote (passes/emitted.py: tangent_sweep and hvp_reverse write these products
as `ProductLine`s), never on the lines' text:
- both lines are recorded products (a line without a record, whatever it reads like, is
  never joined), binding one name each, at the same indentation (so in the same block),
  one right after the other, calling the same helper of `PAIRED` with positional
  arguments only;
- the arguments are names, constants, attributes and subscripts of them: evaluating
  them has no effect, so evaluating the second's before the first call runs changes
  nothing, and the second's arguments do not read the first's target;
- the two targets differ. A third product in a row stays as it was.
"""
from __future__ import annotations

import ast

from ..parsing import ast_parse
from .adjoint_text import tuple_text
from .emitted import ProductLine, record_of

# the helpers whose calls may be joined: pure products of arrays (no output argument,
# no operand written)
PAIRED = frozenset({"matmul", "dot", "matmul_rhs_bar", "matmul_lhs_bar"})
_PLAIN = (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Load, ast.Slice, ast.Tuple, ast.UnaryOp,
          ast.USub)


def pair_products(lines: list) -> list:
    """`lines` (the program's, one statement or comment each) with each pair of adjacent
    joinable products written as one `both` call (see the module docstring)."""
    out: list = []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines):
            joined = _joined(record_of(lines[i]), record_of(lines[i + 1]))
            if joined is not None:
                out.append(joined)
                i += 2
                continue
        out.append(lines[i])
        i += 1
    return out


def _plain(text: str) -> bool:
    """Does evaluating the argument `text` only read names (no call, no operator that may
    run code)?"""
    try:
        tree = ast_parse(text, mode="eval")
    except SyntaxError:
        return False
    return all(isinstance(n, _PLAIN + (ast.Expression,)) for n in ast.walk(tree))


def _reads(texts) -> set[str]:
    return {n.id for t in texts for n in ast.walk(ast_parse(t, mode="eval")) if isinstance(n, ast.Name)}


def joinable(a: ProductLine | None, b: ProductLine | None) -> bool:
    """May the products `a` then `b` (the records of two adjacent lines) run as one
    `both` call? (The module docstring's invariants.)"""
    return (a is not None and b is not None and a.helper in PAIRED and a.helper == b.helper
            and a.indent == b.indent and a.target != b.target and bool(a.operands) and bool(b.operands)
            and all(_plain(o) for o in a.operands + b.operands) and a.target not in _reads(b.operands))


def _joined(a: ProductLine | None, b: ProductLine | None) -> str | None:
    if not joinable(a, b):
        return None
    return f"{a.indent}{a.target}, {b.target} = both({a.helper}, {tuple_text(a.operands)}, {tuple_text(b.operands)})"

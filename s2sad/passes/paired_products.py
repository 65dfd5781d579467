"""Two adjacent products of a forward-over-reverse program joined into one call that may
run them side by side (twocalls.both, at run time).

Forward over reverse writes each product beside its tangent, one line after the other:

    _1 = matmul(X, W1)                          W1_bar = matmul_rhs_bar(_1_bar, X, W1)
    _1_dot = matmul(X, W1_dot)                  W1_bar_dot = matmul_rhs_bar(_1_bar_dot, X, W1)

become

    _1, _1_dot = both(matmul, (X, W1), (X, W1_dot))
    W1_bar, W1_bar_dot = both(matmul_rhs_bar, (_1_bar, X, W1), (_1_bar_dot, X, W1))

Invariants (what makes the joined line mean what the two meant):
- both lines are single-line assignments of one name each, at the same indentation
  (so in the same block), one right after the other, calling the same helper of
  `PAIRED` with positional arguments only;
- the arguments are names, constants, attributes and subscripts of them: evaluating
  them has no effect, so evaluating the second's before the first call runs changes
  nothing, and the second's arguments do not read the first's target;
- the two targets differ. A third product in a row stays as it was.
"""
from __future__ import annotations

import ast

from ..parsing import ast_parse
from .adjoint_text import tuple_text

# the helpers whose calls may be joined: pure products of arrays (no output argument,
# no operand written)
PAIRED = frozenset({"matmul", "dot", "matmul_rhs_bar", "matmul_lhs_bar"})
_PLAIN = (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Load, ast.Slice, ast.Tuple, ast.UnaryOp,
          ast.USub)


def pair_products(lines: list[str]) -> list[str]:
    """`lines` (the program's, one statement or comment each) with each pair of adjacent
    joinable products written as one `both` call (see the module docstring)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines):
            joined = _joined(lines[i], lines[i + 1])
            if joined is not None:
                out.append(joined)
                i += 2
                continue
        out.append(lines[i])
        i += 1
    return out


def _product(line: str):
    """(indent, target, helper, argument texts) of `target = helper(args)`, else None."""
    if "\n" in line:
        return None
    body = line.lstrip(" ")
    indent = line[:len(line) - len(body)]
    try:
        tree = ast_parse(body)
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign):
        return None
    st = tree.body[0]
    call = st.value
    if (len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name) or not isinstance(call, ast.Call)
            or not isinstance(call.func, ast.Name) or call.func.id not in PAIRED or call.keywords
            or not call.args or not all(_plain(a) for a in call.args)):
        return None
    return indent, st.targets[0].id, call.func.id, [ast.get_source_segment(body, a) for a in call.args]


def _plain(node: ast.AST) -> bool:
    """Does evaluating `node` only read names (no call, no operator that may run code)?"""
    return all(isinstance(n, _PLAIN) for n in ast.walk(node))


def _reads(texts: list[str]) -> set[str]:
    return {n.id for t in texts for n in ast.walk(ast_parse(t, mode="eval")) if isinstance(n, ast.Name)}


def _joined(first: str, second: str) -> str | None:
    a, b = _product(first), _product(second)
    if a is None or b is None or a[0] != b[0] or a[2] != b[2] or a[1] == b[1] or a[1] in _reads(b[3]):
        return None
    indent, helper = a[0], a[2]
    return f"{indent}{a[1]}, {b[1]} = both({helper}, {tuple_text(a[3])}, {tuple_text(b[3])})"

"""Lines of a generated program that bind only names nothing after them reads, dropped:
one backward liveness pass over the program's text.

Forward over reverse writes every adjoint beside its tangent; a caller that reads only
the tangents (the batched sweep, `s2sad.hvp`) returns None for the adjoints, and the
adjoints' own lines are then dead where no tangent reads them (the MLP's `W1_bar =
X.T @ _1_bar`: one of its largest products).

Invariants (what makes a dropped line one the program did not need):
- only a top-level line (four spaces of indentation: the function's body) that is one
  assignment to names (a name or a tuple of names) is ever dropped or narrowed, and only
  when none of the names it binds is read by a later line: evaluating it binds names and
  makes values no one sees. The generated programs' helpers are functional (a helper
  that may reuse an operand's memory does so only when no other name holds it, so
  skipping it leaves every other value as it was);
- every other line (a return, a call for its effect such as `check_scalar_loss`, a
  loop's or an if's header, a line inside a block) is kept, and every word it contains
  counts as read: a loop's body is never reasoned about, only kept whole;
- `narrow` (optional) may rewrite a kept assignment some of whose names are dead into
  one that binds only the live ones (a kernel pass that then computes less); it returns
  None to keep the line as it is.
"""
from __future__ import annotations

import ast
import re
from typing import Callable, Optional

from ..parsing import ast_parse

_WORD = re.compile(r"[A-Za-z_]\w*")


Narrow = Callable[[str, ast.Assign, set], Optional[str]]


def drop_dead(lines: list[str], narrow: Optional[Narrow] = None) -> list[str]:
    """`lines` (one line of the program each, the `def` line first) less the top-level
    assignments nothing after them reads (see the module docstring). `narrow(text, node,
    dead)`: a rewrite of the assignment `text` (its `node`) binding the names `dead`
    nothing reads, or None."""
    live: set[str] = set()
    kept: list[str] = []
    for line in reversed(lines):
        node = _statement(line)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _names_only(node.targets[0]):
            bound = {n.id for n in ast.walk(node.targets[0]) if isinstance(n, ast.Name)}
            if not bound & live:
                continue        # nothing after it reads what it binds
            dead = bound - live
            if dead and narrow is not None:
                rewritten = narrow(line.strip(), node, dead)
                if rewritten is not None:
                    line = f"    {rewritten}"
                    node = ast_parse(rewritten).body[0]
                    bound = {n.id for n in ast.walk(node.targets[0]) if isinstance(n, ast.Name)}
            live -= bound
            live |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        elif node is not None or line.strip() and not line.strip().startswith("#"):
            live |= set(_WORD.findall(line))
        kept.append(line)
    return list(reversed(kept))


def _statement(line: str):
    """A top-level line of the program as its statement, else None."""
    if not line.startswith("    ") or line.startswith("     "):
        return None
    try:
        body = ast_parse(line.strip()).body
    except SyntaxError:
        return None
    return body[0] if len(body) == 1 else None


def _names_only(target) -> bool:
    return all(isinstance(n, (ast.Name, ast.Tuple, ast.Store, ast.Load)) for n in ast.walk(target))

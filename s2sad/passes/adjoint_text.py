"""Text pieces of a generated adjoint program (passes/reverse.py), and the forward
sweep's lines as they are written before liveness is known.

The forward sweep is written first as a list of items: plain lines (str), `Header`
lines (`for`, `if`, `else`), and three kinds whose text waits for the reverse sweep
(which decides what the forward sweep must keep): `Group` (the statements of one user
line, each rendered by liveness), `Nones` (names only the other branch defines, kept
when read) and `Push` (a loop's tape, its pushed names known once its reverse is
written). `render` turns the list into lines, reading those decisions from the
statements' `adjoint` annotations (passes/adjoint_analysis.py), through the
`forward_lines` it is given.
"""
from __future__ import annotations

import ast
import math
import textwrap
from dataclasses import dataclass

from ..kernel_text import unparse
from ..parsing import ast_parse
from .arrayir import ArrayStmt, Const, ForStmt
from .linemap import LocatedLine


def param_texts(st: ArrayStmt) -> dict[str, str]:
    """A primitive's static parameters as source text, by name."""
    return {k: unparse(v) for k, v in st.params.items()}


def text_of(op) -> str:
    """An operand (a name or a Const) as source text."""
    if isinstance(op, Const):
        v = op.value
        if isinstance(v, float) and not math.isfinite(v):    # np.inf, np.nan: no literal
            return f"float({str(v)!r})"
        return repr(v)
    return op


def tuple_text(items) -> str:
    """`(a, b)`, and `(a,)` for one item."""
    items = list(items)
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def def_line(name: str, variant: str, params, free) -> str:
    """`def <name>__<variant>(<params>, *, <free>):`: every derivative's first line
    (free data arrays are keyword arguments)."""
    sig = ", ".join(params) + (", *, " + ", ".join(free) if free else "")
    return f"def {name}__{variant}({sig}):"


def grad_of_line(line: str, location: str) -> str:
    """The comment that opens a derivative: the user's line it differentiates, and where."""
    return f"# Grad of: {line}    [{location}]"


def names_read(text: str) -> set[str]:
    """The names a (possibly indented) block of source reads."""
    tree = ast_parse(_dedent_lines(text))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _dedent_lines(text: str) -> str:
    t = textwrap.dedent(text)
    return t if t.strip() else "pass"


def defs(st) -> set:
    """The names an ArrayStmt binds (its target and the names it adds)."""
    if not isinstance(st, ArrayStmt):
        return set()
    return {st.target} if st.target else set()


@dataclass
class Nones:
    """`a = b = None` for what only the other branch of an `if` defines (a tape or the
    residuals may list it): only the names something reads."""
    indent: str
    names: list


@dataclass
class Push:
    """A loop's tape: `tape = []` before it (init) or the push at the end of its body;
    nothing when the reverse loop reads nothing of the body."""
    loop: ForStmt
    indent: str
    init: bool = False


@dataclass
class Group:
    """The forward statements of one user line, each with its lines, under the line as a
    comment; each statement's lines are picked by liveness, and the comment goes when
    none is left."""
    comment: str | None
    stmts: list                      # (ArrayStmt, its lines)


class Header(str):
    """An `if`, `else` or `for` line of the forward sweep: its block gets `pass` when
    everything in it was dropped."""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def render(lines, read: set, forward_lines) -> list[str]:
    """The forward sweep's items as lines, given the names the reverse sweep reads and
    `forward_lines(st, its lines)`: what liveness keeps of a statement's lines."""
    out = _render_items(lines, read, forward_lines)
    final = []
    for i, l in enumerate(out):   # a block whose statements were all dropped gets `pass`
        final.append(l)
        if isinstance(l, Header) and (i + 1 == len(out) or _indent(out[i + 1]) <= _indent(l)):
            final.append(" " * (_indent(l) + 4) + "pass")
    return [l if isinstance(l, LocatedLine) else str(l) for l in final]   # (linemap reads the located)


def _render_items(lines, read: set, forward_lines) -> list[str]:
    out = []
    for l in lines:
        if isinstance(l, Group):
            body = [t for st, ls in l.stmts for t in _render_items(forward_lines(st, ls), read, forward_lines)]
            if body and l.comment is not None:
                out.append(l.comment)
            out.extend(body)
            continue
        if isinstance(l, Nones):
            names = [n for n in l.names if n in read]
            if names:
                out.append(f"{l.indent}{' = '.join(names)} = None")
            continue
        if isinstance(l, Push):
            names = l.loop.adjoint.tape_names
            tape = l.loop.adjoint.tape
            if names or l.loop.counted:    # a while or a break: the tape counts iterations
                out.append(f"{l.indent}{tape} = []" if l.init else f"{l.indent}{tape}.append({tuple_text(names)})")
        else:
            out.append(l)
    return out

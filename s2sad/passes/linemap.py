"""Which user statement each line of a generated derivative program runs for.

A generated program (the adjoint, tangent or batched program of an array function) puts
every user statement's lines under a comment that quotes the statement
(`# h = W @ x`, `# Grad of: h = W @ x    [f.py:3:5]`). The writers make those comments
`LocatedLine`s: the same text, carrying the statement's SourceLocation. `compile_located`
compiles a program and keeps, for each function code object it defines, a table from
generated line to the location of the statement whose comment last preceded it.
`statement_at(traceback)` reads an error's traceback, innermost generated frame first,
and answers the user's statement that was running (None when no frame of a located
program is in it). A row-fused statement (passes/rowfusion.py: a log-sum-exp idiom's
max, shift, exp, sum and log as one call) runs under the statement that closes its chain
(the return); what its row function raises (rows of no element) is located at the
statement that reduces the rows first (`ArrayStmt.origin`, the max), where numpy would
have raised it. Invariants: the text compiled is exactly the text given (tables only
add, they never change what runs); a table is found by the code object's identity
(equal code from two files must not share one) and goes when the code goes.
"""
from __future__ import annotations

import bisect
import linecache
import re
import types
import weakref

from ..errors import SourceLocation
from ..frontend import location_of, source_line
from ..array_prims.rowfused import RowFused
from .arrayir import ArrayStmt, ForStmt, IfStmt, walk_stmts


class LocatedLine(str):
    """One line of generated text (a statement's comment) and the user's statement it
    stands for."""
    location: SourceLocation

    def __new__(cls, text: str, location: SourceLocation):
        line = super().__new__(cls, text)
        line.location = location
        return line


def statement_comment(ind: str, filename: str, node) -> LocatedLine:
    """`<ind># <the statement's source line>`, located at the statement."""
    return LocatedLine(f"{ind}# {source_line(filename, node)}", location_of(filename, node))


def block_header(code: str, st) -> LocatedLine:
    """`<code>  # Grad of: <st's source line>`: the header line of a sweep's block for the
    loop or `if` statement `st` (a reverse loop's `for`, its `if`), located at `st`: the
    lines under it, up to its body's first statement comment, run for it, not for the
    statement before."""
    return LocatedLine(f"{code}  # Grad of: {source_line(st.ctx.filename, st.node)}",
                       location_of(st.ctx.filename, st.node))


def located_lines(items) -> list:
    """The LocatedLines among `items` (lines and other parts of a generation), in order."""
    return [l for l in items if isinstance(l, LocatedLine)]


def line_table(text: str, located: list) -> tuple[list[int], list[SourceLocation]]:
    """(the 1-based text lines that open a statement, their locations), in order: each
    LocatedLine in `located` (in text order) matched to the first equal line of `text`
    at or after the previous match. A LocatedLine not in the text (a dropped
    statement's) is skipped."""
    lines = text.split("\n")
    starts, locations = [], []
    at = 0
    for want in located:
        for i in range(at, len(lines)):
            if lines[i] == want:
                starts.append(i + 1)
                locations.append(want.location)
                at = i + 1
                break
    return starts, locations


def expression_text(filename: str, node) -> str | None:
    """The user's text of an expression on one line (None across lines or unknown)."""
    line, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if line is None or line != end or col is None or end_col is None:
        return None
    text = linecache.getline(filename, line).encode()[col:end_col].decode(errors="replace").strip()
    return text or None


_TEMPORARY = re.compile(r"_\d+")     # the names the array program gives what the user did not name


def temporaries(prog) -> dict[str, str]:
    """Each name of an array program the user did not write -> what the user wrote for
    it: a temporary (`_1`) -> its expression (`x @ A`, where on one line); a new version
    of a variable (`h_2` for a second `h = ...`, or h after a loop or an if) -> `h`."""
    names = {}
    for st in walk_stmts(prog.body):
        if isinstance(st, (ForStmt, IfStmt)):
            names.update((phi.name, phi.user) for phi in st.phis if phi.user and phi.user != phi.name)
        elif isinstance(st, ArrayStmt) and st.target and st.ctx is not None:
            text = _user_text(st)
            if text is not None and text != st.target:
                names[st.target] = text
    return names


def _user_text(st: ArrayStmt) -> str | None:
    if _TEMPORARY.fullmatch(st.target):
        return expression_text(st.ctx.filename, st.node)
    targets = getattr(st.stmt, "targets", None)     # `h = <the whole value>`: its version is h
    if targets and len(targets) == 1 and type(targets[0]).__name__ == "Name" and st.node is st.stmt.value:
        return targets[0].id
    return None


def operand_text(st: ArrayStmt, name: str) -> str:
    """What the user wrote for operand `name` of a call statement `st` (a method's
    receiver, else the call's first argument) where `name` is a temporary; else name."""
    node = st.node
    if not _TEMPORARY.fullmatch(name) or type(node).__name__ != "Call" or st.ctx is None:
        return name
    label = getattr(st.op, "label", "") or ""
    part = node.func.value if label.startswith(".") and hasattr(node.func, "value") else (
        node.args[0] if node.args else None)
    text = expression_text(st.ctx.filename, part) if part is not None else None
    return text or name


def row_origins(prog) -> dict:
    """The location of each statement a row-fused statement runs under -> where its chain
    starts (ArrayStmt.origin); a statement with two such chains of different starts is
    left out (which one raised is not known)."""
    out: dict = {}
    for st in walk_stmts(prog.body):
        if isinstance(st, ArrayStmt) and isinstance(st.op, RowFused) and st.origin is not None and st.ctx:
            at = location_of(st.ctx.filename, st.stmt if st.stmt is not None else st.node)
            out[at] = st.origin if out.get(at, st.origin) == st.origin else None
    return {k: v for k, v in out.items() if v is not None}


def _row_function(code: types.CodeType) -> bool:
    """Whether a frame's code is a row-fused primitive's function (row_logsumexp,
    row_softmax_bar, ...: the names the generated code calls them by)."""
    return code.co_name.startswith("row_")


# id(code) -> (weak reference to that code, its table, its temporaries' texts, its
# row-fused statements' origins): by identity, not by equality
_TABLES: dict[int, tuple] = {}


def _forget(key: int):
    return lambda _ref: _TABLES.pop(key, None)


def _codes(code: types.CodeType):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield c
            yield from _codes(c)


def compile_located(text: str, filename: str, located: list, whole: SourceLocation | None = None,
                    program=None) -> types.CodeType:
    """compile(text, filename, "exec"), every function it defines tied to the line table
    of `located` (its LocatedLines, in text order), or with every line at `whole` (a
    program that runs one statement: a fused kernel's derivative), and to the texts of
    `program`'s temporaries (the array program the text was written from)."""
    module = compile(text, filename, "exec")
    table = ([1], [whole]) if whole is not None else line_table(text, located)
    names = temporaries(program) if program is not None else {}
    origins = row_origins(program) if program is not None else {}
    if table[0]:
        for c in _codes(module):
            _TABLES[id(c)] = (weakref.ref(c, _forget(id(c))), table, names, origins)
    return module


def _facts_at(code: types.CodeType, lineno: int) -> tuple:
    got = _TABLES.get(id(code))
    if got is None or got[0]() is not code:
        return None, {}, {}
    starts, locations = got[1]
    i = bisect.bisect_right(starts, lineno) - 1
    return (locations[i] if i >= 0 else None), got[2], got[3]


def statement_and_names_at(tb) -> tuple[SourceLocation | None, dict]:
    """statement_at's location, and the texts of the temporaries of the program that ran
    it (what the user wrote for `_1`: linemap.temporaries)."""
    found, names = None, {}
    while tb is not None:
        loc, its_names, origins = _facts_at(tb.tb_frame.f_code, tb.tb_lineno)
        if loc is not None and not loc.filename.startswith("<"):    # (not s2sad's own wrappers' text)
            callee = tb.tb_next.tb_frame.f_code if tb.tb_next is not None else None
            if loc in origins and callee is not None and _row_function(callee):
                loc = origins[loc]      # a row function's error: where its chain reduces the rows first
            found, names = loc, its_names
        tb = tb.tb_next
    return found, names


def statement_at(tb) -> SourceLocation | None:
    """The user's statement whose generated lines were running, innermost first, in the
    traceback `tb`; None where no located program's frame is in it. A statement of
    s2sad's own generated wrappers (a grad differentiated again is a generated function
    whose "file" is `<s2sad: ...>`) is passed over for the user's under it."""
    return statement_and_names_at(tb)[0]

"""Which user statement each line of a generated derivative program runs for.

A generated program (the adjoint, tangent or batched program of an array function) puts
every user statement's lines under a comment that quotes the statement
(`# h = W @ x`, `# Grad of: h = W @ x    [f.py:3:5]`). The writers make those comments
`LocatedLine`s: the same text, carrying the statement's SourceLocation. `compile_located`
compiles a program and keeps, for each function code object it defines, a table from
generated line to the location of the statement whose comment last preceded it.
`statement_at(traceback)` reads an error's traceback, innermost generated frame first,
and answers the user's statement that was running (None when no frame of a located
program is in it). Invariants: the text compiled is exactly the text given (tables only
add, they never change what runs); a table is found by the code object's identity
(equal code from two files must not share one) and goes when the code goes.
"""
from __future__ import annotations

import bisect
import types
import weakref

from ..errors import SourceLocation
from ..frontend import location_of, source_line


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


# id(code) -> (weak reference to that code, its table): by identity, not by equality
_TABLES: dict[int, tuple] = {}


def _forget(key: int):
    return lambda _ref: _TABLES.pop(key, None)


def _codes(code: types.CodeType):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield c
            yield from _codes(c)


def compile_located(text: str, filename: str, located: list) -> types.CodeType:
    """compile(text, filename, "exec"), every function it defines tied to the line table
    of `located` (its LocatedLines, in text order)."""
    module = compile(text, filename, "exec")
    table = line_table(text, located)
    if table[0]:
        for c in _codes(module):
            _TABLES[id(c)] = (weakref.ref(c, _forget(id(c))), table)
    return module


def _location_at(code: types.CodeType, lineno: int) -> SourceLocation | None:
    got = _TABLES.get(id(code))
    if got is None or got[0]() is not code:
        return None
    starts, locations = got[1]
    i = bisect.bisect_right(starts, lineno) - 1
    return locations[i] if i >= 0 else None


def statement_at(tb) -> SourceLocation | None:
    """The user's statement whose generated lines were running, innermost first, in the
    traceback `tb`; None where no located program's frame is in it."""
    found = None
    while tb is not None:
        loc = _location_at(tb.tb_frame.f_code, tb.tb_lineno)
        if loc is not None:
            found = loc
        tb = tb.tb_next
    return found

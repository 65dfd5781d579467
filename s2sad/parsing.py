"""Every parse of Python text s2sad makes, under one lock, retried past CPython 3.11's
spurious "recursion depth mismatch".

CPython 3.11's ast module keeps one recursion count per interpreter while it turns its C
trees into Python objects, so two threads in `ast.parse` at once can fail ("SystemError:
AST constructor recursion depth mismatch"; fixed in later CPythons). Planning holds the
lock throughout (plancache.PLANNING is the same lock); the parses made at call time (a
kernel's seeded form, the python backend's source, a rule's partials) take it here.

The lock cannot cover another library's thread: in a dask worker, the event loop's thread
may parse at the same moment (Python 3.11's traceback module parses source lines to place
its carets), and a worker's first gradient failed so (seen once, 50 blocks on 2 workers).
The count is set anew at the start of every parse and only checked at its end, so the
error says nothing about the text: the parse is made again, up to RETRIES times, each
after a pause that lets the other thread finish its own parse (8 immediate retries all
failed once, in a test that makes such a thread parse without pause, on a loaded machine).
"""
from __future__ import annotations

import ast
import time

import gast

from .locks import PARSING

MISMATCH = "recursion depth mismatch"
RETRIES = 50


def ast_parse(text: str, mode: str = "exec") -> ast.AST:
    return _retried(ast.parse, text, mode)


def gast_parse(text: str, mode: str = "exec") -> gast.AST:
    return _retried(gast.parse, text, mode)


def _retried(parse, text: str, mode: str):
    for attempt in range(RETRIES + 1):
        try:
            with PARSING:
                return parse(text, mode=mode)
        except SystemError as e:
            if MISMATCH not in str(e) or attempt == RETRIES:
                raise
        time.sleep(min(0.001 * attempt, 0.01))      # the GIL to the other thread, out of the lock
    raise AssertionError("unreachable")

"""Every parse of Python text s2sad makes, under one lock.

CPython 3.11's ast module keeps one recursion count per interpreter while it turns its C
trees into Python objects, so two threads in `ast.parse` at once can fail ("SystemError:
AST constructor recursion depth mismatch"; fixed in later CPythons). Planning holds the
lock throughout (plancache.PLANNING is the same lock); the parses made at call time (a
kernel's seeded form, the python backend's source, a rule's partials) take it here.
"""
from __future__ import annotations

import ast

import gast

from .locks import PARSING


def ast_parse(text: str, mode: str = "exec") -> ast.AST:
    with PARSING:
        return ast.parse(text, mode=mode)


def gast_parse(text: str, mode: str = "exec") -> gast.AST:
    with PARSING:
        return gast.parse(text, mode=mode)

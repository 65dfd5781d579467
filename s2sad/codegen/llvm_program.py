"""A program launcher: one METH_FASTCALL function that makes a straight-line sequence of C
calls (array_program.py's steps: compiled drivers, numpy's BLAS routines) on the data of
the arrays it is given, the GIL held (issue 17, small batches: one call into machine
code per gradient instead of a Python call, a ctypes or launcher call per site).

    program(table, args, nargs) -> None | NotImplemented

Its IR is written for the program's *structure* (per step, the C kinds of its arguments
and where each comes from) and takes every address and number from `table` (its `self`,
a uint64 ndarray), so one compiled function serves every program of that structure and
is cached on disk under a digest of it (`program_name`):

    t[0] Py_IncRef's address   t[1] None's   t[2] NotImplemented's   t[3] nargs   t[4] ndarray's type
    then per step: the driver's address, then one word per C argument: a constant (an
    i64, an i32 in its low bits, or a double's bits, rounded to a float for kind 'f'),
    or for a pointer the byte offset added to its Python argument's data pointer.

It returns NotImplemented, calling nothing, unless it has t[3] arguments, each an exact
ndarray whose ALIGNED flag is set (the offsets are the caller's: it passes arrays of
the shapes, dtypes and strides the program was made for; array_program.py's wrapper
allocates all but the user's, and the hot path's signature match vouches for those).
Kinds: 'i' an i64 or a pointer, 'w' a C int (i32: BLAS's enums), 'd' a double, 'f' a float.
"""
from __future__ import annotations

import hashlib

from .fastcall_ir import WORD_IR, argument_ir, return_ir
from .llvm_launch import ARRAY_DATA, OB_TYPE

ARRAY_FLAGS = 64        # PyArrayObject_fields.flags (int), as llvm_entry's (not imported: it pulls the
ALIGNED = 0x0100        # lowering modules a warm start never loads, test_cache); array_program checks it live
HEAD_WORDS = 5


def program_name(nargs: int, steps: list) -> str:
    """The symbol of the program launcher of this structure: `steps` a list of (kinds,
    srcs), srcs[j] None (a constant) or the Python argument whose data pointer it is."""
    text = repr((nargs, [(k, tuple(s)) for k, s in steps]))
    return "s2sad_program_" + hashlib.sha256(text.encode()).hexdigest()[:24]


def program_ir(nargs: int, steps: list) -> str:
    """The program launcher's module (see the docstring)."""
    name = program_name(nargs, steps)
    lines = [f"define ptr @{name}(ptr %self, ptr %args, i64 %nargs) {{",
             "entry:",
             f"  %t.at = getelementptr inbounds i8, ptr %self, i64 {ARRAY_DATA}",
             "  %t = load ptr, ptr %t.at",
             "  %want = call i64 @word(ptr %t, i64 3)",
             "  %array = call i64 @word(ptr %t, i64 4)",
             "  %n.ok = icmp eq i64 %nargs, %want",
             f"  br i1 %n.ok, label %{'check0' if nargs else 'run'}, label %no"]
    for i in range(nargs):
        nxt = f"check{i + 1}" if i + 1 < nargs else "run"
        lines += [f"check{i}:",
                  f"  %a{i}.at = getelementptr inbounds ptr, ptr %args, i64 {i}",
                  f"  %a{i} = load ptr, ptr %a{i}.at",
                  f"  %a{i}.type.at = getelementptr inbounds i8, ptr %a{i}, i64 {OB_TYPE}",
                  f"  %a{i}.type = load i64, ptr %a{i}.type.at",
                  f"  %a{i}.isarray = icmp eq i64 %a{i}.type, %array",
                  f"  br i1 %a{i}.isarray, label %fields{i}, label %no",
                  f"fields{i}:",
                  f"  %a{i}.flags.at = getelementptr inbounds i8, ptr %a{i}, i64 {ARRAY_FLAGS}",
                  f"  %a{i}.flags = load i32, ptr %a{i}.flags.at",
                  f"  %a{i}.al = and i32 %a{i}.flags, {ALIGNED}",
                  f"  %a{i}.ok = icmp ne i32 %a{i}.al, 0",
                  f"  %a{i}.data.at = getelementptr inbounds i8, ptr %a{i}, i64 {ARRAY_DATA}",
                  f"  %a{i}.data = load i64, ptr %a{i}.data.at",
                  f"  br i1 %a{i}.ok, label %{nxt}, label %no"]
    lines.append("run:")
    at = HEAD_WORDS
    for s, (kinds, srcs) in enumerate(steps):
        lines += [f"  %d{s}.int = call i64 @word(ptr %t, i64 {at})",
                  f"  %d{s} = inttoptr i64 %d{s}.int to ptr"]
        at += 1
        values = []
        for j, (k, src) in enumerate(zip(kinds, srcs)):
            v = f"%s{s}.{j}"
            lines.append(f"  {v}.w = call i64 @word(ptr %t, i64 {at})")
            at += 1
            made, value = argument_ir(v, k, f"%a{src}.data" if src is not None else None)
            lines += made
            values.append(value)
        lines.append(f"  call void %d{s}({', '.join(values)})")
    lines += ["  %none = call i64 @word(ptr %t, i64 1)",
              "  br label %out",
              "no:",
              "  %ni = call i64 @word(ptr %t, i64 2)",
              "  br label %out",
              return_ir("[%none, %run], [%ni, %no]", 0)]
    return "\n" + WORD_IR + "\n" + "\n".join(lines)

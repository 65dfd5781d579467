"""A block loop: the C calls of a pass that runs a block of rows at a time (gemm_epilogue:
a product's block, then the kernels and products over that block), made from compiled
code, block after block, with no Python between them (blockloop.py builds the table).

    void loop(T, words, nblocks, counter, bases)

T is a table of `nblocks` rows of `words` 64-bit words, one row per block: per step (one
C call) the function's address, then one word per C argument. A thread calling the loop
takes the next block from `*counter` (an atomic add: several threads calling the same
loop share the blocks, each block run once, by whichever thread took it) until none is
left. An argument whose step flags it with scratch q >= 1 is a byte offset into the
calling thread's scratch buffer q - 1, whose address is bases[q - 1] (each thread has its
own: a block's product and adjoint never leave that thread's cache).

Kinds of argument: 'i' an i64 or a pointer, 'w' a C int (its low 32 bits), 'd' a double
(its bits), 'f' a float (a double's bits rounded). Its IR depends on the structure alone
(per step: kinds and scratch flags), never on an address, so one compiled loop serves every
pass of that structure and is cached on disk under a digest of it (`loop_name`).
"""
from __future__ import annotations

import hashlib

from .fastcall_ir import argument_ir


def loop_name(steps: list) -> str:
    """The symbol of the loop for `steps`: a list of (kinds, flags), flags[j] 0 or a scratch
    number (1-based)."""
    text = repr([(k, tuple(f)) for k, f in steps])
    return "s2sad_blocks_" + hashlib.sha256(text.encode()).hexdigest()[:24]


def loop_ir(steps: list) -> str:
    """The loop's module (see the module docstring)."""
    scratches = sorted({q for _, flags in steps for q in flags if q})
    lines = [f"define void @{loop_name(steps)}(ptr %T, i64 %words, i64 %nblocks, ptr %counter, ptr %bases) {{",
             "entry:"]
    for q in scratches:
        lines += [f"  %base{q}.at = getelementptr inbounds i64, ptr %bases, i64 {q - 1}",
                  f"  %base{q} = load i64, ptr %base{q}.at"]
    lines += ["  br label %next",
              "next:",
              "  %i = atomicrmw add ptr %counter, i64 1 monotonic",
              "  %more = icmp slt i64 %i, %nblocks",
              "  br i1 %more, label %body, label %done",
              "body:",
              "  %off = mul i64 %i, %words",
              "  %row = getelementptr inbounds i64, ptr %T, i64 %off"]
    at = 0
    for s, (kinds, flags) in enumerate(steps):
        lines += [f"  %f{s}.at = getelementptr inbounds i64, ptr %row, i64 {at}",
                  f"  %f{s}.w = load i64, ptr %f{s}.at",
                  f"  %f{s} = inttoptr i64 %f{s}.w to ptr"]
        at += 1
        values = []
        for j, (k, q) in enumerate(zip(kinds, flags)):
            v = f"%s{s}.{j}"
            lines += [f"  {v}.at = getelementptr inbounds i64, ptr %row, i64 {at}",
                      f"  {v}.w = load i64, ptr {v}.at"]
            at += 1
            made, value = argument_ir(v, k, f"%base{q}" if q else None)
            lines += made
            values.append(value)
        lines.append(f"  call void %f{s}({', '.join(values)})")
    lines += ["  br label %next", "done:", "  ret void", "}"]
    return "\n".join(lines) + "\n"


def words_per_block(steps: list) -> int:
    return sum(1 + len(kinds) for kinds, _ in steps)

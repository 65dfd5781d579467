"""The loop over rows that each row kernel's LLVM function is (llvm_rows, llvm_rownorm,
llvm_reduce), written once, so that a kernel writes only what it does with a row.

    define ...                     `define`, the function's signature line
    entry:     `entry`; br rows
    rows:      %ri = phi [ 0, entry ], [ %ri.next, `back` ]; to exit once %ri = %n_rows
    row.start: per (name, base, stride) of `rows`: %<n>o = %ri * stride and %name, the
               row's pointer into base (<n>: name's first letter: %ro/%row, %oo/%orow)
               `body`, which ends by branching to the block `done` opens
    `done`:    default: row.done: %ri.next = %ri + 1; br rows
    exit:      ret void

and the counted loop over a row's elements the kernels' bodies are made of (counted_loop,
entered from loop_pre's block).
"""
from __future__ import annotations

from typing import Sequence

STEP = ["row.done:", "  %ri.next = add i64 %ri, 1", "  br label %rows"]


def row_loop(define: str, ty: str, rows: Sequence[tuple[str, str, str]], body: Sequence[str], *,
             entry: Sequence[str] = (), done: Sequence[str] = STEP, back: str = "row.done",
             meta: Sequence[str] = ()) -> str:
    pointers = []
    for name, base, stride in rows:
        pointers += [f"  %{name[0]}o = mul i64 %ri, {stride}",
                     f"  %{name} = getelementptr {ty}, ptr %{base}, i64 %{name[0]}o"]
    return "\n".join([
        define,
        "entry:",
        *entry,
        "  br label %rows",
        "rows:",
        f"  %ri = phi i64 [ 0, %entry ], [ %ri.next, %{back} ]",
        "  %rows.more = icmp slt i64 %ri, %n_rows",
        "  br i1 %rows.more, label %row.start, label %exit",
        "row.start:",
        *pointers,
        *body,
        *done,
        "exit:",
        "  ret void",
        "}", *meta])


def loop_pre(tag: str) -> list[str]:
    """The block `{tag}.pre` a counted loop is entered from."""
    return [f"  br label %{tag}.pre", f"{tag}.pre:"]


def counted_loop(tag: str, start: str, body: list[str], after: str, ty_phis=(), loop_id: str = "", bound: str = "%k",
          latch: str = "") -> list[str]:
    """A counted loop j = start..bound-1 named `tag`, entered from block `{tag}.pre`: `body`
    uses %{tag}.j; `ty_phis` are (type, name, initial, next) carried values. Falls into
    block `after` (which the caller writes next). `loop_id`: its `!llvm.loop` metadata
    node. `latch`: the block `body` ends in, where it holds a loop of its own."""
    latch = latch or f"{tag}.body"
    lines = [f"  br label %{tag}", f"{tag}:",
             f"  %{tag}.j = phi i64 [ {start}, %{tag}.pre ], [ %{tag}.jn, %{latch} ]"]
    lines += [f"  %{name} = phi {ty} [ {init}, %{tag}.pre ], [ {nxt}, %{latch} ]" for ty, name, init, nxt in ty_phis]
    lines += [f"  %{tag}.more = icmp slt i64 %{tag}.j, {bound}",
              f"  br i1 %{tag}.more, label %{tag}.body, label %{after}",
              f"{tag}.body:", *body,
              f"  %{tag}.jn = add i64 %{tag}.j, 1",
              f"  br label %{tag}" + (f", !llvm.loop {loop_id}" if loop_id else "")]
    return lines

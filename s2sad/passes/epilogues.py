"""A matrix product joined with the elementwise pass next to it, so that the product is
never stored (gemm_epilogue.py runs them a block of rows at a time):

forward (a kernel in store mode whose one stored partial is w.r.t. the product):

    _1 = matmul(X, W)                                  _1, h, (dh,) = product_partials(X, W,
    h, (dh,) = store_partials(k, (_1, b), ('_1',))  ->      k, 0, (None, b), ('_1',))

reverse (the adjoint of the kernel's output, made by the product's adjoint, then
multiplied by the stored partial and summed for the bias):

    h_bar = matmul_lhs_bar(G, h, W)                     (...)
    ...                                             ->  ...
    (_1_bar, b_bar) = product_sums(dh, h_bar, (_1, b))  (_1_bar, b_bar) = lhs_bar_sums(G, h, W, dh, (_1, b))

and where the same product's other adjoint `W_bar = matmul_rhs_bar(G, h, W)` was written
after h_bar's line, it joins the call: `(_1_bar, b_bar, W_bar) = lhs_bar_sums(G, h, W,
dh, (_1, b), rhs=True)`; where `_1 = matmul(X, W1)`'s reversal reads `_1_bar` alone (X
not active), W1's adjoint joins it too and `_1_bar` is never formed: `(b_bar, W_bar,
W1_bar) = lhs_bar_sums(G, h, W, dh, (_1, b), rhs=True, nxt=(0, X, W1))` (the flags by
keyword, so that a reader of the generated code sees what they are).

Invariants (checked on the records the sweeps wrote, passes/emitted.py, never on the
lines' text):
- forward: the product is the statement right before the kernel, written as a recorded
  `matmul` line of two named operands at the kernel's indentation; nothing but the
  kernel reads `_1` in the forward program (once) and it is not the result; the kernel's
  partial w.r.t. `_1` is stored (store mode), so the reverse sweep reads only `_1`'s
  shape (unbroadcast, product_sums): the runtime binds `_1` to a zero-stride stand-in of
  its shape and dtype where it fuses.
- reverse: `h_bar`'s one binding is a recorded `matmul_lhs_bar` line of three named
  operands, in the same block at the function's top level, and no line between it and
  the sums (each parsed as Python) reads or binds `h_bar` or binds G, h or W, and none
  is a block of several lines: the product moved down to the sums' line computes the
  same value, and `h_bar` is read by nothing else (the adjoint of a kernel's output is
  read only where that kernel is reversed).
- the product's other adjoint (rhs_line): `W_bar = matmul_rhs_bar(G, h, W)`, a
  recorded line at the top level after `h_bar`'s line, of the same three operands, its
  target mentioned by no line after it and not one of the operands, moves into the call
  (`lhs_bar_sums(G, h, W, dh, (_1, b), rhs=True)`, W_bar bound last by the call's line):
  it was the target's first binding (a recorded adjoint line is written only then),
  nothing reads it before the call's line, and its operands are not rebound between
  (the lhs line's check), so W_bar gets the same value (within rounding: summed by
  blocks, gemm_epilogue) where it is first read.
- the next product's adjoint (join_next): at the reversal of `_1 = matmul(x, v)` whose
  seed `_1_bar` is a target of a joined sums line (sums_line: every target bound there
  first), x not active (nothing reads `_1_bar` but v's adjoint: `_1` is read only by
  the kernel, so its adjoint is bound only by that line and read only here) and v's
  adjoint not yet bound (a recorded first binding), and no line after the sums line
  mentions `_1_bar` or `v_bar` or binds x or v: that line becomes `(b_bar, ..., v_bar)
  = lhs_bar_sums(..., nxt=(j, x, v))`, `_1_bar` dropped from its targets (never
  stored), v_bar bound last, and nothing is written for the reversal.
- only the gradient's sweeps (forward_sweep, reverse_sweep) write these; the sweeps of
  higher derivatives keep the separate calls. S2SAD_GEMM_EPILOGUE=0 (or
  S2SAD_ROW_FUSION=0), read when a plan is built, keeps them too: the oracle tests and
  bench compare against.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .. import envflags
from ..parsing import ast_parse
from .adjoint_text import tuple_text
from .emitted import named_product, product_call, record_of
from .outpartials import output_partial

TOP = "    "          # the generated function's body: outside every loop and branch


def enabled() -> bool:
    """Are products joined with their elementwise neighbours? (Read when a plan is built.)"""
    return envflags.switch("S2SAD_GEMM_EPILOGUE") and envflags.switch("S2SAD_ROW_FUSION")


def fused_partials_line(st, kn: str, arg_texts: list, param: str, stored: list, prev, ind: str,
                        readers: dict, from_out: bool = False) -> str | None:
    """The line that replaces `prev` (`x = matmul(A, B)`) and st's store_partials, whose
    one stored partial is w.r.t. kernel parameter `param` (see the module docstring),
    or None where st is not that kernel of that product. `from_out`: the line that lets
    the runtime keep the partial as the kernel's output (out_partial_line)."""
    rec = named_product(prev, "matmul", ind, 2)
    if rec is None or not enabled():
        return None
    x = rec.target
    if st.args.count(x) != 1 or readers.get(x, 0) != 1:
        return None
    at = st.args.index(x)
    if st.op.kernel.params[at] != param:
        return None
    texts = ["None" if i == at else t for i, t in enumerate(arg_texts)]
    tup = "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"
    stored_text = "(" + ", ".join(stored) + ("," if len(stored) == 1 else "") + ")"
    a, b = rec.operands
    flag = ", from_out=True" if from_out else ""
    return f"{ind}{x}, {st.target}, {stored_text} = product_partials({a}, {b}, {kn}, {at}, {tup}, ({param!r},){flag})"


def out_partial_line(st, kn: str, arg_texts: list, param: str, stored: list, prev, ind: str,
                     readers: dict) -> str | None:
    """fused_partials_line with `from_out=True` where st's kernel's partial w.r.t. `param`
    is a function of its output (passes/outpartials.py), else None. The forward sweep
    keeps it aside; fused_sums_call puts it in the product's place when the adjoint reads
    that partial only through lhs_bar_sums (the one reader that takes it unstored)."""
    k = st.op.kernel
    if k.program.state or k.program.captures or output_partial(k.module((param,)), param) is None:
        return None
    return fused_partials_line(st, kn, arg_texts, param, stored, prev, ind, readers, from_out=True)


def line_names(line: str, headers: bool = False) -> tuple[set, set] | None:
    """(names bound, names mentioned) by `line`, one statement or a comment; None where
    it is not one line of Python (a block's header `for ...:` too, unless `headers`:
    then its names, its targets bound)."""
    if not isinstance(line, str) or "\n" in line:
        return None
    text = line.strip()
    if headers and text.endswith(":"):
        text += " pass"
    try:
        body = ast_parse(text).body
    except SyntaxError:
        return None
    every = {n.id for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    # a target's every name counts as bound: `x[i] = v` writes into x
    targets = [t for stmt in body for t in getattr(stmt, "targets", [getattr(stmt, "target", None)]) if t]
    bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return bound, every


def fused_sums_call(out: list, g: str, d: str, inputs: str, ind: str, out_partials: dict | None = None,
                    rhs_targets: list | None = None) -> str | None:
    """The call that replaces `product_sums(d, g, inputs)`, with g's product line taken out
    of `out` (see the module docstring), or None (out unchanged) where g is not bound so.
    Where it is lhs_bar_sums and `out_partials` holds d (the forward's lines that bind d,
    and the line that binds it unstored: out_partial_line), that line goes in. Where
    `rhs_targets` is a list and the product's other adjoint can join the call (rhs_line),
    its line is taken out too, the call returns that adjoint after the sums, and its
    target is appended to `rhs_targets` for the caller to bind last."""
    call = _fused_sums_call(out, g, d, ind, rhs_targets)
    if call is not None and out_partials and d in out_partials:
        lines, line = out_partials.pop(d)
        lines[:] = [line]
    if call is None:
        return None
    return f"{call}, {inputs}, rhs=True)" if rhs_targets else f"{call}, {inputs})"


def _fused_sums_call(out: list, g: str, d: str, ind: str, rhs_targets: list | None = None) -> str | None:
    if ind != TOP or not enabled():
        return None
    bound_after: set = set()
    mentioned_after: set = set()
    rhs = []                    # (index, record, names mentioned after it) of matmul_rhs_bar lines
    for i in range(len(out) - 1, -1, -1):
        line = out[i]
        if not isinstance(line, str):
            return None
        rec = record_of(line)
        if rec is not None and rec.target == g:
            rec = named_product(line, "matmul_lhs_bar", ind, 3)
            if rec is None or bound_after & set(rec.operands):
                return None
            joined = rhs_line(rhs, rec.operands) if rhs_targets is not None else None
            if joined is not None:
                del out[joined[0]]
                rhs_targets.append(joined[1])
            del out[i]
            return f"lhs_bar_sums({', '.join(rec.operands)}, {d}"
        other = named_product(line, "matmul_rhs_bar", ind, 3)
        if other is not None:
            rhs.append((i, other, set(mentioned_after)))
        names = line_names(line)
        if names is None or g in names[1]:     # (a line binding g mentions it too)
            return None
        bound_after |= names[0]
        mentioned_after |= names[1]
    return None


def rhs_line(candidates: list, operands: tuple) -> tuple | None:
    """(index, target) of the line `W_bar = matmul_rhs_bar(G, h, W)` among `candidates`
    (the recorded lines after `h_bar = matmul_lhs_bar(G, h, W)`, each with the names the
    lines after it mention) that can move down to the sums' line: the same three
    operands (no line after the lhs line binds them: checked by the caller), and no
    line after it mentions its target (so it is bound first at the sums' line, with the
    value it had). None where there is no such line."""
    for i, rec, after in candidates:
        if rec.operands == operands and rec.target not in after and rec.target not in operands:
            return i, rec.target
    return None


@dataclass(frozen=True)
class JoinedSums:
    """A written `(targets) = lhs_bar_sums(...)` line: the line (the very object in the
    sweep's output), its call without the closing parenthesis, its targets."""

    line: str
    call_open: str
    targets: tuple[str, ...]


def sums_line(sweep, g: str, d: str, group: list, ind: str, out: list, init: set) -> None:
    """The line of reverse_sweep's adjoints of `group`, which share the stored partial d
    and the seed g: lhs_bar_sums where g's product joins (fused_sums_call), else
    product_sums. A joined line whose targets are all bound there first (each input once)
    is kept in sweep.ctx.joined_sums for join_next."""
    first = len(set(group)) == len(group) and not set(group) & init
    rhs: list = []
    call = fused_sums_call(out, g, d, tuple_text(group), ind, sweep.ctx.out_partials, rhs)
    at = len(out)
    sweep.contribute_call(group, call or f"product_sums({d}, {g}, {tuple_text(group)})", ind, out, init, rhs)
    if call is not None and first:
        targets = tuple(sweep.bar(a) for a in group) + tuple(rhs)
        joined = JoinedSums(out[at], call[:-1], targets)
        for j, a in enumerate(group):
            sweep.ctx.joined_sums[sweep.bar(a)] = (joined, j)


def join_next(sweep, st, g: str, ind: str, out: list, init: set) -> bool:
    """At the reversal of `t = matmul(x, v)` whose seed g is a target of a joined sums
    line (x's kernel's input: the product's adjoint, read by nothing but this
    reversal), with x not active and v's adjoint not yet bound: `v_bar =
    matmul_rhs_bar(g, x, v)` goes into that line as `nxt` (g then never stored:
    gemm_epilogue) and True is returned; else False (nothing written). The lines after
    the sums line must not mention g or v_bar nor bind x or v."""
    got = sweep.ctx.joined_sums.get(g)
    call = product_call(st)
    if got is None or call is None or call.helper != "matmul" or ind != TOP or not enabled():
        return False
    joined, j = got
    x, v = call.operands
    if not (x.isidentifier() and v.isidentifier()) or x == v or sweep.is_active(x) or not sweep.is_active(v) \
            or v in init or joined.targets[j] != g:
        return False
    vb = sweep.bar(v)
    at = next((i for i, line in enumerate(out) if line is joined.line), None)
    if at is None or vb in joined.targets:
        return False
    for line in out[at + 1:]:
        names = line_names(line) if isinstance(line, str) else None
        if names is None or names[0] & {x, v} or {g, vb} & names[1]:
            return False
    targets = joined.targets[:j] + joined.targets[j + 1:] + (vb,)
    out[at] = f"{ind}{tuple_text(targets)} = {joined.call_open}, nxt=({j}, {x}, {v}))"
    init.add(v)
    sweep.unit.discard(v)
    return True

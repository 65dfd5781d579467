"""LLVM IR for the max-shifted exponential reductions along the rows of a 2-D float
array, each row's elementwise work and reductions in one pass over it (the row, k
elements, stays in cache between its sweeps):

    void s2sad_rowsm_<kind>_<f64|f32>(A, n_rows, k, row_stride, out)
        kind lse:         out[r] = log(sum_j exp(a[r, j] - m_r)) + m_r   (logs FLUSH_ROWS rows at a time)
             softmax:     out[r, j] = exp(a[r, j] - m_r) / sum_j exp(a[r, j] - m_r)
             logsoftmax:  out[r, j] = (a[r, j] - m_r) - log(sum_j exp(a[r, j] - m_r))

the one-hot (or any weights') product of a log-softmax, summed along the row, and its
adjoint, with the BAR_KINDS signature (C unused forward; forward `out` one value a row):

        xent:     A = a, B = y:            out[r] = sum_j y (a - m_r) - log(sum_j exp(a - m_r)) sum_j y
                                           (one sweep after the max; the logs FLUSH_ROWS rows at a time)
        xentbar:  A = a, B = y, C = g:     out = g_r (y - e sum_j y / sum_j e), e = exp(a - m_r)
                                           (each e kept in out between the sweeps: one exp an element)
        xentbarvalshort (rows of SHORT_K at most): xentbar's out, and xent's out[r] into D[r]
                  (one more pointer, D, after C): value_and_grad's joined head
        lsezbar:  A = a, B unread, C = g:  out = e g_r / sum_j e, e = exp(a - m_r): the adjoint of
                                           the max-shifted log-sum-exp from a alone, its value not
                                           needed (a gradient whose forward line only gave a shape)

(m_r the max as it is, the numpy idiom's; the sums with y carry `reassoc`, so they
vectorise), and the softmax family's adjoints, one pass per row as well (softmax_rules' formulas, operation for
operation but for the in-order sums):

    void s2sad_rowsm_<kind>_<f64|f32>(A, B, C, n_rows, k, a_stride, b_stride, out)
        kind softmaxbar:     A = g, B = s:    out = g s - s sum_j(g s)
             logsoftmaxbar:  A = g, B = out:  out = g - exp(out) sum_j(g)

(log-sum-exp's adjoint is lsezbar's, from a alone: g_r exp(a - lse_r) lost the row's
weights where lse_r rounds, a row of 1e308 gave ones; that kernel was removed.)

The module also holds llvm_rownorm's layer normalisation and llvm_mulsum's product with
its column sums (MULSUM_KINDS, its own signature: see there).

m_r is the row's max, NaN when the row holds one (numpy's maximum.reduce's value, found by
integer reductions that vectorise: _row_max);
for lse and logsoftmax a non-finite max is taken as 0 (scipy.special's convention, so a
row of -inf gives -inf and a row with +inf gives +inf or NaN as scipy does); softmax
shifts by the max as it is (scipy's softmax), and so do lseraw and logsoftmaxraw (the
max-shift a user writes with numpy: `z - np.max(z, axis=-1, keepdims=True)`). `out` is
C-contiguous (n_rows x k for the elementwise kinds). k >= 1 (the caller handles empty rows). The sums run in order from
0.0 (lse's and the xent kinds' as vectorised partial sums: `reassoc`, so that their exps
vectorise), not pairwise as numpy's: results agree with numpy's formula to a few ulp per term,
not bit for bit (rowsoftmax.py states the tolerance). exp and log are s2sad's own
(vecmath, within 4 ulp of glibc's), so no libm symbol is needed.
"""
from __future__ import annotations

import numpy as np

from . import llvm_mulsum, llvm_rownorm, vecmath
from .llvm_rowloop import counted_loop as _loop, loop_pre as _pre, row_loop

_TYPES = {np.dtype(np.float64): ("double", "f64"), np.dtype(np.float32): ("float", "f32")}
KINDS = ("lse", "softmax", "logsoftmax", "lseraw", "logsoftmaxraw")
BAR_KINDS = ("softmaxbar", "logsoftmaxbar")
NORM_KINDS = llvm_rownorm.KINDS          # layer normalisation and its adjoint (llvm_rownorm)
DOT_KINDS = ("xent", "xentbar", "lsezbar")   # sum_j y log_softmax(a), its adjoint, lse's from a (BAR_KINDS' signature)
SHORT_KINDS = ("lseshort", "lserawshort", "xentshort")  # lse, lseraw, xent for short rows: _short_function
SHORT_BAR_KINDS = ("xentbarshort", "lsezbarshort")    # xentbar, lsezbar for short rows (BAR_KINDS' signature)
SHORT_VALUE_KINDS = ("xentbarvalshort",)  # xentbarshort and xentshort's values in one pass (one pointer more: D)
SHORT_K = 16                             # the longest row they take
MULSUM_KINDS = llvm_mulsum.KINDS         # a product and its column sums (llvm_mulsum)
ALL_KINDS = KINDS + BAR_KINDS + NORM_KINDS + DOT_KINDS + SHORT_KINDS + SHORT_BAR_KINDS + SHORT_VALUE_KINDS + MULSUM_KINDS
_INT = {"double": ("i64", 64), "float": ("i32", 32)}     # a float's bits as an integer
FLUSH_ROWS = 64                          # rows whose logs are taken together (a power of 2)
LOOP_HINTS = (("llvm.loop.interleave.count", "i32 1"), ("llvm.loop.vectorize.predicate.enable", "i1 true"), ("llvm.loop.vectorize.enable", "i1 true"))


def symbol(kind: str, dtype) -> str:
    return f"s2sad_rowsm_{kind}_{_TYPES[np.dtype(dtype)][1]}"


def rows_ir(dtype) -> str:
    """The module with every kind for `dtype` (ALL_KINDS), with the exp, log and sqrt
    they call."""
    ty, _ = _TYPES[np.dtype(dtype)]
    parts, seen = [], set()
    calls = {}
    for fname in ("exp", "log"):
        sym, defs, decls = vecmath.define(fname, ty)
        calls[fname] = sym
        for name, text in (*decls, *defs):
            if name not in seen:
                seen.add(name)
                parts.append(text)
    it = _INT[ty][0]
    parts.append(f"declare {it} @llvm.smax.{it}({it}, {it})")
    for kind in KINDS:
        parts.append(_row_function(ty, dtype, kind, calls))
    for kind in BAR_KINDS:
        parts.append(_bar_function(ty, dtype, kind, calls))
    parts += llvm_rownorm.norm_ir(ty, lambda kind: symbol(kind, dtype))
    parts += [_dot_function(ty, dtype, kind, calls) for kind in DOT_KINDS]
    parts += [_short_function(ty, dtype, kind, calls) for kind in SHORT_KINDS]
    parts += [_short_bar_function(ty, dtype, kind, calls) for kind in SHORT_BAR_KINDS + SHORT_VALUE_KINDS]
    parts += llvm_mulsum.mulsum_ir(ty, lambda kind: symbol(kind, dtype))
    return "\n\n".join(parts) + "\n"


def _short_row_loops(base: int, count: int) -> tuple[list[str], list[str]]:
    """(ids, metadata lines) for `count` loops over short rows (10 classes): vectorised
    without interleaving and with the tail masked (LOOP_HINTS), since an unrolled vector
    loop, or a scalar remainder, would leave most of a row's exps scalar. `base`: a
    metadata number no other function of the module uses."""
    ids = [f"!{base + 1 + i}" for i in range(count)]
    hints = [f"!{base + 1 + count + i}" for i in range(len(LOOP_HINTS))]
    meta = [f"{i} = distinct !{{{i}, {', '.join(hints)}}}" for i in ids]
    meta += [f'{h} = !{{!"{name}", {value}}}' for h, (name, value) in zip(hints, LOOP_HINTS)]
    return ids, meta


def _row_end(flush: list[str] | None, ty: str = "", bufs: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """(entry lines, row.done block) of the rows loop. `flush` None: the next row follows.
    Else each row leaves values in out[ri] and in the stack buffers `bufs` (FLUSH_ROWS of
    `ty` each, slot ri mod FLUSH_ROWS), and every FLUSH_ROWS rows, and after the last,
    `flush` runs once per row of the block (%fl.r the row, %fl.i its slot): a loop across
    rows, so that the rows' logs vectorise instead of each waiting on its row's sums.
    The rows loop's back edge comes from block row.next."""
    if flush is None:
        return [], ["row.done:", "  %ri.next = add i64 %ri, 1", "  br label %row.next", "row.next:",
                    "  br label %rows"]
    entry = [f"  %{b} = alloca [{FLUSH_ROWS} x {ty}]" for b in bufs]
    low = FLUSH_ROWS - 1
    return entry, [
        "row.done:", "  %ri.next = add i64 %ri, 1",
        f"  %fl.low = and i64 %ri.next, {low}", "  %fl.full = icmp eq i64 %fl.low, 0",
        "  %fl.last = icmp eq i64 %ri.next, %n_rows", "  %fl.go = or i1 %fl.full, %fl.last",
        "  br i1 %fl.go, label %fl.pre, label %row.next",
        "fl.pre:", f"  %fl.c0 = and i64 %ri, {low}", "  %fl.cnt = add i64 %fl.c0, 1",
        "  %fl.start = sub i64 %ri.next, %fl.cnt", "  br label %fl",
        "fl:", "  %fl.i = phi i64 [ 0, %fl.pre ], [ %fl.in, %fl.body ]",
        "  %fl.more = icmp slt i64 %fl.i, %fl.cnt", "  br i1 %fl.more, label %fl.body, label %row.next",
        "fl.body:", "  %fl.r = add i64 %fl.start, %fl.i", *flush,
        "  %fl.in = add i64 %fl.i, 1", "  br label %fl",
        "row.next:", "  br label %rows"]


def _slot(ty: str, buf: str, index: str, name: str) -> str:
    return f"  %{name} = getelementptr {ty}, ptr %{buf}, i64 {index}"


AB_ROWS = [("arow", "A", "%a_stride"), ("brow", "B", "%b_stride"), ("orow", "out", "%k")]


def _ab_define(name: str, values: bool = False) -> str:
    """The signature of a kernel reading rows of A and B (and C by row) into rows of out
    (with `values`, one value a row into D as well)."""
    d = "ptr noalias %D, " if values else ""
    return (f"define void @{name}(ptr noalias %A, ptr noalias %B, ptr noalias %C, {d}i64 %n_rows, i64 %k, "
            f"i64 %a_stride, i64 %b_stride, ptr noalias %out) {{")


def _row_function(ty: str, dtype, kind: str, calls: dict) -> str:
    name = symbol(kind, dtype)
    name_kind = kind
    exp, log = calls["exp"], calls["log"]
    raw = kind.endswith("raw")
    kind = kind[:-3] if raw else kind
    shift = "%m" if raw or kind == "softmax" else "%mz"
    ids, meta = _short_row_loops(8000 + 10 * KINDS.index(name_kind), 2)
    body = _row_max(ty, "%row", ids[1])
    body += [f"  %m.d = fsub {ty} %m, %m",
             f"  %m.fin = fcmp ord {ty} %m.d, 0.0",
             f"  %mz = select i1 %m.fin, {ty} %m, {ty} 0.0"]
    if kind == "lse":        # the sum of exp(a - shift), reassociable so that the exps vectorise
        body += _pre("sm") + _loop("sm", "0", [
            f"  %sm.p = getelementptr {ty}, ptr %row, i64 %sm.j",
            f"  %sm.v = load {ty}, ptr %sm.p",
            f"  %sm.t = fsub {ty} %sm.v, {shift}",
            f"  %sm.e = call {ty} @{exp}({ty} %sm.t)",
            f"  %sm.next = fadd reassoc {ty} %s, %sm.e"], "sm.done", [(ty, "s", "0.0", "%sm.next")], ids[0])
    else:                    # the terms into out (a loop that vectorises), then their sum in order
        body += _pre("ex") + _loop("ex", "0", [
            f"  %ex.p = getelementptr {ty}, ptr %row, i64 %ex.j",
            f"  %ex.v = load {ty}, ptr %ex.p",
            f"  %ex.t = fsub {ty} %ex.v, {shift}",
            f"  %ex.e = call {ty} @{exp}({ty} %ex.t)",
            f"  %ex.o = getelementptr {ty}, ptr %orow, i64 %ex.j",
            f"  store {ty} %ex.e, ptr %ex.o"], "ex.done")
        body += ["ex.done:"] + _pre("sm") + _loop("sm", "0", [
            f"  %sm.o = getelementptr {ty}, ptr %orow, i64 %sm.j",
            f"  %sm.e = load {ty}, ptr %sm.o",
            f"  %sm.next = fadd {ty} %s, %sm.e"], "sm.done", [(ty, "s", "0.0", "%sm.next")])
    body += ["sm.done:"]
    flush = None
    if kind == "lse":        # the sum into out, the shift into its slot; the logs a block at a time
        body += [f"  %op = getelementptr {ty}, ptr %out, i64 %ri", f"  store {ty} %s, ptr %op",
                 f"  %slot = and i64 %ri, {FLUSH_ROWS - 1}", _slot(ty, "shifts", "%slot", "sp"),
                 f"  store {ty} {shift}, ptr %sp", "  br label %row.done"]
        flush = [f"  %fl.op = getelementptr {ty}, ptr %out, i64 %fl.r", f"  %fl.s = load {ty}, ptr %fl.op",
                 _slot(ty, "shifts", "%fl.i", "fl.mp"), f"  %fl.m = load {ty}, ptr %fl.mp",
                 f"  %fl.l = call {ty} @{log}({ty} %fl.s)", f"  %fl.v = fadd {ty} %fl.l, %fl.m",
                 f"  store {ty} %fl.v, ptr %fl.op"]
    elif kind == "softmax":
        body += _pre("dv") + _loop("dv", "0", [
            f"  %dv.o = getelementptr {ty}, ptr %orow, i64 %dv.j",
            f"  %dv.v = load {ty}, ptr %dv.o",
            f"  %dv.q = fdiv {ty} %dv.v, %s",
            f"  store {ty} %dv.q, ptr %dv.o"], "row.done")
    else:
        body += [f"  %ls = call {ty} @{log}({ty} %s)"]
        body += _pre("lg") + _loop("lg", "0", [
            f"  %lg.p = getelementptr {ty}, ptr %row, i64 %lg.j",
            f"  %lg.v = load {ty}, ptr %lg.p",
            f"  %lg.t = fsub {ty} %lg.v, {shift}",
            f"  %lg.r = fsub {ty} %lg.t, %ls",
            f"  %lg.o = getelementptr {ty}, ptr %orow, i64 %lg.j",
            f"  store {ty} %lg.r, ptr %lg.o"], "row.done")
    entry, done = _row_end(flush, ty, ("shifts",))
    return row_loop(f"define void @{name}(ptr noalias %A, i64 %n_rows, i64 %k, i64 %row_stride, ptr noalias %out) {{",
                    ty, [("row", "A", "%row_stride"), ("orow", "out", "%k")], body, entry=entry, done=done,
                    back="row.next", meta=meta)


def _bar_function(ty: str, dtype, kind: str, calls: dict) -> str:
    """An adjoint (BAR_KINDS); C is not read."""
    exp = calls["exp"]
    term = ([f"  %sm.b = load {ty}, ptr %sm.bp", f"  %sm.e = fmul {ty} %sm.a, %sm.b"]
            if kind == "softmaxbar" else [f"  %sm.e = fadd {ty} %sm.a, 0.0"])
    body = _pre("sm") + _loop("sm", "0", [
        f"  %sm.ap = getelementptr {ty}, ptr %arow, i64 %sm.j", f"  %sm.a = load {ty}, ptr %sm.ap",
        f"  %sm.bp = getelementptr {ty}, ptr %brow, i64 %sm.j", *term,
        f"  %sm.next = fadd {ty} %d, %sm.e"], "sm.done", [(ty, "d", "0.0", "%sm.next")])
    if kind == "softmaxbar":     # g s - s d
        out = [f"  %o.gs = fmul {ty} %o.a, %o.b", f"  %o.sd = fmul {ty} %o.b, %d", f"  %o.r = fsub {ty} %o.gs, %o.sd"]
    else:                        # g - exp(out) d
        out = [f"  %o.e = call {ty} @{exp}({ty} %o.b)", f"  %o.ed = fmul {ty} %o.e, %d",
               f"  %o.r = fsub {ty} %o.a, %o.ed"]
    body += ["sm.done:"] + _pre("o") + _loop("o", "0", [
        f"  %o.ap = getelementptr {ty}, ptr %arow, i64 %o.j", f"  %o.a = load {ty}, ptr %o.ap",
        f"  %o.bp = getelementptr {ty}, ptr %brow, i64 %o.j", f"  %o.b = load {ty}, ptr %o.bp", *out,
        f"  %o.op = getelementptr {ty}, ptr %orow, i64 %o.j", f"  store {ty} %o.r, ptr %o.op"], "row.done")
    return row_loop(_ab_define(symbol(kind, dtype)), ty, AB_ROWS, body)


def _row_max(ty: str, row: str = "%arow", loop_id: str = "") -> list[str]:
    """%m: the max of the row at `row`, NaN where it holds one (numpy's maximum.reduce's
    value, but for a NaN's payload), as two integer reductions that vectorise: the max of
    the elements' order-preserving integer keys (a float's bits with the magnitude bits
    flipped where negative; a NaN's key the least) and whether any element is a NaN.
    (A float max reduction does not vectorise without no-NaN flags.) Ends in mx.done."""
    it, bits = _INT[ty]
    least = -(1 << (bits - 1))
    return _pre("mx") + _loop("mx", "0", [
        f"  %mx.p = getelementptr {ty}, ptr {row}, i64 %mx.j",
        f"  %mx.v = load {ty}, ptr %mx.p",
        f"  %mx.isnan = fcmp uno {ty} %mx.v, 0.0",
        f"  %mx.b = bitcast {ty} %mx.v to {it}", *_order_key(it, bits, "%mx.b", "mx.k0"),
        f"  %mx.k = select i1 %mx.isnan, {it} {least}, {it} %mx.k0",
        f"  %mx.next = call {it} @llvm.smax.{it}({it} %mx.m, {it} %mx.k)",
        "  %mx.bit = zext i1 %mx.isnan to i32",
        "  %mx.nnext = or i32 %mx.any, %mx.bit"], "mx.done",
        [(it, "mx.m", str(least), "%mx.next"), ("i32", "mx.any", "0", "%mx.nnext")], loop_id) + [
        "mx.done:", *_order_key(it, bits, "%mx.m", "mx.mb"),       # the key's own inverse
        f"  %mx.md = bitcast {it} %mx.mb to {ty}",
        "  %mx.hasnan = icmp ne i32 %mx.any, 0",
        f"  %m = select i1 %mx.hasnan, {ty} 0x7FF8000000000000, {ty} %mx.md"]


def _order_key(it: str, bits: int, x: str, name: str) -> list[str]:
    """%name: x (a float's bits) with its magnitude bits flipped where its sign is set."""
    return [f"  %{name}.s = ashr {it} {x}, {bits - 1}", f"  %{name}.f = lshr {it} %{name}.s, 1",
            f"  %{name} = xor {it} {x}, %{name}.f"]


def _dot_function(ty: str, dtype, kind: str, calls: dict) -> str:
    """xent / xentbar / lsezbar (DOT_KINDS): the row's max, its log-sum-exp and the sum of
    y (not lsezbar's: it reads no B) in two sweeps, then the row's value or its adjoint in
    a third."""
    exp, log = calls["exp"], calls["log"]
    lsez = kind == "lsezbar"
    ids, meta = _short_row_loops(9000 + 10 * DOT_KINDS.index(kind), 3)
    # the value sums y (a - m) in the same sweep
    dot = [f"  %sm.yt = fmul {ty} %sm.y, %sm.t", f"  %sm.dnext = fadd reassoc {ty} %dot, %sm.yt"] \
        if kind == "xent" else []
    dot_phi = [(ty, "dot", "0.0", "%sm.dnext")] if kind == "xent" else []
    # the adjoint keeps each exp in out (one exp an element, no log)
    keep = [f"  %sm.o = getelementptr {ty}, ptr %orow, i64 %sm.j", f"  store {ty} %sm.e, ptr %sm.o"] \
        if kind != "xent" else []
    ysum = [] if lsez else [f"  %sm.yp = getelementptr {ty}, ptr %brow, i64 %sm.j", f"  %sm.y = load {ty}, ptr %sm.yp",
                            f"  %sm.ynext = fadd reassoc {ty} %sy, %sm.y"]
    body = _row_max(ty, "%arow", ids[2]) + _pre("sm") + _loop("sm", "0", [
        f"  %sm.p = getelementptr {ty}, ptr %arow, i64 %sm.j", f"  %sm.v = load {ty}, ptr %sm.p",
        f"  %sm.t = fsub {ty} %sm.v, %m", f"  %sm.e = call {ty} @{exp}({ty} %sm.t)", *keep,
        f"  %sm.next = fadd reassoc {ty} %s, %sm.e", *ysum, *dot], "sm.done",
        [(ty, "s", "0.0", "%sm.next")] + ([] if lsez else [(ty, "sy", "0.0", "%sm.ynext")]) + dot_phi, ids[0])
    body += ["sm.done:"]
    flush = None
    if kind == "xent":       # out = sum y (a - m) - log(sum e) sum y, the logs a block of rows at a time
        body += [f"  %op = getelementptr {ty}, ptr %out, i64 %ri", f"  store {ty} %dot, ptr %op",
                 f"  %slot = and i64 %ri, {FLUSH_ROWS - 1}", _slot(ty, "sums", "%slot", "sp"),
                 f"  store {ty} %s, ptr %sp", _slot(ty, "ysums", "%slot", "yp"), f"  store {ty} %sy, ptr %yp",
                 "  br label %row.done"]
        flush = [f"  %fl.op = getelementptr {ty}, ptr %out, i64 %fl.r", f"  %fl.d = load {ty}, ptr %fl.op",
                 _slot(ty, "sums", "%fl.i", "fl.sp"), f"  %fl.s = load {ty}, ptr %fl.sp",
                 _slot(ty, "ysums", "%fl.i", "fl.yp"), f"  %fl.y = load {ty}, ptr %fl.yp",
                 f"  %fl.l = call {ty} @{log}({ty} %fl.s)", f"  %fl.ly = fmul {ty} %fl.l, %fl.y",
                 f"  %fl.v = fsub {ty} %fl.d, %fl.ly", f"  store {ty} %fl.v, ptr %fl.op"]
    elif lsez:               # out = e (g / sum(e))
        body += [f"  %gp = getelementptr {ty}, ptr %C, i64 %ri", f"  %gr = load {ty}, ptr %gp",
                 f"  %q = fdiv {ty} %gr, %s"]
        body += _pre("o") + _loop("o", "0", [
            f"  %o.op = getelementptr {ty}, ptr %orow, i64 %o.j", f"  %o.e = load {ty}, ptr %o.op",
            f"  %o.r = fmul {ty} %o.e, %q", f"  store {ty} %o.r, ptr %o.op"], "row.done", loop_id=ids[1])
    else:
        body += [f"  %gp = getelementptr {ty}, ptr %C, i64 %ri", f"  %gr = load {ty}, ptr %gp",
                 f"  %q = fdiv {ty} %sy, %s"]          # out = g (y - e sum(y) / sum(e))
        body += _pre("o") + _loop("o", "0", [
            f"  %o.yp = getelementptr {ty}, ptr %brow, i64 %o.j", f"  %o.y = load {ty}, ptr %o.yp",
            f"  %o.op = getelementptr {ty}, ptr %orow, i64 %o.j", f"  %o.e = load {ty}, ptr %o.op",
            f"  %o.es = fmul {ty} %o.e, %q", f"  %o.d = fsub {ty} %o.y, %o.es", f"  %o.r = fmul {ty} %gr, %o.d",
            f"  store {ty} %o.r, ptr %o.op"], "row.done", loop_id=ids[1])
    entry, done = _row_end(flush, ty, ("sums", "ysums"))
    return row_loop(_ab_define(symbol(kind, dtype)), ty, AB_ROWS, body, entry=entry, done=done, back="row.next",
                    meta=meta)


# ---------------------------------------------------------------- short rows, across rows


def _block_loop(define: str, ty: str, allocas: list[str], ybase: list[str], body: list[str], back: str,
                meta: list[str]) -> str:
    """A short-row kernel: blocks of FLUSH_ROWS rows (%r0 the first, %cnt how many, %blkp
    and, with ybase, %blkq their pointers into A and B), `body` ending in block `back`."""
    return "\n".join([
        define,
        "entry:", *allocas, "  br label %blk",
        "blk:",
        f"  %r0 = phi i64 [ 0, %entry ], [ %r0n, %{back} ]",
        "  %blk.more = icmp slt i64 %r0, %n_rows",
        "  br i1 %blk.more, label %blk.body, label %exit",
        "blk.body:",
        "  %left = sub i64 %n_rows, %r0",
        f"  %short = icmp slt i64 %left, {FLUSH_ROWS}",
        f"  %cnt = select i1 %short, i64 %left, i64 {FLUSH_ROWS}",
        "  %base = mul i64 %r0, %a_stride",
        f"  %blkp = getelementptr {ty}, ptr %A, i64 %base", *ybase,
        *body,
        f"  %r0n = add i64 %r0, {FLUSH_ROWS}",
        "  br label %blk",
        "exit:",
        "  ret void",
        "}", *meta])


def _sh_element(ty: str, tag: str, cols: str = "cols", v: str = "v") -> list[str]:
    """%tag.v: a[r0 + r, j] from the block's columns (r the inner loop's, j the outer's)."""
    return [f"  %{tag}.{v}o = mul i64 %{tag}.j, {FLUSH_ROWS}", f"  %{tag}.{v}i = add i64 %{tag}.{v}o, %{tag}r.j",
            f"  %{tag}.{v}p = getelementptr {ty}, ptr %{cols}, i64 %{tag}.{v}i",
            f"  %{tag}.{v} = load {ty}, ptr %{tag}.{v}p"]


def _sh_rows(tag: str, body: list[str], loop_id: str) -> list[str]:
    """A loop across the block's rows (%tag.j)."""
    return _pre(tag) + _loop(tag, "0", body, f"{tag}.done", bound="%cnt", loop_id=loop_id) + [f"{tag}.done:"]


def _sh_columns(ty: str, tag: str, body: list[str], loop_id: str) -> list[str]:
    """For each column j (%tag.j), a loop across the rows (%{tag}r.j) with its element %tag.v."""
    inner = _pre(tag + "r") + _loop(tag + "r", "0", _sh_element(ty, tag) + body, f"{tag}.latch", bound="%cnt",
                                    loop_id=loop_id) + [f"{tag}.latch:"]
    return _pre(tag) + _loop(tag, "0", inner, f"{tag}.done", latch=f"{tag}.latch") + [f"{tag}.done:"]


def _sh_copy(ty: str, src: str, stride: str, cols: str) -> list[str]:
    """In the copy loop (row %tp.j, column %tpc.j, slot %tp.c): src's element into cols."""
    return [f"  %tp.{cols}.ro = mul i64 %tp.j, {stride}", f"  %tp.{cols}.o = add i64 %tp.{cols}.ro, %tpc.j",
            f"  %tp.{cols}.p = getelementptr {ty}, ptr {src}, i64 %tp.{cols}.o",
            f"  %tp.{cols}.v = load {ty}, ptr %tp.{cols}.p",
            f"  %tp.{cols}.cp = getelementptr {ty}, ptr %{cols}, i64 %tp.c", f"  store {ty} %tp.{cols}.v, ptr %tp.{cols}.cp"]


def _sh_to_columns(copies: list[str]) -> list[str]:
    """The copy loop over the block's rows and their k columns (slot %tp.c = j FLUSH_ROWS + r)."""
    inner = _pre("tpc") + _loop("tpc", "0", [f"  %tp.co = mul i64 %tpc.j, {FLUSH_ROWS}", "  %tp.c = add i64 %tp.co, %tp.j",
                                             *copies], "tp.latch") + ["tp.latch:"]
    return _pre("tp") + _loop("tp", "0", inner, "tp.done", bound="%cnt", latch="tp.latch") + ["tp.done:"]


def _sh_max_shift(ty: str, finite: bool, ids: list[str], init_id: str) -> list[str]:
    """The block's rows' shifts into the slots `shifts`: each row's max (the integer keys
    of _row_max, across rows, column by column), 0 where not finite if `finite`."""
    it, bits = _INT[ty]
    least = -(1 << (bits - 1))
    rows, columns, r_mc, r_sh = _sh_rows, (lambda *a: _sh_columns(ty, *a)), "%mcr.j", "%sh.j"
    body = rows("mi", [_slot(it, "keys", "%mi.j", "mi.kp"), f"  store {it} {least}, ptr %mi.kp",
                       _slot("i32", "nans", "%mi.j", "mi.np"), "  store i32 0, ptr %mi.np"], init_id)
    body += columns("mc", [
        f"  %mc.isnan = fcmp uno {ty} %mc.v, 0.0", f"  %mc.b = bitcast {ty} %mc.v to {it}",
        *_order_key(it, bits, "%mc.b", "mc.k0"), f"  %mc.k = select i1 %mc.isnan, {it} {least}, {it} %mc.k0",
        _slot(it, "keys", r_mc, "mc.kp"), f"  %mc.old = load {it}, ptr %mc.kp",
        f"  %mc.new = call {it} @llvm.smax.{it}({it} %mc.old, {it} %mc.k)", f"  store {it} %mc.new, ptr %mc.kp",
        _slot("i32", "nans", r_mc, "mc.np"), "  %mc.n0 = load i32, ptr %mc.np", "  %mc.bit = zext i1 %mc.isnan to i32",
        "  %mc.n1 = or i32 %mc.n0, %mc.bit", "  store i32 %mc.n1, ptr %mc.np"], ids[0])
    body += rows("sh", [
        _slot(it, "keys", r_sh, "sh.kp"), f"  %sh.key = load {it}, ptr %sh.kp", *_order_key(it, bits, "%sh.key", "sh.mb"),
        f"  %sh.md = bitcast {it} %sh.mb to {ty}", _slot("i32", "nans", r_sh, "sh.np"), "  %sh.n = load i32, ptr %sh.np",
        "  %sh.hasnan = icmp ne i32 %sh.n, 0", f"  %sh.m = select i1 %sh.hasnan, {ty} 0x7FF8000000000000, {ty} %sh.md",
        f"  %sh.d = fsub {ty} %sh.m, %sh.m", f"  %sh.fin = fcmp ord {ty} %sh.d, 0.0",
        f"  %sh.z = select i1 %sh.fin, {ty} %sh.m, {ty} 0.0" if finite else f"  %sh.z = fadd {ty} %sh.m, 0.0",
        _slot(ty, "shifts", r_sh, "sh.zp"), f"  store {ty} %sh.z, ptr %sh.zp"], ids[1])
    return body


def _short_function(ty: str, dtype, kind: str, calls: dict) -> str:
    """lseshort / lserawshort (KINDS' signature) and xentshort (DOT_KINDS'): lse / lseraw /
    xent computed FLUSH_ROWS rows at a time, column by column: the block copied to
    columns on the stack (y's too), then each step (the max keys, the shift, the exps
    summed in order, the log) a loop across the block's rows over stack slots, which
    vectorises across rows, where a short row (SHORT_K elements at most) left the vector
    lanes of a row loop half idle and each row waiting on its own reductions. Same
    values as lse / lseraw / xent to rounding (the sums in order)."""
    it, bits = _INT[ty]
    least = -(1 << (bits - 1))
    exp, log = calls["exp"], calls["log"]
    ids, meta = _short_row_loops(7000 + 20 * SHORT_KINDS.index(kind), 6)
    xent = kind == "xentshort"
    element, rows, columns = (lambda *a: _sh_element(ty, *a)), _sh_rows, (lambda *a: _sh_columns(ty, *a))
    copy = lambda *a: _sh_copy(ty, *a)    # noqa: E731
    r_in, r_sc, r_ot = "%in.j", "%scr.j", "%ot.j"
    # the block's rows copied to columns (cols[j][r]), so that the steps below read across rows contiguously
    body = _sh_to_columns(copy("%blkp", "%a_stride", "cols") + (copy("%blkq", "%b_stride", "ycols") if xent else []))
    zero = [(b, "0.0") for b in ("sums", "ysums", "dots")] if xent else [("sums", "0.0")]
    body += rows("in", [line for b, v in zero for line in (_slot(ty, b, r_in, f"in.{b}"), f"  store {ty} {v}, ptr %in.{b}")],
                 ids[0])
    body += _sh_max_shift(ty, kind == "lseshort", ids[1:3], ids[5])
    ysum = [*element("sc", "ycols", "y"), _slot(ty, "ysums", r_sc, "sc.syp"), f"  %sc.sy = load {ty}, ptr %sc.syp",
            f"  %sc.sy1 = fadd {ty} %sc.sy, %sc.y", f"  store {ty} %sc.sy1, ptr %sc.syp",
            f"  %sc.yt = fmul {ty} %sc.y, %sc.t", _slot(ty, "dots", r_sc, "sc.dp"), f"  %sc.dt = load {ty}, ptr %sc.dp",
            f"  %sc.dt1 = fadd {ty} %sc.dt, %sc.yt", f"  store {ty} %sc.dt1, ptr %sc.dp"] if xent else []
    body += columns("sc", [
        _slot(ty, "shifts", r_sc, "sc.zp"), f"  %sc.z = load {ty}, ptr %sc.zp", f"  %sc.t = fsub {ty} %sc.v, %sc.z",
        f"  %sc.e = call {ty} @{exp}({ty} %sc.t)", _slot(ty, "sums", r_sc, "sc.sp"), f"  %sc.s = load {ty}, ptr %sc.sp",
        f"  %sc.s1 = fadd {ty} %sc.s, %sc.e", f"  store {ty} %sc.s1, ptr %sc.sp", *ysum], ids[3])
    if xent:                 # sum y (a - m) - log(sum e) sum y
        value = [_slot(ty, "ysums", r_ot, "ot.yp"), f"  %ot.sy = load {ty}, ptr %ot.yp",
                 _slot(ty, "dots", r_ot, "ot.dp"), f"  %ot.dt = load {ty}, ptr %ot.dp",
                 f"  %ot.ly = fmul {ty} %ot.l, %ot.sy", f"  %ot.res = fsub {ty} %ot.dt, %ot.ly"]
    else:
        value = [_slot(ty, "shifts", r_ot, "ot.zp"), f"  %ot.z = load {ty}, ptr %ot.zp",
                 f"  %ot.res = fadd {ty} %ot.l, %ot.z"]
    body += rows("ot", [
        _slot(ty, "sums", r_ot, "ot.sp"), f"  %ot.s = load {ty}, ptr %ot.sp", f"  %ot.l = call {ty} @{log}({ty} %ot.s)",
        *value, "  %ot.r = add i64 %r0, %ot.j", f"  %ot.op = getelementptr {ty}, ptr %out, i64 %ot.r",
        f"  store {ty} %ot.res, ptr %ot.op"], ids[4])
    slots = (("keys", it), ("nans", "i32"), ("sums", ty), ("shifts", ty)) + ((("ysums", ty), ("dots", ty)) if xent else ())
    allocas = [f"  %{b} = alloca [{FLUSH_ROWS} x {t}]" for b, t in slots]
    allocas += [f"  %{c} = alloca [{FLUSH_ROWS * SHORT_K} x {ty}]" for c in (("cols", "ycols") if xent else ("cols",))]
    params = ("ptr noalias %A, ptr noalias %B, ptr noalias %C, i64 %n_rows, i64 %k, i64 %a_stride, i64 %b_stride"
              if xent else "ptr noalias %A, i64 %n_rows, i64 %k, i64 %a_stride")
    ybase = ["  %ybase = mul i64 %r0, %b_stride", f"  %blkq = getelementptr {ty}, ptr %B, i64 %ybase"] if xent else []
    return _block_loop(f"define void @{symbol(kind, dtype)}({params}, ptr noalias %out) {{", ty, allocas, ybase, body,
                       "ot.done", meta)


def _short_bar_function(ty: str, dtype, kind: str, calls: dict) -> str:
    """xentbarshort: out = g_r (y - e sum y / sum e), e = exp(a - m_r), and lsezbarshort:
    out = e g_r / sum e (no y), for short rows, column by column as _short_function's,
    the block's result in columns on the stack and copied to out's rows at the end.
    (lse's old adjoint, one exp an element with no reduction a row, gained nothing so.)
    xentbarvalshort: xentbarshort, and each row's xentshort value into D[r] (its sums
    and its log made as xentshort makes them: the same bits), for value_and_grad's
    joined head (xent_head), which made them by a second pass over the block first."""
    exp, log = calls["exp"], calls["log"]
    value = kind == "xentbarvalshort"
    xent = kind == "xentbarshort" or value
    ids, meta = _short_row_loops(7500 + 20 * (SHORT_BAR_KINDS + SHORT_VALUE_KINDS).index(kind), 7)
    body = _sh_to_columns(_sh_copy(ty, "%blkp", "%a_stride", "cols")
                          + (_sh_copy(ty, "%blkq", "%b_stride", "ycols") if xent else []))
    row = "%ecr.j"
    sums = ("sums", "ysums", "dots") if value else ("sums", "ysums") if xent else ("sums",)
    body += _sh_rows("in", [line for b in sums
                            for line in (_slot(ty, b, "%in.j", f"in.{b}"), f"  store {ty} 0.0, ptr %in.{b}")], ids[0])
    body += _sh_max_shift(ty, False, ids[1:3], ids[3])
    ysum = [*_sh_element(ty, "ec", "ycols", "y"), _slot(ty, "ysums", row, "ec.syp"), f"  %ec.sy = load {ty}, ptr %ec.syp",
            f"  %ec.sy1 = fadd {ty} %ec.sy, %ec.y", f"  store {ty} %ec.sy1, ptr %ec.syp"] if xent else []
    if value:                # xentshort's sum of y (a - m), in column order
        ysum += [f"  %ec.yt = fmul {ty} %ec.y, %ec.t", _slot(ty, "dots", row, "ec.dp"), f"  %ec.dt = load {ty}, ptr %ec.dp",
                 f"  %ec.dt1 = fadd {ty} %ec.dt, %ec.yt", f"  store {ty} %ec.dt1, ptr %ec.dp"]
    body += _sh_columns(ty, "ec", [     # e into ocols, its sum (and y's)
        _slot(ty, "shifts", row, "ec.zp"), f"  %ec.z = load {ty}, ptr %ec.zp", f"  %ec.t = fsub {ty} %ec.v, %ec.z",
        f"  %ec.e = call {ty} @{exp}({ty} %ec.t)", f"  %ec.op = getelementptr {ty}, ptr %ocols, i64 %ec.vi",
        f"  store {ty} %ec.e, ptr %ec.op", _slot(ty, "sums", row, "ec.sp"), f"  %ec.s = load {ty}, ptr %ec.sp",
        f"  %ec.s1 = fadd {ty} %ec.s, %ec.e", f"  store {ty} %ec.s1, ptr %ec.sp", *ysum], ids[4])
    if xent:                 # q = sum y / sum e into the slot of the sums
        num = [_slot(ty, "ysums", "%q.j", "q.yp"), f"  %q.n = load {ty}, ptr %q.yp"]
    else:                    # q = g / sum e
        num = ["  %q.gr = add i64 %r0, %q.j", f"  %q.gp = getelementptr {ty}, ptr %C, i64 %q.gr",
               f"  %q.n = load {ty}, ptr %q.gp"]
    if value:                # the row's value, as xentshort's: sum y (a - m) - log(sum e) sum y
        num += [f"  %q.l = call {ty} @{log}({ty} %q.s)", f"  %q.ly = fmul {ty} %q.l, %q.n",
                _slot(ty, "dots", "%q.j", "q.dp"), f"  %q.dt = load {ty}, ptr %q.dp", f"  %q.res = fsub {ty} %q.dt, %q.ly",
                "  %q.r = add i64 %r0, %q.j", f"  %q.vp = getelementptr {ty}, ptr %D, i64 %q.r",
                f"  store {ty} %q.res, ptr %q.vp"]
    body += _sh_rows("q", [_slot(ty, "sums", "%q.j", "q.sp"), f"  %q.s = load {ty}, ptr %q.sp", *num,
                           f"  %q.q = fdiv {ty} %q.n, %q.s", f"  store {ty} %q.q, ptr %q.sp"], ids[5])
    term = [*_sh_element(ty, "oc", "ocols", "e"), _slot(ty, "sums", "%ocr.j", "oc.qp"), f"  %oc.q = load {ty}, ptr %oc.qp"]
    if xent:
        g = ["  %oc.gr = add i64 %r0, %ocr.j", f"  %oc.gp = getelementptr {ty}, ptr %C, i64 %oc.gr"]
        term += [f"  %oc.es = fmul {ty} %oc.e, %oc.q", *_sh_element(ty, "oc", "ycols", "y"),
                 f"  %oc.d = fsub {ty} %oc.y, %oc.es", *g, f"  %oc.g = load {ty}, ptr %oc.gp",
                 f"  %oc.r = fmul {ty} %oc.g, %oc.d"]
    else:
        term += [f"  %oc.r = fmul {ty} %oc.e, %oc.q"]
    body += _sh_columns(ty, "oc", [*term, f"  %oc.op = getelementptr {ty}, ptr %ocols, i64 %oc.vi",
                                   f"  store {ty} %oc.r, ptr %oc.op"], ids[6])
    # ocols back to out's rows (out C-contiguous, n_rows x k)
    back = _pre("bkc") + _loop("bkc", "0", [
        f"  %bk.co = mul i64 %bkc.j, {FLUSH_ROWS}", "  %bk.c = add i64 %bk.co, %bk.j",
        f"  %bk.cp = getelementptr {ty}, ptr %ocols, i64 %bk.c", f"  %bk.v = load {ty}, ptr %bk.cp",
        "  %bk.r = add i64 %r0, %bk.j", "  %bk.ro = mul i64 %bk.r, %k", "  %bk.o = add i64 %bk.ro, %bkc.j",
        f"  %bk.op = getelementptr {ty}, ptr %out, i64 %bk.o", f"  store {ty} %bk.v, ptr %bk.op"], "bk.latch") + ["bk.latch:"]
    body += _pre("bk") + _loop("bk", "0", back, "bk.done", bound="%cnt", latch="bk.latch") + ["bk.done:"]
    slots = (("keys", _INT[ty][0]), ("nans", "i32"), *((b, ty) for b in sums), ("shifts", ty))
    allocas = [f"  %{b} = alloca [{FLUSH_ROWS} x {t}]" for b, t in slots]
    allocas += [f"  %{c} = alloca [{FLUSH_ROWS * SHORT_K} x {ty}]" for c in (("cols", "ycols", "ocols") if xent
                                                                            else ("cols", "ocols"))]
    ybase = ["  %ybase = mul i64 %r0, %b_stride", f"  %blkq = getelementptr {ty}, ptr %B, i64 %ybase"] if xent else []
    return _block_loop(_ab_define(symbol(kind, dtype), value), ty, allocas, ybase, body, "bk.done", meta)

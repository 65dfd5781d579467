"""LLVM IR for reductions of a C-contiguous 2-D float array along one axis, with the bits
of numpy's (numpy's own loops pay ~20 ns a row, which dominates short rows: the sum of a
10-class softmax's rows takes 200 us at n = 10,000 where a copy takes 17).

    void s2sad_rows_<op>_<f64|f32>(A, n_rows, k, row_stride, out)   op: sum, max, min
    void s2sad_cols_sum_<f64|f32>(A, n_rows, k, row_stride, out)

`rows_*` reduce each row of k elements into out[row]; `cols_sum` sums the rows into
out[0:k]. Strides are in elements. The bits are numpy's (tests/test_reduce.py checks
them against numpy and against a Python statement of the rule):

- a row's sum is numpy's pairwise sum from 0.0: below 8 elements in order; up to 128
  in 8 interleaved partial sums combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then
  the rest in order; above 128 the two halves (the first a multiple of 8), recursively;
- a row's max (min) runs in order: m = a[0], then m = a[j] unless m >= a[j] (m <= a[j])
  or m is NaN, so a NaN anywhere gives NaN, as numpy's maximum.reduce does;
- the column sum adds the rows in order to 0.0, as numpy's reduction over a
  non-contiguous axis does (the inner loop over columns is vectorised: each column's
  sum is still one chain in row order).
"""
from __future__ import annotations

import numpy as np

from .llvm_rowloop import row_loop

_TYPES = {np.dtype(np.float64): ("double", "f64"), np.dtype(np.float32): ("float", "f32")}
ROW_OPS = ("sum", "max", "min")
BLOCK = 128          # numpy's PW_BLOCKSIZE


def symbol(kind: str, op: str, dtype) -> str:
    return f"s2sad_{kind}_{op}_{_TYPES[np.dtype(dtype)][1]}"


def reduce_ir(dtype) -> str:
    """The module with every reduction of `dtype`."""
    ty, _ = _TYPES[np.dtype(dtype)]
    parts = [_pairwise(ty), _rows_sum(ty, dtype), _rows_extreme(ty, dtype, "max", "oge"),
             _rows_extreme(ty, dtype, "min", "ole"), _cols_sum(ty, dtype)]
    return "\n\n".join(parts) + "\n"


def _pairwise(ty: str) -> str:
    """@pairwise(ptr a, i64 n): numpy's pairwise_sum of a[0:n] (contiguous)."""
    acc = [f"%r{j}" for j in range(8)]
    lines = [f"define internal {ty} @pairwise(ptr %a, i64 %n) {{",
             "entry:",
             "  %small = icmp slt i64 %n, 8",
             "  br i1 %small, label %seq, label %mid.check",
             "seq:",
             "  %s.i = phi i64 [ 0, %entry ], [ %s.i1, %seq.body ]",
             f"  %s.r = phi {ty} [ 0.0, %entry ], [ %s.r1, %seq.body ]",
             "  %s.more = icmp slt i64 %s.i, %n",
             "  br i1 %s.more, label %seq.body, label %seq.done",
             "seq.body:",
             f"  %s.p = getelementptr {ty}, ptr %a, i64 %s.i",
             f"  %s.v = load {ty}, ptr %s.p",
             f"  %s.r1 = fadd {ty} %s.r, %s.v",
             "  %s.i1 = add i64 %s.i, 1",
             "  br label %seq",
             "seq.done:",
             f"  ret {ty} %s.r",
             "mid.check:",
             f"  %big = icmp sgt i64 %n, {BLOCK}",
             "  br i1 %big, label %halves, label %mid",
             "halves:",
             "  %h = sdiv i64 %n, 2",
             "  %h.rem = srem i64 %h, 8",
             "  %n2 = sub i64 %h, %h.rem",
             f"  %left = call {ty} @pairwise(ptr %a, i64 %n2)",
             f"  %b = getelementptr {ty}, ptr %a, i64 %n2",
             "  %n.rest = sub i64 %n, %n2",
             f"  %right = call {ty} @pairwise(ptr %b, i64 %n.rest)",
             f"  %both = fadd {ty} %left, %right",
             f"  ret {ty} %both",
             "mid:"]
    for j in range(8):
        lines += [f"  %p0.{j} = getelementptr {ty}, ptr %a, i64 {j}", f"  %r{j}.0 = load {ty}, ptr %p0.{j}"]
    lines += ["  %n.rem = srem i64 %n, 8",
              "  %n.whole = sub i64 %n, %n.rem",
              "  br label %blk",
              "blk:",
              "  %i = phi i64 [ 8, %mid ], [ %i.next, %blk.body ]"]
    for j in range(8):
        lines.append(f"  {acc[j]} = phi {ty} [ %r{j}.0, %mid ], [ %r{j}.next, %blk.body ]")
    lines += ["  %blk.more = icmp slt i64 %i, %n.whole",
              "  br i1 %blk.more, label %blk.body, label %combine",
              "blk.body:"]
    for j in range(8):
        lines += [f"  %o{j} = add i64 %i, {j}", f"  %q{j} = getelementptr {ty}, ptr %a, i64 %o{j}",
                  f"  %v{j} = load {ty}, ptr %q{j}", f"  %r{j}.next = fadd {ty} {acc[j]}, %v{j}"]
    lines += ["  %i.next = add i64 %i, 8",
              "  br label %blk",
              "combine:",
              f"  %c01 = fadd {ty} %r0, %r1", f"  %c23 = fadd {ty} %r2, %r3",
              f"  %c45 = fadd {ty} %r4, %r5", f"  %c67 = fadd {ty} %r6, %r7",
              f"  %c03 = fadd {ty} %c01, %c23", f"  %c47 = fadd {ty} %c45, %c67",
              f"  %c07 = fadd {ty} %c03, %c47",
              "  br label %tail",
              "tail:",
              "  %t.i = phi i64 [ %i, %combine ], [ %t.i1, %tail.body ]",
              f"  %t.r = phi {ty} [ %c07, %combine ], [ %t.r1, %tail.body ]",
              "  %t.more = icmp slt i64 %t.i, %n",
              "  br i1 %t.more, label %tail.body, label %tail.done",
              "tail.body:",
              f"  %t.p = getelementptr {ty}, ptr %a, i64 %t.i",
              f"  %t.v = load {ty}, ptr %t.p",
              f"  %t.r1 = fadd {ty} %t.r, %t.v",
              "  %t.i1 = add i64 %t.i, 1",
              "  br label %tail",
              "tail.done:",
              f"  ret {ty} %t.r",
              "}"]
    return "\n".join(lines)


def _row_loop(ty: str, name: str, body: list[str], result: str) -> str:
    """define @name(A, n_rows, k, row_stride, out): for each row, `body` (with %row, the
    row's pointer, and %k) computes `result`, stored in out[row]."""
    done = ["row.done:", f"  %op = getelementptr {ty}, ptr %out, i64 %ri", f"  store {ty} {result}, ptr %op",
            "  %ri.next = add i64 %ri, 1", "  br label %rows"]
    return row_loop(f"define void @{name}(ptr %A, i64 %n_rows, i64 %k, i64 %row_stride, ptr %out) {{", ty,
                    [("row", "A", "%row_stride")], body, done=done)


def _rows_sum(ty: str, dtype) -> str:
    return _row_loop(ty, symbol("rows", "sum", dtype),
                     [f"  %s = call {ty} @pairwise(ptr %row, i64 %k)", "  br label %row.done"], "%s")


def _rows_extreme(ty: str, dtype, op: str, keep: str) -> str:
    """max (keep: oge) or min (ole), in order, NaN-propagating as numpy's: the running
    value m is kept where `m keep a[j]` or m is NaN (uno m, m)."""
    body = [f"  %m0 = load {ty}, ptr %row",
            "  br label %ext",
            "ext:",
            "  %j = phi i64 [ 1, %row.start ], [ %j.next, %ext.body ]",
            f"  %m = phi {ty} [ %m0, %row.start ], [ %m.next, %ext.body ]",
            "  %ext.more = icmp slt i64 %j, %k",
            "  br i1 %ext.more, label %ext.body, label %ext.done",
            "ext.body:",
            f"  %ep = getelementptr {ty}, ptr %row, i64 %j",
            f"  %ev = load {ty}, ptr %ep",
            f"  %keep.cmp = fcmp {keep} {ty} %m, %ev",
            f"  %is.nan = fcmp uno {ty} %m, %m",
            "  %keep = or i1 %keep.cmp, %is.nan",
            f"  %m.next = select i1 %keep, {ty} %m, {ty} %ev",
            "  %j.next = add i64 %j, 1",
            "  br label %ext",
            "ext.done:",
            "  br label %row.done"]
    return _row_loop(ty, symbol("rows", op, dtype), body, "%m")


def _cols_sum(ty: str, dtype) -> str:
    name = symbol("cols", "sum", dtype)
    return "\n".join([
        f"define void @{name}(ptr noalias %A, i64 %n_rows, i64 %k, i64 %row_stride, ptr noalias %out) {{",
        "entry:",
        "  br label %zero",
        "zero:",
        "  %z = phi i64 [ 0, %entry ], [ %z.next, %zero.body ]",
        "  %z.more = icmp slt i64 %z, %k",
        "  br i1 %z.more, label %zero.body, label %rows",
        "zero.body:",
        f"  %zp = getelementptr {ty}, ptr %out, i64 %z",
        f"  store {ty} 0.0, ptr %zp",
        "  %z.next = add i64 %z, 1",
        "  br label %zero",
        "rows:",
        "  %ri = phi i64 [ 0, %zero ], [ %ri.next, %cols.done ]",
        "  %rows.more = icmp slt i64 %ri, %n_rows",
        "  br i1 %rows.more, label %row.start, label %exit",
        "row.start:",
        "  %ro = mul i64 %ri, %row_stride",
        f"  %row = getelementptr {ty}, ptr %A, i64 %ro",
        "  br label %cols",
        "cols:",
        "  %j = phi i64 [ 0, %row.start ], [ %j.next, %cols.body ]",
        "  %cols.more = icmp slt i64 %j, %k",
        "  br i1 %cols.more, label %cols.body, label %cols.done",
        "cols.body:",
        f"  %ap = getelementptr {ty}, ptr %row, i64 %j",
        f"  %av = load {ty}, ptr %ap",
        f"  %op = getelementptr {ty}, ptr %out, i64 %j",
        f"  %ov = load {ty}, ptr %op",
        f"  %ns = fadd {ty} %ov, %av",
        f"  store {ty} %ns, ptr %op",
        "  %j.next = add i64 %j, 1",
        "  br label %cols",
        "cols.done:",
        "  %ri.next = add i64 %ri, 1",
        "  br label %rows",
        "exit:",
        "  ret void",
        "}"])

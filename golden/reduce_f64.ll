define internal double @pairwise(ptr %a, i64 %n) {
entry:
  %small = icmp slt i64 %n, 8
  br i1 %small, label %seq, label %mid.check
seq:
  %s.i = phi i64 [ 0, %entry ], [ %s.i1, %seq.body ]
  %s.r = phi double [ 0.0, %entry ], [ %s.r1, %seq.body ]
  %s.more = icmp slt i64 %s.i, %n
  br i1 %s.more, label %seq.body, label %seq.done
seq.body:
  %s.p = getelementptr double, ptr %a, i64 %s.i
  %s.v = load double, ptr %s.p
  %s.r1 = fadd double %s.r, %s.v
  %s.i1 = add i64 %s.i, 1
  br label %seq
seq.done:
  ret double %s.r
mid.check:
  %big = icmp sgt i64 %n, 128
  br i1 %big, label %halves, label %mid
halves:
  %h = sdiv i64 %n, 2
  %h.rem = srem i64 %h, 8
  %n2 = sub i64 %h, %h.rem
  %left = call double @pairwise(ptr %a, i64 %n2)
  %b = getelementptr double, ptr %a, i64 %n2
  %n.rest = sub i64 %n, %n2
  %right = call double @pairwise(ptr %b, i64 %n.rest)
  %both = fadd double %left, %right
  ret double %both
mid:
  %p0.0 = getelementptr double, ptr %a, i64 0
  %r0.0 = load double, ptr %p0.0
  %p0.1 = getelementptr double, ptr %a, i64 1
  %r1.0 = load double, ptr %p0.1
  %p0.2 = getelementptr double, ptr %a, i64 2
  %r2.0 = load double, ptr %p0.2
  %p0.3 = getelementptr double, ptr %a, i64 3
  %r3.0 = load double, ptr %p0.3
  %p0.4 = getelementptr double, ptr %a, i64 4
  %r4.0 = load double, ptr %p0.4
  %p0.5 = getelementptr double, ptr %a, i64 5
  %r5.0 = load double, ptr %p0.5
  %p0.6 = getelementptr double, ptr %a, i64 6
  %r6.0 = load double, ptr %p0.6
  %p0.7 = getelementptr double, ptr %a, i64 7
  %r7.0 = load double, ptr %p0.7
  %n.rem = srem i64 %n, 8
  %n.whole = sub i64 %n, %n.rem
  br label %blk
blk:
  %i = phi i64 [ 8, %mid ], [ %i.next, %blk.body ]
  %r0 = phi double [ %r0.0, %mid ], [ %r0.next, %blk.body ]
  %r1 = phi double [ %r1.0, %mid ], [ %r1.next, %blk.body ]
  %r2 = phi double [ %r2.0, %mid ], [ %r2.next, %blk.body ]
  %r3 = phi double [ %r3.0, %mid ], [ %r3.next, %blk.body ]
  %r4 = phi double [ %r4.0, %mid ], [ %r4.next, %blk.body ]
  %r5 = phi double [ %r5.0, %mid ], [ %r5.next, %blk.body ]
  %r6 = phi double [ %r6.0, %mid ], [ %r6.next, %blk.body ]
  %r7 = phi double [ %r7.0, %mid ], [ %r7.next, %blk.body ]
  %blk.more = icmp slt i64 %i, %n.whole
  br i1 %blk.more, label %blk.body, label %combine
blk.body:
  %o0 = add i64 %i, 0
  %q0 = getelementptr double, ptr %a, i64 %o0
  %v0 = load double, ptr %q0
  %r0.next = fadd double %r0, %v0
  %o1 = add i64 %i, 1
  %q1 = getelementptr double, ptr %a, i64 %o1
  %v1 = load double, ptr %q1
  %r1.next = fadd double %r1, %v1
  %o2 = add i64 %i, 2
  %q2 = getelementptr double, ptr %a, i64 %o2
  %v2 = load double, ptr %q2
  %r2.next = fadd double %r2, %v2
  %o3 = add i64 %i, 3
  %q3 = getelementptr double, ptr %a, i64 %o3
  %v3 = load double, ptr %q3
  %r3.next = fadd double %r3, %v3
  %o4 = add i64 %i, 4
  %q4 = getelementptr double, ptr %a, i64 %o4
  %v4 = load double, ptr %q4
  %r4.next = fadd double %r4, %v4
  %o5 = add i64 %i, 5
  %q5 = getelementptr double, ptr %a, i64 %o5
  %v5 = load double, ptr %q5
  %r5.next = fadd double %r5, %v5
  %o6 = add i64 %i, 6
  %q6 = getelementptr double, ptr %a, i64 %o6
  %v6 = load double, ptr %q6
  %r6.next = fadd double %r6, %v6
  %o7 = add i64 %i, 7
  %q7 = getelementptr double, ptr %a, i64 %o7
  %v7 = load double, ptr %q7
  %r7.next = fadd double %r7, %v7
  %i.next = add i64 %i, 8
  br label %blk
combine:
  %c01 = fadd double %r0, %r1
  %c23 = fadd double %r2, %r3
  %c45 = fadd double %r4, %r5
  %c67 = fadd double %r6, %r7
  %c03 = fadd double %c01, %c23
  %c47 = fadd double %c45, %c67
  %c07 = fadd double %c03, %c47
  br label %tail
tail:
  %t.i = phi i64 [ %i, %combine ], [ %t.i1, %tail.body ]
  %t.r = phi double [ %c07, %combine ], [ %t.r1, %tail.body ]
  %t.more = icmp slt i64 %t.i, %n
  br i1 %t.more, label %tail.body, label %tail.done
tail.body:
  %t.p = getelementptr double, ptr %a, i64 %t.i
  %t.v = load double, ptr %t.p
  %t.r1 = fadd double %t.r, %t.v
  %t.i1 = add i64 %t.i, 1
  br label %tail
tail.done:
  ret double %t.r
}

define void @s2sad_rows_sum_f64(ptr %A, i64 %n_rows, i64 %k, i64 %row_stride, ptr %out) {
entry:
  br label %rows
rows:
  %ri = phi i64 [ 0, %entry ], [ %ri.next, %row.done ]
  %rows.more = icmp slt i64 %ri, %n_rows
  br i1 %rows.more, label %row.start, label %exit
row.start:
  %ro = mul i64 %ri, %row_stride
  %row = getelementptr double, ptr %A, i64 %ro
  %s = call double @pairwise(ptr %row, i64 %k)
  br label %row.done
row.done:
  %op = getelementptr double, ptr %out, i64 %ri
  store double %s, ptr %op
  %ri.next = add i64 %ri, 1
  br label %rows
exit:
  ret void
}

define void @s2sad_rows_max_f64(ptr %A, i64 %n_rows, i64 %k, i64 %row_stride, ptr %out) {
entry:
  br label %rows
rows:
  %ri = phi i64 [ 0, %entry ], [ %ri.next, %row.done ]
  %rows.more = icmp slt i64 %ri, %n_rows
  br i1 %rows.more, label %row.start, label %exit
row.start:
  %ro = mul i64 %ri, %row_stride
  %row = getelementptr double, ptr %A, i64 %ro
  %m0 = load double, ptr %row
  br label %ext
ext:
  %j = phi i64 [ 1, %row.start ], [ %j.next, %ext.body ]
  %m = phi double [ %m0, %row.start ], [ %m.next, %ext.body ]
  %ext.more = icmp slt i64 %j, %k
  br i1 %ext.more, label %ext.body, label %ext.done
ext.body:
  %ep = getelementptr double, ptr %row, i64 %j
  %ev = load double, ptr %ep
  %keep.cmp = fcmp oge double %m, %ev
  %is.nan = fcmp uno double %m, %m
  %keep = or i1 %keep.cmp, %is.nan
  %m.next = select i1 %keep, double %m, double %ev
  %j.next = add i64 %j, 1
  br label %ext
ext.done:
  br label %row.done
row.done:
  %op = getelementptr double, ptr %out, i64 %ri
  store double %m, ptr %op
  %ri.next = add i64 %ri, 1
  br label %rows
exit:
  ret void
}

define void @s2sad_rows_min_f64(ptr %A, i64 %n_rows, i64 %k, i64 %row_stride, ptr %out) {
entry:
  br label %rows
rows:
  %ri = phi i64 [ 0, %entry ], [ %ri.next, %row.done ]
  %rows.more = icmp slt i64 %ri, %n_rows
  br i1 %rows.more, label %row.start, label %exit
row.start:
  %ro = mul i64 %ri, %row_stride
  %row = getelementptr double, ptr %A, i64 %ro
  %m0 = load double, ptr %row
  br label %ext
ext:
  %j = phi i64 [ 1, %row.start ], [ %j.next, %ext.body ]
  %m = phi double [ %m0, %row.start ], [ %m.next, %ext.body ]
  %ext.more = icmp slt i64 %j, %k
  br i1 %ext.more, label %ext.body, label %ext.done
ext.body:
  %ep = getelementptr double, ptr %row, i64 %j
  %ev = load double, ptr %ep
  %keep.cmp = fcmp ole double %m, %ev
  %is.nan = fcmp uno double %m, %m
  %keep = or i1 %keep.cmp, %is.nan
  %m.next = select i1 %keep, double %m, double %ev
  %j.next = add i64 %j, 1
  br label %ext
ext.done:
  br label %row.done
row.done:
  %op = getelementptr double, ptr %out, i64 %ri
  store double %m, ptr %op
  %ri.next = add i64 %ri, 1
  br label %rows
exit:
  ret void
}

define void @s2sad_cols_sum_f64(ptr noalias %A, i64 %n_rows, i64 %k, i64 %row_stride, ptr noalias %out) {
entry:
  br label %zero
zero:
  %z = phi i64 [ 0, %entry ], [ %z.next, %zero.body ]
  %z.more = icmp slt i64 %z, %k
  br i1 %z.more, label %zero.body, label %rows
zero.body:
  %zp = getelementptr double, ptr %out, i64 %z
  store double 0.0, ptr %zp
  %z.next = add i64 %z, 1
  br label %zero
rows:
  %ri = phi i64 [ 0, %zero ], [ %ri.next, %cols.done ]
  %rows.more = icmp slt i64 %ri, %n_rows
  br i1 %rows.more, label %row.start, label %exit
row.start:
  %ro = mul i64 %ri, %row_stride
  %row = getelementptr double, ptr %A, i64 %ro
  br label %cols
cols:
  %j = phi i64 [ 0, %row.start ], [ %j.next, %cols.body ]
  %cols.more = icmp slt i64 %j, %k
  br i1 %cols.more, label %cols.body, label %cols.done
cols.body:
  %ap = getelementptr double, ptr %row, i64 %j
  %av = load double, ptr %ap
  %op = getelementptr double, ptr %out, i64 %j
  %ov = load double, ptr %op
  %ns = fadd double %ov, %av
  store double %ns, ptr %op
  %j.next = add i64 %j, 1
  br label %cols
cols.done:
  %ri.next = add i64 %ri, 1
  br label %rows
exit:
  ret void
}

; s2sad kernel module 'global_loss__elementwise': driver @global_loss__elementwise__scan_c_s1_sum_grads_f64 (T = double)

; from golden/examples.py:71 (running_global)
define internal { double, double } @running_global(double %x, double %total) #0 {
entry:
  %total.1 = fadd double %total, %x
  %ret.tuple = insertvalue { double, double } poison, double %total.1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %total.1, 1
  ret { double, double } %ret
}

define internal { double, double } @global_loss__elementwise(double %x, double %total) #0 {
entry:
  %running_global.ret = call { double, double } @running_global(double %x, double %total)
  %_t1 = extractvalue { double, double } %running_global.ret, 0
  %total.1 = extractvalue { double, double } %running_global.ret, 1
  %ret.tuple = insertvalue { double, double } poison, double %_t1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %total.1, 1
  ret { double, double } %ret
}

define internal { double, double, double, double, double, double } @running_global__dual(double %x, double %total) #0 {
entry:
  %total_dot_x = fadd double 0.0, 1.0
  %total.1 = fadd double %total, %x
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %total.1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %total.1, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %total_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double 1.0, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %total_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double 1.0, 5
  ret { double, double, double, double, double, double } %ret
}

define internal { double, double, double, double, double, double } @global_loss__elementwise__dual(double %x, double %total) #0 {
entry:
  %running_global__dual.ret = call { double, double, double, double, double, double } @running_global__dual(double %x, double %total)
  %_d1 = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 0
  %_d2 = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 1
  %d_d1_dx = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 2
  %d_d1_dtotal = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 3
  %d_d2_dx = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 4
  %d_d2_dtotal = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 5
  %mul = fmul double %d_d1_dtotal, 0.0
  %_t1_dot_x = fadd double %d_d1_dx, %mul
  %_t1_dot_total = fmul double %d_d1_dtotal, 1.0
  %mul.1 = fmul double %d_d2_dtotal, 0.0
  %total_dot_x = fadd double %d_d2_dx, %mul.1
  %total_dot_total = fmul double %d_d2_dtotal, 1.0
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %_d1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %_d2, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %_t1_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double %_t1_dot_total, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %total_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double %total_dot_total, 5
  ret { double, double, double, double, double, double } %ret
}

define void @global_loss__elementwise__scan_c_s1_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %state, ptr noalias %acc, double %seed, ptr noalias %x_bar, ptr noalias %state_bar, ptr noalias %tape) #1 {
entry:
  %total.in.ptr = getelementptr inbounds double, ptr %state, i64 0
  %total.in = load double, ptr %total.in.ptr
  br label %outer.cond

outer.cond:
  %o = phi i64 [ 0, %entry ], [ %o.next, %outer.latch ]
  %total.o = phi double [ %total.in, %entry ], [ %total.i, %outer.latch ]
  %value.sum.o = phi double [ 0.0, %entry ], [ %value.sum.i, %outer.latch ]
  %outer.more = icmp slt i64 %o, %n_outer
  br i1 %outer.more, label %outer.body, label %exit

outer.body:
  %row = mul nsw i64 %o, %n_inner
  br label %inner.cond

inner.cond:
  %i = phi i64 [ 0, %outer.body ], [ %i.next, %inner.body ]
  %total.i = phi double [ %total.o, %outer.body ], [ %total.next, %inner.body ]
  %value.sum.i = phi double [ %value.sum.o, %outer.body ], [ %value.sum.next, %inner.body ]
  %inner.more = icmp slt i64 %i, %n_inner
  br i1 %inner.more, label %inner.body, label %outer.latch

inner.body:
  %flat = add nsw i64 %row, %i
  %x.ptr = getelementptr inbounds double, ptr %x, i64 %flat
  %x.v = load double, ptr %x.ptr
  %total.tape.ptr = getelementptr inbounds [1 x double], ptr %tape, i64 %flat, i32 0
  store double %total.i, ptr %total.tape.ptr
  %step = call { double, double } @global_loss__elementwise(double %x.v, double %total.i)
  %value = extractvalue { double, double } %step, 0
  %total.next = extractvalue { double, double } %step, 1
  %value.sum.next = fadd reassoc nsz double %value.sum.i, %value
  %i.next = add nsw i64 %i, 1
  br label %inner.cond

outer.latch:
  %o.next = add nsw i64 %o, 1
  br label %outer.cond

exit:
  %total.out.ptr = getelementptr inbounds double, ptr %state, i64 0
  store double %total.o, ptr %total.out.ptr
  %value.old = load double, ptr %acc
  %value.new = fadd double %value.old, %value.sum.o
  store double %value.new, ptr %acc
  %total_bar.in.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  %total_bar.in = load double, ptr %total_bar.in.ptr
  br label %rev.outer.cond

rev.outer.cond:
  %o.left = phi i64 [ %n_outer, %exit ], [ %o.1, %rev.outer.latch ]
  %total_bar.o = phi double [ %total_bar.in, %exit ], [ %total_bar.i, %rev.outer.latch ]
  %outer.more.1 = icmp sgt i64 %o.left, 0
  br i1 %outer.more.1, label %rev.outer.body, label %rev.exit

rev.outer.body:
  %o.1 = add nsw i64 %o.left, -1
  %row.1 = mul nsw i64 %o.1, %n_inner
  br label %rev.inner.cond

rev.inner.cond:
  %i.left = phi i64 [ %n_inner, %rev.outer.body ], [ %i.1, %rev.inner.body ]
  %total_bar.i = phi double [ %total_bar.o, %rev.outer.body ], [ %total_bar.next, %rev.inner.body ]
  %inner.more.1 = icmp sgt i64 %i.left, 0
  br i1 %inner.more.1, label %rev.inner.body, label %rev.outer.latch

rev.inner.body:
  %i.1 = add nsw i64 %i.left, -1
  %flat.1 = add nsw i64 %row.1, %i.1
  %x.ptr.1 = getelementptr inbounds double, ptr %x, i64 %flat.1
  %x.v.1 = load double, ptr %x.ptr.1
  %total.tape.ptr.1 = getelementptr inbounds [1 x double], ptr %tape, i64 %flat.1, i32 0
  %total.tape = load double, ptr %total.tape.ptr.1
  %dual = call { double, double, double, double, double, double } @global_loss__elementwise__dual(double %x.v.1, double %total.tape)
  %x_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 2
  %x_bar.c = fmul double %x_bar.dv, %seed
  %x_bar.dtotal = extractvalue { double, double, double, double, double, double } %dual, 4
  %x_bar.c.1 = fmul double %total_bar.i, %x_bar.dtotal
  %x_bar.c.2 = fadd double %x_bar.c, %x_bar.c.1
  %x_bar.ptr = getelementptr inbounds double, ptr %x_bar, i64 %flat.1
  store double %x_bar.c.2, ptr %x_bar.ptr
  %total_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 3
  %total_bar.c = fmul double %total_bar.dv, %seed
  %total_bar.dtotal = extractvalue { double, double, double, double, double, double } %dual, 5
  %total_bar.c.1 = fmul double %total_bar.i, %total_bar.dtotal
  %total_bar.next = fadd double %total_bar.c, %total_bar.c.1
  br label %rev.inner.cond

rev.outer.latch:
  br label %rev.outer.cond

rev.exit:
  %total_bar.out.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  store double %total_bar.o, ptr %total_bar.out.ptr
  ret void
}

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind }

; s2sad kernel module 'local_list_loss__elementwise': driver @local_list_loss__elementwise__scan_c_s1_sum_grads_f64 (T = double)

; local function at golden/examples.py:119
define internal { double, double } @step(double %z, double %acc_0) #0 {
entry:
  %acc_0.1 = fadd double %acc_0, %z
  %ret.tuple = insertvalue { double, double } poison, double %acc_0.1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %acc_0.1, 1
  ret { double, double } %ret
}

define internal { double, double } @local_list_loss__elementwise(double %x, double %acc_0) #0 {
entry:
  %step.ret = call { double, double } @step(double %x, double %acc_0)
  %_t1 = extractvalue { double, double } %step.ret, 0
  %acc_0.1 = extractvalue { double, double } %step.ret, 1
  %ret.tuple = insertvalue { double, double } poison, double %_t1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %acc_0.1, 1
  ret { double, double } %ret
}

define internal { double, double, double, double, double, double } @step__dual(double %z, double %acc_0) #0 {
entry:
  %acc_0_dot_z = fadd double 0.0, 1.0
  %acc_0.1 = fadd double %acc_0, %z
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %acc_0.1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %acc_0.1, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %acc_0_dot_z, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double 1.0, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %acc_0_dot_z, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double 1.0, 5
  ret { double, double, double, double, double, double } %ret
}

define internal { double, double, double, double, double, double } @local_list_loss__elementwise__dual(double %x, double %acc_0) #0 {
entry:
  %step__dual.ret = call { double, double, double, double, double, double } @step__dual(double %x, double %acc_0)
  %_d1 = extractvalue { double, double, double, double, double, double } %step__dual.ret, 0
  %_d2 = extractvalue { double, double, double, double, double, double } %step__dual.ret, 1
  %d_d1_dz = extractvalue { double, double, double, double, double, double } %step__dual.ret, 2
  %d_d1_dacc_0 = extractvalue { double, double, double, double, double, double } %step__dual.ret, 3
  %d_d2_dz = extractvalue { double, double, double, double, double, double } %step__dual.ret, 4
  %d_d2_dacc_0 = extractvalue { double, double, double, double, double, double } %step__dual.ret, 5
  %mul = fmul double %d_d1_dacc_0, 0.0
  %_t1_dot_x = fadd double %d_d1_dz, %mul
  %_t1_dot_acc_0 = fmul double %d_d1_dacc_0, 1.0
  %mul.1 = fmul double %d_d2_dacc_0, 0.0
  %acc_0_dot_x = fadd double %d_d2_dz, %mul.1
  %acc_0_dot_acc_0 = fmul double %d_d2_dacc_0, 1.0
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %_d1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %_d2, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %_t1_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double %_t1_dot_acc_0, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %acc_0_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double %acc_0_dot_acc_0, 5
  ret { double, double, double, double, double, double } %ret
}

define void @local_list_loss__elementwise__scan_c_s1_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %state, ptr noalias %acc, double %seed, ptr noalias %x_bar, ptr noalias %state_bar, ptr noalias %tape) #1 {
entry:
  %acc_0.in.ptr = getelementptr inbounds double, ptr %state, i64 0
  %acc_0.in = load double, ptr %acc_0.in.ptr
  br label %outer.cond

outer.cond:
  %o = phi i64 [ 0, %entry ], [ %o.next, %outer.latch ]
  %acc_0.o = phi double [ %acc_0.in, %entry ], [ %acc_0.i, %outer.latch ]
  %value.sum.o = phi double [ 0.0, %entry ], [ %value.sum.i, %outer.latch ]
  %outer.more = icmp slt i64 %o, %n_outer
  br i1 %outer.more, label %outer.body, label %exit

outer.body:
  %row = mul nsw i64 %o, %n_inner
  br label %inner.cond

inner.cond:
  %i = phi i64 [ 0, %outer.body ], [ %i.next, %inner.body ]
  %acc_0.i = phi double [ %acc_0.o, %outer.body ], [ %acc_0.next, %inner.body ]
  %value.sum.i = phi double [ %value.sum.o, %outer.body ], [ %value.sum.next, %inner.body ]
  %inner.more = icmp slt i64 %i, %n_inner
  br i1 %inner.more, label %inner.body, label %outer.latch

inner.body:
  %flat = add nsw i64 %row, %i
  %x.ptr = getelementptr inbounds double, ptr %x, i64 %flat
  %x.v = load double, ptr %x.ptr
  %acc_0.tape.ptr = getelementptr inbounds [1 x double], ptr %tape, i64 %flat, i32 0
  store double %acc_0.i, ptr %acc_0.tape.ptr
  %step = call { double, double } @local_list_loss__elementwise(double %x.v, double %acc_0.i)
  %value = extractvalue { double, double } %step, 0
  %acc_0.next = extractvalue { double, double } %step, 1
  %value.sum.next = fadd reassoc nsz double %value.sum.i, %value
  %i.next = add nsw i64 %i, 1
  br label %inner.cond

outer.latch:
  %o.next = add nsw i64 %o, 1
  br label %outer.cond

exit:
  %acc_0.out.ptr = getelementptr inbounds double, ptr %state, i64 0
  store double %acc_0.o, ptr %acc_0.out.ptr
  %value.old = load double, ptr %acc
  %value.new = fadd double %value.old, %value.sum.o
  store double %value.new, ptr %acc
  %acc_0_bar.in.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  %acc_0_bar.in = load double, ptr %acc_0_bar.in.ptr
  br label %rev.outer.cond

rev.outer.cond:
  %o.left = phi i64 [ %n_outer, %exit ], [ %o.1, %rev.outer.latch ]
  %acc_0_bar.o = phi double [ %acc_0_bar.in, %exit ], [ %acc_0_bar.i, %rev.outer.latch ]
  %outer.more.1 = icmp sgt i64 %o.left, 0
  br i1 %outer.more.1, label %rev.outer.body, label %rev.exit

rev.outer.body:
  %o.1 = add nsw i64 %o.left, -1
  %row.1 = mul nsw i64 %o.1, %n_inner
  br label %rev.inner.cond

rev.inner.cond:
  %i.left = phi i64 [ %n_inner, %rev.outer.body ], [ %i.1, %rev.inner.body ]
  %acc_0_bar.i = phi double [ %acc_0_bar.o, %rev.outer.body ], [ %acc_0_bar.next, %rev.inner.body ]
  %inner.more.1 = icmp sgt i64 %i.left, 0
  br i1 %inner.more.1, label %rev.inner.body, label %rev.outer.latch

rev.inner.body:
  %i.1 = add nsw i64 %i.left, -1
  %flat.1 = add nsw i64 %row.1, %i.1
  %x.ptr.1 = getelementptr inbounds double, ptr %x, i64 %flat.1
  %x.v.1 = load double, ptr %x.ptr.1
  %acc_0.tape.ptr.1 = getelementptr inbounds [1 x double], ptr %tape, i64 %flat.1, i32 0
  %acc_0.tape = load double, ptr %acc_0.tape.ptr.1
  %dual = call { double, double, double, double, double, double } @local_list_loss__elementwise__dual(double %x.v.1, double %acc_0.tape)
  %x_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 2
  %x_bar.c = fmul double %x_bar.dv, %seed
  %x_bar.dacc_0 = extractvalue { double, double, double, double, double, double } %dual, 4
  %x_bar.c.1 = fmul double %acc_0_bar.i, %x_bar.dacc_0
  %x_bar.c.2 = fadd double %x_bar.c, %x_bar.c.1
  %x_bar.ptr = getelementptr inbounds double, ptr %x_bar, i64 %flat.1
  store double %x_bar.c.2, ptr %x_bar.ptr
  %acc_0_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 3
  %acc_0_bar.c = fmul double %acc_0_bar.dv, %seed
  %acc_0_bar.dacc_0 = extractvalue { double, double, double, double, double, double } %dual, 5
  %acc_0_bar.c.1 = fmul double %acc_0_bar.i, %acc_0_bar.dacc_0
  %acc_0_bar.next = fadd double %acc_0_bar.c, %acc_0_bar.c.1
  br label %rev.inner.cond

rev.outer.latch:
  br label %rev.outer.cond

rev.exit:
  %acc_0_bar.out.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  store double %acc_0_bar.o, ptr %acc_0_bar.out.ptr
  ret void
}

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind }

; s2sad kernel module 'lambda_63': driver @lambda_63__cc_sum_grads_f64 (T = double)

; local function at golden/examples.py:63
define internal double @lambda_63(double %z, double %y_0) #0 {
entry:
  %square = fmul double %z, %z
  %ret = fadd double %square, %y_0
  ret double %ret
}

define internal { double, double, double } @lambda_63__dual(double %z, double %y_0) #0 {
entry:
  %_d1 = fmul double %z, %z
  %add = fadd double %_d1, %y_0
  %mul = fmul double 2.0, %z
  %ret.tuple = insertvalue { double, double, double } poison, double %add, 0
  %ret.tuple.1 = insertvalue { double, double, double } %ret.tuple, double %mul, 1
  %ret = insertvalue { double, double, double } %ret.tuple.1, double 1.0, 2
  ret { double, double, double } %ret
}

define void @lambda_63__cc_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %z, ptr noalias %y_0, ptr noalias %acc, double %seed, ptr noalias %z_bar, ptr noalias %y_0_bar) #1 {
entry:
  br label %outer.cond

outer.cond:
  %o = phi i64 [ 0, %entry ], [ %o.next, %outer.latch ]
  %value.sum.o = phi double [ 0.0, %entry ], [ %value.sum.i, %outer.latch ]
  %outer.more = icmp slt i64 %o, %n_outer
  br i1 %outer.more, label %outer.body, label %exit

outer.body:
  %row = mul nsw i64 %o, %n_inner
  br label %inner.cond

inner.cond:
  %i = phi i64 [ 0, %outer.body ], [ %i.next, %inner.body ]
  %value.sum.i = phi double [ %value.sum.o, %outer.body ], [ %value.sum.next, %inner.body ]
  %inner.more = icmp slt i64 %i, %n_inner
  br i1 %inner.more, label %inner.body, label %outer.latch

inner.body:
  %flat = add nsw i64 %row, %i
  %z.ptr = getelementptr inbounds double, ptr %z, i64 %flat
  %z.v = load double, ptr %z.ptr
  %y_0.ptr = getelementptr inbounds double, ptr %y_0, i64 %flat
  %y_0.v = load double, ptr %y_0.ptr
  %dual = call { double, double, double } @lambda_63__dual(double %z.v, double %y_0.v)
  %value = extractvalue { double, double, double } %dual, 0
  %z.partial = extractvalue { double, double, double } %dual, 1
  %y_0.partial = extractvalue { double, double, double } %dual, 2
  %value.sum.next = fadd reassoc nsz double %value.sum.i, %value
  %z_bar.c = fmul double %z.partial, %seed
  %z_bar.ptr = getelementptr inbounds double, ptr %z_bar, i64 %flat
  store double %z_bar.c, ptr %z_bar.ptr
  %y_0_bar.c = fmul double %y_0.partial, %seed
  %y_0_bar.ptr = getelementptr inbounds double, ptr %y_0_bar, i64 %flat
  store double %y_0_bar.c, ptr %y_0_bar.ptr
  %i.next = add nsw i64 %i, 1
  br label %inner.cond

outer.latch:
  %o.next = add nsw i64 %o, 1
  br label %outer.cond

exit:
  %value.old = load double, ptr %acc
  %value.new = fadd double %value.old, %value.sum.o
  store double %value.new, ptr %acc
  ret void
}

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind }

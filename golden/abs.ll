; s2sad kernel module 'abs_loss__elementwise': driver @abs_loss__elementwise__c_sum_grads_f64 (T = double)

declare double @llvm.fabs.f64(double)

define internal double @abs_loss__elementwise(double %x) #0 {
entry:
  %ret = call double @llvm.fabs.f64(double %x)
  ret double %ret
}

define internal { double, double } @abs_loss__elementwise__dual(double %x) #0 {
entry:
  %abs = call double @llvm.fabs.f64(double %x)
  %ge = fcmp oge double %x, 0.0
  br i1 %ge, label %cond.true, label %cond.false

cond.true:
  br label %cond.end

cond.false:
  %sign.pos = fcmp ogt double %x, 0.0
  %sign.neg = fcmp olt double %x, 0.0
  %sign.lo = select i1 %sign.neg, double -1.0, double %x
  %sign = select i1 %sign.pos, double 1.0, double %sign.lo
  br label %cond.end

cond.end:
  %cond = phi double [ 1.0, %cond.true ], [ %sign, %cond.false ]
  %ret.tuple = insertvalue { double, double } poison, double %abs, 0
  %ret = insertvalue { double, double } %ret.tuple, double %cond, 1
  ret { double, double } %ret
}

define void @abs_loss__elementwise__c_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %acc, double %seed, ptr noalias %x_bar) #1 {
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
  %x.ptr = getelementptr inbounds double, ptr %x, i64 %flat
  %x.v = load double, ptr %x.ptr
  %dual = call { double, double } @abs_loss__elementwise__dual(double %x.v)
  %value = extractvalue { double, double } %dual, 0
  %x.partial = extractvalue { double, double } %dual, 1
  %value.sum.next = fadd reassoc nsz double %value.sum.i, %value
  %x_bar.c = fmul double %x.partial, %seed
  %x_bar.ptr = getelementptr inbounds double, ptr %x_bar, i64 %flat
  store double %x_bar.c, ptr %x_bar.ptr
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

; s2sad kernel module 'newton_sqrt': driver @newton_sqrt__c_sum_grads_f64 (T = double)

; from golden/examples.py:26 (newton_sqrt)
define internal double @newton_sqrt(double %a) #0 {
entry:
  %i.addr = alloca double
  %x.addr = alloca double
  %i.iter = alloca double
  store double 1.0, ptr %x.addr
  store double 0.0, ptr %i.iter
  br label %for.cond

for.cond:
  %i.cur = load double, ptr %i.iter
  %for.more = fcmp olt double %i.cur, 10.0
  br i1 %for.more, label %for.body, label %for.end

for.body:
  store double %i.cur, ptr %i.addr
  %x = load double, ptr %x.addr
  %x.1 = load double, ptr %x.addr
  %div = fdiv double %a, %x.1
  %add = fadd double %x, %div
  %x.2 = fmul double 0.5, %add
  store double %x.2, ptr %x.addr
  br label %for.inc

for.inc:
  %i.next = fadd double %i.cur, 1.0
  store double %i.next, ptr %i.iter
  br label %for.cond

for.end:
  %ret = load double, ptr %x.addr
  ret double %ret
}

define internal { double, double } @newton_sqrt__dual(double %a) #0 {
entry:
  %i.addr = alloca double
  %_d1.addr = alloca double
  %_d2.addr = alloca double
  %x_dot.addr = alloca double
  %x.addr = alloca double
  %i.iter = alloca double
  store double 0.0, ptr %x_dot.addr
  store double 1.0, ptr %x.addr
  store double 0.0, ptr %i.iter
  br label %for.cond

for.cond:
  %i.cur = load double, ptr %i.iter
  %for.more = fcmp olt double %i.cur, 10.0
  br i1 %for.more, label %for.body, label %for.end

for.body:
  store double %i.cur, ptr %i.addr
  %x = load double, ptr %x.addr
  %_d1 = fdiv double %a, %x
  store double %_d1, ptr %_d1.addr
  %x.1 = load double, ptr %x.addr
  %_d1.1 = load double, ptr %_d1.addr
  %_d2 = fadd double %x.1, %_d1.1
  store double %_d2, ptr %_d2.addr
  %x_dot = load double, ptr %x_dot.addr
  %x.2 = load double, ptr %x.addr
  %div = fdiv double 1.0, %x.2
  %_d1.2 = load double, ptr %_d1.addr
  %x.3 = load double, ptr %x.addr
  %div.1 = fdiv double 1.0, %x.3
  %mul = fmul double %_d1.2, %div.1
  %x_dot.1 = load double, ptr %x_dot.addr
  %mul.1 = fmul double %mul, %x_dot.1
  %sub = fsub double %div, %mul.1
  %add = fadd double %x_dot, %sub
  %x_dot.2 = fmul double 0.5, %add
  store double %x_dot.2, ptr %x_dot.addr
  %_d2.1 = load double, ptr %_d2.addr
  %x.4 = fmul double 0.5, %_d2.1
  store double %x.4, ptr %x.addr
  br label %for.inc

for.inc:
  %i.next = fadd double %i.cur, 1.0
  store double %i.next, ptr %i.iter
  br label %for.cond

for.end:
  %x.5 = load double, ptr %x.addr
  %x_dot.3 = load double, ptr %x_dot.addr
  %ret.tuple = insertvalue { double, double } poison, double %x.5, 0
  %ret = insertvalue { double, double } %ret.tuple, double %x_dot.3, 1
  ret { double, double } %ret
}

define void @newton_sqrt__c_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %a, ptr noalias %acc, double %seed, ptr noalias %a_bar) #1 {
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
  %a.ptr = getelementptr inbounds double, ptr %a, i64 %flat
  %a.v = load double, ptr %a.ptr
  %dual = call { double, double } @newton_sqrt__dual(double %a.v)
  %value = extractvalue { double, double } %dual, 0
  %a.partial = extractvalue { double, double } %dual, 1
  %value.sum.next = fadd reassoc nsz double %value.sum.i, %value
  %a_bar.c = fmul double %a.partial, %seed
  %a_bar.ptr = getelementptr inbounds double, ptr %a_bar, i64 %flat
  store double %a_bar.c, ptr %a_bar.ptr
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

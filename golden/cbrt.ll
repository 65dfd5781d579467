; s2sad kernel module 'cbrt_loss__elementwise': driver @cbrt_loss__elementwise__c_sum_grads_f64 (T = double)

declare double @cbrt(double) #2

; SIMD variants from glibc's libmvec, for the loop vectoriser
declare <2 x double> @_ZGVbN2v_cbrt(<2 x double>)
declare <4 x double> @_ZGVdN4v_cbrt(<4 x double>)
declare <8 x double> @_ZGVeN8v_cbrt(<8 x double>)

define internal double @cbrt_loss__elementwise(double %x) #0 {
entry:
  %ret = call double @cbrt(double %x) #3
  ret double %ret
}

define internal { double, double } @cbrt_loss__elementwise__dual(double %x) #0 {
entry:
  %_d1 = call double @cbrt(double %x) #3
  %mul = fmul double 3.0, %_d1
  %mul.1 = fmul double %mul, %_d1
  %div = fdiv double 1.0, %mul.1
  %ret.tuple = insertvalue { double, double } poison, double %_d1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %div, 1
  ret { double, double } %ret
}

define void @cbrt_loss__elementwise__c_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %acc, double %seed, ptr noalias %x_bar) #1 {
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
  %dual = call { double, double } @cbrt_loss__elementwise__dual(double %x.v)
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

@llvm.compiler.used = appending global [3 x ptr] [ptr @_ZGVbN2v_cbrt, ptr @_ZGVdN4v_cbrt, ptr @_ZGVeN8v_cbrt], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind }
attributes #2 = { nounwind willreturn memory(none) }
attributes #3 = { "vector-function-abi-variant"="_ZGVbN2v_cbrt(_ZGVbN2v_cbrt),_ZGVdN4v_cbrt(_ZGVdN4v_cbrt),_ZGVeN8v_cbrt(_ZGVeN8v_cbrt)" }

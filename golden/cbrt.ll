; s2sad kernel module 'cbrt_loss__elementwise': driver @cbrt_loss__elementwise__c_sum_grads_f64 (T = double)

; glibc's libmvec: one variant per function (the widest ISA). Scalar code calls
; lane 0 of it, remainder loops a few lanes of it, and each call's
; vector-function-abi-variant attribute lets the loop vectoriser call it itself:
; an element gets the same bits wherever it falls
declare <8 x double> @_ZGVeN8v_cbrt(<8 x double>) #2

; cbrt as libmvec computes it: lane 0 of _ZGVeN8v_cbrt on a splat
define internal double @libmvec.cbrt(double %x) #3 {
entry:
  %x.v = insertelement <8 x double> poison, double %x, i64 0
  %x.wide = shufflevector <8 x double> %x.v, <8 x double> poison, <8 x i32> zeroinitializer
  %cbrt.wide = call <8 x double> @_ZGVeN8v_cbrt(<8 x double> %x.wide)
  %cbrt = extractelement <8 x double> %cbrt.wide, i64 0
  ret double %cbrt
}

; 4 lanes of the same: the vectoriser's remainder loops
define internal <4 x double> @libmvec.cbrt.v4(<4 x double> %x) #3 {
entry:
  %x.wide = shufflevector <4 x double> %x, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %cbrt.wide = call <8 x double> @_ZGVeN8v_cbrt(<8 x double> %x.wide)
  %cbrt = shufflevector <8 x double> %cbrt.wide, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  ret <4 x double> %cbrt
}

; 2 lanes of the same: the vectoriser's remainder loops
define internal <2 x double> @libmvec.cbrt.v2(<2 x double> %x) #3 {
entry:
  %x.wide = shufflevector <2 x double> %x, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %cbrt.wide = call <8 x double> @_ZGVeN8v_cbrt(<8 x double> %x.wide)
  %cbrt = shufflevector <8 x double> %cbrt.wide, <8 x double> poison, <2 x i32> <i32 0, i32 1>
  ret <2 x double> %cbrt
}

define internal double @cbrt_loss__elementwise(double %x) #0 {
entry:
  %ret = call double @libmvec.cbrt(double %x) #4
  ret double %ret
}

define internal { double, double } @cbrt_loss__elementwise__dual(double %x) #0 {
entry:
  %_d1 = call double @libmvec.cbrt(double %x) #4
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

@llvm.compiler.used = appending global [3 x ptr] [ptr @libmvec.cbrt, ptr @libmvec.cbrt.v4, ptr @libmvec.cbrt.v2], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind "prefer-vector-width"="512" }
attributes #2 = { nounwind willreturn memory(none) }
attributes #3 = { noinline nounwind willreturn memory(none) }
attributes #4 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.cbrt(_ZGVeN8v_cbrt),_ZGV_LLVM_N4v_libmvec.cbrt(libmvec.cbrt.v4),_ZGV_LLVM_N2v_libmvec.cbrt(libmvec.cbrt.v2)" }

; s2sad kernel module 'ident_tanh': driver @ident_tanh__c_sum_grads_f64 (T = double)

; glibc's libmvec: one variant per function (the widest ISA). Scalar code calls
; lane 0 of it, remainder loops a few lanes of it, and each call's
; vector-function-abi-variant attribute lets the loop vectoriser call it itself:
; an element gets the same bits wherever it falls
declare <8 x double> @_ZGVeN8v_tanh(<8 x double>) #2

; tanh as libmvec computes it: lane 0 of _ZGVeN8v_tanh on a splat
define internal double @libmvec.tanh(double %x) #3 {
entry:
  %x.v = insertelement <8 x double> poison, double %x, i64 0
  %x.wide = shufflevector <8 x double> %x.v, <8 x double> poison, <8 x i32> zeroinitializer
  %tanh.wide = call <8 x double> @_ZGVeN8v_tanh(<8 x double> %x.wide)
  %tanh = extractelement <8 x double> %tanh.wide, i64 0
  ret double %tanh
}

; 4 lanes of the same: the vectoriser's remainder loops
define internal <4 x double> @libmvec.tanh.v4(<4 x double> %x) #3 {
entry:
  %x.wide = shufflevector <4 x double> %x, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %tanh.wide = call <8 x double> @_ZGVeN8v_tanh(<8 x double> %x.wide)
  %tanh = shufflevector <8 x double> %tanh.wide, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  ret <4 x double> %tanh
}

; 2 lanes of the same: the vectoriser's remainder loops
define internal <2 x double> @libmvec.tanh.v2(<2 x double> %x) #3 {
entry:
  %x.wide = shufflevector <2 x double> %x, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %tanh.wide = call <8 x double> @_ZGVeN8v_tanh(<8 x double> %x.wide)
  %tanh = shufflevector <8 x double> %tanh.wide, <8 x double> poison, <2 x i32> <i32 0, i32 1>
  ret <2 x double> %tanh
}

; from golden/examples.py:9 (ident)
define internal double @ident(double %z) #0 {
entry:
  ret double %z
}

; from golden/examples.py:13 (ident_tanh)
define internal double @ident_tanh(double %z) #0 {
entry:
  %tanh = call double @libmvec.tanh(double %z) #4
  %ret = call double @ident(double %tanh)
  ret double %ret
}

define internal { double, double } @ident__dual(double %z) #0 {
entry:
  %ret.tuple = insertvalue { double, double } poison, double %z, 0
  %ret = insertvalue { double, double } %ret.tuple, double 1.0, 1
  ret { double, double } %ret
}

define internal { double, double } @ident_tanh__dual(double %z) #0 {
entry:
  %_d1 = call double @libmvec.tanh(double %z) #4
  %ident__dual.ret = call { double, double } @ident__dual(double %_d1)
  %_d2 = extractvalue { double, double } %ident__dual.ret, 0
  %d_d2_dz = extractvalue { double, double } %ident__dual.ret, 1
  %mul = fmul double %_d1, %_d1
  %sub = fsub double 1.0, %mul
  %mul.1 = fmul double %d_d2_dz, %sub
  %ret.tuple = insertvalue { double, double } poison, double %_d2, 0
  %ret = insertvalue { double, double } %ret.tuple, double %mul.1, 1
  ret { double, double } %ret
}

define void @ident_tanh__c_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %z, ptr noalias %acc, double %seed, ptr noalias %z_bar) #1 {
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
  %dual = call { double, double } @ident_tanh__dual(double %z.v)
  %value = extractvalue { double, double } %dual, 0
  %z.partial = extractvalue { double, double } %dual, 1
  %value.sum.next = fadd reassoc nsz double %value.sum.i, %value
  %z_bar.c = fmul double %z.partial, %seed
  %z_bar.ptr = getelementptr inbounds double, ptr %z_bar, i64 %flat
  store double %z_bar.c, ptr %z_bar.ptr
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

@llvm.compiler.used = appending global [3 x ptr] [ptr @libmvec.tanh, ptr @libmvec.tanh.v4, ptr @libmvec.tanh.v2], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind "prefer-vector-width"="512" }
attributes #2 = { nounwind willreturn memory(none) }
attributes #3 = { noinline nounwind willreturn memory(none) }
attributes #4 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.tanh(_ZGVeN8v_tanh),_ZGV_LLVM_N4v_libmvec.tanh(libmvec.tanh.v4),_ZGV_LLVM_N2v_libmvec.tanh(libmvec.tanh.v2)" }

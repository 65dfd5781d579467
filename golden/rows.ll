; s2sad kernel module 'row_energy': driver @row_energy__cccc_sum_grads_f64 (T = double)

; glibc's libmvec: one variant per function (the widest ISA). Scalar code calls
; lane 0 of it, remainder loops a few lanes of it, and each call's
; vector-function-abi-variant attribute lets the loop vectoriser call it itself:
; an element gets the same bits wherever it falls
declare <8 x double> @_ZGVeN8v_sin(<8 x double>) #2
declare <8 x double> @_ZGVeN8v_cos(<8 x double>) #2

; sin as libmvec computes it: lane 0 of _ZGVeN8v_sin on a splat
define internal double @libmvec.sin(double %x) #3 {
entry:
  %x.v = insertelement <8 x double> poison, double %x, i64 0
  %x.wide = shufflevector <8 x double> %x.v, <8 x double> poison, <8 x i32> zeroinitializer
  %sin.wide = call <8 x double> @_ZGVeN8v_sin(<8 x double> %x.wide)
  %sin = extractelement <8 x double> %sin.wide, i64 0
  ret double %sin
}

; 4 lanes of the same: the vectoriser's remainder loops
define internal <4 x double> @libmvec.sin.v4(<4 x double> %x) #3 {
entry:
  %x.wide = shufflevector <4 x double> %x, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %sin.wide = call <8 x double> @_ZGVeN8v_sin(<8 x double> %x.wide)
  %sin = shufflevector <8 x double> %sin.wide, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  ret <4 x double> %sin
}

; 2 lanes of the same: the vectoriser's remainder loops
define internal <2 x double> @libmvec.sin.v2(<2 x double> %x) #3 {
entry:
  %x.wide = shufflevector <2 x double> %x, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %sin.wide = call <8 x double> @_ZGVeN8v_sin(<8 x double> %x.wide)
  %sin = shufflevector <8 x double> %sin.wide, <8 x double> poison, <2 x i32> <i32 0, i32 1>
  ret <2 x double> %sin
}

; cos as libmvec computes it: lane 0 of _ZGVeN8v_cos on a splat
define internal double @libmvec.cos(double %x) #3 {
entry:
  %x.v = insertelement <8 x double> poison, double %x, i64 0
  %x.wide = shufflevector <8 x double> %x.v, <8 x double> poison, <8 x i32> zeroinitializer
  %cos.wide = call <8 x double> @_ZGVeN8v_cos(<8 x double> %x.wide)
  %cos = extractelement <8 x double> %cos.wide, i64 0
  ret double %cos
}

; 4 lanes of the same: the vectoriser's remainder loops
define internal <4 x double> @libmvec.cos.v4(<4 x double> %x) #3 {
entry:
  %x.wide = shufflevector <4 x double> %x, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %cos.wide = call <8 x double> @_ZGVeN8v_cos(<8 x double> %x.wide)
  %cos = shufflevector <8 x double> %cos.wide, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  ret <4 x double> %cos
}

; 2 lanes of the same: the vectoriser's remainder loops
define internal <2 x double> @libmvec.cos.v2(<2 x double> %x) #3 {
entry:
  %x.wide = shufflevector <2 x double> %x, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %cos.wide = call <8 x double> @_ZGVeN8v_cos(<8 x double> %x.wide)
  %cos = shufflevector <8 x double> %cos.wide, <8 x double> poison, <2 x i32> <i32 0, i32 1>
  ret <2 x double> %cos
}

; from golden/examples.py:248 (its rows taken apart)
define internal double @row_energy(double %p__0, double %p__1, double %p__2, double %p__m1) #0 {
entry:
  %square = fmul double %p__0, %p__0
  %sin = call double @libmvec.sin(double %p__2) #4
  %mul = fmul double %p__1, %sin
  %add = fadd double %square, %mul
  %ret = fsub double %add, %p__m1
  ret double %ret
}

define internal { double, double, double, double, double } @row_energy__dual(double %p__0, double %p__1, double %p__2, double %p__m1) #0 {
entry:
  %_d1 = fmul double %p__0, %p__0
  %_d2 = call double @libmvec.sin(double %p__2) #4
  %_d3 = fmul double %p__1, %_d2
  %_d4 = fadd double %_d1, %_d3
  %sub = fsub double %_d4, %p__m1
  %mul = fmul double 2.0, %p__0
  %mul.1 = fmul double %mul, 1.0
  %mul.2 = fmul double %_d2, 1.0
  %cos = call double @libmvec.cos(double %p__2) #5
  %mul.3 = fmul double %cos, 1.0
  %mul.4 = fmul double %p__1, %mul.3
  %neg = fneg double 1.0
  %ret.tuple = insertvalue { double, double, double, double, double } poison, double %sub, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double } %ret.tuple, double %mul.1, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double } %ret.tuple.1, double %mul.2, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double } %ret.tuple.2, double %mul.4, 3
  %ret = insertvalue { double, double, double, double, double } %ret.tuple.3, double %neg, 4
  ret { double, double, double, double, double } %ret
}

define void @row_energy__cccc_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %p__0, ptr noalias %p__1, ptr noalias %p__2, ptr noalias %p__m1, ptr noalias %acc, double %seed, ptr noalias %p__0_bar, ptr noalias %p__1_bar, ptr noalias %p__2_bar, ptr noalias %p__m1_bar) #1 {
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
  %p__0.ptr = getelementptr inbounds double, ptr %p__0, i64 %flat
  %p__0.v = load double, ptr %p__0.ptr
  %p__1.ptr = getelementptr inbounds double, ptr %p__1, i64 %flat
  %p__1.v = load double, ptr %p__1.ptr
  %p__2.ptr = getelementptr inbounds double, ptr %p__2, i64 %flat
  %p__2.v = load double, ptr %p__2.ptr
  %p__m1.ptr = getelementptr inbounds double, ptr %p__m1, i64 %flat
  %p__m1.v = load double, ptr %p__m1.ptr
  %dual = call { double, double, double, double, double } @row_energy__dual(double %p__0.v, double %p__1.v, double %p__2.v, double %p__m1.v)
  %value = extractvalue { double, double, double, double, double } %dual, 0
  %p__0.partial = extractvalue { double, double, double, double, double } %dual, 1
  %p__1.partial = extractvalue { double, double, double, double, double } %dual, 2
  %p__2.partial = extractvalue { double, double, double, double, double } %dual, 3
  %p__m1.partial = extractvalue { double, double, double, double, double } %dual, 4
  %value.sum.next = fadd reassoc nsz double %value.sum.i, %value
  %p__0_bar.c = fmul double %p__0.partial, %seed
  %p__0_bar.ptr = getelementptr inbounds double, ptr %p__0_bar, i64 %flat
  store double %p__0_bar.c, ptr %p__0_bar.ptr
  %p__1_bar.c = fmul double %p__1.partial, %seed
  %p__1_bar.ptr = getelementptr inbounds double, ptr %p__1_bar, i64 %flat
  store double %p__1_bar.c, ptr %p__1_bar.ptr
  %p__2_bar.c = fmul double %p__2.partial, %seed
  %p__2_bar.ptr = getelementptr inbounds double, ptr %p__2_bar, i64 %flat
  store double %p__2_bar.c, ptr %p__2_bar.ptr
  %p__m1_bar.c = fmul double %p__m1.partial, %seed
  %p__m1_bar.ptr = getelementptr inbounds double, ptr %p__m1_bar, i64 %flat
  store double %p__m1_bar.c, ptr %p__m1_bar.ptr
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

@llvm.compiler.used = appending global [6 x ptr] [ptr @libmvec.sin, ptr @libmvec.sin.v4, ptr @libmvec.sin.v2, ptr @libmvec.cos, ptr @libmvec.cos.v4, ptr @libmvec.cos.v2], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind "prefer-vector-width"="512" }
attributes #2 = { nounwind willreturn memory(none) }
attributes #3 = { noinline nounwind willreturn memory(none) }
attributes #4 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.sin(_ZGVeN8v_sin),_ZGV_LLVM_N4v_libmvec.sin(libmvec.sin.v4),_ZGV_LLVM_N2v_libmvec.sin(libmvec.sin.v2)" }
attributes #5 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.cos(_ZGVeN8v_cos),_ZGV_LLVM_N4v_libmvec.cos(libmvec.cos.v4),_ZGV_LLVM_N2v_libmvec.cos(libmvec.cos.v2)" }

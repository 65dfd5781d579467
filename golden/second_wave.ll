; s2sad kernel module 'wave__d_z': driver @wave__d_z__c_sum_grads_f64 (T = double)

; glibc's libmvec: one variant per function (the widest ISA). Scalar code calls
; lane 0 of it, remainder loops a few lanes of it, and each call's
; vector-function-abi-variant attribute lets the loop vectoriser call it itself:
; an element gets the same bits wherever it falls
declare <8 x double> @_ZGVeN8v_sin(<8 x double>) #2
declare <8 x double> @_ZGVeN8vv_pow(<8 x double>, <8 x double>) #2
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

; pow as libmvec computes it: lane 0 of _ZGVeN8vv_pow on a splat
define internal double @libmvec.pow(double %a, double %b) #3 {
entry:
  %a.v = insertelement <8 x double> poison, double %a, i64 0
  %a.wide = shufflevector <8 x double> %a.v, <8 x double> poison, <8 x i32> zeroinitializer
  %b.v = insertelement <8 x double> poison, double %b, i64 0
  %b.wide = shufflevector <8 x double> %b.v, <8 x double> poison, <8 x i32> zeroinitializer
  %pow.wide = call <8 x double> @_ZGVeN8vv_pow(<8 x double> %a.wide, <8 x double> %b.wide)
  %pow = extractelement <8 x double> %pow.wide, i64 0
  ret double %pow
}

; 4 lanes of the same: the vectoriser's remainder loops
define internal <4 x double> @libmvec.pow.v4(<4 x double> %a, <4 x double> %b) #3 {
entry:
  %a.wide = shufflevector <4 x double> %a, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %b.wide = shufflevector <4 x double> %b, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %pow.wide = call <8 x double> @_ZGVeN8vv_pow(<8 x double> %a.wide, <8 x double> %b.wide)
  %pow = shufflevector <8 x double> %pow.wide, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  ret <4 x double> %pow
}

; 2 lanes of the same: the vectoriser's remainder loops
define internal <2 x double> @libmvec.pow.v2(<2 x double> %a, <2 x double> %b) #3 {
entry:
  %a.wide = shufflevector <2 x double> %a, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %b.wide = shufflevector <2 x double> %b, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %pow.wide = call <8 x double> @_ZGVeN8vv_pow(<8 x double> %a.wide, <8 x double> %b.wide)
  %pow = shufflevector <8 x double> %pow.wide, <8 x double> poison, <2 x i32> <i32 0, i32 1>
  ret <2 x double> %pow
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

; forward mode (a dual) made for s2sad.grad(wave)
define internal { double, double } @wave__dual(double %z) #0 {
entry:
  %_d1 = call double @libmvec.sin(double %z) #4
  %_d2 = call double @libmvec.pow(double %z, double 3.0) #5
  %mul = fmul double %_d1, %_d2
  %cos = call double @libmvec.cos(double %z) #6
  %mul.1 = fmul double %_d2, %cos
  %square = fmul double %z, %z
  %mul.2 = fmul double 3.0, %square
  %mul.3 = fmul double %_d1, %mul.2
  %add = fadd double %mul.1, %mul.3
  %ret.tuple = insertvalue { double, double } poison, double %mul, 0
  %ret = insertvalue { double, double } %ret.tuple, double %add, 1
  ret { double, double } %ret
}

; d wave / d z: s2sad.grad(wave), its forward dual selecting the partial
define internal double @wave__d_z(double %z) #0 {
entry:
  %wave__dual.ret = call { double, double } @wave__dual(double %z)
  %wave_value = extractvalue { double, double } %wave__dual.ret, 0
  %dwave_dz = extractvalue { double, double } %wave__dual.ret, 1
  ret double %dwave_dz
}

define internal { double, double, double, double } @wave__dual__dual(double %z) #0 {
entry:
  %_d1_dot = call double @libmvec.cos(double %z) #6
  %_d1 = call double @libmvec.sin(double %z) #4
  %square = fmul double %z, %z
  %_d2_dot = fmul double 3.0, %square
  %_d2 = call double @libmvec.pow(double %z, double 3.0) #5
  %_d3 = call double @libmvec.cos(double %z) #6
  %_d4 = fmul double %_d2, %_d3
  %_d5 = fmul double %z, %z
  %_d6 = fmul double 3.0, %_d5
  %_d7 = fmul double %_d1, %_d6
  %mul = fmul double %_d1, %_d2
  %add = fadd double %_d4, %_d7
  %mul.1 = fmul double %_d2, %_d1_dot
  %mul.2 = fmul double %_d1, %_d2_dot
  %add.1 = fadd double %mul.1, %mul.2
  %mul.3 = fmul double %_d3, %_d2_dot
  %sin = call double @libmvec.sin(double %z) #4
  %neg = fneg double %sin
  %mul.4 = fmul double %_d2, %neg
  %add.2 = fadd double %mul.3, %mul.4
  %mul.5 = fmul double %_d6, %_d1_dot
  %mul.6 = fmul double 2.0, %z
  %mul.7 = fmul double 3.0, %mul.6
  %mul.8 = fmul double %_d1, %mul.7
  %add.3 = fadd double %mul.5, %mul.8
  %add.4 = fadd double %add.2, %add.3
  %ret.tuple = insertvalue { double, double, double, double } poison, double %mul, 0
  %ret.tuple.1 = insertvalue { double, double, double, double } %ret.tuple, double %add, 1
  %ret.tuple.2 = insertvalue { double, double, double, double } %ret.tuple.1, double %add.1, 2
  %ret = insertvalue { double, double, double, double } %ret.tuple.2, double %add.4, 3
  ret { double, double, double, double } %ret
}

define internal { double, double } @wave__d_z__dual(double %z) #0 {
entry:
  %wave__dual__dual.ret = call { double, double, double, double } @wave__dual__dual(double %z)
  %_d1 = extractvalue { double, double, double, double } %wave__dual__dual.ret, 0
  %_d2 = extractvalue { double, double, double, double } %wave__dual__dual.ret, 1
  %d_d1_dz = extractvalue { double, double, double, double } %wave__dual__dual.ret, 2
  %d_d2_dz = extractvalue { double, double, double, double } %wave__dual__dual.ret, 3
  %ret.tuple = insertvalue { double, double } poison, double %_d2, 0
  %ret = insertvalue { double, double } %ret.tuple, double %d_d2_dz, 1
  ret { double, double } %ret
}

define void @wave__d_z__c_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %z, ptr noalias %acc, double %seed, ptr noalias %z_bar) #1 {
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
  %dual = call { double, double } @wave__d_z__dual(double %z.v)
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

@llvm.compiler.used = appending global [9 x ptr] [ptr @libmvec.sin, ptr @libmvec.sin.v4, ptr @libmvec.sin.v2, ptr @libmvec.pow, ptr @libmvec.pow.v4, ptr @libmvec.pow.v2, ptr @libmvec.cos, ptr @libmvec.cos.v4, ptr @libmvec.cos.v2], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind "prefer-vector-width"="512" }
attributes #2 = { nounwind willreturn memory(none) }
attributes #3 = { noinline nounwind willreturn memory(none) }
attributes #4 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.sin(_ZGVeN8v_sin),_ZGV_LLVM_N4v_libmvec.sin(libmvec.sin.v4),_ZGV_LLVM_N2v_libmvec.sin(libmvec.sin.v2)" }
attributes #5 = { "vector-function-abi-variant"="_ZGVeN8vv_libmvec.pow(_ZGVeN8vv_pow),_ZGV_LLVM_N4vv_libmvec.pow(libmvec.pow.v4),_ZGV_LLVM_N2vv_libmvec.pow(libmvec.pow.v2)" }
attributes #6 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.cos(_ZGVeN8v_cos),_ZGV_LLVM_N4v_libmvec.cos(libmvec.cos.v4),_ZGV_LLVM_N2v_libmvec.cos(libmvec.cos.v2)" }

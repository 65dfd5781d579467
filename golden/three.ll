; s2sad kernel module 'three': driver @three__ccc_sum_grads_f64 (T = double)

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

; from golden/examples.py:33 (three)
define internal double @three(double %x, double %y, double %w) #0 {
entry:
  %mul = fmul double %x, %y
  %square = fmul double %w, %w
  %s = fadd double %mul, %square
  %gt = fcmp ogt double %s, 0.0
  br i1 %gt, label %cond.true, label %cond.false

cond.true:
  %sin = call double @libmvec.sin(double %s) #4
  br label %cond.end

cond.false:
  %neg = fneg double %s
  br label %cond.end

cond.end:
  %ret = phi double [ %sin, %cond.true ], [ %neg, %cond.false ]
  ret double %ret
}

define internal { double, double, double, double } @three__dual(double %x, double %y, double %w) #0 {
entry:
  %_d7.addr = alloca double
  %_d4.addr = alloca double
  %_d5.addr = alloca double
  %_d6.addr = alloca double
  %_d3.addr = alloca double
  %_d1 = fmul double %x, %y
  %_d2 = fmul double %w, %w
  %s_dot_w = fmul double 2.0, %w
  %s = fadd double %_d1, %_d2
  %gt = fcmp ogt double %s, 0.0
  br i1 %gt, label %if.then, label %if.else

if.then:
  %_d7 = call double @libmvec.cos(double %s) #5
  store double %_d7, ptr %_d7.addr
  %_d7.1 = load double, ptr %_d7.addr
  %_d4 = fmul double %_d7.1, %y
  store double %_d4, ptr %_d4.addr
  %_d7.2 = load double, ptr %_d7.addr
  %_d5 = fmul double %_d7.2, %x
  store double %_d5, ptr %_d5.addr
  %_d7.3 = load double, ptr %_d7.addr
  %_d6 = fmul double %_d7.3, %s_dot_w
  store double %_d6, ptr %_d6.addr
  %_d3 = call double @libmvec.sin(double %s) #4
  store double %_d3, ptr %_d3.addr
  br label %if.end

if.else:
  %_d4.1 = fneg double %y
  store double %_d4.1, ptr %_d4.addr
  %_d5.1 = fneg double %x
  store double %_d5.1, ptr %_d5.addr
  %_d6.1 = fneg double %s_dot_w
  store double %_d6.1, ptr %_d6.addr
  %_d3.1 = fneg double %s
  store double %_d3.1, ptr %_d3.addr
  br label %if.end

if.end:
  %_d3.2 = load double, ptr %_d3.addr
  %_d4.2 = load double, ptr %_d4.addr
  %_d5.2 = load double, ptr %_d5.addr
  %_d6.2 = load double, ptr %_d6.addr
  %ret.tuple = insertvalue { double, double, double, double } poison, double %_d3.2, 0
  %ret.tuple.1 = insertvalue { double, double, double, double } %ret.tuple, double %_d4.2, 1
  %ret.tuple.2 = insertvalue { double, double, double, double } %ret.tuple.1, double %_d5.2, 2
  %ret = insertvalue { double, double, double, double } %ret.tuple.2, double %_d6.2, 3
  ret { double, double, double, double } %ret
}

define void @three__ccc_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %y, ptr noalias %w, ptr noalias %acc, double %seed, ptr noalias %x_bar, ptr noalias %y_bar, ptr noalias %w_bar) #1 {
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
  %y.ptr = getelementptr inbounds double, ptr %y, i64 %flat
  %y.v = load double, ptr %y.ptr
  %w.ptr = getelementptr inbounds double, ptr %w, i64 %flat
  %w.v = load double, ptr %w.ptr
  %dual = call { double, double, double, double } @three__dual(double %x.v, double %y.v, double %w.v)
  %value = extractvalue { double, double, double, double } %dual, 0
  %x.partial = extractvalue { double, double, double, double } %dual, 1
  %y.partial = extractvalue { double, double, double, double } %dual, 2
  %w.partial = extractvalue { double, double, double, double } %dual, 3
  %value.sum.next = fadd reassoc nsz double %value.sum.i, %value
  %x_bar.c = fmul double %x.partial, %seed
  %x_bar.ptr = getelementptr inbounds double, ptr %x_bar, i64 %flat
  store double %x_bar.c, ptr %x_bar.ptr
  %y_bar.c = fmul double %y.partial, %seed
  %y_bar.ptr = getelementptr inbounds double, ptr %y_bar, i64 %flat
  store double %y_bar.c, ptr %y_bar.ptr
  %w_bar.c = fmul double %w.partial, %seed
  %w_bar.ptr = getelementptr inbounds double, ptr %w_bar, i64 %flat
  store double %w_bar.c, ptr %w_bar.ptr
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

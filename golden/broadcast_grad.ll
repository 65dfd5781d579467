; s2sad kernel module 'tanh__d_x': driver @tanh__d_x__c_sum_grads_f64 (T = double)

declare <8 x double> @llvm.copysign.v8f64(<8 x double>, <8 x double>)
declare <8 x double> @llvm.fabs.v8f64(<8 x double>)
declare <8 x double> @llvm.fma.v8f64(<8 x double>, <8 x double>, <8 x double>)

; tanh as vecmath computes it: lane 0 of s2sad.tanh.v8 on a splat
define internal double @vecmath.tanh(double %x) #3 {
entry:
  %x.v = insertelement <8 x double> poison, double %x, i64 0
  %x.wide = shufflevector <8 x double> %x.v, <8 x double> poison, <8 x i32> zeroinitializer
  %tanh.wide = call <8 x double> @s2sad.tanh.v8(<8 x double> %x.wide)
  %tanh = extractelement <8 x double> %tanh.wide, i64 0
  ret double %tanh
}

; 4 lanes of the same: the vectoriser's remainder loops
define internal <4 x double> @vecmath.tanh.v4(<4 x double> %x) #3 {
entry:
  %x.wide = shufflevector <4 x double> %x, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %tanh.wide = call <8 x double> @s2sad.tanh.v8(<8 x double> %x.wide)
  %tanh = shufflevector <8 x double> %tanh.wide, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  ret <4 x double> %tanh
}

; 2 lanes of the same: the vectoriser's remainder loops
define internal <2 x double> @vecmath.tanh.v2(<2 x double> %x) #3 {
entry:
  %x.wide = shufflevector <2 x double> %x, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %tanh.wide = call <8 x double> @s2sad.tanh.v8(<8 x double> %x.wide)
  %tanh = shufflevector <8 x double> %tanh.wide, <8 x double> poison, <2 x i32> <i32 0, i32 1>
  ret <2 x double> %tanh
}

; tanh(x): t / (t + 2) with t = expm1(2|x|) (|x| clamped to 20), the sign of x;
; expm1 from y = n ln2 + r, |r| <= ln2/2: (2^n - 1) + 2^n (r + r^2 G(r));
; below 0.4, h - h z with h = t/2 and z = t / (t + 2)
; (s2sad's vector math on 8 lanes, each lane as the scalar function)
define internal <8 x double> @s2sad.tanh.v8(<8 x double> %x) #0 {
entry:
  %ax = call <8 x double> @llvm.fabs.v8f64(<8 x double> %x)
  %ax.big = fcmp ogt <8 x double> %ax, splat (double 20.0)
  %a = select <8 x i1> %ax.big, <8 x double> splat (double 20.0), <8 x double> %ax
  %y = fadd <8 x double> %a, %a
  %k = call <8 x double> @llvm.fma.v8f64(<8 x double> %y, <8 x double> splat (double 0x3FF71547652B82FE), <8 x double> splat (double 6755399441055744.0))
  %n.f = fsub <8 x double> %k, splat (double 6755399441055744.0)
  %hi = call <8 x double> @llvm.fma.v8f64(<8 x double> %n.f, <8 x double> splat (double 0xBFE62E42FEE00000), <8 x double> %y)
  %r = call <8 x double> @llvm.fma.v8f64(<8 x double> %n.f, <8 x double> splat (double 0xBDEA39EF35793C76), <8 x double> %hi)
  %r2 = fmul <8 x double> %r, %r
  %g = call <8 x double> @llvm.fma.v8f64(<8 x double> splat (double 0x3E5AF3CE42B12B24), <8 x double> %r, <8 x double> splat (double 0x3E92894F52583578))
  %g.1 = call <8 x double> @llvm.fma.v8f64(<8 x double> %g, <8 x double> %r, <8 x double> splat (double 0x3EC71DE0BE2B5E96))
  %g.2 = call <8 x double> @llvm.fma.v8f64(<8 x double> %g.1, <8 x double> %r, <8 x double> splat (double 0x3EFA019B621F9D08))
  %g.3 = call <8 x double> @llvm.fma.v8f64(<8 x double> %g.2, <8 x double> %r, <8 x double> splat (double 0x3F2A01A01A83BA17))
  %g.4 = call <8 x double> @llvm.fma.v8f64(<8 x double> %g.3, <8 x double> %r, <8 x double> splat (double 0x3F56C16C1794E1DC))
  %g.5 = call <8 x double> @llvm.fma.v8f64(<8 x double> %g.4, <8 x double> %r, <8 x double> splat (double 0x3F81111111110918))
  %g.6 = call <8 x double> @llvm.fma.v8f64(<8 x double> %g.5, <8 x double> %r, <8 x double> splat (double 0x3FA5555555553B6C))
  %g.7 = call <8 x double> @llvm.fma.v8f64(<8 x double> %g.6, <8 x double> %r, <8 x double> splat (double 0x3FC5555555555556))
  %g.8 = call <8 x double> @llvm.fma.v8f64(<8 x double> %g.7, <8 x double> %r, <8 x double> splat (double 0x3FE0000000000001))
  %q = call <8 x double> @llvm.fma.v8f64(<8 x double> %r2, <8 x double> %g.8, <8 x double> %r)
  %k.bits = bitcast <8 x double> %k to <8 x i64>
  %n.sh = shl <8 x i64> %k.bits, splat (i64 52)
  %s.bits = add <8 x i64> %n.sh, splat (i64 4607182418800017408)
  %s = bitcast <8 x i64> %s.bits to <8 x double>
  %s.m1 = fsub <8 x double> %s, splat (double 1.0)
  %t = call <8 x double> @llvm.fma.v8f64(<8 x double> %s, <8 x double> %q, <8 x double> %s.m1)
  %t.2 = fadd <8 x double> %t, splat (double 2.0)
  %z = fdiv <8 x double> %t, %t.2
  %h = fmul <8 x double> %t, splat (double 0.5)
  %small = fcmp olt <8 x double> %a, splat (double 0x3FD999999999999A)
  %h.neg = fneg <8 x double> %h
  %z.h = call <8 x double> @llvm.fma.v8f64(<8 x double> %h.neg, <8 x double> %z, <8 x double> %h)
  %z.s = select <8 x i1> %small, <8 x double> %z.h, <8 x double> %z
  %tanh = call <8 x double> @llvm.copysign.v8f64(<8 x double> %z.s, <8 x double> %x)
  ret <8 x double> %tanh
}

; forward mode (a dual) made for s2sad.grad(tanh)
define internal { double, double } @tanh__dual(double %x) #0 {
entry:
  %_d1 = call double @vecmath.tanh(double %x) #4
  %mul = fmul double %_d1, %_d1
  %sub = fsub double 1.0, %mul
  %ret.tuple = insertvalue { double, double } poison, double %_d1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %sub, 1
  ret { double, double } %ret
}

; d tanh / d x: s2sad.grad(tanh), its forward dual selecting the partial
define internal double @tanh__d_x(double %x) #0 {
entry:
  %tanh__dual.ret = call { double, double } @tanh__dual(double %x)
  %tanh_value = extractvalue { double, double } %tanh__dual.ret, 0
  %dtanh_dx = extractvalue { double, double } %tanh__dual.ret, 1
  ret double %dtanh_dx
}

define internal { double, double, double, double } @tanh__dual__dual(double %x) #0 {
entry:
  %_d1 = call double @vecmath.tanh(double %x) #4
  %mul = fmul double %_d1, %_d1
  %_d1_dot = fsub double 1.0, %mul
  %_d2 = fmul double %_d1, %_d1
  %sub = fsub double 1.0, %_d2
  %mul.1 = fmul double %_d1, %_d1_dot
  %mul.2 = fmul double %_d1, %_d1_dot
  %add = fadd double %mul.1, %mul.2
  %neg = fneg double %add
  %ret.tuple = insertvalue { double, double, double, double } poison, double %_d1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double } %ret.tuple, double %sub, 1
  %ret.tuple.2 = insertvalue { double, double, double, double } %ret.tuple.1, double %_d1_dot, 2
  %ret = insertvalue { double, double, double, double } %ret.tuple.2, double %neg, 3
  ret { double, double, double, double } %ret
}

define internal { double, double } @tanh__d_x__dual(double %x) #0 {
entry:
  %tanh__dual__dual.ret = call { double, double, double, double } @tanh__dual__dual(double %x)
  %_d1 = extractvalue { double, double, double, double } %tanh__dual__dual.ret, 0
  %_d2 = extractvalue { double, double, double, double } %tanh__dual__dual.ret, 1
  %d_d1_dx = extractvalue { double, double, double, double } %tanh__dual__dual.ret, 2
  %d_d2_dx = extractvalue { double, double, double, double } %tanh__dual__dual.ret, 3
  %ret.tuple = insertvalue { double, double } poison, double %_d2, 0
  %ret = insertvalue { double, double } %ret.tuple, double %d_d2_dx, 1
  ret { double, double } %ret
}

define void @tanh__d_x__c_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %acc, double %seed, ptr noalias %x_bar) #1 {
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
  %dual = call { double, double } @tanh__d_x__dual(double %x.v)
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

@llvm.compiler.used = appending global [4 x ptr] [ptr @s2sad.tanh.v8, ptr @vecmath.tanh, ptr @vecmath.tanh.v4, ptr @vecmath.tanh.v2], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind "prefer-vector-width"="512" }
attributes #3 = { noinline nounwind willreturn memory(none) }
attributes #4 = { "vector-function-abi-variant"="_ZGV_LLVM_N8v_vecmath.tanh(s2sad.tanh.v8),_ZGV_LLVM_N4v_vecmath.tanh(vecmath.tanh.v4),_ZGV_LLVM_N2v_vecmath.tanh(vecmath.tanh.v2)" }

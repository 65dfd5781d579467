; s2sad kernel module 'array_loss__elementwise': driver @array_loss__elementwise__scan_c_s1_sum_grads_f64 (T = double)

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

; local function at golden/examples.py:109
define internal { double, double } @lambda_109(double %z, double %BUFFER_0) #0 {
entry:
  %running_array.ret = call { double, double } @running_array(double %z, double %BUFFER_0)
  %_t1 = extractvalue { double, double } %running_array.ret, 0
  %BUFFER_0.1 = extractvalue { double, double } %running_array.ret, 1
  %ret.tuple = insertvalue { double, double } poison, double %_t1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %BUFFER_0.1, 1
  ret { double, double } %ret
}

; from golden/examples.py:82 (running_array)
define internal { double, double } @running_array(double %x, double %BUFFER_0) #0 {
entry:
  %mul = fmul double 0.5, %BUFFER_0
  %tanh = call double @vecmath.tanh(double %x) #4
  %BUFFER_0.1 = fadd double %mul, %tanh
  %ret.tuple = insertvalue { double, double } poison, double %BUFFER_0.1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %BUFFER_0.1, 1
  ret { double, double } %ret
}

define internal { double, double } @array_loss__elementwise(double %x, double %BUFFER_0) #0 {
entry:
  %lambda_109.ret = call { double, double } @lambda_109(double %x, double %BUFFER_0)
  %_t1 = extractvalue { double, double } %lambda_109.ret, 0
  %BUFFER_0.1 = extractvalue { double, double } %lambda_109.ret, 1
  %ret.tuple = insertvalue { double, double } poison, double %_t1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %BUFFER_0.1, 1
  ret { double, double } %ret
}

define internal { double, double, double, double, double, double } @running_array__dual(double %x, double %BUFFER_0) #0 {
entry:
  %_d1 = fmul double 0.5, %BUFFER_0
  %_d2 = call double @vecmath.tanh(double %x) #4
  %mul = fmul double 0.5, 0.0
  %mul.1 = fmul double %_d2, %_d2
  %sub = fsub double 1.0, %mul.1
  %BUFFER_0_dot_x = fadd double %mul, %sub
  %BUFFER_0_dot_BUFFER_0 = fmul double 0.5, 1.0
  %BUFFER_0.1 = fadd double %_d1, %_d2
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %BUFFER_0.1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %BUFFER_0.1, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %BUFFER_0_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double %BUFFER_0_dot_BUFFER_0, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %BUFFER_0_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double %BUFFER_0_dot_BUFFER_0, 5
  ret { double, double, double, double, double, double } %ret
}

define internal { double, double, double, double, double, double } @lambda_109__dual(double %z, double %BUFFER_0) #0 {
entry:
  %running_array__dual.ret = call { double, double, double, double, double, double } @running_array__dual(double %z, double %BUFFER_0)
  %_d1 = extractvalue { double, double, double, double, double, double } %running_array__dual.ret, 0
  %_d2 = extractvalue { double, double, double, double, double, double } %running_array__dual.ret, 1
  %d_d1_dx = extractvalue { double, double, double, double, double, double } %running_array__dual.ret, 2
  %d_d1_dBUFFER_0 = extractvalue { double, double, double, double, double, double } %running_array__dual.ret, 3
  %d_d2_dx = extractvalue { double, double, double, double, double, double } %running_array__dual.ret, 4
  %d_d2_dBUFFER_0 = extractvalue { double, double, double, double, double, double } %running_array__dual.ret, 5
  %mul = fmul double %d_d1_dBUFFER_0, 0.0
  %_t1_dot_z = fadd double %d_d1_dx, %mul
  %_t1_dot_BUFFER_0 = fmul double %d_d1_dBUFFER_0, 1.0
  %mul.1 = fmul double %d_d2_dBUFFER_0, 0.0
  %BUFFER_0_dot_z = fadd double %d_d2_dx, %mul.1
  %BUFFER_0_dot_BUFFER_0 = fmul double %d_d2_dBUFFER_0, 1.0
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %_d1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %_d2, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %_t1_dot_z, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double %_t1_dot_BUFFER_0, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %BUFFER_0_dot_z, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double %BUFFER_0_dot_BUFFER_0, 5
  ret { double, double, double, double, double, double } %ret
}

define internal { double, double, double, double, double, double } @array_loss__elementwise__dual(double %x, double %BUFFER_0) #0 {
entry:
  %lambda_109__dual.ret = call { double, double, double, double, double, double } @lambda_109__dual(double %x, double %BUFFER_0)
  %_d1 = extractvalue { double, double, double, double, double, double } %lambda_109__dual.ret, 0
  %_d2 = extractvalue { double, double, double, double, double, double } %lambda_109__dual.ret, 1
  %d_d1_dz = extractvalue { double, double, double, double, double, double } %lambda_109__dual.ret, 2
  %d_d1_dBUFFER_0 = extractvalue { double, double, double, double, double, double } %lambda_109__dual.ret, 3
  %d_d2_dz = extractvalue { double, double, double, double, double, double } %lambda_109__dual.ret, 4
  %d_d2_dBUFFER_0 = extractvalue { double, double, double, double, double, double } %lambda_109__dual.ret, 5
  %mul = fmul double %d_d1_dBUFFER_0, 0.0
  %_t1_dot_x = fadd double %d_d1_dz, %mul
  %_t1_dot_BUFFER_0 = fmul double %d_d1_dBUFFER_0, 1.0
  %mul.1 = fmul double %d_d2_dBUFFER_0, 0.0
  %BUFFER_0_dot_x = fadd double %d_d2_dz, %mul.1
  %BUFFER_0_dot_BUFFER_0 = fmul double %d_d2_dBUFFER_0, 1.0
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %_d1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %_d2, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %_t1_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double %_t1_dot_BUFFER_0, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %BUFFER_0_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double %BUFFER_0_dot_BUFFER_0, 5
  ret { double, double, double, double, double, double } %ret
}

define internal { double, double, double, double, double } @array_loss__elementwise__dual__scan_pre(double %x) #0 {
entry:
  %_sc25__d2 = call double @vecmath.tanh(double %x) #4
  %mul = fmul double 0.5, 0.0
  %mul.1 = fmul double %_sc25__d2, %_sc25__d2
  %sub = fsub double 1.0, %mul.1
  %_sc23_BUFFER_0_dot_x = fadd double %mul, %sub
  %_sc22_BUFFER_0_dot_BUFFER_0 = fmul double 0.5, 1.0
  %mul.2 = fmul double %_sc22_BUFFER_0_dot_BUFFER_0, 0.0
  %_sc15__t1_dot_z = fadd double %_sc23_BUFFER_0_dot_x, %mul.2
  %_sc14__t1_dot_BUFFER_0 = fmul double %_sc22_BUFFER_0_dot_BUFFER_0, 1.0
  %mul.3 = fmul double %_sc22_BUFFER_0_dot_BUFFER_0, 0.0
  %_sc10_BUFFER_0_dot_z = fadd double %_sc23_BUFFER_0_dot_x, %mul.3
  %_sc9_BUFFER_0_dot_BUFFER_0 = fmul double %_sc22_BUFFER_0_dot_BUFFER_0, 1.0
  %mul.4 = fmul double %_sc14__t1_dot_BUFFER_0, 0.0
  %_t1_dot_x = fadd double %_sc15__t1_dot_z, %mul.4
  %_t1_dot_BUFFER_0 = fmul double %_sc14__t1_dot_BUFFER_0, 1.0
  %mul.5 = fmul double %_sc9_BUFFER_0_dot_BUFFER_0, 0.0
  %BUFFER_0_dot_x = fadd double %_sc10_BUFFER_0_dot_z, %mul.5
  %BUFFER_0_dot_BUFFER_0 = fmul double %_sc9_BUFFER_0_dot_BUFFER_0, 1.0
  %ret.tuple = insertvalue { double, double, double, double, double } poison, double %BUFFER_0_dot_BUFFER_0, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double } %ret.tuple, double %BUFFER_0_dot_x, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double } %ret.tuple.1, double %_sc25__d2, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double } %ret.tuple.2, double %_t1_dot_BUFFER_0, 3
  %ret = insertvalue { double, double, double, double, double } %ret.tuple.3, double %_t1_dot_x, 4
  ret { double, double, double, double, double } %ret
}

define internal { double, double, double, double, double, double } @array_loss__elementwise__dual__scan_rest(double %x, double %BUFFER_0_dot_BUFFER_0, double %BUFFER_0_dot_x, double %_sc25__d2, double %_t1_dot_BUFFER_0, double %_t1_dot_x, double %BUFFER_0) #0 {
entry:
  %_sc24__d1 = fmul double 0.5, %BUFFER_0
  %_sc21_BUFFER_0 = fadd double %_sc24__d1, %_sc25__d2
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %_sc21_BUFFER_0, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %_sc21_BUFFER_0, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %_t1_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double %_t1_dot_BUFFER_0, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %BUFFER_0_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double %BUFFER_0_dot_BUFFER_0, 5
  ret { double, double, double, double, double, double } %ret
}

define void @array_loss__elementwise__scan_c_s1_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %state, ptr noalias %acc, double %seed, ptr noalias %x_bar, ptr noalias %state_bar, ptr noalias %tape) #1 {
entry:
  %n = mul nsw i64 %n_outer, %n_inner
  %blocks.up = add nsw i64 %n, 255
  %blocks = sdiv i64 %blocks.up, 256
  %BUFFER_0.in.ptr = getelementptr inbounds double, ptr %state, i64 0
  %BUFFER_0.in = load double, ptr %BUFFER_0.in.ptr
  %BUFFER_0_bar.in.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  %BUFFER_0_bar.in = load double, ptr %BUFFER_0_bar.in.ptr
  %rev.buf = alloca [256 x double], align 64
  %rev.buf.1 = alloca [256 x double], align 64
  %rev.buf.2 = alloca [256 x double], align 64
  %rev.buf.3 = alloca [256 x double], align 64
  %rev.buf.4 = alloca [256 x double], align 64
  br label %block.cond

block.cond:
  %block.e = phi i64 [ 0, %entry ], [ %block.e.next, %scan.exit ]
  %BUFFER_0 = phi double [ %BUFFER_0.in, %entry ], [ %BUFFER_0.1, %scan.exit ]
  %value.sum = phi double [ 0.0, %entry ], [ %value.sum.1, %scan.exit ]
  %BUFFER_0_bar = phi double [ %BUFFER_0_bar.in, %entry ], [ %BUFFER_0_bar.1, %scan.exit ]
  %block.more = icmp slt i64 %block.e, %blocks
  br i1 %block.more, label %block.body, label %block.exit

block.body:
  %lo = mul nsw i64 %block.e, 256
  %end = add nsw i64 %lo, 256
  %full = icmp slt i64 %end, %n
  %hi = select i1 %full, i64 %end, i64 %n
  %count = sub nsw i64 %hi, %lo
  %mirror.lo = sub nsw i64 %n, %hi
  %mirror.hi = sub nsw i64 %n, %lo
  br label %rev.pre.cond

rev.pre.cond:
  %rev.pre.e = phi i64 [ %mirror.lo, %block.body ], [ %rev.pre.e.next, %rev.pre.body ]
  %rev.pre.more = icmp slt i64 %rev.pre.e, %mirror.hi
  br i1 %rev.pre.more, label %rev.pre.body, label %rev.pre.exit

rev.pre.body:
  %x.ptr = getelementptr inbounds double, ptr %x, i64 %rev.pre.e
  %x.v = load double, ptr %x.ptr
  %pre = call { double, double, double, double, double } @array_loss__elementwise__dual__scan_pre(double %x.v)
  %slot = sub nsw i64 %rev.pre.e, %mirror.lo
  %pre.v = extractvalue { double, double, double, double, double } %pre, 0
  %buf.ptr = getelementptr inbounds double, ptr %rev.buf, i64 %slot
  store double %pre.v, ptr %buf.ptr
  %pre.v.1 = extractvalue { double, double, double, double, double } %pre, 1
  %buf.ptr.1 = getelementptr inbounds double, ptr %rev.buf.1, i64 %slot
  store double %pre.v.1, ptr %buf.ptr.1
  %pre.v.2 = extractvalue { double, double, double, double, double } %pre, 2
  %buf.ptr.2 = getelementptr inbounds double, ptr %rev.buf.2, i64 %slot
  store double %pre.v.2, ptr %buf.ptr.2
  %pre.v.3 = extractvalue { double, double, double, double, double } %pre, 3
  %buf.ptr.3 = getelementptr inbounds double, ptr %rev.buf.3, i64 %slot
  store double %pre.v.3, ptr %buf.ptr.3
  %pre.v.4 = extractvalue { double, double, double, double, double } %pre, 4
  %buf.ptr.4 = getelementptr inbounds double, ptr %rev.buf.4, i64 %slot
  store double %pre.v.4, ptr %buf.ptr.4
  %rev.pre.e.next = add nsw i64 %rev.pre.e, 1
  br label %rev.pre.cond

rev.pre.exit:
  %last = add nsw i64 %count, -1
  br label %scan.cond

scan.cond:
  %scan.e = phi i64 [ 0, %rev.pre.exit ], [ %scan.e.next, %scan.body ]
  %BUFFER_0.1 = phi double [ %BUFFER_0, %rev.pre.exit ], [ %BUFFER_0.next, %scan.body ]
  %value.sum.1 = phi double [ %value.sum, %rev.pre.exit ], [ %value.sum.2, %scan.body ]
  %BUFFER_0_bar.1 = phi double [ %BUFFER_0_bar, %rev.pre.exit ], [ %BUFFER_0_bar.c.2, %scan.body ]
  %scan.more = icmp slt i64 %scan.e, %count
  br i1 %scan.more, label %scan.body, label %scan.exit

scan.body:
  %e = add nsw i64 %lo, %scan.e
  %x.ptr.1 = getelementptr inbounds double, ptr %x, i64 %e
  %x.v.1 = load double, ptr %x.ptr.1
  %step = call { double, double } @array_loss__elementwise(double %x.v.1, double %BUFFER_0.1)
  %value = extractvalue { double, double } %step, 0
  %BUFFER_0.next = extractvalue { double, double } %step, 1
  %value.sum.2 = fadd reassoc nsz double %value.sum.1, %value
  %mirror.t = sub nsw i64 %last, %scan.e
  %mirror.e = add nsw i64 %mirror.lo, %mirror.t
  %x.ptr.2 = getelementptr inbounds double, ptr %x, i64 %mirror.e
  %x.v.2 = load double, ptr %x.ptr.2
  %buf.ptr.5 = getelementptr inbounds double, ptr %rev.buf, i64 %mirror.t
  %buf.v = load double, ptr %buf.ptr.5
  %buf.ptr.6 = getelementptr inbounds double, ptr %rev.buf.1, i64 %mirror.t
  %buf.v.1 = load double, ptr %buf.ptr.6
  %buf.ptr.7 = getelementptr inbounds double, ptr %rev.buf.2, i64 %mirror.t
  %buf.v.2 = load double, ptr %buf.ptr.7
  %buf.ptr.8 = getelementptr inbounds double, ptr %rev.buf.3, i64 %mirror.t
  %buf.v.3 = load double, ptr %buf.ptr.8
  %buf.ptr.9 = getelementptr inbounds double, ptr %rev.buf.4, i64 %mirror.t
  %buf.v.4 = load double, ptr %buf.ptr.9
  %dual = call { double, double, double, double, double, double } @array_loss__elementwise__dual__scan_rest(double %x.v.2, double %buf.v, double %buf.v.1, double %buf.v.2, double %buf.v.3, double %buf.v.4, double 0.0)
  %x_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 2
  %x_bar.c = fmul double %x_bar.dv, %seed
  %x_bar.dBUFFER_0 = extractvalue { double, double, double, double, double, double } %dual, 4
  %x_bar.c.1 = fmul double %BUFFER_0_bar.1, %x_bar.dBUFFER_0
  %x_bar.c.2 = fadd double %x_bar.c, %x_bar.c.1
  %x_bar.ptr = getelementptr inbounds double, ptr %x_bar, i64 %mirror.e
  store double %x_bar.c.2, ptr %x_bar.ptr
  %BUFFER_0_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 3
  %BUFFER_0_bar.c = fmul double %BUFFER_0_bar.dv, %seed
  %BUFFER_0_bar.dBUFFER_0 = extractvalue { double, double, double, double, double, double } %dual, 5
  %BUFFER_0_bar.c.1 = fmul double %BUFFER_0_bar.1, %BUFFER_0_bar.dBUFFER_0
  %BUFFER_0_bar.c.2 = fadd double %BUFFER_0_bar.c, %BUFFER_0_bar.c.1
  %scan.e.next = add nsw i64 %scan.e, 1
  br label %scan.cond

scan.exit:
  %block.e.next = add nsw i64 %block.e, 1
  br label %block.cond

block.exit:
  %BUFFER_0.out.ptr = getelementptr inbounds double, ptr %state, i64 0
  store double %BUFFER_0, ptr %BUFFER_0.out.ptr
  %value.old = load double, ptr %acc
  %value.new = fadd double %value.old, %value.sum
  store double %value.new, ptr %acc
  %BUFFER_0_bar.out.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  store double %BUFFER_0_bar, ptr %BUFFER_0_bar.out.ptr
  ret void
}

@llvm.compiler.used = appending global [4 x ptr] [ptr @s2sad.tanh.v8, ptr @vecmath.tanh, ptr @vecmath.tanh.v4, ptr @vecmath.tanh.v2], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind "prefer-vector-width"="512" }
attributes #3 = { noinline nounwind willreturn memory(none) }
attributes #4 = { "vector-function-abi-variant"="_ZGV_LLVM_N8v_vecmath.tanh(s2sad.tanh.v8),_ZGV_LLVM_N4v_vecmath.tanh(vecmath.tanh.v4),_ZGV_LLVM_N2v_vecmath.tanh(vecmath.tanh.v2)" }

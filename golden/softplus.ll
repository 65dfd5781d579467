; s2sad kernel module 'softplus': driver @softplus__c_sum_grads_f64 (T = double)

declare <8 x double> @llvm.fma.v8f64(<8 x double>, <8 x double>, <8 x double>)

; glibc's libmvec: one variant per function (the widest ISA). Scalar code calls
; lane 0 of it, remainder loops a few lanes of it, and each call's
; vector-function-abi-variant attribute lets the loop vectoriser call it itself:
; an element gets the same bits wherever it falls
declare <8 x double> @_ZGVeN8v_log1p(<8 x double>) #2

; exp as vecmath computes it: lane 0 of s2sad.exp.v8 on a splat
define internal double @vecmath.exp(double %x) #3 {
entry:
  %x.v = insertelement <8 x double> poison, double %x, i64 0
  %x.wide = shufflevector <8 x double> %x.v, <8 x double> poison, <8 x i32> zeroinitializer
  %exp.wide = call <8 x double> @s2sad.exp.v8(<8 x double> %x.wide)
  %exp = extractelement <8 x double> %exp.wide, i64 0
  ret double %exp
}

; 4 lanes of the same: the vectoriser's remainder loops
define internal <4 x double> @vecmath.exp.v4(<4 x double> %x) #3 {
entry:
  %x.wide = shufflevector <4 x double> %x, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %exp.wide = call <8 x double> @s2sad.exp.v8(<8 x double> %x.wide)
  %exp = shufflevector <8 x double> %exp.wide, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  ret <4 x double> %exp
}

; 2 lanes of the same: the vectoriser's remainder loops
define internal <2 x double> @vecmath.exp.v2(<2 x double> %x) #3 {
entry:
  %x.wide = shufflevector <2 x double> %x, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %exp.wide = call <8 x double> @s2sad.exp.v8(<8 x double> %x.wide)
  %exp = shufflevector <8 x double> %exp.wide, <8 x double> poison, <2 x i32> <i32 0, i32 1>
  ret <2 x double> %exp
}

; log1p as libmvec computes it: lane 0 of _ZGVeN8v_log1p on a splat
define internal double @libmvec.log1p(double %x) #3 {
entry:
  %x.v = insertelement <8 x double> poison, double %x, i64 0
  %x.wide = shufflevector <8 x double> %x.v, <8 x double> poison, <8 x i32> zeroinitializer
  %log1p.wide = call <8 x double> @_ZGVeN8v_log1p(<8 x double> %x.wide)
  %log1p = extractelement <8 x double> %log1p.wide, i64 0
  ret double %log1p
}

; 4 lanes of the same: the vectoriser's remainder loops
define internal <4 x double> @libmvec.log1p.v4(<4 x double> %x) #3 {
entry:
  %x.wide = shufflevector <4 x double> %x, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %log1p.wide = call <8 x double> @_ZGVeN8v_log1p(<8 x double> %x.wide)
  %log1p = shufflevector <8 x double> %log1p.wide, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  ret <4 x double> %log1p
}

; 2 lanes of the same: the vectoriser's remainder loops
define internal <2 x double> @libmvec.log1p.v2(<2 x double> %x) #3 {
entry:
  %x.wide = shufflevector <2 x double> %x, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %log1p.wide = call <8 x double> @_ZGVeN8v_log1p(<8 x double> %x.wide)
  %log1p = shufflevector <8 x double> %log1p.wide, <8 x double> poison, <2 x i32> <i32 0, i32 1>
  ret <2 x double> %log1p
}

; exp(x): x = n ln2 + r with |r| <= ln2/2; e^r = 1 + r + r^2 (1/2 + r P(r));
; 2^n in two halves (overflow and gradual underflow in the last product)
; (s2sad's vector math on 8 lanes, each lane as the scalar function)
define internal <8 x double> @s2sad.exp.v8(<8 x double> %x) #0 {
entry:
  %x.c.above = fcmp ogt <8 x double> %x, splat (double -746.0)
  %x.c.lo = select <8 x i1> %x.c.above, <8 x double> %x, <8 x double> splat (double -746.0)
  %x.c.below = fcmp olt <8 x double> %x.c.lo, splat (double 710.0)
  %x.c = select <8 x i1> %x.c.below, <8 x double> %x.c.lo, <8 x double> splat (double 710.0)
  %k = call <8 x double> @llvm.fma.v8f64(<8 x double> %x.c, <8 x double> splat (double 0x3FF71547652B82FE), <8 x double> splat (double 6755399441055744.0))
  %n.f = fsub <8 x double> %k, splat (double 6755399441055744.0)
  %k.bits = bitcast <8 x double> %k to <8 x i64>
  %n = sub <8 x i64> %k.bits, splat (i64 4843621399236968448)
  %n.neg = fneg <8 x double> %n.f
  %hi = call <8 x double> @llvm.fma.v8f64(<8 x double> %n.neg, <8 x double> splat (double 0x3FE62E42FEE00000), <8 x double> %x.c)
  %lo = fmul <8 x double> %n.f, splat (double 0x3DEA39EF35793C76)
  %r = fsub <8 x double> %hi, %lo
  %p = call <8 x double> @llvm.fma.v8f64(<8 x double> splat (double 0x3E21F6BC0C6E8122), <8 x double> %r, <8 x double> splat (double 0x3E5AF4134720F354))
  %p.1 = call <8 x double> @llvm.fma.v8f64(<8 x double> %p, <8 x double> %r, <8 x double> splat (double 0x3E927E4DFDCAD3DE))
  %p.2 = call <8 x double> @llvm.fma.v8f64(<8 x double> %p.1, <8 x double> %r, <8 x double> splat (double 0x3EC71DE0A0471800))
  %p.3 = call <8 x double> @llvm.fma.v8f64(<8 x double> %p.2, <8 x double> %r, <8 x double> splat (double 0x3EFA01A01A507C0E))
  %p.4 = call <8 x double> @llvm.fma.v8f64(<8 x double> %p.3, <8 x double> %r, <8 x double> splat (double 0x3F2A01A01A8BA744))
  %p.5 = call <8 x double> @llvm.fma.v8f64(<8 x double> %p.4, <8 x double> %r, <8 x double> splat (double 0x3F56C16C16C16729))
  %p.6 = call <8 x double> @llvm.fma.v8f64(<8 x double> %p.5, <8 x double> %r, <8 x double> splat (double 0x3F81111111110871))
  %p.7 = call <8 x double> @llvm.fma.v8f64(<8 x double> %p.6, <8 x double> %r, <8 x double> splat (double 0x3FA5555555555555))
  %p.8 = call <8 x double> @llvm.fma.v8f64(<8 x double> %p.7, <8 x double> %r, <8 x double> splat (double 0x3FC5555555555556))
  %q = call <8 x double> @llvm.fma.v8f64(<8 x double> %r, <8 x double> %p.8, <8 x double> splat (double 0.5))
  %r2 = fmul <8 x double> %r, %r
  %w = fmul <8 x double> %r2, %q
  %s = fadd <8 x double> splat (double 1.0), %hi
  %s.hi = fsub <8 x double> splat (double 1.0), %s
  %s.err = fadd <8 x double> %s.hi, %hi
  %w.lo = fsub <8 x double> %w, %lo
  %tail = fadd <8 x double> %s.err, %w.lo
  %e.r = fadd <8 x double> %s, %tail
  %n1 = ashr <8 x i64> %n, splat (i64 1)
  %n2 = sub <8 x i64> %n, %n1
  %scale1.biased = add <8 x i64> %n1, splat (i64 1023)
  %scale1.bits = shl <8 x i64> %scale1.biased, splat (i64 52)
  %scale1 = bitcast <8 x i64> %scale1.bits to <8 x double>
  %e.1 = fmul <8 x double> %e.r, %scale1
  %scale2.biased = add <8 x i64> %n2, splat (i64 1023)
  %scale2.bits = shl <8 x i64> %scale2.biased, splat (i64 52)
  %scale2 = bitcast <8 x i64> %scale2.bits to <8 x double>
  %e.x = fmul <8 x double> %e.1, %scale2
  %x.nan = fcmp uno <8 x double> %x, splat (double 0.0)
  %exp = select <8 x i1> %x.nan, <8 x double> %x, <8 x double> %e.x
  ret <8 x double> %exp
}

; from golden/examples.py:17 (softplus)
define internal double @softplus(double %z) #0 {
entry:
  %retval = alloca double
  %gt = fcmp ogt double %z, 20.0
  br i1 %gt, label %if.then, label %if.else

if.then:
  store double %z, ptr %retval
  br label %return

if.else:
  %neg = fneg double 20.0
  %lt = fcmp olt double %z, %neg
  br i1 %lt, label %if.then.1, label %if.else.1

if.then.1:
  %ret = call double @vecmath.exp(double %z) #4
  store double %ret, ptr %retval
  br label %return

if.else.1:
  %exp = call double @vecmath.exp(double %z) #4
  %ret.1 = call double @libmvec.log1p(double %exp) #5
  store double %ret.1, ptr %retval
  br label %return

return:
  %retval.v = load double, ptr %retval
  ret double %retval.v
}

define internal { double, double } @softplus__dual(double %z) #0 {
entry:
  %retval = alloca { double, double }
  %_d1.addr = alloca double
  %_d2.addr = alloca double
  %gt = fcmp ogt double %z, 20.0
  br i1 %gt, label %if.then, label %if.else

if.then:
  %ret.tuple = insertvalue { double, double } poison, double %z, 0
  %ret = insertvalue { double, double } %ret.tuple, double 1.0, 1
  store { double, double } %ret, ptr %retval
  br label %return

if.else:
  %neg = fneg double 20.0
  %lt = fcmp olt double %z, %neg
  br i1 %lt, label %if.then.1, label %if.else.1

if.then.1:
  %_d1 = call double @vecmath.exp(double %z) #4
  store double %_d1, ptr %_d1.addr
  %_d1.1 = load double, ptr %_d1.addr
  %_d1.2 = load double, ptr %_d1.addr
  %ret.tuple.1 = insertvalue { double, double } poison, double %_d1.1, 0
  %ret.1 = insertvalue { double, double } %ret.tuple.1, double %_d1.2, 1
  store { double, double } %ret.1, ptr %retval
  br label %return

if.else.1:
  %_d2 = call double @vecmath.exp(double %z) #4
  store double %_d2, ptr %_d2.addr
  %_d2.1 = load double, ptr %_d2.addr
  %log1p = call double @libmvec.log1p(double %_d2.1) #5
  %_d2.2 = load double, ptr %_d2.addr
  %add = fadd double 1.0, %_d2.2
  %div = fdiv double 1.0, %add
  %_d2.3 = load double, ptr %_d2.addr
  %mul = fmul double %div, %_d2.3
  %ret.tuple.2 = insertvalue { double, double } poison, double %log1p, 0
  %ret.2 = insertvalue { double, double } %ret.tuple.2, double %mul, 1
  store { double, double } %ret.2, ptr %retval
  br label %return

return:
  %retval.v = load { double, double }, ptr %retval
  ret { double, double } %retval.v
}

define void @softplus__c_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %z, ptr noalias %acc, double %seed, ptr noalias %z_bar) #1 {
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
  %dual = call { double, double } @softplus__dual(double %z.v)
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

@llvm.compiler.used = appending global [7 x ptr] [ptr @s2sad.exp.v8, ptr @vecmath.exp, ptr @vecmath.exp.v4, ptr @vecmath.exp.v2, ptr @libmvec.log1p, ptr @libmvec.log1p.v4, ptr @libmvec.log1p.v2], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind "prefer-vector-width"="512" }
attributes #2 = { nounwind willreturn memory(none) }
attributes #3 = { noinline nounwind willreturn memory(none) }
attributes #4 = { "vector-function-abi-variant"="_ZGV_LLVM_N8v_vecmath.exp(s2sad.exp.v8),_ZGV_LLVM_N4v_vecmath.exp(vecmath.exp.v4),_ZGV_LLVM_N2v_vecmath.exp(vecmath.exp.v2)" }
attributes #5 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.log1p(_ZGVeN8v_log1p),_ZGV_LLVM_N4v_libmvec.log1p(libmvec.log1p.v4),_ZGV_LLVM_N2v_libmvec.log1p(libmvec.log1p.v2)" }

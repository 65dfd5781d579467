; s2sad kernel module 'softplus': driver @softplus__c_sum_grads_f64 (T = double)

; glibc's libmvec: one variant per function (the widest ISA). Scalar code calls
; lane 0 of it, remainder loops a few lanes of it, and each call's
; vector-function-abi-variant attribute lets the loop vectoriser call it itself:
; an element gets the same bits wherever it falls
declare <8 x double> @_ZGVeN8v_exp(<8 x double>) #2
declare <8 x double> @_ZGVeN8v_log1p(<8 x double>) #2

; exp as libmvec computes it: lane 0 of _ZGVeN8v_exp on a splat
define internal double @libmvec.exp(double %x) #3 {
entry:
  %x.v = insertelement <8 x double> poison, double %x, i64 0
  %x.wide = shufflevector <8 x double> %x.v, <8 x double> poison, <8 x i32> zeroinitializer
  %exp.wide = call <8 x double> @_ZGVeN8v_exp(<8 x double> %x.wide)
  %exp = extractelement <8 x double> %exp.wide, i64 0
  ret double %exp
}

; 4 lanes of the same: the vectoriser's remainder loops
define internal <4 x double> @libmvec.exp.v4(<4 x double> %x) #3 {
entry:
  %x.wide = shufflevector <4 x double> %x, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %exp.wide = call <8 x double> @_ZGVeN8v_exp(<8 x double> %x.wide)
  %exp = shufflevector <8 x double> %exp.wide, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  ret <4 x double> %exp
}

; 2 lanes of the same: the vectoriser's remainder loops
define internal <2 x double> @libmvec.exp.v2(<2 x double> %x) #3 {
entry:
  %x.wide = shufflevector <2 x double> %x, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %exp.wide = call <8 x double> @_ZGVeN8v_exp(<8 x double> %x.wide)
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
  %ret = call double @libmvec.exp(double %z) #4
  store double %ret, ptr %retval
  br label %return

if.else.1:
  %exp = call double @libmvec.exp(double %z) #4
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
  %_d1 = call double @libmvec.exp(double %z) #4
  store double %_d1, ptr %_d1.addr
  %_d1.1 = load double, ptr %_d1.addr
  %_d1.2 = load double, ptr %_d1.addr
  %ret.tuple.1 = insertvalue { double, double } poison, double %_d1.1, 0
  %ret.1 = insertvalue { double, double } %ret.tuple.1, double %_d1.2, 1
  store { double, double } %ret.1, ptr %retval
  br label %return

if.else.1:
  %_d2 = call double @libmvec.exp(double %z) #4
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

@llvm.compiler.used = appending global [6 x ptr] [ptr @libmvec.exp, ptr @libmvec.exp.v4, ptr @libmvec.exp.v2, ptr @libmvec.log1p, ptr @libmvec.log1p.v4, ptr @libmvec.log1p.v2], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind "prefer-vector-width"="512" }
attributes #2 = { nounwind willreturn memory(none) }
attributes #3 = { noinline nounwind willreturn memory(none) }
attributes #4 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.exp(_ZGVeN8v_exp),_ZGV_LLVM_N4v_libmvec.exp(libmvec.exp.v4),_ZGV_LLVM_N2v_libmvec.exp(libmvec.exp.v2)" }
attributes #5 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.log1p(_ZGVeN8v_log1p),_ZGV_LLVM_N4v_libmvec.log1p(libmvec.log1p.v4),_ZGV_LLVM_N2v_libmvec.log1p(libmvec.log1p.v2)" }

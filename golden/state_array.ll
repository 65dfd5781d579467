; s2sad kernel module 'array_loss__elementwise': driver @array_loss__elementwise__scan_c_s1_sum_grads_f64 (T = double)

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
  %tanh = call double @libmvec.tanh(double %x) #4
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
  %_d2 = call double @libmvec.tanh(double %x) #4
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

define void @array_loss__elementwise__scan_c_s1_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %state, ptr noalias %acc, double %seed, ptr noalias %x_bar, ptr noalias %state_bar, ptr noalias %tape) #1 {
entry:
  %BUFFER_0.in.ptr = getelementptr inbounds double, ptr %state, i64 0
  %BUFFER_0.in = load double, ptr %BUFFER_0.in.ptr
  br label %outer.cond

outer.cond:
  %o = phi i64 [ 0, %entry ], [ %o.next, %outer.latch ]
  %BUFFER_0.o = phi double [ %BUFFER_0.in, %entry ], [ %BUFFER_0.i, %outer.latch ]
  %value.sum.o = phi double [ 0.0, %entry ], [ %value.sum.i, %outer.latch ]
  %outer.more = icmp slt i64 %o, %n_outer
  br i1 %outer.more, label %outer.body, label %exit

outer.body:
  %row = mul nsw i64 %o, %n_inner
  br label %inner.cond

inner.cond:
  %i = phi i64 [ 0, %outer.body ], [ %i.next, %inner.body ]
  %BUFFER_0.i = phi double [ %BUFFER_0.o, %outer.body ], [ %BUFFER_0.next, %inner.body ]
  %value.sum.i = phi double [ %value.sum.o, %outer.body ], [ %value.sum.next, %inner.body ]
  %inner.more = icmp slt i64 %i, %n_inner
  br i1 %inner.more, label %inner.body, label %outer.latch

inner.body:
  %flat = add nsw i64 %row, %i
  %x.ptr = getelementptr inbounds double, ptr %x, i64 %flat
  %x.v = load double, ptr %x.ptr
  %BUFFER_0.tape.ptr = getelementptr inbounds [1 x double], ptr %tape, i64 %flat, i32 0
  store double %BUFFER_0.i, ptr %BUFFER_0.tape.ptr
  %step = call { double, double } @array_loss__elementwise(double %x.v, double %BUFFER_0.i)
  %value = extractvalue { double, double } %step, 0
  %BUFFER_0.next = extractvalue { double, double } %step, 1
  %value.sum.next = fadd reassoc nsz double %value.sum.i, %value
  %i.next = add nsw i64 %i, 1
  br label %inner.cond

outer.latch:
  %o.next = add nsw i64 %o, 1
  br label %outer.cond

exit:
  %BUFFER_0.out.ptr = getelementptr inbounds double, ptr %state, i64 0
  store double %BUFFER_0.o, ptr %BUFFER_0.out.ptr
  %value.old = load double, ptr %acc
  %value.new = fadd double %value.old, %value.sum.o
  store double %value.new, ptr %acc
  %BUFFER_0_bar.in.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  %BUFFER_0_bar.in = load double, ptr %BUFFER_0_bar.in.ptr
  br label %rev.outer.cond

rev.outer.cond:
  %o.left = phi i64 [ %n_outer, %exit ], [ %o.1, %rev.outer.latch ]
  %BUFFER_0_bar.o = phi double [ %BUFFER_0_bar.in, %exit ], [ %BUFFER_0_bar.i, %rev.outer.latch ]
  %outer.more.1 = icmp sgt i64 %o.left, 0
  br i1 %outer.more.1, label %rev.outer.body, label %rev.exit

rev.outer.body:
  %o.1 = add nsw i64 %o.left, -1
  %row.1 = mul nsw i64 %o.1, %n_inner
  br label %rev.inner.cond

rev.inner.cond:
  %i.left = phi i64 [ %n_inner, %rev.outer.body ], [ %i.1, %rev.inner.body ]
  %BUFFER_0_bar.i = phi double [ %BUFFER_0_bar.o, %rev.outer.body ], [ %BUFFER_0_bar.next, %rev.inner.body ]
  %inner.more.1 = icmp sgt i64 %i.left, 0
  br i1 %inner.more.1, label %rev.inner.body, label %rev.outer.latch

rev.inner.body:
  %i.1 = add nsw i64 %i.left, -1
  %flat.1 = add nsw i64 %row.1, %i.1
  %x.ptr.1 = getelementptr inbounds double, ptr %x, i64 %flat.1
  %x.v.1 = load double, ptr %x.ptr.1
  %BUFFER_0.tape.ptr.1 = getelementptr inbounds [1 x double], ptr %tape, i64 %flat.1, i32 0
  %BUFFER_0.tape = load double, ptr %BUFFER_0.tape.ptr.1
  %dual = call { double, double, double, double, double, double } @array_loss__elementwise__dual(double %x.v.1, double %BUFFER_0.tape)
  %x_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 2
  %x_bar.c = fmul double %x_bar.dv, %seed
  %x_bar.dBUFFER_0 = extractvalue { double, double, double, double, double, double } %dual, 4
  %x_bar.c.1 = fmul double %BUFFER_0_bar.i, %x_bar.dBUFFER_0
  %x_bar.c.2 = fadd double %x_bar.c, %x_bar.c.1
  %x_bar.ptr = getelementptr inbounds double, ptr %x_bar, i64 %flat.1
  store double %x_bar.c.2, ptr %x_bar.ptr
  %BUFFER_0_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 3
  %BUFFER_0_bar.c = fmul double %BUFFER_0_bar.dv, %seed
  %BUFFER_0_bar.dBUFFER_0 = extractvalue { double, double, double, double, double, double } %dual, 5
  %BUFFER_0_bar.c.1 = fmul double %BUFFER_0_bar.i, %BUFFER_0_bar.dBUFFER_0
  %BUFFER_0_bar.next = fadd double %BUFFER_0_bar.c, %BUFFER_0_bar.c.1
  br label %rev.inner.cond

rev.outer.latch:
  br label %rev.outer.cond

rev.exit:
  %BUFFER_0_bar.out.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  store double %BUFFER_0_bar.o, ptr %BUFFER_0_bar.out.ptr
  ret void
}

@llvm.compiler.used = appending global [3 x ptr] [ptr @libmvec.tanh, ptr @libmvec.tanh.v4, ptr @libmvec.tanh.v2], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind "prefer-vector-width"="512" }
attributes #2 = { nounwind willreturn memory(none) }
attributes #3 = { noinline nounwind willreturn memory(none) }
attributes #4 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.tanh(_ZGVeN8v_tanh),_ZGV_LLVM_N4v_libmvec.tanh(libmvec.tanh.v4),_ZGV_LLVM_N2v_libmvec.tanh(libmvec.tanh.v2)" }

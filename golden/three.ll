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

; three__ccc_sum_grads_f64's Python entry (METH_FASTCALL; see s2sad/codegen/llvm_entry.py):
;   three__ccc_sum_grads_f64__py(p0, p1, p2, scale, mean) -> (value * seed, d/dp0, d/dp1, d/dp2), or NotImplemented
;   params: p0 contig, p1 contig, p2 contig
define ptr @three__ccc_sum_grads_f64__py(ptr %table.obj, ptr %args, i64 %nargs) {
entry:
  ; the table: a uint64 array (its data pointer) of what the entry calls and compares with
  %table.at = getelementptr inbounds i8, ptr %table.obj, i64 16
  %table = load ptr, ptr %table.at
  %new_like.at = getelementptr inbounds ptr, ptr %table, i64 0
  %new_like = load ptr, ptr %new_like.at
  %array_type.at = getelementptr inbounds ptr, ptr %table, i64 1
  %array_type = load ptr, ptr %array_type.at
  %descr.at = getelementptr inbounds ptr, ptr %table, i64 2
  %descr = load ptr, ptr %descr.at
  %float_type.at = getelementptr inbounds ptr, ptr %table, i64 3
  %float_type = load ptr, ptr %float_type.at
  %not_implemented.at = getelementptr inbounds ptr, ptr %table, i64 4
  %not_implemented = load ptr, ptr %not_implemented.at
  %none.at = getelementptr inbounds ptr, ptr %table, i64 5
  %none = load ptr, ptr %none.at
  %true.at = getelementptr inbounds ptr, ptr %table, i64 6
  %true = load ptr, ptr %true.at
  %false.at = getelementptr inbounds ptr, ptr %table, i64 7
  %false = load ptr, ptr %false.at
  %incref.at = getelementptr inbounds ptr, ptr %table, i64 8
  %incref = load ptr, ptr %incref.at
  %decref.at = getelementptr inbounds ptr, ptr %table, i64 9
  %decref = load ptr, ptr %decref.at
  %float_from_double.at = getelementptr inbounds ptr, ptr %table, i64 10
  %float_from_double = load ptr, ptr %float_from_double.at
  %tuple_new.at = getelementptr inbounds ptr, ptr %table, i64 11
  %tuple_new = load ptr, ptr %tuple_new.at
  %tuple_setitem.at = getelementptr inbounds ptr, ptr %table, i64 12
  %tuple_setitem = load ptr, ptr %tuple_setitem.at
  %acc = alloca double
  store double 0.0, ptr %acc
  %nargs.ok = icmp eq i64 %nargs, 5
  br i1 %nargs.ok, label %check.p0, label %decline
check.p0:
  ; p0: an exact ndarray of the driver's dtype, C-contiguous and aligned
  %p0.at = getelementptr inbounds ptr, ptr %args, i64 0
  %p0 = load ptr, ptr %p0.at
  %p0.type.at = getelementptr inbounds i8, ptr %p0, i64 8
  %p0.type = load ptr, ptr %p0.type.at
  %p0.isarray = icmp eq ptr %p0.type, %array_type
  br i1 %p0.isarray, label %p0.fields, label %decline
p0.fields:
  %p0.descr.at = getelementptr inbounds i8, ptr %p0, i64 56
  %p0.descr = load ptr, ptr %p0.descr.at
  %p0.flags.at = getelementptr inbounds i8, ptr %p0, i64 64
  %p0.flags = load i32, ptr %p0.flags.at
  %p0.nd.at = getelementptr inbounds i8, ptr %p0, i64 24
  %p0.nd = load i32, ptr %p0.nd.at
  %p0.dims.at = getelementptr inbounds i8, ptr %p0, i64 32
  %p0.dims = load ptr, ptr %p0.dims.at
  %p0.data.at = getelementptr inbounds i8, ptr %p0, i64 16
  %p0.data = load ptr, ptr %p0.data.at
  %p0.dtype.ok = icmp eq ptr %p0.descr, %descr
  %p0.carray = and i32 %p0.flags, 257
  %p0.carray.ok = icmp eq i32 %p0.carray, 257
  %p0.ok = and i1 %p0.dtype.ok, %p0.carray.ok
  br i1 %p0.ok, label %p0.size, label %decline
p0.size:
  ; n: the product of the dimensions
  br label %size.loop
size.loop:
  %size.k = phi i32 [ 0, %p0.size ], [ %size.k1, %size.body ]
  %size.n = phi i64 [ 1, %p0.size ], [ %size.n1, %size.body ]
  %size.more = icmp slt i32 %size.k, %p0.nd
  br i1 %size.more, label %size.body, label %size.done
size.body:
  %size.d.at = getelementptr inbounds i64, ptr %p0.dims, i32 %size.k
  %size.d = load i64, ptr %size.d.at
  %size.n1 = mul i64 %size.n, %size.d
  %size.k1 = add i32 %size.k, 1
  br label %size.loop
size.done:
  %n.low = icmp slt i64 %size.n, 2
  %n.high = icmp sgt i64 %size.n, 32768
  %n.out = or i1 %n.low, %n.high
  br i1 %n.out, label %decline, label %check.p1
check.p1:
  ; p1: an exact ndarray of the driver's dtype, C-contiguous and aligned, of p{first}'s shape
  %p1.at = getelementptr inbounds ptr, ptr %args, i64 1
  %p1 = load ptr, ptr %p1.at
  %p1.type.at = getelementptr inbounds i8, ptr %p1, i64 8
  %p1.type = load ptr, ptr %p1.type.at
  %p1.isarray = icmp eq ptr %p1.type, %array_type
  br i1 %p1.isarray, label %p1.fields, label %decline
p1.fields:
  %p1.descr.at = getelementptr inbounds i8, ptr %p1, i64 56
  %p1.descr = load ptr, ptr %p1.descr.at
  %p1.flags.at = getelementptr inbounds i8, ptr %p1, i64 64
  %p1.flags = load i32, ptr %p1.flags.at
  %p1.nd.at = getelementptr inbounds i8, ptr %p1, i64 24
  %p1.nd = load i32, ptr %p1.nd.at
  %p1.dims.at = getelementptr inbounds i8, ptr %p1, i64 32
  %p1.dims = load ptr, ptr %p1.dims.at
  %p1.data.at = getelementptr inbounds i8, ptr %p1, i64 16
  %p1.data = load ptr, ptr %p1.data.at
  %p1.dtype.ok = icmp eq ptr %p1.descr, %descr
  %p1.carray = and i32 %p1.flags, 257
  %p1.carray.ok = icmp eq i32 %p1.carray, 257
  %p1.ok = and i1 %p1.dtype.ok, %p1.carray.ok
  %p1.nd.ok = icmp eq i32 %p1.nd, %p0.nd
  %p1.ok2 = and i1 %p1.ok, %p1.nd.ok
  br i1 %p1.ok2, label %p1.shape, label %decline
p1.shape:
  br label %p1.shape.loop
p1.shape.loop:
  %p1.k = phi i32 [ 0, %p1.shape ], [ %p1.k1, %p1.shape.same ]
  %p1.more = icmp slt i32 %p1.k, %p1.nd
  br i1 %p1.more, label %p1.shape.body, label %check.p2
p1.shape.body:
  %p1.d.at = getelementptr inbounds i64, ptr %p1.dims, i32 %p1.k
  %p1.d = load i64, ptr %p1.d.at
  %p1.d0.at = getelementptr inbounds i64, ptr %p0.dims, i32 %p1.k
  %p1.d0 = load i64, ptr %p1.d0.at
  %p1.d.ok = icmp eq i64 %p1.d, %p1.d0
  %p1.k1 = add i32 %p1.k, 1
  br i1 %p1.d.ok, label %p1.shape.same, label %decline
p1.shape.same:
  br label %p1.shape.loop
check.p2:
  ; p2: an exact ndarray of the driver's dtype, C-contiguous and aligned, of p{first}'s shape
  %p2.at = getelementptr inbounds ptr, ptr %args, i64 2
  %p2 = load ptr, ptr %p2.at
  %p2.type.at = getelementptr inbounds i8, ptr %p2, i64 8
  %p2.type = load ptr, ptr %p2.type.at
  %p2.isarray = icmp eq ptr %p2.type, %array_type
  br i1 %p2.isarray, label %p2.fields, label %decline
p2.fields:
  %p2.descr.at = getelementptr inbounds i8, ptr %p2, i64 56
  %p2.descr = load ptr, ptr %p2.descr.at
  %p2.flags.at = getelementptr inbounds i8, ptr %p2, i64 64
  %p2.flags = load i32, ptr %p2.flags.at
  %p2.nd.at = getelementptr inbounds i8, ptr %p2, i64 24
  %p2.nd = load i32, ptr %p2.nd.at
  %p2.dims.at = getelementptr inbounds i8, ptr %p2, i64 32
  %p2.dims = load ptr, ptr %p2.dims.at
  %p2.data.at = getelementptr inbounds i8, ptr %p2, i64 16
  %p2.data = load ptr, ptr %p2.data.at
  %p2.dtype.ok = icmp eq ptr %p2.descr, %descr
  %p2.carray = and i32 %p2.flags, 257
  %p2.carray.ok = icmp eq i32 %p2.carray, 257
  %p2.ok = and i1 %p2.dtype.ok, %p2.carray.ok
  %p2.nd.ok = icmp eq i32 %p2.nd, %p0.nd
  %p2.ok2 = and i1 %p2.ok, %p2.nd.ok
  br i1 %p2.ok2, label %p2.shape, label %decline
p2.shape:
  br label %p2.shape.loop
p2.shape.loop:
  %p2.k = phi i32 [ 0, %p2.shape ], [ %p2.k1, %p2.shape.same ]
  %p2.more = icmp slt i32 %p2.k, %p2.nd
  br i1 %p2.more, label %p2.shape.body, label %scale
p2.shape.body:
  %p2.d.at = getelementptr inbounds i64, ptr %p2.dims, i32 %p2.k
  %p2.d = load i64, ptr %p2.d.at
  %p2.d0.at = getelementptr inbounds i64, ptr %p0.dims, i32 %p2.k
  %p2.d0 = load i64, ptr %p2.d0.at
  %p2.d.ok = icmp eq i64 %p2.d, %p2.d0
  %p2.k1 = add i32 %p2.k, 1
  br i1 %p2.d.ok, label %p2.shape.same, label %decline
p2.shape.same:
  br label %p2.shape.loop
scale:
  ; the scale: an exact float; then `mean`: True (the seed is scale / n) or False (scale)
  %s.at = getelementptr inbounds ptr, ptr %args, i64 3
  %s = load ptr, ptr %s.at
  %s.type.at = getelementptr inbounds i8, ptr %s, i64 8
  %s.type = load ptr, ptr %s.type.at
  %s.ok = icmp eq ptr %s.type, %float_type
  %mean.at = getelementptr inbounds ptr, ptr %args, i64 4
  %mean = load ptr, ptr %mean.at
  %mean.true = icmp eq ptr %mean, %true
  %mean.false = icmp eq ptr %mean, %false
  %mean.bool = or i1 %mean.true, %mean.false
  %s.mean.ok = and i1 %s.ok, %mean.bool
  br i1 %s.mean.ok, label %alloc, label %decline
alloc:
  %s.given.at = getelementptr inbounds i8, ptr %s, i64 16
  %s.given = load double, ptr %s.given.at
  %n.f64 = sitofp i64 %size.n to double
  %s.per = fdiv double %s.given, %n.f64
  %s.f64 = select i1 %mean.true, double %s.per, double %s.given
  ; d/dp0: a new array like p0 (PyArray_NewLikeArray, C order)
  %g0 = call ptr %new_like(ptr %p0, i32 0, ptr null, i32 0)
  %g0.null = icmp eq ptr %g0, null
  br i1 %g0.null, label %g0.fail, label %g0.ok
g0.ok:
  %g0.data.at = getelementptr inbounds i8, ptr %g0, i64 16
  %g0.data = load ptr, ptr %g0.data.at
  ; d/dp1: a new array like p0 (PyArray_NewLikeArray, C order)
  %g1 = call ptr %new_like(ptr %p0, i32 0, ptr null, i32 0)
  %g1.null = icmp eq ptr %g1, null
  br i1 %g1.null, label %g1.fail, label %g1.ok
g1.ok:
  %g1.data.at = getelementptr inbounds i8, ptr %g1, i64 16
  %g1.data = load ptr, ptr %g1.data.at
  ; d/dp2: a new array like p0 (PyArray_NewLikeArray, C order)
  %g2 = call ptr %new_like(ptr %p0, i32 0, ptr null, i32 0)
  %g2.null = icmp eq ptr %g2, null
  br i1 %g2.null, label %g2.fail, label %g2.ok
g2.ok:
  %g2.data.at = getelementptr inbounds i8, ptr %g2, i64 16
  %g2.data = load ptr, ptr %g2.data.at
  call void @three__ccc_sum_grads_f64(i64 1, i64 %size.n, ptr %p0.data, ptr %p1.data, ptr %p2.data, ptr %acc, double %s.f64, ptr %g0.data, ptr %g1.data, ptr %g2.data)
  %acc.v = load double, ptr %acc
  %value.f64 = fmul double %acc.v, %s.f64
  %value = call ptr %float_from_double(double %value.f64)
  %value.null = icmp eq ptr %value, null
  br i1 %value.null, label %value.fail, label %value.ok
value.ok:
  %result = call ptr %tuple_new(i64 4)
  %result.null = icmp eq ptr %result, null
  br i1 %result.null, label %result.fail, label %result.ok
result.ok:
  ; PyTuple_SetItem takes over each reference
  %set0 = call i32 %tuple_setitem(ptr %result, i64 0, ptr %value)
  %set1 = call i32 %tuple_setitem(ptr %result, i64 1, ptr %g0)
  %set2 = call i32 %tuple_setitem(ptr %result, i64 2, ptr %g1)
  %set3 = call i32 %tuple_setitem(ptr %result, i64 3, ptr %g2)
  ret ptr %result
decline:
  call void %incref(ptr %not_implemented)
  ret ptr %not_implemented
g0.fail:
  ; an exception is set: drop what was made, return NULL
  ret ptr null
g1.fail:
  ; an exception is set: drop what was made, return NULL
  call void %decref(ptr %g0)
  ret ptr null
g2.fail:
  ; an exception is set: drop what was made, return NULL
  call void %decref(ptr %g0)
  call void %decref(ptr %g1)
  ret ptr null
value.fail:
  ; an exception is set: drop what was made, return NULL
  call void %decref(ptr %g0)
  call void %decref(ptr %g1)
  call void %decref(ptr %g2)
  ret ptr null
result.fail:
  ; an exception is set: drop what was made, return NULL
  call void %decref(ptr %g0)
  call void %decref(ptr %g1)
  call void %decref(ptr %g2)
  call void %decref(ptr %value)
  ret ptr null
}

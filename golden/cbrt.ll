; s2sad kernel module 'cbrt_loss__elementwise': driver @cbrt_loss__elementwise__c_sum_grads_f64 (T = double)

; glibc's libmvec: one variant per function (the widest ISA). Scalar code calls
; lane 0 of it, remainder loops a few lanes of it, and each call's
; vector-function-abi-variant attribute lets the loop vectoriser call it itself:
; an element gets the same bits wherever it falls
declare <8 x double> @_ZGVeN8v_cbrt(<8 x double>) #2

; cbrt as libmvec computes it: lane 0 of _ZGVeN8v_cbrt on a splat
define internal double @libmvec.cbrt(double %x) #3 {
entry:
  %x.v = insertelement <8 x double> poison, double %x, i64 0
  %x.wide = shufflevector <8 x double> %x.v, <8 x double> poison, <8 x i32> zeroinitializer
  %cbrt.wide = call <8 x double> @_ZGVeN8v_cbrt(<8 x double> %x.wide)
  %cbrt = extractelement <8 x double> %cbrt.wide, i64 0
  ret double %cbrt
}

; 4 lanes of the same: the vectoriser's remainder loops
define internal <4 x double> @libmvec.cbrt.v4(<4 x double> %x) #3 {
entry:
  %x.wide = shufflevector <4 x double> %x, <4 x double> poison, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 0, i32 1, i32 2, i32 3>
  %cbrt.wide = call <8 x double> @_ZGVeN8v_cbrt(<8 x double> %x.wide)
  %cbrt = shufflevector <8 x double> %cbrt.wide, <8 x double> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  ret <4 x double> %cbrt
}

; 2 lanes of the same: the vectoriser's remainder loops
define internal <2 x double> @libmvec.cbrt.v2(<2 x double> %x) #3 {
entry:
  %x.wide = shufflevector <2 x double> %x, <2 x double> poison, <8 x i32> <i32 0, i32 1, i32 0, i32 1, i32 0, i32 1, i32 0, i32 1>
  %cbrt.wide = call <8 x double> @_ZGVeN8v_cbrt(<8 x double> %x.wide)
  %cbrt = shufflevector <8 x double> %cbrt.wide, <8 x double> poison, <2 x i32> <i32 0, i32 1>
  ret <2 x double> %cbrt
}

define internal double @cbrt_loss__elementwise(double %x) #0 {
entry:
  %ret = call double @libmvec.cbrt(double %x) #4
  ret double %ret
}

define internal { double, double } @cbrt_loss__elementwise__dual(double %x) #0 {
entry:
  %_d1 = call double @libmvec.cbrt(double %x) #4
  %mul = fmul double 3.0, %_d1
  %mul.1 = fmul double %mul, %_d1
  %div = fdiv double 1.0, %mul.1
  %ret.tuple = insertvalue { double, double } poison, double %_d1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %div, 1
  ret { double, double } %ret
}

define void @cbrt_loss__elementwise__c_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %acc, double %seed, ptr noalias %x_bar) #1 {
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
  %dual = call { double, double } @cbrt_loss__elementwise__dual(double %x.v)
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

@llvm.compiler.used = appending global [3 x ptr] [ptr @libmvec.cbrt, ptr @libmvec.cbrt.v4, ptr @libmvec.cbrt.v2], section "llvm.metadata"

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind "prefer-vector-width"="512" }
attributes #2 = { nounwind willreturn memory(none) }
attributes #3 = { noinline nounwind willreturn memory(none) }
attributes #4 = { "vector-function-abi-variant"="_ZGVeN8v_libmvec.cbrt(_ZGVeN8v_cbrt),_ZGV_LLVM_N4v_libmvec.cbrt(libmvec.cbrt.v4),_ZGV_LLVM_N2v_libmvec.cbrt(libmvec.cbrt.v2)" }

; cbrt_loss__elementwise__c_sum_grads_f64's Python entry (METH_FASTCALL; see s2sad/codegen/llvm_entry.py):
;   cbrt_loss__elementwise__c_sum_grads_f64__py(p0, scale, mean) -> (value * seed, d/dp0), or NotImplemented
;   params: p0 contig
define ptr @cbrt_loss__elementwise__c_sum_grads_f64__py(ptr %table.obj, ptr %args, i64 %nargs) {
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
  %nargs.ok = icmp eq i64 %nargs, 3
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
  br i1 %n.out, label %decline, label %scale
scale:
  ; the scale: an exact float; then `mean`: True (the seed is scale / n) or False (scale)
  %s.at = getelementptr inbounds ptr, ptr %args, i64 1
  %s = load ptr, ptr %s.at
  %s.type.at = getelementptr inbounds i8, ptr %s, i64 8
  %s.type = load ptr, ptr %s.type.at
  %s.ok = icmp eq ptr %s.type, %float_type
  %mean.at = getelementptr inbounds ptr, ptr %args, i64 2
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
  call void @cbrt_loss__elementwise__c_sum_grads_f64(i64 1, i64 %size.n, ptr %p0.data, ptr %acc, double %s.f64, ptr %g0.data)
  %acc.v = load double, ptr %acc
  %value.f64 = fmul double %acc.v, %s.f64
  %value = call ptr %float_from_double(double %value.f64)
  %value.null = icmp eq ptr %value, null
  br i1 %value.null, label %value.fail, label %value.ok
value.ok:
  %result = call ptr %tuple_new(i64 2)
  %result.null = icmp eq ptr %result, null
  br i1 %result.null, label %result.fail, label %result.ok
result.ok:
  ; PyTuple_SetItem takes over each reference
  %set0 = call i32 %tuple_setitem(ptr %result, i64 0, ptr %value)
  %set1 = call i32 %tuple_setitem(ptr %result, i64 1, ptr %g0)
  ret ptr %result
decline:
  call void %incref(ptr %not_implemented)
  ret ptr %not_implemented
g0.fail:
  ; an exception is set: drop what was made, return NULL
  ret ptr null
value.fail:
  ; an exception is set: drop what was made, return NULL
  call void %decref(ptr %g0)
  ret ptr null
result.fail:
  ; an exception is set: drop what was made, return NULL
  call void %decref(ptr %g0)
  call void %decref(ptr %value)
  ret ptr null
}

; s2sad kernel module 'lambda_63': driver @lambda_63__cc_sum_grads_f64 (T = double)

; local function at golden/examples.py:63
define internal double @lambda_63(double %z, double %y_0) #0 {
entry:
  %square = fmul double %z, %z
  %ret = fadd double %square, %y_0
  ret double %ret
}

define internal { double, double, double } @lambda_63__dual(double %z, double %y_0) #0 {
entry:
  %_d1 = fmul double %z, %z
  %add = fadd double %_d1, %y_0
  %mul = fmul double 2.0, %z
  %ret.tuple = insertvalue { double, double, double } poison, double %add, 0
  %ret.tuple.1 = insertvalue { double, double, double } %ret.tuple, double %mul, 1
  %ret = insertvalue { double, double, double } %ret.tuple.1, double 1.0, 2
  ret { double, double, double } %ret
}

define void @lambda_63__cc_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %z, ptr noalias %y_0, ptr noalias %acc, double %seed, ptr noalias %z_bar, ptr noalias %y_0_bar) #1 {
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
  %y_0.ptr = getelementptr inbounds double, ptr %y_0, i64 %flat
  %y_0.v = load double, ptr %y_0.ptr
  %dual = call { double, double, double } @lambda_63__dual(double %z.v, double %y_0.v)
  %value = extractvalue { double, double, double } %dual, 0
  %z.partial = extractvalue { double, double, double } %dual, 1
  %y_0.partial = extractvalue { double, double, double } %dual, 2
  %value.sum.next = fadd reassoc nsz double %value.sum.i, %value
  %z_bar.c = fmul double %z.partial, %seed
  %z_bar.ptr = getelementptr inbounds double, ptr %z_bar, i64 %flat
  store double %z_bar.c, ptr %z_bar.ptr
  %y_0_bar.c = fmul double %y_0.partial, %seed
  %y_0_bar.ptr = getelementptr inbounds double, ptr %y_0_bar, i64 %flat
  store double %y_0_bar.c, ptr %y_0_bar.ptr
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

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind }

; lambda_63__cc_sum_grads_f64's Python entry (METH_FASTCALL; see s2sad/codegen/llvm_entry.py):
;   lambda_63__cc_sum_grads_f64__py(p0, p1, scale, mean) -> (value * seed, d/dp0, d/dp1), or NotImplemented
;   params: p0 contig, p1 contig
define ptr @lambda_63__cc_sum_grads_f64__py(ptr %table.obj, ptr %args, i64 %nargs) {
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
  %nargs.ok = icmp eq i64 %nargs, 4
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
  br i1 %p1.more, label %p1.shape.body, label %scale
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
scale:
  ; the scale: an exact float; then `mean`: True (the seed is scale / n) or False (scale)
  %s.at = getelementptr inbounds ptr, ptr %args, i64 2
  %s = load ptr, ptr %s.at
  %s.type.at = getelementptr inbounds i8, ptr %s, i64 8
  %s.type = load ptr, ptr %s.type.at
  %s.ok = icmp eq ptr %s.type, %float_type
  %mean.at = getelementptr inbounds ptr, ptr %args, i64 3
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
  call void @lambda_63__cc_sum_grads_f64(i64 1, i64 %size.n, ptr %p0.data, ptr %p1.data, ptr %acc, double %s.f64, ptr %g0.data, ptr %g1.data)
  %acc.v = load double, ptr %acc
  %value.f64 = fmul double %acc.v, %s.f64
  %value = call ptr %float_from_double(double %value.f64)
  %value.null = icmp eq ptr %value, null
  br i1 %value.null, label %value.fail, label %value.ok
value.ok:
  %result = call ptr %tuple_new(i64 3)
  %result.null = icmp eq ptr %result, null
  br i1 %result.null, label %result.fail, label %result.ok
result.ok:
  ; PyTuple_SetItem takes over each reference
  %set0 = call i32 %tuple_setitem(ptr %result, i64 0, ptr %value)
  %set1 = call i32 %tuple_setitem(ptr %result, i64 1, ptr %g0)
  %set2 = call i32 %tuple_setitem(ptr %result, i64 2, ptr %g1)
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
value.fail:
  ; an exception is set: drop what was made, return NULL
  call void %decref(ptr %g0)
  call void %decref(ptr %g1)
  ret ptr null
result.fail:
  ; an exception is set: drop what was made, return NULL
  call void %decref(ptr %g0)
  call void %decref(ptr %g1)
  call void %decref(ptr %value)
  ret ptr null
}

; The Python entry (METH_FASTCALL; see s2sad/codegen/llvm_entry.py) of drivers with LoopSpec(layouts=('contig', 'contig', 'contig'), value='sum', partials=True, seed='scalar', tangents=False), double:
;   s2sad_entry_sum_ccc_sum_float64_a012(p0, p1, p2, scale, mean) -> (value * seed, d/dp0, d/dp1, d/dp2), or NotImplemented
;   params: p0 contig, p1 contig, p2 contig
define ptr @s2sad_entry_sum_ccc_sum_float64_a012(ptr %table.obj, ptr %args, i64 %nargs) {
entry:
  ; the table: a uint64 array (its data pointer) of what the entry calls and compares with
  %table.at = getelementptr inbounds i8, ptr %table.obj, i64 16
  %table = load ptr, ptr %table.at
  %driver.at = getelementptr inbounds ptr, ptr %table, i64 0
  %driver = load ptr, ptr %driver.at
  %new_like.at = getelementptr inbounds ptr, ptr %table, i64 1
  %new_like = load ptr, ptr %new_like.at
  %array_type.at = getelementptr inbounds ptr, ptr %table, i64 2
  %array_type = load ptr, ptr %array_type.at
  %descr.at = getelementptr inbounds ptr, ptr %table, i64 3
  %descr = load ptr, ptr %descr.at
  %float_type.at = getelementptr inbounds ptr, ptr %table, i64 4
  %float_type = load ptr, ptr %float_type.at
  %not_implemented.at = getelementptr inbounds ptr, ptr %table, i64 5
  %not_implemented = load ptr, ptr %not_implemented.at
  %none.at = getelementptr inbounds ptr, ptr %table, i64 6
  %none = load ptr, ptr %none.at
  %true.at = getelementptr inbounds ptr, ptr %table, i64 7
  %true = load ptr, ptr %true.at
  %false.at = getelementptr inbounds ptr, ptr %table, i64 8
  %false = load ptr, ptr %false.at
  %incref.at = getelementptr inbounds ptr, ptr %table, i64 9
  %incref = load ptr, ptr %incref.at
  %decref.at = getelementptr inbounds ptr, ptr %table, i64 10
  %decref = load ptr, ptr %decref.at
  %float_from_double.at = getelementptr inbounds ptr, ptr %table, i64 11
  %float_from_double = load ptr, ptr %float_from_double.at
  %tuple_new.at = getelementptr inbounds ptr, ptr %table, i64 12
  %tuple_new = load ptr, ptr %tuple_new.at
  %tuple_setitem.at = getelementptr inbounds ptr, ptr %table, i64 13
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
  ; p1: an exact ndarray of the driver's dtype, C-contiguous and aligned, of p0's shape
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
  ; p2: an exact ndarray of the driver's dtype, C-contiguous and aligned, of p0's shape
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
  call void %driver(i64 1, i64 %size.n, ptr %p0.data, ptr %p1.data, ptr %p2.data, ptr %acc, double %s.f64, ptr %g0.data, ptr %g1.data, ptr %g2.data)
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

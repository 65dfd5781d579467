; The Python entry (METH_FASTCALL; see s2sad/codegen/llvm_entry.py) of drivers with ScanSpec(layouts=('contig',), n_state=1, value='sum', grads=True, seed='scalar'), double:
;   s2sad_entry_scan_c_sum_s1_float64_a0(p0, s0, scale, mean) -> (value * seed, d/dp0, s0'), or NotImplemented
;   params: p0 contig
define ptr @s2sad_entry_scan_c_sum_s1_float64_a0(ptr %table.obj, ptr %args, i64 %nargs) {
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
  ; the scan's state (in: before the first element; out: after the last), the adjoint
  ; of the final state (0: the loss does not read it) and a one-element tape (the
  ; runtime calls the entry only for scans whose reverse sweep reads no tape)
  %state = alloca [1 x double]
  %state_bar = alloca [1 x double]
  store [1 x double] zeroinitializer, ptr %state_bar
  %tape = alloca double
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
  br i1 %n.out, label %decline, label %check.state
check.state:
  ; s0: the state's value, an exact float
  %s0.at = getelementptr inbounds ptr, ptr %args, i64 1
  %s0 = load ptr, ptr %s0.at
  %s0.type.at = getelementptr inbounds i8, ptr %s0, i64 8
  %s0.type = load ptr, ptr %s0.type.at
  %s0.ok = icmp eq ptr %s0.type, %float_type
  br i1 %s0.ok, label %s0.value, label %decline
s0.value:
  %s0.f64.at = getelementptr inbounds i8, ptr %s0, i64 16
  %s0.f64 = load double, ptr %s0.f64.at
  %s0.slot = getelementptr inbounds double, ptr %state, i64 0
  store double %s0.f64, ptr %s0.slot
  br label %scale
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
  call void %driver(i64 1, i64 %size.n, ptr %p0.data, ptr %state, ptr %acc, double %s.f64, ptr %g0.data, ptr %state_bar, ptr %tape)
  %acc.v = load double, ptr %acc
  %value = call ptr %float_from_double(double %acc.v)
  %value.null = icmp eq ptr %value, null
  br i1 %value.null, label %value.fail, label %value.ok
value.ok:
  %s0.out.at = getelementptr inbounds double, ptr %state, i64 0
  %s0.out.v = load double, ptr %s0.out.at
  %s0.out = call ptr %float_from_double(double %s0.out.v)
  %s0.out.null = icmp eq ptr %s0.out, null
  br i1 %s0.out.null, label %s0.out.float.fail, label %s0.out.float.ok
s0.out.float.ok:
  %result = call ptr %tuple_new(i64 3)
  %result.null = icmp eq ptr %result, null
  br i1 %result.null, label %result.fail, label %result.ok
result.ok:
  ; PyTuple_SetItem takes over each reference
  %set0 = call i32 %tuple_setitem(ptr %result, i64 0, ptr %value)
  %set1 = call i32 %tuple_setitem(ptr %result, i64 1, ptr %g0)
  %set2 = call i32 %tuple_setitem(ptr %result, i64 2, ptr %s0.out)
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
s0.out.float.fail:
  ; an exception is set: drop what was made, return NULL
  call void %decref(ptr %g0)
  call void %decref(ptr %value)
  ret ptr null
result.fail:
  ; an exception is set: drop what was made, return NULL
  call void %decref(ptr %g0)
  call void %decref(ptr %value)
  call void %decref(ptr %s0.out)
  ret ptr null
}

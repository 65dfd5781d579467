; s2sad kernel module 'item_loss__elementwise': driver @item_loss__elementwise__scan_c_s1_sum_grads_f64 (T = double)

; from golden/examples.py:77 (running_item)
define internal { double, double } @running_item(double %x, double %STORE_0) #0 {
entry:
  %STORE_0.1 = fadd double %STORE_0, %x
  %mul = fmul double %STORE_0.1, %x
  %ret.tuple = insertvalue { double, double } poison, double %mul, 0
  %ret = insertvalue { double, double } %ret.tuple, double %STORE_0.1, 1
  ret { double, double } %ret
}

define internal { double, double } @item_loss__elementwise(double %x, double %STORE_0) #0 {
entry:
  %running_item.ret = call { double, double } @running_item(double %x, double %STORE_0)
  %_t1 = extractvalue { double, double } %running_item.ret, 0
  %STORE_0.1 = extractvalue { double, double } %running_item.ret, 1
  %ret.tuple = insertvalue { double, double } poison, double %_t1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %STORE_0.1, 1
  ret { double, double } %ret
}

define internal { double, double, double, double, double, double } @running_item__dual(double %x, double %STORE_0) #0 {
entry:
  %STORE_0_dot_x = fadd double 0.0, 1.0
  %STORE_0.1 = fadd double %STORE_0, %x
  %mul = fmul double %STORE_0.1, %x
  %mul.1 = fmul double %x, %STORE_0_dot_x
  %add = fadd double %mul.1, %STORE_0.1
  %mul.2 = fmul double %x, 1.0
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %mul, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %STORE_0.1, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %add, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double %mul.2, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %STORE_0_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double 1.0, 5
  ret { double, double, double, double, double, double } %ret
}

define internal { double, double, double, double, double, double } @item_loss__elementwise__dual(double %x, double %STORE_0) #0 {
entry:
  %running_item__dual.ret = call { double, double, double, double, double, double } @running_item__dual(double %x, double %STORE_0)
  %_d1 = extractvalue { double, double, double, double, double, double } %running_item__dual.ret, 0
  %_d2 = extractvalue { double, double, double, double, double, double } %running_item__dual.ret, 1
  %d_d1_dx = extractvalue { double, double, double, double, double, double } %running_item__dual.ret, 2
  %d_d1_dSTORE_0 = extractvalue { double, double, double, double, double, double } %running_item__dual.ret, 3
  %d_d2_dx = extractvalue { double, double, double, double, double, double } %running_item__dual.ret, 4
  %d_d2_dSTORE_0 = extractvalue { double, double, double, double, double, double } %running_item__dual.ret, 5
  %mul = fmul double %d_d1_dSTORE_0, 0.0
  %_t1_dot_x = fadd double %d_d1_dx, %mul
  %_t1_dot_STORE_0 = fmul double %d_d1_dSTORE_0, 1.0
  %mul.1 = fmul double %d_d2_dSTORE_0, 0.0
  %STORE_0_dot_x = fadd double %d_d2_dx, %mul.1
  %STORE_0_dot_STORE_0 = fmul double %d_d2_dSTORE_0, 1.0
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %_d1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %_d2, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %_t1_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double %_t1_dot_STORE_0, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %STORE_0_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double %STORE_0_dot_STORE_0, 5
  ret { double, double, double, double, double, double } %ret
}

define void @item_loss__elementwise__scan_c_s1_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %state, ptr noalias %acc, double %seed, ptr noalias %x_bar, ptr noalias %state_bar, ptr noalias %tape) #1 {
entry:
  %n = mul nsw i64 %n_outer, %n_inner
  %blocks.up = add nsw i64 %n, 255
  %blocks = sdiv i64 %blocks.up, 256
  %STORE_0.in.ptr = getelementptr inbounds double, ptr %state, i64 0
  %STORE_0.in = load double, ptr %STORE_0.in.ptr
  %STORE_0_bar.in.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  %STORE_0_bar.in = load double, ptr %STORE_0_bar.in.ptr
  br label %fwd.block.cond

fwd.block.cond:
  %fwd.block.e = phi i64 [ 0, %entry ], [ %fwd.block.e.next, %fwd.exit ]
  %STORE_0 = phi double [ %STORE_0.in, %entry ], [ %STORE_0.1, %fwd.exit ]
  %value.sum = phi double [ 0.0, %entry ], [ %value.sum.1, %fwd.exit ]
  %fwd.block.more = icmp slt i64 %fwd.block.e, %blocks
  br i1 %fwd.block.more, label %fwd.block.body, label %fwd.block.exit

fwd.block.body:
  %lo = mul nsw i64 %fwd.block.e, 256
  %end = add nsw i64 %lo, 256
  %full = icmp slt i64 %end, %n
  %hi = select i1 %full, i64 %end, i64 %n
  %count = sub nsw i64 %hi, %lo
  br label %fwd.cond

fwd.cond:
  %fwd.e = phi i64 [ 0, %fwd.block.body ], [ %fwd.e.next, %fwd.body ]
  %STORE_0.1 = phi double [ %STORE_0, %fwd.block.body ], [ %STORE_0.next, %fwd.body ]
  %value.sum.1 = phi double [ %value.sum, %fwd.block.body ], [ %value.sum.2, %fwd.body ]
  %fwd.more = icmp slt i64 %fwd.e, %count
  br i1 %fwd.more, label %fwd.body, label %fwd.exit

fwd.body:
  %e = add nsw i64 %lo, %fwd.e
  %STORE_0.tape.ptr = getelementptr inbounds [1 x double], ptr %tape, i64 %e, i32 0
  store double %STORE_0.1, ptr %STORE_0.tape.ptr
  %x.ptr = getelementptr inbounds double, ptr %x, i64 %e
  %x.v = load double, ptr %x.ptr
  %step = call { double, double } @item_loss__elementwise(double %x.v, double %STORE_0.1)
  %value = extractvalue { double, double } %step, 0
  %STORE_0.next = extractvalue { double, double } %step, 1
  %value.sum.2 = fadd reassoc nsz double %value.sum.1, %value
  %fwd.e.next = add nsw i64 %fwd.e, 1
  br label %fwd.cond

fwd.exit:
  %fwd.block.e.next = add nsw i64 %fwd.block.e, 1
  br label %fwd.block.cond

fwd.block.exit:
  br label %rev.block.cond

rev.block.cond:
  %rev.block.left = phi i64 [ %blocks, %fwd.block.exit ], [ %rev.block.e, %rev.exit ]
  %STORE_0_bar = phi double [ %STORE_0_bar.in, %fwd.block.exit ], [ %STORE_0_bar.1, %rev.exit ]
  %rev.block.more = icmp sgt i64 %rev.block.left, 0
  br i1 %rev.block.more, label %rev.block.body, label %rev.block.exit

rev.block.body:
  %rev.block.e = add nsw i64 %rev.block.left, -1
  %lo.1 = mul nsw i64 %rev.block.e, 256
  %end.1 = add nsw i64 %lo.1, 256
  %full.1 = icmp slt i64 %end.1, %n
  %hi.1 = select i1 %full.1, i64 %end.1, i64 %n
  %count.1 = sub nsw i64 %hi.1, %lo.1
  br label %rev.cond

rev.cond:
  %rev.left = phi i64 [ %count.1, %rev.block.body ], [ %rev.e, %rev.body ]
  %STORE_0_bar.1 = phi double [ %STORE_0_bar, %rev.block.body ], [ %STORE_0_bar.c.2, %rev.body ]
  %rev.more = icmp sgt i64 %rev.left, 0
  br i1 %rev.more, label %rev.body, label %rev.exit

rev.body:
  %rev.e = add nsw i64 %rev.left, -1
  %e.1 = add nsw i64 %lo.1, %rev.e
  %STORE_0.tape.ptr.1 = getelementptr inbounds [1 x double], ptr %tape, i64 %e.1, i32 0
  %STORE_0.tape = load double, ptr %STORE_0.tape.ptr.1
  %x.ptr.1 = getelementptr inbounds double, ptr %x, i64 %e.1
  %x.v.1 = load double, ptr %x.ptr.1
  %dual = call { double, double, double, double, double, double } @item_loss__elementwise__dual(double %x.v.1, double %STORE_0.tape)
  %x_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 2
  %x_bar.c = fmul double %x_bar.dv, %seed
  %x_bar.dSTORE_0 = extractvalue { double, double, double, double, double, double } %dual, 4
  %x_bar.c.1 = fmul double %STORE_0_bar.1, %x_bar.dSTORE_0
  %x_bar.c.2 = fadd double %x_bar.c, %x_bar.c.1
  %x_bar.ptr = getelementptr inbounds double, ptr %x_bar, i64 %e.1
  store double %x_bar.c.2, ptr %x_bar.ptr
  %STORE_0_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 3
  %STORE_0_bar.c = fmul double %STORE_0_bar.dv, %seed
  %STORE_0_bar.dSTORE_0 = extractvalue { double, double, double, double, double, double } %dual, 5
  %STORE_0_bar.c.1 = fmul double %STORE_0_bar.1, %STORE_0_bar.dSTORE_0
  %STORE_0_bar.c.2 = fadd double %STORE_0_bar.c, %STORE_0_bar.c.1
  br label %rev.cond

rev.exit:
  br label %rev.block.cond

rev.block.exit:
  %STORE_0.out.ptr = getelementptr inbounds double, ptr %state, i64 0
  store double %STORE_0, ptr %STORE_0.out.ptr
  %value.old = load double, ptr %acc
  %value.new = fadd double %value.old, %value.sum
  store double %value.new, ptr %acc
  %STORE_0_bar.out.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  store double %STORE_0_bar, ptr %STORE_0_bar.out.ptr
  ret void
}

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind }

; item_loss__elementwise__scan_c_s1_sum_grads_f64's Python entry (METH_FASTCALL; see s2sad/codegen/llvm_entry.py):
;   item_loss__elementwise__scan_c_s1_sum_grads_f64__py(p0, s0, scale, mean) -> (value * seed, d/dp0, s0'), or NotImplemented
;   params: p0 contig
define ptr @item_loss__elementwise__scan_c_s1_sum_grads_f64__py(ptr %table.obj, ptr %args, i64 %nargs) {
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
  call void @item_loss__elementwise__scan_c_s1_sum_grads_f64(i64 1, i64 %size.n, ptr %p0.data, ptr %state, ptr %acc, double %s.f64, ptr %g0.data, ptr %state_bar, ptr %tape)
  %acc.v = load double, ptr %acc
  %value = call ptr %float_from_double(double %acc.v)
  %value.null = icmp eq ptr %value, null
  br i1 %value.null, label %value.fail, label %value.ok
value.ok:
  %s0.out.at = getelementptr inbounds double, ptr %state, i64 0
  %s0.out.v = load double, ptr %s0.out.at
  %s0.out = call ptr %float_from_double(double %s0.out.v)
  %s0.out.null = icmp eq ptr %s0.out, null
  br i1 %s0.out.null, label %s0.out.fail, label %s0.out.ok
s0.out.ok:
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
s0.out.fail:
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

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

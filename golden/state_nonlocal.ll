; s2sad kernel module 'nonlocal_loss__elementwise': driver @nonlocal_loss__elementwise__scan_c_s1_sum_grads_f64 (T = double)

; from golden/examples.py:90 (make_counter.<locals>.counter)
define internal { double, double } @counter(double %x, double %count) #0 {
entry:
  %count.1 = fadd double %count, %x
  %ret.tuple = insertvalue { double, double } poison, double %count.1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %count.1, 1
  ret { double, double } %ret
}

define internal { double, double } @nonlocal_loss__elementwise(double %x, double %count) #0 {
entry:
  %counter.ret = call { double, double } @counter(double %x, double %count)
  %_t1 = extractvalue { double, double } %counter.ret, 0
  %count.1 = extractvalue { double, double } %counter.ret, 1
  %ret.tuple = insertvalue { double, double } poison, double %_t1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %count.1, 1
  ret { double, double } %ret
}

define internal { double, double, double, double, double, double } @counter__dual(double %x, double %count) #0 {
entry:
  %count_dot_x = fadd double 0.0, 1.0
  %count.1 = fadd double %count, %x
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %count.1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %count.1, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %count_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double 1.0, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %count_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double 1.0, 5
  ret { double, double, double, double, double, double } %ret
}

define internal { double, double, double, double, double, double } @nonlocal_loss__elementwise__dual(double %x, double %count) #0 {
entry:
  %counter__dual.ret = call { double, double, double, double, double, double } @counter__dual(double %x, double %count)
  %_d1 = extractvalue { double, double, double, double, double, double } %counter__dual.ret, 0
  %_d2 = extractvalue { double, double, double, double, double, double } %counter__dual.ret, 1
  %d_d1_dx = extractvalue { double, double, double, double, double, double } %counter__dual.ret, 2
  %d_d1_dcount = extractvalue { double, double, double, double, double, double } %counter__dual.ret, 3
  %d_d2_dx = extractvalue { double, double, double, double, double, double } %counter__dual.ret, 4
  %d_d2_dcount = extractvalue { double, double, double, double, double, double } %counter__dual.ret, 5
  %mul = fmul double %d_d1_dcount, 0.0
  %_t1_dot_x = fadd double %d_d1_dx, %mul
  %_t1_dot_count = fmul double %d_d1_dcount, 1.0
  %mul.1 = fmul double %d_d2_dcount, 0.0
  %count_dot_x = fadd double %d_d2_dx, %mul.1
  %count_dot_count = fmul double %d_d2_dcount, 1.0
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %_d1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %_d2, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %_t1_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double %_t1_dot_count, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %count_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double %count_dot_count, 5
  ret { double, double, double, double, double, double } %ret
}

define void @nonlocal_loss__elementwise__scan_c_s1_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %state, ptr noalias %acc, double %seed, ptr noalias %x_bar, ptr noalias %state_bar, ptr noalias %tape) #1 {
entry:
  %n = mul nsw i64 %n_outer, %n_inner
  %blocks.up = add nsw i64 %n, 255
  %blocks = sdiv i64 %blocks.up, 256
  %count.in.ptr = getelementptr inbounds double, ptr %state, i64 0
  %count.in = load double, ptr %count.in.ptr
  %count_bar.in.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  %count_bar.in = load double, ptr %count_bar.in.ptr
  br label %block.cond

block.cond:
  %block.e = phi i64 [ 0, %entry ], [ %block.e.next, %scan.exit ]
  %count = phi double [ %count.in, %entry ], [ %count.2, %scan.exit ]
  %value.sum = phi double [ 0.0, %entry ], [ %value.sum.1, %scan.exit ]
  %count_bar = phi double [ %count_bar.in, %entry ], [ %count_bar.1, %scan.exit ]
  %block.more = icmp slt i64 %block.e, %blocks
  br i1 %block.more, label %block.body, label %block.exit

block.body:
  %lo = mul nsw i64 %block.e, 256
  %end = add nsw i64 %lo, 256
  %full = icmp slt i64 %end, %n
  %hi = select i1 %full, i64 %end, i64 %n
  %count.1 = sub nsw i64 %hi, %lo
  %mirror.lo = sub nsw i64 %n, %hi
  %mirror.hi = sub nsw i64 %n, %lo
  %last = add nsw i64 %count.1, -1
  br label %scan.cond

scan.cond:
  %scan.e = phi i64 [ 0, %block.body ], [ %scan.e.next, %scan.body ]
  %count.2 = phi double [ %count, %block.body ], [ %count.next, %scan.body ]
  %value.sum.1 = phi double [ %value.sum, %block.body ], [ %value.sum.2, %scan.body ]
  %count_bar.1 = phi double [ %count_bar, %block.body ], [ %count_bar.c.2, %scan.body ]
  %scan.more = icmp slt i64 %scan.e, %count.1
  br i1 %scan.more, label %scan.body, label %scan.exit

scan.body:
  %e = add nsw i64 %lo, %scan.e
  %x.ptr = getelementptr inbounds double, ptr %x, i64 %e
  %x.v = load double, ptr %x.ptr
  %step = call { double, double } @nonlocal_loss__elementwise(double %x.v, double %count.2)
  %value = extractvalue { double, double } %step, 0
  %count.next = extractvalue { double, double } %step, 1
  %value.sum.2 = fadd reassoc nsz double %value.sum.1, %value
  %mirror.t = sub nsw i64 %last, %scan.e
  %mirror.e = add nsw i64 %mirror.lo, %mirror.t
  %x.ptr.1 = getelementptr inbounds double, ptr %x, i64 %mirror.e
  %x.v.1 = load double, ptr %x.ptr.1
  %dual = call { double, double, double, double, double, double } @nonlocal_loss__elementwise__dual(double %x.v.1, double 0.0)
  %x_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 2
  %x_bar.c = fmul double %x_bar.dv, %seed
  %x_bar.dcount = extractvalue { double, double, double, double, double, double } %dual, 4
  %x_bar.c.1 = fmul double %count_bar.1, %x_bar.dcount
  %x_bar.c.2 = fadd double %x_bar.c, %x_bar.c.1
  %x_bar.ptr = getelementptr inbounds double, ptr %x_bar, i64 %mirror.e
  store double %x_bar.c.2, ptr %x_bar.ptr
  %count_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 3
  %count_bar.c = fmul double %count_bar.dv, %seed
  %count_bar.dcount = extractvalue { double, double, double, double, double, double } %dual, 5
  %count_bar.c.1 = fmul double %count_bar.1, %count_bar.dcount
  %count_bar.c.2 = fadd double %count_bar.c, %count_bar.c.1
  %scan.e.next = add nsw i64 %scan.e, 1
  br label %scan.cond

scan.exit:
  %block.e.next = add nsw i64 %block.e, 1
  br label %block.cond

block.exit:
  %count.out.ptr = getelementptr inbounds double, ptr %state, i64 0
  store double %count, ptr %count.out.ptr
  %value.old = load double, ptr %acc
  %value.new = fadd double %value.old, %value.sum
  store double %value.new, ptr %acc
  %count_bar.out.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  store double %count_bar, ptr %count_bar.out.ptr
  ret void
}

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind }

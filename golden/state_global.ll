; s2sad kernel module 'global_loss__elementwise': driver @global_loss__elementwise__scan_c_s1_sum_grads_f64 (T = double)

; from golden/examples.py:71 (running_global)
define internal { double, double } @running_global(double %x, double %total) #0 {
entry:
  %total.1 = fadd double %total, %x
  %ret.tuple = insertvalue { double, double } poison, double %total.1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %total.1, 1
  ret { double, double } %ret
}

define internal { double, double } @global_loss__elementwise(double %x, double %total) #0 {
entry:
  %running_global.ret = call { double, double } @running_global(double %x, double %total)
  %_t1 = extractvalue { double, double } %running_global.ret, 0
  %total.1 = extractvalue { double, double } %running_global.ret, 1
  %ret.tuple = insertvalue { double, double } poison, double %_t1, 0
  %ret = insertvalue { double, double } %ret.tuple, double %total.1, 1
  ret { double, double } %ret
}

define internal { double, double, double, double, double, double } @running_global__dual(double %x, double %total) #0 {
entry:
  %total_dot_x = fadd double 0.0, 1.0
  %total.1 = fadd double %total, %x
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %total.1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %total.1, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %total_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double 1.0, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %total_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double 1.0, 5
  ret { double, double, double, double, double, double } %ret
}

define internal { double, double, double, double, double, double } @global_loss__elementwise__dual(double %x, double %total) #0 {
entry:
  %running_global__dual.ret = call { double, double, double, double, double, double } @running_global__dual(double %x, double %total)
  %_d1 = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 0
  %_d2 = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 1
  %d_d1_dx = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 2
  %d_d1_dtotal = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 3
  %d_d2_dx = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 4
  %d_d2_dtotal = extractvalue { double, double, double, double, double, double } %running_global__dual.ret, 5
  %mul = fmul double %d_d1_dtotal, 0.0
  %_t1_dot_x = fadd double %d_d1_dx, %mul
  %_t1_dot_total = fmul double %d_d1_dtotal, 1.0
  %mul.1 = fmul double %d_d2_dtotal, 0.0
  %total_dot_x = fadd double %d_d2_dx, %mul.1
  %total_dot_total = fmul double %d_d2_dtotal, 1.0
  %ret.tuple = insertvalue { double, double, double, double, double, double } poison, double %_d1, 0
  %ret.tuple.1 = insertvalue { double, double, double, double, double, double } %ret.tuple, double %_d2, 1
  %ret.tuple.2 = insertvalue { double, double, double, double, double, double } %ret.tuple.1, double %_t1_dot_x, 2
  %ret.tuple.3 = insertvalue { double, double, double, double, double, double } %ret.tuple.2, double %_t1_dot_total, 3
  %ret.tuple.4 = insertvalue { double, double, double, double, double, double } %ret.tuple.3, double %total_dot_x, 4
  %ret = insertvalue { double, double, double, double, double, double } %ret.tuple.4, double %total_dot_total, 5
  ret { double, double, double, double, double, double } %ret
}

define void @global_loss__elementwise__scan_c_s1_sum_grads_f64(i64 %n_outer, i64 %n_inner, ptr noalias %x, ptr noalias %state, ptr noalias %acc, double %seed, ptr noalias %x_bar, ptr noalias %state_bar, ptr noalias %tape) #1 {
entry:
  %n = mul nsw i64 %n_outer, %n_inner
  %blocks.up = add nsw i64 %n, 255
  %blocks = sdiv i64 %blocks.up, 256
  %total.in.ptr = getelementptr inbounds double, ptr %state, i64 0
  %total.in = load double, ptr %total.in.ptr
  %total_bar.in.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  %total_bar.in = load double, ptr %total_bar.in.ptr
  br label %block.cond

block.cond:
  %block.e = phi i64 [ 0, %entry ], [ %block.e.next, %scan.exit ]
  %total = phi double [ %total.in, %entry ], [ %total.1, %scan.exit ]
  %value.sum = phi double [ 0.0, %entry ], [ %value.sum.1, %scan.exit ]
  %total_bar = phi double [ %total_bar.in, %entry ], [ %total_bar.1, %scan.exit ]
  %block.more = icmp slt i64 %block.e, %blocks
  br i1 %block.more, label %block.body, label %block.exit

block.body:
  %lo = mul nsw i64 %block.e, 256
  %end = add nsw i64 %lo, 256
  %full = icmp slt i64 %end, %n
  %hi = select i1 %full, i64 %end, i64 %n
  %count = sub nsw i64 %hi, %lo
  %mirror.lo = sub nsw i64 %n, %hi
  %mirror.hi = sub nsw i64 %n, %lo
  %last = add nsw i64 %count, -1
  br label %scan.cond

scan.cond:
  %scan.e = phi i64 [ 0, %block.body ], [ %scan.e.next, %scan.body ]
  %total.1 = phi double [ %total, %block.body ], [ %total.next, %scan.body ]
  %value.sum.1 = phi double [ %value.sum, %block.body ], [ %value.sum.2, %scan.body ]
  %total_bar.1 = phi double [ %total_bar, %block.body ], [ %total_bar.c.2, %scan.body ]
  %scan.more = icmp slt i64 %scan.e, %count
  br i1 %scan.more, label %scan.body, label %scan.exit

scan.body:
  %e = add nsw i64 %lo, %scan.e
  %x.ptr = getelementptr inbounds double, ptr %x, i64 %e
  %x.v = load double, ptr %x.ptr
  %step = call { double, double } @global_loss__elementwise(double %x.v, double %total.1)
  %value = extractvalue { double, double } %step, 0
  %total.next = extractvalue { double, double } %step, 1
  %value.sum.2 = fadd reassoc nsz double %value.sum.1, %value
  %mirror.t = sub nsw i64 %last, %scan.e
  %mirror.e = add nsw i64 %mirror.lo, %mirror.t
  %x.ptr.1 = getelementptr inbounds double, ptr %x, i64 %mirror.e
  %x.v.1 = load double, ptr %x.ptr.1
  %dual = call { double, double, double, double, double, double } @global_loss__elementwise__dual(double %x.v.1, double 0.0)
  %x_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 2
  %x_bar.c = fmul double %x_bar.dv, %seed
  %x_bar.dtotal = extractvalue { double, double, double, double, double, double } %dual, 4
  %x_bar.c.1 = fmul double %total_bar.1, %x_bar.dtotal
  %x_bar.c.2 = fadd double %x_bar.c, %x_bar.c.1
  %x_bar.ptr = getelementptr inbounds double, ptr %x_bar, i64 %mirror.e
  store double %x_bar.c.2, ptr %x_bar.ptr
  %total_bar.dv = extractvalue { double, double, double, double, double, double } %dual, 3
  %total_bar.c = fmul double %total_bar.dv, %seed
  %total_bar.dtotal = extractvalue { double, double, double, double, double, double } %dual, 5
  %total_bar.c.1 = fmul double %total_bar.1, %total_bar.dtotal
  %total_bar.c.2 = fadd double %total_bar.c, %total_bar.c.1
  %scan.e.next = add nsw i64 %scan.e, 1
  br label %scan.cond

scan.exit:
  %block.e.next = add nsw i64 %block.e, 1
  br label %block.cond

block.exit:
  %total.out.ptr = getelementptr inbounds double, ptr %state, i64 0
  store double %total, ptr %total.out.ptr
  %value.old = load double, ptr %acc
  %value.new = fadd double %value.old, %value.sum
  store double %value.new, ptr %acc
  %total_bar.out.ptr = getelementptr inbounds double, ptr %state_bar, i64 0
  store double %total_bar, ptr %total_bar.out.ptr
  ret void
}

attributes #0 = { alwaysinline nounwind }
attributes #1 = { nounwind }

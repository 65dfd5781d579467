
define private i64 @word(ptr %t, i64 %i) {
  %at = getelementptr inbounds i64, ptr %t, i64 %i
  %v = load i64, ptr %at
  ret i64 %v
}

define ptr @s2sad_launch_iiiidf(ptr %self, ptr %args, i64 %nargs) {
entry:
  %t.at = getelementptr inbounds i8, ptr %self, i64 16
  %t = load ptr, ptr %t.at
  %want = call i64 @word(ptr %t, i64 4)
  %n.ok = icmp eq i64 %nargs, %want
  br i1 %n.ok, label %check, label %no
check:
  %i = phi i64 [0, %entry], [%i.next, %check.ok]
  %done = icmp eq i64 %i, %nargs
  br i1 %done, label %pre0, label %check.body
check.body:
  %a.at = getelementptr inbounds ptr, ptr %args, i64 %i
  %a = load ptr, ptr %a.at
  %type.at = getelementptr inbounds i8, ptr %a, i64 8
  %type = load i64, ptr %type.at
  %want.pos = add i64 %i, 19
  %want.type = call i64 @word(ptr %t, i64 %want.pos)
  %i.next = add i64 %i, 1
  %type.ok = icmp eq i64 %type, %want.type
  br i1 %type.ok, label %check.ok, label %no
check.ok:
  br label %check
pre0:
  %s0 = call i64 @word(ptr %t, i64 7)
  %c0 = call i64 @word(ptr %t, i64 8)
  %const0 = icmp slt i64 %s0, 0
  br i1 %const0, label %k0, label %a0
a0:
  %o0.at = getelementptr inbounds ptr, ptr %args, i64 %s0
  %o0 = load ptr, ptr %o0.at
  %f0.at = getelementptr inbounds i8, ptr %o0, i64 16
  %p0 = load i64, ptr %f0.at
  %v0.a = add i64 %p0, %c0
  br label %k0
k0:
  %v0 = phi i64 [%v0.a, %a0], [%c0, %pre0]
  br label %pre1
pre1:
  %s1 = call i64 @word(ptr %t, i64 9)
  %c1 = call i64 @word(ptr %t, i64 10)
  %const1 = icmp slt i64 %s1, 0
  br i1 %const1, label %k1, label %a1
a1:
  %o1.at = getelementptr inbounds ptr, ptr %args, i64 %s1
  %o1 = load ptr, ptr %o1.at
  %f1.at = getelementptr inbounds i8, ptr %o1, i64 16
  %p1 = load i64, ptr %f1.at
  %v1.a = add i64 %p1, %c1
  br label %k1
k1:
  %v1 = phi i64 [%v1.a, %a1], [%c1, %pre1]
  br label %pre2
pre2:
  %s2 = call i64 @word(ptr %t, i64 11)
  %c2 = call i64 @word(ptr %t, i64 12)
  %const2 = icmp slt i64 %s2, 0
  br i1 %const2, label %k2, label %a2
a2:
  %o2.at = getelementptr inbounds ptr, ptr %args, i64 %s2
  %o2 = load ptr, ptr %o2.at
  %f2.at = getelementptr inbounds i8, ptr %o2, i64 16
  %p2 = load i64, ptr %f2.at
  %v2.a = add i64 %p2, %c2
  br label %k2
k2:
  %v2 = phi i64 [%v2.a, %a2], [%c2, %pre2]
  br label %pre3
pre3:
  %s3 = call i64 @word(ptr %t, i64 13)
  %c3 = call i64 @word(ptr %t, i64 14)
  %const3 = icmp slt i64 %s3, 0
  br i1 %const3, label %k3, label %a3
a3:
  %o3.at = getelementptr inbounds ptr, ptr %args, i64 %s3
  %o3 = load ptr, ptr %o3.at
  %f3.at = getelementptr inbounds i8, ptr %o3, i64 16
  %p3 = load i64, ptr %f3.at
  %v3.a = add i64 %p3, %c3
  br label %k3
k3:
  %v3 = phi i64 [%v3.a, %a3], [%c3, %pre3]
  br label %pre4
pre4:
  %s4 = call i64 @word(ptr %t, i64 15)
  %c4 = call i64 @word(ptr %t, i64 16)
  %c4.d = bitcast i64 %c4 to double
  %const4 = icmp slt i64 %s4, 0
  br i1 %const4, label %k4, label %a4
a4:
  %o4.at = getelementptr inbounds ptr, ptr %args, i64 %s4
  %o4 = load ptr, ptr %o4.at
  %f4.at = getelementptr inbounds i8, ptr %o4, i64 16
  %v4.a = load double, ptr %f4.at
  br label %k4
k4:
  %v4 = phi double [%v4.a, %a4], [%c4.d, %pre4]
  br label %pre5
pre5:
  %s5 = call i64 @word(ptr %t, i64 17)
  %c5 = call i64 @word(ptr %t, i64 18)
  %c5.d = bitcast i64 %c5 to double
  %const5 = icmp slt i64 %s5, 0
  br i1 %const5, label %k5, label %a5
a5:
  %o5.at = getelementptr inbounds ptr, ptr %args, i64 %s5
  %o5 = load ptr, ptr %o5.at
  %f5.at = getelementptr inbounds i8, ptr %o5, i64 16
  %v5.a = load double, ptr %f5.at
  br label %k5
k5:
  %v5 = phi double [%v5.a, %a5], [%c5.d, %pre5]
  %v5.f = fptrunc double %v5 to float
  br label %run
run:
  %driver.int = call i64 @word(ptr %t, i64 3)
  %driver = inttoptr i64 %driver.int to ptr
  %save.int = call i64 @word(ptr %t, i64 5)
  %release = icmp ne i64 %save.int, 0
  br i1 %release, label %released, label %held
held:
  call void (i64, i64, i64, i64, double, float) %driver(i64 %v0, i64 %v1, i64 %v2, i64 %v3, double %v4, float %v5.f)
  br label %called
released:
  %save = inttoptr i64 %save.int to ptr
  %state = call ptr %save()
  call void (i64, i64, i64, i64, double, float) %driver(i64 %v0, i64 %v1, i64 %v2, i64 %v3, double %v4, float %v5.f)
  %restore.int = call i64 @word(ptr %t, i64 6)
  %restore = inttoptr i64 %restore.int to ptr
  call void %restore(ptr %state)
  br label %called
called:
  %none = call i64 @word(ptr %t, i64 1)
  br label %out
no:
  %ni = call i64 @word(ptr %t, i64 2)
  br label %out
out:
  %r.int = phi i64 [%none, %called], [%ni, %no]
  %r = inttoptr i64 %r.int to ptr
  %incref.int = call i64 @word(ptr %t, i64 0)
  %incref = inttoptr i64 %incref.int to ptr
  call void %incref(ptr %r)
  ret ptr %r
}


define private i64 @word(ptr %t, i64 %i) {
  %at = getelementptr inbounds i64, ptr %t, i64 %i
  %v = load i64, ptr %at
  ret i64 %v
}

define ptr @s2sad_program_9137fcd8a1a9bfe1778a6eac(ptr %self, ptr %args, i64 %nargs) {
entry:
  %t.at = getelementptr inbounds i8, ptr %self, i64 16
  %t = load ptr, ptr %t.at
  %want = call i64 @word(ptr %t, i64 3)
  %array = call i64 @word(ptr %t, i64 4)
  %n.ok = icmp eq i64 %nargs, %want
  br i1 %n.ok, label %check0, label %no
check0:
  %a0.at = getelementptr inbounds ptr, ptr %args, i64 0
  %a0 = load ptr, ptr %a0.at
  %a0.type.at = getelementptr inbounds i8, ptr %a0, i64 8
  %a0.type = load i64, ptr %a0.type.at
  %a0.isarray = icmp eq i64 %a0.type, %array
  br i1 %a0.isarray, label %fields0, label %no
fields0:
  %a0.flags.at = getelementptr inbounds i8, ptr %a0, i64 64
  %a0.flags = load i32, ptr %a0.flags.at
  %a0.al = and i32 %a0.flags, 256
  %a0.ok = icmp ne i32 %a0.al, 0
  %a0.data.at = getelementptr inbounds i8, ptr %a0, i64 16
  %a0.data = load i64, ptr %a0.data.at
  br i1 %a0.ok, label %check1, label %no
check1:
  %a1.at = getelementptr inbounds ptr, ptr %args, i64 1
  %a1 = load ptr, ptr %a1.at
  %a1.type.at = getelementptr inbounds i8, ptr %a1, i64 8
  %a1.type = load i64, ptr %a1.type.at
  %a1.isarray = icmp eq i64 %a1.type, %array
  br i1 %a1.isarray, label %fields1, label %no
fields1:
  %a1.flags.at = getelementptr inbounds i8, ptr %a1, i64 64
  %a1.flags = load i32, ptr %a1.flags.at
  %a1.al = and i32 %a1.flags, 256
  %a1.ok = icmp ne i32 %a1.al, 0
  %a1.data.at = getelementptr inbounds i8, ptr %a1, i64 16
  %a1.data = load i64, ptr %a1.data.at
  br i1 %a1.ok, label %check2, label %no
check2:
  %a2.at = getelementptr inbounds ptr, ptr %args, i64 2
  %a2 = load ptr, ptr %a2.at
  %a2.type.at = getelementptr inbounds i8, ptr %a2, i64 8
  %a2.type = load i64, ptr %a2.type.at
  %a2.isarray = icmp eq i64 %a2.type, %array
  br i1 %a2.isarray, label %fields2, label %no
fields2:
  %a2.flags.at = getelementptr inbounds i8, ptr %a2, i64 64
  %a2.flags = load i32, ptr %a2.flags.at
  %a2.al = and i32 %a2.flags, 256
  %a2.ok = icmp ne i32 %a2.al, 0
  %a2.data.at = getelementptr inbounds i8, ptr %a2, i64 16
  %a2.data = load i64, ptr %a2.data.at
  br i1 %a2.ok, label %check3, label %no
check3:
  %a3.at = getelementptr inbounds ptr, ptr %args, i64 3
  %a3 = load ptr, ptr %a3.at
  %a3.type.at = getelementptr inbounds i8, ptr %a3, i64 8
  %a3.type = load i64, ptr %a3.type.at
  %a3.isarray = icmp eq i64 %a3.type, %array
  br i1 %a3.isarray, label %fields3, label %no
fields3:
  %a3.flags.at = getelementptr inbounds i8, ptr %a3, i64 64
  %a3.flags = load i32, ptr %a3.flags.at
  %a3.al = and i32 %a3.flags, 256
  %a3.ok = icmp ne i32 %a3.al, 0
  %a3.data.at = getelementptr inbounds i8, ptr %a3, i64 16
  %a3.data = load i64, ptr %a3.data.at
  br i1 %a3.ok, label %run, label %no
run:
  %d0.int = call i64 @word(ptr %t, i64 5)
  %d0 = inttoptr i64 %d0.int to ptr
  %s0.0.w = call i64 @word(ptr %t, i64 6)
  %s0.0 = trunc i64 %s0.0.w to i32
  %s0.1.w = call i64 @word(ptr %t, i64 7)
  %s0.1 = trunc i64 %s0.1.w to i32
  %s0.2.w = call i64 @word(ptr %t, i64 8)
  %s0.2 = trunc i64 %s0.2.w to i32
  %s0.3.w = call i64 @word(ptr %t, i64 9)
  %s0.3 = add i64 %s0.3.w, 0
  %s0.4.w = call i64 @word(ptr %t, i64 10)
  %s0.4 = add i64 %s0.4.w, 0
  %s0.5.w = call i64 @word(ptr %t, i64 11)
  %s0.5 = add i64 %s0.5.w, 0
  %s0.6.w = call i64 @word(ptr %t, i64 12)
  %s0.6 = bitcast i64 %s0.6.w to double
  %s0.7.w = call i64 @word(ptr %t, i64 13)
  %s0.7 = add i64 %a0.data, %s0.7.w
  %s0.8.w = call i64 @word(ptr %t, i64 14)
  %s0.8 = add i64 %s0.8.w, 0
  %s0.9.w = call i64 @word(ptr %t, i64 15)
  %s0.9 = add i64 %a1.data, %s0.9.w
  %s0.10.w = call i64 @word(ptr %t, i64 16)
  %s0.10 = add i64 %s0.10.w, 0
  %s0.11.w = call i64 @word(ptr %t, i64 17)
  %s0.11 = bitcast i64 %s0.11.w to double
  %s0.12.w = call i64 @word(ptr %t, i64 18)
  %s0.12 = add i64 %a3.data, %s0.12.w
  %s0.13.w = call i64 @word(ptr %t, i64 19)
  %s0.13 = add i64 %s0.13.w, 0
  call void %d0(i32 %s0.0, i32 %s0.1, i32 %s0.2, i64 %s0.3, i64 %s0.4, i64 %s0.5, double %s0.6, i64 %s0.7, i64 %s0.8, i64 %s0.9, i64 %s0.10, double %s0.11, i64 %s0.12, i64 %s0.13)
  %d1.int = call i64 @word(ptr %t, i64 20)
  %d1 = inttoptr i64 %d1.int to ptr
  %s1.0.w = call i64 @word(ptr %t, i64 21)
  %s1.0 = add i64 %s1.0.w, 0
  %s1.1.w = call i64 @word(ptr %t, i64 22)
  %s1.1 = add i64 %s1.1.w, 0
  %s1.2.w = call i64 @word(ptr %t, i64 23)
  %s1.2 = add i64 %a3.data, %s1.2.w
  %s1.3.w = call i64 @word(ptr %t, i64 24)
  %s1.3 = add i64 %a2.data, %s1.3.w
  %s1.4.w = call i64 @word(ptr %t, i64 25)
  %s1.4 = bitcast i64 %s1.4.w to double
  %s1.5.w = call i64 @word(ptr %t, i64 26)
  %s1.5 = add i64 %a3.data, %s1.5.w
  call void %d1(i64 %s1.0, i64 %s1.1, i64 %s1.2, i64 %s1.3, double %s1.4, i64 %s1.5)
  %none = call i64 @word(ptr %t, i64 1)
  br label %out
no:
  %ni = call i64 @word(ptr %t, i64 2)
  br label %out
out:
  %r.int = phi i64 [%none, %run], [%ni, %no]
  %r = inttoptr i64 %r.int to ptr
  %incref.int = call i64 @word(ptr %t, i64 0)
  %incref = inttoptr i64 %incref.int to ptr
  call void %incref(ptr %r)
  ret ptr %r
}

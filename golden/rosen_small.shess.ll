; s2sad's unrolled program (codegen/llvm_small.py): s2sad_small_19d8f641a25fa1fafb631c4b(p0, out) -> None, or NotImplemented
;   params: p0 float64(5,); out float64 (25,)
define ptr @s2sad_small_19d8f641a25fa1fafb631c4b(ptr %table.obj, ptr %args, i64 %nargs) {
entry:
  ; the table (llvm_entry.SLOTS): the types and objects compared with, Py_IncRef
  %table.at = getelementptr inbounds i8, ptr %table.obj, i64 16
  %table = load ptr, ptr %table.at
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
  %incref.at = getelementptr inbounds ptr, ptr %table, i64 9
  %incref = load ptr, ptr %incref.at
  %nargs.ok = icmp eq i64 %nargs, 2
  br i1 %nargs.ok, label %check.p0, label %decline
check.p0:
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
  %p0.nd.ok = icmp eq i32 %p0.nd, 1
  %p0.ok0 = and i1 %p0.dtype.ok, %p0.carray.ok
  %p0.ok1 = and i1 %p0.ok0, %p0.nd.ok
  br i1 %p0.ok1, label %p0.shape, label %decline
p0.shape:
  %p0.d0.at = getelementptr inbounds i64, ptr %p0.dims, i64 0
  %p0.d0 = load i64, ptr %p0.d0.at
  %p0.d0.ok = icmp eq i64 %p0.d0, 5
  %p0.s0 = and i1 true, %p0.d0.ok
  br i1 %p0.s0, label %check.p1, label %decline
check.p1:
  %out.at = getelementptr inbounds ptr, ptr %args, i64 1
  %out = load ptr, ptr %out.at
  %out.type.at = getelementptr inbounds i8, ptr %out, i64 8
  %out.type = load ptr, ptr %out.type.at
  %out.isarray = icmp eq ptr %out.type, %array_type
  br i1 %out.isarray, label %out.fields, label %decline
out.fields:
  %out.descr.at = getelementptr inbounds i8, ptr %out, i64 56
  %out.descr = load ptr, ptr %out.descr.at
  %out.flags.at = getelementptr inbounds i8, ptr %out, i64 64
  %out.flags = load i32, ptr %out.flags.at
  %out.nd.at = getelementptr inbounds i8, ptr %out, i64 24
  %out.nd = load i32, ptr %out.nd.at
  %out.dims.at = getelementptr inbounds i8, ptr %out, i64 32
  %out.dims = load ptr, ptr %out.dims.at
  %out.data.at = getelementptr inbounds i8, ptr %out, i64 16
  %out.data = load ptr, ptr %out.data.at
  %out.dtype.ok = icmp eq ptr %out.descr, %descr
  %out.carray = and i32 %out.flags, 257
  %out.carray.ok = icmp eq i32 %out.carray, 257
  %out.nd.ok = icmp eq i32 %out.nd, 1
  %out.ok0 = and i1 %out.dtype.ok, %out.carray.ok
  %out.ok1 = and i1 %out.ok0, %out.nd.ok
  br i1 %out.ok1, label %out.shape, label %decline
out.shape:
  %out.d0.at = getelementptr inbounds i64, ptr %out.dims, i64 0
  %out.d0 = load i64, ptr %out.d0.at
  %out.d0.ok = icmp eq i64 %out.d0, 25
  %out.s0 = and i1 true, %out.d0.ok
  br i1 %out.s0, label %run, label %decline
run:
  %v0.at = getelementptr inbounds double, ptr %p0.data, i64 0
  %v0 = load double, ptr %v0.at
  %v1.at = getelementptr inbounds double, ptr %p0.data, i64 1
  %v1 = load double, ptr %v1.at
  %v2.at = getelementptr inbounds double, ptr %p0.data, i64 2
  %v2 = load double, ptr %v2.at
  %v3.at = getelementptr inbounds double, ptr %p0.data, i64 3
  %v3 = load double, ptr %v3.at
  %v4.at = getelementptr inbounds double, ptr %p0.data, i64 4
  %v4 = load double, ptr %v4.at
  %v7 = fmul double %v0, %v0
  %v8 = fsub double %v1, %v7
  %v15 = fmul double %v1, %v1
  %v16 = fsub double %v2, %v15
  %v22 = fmul double %v2, %v2
  %v23 = fsub double %v3, %v22
  %v29 = fmul double %v3, %v3
  %v30 = fsub double %v4, %v29
  %v39 = fmul double 0x4000000000000000, %v0
  %v41 = fneg double %v39
  %v43 = fmul double 0x4000000000000000, %v8
  %v45 = fmul double %v43, 0xC000000000000000
  %v46 = fmul double 0x4000000000000000, %v41
  %v47 = fmul double %v41, %v41
  %v48 = fmul double 0x4000000000000000, %v47
  %v49 = fadd double %v45, %v48
  %v52 = fmul double 0x4059000000000000, %v49
  %v54 = fmul double 0x4059000000000000, %v46
  %v58 = fadd double %v52, 0x4000000000000000
  %v59 = fmul double 0x4000000000000000, %v1
  %v60 = fneg double %v59
  %v61 = fmul double 0x4000000000000000, %v16
  %v63 = fmul double %v61, 0xC000000000000000
  %v64 = fmul double 0x4000000000000000, %v60
  %v65 = fmul double %v60, %v60
  %v66 = fmul double 0x4000000000000000, %v65
  %v67 = fadd double %v63, %v66
  %v70 = fmul double 0x4059000000000000, %v67
  %v71 = fmul double 0x4059000000000000, %v64
  %v75 = fadd double %v70, 0x4000000000000000
  %v76 = fmul double 0x4000000000000000, %v2
  %v77 = fneg double %v76
  %v78 = fmul double 0x4000000000000000, %v23
  %v80 = fmul double %v78, 0xC000000000000000
  %v81 = fmul double 0x4000000000000000, %v77
  %v82 = fmul double %v77, %v77
  %v83 = fmul double 0x4000000000000000, %v82
  %v84 = fadd double %v80, %v83
  %v87 = fmul double 0x4059000000000000, %v84
  %v88 = fmul double 0x4059000000000000, %v81
  %v92 = fadd double %v87, 0x4000000000000000
  %v93 = fmul double 0x4000000000000000, %v3
  %v94 = fneg double %v93
  %v95 = fmul double 0x4000000000000000, %v30
  %v97 = fmul double %v95, 0xC000000000000000
  %v98 = fmul double 0x4000000000000000, %v94
  %v99 = fmul double %v94, %v94
  %v100 = fmul double 0x4000000000000000, %v99
  %v101 = fadd double %v97, %v100
  %v104 = fmul double 0x4059000000000000, %v101
  %v105 = fmul double 0x4059000000000000, %v98
  %v109 = fadd double %v104, 0x4000000000000000
  %v111 = fadd double 0x4069000000000000, %v75
  %v113 = fadd double 0x4069000000000000, %v92
  %v115 = fadd double 0x4069000000000000, %v109
  %fin.d0 = fsub double %v0, %v0
  %fin.d1 = fsub double %v1, %v1
  %fin.d2 = fsub double %v2, %v2
  %fin.d3 = fsub double %v3, %v3
  %fin.d4 = fsub double %v4, %v4
  %fin.d5 = fsub double %v7, %v7
  %fin.d6 = fsub double %v8, %v8
  %fin.d7 = fsub double %v15, %v15
  %fin.d8 = fsub double %v16, %v16
  %fin.d9 = fsub double %v22, %v22
  %fin.d10 = fsub double %v23, %v23
  %fin.d11 = fsub double %v29, %v29
  %fin.d12 = fsub double %v30, %v30
  %fin.d13 = fsub double %v39, %v39
  %fin.d14 = fsub double %v41, %v41
  %fin.d15 = fsub double %v43, %v43
  %fin.d16 = fsub double %v45, %v45
  %fin.d17 = fsub double %v46, %v46
  %fin.d18 = fsub double %v47, %v47
  %fin.d19 = fsub double %v48, %v48
  %fin.d20 = fsub double %v49, %v49
  %fin.d21 = fsub double %v52, %v52
  %fin.d22 = fsub double %v54, %v54
  %fin.d23 = fsub double %v58, %v58
  %fin.d24 = fsub double %v59, %v59
  %fin.d25 = fsub double %v60, %v60
  %fin.d26 = fsub double %v61, %v61
  %fin.d27 = fsub double %v63, %v63
  %fin.d28 = fsub double %v64, %v64
  %fin.d29 = fsub double %v65, %v65
  %fin.d30 = fsub double %v66, %v66
  %fin.d31 = fsub double %v67, %v67
  %fin.d32 = fsub double %v70, %v70
  %fin.d33 = fsub double %v71, %v71
  %fin.d34 = fsub double %v75, %v75
  %fin.d35 = fsub double %v76, %v76
  %fin.d36 = fsub double %v77, %v77
  %fin.d37 = fsub double %v78, %v78
  %fin.d38 = fsub double %v80, %v80
  %fin.d39 = fsub double %v81, %v81
  %fin.d40 = fsub double %v82, %v82
  %fin.d41 = fsub double %v83, %v83
  %fin.d42 = fsub double %v84, %v84
  %fin.d43 = fsub double %v87, %v87
  %fin.d44 = fsub double %v88, %v88
  %fin.d45 = fsub double %v92, %v92
  %fin.d46 = fsub double %v93, %v93
  %fin.d47 = fsub double %v94, %v94
  %fin.d48 = fsub double %v95, %v95
  %fin.d49 = fsub double %v97, %v97
  %fin.d50 = fsub double %v98, %v98
  %fin.d51 = fsub double %v99, %v99
  %fin.d52 = fsub double %v100, %v100
  %fin.d53 = fsub double %v101, %v101
  %fin.d54 = fsub double %v104, %v104
  %fin.d55 = fsub double %v105, %v105
  %fin.d56 = fsub double %v109, %v109
  %fin.d57 = fsub double %v111, %v111
  %fin.d58 = fsub double %v113, %v113
  %fin.d59 = fsub double %v115, %v115
  %fin.d60 = fsub double 0x4069000000000000, 0x4069000000000000
  %fin.l0.0 = fadd double %fin.d0, %fin.d1
  %fin.l0.2 = fadd double %fin.d2, %fin.d3
  %fin.l0.4 = fadd double %fin.d4, %fin.d5
  %fin.l0.6 = fadd double %fin.d6, %fin.d7
  %fin.l0.8 = fadd double %fin.d8, %fin.d9
  %fin.l0.10 = fadd double %fin.d10, %fin.d11
  %fin.l0.12 = fadd double %fin.d12, %fin.d13
  %fin.l0.14 = fadd double %fin.d14, %fin.d15
  %fin.l0.16 = fadd double %fin.d16, %fin.d17
  %fin.l0.18 = fadd double %fin.d18, %fin.d19
  %fin.l0.20 = fadd double %fin.d20, %fin.d21
  %fin.l0.22 = fadd double %fin.d22, %fin.d23
  %fin.l0.24 = fadd double %fin.d24, %fin.d25
  %fin.l0.26 = fadd double %fin.d26, %fin.d27
  %fin.l0.28 = fadd double %fin.d28, %fin.d29
  %fin.l0.30 = fadd double %fin.d30, %fin.d31
  %fin.l0.32 = fadd double %fin.d32, %fin.d33
  %fin.l0.34 = fadd double %fin.d34, %fin.d35
  %fin.l0.36 = fadd double %fin.d36, %fin.d37
  %fin.l0.38 = fadd double %fin.d38, %fin.d39
  %fin.l0.40 = fadd double %fin.d40, %fin.d41
  %fin.l0.42 = fadd double %fin.d42, %fin.d43
  %fin.l0.44 = fadd double %fin.d44, %fin.d45
  %fin.l0.46 = fadd double %fin.d46, %fin.d47
  %fin.l0.48 = fadd double %fin.d48, %fin.d49
  %fin.l0.50 = fadd double %fin.d50, %fin.d51
  %fin.l0.52 = fadd double %fin.d52, %fin.d53
  %fin.l0.54 = fadd double %fin.d54, %fin.d55
  %fin.l0.56 = fadd double %fin.d56, %fin.d57
  %fin.l0.58 = fadd double %fin.d58, %fin.d59
  %fin.l1.0 = fadd double %fin.l0.0, %fin.l0.2
  %fin.l1.2 = fadd double %fin.l0.4, %fin.l0.6
  %fin.l1.4 = fadd double %fin.l0.8, %fin.l0.10
  %fin.l1.6 = fadd double %fin.l0.12, %fin.l0.14
  %fin.l1.8 = fadd double %fin.l0.16, %fin.l0.18
  %fin.l1.10 = fadd double %fin.l0.20, %fin.l0.22
  %fin.l1.12 = fadd double %fin.l0.24, %fin.l0.26
  %fin.l1.14 = fadd double %fin.l0.28, %fin.l0.30
  %fin.l1.16 = fadd double %fin.l0.32, %fin.l0.34
  %fin.l1.18 = fadd double %fin.l0.36, %fin.l0.38
  %fin.l1.20 = fadd double %fin.l0.40, %fin.l0.42
  %fin.l1.22 = fadd double %fin.l0.44, %fin.l0.46
  %fin.l1.24 = fadd double %fin.l0.48, %fin.l0.50
  %fin.l1.26 = fadd double %fin.l0.52, %fin.l0.54
  %fin.l1.28 = fadd double %fin.l0.56, %fin.l0.58
  %fin.l2.0 = fadd double %fin.l1.0, %fin.l1.2
  %fin.l2.2 = fadd double %fin.l1.4, %fin.l1.6
  %fin.l2.4 = fadd double %fin.l1.8, %fin.l1.10
  %fin.l2.6 = fadd double %fin.l1.12, %fin.l1.14
  %fin.l2.8 = fadd double %fin.l1.16, %fin.l1.18
  %fin.l2.10 = fadd double %fin.l1.20, %fin.l1.22
  %fin.l2.12 = fadd double %fin.l1.24, %fin.l1.26
  %fin.l2.14 = fadd double %fin.l1.28, %fin.d60
  %fin.l3.0 = fadd double %fin.l2.0, %fin.l2.2
  %fin.l3.2 = fadd double %fin.l2.4, %fin.l2.6
  %fin.l3.4 = fadd double %fin.l2.8, %fin.l2.10
  %fin.l3.6 = fadd double %fin.l2.12, %fin.l2.14
  %fin.l4.0 = fadd double %fin.l3.0, %fin.l3.2
  %fin.l4.2 = fadd double %fin.l3.4, %fin.l3.6
  %fin.l5.0 = fadd double %fin.l4.0, %fin.l4.2
  %fin = fcmp ord double %fin.l5.0, 0.0
  br i1 %fin, label %store, label %decline
store:
  call void @llvm.memset.p0.i64(ptr %out.data, i8 0, i64 200, i1 false)
  %o0 = getelementptr inbounds double, ptr %out.data, i64 0
  store double %v58, ptr %o0
  %o1 = getelementptr inbounds double, ptr %out.data, i64 1
  store double %v54, ptr %o1
  %o5 = getelementptr inbounds double, ptr %out.data, i64 5
  store double %v54, ptr %o5
  %o6 = getelementptr inbounds double, ptr %out.data, i64 6
  store double %v111, ptr %o6
  %o7 = getelementptr inbounds double, ptr %out.data, i64 7
  store double %v71, ptr %o7
  %o11 = getelementptr inbounds double, ptr %out.data, i64 11
  store double %v71, ptr %o11
  %o12 = getelementptr inbounds double, ptr %out.data, i64 12
  store double %v113, ptr %o12
  %o13 = getelementptr inbounds double, ptr %out.data, i64 13
  store double %v88, ptr %o13
  %o17 = getelementptr inbounds double, ptr %out.data, i64 17
  store double %v88, ptr %o17
  %o18 = getelementptr inbounds double, ptr %out.data, i64 18
  store double %v115, ptr %o18
  %o19 = getelementptr inbounds double, ptr %out.data, i64 19
  store double %v105, ptr %o19
  %o23 = getelementptr inbounds double, ptr %out.data, i64 23
  store double %v105, ptr %o23
  %o24 = getelementptr inbounds double, ptr %out.data, i64 24
  store double 0x4069000000000000, ptr %o24
  call void %incref(ptr %none)
  ret ptr %none
decline:
  call void %incref(ptr %not_implemented)
  ret ptr %not_implemented
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

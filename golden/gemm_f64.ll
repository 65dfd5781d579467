declare void @llvm.prefetch.p0(ptr, i32, i32, i32)

declare <8 x double> @llvm.fmuladd.v8f64(<8 x double>, <8 x double>, <8 x double>)

declare <8 x double> @llvm.masked.load.v8f64.p0(ptr, i32, <8 x i1>, <8 x double>)

declare void @llvm.masked.store.v8f64.p0(<8 x double>, ptr, i32, <8 x i1>)

define internal void @tile_8_2(ptr noalias %A, i64 %sap, i64 %saq, ptr noalias %B, i64 %sbq, ptr noalias %C, i64 %scp, i64 %qn, i1 %init, <8 x i1> %mask, ptr noalias %bias, i1 %addb) {
entry:
  %co0 = mul i64 %scp, 0
  %cr0 = getelementptr double, ptr %C, i64 %co0
  %cp0_0 = getelementptr double, ptr %cr0, i64 0
  %cp0_1 = getelementptr double, ptr %cr0, i64 8
  %co1 = mul i64 %scp, 1
  %cr1 = getelementptr double, ptr %C, i64 %co1
  %cp1_0 = getelementptr double, ptr %cr1, i64 0
  %cp1_1 = getelementptr double, ptr %cr1, i64 8
  %co2 = mul i64 %scp, 2
  %cr2 = getelementptr double, ptr %C, i64 %co2
  %cp2_0 = getelementptr double, ptr %cr2, i64 0
  %cp2_1 = getelementptr double, ptr %cr2, i64 8
  %co3 = mul i64 %scp, 3
  %cr3 = getelementptr double, ptr %C, i64 %co3
  %cp3_0 = getelementptr double, ptr %cr3, i64 0
  %cp3_1 = getelementptr double, ptr %cr3, i64 8
  %co4 = mul i64 %scp, 4
  %cr4 = getelementptr double, ptr %C, i64 %co4
  %cp4_0 = getelementptr double, ptr %cr4, i64 0
  %cp4_1 = getelementptr double, ptr %cr4, i64 8
  %co5 = mul i64 %scp, 5
  %cr5 = getelementptr double, ptr %C, i64 %co5
  %cp5_0 = getelementptr double, ptr %cr5, i64 0
  %cp5_1 = getelementptr double, ptr %cr5, i64 8
  %co6 = mul i64 %scp, 6
  %cr6 = getelementptr double, ptr %C, i64 %co6
  %cp6_0 = getelementptr double, ptr %cr6, i64 0
  %cp6_1 = getelementptr double, ptr %cr6, i64 8
  %co7 = mul i64 %scp, 7
  %cr7 = getelementptr double, ptr %C, i64 %co7
  %cp7_0 = getelementptr double, ptr %cr7, i64 0
  %cp7_1 = getelementptr double, ptr %cr7, i64 8
  br i1 %init, label %head, label %from_c
from_c:
  %c0_0 = load <8 x double>, ptr %cp0_0, align 8
  %c0_1 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp0_1, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c1_0 = load <8 x double>, ptr %cp1_0, align 8
  %c1_1 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp1_1, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c2_0 = load <8 x double>, ptr %cp2_0, align 8
  %c2_1 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp2_1, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c3_0 = load <8 x double>, ptr %cp3_0, align 8
  %c3_1 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp3_1, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c4_0 = load <8 x double>, ptr %cp4_0, align 8
  %c4_1 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp4_1, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c5_0 = load <8 x double>, ptr %cp5_0, align 8
  %c5_1 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp5_1, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c6_0 = load <8 x double>, ptr %cp6_0, align 8
  %c6_1 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp6_1, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c7_0 = load <8 x double>, ptr %cp7_0, align 8
  %c7_1 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp7_1, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  br label %head
head:
  %s0_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_0, %from_c ]
  %s0_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_1, %from_c ]
  %s1_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c1_0, %from_c ]
  %s1_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c1_1, %from_c ]
  %s2_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c2_0, %from_c ]
  %s2_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c2_1, %from_c ]
  %s3_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c3_0, %from_c ]
  %s3_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c3_1, %from_c ]
  %s4_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c4_0, %from_c ]
  %s4_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c4_1, %from_c ]
  %s5_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c5_0, %from_c ]
  %s5_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c5_1, %from_c ]
  %s6_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c6_0, %from_c ]
  %s6_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c6_1, %from_c ]
  %s7_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c7_0, %from_c ]
  %s7_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c7_1, %from_c ]
  br label %loop
loop:
  %q = phi i64 [ 0, %head ], [ %q.next, %loop ]
  %acc0_0 = phi <8 x double> [ %s0_0, %head ], [ %new0_0, %loop ]
  %acc0_1 = phi <8 x double> [ %s0_1, %head ], [ %new0_1, %loop ]
  %acc1_0 = phi <8 x double> [ %s1_0, %head ], [ %new1_0, %loop ]
  %acc1_1 = phi <8 x double> [ %s1_1, %head ], [ %new1_1, %loop ]
  %acc2_0 = phi <8 x double> [ %s2_0, %head ], [ %new2_0, %loop ]
  %acc2_1 = phi <8 x double> [ %s2_1, %head ], [ %new2_1, %loop ]
  %acc3_0 = phi <8 x double> [ %s3_0, %head ], [ %new3_0, %loop ]
  %acc3_1 = phi <8 x double> [ %s3_1, %head ], [ %new3_1, %loop ]
  %acc4_0 = phi <8 x double> [ %s4_0, %head ], [ %new4_0, %loop ]
  %acc4_1 = phi <8 x double> [ %s4_1, %head ], [ %new4_1, %loop ]
  %acc5_0 = phi <8 x double> [ %s5_0, %head ], [ %new5_0, %loop ]
  %acc5_1 = phi <8 x double> [ %s5_1, %head ], [ %new5_1, %loop ]
  %acc6_0 = phi <8 x double> [ %s6_0, %head ], [ %new6_0, %loop ]
  %acc6_1 = phi <8 x double> [ %s6_1, %head ], [ %new6_1, %loop ]
  %acc7_0 = phi <8 x double> [ %s7_0, %head ], [ %new7_0, %loop ]
  %acc7_1 = phi <8 x double> [ %s7_1, %head ], [ %new7_1, %loop ]
  %bo = mul i64 %q, %sbq
  %brow = getelementptr double, ptr %B, i64 %bo
  %bp0 = getelementptr double, ptr %brow, i64 0
  %b0 = load <8 x double>, ptr %bp0, align 8
  %bp1 = getelementptr double, ptr %brow, i64 8
  %b1 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %bp1, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %aq = mul i64 %q, %saq
  %ap.o0 = mul i64 %sap, 0
  %ao0 = add i64 %aq, %ap.o0
  %ap0 = getelementptr double, ptr %A, i64 %ao0
  %a0 = load double, ptr %ap0, align 8
  %a0.v = insertelement <8 x double> poison, double %a0, i32 0
  %a0.s = shufflevector <8 x double> %a0.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new0_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b0, <8 x double> %acc0_0)
  %new0_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b1, <8 x double> %acc0_1)
  %ap.o1 = mul i64 %sap, 1
  %ao1 = add i64 %aq, %ap.o1
  %ap1 = getelementptr double, ptr %A, i64 %ao1
  %a1 = load double, ptr %ap1, align 8
  %a1.v = insertelement <8 x double> poison, double %a1, i32 0
  %a1.s = shufflevector <8 x double> %a1.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new1_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a1.s, <8 x double> %b0, <8 x double> %acc1_0)
  %new1_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a1.s, <8 x double> %b1, <8 x double> %acc1_1)
  %ap.o2 = mul i64 %sap, 2
  %ao2 = add i64 %aq, %ap.o2
  %ap2 = getelementptr double, ptr %A, i64 %ao2
  %a2 = load double, ptr %ap2, align 8
  %a2.v = insertelement <8 x double> poison, double %a2, i32 0
  %a2.s = shufflevector <8 x double> %a2.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new2_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a2.s, <8 x double> %b0, <8 x double> %acc2_0)
  %new2_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a2.s, <8 x double> %b1, <8 x double> %acc2_1)
  %ap.o3 = mul i64 %sap, 3
  %ao3 = add i64 %aq, %ap.o3
  %ap3 = getelementptr double, ptr %A, i64 %ao3
  %a3 = load double, ptr %ap3, align 8
  %a3.v = insertelement <8 x double> poison, double %a3, i32 0
  %a3.s = shufflevector <8 x double> %a3.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new3_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a3.s, <8 x double> %b0, <8 x double> %acc3_0)
  %new3_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a3.s, <8 x double> %b1, <8 x double> %acc3_1)
  %ap.o4 = mul i64 %sap, 4
  %ao4 = add i64 %aq, %ap.o4
  %ap4 = getelementptr double, ptr %A, i64 %ao4
  %a4 = load double, ptr %ap4, align 8
  %a4.v = insertelement <8 x double> poison, double %a4, i32 0
  %a4.s = shufflevector <8 x double> %a4.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new4_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a4.s, <8 x double> %b0, <8 x double> %acc4_0)
  %new4_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a4.s, <8 x double> %b1, <8 x double> %acc4_1)
  %ap.o5 = mul i64 %sap, 5
  %ao5 = add i64 %aq, %ap.o5
  %ap5 = getelementptr double, ptr %A, i64 %ao5
  %a5 = load double, ptr %ap5, align 8
  %a5.v = insertelement <8 x double> poison, double %a5, i32 0
  %a5.s = shufflevector <8 x double> %a5.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new5_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a5.s, <8 x double> %b0, <8 x double> %acc5_0)
  %new5_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a5.s, <8 x double> %b1, <8 x double> %acc5_1)
  %ap.o6 = mul i64 %sap, 6
  %ao6 = add i64 %aq, %ap.o6
  %ap6 = getelementptr double, ptr %A, i64 %ao6
  %a6 = load double, ptr %ap6, align 8
  %a6.v = insertelement <8 x double> poison, double %a6, i32 0
  %a6.s = shufflevector <8 x double> %a6.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new6_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a6.s, <8 x double> %b0, <8 x double> %acc6_0)
  %new6_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a6.s, <8 x double> %b1, <8 x double> %acc6_1)
  %ap.o7 = mul i64 %sap, 7
  %ao7 = add i64 %aq, %ap.o7
  %ap7 = getelementptr double, ptr %A, i64 %ao7
  %a7 = load double, ptr %ap7, align 8
  %a7.v = insertelement <8 x double> poison, double %a7, i32 0
  %a7.s = shufflevector <8 x double> %a7.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new7_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a7.s, <8 x double> %b0, <8 x double> %acc7_0)
  %new7_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a7.s, <8 x double> %b1, <8 x double> %acc7_1)
  %q.next = add i64 %q, 1
  %more = icmp slt i64 %q.next, %qn
  br i1 %more, label %loop, label %done
done:
  br i1 %addb, label %epilogue, label %store
epilogue:
  %biasp0 = getelementptr double, ptr %bias, i64 0
  %bv0 = load <8 x double>, ptr %biasp0, align 8
  %biasp1 = getelementptr double, ptr %bias, i64 8
  %bv1 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %biasp1, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %nb0_0 = fadd <8 x double> %new0_0, %bv0
  %nb0_1 = fadd <8 x double> %new0_1, %bv1
  %nb1_0 = fadd <8 x double> %new1_0, %bv0
  %nb1_1 = fadd <8 x double> %new1_1, %bv1
  %nb2_0 = fadd <8 x double> %new2_0, %bv0
  %nb2_1 = fadd <8 x double> %new2_1, %bv1
  %nb3_0 = fadd <8 x double> %new3_0, %bv0
  %nb3_1 = fadd <8 x double> %new3_1, %bv1
  %nb4_0 = fadd <8 x double> %new4_0, %bv0
  %nb4_1 = fadd <8 x double> %new4_1, %bv1
  %nb5_0 = fadd <8 x double> %new5_0, %bv0
  %nb5_1 = fadd <8 x double> %new5_1, %bv1
  %nb6_0 = fadd <8 x double> %new6_0, %bv0
  %nb6_1 = fadd <8 x double> %new6_1, %bv1
  %nb7_0 = fadd <8 x double> %new7_0, %bv0
  %nb7_1 = fadd <8 x double> %new7_1, %bv1
  br label %store
store:
  %out0_0 = phi <8 x double> [ %new0_0, %done ], [ %nb0_0, %epilogue ]
  %out0_1 = phi <8 x double> [ %new0_1, %done ], [ %nb0_1, %epilogue ]
  %out1_0 = phi <8 x double> [ %new1_0, %done ], [ %nb1_0, %epilogue ]
  %out1_1 = phi <8 x double> [ %new1_1, %done ], [ %nb1_1, %epilogue ]
  %out2_0 = phi <8 x double> [ %new2_0, %done ], [ %nb2_0, %epilogue ]
  %out2_1 = phi <8 x double> [ %new2_1, %done ], [ %nb2_1, %epilogue ]
  %out3_0 = phi <8 x double> [ %new3_0, %done ], [ %nb3_0, %epilogue ]
  %out3_1 = phi <8 x double> [ %new3_1, %done ], [ %nb3_1, %epilogue ]
  %out4_0 = phi <8 x double> [ %new4_0, %done ], [ %nb4_0, %epilogue ]
  %out4_1 = phi <8 x double> [ %new4_1, %done ], [ %nb4_1, %epilogue ]
  %out5_0 = phi <8 x double> [ %new5_0, %done ], [ %nb5_0, %epilogue ]
  %out5_1 = phi <8 x double> [ %new5_1, %done ], [ %nb5_1, %epilogue ]
  %out6_0 = phi <8 x double> [ %new6_0, %done ], [ %nb6_0, %epilogue ]
  %out6_1 = phi <8 x double> [ %new6_1, %done ], [ %nb6_1, %epilogue ]
  %out7_0 = phi <8 x double> [ %new7_0, %done ], [ %nb7_0, %epilogue ]
  %out7_1 = phi <8 x double> [ %new7_1, %done ], [ %nb7_1, %epilogue ]
  store <8 x double> %out0_0, ptr %cp0_0, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out0_1, ptr %cp0_1, i32 8, <8 x i1> %mask)
  store <8 x double> %out1_0, ptr %cp1_0, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out1_1, ptr %cp1_1, i32 8, <8 x i1> %mask)
  store <8 x double> %out2_0, ptr %cp2_0, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out2_1, ptr %cp2_1, i32 8, <8 x i1> %mask)
  store <8 x double> %out3_0, ptr %cp3_0, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out3_1, ptr %cp3_1, i32 8, <8 x i1> %mask)
  store <8 x double> %out4_0, ptr %cp4_0, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out4_1, ptr %cp4_1, i32 8, <8 x i1> %mask)
  store <8 x double> %out5_0, ptr %cp5_0, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out5_1, ptr %cp5_1, i32 8, <8 x i1> %mask)
  store <8 x double> %out6_0, ptr %cp6_0, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out6_1, ptr %cp6_1, i32 8, <8 x i1> %mask)
  store <8 x double> %out7_0, ptr %cp7_0, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out7_1, ptr %cp7_1, i32 8, <8 x i1> %mask)
  ret void
}

define internal void @tile_8_1(ptr noalias %A, i64 %sap, i64 %saq, ptr noalias %B, i64 %sbq, ptr noalias %C, i64 %scp, i64 %qn, i1 %init, <8 x i1> %mask, ptr noalias %bias, i1 %addb) {
entry:
  %co0 = mul i64 %scp, 0
  %cr0 = getelementptr double, ptr %C, i64 %co0
  %cp0_0 = getelementptr double, ptr %cr0, i64 0
  %co1 = mul i64 %scp, 1
  %cr1 = getelementptr double, ptr %C, i64 %co1
  %cp1_0 = getelementptr double, ptr %cr1, i64 0
  %co2 = mul i64 %scp, 2
  %cr2 = getelementptr double, ptr %C, i64 %co2
  %cp2_0 = getelementptr double, ptr %cr2, i64 0
  %co3 = mul i64 %scp, 3
  %cr3 = getelementptr double, ptr %C, i64 %co3
  %cp3_0 = getelementptr double, ptr %cr3, i64 0
  %co4 = mul i64 %scp, 4
  %cr4 = getelementptr double, ptr %C, i64 %co4
  %cp4_0 = getelementptr double, ptr %cr4, i64 0
  %co5 = mul i64 %scp, 5
  %cr5 = getelementptr double, ptr %C, i64 %co5
  %cp5_0 = getelementptr double, ptr %cr5, i64 0
  %co6 = mul i64 %scp, 6
  %cr6 = getelementptr double, ptr %C, i64 %co6
  %cp6_0 = getelementptr double, ptr %cr6, i64 0
  %co7 = mul i64 %scp, 7
  %cr7 = getelementptr double, ptr %C, i64 %co7
  %cp7_0 = getelementptr double, ptr %cr7, i64 0
  br i1 %init, label %head, label %from_c
from_c:
  %c0_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp0_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c1_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp1_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c2_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp2_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c3_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp3_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c4_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp4_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c5_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp5_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c6_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp6_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c7_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp7_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  br label %head
head:
  %s0_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_0, %from_c ]
  %s1_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c1_0, %from_c ]
  %s2_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c2_0, %from_c ]
  %s3_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c3_0, %from_c ]
  %s4_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c4_0, %from_c ]
  %s5_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c5_0, %from_c ]
  %s6_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c6_0, %from_c ]
  %s7_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c7_0, %from_c ]
  br label %loop
loop:
  %q = phi i64 [ 0, %head ], [ %q.next, %loop ]
  %acc0_0 = phi <8 x double> [ %s0_0, %head ], [ %new0_0, %loop ]
  %acc1_0 = phi <8 x double> [ %s1_0, %head ], [ %new1_0, %loop ]
  %acc2_0 = phi <8 x double> [ %s2_0, %head ], [ %new2_0, %loop ]
  %acc3_0 = phi <8 x double> [ %s3_0, %head ], [ %new3_0, %loop ]
  %acc4_0 = phi <8 x double> [ %s4_0, %head ], [ %new4_0, %loop ]
  %acc5_0 = phi <8 x double> [ %s5_0, %head ], [ %new5_0, %loop ]
  %acc6_0 = phi <8 x double> [ %s6_0, %head ], [ %new6_0, %loop ]
  %acc7_0 = phi <8 x double> [ %s7_0, %head ], [ %new7_0, %loop ]
  %bo = mul i64 %q, %sbq
  %brow = getelementptr double, ptr %B, i64 %bo
  %bp0 = getelementptr double, ptr %brow, i64 0
  %b0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %bp0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %aq = mul i64 %q, %saq
  %ap.o0 = mul i64 %sap, 0
  %ao0 = add i64 %aq, %ap.o0
  %ap0 = getelementptr double, ptr %A, i64 %ao0
  %a0 = load double, ptr %ap0, align 8
  %a0.v = insertelement <8 x double> poison, double %a0, i32 0
  %a0.s = shufflevector <8 x double> %a0.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new0_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b0, <8 x double> %acc0_0)
  %ap.o1 = mul i64 %sap, 1
  %ao1 = add i64 %aq, %ap.o1
  %ap1 = getelementptr double, ptr %A, i64 %ao1
  %a1 = load double, ptr %ap1, align 8
  %a1.v = insertelement <8 x double> poison, double %a1, i32 0
  %a1.s = shufflevector <8 x double> %a1.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new1_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a1.s, <8 x double> %b0, <8 x double> %acc1_0)
  %ap.o2 = mul i64 %sap, 2
  %ao2 = add i64 %aq, %ap.o2
  %ap2 = getelementptr double, ptr %A, i64 %ao2
  %a2 = load double, ptr %ap2, align 8
  %a2.v = insertelement <8 x double> poison, double %a2, i32 0
  %a2.s = shufflevector <8 x double> %a2.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new2_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a2.s, <8 x double> %b0, <8 x double> %acc2_0)
  %ap.o3 = mul i64 %sap, 3
  %ao3 = add i64 %aq, %ap.o3
  %ap3 = getelementptr double, ptr %A, i64 %ao3
  %a3 = load double, ptr %ap3, align 8
  %a3.v = insertelement <8 x double> poison, double %a3, i32 0
  %a3.s = shufflevector <8 x double> %a3.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new3_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a3.s, <8 x double> %b0, <8 x double> %acc3_0)
  %ap.o4 = mul i64 %sap, 4
  %ao4 = add i64 %aq, %ap.o4
  %ap4 = getelementptr double, ptr %A, i64 %ao4
  %a4 = load double, ptr %ap4, align 8
  %a4.v = insertelement <8 x double> poison, double %a4, i32 0
  %a4.s = shufflevector <8 x double> %a4.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new4_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a4.s, <8 x double> %b0, <8 x double> %acc4_0)
  %ap.o5 = mul i64 %sap, 5
  %ao5 = add i64 %aq, %ap.o5
  %ap5 = getelementptr double, ptr %A, i64 %ao5
  %a5 = load double, ptr %ap5, align 8
  %a5.v = insertelement <8 x double> poison, double %a5, i32 0
  %a5.s = shufflevector <8 x double> %a5.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new5_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a5.s, <8 x double> %b0, <8 x double> %acc5_0)
  %ap.o6 = mul i64 %sap, 6
  %ao6 = add i64 %aq, %ap.o6
  %ap6 = getelementptr double, ptr %A, i64 %ao6
  %a6 = load double, ptr %ap6, align 8
  %a6.v = insertelement <8 x double> poison, double %a6, i32 0
  %a6.s = shufflevector <8 x double> %a6.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new6_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a6.s, <8 x double> %b0, <8 x double> %acc6_0)
  %ap.o7 = mul i64 %sap, 7
  %ao7 = add i64 %aq, %ap.o7
  %ap7 = getelementptr double, ptr %A, i64 %ao7
  %a7 = load double, ptr %ap7, align 8
  %a7.v = insertelement <8 x double> poison, double %a7, i32 0
  %a7.s = shufflevector <8 x double> %a7.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new7_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a7.s, <8 x double> %b0, <8 x double> %acc7_0)
  %q.next = add i64 %q, 1
  %more = icmp slt i64 %q.next, %qn
  br i1 %more, label %loop, label %done
done:
  br i1 %addb, label %epilogue, label %store
epilogue:
  %biasp0 = getelementptr double, ptr %bias, i64 0
  %bv0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %biasp0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %nb0_0 = fadd <8 x double> %new0_0, %bv0
  %nb1_0 = fadd <8 x double> %new1_0, %bv0
  %nb2_0 = fadd <8 x double> %new2_0, %bv0
  %nb3_0 = fadd <8 x double> %new3_0, %bv0
  %nb4_0 = fadd <8 x double> %new4_0, %bv0
  %nb5_0 = fadd <8 x double> %new5_0, %bv0
  %nb6_0 = fadd <8 x double> %new6_0, %bv0
  %nb7_0 = fadd <8 x double> %new7_0, %bv0
  br label %store
store:
  %out0_0 = phi <8 x double> [ %new0_0, %done ], [ %nb0_0, %epilogue ]
  %out1_0 = phi <8 x double> [ %new1_0, %done ], [ %nb1_0, %epilogue ]
  %out2_0 = phi <8 x double> [ %new2_0, %done ], [ %nb2_0, %epilogue ]
  %out3_0 = phi <8 x double> [ %new3_0, %done ], [ %nb3_0, %epilogue ]
  %out4_0 = phi <8 x double> [ %new4_0, %done ], [ %nb4_0, %epilogue ]
  %out5_0 = phi <8 x double> [ %new5_0, %done ], [ %nb5_0, %epilogue ]
  %out6_0 = phi <8 x double> [ %new6_0, %done ], [ %nb6_0, %epilogue ]
  %out7_0 = phi <8 x double> [ %new7_0, %done ], [ %nb7_0, %epilogue ]
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out0_0, ptr %cp0_0, i32 8, <8 x i1> %mask)
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out1_0, ptr %cp1_0, i32 8, <8 x i1> %mask)
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out2_0, ptr %cp2_0, i32 8, <8 x i1> %mask)
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out3_0, ptr %cp3_0, i32 8, <8 x i1> %mask)
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out4_0, ptr %cp4_0, i32 8, <8 x i1> %mask)
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out5_0, ptr %cp5_0, i32 8, <8 x i1> %mask)
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out6_0, ptr %cp6_0, i32 8, <8 x i1> %mask)
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out7_0, ptr %cp7_0, i32 8, <8 x i1> %mask)
  ret void
}

define internal void @tile_4_4(ptr noalias %A, i64 %sap, i64 %saq, ptr noalias %B, i64 %sbq, ptr noalias %C, i64 %scp, i64 %qn, i1 %init, <8 x i1> %mask, ptr noalias %bias, i1 %addb) {
entry:
  %co0 = mul i64 %scp, 0
  %cr0 = getelementptr double, ptr %C, i64 %co0
  %cp0_0 = getelementptr double, ptr %cr0, i64 0
  %cp0_1 = getelementptr double, ptr %cr0, i64 8
  %cp0_2 = getelementptr double, ptr %cr0, i64 16
  %cp0_3 = getelementptr double, ptr %cr0, i64 24
  %co1 = mul i64 %scp, 1
  %cr1 = getelementptr double, ptr %C, i64 %co1
  %cp1_0 = getelementptr double, ptr %cr1, i64 0
  %cp1_1 = getelementptr double, ptr %cr1, i64 8
  %cp1_2 = getelementptr double, ptr %cr1, i64 16
  %cp1_3 = getelementptr double, ptr %cr1, i64 24
  %co2 = mul i64 %scp, 2
  %cr2 = getelementptr double, ptr %C, i64 %co2
  %cp2_0 = getelementptr double, ptr %cr2, i64 0
  %cp2_1 = getelementptr double, ptr %cr2, i64 8
  %cp2_2 = getelementptr double, ptr %cr2, i64 16
  %cp2_3 = getelementptr double, ptr %cr2, i64 24
  %co3 = mul i64 %scp, 3
  %cr3 = getelementptr double, ptr %C, i64 %co3
  %cp3_0 = getelementptr double, ptr %cr3, i64 0
  %cp3_1 = getelementptr double, ptr %cr3, i64 8
  %cp3_2 = getelementptr double, ptr %cr3, i64 16
  %cp3_3 = getelementptr double, ptr %cr3, i64 24
  br i1 %init, label %head, label %from_c
from_c:
  %c0_0 = load <8 x double>, ptr %cp0_0, align 8
  %c0_1 = load <8 x double>, ptr %cp0_1, align 8
  %c0_2 = load <8 x double>, ptr %cp0_2, align 8
  %c0_3 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp0_3, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c1_0 = load <8 x double>, ptr %cp1_0, align 8
  %c1_1 = load <8 x double>, ptr %cp1_1, align 8
  %c1_2 = load <8 x double>, ptr %cp1_2, align 8
  %c1_3 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp1_3, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c2_0 = load <8 x double>, ptr %cp2_0, align 8
  %c2_1 = load <8 x double>, ptr %cp2_1, align 8
  %c2_2 = load <8 x double>, ptr %cp2_2, align 8
  %c2_3 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp2_3, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c3_0 = load <8 x double>, ptr %cp3_0, align 8
  %c3_1 = load <8 x double>, ptr %cp3_1, align 8
  %c3_2 = load <8 x double>, ptr %cp3_2, align 8
  %c3_3 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp3_3, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  br label %head
head:
  %s0_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_0, %from_c ]
  %s0_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_1, %from_c ]
  %s0_2 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_2, %from_c ]
  %s0_3 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_3, %from_c ]
  %s1_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c1_0, %from_c ]
  %s1_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c1_1, %from_c ]
  %s1_2 = phi <8 x double> [ zeroinitializer, %entry ], [ %c1_2, %from_c ]
  %s1_3 = phi <8 x double> [ zeroinitializer, %entry ], [ %c1_3, %from_c ]
  %s2_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c2_0, %from_c ]
  %s2_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c2_1, %from_c ]
  %s2_2 = phi <8 x double> [ zeroinitializer, %entry ], [ %c2_2, %from_c ]
  %s2_3 = phi <8 x double> [ zeroinitializer, %entry ], [ %c2_3, %from_c ]
  %s3_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c3_0, %from_c ]
  %s3_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c3_1, %from_c ]
  %s3_2 = phi <8 x double> [ zeroinitializer, %entry ], [ %c3_2, %from_c ]
  %s3_3 = phi <8 x double> [ zeroinitializer, %entry ], [ %c3_3, %from_c ]
  br label %loop
loop:
  %q = phi i64 [ 0, %head ], [ %q.next, %loop ]
  %acc0_0 = phi <8 x double> [ %s0_0, %head ], [ %new0_0, %loop ]
  %acc0_1 = phi <8 x double> [ %s0_1, %head ], [ %new0_1, %loop ]
  %acc0_2 = phi <8 x double> [ %s0_2, %head ], [ %new0_2, %loop ]
  %acc0_3 = phi <8 x double> [ %s0_3, %head ], [ %new0_3, %loop ]
  %acc1_0 = phi <8 x double> [ %s1_0, %head ], [ %new1_0, %loop ]
  %acc1_1 = phi <8 x double> [ %s1_1, %head ], [ %new1_1, %loop ]
  %acc1_2 = phi <8 x double> [ %s1_2, %head ], [ %new1_2, %loop ]
  %acc1_3 = phi <8 x double> [ %s1_3, %head ], [ %new1_3, %loop ]
  %acc2_0 = phi <8 x double> [ %s2_0, %head ], [ %new2_0, %loop ]
  %acc2_1 = phi <8 x double> [ %s2_1, %head ], [ %new2_1, %loop ]
  %acc2_2 = phi <8 x double> [ %s2_2, %head ], [ %new2_2, %loop ]
  %acc2_3 = phi <8 x double> [ %s2_3, %head ], [ %new2_3, %loop ]
  %acc3_0 = phi <8 x double> [ %s3_0, %head ], [ %new3_0, %loop ]
  %acc3_1 = phi <8 x double> [ %s3_1, %head ], [ %new3_1, %loop ]
  %acc3_2 = phi <8 x double> [ %s3_2, %head ], [ %new3_2, %loop ]
  %acc3_3 = phi <8 x double> [ %s3_3, %head ], [ %new3_3, %loop ]
  %bo = mul i64 %q, %sbq
  %brow = getelementptr double, ptr %B, i64 %bo
  %bp0 = getelementptr double, ptr %brow, i64 0
  %b0 = load <8 x double>, ptr %bp0, align 8
  %bp1 = getelementptr double, ptr %brow, i64 8
  %b1 = load <8 x double>, ptr %bp1, align 8
  %bp2 = getelementptr double, ptr %brow, i64 16
  %b2 = load <8 x double>, ptr %bp2, align 8
  %bp3 = getelementptr double, ptr %brow, i64 24
  %b3 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %bp3, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %aq = mul i64 %q, %saq
  %ap.o0 = mul i64 %sap, 0
  %ao0 = add i64 %aq, %ap.o0
  %ap0 = getelementptr double, ptr %A, i64 %ao0
  %a0 = load double, ptr %ap0, align 8
  %a0.v = insertelement <8 x double> poison, double %a0, i32 0
  %a0.s = shufflevector <8 x double> %a0.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new0_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b0, <8 x double> %acc0_0)
  %new0_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b1, <8 x double> %acc0_1)
  %new0_2 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b2, <8 x double> %acc0_2)
  %new0_3 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b3, <8 x double> %acc0_3)
  %ap.o1 = mul i64 %sap, 1
  %ao1 = add i64 %aq, %ap.o1
  %ap1 = getelementptr double, ptr %A, i64 %ao1
  %a1 = load double, ptr %ap1, align 8
  %a1.v = insertelement <8 x double> poison, double %a1, i32 0
  %a1.s = shufflevector <8 x double> %a1.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new1_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a1.s, <8 x double> %b0, <8 x double> %acc1_0)
  %new1_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a1.s, <8 x double> %b1, <8 x double> %acc1_1)
  %new1_2 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a1.s, <8 x double> %b2, <8 x double> %acc1_2)
  %new1_3 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a1.s, <8 x double> %b3, <8 x double> %acc1_3)
  %ap.o2 = mul i64 %sap, 2
  %ao2 = add i64 %aq, %ap.o2
  %ap2 = getelementptr double, ptr %A, i64 %ao2
  %a2 = load double, ptr %ap2, align 8
  %a2.v = insertelement <8 x double> poison, double %a2, i32 0
  %a2.s = shufflevector <8 x double> %a2.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new2_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a2.s, <8 x double> %b0, <8 x double> %acc2_0)
  %new2_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a2.s, <8 x double> %b1, <8 x double> %acc2_1)
  %new2_2 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a2.s, <8 x double> %b2, <8 x double> %acc2_2)
  %new2_3 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a2.s, <8 x double> %b3, <8 x double> %acc2_3)
  %ap.o3 = mul i64 %sap, 3
  %ao3 = add i64 %aq, %ap.o3
  %ap3 = getelementptr double, ptr %A, i64 %ao3
  %a3 = load double, ptr %ap3, align 8
  %a3.v = insertelement <8 x double> poison, double %a3, i32 0
  %a3.s = shufflevector <8 x double> %a3.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new3_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a3.s, <8 x double> %b0, <8 x double> %acc3_0)
  %new3_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a3.s, <8 x double> %b1, <8 x double> %acc3_1)
  %new3_2 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a3.s, <8 x double> %b2, <8 x double> %acc3_2)
  %new3_3 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a3.s, <8 x double> %b3, <8 x double> %acc3_3)
  %q.next = add i64 %q, 1
  %more = icmp slt i64 %q.next, %qn
  br i1 %more, label %loop, label %done
done:
  br i1 %addb, label %epilogue, label %store
epilogue:
  %biasp0 = getelementptr double, ptr %bias, i64 0
  %bv0 = load <8 x double>, ptr %biasp0, align 8
  %biasp1 = getelementptr double, ptr %bias, i64 8
  %bv1 = load <8 x double>, ptr %biasp1, align 8
  %biasp2 = getelementptr double, ptr %bias, i64 16
  %bv2 = load <8 x double>, ptr %biasp2, align 8
  %biasp3 = getelementptr double, ptr %bias, i64 24
  %bv3 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %biasp3, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %nb0_0 = fadd <8 x double> %new0_0, %bv0
  %nb0_1 = fadd <8 x double> %new0_1, %bv1
  %nb0_2 = fadd <8 x double> %new0_2, %bv2
  %nb0_3 = fadd <8 x double> %new0_3, %bv3
  %nb1_0 = fadd <8 x double> %new1_0, %bv0
  %nb1_1 = fadd <8 x double> %new1_1, %bv1
  %nb1_2 = fadd <8 x double> %new1_2, %bv2
  %nb1_3 = fadd <8 x double> %new1_3, %bv3
  %nb2_0 = fadd <8 x double> %new2_0, %bv0
  %nb2_1 = fadd <8 x double> %new2_1, %bv1
  %nb2_2 = fadd <8 x double> %new2_2, %bv2
  %nb2_3 = fadd <8 x double> %new2_3, %bv3
  %nb3_0 = fadd <8 x double> %new3_0, %bv0
  %nb3_1 = fadd <8 x double> %new3_1, %bv1
  %nb3_2 = fadd <8 x double> %new3_2, %bv2
  %nb3_3 = fadd <8 x double> %new3_3, %bv3
  br label %store
store:
  %out0_0 = phi <8 x double> [ %new0_0, %done ], [ %nb0_0, %epilogue ]
  %out0_1 = phi <8 x double> [ %new0_1, %done ], [ %nb0_1, %epilogue ]
  %out0_2 = phi <8 x double> [ %new0_2, %done ], [ %nb0_2, %epilogue ]
  %out0_3 = phi <8 x double> [ %new0_3, %done ], [ %nb0_3, %epilogue ]
  %out1_0 = phi <8 x double> [ %new1_0, %done ], [ %nb1_0, %epilogue ]
  %out1_1 = phi <8 x double> [ %new1_1, %done ], [ %nb1_1, %epilogue ]
  %out1_2 = phi <8 x double> [ %new1_2, %done ], [ %nb1_2, %epilogue ]
  %out1_3 = phi <8 x double> [ %new1_3, %done ], [ %nb1_3, %epilogue ]
  %out2_0 = phi <8 x double> [ %new2_0, %done ], [ %nb2_0, %epilogue ]
  %out2_1 = phi <8 x double> [ %new2_1, %done ], [ %nb2_1, %epilogue ]
  %out2_2 = phi <8 x double> [ %new2_2, %done ], [ %nb2_2, %epilogue ]
  %out2_3 = phi <8 x double> [ %new2_3, %done ], [ %nb2_3, %epilogue ]
  %out3_0 = phi <8 x double> [ %new3_0, %done ], [ %nb3_0, %epilogue ]
  %out3_1 = phi <8 x double> [ %new3_1, %done ], [ %nb3_1, %epilogue ]
  %out3_2 = phi <8 x double> [ %new3_2, %done ], [ %nb3_2, %epilogue ]
  %out3_3 = phi <8 x double> [ %new3_3, %done ], [ %nb3_3, %epilogue ]
  store <8 x double> %out0_0, ptr %cp0_0, align 8
  store <8 x double> %out0_1, ptr %cp0_1, align 8
  store <8 x double> %out0_2, ptr %cp0_2, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out0_3, ptr %cp0_3, i32 8, <8 x i1> %mask)
  store <8 x double> %out1_0, ptr %cp1_0, align 8
  store <8 x double> %out1_1, ptr %cp1_1, align 8
  store <8 x double> %out1_2, ptr %cp1_2, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out1_3, ptr %cp1_3, i32 8, <8 x i1> %mask)
  store <8 x double> %out2_0, ptr %cp2_0, align 8
  store <8 x double> %out2_1, ptr %cp2_1, align 8
  store <8 x double> %out2_2, ptr %cp2_2, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out2_3, ptr %cp2_3, i32 8, <8 x i1> %mask)
  store <8 x double> %out3_0, ptr %cp3_0, align 8
  store <8 x double> %out3_1, ptr %cp3_1, align 8
  store <8 x double> %out3_2, ptr %cp3_2, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out3_3, ptr %cp3_3, i32 8, <8 x i1> %mask)
  ret void
}

define internal void @tile_4_1(ptr noalias %A, i64 %sap, i64 %saq, ptr noalias %B, i64 %sbq, ptr noalias %C, i64 %scp, i64 %qn, i1 %init, <8 x i1> %mask, ptr noalias %bias, i1 %addb) {
entry:
  %co0 = mul i64 %scp, 0
  %cr0 = getelementptr double, ptr %C, i64 %co0
  %cp0_0 = getelementptr double, ptr %cr0, i64 0
  %co1 = mul i64 %scp, 1
  %cr1 = getelementptr double, ptr %C, i64 %co1
  %cp1_0 = getelementptr double, ptr %cr1, i64 0
  %co2 = mul i64 %scp, 2
  %cr2 = getelementptr double, ptr %C, i64 %co2
  %cp2_0 = getelementptr double, ptr %cr2, i64 0
  %co3 = mul i64 %scp, 3
  %cr3 = getelementptr double, ptr %C, i64 %co3
  %cp3_0 = getelementptr double, ptr %cr3, i64 0
  br i1 %init, label %head, label %from_c
from_c:
  %c0_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp0_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c1_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp1_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c2_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp2_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %c3_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp3_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  br label %head
head:
  %s0_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_0, %from_c ]
  %s1_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c1_0, %from_c ]
  %s2_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c2_0, %from_c ]
  %s3_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c3_0, %from_c ]
  br label %loop
loop:
  %q = phi i64 [ 0, %head ], [ %q.next, %loop ]
  %acc0_0 = phi <8 x double> [ %s0_0, %head ], [ %new0_0, %loop ]
  %acc1_0 = phi <8 x double> [ %s1_0, %head ], [ %new1_0, %loop ]
  %acc2_0 = phi <8 x double> [ %s2_0, %head ], [ %new2_0, %loop ]
  %acc3_0 = phi <8 x double> [ %s3_0, %head ], [ %new3_0, %loop ]
  %bo = mul i64 %q, %sbq
  %brow = getelementptr double, ptr %B, i64 %bo
  %bp0 = getelementptr double, ptr %brow, i64 0
  %b0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %bp0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %aq = mul i64 %q, %saq
  %ap.o0 = mul i64 %sap, 0
  %ao0 = add i64 %aq, %ap.o0
  %ap0 = getelementptr double, ptr %A, i64 %ao0
  %a0 = load double, ptr %ap0, align 8
  %a0.v = insertelement <8 x double> poison, double %a0, i32 0
  %a0.s = shufflevector <8 x double> %a0.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new0_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b0, <8 x double> %acc0_0)
  %ap.o1 = mul i64 %sap, 1
  %ao1 = add i64 %aq, %ap.o1
  %ap1 = getelementptr double, ptr %A, i64 %ao1
  %a1 = load double, ptr %ap1, align 8
  %a1.v = insertelement <8 x double> poison, double %a1, i32 0
  %a1.s = shufflevector <8 x double> %a1.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new1_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a1.s, <8 x double> %b0, <8 x double> %acc1_0)
  %ap.o2 = mul i64 %sap, 2
  %ao2 = add i64 %aq, %ap.o2
  %ap2 = getelementptr double, ptr %A, i64 %ao2
  %a2 = load double, ptr %ap2, align 8
  %a2.v = insertelement <8 x double> poison, double %a2, i32 0
  %a2.s = shufflevector <8 x double> %a2.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new2_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a2.s, <8 x double> %b0, <8 x double> %acc2_0)
  %ap.o3 = mul i64 %sap, 3
  %ao3 = add i64 %aq, %ap.o3
  %ap3 = getelementptr double, ptr %A, i64 %ao3
  %a3 = load double, ptr %ap3, align 8
  %a3.v = insertelement <8 x double> poison, double %a3, i32 0
  %a3.s = shufflevector <8 x double> %a3.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new3_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a3.s, <8 x double> %b0, <8 x double> %acc3_0)
  %q.next = add i64 %q, 1
  %more = icmp slt i64 %q.next, %qn
  br i1 %more, label %loop, label %done
done:
  br i1 %addb, label %epilogue, label %store
epilogue:
  %biasp0 = getelementptr double, ptr %bias, i64 0
  %bv0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %biasp0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %nb0_0 = fadd <8 x double> %new0_0, %bv0
  %nb1_0 = fadd <8 x double> %new1_0, %bv0
  %nb2_0 = fadd <8 x double> %new2_0, %bv0
  %nb3_0 = fadd <8 x double> %new3_0, %bv0
  br label %store
store:
  %out0_0 = phi <8 x double> [ %new0_0, %done ], [ %nb0_0, %epilogue ]
  %out1_0 = phi <8 x double> [ %new1_0, %done ], [ %nb1_0, %epilogue ]
  %out2_0 = phi <8 x double> [ %new2_0, %done ], [ %nb2_0, %epilogue ]
  %out3_0 = phi <8 x double> [ %new3_0, %done ], [ %nb3_0, %epilogue ]
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out0_0, ptr %cp0_0, i32 8, <8 x i1> %mask)
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out1_0, ptr %cp1_0, i32 8, <8 x i1> %mask)
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out2_0, ptr %cp2_0, i32 8, <8 x i1> %mask)
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out3_0, ptr %cp3_0, i32 8, <8 x i1> %mask)
  ret void
}

define internal void @tile_1_4(ptr noalias %A, i64 %sap, i64 %saq, ptr noalias %B, i64 %sbq, ptr noalias %C, i64 %scp, i64 %qn, i1 %init, <8 x i1> %mask, ptr noalias %bias, i1 %addb) {
entry:
  %co0 = mul i64 %scp, 0
  %cr0 = getelementptr double, ptr %C, i64 %co0
  %cp0_0 = getelementptr double, ptr %cr0, i64 0
  %cp0_1 = getelementptr double, ptr %cr0, i64 8
  %cp0_2 = getelementptr double, ptr %cr0, i64 16
  %cp0_3 = getelementptr double, ptr %cr0, i64 24
  br i1 %init, label %head, label %from_c
from_c:
  %c0_0 = load <8 x double>, ptr %cp0_0, align 8
  %c0_1 = load <8 x double>, ptr %cp0_1, align 8
  %c0_2 = load <8 x double>, ptr %cp0_2, align 8
  %c0_3 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp0_3, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  br label %head
head:
  %s0_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_0, %from_c ]
  %s0_1 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_1, %from_c ]
  %s0_2 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_2, %from_c ]
  %s0_3 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_3, %from_c ]
  br label %loop
loop:
  %q = phi i64 [ 0, %head ], [ %q.next, %loop ]
  %acc0_0 = phi <8 x double> [ %s0_0, %head ], [ %new0_0, %loop ]
  %acc0_1 = phi <8 x double> [ %s0_1, %head ], [ %new0_1, %loop ]
  %acc0_2 = phi <8 x double> [ %s0_2, %head ], [ %new0_2, %loop ]
  %acc0_3 = phi <8 x double> [ %s0_3, %head ], [ %new0_3, %loop ]
  %bo = mul i64 %q, %sbq
  %brow = getelementptr double, ptr %B, i64 %bo
  %bp0 = getelementptr double, ptr %brow, i64 0
  %b0 = load <8 x double>, ptr %bp0, align 8
  %bp1 = getelementptr double, ptr %brow, i64 8
  %b1 = load <8 x double>, ptr %bp1, align 8
  %bp2 = getelementptr double, ptr %brow, i64 16
  %b2 = load <8 x double>, ptr %bp2, align 8
  %bp3 = getelementptr double, ptr %brow, i64 24
  %b3 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %bp3, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %aq = mul i64 %q, %saq
  %ap.o0 = mul i64 %sap, 0
  %ao0 = add i64 %aq, %ap.o0
  %ap0 = getelementptr double, ptr %A, i64 %ao0
  %a0 = load double, ptr %ap0, align 8
  %a0.v = insertelement <8 x double> poison, double %a0, i32 0
  %a0.s = shufflevector <8 x double> %a0.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new0_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b0, <8 x double> %acc0_0)
  %new0_1 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b1, <8 x double> %acc0_1)
  %new0_2 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b2, <8 x double> %acc0_2)
  %new0_3 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b3, <8 x double> %acc0_3)
  %q.next = add i64 %q, 1
  %more = icmp slt i64 %q.next, %qn
  br i1 %more, label %loop, label %done
done:
  br i1 %addb, label %epilogue, label %store
epilogue:
  %biasp0 = getelementptr double, ptr %bias, i64 0
  %bv0 = load <8 x double>, ptr %biasp0, align 8
  %biasp1 = getelementptr double, ptr %bias, i64 8
  %bv1 = load <8 x double>, ptr %biasp1, align 8
  %biasp2 = getelementptr double, ptr %bias, i64 16
  %bv2 = load <8 x double>, ptr %biasp2, align 8
  %biasp3 = getelementptr double, ptr %bias, i64 24
  %bv3 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %biasp3, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %nb0_0 = fadd <8 x double> %new0_0, %bv0
  %nb0_1 = fadd <8 x double> %new0_1, %bv1
  %nb0_2 = fadd <8 x double> %new0_2, %bv2
  %nb0_3 = fadd <8 x double> %new0_3, %bv3
  br label %store
store:
  %out0_0 = phi <8 x double> [ %new0_0, %done ], [ %nb0_0, %epilogue ]
  %out0_1 = phi <8 x double> [ %new0_1, %done ], [ %nb0_1, %epilogue ]
  %out0_2 = phi <8 x double> [ %new0_2, %done ], [ %nb0_2, %epilogue ]
  %out0_3 = phi <8 x double> [ %new0_3, %done ], [ %nb0_3, %epilogue ]
  store <8 x double> %out0_0, ptr %cp0_0, align 8
  store <8 x double> %out0_1, ptr %cp0_1, align 8
  store <8 x double> %out0_2, ptr %cp0_2, align 8
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out0_3, ptr %cp0_3, i32 8, <8 x i1> %mask)
  ret void
}

define internal void @tile_1_1(ptr noalias %A, i64 %sap, i64 %saq, ptr noalias %B, i64 %sbq, ptr noalias %C, i64 %scp, i64 %qn, i1 %init, <8 x i1> %mask, ptr noalias %bias, i1 %addb) {
entry:
  %co0 = mul i64 %scp, 0
  %cr0 = getelementptr double, ptr %C, i64 %co0
  %cp0_0 = getelementptr double, ptr %cr0, i64 0
  br i1 %init, label %head, label %from_c
from_c:
  %c0_0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %cp0_0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  br label %head
head:
  %s0_0 = phi <8 x double> [ zeroinitializer, %entry ], [ %c0_0, %from_c ]
  br label %loop
loop:
  %q = phi i64 [ 0, %head ], [ %q.next, %loop ]
  %acc0_0 = phi <8 x double> [ %s0_0, %head ], [ %new0_0, %loop ]
  %bo = mul i64 %q, %sbq
  %brow = getelementptr double, ptr %B, i64 %bo
  %bp0 = getelementptr double, ptr %brow, i64 0
  %b0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %bp0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %aq = mul i64 %q, %saq
  %ap.o0 = mul i64 %sap, 0
  %ao0 = add i64 %aq, %ap.o0
  %ap0 = getelementptr double, ptr %A, i64 %ao0
  %a0 = load double, ptr %ap0, align 8
  %a0.v = insertelement <8 x double> poison, double %a0, i32 0
  %a0.s = shufflevector <8 x double> %a0.v, <8 x double> poison, <8 x i32> zeroinitializer
  %new0_0 = call <8 x double> @llvm.fmuladd.v8f64(<8 x double> %a0.s, <8 x double> %b0, <8 x double> %acc0_0)
  %q.next = add i64 %q, 1
  %more = icmp slt i64 %q.next, %qn
  br i1 %more, label %loop, label %done
done:
  br i1 %addb, label %epilogue, label %store
epilogue:
  %biasp0 = getelementptr double, ptr %bias, i64 0
  %bv0 = call <8 x double> @llvm.masked.load.v8f64.p0(ptr %biasp0, i32 8, <8 x i1> %mask, <8 x double> zeroinitializer)
  %nb0_0 = fadd <8 x double> %new0_0, %bv0
  br label %store
store:
  %out0_0 = phi <8 x double> [ %new0_0, %done ], [ %nb0_0, %epilogue ]
  call void @llvm.masked.store.v8f64.p0(<8 x double> %out0_0, ptr %cp0_0, i32 8, <8 x i1> %mask)
  ret void
}

define internal void @rows_4(ptr %A, i64 %sap, i64 %saq, ptr %B, i64 %sbq, ptr %C, i64 %scp, i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb) {
entry:
  %wide_end = sub i64 %M, 31
  br label %wide
wide:
  %j = phi i64 [ 0, %entry ], [ %j.next, %wide.body ]
  %wide.more = icmp slt i64 %j, %wide_end
  br i1 %wide.more, label %wide.body, label %narrow
wide.body:
  %Bw = getelementptr double, ptr %B, i64 %j
  %Cw = getelementptr double, ptr %C, i64 %j
  %biasw = getelementptr double, ptr %bias, i64 %j
  call void @tile_4_4(ptr %A, i64 %sap, i64 %saq, ptr %Bw, i64 %sbq, ptr %Cw, i64 %scp, i64 %qn, i1 %init, <8 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true>, ptr %biasw, i1 %addb)
  %j.next = add i64 %j, 32
  br label %wide
narrow:
  %k = phi i64 [ %j, %wide ], [ %k.next, %narrow.body ]
  %narrow.more = icmp slt i64 %k, %M
  br i1 %narrow.more, label %narrow.body, label %done
narrow.body:
  %left = sub i64 %M, %k
  %Bn = getelementptr double, ptr %B, i64 %k
  %Cn = getelementptr double, ptr %C, i64 %k
  %biasn = getelementptr double, ptr %bias, i64 %k
  %mask.v = insertelement <8 x i64> poison, i64 %left, i32 0
  %mask.s = shufflevector <8 x i64> %mask.v, <8 x i64> poison, <8 x i32> zeroinitializer
  %mask = icmp slt <8 x i64> <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>, %mask.s
  call void @tile_4_1(ptr %A, i64 %sap, i64 %saq, ptr %Bn, i64 %sbq, ptr %Cn, i64 %scp, i64 %qn, i1 %init, <8 x i1> %mask, ptr %biasn, i1 %addb)
  %k.next = add i64 %k, 8
  br label %narrow
done:
  ret void
}

define internal void @rows_1(ptr %A, i64 %sap, i64 %saq, ptr %B, i64 %sbq, ptr %C, i64 %scp, i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb) {
entry:
  %wide_end = sub i64 %M, 31
  br label %wide
wide:
  %j = phi i64 [ 0, %entry ], [ %j.next, %wide.body ]
  %wide.more = icmp slt i64 %j, %wide_end
  br i1 %wide.more, label %wide.body, label %narrow
wide.body:
  %Bw = getelementptr double, ptr %B, i64 %j
  %Cw = getelementptr double, ptr %C, i64 %j
  %biasw = getelementptr double, ptr %bias, i64 %j
  call void @tile_1_4(ptr %A, i64 %sap, i64 %saq, ptr %Bw, i64 %sbq, ptr %Cw, i64 %scp, i64 %qn, i1 %init, <8 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true>, ptr %biasw, i1 %addb)
  %j.next = add i64 %j, 32
  br label %wide
narrow:
  %k = phi i64 [ %j, %wide ], [ %k.next, %narrow.body ]
  %narrow.more = icmp slt i64 %k, %M
  br i1 %narrow.more, label %narrow.body, label %done
narrow.body:
  %left = sub i64 %M, %k
  %Bn = getelementptr double, ptr %B, i64 %k
  %Cn = getelementptr double, ptr %C, i64 %k
  %biasn = getelementptr double, ptr %bias, i64 %k
  %mask.v = insertelement <8 x i64> poison, i64 %left, i32 0
  %mask.s = shufflevector <8 x i64> %mask.v, <8 x i64> poison, <8 x i32> zeroinitializer
  %mask = icmp slt <8 x i64> <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>, %mask.s
  call void @tile_1_1(ptr %A, i64 %sap, i64 %saq, ptr %Bn, i64 %sbq, ptr %Cn, i64 %scp, i64 %qn, i1 %init, <8 x i1> %mask, ptr %biasn, i1 %addb)
  %k.next = add i64 %k, 8
  br label %narrow
done:
  ret void
}

define internal void @rows_8(ptr %A, i64 %sap, i64 %saq, ptr %B, i64 %sbq, ptr %C, i64 %scp, i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb) {
entry:
  %wide_end = sub i64 %M, 15
  br label %wide
wide:
  %j = phi i64 [ 0, %entry ], [ %j.next, %wide.body ]
  %wide.more = icmp slt i64 %j, %wide_end
  br i1 %wide.more, label %wide.body, label %narrow
wide.body:
  %Bw = getelementptr double, ptr %B, i64 %j
  %Cw = getelementptr double, ptr %C, i64 %j
  %biasw = getelementptr double, ptr %bias, i64 %j
  call void @tile_8_2(ptr %A, i64 %sap, i64 %saq, ptr %Bw, i64 %sbq, ptr %Cw, i64 %scp, i64 %qn, i1 %init, <8 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true>, ptr %biasw, i1 %addb)
  %j.next = add i64 %j, 16
  br label %wide
narrow:
  %k = phi i64 [ %j, %wide ], [ %k.next, %one.body ], [ %k.next2, %pair.body ]
  %narrow.more = icmp slt i64 %k, %M
  br i1 %narrow.more, label %narrow.body, label %done
narrow.body:
  %left = sub i64 %M, %k
  %Bn = getelementptr double, ptr %B, i64 %k
  %Cn = getelementptr double, ptr %C, i64 %k
  %biasn = getelementptr double, ptr %bias, i64 %k
  %two = icmp sgt i64 %left, 8
  br i1 %two, label %pair.body, label %one.body
pair.body:
  %left2 = sub i64 %left, 8
  %mask2.v = insertelement <8 x i64> poison, i64 %left2, i32 0
  %mask2.s = shufflevector <8 x i64> %mask2.v, <8 x i64> poison, <8 x i32> zeroinitializer
  %mask2 = icmp slt <8 x i64> <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>, %mask2.s
  call void @tile_8_2(ptr %A, i64 %sap, i64 %saq, ptr %Bn, i64 %sbq, ptr %Cn, i64 %scp, i64 %qn, i1 %init, <8 x i1> %mask2, ptr %biasn, i1 %addb)
  %k.next2 = add i64 %k, 16
  br label %narrow
one.body:
  %mask.v = insertelement <8 x i64> poison, i64 %left, i32 0
  %mask.s = shufflevector <8 x i64> %mask.v, <8 x i64> poison, <8 x i32> zeroinitializer
  %mask = icmp slt <8 x i64> <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>, %mask.s
  call void @tile_8_1(ptr %A, i64 %sap, i64 %saq, ptr %Bn, i64 %sbq, ptr %Cn, i64 %scp, i64 %qn, i1 %init, <8 x i1> %mask, ptr %biasn, i1 %addb)
  %k.next = add i64 %k, 8
  br label %narrow
done:
  ret void
}

define void @s2sad_gemm_f64(ptr %A, i64 %sap, i64 %saq, ptr %B, i64 %sbq, ptr %C, i64 %scp, i64 %P, i64 %Q, i64 %M, i64 %accumulate, i64 %p_lo, i64 %p_hi) {
entry:
  %bias = getelementptr i8, ptr null, i64 0
  %from_zero = icmp eq i64 %accumulate, 0
  %pf.on = icmp eq i64 %saq, 1
  %qblk = select i1 %pf.on, i64 256, i64 64
  %narrow = icmp slt i64 %M, 32
  %wide_end = sub i64 %p_hi, 3
  %narrow_end = sub i64 %p_hi, 7
  br label %qblock
qblock:
  %q0 = phi i64 [ 0, %entry ], [ %q0.next, %single.done ]
  %q.more = icmp slt i64 %q0, %Q
  br i1 %q.more, label %qblock.body, label %exit
qblock.body:
  %q.left = sub i64 %Q, %q0
  %q.short = icmp slt i64 %q.left, %qblk
  %qn = select i1 %q.short, i64 %q.left, i64 %qblk
  %first = icmp eq i64 %q0, 0
  %init = and i1 %first, %from_zero
  %addb = and i1 false, %first
  %ao = mul i64 %q0, %saq
  %Aq = getelementptr double, ptr %A, i64 %ao
  %bo = mul i64 %q0, %sbq
  %Bq = getelementptr double, ptr %B, i64 %bo
  %pf.bytes = mul i64 %qn, 8
  %pf.end = add i64 %pf.bytes, 63
  %pf.lines = lshr i64 %pf.end, 6
  br i1 %narrow, label %narrow_tiles, label %tiles
tiles:
  %tiles.p = phi i64 [ %p_lo, %qblock.body ], [ %tiles.p.next, %tiles.run ]
  %tiles.more = icmp slt i64 %tiles.p, %wide_end
  br i1 %tiles.more, label %tiles.body, label %single
tiles.body:
  %tiles.ao = mul i64 %tiles.p, %sap
  %tiles.A = getelementptr double, ptr %Aq, i64 %tiles.ao
  br i1 %pf.on, label %tiles.pf.rows, label %tiles.run
tiles.pf.rows:
  %tiles.pf.r0 = add i64 %tiles.p, 32
  %tiles.pf.o0 = mul i64 %tiles.pf.r0, %sap
  %tiles.pf.a0 = getelementptr double, ptr %Aq, i64 %tiles.pf.o0
  %tiles.pf.r1 = add i64 %tiles.p, 33
  %tiles.pf.o1 = mul i64 %tiles.pf.r1, %sap
  %tiles.pf.a1 = getelementptr double, ptr %Aq, i64 %tiles.pf.o1
  %tiles.pf.r2 = add i64 %tiles.p, 34
  %tiles.pf.o2 = mul i64 %tiles.pf.r2, %sap
  %tiles.pf.a2 = getelementptr double, ptr %Aq, i64 %tiles.pf.o2
  %tiles.pf.r3 = add i64 %tiles.p, 35
  %tiles.pf.o3 = mul i64 %tiles.pf.r3, %sap
  %tiles.pf.a3 = getelementptr double, ptr %Aq, i64 %tiles.pf.o3
  br label %tiles.pf
tiles.pf:
  %tiles.pf.l = phi i64 [ 0, %tiles.pf.rows ], [ %tiles.pf.l.next, %tiles.pf ]
  %tiles.pf.b = shl i64 %tiles.pf.l, 6
  %tiles.pf.p0 = getelementptr i8, ptr %tiles.pf.a0, i64 %tiles.pf.b
  call void @llvm.prefetch.p0(ptr %tiles.pf.p0, i32 0, i32 3, i32 1)
  %tiles.pf.p1 = getelementptr i8, ptr %tiles.pf.a1, i64 %tiles.pf.b
  call void @llvm.prefetch.p0(ptr %tiles.pf.p1, i32 0, i32 3, i32 1)
  %tiles.pf.p2 = getelementptr i8, ptr %tiles.pf.a2, i64 %tiles.pf.b
  call void @llvm.prefetch.p0(ptr %tiles.pf.p2, i32 0, i32 3, i32 1)
  %tiles.pf.p3 = getelementptr i8, ptr %tiles.pf.a3, i64 %tiles.pf.b
  call void @llvm.prefetch.p0(ptr %tiles.pf.p3, i32 0, i32 3, i32 1)
  %tiles.pf.l.next = add i64 %tiles.pf.l, 1
  %tiles.pf.more = icmp slt i64 %tiles.pf.l.next, %pf.lines
  br i1 %tiles.pf.more, label %tiles.pf, label %tiles.run
tiles.run:
  %tiles.co = mul i64 %tiles.p, %scp
  %tiles.C = getelementptr double, ptr %C, i64 %tiles.co
  call void @rows_4(ptr %tiles.A, i64 %sap, i64 %saq, ptr %Bq, i64 %sbq, ptr %tiles.C, i64 %scp, i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb)
  %tiles.p.next = add i64 %tiles.p, 4
  br label %tiles
narrow_tiles:
  %narrow_tiles.p = phi i64 [ %p_lo, %qblock.body ], [ %narrow_tiles.p.next, %narrow_tiles.run ]
  %narrow_tiles.more = icmp slt i64 %narrow_tiles.p, %narrow_end
  br i1 %narrow_tiles.more, label %narrow_tiles.body, label %single
narrow_tiles.body:
  %narrow_tiles.ao = mul i64 %narrow_tiles.p, %sap
  %narrow_tiles.A = getelementptr double, ptr %Aq, i64 %narrow_tiles.ao
  br i1 %pf.on, label %narrow_tiles.pf.rows, label %narrow_tiles.run
narrow_tiles.pf.rows:
  %narrow_tiles.pf.r0 = add i64 %narrow_tiles.p, 32
  %narrow_tiles.pf.o0 = mul i64 %narrow_tiles.pf.r0, %sap
  %narrow_tiles.pf.a0 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o0
  %narrow_tiles.pf.r1 = add i64 %narrow_tiles.p, 33
  %narrow_tiles.pf.o1 = mul i64 %narrow_tiles.pf.r1, %sap
  %narrow_tiles.pf.a1 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o1
  %narrow_tiles.pf.r2 = add i64 %narrow_tiles.p, 34
  %narrow_tiles.pf.o2 = mul i64 %narrow_tiles.pf.r2, %sap
  %narrow_tiles.pf.a2 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o2
  %narrow_tiles.pf.r3 = add i64 %narrow_tiles.p, 35
  %narrow_tiles.pf.o3 = mul i64 %narrow_tiles.pf.r3, %sap
  %narrow_tiles.pf.a3 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o3
  %narrow_tiles.pf.r4 = add i64 %narrow_tiles.p, 36
  %narrow_tiles.pf.o4 = mul i64 %narrow_tiles.pf.r4, %sap
  %narrow_tiles.pf.a4 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o4
  %narrow_tiles.pf.r5 = add i64 %narrow_tiles.p, 37
  %narrow_tiles.pf.o5 = mul i64 %narrow_tiles.pf.r5, %sap
  %narrow_tiles.pf.a5 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o5
  %narrow_tiles.pf.r6 = add i64 %narrow_tiles.p, 38
  %narrow_tiles.pf.o6 = mul i64 %narrow_tiles.pf.r6, %sap
  %narrow_tiles.pf.a6 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o6
  %narrow_tiles.pf.r7 = add i64 %narrow_tiles.p, 39
  %narrow_tiles.pf.o7 = mul i64 %narrow_tiles.pf.r7, %sap
  %narrow_tiles.pf.a7 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o7
  br label %narrow_tiles.pf
narrow_tiles.pf:
  %narrow_tiles.pf.l = phi i64 [ 0, %narrow_tiles.pf.rows ], [ %narrow_tiles.pf.l.next, %narrow_tiles.pf ]
  %narrow_tiles.pf.b = shl i64 %narrow_tiles.pf.l, 6
  %narrow_tiles.pf.p0 = getelementptr i8, ptr %narrow_tiles.pf.a0, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p0, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p1 = getelementptr i8, ptr %narrow_tiles.pf.a1, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p1, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p2 = getelementptr i8, ptr %narrow_tiles.pf.a2, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p2, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p3 = getelementptr i8, ptr %narrow_tiles.pf.a3, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p3, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p4 = getelementptr i8, ptr %narrow_tiles.pf.a4, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p4, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p5 = getelementptr i8, ptr %narrow_tiles.pf.a5, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p5, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p6 = getelementptr i8, ptr %narrow_tiles.pf.a6, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p6, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p7 = getelementptr i8, ptr %narrow_tiles.pf.a7, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p7, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.l.next = add i64 %narrow_tiles.pf.l, 1
  %narrow_tiles.pf.more = icmp slt i64 %narrow_tiles.pf.l.next, %pf.lines
  br i1 %narrow_tiles.pf.more, label %narrow_tiles.pf, label %narrow_tiles.run
narrow_tiles.run:
  %narrow_tiles.co = mul i64 %narrow_tiles.p, %scp
  %narrow_tiles.C = getelementptr double, ptr %C, i64 %narrow_tiles.co
  call void @rows_8(ptr %narrow_tiles.A, i64 %sap, i64 %saq, ptr %Bq, i64 %sbq, ptr %narrow_tiles.C, i64 %scp, i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb)
  %narrow_tiles.p.next = add i64 %narrow_tiles.p, 8
  br label %narrow_tiles
single:
  %single.p = phi i64 [ %tiles.p, %tiles ], [ %narrow_tiles.p, %narrow_tiles ], [ %single.p.next, %single.body ]
  %single.more = icmp slt i64 %single.p, %p_hi
  br i1 %single.more, label %single.body, label %single.done
single.body:
  %single.ao = mul i64 %single.p, %sap
  %single.A = getelementptr double, ptr %Aq, i64 %single.ao
  %single.co = mul i64 %single.p, %scp
  %single.C = getelementptr double, ptr %C, i64 %single.co
  call void @rows_1(ptr %single.A, i64 %sap, i64 %saq, ptr %Bq, i64 %sbq, ptr %single.C, i64 %scp, i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb)
  %single.p.next = add i64 %single.p, 1
  br label %single
single.done:
  %q0.next = add i64 %q0, %qblk
  br label %qblock
exit:
  ret void
}

define void @s2sad_gemm_bias_f64(ptr %A, i64 %sap, i64 %saq, ptr %B, i64 %sbq, ptr %C, i64 %scp, i64 %P, i64 %Q, i64 %M, i64 %accumulate, i64 %p_lo, i64 %p_hi, ptr %bias) {
entry:
  %from_zero = icmp eq i64 %accumulate, 0
  %pf.on = icmp eq i64 %saq, 1
  %qblk = select i1 %pf.on, i64 256, i64 64
  %narrow = icmp slt i64 %M, 32
  %wide_end = sub i64 %p_hi, 3
  %narrow_end = sub i64 %p_hi, 7
  br label %qblock
qblock:
  %q0 = phi i64 [ 0, %entry ], [ %q0.next, %single.done ]
  %q.more = icmp slt i64 %q0, %Q
  br i1 %q.more, label %qblock.body, label %exit
qblock.body:
  %q.left = sub i64 %Q, %q0
  %q.short = icmp slt i64 %q.left, %qblk
  %qn = select i1 %q.short, i64 %q.left, i64 %qblk
  %first = icmp eq i64 %q0, 0
  %init = and i1 %first, %from_zero
  %q.end = add i64 %q0, %qn
  %addb = icmp eq i64 %q.end, %Q
  %ao = mul i64 %q0, %saq
  %Aq = getelementptr double, ptr %A, i64 %ao
  %bo = mul i64 %q0, %sbq
  %Bq = getelementptr double, ptr %B, i64 %bo
  %pf.bytes = mul i64 %qn, 8
  %pf.end = add i64 %pf.bytes, 63
  %pf.lines = lshr i64 %pf.end, 6
  br i1 %narrow, label %narrow_tiles, label %tiles
tiles:
  %tiles.p = phi i64 [ %p_lo, %qblock.body ], [ %tiles.p.next, %tiles.run ]
  %tiles.more = icmp slt i64 %tiles.p, %wide_end
  br i1 %tiles.more, label %tiles.body, label %single
tiles.body:
  %tiles.ao = mul i64 %tiles.p, %sap
  %tiles.A = getelementptr double, ptr %Aq, i64 %tiles.ao
  br i1 %pf.on, label %tiles.pf.rows, label %tiles.run
tiles.pf.rows:
  %tiles.pf.r0 = add i64 %tiles.p, 32
  %tiles.pf.o0 = mul i64 %tiles.pf.r0, %sap
  %tiles.pf.a0 = getelementptr double, ptr %Aq, i64 %tiles.pf.o0
  %tiles.pf.r1 = add i64 %tiles.p, 33
  %tiles.pf.o1 = mul i64 %tiles.pf.r1, %sap
  %tiles.pf.a1 = getelementptr double, ptr %Aq, i64 %tiles.pf.o1
  %tiles.pf.r2 = add i64 %tiles.p, 34
  %tiles.pf.o2 = mul i64 %tiles.pf.r2, %sap
  %tiles.pf.a2 = getelementptr double, ptr %Aq, i64 %tiles.pf.o2
  %tiles.pf.r3 = add i64 %tiles.p, 35
  %tiles.pf.o3 = mul i64 %tiles.pf.r3, %sap
  %tiles.pf.a3 = getelementptr double, ptr %Aq, i64 %tiles.pf.o3
  br label %tiles.pf
tiles.pf:
  %tiles.pf.l = phi i64 [ 0, %tiles.pf.rows ], [ %tiles.pf.l.next, %tiles.pf ]
  %tiles.pf.b = shl i64 %tiles.pf.l, 6
  %tiles.pf.p0 = getelementptr i8, ptr %tiles.pf.a0, i64 %tiles.pf.b
  call void @llvm.prefetch.p0(ptr %tiles.pf.p0, i32 0, i32 3, i32 1)
  %tiles.pf.p1 = getelementptr i8, ptr %tiles.pf.a1, i64 %tiles.pf.b
  call void @llvm.prefetch.p0(ptr %tiles.pf.p1, i32 0, i32 3, i32 1)
  %tiles.pf.p2 = getelementptr i8, ptr %tiles.pf.a2, i64 %tiles.pf.b
  call void @llvm.prefetch.p0(ptr %tiles.pf.p2, i32 0, i32 3, i32 1)
  %tiles.pf.p3 = getelementptr i8, ptr %tiles.pf.a3, i64 %tiles.pf.b
  call void @llvm.prefetch.p0(ptr %tiles.pf.p3, i32 0, i32 3, i32 1)
  %tiles.pf.l.next = add i64 %tiles.pf.l, 1
  %tiles.pf.more = icmp slt i64 %tiles.pf.l.next, %pf.lines
  br i1 %tiles.pf.more, label %tiles.pf, label %tiles.run
tiles.run:
  %tiles.co = mul i64 %tiles.p, %scp
  %tiles.C = getelementptr double, ptr %C, i64 %tiles.co
  call void @rows_4(ptr %tiles.A, i64 %sap, i64 %saq, ptr %Bq, i64 %sbq, ptr %tiles.C, i64 %scp, i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb)
  %tiles.p.next = add i64 %tiles.p, 4
  br label %tiles
narrow_tiles:
  %narrow_tiles.p = phi i64 [ %p_lo, %qblock.body ], [ %narrow_tiles.p.next, %narrow_tiles.run ]
  %narrow_tiles.more = icmp slt i64 %narrow_tiles.p, %narrow_end
  br i1 %narrow_tiles.more, label %narrow_tiles.body, label %single
narrow_tiles.body:
  %narrow_tiles.ao = mul i64 %narrow_tiles.p, %sap
  %narrow_tiles.A = getelementptr double, ptr %Aq, i64 %narrow_tiles.ao
  br i1 %pf.on, label %narrow_tiles.pf.rows, label %narrow_tiles.run
narrow_tiles.pf.rows:
  %narrow_tiles.pf.r0 = add i64 %narrow_tiles.p, 32
  %narrow_tiles.pf.o0 = mul i64 %narrow_tiles.pf.r0, %sap
  %narrow_tiles.pf.a0 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o0
  %narrow_tiles.pf.r1 = add i64 %narrow_tiles.p, 33
  %narrow_tiles.pf.o1 = mul i64 %narrow_tiles.pf.r1, %sap
  %narrow_tiles.pf.a1 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o1
  %narrow_tiles.pf.r2 = add i64 %narrow_tiles.p, 34
  %narrow_tiles.pf.o2 = mul i64 %narrow_tiles.pf.r2, %sap
  %narrow_tiles.pf.a2 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o2
  %narrow_tiles.pf.r3 = add i64 %narrow_tiles.p, 35
  %narrow_tiles.pf.o3 = mul i64 %narrow_tiles.pf.r3, %sap
  %narrow_tiles.pf.a3 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o3
  %narrow_tiles.pf.r4 = add i64 %narrow_tiles.p, 36
  %narrow_tiles.pf.o4 = mul i64 %narrow_tiles.pf.r4, %sap
  %narrow_tiles.pf.a4 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o4
  %narrow_tiles.pf.r5 = add i64 %narrow_tiles.p, 37
  %narrow_tiles.pf.o5 = mul i64 %narrow_tiles.pf.r5, %sap
  %narrow_tiles.pf.a5 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o5
  %narrow_tiles.pf.r6 = add i64 %narrow_tiles.p, 38
  %narrow_tiles.pf.o6 = mul i64 %narrow_tiles.pf.r6, %sap
  %narrow_tiles.pf.a6 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o6
  %narrow_tiles.pf.r7 = add i64 %narrow_tiles.p, 39
  %narrow_tiles.pf.o7 = mul i64 %narrow_tiles.pf.r7, %sap
  %narrow_tiles.pf.a7 = getelementptr double, ptr %Aq, i64 %narrow_tiles.pf.o7
  br label %narrow_tiles.pf
narrow_tiles.pf:
  %narrow_tiles.pf.l = phi i64 [ 0, %narrow_tiles.pf.rows ], [ %narrow_tiles.pf.l.next, %narrow_tiles.pf ]
  %narrow_tiles.pf.b = shl i64 %narrow_tiles.pf.l, 6
  %narrow_tiles.pf.p0 = getelementptr i8, ptr %narrow_tiles.pf.a0, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p0, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p1 = getelementptr i8, ptr %narrow_tiles.pf.a1, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p1, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p2 = getelementptr i8, ptr %narrow_tiles.pf.a2, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p2, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p3 = getelementptr i8, ptr %narrow_tiles.pf.a3, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p3, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p4 = getelementptr i8, ptr %narrow_tiles.pf.a4, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p4, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p5 = getelementptr i8, ptr %narrow_tiles.pf.a5, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p5, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p6 = getelementptr i8, ptr %narrow_tiles.pf.a6, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p6, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.p7 = getelementptr i8, ptr %narrow_tiles.pf.a7, i64 %narrow_tiles.pf.b
  call void @llvm.prefetch.p0(ptr %narrow_tiles.pf.p7, i32 0, i32 3, i32 1)
  %narrow_tiles.pf.l.next = add i64 %narrow_tiles.pf.l, 1
  %narrow_tiles.pf.more = icmp slt i64 %narrow_tiles.pf.l.next, %pf.lines
  br i1 %narrow_tiles.pf.more, label %narrow_tiles.pf, label %narrow_tiles.run
narrow_tiles.run:
  %narrow_tiles.co = mul i64 %narrow_tiles.p, %scp
  %narrow_tiles.C = getelementptr double, ptr %C, i64 %narrow_tiles.co
  call void @rows_8(ptr %narrow_tiles.A, i64 %sap, i64 %saq, ptr %Bq, i64 %sbq, ptr %narrow_tiles.C, i64 %scp, i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb)
  %narrow_tiles.p.next = add i64 %narrow_tiles.p, 8
  br label %narrow_tiles
single:
  %single.p = phi i64 [ %tiles.p, %tiles ], [ %narrow_tiles.p, %narrow_tiles ], [ %single.p.next, %single.body ]
  %single.more = icmp slt i64 %single.p, %p_hi
  br i1 %single.more, label %single.body, label %single.done
single.body:
  %single.ao = mul i64 %single.p, %sap
  %single.A = getelementptr double, ptr %Aq, i64 %single.ao
  %single.co = mul i64 %single.p, %scp
  %single.C = getelementptr double, ptr %C, i64 %single.co
  call void @rows_1(ptr %single.A, i64 %sap, i64 %saq, ptr %Bq, i64 %sbq, ptr %single.C, i64 %scp, i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb)
  %single.p.next = add i64 %single.p, 1
  br label %single
single.done:
  %q0.next = add i64 %q0, %qblk
  br label %qblock
exit:
  ret void
}

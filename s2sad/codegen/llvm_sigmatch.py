"""LLVM IR of the signature matcher: one METH_FASTCALL function that says whether a call's
arguments have a recorded signature (s2sad/sigmatch.py builds its table and binds it).

    s2sad_sigmatch(table, args, nargs) -> True | False

`table` is the function's `self`, a uint64 ndarray; the matcher reads its data pointer
and, in it, these words:

    t[0] the ndarray type's address     t[1] True's    t[2] False's    t[3] Py_IncRef's
    t[4] the number of arguments
    then per argument: its dtype's address, its ndim, its dims, its strides

It answers True only when there are t[4] arguments, each an exact `numpy.ndarray` whose
descr is that dtype object (identity), of that ndim, those dims and those strides (in
bytes); else False. It reads object fields only (the offsets below, the stable ones of
CPython's and numpy's structs, checked on live objects by sigmatch.supported), calls
nothing but Py_IncRef on the bool it returns, writes nothing, and depends on no address
in the process (everything comes from the table), so it is cached on disk like a driver.
"""
from __future__ import annotations

from .fastcall_ir import WORD_IR, return_ir

NAME = "s2sad_sigmatch"
OB_TYPE = 8         # PyObject.ob_type
ARRAY_DATA = 16     # PyArrayObject_fields.data
ARRAY_ND = 24       #                      .nd (int)
ARRAY_DIMS = 32     #                      .dimensions
ARRAY_STRIDES = 40  #                      .strides
ARRAY_DESCR = 56    #                      .descr
HEAD_WORDS = 5      # t[0] .. t[4]


def sigmatch_ir() -> str:
    return f"""
{WORD_IR}
define private i64 @field(ptr %obj, i64 %off) {{
  %at = getelementptr inbounds i8, ptr %obj, i64 %off
  %v = load i64, ptr %at
  ret i64 %v
}}

define ptr @{NAME}(ptr %self, ptr %args, i64 %nargs) {{
entry:
  %t.at = getelementptr inbounds i8, ptr %self, i64 {ARRAY_DATA}
  %t = load ptr, ptr %t.at
  %array_type = call i64 @word(ptr %t, i64 0)
  %want = call i64 @word(ptr %t, i64 4)
  %n.ok = icmp eq i64 %nargs, %want
  br i1 %n.ok, label %loop, label %no
loop:
  %i = phi i64 [0, %entry], [%i.next, %next]
  %pos = phi i64 [{HEAD_WORDS}, %entry], [%pos.next, %next]
  %done = icmp eq i64 %i, %nargs
  br i1 %done, label %yes, label %body
body:
  %a.at = getelementptr inbounds ptr, ptr %args, i64 %i
  %a = load ptr, ptr %a.at
  %type = call i64 @field(ptr %a, i64 {OB_TYPE})
  %is_array = icmp eq i64 %type, %array_type
  br i1 %is_array, label %fields, label %no
fields:
  %descr = call i64 @field(ptr %a, i64 {ARRAY_DESCR})
  %want.descr = call i64 @word(ptr %t, i64 %pos)
  %descr.ok = icmp eq i64 %descr, %want.descr
  %nd.at = getelementptr inbounds i8, ptr %a, i64 {ARRAY_ND}
  %nd32 = load i32, ptr %nd.at
  %nd = sext i32 %nd32 to i64
  %pos1 = add i64 %pos, 1
  %want.nd = call i64 @word(ptr %t, i64 %pos1)
  %nd.ok = icmp eq i64 %nd, %want.nd
  %head.ok = and i1 %descr.ok, %nd.ok
  %dims.at = getelementptr inbounds i8, ptr %a, i64 {ARRAY_DIMS}
  %dims = load ptr, ptr %dims.at
  %strides.at = getelementptr inbounds i8, ptr %a, i64 {ARRAY_STRIDES}
  %strides = load ptr, ptr %strides.at
  %dims.pos = add i64 %pos, 2
  %strides.pos = add i64 %dims.pos, %nd
  br i1 %head.ok, label %axis, label %no
axis:
  %k = phi i64 [0, %fields], [%k.next, %axis.ok]
  %k.done = icmp eq i64 %k, %nd
  br i1 %k.done, label %next, label %axis.body
axis.body:
  %dim.at = getelementptr inbounds i64, ptr %dims, i64 %k
  %dim = load i64, ptr %dim.at
  %dim.pos = add i64 %dims.pos, %k
  %want.dim = call i64 @word(ptr %t, i64 %dim.pos)
  %stride.at = getelementptr inbounds i64, ptr %strides, i64 %k
  %stride = load i64, ptr %stride.at
  %stride.pos = add i64 %strides.pos, %k
  %want.stride = call i64 @word(ptr %t, i64 %stride.pos)
  %dim.ok = icmp eq i64 %dim, %want.dim
  %stride.ok = icmp eq i64 %stride, %want.stride
  %both.ok = and i1 %dim.ok, %stride.ok
  %k.next = add i64 %k, 1
  br i1 %both.ok, label %axis.ok, label %no
axis.ok:
  br label %axis
next:
  %i.next = add i64 %i, 1
  %nd2 = shl i64 %nd, 1
  %pos.skip = add i64 %pos, 2
  %pos.next = add i64 %pos.skip, %nd2
  br label %loop
yes:
  %true = call i64 @word(ptr %t, i64 1)
  br label %out
no:
  %false = call i64 @word(ptr %t, i64 2)
  br label %out
{return_ir("[%true, %yes], [%false, %no]", 3)}"""

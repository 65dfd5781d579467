"""Compiled launchers: a driver's C call made by one METH_FASTCALL function instead of a
Python stub and ctypes (issue 17, small batches: ~1.5 us of ctypes and ~1-2 us of
pointer reading a launch, at n = 32 most of a launch's time).

    launcher(table, args, nargs) -> None | NotImplemented

One launcher per C signature of the call (`kinds`: a string of 'i' for an i64 or a
pointer, 'd' for a double, 'f' for a float), compiled once a process and cached on disk
(it depends on no address: everything comes from `table`, its `self`, a uint64 ndarray):

    t[0] Py_IncRef's address   t[1] None's   t[2] NotImplemented's   t[3] the driver's
    t[4] the number of Python arguments
    t[5] PyEval_SaveThread's address, or 0   t[6] PyEval_RestoreThread's (or 0)
    then per C argument: src, word   (src -1: the constant `word` (an i64, or a double's
                                      bits); else Python argument `src`: an ndarray's data
                                      pointer plus `word` bytes, or a float's value)
    then per Python argument: the address of the exact type it must have

It returns NotImplemented (and calls nothing) unless there are t[4] arguments, each of
exactly its type (an ndarray for a pointer, a float for a double); else it calls the
driver and returns None: with the GIL held where t[5] is 0, else released around the
driver's call (PyEval_SaveThread / PyEval_RestoreThread, as ctypes does: `release`,
which the backend asks for on runs of at least RELEASE_MIN elements, where ~0.1 us of
release is nothing against the run, and where other threads wait for the GIL: the
blocks of a product's pass on two threads, gemm_epilogue, ran their kernels' launches
one at a time). The caller keeps its ctypes call for NotImplemented. It reads object fields only (OB_TYPE,
ARRAY_DATA, FLOAT_VALUE: checked on live objects by `layout_ok`).

`fastcall_function(name, address, keep, table, holder)` binds a compiled METH_FASTCALL
function to its table (sigmatch.py's matcher too): a builtin function whose `self` is
the table and whose module slot holds `holder` (what the table's addresses point at:
a launcher's driver code and types, alive with it). `array_call` makes a call of a
ctypes function with fixed constants and per-call arrays (the compiled column sums and
row passes array_special binds) through a launcher where the run is short.
"""
from __future__ import annotations

import ctypes
import sys
import sysconfig
import threading

import numpy as np

from . import llvm_jit
from .fastcall_ir import WORD_IR, return_ir

OB_TYPE = 8         # PyObject.ob_type
ARRAY_DATA = 16     # PyArrayObject_fields.data
FLOAT_VALUE = 16    # PyFloatObject.ob_fval
HEAD_WORDS = 7      # t[0] .. t[6]
METH_FASTCALL = 0x0080
KINDS = {ctypes.c_int64: "i", ctypes.c_void_p: "i", ctypes.c_double: "d", ctypes.c_float: "f"}


def name_of(kinds: str) -> str:
    return f"s2sad_launch_{kinds}"


def launcher_ir(kinds: str) -> str:
    """The launcher of a driver taking C arguments of `kinds` (see the docstring)."""
    m = len(kinds)
    lines, values = [], []
    for j, k in enumerate(kinds):
        ty = "i64" if k == "i" else "double"
        lines += [f"pre{j}:",
                  f"  %s{j} = call i64 @word(ptr %t, i64 {HEAD_WORDS + 2 * j})",
                  f"  %c{j} = call i64 @word(ptr %t, i64 {HEAD_WORDS + 2 * j + 1})"]
        if k != "i":
            lines.append(f"  %c{j}.d = bitcast i64 %c{j} to double")
        lines += [f"  %const{j} = icmp slt i64 %s{j}, 0",
                  f"  br i1 %const{j}, label %k{j}, label %a{j}",
                  f"a{j}:",
                  f"  %o{j}.at = getelementptr inbounds ptr, ptr %args, i64 %s{j}",
                  f"  %o{j} = load ptr, ptr %o{j}.at",
                  f"  %f{j}.at = getelementptr inbounds i8, ptr %o{j}, i64 {ARRAY_DATA if k == 'i' else FLOAT_VALUE}"]
        if k == "i":
            lines += [f"  %p{j} = load i64, ptr %f{j}.at", f"  %v{j}.a = add i64 %p{j}, %c{j}"]
        else:
            lines += [f"  %v{j}.a = load double, ptr %f{j}.at"]
        lines += [f"  br label %k{j}",
                  f"k{j}:",
                  f"  %v{j} = phi {ty} [%v{j}.a, %a{j}], [{f'%c{j}' if k == 'i' else f'%c{j}.d'}, %pre{j}]"]
        if k == "f":
            lines.append(f"  %v{j}.f = fptrunc double %v{j} to float")
        lines.append(f"  br label %{'pre' + str(j + 1) if j + 1 < m else 'run'}")
        values.append(("i64", f"%v{j}") if k == "i" else ("double", f"%v{j}") if k == "d" else ("float", f"%v{j}.f"))
    body = "\n".join(lines) + "\nrun:"
    call_types = ", ".join(t for t, _ in values)
    call_args = ", ".join(f"{t} {v}" for t, v in values)
    return f"""
{WORD_IR}
define ptr @{name_of(kinds)}(ptr %self, ptr %args, i64 %nargs) {{
entry:
  %t.at = getelementptr inbounds i8, ptr %self, i64 {ARRAY_DATA}
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
  %type.at = getelementptr inbounds i8, ptr %a, i64 {OB_TYPE}
  %type = load i64, ptr %type.at
  %want.pos = add i64 %i, {HEAD_WORDS + 2 * m}
  %want.type = call i64 @word(ptr %t, i64 %want.pos)
  %i.next = add i64 %i, 1
  %type.ok = icmp eq i64 %type, %want.type
  br i1 %type.ok, label %check.ok, label %no
check.ok:
  br label %check
{body}
  %driver.int = call i64 @word(ptr %t, i64 3)
  %driver = inttoptr i64 %driver.int to ptr
  %save.int = call i64 @word(ptr %t, i64 5)
  %release = icmp ne i64 %save.int, 0
  br i1 %release, label %released, label %held
held:
  call void ({call_types}) %driver({call_args})
  br label %called
released:
  %save = inttoptr i64 %save.int to ptr
  %state = call ptr %save()
  call void ({call_types}) %driver({call_args})
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
{return_ir("[%none, %called], [%ni, %no]", 0)}"""


# ---------------------------------------------------------------- binding (ctypes, once a process)

class MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_defs: dict = {}        # function name -> (MethodDef, its name's bytes, the code's keepalive): the process's
_layout: list = []      # [whether layout_ok], once a process
_making = threading.Lock()


def _word(address: int, offset: int, ctype=ctypes.c_uint64) -> int:
    return ctype.from_address(address + offset).value


def layout_ok() -> bool:
    """CPython's and numpy's objects have the fields the compiled functions read where they
    read them (on live objects), and the C-API calls they need are there."""
    if not _layout:
        if sysconfig.get_config_var("Py_GIL_DISABLED") or hasattr(sys, "gettotalrefcount"):
            _layout.append(False)
        else:
            a, f = np.zeros((3, 5), np.float32)[1:, ::2], 2.5
            _layout.append(_word(id(a), OB_TYPE) == id(np.ndarray) and _word(id(a), ARRAY_DATA) == a.ctypes.data
                           and _word(id(f), OB_TYPE) == id(float)
                           and ctypes.c_double.from_address(id(f) + FLOAT_VALUE).value == 2.5)
    return _layout[0]


def function_address(cfunc) -> int:
    """The machine address a ctypes function calls."""
    return ctypes.cast(cfunc, ctypes.c_void_p).value


def incref_address() -> int:
    return function_address(ctypes.pythonapi.Py_IncRef)


def release_addresses() -> list[int]:
    """[PyEval_SaveThread's address, PyEval_RestoreThread's]: t[5] and t[6] of a launcher
    that releases the GIL around its driver's call."""
    api = ctypes.pythonapi
    return [function_address(api.PyEval_SaveThread), function_address(api.PyEval_RestoreThread)]


def fastcall_function(name: str, address: int, keep, table: np.ndarray, holder):
    """A builtin function calling the METH_FASTCALL code at `address` (named `name`, its
    keepalive `keep`) with `table` as its self; `holder` is kept alive with it."""
    with _making:
        if name not in _defs:
            api = ctypes.pythonapi
            api.PyCFunction_NewEx.restype = ctypes.py_object
            api.PyCFunction_NewEx.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
            raw = name.encode()
            _defs[name] = (MethodDef(raw, address, METH_FASTCALL, None), raw, keep)
    return ctypes.pythonapi.PyCFunction_NewEx(ctypes.addressof(_defs[name][0]), table, holder)


class Holder:
    """What a compiled function's table points at, kept alive with it."""
    __slots__ = ("kept",)

    def __init__(self, kept):
        self.kept = kept


def launcher(driver_address: int, kinds: str, words: list, srcs: list, py_types: list, keep,
             release: bool = False):
    """launch(*python_args) -> None | NotImplemented: the driver at `driver_address` called
    with C arguments of `kinds`, the j-th the constant words[j] (srcs[j] None; a double's
    value for 'd' and 'f') or from Python argument srcs[j] (of exact type py_types[k]: an
    ndarray's data pointer plus words[j] bytes, a float's value). `keep`: what keeps the
    driver's code alive; `release`: the GIL released while the driver runs (a long run).
    None where this process has no launcher."""
    if not layout_ok():
        return None
    name = name_of(kinds)
    try:
        address, code = llvm_jit.small_code(name, lambda: launcher_ir(kinds), False)
    except Exception:   # noqa: BLE001 - no launcher: the caller's ctypes call makes the launch
        return None
    head = [incref_address(), id(None), id(NotImplemented), driver_address, len(py_types)]
    head += release_addresses() if release else [0, 0]
    body = []
    for k, w, s in zip(kinds, words, srcs):
        if s is None:
            body += [-1, w if k == "i" else int(np.float64(w).view(np.uint64))]
        else:
            body += [s, w if k == "i" else 0]
    table = np.array([x & 0xFFFFFFFFFFFFFFFF for x in head + body + [id(t) for t in py_types]], dtype=np.uint64)
    return fastcall_function(name, address, code, table, Holder((keep, tuple(py_types))))


def array_call(cfunc, pattern: list, n_arrays: int, short: bool):
    """call(*arrays): the ctypes function `cfunc` called with pattern[j] for its j-th
    argument, an int constant or ("array", k): the k-th array's data pointer (`n_arrays`
    exact ndarrays). Through a compiled launcher where `short` (a run brief enough to
    hold the GIL through) and this process has one; ctypes where it declines or there
    is none. The caller vouches for the arrays (their dtype, shape and strides are the
    ones the constants were made for)."""
    kinds = "".join(KINDS.get(t, "?") for t in cfunc.argtypes)
    srcs = [p[1] if isinstance(p, tuple) else None for p in pattern]
    words = [0 if isinstance(p, tuple) else p for p in pattern]
    fast = None
    if short and "?" not in kinds and set(kinds) == {"i"}:
        fast = launcher(function_address(cfunc), kinds, words, srcs, [np.ndarray] * n_arrays,
                        cfunc)

    def by_ctypes(*arrays):
        cfunc(*[p if s is None else arrays[s].ctypes.data for p, s in zip(words, srcs)])

    if fast is None:
        by_ctypes.parts = (cfunc, pattern)     # (array_program.py makes this call itself)
        return by_ctypes

    def call(*arrays):
        if fast(*arrays) is NotImplemented:
            by_ctypes(*arrays)
    call.parts = (cfunc, pattern)
    return call


def decode(launch) -> tuple[int, str, list] | None:
    """(driver address, kinds, [(src or None, word)]) of a launcher made by `launcher`:
    what its table says it calls (array_program.py lowers a kept call's launch to it)."""
    name = getattr(launch, "__name__", "")
    table = getattr(launch, "__self__", None)
    if not name.startswith("s2sad_launch_") or type(table) is not np.ndarray or table.dtype != np.uint64:
        return None
    kinds = name[len("s2sad_launch_"):]
    words = [int(x) for x in table]
    args = []
    for j in range(len(kinds)):
        src, word = words[HEAD_WORDS + 2 * j], words[HEAD_WORDS + 2 * j + 1]
        args.append((None if src == 0xFFFFFFFFFFFFFFFF else src, word))
    return words[3], kinds, args

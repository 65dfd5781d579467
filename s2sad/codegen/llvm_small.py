"""A straight-line scalar program (passes/unroll_small.py's graph and its second
derivatives) as one LLVM function with CPython's METH_FASTCALL signature:

    entry(p0, ..., pn-1, out) -> None | NotImplemented
    entry(p0, ..., pn-1, out) -> float | NotImplemented       (with a value node: grad's value)

It takes the call only when each array parameter is an exact `numpy.ndarray` of
float64, C-contiguous and aligned, of exactly the planned shape, each scalar parameter
an exact `float`, and `out` an exact float64 ndarray, C-contiguous, one-dimensional of
the planned length; then it runs the program (the GIL held: a few thousand operations)
and, where every value it computes (inputs read, intermediates, outputs) is finite,
writes every
output element (0.0 where an output has no node: one memset first), returning None. For anything else
it returns NotImplemented, writing nothing: the caller's general path answers, so a
NaN or an inf spreads through a Hessian as that path (and JAX's dense sweep) spreads it,
not only to the entries whose formulas read it. The object layouts it
reads are llvm_entry's (checked once per process by `llvm_entry.supported`), its
table the same (llvm_entry.python_entry; it calls no driver).

    small_ir(name, kinds, ops, outputs, value=None) -> str

`ops[k]`: node k as (name, operand ids, constant), operands older than k; `kinds`:
per parameter its shape (an array) or None (a float); `outputs[i]`: the node stored at
out[i], or None; `value`: a node returned as a Python float (value_and_grad's value)
instead of None, in the same finiteness check. Only the nodes the outputs read are emitted. Arithmetic is IEEE
double without fast-math: + - * / and negation as written, `powc` x ** c (x * x for
c = 2, 1 / x for -1, else libm's pow), the math functions by libm.
"""
from __future__ import annotations

import struct

from ..passes.unroll_small import needed_nodes
from .llvm_entry import ARRAY_DATA, FLOAT_VALUE, SLOTS, array_fields, load_field, load_object

ARITH = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
CMP = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}
LIBM = {"exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "sinh", "cosh", "expm1", "log1p", "atan", "cbrt",
        "log2", "log10", "exp2"}


def hex_double(value: float) -> str:
    """LLVM's exact spelling of a double."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


def small_ir(name: str, kinds: tuple, ops: list, outputs: list, value: int | None = None) -> str:
    w = _Writer(kinds, ops)
    w.prologue(len(kinds) + 1, value is not None)
    for p, kind in enumerate(kinds):
        w.check_param(p, kind)
    w.check_out(len(kinds), len(outputs))
    w.body(outputs, value)
    returns = "None" if value is None else "float (the value)"
    head = [f"; s2sad's unrolled program (codegen/llvm_small.py): {name}"
            f"({', '.join(f'p{p}' for p in range(len(kinds)))}, out) -> {returns}, or NotImplemented",
            ";   params: " + ", ".join(f"p{p} {'float' if k is None else 'float64' + str(tuple(k))}"
                                       for p, k in enumerate(kinds)) + f"; out float64 ({len(outputs)},)",
            f"define ptr @{name}(ptr %table.obj, ptr %args, i64 %nargs) {{", "entry:"]
    decls = [f"declare double @{f}(double)" for f in sorted(w.calls)]
    if None in outputs:
        decls.append("declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)")
    if w.pow_used:
        decls.append("declare double @pow(double, double)")
    if w.fabs:
        decls.append("declare double @llvm.fabs.f64(double)")
    return "\n".join(head + w.lines + ["}", ""] + decls + [""])


class _Writer:
    def __init__(self, kinds: tuple, ops: list):
        self.kinds, self.ops = kinds, ops
        self.lines: list[str] = []
        self.calls: set[str] = set()
        self.pow_used = False
        self.fabs = False
        self.names: dict[int, str] = {}

    def __call__(self, line: str) -> None:
        self.lines.append("  " + line)

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")

    def obj(self, i: int, name: str) -> None:
        load_object(self, i, name)

    def field(self, name: str, what: str, off: int, ty: str) -> None:
        load_field(self, name, what, off, ty)

    def prologue(self, nargs: int, value: bool = False) -> None:
        self("; the table (llvm_entry.SLOTS): the types and objects compared with, Py_IncRef")
        self(f"%table.at = getelementptr inbounds i8, ptr %table.obj, i64 {ARRAY_DATA}")
        self("%table = load ptr, ptr %table.at")
        for j, slot in enumerate(SLOTS):
            if slot in ("array_type", "descr", "float_type", "not_implemented", "none", "incref") or (
                    value and slot == "float_from_double"):
                self(f"%{slot}.at = getelementptr inbounds ptr, ptr %table, i64 {j}")
                self(f"%{slot} = load ptr, ptr %{slot}.at")
        self(f"%nargs.ok = icmp eq i64 %nargs, {nargs}")
        self("br i1 %nargs.ok, label %check.p0, label %decline")

    def check_param(self, i: int, kind) -> None:
        p, then = f"p{i}", f"check.p{i + 1}"
        self.label(f"check.{p}")
        self.obj(i, p)
        if kind is None:
            self(f"%{p}.ok = icmp eq ptr %{p}.type, %float_type")
            self(f"br i1 %{p}.ok, label %{p}.value, label %decline")
            self.label(f"{p}.value")
            self.field(p, "f64", FLOAT_VALUE, "double")
            self(f"br label %{then}")
            return
        self.array(p, tuple(kind), then)

    def check_out(self, i: int, n: int) -> None:
        self.label(f"check.p{i}")
        self.obj(i, "out")
        self.array("out", (n,), "run")

    def array(self, p: str, shape: tuple, then: str) -> None:
        """p: an exact float64 ndarray, C-contiguous and aligned, of `shape`; %p.data."""
        array_fields(self, p)     # (llvm_entry's checks of an array)
        self(f"%{p}.nd.ok = icmp eq i32 %{p}.nd, {len(shape)}")
        self(f"%{p}.ok0 = and i1 %{p}.dtype.ok, %{p}.carray.ok")
        ok = f"%{p}.ok0"
        self(f"%{p}.ok1 = and i1 {ok}, %{p}.nd.ok")
        self(f"br i1 %{p}.ok1, label %{p}.shape, label %decline")
        self.label(f"{p}.shape")
        ok = "true"
        for k, d in enumerate(shape):       # (nd matched: the dimensions can be read)
            self(f"%{p}.d{k}.at = getelementptr inbounds i64, ptr %{p}.dims, i64 {k}")
            self(f"%{p}.d{k} = load i64, ptr %{p}.d{k}.at")
            self(f"%{p}.d{k}.ok = icmp eq i64 %{p}.d{k}, {d}")
            self(f"%{p}.s{k} = and i1 {ok}, %{p}.d{k}.ok")
            ok = f"%{p}.s{k}"
        self(f"br i1 {ok}, label %{then}, label %decline")

    def finite(self, nodes: list[int]) -> None:
        """Decline unless every value computed (and every output) is finite: v - v is 0
        for a finite v and NaN for an inf or a NaN, so one sum of them says (see the
        module doc); summed as a balanced tree, not one chain."""
        level = []
        for j, k in enumerate(nodes):
            v = self.operand(k)
            self(f"%fin.d{j} = fsub double {v}, {v}")
            level.append(f"%fin.d{j}")
        depth = 0
        while len(level) > 1:
            nxt = []
            for j in range(0, len(level) - 1, 2):
                self(f"%fin.l{depth}.{j} = fadd double {level[j]}, {level[j + 1]}")
                nxt.append(f"%fin.l{depth}.{j}")
            if len(level) % 2:
                nxt.append(level[-1])
            level, depth = nxt, depth + 1
        self(f"%fin = fcmp ord double {level[0] if level else '0.0'}, 0.0")
        self("br i1 %fin, label %store, label %decline")
        self.label("store")

    # ---- the program
    def operand(self, k: int) -> str:
        name, _, const = self.ops[k]
        if name == "const":
            return hex_double(float.fromhex(const) if const != "nan" else float("nan"))
        return self.names[k]

    def body(self, outputs: list, value: int | None = None) -> None:
        self.label("run")
        roots = [o for o in outputs if o is not None] + ([] if value is None else [value])
        needed = needed_nodes(self.ops, roots)
        for k in sorted(needed):
            self.node(k)
        self.finite(sorted(k for k in needed if self.ops[k][0] != "const") + sorted(
            {o for o in roots if self.ops[o][0] == "const"}))
        if None in outputs:     # the structural zeros at once, then the rest
            self(f"call void @llvm.memset.p0.i64(ptr %out.data, i8 0, i64 {8 * len(outputs)}, i1 false)")
        for i, o in enumerate(outputs):
            if o is not None:
                self(f"%o{i} = getelementptr inbounds double, ptr %out.data, i64 {i}")
                self(f"store double {self.operand(o)}, ptr %o{i}")
        if value is None:
            self("call void %incref(ptr %none)")
            self("ret ptr %none")
        else:       # (a new reference; NULL with MemoryError set if none could be made)
            self(f"%value = call ptr %float_from_double(double {self.operand(value)})")
            self("ret ptr %value")
        self.label("decline")
        self("call void %incref(ptr %not_implemented)")
        self("ret ptr %not_implemented")

    def node(self, k: int) -> None:
        name, args, const = self.ops[k]
        if name == "const":
            return
        v = f"%v{k}"
        self.names[k] = v
        if name == "input":
            p, off = const
            if self.kinds[p] is None:
                self.names[k] = f"%p{p}.f64"
                return
            self(f"{v}.at = getelementptr inbounds double, ptr %p{p}.data, i64 {off}")
            self(f"{v} = load double, ptr {v}.at")
            return
        a = [self.operand(x) for x in args]
        if name in ARITH:
            self(f"{v} = {ARITH[name]} double {a[0]}, {a[1]}")
        elif name == "neg":
            self(f"{v} = fneg double {a[0]}")
        elif name in CMP:
            self(f"{v}.b = fcmp {CMP[name]} double {a[0]}, {a[1]}")
            self(f"{v} = uitofp i1 {v}.b to double")
        elif name == "select":
            self(f"{v}.c = fcmp une double {a[0]}, 0.0")
            self(f"{v} = select i1 {v}.c, double {a[1]}, double {a[2]}")
        elif name in ("maximum", "minimum"):
            self(f"{v}.c = fcmp {'oge' if name == 'maximum' else 'ole'} double {a[0]}, {a[1]}")
            self(f"{v} = select i1 {v}.c, double {a[0]}, double {a[1]}")
        elif name == "abs":
            self.fabs = True
            self(f"{v} = call double @llvm.fabs.f64(double {a[0]})")
        elif name == "square" or (name == "powc" and const == 2.0):
            self(f"{v} = fmul double {a[0]}, {a[0]}")
        elif name == "reciprocal" or (name == "powc" and const == -1.0):
            self(f"{v} = fdiv double 1.0, {a[0]}")
        elif name == "powc":
            self.pow_used = True
            self(f"{v} = call double @pow(double {a[0]}, double {hex_double(const)})")
        elif name in LIBM:
            self.calls.add(name)
            self(f"{v} = call double @{name}(double {a[0]})")
        else:
            raise AssertionError(name)

"""Python entry points in machine code for the fused gradient drivers.

On a small array, a gradient call costs what happens around the kernel: checking the
arguments, allocating the gradient, ctypes converting each argument, building the
result. For the drivers of the fused value-and-gradient sum (a `LoopSpec` with
partials, a scalar seed and a value that is summed or dropped, over contiguous arrays
and scalars) there is an *entry*: a C function with CPython's METH_FASTCALL signature,

    entry(table, args, nargs) -> (value, grad of each active param) | NotImplemented

one per driver shape (spec, dtype, active params; `entry_name`), compiled once and
shared by every kernel of that shape: the driver it runs is the first slot of its
`table`. It is called with the driver's parameters, a scale and whether the scale is
divided by the number of elements (a mean): `entry(p1, ..., pn, scale, mean)`. It takes
the call only when every argument is what the driver was compiled for: each "contig"
parameter an exact `numpy.ndarray` of the driver's dtype, C-contiguous and aligned, all
of one shape, with 2 to ENTRY_MAX elements; each "scalar" parameter and the scale an
exact `float`; `mean` True or False. For anything else it returns NotImplemented, and
the caller takes the general path. It allocates each array gradient with numpy's
`PyArray_NewLikeArray`, runs the driver with seed = scale (or scale / n) over the
elements (the GIL held: at most ENTRY_MAX of them, tens of microseconds), and returns
`(value * seed, g1, ...)`: the value a float (None when the driver does not sum values),
each gradient an array, or a float for a scalar parameter. The results are those of the
runtime's general path to the bit (the same driver, the same seed). The driver's sums
are double for every dtype (llvm_drivers.ACC); a float32 driver's are rounded to float32
before they are boxed, as the runtime rounds them (runtime.rounded).

A scan driver (ScanSpec with grads and a summed value) has an entry too:
`entry(p1, ..., pn, s1, ..., sk, scale, mean) -> (sum of values, grads..., s1', ..., sk')`,
the state's values in and out as floats (the caller reads and writes the state cells),
the value unscaled as runtime.scan_grads returns it, and a one-element tape: the runtime
calls it only for scans whose reverse sweep reads no tape.

The machine code depends on no address in the process: everything it calls or compares
with comes from `table` (the function's `self`: a uint64 array, see SLOTS), so it is
cached on disk like a driver. The object layouts it reads (the offsets below) are the
stable ones of CPython's and numpy's C structs; `supported()` checks them on live objects
once per process, and where they differ (a free-threaded or debug build), no entry is
used.

A *large* entry (`large=True`, named `..._large`) takes the same calls at any size from
2 elements, and releases the GIL around the driver's call (PyEval_SaveThread and
PyEval_RestoreThread from its table): for a call that the runtime would make as one
driver call on one thread, the gradient alone of array parameters (`large_qualifies`:
no value summed, no scalar parameter's sum; the runtime's `whole` call, the same bits).
Its one caller is fastpath.large_call (itself called by fastpath and by derivative's hot
path), whose chooser times the large entry's whole call on one thread against the
chunks' on more (a count forced to one, a dask block's share: the large entry).
(Measured, 1M elements on one pinned thread: the general path's Python around the one
driver call cost 30-80 us a call against ~160 us of driver, most of JAX's lead there.)

    qualifies(spec) -> bool
    large_qualifies(spec, active_idx) -> bool
    entry_ir(spec, dtype, active_idx, large=False) -> str the entry's module
    python_entry(driver, entry, dtype) -> callable | None  an entry bound to a driver
"""
from __future__ import annotations

import ctypes
import sys
import sysconfig
from typing import Callable

import numpy as np

from ..kernel import LoopSpec, ScanSpec
from .llvm_drivers import ACC

ENTRY_MAX = 1 << 15          # elements; beyond, the runtime's path that releases the GIL

# offsets in CPython's and numpy's object structs (checked by `supported`)
OB_TYPE = 8                  # PyObject.ob_type
FLOAT_VALUE = 16             # PyFloatObject.ob_fval
ARRAY_DATA = 16              # PyArrayObject_fields.data
ARRAY_ND = 24                #                      .nd (int)
ARRAY_DIMS = 32              #                      .dimensions
ARRAY_DESCR = 56             #                      .descr
ARRAY_FLAGS = 64             #                      .flags (int)
CARRAY = 0x0001 | 0x0100     # NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED
NEW_LIKE_SLOT = 277          # PyArray_NewLikeArray in numpy's C-API table (stable since 1.6)

# what the entry finds in its table, in this order
SLOTS = ("driver", "new_like", "array_type", "descr", "float_type", "not_implemented", "none", "true", "false",
         "incref", "decref", "float_from_double", "tuple_new", "tuple_setitem")
LARGE_SLOTS = ("save_thread", "restore_thread")     # after SLOTS in every table; read by large entries only


def qualifies(spec) -> bool:
    """Whether drivers of `spec` get an entry: the fused sum with partials, and the scan
    with grads and a summed value, over contiguous arrays and scalars."""
    plain = "contig" in spec.layouts and all(l in ("contig", "scalar") for l in spec.layouts)
    if isinstance(spec, ScanSpec):
        return plain and spec.grads and spec.seed == "scalar" and spec.value == "sum"
    return (isinstance(spec, LoopSpec) and plain and spec.partials and spec.seed == "scalar" and not spec.tangents
            and spec.value in ("sum", "none"))


def large_qualifies(spec, active_idx: tuple[int, ...]) -> bool:
    """Whether drivers of `spec` get a large entry: the gradient alone (no value summed)
    of array parameters only (no scalar's sum), where one driver call over every element
    is the runtime's call on one thread."""
    return (isinstance(spec, LoopSpec) and qualifies(spec) and spec.value == "none" and bool(active_idx)
            and all(spec.layouts[a] == "contig" for a in active_idx))


def entry_name(spec: LoopSpec | ScanSpec, dtype, active_idx: tuple[int, ...], large: bool = False) -> str:
    """The symbol of the entry for drivers of this shape: one per (spec, dtype, active
    params), shared by every kernel with that shape (the driver comes from the table)."""
    kind = "scan" if isinstance(spec, ScanSpec) else "sum"
    states = f"_s{spec.n_state}" if isinstance(spec, ScanSpec) else ""
    return (f"s2sad_entry_{kind}_{''.join(l[0] for l in spec.layouts)}_{spec.value}{states}"
            f"_{np.dtype(dtype).name}_a{''.join(map(str, active_idx))}" + ("_large" if large else ""))


class _Text:
    """IR lines with fresh names."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append("  " + line)

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")

    def comment(self, text: str) -> None:
        self.lines.append(f"  ; {text}")


def load_object(w: Callable[[str], None], i: int, name: str) -> None:
    """%name: args[i], and %name.type its type (`w` writes an IR line)."""
    w(f"%{name}.at = getelementptr inbounds ptr, ptr %args, i64 {i}")
    w(f"%{name} = load ptr, ptr %{name}.at")
    w(f"%{name}.type.at = getelementptr inbounds i8, ptr %{name}, i64 {OB_TYPE}")
    w(f"%{name}.type = load ptr, ptr %{name}.type.at")


def load_field(w: Callable[[str], None], name: str, what: str, off: int, ty: str) -> None:
    """%name.what: the `ty` at byte `off` of object %name."""
    w(f"%{name}.{what}.at = getelementptr inbounds i8, ptr %{name}, i64 {off}")
    w(f"%{name}.{what} = load {ty}, ptr %{name}.{what}.at")


def array_fields(w, p: str) -> None:
    """What every entry checks of an array argument %p (its object loaded): an exact
    ndarray, else `decline`; then its fields (%p.descr, .flags, .nd, .dims, .data),
    %p.dtype.ok (the table's descr) and %p.carray.ok (C-contiguous and aligned).
    `w` writes a line and, by `w.label`, a label (this module's _Text, llvm_small's)."""
    w(f"%{p}.isarray = icmp eq ptr %{p}.type, %array_type")
    w(f"br i1 %{p}.isarray, label %{p}.fields, label %decline")
    w.label(f"{p}.fields")
    load_field(w, p, "descr", ARRAY_DESCR, "ptr")
    load_field(w, p, "flags", ARRAY_FLAGS, "i32")
    load_field(w, p, "nd", ARRAY_ND, "i32")
    load_field(w, p, "dims", ARRAY_DIMS, "ptr")
    load_field(w, p, "data", ARRAY_DATA, "ptr")
    w(f"%{p}.dtype.ok = icmp eq ptr %{p}.descr, %descr")
    w(f"%{p}.carray = and i32 %{p}.flags, {CARRAY}")
    w(f"%{p}.carray.ok = icmp eq i32 %{p}.carray, {CARRAY}")


def entry_ir(spec: LoopSpec | ScanSpec, dtype, active_idx: tuple[int, ...], large: bool = False) -> str:
    """The module of the entry for drivers of this shape (ABI: kernel.py's for `spec`),
    calling the driver found in its table. `active_idx`: the params the drivers
    differentiate, in order (for a scan, not its states). `large`: the large entry (see
    the module docstring)."""
    assert qualifies(spec) and (not large or large_qualifies(spec, active_idx)), spec
    w = _EntryWriter(spec, dtype, active_idx, large)
    w.prologue()
    for i, lay in enumerate(w.layouts):
        (w.check_scalar if lay == "scalar" else w.check_array)(i)
    w.check_state()
    w.check_scale()
    w.allocate()
    w.call_driver()
    w.result()
    return w.text()


class _EntryWriter:
    """One entry's IR, section by section (entry_ir): the table and the stack slots, the
    checks of each argument (every failed check branches to `decline`), the gradients'
    allocation, the driver's call, the result tuple, and the failure paths (each drops
    the references made before it)."""

    def __init__(self, spec: LoopSpec | ScanSpec, dtype, active_idx: tuple[int, ...], large: bool = False) -> None:
        self.spec, self.active_idx, self.large = spec, active_idx, large
        self.T = "double" if np.dtype(dtype) == np.float64 else "float"
        self.layouts = spec.layouts
        self.n = len(self.layouts)
        self.k_state = spec.n_state if isinstance(spec, ScanSpec) else 0
        self.states = [f"s{j}" for j in range(self.k_state)]
        self.first = self.layouts.index("contig")
        self.name = entry_name(spec, dtype, active_idx, large)
        self.t = _Text()
        self.made: list[str] = []                        # new references held so far
        self.failures: list[tuple[str, list[str]]] = []  # (label, references to drop)

    # ---- pieces
    def obj(self, i: int, name: str) -> None:
        load_object(self.t, i, name)

    def field(self, name: str, what: str, off: int, ty: str) -> None:
        load_field(self.t, name, what, off, ty)

    def after(self, i: int) -> str:
        """The check that follows param i's."""
        return f"check.p{i + 1}" if i + 1 < self.n else ("check.state" if self.k_state else "scale")

    def fail_unless(self, value: str, label: str) -> None:
        self.t(f"%{value}.null = icmp eq ptr %{value}, null")
        self.t(f"br i1 %{value}.null, label %{label}.fail, label %{label}.ok")
        self.failures.append((label, list(self.made)))
        self.t.label(f"{label}.ok")

    def box(self, name: str, at: str, ty: str) -> str:
        """A new Python float of the `ty` (T, or ACC for a sum) at `at`, held (and dropped
        if a later step fails)."""
        t = self.t
        t(f"%{name}.v = load {ty}, ptr {at}")
        v = self.as_dtype_value(f"%{name}.v", name) if ty == ACC else f"%{name}.v"
        if ty == "float":
            t(f"%{name}.f64 = fpext float {v} to double")
            v = f"%{name}.f64"
        t(f"%{name} = call ptr %float_from_double(double {v})")
        self.fail_unless(name, f"{name}.float")
        self.made.append(name)
        return f"%{name}"

    def as_dtype_value(self, v: str, name: str) -> str:
        """A sum `v` (ACC, double) rounded to the driver's dtype and back to double: the
        float32 total of a float32 driver, as runtime.rounded gives it."""
        if self.T == ACC:
            return v
        self.t(f"%{name}.t = fptrunc {ACC} {v} to {self.T}")
        self.t(f"%{name}.r = fpext {self.T} %{name}.t to {ACC}")
        return f"%{name}.r"

    # ---- sections
    def prologue(self) -> None:
        t, T, k = self.t, self.T, self.k_state
        t.comment("the table: a uint64 array (its data pointer) of what the entry calls and compares with")
        t(f"%table.at = getelementptr inbounds i8, ptr %table.obj, i64 {ARRAY_DATA}")
        t("%table = load ptr, ptr %table.at")
        for j, slot in enumerate(SLOTS + (LARGE_SLOTS if self.large else ())):
            t(f"%{slot}.at = getelementptr inbounds ptr, ptr %table, i64 {j}")
            t(f"%{slot} = load ptr, ptr %{slot}.at")
        if self.spec.value == "sum":
            t(f"%acc = alloca {ACC}")
            t(f"store {ACC} 0.0, ptr %acc")
        for a in self.active_idx:
            if self.layouts[a] == "scalar":
                t(f"%g{a}.acc = alloca {ACC}")
                t(f"store {ACC} 0.0, ptr %g{a}.acc")
        if k:
            t.comment("the scan's state (in: before the first element; out: after the last), the adjoint")
            t.comment("of the final state (0: the loss does not read it) and a one-element tape (the")
            t.comment("runtime calls the entry only for scans whose reverse sweep reads no tape)")
            t(f"%state = alloca [{k} x {T}]")
            t(f"%state_bar = alloca [{k} x {T}]")
            t(f"store [{k} x {T}] zeroinitializer, ptr %state_bar")
            t(f"%tape = alloca {T}")
        t(f"%nargs.ok = icmp eq i64 %nargs, {self.n + k + 2}")
        t("br i1 %nargs.ok, label %check.p0, label %decline")

    def check_scalar(self, i: int) -> None:
        t, p = self.t, f"p{i}"
        t.label(f"check.{p}")
        t.comment(f"p{i}: an exact float")
        self.obj(i, p)
        t(f"%{p}.ok = icmp eq ptr %{p}.type, %float_type")
        t(f"br i1 %{p}.ok, label %{p}.value, label %decline")
        t.label(f"{p}.value")
        self.field(p, "f64", FLOAT_VALUE, "double")
        if self.T == "float":
            t(f"%{p}.v = fptrunc double %{p}.f64 to float")
        t(f"br label %{self.after(i)}")

    def check_array(self, i: int) -> None:
        t, p, first = self.t, f"p{i}", self.first
        t.label(f"check.{p}")
        t.comment(f"p{i}: an exact ndarray of the driver's dtype, C-contiguous and aligned"
                  + (f", of p{first}'s shape" if i != first else ""))
        self.obj(i, p)
        array_fields(t, p)
        t(f"%{p}.ok = and i1 %{p}.dtype.ok, %{p}.carray.ok")
        if i == first:
            self.size(p, self.after(i))
        else:
            self.same_shape(p, self.after(i))

    def size(self, p: str, then: str) -> None:
        """%size.n, the product of p's dimensions, within 2..ENTRY_MAX."""
        t = self.t
        t(f"br i1 %{p}.ok, label %{p}.size, label %decline")
        t.label(f"{p}.size")
        t.comment("n: the product of the dimensions")
        t("br label %size.loop")
        t.label("size.loop")
        t(f"%size.k = phi i32 [ 0, %{p}.size ], [ %size.k1, %size.body ]")
        t(f"%size.n = phi i64 [ 1, %{p}.size ], [ %size.n1, %size.body ]")
        t(f"%size.more = icmp slt i32 %size.k, %{p}.nd")
        t("br i1 %size.more, label %size.body, label %size.done")
        t.label("size.body")
        t(f"%size.d.at = getelementptr inbounds i64, ptr %{p}.dims, i32 %size.k")
        t("%size.d = load i64, ptr %size.d.at")
        t("%size.n1 = mul i64 %size.n, %size.d")
        t("%size.k1 = add i32 %size.k, 1")
        t("br label %size.loop")
        t.label("size.done")
        t("%n.low = icmp slt i64 %size.n, 2")
        out = "%n.low"          # a large entry: any size (the driver runs without the GIL)
        if not self.large:
            t(f"%n.high = icmp sgt i64 %size.n, {ENTRY_MAX}")
            t("%n.out = or i1 %n.low, %n.high")
            out = "%n.out"
        t(f"br i1 {out}, label %decline, label %{then}")

    def same_shape(self, p: str, then: str) -> None:
        """p's dimensions are the first array's."""
        t, first = self.t, self.first
        t(f"%{p}.nd.ok = icmp eq i32 %{p}.nd, %p{first}.nd")
        t(f"%{p}.ok2 = and i1 %{p}.ok, %{p}.nd.ok")
        t(f"br i1 %{p}.ok2, label %{p}.shape, label %decline")
        t.label(f"{p}.shape")
        t("br label %" + f"{p}.shape.loop")
        t.label(f"{p}.shape.loop")
        t(f"%{p}.k = phi i32 [ 0, %{p}.shape ], [ %{p}.k1, %{p}.shape.same ]")
        t(f"%{p}.more = icmp slt i32 %{p}.k, %{p}.nd")
        t(f"br i1 %{p}.more, label %{p}.shape.body, label %{then}")
        t.label(f"{p}.shape.body")
        t(f"%{p}.d.at = getelementptr inbounds i64, ptr %{p}.dims, i32 %{p}.k")
        t(f"%{p}.d = load i64, ptr %{p}.d.at")
        t(f"%{p}.d0.at = getelementptr inbounds i64, ptr %p{first}.dims, i32 %{p}.k")
        t(f"%{p}.d0 = load i64, ptr %{p}.d0.at")
        t(f"%{p}.d.ok = icmp eq i64 %{p}.d, %{p}.d0")
        t(f"%{p}.k1 = add i32 %{p}.k, 1")
        t(f"br i1 %{p}.d.ok, label %{p}.shape.same, label %decline")
        t.label(f"{p}.shape.same")
        t(f"br label %{p}.shape.loop")

    def check_state(self) -> None:
        """A scan's state values, exact floats, stored in %state."""
        t, T = self.t, self.T
        if not self.k_state:
            return
        t.label("check.state")
        for j, st in enumerate(self.states):
            t.comment(f"{st}: the state's value, an exact float")
            self.obj(self.n + j, st)
            t(f"%{st}.ok = icmp eq ptr %{st}.type, %float_type")
            t(f"br i1 %{st}.ok, label %{st}.value, label %decline")
            t.label(f"{st}.value")
            self.field(st, "f64", FLOAT_VALUE, "double")
            v = f"%{st}.f64"
            if T == "float":
                t(f"%{st}.v = fptrunc double %{st}.f64 to float")
                v = f"%{st}.v"
            t(f"%{st}.slot = getelementptr inbounds {T}, ptr %state, i64 {j}")
            t(f"store {T} {v}, ptr %{st}.slot")
        t("br label %scale")

    def check_scale(self) -> None:
        """The seed: the scale, divided by n for a mean."""
        t, n, k = self.t, self.n, self.k_state
        t.label("scale")
        t.comment("the scale: an exact float; then `mean`: True (the seed is scale / n) or False (scale)")
        self.obj(n + k, "s")
        t("%s.ok = icmp eq ptr %s.type, %float_type")
        t(f"%mean.at = getelementptr inbounds ptr, ptr %args, i64 {n + k + 1}")
        t("%mean = load ptr, ptr %mean.at")
        t("%mean.true = icmp eq ptr %mean, %true")
        t("%mean.false = icmp eq ptr %mean, %false")
        t("%mean.bool = or i1 %mean.true, %mean.false")
        t("%s.mean.ok = and i1 %s.ok, %mean.bool")
        t("br i1 %s.mean.ok, label %alloc, label %decline")
        t.label("alloc")
        self.field("s", "given", FLOAT_VALUE, "double")
        t("%n.f64 = sitofp i64 %size.n to double")
        t("%s.per = fdiv double %s.given, %n.f64")
        t("%s.f64 = select i1 %mean.true, double %s.per, double %s.given")
        if self.T == "float":
            t("%seed = fptrunc double %s.f64 to float")

    def allocate(self) -> None:
        """A new array for each array parameter's gradient."""
        t, first = self.t, self.first
        for a in self.active_idx:
            if self.layouts[a] == "contig":
                t.comment(f"d/dp{a}: a new array like p{first} (PyArray_NewLikeArray, C order)")
                t(f"%g{a} = call ptr %new_like(ptr %p{first}, i32 0, ptr null, i32 0)")
                self.fail_unless(f"g{a}", f"g{a}")
                self.made.append(f"g{a}")
                self.field(f"g{a}", "data", ARRAY_DATA, "ptr")

    def call_driver(self) -> None:
        """The driver's call, kernel.py's ABI for the spec."""
        T, layouts = self.T, self.layouts
        args = ["i64 1", "i64 %size.n"]
        for i, lay in enumerate(layouts):
            scalar = f"%p{i}.v" if T == "float" else f"%p{i}.f64"
            args.append(f"{T} {scalar}" if lay == "scalar" else f"ptr %p{i}.data")
        if self.k_state:
            args.append("ptr %state")
        if self.spec.value == "sum":
            args.append("ptr %acc")
        args.append(f"{T} {'%seed' if T == 'float' else '%s.f64'}")
        for a in self.active_idx:
            args.append(f"ptr %g{a}.data" if layouts[a] == "contig" else f"ptr %g{a}.acc")
        if self.k_state:
            args += ["ptr %state_bar", "ptr %tape"]
        if self.large:
            self.t.comment("the driver without the GIL (PyEval_SaveThread / PyEval_RestoreThread): no Python")
            self.t.comment("object is touched until it is taken back")
            self.t("%thread = call ptr %save_thread()")
        self.t(f"call void %driver({', '.join(args)})")
        if self.large:
            self.t("call void %restore_thread(ptr %thread)")

    def result(self) -> None:
        """(value, gradients..., final states...), then the decline and failure paths."""
        t, T = self.t, self.T
        if self.spec.value == "sum":
            t(f"%acc.v = load {ACC}, ptr %acc")
            acc = self.as_dtype_value("%acc.v", "acc")
            value = acc     # a scan's value is its sum, unscaled (as runtime.scan_grads returns it)
            if not self.k_state:
                t(f"%value.f64 = fmul double {acc}, %s.f64")            # as the runtime's float(acc) * scale
                value = "%value.f64"
            t(f"%value = call ptr %float_from_double(double {value})")
            self.fail_unless("value", "value")
            self.made.append("value")
            items = ["%value"]
        else:
            t("call void %incref(ptr %none)")
            self.made.append("none")
            items = ["%none"]
        for a in self.active_idx:
            items.append(self.box(f"g{a}", f"%g{a}.acc", ACC) if self.layouts[a] == "scalar" else f"%g{a}")
        for j, st in enumerate(self.states):
            t(f"%{st}.out.at = getelementptr inbounds {T}, ptr %state, i64 {j}")
            items.append(self.box(f"{st}.out", f"%{st}.out.at", T))
        t(f"%result = call ptr %tuple_new(i64 {len(items)})")
        self.fail_unless("result", "result")
        t.comment("PyTuple_SetItem takes over each reference")
        for k, item in enumerate(items):
            t(f"%set{k} = call i32 %tuple_setitem(ptr %result, i64 {k}, ptr {item})")
        t("ret ptr %result")
        t.label("decline")
        t("call void %incref(ptr %not_implemented)")
        t("ret ptr %not_implemented")
        for label, held in self.failures:
            t.label(f"{label}.fail")
            t.comment("an exception is set: drop what was made, return NULL")
            for h in held:
                t(f"call void %decref(ptr %{h})")
            t("ret ptr null")

    def text(self) -> str:
        spec, T, n = self.spec, self.T, self.n
        head = [f"; The Python entry (METH_FASTCALL; see s2sad/codegen/llvm_entry.py) of drivers with {spec}, {T}:",
                f";   {self.name}({', '.join([f'p{i}' for i in range(n)] + self.states)}, scale, mean) -> "
                f"(value * seed, " + ", ".join([f"d/dp{i}" for i in self.active_idx] + [f"{s}'" for s in self.states])
                + "), or NotImplemented",
                ";   params: " + ", ".join(f"p{i} {l}" for i, l in enumerate(self.layouts)),
                f"define ptr @{self.name}(ptr %table.obj, ptr %args, i64 %nargs) {{",
                "entry:"]
        return "\n".join(head + self.t.lines + ["}", ""])


# ------------------------------------------------------------------ the Python side

class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


METH_FASTCALL = 0x0080
_state: dict = {}


def _word(address: int, offset: int, ctype=ctypes.c_uint64):
    return ctype.from_address(address + offset).value


def supported() -> bool:
    """Whether this process's objects have the layout the entries read (checked once on
    live objects) and numpy's C API table can be found."""
    if "ok" not in _state:
        _state["ok"] = False
        try:
            if sysconfig.get_config_var("Py_GIL_DISABLED") or hasattr(sys, "gettotalrefcount"):
                return False
            a = np.zeros((3, 5), np.float64)[1:]
            f = 2.5
            ok = (_word(id(a), OB_TYPE) == id(np.ndarray) and _word(id(f), OB_TYPE) == id(float)
                  and _word(id(a), ARRAY_DATA) == a.ctypes.data
                  and _word(id(a), ARRAY_ND, ctypes.c_int32) == 2
                  and [_word(_word(id(a), ARRAY_DIMS), 8 * k, ctypes.c_int64) for k in range(2)] == [2, 5]
                  and _word(id(a), ARRAY_DESCR) == id(a.dtype)
                  and _word(id(a), ARRAY_FLAGS, ctypes.c_int32) & CARRAY == CARRAY
                  and not _word(id(a.T), ARRAY_FLAGS, ctypes.c_int32) & 1
                  and ctypes.c_double.from_address(id(f) + FLOAT_VALUE).value == 2.5)
            if ok:
                _state["new_like"] = _new_like_address()
                _state["ok"] = _state["new_like"] is not None
        except Exception:  # noqa: BLE001 - anything unexpected: no entries
            _state["ok"] = False
    return _state["ok"]


def _new_like_address() -> int | None:
    api = ctypes.pythonapi
    core = getattr(np, "_core", None) or np.core
    capsule = core._multiarray_umath._ARRAY_API
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    table = api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))
    if not table:
        return None
    return ctypes.c_void_p.from_address(table + 8 * NEW_LIKE_SLOT).value


def _table(dtype, driver_address: int) -> np.ndarray:
    api = ctypes.pythonapi

    def fn(name: str) -> int:
        return ctypes.cast(getattr(api, name), ctypes.c_void_p).value

    values = {"driver": driver_address, "new_like": _state["new_like"], "array_type": id(np.ndarray), "descr": id(np.dtype(dtype)),
              "float_type": id(float), "not_implemented": id(NotImplemented), "none": id(None),
              "true": id(True), "false": id(False),
              "incref": fn("Py_IncRef"), "decref": fn("Py_DecRef"),
              "float_from_double": fn("PyFloat_FromDouble"), "tuple_new": fn("PyTuple_New"),
              "tuple_setitem": fn("PyTuple_SetItem"),
              "save_thread": fn("PyEval_SaveThread"), "restore_thread": fn("PyEval_RestoreThread")}
    return np.array([values[s] for s in SLOTS + LARGE_SLOTS], dtype=np.uint64)


def python_entry(driver_address: int, entry_address: int, name: str, dtype, keepalive=None):
    """The entry at `entry_address`, bound to the driver at `driver_address`, as a Python
    function (a builtin method whose `self` is its table); None where entries are not
    supported."""
    if not supported():
        return None
    api = ctypes.pythonapi
    api.PyCFunction_NewEx.restype = ctypes.py_object
    api.PyCFunction_NewEx.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
    table = _table(dtype, driver_address)
    cname = name.encode()
    mdef = _MethodDef(cname, entry_address, METH_FASTCALL, None)
    fn = api.PyCFunction_NewEx(ctypes.addressof(mdef), table, None)
    # the method definition, its name and the code must outlive the function
    _state.setdefault("keep", []).append((mdef, cname, keepalive))
    return fn

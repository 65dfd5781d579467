"""Drivers: the loops that apply a kernel module's entry over the index space.

`lower_module` renders a module's scalar functions (`llvm_lower`) and one driver with
the C ABI of kernel.py, chosen by the type of the spec:

- `LoopSpec` (`_emit_loop_driver`): every element independently, row-major; sums are
  carried in registers with `reassoc nsz` adds so that the loop vectorises.
- `ScanSpec` (`_emit_scan_driver`, `_ScanSweeps`): the elements in order (flat index),
  in blocks of BLOCK; the state-free part of the entry (`passes/scansplit.py`) runs over
  a block as a vectorised loop into stack buffers, then the block's serial chain with
  the k states (and lambda, the adjoint of the state) in phis. With a tape, the forward
  sweep stores the state before each element and the reverse sweep walks the blocks
  backwards calling the dual at (params(e), tape[e]); without one (no partial depends
  on the state), one serial loop runs the forward chain on a block and the reverse
  chain on its mirror block.

Both are built from `_DriverBody`: arguments by layout, element addressing, gradient
updates, `nest` (the loop driver's two counted loops, o outer and i inner) and `loop`
(one counted loop whose body may hold loops).

Sums (the value's and each scalar param's gradient, kernel.py's `acc` and GRAD(scalar))
are carried and stored as double whatever the dtype (`ACC`): a float32 term is widened
before it is added, so that 10^7 float32 terms sum with float64's error, not float32's
(a float32 sum of 2e7 x 0.1 is 0.3% off). The caller rounds the total to the dtype.
Likewise a float32 column's gradient (a param broadcast along the inner axis) is summed
over each row in a double, added into its float cell once per row (`nest`'s row sums).
For float64 nothing is widened: the float64 drivers are what they were. A float32 loop
with double sums would be vectorised at double's width (half the lanes, and libmvec's
float variants not called): its inner loop is given float32's width (`LOOP_HINT`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..kernel import STRIDED_LAYOUTS, KernelModule, LoopSpec, ScanSpec
from ..passes.scansplit import scan_plan
from .llvm_lower import ALL_VECTOR_ISAS, Body, LoweringError, ModuleWriter, driver_name, ir_ref

__all__ = ["lower_module", "driver_name", "ACC"]

# the type of every sum a driver carries and of the memory it adds them into
ACC = "double"
# the loop metadata that asks the vectoriser for a width (in lanes): !{n} and !{n + 1}
LOOP_HINT = 100


def lower_module(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype, *,
                 vector_isas: Iterable[str] = ALL_VECTOR_ISAS,
                 available: Callable[[str], bool] | None = None, own_math: bool = True,
                 vector_bits: int | None = None) -> str:
    """LLVM IR text of the module for (kmod, spec, dtype); see `llvm_lower`'s docstring.

    `vector_isas` are the libmvec ISAs (of "b", "d", "e") whose variants calls may name
    (each function calls the widest); `available(symbol)` filters the variants (the JIT
    passes what this host can run). `own_math`: s2sad's own vector math (`vecmath`) for
    the functions without a variant; else those call libm. `vector_bits`: the host's
    vector width, for s2sad's own vector functions where no libmvec ISA gives it.
    """
    plan = extra = None
    if isinstance(spec, ScanSpec):
        emit = _emit_scan_driver
        plan = scan_plan(kmod, spec.n_state, spec.grads)
        extra = {f.name: f for part in (plan.primal, plan.dual) if part is not None and part.pre is not None
                 for f in (part.pre, part.rest)}
        kmod = dataclasses.replace(kmod, functions={**kmod.functions, **extra})
    elif isinstance(spec, LoopSpec):
        emit = _emit_loop_driver
    else:
        raise TypeError(f"a driver is made from a LoopSpec or a ScanSpec, not {type(spec).__name__}")
    m = ModuleWriter(kmod, spec, dtype, vector_isas, available, own_math, vector_bits)
    if plan is not None:
        m.scan_plan = plan
        m.extra_roots = tuple(extra)
    return m.render(emit)


# ---------------------------------------------------------------------------------
# the parts both drivers share

@dataclass
class _Carried:
    """A value carried through a loop nest in phis."""

    init: str       # its value before the nest
    outer: str      # phi in outer.cond: before each row, and after the nest (in exit)
    cur: str        # phi in inner.cond: before the element the body handles
    nxt: str        # after that element: the body defines it


class _DriverBody(Body):
    """A driver function under construction: its signature and its blocks."""

    def __init__(self, m: ModuleWriter) -> None:
        super().__init__(m.ty)
        self.m = m
        self.sig: list[str] = []
        # inside a nest body: the element's indices and the rows of strided operands
        self.i = self.flat = ""
        self.rows: dict[str, str] = {}
        self.n_inner = ""
        self.A = ACC
        self.lanes = 0      # > 0: the inner loop asks the vectoriser for this many lanes
        self.row_carried: dict[str, _Carried] = {}    # column grads' row sums (`nest`)

    def widen(self, v: str, hint: str) -> str:
        """v (of the dtype) as an ACC term: fpext for float32, v itself for float64."""
        if self.T == self.A:
            return v
        return self.inst(hint + ".wide", f"fpext {self.T} {v} to {self.A}")

    def accumulate(self, into: str, cur: str, v: str, hint: str) -> None:
        """into = cur + v in ACC, reassociable so that the loop vectorises."""
        self.emit(f"{into} = fadd reassoc nsz {self.A} {cur}, {self.widen(v, hint)}")

    # -- the signature

    def arg(self, kind: str, base: str) -> str:
        ref = self.local(base)
        self.sig.append(f"{kind} {ref}")
        return ref

    def layout_args(self, base: str, layout: str) -> tuple:
        """("scalar", v) | ("contig", p, base) | (layout, p, base, so, si) for the strided
        layouts (strided, row, column)."""
        if layout == "scalar":
            return ("scalar", self.arg(self.T, base))
        ptr = self.arg("ptr noalias", base)
        if layout == "contig":
            return ("contig", ptr, base)
        return (layout, ptr, base, self.arg("i64", base + ".so"), self.arg("i64", base + ".si"))

    def grad_args(self, base: str, layout: str) -> tuple:
        """GRAD(a) of kernel.py: a scalar param's gradient is ("sum", g, base), g[0] += sum."""
        if layout == "scalar":
            return ("sum", self.arg("ptr noalias", base), base)
        return self.layout_args(base, layout)

    def seed_arg(self, kind: str) -> str:
        return self.arg(self.T if kind == "scalar" else "ptr noalias", "seed")

    def render_driver(self) -> str:
        head = f"define void {ir_ref('@', self.m.driver)}({', '.join(self.sig)}) #1 {{\n"
        text = head + self.render_blocks() + "\n}"
        if self.lanes:
            text += (f"\n\n!{LOOP_HINT} = distinct !{{!{LOOP_HINT}, !{LOOP_HINT + 1}}}\n"
                     f"!{LOOP_HINT + 1} = !{{!\"llvm.loop.vectorize.width\", i32 {self.lanes}}}")
        return text

    def dtype_lanes(self) -> int:
        """The vector width in lanes of the dtype: the widest libmvec variant's, else
        s2sad's own vector math's or the host's (0: not known)."""
        bits = self.m.vector_bits or self.m.own_vector_bits
        return bits // self.m.ty.bits if bits else 0

    # -- the loop nest

    def nest(self, n_outer: str, n_inner: str, operands: list, carried: list[tuple[str, str]],
             body: Callable[[list[_Carried]], None], reverse: bool = False, prefix: str = "",
             row_sums: list[tuple[str, tuple]] = ()) -> list[_Carried]:
        """Loops o over [0, n_outer), i over [0, n_inner) (both backwards when `reverse`),
        entered from the current block. `carried` are (phi base name, initial value), sums
        of type ACC;
        `body(carried)` emits the element's code (one block: self.i and self.flat are its
        indices) and defines each `nxt`. Leaves the exit block open, where each `outer`
        holds the value after the last element. `row_sums` are (base name, column grad
        group): ACC sums from 0.0 at each row (in `self.row_carried` by pointer while the
        body is emitted; the body defines each `nxt`), added into the column's T cell
        after the row."""
        lab = lambda name: ir_ref("%", name)  # noqa: E731
        o_cond = self.new_block(prefix + "outer.cond")
        o_body = self.new_block(prefix + "outer.body")
        i_cond = self.new_block(prefix + "inner.cond")
        i_body = self.new_block(prefix + "inner.body")
        o_latch = self.new_block(prefix + "outer.latch")
        exit_ = self.new_block(prefix + "exit")
        if reverse:     # counters o.left, i.left run from n down to 1; the index is one less
            o_phi, o_step, i_phi, i_step = (self.local(n) for n in ("o.left", "o", "i.left", "i"))
        else:
            o_phi, o_step, i_phi, i_step = (self.local(n) for n in ("o", "o.next", "i", "i.next"))
        cs = [_Carried(init, self.local(base + ".o"), self.local(base + ".i"), self.local(base + ".next"))
              for base, init in carried]
        rs = [_Carried("0.0", "", self.local(base + ".row"), self.local(base + ".row.next")) for base, _ in row_sums]
        self.row_carried = {g[1]: c for (_, g), c in zip(row_sums, rs)}
        pre = self.label
        self.br(o_cond)

        self.start(o_cond)
        self.emit(f"{o_phi} = phi i64 [ {n_outer if reverse else 0}, {lab(pre)} ], "
                  f"[ {o_step}, {lab(o_latch)} ]")
        for c in cs:
            self.emit(f"{c.outer} = phi {self.A} [ {c.init}, {lab(pre)} ], [ {c.cur}, {lab(o_latch)} ]")
        more = (self.inst("outer.more", f"icmp sgt i64 {o_phi}, 0") if reverse
                else self.inst("outer.more", f"icmp slt i64 {o_phi}, {n_outer}"))
        self.cbr(more, o_body, exit_)

        self.start(o_body)
        if reverse:
            self.emit(f"{o_step} = add nsw i64 {o_phi}, -1")
        o = o_step if reverse else o_phi
        row = self.inst("row", f"mul nsw i64 {o}, {n_inner}")
        self.rows = {}
        for group in operands:
            if group[0] in STRIDED_LAYOUTS:
                self.rows[group[1]] = self.inst(group[2] + ".row", f"mul nsw i64 {o}, {group[3]}")
        self.br(i_cond)

        self.start(i_cond)
        self.emit(f"{i_phi} = phi i64 [ {n_inner if reverse else 0}, {lab(o_body)} ], "
                  f"[ {i_step}, {lab(i_body)} ]")
        for c in cs:
            self.emit(f"{c.cur} = phi {self.A} [ {c.outer}, {lab(o_body)} ], [ {c.nxt}, {lab(i_body)} ]")
        for c in rs:
            self.emit(f"{c.cur} = phi {self.A} [ 0.0, {lab(o_body)} ], [ {c.nxt}, {lab(i_body)} ]")
        more = (self.inst("inner.more", f"icmp sgt i64 {i_phi}, 0") if reverse
                else self.inst("inner.more", f"icmp slt i64 {i_phi}, {n_inner}"))
        self.cbr(more, i_body, o_latch)

        self.start(i_body)
        if reverse:
            self.emit(f"{i_step} = add nsw i64 {i_phi}, -1")
        self.i = i_step if reverse else i_phi
        self.flat = self.inst("flat", f"add nsw i64 {row}, {self.i}")
        body(cs)
        assert self.label == i_body, "a nest body is one block"
        if not reverse:
            self.emit(f"{i_step} = add nsw i64 {i_phi}, 1")
        if self.lanes:
            self.terminate(f"br label {lab(i_cond)}, !llvm.loop !{LOOP_HINT}", i_cond)
        else:
            self.br(i_cond)

        self.start(o_latch)
        for (base, g), c in zip(row_sums, rs):     # the row's sum into the column's cell
            p = self.inst(base + ".ptr", f"getelementptr inbounds {self.T}, ptr {g[1]}, i64 {self.rows[g[1]]}")
            old = self.widen(self.inst(base + ".old", f"load {self.T}, ptr {p}"), base + ".old")
            new = self.inst(base + ".new", f"fadd {self.A} {old}, {c.cur}")
            self.emit(f"store {self.T} {self.inst(base + '.new.t', f'fptrunc {self.A} {new} to {self.T}')}, ptr {p}")
        if not reverse:
            self.emit(f"{o_step} = add nsw i64 {o_phi}, 1")
        self.br(o_cond)

        self.start(exit_)
        return cs

    def loop(self, lo: str, hi: str, inits: list[str], hints: list[str],
             body: Callable[[str, list[str]], list[str]], reverse: bool = False, prefix: str = "",
             types: list[str] | None = None) -> list[str]:
        """A counted loop over e in [lo, hi) (from hi - 1 down to lo when `reverse`),
        entered from the current block, carrying values in phis (`inits`, named after
        `hints`, of `types`: the dtype's when not given). `body(e, values)` may emit blocks;
        it returns the values after element e. Leaves the exit block open; returns the
        values after the last element."""
        types = types or [self.T] * len(inits)
        lab = lambda name: ir_ref("%", name)  # noqa: E731
        enter = self.label
        cond, body_b, exit_ = (self.new_block(prefix + n) for n in ("cond", "body", "exit"))
        self.br(cond)
        self.start(cond)
        cond_lines = self.cur
        idx = self.local(prefix + ("left" if reverse else "e"))
        curs = [self.local(h) for h in hints]
        test = f"icmp sgt i64 {idx}, {lo}" if reverse else f"icmp slt i64 {idx}, {hi}"
        self.cbr(self.inst(prefix + "more", test), body_b, exit_)
        self.start(body_b)
        e = self.inst(prefix + "e", f"add nsw i64 {idx}, -1") if reverse else idx
        nxts = body(e, curs)
        step = e if reverse else self.inst(prefix + "e.next", f"add nsw i64 {idx}, 1")
        latch = self.label
        self.br(cond)
        phis = [f"{idx} = phi i64 [ {hi if reverse else lo}, {lab(enter)} ], [ {step}, {lab(latch)} ]"]
        phis += [f"{c} = phi {t} [ {i}, {lab(enter)} ], [ {x}, {lab(latch)} ]"
                 for c, t, i, x in zip(curs, types, inits, nxts)]
        cond_lines[0:0] = ["  " + p for p in phis]
        self.start(exit_)
        return curs

    def strided_ptr(self, group, e: str) -> str:
        """&p[o*so + i*si] of flat element e = o*n_inner + i."""
        o = self.inst(group[2] + ".o", f"sdiv i64 {e}, {self.n_inner}")
        i = self.inst(group[2] + ".i", f"srem i64 {e}, {self.n_inner}")
        row = self.inst(group[2] + ".row", f"mul nsw i64 {o}, {group[3]}")
        return self.elem_ptr(group[1], self._in_row(group, row, i), group[2])

    def _in_row(self, group, row: str, i: str) -> str:
        """The index of element i of a strided operand's row that starts at `row`: its
        inner stride is known for a row (1) or a column (0)."""
        if group[0] == "column":
            return row
        col = i if group[0] == "row" else self.inst(group[2] + ".col", f"mul nsw i64 {i}, {group[4]}")
        return self.inst(group[2] + ".idx", f"add nsw i64 {row}, {col}")

    def read_at(self, group, e: str, base: str) -> str:
        """A param's value at flat element e (scalar, contig or strided)."""
        if group[0] == "scalar":
            return group[1]
        p = self.elem_ptr(group[1], e, group[2]) if group[0] == "contig" else self.strided_ptr(group, e)
        return self.inst(base + ".v", f"load {self.T}, ptr {p}")

    # -- the element (inside a nest body)

    def elem_ptr(self, ptr: str, index: str, base: str) -> str:
        return self.inst(base + ".ptr", f"getelementptr inbounds {self.T}, ptr {ptr}, i64 {index}")

    def flat_ptr(self, ptr: str, base: str) -> str:
        return self.elem_ptr(ptr, self.flat, base)

    def address(self, group) -> str:
        T = self.T
        if group[0] == "contig":
            return self.flat_ptr(group[1], group[2])
        idx = self._in_row(group, self.rows[group[1]], self.i)
        return self.inst(group[2] + ".ptr", f"getelementptr inbounds {T}, ptr {group[1]}, i64 {idx}")

    def read(self, group, base: str) -> str:
        if group[0] == "scalar":
            return group[1]
        return self.inst(base + ".v", f"load {self.T}, ptr {self.address(group)}")

    def seed_value(self, seed: str, kind: str) -> str:
        if kind == "scalar":
            return seed
        return self.inst("seed.v", f"load {self.T}, ptr {self.flat_ptr(seed, 'seed')}")

    def call(self, callee: str, args: list[str], hint: str) -> tuple[str, str]:
        """Call a kernel function; (its return type, the result)."""
        T = self.T
        rtype = self.m.ret_type(callee)
        argstr = ", ".join(f"{T} {a}" for a in args)
        return rtype, self.inst(hint, f"call {rtype} {ir_ref('@', self.m.llnames[callee])}({argstr})")

    def add_to_grad(self, g, base: str, contrib: str, sums: dict[str, _Carried]) -> None:
        """GRAD(a) += contrib at this element (a contig gradient is stored)."""
        T = self.T
        if g[0] == "sum":
            c = sums[g[1]]
            self.accumulate(c.nxt, c.cur, contrib, base)
        elif g[0] == "contig":
            self.emit(f"store {T} {contrib}, ptr {self.flat_ptr(g[1], base)}")
        elif g[0] == "column" and g[1] in self.row_carried:
            c = self.row_carried[g[1]]
            self.accumulate(c.nxt, c.cur, contrib, base)
        else:
            # a column's element is summed over the inner loop: reassociated, so that the
            # loop vectorises; anything else in element order (a row's sum then has
            # numpy's bits: runtime.leading_broadcast)
            fast = " reassoc nsz" if g[0] == "column" else ""
            p = self.address(g)
            old = self.inst(base + ".old", f"load {T}, ptr {p}")
            new = self.inst(base + ".new", f"fadd{fast} {T} {old}, {contrib}")
            self.emit(f"store {T} {new}, ptr {p}")

    def flush_sum(self, name: str, ptr: str, total: str) -> None:
        """ptr[0] += total (after a nest), both ACC."""
        A = self.A
        old = self.inst(name + ".old", f"load {A}, ptr {ptr}")
        new = self.inst(name + ".new", f"fadd {A} {old}, {total}")
        self.emit(f"store {A} {new}, ptr {ptr}")


def _active_indices(kmod: KernelModule, names: Iterable[str], params: tuple[str, ...]) -> list[int]:
    out = []
    for a in names:
        if a not in params:
            raise LoweringError(f"active parameter {a!r} is not a parameter of {kmod.entry!r}")
        out.append(params.index(a))
    return out


# ---------------------------------------------------------------------------------
# LoopSpec: every element independently

def _emit_loop_driver(m: ModuleWriter) -> str:
    kmod, spec = m.kmod, m.spec
    T = m.ty.name
    d = _DriverBody(m)

    if len(spec.layouts) != len(kmod.params):
        raise LoweringError(f"spec has {len(spec.layouts)} layouts for {len(kmod.params)} parameters")
    n_outer = d.arg("i64", "n_outer")
    n_inner = d.arg("i64", "n_inner")
    params = [d.layout_args(p, lay) for p, lay in zip(kmod.params, spec.layouts)]
    out = d.arg("ptr noalias", "out") if spec.value == "store" else None
    acc = d.arg("ptr noalias", "acc") if spec.value == "sum" else None
    seed = d.seed_arg(spec.seed) if spec.partials else None
    active_idx = _active_indices(kmod, kmod.active if spec.needs_dual else (), kmod.params)
    grads = ([d.grad_args(kmod.params[k] + "_bar", spec.layouts[k]) for k in active_idx]
             if spec.partials else [])
    tangents = ([d.layout_args(kmod.params[k] + "_dot", spec.layouts[k]) for k in active_idx]
                if spec.tangents else [])
    out_dot = d.arg("ptr noalias", "out_dot") if spec.tangents else None

    callee = kmod.dual_entry if spec.needs_dual else kmod.entry
    arity = m.arity(callee)
    if spec.needs_dual and arity != 1 + len(active_idx):
        raise LoweringError(f"{callee} returns {arity} values; the value and {len(active_idx)} partials are due")
    if not spec.needs_dual and arity != 1:
        raise LoweringError(f"{callee} returns {arity} values where one is due")

    # sums carried in registers and added into memory once, at the end: (base name, pointer)
    accs: list[tuple[str, str]] = []
    if acc:
        accs.append(("value", acc))
    accs.extend((g[2], g[1]) for g in grads if g[0] == "sum")
    acc_names = {ptr: d.fresh(name + ".sum") for name, ptr in accs}
    # a float32 column's gradient: a double sum per row (`nest`)
    row_sums = [(g[2] + ".col", g) for g in grads if g[0] == "column"] if d.T != d.A else []
    if (accs or row_sums) and d.T != d.A:     # double sums in a float32 loop: vectorise at float32's width
        d.lanes = d.dtype_lanes()

    d.start(d.new_block("entry"))

    def element(cs: list[_Carried]) -> None:
        sums = {ptr: c for (_, ptr), c in zip(accs, cs)}
        args = [d.read(g, p) for g, p in zip(params, kmod.params)]
        if arity == 1:
            _, value = d.call(callee, args, "value")
            partials = []
        else:
            rtype, res = d.call(callee, args, "dual")
            value = d.inst("value", f"extractvalue {rtype} {res}, 0")
            partials = [d.inst(kmod.params[k] + ".partial", f"extractvalue {rtype} {res}, {n + 1}")
                        for n, k in enumerate(active_idx)]
        if out:
            d.emit(f"store {T} {value}, ptr {d.flat_ptr(out, 'out')}")
        if acc:
            c = sums[acc]
            d.accumulate(c.nxt, c.cur, value, "value")
        if spec.partials:
            s = d.seed_value(seed, spec.seed)
            for k, g, dv in zip(active_idx, grads, partials):
                base = kmod.params[k] + "_bar"
                d.add_to_grad(g, base, d.inst(base + ".c", f"fmul {T} {dv}, {s}"), sums)
        if spec.tangents:
            total = "0.0"
            for k, t, dv in zip(active_idx, tangents, partials):
                tv = d.read(t, kmod.params[k] + "_dot")
                prod = d.inst(kmod.params[k] + ".jvp", f"fmul {T} {dv}, {tv}")
                total = d.inst("out_dot.sum", f"fadd {T} {total}, {prod}")
            d.emit(f"store {T} {total}, ptr {d.flat_ptr(out_dot, 'out_dot')}")

    cs = d.nest(n_outer, n_inner, params + grads + tangents,
                [(acc_names[ptr], "0.0") for _, ptr in accs], element, row_sums=row_sums)
    for (name, ptr), c in zip(accs, cs):
        d.flush_sum(name, ptr, c.outer)
    d.terminate("ret void")
    return d.render_driver()


# ---------------------------------------------------------------------------------
# ScanSpec: the elements in order, threading the state

@dataclass
class _ScanSig:
    """The scan driver's arguments (kernel.py's C ABI) and what its sweeps need to know."""

    names: tuple[str, ...]          # the non-state params
    states: tuple[str, ...]         # the k state params
    n_outer: str
    n_inner: str
    params: list                    # layout groups of the non-state params
    state: str
    out: str | None
    acc: str | None
    active_idx: list[int]           # positions in `names` of the active params
    n_wrt: int = 0                  # len(dual_wrt): the active params, then the states
    seed: str = ""
    grads: list = field(default_factory=list)   # grad groups, one per active param
    state_bar: str = ""
    tape: str = ""


# elements per block: the state-free part of a block runs as one vectorised loop into
# buffers on the stack (BLOCK values each), then the block's serial chain reads them
BLOCK = 256


def _emit_scan_driver(m: ModuleWriter) -> str:
    """kernel.py's scan driver over blocks of BLOCK elements (see `_ScanSweeps`): without
    grads the forward sweep; with grads and a plan without tape, one pass whose serial
    loop runs the forward chain on block b and the reverse chain on its mirror block at
    once; with a tape, the forward sweep, then the reverse sweep."""
    d = _DriverBody(m)
    sig = _scan_signature(d)
    d.start(d.new_block("entry"))
    sw = _ScanSweeps(d, sig, m.scan_plan)
    if not m.spec.grads:
        sw.forward()
    elif m.scan_plan.tape:
        sw.forward()
        sw.reverse()
    else:
        sw.fused()
    sw.finish()
    d.terminate("ret void")
    return d.render_driver()


def _scan_signature(d: _DriverBody) -> _ScanSig:
    """Declare the arguments, after checking the module against the contract."""
    m = d.m
    kmod, spec = m.kmod, m.spec
    k, n_params = spec.n_state, len(spec.layouts)
    if n_params + k != len(kmod.params):
        raise LoweringError(f"scan spec has {n_params} layouts and {k} states for "
                            f"{len(kmod.params)} parameters of {kmod.entry!r}")
    names, states = kmod.params[:n_params], kmod.params[n_params:]
    arity = m.arity(kmod.entry)
    if arity != 1 + k:
        raise LoweringError(f"{kmod.entry} returns {arity} values; the value and {k} states are due")
    sig = _ScanSig(names=names, states=states, n_outer=d.arg("i64", "n_outer"),
                   n_inner=d.arg("i64", "n_inner"),
                   params=[d.layout_args(p, lay) for p, lay in zip(names, spec.layouts)],
                   state=d.arg("ptr noalias", "state"),
                   out=d.arg("ptr noalias", "out") if spec.value == "store" else None,
                   acc=d.arg("ptr noalias", "acc") if spec.value == "sum" else None, active_idx=[])
    if not spec.grads:
        return sig
    wrt = tuple(kmod.active)
    if k and wrt[len(wrt) - k:] != states:
        raise LoweringError(f"the dual of a scan differentiates w.r.t. the active params, then "
                            f"the states {states}; {kmod.name} has active={wrt}")
    sig.active_idx = _active_indices(kmod, wrt[:len(wrt) - k], names)
    sig.n_wrt = len(wrt)
    arity = m.arity(kmod.dual_entry)
    if arity != (1 + k) * (1 + sig.n_wrt):
        raise LoweringError(f"{kmod.dual_entry} returns {arity} values; a scan's dual returns "
                            f"{(1 + k) * (1 + sig.n_wrt)}: (value, states, (1 + {k}) x {sig.n_wrt} partials)")
    sig.seed = d.seed_arg(spec.seed)
    sig.grads = [d.grad_args(names[a] + "_bar", spec.layouts[a]) for a in sig.active_idx]
    sig.state_bar = d.arg("ptr noalias", "state_bar")
    sig.tape = d.arg("ptr noalias", "tape")
    return sig


class _Part:
    """One sweep's function: the entry (or dual) itself, or its split (scansplit.py):
    `pre` over a block into stack buffers, then `rest` per element reading them."""

    def __init__(self, d: _DriverBody, fname: str, split, hint: str) -> None:
        self.d = d
        self.split = split
        self.fname = split.rest.name if split is not None and split.pre is not None else fname
        self.bufs = []
        if split is not None and split.pre is not None:
            self.bufs = [d.inst(f"{hint}.buf", f"alloca [{BLOCK} x {d.T}], align 64")
                         for _ in range(split.n_iface)]

    def prepass(self, sig: _ScanSig, lo: str, hi: str, hint: str) -> None:
        """pre(params(e)) into the buffers, for e in [lo, hi): a loop the vectoriser takes."""
        if not self.bufs:
            return
        d = self.d
        pre = self.split.pre.name

        def body(e: str, curs: list[str]) -> list[str]:
            args = [d.read_at(g, e, p) for g, p in zip(sig.params, sig.names)]
            rtype, res = d.call(pre, args, "pre")
            slot = d.inst("slot", f"sub nsw i64 {e}, {lo}")
            for j, buf in enumerate(self.bufs):
                v = res if len(self.bufs) == 1 else d.inst("pre.v", f"extractvalue {rtype} {res}, {j}")
                d.emit(f"store {d.T} {v}, ptr {d.elem_ptr(buf, slot, 'buf')}")
            return []

        d.loop(lo, hi, [], [], body, prefix=hint + ".pre.")

    def args(self, sig: _ScanSig, e: str, slot: str) -> list[str]:
        d = self.d
        args = [d.read_at(g, e, p) for g, p in zip(sig.params, sig.names)]
        return args + [d.inst("buf.v", f"load {d.T}, ptr {d.elem_ptr(b, slot, 'buf')}") for b in self.bufs]


class _ScanSweeps:
    """The loops of a scan driver. The elements are taken in blocks of BLOCK; in each, the
    state-free part (`_Part.prepass`) runs first, then the serial chain. The forward
    chain calls the primal entry (or its `rest`), the reverse chain the dual at the state
    before the element: read from the tape, or, when the plan has no tape (the partials
    do not depend on the state), any state (0.0: the dual's `rest` without loops)."""

    def __init__(self, d: _DriverBody, sig: _ScanSig, plan) -> None:
        self.d, self.sig, self.plan = d, sig, plan
        spec, T, k = d.m.spec, d.T, len(sig.states)
        d.n_inner = sig.n_inner
        self.n = d.inst("n", f"mul nsw i64 {sig.n_outer}, {sig.n_inner}")
        more = d.inst("blocks.up", f"add nsw i64 {self.n}, {BLOCK - 1}")
        self.nblocks = d.inst("blocks", f"sdiv i64 {more}, {BLOCK}")
        self.states = [d.inst(s + ".in", f"load {T}, ptr {d.elem_ptr(sig.state, str(j), s + '.in')}")
                       for j, s in enumerate(sig.states)]
        self.vsum = "0.0" if sig.acc else None
        self.fwd = _Part(d, d.m.kmod.entry, plan.primal, "fwd")
        self.lams: list[str] = []
        self.sum_grads = [(g[2], g[1]) for g in sig.grads if g[0] == "sum"]
        self.gsums = ["0.0"] * len(self.sum_grads)
        if spec.grads:
            self.lams = [d.inst(s + "_bar.in", f"load {T}, ptr {d.elem_ptr(sig.state_bar, str(j), s + '_bar.in')}")
                         for j, s in enumerate(sig.states)]
            self.rev = _Part(d, d.m.kmod.dual_entry, plan.dual, "rev")
        self.k = k

    # -- one block's bounds

    def bounds(self, kb: str) -> tuple[str, str, str]:
        d = self.d
        lo = d.inst("lo", f"mul nsw i64 {kb}, {BLOCK}")
        end = d.inst("end", f"add nsw i64 {lo}, {BLOCK}")
        full = d.inst("full", f"icmp slt i64 {end}, {self.n}")
        hi = d.inst("hi", f"select i1 {full}, i64 {end}, i64 {self.n}")
        return lo, hi, d.inst("count", f"sub nsw i64 {hi}, {lo}")

    # -- one element

    def forward_element(self, e: str, slot: str, states: list[str], vsum: str | None) -> tuple[list[str], str | None]:
        d, sig, T, k = self.d, self.sig, self.d.T, self.k
        if self.plan.tape and d.m.spec.grads:
            for j, v in enumerate(states):
                d.emit(f"store {T} {v}, ptr {self.tape_slot(e, j)}")
        rtype, res = d.call(self.fwd.fname, self.fwd.args(sig, e, slot) + states, "step")
        if k == 0:
            value, new = res, []
        else:
            value = d.inst("value", f"extractvalue {rtype} {res}, 0")
            new = [d.inst(s + ".next", f"extractvalue {rtype} {res}, {j + 1}") for j, s in enumerate(sig.states)]
        if sig.out:
            d.emit(f"store {T} {value}, ptr {d.elem_ptr(sig.out, e, 'out')}")
        if sig.acc:
            nxt = d.local("value.sum")
            d.accumulate(nxt, vsum, value, "value")
            vsum = nxt
        return new, vsum

    def reverse_element(self, e: str, slot: str, lams: list[str], gsums: list[str]) -> tuple[list[str], list[str]]:
        """lambda (the adjoint of the state after e) ->  the adjoint of the state before e:
            grad(a)  += seed(e) * dv/da  + sum_j lambda_j * dsj'/da
            lambda_l  = seed(e) * dv/dsl + sum_j lambda_j * dsj'/dsl    (the old lambda on the right)
        summed in that order, as `run_scan` does."""
        d, sig, T, k = self.d, self.sig, self.d.T, self.k
        spec = d.m.spec
        if self.plan.tape:
            states = [d.inst(s + ".tape", f"load {T}, ptr {self.tape_slot(e, j)}") for j, s in enumerate(sig.states)]
        else:
            states = ["0.0"] * k
        rtype, res = d.call(self.rev.fname, self.rev.args(sig, e, slot) + states, "dual")
        sd = sig.seed if spec.seed == "scalar" else d.inst("seed.v", f"load {T}, ptr {d.elem_ptr(sig.seed, e, 'seed')}")

        def partial(row: int, w: int, hint: str) -> str:   # row 0: d value, row 1 + j: d sj'
            return d.inst(hint, f"extractvalue {rtype} {res}, {1 + k + row * sig.n_wrt + w}")

        def combine(w: int, base: str) -> str:
            total = d.inst(base + ".c", f"fmul {T} {partial(0, w, base + '.dv')}, {sd}")
            for j, s in enumerate(sig.states):
                prod = d.inst(base + ".c", f"fmul {T} {lams[j]}, {partial(1 + j, w, base + '.d' + s)}")
                total = d.inst(base + ".c", f"fadd {T} {total}, {prod}")
            return total

        gsums = list(gsums)
        n_sum = 0
        for n, (a, g) in enumerate(zip(sig.active_idx, sig.grads)):
            base = sig.names[a] + "_bar"
            contrib = combine(n, base)
            if g[0] == "sum":
                nxt = d.local(base + ".sum")
                d.accumulate(nxt, gsums[n_sum], contrib, base)
                gsums[n_sum] = nxt
                n_sum += 1
            elif g[0] == "contig":
                d.emit(f"store {T} {contrib}, ptr {d.elem_ptr(g[1], e, base)}")
            else:
                p = d.strided_ptr(g, e)
                old = d.inst(base + ".old", f"load {T}, ptr {p}")
                d.emit(f"store {T} {d.inst(base + '.new', f'fadd {T} {old}, {contrib}')}, ptr {p}")
        new = [combine(len(sig.active_idx) + j, s + "_bar") for j, s in enumerate(sig.states)]
        return new, gsums

    def tape_slot(self, e: str, j: int) -> str:
        """&tape[e*k + j]."""
        return self.d.inst(self.sig.states[j] + ".tape.ptr",
                           f"getelementptr inbounds [{self.k} x {self.d.T}], ptr {self.sig.tape}, i64 {e}, i32 {j}")

    # -- the sweeps

    def forward(self) -> None:
        """Blocks in order: the primal's pre-pass, then the chain (with a tape: the state
        before each element onto it)."""
        d, k = self.d, self.k
        has_sum = self.vsum is not None
        inits = self.states + ([self.vsum] if has_sum else [])
        hints = list(self.sig.states) + (["value.sum"] if has_sum else [])
        types = [d.T] * k + [d.A] * has_sum

        def block(kb: str, curs: list[str]) -> list[str]:
            lo, hi, count = self.bounds(kb)
            self.fwd.prepass(self.sig, lo, hi, "fwd")

            def step(t: str, cs: list[str]) -> list[str]:
                e = d.inst("e", f"add nsw i64 {lo}, {t}")
                new, vsum = self.forward_element(e, t, cs[:k], cs[k] if has_sum else None)
                return new + ([vsum] if has_sum else [])

            return d.loop("0", count, curs, hints, step, prefix="fwd.", types=types)

        out = d.loop("0", self.nblocks, inits, hints, block, prefix="fwd.block.", types=types)
        self.states = out[:k]
        if has_sum:
            self.vsum = out[k]

    def reverse(self) -> None:
        """Blocks backwards: the dual's pre-pass, then the chain backwards, reading the tape."""
        d, k = self.d, self.k
        inits = self.lams + self.gsums
        hints = [s + "_bar" for s in self.sig.states] + [nm + ".sum" for nm, _ in self.sum_grads]
        types = [d.T] * k + [d.A] * len(self.gsums)

        def block(kb: str, curs: list[str]) -> list[str]:
            lo, hi, count = self.bounds(kb)
            self.rev.prepass(self.sig, lo, hi, "rev")

            def step(t: str, cs: list[str]) -> list[str]:
                e = d.inst("e", f"add nsw i64 {lo}, {t}")
                lams, gsums = self.reverse_element(e, t, cs[:k], cs[k:])
                return lams + gsums

            return d.loop("0", count, curs, hints, step, reverse=True, prefix="rev.", types=types)

        out = d.loop("0", self.nblocks, inits, hints, block, reverse=True, prefix="rev.block.", types=types)
        self.lams, self.gsums = out[:k], out[k:]

    def fused(self) -> None:
        """No tape: block b forwards and its mirror block (the same elements counted from
        the end) backwards, in one serial loop: the two chains run side by side."""
        d, k = self.d, self.k
        has_sum = self.vsum is not None
        n_g = len(self.gsums)
        inits = self.states + ([self.vsum] if has_sum else []) + self.lams + self.gsums
        hints = (list(self.sig.states) + (["value.sum"] if has_sum else [])
                 + [s + "_bar" for s in self.sig.states] + [nm + ".sum" for nm, _ in self.sum_grads])
        nf = k + has_sum
        types = [d.T] * k + [d.A] * has_sum + [d.T] * k + [d.A] * n_g

        def block(kb: str, curs: list[str]) -> list[str]:
            lo, hi, count = self.bounds(kb)
            r_lo = d.inst("mirror.lo", f"sub nsw i64 {self.n}, {hi}")
            r_hi = d.inst("mirror.hi", f"sub nsw i64 {self.n}, {lo}")
            self.fwd.prepass(self.sig, lo, hi, "fwd")
            self.rev.prepass(self.sig, r_lo, r_hi, "rev")
            last = d.inst("last", f"add nsw i64 {count}, -1")

            def step(t: str, cs: list[str]) -> list[str]:
                e = d.inst("e", f"add nsw i64 {lo}, {t}")
                new, vsum = self.forward_element(e, t, cs[:k], cs[k] if has_sum else None)
                rt = d.inst("mirror.t", f"sub nsw i64 {last}, {t}")
                re = d.inst("mirror.e", f"add nsw i64 {r_lo}, {rt}")
                lams, gsums = self.reverse_element(re, rt, cs[nf:nf + k], cs[nf + k:])
                return new + ([vsum] if has_sum else []) + lams + gsums

            return d.loop("0", count, curs, hints, step, prefix="scan.", types=types)

        out = d.loop("0", self.nblocks, inits, hints, block, prefix="block.", types=types)
        self.states = out[:k]
        if has_sum:
            self.vsum = out[k]
        self.lams, self.gsums = out[nf:nf + k], out[nf + k:nf + k + n_g]

    def finish(self) -> None:
        d, sig, T = self.d, self.sig, self.d.T
        for j, (s, v) in enumerate(zip(sig.states, self.states)):
            d.emit(f"store {T} {v}, ptr {d.elem_ptr(sig.state, str(j), s + '.out')}")
        if sig.acc:
            d.flush_sum("value", sig.acc, self.vsum)
        for j, (s, v) in enumerate(zip(sig.states, self.lams)):
            d.emit(f"store {T} {v}, ptr {d.elem_ptr(sig.state_bar, str(j), s + '_bar.out')}")
        for (nm, ptr), v in zip(self.sum_grads, self.gsums):
            d.flush_sum(nm, ptr, v)

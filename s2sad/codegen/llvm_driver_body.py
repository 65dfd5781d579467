"""What both LLVM drivers (`llvm_drivers`' loop driver, `llvm_scan_driver`) are built from.

`DriverBody`: a driver function under construction, its arguments by layout, element
addressing, gradient updates, `nest` (two counted loops, o outer and i inner, with the
values carried in phis as `Carried`) and `loop` (one counted loop whose body may hold
loops). Sums are carried and stored in `ACC` (double) whatever the dtype; see
`llvm_drivers`' docstring for why. `LOOP_HINT` names the loop metadata that asks the
vectoriser for a width.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from ..kernel import STRIDED_LAYOUTS, KernelModule
from .llvm_lower import Body, LoweringError, ModuleWriter, ir_ref

__all__ = ["ACC", "LOOP_HINT", "Carried", "DriverBody", "active_indices"]

# the type of every sum a driver carries and of the memory it adds them into
ACC = "double"
# the loop metadata that asks the vectoriser for a width (in lanes): !{n} and !{n + 1}
LOOP_HINT = 100


@dataclass
class Carried:
    """A value carried through a loop nest in phis."""

    init: str       # its value before the nest
    outer: str      # phi in outer.cond: before each row, and after the nest (in exit)
    cur: str        # phi in inner.cond: before the element the body handles
    nxt: str        # after that element: the body defines it


class DriverBody(Body):
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
        self.row_carried: dict[str, Carried] = {}    # column grads' row sums (`nest`)

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
             body: Callable[[list[Carried]], None], reverse: bool = False, prefix: str = "",
             row_sums: list[tuple[str, tuple]] = ()) -> list[Carried]:
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
        cs = [Carried(init, self.local(base + ".o"), self.local(base + ".i"), self.local(base + ".next"))
              for base, init in carried]
        rs = [Carried("0.0", "", self.local(base + ".row"), self.local(base + ".row.next")) for base, _ in row_sums]
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

    def add_to_grad(self, g, base: str, contrib: str, sums: dict[str, Carried]) -> None:
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


def active_indices(kmod: KernelModule, names: Iterable[str], params: tuple[str, ...]) -> list[int]:
    out = []
    for a in names:
        if a not in params:
            raise LoweringError(f"active parameter {a!r} is not a parameter of {kmod.entry!r}")
        out.append(params.index(a))
    return out


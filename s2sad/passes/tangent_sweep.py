"""Array program -> its tangent program (forward mode), as Python source that runs.

    def loss__jvp(w, x, w_dot, x_dot, *, data):   # free data arrays are keyword arguments
        # <the user's line>
        h = matmul(x, w)
        h_dot = matmul(x_dot, w) + matmul(x, w_dot)
        a, a_dot = jvp(loss__k, (h, b), ('h', 'b'), (h_dot, b_dot))
        ...
        return a, a_dot

Every statement gives its value line and, where its target depends on the
differentiated arguments (adjoint_analysis.active_names: the same activity as the
adjoint), its tangent line `x_dot`: elementwise kernels in one pass of the runtime's `jvp` (their
dual: the one rules table), a kernel summed by the sum of its tangent kernel
(passes/tangent_kernels.py), scalar kernels through their dual's partials, array primitives through their entry's `jvp`
text (the output's tangent is the sum over its active operands), in-place writes and
lists grown in loops (SetItem, ListAppend: linear) as the same update of the tangents. A primitive whose
entry has no `jvp` (a `defvjp` rule) is refused, located at the user's line.
Loops carry each active phi's tangent beside it (a while loop, its test at the head of
its body, and a break, as the forward sweep runs them); `if`s join the tangents of both
branches as they join the values. The program is never changed; names come from a
copy of its Namer (AdjointContext).
"""
from __future__ import annotations

import gast

from .. import array_prims
from ..errors import UnsupportedOperationError
from ..frontend import location_of, shown_location as _short, source_line as _line
from ..parsing import ast_parse
from ..kernel_text import unparse
from .adjoint_context import AdjointContext
from .adjoint_text import param_texts, text_of, tuple_text
from .arrayir import (ArrayProgram, ArrayStmt, Const, ForStmt, IfStmt, KernelSum, ListAppend, LoopExit, Py, RunKernel,
                      SetItem, is_kernel, walk_stmts)
from .emitted import ProductCall, product_call, product_jvp_call, product_line
from .linemap import LocatedLine, located_lines, statement_comment
from .tangent_kernels import TangentKernels


class TangentSweep:
    """One tangent program's source, for the differentiated `argnums`; `generate` once."""

    def __init__(self, prog: ArrayProgram, argnums: tuple[int, ...]):
        self.p = prog
        self.argnums = argnums
        self.ctx = AdjointContext(prog, argnums, "auto")
        self.namer, self.ns = self.ctx.namer, self.ctx.ns
        self.is_active = self.ctx.is_active
        self.tangent_kernels = TangentKernels()
        self.dots: dict[str, str] = {}

    # -------------------------------------------------------------- names

    def dot(self, name: str) -> str:
        """The name of `name`'s tangent."""
        d = self.dots.get(name)
        if d is None:
            d = self.dots[name] = self.namer.fresh(f"{name}_dot")
        return d

    def dot_text(self, op) -> str:
        """An operand's tangent as source: its tangent's name, or a zero of its shape."""
        if self.is_active(op):
            return self.dot(op)
        return "0.0" if isinstance(op, Const) else f"zeros_bar({op})"

    def bind(self, name: str, value) -> str:
        """Bind `value` in the generated source's namespace under a fresh name."""
        nm = self.namer.fresh(name)
        self.ns[nm] = value
        return nm

    def tangent_kernel_name(self, st: ArrayStmt, active: tuple[str, ...], seeded: bool | int | str = False) -> str:
        kt = self.tangent_kernels.of(st.op.kernel, active, seeded)
        key = id(kt)
        got = self.ctx.kernel_names.get(key)
        if got is None:
            got = self.ctx.kernel_names[key] = self.bind(kt.name, kt)
        return got

    # -------------------------------------------------------------- the whole

    def generate(self) -> str:
        p = self.p
        lines: list[str] = []
        self.body(p.body, "    ", lines)
        res = p.result
        sig_params = list(p.params) + [self.dot(p.params[i]) for i in self.argnums]
        sig = ", ".join(sig_params) + (", *, " + ", ".join(p.free) if p.free else "")
        head = (f"# Tangent of: {_line(p.pf.filename, p.return_node)}    "
                f"[{_short(location_of(p.pf.filename, p.return_node))}]")
        text = (f"def {p.name}__jvp({sig}):\n    {head}\n" + "\n".join(lines)
                + f"\n    return {text_of(res)}, {self.dot_text(res)}\n")
        self.located = [LocatedLine("    " + head, location_of(p.pf.filename, p.return_node))] + located_lines(lines)
        ast_parse(text)   # the generated code is Python (a failure here is a bug of s2sad)
        return text

    def kernels_text(self) -> str:
        """The source of each kernel the program calls: the program's own, then each
        tangent kernel made from them (its scalar functions, the dual it calls included)."""
        seen, parts = set(), []
        for st in walk_stmts(self.p.body):
            if isinstance(st, ArrayStmt) and is_kernel(st.op) and id(st.op.kernel) not in seen:
                seen.add(id(st.op.kernel))
                parts.append(f"# Kernel {st.op.kernel.name}.\n" + st.op.kernel.module(()).source())
        for kt in self.tangent_kernels.made():
            parts.append(f"# Kernel {kt.name} ({kt.program.origins[kt.program.entry]}).\n" + kt.module(()).source())
        return "\n\n".join(parts)

    def namespace(self, helpers: dict, runtime_names: dict) -> dict:
        ns = dict(helpers)
        ns.update(self.p.bound)
        ns.update(self.ns)
        ns.update(runtime_names)
        return ns

    # -------------------------------------------------------------- statements

    def body(self, stmts, ind: str, out: list) -> None:
        last = None
        for st in stmts:
            if isinstance(st, ArrayStmt):
                node = st.stmt if st.stmt is not None else st.node
                if node is not None and node is not last:
                    out.append(statement_comment(ind, st.ctx.filename, node))
                    last = node
                self.stmt(st, ind, out)
            elif isinstance(st, ForStmt):
                last = None
                self.loop(st, ind, out)
            else:
                last = None
                self.branch(st, ind, out)

    def stmt(self, st: ArrayStmt, ind: str, out: list) -> None:
        if isinstance(st.op, LoopExit):     # a while's test, at the head of its body
            out.append(f"{ind}if not {text_of(st.args[0])}:\n{ind}    break")
            return
        active = self.is_active(st.target)
        if is_kernel(st.op):
            self.kernel(st, ind, out, active)
            return
        if isinstance(st.op, (SetItem, ListAppend)):
            self.functional_update(st, ind, out, active)
            return
        prim = array_prims.of(st.op)
        args = [text_of(a) for a in st.args]
        line = prim.forward(args, param_texts(st)) if prim and prim.forward else None
        if product_call(st) is not None:     # recorded: paired_products may join it with its tangent
            out.append(product_line(ind, st.target, product_call(st)))
        else:
            out.append(f"{ind}{st.target} = {line if line is not None else unparse(st.forward)}")
        if not active:
            return
        if prim is None or prim.jvp is None:
            what = st.op.label if isinstance(st.op, Py) else st.op.name
            if isinstance(st.node, gast.Call):
                what = unparse(st.node.func)
            raise UnsupportedOperationError(
                f"forward mode (jvp) through '{what}' is not supported: its rule ({st.op.name}) gives a VJP only",
                location_of(st.ctx.filename, st.node),
                hint="Use s2sad.vjp or s2sad.grad for this function, or write the operation with numpy "
                     "primitives s2sad knows.")
        params = param_texts(st)
        if prim.jvps is not None:     # one call from every operand's tangent
            dots = [self.dot(a) if self.is_active(a) else None for a in st.args]
            out.append(f"{ind}{self.dot(st.target)} = {prim.jvps(dots, args, st.target, params)}")
            return
        terms = [product_jvp_call(st, i, self.dot(a), args) or prim.jvp(i, self.dot(a), args, st.target, params)
                 for i, a in enumerate(st.args) if self.is_active(a)]
        if len(terms) == 1 and isinstance(terms[0], ProductCall):     # one product: recorded
            out.append(product_line(ind, self.dot(st.target), terms[0]))
            return
        out.append(f"{ind}{self.dot(st.target)} = {' + '.join(str(t) for t in terms)}")

    def functional_update(self, st: ArrayStmt, ind: str, out: list, active: bool) -> None:
        """`y_2 = set_items(y, index, v)` and `hs_2 = list_append(hs, item)`: linear in
        their operands, so the tangent is the same update of the operands' tangents. A
        differentiated value written into an integer array is refused (the forward
        sweep's setter, differentiated=True), as numpy would truncate it."""
        a, b = (text_of(x) for x in st.args)
        if isinstance(st.op, SetItem):
            index = unparse(st.op.index)
            line = f"{st.op.setter}({a}, {index}, {b}, differentiated=True)" if self.is_active(st.args[1]) \
                else unparse(st.forward)
            out.append(f"{ind}{st.target} = {line}")
            if active:
                out.append(f"{ind}{self.dot(st.target)} = {st.op.setter}({self.dot_text(st.args[0])}, {index}, "
                           f"{self.dot_text(st.args[1])})")
            return
        out.append(f"{ind}{st.target} = {unparse(st.forward)}")
        if active:
            out.append(f"{ind}{self.dot(st.target)} = {st.op.appender}({self.dot_text(st.args[0])}, "
                       f"{self.dot_text(st.args[1])})")

    def kernel(self, st: ArrayStmt, ind: str, out: list, active: bool) -> None:
        """A kernel's value, and its tangent: the tangent kernel over the inputs and the
        active inputs' tangents (a scalar kernel: its dual's partials times them)."""
        t = st.target
        args = [text_of(a) for a in st.args]
        kn = self.ctx.kernel_name(st)
        act = self.ctx.kernel_active(st) if active else []
        scale = None
        if isinstance(st.op, KernelSum):
            scale = "1.0" if st.op.reduction == "sum" else f"1.0 / broadcast_size({', '.join(args)})"
        if isinstance(st.op, RunKernel) and st.op.scalar:
            self.scalar_kernel(st, ind, out, act)
            return
        names = tuple(p for _, p, _ in act)
        if scale is None and act:     # value and tangent in one pass
            out.append(f"{ind}{t}, {self.dot(t)} = jvp({kn}, {tuple_text(args)}, {names!r}, "
                       f"{tuple_text([self.dot(a) for _, _, a in act])})")
            return
        if scale is None:
            out.append(f"{ind}{t} = apply({kn}, {tuple_text(args)})")
            return
        out.append(f"{ind}{t} = sum_dual({kn}, {tuple_text(args)}, active=(), scale={scale})[0]")
        if act:   # the sum of the tangent kernel's values
            targs = tuple_text(args + [self.dot(a) for _, _, a in act])
            out.append(f"{ind}{self.dot(t)} = sum_dual({self.tangent_kernel_name(st, names)}, {targs}, active=(), "
                       f"scale={scale})[0]")

    def scalar_kernel(self, st: ArrayStmt, ind: str, out: list, act: list) -> None:
        t, k = st.target, st.op.kernel
        args = [text_of(a) for a in st.args]
        kmod = k.module(tuple(p for _, p, _ in act))
        fns = k.python_functions(kmod.active)
        if not act:
            out.append(f"{ind}{t} = {self.bind(kmod.entry, fns[kmod.entry])}({', '.join(args)})")
            return
        fname = self.bind(kmod.dual_entry, fns[kmod.dual_entry])
        parts = [self.namer.fresh(f"d{t.lstrip('_')}_d{a.lstrip('_')}") for _, _, a in act]
        out.append(f"{ind}{t}, {', '.join(parts)} = {fname}({', '.join(args)})")
        out.append(f"{ind}{self.dot(t)} = {' + '.join(f'{d} * {self.dot(a)}' for d, (_, _, a) in zip(parts, act))}")

    # -------------------------------------------------------------- control flow

    def loop(self, st: ForStmt, ind: str, out: list) -> None:
        for ph in st.phis:
            out.append(f"{ind}{ph.name} = {text_of(ph.first)}")
            if self.is_active(ph.name):
                out.append(f"{ind}{self.dot(ph.name)} = {self.dot_text(ph.first)}")
        if st.range_args is None:
            out.append(f"{ind}while True:  # {_line(st.ctx.filename, st.node)}")
        else:
            out.append(f"{ind}for {st.var} in range({', '.join(unparse(a) for a in st.range_args)}):")
        inner: list = []
        self.body(st.body, ind + "    ", inner)
        self.loop_end(st, ind + "    ", inner)
        names, values = [], []
        for ph in st.phis:
            if text_of(ph.second) != ph.name:
                names.append(ph.name)
                values.append(text_of(ph.second))
            if self.is_active(ph.name) and ph.second != ph.name:
                names.append(self.dot(ph.name))
                values.append(self.dot_text(ph.second))
        if names:
            inner.append(f"{ind}    {', '.join(names)} = {', '.join(values)}")
        if st.stop is not None:     # a break: this iteration counts (on a tape), the loop ends
            inner.append(f"{ind}    if {text_of(st.stop)}:\n{ind}        break")
        out.extend(inner or [f"{ind}    pass"])

    def loop_end(self, st: ForStmt, ind: str, body: list) -> None:
        """What a loop's body does last, before its phis are updated (a subclass pushes a tape)."""

    def branch(self, st: IfStmt, ind: str, out: list) -> None:
        out.append(f"{ind}if {text_of(st.test)}:  # {_line(st.ctx.filename, st.node)}")
        for k, stmts in ((0, st.body), (1, st.orelse)):
            if k == 1:
                out.append(f"{ind}else:")
            lines: list = []
            self.body(stmts, ind + "    ", lines)
            for ph in st.phis:
                v = ph.first if k == 0 else ph.second
                lines.append(f"{ind}    {ph.name} = {text_of(v)}")
                if self.is_active(ph.name):
                    lines.append(f"{ind}    {self.dot(ph.name)} = {self.dot_text(v)}")
            out.extend(lines or [f"{ind}    pass"])

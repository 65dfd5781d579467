"""The forward sweep of an adjoint program (passes/reverse.py): the user's statements in
ANF, kernels called through the runtime, written as items (passes/adjoint_text.py) that
are rendered once the reverse sweep says what it reads.

While writing, it records on the statements of the generation's copy of the program
(their `adjoint` annotations, adjoint_analysis.annotated) what the reverse sweep and
liveness need: each statement's partials (`partials`), the line it becomes when only its
gradients are needed (`grads_only`, `scalar_reads`), each loop's tape and the names its
body defines; and in the context each kernel's pullback mode (`kernel_modes`). It also collects the
source of every kernel it calls (`kernel_sources`, printed after the derivative).
"""
from __future__ import annotations

from .biasproducts import fused_bias_line
from .epilogues import fused_partials_line, out_partial_line
from .. import array_prims
from ..frontend import source_line as _line
from .linemap import statement_comment
from ..kernel_text import unparse
from .activity import partials_read, same_partials
from .adjoint_context import AdjointContext
from .adjoint_text import Group, Header, Nones, Push, param_texts, text_of, tuple_text
from .arrayir import ArrayStmt, ForStmt, IfStmt, KernelSum, LoopExit, SetItem, is_kernel, walk_stmts
from .kernelpairs import choose_mode, row_reduction
from .emitted import product_call, product_line


class ForwardSweep:
    def __init__(self, ctx: AdjointContext):
        self.ctx = ctx
        # the shared context's parts, by their short names
        self.p, self.mode, self.namer, self.ns = ctx.p, ctx.mode, ctx.namer, ctx.ns
        self.kernel_modes, self.index = ctx.kernel_modes, ctx.index
        self.is_active, self.kernel_name, self.kernel_active = ctx.is_active, ctx.kernel_name, ctx.kernel_active
        self.kernel_sources: list[str] = []
        self.previous = None     # (statement, its lines) just written in this block (biasproducts)
        self.line_of: dict = {}               # (id(kernel), its active parameters) already listed

    def forward(self, body, ind: str, out: list, defined: list):
        last = None
        group = None
        for st in body:
            if isinstance(st, ArrayStmt):
                node = st.stmt if st.stmt is not None else st.node
                if group is None or (node is not last and node is not None):
                    # the statements of one user line, under `# <the line>`
                    group = Group(statement_comment(ind, st.ctx.filename, node) if node is not None else None, [])
                    out.append(group)
                    last = node
                lines: list = []
                self.forward_stmt(st, ind, lines, defined)
                group.stmts.append((st, lines))
                self.previous = (st, lines)
            elif isinstance(st, ForStmt):
                last = group = self.previous = None
                self.forward_for(st, ind, out, defined)
            else:
                last = group = self.previous = None
                self.forward_if(st, ind, out, defined)

    def forward_stmt(self, st: ArrayStmt, ind: str, out: list, defined: list):
        if isinstance(st.op, LoopExit):     # a while's test
            out.append(f"{ind}if not {text_of(st.args[0])}:\n{ind}    break")
            return
        defined.append(st.target)
        if isinstance(st.op, KernelSum):
            self.kernel_sum(st, ind, out, defined)
        elif is_kernel(st.op) and st.op.scalar:
            self.scalar_kernel(st, ind, out, defined)
        elif is_kernel(st.op):
            self.elementwise_kernel(st, ind, out, defined)
        elif st.partner is not None:     # with the kernel that made its operand (reverse_kernel_matmul)
            self.with_partner(st, ind, out)
        elif isinstance(st.op, SetItem) and self.is_active(st.args[1]):
            # a differentiated value: the setter refuses an integer array (it would truncate it)
            y, v = (text_of(a) for a in st.args)
            out.append(f"{ind}{st.target} = {st.op.setter}({y}, {unparse(st.op.index)}, {v}, differentiated=True)")
        elif product_call(st) is not None:     # recorded: the fusions join it (epilogues)
            out.append(product_line(ind, st.target, product_call(st)))
        else:
            prim = array_prims.of(st.op)
            line = prim.forward([text_of(a) for a in st.args], param_texts(st)) if prim and prim.forward else None
            out.append(f"{ind}{st.target} = {line if line is not None else unparse(st.forward)}")

    def _kernel_operands(self, st: ArrayStmt):
        """A kernel statement's argument texts, their tuple, and its active inputs
        (none when its value carries no derivative)."""
        args = [text_of(a) for a in st.args]
        return args, tuple_text(args), (self.kernel_active(st) if self.is_active(st.target) else [])

    def kernel_sum(self, st: ArrayStmt, ind: str, out: list, defined: list) -> None:
        """A kernel fused with its sum or mean: value and gradients in one pass (sum_dual)."""
        t, k = st.target, st.op.kernel
        args, tup, act = self._kernel_operands(st)
        kn = self.kernel_name(st)
        scale = "1.0" if st.op.reduction == "sum" else f"1.0 / broadcast_size({', '.join(args)})"
        self._add_source(k, k.module(tuple(p for _, p, _ in act)), how="fused with its reduction")
        if not act:
            out.append(f"{ind}{t} = sum_dual({kn}, {tup}, active=(), scale={scale})[0]")
            return
        names = [self.partial_name(t, a) for _, _, a in act]
        defined.extend(names)
        st.adjoint.partials = names
        call = f"({kn}, {tup}, active={tuple_text([repr(p) for _, p, _ in act])}, scale={scale})"
        out.append(f"{ind}{t}, {tuple_text(names)} = sum_dual{call}")
        # when the reverse sweep does not read the value: its kernel skips it
        st.adjoint.grads_only = lambda live, text=f"{ind}{tuple_text(names)} = sum_grads{call}": text

    def scalar_kernel(self, st: ArrayStmt, ind: str, out: list, defined: list) -> None:
        """A kernel on known scalars: a plain Python call of its python form (its dual
        gives the partials)."""
        t, k = st.target, st.op.kernel
        args, _, act = self._kernel_operands(st)
        kmod = k.module(tuple(p for _, p, _ in act))
        fns = k.python_functions(kmod.active)
        if act:
            fname = self._bind_fn(kmod.dual_entry, fns[kmod.dual_entry])
            names = [self.partial_name(t, a) for _, _, a in act]
            defined.extend(names)
            st.adjoint.partials = names
            out.append(f"{ind}{t}, {', '.join(names)} = {fname}({', '.join(args)})")
            self._record_partials_only(st, kmod, ind, fname, args, names)
        else:
            fname = self._bind_fn(kmod.entry, fns[kmod.entry])
            out.append(f"{ind}{t} = {fname}({', '.join(args)})")
        self._add_source(k, kmod, scalar=True)

    def _record_partials_only(self, st: ArrayStmt, kmod, ind: str, fname: str, args: list, names: list) -> None:
        """A scalar dual's line when the reverse sweep does not read its value: the
        partials alone, and only the inputs they read (the others are not computed: NaN)."""
        reads = partials_read(kmod.functions, kmod.dual_entry)
        defined = self.index.defined
        mine = st.adjoint.scalar_reads = {a for i, a in enumerate(st.args) if isinstance(a, str)
                                                  and (i in reads or a not in defined)}

        def partials_only(live):
            skipped = [a for a in args if a in defined and a not in mine and a not in live]
            pargs = ["not_needed" if a in skipped else a for a in args]
            note = f"  # its partials do not read {', '.join(skipped)}" if skipped else ""
            return f"{ind}{tuple_text(names)} = {fname}({', '.join(pargs)})[1:]{note}"
        st.adjoint.grads_only = partials_only

    def elementwise_kernel(self, st: ArrayStmt, ind: str, out: list, defined: list) -> None:
        """A kernel applied elementwise by the runtime; its partials stored now (mode
        "store") or recomputed by the reverse sweep ("recompute")."""
        t, k = st.target, st.op.kernel
        _, tup, act = self._kernel_operands(st)
        kn = self.kernel_name(st)
        if st.partner is not None:    # runs with its matmul or row reduction (with_partner)
            self._add_source(k, k.module(tuple(p for _, p, _ in act)))
            return
        if not act:
            self._add_source(k, k.module(()))
            out.append(f"{ind}{t} = apply({kn}, {tup})")
            return
        mode, why = choose_mode(k, self.mode)
        self.kernel_modes[kn] = (mode, why)
        active = tuple(p for _, p, _ in act)
        if mode != "store":
            self._add_source(k, k.module(active))
            if self._bias_in_product(st, kn, active, ind, out):
                return
            out.append(f"{ind}{t} = apply({kn}, {tup})")
            return
        # partials that are one value (`tanh(h + b)`: d/dh = d/db) are stored once
        kmod = k.module(active)
        firsts = same_partials(kmod.functions, kmod.dual_entry) or tuple(range(len(act)))
        stored = {i: self.partial_name(t, act[i][2]) for i in range(len(act)) if firsts[i] == i}
        defined.extend(stored.values())
        st.adjoint.partials = [stored[firsts[i]] for i in range(len(act))]
        unique = tuple(active[i] for i in stored)
        self._add_source(k, k.module(unique))
        if self._kernel_after_product(st, kn, unique, list(stored.values()), ind, out):
            return
        out.append(f"{ind}{t}, {tuple_text(list(stored.values()))} = store_partials({kn}, {tup}, "
                   f"{tuple_text([repr(p) for p in unique])})")

    def _bias_in_product(self, st: ArrayStmt, kn: str, active: tuple, ind: str, out: list) -> bool:
        """`X @ W + b` (biasproducts): the product's line, the statement right before,
        becomes st's `_1, z = matmul_bias(...)`, which binds both names, written where
        the product's line was."""
        prev = self.previous
        if prev is None or len(prev[1]) != 1 or not isinstance(prev[1][0], str):
            return False
        fused = fused_bias_line(st, kn, active, prev[1][0], ind, self.index.readers, self.p.result)
        if fused is None or prev[0].target not in st.args:
            return False
        # under the product's statement: numpy's refusal of the product's shapes (the
        # likelier one) is located there (linemap)
        prev[1][:] = [fused]
        st.adjoint.also_binds = {prev[0].target}
        return True

    def _kernel_after_product(self, st: ArrayStmt, kn: str, unique: tuple, stored: list, ind: str,
                              out: list) -> bool:
        """`h = k(X @ W, b)` storing one partial, w.r.t. the product (passes/epilogues):
        the product's line, the statement right before, and st's become one
        `_1, h, (dh,) = product_partials(...)`, which binds the product's name too,
        written where the product's line was."""
        prev = self.previous
        if prev is None or len(prev[1]) != 1 or not isinstance(prev[1][0], str) or len(unique) != 1 \
                or prev[0].target == self.p.result:
            return False
        args = [text_of(a) for a in st.args]
        product = prev[1][0]
        fused = fused_partials_line(st, kn, args, unique[0], stored, product, ind, self.index.readers)
        if fused is None or prev[0].target not in st.args:
            return False
        # under the product's statement: numpy's refusal of the product's shapes (the
        # likelier one) is located there (linemap)
        prev[1][:] = [fused]
        st.adjoint.also_binds = {prev[0].target}
        unstored = out_partial_line(st, kn, args, unique[0], stored, product, ind, self.index.readers)
        if unstored is not None:     # the reverse sweep puts it in (epilogues.fused_sums_call)
            self.ctx.out_partials[stored[0]] = (prev[1], unstored)
        return True

    def with_partner(self, st: ArrayStmt, ind: str, out: list) -> None:
        """A matmul or row reduction computed in the pass of the kernel that made its
        operand (kernelpairs): that kernel's values are not formed."""
        t, ks = st.target, st.partner
        h, kn, ins = ks.target, self.kernel_name(ks), tuple_text([text_of(a) for a in ks.args])
        rows = row_reduction(st)
        if rows:
            act = self.kernel_active(ks) if self.is_active(ks.target) else []
            mode, why = choose_mode(ks.op.kernel, self.mode)
            self.kernel_modes[kn] = (mode, why)
            out.append(f"{ind}# {unparse(st.forward)} in {h}'s kernel: {h} is not formed (None) where that "
                       f"pass sums its rows")
            out.append(f"{ind}{t}, {h} = kernel_rowsum({kn}, {ins}, {tuple_text([repr(p) for _, p, _ in act])}, "
                       f"{rows[0]}, {rows[1]}, {st.op.kind == 'mean'}, {mode!r})")
        else:
            w = text_of(st.args[1])
            out.append(f"{ind}# {h} @ {w} in the pass of {h}'s kernel; {h} is not formed (None) where {w} is "
                       f"one column")
            out.append(f"{ind}{t}, {h} = kernel_matmul({kn}, {ins}, {w})")

    def _bind_fn(self, name: str, fn) -> str:
        if self.ns.get(name) is fn:
            return name
        taken = name in self.ns or name in self.p.bound or name in self.p.free or name in self.p.params
        nm = name if not taken else self.namer.fresh(name)
        self.namer.used.add(nm)
        self.ns[nm] = fn
        return nm

    def partial_name(self, t: str, a: str) -> str:
        return self.namer.fresh(f"d{t.lstrip('_')}_d{a.lstrip('_')}")

    def _add_source(self, k, kmod, scalar=False, how=None):
        key = (id(k), kmod.active)
        if key in self.line_of:
            return
        self.line_of[key] = True
        how = how or ("called as Python on scalars" if scalar else "applied elementwise by the runtime")
        self.kernel_sources.append(f"# Kernel {k.name} ({how}; partials for {', '.join(kmod.active) or 'none'}).\n"
                                   + kmod.source())

    def forward_for(self, st: ForStmt, ind: str, out: list, defined: list):
        for ph in st.phis:
            out.append(f"{ind}{ph.name} = {text_of(ph.first)}")
            defined.append(ph.name)
        needs_tape = any(self.is_active(ph.name) for ph in st.phis) or any(
            isinstance(s, ArrayStmt) and s.target and self.is_active(s.target) for s in walk_stmts(st.body))
        if needs_tape:
            st.adjoint.tape = self.namer.fresh("tape")
            out.append(Push(st, ind, init=True))
            defined.append(st.adjoint.tape)
        if st.range_args is None:
            out.append(Header(f"{ind}while True:  # {_line(st.ctx.filename, st.node)}"))
        else:
            out.append(Header(f"{ind}for {st.var} in range({', '.join(unparse(a) for a in st.range_args)}):"))
            defined.append(st.var)
        inner: list = []
        body_lines: list = []
        self.forward(st.body, ind + "    ", body_lines, inner)
        st.adjoint.body_defined = set(inner) | {ph.name for ph in st.phis}
        defined.extend(inner)
        out.extend(body_lines)
        if needs_tape:
            out.append(Push(st, ind + "    "))
        updates = [(ph.name, text_of(ph.second)) for ph in st.phis if text_of(ph.second) != ph.name]
        if updates:
            out.append(f"{ind}    {', '.join(u[0] for u in updates)} = {', '.join(u[1] for u in updates)}")
        if st.stop is not None:     # a break: the iteration is on the tape, the loop ends
            out.append(f"{ind}    if {text_of(st.stop)}:\n{ind}        break")
        if not body_lines and not updates and not needs_tape and st.stop is None:
            out.append(f"{ind}    pass")

    def forward_if(self, st: IfStmt, ind: str, out: list, defined: list):
        out.append(Header(f"{ind}if {text_of(st.test)}:  # {_line(st.ctx.filename, st.node)}"))
        defs = []
        blocks = []
        for branch in (st.body, st.orelse):
            lines: list = []
            mine: list = []
            self.forward(branch, ind + "    ", lines, mine)
            defs.append(mine)
            blocks.append(lines)
            defined.extend(mine)
        for k in (0, 1):
            if k == 1:
                out.append(Header(f"{ind}else:"))
            lines = blocks[k]
            # what only the other branch defines, as None: a tape or the residuals may list it
            lines.append(Nones(ind + "    ", sorted(set(defs[1 - k]) - set(defs[k]))))
            for ph in st.phis:
                v = ph.first if k == 0 else ph.second
                lines.append(f"{ind}    {ph.name} = {text_of(v)}")
                defined.append(ph.name)
            if not any(isinstance(l, (str, Group)) for l in lines):
                lines.append(f"{ind}    pass")
            out.extend(lines)

"""The reverse half of forward over reverse (hvp_sweep.ForwardOverReverse): the adjoints
of an array program and their tangents, statement by statement in reverse order.

A mixin of ForwardOverReverse, which reads the sweep's names, context and tangents
through `self`; what the forward half learned of a statement it reads from the
statement's annotation on the sweep's own copy of the program (arrayir.StmtFacts:
`tangent_partials`, `column_kernel`, `pair_values`; LoopFacts: `tape`, `tape_lines`),
never from tables keyed by the statements' identity.
"""
from __future__ import annotations

from .. import array_prims
from ..array_prims.prim import kw
from ..errors import UnsupportedOperationError
from ..frontend import location_of
from ..kernel_text import unparse
from .adjoint_text import names_read, param_texts, text_of, tuple_text
from .arrayir import ArrayStmt, ForStmt, IfStmt, KernelSum, ListAppend, RunKernel, SetItem, is_kernel, walk_stmts
from .emitted import ProductCall, product_line, product_vjp_call
from .linemap import block_header
from .reverse_sweep import reverse_body

# what the tangent of a primitive's VJP adds to the VJP of the seed's tangent, by entry:
# "shape": the VJP reads its operands' shapes only (a linear primitive); "mask": a
# piecewise-constant selection (max/min: its tangent is zero almost everywhere);
# "bilinear": the VJP of one factor reads the other, whose tangent adds the same VJP
# with that factor replaced by its tangent; "prod": prod_bar's own tangent (prod_bar_dot)
SECOND_ORDER = {
    "sum": "shape", "mean": "shape", "transpose": "shape", "reshape": "shape", "copy": "shape",
    "repeat": "shape", "tile": "shape", "index": "shape", "concatenate": "shape", "stack": "shape",
    "r_": "shape", "c_": "shape", "max": "mask", "min": "mask",
    "matmul": "bilinear", "dot": "bilinear", "outer": "bilinear", "prod": "prod",
    "fsum": "shape", "math_prod": "prod",
    # passes/rowfusion's ops: the entry's own `second` text
    "row_log_softmax": "own", "row_softmax": "own", "row_logsumexp": "own", "row_layer_norm": "own",
    "row_dot_log_softmax": "own",
}


class ReverseOfTangents:
    """The reverse sweep of a forward-over-reverse program (see the module docstring)."""

    # -------------------------------------------------------------- adjoints

    def bar(self, name: str) -> str:
        b = self.bars.get(name)
        if b is None:
            b = self.bars[name] = self.namer.fresh(f"{name}_bar")
        return b

    def bar_dot(self, name: str) -> str:
        return self.dot(self.bar(name))

    def contribute(self, name, term, term_dot, ind: str, out: list, init: set) -> None:
        """Add `term` to name's adjoint and `term_dot` to its tangent (each a source text or
        a recorded ProductCall: a product binding one is written as a record, which
        paired_products may join with its neighbour)."""
        if not self.is_active(name):
            return
        b, bd = self.bar(name), self.bar_dot(name)
        if name in init:
            out.append(f"{ind}{b} = {b} + {term}")
            out.append(f"{ind}{bd} = {bd} + {term_dot}")
        else:
            for target, t in ((b, term), (bd, term_dot)):
                out.append(product_line(ind, target, t) if isinstance(t, ProductCall) else f"{ind}{target} = {t}")
            init.add(name)

    def reverse(self, body, ind: str, out: list, init: set) -> None:
        reverse_body(self, body, ind, out, init)

    def reverse_column_pair(self, st: ArrayStmt, kst: ArrayStmt, g: str, gd: str, ind: str, out: list,
                            init: set) -> None:
        """`out = h @ w` paired with h's kernel: h's adjoint and its tangent as factors
        for the kernel's pullback, w's in passes of the kernels (hvp_columns)."""
        h, w = st.args
        act = self.ctx.kernel_active(kst)
        pair = self.tangent_kernel_name(kst, tuple(p for _, p, _ in act), "pair")
        wb, wbd = self.namer.fresh(f"_{w}_g"), self.namer.fresh(f"_{w}_g_dot")
        # w a parameter: its adjoint is only summed into until the end, so its tangent
        # can wait for h's pullback, whose pass sums it (hvp_columns.ColumnSums)
        sums = self.is_active(w) and isinstance(w, str) and w in self.p.params \
            and self.ctx.index.made_by.get(w) is None
        out.append(f"{ind}# {self.bar(h)} and its tangent only seed the pullback of {h}'s kernel: outer "
                   f"products stay factors" + (f"; {wbd} is summed in that pullback's pass" if sums else ""))
        out.append(f"{ind}{self.bar(h)}, {self.bar_dot(h)}, {wb}, {wbd} = kernel_matmul_hvp_bars("
                   f"{self.ctx.kernel_name(kst)}, {pair}, "
                   f"{tuple_text([text_of(a) for a in kst.args])}, {tuple_text([self.dot(a) for _, _, a in act])}, "
                   f"{text_of(w)}, {self.dot_text(w)}, {self.is_active(w)}, {g}, {gd}, {st.adjoint.pair_values}"
                   + (", True)" if sums else ")"))
        init.add(h)
        self.factored[h] = 2
        if sums:
            self.column_sums[h] = (w, wb, wbd)
        elif self.is_active(w):
            self.contribute(w, wb, wbd, ind, out, init)

    def reverse_stmt(self, st: ArrayStmt, ind: str, out: list, init: set) -> None:
        g, gd = self.bar(st.target), self.bar_dot(st.target)
        if st.adjoint.column_kernel is not None:
            self.reverse_column_pair(st, st.adjoint.column_kernel, g, gd, ind, out, init)
            return
        if is_kernel(st.op):
            self.reverse_kernel(st, g, gd, ind, out, init)
            return
        if isinstance(st.op, (SetItem, ListAppend)):
            self.reverse_update(st, g, gd, ind, out, init)
            return
        rule = array_prims.of(st.op)
        kind = SECOND_ORDER.get(rule.name) if rule is not None else None
        if kind is None:
            what = rule.name if rule is not None else st.op.name
            raise UnsupportedOperationError(
                f"the derivative of the gradient (forward over reverse) through '{what}' is not supported: "
                f"its VJP has no derivative rule of its own", location_of(st.ctx.filename, st.node),
                hint="Use s2sad.grad (first order) for this function, or write the operation with numpy "
                     "primitives whose second derivatives s2sad knows (sum, mean, max, min, prod, matmul, "
                     "dot, reshapes, indexing, joins, elementwise functions).")
        args = [text_of(a) for a in st.args]
        params = param_texts(st)
        for i, a in enumerate(st.args):
            if not self.is_active(a):
                continue
            other = 1 - i
            swapped = None
            if kind == "bilinear" and self.is_active(st.args[other]):
                swapped = list(args)
                swapped[other] = self.dot(st.args[other])
            if rule.factors is not None and self.seeds_kernel_only(a, st, init):
                self.contribute_factors(a, i, rule, g, gd, args, swapped, st, ind, out, init)
                continue
            term_dot = product_vjp_call(st, i, gd, args) or rule.vjp(i, gd, args, st.target, params)
            if swapped is not None:
                term_dot = f"{term_dot} + {rule.vjp(i, g, swapped, st.target, params)}"
            if kind == "prod":
                term_dot = f"{term_dot} + prod_bar_dot({g}, {a}, {self.dot(a)}{kw(params, 'axis', 'keepdims')})"
            if kind == "own":
                own = rule.second(i, g, args, [self.dot_text(x) for x in st.args], st.target,
                                  self.dot_text(st.target), params)
                term_dot = f"{term_dot} + {own}"
            term = product_vjp_call(st, i, g, args) or rule.vjp(i, g, args, st.target, params)
            self.contribute(a, term, term_dot, ind, out, init)

    def reverse_update(self, st: ArrayStmt, g: str, gd: str, ind: str, out: list, init: set) -> None:
        """A functional update's adjoints (reverse_sweep's) are linear in the seed and
        read the operands' shapes only: their tangents are the same with the seed's tangent."""
        a, b = st.args
        if isinstance(st.op, SetItem):
            index = unparse(st.op.index)
            # the value's first, as reverse_sweep orders them: the base's may zero the seed's
            # elements in place (write_helpers.set_items_base_bar) when no other name holds it
            terms = [(b, lambda s: f"{st.op.value_bar}({s}, {index}, {text_of(b)})"),
                     (a, lambda s: f"{st.op.base_bar}({s}, {index})")]
        else:
            terms = [(a, lambda s: f"{st.op.base_bar}({s})"), (b, lambda s: f"{st.op.item_bar}({s})")]
        for x, term in terms:
            if self.is_active(x):
                self.contribute(x, term(g), term(gd), ind, out, init)

    def seeds_kernel_only(self, name: str, st: ArrayStmt, init: set) -> bool:
        """Is `name` read by `st` alone (once), made by an array kernel, and not the
        result? Then its adjoint only seeds that kernel's pullback and the pass of its
        seeded tangent kernel, which take it as factors (an outer product not formed)."""
        made = self.ctx.index.made_by.get(name)
        return (name != self.p.result and name not in init and st.args.count(name) == 1
                and self.ctx.index.readers.get(name) == 1 and made is not None
                and isinstance(made.op, RunKernel) and not made.op.scalar)

    def contribute_factors(self, a: str, i: int, rule, g: str, gd: str, args: list, swapped, st: ArrayStmt,
                           ind: str, out: list, init: set) -> None:
        params = param_texts(st)
        terms = [rule.factors(i, gd, args, st.target, params)]
        if swapped is not None:
            terms.append(rule.factors(i, g, swapped, st.target, params))
        out.append(f"{ind}# {self.bar(a)} and its tangent only seed the pullback of {a}'s kernel: outer "
                   f"products stay factors")
        out.append(f"{ind}{self.bar(a)} = {rule.factors(i, g, args, st.target, params)}")
        out.append(f"{ind}{self.bar_dot(a)} = {tuple_text(terms)}")
        init.add(a)
        self.factored[a] = len(terms)

    def reverse_kernel(self, st: ArrayStmt, g: str, gd: str, ind: str, out: list, init: set) -> None:
        """A kernel's adjoint `g * dk/da` and its tangent: a scalar kernel multiplies its
        kept partials; an array kernel runs one pass of its seeded tangent kernel's
        pullback (tangent_kernels.py, `sum_grads`): its partials w.r.t. the active inputs
        are the adjoints' tangents, w.r.t. their copies (the same arrays) the adjoints."""
        if st.adjoint.tangent_partials is not None:
            for a, d, dd in st.adjoint.tangent_partials:
                self.contribute(a, f"{d} * {g}", f"{dd} * {g} + {d} * {gd}", ind, out, init)
            return
        act = self.ctx.kernel_active(st)
        names = tuple(p for _, p, _ in act)
        args = [text_of(a) for a in st.args]
        actives = [text_of(a) for _, _, a in act]
        firsts = [self.namer.fresh(f"_{a}_g") for _, _, a in act]
        seconds = [self.namer.fresh(f"_{a}_g_dot") for _, _, a in act]
        if isinstance(st.op, KernelSum):
            g, gd = f"{g} * {self.scale(st)}", f"{gd} * {self.scale(st)}"
        terms = self.factored.get(st.target)
        how = True if terms is None else terms
        if terms is not None:     # the seeds as factors (seed_factors: a SeedProduct's, or (array, 1.0))
            seeds = [f"*seed_factors({g})"] + [f"*seed_factors({gd}[{k}])" for k in range(terms)]
        else:
            seeds = [g, gd]
        summed = self.column_sums.pop(st.target, None)     # (w, its adjoint, its tangent: a ColumnSums)
        if summed is not None:
            how = ("sums", how)
            seeds.append(f"*column_sum_seeds({summed[2]})")
        kt = self.tangent_kernels.of(st.op.kernel, names, how)
        wrt = names + tuple(kt.params[len(kt.params) - len(names):])     # the active params, then their copies
        targets = seconds + firsts
        if summed is not None:     # and the row c, whose partial is the column sums
            wrt += (kt.params[len(kt.params) - len(names) - 3],)
            targets.append(self.namer.fresh(f"{summed[2]}_sums"))
        seeded = tuple_text(args + [self.dot(a) for _, _, a in act] + seeds + actives)
        out.append(f"{ind}{tuple_text(targets)} = sum_grads({self.tangent_kernel_name(st, names, how)}, "
                   f"{seeded}, {wrt!r})")
        for (_, _, a), first, second in zip(act, firsts, seconds):
            self.contribute(a, f"unbroadcast({first}, {a})", f"unbroadcast({second}, {a})", ind, out, init)
        if summed is not None:
            w, wb, wbd = summed
            out.append(f"{ind}{wbd} = column_sums({wbd}, {targets[-1]})")
            self.contribute(w, wb, wbd, ind, out, init)

    def _contributed(self, body) -> set:
        """Names defined outside `body` whose adjoints its reverse may add to."""
        inside, names = set(), set()
        for st in walk_stmts(body):
            if isinstance(st, ArrayStmt):
                if st.target:
                    inside.add(st.target)
                    if self.is_active(st.target):
                        names |= {a for a in st.args if self.is_active(a)}
            else:
                inside |= {ph.name for ph in st.phis}
                names |= {v for ph in st.phis for v in (ph.first, ph.second) if self.is_active(v)}
        return names - inside

    def _preinit(self, names, ind: str, out: list, init: set) -> None:
        for nm in sorted(names):
            if nm not in init and self.is_active(nm):
                out.append(f"{ind}{self.bar(nm)}, {self.bar_dot(nm)} = zeros_bar({nm}), zeros_bar({nm})")
                init.add(nm)

    def reverse_for(self, st: ForStmt, ind: str, out: list, init: set) -> None:
        phis = [ph for ph in st.phis if self.is_active(ph.name)]
        tape, (init_tape, push) = st.adjoint.tape, st.adjoint.tape_lines
        self._preinit(self._contributed(st.body) | {ph.name for ph in phis}, ind, out, init)
        i2 = ind + "    "
        lines: list = []
        body_init = set(init)
        nexts = {}
        for ph in phis:
            nexts[ph.name] = (self.namer.fresh(f"_{ph.name}_next_bar"), self.namer.fresh(f"_{ph.name}_next_bar_dot"))
            lines.append(f"{i2}{nexts[ph.name][0]}, {nexts[ph.name][1]} = {self.bar(ph.name)}, "
                         f"{self.bar_dot(ph.name)}")
            body_init.discard(ph.name)
        for ph in phis:
            self.contribute(ph.second, *nexts[ph.name], i2, lines, body_init)
        self.reverse(st.body, i2, lines, body_init)
        for ph in phis:
            if ph.name not in body_init:
                zero = f"zeros_bar({ph.name})"
                lines.append(f"{i2}{self.bar(ph.name)}, {self.bar_dot(ph.name)} = {zero}, {zero}")
        defined = {s.target for s in walk_stmts(st.body) if isinstance(s, ArrayStmt) and s.target}
        defined |= {ph.name for s in walk_stmts(st.body) if not isinstance(s, ArrayStmt) for ph in s.phis}
        defined |= {ph.name for ph in st.phis}
        defined |= set(self.generated_in(st))
        text = "\n".join(lines)
        need = sorted((names_read(text) & defined) - {st.var})
        if st.counted:      # its iterations are the tape's entries: the loop variable on it too
            need += [st.var] if st.range_args is not None and st.var in names_read(text) else []
            push.names = init_tape.names = need
            out.append(block_header(f"{ind}for {tuple_text(need) if need else '_'} in reversed({tape}):", st))
            out.extend(lines or [f"{i2}pass"])
            for ph in phis:
                self.contribute(ph.first, self.bar(ph.name), self.bar_dot(ph.name), ind, out, init)
            return
        push.names = init_tape.names = need
        rng = f"range({', '.join(unparse(a) for a in st.range_args)})"
        if need:
            out.append(block_header(f"{ind}for {st.var}, {tuple_text(need)} in zip(reversed({rng}), reversed({tape})):",
                                    st))
        else:
            out.append(block_header(f"{ind}for {st.var} in reversed({rng}):", st))
        out.extend(lines or [f"{i2}pass"])
        for ph in phis:
            self.contribute(ph.first, self.bar(ph.name), self.bar_dot(ph.name), ind, out, init)

    def generated_in(self, st: ForStmt) -> list[str]:
        """The names the forward sweep adds inside a loop's body: tangents, partials and
        their tangents (what the reverse loop may read from the tape)."""
        names = []
        for s in walk_stmts(st.body):
            if isinstance(s, ArrayStmt) and s.target:
                if s.target in self.dots:
                    names.append(self.dots[s.target])
                for _, d, dd in s.adjoint.tangent_partials or ():
                    names += [d, dd]
            elif not isinstance(s, ArrayStmt):
                names += [self.dots[ph.name] for ph in s.phis if ph.name in self.dots]
                if isinstance(s, ForStmt):     # a nested loop's tape, made anew each iteration
                    names.append(s.adjoint.tape)
        names += [self.dots[ph.name] for ph in st.phis if ph.name in self.dots]
        return names

    def reverse_if(self, st: IfStmt, ind: str, out: list, init: set) -> None:
        phis = [ph for ph in st.phis if self.is_active(ph.name) and ph.name in init]
        has = phis or any(isinstance(s, ArrayStmt) and s.target and self.is_active(s.target)
                          for s in walk_stmts(st.body + st.orelse))
        if not has:
            return
        self._preinit(self._contributed(st.body + st.orelse), ind, out, init)
        out.append(block_header(f"{ind}if {text_of(st.test)}:", st))
        for branch, k in ((st.body, 0), (st.orelse, 1)):
            if k == 1:
                out.append(f"{ind}else:")
            lines: list = []
            binit = set(init)
            for ph in phis:
                self.contribute(ph.first if k == 0 else ph.second, self.bar(ph.name), self.bar_dot(ph.name),
                                ind + "    ", lines, binit)
            self.reverse(branch, ind + "    ", lines, binit)
            out.extend(lines or [f"{ind}    pass"])

"""The reverse sweep of an adjoint program (passes/reverse.py): statements in reverse
order, each under `# Grad of: <user line>`, loops walking their tape backwards, `if`s
branching on the same (saved) condition.

- `x_bar` is the adjoint of `x`; adjoints are only ever rebound (`x_bar = x_bar + g`),
  never updated in place, so no adjoint aliases another (`contribute`).
- `unit`: names whose adjoint is the seed 1.0 (the result, for value_and_grad and
  grad), multiplied by nothing.
- It reads what the forward sweep recorded on the statements' `adjoint` annotations
  (partials, tapes) and in the context (kernel modes), and records on each loop's
  annotation the names its reverse reads (`tape_names`: what the forward loop pushes).
"""
from __future__ import annotations

from .. import array_prims
from ..errors import UnsupportedOperationError
from ..frontend import location_of, shown_location as _short, source_line as _line
from ..kernel_text import unparse
from .adjoint_context import AdjointContext
from .adjoint_text import grad_of_line, names_read, param_texts, text_of, tuple_text
from .emitted import ProductCall, product_line, product_vjp_call
from .epilogues import join_next, sums_line
from .arrayir import ArrayStmt, ForStmt, IfStmt, KernelSum, ListAppend, Py, RunKernel, SetItem, walk_stmts
from .kernelpairs import row_reduction
from .linemap import LocatedLine, block_header
from .primhints import call_params, register_hint
from .unitpartials import unit_partials



def reverse_body(sweep, body, ind: str, out: list, init: set) -> None:
    """`body`'s statements in reverse order through the sweep's reverse_stmt, reverse_for
    and reverse_if, a statement's source line as one '# Grad of:' comment (once for the
    statements it became); an inactive or unseeded statement is skipped. Shared by the
    reverse sweep and forward over reverse's (hvp_reverse)."""
    last = None
    for st in reversed(body):
        if isinstance(st, ArrayStmt):
            if not (st.target and sweep.is_active(st.target) and st.target in init):
                continue
            node = st.stmt if st.stmt is not None else st.node
            if node is not last:
                loc = location_of(st.ctx.filename, node)
                out.append(LocatedLine(ind + grad_of_line(_line(st.ctx.filename, node), _short(loc)), loc))
                last = node
            sweep.reverse_stmt(st, ind, out, init)
        elif isinstance(st, ForStmt):
            last = None
            sweep.reverse_for(st, ind, out, init)
        else:
            last = None
            sweep.reverse_if(st, ind, out, init)

class ReverseSweep:
    def __init__(self, ctx: AdjointContext, defer: frozenset = frozenset()):
        self.ctx = ctx
        # the shared context's parts, by their short names
        self.p, self.namer, self.kernel_modes, self.index = ctx.p, ctx.namer, ctx.kernel_modes, ctx.index
        self.is_active, self.bar = ctx.is_active, ctx.bar
        self.kernel_name, self.kernel_active = ctx.kernel_name, ctx.kernel_active
        # grad variant: kernel sums (their targets) whose value nothing reads, run here
        # with their adjoint folded into the scale (adjoint_analysis.deferrable_sums)
        self.defer = defer
        self.unit: set[str] = set()

    def contribute(self, name, text: str | ProductCall, ind: str, out: list, init: set):     # (a ProductCall: recorded)
        if not self.is_active(name):
            return
        b, call, text = self.bar(name), text if isinstance(text, ProductCall) else None, str(text)
        if name in init and text.startswith("index_bar("):     # in place when b is the sweep's own (array_rules)
            out.append(f"{ind}{b} = index_add({b}, {text[len('index_bar('):]}")
        elif name in init:
            out.append(f"{ind}{b} = {b} + {text}")
        else:
            out.append(product_line(ind, b, call) if call is not None else f"{ind}{b} = {text}")
            init.add(name)
        self.unit.discard(name)

    def contribute_call(self, names: list, call: str, ind: str, out: list, init: set, extra: list = ()) -> None:
        """`call` returns the adjoints of `names` (each of its name's shape), then `extra`'s
        (epilogues.rhs_line): one not yet bound is bound by the call itself; one already
        bound gets a temporary, added to it (a name twice: the second one a temporary)."""
        targets, adds, seen = [], [], set()
        for a in names:
            if a in init or a in seen:
                tmp = self.namer.fresh(f"_{a}_g")
                targets.append(tmp)
                adds.append((a, tmp))
            else:
                targets.append(self.bar(a))
                seen.add(a)
        out.append(f"{ind}{tuple_text(targets + list(extra))} = {call}")
        init.update(seen)
        self.unit.difference_update(seen)
        for a, tmp in adds:
            self.contribute(a, tmp, ind, out, init)

    def g(self, name: str) -> str:
        return "1.0" if name in self.unit else self.bar(name)

    def reverse(self, body, ind: str, out: list, init: set):
        reverse_body(self, body, ind, out, init)

    def reverse_stmt(self, st: ArrayStmt, ind: str, out: list, init: set):
        t = st.target
        g = self.g(t)
        if isinstance(st.op, KernelSum) and t in self.defer:
            self.reverse_deferred_sum(st, g, ind, out, init)
            return
        if isinstance(st.op, KernelSum) or (isinstance(st.op, RunKernel) and st.op.scalar):
            for (_, _, a), d in zip(self.kernel_active(st), st.adjoint.partials):
                self.contribute(a, d if g == "1.0" else f"{d} * {g}", ind, out, init)
            return
        if isinstance(st.op, RunKernel):
            act = self.kernel_active(st)
            kn = self.kernel_name(st)
            mode, _ = self.kernel_modes[kn]
            if mode == "store":
                names = st.adjoint.partials
                shared: set[str] = set()
                for (_, _, a), d in zip(act, names):
                    if g != "1.0" and names.count(d) > 1:
                        # a partial several inputs share (a bias added in the kernel): multiplied
                        # once, each input's sum in the product's pass (productsums)
                        if d not in shared:
                            shared.add(d)
                            group = [b for (_, _, b), e in zip(act, names) if e == d]
                            sums_line(self, g, d, group, ind, out, init)
                        continue
                    term = d if g == "1.0" else f"{d} * {g}"
                    self.contribute(a, f"unbroadcast({term}, {a})", ind, out, init)
                return
            tmps = [self.namer.fresh(f"_{a}_g") for _, _, a in act]
            args = tuple_text([text_of(a) for a in st.args])
            call = "unit_vjp" if unit_partials(st.op.kernel, tuple(p for _, p, _ in act)) else "vjp"
            out.append(f"{ind}{tuple_text(tmps)} = {call}({kn}, {args}, {tuple_text([repr(p) for _, p, _ in act])}, {g})")
            for (_, _, a), tm in zip(act, tmps):
                self.contribute(a, f"unbroadcast({tm}, {a})", ind, out, init)
            return
        if st.partner is not None:
            self.reverse_kernel_matmul(st, g, ind, out, init)
            return
        if isinstance(st.op, SetItem):
            self.reverse_set_items(st, g, ind, out, init)
            return
        if isinstance(st.op, ListAppend):     # the list's items before, and the one appended
            hs, item = st.args
            if self.is_active(hs):
                self.contribute(hs, f"{st.op.base_bar}({g})", ind, out, init)
            if self.is_active(item):
                self.contribute(item, f"{st.op.item_bar}({g})", ind, out, init)
            return
        rule = array_prims.of(st.op)
        if rule is None:
            what = st.op.label if isinstance(st.op, Py) else st.op.name
            raise UnsupportedOperationError(f"no reverse-mode rule for '{what}'", location_of(st.ctx.filename, st.node),
                                            hint=register_hint(what, call_params(st.node)))
        args = self.shape_stand_ins(st, rule, [text_of(a) for a in st.args])
        params = param_texts(st)
        if rule.vjps is not None:     # one call gives every active operand's adjoint
            act = [i for i, a in enumerate(st.args) if self.is_active(a)]
            self.contribute_call([st.args[i] for i in act], rule.vjps(act, g, args, t, params), ind, out, init)
            return
        if join_next(self, st, g, ind, out, init):      # its seed is a joined sums line's, never stored
            return
        for i, a in enumerate(st.args):
            if self.is_active(a):
                if rule.factors is not None and self.seeds_pullback_only(a, st):
                    out.append(f"{ind}# {self.bar(a)} only seeds the pullback of {a}'s kernel: "
                               f"an outer product stays two factors")
                    self.contribute(a, rule.factors(i, g, args, t, params), ind, out, init)
                else:
                    self.contribute(a, product_vjp_call(st, i, g, args) or rule.vjp(i, g, args, t, params), ind,
                                    out, init)

    def shape_stand_ins(self, st: ArrayStmt, rule, args: list) -> list:
        """`args` with each operand the VJP reads for its shape only (rule.shape_reads)
        replaced by its producer's `like` text, where both statements are at the top of
        the program (the producer's operands are then bound once, and still bound here):
        so the grad variant's liveness drops a forward line whose value only gave a shape
        (a cross-entropy's rows under its mean). The VJP's text is otherwise the same."""
        if not rule.shape_reads or not any(s is st for s in self.p.body):
            return args
        args = list(args)
        for i in rule.shape_reads:
            made = self.index.made_by.get(st.args[i]) if i < len(st.args) and isinstance(st.args[i], str) else None
            prule = array_prims.of(made.op) if made is not None and not isinstance(made.op, Py) else None
            if prule is not None and prule.like is not None and any(s is made for s in self.p.body):
                args[i] = prule.like([text_of(a) for a in made.args], param_texts(made))
        return args

    def reverse_set_items(self, st: ArrayStmt, g: str, ind: str, out: list, init: set) -> None:
        """`y_2 = set_items(y, index, v)`: y's adjoint is y_2's with the overwritten
        elements zeroed; v's is y_2's at index (the elements that landed), in v's shape."""
        y, v = st.args
        index = unparse(st.op.index)
        # v's first: y's may zero g's elements in place (write_helpers), when y's adjoint is
        # bound here and no other name holds g (a loop's `y_3_bar = y_2_bar` is dropped)
        if self.is_active(v):
            self.contribute(v, f"{st.op.value_bar}({g}, {index}, {text_of(v)})", ind, out, init)
        if self.is_active(y):
            if y not in init and g != "1.0":
                out.append(f"{ind}{self.bar(y)} = None")
            self.contribute(y, f"{st.op.base_bar}({g}, {index})", ind, out, init)

    def reverse_deferred_sum(self, st: ArrayStmt, g: str, ind: str, out: list, init: set) -> None:
        """A kernel sum of `defer`: its gradients computed here, the adjoint of its value
        folded into the kernel's scale, rather than in the forward sweep and multiplied
        by that adjoint after (one pass over each gradient less)."""
        args = [text_of(a) for a in st.args]
        act = self.kernel_active(st)
        scale = g if st.op.reduction == "sum" else f"{g} / broadcast_size({', '.join(args)})"
        self.contribute_call([a for _, _, a in act],
                             f"sum_grads({self.kernel_name(st)}, {tuple_text(args)}, "
                             f"active={tuple_text([repr(p) for _, p, _ in act])}, scale={scale})", ind, out, init)

    def reverse_kernel_matmul(self, st: ArrayStmt, g: str, ind: str, out: list, init: set) -> None:
        """The adjoint of `out = values @ w` and of the kernel that made the values, in
        one call: its active inputs' gradients and w's (the kernel's own adjoint is then
        never needed: nothing else reads its values)."""
        ks = st.partner
        act = self.kernel_active(ks) if self.is_active(ks.target) else []
        rows = row_reduction(st)
        w = None if rows else st.args[1]
        w_grad = w is not None and self.is_active(w)
        names = [a for _, _, a in act] + ([w] if w_grad else [])
        if not names:
            return
        ins = tuple_text([text_of(a) for a in ks.args])
        active = tuple_text([repr(p) for _, p, _ in act])
        node = ks.stmt if ks.stmt is not None else ks.node
        mine = st.stmt if st.stmt is not None else st.node
        if _line(ks.ctx.filename, node) != _line(st.ctx.filename, mine):    # else the Grad of: line says it
            out.append(f"{ind}# and of: {_line(ks.ctx.filename, node)}    "
                       f"[{_short(location_of(ks.ctx.filename, node))}]")
        # the gradients come back in their arguments' shapes
        if rows:
            call = (f"kernel_rowsum_vjp({self.kernel_name(ks)}, {ins}, {active}, {rows[0]}, {rows[1]}, "
                    f"{st.op.kind == 'mean'}, ")
        else:
            call = f"kernel_matmul_vjp({self.kernel_name(ks)}, {ins}, {active}, {text_of(w)}, {w_grad}, "
        self.contribute_call(names, f"{call}{g}, {ks.target})", ind, out, init)

    def seeds_pullback_only(self, name: str, st: ArrayStmt) -> bool:
        """Is `st`, reading `name` once, its only reader, and `name` the output of a
        kernel whose pullback is recomputed (`vjp`)? Then `name`'s adjoint is this one
        contribution, read only as that pullback's seed, which takes a SeedProduct."""
        made = self.index.made_by.get(name)
        if (name == self.p.result or st.args.count(name) != 1 or self.index.readers.get(name) != 1
                or made is None or not isinstance(made.op, RunKernel) or made.op.scalar):
            return False
        return self.kernel_modes.get(self.kernel_name(made), ("",))[0] == "recompute"

    def _contributed(self, body) -> set:
        """Names defined outside `body` whose adjoints its reverse may add to."""
        inside = set()
        names = set()
        for st in walk_stmts(body):
            if isinstance(st, ArrayStmt):
                if st.target:
                    inside.add(st.target)
                if st.target and self.is_active(st.target):
                    names |= {a for a in st.args if self.is_active(a)}
            elif isinstance(st, ForStmt):
                inside |= {ph.name for ph in st.phis}
                names |= {ph.first for ph in st.phis if self.is_active(ph.first)}
                names |= {ph.second for ph in st.phis if self.is_active(ph.second)}
            else:
                inside |= {ph.name for ph in st.phis}
                names |= {v for ph in st.phis for v in (ph.first, ph.second) if self.is_active(v)}
        return names - inside

    def _preinit(self, names, ind, out, init):
        for nm in sorted(names):
            if nm not in init and self.is_active(nm):
                out.append(f"{ind}{self.bar(nm)} = zeros_bar({nm})")
                init.add(nm)

    def reverse_for(self, st: ForStmt, ind: str, out: list, init: set):
        phis = [ph for ph in st.phis if self.is_active(ph.name)]
        if st.adjoint.tape is None:
            return
        tape, body_defined = st.adjoint.tape, st.adjoint.body_defined
        self._preinit(self._contributed(st.body) | {ph.name for ph in phis}, ind, out, init)
        body_init = set(init)
        lines: list = []
        i2 = ind + "    "
        # the end-of-body update `phi = out`: its adjoint flows back first
        simple = all(isinstance(ph.second, str) and ph.second in body_defined and ph.second not in
                     {q.name for q in st.phis} for ph in phis) and len({ph.second for ph in phis}) == len(phis)
        if simple:
            for ph in phis:
                if self.is_active(ph.second):
                    lines.append(f"{i2}{self.bar(ph.second)} = {self.bar(ph.name)}")
                    body_init.add(ph.second)
                body_init.discard(ph.name)
        else:
            tmps = {}
            for ph in phis:
                tmps[ph.name] = self.namer.fresh(f"_{ph.name}_next_bar")
                lines.append(f"{i2}{tmps[ph.name]} = {self.bar(ph.name)}")
            for ph in phis:
                body_init.discard(ph.name)
            for ph in phis:
                self.contribute(ph.second, tmps[ph.name], i2, lines, body_init)
        self.reverse(st.body, i2, lines, body_init)
        for ph in phis:
            if ph.name not in body_init:
                lines.append(f"{i2}{self.bar(ph.name)} = zeros_bar({ph.name})")
        text = "\n".join(l for l in lines)
        need = sorted((names_read(text) & body_defined) - {st.var})
        if st.counted:
            # its iterations are the tape's entries (a while, a break): the loop variable on it too
            need = need + ([st.var] if st.range_args is not None and st.var in names_read(text) else [])
            st.adjoint.tape_names = need
            head = f"{tuple_text(need)}" if need else "_"
            out.append(block_header(f"{ind}for {head} in reversed({tape}):", st))
            out.extend(lines or [f"{i2}pass"])
            for ph in phis:
                self.contribute(ph.first, self.bar(ph.name), ind, out, init)
            return
        st.adjoint.tape_names = need
        rng = f"range({', '.join(unparse(a) for a in st.range_args)})"
        if need:
            out.append(block_header(f"{ind}for {st.var}, {tuple_text(need)} in zip(reversed({rng}), reversed({tape})):",
                                    st))
        else:
            out.append(block_header(f"{ind}for {st.var} in reversed({rng}):", st))
        out.extend(lines or [f"{i2}pass"])
        for ph in phis:
            self.contribute(ph.first, self.bar(ph.name), ind, out, init)

    def reverse_if(self, st: IfStmt, ind: str, out: list, init: set):
        phis = [ph for ph in st.phis if self.is_active(ph.name) and ph.name in init]
        has = phis or any(isinstance(s, ArrayStmt) and s.target and self.is_active(s.target)
                          for s in walk_stmts(st.body + st.orelse))
        if not has:
            return
        # what the branches add to: names their statements read, and the phis' values
        # made before the `if` (an early return's `result` from an earlier branch)
        inside = {n for b in (st.body, st.orelse) for x in walk_stmts(b) for n in _defines(x)}
        outer = {v for ph in phis for v in (ph.first, ph.second) if self.is_active(v) and v not in inside}
        self._preinit(self._contributed(st.body + st.orelse) | outer, ind, out, init)
        out.append(block_header(f"{ind}if {text_of(st.test)}:", st))
        for branch, k in ((st.body, 0), (st.orelse, 1)):
            if k == 1:
                out.append(f"{ind}else:")
            lines: list = []
            binit = set(init)
            for ph in phis:
                self.contribute(ph.first if k == 0 else ph.second, self.bar(ph.name), ind + "    ", lines, binit)
            self.reverse(branch, ind + "    ", lines, binit)
            out.extend(lines or [f"{ind}    pass"])

    # -------------------------------------------------------------- the whole


def _defines(st) -> set:
    """The names one statement of the program binds (a loop's or an if's: its phis)."""
    if isinstance(st, ArrayStmt):
        return {st.target} if st.target else set()
    return {ph.name for ph in st.phis} | ({st.var} if isinstance(st, ForStmt) else set())

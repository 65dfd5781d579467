"""The LLVM scan driver: a `ScanSpec`'s elements in order (flat index), threading the state.

The elements run in blocks of BLOCK; the state-free part of the entry
(`passes/scansplit.py`) runs over a block as a vectorised loop into stack buffers, then
the block's serial chain with the k states (and lambda, the adjoint of the state) in
phis. With a tape, the forward sweep stores the state before each element and the
reverse sweep walks the blocks backwards calling the dual at (params(e), tape[e]);
without one (no partial depends on the state), one serial loop runs the forward chain on
a block and the reverse chain on its mirror block. `llvm_drivers.lower_module` calls
`emit_scan_driver` with the module's scan plan set on the writer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .llvm_driver_body import DriverBody, active_indices
from .llvm_lower import LoweringError, ModuleWriter

__all__ = ["BLOCK", "emit_scan_driver"]


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


def emit_scan_driver(m: ModuleWriter) -> str:
    """kernel.py's scan driver over blocks of BLOCK elements (see `_ScanSweeps`): without
    grads the forward sweep; with grads and a plan without tape, one pass whose serial
    loop runs the forward chain on block b and the reverse chain on its mirror block at
    once; with a tape, the forward sweep, then the reverse sweep."""
    d = DriverBody(m)
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


def _scan_signature(d: DriverBody) -> _ScanSig:
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
    sig.active_idx = active_indices(kmod, wrt[:len(wrt) - k], names)
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

    def __init__(self, d: DriverBody, fname: str, split, hint: str) -> None:
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

    def __init__(self, d: DriverBody, sig: _ScanSig, plan) -> None:
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

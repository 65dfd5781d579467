"""Array program -> its adjoint program, as Python source that runs.

Input: an `ArrayProgram` (passes/arrayprog.py), the differentiated arguments and the
pullback mode of elementwise kernels. Output: generated Python source (what
`s2sad.source(g)` prints and what runs, exec'd with the namespace `namespace()` gives):

    def loss__value_and_grad(w, b, X, y):     # free data arrays are keyword arguments
        <forward sweep: the user's statements in ANF, kernels called through the runtime>
        loss_bar = 1.0
        <reverse sweep, statements in reverse order, each under `# Grad of: <user line>`>
        return loss, (w_bar, b_bar)

followed by the source of every kernel it calls (as comments name them).

- `x_bar` is the adjoint of `x`; adjoints are only ever rebound (`x_bar = x_bar + g`),
  never updated in place, so no adjoint aliases another.
- Adjoints of elementwise kernels: `KernelSum` statements got the gradients of their
  inputs in the forward pass (`runtime.sum_dual`) and scale them by their output's
  adjoint; `RunKernel` statements either store per-element partials in the forward pass
  (`runtime.store_partials`, mode "store") or recompute them from the inputs in the
  reverse pass (`runtime.vjp`, mode "recompute"). Both multiply the same partial by the
  same seed and sum back to each input's shape with the same `unbroadcast`, so they
  give identical results. Kernels whose inputs are all known scalars run as plain
  Python calls of the kernel's python form (its dual gives the partials).
- Other primitives print their forward line and take their adjoint text from their
  `array_prims` entry.
- `for` loops push what their reverse needs (found by reading the reverse body's
  source) on a Python list, the tape, one tuple per iteration; the reverse loop walks
  the tape backwards. `if` statements branch on the same (saved) condition.
- For s2sad.grad, `loss__grad` returns the gradients only, and its forward sweep
  computes only what the reverse sweep reads (`Generator._live`): a kernel sum whose
  value is not read runs as `runtime.sum_grads` (no value in the kernel), a scalar
  kernel whose value is not read gives its partials only (inputs they do not read
  passed as `not_needed`), and other pure statements nobody reads are left out.
"""
from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import array_prims
from ..array_prims import PrimOp, Product
from ..errors import NonScalarLossError, UnsupportedOperationError
from ..frontend import location_of, shown_location as _short, source_line as _line
from ..kernel_text import unparse
from ..parsing import ast_parse
from .activity import partials_read, same_partials
from .arrayir import (ArrayProgram, ArrayStmt, Const, ForStmt, IfStmt, KernelSum, Namer, Py, RunKernel, is_kernel,
                      stmt_reads, walk_stmts)
from .kernelpairs import choose_mode, row_reduction
from .primcalls import register_hint

@dataclass
class _Nones:
    gen: "Generator"
    indent: str
    names: list


@dataclass
class _Push:
    gen: "Generator"
    loop: ForStmt
    indent: str
    init: bool = False


class Generator:
    def __init__(self, prog: ArrayProgram, argnums: tuple[int, ...], mode: str = "auto",
                 defer: frozenset = frozenset()):
        self.p = prog
        self.argnums = argnums
        self.mode = mode
        # grad variant: kernel sums whose value nothing reads, run in the reverse sweep
        # with their adjoint folded into the scale (`deferrable_sums`)
        self.defer = defer
        self.namer = Namer()                      # a copy: generation adds names of its own
        self.namer.used = set(prog.namer.used)
        self.namer.temps = prog.namer.temps
        self.tape: dict[int, str] = {}            # id(loop) -> its tape's name
        self.body_defined: dict[int, set] = {}    # id(loop) -> names its body defines
        self.tape_names: dict[int, list] = {}     # id(loop) -> names each iteration pushes
        self.active: set[str] = set()
        self.bars: dict[str, str] = {}
        self.kernel_names: dict[int, str] = {}
        self.kernel_modes: dict[str, tuple[str, str]] = {}
        self.partials: dict[int, list] = {}       # id(stmt) -> names of its partials/grads (per active input)
        self.ns: dict[str, Any] = {}
        self.kernel_sources: list[str] = []
        self.scalar_fns: dict[int, tuple[str, str | None]] = {}
        self.rev_defined: set[str] = set()
        self.line_of: dict = {}
        self.params = {}
        self.grads_only: dict[int, Any] = {}       # id(stmt) -> live -> its line when its value is not needed
        self.scalar_reads: dict[int, set] = {}     # id(scalar dual stmt) -> what its partials read
        self.live_after: dict[int, set] = {}       # id(stmt) -> names read after it (grad variant)
        self.p_names = {n for st in walk_stmts(prog.body) for n in _defs(st)}
        self.readers: dict[str, int] = {}          # name -> how many statements read it
        self.made_by: dict[str, ArrayStmt] = {}    # name -> the statement that defines it
        for st in walk_stmts(prog.body):
            for r in stmt_reads(st):
                self.readers[r] = self.readers.get(r, 0) + 1
            if isinstance(st, ArrayStmt) and st.target:
                self.made_by[st.target] = st
        self._compute_activity()

    # -------------------------------------------------------------- activity

    def _compute_activity(self):
        p = self.p
        act = {p.params[i] for i in self.argnums}
        while True:
            before = len(act)
            for st in walk_stmts(p.body):
                if isinstance(st, ArrayStmt):
                    if st.target and st.target not in act and self._stmt_active(st, act):
                        act.add(st.target)
                else:
                    for ph in st.phis:
                        if any(isinstance(v, str) and v in act for v in (ph.first, ph.second)):
                            act.add(ph.name)
            if len(act) == before:
                break
        self.active = act

    def _stmt_active(self, st: ArrayStmt, act: set) -> bool:
        ins = [a for a in st.args if isinstance(a, str) and a in act]
        if not ins:
            return False
        if isinstance(st.op, Py):
            if st.op.why == "nograd":
                return False
            label = st.op.label
            raise UnsupportedOperationError(
                f"'{label}' is applied to '{ins[0]}', which depends on the differentiated arguments, and has no "
                f"derivative rule at the array level", location_of(st.ctx.filename, st.node),
                hint=register_hint(label))
        if is_kernel(st.op):
            return st.op.kernel.module(()).result_kind == "float"
        return True

    def is_active(self, op) -> bool:
        return isinstance(op, str) and op in self.active

    # -------------------------------------------------------------- names

    def bar(self, name: str) -> str:
        b = self.bars.get(name)
        if b is None:
            b = self.bars[name] = self.namer.fresh(f"{name}_bar")
        return b

    def kernel_name(self, st: ArrayStmt) -> str:
        k = st.op.kernel
        nm = self.kernel_names.get(id(k))
        if nm is None:
            nm = self.kernel_names[id(k)] = k.name
            self.ns[nm] = k
        return nm

    def kernel_active(self, st: ArrayStmt) -> list[tuple[int, str, str]]:
        """(position, kernel parameter, operand) of each active input."""
        k = st.op.kernel
        return [(i, k.params[i], a) for i, a in enumerate(st.args) if self.is_active(a)]

    # -------------------------------------------------------------- forward

    def forward(self, body, ind: str, out: list, defined: list):
        last = None
        group = None
        for st in body:
            if isinstance(st, ArrayStmt):
                node = st.stmt if st.stmt is not None else st.node
                if group is None or (node is not last and node is not None):
                    # the statements of one user line, under `# <the line>`
                    group = _Group(self, f"{ind}# {_line(st.ctx.filename, node)}" if node is not None else None, [])
                    out.append(group)
                    last = node
                lines: list = []
                self.forward_stmt(st, ind, lines, defined)
                group.stmts.append((st, lines))
            elif isinstance(st, ForStmt):
                last = group = None
                self.forward_for(st, ind, out, defined)
            else:
                last = group = None
                self.forward_if(st, ind, out, defined)

    def forward_stmt(self, st: ArrayStmt, ind: str, out: list, defined: list):
        t = st.target
        defined.append(t)
        if is_kernel(st.op):
            k = st.op.kernel
            args = [_text(a) for a in st.args]
            tup = _tuple(args)
            act = self.kernel_active(st) if self.is_active(t) else []
            if isinstance(st.op, KernelSum):
                kn = self.kernel_name(st)
                scale = "1.0" if st.op.reduction == "sum" else f"1.0 / broadcast_size({', '.join(args)})"
                self._add_source(k, k.module(tuple(p for _, p, _ in act)), how="fused with its reduction")
                if act:
                    names = [self.partial_name(t, a) for _, _, a in act]
                    defined.extend(names)
                    self.partials[id(st)] = names
                    call = f"({kn}, {tup}, active={_tuple([repr(p) for _, p, _ in act])}, scale={scale})"
                    out.append(f"{ind}{t}, {_tuple(names)} = sum_dual{call}")
                    # when the reverse sweep does not read the value: its kernel skips it
                    self.grads_only[id(st)] = lambda live, text=f"{ind}{_tuple(names)} = sum_grads{call}": text
                else:
                    out.append(f"{ind}{t} = sum_dual({kn}, {tup}, active=(), scale={scale})[0]")
                return
            if st.op.scalar:
                kmod = k.module(tuple(p for _, p, _ in act))
                fns = k.python_functions(kmod.active)
                if act:
                    fname = self._bind_fn(kmod.dual_entry, fns[kmod.dual_entry])
                    names = [self.partial_name(t, a) for _, _, a in act]
                    defined.extend(names)
                    self.partials[id(st)] = names
                    out.append(f"{ind}{t}, {', '.join(names)} = {fname}({', '.join(args)})")
                    # when the reverse sweep does not read the value: the partials alone, and
                    # only the inputs they read (the others are not computed: NaN)
                    reads = partials_read(kmod.functions, kmod.dual_entry)
                    ins = st.args
                    self.scalar_reads[id(st)] = {a for i, a in enumerate(ins) if isinstance(a, str)
                                                 and (i in reads or a not in self.p_names)}

                    def partials_only(live, ind=ind, fname=fname, args=args, names=names, st=st):
                        skipped = [a for a in args if a in self.p_names and a not in self.scalar_reads[id(st)]
                                   and a not in live]
                        pargs = ["not_needed" if a in skipped else a for a in args]
                        note = f"  # its partials do not read {', '.join(skipped)}" if skipped else ""
                        return f"{ind}{_tuple(names)} = {fname}({', '.join(pargs)})[1:]{note}"
                    self.grads_only[id(st)] = partials_only
                else:
                    fname = self._bind_fn(kmod.entry, fns[kmod.entry])
                    out.append(f"{ind}{t} = {fname}({', '.join(args)})")
                self._add_source(k, kmod, scalar=True)
                return
            kn = self.kernel_name(st)
            if st.partner is not None:    # runs with its matmul or row reduction (below)
                self._add_source(k, k.module(tuple(p for _, p, _ in act)))
                return
            if act:
                mode, why = choose_mode(k, self.mode)
                self.kernel_modes[kn] = (mode, why)
                active = tuple(p for _, p, _ in act)
                if mode == "store":
                    # partials that are one value (`tanh(h + b)`: d/dh = d/db) are stored once
                    kmod = k.module(active)
                    firsts = same_partials(kmod.functions, kmod.dual_entry) or tuple(range(len(act)))
                    stored = {i: self.partial_name(t, act[i][2]) for i in range(len(act)) if firsts[i] == i}
                    defined.extend(stored.values())
                    self.partials[id(st)] = [stored[firsts[i]] for i in range(len(act))]
                    unique = tuple(active[i] for i in stored)
                    self._add_source(k, k.module(unique))
                    out.append(f"{ind}{t}, {_tuple(list(stored.values()))} = store_partials({kn}, {tup}, "
                               f"{_tuple([repr(p) for p in unique])})")
                    return
                self._add_source(k, k.module(active))
            else:
                self._add_source(k, k.module(()))
            out.append(f"{ind}{t} = apply({kn}, {tup})")
            return
        if st.partner is not None:     # with the kernel that made its operand (reverse_kernel_matmul)
            ks = st.partner
            h, kn, ins = ks.target, self.kernel_name(ks), _tuple([_text(a) for a in ks.args])
            rows = row_reduction(st)
            if rows:
                act = self.kernel_active(ks) if self.is_active(ks.target) else []
                mode, why = choose_mode(ks.op.kernel, self.mode)
                self.kernel_modes[kn] = (mode, why)
                out.append(f"{ind}# {unparse(st.forward)} in {h}'s kernel: {h} is not formed (None) where that "
                           f"pass sums its rows")
                out.append(f"{ind}{t}, {h} = kernel_rowsum({kn}, {ins}, {_tuple([repr(p) for _, p, _ in act])}, "
                           f"{rows[0]}, {rows[1]}, {st.op.kind == 'mean'}, {mode!r})")
            else:
                w = _text(st.args[1])
                out.append(f"{ind}# {h} @ {w} in the pass of {h}'s kernel; {h} is not formed (None) where {w} is "
                           f"one column")
                out.append(f"{ind}{t}, {h} = kernel_matmul({kn}, {ins}, {w})")
            return
        prim = array_prims.of(st.op)
        line = prim.forward([_text(a) for a in st.args], _param_texts(st)) if prim and prim.forward else None
        out.append(f"{ind}{t} = {line if line is not None else unparse(st.forward)}")

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
            out.append(f"{ind}{ph.name} = {_text(ph.first)}")
            defined.append(ph.name)
        needs_tape = any(self.is_active(ph.name) for ph in st.phis) or any(
            isinstance(s, ArrayStmt) and s.target and self.is_active(s.target) for s in walk_stmts(st.body))
        if needs_tape:
            self.tape[id(st)] = self.namer.fresh("tape")
            out.append(_Push(self, st, ind, init=True))
            defined.append(self.tape[id(st)])
        out.append(_Header(f"{ind}for {st.var} in range({', '.join(unparse(a) for a in st.range_args)}):"))
        defined.append(st.var)
        inner: list = []
        body_lines: list = []
        self.forward(st.body, ind + "    ", body_lines, inner)
        self.body_defined[id(st)] = set(inner) | {ph.name for ph in st.phis}
        defined.extend(inner)
        out.extend(body_lines)
        if needs_tape:
            out.append(_Push(self, st, ind + "    "))
        updates = [(ph.name, _text(ph.second)) for ph in st.phis if _text(ph.second) != ph.name]
        if updates:
            out.append(f"{ind}    {', '.join(u[0] for u in updates)} = {', '.join(u[1] for u in updates)}")
        if not body_lines and not updates and not needs_tape:
            out.append(f"{ind}    pass")

    def forward_if(self, st: IfStmt, ind: str, out: list, defined: list):
        out.append(_Header(f"{ind}if {_text(st.test)}:  # {_line(st.ctx.filename, st.node)}"))
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
                out.append(_Header(f"{ind}else:"))
            lines = blocks[k]
            # what only the other branch defines, as None: a tape or the residuals may list it
            lines.append(_Nones(self, ind + "    ", sorted(set(defs[1 - k]) - set(defs[k]))))
            for ph in st.phis:
                v = ph.first if k == 0 else ph.second
                lines.append(f"{ind}    {ph.name} = {_text(v)}")
                defined.append(ph.name)
            if not any(isinstance(l, (str, _Group)) for l in lines):
                lines.append(f"{ind}    pass")
            out.extend(lines)

    # -------------------------------------------------------------- liveness (grad variant)

    def _live(self, body, live: set) -> set:
        """The names `body` needs given those needed after it (`live`), as a backward
        dataflow over the forward sweep (a loop to its fixpoint); records for each
        statement the names needed after it (`live_after`), which `fwd_lines` renders by."""
        live = set(live)
        for st in reversed(body):
            if isinstance(st, ArrayStmt):
                self.live_after[id(st)] = set(live)
                defs = _defs(st) | set(self.partials.get(id(st), ()))
                live = (live - defs) | self._needs(st, live)
            elif isinstance(st, ForStmt):
                # `phi = first` before the loop and `phi = second` at the end of the body
                # are always written, so every first and second is needed
                phis = {ph.name for ph in st.phis}
                ends = {ph.second for ph in st.phis if isinstance(ph.second, str)}
                ends |= set(self.tape_names.get(id(st), ()))  # pushed on the tape
                head = set(live)
                while True:
                    inner = self._live(st.body, (head - phis) | ends)
                    if inner - {st.var} <= head:
                        break
                    head |= inner - {st.var}
                live = (head - phis) | stmt_reads(st) | _names_read("\n".join(unparse(a) for a in st.range_args))
            else:
                phis = {ph.name for ph in st.phis}
                live = (self._live(st.body, (live - phis) | {ph.first for ph in st.phis if isinstance(ph.first, str)})
                        | self._live(st.orelse, (live - phis) | {ph.second for ph in st.phis
                                                                  if isinstance(ph.second, str)})
                        | stmt_reads(st))
        return live

    def _needs(self, st: ArrayStmt, live: set) -> set:
        """What a statement reads, given what is needed after it: nothing when it is dead
        (and pure), only its partials' inputs for a scalar dual whose value is not needed."""
        reads = stmt_reads(st)
        if st.forward is not None:
            reads |= _names_read(unparse(st.forward))
        if isinstance(st.op, Py) or not st.target:   # may have effects: always runs
            return reads
        if not (_defs(st) | set(self.partials.get(id(st), ()))) & live:
            return set()
        if id(st) in self.scalar_reads and st.target not in live:
            return self.scalar_reads[id(st)] | set(st.reads)
        return reads

    def fwd_lines(self, st: ArrayStmt, lines: list) -> list:
        """A forward statement's lines, by liveness in the grad variant (else as they
        are): none when dead, the gradient-only call when its value is not needed."""
        live = self.live_after.get(id(st))
        if live is None or isinstance(st.op, Py) or not st.target:
            return lines
        if not (_defs(st) | set(self.partials.get(id(st), ()))) & live:
            return []
        if st.target not in live and id(st) in self.grads_only:
            return [self.grads_only[id(st)](live)]
        return lines

    # -------------------------------------------------------------- reverse

    def contribute(self, name, text: str, ind: str, out: list, init: set):
        if not self.is_active(name):
            return
        b = self.bar(name)
        if name in init:
            out.append(f"{ind}{b} = {b} + {text}")
        else:
            out.append(f"{ind}{b} = {text}")
            init.add(name)
        self.unit.discard(name)

    def contribute_call(self, names: list, call: str, ind: str, out: list, init: set) -> None:
        """`call` returns the adjoints of `names` (each already of its name's shape): an
        adjoint not yet bound is bound by the call itself; one already bound gets a
        temporary, added to it (and a name twice: the second one a temporary)."""
        targets, adds, seen = [], [], set()
        for a in names:
            if a in init or a in seen:
                tmp = self.namer.fresh(f"_{a}_g")
                targets.append(tmp)
                adds.append((a, tmp))
            else:
                targets.append(self.bar(a))
                seen.add(a)
        out.append(f"{ind}{_tuple(targets)} = {call}")
        init.update(seen)
        self.unit.difference_update(seen)
        for a, tmp in adds:
            self.contribute(a, tmp, ind, out, init)

    def g(self, name: str) -> str:
        return "1.0" if name in self.unit else self.bar(name)

    def reverse(self, body, ind: str, out: list, init: set):
        last = None
        for st in reversed(body):
            if isinstance(st, ArrayStmt):
                if not (st.target and self.is_active(st.target) and st.target in init):
                    continue
                node = st.stmt if st.stmt is not None else st.node
                if node is not last:
                    loc = location_of(st.ctx.filename, node)
                    out.append(f"{ind}# Grad of: {_line(st.ctx.filename, node)}    [{_short(loc)}]")
                    last = node
                self.reverse_stmt(st, ind, out, init)
            elif isinstance(st, ForStmt):
                last = None
                self.reverse_for(st, ind, out, init)
            else:
                last = None
                self.reverse_if(st, ind, out, init)

    def reverse_stmt(self, st: ArrayStmt, ind: str, out: list, init: set):
        t = st.target
        g = self.g(t)
        if id(st) in self.defer:
            self.reverse_deferred_sum(st, g, ind, out, init)
            return
        if isinstance(st.op, KernelSum) or (isinstance(st.op, RunKernel) and st.op.scalar):
            for (_, _, a), d in zip(self.kernel_active(st), self.partials.get(id(st), [])):
                self.contribute(a, d if g == "1.0" else f"{d} * {g}", ind, out, init)
            return
        if isinstance(st.op, RunKernel):
            act = self.kernel_active(st)
            kn = self.kernel_name(st)
            mode, _ = self.kernel_modes[kn]
            if mode == "store":
                names = self.partials[id(st)]
                shared: dict[str, str] = {}      # a partial several inputs share: multiplied once
                for (_, _, a), d in zip(act, names):
                    term = d if g == "1.0" else f"{d} * {g}"
                    if g != "1.0" and names.count(d) > 1:
                        if d not in shared:
                            shared[d] = self.namer.fresh(f"{d}_x_{g}")
                            out.append(f"{ind}{shared[d]} = {term}")
                        term = shared[d]
                    self.contribute(a, f"unbroadcast({term}, {a})", ind, out, init)
                return
            tmps = [self.namer.fresh(f"_{a}_g") for _, _, a in act]
            args = _tuple([_text(a) for a in st.args])
            out.append(f"{ind}{_tuple(tmps)} = vjp({kn}, {args}, {_tuple([repr(p) for _, p, _ in act])}, {g})")
            for (_, _, a), tm in zip(act, tmps):
                self.contribute(a, f"unbroadcast({tm}, {a})", ind, out, init)
            return
        if st.partner is not None:
            self.reverse_kernel_matmul(st, g, ind, out, init)
            return
        rule = array_prims.of(st.op)
        if rule is None:
            what = st.op.label if isinstance(st.op, Py) else st.op.name
            raise UnsupportedOperationError(f"no reverse-mode rule for '{what}'", location_of(st.ctx.filename, st.node),
                                            hint=register_hint(what))
        args = [_text(a) for a in st.args]
        params = _param_texts(st)
        for i, a in enumerate(st.args):
            if self.is_active(a):
                if rule.factors is not None and self.seeds_pullback_only(a, st):
                    out.append(f"{ind}# {self.bar(a)} only seeds the pullback of {a}'s kernel: "
                               f"an outer product stays two factors")
                    self.contribute(a, rule.factors(i, g, args, t, params), ind, out, init)
                else:
                    self.contribute(a, rule.vjp(i, g, args, t, params), ind, out, init)

    def reverse_deferred_sum(self, st: ArrayStmt, g: str, ind: str, out: list, init: set) -> None:
        """A kernel sum of `defer`: its gradients computed here, the adjoint of its value
        folded into the kernel's scale, rather than in the forward sweep and multiplied
        by that adjoint after (one pass over each gradient less)."""
        args = [_text(a) for a in st.args]
        act = self.kernel_active(st)
        scale = g if st.op.reduction == "sum" else f"{g} / broadcast_size({', '.join(args)})"
        self.contribute_call([a for _, _, a in act],
                             f"sum_grads({self.kernel_name(st)}, {_tuple(args)}, "
                             f"active={_tuple([repr(p) for _, p, _ in act])}, scale={scale})", ind, out, init)

    def deferrable_sums(self) -> frozenset:
        """After generating the grad variant: the top-level kernel sums with partials
        whose value nothing reads (by `_live`), other than the result (whose adjoint is
        1.0: nothing to fold)."""
        return frozenset(id(st) for st in self.p.body
                         if isinstance(st, ArrayStmt) and isinstance(st.op, KernelSum) and self.partials.get(id(st))
                         and st.target != self.p.result and id(st) in self.live_after
                         and st.target not in self.live_after[id(st)])

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
        ins = _tuple([_text(a) for a in ks.args])
        active = _tuple([repr(p) for _, p, _ in act])
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
            call = f"kernel_matmul_vjp({self.kernel_name(ks)}, {ins}, {active}, {_text(w)}, {w_grad}, "
        self.contribute_call(names, f"{call}{g}, {ks.target})", ind, out, init)

    def seeds_pullback_only(self, name: str, st: ArrayStmt) -> bool:
        """Is `st`, reading `name` once, its only reader, and `name` the output of a
        kernel whose pullback is recomputed (`vjp`)? Then `name`'s adjoint is this one
        contribution, read only as that pullback's seed, which takes a SeedProduct."""
        made = self.made_by.get(name)
        if (name == self.p.result or st.args.count(name) != 1 or self.readers.get(name) != 1
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
        if id(st) not in self.tape:
            return
        tape, body_defined = self.tape[id(st)], self.body_defined[id(st)]
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
        need = sorted((_names_read(text) & body_defined) - {st.var})
        self.tape_names[id(st)] = need
        rng = f"range({', '.join(unparse(a) for a in st.range_args)})"
        if need:
            out.append(f"{ind}for {st.var}, {_tuple(need)} in zip(reversed({rng}), reversed({tape})):  "
                       f"# Grad of: {_line(st.ctx.filename, st.node)}")
        else:
            out.append(f"{ind}for {st.var} in reversed({rng}):  # Grad of: {_line(st.ctx.filename, st.node)}")
        out.extend(lines or [f"{i2}pass"])
        for ph in phis:
            self.contribute(ph.first, self.bar(ph.name), ind, out, init)

    def reverse_if(self, st: IfStmt, ind: str, out: list, init: set):
        phis = [ph for ph in st.phis if self.is_active(ph.name) and ph.name in init]
        has = phis or any(isinstance(s, ArrayStmt) and s.target and self.is_active(s.target)
                          for s in walk_stmts(st.body + st.orelse))
        if not has:
            return
        self._preinit(self._contributed(st.body + st.orelse), ind, out, init)
        out.append(f"{ind}if {_text(st.test)}:  # Grad of: {_line(st.ctx.filename, st.node)}")
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

    def generate(self, variant: str = "value_and_grad") -> str:
        """variant "value_and_grad": one function returning (value, grads) for the seed
        1.0; "grad": `<name>__grad(...) -> grads`, its forward sweep only what the
        reverse sweep reads (liveness: `_live`); "vjp": `<name>__forward(...) -> (value, residuals)` and
        `<name>__pullback(residuals, <result>_bar) -> grads`."""
        p = self.p
        fwd: list = []
        defined: list = list(p.params) + list(p.free)
        self.forward(p.body, "    ", fwd, defined)
        res = p.result
        rtext = _text(res)
        rev: list = []
        init: set = set()
        self.unit = set()
        seed = self.bar(res) if isinstance(res, str) else None
        if isinstance(res, str) and self.is_active(res):
            if variant in ("value_and_grad", "grad"):
                rev.append(f"    {seed} = 1.0")
                self.unit.add(res)
            init.add(res)
            self.reverse(p.body, "    ", rev, init)
        gnames = []
        for i in self.argnums:
            x = p.params[i]
            if x in init:
                gnames.append(self.bar(x))
            else:
                gnames.append(self.bar(x))
                rev.append(f"    {self.bar(x)} = zeros_bar({x})  # the result does not depend on it")
        if variant == "value_and_grad" and isinstance(res, str) and any(res in names for names in
                                                                        self.tape_names.values()):
            # the reverse sweep restores loop values from the tape: keep the result aside
            keep = self.namer.fresh("value")
            fwd.append(f"    {keep} = {rtext}")
            rtext = keep
        rev_text = "\n".join(rev)
        check = "" if (not isinstance(res, str) or res in p.known_scalar) else f"    check_scalar_loss({rtext})\n"
        if variant == "grad":
            # the forward sweep computes what the reverse sweep reads (and the result only
            # to check that it is a scalar); the rest is not computed
            self._live(p.body, _names_read(rev_text + "\n" + check))
        fwd_text = "\n".join(_render(fwd, _names_read(rev_text)))
        sig = ", ".join(p.params) + (", *, " + ", ".join(p.free) if p.free else "")
        head = f"# Grad of: {_line(p.pf.filename, p.return_node)}    [{_short(location_of(p.pf.filename, p.return_node))}]"
        if variant == "value_and_grad":
            text = (f"def {p.name}__value_and_grad({sig}):\n    {head}\n{fwd_text}\n{check}"
                    f"    # reverse sweep\n{rev_text}\n    return {rtext}, {_tuple(gnames)}\n")
        elif variant == "grad":
            text = (f"def {p.name}__grad({sig}):\n    {head}\n{fwd_text}\n{check}"
                    f"    # reverse sweep\n{rev_text}\n    return {_tuple(gnames)}\n")
        else:
            fwd_names = set(defined)
            residuals = sorted(_names_read(rev_text) & fwd_names)
            ob = seed or "_out_bar"
            text = (f"def {p.name}__forward({sig}):\n    {head}\n{fwd_text}\n"
                    f"    return {rtext}, {_tuple(residuals)}\n\n\n"
                    f"def {p.name}__pullback(_residuals, {ob}):\n"
                    f"    {_tuple(residuals)} = _residuals\n{rev_text}\n    return {_tuple(gnames)}\n")
        ast.parse(text)  # the generated code is Python (a failure here is a bug of s2sad)
        return text

    def kernels_text(self) -> str:
        return "\n\n".join(self.kernel_sources)

    def namespace(self, helpers: dict, runtime_names: dict, check_scalar) -> dict:
        """What the generated source runs with: `helpers` (array_rules.HELPERS), the
        program's bound values and kernels, `runtime_names` (derivative_runtime.runtime_names:
        apply, vjp, ... for one backend) and the check of a scalar loss."""
        ns = dict(helpers)
        ns.update(self.p.bound)
        ns.update(self.ns)
        ns.update(runtime_names)
        ns["check_scalar_loss"] = check_scalar
        return ns


# ------------------------------------------------------------------ text helpers

def _param_texts(st: ArrayStmt) -> dict[str, str]:
    """A primitive's static parameters as source text, by name."""
    return {k: unparse(v) for k, v in st.params.items()}


def _text(op) -> str:
    if isinstance(op, Const):
        return repr(op.value)
    return op


def _tuple(items) -> str:
    items = list(items)
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _names_read(text: str) -> set[str]:
    tree = ast_parse(_dedent_lines(text))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _dedent_lines(text: str) -> str:
    t = textwrap.dedent(text)
    return t if t.strip() else "pass"


@dataclass
class _Group:
    """The forward statements of one user line, each with its lines, under the line as a
    comment; the generator picks each statement's lines by liveness, and the comment
    goes when none is left."""
    gen: "Generator"
    comment: str | None
    stmts: list                      # (ArrayStmt, its lines)


class _Header(str):
    """An `if`, `else` or `for` line of the forward sweep: its block gets `pass` when
    everything in it was dropped."""


def _defs(st) -> set:
    """The names an ArrayStmt binds (its target and the names it adds)."""
    if not isinstance(st, ArrayStmt):
        return set()
    return {st.target} if st.target else set()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _render(lines, read: set) -> list[str]:
    out = _render_items(lines, read)
    final = []
    for i, l in enumerate(out):   # a block whose statements were all dropped gets `pass`
        final.append(l)
        if isinstance(l, _Header) and (i + 1 == len(out) or _indent(out[i + 1]) <= _indent(l)):
            final.append(" " * (_indent(l) + 4) + "pass")
    return [str(l) for l in final]


def _render_items(lines, read: set) -> list[str]:
    out = []
    for l in lines:
        if isinstance(l, _Group):
            body = [t for st, ls in l.stmts for t in _render_items(l.gen.fwd_lines(st, ls), read)]
            if body and l.comment is not None:
                out.append(l.comment)
            out.extend(body)
            continue
        if isinstance(l, _Nones):
            names = [n for n in l.names if n in read]
            if names:
                out.append(f"{l.indent}{' = '.join(names)} = None")
            continue
        if isinstance(l, _Push):
            names = l.gen.tape_names.get(id(l.loop), [])
            tape = l.gen.tape[id(l.loop)]
            if names:
                out.append(f"{l.indent}{tape} = []" if l.init else f"{l.indent}{tape}.append({_tuple(names)})")
        else:
            out.append(l)
    return out


# ------------------------------------------------------------------ the compiled function


class ArrayCompiled:
    """A differentiated function planned at the array level: its program, and its
    generated derivatives per (argnums, mode), compiled once each."""

    def __init__(self, fun, pf, program: ArrayProgram, helpers: dict, runtime_names):
        self.pf = pf  # (its function is read through pf's resolver: never held)
        self.program = program
        # what the generated code calls, given by the caller (the runtime is a layer above
        # the passes): array_rules.HELPERS, and backend -> derivative_runtime.runtime_names
        self.helpers = helpers
        self.runtime_names = runtime_names
        self.params = [a.id for a in pf.node.args.args]
        self.resolver = pf.resolver
        self._gens: dict = {}
        self._impls: dict = {}

    # what code written for the fused planner's `Compiled` reads (cli, explain)
    @property
    def fun(self):
        return self.pf.fn

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def kernel(self):
        ks = self.program.kernels
        return ks[-1].kernel if ks else None

    @property
    def plan(self):
        return self

    @property
    def sites(self):
        return self.program.sites

    def free_values(self) -> dict[str, Any]:
        """The free data arrays, read now (at call time), as Python reads globals."""
        return {g: r.lookup(n) for g, (r, n) in self.program.free.items()}

    def _generator(self, argnums: tuple[int, ...], mode: str, variant: str):
        key = (argnums, mode, variant)
        got = self._gens.get(key)
        if got is None:
            gen = Generator(self.program, argnums, mode)
            text = gen.generate(variant)
            defer = gen.deferrable_sums() if variant == "grad" else frozenset()
            if defer:     # again, those sums in the reverse sweep (their value is not needed)
                gen = Generator(self.program, argnums, mode, defer)
                text = gen.generate(variant)
            got = self._gens[key] = (text, gen)
        return got

    def source(self, argnums: tuple[int, ...], mode: str = "auto", variant: str = "value_and_grad") -> str:
        text, gen = self._generator(argnums, mode, variant)
        kt = gen.kernels_text()
        return text + ("\n\n" + kt if kt else "")

    def implementation(self, argnums: tuple[int, ...], mode: str, backend: str, variant: str = "value_and_grad"):
        key = (argnums, mode, backend, variant)
        fn = self._impls.get(key)
        if fn is None:
            text, gen = self._generator(argnums, mode, variant)
            ns = gen.namespace(self.helpers, self.runtime_names(backend), self._check_scalar)
            exec(compile(text, f"<s2sad derivative of {self.program.name}>", "exec"), ns)
            if variant in ("value_and_grad", "grad"):
                fn = ns[f"{self.program.name}__{variant}"]
            else:
                fn = (ns[f"{self.program.name}__forward"], ns[f"{self.program.name}__pullback"])
            self._impls[key] = fn
        return fn

    def _check_scalar(self, value) -> None:
        size = int(np.size(value))
        if size != 1:
            rn = self.program.return_node
            raise NonScalarLossError(
                f"{self.fun.__name__} returns an array of {size} elements, not a scalar loss",
                location_of(self.pf.filename, rn),
                hint="grad needs a real scalar: reduce the result, e.g. return np.sum(...), or use s2sad.vjp.")

    def value_and_grad(self, args, argnums: tuple[int, ...], mode: str, backend: str):
        fn = self.implementation(argnums, mode, backend)
        free = self.free_values()
        return fn(*args, **free) if free else fn(*args)

    def grad(self, args, argnums: tuple[int, ...], mode: str, backend: str):
        """The gradients alone: the loss's value is computed only where they need it."""
        fn = self.implementation(argnums, mode, backend, "grad")
        free = self.free_values()
        return fn(*args, **free) if free else fn(*args)

    def vjp(self, primals, argnums: tuple[int, ...], mode: str, backend: str):
        fwd, pull = self.implementation(argnums, mode, backend, "vjp")
        free = self.free_values()
        out, res = fwd(*primals, **free) if free else fwd(*primals)
        return out, (lambda out_bar: pull(res, out_bar))

    # -------------------------------------------------------------- explain

    def explain(self, argnums: tuple[int, ...], mode: str = "auto") -> list[str]:
        text, gen = self._generator(argnums, mode, "value_and_grad")
        prog = gen.p
        lines = []
        stmts = [s for s in walk_stmts(prog.body)]
        nloops = sum(isinstance(s, ForStmt) for s in stmts)
        nifs = sum(isinstance(s, IfStmt) for s in stmts)
        lines.append(f"  array program: {sum(isinstance(s, ArrayStmt) for s in stmts)} operation(s)"
                     + (f", {nloops} loop(s) (taped for the reverse pass)" if nloops else "")
                     + (f", {nifs} branch(es)" if nifs else "")
                     + f"; differentiated w.r.t. {', '.join(prog.params[i] for i in argnums)}")
        for st in stmts:
            if isinstance(st, ArrayStmt) and isinstance(st.op, PrimOp):
                loc = _short(location_of(st.ctx.filename, st.node))
                what = "no adjoint needed (not differentiated)" if not gen.is_active(st.target) else \
                    f"rule {st.op.name} (s2sad.array_prims)"
                if st.partner is not None and row_reduction(st) is not None:
                    what = (f"taken with {st.args[0]}'s kernel (kernel_rowsum: {st.args[0]} is not formed "
                            f"where the rows are summed in its pass); its adjoint and that kernel's in one call")
                elif st.partner is not None:
                    what = (f"taken in the pass of {st.args[0]}'s kernel (column_products.kernel_matmul: {st.args[0]} is not "
                            f"formed where {_text(st.args[1])} is one column); its adjoint and that kernel's in one "
                            f"pass")
                rule = array_prims.of(st.op)
                seeds = [a for a in st.args if gen.is_active(a) and gen.is_active(st.target)
                         and rule is not None and rule.factors is not None and gen.seeds_pullback_only(a, st)]
                if seeds:
                    what += (f"; the adjoint of {', '.join(seeds)} seeds its kernel's pullback only, as two factors "
                             f"where it is an outer product")
                if isinstance(st.op, Product) and st.op.kind in ("matmul", "dot") and st.partner is None:
                    what += "; the product by s2sad.gemm (its own loop where the right operand is thin, else numpy's)"
                lines.append(f"  {loc}: {unparse(st.forward)} -> {what}")
            elif isinstance(st, ArrayStmt) and isinstance(st.op, Py):
                loc = _short(location_of(st.ctx.filename, st.node))
                lines.append(f"  {loc}: {unparse(st.forward)} -> evaluated as is (no derivative flows through it)")
        for info in prog.kernels:
            st = info.stmt
            k = info.kernel
            inputs = ", ".join(_text(a) for a in st.args)
            n = len(info.lines)
            if isinstance(st.op, KernelSum):
                how = (f"fused with its np.{st.op.reduction}: one pass (runtime.sum_dual), the gradients of "
                       f"its inputs computed in the same pass")
            elif st.op.scalar:
                how = "on scalars: called as plain Python, its dual gives the partials"
            elif st.partner is not None:
                m = st.partner
                where = f"{unparse(m.forward)} ({_short(location_of(m.ctx.filename, m.node))})"
                if row_reduction(m) is not None:
                    mode_, _ = gen.kernel_modes.get(gen.kernel_names.get(id(k), k.name), choose_mode(k, mode))
                    how = (f"with the row reduction that alone reads it, {where}, its rows summed in the kernel's "
                           f"pass where they are long enough (or it is cheap); pullback: one seeded pass with it "
                           f"there, else {mode_}")
                else:
                    how = (f"with the matmul that alone reads it, {where}; pullback: recomputed with it, in every "
                           f"mode (cheap to evaluate)")
            elif not gen.is_active(st.target):
                how = "applied elementwise (not differentiated)"
            else:
                mode_, why = gen.kernel_modes.get(gen.kernel_names.get(id(k), k.name), choose_mode(k, mode))
                how = f"applied elementwise; pullback: {mode_} ({why})"
            lines.append(f"  fused: {n} line(s) into one kernel {k.name}({inputs}), {how}")
            for loc, src in info.lines:
                lines.append(f"      {_short(loc)}: {src}")
            for s in info.sites:
                lines.append(f"    {_short(s.location)}: {s.applied} -> {s.path}: {s.reason}")
        return lines

"""The analyses of one adjoint generation (passes/reverse.py): which names carry a
derivative (activity), what each statement's partials are called and read, the tapes
of loops, and which forward statements the reverse sweep needs (liveness, grad variant).

They depend on the differentiated arguments, the pullback mode and the variant, while
the array program is shared (and cached by its ArrayCompiled), so they are not stored on
the program: one `AdjointFacts` per generation holds them. Its tables are keyed by the
identity of the program's statements (`id(stmt)`), which the program keeps alive as long
as the generation that reads them (only AdjointFacts.of and .loop read that identity).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import UnsupportedOperationError
from ..frontend import location_of
from ..kernel_text import unparse
from .adjoint_text import defs, names_read
from .arrayir import ArrayProgram, ArrayStmt, ForStmt, KernelSum, Py, is_kernel, stmt_reads, walk_stmts
from .primcalls import call_params, register_hint


@dataclass
class StmtFacts:
    """What one generation knows of one ArrayStmt."""
    partials: list = field(default_factory=list)   # names of its partials/grads (per active input)
    grads_only: Callable | None = None              # live -> its line when its value is not needed
    scalar_reads: set | None = None                 # a scalar dual: what its partials read
    live_after: set | None = None                   # names read after it (grad variant)


@dataclass
class LoopFacts:
    """What one generation knows of one ForStmt."""
    tape: str | None = None                          # its tape's name (None: nothing is taped)
    body_defined: set = field(default_factory=set)   # names its body defines
    tape_names: list = field(default_factory=list)   # names each iteration pushes
    counted: bool = False                            # a while or a break: the tape counts the iterations


@dataclass
class AdjointFacts:
    """One generation's annotations of the program's statements: what the forward
    sweep's writer learns of each, for the reverse sweep's writer, liveness and the
    rendering of the forward sweep. `of(st)` / `loop(st)` are the only places that key
    by a statement's identity."""
    kernel_modes: dict[str, tuple[str, str]] = field(default_factory=dict)  # kernel name -> (mode, why)
    _stmts: dict[int, StmtFacts] = field(default_factory=dict)
    _loops: dict[int, LoopFacts] = field(default_factory=dict)

    def of(self, st: ArrayStmt) -> StmtFacts:
        got = self._stmts.get(id(st))
        if got is None:
            got = self._stmts[id(st)] = StmtFacts()
        return got

    def loop(self, st: ForStmt) -> LoopFacts:
        got = self._loops.get(id(st))
        if got is None:
            got = self._loops[id(st)] = LoopFacts()
        return got

    def pushed(self) -> list[list]:
        """The names each loop's iterations push on its tape."""
        return [lf.tape_names for lf in self._loops.values()]

    def binds(self, st: ArrayStmt) -> set:
        """The names a statement binds in the forward sweep: its target and its partials."""
        return defs(st) | set(self.of(st).partials)

    def forward_lines(self, st: ArrayStmt, lines: list) -> list:
        """A forward statement's lines, by liveness in the grad variant (else as they
        are): none when dead, the gradient-only call when its value is not needed."""
        facts = self.of(st)
        if facts.live_after is None or isinstance(st.op, Py) or not st.target:
            return lines
        if not self.binds(st) & facts.live_after:
            return []
        if st.target not in facts.live_after and facts.grads_only is not None:
            return [facts.grads_only(facts.live_after)]
        return lines


@dataclass
class ProgramIndex:
    """Facts of the program alone (not of a generation): who defines and reads what."""
    defined: set[str]                  # every name a statement binds
    readers: dict[str, int]            # name -> how many statements read it
    made_by: dict[str, ArrayStmt]      # name -> the statement that defines it

    @classmethod
    def of(cls, prog: ArrayProgram) -> "ProgramIndex":
        readers: dict[str, int] = {}
        made_by: dict[str, ArrayStmt] = {}
        for st in walk_stmts(prog.body):
            for r in stmt_reads(st):
                readers[r] = readers.get(r, 0) + 1
            if isinstance(st, ArrayStmt) and st.target:
                made_by[st.target] = st
        return cls({n for st in walk_stmts(prog.body) for n in defs(st)}, readers, made_by)


# ------------------------------------------------------------------ activity

def active_names(prog: ArrayProgram, argnums: tuple[int, ...]) -> set[str]:
    """The names that depend on the differentiated arguments (a fixpoint over loops'
    phis) and that the result depends on (`_reach_result`): only their adjoints can be
    nonzero. Raises on a statement without a derivative rule that a name depending on
    the arguments reaches."""
    act = {prog.params[i] for i in argnums}
    while True:
        before = len(act)
        for st in walk_stmts(prog.body):
            if isinstance(st, ArrayStmt):
                if st.target and st.target not in act and _stmt_active(st, act):
                    act.add(st.target)
            else:
                for ph in st.phis:
                    if any(isinstance(v, str) and v in act for v in (ph.first, ph.second)):
                        act.add(ph.name)
        if len(act) == before:
            return act & _reach_result(prog)


def _reach_result(prog: ArrayProgram) -> set[str]:
    """The names the result depends on through operands (not through tests: a while's
    tolerance, an if's condition): a zero adjoint is never formed for the others, so
    a NaN or inf there (0 * nan) does not reach the gradient."""
    need = {prog.result} if isinstance(prog.result, str) else set()
    while True:
        before = len(need)
        for st in walk_stmts(prog.body):
            if isinstance(st, ArrayStmt):
                if st.target in need and not isinstance(st.op, Py):
                    need |= {a for a in st.args if isinstance(a, str)}
            else:
                for ph in st.phis:
                    if ph.name in need:
                        need |= {v for v in (ph.first, ph.second) if isinstance(v, str)}
        if len(need) == before:
            return need


def _stmt_active(st: ArrayStmt, act: set) -> bool:
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
            hint=register_hint(label, call_params(st.node)))
    if is_kernel(st.op):
        return st.op.kernel.module(()).result_kind == "float"
    return True


# ------------------------------------------------------------------ liveness (grad variant)

def live_before(body, live: set, facts: AdjointFacts) -> set:
    """The names `body` needs given those needed after it (`live`), as a backward
    dataflow over the forward sweep (a loop to its fixpoint); records for each
    statement the names needed after it (`facts.live_after`), which
    `AdjointFacts.forward_lines` renders by."""
    live = set(live)
    for st in reversed(body):
        if isinstance(st, ArrayStmt):
            facts.of(st).live_after = set(live)
            live = (live - facts.binds(st)) | _needs(st, live, facts)
        elif isinstance(st, ForStmt):
            # `phi = first` before the loop and `phi = second` at the end of the body
            # are always written, so every first and second is needed
            phis = {ph.name for ph in st.phis}
            ends = {ph.second for ph in st.phis if isinstance(ph.second, str)}
            ends |= {st.stop} if isinstance(st.stop, str) else set()
            ends |= set(facts.loop(st).tape_names)  # pushed on the tape
            head = set(live)
            while True:
                inner = live_before(st.body, (head - phis) | ends, facts)
                if inner - {st.var} <= head:
                    break
                head |= inner - {st.var}
            live = (head - phis) | stmt_reads(st) | names_read("\n".join(unparse(a) for a in st.range_args or ()))
        else:
            phis = {ph.name for ph in st.phis}
            firsts = {ph.first for ph in st.phis if isinstance(ph.first, str)}
            seconds = {ph.second for ph in st.phis if isinstance(ph.second, str)}
            live = (live_before(st.body, (live - phis) | firsts, facts)
                    | live_before(st.orelse, (live - phis) | seconds, facts)
                    | stmt_reads(st))
    return live


def _needs(st: ArrayStmt, live: set, facts: AdjointFacts) -> set:
    """What a statement reads, given what is needed after it: nothing when it is dead
    (and pure), only its partials' inputs for a scalar dual whose value is not needed."""
    reads = stmt_reads(st)
    if st.forward is not None:
        reads |= names_read(unparse(st.forward))
    if isinstance(st.op, Py) or not st.target:   # may have effects: always runs
        return reads
    if not facts.binds(st) & live:
        return set()
    scalar_reads = facts.of(st).scalar_reads
    if scalar_reads is not None and st.target not in live:
        return scalar_reads | set(st.reads)
    return reads


def deferrable_sums(prog: ArrayProgram, facts: AdjointFacts) -> frozenset:
    """After generating the grad variant: the top-level kernel sums with partials
    whose value nothing reads (by `live_before`), other than the result (whose adjoint
    is 1.0: nothing to fold)."""
    return frozenset(id(st) for st in prog.body
                     if isinstance(st, ArrayStmt) and isinstance(st.op, KernelSum) and facts.of(st).partials
                     and st.target != prog.result and facts.of(st).live_after is not None
                     and st.target not in facts.of(st).live_after)

"""The analyses of one adjoint generation (passes/reverse.py): which names carry a
derivative (activity), what each statement's partials are called and read, the tapes
of loops, and which forward statements the reverse sweep needs (liveness, grad variant).

They depend on the differentiated arguments, the pullback mode and the variant, while
the array program is shared (and cached by its ArrayCompiled). So a generation first
takes its own copy of the program (`annotated`), whose statements carry an empty
annotation each (`ArrayStmt.adjoint`: StmtFacts, `ForStmt.adjoint`: LoopFacts, typed
fields of the IR); the sweeps and liveness fill those annotations and the writers read
them there. No table is keyed by a statement, and the shared program is never changed.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import UnsupportedOperationError
from ..frontend import location_of
from ..kernel_text import unparse
from .adjoint_text import defs, names_read
from .arrayir import (ArrayProgram, ArrayStmt, ForStmt, KernelSum, LoopFacts, Py, StmtFacts, is_kernel, stmt_reads,
                      walk_stmts)
from .linemap import operand_text
from .primhints import call_params, register_hint


# ------------------------------------------------------------------ the generation's copy

def annotated(prog: ArrayProgram) -> ArrayProgram:
    """The pass that opens a generation: a copy of the program whose statements are new
    nodes (the same operations, operands and user nodes), each ArrayStmt carrying an
    empty `adjoint` StmtFacts and each ForStmt an empty LoopFacts, for the sweeps and
    liveness to fill. Kernel pairs are re-linked within the copy (by target: SSA)."""
    body = _annotated_body(prog.body)
    by_target = {st.target: st for st in walk_stmts(body) if isinstance(st, ArrayStmt) and st.target}
    for st in walk_stmts(body):
        if isinstance(st, ArrayStmt) and st.partner is not None:
            st.partner = by_target[st.partner.target]
    return replace(prog, body=body)


def _annotated_body(body: list) -> list:
    out = []
    for st in body:
        if isinstance(st, ArrayStmt):
            out.append(replace(st, adjoint=StmtFacts()))
        elif isinstance(st, ForStmt):
            out.append(replace(st, body=_annotated_body(st.body), adjoint=LoopFacts()))
        else:
            out.append(replace(st, body=_annotated_body(st.body), orelse=_annotated_body(st.orelse)))
    return out


def binds(st: ArrayStmt) -> set:
    """The names a statement binds in the forward sweep: its target and its partials."""
    return defs(st) | set(st.adjoint.partials) | st.adjoint.also_binds


def forward_lines(st: ArrayStmt, lines: list) -> list:
    """A forward statement's lines, by liveness in the grad variant (else as they are):
    none when dead, the gradient-only call when its value is not needed."""
    facts = st.adjoint
    if facts.live_after is None or isinstance(st.op, Py) or not st.target:
        return lines
    if not binds(st) & facts.live_after:
        return []
    if st.target not in facts.live_after and facts.grads_only is not None:
        return [facts.grads_only(facts.live_after)]
    return lines


def pushed(prog: ArrayProgram) -> list[list]:
    """The names each loop's iterations push on its tape."""
    return [st.adjoint.tape_names for st in walk_stmts(prog.body) if isinstance(st, ForStmt)]


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
            f"'{label}' is applied to '{operand_text(st, ins[0])}', which depends on the differentiated arguments, and has no "
            f"derivative rule at the array level", location_of(st.ctx.filename, st.node),
            hint=register_hint(label, call_params(st.node)))
    if is_kernel(st.op):
        return st.op.kernel.module(()).result_kind == "float"
    return True


# ------------------------------------------------------------------ liveness (grad variant)

def live_before(body, live: set) -> set:
    """The names `body` (of an `annotated` program) needs given those needed after it
    (`live`), as a backward dataflow over the forward sweep (a loop to its fixpoint);
    records on each statement the names needed after it (`adjoint.live_after`), which
    `forward_lines` renders by."""
    live = set(live)
    for st in reversed(body):
        if isinstance(st, ArrayStmt):
            st.adjoint.live_after = set(live)
            live = (live - binds(st)) | _needs(st, live)
        elif isinstance(st, ForStmt):
            # `phi = first` before the loop and `phi = second` at the end of the body
            # are always written, so every first and second is needed
            phis = {ph.name for ph in st.phis}
            ends = {ph.second for ph in st.phis if isinstance(ph.second, str)}
            ends |= {st.stop} if isinstance(st.stop, str) else set()
            ends |= set(st.adjoint.tape_names)  # pushed on the tape
            head = set(live)
            while True:
                inner = live_before(st.body, (head - phis) | ends)
                if inner - {st.var} <= head:
                    break
                head |= inner - {st.var}
            live = (head - phis) | stmt_reads(st) | names_read("\n".join(unparse(a) for a in st.range_args or ()))
        else:
            phis = {ph.name for ph in st.phis}
            firsts = {ph.first for ph in st.phis if isinstance(ph.first, str)}
            seconds = {ph.second for ph in st.phis if isinstance(ph.second, str)}
            live = (live_before(st.body, (live - phis) | firsts)
                    | live_before(st.orelse, (live - phis) | seconds)
                    | stmt_reads(st))
    return live


def _needs(st: ArrayStmt, live: set) -> set:
    """What a statement reads, given what is needed after it: nothing when it is dead
    (and pure), only its partials' inputs for a scalar dual whose value is not needed."""
    reads = stmt_reads(st)
    if st.forward is not None:
        reads |= names_read(unparse(st.forward))
    if isinstance(st.op, Py) or not st.target:   # may have effects: always runs
        return reads
    if not binds(st) & live:
        return set()
    scalar_reads = st.adjoint.scalar_reads
    if scalar_reads is not None and st.target not in live:
        return scalar_reads | set(st.reads)
    return reads


def deferrable_sums(prog: ArrayProgram) -> frozenset:
    """After generating the grad variant of `prog` (an `annotated` program): the
    targets of the top-level kernel sums with partials whose value nothing reads (by
    `live_before`), other than the result (whose adjoint is 1.0: nothing to fold). By
    target (SSA), so that the next generation, on its own copy, finds them."""
    return frozenset(st.target for st in prog.body
                     if isinstance(st, ArrayStmt) and isinstance(st.op, KernelSum) and st.adjoint.partials
                     and st.target != prog.result and st.adjoint.live_after is not None
                     and st.target not in st.adjoint.live_after)

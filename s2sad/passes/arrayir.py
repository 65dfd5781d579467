"""The array-level IR: an `ArrayProgram` of statements in administrative normal form.

    ArrayStmt(target, op, args, node)   one operation: target = op(*args)
    ForStmt                             `for var in range(...)` or `while`, with loop-carried phis
    IfStmt                              `if test:` with phis joining the branches

An `ArrayStmt`'s op is typed: an `array_prims` op (Reduce, Product, Index...: a
primitive of that table, its static parameters its fields), or one of the ops here
(`Elementwise` before fusion; `RunKernel`, `KernelSum` after; `Py`; `SetItem`; `ListAppend`). `args` are the
operands derivatives flow through (SSA names or `Const`), `reads` the other SSA names
the statement reads (in its static parameters). passes/arrayprog.py builds programs,
passes/reverse.py differentiates them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import gast
import numpy as np

from ..array_prims import PrimOp
from ..frontend import ParsedFunction, Resolver
from ..kernel import fresh_name
from .trees import const

if TYPE_CHECKING:
    from .ewtranslate import Site

# ------------------------------------------------------------------ the program


@dataclass(frozen=True)
class Const:
    value: Any

    def text(self) -> str:
        return repr(self.value)


@dataclass
class Ctx:
    """The user function a statement's code comes from (the loss, or an inlined helper)."""

    pf: ParsedFunction

    @property
    def filename(self) -> str:
        return self.pf.filename

    @property
    def resolver(self) -> Resolver:
        return self.pf.resolver


@dataclass
class ArrayStmt:
    target: str | None
    op: Any                          # an array_prims op, or one of the ops below
    args: list                       # operands (SSA names or Const) derivatives flow through
    node: Any                        # the user's expression (errors) ...
    stmt: Any = None                 # ... and statement (`# Grad of:` comments)
    ctx: Ctx | None = None
    forward: Any = None              # gast expression computing target, in SSA names
    reads: set = field(default_factory=set)      # SSA names read besides args
    # a kernel and the one matmul or row reduction that alone reads it, each the other's
    # partner when they run as one (passes/kernelpairs.py)
    partner: "ArrayStmt | None" = field(default=None, repr=False, compare=False)
    # what one adjoint generation learns of it (on that generation's own copy of the
    # program: passes/adjoint_analysis.annotated); None on a program as built
    adjoint: "StmtFacts | None" = field(default=None, repr=False, compare=False)
    # a row-fused statement (passes/rowfusion.py): where its chain starts, the user's
    # statement that reduces the rows first (the max): what its rows' errors point at
    origin: Any = field(default=None, repr=False, compare=False)

    @property
    def params(self) -> dict:
        """The primitive's static parameters present (name -> gast expression)."""
        return self.op.statics() if isinstance(self.op, PrimOp) else {}


@dataclass
class Phi:
    name: str
    first: Any      # For: the value before the loop; If: the value from the body
    second: Any     # For: the value at the end of the body; If: from orelse
    user: str = ""  # the user's variable


@dataclass
class ForStmt:
    """`for var in range(*range_args)`, or, when `range_args` is None, `while True:`
    whose body starts with a `LoopExit` (the while's test). `stop`: an operand of the
    body, the loop ends after an iteration where it is true (a `break`: passes/jumps.py)."""
    var: str
    range_args: list | None          # gast expressions (start, stop, step); None: a while loop
    body: list
    phis: list
    node: Any
    ctx: Ctx
    reads: set = field(default_factory=set)
    stop: Any = None
    # what one adjoint generation learns of it (as ArrayStmt.adjoint)
    adjoint: "LoopFacts | None" = field(default=None, repr=False, compare=False)

    @property
    def counted(self) -> bool:
        """Is its number of iterations known only by running it (a while, a break)?"""
        return self.range_args is None or self.stop is not None


@dataclass
class IfStmt:
    test: Any                        # operand
    body: list
    orelse: list
    phis: list
    node: Any
    ctx: Ctx


@dataclass
class StmtFacts:
    """An ArrayStmt's annotation in one adjoint generation (filled by its forward
    sweep and liveness: passes/forward_sweep.py, adjoint_analysis.live_before)."""
    partials: list = field(default_factory=list)   # names of its partials/grads (per active input)
    grads_only: Callable | None = None              # live -> its line when its value is not needed
    scalar_reads: set | None = None                 # a scalar dual: what its partials read
    live_after: set | None = None                   # names read after it (grad variant)
    also_binds: set = field(default_factory=set)    # names its line binds too (a product fused in: biasproducts)
    # forward over reverse (hvp_sweep): a kernel's kept (operand, partial, partial's tangent);
    # a matmul run in the pass of the kernel it reads (its ArrayStmt), and the name of their values
    tangent_partials: list | None = None
    column_kernel: Any = None
    pair_values: str | None = None


@dataclass
class LoopFacts:
    """A ForStmt's annotation in one adjoint generation (filled by its two sweeps)."""
    tape: str | None = None                          # its tape's name (None: nothing is taped)
    body_defined: set = field(default_factory=set)   # names its body defines
    tape_names: list = field(default_factory=list)   # names each iteration pushes
    tape_lines: tuple | None = None                  # hvp_sweep: its tape's (init, push) lines


@dataclass
class KernelInfo:
    """A fused region, for explain."""

    name: str
    kernel: Any
    stmt: ArrayStmt
    lines: list[tuple[str, str]]     # (location, source line) of the user code fused
    sites: list[Site]


@dataclass
class ArrayProgram:
    name: str
    pf: ParsedFunction
    params: list[str]                # SSA names of the parameters (positional)
    body: list
    result: Any                      # operand
    return_node: Any
    free: dict[str, tuple[Resolver, str]]   # name in generated code -> (resolver, user's name)
    bound: dict[str, Any]            # name in generated code -> value bound at plan time
    kernels: list[KernelInfo]
    sites: list[Site]
    namer: "Namer"
    known_scalar: set[str]
    # (id(resolver), user's name) of the free lists whose conversions the generated code
    # checks (passes/freelists.py): their plan tests per call only that each is a list
    checked_lists: set = field(default_factory=set)


class Namer:
    def __init__(self, reserved=()):
        self.used: set[str] = set(reserved)
        self.temps = 0

    def fresh(self, base: str) -> str:
        return fresh_name(base if base.isidentifier() else "v", self.used)

    def temp(self) -> str:
        while True:
            self.temps += 1
            t = f"_{self.temps}"
            if t not in self.used:
                self.used.add(t)
                return t



# ------------------------------------------------------------------ ops besides the primitives


@dataclass(frozen=True, eq=False)
class Elementwise:
    """One elementwise expression (arithmetic, ufuncs, np.where, s2sad.broadcast...) over
    its operands, before fusion joins such statements into kernels: `expr` is a
    template over `holders` (one per operand), `prelude` the local functions it calls,
    `bindings` the values its names stand for, `ctx_bound` whether it reads names of
    its user function (then it only joins regions of that function)."""
    expr: Any
    holders: list
    prelude: list
    sites: list
    bindings: dict
    ctx_bound: bool
    name = "ew"


@dataclass(frozen=True, eq=False)
class RunKernel:
    """A fused elementwise region: one `runtime.Kernel` over the statement's args.
    `scalar`: every input is a known scalar (the kernel runs as plain Python)."""
    kernel: Any
    scalar: bool
    name = "kernel"


@dataclass(frozen=True, eq=False)
class KernelSum:
    """A region fused with the full np.sum / np.mean (`reduction`) that alone reads it:
    one pass (`runtime.sum_dual`)."""
    kernel: Any
    reduction: str
    name = "kernel_sum"


@dataclass(frozen=True, eq=False)
class Py:
    """Plain Python/numpy evaluated as written, no derivative: `why` "nograd" (shapes,
    np.zeros, comparisons...) or "unsupported" (an error if it reads a differentiated
    value; `label` names the function)."""
    why: str
    label: str = ""
    name = "py"


@dataclass(frozen=True, eq=False)
class SetItem:
    """`y[index] = value` on a local array, as a functional update: the target is a new
    array, `y` with those elements replaced (numpy's semantics: repeated indices are
    not accumulated). args are (y, value); `index` is an `np.s_[...]` expression; the
    helpers the generated code calls (passes/write_helpers.py) are bound under the
    names `setter`, `base_bar`, `value_bar` (passes/arraywrites.py)."""
    index: Any
    setter: str
    base_bar: str
    value_bar: str
    name = "setitem"


@dataclass(frozen=True, eq=False)
class ListAppend:
    """`hs.append(item)` on a list grown in a loop, kept as one array (its items along a
    new first axis: passes/arraystacks.py): the target is a new array. args are (hs,
    item); the helpers are bound under the names `appender`, `base_bar`, `item_bar`."""
    appender: str
    base_bar: str
    item_bar: str
    name = "list_append"


@dataclass(frozen=True, eq=False)
class LoopExit:
    """`if not test: break`, a while loop's test at the head of its body (args: [test];
    no target)."""
    name = "loop_exit"


def is_kernel(op) -> bool:
    """A fused kernel, with or without its reduction."""
    return isinstance(op, (RunKernel, KernelSum))


# ------------------------------------------------------------------ traversal


def walk_stmts(body):
    for st in body:
        yield st
        if isinstance(st, ForStmt):
            yield from walk_stmts(st.body)
        elif isinstance(st, IfStmt):
            yield from walk_stmts(st.body)
            yield from walk_stmts(st.orelse)


def stmt_reads(st) -> set:
    """SSA names a statement reads itself (not counting its nested blocks' statements)."""
    out = set()
    if isinstance(st, ArrayStmt):
        out |= {a for a in st.args if isinstance(a, str)}
        out |= set(st.reads)
    elif isinstance(st, ForStmt):
        out |= set(st.reads)
        if isinstance(st.stop, str):
            out.add(st.stop)
        for p in st.phis:
            for v in (p.first, p.second):
                if isinstance(v, str):
                    out.add(v)
    elif isinstance(st, IfStmt):
        if isinstance(st.test, str):
            out.add(st.test)
        for p in st.phis:
            for v in (p.first, p.second):
                if isinstance(v, str):
                    out.add(v)
    return out


def defined_in(body) -> set:
    out = set()
    for st in walk_stmts(body):
        if isinstance(st, ArrayStmt) and st.target:
            out.add(st.target)
        elif isinstance(st, ForStmt):
            out.add(st.var)
            out |= {p.name for p in st.phis}
        elif isinstance(st, IfStmt):
            out |= {p.name for p in st.phis}
    return out


# ------------------------------------------------------------------ operands as expressions


def operand_expr(op) -> gast.expr:
    """An operand (SSA name or Const) as a gast expression."""
    if isinstance(op, Const):
        return const_expr(op.value)
    return gast.Name(id=op, ctx=gast.Load(), annotation=None, type_comment=None)


def const_expr(value) -> gast.expr:
    if isinstance(value, (bool, np.bool_)) or value is None:
        return gast.Constant(value=None if value is None else bool(value), kind=None)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return const(value)
    if isinstance(value, tuple):
        return gast.Tuple(elts=[const_expr(v) for v in value], ctx=gast.Load())
    return gast.Constant(value=value, kind=None)

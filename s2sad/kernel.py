"""What the passes hand the backends: kernel modules and loop specifications.

A `KernelModule` is a set of scalar functions written as gast `FunctionDef`s in the
*core scalar language* below, with one of them the entry. The passes (normalize,
forward) only ever produce this language; the backends (python, llvm, cuda) only
ever consume it.

The core scalar language (invariants every backend may rely on)
---------------------------------------------------------------
- Every value is a floating-point number of the kernel's dtype (float64 or float32).
  Booleans are 1.0/0.0; a condition is true when it is not 0.0. Integer-valued
  operations (`//`, `%`, `int`, `round`, floor...) have Python's semantics on
  floats (floor division, the remainder has the divisor's sign).
- FunctionDef: positional parameters only (gast.Name, ctx Param), no defaults, no
  decorators, no annotations. It returns on every path; all its `return`s have the
  same arity: a single expression, or a Tuple of expressions (dual functions return
  `(value, d_p1, d_p2, ...)`).
- Statements:
    Assign(targets=[Name], value=expr)
    Assign(targets=[Tuple(Name, ...)], value=Call(Name(helper), args))
        (only to unpack a helper function that returns a tuple)
    If(test, body, orelse)
    While(test, body, orelse=[])
    For(target=Name, iter=Call(Name('range'), [start, stop, step]), body, orelse=[])
        (always three arguments; step is a nonzero constant; the bounds are
        evaluated once, before the loop, as in Python)
    Break, Continue (inside While/For), Pass
    Return(value=expr | Tuple(expr, ...))
- Expressions:
    Name (Load), Constant (int/float/bool; print floats as floats),
    BinOp with Add Sub Mult Div Pow FloorDiv Mod,
    UnaryOp with USub UAdd Not,
    Compare with exactly one operator among Lt LtE Gt GtE Eq NotEq (value 1.0/0.0),
    BoolOp And/Or with Python's semantics (returns an operand, not a bool),
    IfExp (only the chosen branch is evaluated),
    Call(Name(f), args) where f is a helper function of the module, or one of the
      builtins abs, min, max (two arguments), float, int (truncation), round
      (half to even),
    Call(Attribute(Name('math'), f), args) for a primitive f in `rules.RULES` with
      spelling "math" (sign and cbrt included).
- No other node appears. Names are unique per function scope; a helper never shares
  locals with its caller. Helpers are not recursive.

Loop specifications
-------------------
A compiled kernel is the entry function applied over a 2-D index space
(n_outer x n_inner) after broadcasting; `LoopSpec` says how each parameter is read and
what is written. The C ABI of a driver made from (module, LoopSpec, dtype), with T the
dtype's C type (double or float), is, in this order:

    void name(int64 n_outer, int64 n_inner,
              for each param p:     LAYOUT(p),
              value output:         T* out            if value == "store"  (contiguous, n_outer*n_inner)
                                    A* acc            if value == "sum"    (acc[0] += sum of values)
              seed:                 T seed            if seed == "scalar"  (partials are multiplied by it)
                                    T* seed           if seed == "array"   (contiguous, one per element)
              for each active param a (partials == "reduce"):
                                    GRAD(a)           layout of a: scalar -> A* g (g[0] += sum),
                                                      contig -> T* g (g[i] = partial * seed),
                                                      strided -> T* g, int64 so, int64 si
                                                      (g[o*so + i*si] += partial * seed)
              for each active param a (tangents == True):
                                    LAYOUT(a) of its tangent
              tangent output:       T* out_dot        if tangents (contiguous)
    LAYOUT(scalar)  = T v
    LAYOUT(contig)  = T* p        element (o, i) at p[o*n_inner + i]
    LAYOUT(strided) = T* p, int64 so, int64 si    element at p[o*so + i*si]
    LAYOUT(row)     = LAYOUT(strided) with si == 1: element at p[o*so + i] (a bias row: so == 0)
    LAYOUT(column)  = LAYOUT(strided) with si == 0: element at p[o*so], one value per o
The last two are strided operands whose inner stride the driver knows, so that it
reads a row as a vector and a column once per o; only the llvm backend is given them
(runtime.launch refines "strided" where the strides allow). A, the type of the sums,
is double for every dtype on the llvm and python backends (a float32 sum of 10^7
terms keeps float64's error; the runtime rounds it to T once), T on the cuda backend.

The entry's dual function (`forward.dual_name`) returns the value and one partial
per active parameter; drivers with partials or tangents call it, drivers without
call the primal entry.

Scan drivers (stateful functions)
---------------------------------
A function that writes state (a global, a nonlocal, an item of a captured container)
is normalized to a *state-passing* entry with k state parameters last:

    f(p1, ..., pn, s1, ..., sk) -> (value, s1', ..., sk')

and its dual, differentiating w.r.t. the active params a1..aA and then every state
param (the KernelModule's `active` = actives, then states), returns, flattened:

    (value, s1', ..., sk',
     d value/d w for w in active,
     d s1'/d w for w in active, ..., d sk'/d w for w in active)

A scan driver runs the elements *in order* (row-major: o outer, i inner), threading
the state through, exactly as a Python loop over the elements would. Its C ABI:

    void name(int64 n_outer, int64 n_inner,
              for each param p:     LAYOUT(p)                       (as for LoopSpec)
              T* state                                              k values: in, the state
                                                                    before the first element;
                                                                    out, after the last
              value output:         T* out (value == "store") | A* acc (value == "sum")
    and, when ScanSpec.grads:
              seed:                 T seed | T* seed                (scalar | array, as LoopSpec)
              for each active param a: GRAD(a)                     (as LoopSpec: scalar
                                                                    accumulates, contig stores,
                                                                    strided accumulates)
              T* state_bar                                          k values: in, the adjoint of
                                                                    the final state (0 for a loss
                                                                    that does not read it); out,
                                                                    the adjoint of the initial state
              T* tape)                                              n_outer*n_inner*k scratch, or
                                                                    one element where the plan
                                                                    has no tape (below)

With grads, the forward sweep stores the state before each element on the tape (and
computes values as above); the reverse sweep then walks the elements backwards with
lambda = state_bar: at element e, with partials from the dual at (p(e), tape[e]),
    grad(a) += seed(e) * d value/d a + sum_j lambda_j * d sj'/d a
    lambda_l  = seed(e) * d value/d sl + sum_j lambda_j * d sj'/d sl
and finally writes lambda to state_bar. `state` ends holding the final state.

A backend may do less where the result is the same (`passes/scansplit.py`'s
`scan_plan`, which the llvm driver and runtime share): when no partial of the dual
depends on the state, the reverse sweep needs no tape (`ScanPlan.tape` is False; the
llvm driver then neither writes nor reads it, and its caller passes one element), and
the forward and reverse chains may run interleaved; the part of an element that reads
no state may run ahead of the chain, vectorised. The state chain itself is never
reassociated: `state` ends bitwise as a Python loop over the elements leaves it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import gast

from .kernel_text import module_source

LAYOUTS = ("scalar", "contig", "strided", "row", "column")
# one letter per layout, for driver symbols (`LoopSpec.tag`)
LAYOUT_LETTERS = {"scalar": "s", "contig": "c", "strided": "x", "row": "r", "column": "k"}
STRIDED_LAYOUTS = ("strided", "row", "column")     # passed as (T* p, int64 so, int64 si)


@dataclass
class KernelModule:
    """Scalar functions in the core language; `entry` names the one applied per element."""

    name: str
    functions: dict[str, gast.FunctionDef]
    entry: str
    # parameter names of the entry, in order
    params: tuple[str, ...]
    # result kind of the entry's primal value: "float", "int" or "bool"
    result_kind: str = "float"
    # entry of the dual function and the params it differentiates (empty: no dual yet)
    dual_entry: str | None = None
    active: tuple[str, ...] = ()
    # where each function came from, for `# Grad of:` comments and explain
    origins: dict[str, str] = field(default_factory=dict)

    def source(self) -> str:
        """All functions as Python source, helpers first (the python backend's text)."""
        return module_source(self)


def fresh_name(base: str, taken: set[str]) -> str:
    """`base`, else the first of `base_2`, `base_3`, ... not in `taken`; it joins `taken`."""
    name, k = base, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


class ArityError(Exception):
    """`name`'s returns have no one arity: it is recursive (`lengths` None), or its
    returns give these different `lengths`."""

    def __init__(self, name: str, lengths: list[int] | None = None) -> None:
        super().__init__(name, lengths)
        self.name, self.lengths = name, lengths


def return_arity(functions: dict[str, gast.FunctionDef], name: str, memo: dict[str, int],
                 single: int = 1, stack: tuple[str, ...] = ()) -> int:
    """How many values function `name` of `functions` returns: the length of its tuples,
    `single` for one value (backends count it 1 or 0); `return helper(...)` has the
    helper's arity. Results are kept in `memo`; ArityError where there is no one arity."""
    if name in memo:
        return memo[name]
    if name in stack:
        raise ArityError(name)
    found = set()
    for node in gast.walk(functions[name]):
        if isinstance(node, gast.Return):
            v = node.value
            if isinstance(v, gast.Tuple):
                found.add(len(v.elts))
            elif isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and v.func.id in functions:
                found.add(return_arity(functions, v.func.id, memo, single, stack + (name,)))
            else:
                found.add(single)
    if len(found) > 1:
        raise ArityError(name, sorted(found))
    memo[name] = found.pop() if found else single
    return memo[name]


def active_indices(kmod, spec: "LoopSpec | ScanSpec | None" = None) -> tuple[int, ...]:
    """Positions in `kmod.params` of the params a driver differentiates, in the ABI's
    order: `kmod.active`, for a ScanSpec without its trailing states (none without grads).
    `kmod`: a KernelModule or a KernelSignature."""
    active = kmod.active
    if isinstance(spec, ScanSpec):
        active = active[:len(active) - spec.n_state] if spec.grads else ()
    return tuple(kmod.params.index(a) for a in active)


@dataclass(frozen=True)
class KernelSignature:
    """What names a kernel's driver before its module is made: enough to look it up in
    the cache (llvm_jit.driver) and to call it (the ABI needs only params and active)."""

    name: str
    params: tuple[str, ...]
    active: tuple[str, ...]
    digest: str                         # sha256 of the scalar program's source and user rules


@dataclass(frozen=True)
class LoopSpec:
    """How a driver applies the entry over the index space; see the module docstring."""

    layouts: tuple[str, ...]            # one of LAYOUTS per entry parameter
    value: str = "store"                # "store" | "sum" | "none"
    partials: bool = False              # reduce partials of active params into grads
    seed: str = "none"                  # "none" | "scalar" | "array" (with partials)
    tangents: bool = False              # jvp: read tangents of active params, store out_dot

    def __post_init__(self) -> None:
        assert all(l in LAYOUTS for l in self.layouts), self.layouts
        assert self.value in ("store", "sum", "none")
        assert self.seed in ("none", "scalar", "array")
        assert not (self.partials and self.seed == "none"), "partials need a seed"

    @property
    def needs_dual(self) -> bool:
        return self.partials or self.tangents

    def tag(self) -> str:
        """A short stable name for this spec, used in driver symbol names."""
        lay = "".join(LAYOUT_LETTERS[l] for l in self.layouts)
        parts = [lay, self.value]
        if self.partials:
            parts.append("grad" + self.seed[0])
        if self.tangents:
            parts.append("jvp")
        return "_".join(parts)


@dataclass(frozen=True)
class ScanSpec:
    """A sequential driver for a state-passing entry; see "Scan drivers" above."""

    layouts: tuple[str, ...]            # one of LAYOUTS per non-state entry parameter
    n_state: int                        # k: the entry's last k parameters are state
    value: str = "sum"                  # "store" | "sum" | "none"
    grads: bool = False                 # forward sweep + reverse sweep
    seed: str = "none"                  # "none" | "scalar" | "array" (with grads)

    def __post_init__(self) -> None:
        assert all(l in LAYOUTS for l in self.layouts), self.layouts
        assert self.value in ("store", "sum", "none")
        assert self.seed in ("none", "scalar", "array")
        assert self.grads == (self.seed != "none"), "grads need a seed"

    @property
    def needs_dual(self) -> bool:
        return self.grads

    def tag(self) -> str:
        lay = "".join(LAYOUT_LETTERS[l] for l in self.layouts)
        parts = ["scan", lay, f"s{self.n_state}", self.value]
        if self.grads:
            parts.append("grad" + self.seed[0])
        return "_".join(parts)

"""grad and value_and_grad of a small fixed-shape array program in one call into
machine code.

As small_hessian.py for a Hessian: for arguments of small fixed shapes the array
program is a straight-line scalar program (passes/unroll_small.py); its gradient by
reverse mode on that graph (passes/small_reverse.py), and for value_and_grad its value,
compile into one function with a Python entry (codegen/llvm_small.py: the gradient
written into `out`, the value returned as a float). derivative.Derivative tries it
first for an array program (`SmallGrad.first`); the planning per (plan, shapes,
argnums), its cache, the free data read per call and the decisions not to take a call
are SmallHessian's.

A call takes, in order:
- the hot path (`router(*args)`, the Derivative's from its first array call while some
  shapes may unroll): the entry of the plan that answered last, guarded as the array hot
  path is (the function's code is the planned one, no rule registered since, the plan's
  assumptions on its globals and cells hold); the entry itself takes only exact float64
  ndarrays, C-contiguous, of the planned shapes, and exact floats, every value finite.
  A call it declines whose arguments could unroll (`_may_unroll`) goes to the full path
  (another shape: its own plan, made once); any other to `then[0]`, the array hot path
  (NotImplemented until made: the Derivative's full path then). So which path answers
  a call depends on its arguments only, never on the calls before it;
- the full path (`first`): what SmallHessian.full takes (an argument not an exact
  float64 array or float, a differentiated one 0-d or empty, a backend other than llvm,
  an array of more than 64 elements, a program that does not unroll: None, the general
  path runs; `why_not` says why; a reason no other shapes could change, such as a loop,
  turns the router off for good). A program whose IR is longer than LONG_LINES is not
  taken either: llvm_jit compiles such a one without optimising it, and its entry then
  costs more than the general path (33 us for the Rosenbrock 64-vector's, 0.2-0.5 us for
  the 10-vector's and a 4 x 4 product's gradient of 1,700 lines; loaded machine).
Invariants: a gradient is float64 of its argument's shape (a tuple of them for a tuple
of argnums), written only by the entry; the value is the unrolled program's (the same
IEEE operations as the program, a fused sum in numpy's pairwise order: np.sum's bits); no argument is written;
the hot path holds the function the Derivative holds anyway and nothing else of the
user's.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from .passes.small_reverse import gradient
from .passes.unroll_small import MAX_ELEMENTS, Unrolled, needed_nodes
from .frontend import bound
from .plans import PLANS, compiled_array
from .small_hessian import LONG_LINES, Plan, SmallHessian, compiled, program_text
from .targets import target

_F64 = np.dtype(np.float64)
ndarray = np.ndarray


def decline(*args) -> Any:
    return NotImplemented


class SmallGrad(SmallHessian):
    """grad (or, `with_value`, value_and_grad) of `fun` in `argnums` for small fixed
    shapes (see the module doc)."""

    what = "grad"
    takes_free = True       # a global array read: an extra entry argument, read per call

    def __init__(self, fun: Callable, argnums, backend: str, with_value: bool):
        super().__init__(fun, argnums, backend)
        self.with_value = with_value
        self.then: list[Callable] = [decline]      # what the hot path hands a call it declines
        self.current: list = [None]     # the guards and entry of the plan that answered last
        self.never = None       # the array plan for which no shapes unroll (a loop, a branch...)
        self.router = _router(self)

    def hand_on_to(self, hot: Callable) -> None:
        """The router hands what it declines to `hot` (the array hot path), whose
        signatures it shows as its own (`special`, seen by tests)."""
        self.then[0] = hot
        self.router.special = getattr(hot, "special", None)

    def first(self, args: tuple) -> Any:
        """(value or None, gradients) from the full path, or None (the general path's). A
        list among the data is read as numpy reads it (the general path computes with it
        as with its array: both give the same bits)."""
        if list in map(type, args):
            args = tuple(np.asarray(a) if type(a) is list else a for a in args)
        with bound(self.fun):       # (its free data: this closure's cells, not the plan's first one's)
            got = self.full(args)
        if got is None and self.why_not is not None and not _shape_dependent(self.why_not):
            self.never = self.plans[next(reversed(self.plans))][0] if self.plans else None
        return got

    def plan_of(self, args: tuple) -> "GradPlan | None":
        """The plan a call with `args` ran (after `first` answered it), for explain."""
        kinds = tuple(None if type(a) is float else np.shape(a) for a in args)
        for key, (_, plan, _) in self.plans.items():
            if isinstance(plan, GradPlan) and key[0] == kinds:
                return plan
        return None

    def plan_for(self, program, kinds: tuple, nums: tuple[int, ...], free: tuple = ()) -> "GradPlan | str":
        return plan_for(program, kinds, nums, free, self.with_value)

    def plan_kind(self) -> tuple:
        return (type(self), self.with_value)

    def hot_path(self, fun: Callable, c, plan: "GradPlan", n: int) -> Callable:
        """(SmallHessian.full, on an answer) the router's fast case now calls this plan."""
        reads = c.free_values if len(plan.unrolled.kinds) > n else None     # free data: read per call
        self.current[0] = (plan.entry, plan, n, fun.__code__, c.assumptions.hold, bool(c.assumptions.entries),
                           PLANS.generation, reads, len(plan.single) == 1 and not self.many)
        return self.router


def _shape_dependent(why: str) -> bool:
    """Could other arguments unroll where these did not (a size, a broadcast, an index, the
    free data's type)?"""
    return any(w in why for w in ("element", "scalar operations", "IR lines", "broadcast", "empty",
                                  "does not unroll", "no value of the program", "argnum", "free data"))


class GradPlan(Plan):
    """One compiled gradient program: out[i] = d loss / d x[i] (x: the differentiated
    arguments' elements laid end to end); the entry returns the loss for value_and_grad."""

    def __init__(self, *parts, with_value: bool = False):
        super().__init__(*parts)
        self.with_value = with_value
        self.size, self.single = self.n, self.shapes[0]

    def run(self, args: tuple, many: bool) -> Any:
        out = np.empty(self.size)
        value = self.entry(*args, out)
        if value is NotImplemented:
            return None
        return value, self.shaped(out, many)

    def shaped(self, out: np.ndarray, many: bool) -> Any:
        if not many:
            return out if len(self.single) == 1 else out.reshape(self.single)
        starts = np.cumsum([0] + self.sizes)
        return tuple(out[starts[a]:starts[a + 1]].reshape(self.shapes[a]) for a in range(len(self.nums)))


def plan_for(program, kinds: tuple, nums: tuple[int, ...], free: tuple = (), with_value: bool = False
             ) -> GradPlan | str:
    """The compiled small gradient of `program` (a scalar result) for parameters of
    `kinds` in `nums` (free data named `free` read as the last parameters), or why there
    is none."""
    def grads(u: Unrolled) -> list:
        return gradient(u, nums)
    got = compiled(program, kinds, nums, grads, free=free, value=with_value, max_lines=LONG_LINES)
    return got if isinstance(got, str) else GradPlan(*got, with_value=with_value)


def _router(small: SmallGrad) -> Callable:
    """hot(*args) -> what grad (or value_and_grad) returns: the entry of the plan that
    answered last, guarded (see the module doc); a call it declines whose arguments
    could unroll goes to the full small path (another shape's plan, made once), any
    other to `small.then[0]`, the array hot path (NotImplemented until made)."""
    current, then, many, with_value, plans = small.current, small.then, small.many, small.with_value, PLANS
    last_big = [0]      # the argument that kept the last call from unrolling: looked at first
    # `small` itself only through a weak reference: the router is small's attribute, and a
    # closure over small made the two a reference cycle, which kept the user's function
    # and what its cells hold (a training step's batch) until Python's cyclic collector
    # ran (a new closure per step: 21 objects a step in cycles, session 19)
    fun, mine = small.fun, weakref.ref(small)

    def hot(*args) -> Any:
        cur = current[0]
        if cur is not None:
            entry, plan, n, code, hold, holds, gen, reads, one_d = cur
            if len(args) == n and fun.__code__ is code and plans.generation == gen and (
                    not holds or hold(fun)):
                out = np.empty(plan.size)
                if reads is None:
                    value = entry(*args, out)
                else:
                    with bound(fun):      # (free data read from this closure's cells and globals)
                        free = reads()
                    value = entry(*args, *free.values(), out)
                if value is not NotImplemented:
                    g = out if one_d else plan.shaped(out, many)
                    return (value, g) if with_value else g
        k = last_big[0]     # (the argument that kept the last call from unrolling, first: inline)
        if k < len(args):
            a = args[k]
            t = type(a)
            if (a.size > MAX_ELEMENTS or a.dtype is not _F64) if t is ndarray else t is not float:
                return then[0](*args)
        small = mine()
        if small is None or small.never is not None or not _may_unroll(args, last_big):
            return then[0](*args)
        got = small.first(args)
        if got is None:
            return then[0](*args)
        return got if with_value else got[1]
    return hot


def _may_unroll(args: tuple, last_big: list) -> bool:
    """Could the full small path take these arguments (SmallHessian's kinds and sizes)?
    (The argument that said no last time is asked first: a batch of data, usually.)"""
    k = last_big[0]
    if k < len(args) and not _small_argument(args[k]):
        return False
    for i, a in enumerate(args):
        if not _small_argument(a):
            last_big[0] = i
            return False
    return True


def _small_argument(a) -> bool:
    t = type(a)
    if t is np.ndarray:
        return a.size <= MAX_ELEMENTS and a.dtype is _F64
    return t is float


def path_lines(small: "SmallGrad | None", fused: bool, examples: tuple | None) -> list[str]:
    """explain(grad(f), *example_args): the path a call with those arguments takes (the
    unrolled program is run once to know: it runs no user code), or what decides it."""
    if fused:
        return [] if examples is None else ["  path for these arguments: the fused kernel's entry "
                                            "(one call into machine code; not unrolled)"]
    if small is None or examples is None:
        return ["  path: unrolled (one call into machine code, small_grad) for float64 arguments of at most "
                f"{MAX_ELEMENTS} elements that unroll, else the generated program; "
                "explain(grad(f), *example_args) says which"]
    got = small.first(tuple(examples))
    if got is None:
        why = small.why_not or "an argument that is not an exact float64 array or float, a non-finite value, " \
                               "or a backend other than llvm"
        return [f"  path for these arguments: the generated program (not unrolled: {why})"]
    plan = small.plan_of(tuple(examples))
    size = f"; {len(needed_nodes(plan.unrolled.graph.ops, [o for o in plan.outputs if o is not None]))} " \
           "scalar operations" if plan is not None else ""
    return [f"  path for these arguments: unrolled: one call into machine code (small_grad){size}"]


def source(fun: Callable, args: tuple, argnums=0) -> str:
    """The unrolled program value_and_grad(fun, argnums) runs for `args`' shapes, as
    Python (one line per value; out[i] the gradient's elements, the value returned), or
    the line that says why there is none."""
    got = _plan_of(fun, tuple(args), argnums)
    if isinstance(got, str):
        return f"# no small program: {got}\n"
    plan, params, name = got
    lines = program_text(plan, params, name, (plan.unrolled.loss.id,)).splitlines()
    lines[0] = f"def {name}__small_value_and_grad({', '.join(params)}, out):"
    lines[1] = (f"    # the gradient in {', '.join(params[i] for i in plan.nums)} (out, {plan.n} elements) and the "
                f"value, unrolled for shapes {', '.join(str(k) for k in plan.unrolled.kinds)}")
    loss = plan.unrolled.loss.id
    value = repr(float.fromhex(plan.unrolled.graph.ops[loss][2])) if plan.unrolled.graph.ops[loss][0] == "const" \
        else f"v{loss}"
    return "\n".join(lines + [f"    return {value}"]) + "\n"


def ir(fun: Callable, args: tuple, argnums=0) -> str:
    """The LLVM IR of that program's entry (codegen/llvm_small.py), or why there is none."""
    got = _plan_of(fun, tuple(args), argnums)
    return got[0].ir if not isinstance(got, str) else f"; no small program: {got}\n"


def _plan_of(fun: Callable, args: tuple, argnums) -> tuple | str:
    kinds = tuple(None if type(a) is float else a.shape for a in args)
    nums = tuple(i % len(args) for i in (argnums if isinstance(argnums, tuple) else (argnums,)))
    planned = target(fun, "grad")
    with bound(planned):
        c = compiled_array(planned)
    plan = plan_for(c.plan.program, kinds, nums, with_value=True)
    if isinstance(plan, str):
        return plan
    return plan, c.plan.program.params, getattr(planned, "__name__", "fn")

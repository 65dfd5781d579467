"""The Hessian of a small fixed-shape array program in one call into machine code.

For arguments of small fixed shapes an array program is a straight-line scalar program
(passes/unroll_small.py); its second derivatives by sparse forward mode
(passes/small_second.py) and the program computing them compile into one function with
a Python entry (codegen/llvm_small.py). `SmallHessian(fun, argnums, backend)(args)`
(higher.hessian tries it first) gives the Hessian (a tuple of tuples of blocks for a
tuple of argnums, as hessian's other paths), or None: the general path runs instead.

A call takes, in order:
- the hot path, made after a call of the full path answered: the entry called with the
  user's arguments, guarded as jacdiag's and batched_jac's are (the function's code is
  the planned one, the plan's assumptions on its globals and cells hold); the entry
  itself takes only exact float64 ndarrays, C-contiguous, of the planned shapes, and
  exact floats (codegen/llvm_small.py), and declines (None) anything else;
- the full path: every argument an exact float64 ndarray or an exact float, the
  differentiated ones arrays of at least one dimension and element, the llvm backend;
  the plan of the function as an array program (plans.compiled_array, cached; one that
  reads free data is not taken), then its small plan for these argument shapes and
  argnums, made once per (plan, shapes, argnums) and kept with the plan it was made
  from (a new plan of the function, a global changed, makes it again). A program that
  does not unroll (NotSmall) is remembered as such: `why_not` says why.
Invariants: a result has shape x_i.shape + x_j.shape per block, float64, symmetric by
construction (one triangle computed); no argument is written; the hot path holds the
function the wrapper holds anyway and nothing else of the user's.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any, Callable

import numpy as np

from . import backends
from .codegen import llvm_jit
from .errors import S2SADError
from .frontend import bound
from .passes.small_second import second_order
from .passes import unroll_small
from .passes.unroll_small import MAX_ELEMENTS, NotSmall, Unrolled, needed_nodes, unroll
from .plans import compiled_array
from .targets import target

COMPARISONS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
LONG_LINES = 2000   # IR lines past which its code is generated fast (llvm_jit.small_code's `long`)
MAX_PLANS = 16      # small plans kept per wrapper (argument shapes seen); more: the oldest dropped
_ENTRIES: dict[str, Callable] = {}      # symbol -> its Python entry, one per compiled program


class SmallHessian:
    """The Hessian of `fun` in `argnums` (an int or a tuple, as hessian takes it) for small
    fixed shapes (see the module doc)."""

    what = "hessian"        # (the entry point named in a refusal of the function: targets.target)
    takes_free = False      # free data (a global array) read per call as extra entry arguments?

    def __init__(self, fun: Callable, argnums, backend: str):
        self.fun, self.argnums, self.backend = fun, argnums, backend
        self.many = isinstance(argnums, (tuple, list))
        self.hot: Callable = _decline
        self.fast: bool | None = None      # the llvm backend's fast path and Python entries (once known)
        self.nums: dict[int, tuple | None] = {}     # number of arguments -> argnums normalised
        self.why_not: str | None = None
        # (kinds, nums) -> (array plan, Plan or the reason there is none, does that plan still serve?)
        self.plans: dict[tuple, tuple] = {}

    @property
    def warm(self) -> bool:
        """Has a call been answered here (so the next one tries the hot path first)?"""
        return self.hot is not _decline

    def __call__(self, args: tuple) -> Any:
        got = self.hot(args)
        return got if got is not None else self.full(args)

    def full(self, args: tuple) -> Any:
        if self.fast is None:
            self.fast = _fast(self.backend)
        kinds, nums = _kinds(args), self.normalised(len(args))
        if kinds is None or nums is None or not self.fast:
            return None
        if any(kinds[i] is None or not kinds[i] or 0 in kinds[i] for i in nums):
            return None
        if any(k is not None and math.prod(k) > MAX_ELEMENTS for k in kinds):
            return self._declined(f"an argument of more than {MAX_ELEMENTS} elements")
        key = (kinds, nums)
        got = self.plans.get(key)
        if got is not None and isinstance(got[1], str) and got[2]():
            return self._declined(got[1])      # (decided for this plan, which still serves: no lookup)
        try:
            planned = target(self.fun, self.what)
            with bound(planned):
                c = compiled_array(planned)
        except S2SADError:
            return None     # the general path raises it, located
        if len(c.params) != len(args):
            return None
        with bound(planned):    # (this closure's cells: a plan of the same code may be another's)
            free = c.free_values()
        if free and not self.takes_free:
            return None
        fkinds = _kinds(tuple(free.values())) if free else ()
        if fkinds is None:
            return self._declined("free data that is not a float64 array or a float")
        if fkinds:      # (the plan for these shapes of the free data too)
            key = (kinds, nums, fkinds)
            got = self.plans.get(key)
        if got is None or got[0] is not c:
            for old in list(self.plans)[:max(0, len(self.plans) - MAX_PLANS + 1)]:
                self.plans.pop(old, None)
            got = self.plans[key] = (c, self.shared_plan(c, kinds + fkinds, nums, tuple(free)), _still(planned, c))
        plan = got[1]
        if isinstance(plan, str):
            return self._declined(plan)
        self.why_not = None
        out = plan.run(args + tuple(free.values()), self.many)
        if out is not None:
            self.hot = self.hot_path(planned, c, plan, len(args))
        return out

    def hot_path(self, fun: Callable, c, plan: "Plan", n: int) -> Callable:
        """The hot path made after a call the full path answered (a subclass: its own)."""
        return _hot_path(fun, c, plan, n, self.many)

    def plan_for(self, program, kinds: tuple, nums: tuple[int, ...], free: tuple = ()) -> "Plan | str":
        """The compiled plan for these shapes and argnums (a subclass: another derivative);
        `free`: the names of the free data read as the last parameters (kinds: theirs last)."""
        return plan_for(program, kinds, nums)

    def plan_kind(self) -> tuple:
        """What plan_for depends on besides the program and its arguments (a subclass: more)."""
        return (type(self),)

    def shared_plan(self, c, kinds: tuple, nums: tuple[int, ...], free: tuple) -> "Plan | str":
        """plan_for on c's program, kept on c for every wrapper of this plan. Why: a new
        closure per training step is a new wrapper of the same plan, and each unrolled,
        differentiated and wrote the program's IR again to find the plan its predecessor
        had found (session 19: 0.9 ms a step at 8 elements, 7 ms at 64, where the answer
        was "too long to unroll", against 0.05-0.4 ms for one long-lived wrapper). A plan
        depends on the program, the kinds (free data's too: their values are read per call,
        never compiled in), the argnums and the planner (plan_kind), never on a closure's
        values; the entry it holds is compiled code, shared as _ENTRIES shares it."""
        memo = c.small_plans
        # (the unroller's and the IR's limits too: read now, as plan_for would read them)
        key = (self.plan_kind(), kinds, nums, free, unroll_small.MAX_NODES, LONG_LINES)
        got = memo.get(key)
        if got is None:
            got = self.plan_for(c.plan.program, kinds, nums, free)
            if len(memo) >= MAX_PLANS:
                memo.pop(next(iter(memo)))
            memo[key] = got
        return got

    def normalised(self, n: int) -> tuple[int, ...] | None:
        """The argnums for a call of n arguments, non-negative (None: not valid for n)."""
        if n not in self.nums:
            self.nums[n] = _normalised(self.argnums, n)
        return self.nums[n]

    def _declined(self, why: str) -> None:
        self.why_not = why
        return None


class Plan:
    """One compiled Hessian program: its entry and how its output is laid out."""

    def __init__(self, unrolled: Unrolled, nums: tuple[int, ...], outputs: list, entry: Callable, name: str, ir: str):
        self.unrolled, self.nums, self.outputs, self.entry, self.name, self.ir = unrolled, nums, outputs, entry, name, ir
        self.shapes = [tuple(unrolled.kinds[i]) for i in nums]
        self.sizes = [math.prod(s) for s in self.shapes]
        self.n = sum(self.sizes)
        self.size, self.single = self.n * self.n, self.shapes[0] * 2    # out's length; one argnum's shape

    def run(self, args: tuple, many: bool) -> Any:
        out = np.empty(self.size)
        if self.entry(*args, out) is not None:
            return None
        return self.shaped(out, many)

    def shaped(self, out: np.ndarray, many: bool) -> Any:
        if not many:
            return out.reshape(self.shapes[0] * 2)
        h = out.reshape(self.n, self.n)
        starts = np.cumsum([0] + self.sizes)
        return tuple(tuple(np.ascontiguousarray(h[starts[a]:starts[a + 1], starts[b]:starts[b + 1]])
                           .reshape(self.shapes[a] + self.shapes[b]) for b in range(len(self.nums)))
                     for a in range(len(self.nums)))


def plan_for(program, kinds: tuple, nums: tuple[int, ...]) -> Plan | str:
    """The compiled small Hessian of `program` for parameters of `kinds`, differentiated
    in `nums` (each once: a repeated argnum is the general path's), or why there is none."""
    def hessian(u: Unrolled) -> list:
        _, hess = second_order(u, nums)
        n = sum(math.prod(kinds[i]) for i in nums)
        outputs: list = [None] * (n * n)
        for (i, j), node in hess.items():
            outputs[i * n + j] = outputs[j * n + i] = node.id
        return outputs
    got = compiled(program, kinds, nums, hessian)
    return got if isinstance(got, str) else Plan(*got)


def compiled(program, kinds: tuple, nums: tuple[int, ...], derivative: Callable, array: bool = False,
             free: tuple = (), value: bool = False, max_lines: int | None = None) -> tuple | str:
    """(unrolled, nums, outputs, entry, name, ir) of `program` unrolled for `kinds`, the
    entry storing out[i] = node `outputs[i]` (None: 0.0) of `derivative(unrolled)`, or why
    there is none; `array`: the program's result may be an array; `free`: names of free
    data the entry takes after the parameters (`kinds` has theirs last); `value`: the
    entry returns the program's result as a float (codegen/llvm_small.py); `max_lines`: a
    longer IR is not compiled (why: its length)."""
    from .codegen import llvm_entry     # (lazy: they import the drivers' lowering; see layers.py)
    from .codegen.llvm_small import small_ir

    if len(set(nums)) != len(nums):
        return "an argnum given twice"
    try:
        u = unroll(program, kinds, array, free)
        outputs = derivative(u)
    except NotSmall as e:
        return e.reason
    except RecursionError:      # (a kernel expression nested past Python's stack: the general path's)
        return "an expression nested too deeply to unroll"
    text = small_ir("@NAME@", kinds, u.graph.ops, outputs, u.loss.id if value else None)
    if max_lines is not None and text.count("\n") > max_lines:
        return f"a program of {text.count(chr(10))} IR lines (more than {max_lines})"
    name = "s2sad_small_" + hashlib.sha256(text.encode()).hexdigest()[:24]
    entry = _ENTRIES.get(name)
    if entry is None:
        long = text.count("\n") > LONG_LINES
        address, keep = llvm_jit.small_code(name, lambda: text.replace("@NAME@", name), long)
        entry = llvm_entry.python_entry(0, address, name, np.float64, keep)
        if entry is None:
            return "no Python entries in this process"
        _ENTRIES[name] = entry
    return u, nums, outputs, entry, name, text.replace("@NAME@", name)


def _kinds(args: tuple) -> tuple | None:
    """Per argument its shape (an exact float64 ndarray) or None (an exact float); None
    when any argument is neither."""
    kinds = []
    for a in args:
        t = type(a)
        if t is float:
            kinds.append(None)
        elif t is np.ndarray and a.dtype == np.float64:
            kinds.append(a.shape)
        else:
            return None
    return tuple(kinds)


def _normalised(argnums, n: int) -> tuple[int, ...] | None:
    nums = tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)
    if not nums or any(type(i) is not int or not -n <= i < n for i in nums):
        return None     # (the general path refuses it, located)
    return tuple(i % n for i in nums)


def _fast(backend) -> bool:
    """The llvm backend's fast path (an unknown backend: the general path refuses it)."""
    from .codegen import llvm_entry

    return isinstance(backend, str) and backend in backends.NAMES and backends.choose(backend).fast_path \
        and llvm_entry.supported()


def _decline(args: tuple) -> None:
    return None


def _still(fun: Callable, c) -> Callable[[], bool]:
    """Does plan `c` still serve `fun` (its code, its assumptions: the hot path's guard)?"""
    code, hold, holds = fun.__code__, c.assumptions.hold, bool(c.assumptions.entries)
    return lambda: fun.__code__ is code and (not holds or hold(fun))


def _hot_path(fun: Callable, c, plan: Plan, n: int, many: bool) -> Callable:
    """The entry called with the user's arguments (see the module doc)."""
    code, hold, holds = fun.__code__, c.assumptions.hold, bool(c.assumptions.entries)
    entry, size, shape = plan.entry, plan.size, plan.single
    reads = c.free_values if len(plan.unrolled.kinds) > n else None     # free data: read now, as Python reads it

    def hot(args: tuple) -> Any:
        if len(args) != n or fun.__code__ is not code or (holds and not hold(fun)):
            return None
        if reads is not None:
            with bound(fun):    # (as in full: this closure's data)
                args = args + tuple(reads().values())
        out = np.empty(size)
        if entry(*args, out) is not None:
            return None
        return plan.shaped(out, True) if many else out.reshape(shape)
    return hot


def source(fun: Callable, args: tuple, argnums=0) -> str:
    """The unrolled Hessian program hessian(fun, argnums) runs for `args`' shapes, as
    Python (one line per value; out[i] the Hessian's elements, row by row), or the line
    that says why there is none."""
    got = _plan_of(fun, tuple(args), argnums)
    if isinstance(got, str):
        return f"# no small program: {got}\n"
    plan, params, name = got
    return program_text(plan, params, name)


def ir(fun: Callable, args: tuple, argnums=0) -> str:
    """The LLVM IR of that program's entry (codegen/llvm_small.py), or why there is none."""
    got = _plan_of(fun, tuple(args), argnums)
    if isinstance(got, str):
        return f"; no small program: {got}\n"
    return got[0].ir


def _plan_of(fun: Callable, args: tuple, argnums) -> tuple | str:
    kinds, nums = _kinds(args), _normalised(argnums, len(args))
    if kinds is None or nums is None:
        return "an argument that is not a float64 array or a float"
    planned = target(fun, "hessian")
    with bound(planned):
        c = compiled_array(planned)
    plan = plan_for(c.plan.program, kinds, nums)
    if isinstance(plan, str):
        return plan
    return plan, c.plan.program.params, getattr(planned, "__name__", "fn")


def program_text(plan: Plan, params: list, name: str, roots: tuple = ()) -> str:
    """The plan's program as Python source, the nodes the outputs (and `roots`) read only."""
    ops = plan.unrolled.graph.ops
    needed = needed_nodes(ops, [o for o in plan.outputs if o is not None] + list(roots))

    def operand(k: int) -> str:
        op, _, const = ops[k]
        if op == "const":
            return repr(float.fromhex(const)) if const != "nan" else "float('nan')"
        if op == "input":
            p, off = const
            return params[p] if plan.unrolled.kinds[p] is None else f"{params[p]}.flat[{off}]"
        return f"v{k}"
    lines = [f"def {name}__small_hessian({', '.join(params)}, out):",
             f"    # the Hessian in {', '.join(params[i] for i in plan.nums)}, unrolled for shapes "
             f"{', '.join(str(plan.unrolled.kinds[i]) for i in range(len(params)))}; out: {plan.n} x {plan.n}"]
    symbols = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
    for k in sorted(needed):
        op, args, const = ops[k]
        if op in ("const", "input"):
            continue
        a = [operand(x) for x in args]
        if op in symbols:
            rhs = f"{a[0]} {symbols[op]} {a[1]}"
        elif op == "neg":
            rhs = f"-{a[0]}"
        elif op == "powc":
            rhs = f"{a[0]} ** {const!r}"
        elif op in COMPARISONS:
            rhs = f"float({a[0]} {COMPARISONS[op]} {a[1]})"
        elif op == "select":
            rhs = f"{a[1]} if {a[0]} else {a[2]}"
        elif op == "abs":
            rhs = f"abs({a[0]})"
        elif op in ("maximum", "minimum"):
            rhs = f"np.{op}({a[0]}, {a[1]})"
        else:
            rhs = f"math.{op}({a[0]})"
        lines.append(f"    v{k} = {rhs}")
    for i, o in enumerate(plan.outputs):
        if o is not None:
            lines.append(f"    out[{i}] = {operand(o)}")
    lines.append(f"    # the other {plan.outputs.count(None)} elements: 0.0")
    return "\n".join(lines) + "\n"


class OfGrad:
    """jacfwd / jacrev (argnums `jac_nums`) of grad(fun, `grad_nums`): Hessian blocks,
    the grad's outputs outside, the Jacobian's argnums inside (JAX's layout), from one
    SmallHessian in the union of both argnums (one per call arity), or None."""

    def __init__(self, fun: Callable, grad_nums, jac_nums, backend: str):
        self.fun, self.grad_nums, self.jac_nums, self.backend = fun, grad_nums, jac_nums, backend
        self.same = type(grad_nums) is int and grad_nums == jac_nums    # hessian(fun, argnums) itself
        self.by_arity: dict[int, tuple] = {}        # n -> (SmallHessian, picks) or None

    @property
    def why_not(self) -> str | None:
        return next((s[0].why_not for s in self.by_arity.values() if s and s[0].why_not), None)

    def __call__(self, args: tuple) -> Any:
        n = len(args)
        if n not in self.by_arity:
            self.by_arity[n] = self._made(n)
        got = self.by_arity[n]
        if got is None:
            return None
        small, pick = got
        h = small(args)
        return h if h is None or pick is None else pick(h)

    def _made(self, n: int) -> tuple | None:
        g, j = _normalised(self.grad_nums, n), _normalised(self.jac_nums, n)
        if g is None or j is None:
            return None
        if self.same:
            return SmallHessian(self.fun, self.grad_nums, self.backend), None
        union = g + tuple(i for i in j if i not in g)
        at = {i: k for k, i in enumerate(union)}
        many_g, many_j = isinstance(self.grad_nums, (tuple, list)), isinstance(self.jac_nums, (tuple, list))

        def pick(h: tuple) -> Any:
            def row(a: int) -> Any:
                blocks = tuple(h[at[a]][at[b]] for b in j)
                return blocks if many_j else blocks[0]
            return tuple(row(a) for a in g) if many_g else row(g[0])
        return SmallHessian(self.fun, union, self.backend), pick

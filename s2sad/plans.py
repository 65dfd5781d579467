"""Plans: a function to differentiate -> the plan that serves it (`compiled`).

A function is planned once (source -> `LossPlan` -> `Kernel`: a `Compiled`; or, when
the fused planner does not take it, an array program: `array_compiled.ArrayCompiled`) and the
plan is cached by the function's code (`PLANS`, a plancache.PlanCache): it serves every
function of that code whose free names pass its Assumptions, and holds none of them.
A plan is read with the function called bound (frontend.bound), whose cells and
globals it reads. Generated derivatives are kept on the plan (`generated`), so that a
new grad object of a known plan generates nothing.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from . import array_rules, derivative_runtime
from .arguments import zeros_like
from .errors import HigherOrderNotSupportedError, S2SADError, SourceLocation
from .frontend import Assumptions, Resolver, bound, parse_function, recording
from .plancache import PlanCache
from .passes.arrayprog import build_program
from .passes.containers import Layout, flatten_parameters
from .passes.elementwise import LossPlan, plan_loss, plan_scalar
from .passes.array_compiled import ArrayCompiled
from .passes.rowelems import Column, index_text, read_columns
from .runtime import Kernel
from .targets import entry_function

PLANS = PlanCache()


class Compiled:
    """A differentiated function's plan: its fused kernel and how the loss reduces it.
    `fun` is the function called now (bound) or the one planned, held weakly."""

    def __init__(self, fun: Callable, plan: LossPlan, kernel: Kernel, params: list[str], resolver: Any = None):
        self._handle = Resolver(fun)
        self.plan, self.kernel, self.params, self.resolver = plan, kernel, params, resolver
        self.assumptions: Any = None   # frontend.Assumptions: what the plan compiled in
        # generated derivatives and hot-path makers, shared by every grad object (and
        # closure) this plan serves: a new closure per step generates nothing
        self.generated: dict[tuple, Callable] = {}

    @property
    def fun(self) -> Callable:
        return self._handle.fn

    @property
    def name(self) -> str:
        return self.kernel.name

    def kernel_args(self, args: Sequence[Any]) -> list[Any]:
        """The value of each kernel parameter for a call with `args`."""
        vals = []
        for kind, ref in self.plan.inputs:
            if kind == "arg":
                vals.append(args[ref])
            elif kind == "free":
                vals.append(self.resolver.lookup(ref))
            elif ref.origin == "param":
                vals.append(ref.read(args[self.params.index(ref.base)]))
            else:
                vals.append(ref.read())
        return vals

    def input_text(self, kind: str, ref) -> str:
        """The expression, in generated code, that gives a kernel parameter's value."""
        if kind == "arg":
            return self.params[ref]
        if kind == "free":
            return ref
        if ref.origin == "free":
            return ref.param
        if isinstance(ref, Column):   # read (and its shape checked) at each call
            return f"columns({ref.base}, ({ref.param!r},))[0]"
        return ref.base + "[" + index_text(ref.index) + "]"

    def columns(self, value, params: tuple[str, ...]) -> list:
        """A row function's columns of `value` (generated code's `columns`), shape-checked."""
        by_param = {ref.param: ref for kind, ref in self.plan.inputs if kind == "capture" and isinstance(ref, Column)}
        return read_columns(value, [by_param[p] for p in params])

    def free_values(self) -> dict[str, Any]:
        """Keyword arguments of the derivative: free data arrays and captured free
        elements, read now (at call time), as Python reads globals."""
        out = {}
        for kind, ref in self.plan.inputs:
            if kind == "free":
                out[ref] = self.resolver.lookup(ref)
            elif kind == "capture" and ref.origin == "free":
                out[ref.param] = ref.read()
        return out

    def active_pairs(self, argnums: tuple[int, ...]) -> list[tuple[str, int, tuple | None]]:
        """(kernel parameter, index of the function's argument, element index or None) for
        each differentiated kernel input: an argument, or an element captured from one."""
        out = []
        for j, (kind, ref) in enumerate(self.plan.inputs):
            if kind == "arg" and ref in argnums:
                out.append((self.kernel.params[j], ref, None))
            elif kind == "capture" and ref.origin == "param" and self.params.index(ref.base) in argnums:
                out.append((self.kernel.params[j], self.params.index(ref.base), ref.index))
        return out

    def active_for(self, argnums: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(k for k, _, _ in self.active_pairs(argnums))

    def per_argument(self, pairs, grads, args, argnums) -> list:
        """Kernel-parameter gradients -> one gradient per argument in argnums, captured
        elements scattered back to where they were read."""
        out = {i: g for (_, i, index), g in zip(pairs, grads) if index is None}
        for (_, i, index), g in zip(pairs, grads):
            if index is not None:
                if i not in out:
                    out[i] = zeros_like(args[i])
                out[i][index] += g
        return [out[i] if i in out else zeros_like(args[i]) for i in argnums]


def compiled(fun: Callable, layout: Layout | None = None) -> Compiled:
    """The plan serving `fun`: one made for its code whose compiled-in free names
    (constants, functions) hold the same values and whose data names the same kinds;
    else a new one, made once whatever the threads. `layout` (passes/containers.py):
    the plan of the function with its container arguments as leaf parameters."""
    return PLANS.get(fun, serves, lambda: _plan(fun, layout), layout)


def serves(c, fun: Callable) -> bool:
    return c.assumptions.hold(fun)


def _plan(fun: Callable, layout: Layout | None = None):
    pf = entry_function(parse_function(fun))
    if layout is not None:
        pf = flatten_parameters(pf, layout)
    with recording() as log:
        try:
            plan = plan_loss(pf)
        except S2SADError as e:
            # not `R(elementwise)`: the whole function as an array program (passes/reverse.py)
            c = _array_compiled(fun, pf, e)
        else:
            kernel = Kernel(plan.program, plan.program.entry)
            c = Compiled(fun, plan, kernel, [a.id for a in pf.node.args.args], pf.resolver)
    c.assumptions = Assumptions(log, PlanCache.key_of(fun))
    return c



def _array_compiled(fun: Callable, pf, planner_error: S2SADError):
    """The array-level plan of a function the fused planner does not take; when neither
    takes it, the error that points at the problem (the planner's when both found the
    same place)."""
    try:
        c = ArrayCompiled(fun, pf, build_program(pf, Kernel), array_rules.HELPERS, derivative_runtime.runtime_names)
        c.generated = {}    # as Compiled.generated
        return c
    except S2SADError as e:
        array_error = e
    scalar_error = None
    try:  # a straight-line scalar function, e.g. with `and`: one scalar kernel, as with control flow
        plan = plan_scalar(pf)
    except S2SADError as e:
        scalar_error = e
    else:
        return Compiled(fun, plan, Kernel(plan.program, plan.program.entry), [a.id for a in pf.node.args.args],
                        pf.resolver)
    for e in (planner_error, scalar_error):   # a derivative s2sad made, refused: the scalar side says why
        if isinstance(e, HigherOrderNotSupportedError):
            raise e from None
    e = array_error
    # both found the same place inside scalar code: the planner's words (the same column
    # too: on one line, a refused array-level call beside scalar code is the array's)
    if getattr(e, "in_scalar_code", False) and e.location is not None and planner_error.location is not None \
            and (e.location.filename, e.location.lineno, e.location.col) == (
                planner_error.location.filename, planner_error.location.lineno, planner_error.location.col):
        raise planner_error from None
    raise e from None


def is_array(c) -> bool:
    return type(c) is not Compiled


def read_state(c: Compiled, fun: Callable | None = None) -> list[float]:
    """The state's values now (read through `fun`, bound, when given: the hot path)."""
    if fun is not None:
        with bound(fun):
            return read_state(c)
    return [float(cell.get()) for cell in c.plan.program.state]


def write_state(c: Compiled, values, fun: Callable | None = None) -> None:
    if fun is not None:
        with bound(fun):
            return write_state(c, values)
    for cell, v in zip(c.plan.program.state, values):
        cell.set(v)



def return_location(c: Compiled):
    fname, line, col = c.plan.return_location.rsplit(":", 2)
    return SourceLocation(fname, int(line), int(col) - 1)



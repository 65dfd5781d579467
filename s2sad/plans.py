"""Plans: a function to differentiate -> the plan that serves it (`compiled`).

A function is planned once: its route is chosen by analysis of its parsed tree
(passes/routes.py: fused kernel, scalar function or array program, with the reason
explain prints), then that route's planner alone builds the plan: a `Compiled` (a
`LossPlan` and its `Kernel`) or an array program (`array_compiled.ArrayCompiled`). What
the chosen planner refuses is the user's error, raised located; no other planner is
tried. The plan is cached by the function's code (`PLANS`, a plancache.PlanCache): it
serves every function of that code whose free names pass its Assumptions, and holds
none of them. A plan is read with the function called bound (frontend.bound), whose
cells and globals it reads. Generated derivatives are kept on the plan (`generated`),
so that a new grad object of a known plan generates nothing.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from . import array_rules, derivative_runtime, runtime
from .arguments import zeros_like
from .errors import SourceLocation, non_scalar_loss
from .frontend import Assumptions, Resolver, bound, parse_function, recording
from .plancache import PlanCache
from .passes.arrayprog import build_program
from .passes.containers import Layout, flatten_parameters
from .passes.elementwise import LossPlan, plan_loss, plan_scalar
from .passes.array_compiled import ArrayCompiled
from .passes.fused_adjoint import fused_derivative, with_kernel
from .passes.linemap import compile_located
from .passes.routes import ARRAY, FUSED, SCALAR, Route, route_of
from .passes.rowcolumns import Column, read_columns, rows_gradient
from .runtime import Kernel
from .targets import entry_function

PLANS = PlanCache()


class Plan(Protocol):
    """What derivative.py, jvp_vjp.py, api and cli call on a plan, whichever route made
    it: `Compiled` (a fused kernel or a scalar function) or
    `array_compiled.ArrayCompiled` (an array program)."""

    route: Route                 # how it was planned and why (explain)
    params: list[str]            # the function's parameters
    assumptions: Any             # frontend.Assumptions: what the plan compiled in
    generated: dict              # generated code kept with the plan (derivative.py)
    fused: bool                  # one kernel whose compiled entry takes the user's arguments

    @property
    def fun(self) -> Callable: ...

    @property
    def name(self) -> str: ...

    def free_values(self) -> dict[str, Any]: ...

    def source(self, argnums: tuple[int, ...], mode: str = "auto", variant: str = "value_and_grad") -> str: ...

    def implementation(self, argnums: tuple[int, ...], mode: str, backend, variant: str = "value_and_grad"): ...

    def explain(self, argnums: tuple[int, ...], mode: str = "auto") -> list[str]: ...


class Compiled:
    """A differentiated function's plan: its fused kernel and how the loss reduces it (a
    `Plan`). `fun` is the function called now (bound) or the one planned, held weakly."""

    fused = True
    route: Route | None = None

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

    def derivative(self, argnums: tuple[int, ...], variant: str) -> tuple[str, tuple[str, ...]]:
        """The array-level derivative (passes/fused_adjoint.py) and the kernel's active
        params (states included) whose dual it calls."""
        fname = self.fun.__name__ if self.fun.__name__.isidentifier() else "loss"
        return fused_derivative(self.plan, self.params, fname, self.kernel.name, self.kernel.params, argnums,
                                self.active_pairs(argnums), variant)

    def source(self, argnums: tuple[int, ...], mode: str = "auto", variant: str = "value_and_grad") -> str:
        """What s2sad.source prints: the derivative, then its kernel's source."""
        text, active = self.derivative(argnums, variant)
        return with_kernel(text, self.kernel.name, self.kernel.module(active).source())

    def implementation(self, argnums: tuple[int, ...], mode: str, backend, variant: str = "value_and_grad"):
        """The derivative, exec'd with what it calls on `backend` (a backends.Choice)."""
        namespace = {
            self.kernel.name: self.kernel,
            "sum_dual": functools.partial(runtime.sum_dual, backend=backend),
            "sum_grads": functools.partial(runtime.sum_grads, backend=backend),
            "broadcast_size": runtime.broadcast_size,
            "check_scalar_loss": self.check_scalar_loss,
            "zeros_like": zeros_like,
            "columns": self.columns,
            "rows_gradient": rows_gradient,
            "scan_grads": _scan_value_and_grads(backend),
            "read_state": functools.partial(read_state, self),
            "write_state": functools.partial(write_state, self),
        }
        text = self.derivative(argnums, variant)[0]
        exec(compile_located(text, f"<s2sad derivative of {self.name}>", (), return_location(self)), namespace)
        return next(v for k, v in namespace.items() if k.endswith("__" + variant))

    def check_scalar_loss(self, *kargs) -> None:
        """A map kernel's output (its arguments' broadcast shape) is a loss only when 0-d."""
        shape = np.broadcast_shapes(*(np.shape(a) for a in kargs))
        if shape != ():
            raise non_scalar_loss(self.fun.__name__, shape, return_location(self))

    def explain(self, argnums: tuple[int, ...], mode: str = "auto") -> list[str]:
        """explain's lines for this plan: each elementwise site, the path chosen for it and
        why, and the kernel they are fused into (`mode` does not apply: no partials stored)."""
        lines = []
        for s in self.plan.sites:
            lines.append(f"  {s.location}: {s.applied} -> {s.path}: {s.reason}")
            if s.source_line:
                lines.append(f"      {s.source_line}")
        active = self.active_for(argnums)
        red = {"sum": "summed in the kernel", "mean": "averaged in the kernel",
               "none": "a scalar function of scalars"}[self.plan.reduction]
        lines.append(f"  fused: {len(self.plan.sites)} site(s) into one kernel {self.kernel.name}"
                     f"({', '.join(self.kernel.params)}), {red}; "
                     f"dual with {len(active)} partial(s) per element ({', '.join(active) or 'none'})")
        return lines

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


def compiled_array(fun: Callable, layout: Layout | None = None) -> ArrayCompiled:
    """The plan of `fun` as an array program whatever its route: the fused sum of one
    kernel too (one KernelSum statement), for what only array plans have (forward over
    reverse: the VJP of a fused loss's gradient called inside a program, array_higher;
    the Hessian of a function of containers, tree_higher, with its `layout`).
    Cached apart from `compiled`'s plan (variant "array", or ("array", layout))."""
    c = compiled(fun, layout)
    if not c.fused:
        return c
    return PLANS.get(fun, serves, lambda: _plan(fun, layout, force=ARRAY), "array" if layout is None else ("array", layout))


def serves(c, fun: Callable) -> bool:
    return c.assumptions.hold(fun)


def _plan(fun: Callable, layout: Layout | None = None, force: str | None = None):
    """The plan of `fun` (with its container arguments as leaves, given `layout`): its
    route chosen once by analysis (passes/routes.py), then that route's planner (or the
    planner `force` names); what it refuses is the user's error, raised located."""
    pf = entry_function(parse_function(fun))
    with recording() as log:
        if layout is not None:      # (the helpers it reads to pass them containers are assumptions too)
            pf = flatten_parameters(pf, layout)
        route = route_of(pf)
        c = _BUILD[force or route.kind](fun, pf)
    c.route = route
    c.assumptions = Assumptions(log, PlanCache.key_of(fun), getattr(getattr(c, "program", None), "checked_lists", ()))
    return c


def _fused(fun: Callable, pf) -> Compiled:
    return _scalar_kernel(fun, pf, plan_loss(pf))


def _scalar(fun: Callable, pf) -> Compiled:
    return _scalar_kernel(fun, pf, plan_scalar(pf))


def _scalar_kernel(fun: Callable, pf, plan: LossPlan) -> Compiled:
    return Compiled(fun, plan, Kernel(plan.program, plan.program.entry), [a.id for a in pf.node.args.args],
                    pf.resolver)


def _array(fun: Callable, pf) -> ArrayCompiled:
    c = ArrayCompiled(fun, pf, build_program(pf, Kernel), array_rules.HELPERS, derivative_runtime.runtime_names)
    c.generated = {}    # as Compiled.generated
    return c


_BUILD = {FUSED: _fused, SCALAR: _scalar, ARRAY: _array}


def _scan_value_and_grads(backend):
    """scan_grads for generated code: (seed * sum of values, grads, final state)."""
    def scan_grads(kernel, args, active, state, seed):
        value, grads, final = runtime.scan_grads(kernel, args, active, state, seed=seed, backend=backend)
        return value * seed, grads, final
    return scan_grads


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



"""Forward mode of a function planned at the array level: its tangent program
(passes/tangent_sweep.py) and its forward-over-reverse program (passes/hvp_sweep.py),
generated once per differentiated arguments and compiled once per backend, kept beside
the plan (array_compiled.ArrayCompiled) they belong to.

The namespace the tangent program runs with is the plan's (its helpers and, per
backend, the runtime names handed down by the layer above), so this module, like the
plan, imports no runtime. Plans are held weakly: a plan dropped from the cache takes
its tangent programs with it.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..errors import non_scalar_loss
from ..frontend import location_of

from .hvp_sweep import ForwardOverReverse
from .linemap import compile_located
from .tangent_sweep import TangentSweep

_TANGENTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # plan -> TangentPlans


class TangentPlans:
    """The tangent programs of one array plan: per argnums its source, per (argnums,
    backend) its compiled function."""

    def __init__(self, plan):
        self.plan = weakref.ref(plan)
        self._sweeps: dict[tuple, tuple[str, TangentSweep]] = {}
        self._impls: dict[tuple, object] = {}

    def sweep(self, argnums: tuple[int, ...]) -> tuple[str, TangentSweep]:
        got = self._sweeps.get(argnums)
        if got is None:
            sweep = TangentSweep(self.plan().program, argnums)
            got = self._sweeps[argnums] = (sweep.generate(), sweep)
        return got

    def source(self, argnums: tuple[int, ...]) -> str:
        return self.sweep(argnums)[0]

    def implementation(self, argnums: tuple[int, ...], backend: str):
        return self._compiled(("jvp", argnums), backend, lambda: self.sweep(argnums), "jvp")

    def hvp_sweep(self, argnums: tuple[int, ...], grad_argnums: tuple[int, ...],
                  value: bool = True, grads: bool = True) -> tuple[str, ForwardOverReverse]:
        """The forward-over-reverse program: tangents for `argnums`, adjoints (and their
        tangents) for `grad_argnums`; value False: the loss and its tangent are None
        where nothing else reads them (jvp of a grad does not); grads False: the
        adjoints are None, only their tangents computed (s2sad.hvp)."""
        key = ("hvp", argnums, grad_argnums) + (() if value else ("no value",)) + (() if grads else ("no grads",))
        got = self._sweeps.get(key)
        if got is None:
            sweep = ForwardOverReverse(self.plan().program, argnums, grad_argnums, value, grads)
            got = self._sweeps[key] = (sweep.generate(), sweep)
        return got

    def hvp_source(self, argnums: tuple[int, ...], grad_argnums: tuple[int, ...], value: bool = True,
                   grads: bool = True) -> str:
        """The forward-over-reverse program and the kernels it calls."""
        text, sweep = self.hvp_sweep(argnums, grad_argnums, value, grads)
        kernels = sweep.kernels_text()
        return text + ("\n\n" + kernels if kernels else "")

    def hvp_implementation(self, argnums: tuple[int, ...], grad_argnums: tuple[int, ...], backend: str,
                           value: bool = True, names=None, grads: bool = True):
        """`names(backend)`: runtime names the program calls beyond the plan's (the layer
        above hands them down: hvp_columns.runtime_names)."""
        return self._compiled(("hvp", argnums, grad_argnums, value, grads), backend,
                              lambda: self.hvp_sweep(argnums, grad_argnums, value, grads), "hvp", names)

    def _compiled(self, key: tuple, backend: str, make, suffix: str, names=None):
        fn = self._impls.get(key + (backend,))
        if fn is None:
            plan = self.plan()
            text, sweep = make()
            ns = sweep.namespace(plan.helpers, {**plan.runtime_names(backend), **(names(backend) if names else {})})
            ns["check_scalar_loss"] = scalar_check(plan.program)
            exec(compile_located(text, f"<s2sad {suffix} of {plan.program.name}>", getattr(sweep, "located", ()), program=plan.program), ns)
            fn = self._impls[key + (backend,)] = ns[f"{plan.program.name}__{suffix}"]
        return fn


def scalar_check(prog):
    """What the forward-over-reverse program calls on its loss before its reverse sweep:
    a loss of more than one element is refused, located at the return."""
    def check_scalar_loss(value) -> None:
        if np.ndim(value) != 0:
            raise non_scalar_loss(prog.name, np.shape(value), location_of(prog.pf.filename, prog.return_node))
    return check_scalar_loss


def tangent_plans(plan) -> TangentPlans:
    got = _TANGENTS.get(plan)
    if got is None:
        got = _TANGENTS[plan] = TangentPlans(plan)
    return got


def array_hvp(plan, primals, tangents, argnums: tuple[int, ...], grad_argnums: tuple[int, ...], backend: str,
              value: bool = True, names=None, grads: bool = True):
    """((value, its tangent), gradients, their tangents) of an array plan's scalar loss at
    `primals` along `tangents` (one per entry of `argnums`): forward over reverse.
    value False: the value and its tangent may be None (not computed); grads False: the
    gradients are None (not computed where no tangent reads them)."""
    fn = tangent_plans(plan).hvp_implementation(argnums, grad_argnums, backend, value, names, grads)
    free = plan.free_values()
    args = list(primals) + list(tangents)
    return fn(*args, **free) if free else fn(*args)


def array_jvp(plan, primals, tangents, argnums: tuple[int, ...], backend: str):
    """(value, its tangent) of an array plan at `primals` along `tangents` (one per
    entry of `argnums`, each of its primal's shape)."""
    fn = tangent_plans(plan).implementation(argnums, backend)
    free = plan.free_values()
    args = list(primals) + list(tangents)
    return fn(*args, **free) if free else fn(*args)

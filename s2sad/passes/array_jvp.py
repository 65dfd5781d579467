"""Forward mode of a function planned at the array level: its tangent program
(passes/tangent_sweep.py), generated once per differentiated arguments and compiled
once per backend, kept beside the plan (array_compiled.ArrayCompiled) it belongs to.

The namespace the tangent program runs with is the plan's (its helpers and, per
backend, the runtime names handed down by the layer above), so this module, like the
plan, imports no runtime. Plans are held weakly: a plan dropped from the cache takes
its tangent programs with it.
"""
from __future__ import annotations

import weakref

from .tangent_sweep import TangentSweep

_TANGENTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # plan -> TangentPlans


class TangentPlans:
    """The tangent programs of one array plan: per argnums its source, per (argnums,
    backend) its compiled function."""

    def __init__(self, plan):
        self.plan = weakref.ref(plan)
        self._sweeps: dict[tuple[int, ...], tuple[str, TangentSweep]] = {}
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
        key = (argnums, backend)
        fn = self._impls.get(key)
        if fn is None:
            plan = self.plan()
            text, sweep = self.sweep(argnums)
            ns = sweep.namespace(plan.helpers, plan.runtime_names(backend))
            exec(compile(text, f"<s2sad tangent of {plan.program.name}>", "exec"), ns)
            fn = self._impls[key] = ns[f"{plan.program.name}__jvp"]
        return fn


def tangent_plans(plan) -> TangentPlans:
    got = _TANGENTS.get(plan)
    if got is None:
        got = _TANGENTS[plan] = TangentPlans(plan)
    return got


def array_jvp(plan, primals, tangents, argnums: tuple[int, ...], backend: str):
    """(value, its tangent) of an array plan at `primals` along `tangents` (one per
    entry of `argnums`, each of its primal's shape)."""
    fn = tangent_plans(plan).implementation(argnums, backend)
    free = plan.free_values()
    args = list(primals) + list(tangents)
    return fn(*args, **free) if free else fn(*args)

"""Plans, found by the code of the function called.

A plan (plans.Compiled, a broadcast's kernel) is made for one function but serves every
function of the same code whose free names pass its `Assumptions` (compiled-in values
equal, values read at call time of the same kind): a new closure per training step
reuses the plan and its compiled kernels. A swapped `__code__` finds no plan of its
code and is planned again.

Invariants:
- The cache holds code objects and plans only; plans hold no user function, globals
  dict or closure value (frontend.Resolver reads them through a weak reference or the
  function bound for the call).
- At most PER_CODE plans per code (the newest first) and MAX_CODES codes: a program
  that makes functions without end (exec) keeps a bounded cache.
- A first call from several threads plans once: planning runs under PLANNING, and looks
  again once it holds it. `made` counts the plans made (tests read it).
- PLANNING is one lock for all of s2sad's planning and code generation, not one per
  code: CPython 3.11's ast module keeps its recursion depth per interpreter, so parses
  in two threads at once can fail ("AST constructor recursion depth mismatch"), and
  planning is Python under the GIL anyway (one lock costs no parallelism).
- `generation` counts the clears (a rule registered): a hot path made for a plan
  declines once it changes, as the plan is no longer found.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

from .locks import PARSING, ForkSafeLock


PLANNING = PARSING     # (planning parses: one lock, see parsing.py)


class PlanCache:
    PER_CODE = 8
    MAX_CODES = 1024

    def __init__(self) -> None:
        self._plans: "OrderedDict[Any, list]" = OrderedDict()
        self._guard = ForkSafeLock()
        self.made = 0
        self.generation = 0

    @staticmethod
    def key_of(fun: Callable) -> Any:
        """A Python function's code; any other callable is its own key."""
        return getattr(fun, "__code__", fun)

    def find(self, fun: Callable, serves: Callable[[Any, Callable], bool], variant: Any = None):
        """A plan that serves `fun`, or None (no lock: lists are replaced, not mutated).
        `variant`: what else the plan was made for (its arguments' layout), holding no
        user object; None for the plain plan."""
        key = self.key_of(fun) if variant is None else (self.key_of(fun), variant)
        for plan in self._plans.get(key, ()):
            if serves(plan, fun):
                return plan
        return None

    def get(self, fun: Callable, serves: Callable[[Any, Callable], bool], make: Callable[[], Any],
            variant: Any = None):
        """The plan serving `fun` (and `variant`, as for find); made by `make()` (once,
        whatever the threads) if none does."""
        plan = self.find(fun, serves, variant)
        if plan is not None:
            return plan
        with PLANNING:
            plan = self.find(fun, serves, variant)
            if plan is None:
                plan = make()
                self._add(self.key_of(fun) if variant is None else (self.key_of(fun), variant), plan)
        return plan

    def _add(self, key, plan) -> None:
        with self._guard:
            self.made += 1
            self._plans[key] = [plan] + list(self._plans.get(key, ()))[: self.PER_CODE - 1]
            self._plans.move_to_end(key)
            while len(self._plans) > self.MAX_CODES:
                self._plans.popitem(last=False)

    def clear(self) -> None:
        with self._guard:
            self._plans.clear()
            self.generation += 1

    def __len__(self) -> int:
        return sum(len(v) for v in self._plans.values())

"""The Jacobian of an array program by reverse mode from one batched pullback
(passes/batched_reverse.py) instead of one pullback per output element (higher.py).

`Rows(fun, backend)` answers `rows(args, nums)`: {j: d fun / d args[j]} of shape
out.shape + args[j].shape, from the forward run once and its batched pullback seeded
with the identity over the output's elements, in chunks of K rows such that K times
the largest array given or made is at most about batched_jac.BUDGET elements (every
adjoint of a chunk is K times its value's shape).
A plan of one fused kernel (a map that broadcasts, a sum) runs as its array program of
one statement (plans.compiled_array). It answers None where the per-row path must run
instead: the plan is a kernel with state or captured elements, or a refusal the
per-row path raises located, it returns something other than one float array or number, an argument
differentiated is not an ndarray of at least one dimension and one element, or the
program has a statement with no batched reverse form (NotBatched, decided once per
plan). `why_not` says which. User errors (wrong types) are raised as the per-row path
raises them.

A function returning a container (tuple, dict...) gets one plan per float leaf of its
output (as vjp's) and one batched pullback each: {"tree": the output's TreeDef, (j, k):
leaf k's Jacobian}; a container argument, a leaf that is not a float array or is planned
as one fused kernel: the per-row path.

Invariants: row i of a Jacobian is what the unbatched pullback gives for the i-th
basis cotangent (the same stored partials and rules, one row of a batch); a Jacobian
has shape out.shape + x_j.shape and the dtype of the per-row result; no argument is
written.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import batch_rules, batch_vjps, tree
from .arguments import check_args, converted
from .batched_jac import BUDGET, Warm
from .errors import S2SADError
from .frontend import bound
from .passes.batched_reverse import batched_pullback
from .passes.batched_sweep import NotBatched
from .passes.containers import Layout
from .plans import compiled, compiled_array
from .targets import bind, target
from .treecalls import flatten_call, returns_container, skeletons_of

PLAIN = (np.ndarray, float, int)     # the argument types the hot path takes as they are
HELPERS = {**{n: getattr(batch_rules, n) for n in ("brows", "bindex_bar", "breduce_bar")},
           **{n: getattr(batch_vjps, n) for n in ("bscaled", "bunbroadcast", "bmatmul_bar", "bconcatenate_bar")}}


def runtime_names(backend: str) -> dict:
    """The names a batched pullback calls beyond its plan's."""
    return HELPERS


class Rows:
    """The batched reverse-mode Jacobians of `fun` (see the module doc)."""

    def __init__(self, fun: Callable, backend: str):
        self.fun, self.backend = fun, backend
        self.why_not: str | None = None     # why the last call answered None (None: it did not)
        self.chunks: tuple[int, int] = (0, 0)   # the last call's (batched pullbacks, rows a pullback)
        self.hot: Hot | None = None         # the last plain call's path, tried first
        self.fns = None                     # the last (forward, batched pullback) run

    def __call__(self, args: tuple, nums: tuple[int, ...]) -> dict | None:
        """The Jacobians keyed by argnum (given non-negative), or None."""
        got = self.hot_call(args, nums)
        if got is not None:
            return got
        try:
            planned = target(self.fun, "jacrev")
            if returns_container(planned, False):
                with bound(planned):
                    return self._leaves(planned, args, nums)
            with bound(planned):    # the plan reads this function's cells and globals
                c = compiled(planned)
                if c.fused and (c.plan.program.state or c.plan.program.captures):
                    return self._not_batched("not an array program (one fused kernel with state or captured "
                                             "elements: its own derivatives)")
                if c.fused:     # one kernel (a map that broadcasts, a sum): its program of one statement
                    c = compiled_array(planned)
        except S2SADError as e:     # the per-row path raises it, located
            return self._not_batched(f"refused ({e.message})")
        with bound(planned):
            return self._rows(c, planned, args, nums)

    def hot_call(self, args: tuple, nums: tuple[int, ...]) -> dict | None:
        """The Jacobians by the last plain call's path, or None (see Hot)."""
        hot = self.hot
        return hot(args) if hot is not None and hot.nums == nums else None

    def _not_batched(self, why: str) -> None:
        self.why_not = why
        return None

    def _rows(self, c, planned, args: tuple, nums: tuple[int, ...]) -> dict | None:
        primals = self._primals(planned, args, len(c.params))
        wrt = tuple(sorted(set(nums)))
        got = self._jacobians(c, primals, wrt)
        if got is None:
            return None
        if primals is args and all(type(a) in PLAIN for a in args + tuple(c.free_values().values())):
            self.hot = Hot(self, nums, planned, c, self.fns, wrt)
        return got

    def _leaves(self, planned, args: tuple, nums: tuple[int, ...]) -> dict | None:
        """A function returning a container: per float leaf of the output, the plan of
        that leaf (as vjp's) and its batched pullback; {"tree": the output's TreeDef,
        (j, k): leaf k's Jacobian in args[j]}."""
        primals = self._primals(planned, args, None)
        flat = flatten_call(planned, primals)
        if any(s is not None for s in flat.skeletons):
            return self._not_batched("a container argument")
        wrt = tuple(sorted(set(nums)))
        values, td = tree.flatten(planned(*primals))      # the output's structure (as vjp's)
        skels = skeletons_of(flat)
        got: dict = {"tree": td}
        for k, v in enumerate(values):
            if not isinstance(v, (np.ndarray, float, np.floating)) or np.asarray(v).dtype.kind != "f":
                return self._not_batched(f"output leaf {k} is not a float array")
            c = compiled(planned, Layout(skels, False, k, td.skeleton))
            if c.fused:
                return self._not_batched(f"output leaf {k} is planned as one fused kernel")
            leaf = self._jacobians(c, tuple(flat.leaves), wrt)
            if leaf is None:
                return None
            got.update({(j, k): jac for j, jac in leaf.items()})
        return got

    def _primals(self, planned, args: tuple, n: int | None) -> tuple:
        primals = converted(tuple(args), range(len(args)))
        return bind(planned, primals, {}) if n is None or len(primals) != n else primals

    def _jacobians(self, c, primals: tuple, wrt: tuple[int, ...]) -> dict | None:
        """{j: the Jacobian in primals[j]} of plan c's output, or None (why_not says why)."""
        check_args(c, primals, wrt)
        if any(not isinstance(primals[j], np.ndarray) or primals[j].ndim == 0 or primals[j].size == 0 for j in wrt):
            return self._not_batched("an argument that is a number, 0-d or empty")
        try:
            self.fns = batched_pullback(c, wrt, self.backend, runtime_names)
        except NotBatched as e:
            return self._not_batched(e.reason)
        got = jacobians(self.fns, primals, wrt, c.free_values())
        if isinstance(got, str):
            return self._not_batched(got)
        self.why_not = None
        self.chunks = got.pop(None)
        return got


def jacobians(fns, primals: tuple, wrt: tuple[int, ...], free: dict) -> dict | str:
    """{j: the Jacobian in primals[j]} (and None: (chunks, rows a chunk)) from the forward
    and the batched pullback, or the reason there is none (a result not one array)."""
    forward, pullback = fns
    out, residuals = forward(*primals, **free) if free else forward(*primals)
    if type(out) is np.ndarray and out.dtype.kind == "f":
        out_shape, m = out.shape, out.size
    elif isinstance(out, (float, np.floating)):
        out_shape, m = (), 1
    else:
        return "a result that is not one float array"
    largest = m
    for a in primals + tuple(free.values()):
        if type(a) is np.ndarray and a.size > largest:
            largest = a.size
    step = max(1, min(m, BUDGET // largest))
    parts: dict = {j: [] for j in wrt}
    for lo in range(0, m, step):
        k = min(step, m - lo)
        for j, g in zip(wrt, pullback(residuals, _seeds(out_shape, lo, k, m))):
            parts[j].append(g)
    got: dict = {None: (-(-m // step) if m else 0, step)}
    for j in wrt:
        got[j] = _assembled(parts[j], out_shape, primals[j])
    return got


def _assembled(rows: list, out_shape: tuple, x: np.ndarray) -> np.ndarray:
    """The chunks' rows (each (k,) + x.shape, or an unbatched zero where the result does
    not depend on x) as one new array out_shape + x.shape of x's dtype (the pullback's)."""
    shape = out_shape + x.shape
    if not rows or any(np.ndim(g) != x.ndim + 1 for g in rows):    # no rows, or x's unbatched zero
        return np.zeros(shape, x.dtype)
    stacked = np.concatenate(rows) if len(rows) > 1 else rows[0]
    if stacked.dtype != x.dtype:
        stacked = stacked.astype(x.dtype)
    return stacked.reshape(shape)


def _seeds(shape: tuple, lo: int, k: int, m: int) -> np.ndarray:
    """The basis cotangents lo .. lo + k - 1 of the output's elements: (k,) + shape."""
    if lo == 0 and k == m:
        return np.eye(m).reshape((k,) + shape)
    t = np.zeros((k, m))
    t[np.arange(k), lo + np.arange(k)] = 1.0
    return t.reshape((k,) + shape)


class Hot(Warm):
    """A Rows call taken again without planning, where batched_jac.Warm's guards pass on
    the arguments and the free data values (read now, as the full path reads them);
    else None, and the full path runs (and checks)."""

    def __init__(self, rows: Rows, nums: tuple, planned, c, fns, wrt: tuple):
        super().__init__(planned, c, wrt)
        self.rows, self.nums, self.fns = rows, nums, fns
        self.free = c.free_values if c.program.free else None

    def __call__(self, args: tuple) -> dict | None:
        if not self.same(args):
            return None
        free = self.free() if self.free is not None else {}
        if not self.takes(args + tuple(free.values()), args):
            return None
        got = jacobians(self.fns, args, self.wrt, free)
        if isinstance(got, str):
            return None     # (the full path says why)
        self.rows.chunks = got.pop(None)
        return got

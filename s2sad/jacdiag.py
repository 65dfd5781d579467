"""The Jacobian of an elementwise map, planned once: its diagonal from one gradient of the
sum of its values (what jacfwd and jacrev of such a map run, higher.py).

Where the plan of `fun` is one fused kernel with no reduction, no state and no captured
element, and the kernel's output has the shape of each differentiated argument x (no
larger argument broadcasts against it), out[k] depends on x only through x[k]: so
d sum(out) / d x[k] = d out[k] / d x[k] is the Jacobian's diagonal, and every other
entry is 0. One `runtime.sum_dual` with no value (the driver computes only the partials,
times the seed 1.0) gives the diagonal of every differentiated argument at once: bit for
bit the tangent a jvp along ones gives (the same partials times 1.0).

A `Diagonal` (one per jacfwd / jacrev wrapper) decides per plan what depends only on the
function and its plan; a call takes, in order:
- the hot path, made after a full call of a plain plan (the kernel's parameters are the
  function's arguments in order, no free data, the llvm fast path): the driver's Python
  entry (codegen/llvm_entry.py) called with the user's arguments, guarded as grad's hot
  path is (the function's code is the planned one, the plan's assumptions on its globals
  and cells hold); the entry itself takes only exact float arrays of the driver's dtype,
  contiguous and of one shape, and exact floats, so the output has x's shape whenever it
  answers; it declines (None) anything else;
- the full path: the plan (plans.compiled, cached), the argument checks, sum_dual, the
  output's shape checked against each x's; None when the map is not elementwise in x
  (the caller then builds the Jacobian column by column).
Invariants: a result has shape x.shape + x.shape, x's dtype, zeros off the diagonal; no
user argument is written; the hot path holds the function the wrapper holds anyway.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import backends, runtime
from .arguments import check_args, converted
from .errors import S2SADError
from .frontend import bound
from .plans import compiled
from .targets import arity, bind, target


class Diagonal:
    """The Jacobians of `fun` in `argnums` (normalised, a tuple) when it is an elementwise
    map of each: `__call__(args)` -> one Jacobian per argnum, or None."""

    def __init__(self, fun: Callable, argnums: tuple[int, ...], backend: str, entry: str):
        self.fun, self.argnums, self.backend, self.entry = fun, argnums, backend, entry
        self.arity = arity(fun)
        self.hot: Callable = _decline   # hot(args) -> the Jacobians or None; see the module doc
        self.why_not: str | None = None     # why the last full call answered None (None: it did not)

    @property
    def warm(self) -> bool:
        """Has a full call made the hot path?"""
        return self.hot is not _decline

    def full(self, args: tuple) -> tuple | None:
        """The Jacobians by the full path (the argnums checked by the caller), or None."""
        try:
            planned = target(self.fun, self.entry)
            with bound(planned):    # the plan reads this function's cells and globals
                c = compiled(planned)
        except S2SADError as e:
            return self._declined(f"refused ({e.message})")     # (the column-by-column path raises it, located)
        with bound(planned):
            return self._full(planned, c, args)

    def _full(self, planned: Callable, c, args: tuple) -> tuple | None:
        if not _elementwise(c):
            return self._declined("not an elementwise map (its plan is not one fused kernel with no reduction, "
                                  "state or captured elements)")
        if any(np.ndim(args[i]) == 0 for i in self.argnums):
            return self._declined("an argument that is a number or 0-d")
        args = converted(tuple(args), range(len(args)))
        primals = bind(planned, args, {}) if len(args) != len(c.params) else args
        nums = tuple(i % len(primals) for i in self.argnums)
        check_args(c, primals, nums)
        pairs = c.active_pairs(nums)
        if any(index is not None for _, _, index in pairs) or {i for _, i, _ in pairs} != set(nums):
            return self._declined("not a map of the argument's elements (an element of it read, or it not read)")
        kargs = c.kernel_args(primals)
        try:
            shape = np.broadcast_shapes(*(np.shape(a) for a in kargs))
        except ValueError:      # (the column path refuses them, located at the kernel's statement)
            return self._declined("arguments whose shapes do not broadcast")
        if any(np.shape(primals[i]) != shape for i in nums):
            return self._declined("the argument broadcasts against a larger one (not diagonal)")
        active = tuple(k for k, _, _ in pairs)
        _, grads = runtime.sum_dual(c.kernel, kargs, active, backend=self.backend, value=False)
        by_arg = {i: g for (_, i, _), g in zip(pairs, grads)}
        self.why_not = None
        if len(args) == self.arity and _plain(c, self.backend):
            order = [i for _, i, _ in pairs]
            self.hot = _hot_path(c, planned, nums, [order.index(i) for i in nums], active)
        return tuple(spread(np.asarray(by_arg[i], dtype=_dtype(primals[i])), np.shape(primals[i]))
                     for i in nums)


    def _declined(self, why: str) -> None:
        self.why_not = why
        return None


def spread(d: np.ndarray, shape: tuple) -> np.ndarray:
    """The diagonal `d` (x's shape) as the Jacobian of shape shape + shape."""
    n = d.size
    jac = np.zeros(n * n, dtype=d.dtype)
    jac[::n + 1] = d.ravel()
    return jac.reshape(shape + shape)


def _elementwise(c) -> bool:
    return c.fused and c.plan.reduction == "none" and not c.plan.program.state and not c.plan.program.captures


def _plain(c, backend: str) -> bool:
    """Does the kernel take the function's arguments in order (the entry's signature)?"""
    return (backends.choose(backend).fast_path and not c.free_values()
            and list(c.plan.inputs) == [("arg", j) for j in range(len(c.params))])


def _dtype(a: Any) -> np.dtype:
    return a.dtype if isinstance(a, np.ndarray) else np.dtype(np.float64)


def _decline(args: tuple) -> None:
    return None


def _hot_path(c, fun: Callable, nums: tuple[int, ...], slots: list[int], active: tuple[str, ...]) -> Callable:
    """The call of the driver's entry (see the module doc); `slots[j]`: the position of
    the gradient of argument nums[j] among the entry's gradients."""
    entries, key = c.kernel.entries, ("none", active)
    code, hold, holds = fun.__code__, c.assumptions.hold, bool(c.assumptions.entries)

    def hot(args: tuple) -> tuple | None:
        entry = entries.get(key)
        if entry is None or fun.__code__ is not code or (holds and not hold(fun)):
            return None
        for i in nums:      # (an x of one element, or a float, is not the entry's array)
            if type(args[i]) is not np.ndarray:
                return None
        r = entry(*args, 1.0, False)
        if r is NotImplemented:
            return None
        return tuple(spread(r[1 + s], r[1 + s].shape) for s in slots)
    return hot

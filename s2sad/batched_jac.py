"""Hessians and Jacobians of array programs from one sweep with batched tangents
(passes/batched_sweep.py), instead of one sweep per column (higher.py).

`Blocks(fun, backend, entry)` answers `blocks(args, grad_nums, tan_nums)`:
- with grad_nums: {(i, j): d grad_i f / d x_j} (the Hessian's blocks, or jacfwd of a
  grad) from the batched forward-over-reverse program: per tangent argument j one sweep
  (K = x_j.size directions: the identity) whose other tangents are zeros, in chunks of
  K columns such that K times the largest array given is at most about BUDGET elements
  (the batched operands of a kernel are K times its shape);
- without (grad_nums None): {j: d f / d x_j} from the batched tangent program (jacfwd
  of an array program), the Jacobian of shape out.shape + x_j.shape.
It answers None where the per-column path must run instead: the function is not planned
as an array program (a fused or scalar plan, a derivative, a refusal the per-column path
raises located), a tangent argument is not an ndarray of at least one dimension and one
element, or the program has a statement with no batched form (NotBatched, decided once
per plan: `why_not` says which). User errors (wrong types, a non-scalar loss) are
raised as the per-column path raises them.

Invariants: column j of a block is what the per-column program gives along the j-th
basis direction (the same kernels and rules, the rows of one batch); a block has shape
out.shape + x_j.shape and the dtype of the per-column result; no argument is written.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from . import batch_rules, hvp_columns
from .arguments import argnums_tuple, check_args, converted, dtype_of
from .errors import S2SADError
from .frontend import bound
from .passes.batched_sweep import NotBatched, batched_hvp, batched_hvp_source, batched_jvp
from .plans import compiled
from .targets import bind, target

BUDGET = 1 << 20    # elements of one batched tangent (columns x input size) before the columns run in chunks

HELPERS = ("brows", "bindex", "bindex_bar", "breduce", "breduce_bar", "bkernel_tangent", "bkernel_sum_tangent",
           "bscalar_tangents", "bseeded_grads")


def runtime_names(backend: str) -> dict:
    """The names a batched program calls beyond its plan's."""
    return {**hvp_columns.runtime_names(backend), **{n: getattr(batch_rules, n) for n in HELPERS}}


class Blocks:
    """The batched Jacobian blocks of `fun` (see the module doc)."""

    def __init__(self, fun: Callable, backend: str, entry: str):
        self.fun, self.backend, self.entry = fun, backend, entry
        self.why_not: str | None = None     # why the last call answered None (None: it did not)
        self.hot: Hot | None = None         # the last plain call's path, tried first
        self.chunks: tuple[int, int] = (0, 0)

    def __call__(self, args: tuple, grad_nums: tuple[int, ...] | None, tan_nums: tuple[int, ...]) -> dict | None:
        """The blocks keyed (i, j) (j without grad_nums), argnums given non-negative."""
        hot = self.hot
        if hot is not None and hot.key == (grad_nums, tan_nums):
            got = hot(args)
            if got is not None:
                return got
        try:
            planned = target(self.fun, self.entry)
            with bound(planned):    # the plan reads this function's cells and globals
                c = compiled(planned)
        except S2SADError as e:     # the per-column path raises it, located
            return self._not_batched(f"refused ({e.message})")
        with bound(planned):
            if c.fused:
                return self._not_batched("not an array program (one fused kernel: its own derivatives)")
            return self._blocks(c, planned, args, grad_nums, tan_nums)

    def _not_batched(self, why: str) -> None:
        self.why_not = why
        return None

    def _blocks(self, c, planned, args, grad_nums, tan_nums) -> dict | None:
        primals = converted(tuple(args), range(len(args)))
        if len(primals) != len(c.params):
            primals = bind(planned, primals, {})
        tans = tuple(sorted(set(tan_nums) | set(grad_nums or ())))
        check_args(c, primals, tans)
        if any(not isinstance(primals[j], np.ndarray) or primals[j].ndim == 0 or primals[j].size == 0
               for j in tans):
            return self._not_batched("an argument that is a number, 0-d or empty")
        grads = tuple(dict.fromkeys(grad_nums)) if grad_nums is not None else None
        try:
            fn = (batched_hvp(c, tans, grads, self.backend, runtime_names) if grads is not None
                  else batched_jvp(c, tans, self.backend, runtime_names))
        except NotBatched as e:
            return self._not_batched(e.reason)
        self.why_not = None
        free = c.free_values()
        out: dict = {}
        try:
            for j in dict.fromkeys(tan_nums):
                out.update(self.columns(fn, primals, tans, j, free, grads))
        except NotBatched as e:
            return self._not_batched(e.reason)
        if not free and primals is args and all(type(a) in (np.ndarray, float, int) for a in args):
            self.hot = Hot(self, (grad_nums, tan_nums), planned, c, fn, tans, grads)
        return out

    def columns(self, fn, primals, tans, j: int, free: dict, grads) -> dict:
        """The blocks d(.)/d x_j: one batched sweep per chunk of x_j's basis directions."""
        x = primals[j]
        size = x.size
        # a kernel's batched operands are K times its broadcast shape: bounded by the
        # largest array given (an intermediate may be larger: a proxy)
        largest = max([a.size for a in tuple(primals) + tuple(free.values()) if isinstance(a, np.ndarray)])
        step = max(1, min(size, BUDGET // largest))
        self.chunks = (-(-size // step), step)     # (sweeps, columns a sweep) of the last x_j: for explain
        parts: dict[Any, list] = {}
        out_shapes: dict[Any, tuple] = {}
        for lo in range(0, size, step):
            k = min(step, size - lo)
            tangents = [_basis(primals[a], lo, k) if a == j else np.zeros((k,) + primals[a].shape, primals[a].dtype)
                        for a in tans]
            res = fn(*primals, *tangents, **free) if free else fn(*primals, *tangents)
            if grads is not None:
                for i, bd in zip(grads, res[2]):
                    shape = primals[i].shape
                    if np.shape(bd) != (k,) + shape:    # (an unbatched zero: the loss does not depend on it)
                        bd = np.broadcast_to(bd, (k,) + shape)
                    parts.setdefault((i, j), []).append(bd)
                    out_shapes[(i, j)] = (shape, dtype_of(primals[i]))
            else:
                value, dot = res
                if not isinstance(value, (np.ndarray, float, np.floating)):    # a tuple of results: column by column
                    raise NotBatched("a result that is not one array")
                shape = np.shape(value)
                parts.setdefault(j, []).append(np.broadcast_to(dot, (k,) + shape))
                out_shapes[j] = (shape, np.asarray(value).dtype if isinstance(value, np.ndarray) else dtype_of(x))
        blocks = {}
        for key, cols in parts.items():
            shape, dtype = out_shapes[key]
            stacked = np.concatenate(cols) if len(cols) > 1 else cols[0]
            m = math.prod(shape)
            blocks[key] = stacked.reshape(size, m).T.astype(dtype, order="C").reshape(shape + x.shape)
        return blocks


def _basis(x: np.ndarray, lo: int, k: int) -> np.ndarray:
    """The basis directions lo .. lo + k - 1 of x's elements: shape (k,) + x.shape."""
    if lo == 0 and k == x.size:
        return np.eye(k, dtype=x.dtype).reshape((k,) + x.shape)
    t = np.zeros((k, x.size), x.dtype)
    t[np.arange(k), lo + np.arange(k)] = 1.0
    return t.reshape((k,) + x.shape)


class Warm:
    """The guards of a call a Hot path (this module's, batched_rows') takes without
    planning or checking again: the planned function's code unchanged and the plan's
    assumptions on its globals and cells holding; every argument (and free data value)
    an ndarray or a number, none to convert; each argument in `wrt` a float ndarray of
    at least one dimension and one element (check_args' conditions). Else the full path
    runs (and checks)."""

    def __init__(self, planned, c, wrt: tuple):
        self.planned, self.wrt = planned, wrt
        self.code, self.hold, self.holds = planned.__code__, c.assumptions.hold, bool(c.assumptions.entries)
        self.n = len(c.params)

    def same(self, args: tuple) -> bool:
        """The call of the planned code, with as many arguments as it was planned for?"""
        return len(args) == self.n and self.planned.__code__ is self.code

    def takes(self, values: tuple, args: tuple) -> bool:
        """`values` (the arguments, then any free data) plain, args[wrt] float arrays, the
        plan's assumptions holding?"""
        for a in values:
            t = type(a)
            if t is not np.ndarray and t is not float and t is not int:
                return False
        for j in self.wrt:
            a = args[j]
            if type(a) is not np.ndarray or a.ndim == 0 or a.size == 0 or a.dtype.kind != "f" or a.dtype.itemsize > 8:
                return False
        return not self.holds or self.hold(self.planned)


class Hot(Warm):
    """A Blocks call taken again without planning, where Warm's guards pass and the plan
    reads no free data; else None, and the full path runs (and checks)."""

    def __init__(self, blocks: Blocks, key: tuple, planned, c, fn, tans: tuple, grads):
        super().__init__(planned, c, tans)
        self.blocks, self.key, self.fn, self.tans, self.grads = blocks, key, fn, tans, grads
        self.order = tuple(dict.fromkeys(key[1]))

    def __call__(self, args: tuple) -> dict | None:
        if not self.same(args) or not self.takes(args, args):
            return None
        out: dict = {}
        try:
            for j in self.order:
                out.update(self.blocks.columns(self.fn, args, self.tans, j, {}, self.grads))
        except NotBatched:
            return None     # (the full path says why)
        return out


def hessian_source(fun: Callable, argnums=0) -> str:
    """What hessian(fun, argnums) runs for an array program: the forward-over-reverse
    program with batched tangents, then its kernels; or the line that says why there is
    none (the per-column program then runs: array_higher.hvp_source)."""
    with bound(fun):
        c = compiled(fun)
        if c.fused:
            return "# no batched program: not an array program (one fused kernel: its own derivatives)\n"
        nums = tuple(dict.fromkeys(i % len(c.params) for i in argnums_tuple(argnums)))
        try:
            return batched_hvp_source(c, tuple(sorted(nums)), nums)
        except NotBatched as e:
            return f"# no batched program: {e.reason}\n"

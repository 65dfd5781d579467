"""The paths jacfwd, jacrev and hessian try (their tables are in higher.py; the runner
and the `Path` protocol in higher_paths.py). Each path is a thin adapter: the planner it
calls (small_hessian / small_jacobian, jacdiag, batched_jac, batched_rows) decides, the
path puts the planner's answer in the wrapper's layout (one Jacobian per argnum, a
tuple for a tuple of argnums) or declines with None.

The last paths (one jvp per input element, one pullback per output element) always
answer, or raise located as jvp and vjp do: they build the Jacobian from the public jvp
and vjp, column by column or row by row (`_assemble`).
Invariants: a Jacobian has shape out.shape + in.shape (JAX's); a function returning a
container has its Jacobians in that structure, each leaf's a tuple over a tuple of
argnums; a Jacobian of scalars of scalars is a float (a 0-d array for a 0-d array
input); an empty input or output gives zeros of that shape; no argument is written.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import marks, tree
from .api import jvp, vjp
from .arguments import argnums_tuple
from .errors import S2SADError
from .higher_paths import ANY, NOT_GRAD, OF_GRAD, USERS, Path, where
from .reduce import float_dtype


# ---------------------------------------------------------------- unrolled (small fixed shapes)

class UnrolledOfGrad(Path):
    """jacfwd / jacrev of grad(f): hessian(f)'s unrolled plan (small_hessian.OfGrad)."""
    name, step, when, planner = "unrolled", "unrolled second derivatives (small_hessian)", OF_GRAD, "small"

    def try_(self, args: tuple) -> Any:
        return self.parts.small(args)


class UnrolledHessian(UnrolledOfGrad):
    """hessian(f) of a small fixed-shape program (small_hessian.SmallHessian): its warm
    entry, else its full path (whose why_not then says why it declined, or nothing)."""
    step, when = "unrolled second derivatives, warm, else planned (small_hessian)", ANY

    def __init__(self, parts):
        super().__init__(parts)
        self.small = parts.small

    def try_(self, args: tuple) -> Any:
        small = self.small
        got = small.hot(args)
        if got is None:
            small.why_not = None    # (a silent decline leaves no earlier call's reason)
            got = small.full(args)
        return got


class UnrolledHot(Path):
    """The unrolled first-derivative plan's warm entry (small_jacobian), made by a call
    its full path answered."""
    name, step, when, warm = "unrolled", "unrolled, warm (small_jacobian)", USERS, True

    def __init__(self, parts):
        super().__init__(parts)
        self.small = parts.small

    def try_(self, args: tuple) -> Any:
        return self.small.hot(args)


class UnrolledFull(Path):
    """The unrolled first-derivative plan for these shapes, made or found (small_jacobian)."""
    name, step, when, planner = "unrolled", "unrolled (small_jacobian)", USERS, "small"

    def try_(self, args: tuple) -> Any:
        small = self.parts.small
        small.why_not = None    # (a silent decline leaves no earlier call's reason)
        return small.full(args)


# ---------------------------------------------------------------- the diagonal of an elementwise map

class DiagonalHot(Path):
    """An elementwise map's Jacobians by the driver's warm entry (jacdiag)."""
    name, step, warm = "diagonal", "diagonal, warm (jacdiag)", True

    def __init__(self, parts):
        super().__init__(parts)
        self.diagonal = parts.diagonal

    def try_(self, args: tuple) -> Any:
        d = self.diagonal
        got = d.hot(args) if len(args) == d.arity else None
        return got if got is None or self.parts.many else got[0]


class DiagonalFull(Path):
    """An elementwise map's Jacobians from one gradient of its sum (jacdiag)."""
    name, step, checks_argnums, planner = "diagonal", "diagonal (jacdiag)", True, "diagonal"

    def try_(self, args: tuple) -> Any:
        got = self.parts.diagonal.full(args)
        return got if got is None or self.parts.many else got[0]


# ---------------------------------------------------------------- batched sweeps

class BatchedColumns(Path):
    """jacfwd of an array program (or of its grad: Hessian blocks) from batched tangents
    (batched_jac): a grad of a tuple of argnums gives a tuple of Jacobians, outputs
    outside, argnums inside (JAX's)."""
    name, step, planner = "batched", "batched columns (batched_jac)", "batched"

    def try_(self, args: tuple) -> Any:
        p = self.parts
        n = len(args)
        norm = tuple(i % n for i in argnums_tuple(p.argnums))
        if p.inner is None:
            blocks = p.batched(args, None, norm)
            if blocks is None:
                return None
            return tuple(blocks[j] for j in norm) if p.many else blocks[norm[0]]
        spec = p.inner.argnums_spec
        grad_nums = tuple(i % n for i in argnums_tuple(spec))
        blocks = p.batched(args, grad_nums, norm)
        if blocks is None:
            return None

        def of_output(i):
            return tuple(blocks[(i, j)] for j in norm) if p.many else blocks[(i, norm[0])]
        if isinstance(spec, (tuple, list)):
            return tuple(of_output(i) for i in grad_nums)
        return of_output(grad_nums[0])


class BlocksOfGrad(BatchedColumns):
    """jacrev of grad(f): the same Hessian blocks as its rows, from batched tangents."""
    when = OF_GRAD


class BatchedRowsHot(Path):
    """jacrev of an array program by the batched pullback's warm path (batched_rows)."""
    name, step, when, warm, planner = "batched", "batched rows, warm (batched_rows)", NOT_GRAD, True, "batched"

    def try_(self, args: tuple) -> Any:
        p = self.parts
        n = len(args)
        if not n:
            return None
        norm = tuple(i % n if type(i) is int else i for i in argnums_tuple(p.argnums))
        if not norm:
            return None
        rows = p.batched.hot_call(args, norm) if self.warm else p.batched(args, norm)
        if rows is None:
            return None
        if "tree" in rows:      # a container output: each leaf's Jacobians (JAX's layout)
            return by_output(rows["tree"], p.argnums, lambda i, k: rows[(i % n, k)])
        return tuple(rows[j] for j in norm) if p.many else rows[norm[0]]


class BatchedRows(BatchedRowsHot):
    """jacrev of an array program from one batched pullback (batched_rows)."""
    step, warm = "batched rows (batched_rows)", False


# ---------------------------------------------------------------- one by one (always answers)

class PerColumn(Path):
    """jacfwd by one jvp per basis direction of each differentiated input."""
    name, step, checks_argnums, total = "one by one", "one jvp per input element", True, True

    def try_(self, args: tuple) -> Any:
        p = self.parts
        per = {i: _jacfwd_one(p.fun, args, i, p.backend) for i in argnums_tuple(p.argnums)}
        if not per:     # argnums=(): no Jacobian, as grad gives no gradient
            return ()
        td = next(iter(per.values()))[0]
        return by_output(td, p.argnums, lambda i, k: per[i][1][k])


class PerRow(Path):
    """jacrev by one vjp, its pullback run once per output element (a row each)."""
    name, step, checks_argnums, total = "one by one", "one pullback per output element", True, True

    def try_(self, args: tuple) -> Any:
        p = self.parts
        return _jacrev_rows(p.fun, args, p.argnums, p.backend)


def _jacrev_rows(fun: Callable, args: tuple, argnums, backend: str):
    out, pullback = vjp(fun, *args, backend=backend)
    outs, td = tree.flatten(out)
    _check_numbers(outs, fun, "jacrev")
    rows: list[list] = [[] for _ in outs]       # per output leaf, one pullback per element
    for k, leaf in enumerate(outs):
        for e in np.ndindex(np.shape(leaf)):
            seeds = [np.zeros(np.shape(o)) if np.shape(o) else 0.0 for o in outs]
            if np.shape(leaf):
                seeds[k][e] = 1.0
            else:
                seeds[k] = 1.0
            rows[k].append(pullback(tree.unflatten(td, seeds)))
    return by_output(td, argnums, lambda i, k: _assemble([r[i] for r in rows[k]], np.shape(outs[k]),
                                                         np.shape(args[i]), rows_first=True,
                                                         dtype=float_dtype(args[i]),
                                                         array_in=isinstance(args[i], np.ndarray)))


def _jacfwd_one(fun: Callable, args: tuple, i: int, backend: str):
    """(the output's structure, the Jacobian of each of its leaves in args[i])."""
    x = args[i]
    zeros = [_zero_tangent(a) for a in args]
    in_shape = np.shape(x)
    columns = []
    for j in np.ndindex(in_shape):
        tangents = list(zeros)
        tangents[i] = _basis(x, j)
        out, column = jvp(fun, tuple(args), tuple(tangents), backend=backend)
        columns.append(tree.leaves(column))
    if not columns:         # an empty input: the output's shapes from one call
        out, _ = jvp(fun, tuple(args), tuple(zeros), backend=backend)
    outs, td = tree.flatten(out)
    _check_numbers(outs, fun, "jacfwd")
    return td, [_assemble([c[k] for c in columns], np.shape(o), in_shape, rows_first=False, dtype=float_dtype(x),
                          array_in=isinstance(x, np.ndarray)) for k, o in enumerate(outs)]


def by_output(td, argnums, jac: Callable) -> Any:
    """The Jacobians in the output's structure, each leaf's a tuple over a tuple of
    argnums (JAX's layout); `jac(i, k)`: output leaf k's Jacobian in argument i."""
    leaves = [_per_argnum(argnums, lambda i: jac(i, k)) for k in range(td.num_leaves)]
    return tree.unflatten(td, leaves)


def _per_argnum(argnums, one: Callable) -> Any:
    if isinstance(argnums, (tuple, list)):
        return tuple(one(i) for i in argnums)
    return one(argnums)


def _check_numbers(outs: list, fun: Any, what: str) -> None:
    """Each output leaf a number or an array of numbers: a string's (or None's, an
    object's) Jacobian is no array of zeros."""
    for leaf in outs:
        kind = np.asarray(leaf).dtype.kind if leaf is not None and not isinstance(leaf, str) else "O"
        if kind not in "biuf":
            raise S2SADError(f"s2sad.{what}: {marks.function_name(fun)} returns {type(leaf).__name__} "
                             f"{leaf!r:.40} among its outputs; a Jacobian is taken of numbers", where(fun),
                             hint="Return only numbers and arrays (leave the rest out, or return it from another "
                                  "function).")


def _zero_tangent(a):
    if isinstance(a, np.ndarray):
        return np.zeros_like(a, dtype=a.dtype if a.dtype.kind == "f" else float)
    return 0.0


def _basis(x, j):
    if np.ndim(x) == 0:
        return np.ones((), dtype=x.dtype)[()] if isinstance(x, np.ndarray | np.floating) else 1.0
    e = np.zeros(np.shape(x), dtype=np.asarray(x).dtype if np.asarray(x).dtype.kind == "f" else float)
    e[j] = 1.0
    return e


def _assemble(parts: list, out_shape: tuple, in_shape: tuple, rows_first: bool, dtype=np.float64,
              array_in: bool = False):
    """Columns (one per input element) or rows (one per output element) -> the Jacobian,
    shape out_shape + in_shape; when both are scalars, a float, or a 0-d array of `dtype`
    for an array input (`array_in`: grad's gradient of a 0-d array is one); zeros of
    `dtype` when there are no parts (an empty input or output)."""
    if not out_shape and not in_shape:
        part = parts[0] if not isinstance(parts[0], np.ndarray) else parts[0][()]
        return np.asarray(part, dtype=dtype) if array_in else part
    if not parts:
        return np.zeros(out_shape + in_shape, dtype=dtype)
    stacked = np.asarray([np.asarray(p) for p in parts])
    if rows_first:      # (out..., in...)
        return stacked.reshape(out_shape + in_shape)
    n_in = int(np.prod(in_shape, dtype=int))
    return stacked.reshape((n_in,) + out_shape).reshape((n_in, -1)).T.reshape(out_shape + in_shape)

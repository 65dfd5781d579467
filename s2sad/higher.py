"""Jacobians and Hessians, JAX's names and conventions: jacfwd, jacrev, jacobian (=
jacrev), hessian, hvp.

Built on the public jvp, vjp and grad only:
- `jacfwd(fun)`: one jvp per basis direction of the input (a column each);
- `jacrev(fun)`: one vjp, its pullback run once per output element (a row each); an
  array program: every row from one pullback of batched cotangents (batched_rows.py);
- either, where the plan shows an elementwise map of the input (a fused kernel with no
  reduction, the output of the input's shape): the diagonal from one gradient of the
  map's sum, which is the whole Jacobian, decided once per plan and called through the
  driver's entry from the third call (jacdiag.py).
- `hessian(fun)` = jacfwd(grad(fun)); `hvp(fun, primals, tangents)` = jvp(grad(fun))
  (forward over reverse). For a scalar function of numbers the grad is differentiated
  again as nested duals in one kernel (passes/normderiv.py); for an array program the
  jvp of its grad is what jvp takes, or its located refusal, never a wrong number.

Invariants:
- A Jacobian has shape `out.shape + in.shape` (JAX's); for a tuple of argnums, a tuple
  of Jacobians (a Hessian: a tuple of tuples), as JAX's. A function returning a container
  (tuple, list, dict...) has the Jacobians in that structure, each leaf's a tuple over a
  tuple of argnums (JAX's layout). An empty input or output gives zeros of that shape.
- A Jacobian of scalars of scalars is a float, as grad's gradient of a float is.
- hessian and hvp of containers (tree_higher.py): JAX's nesting (a dict of dicts; for a
  tuple of argnums, `H[a][key][b]`), tangents in the primals' structure.
- Arguments not differentiated get zero tangents; an argument that is not a float is
  refused by jvp/vjp as for any derivative.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from . import array_higher, higher_explain, marks, mempool, rebind, tree_higher
from .api import grad, jvp
from .arguments import argnums_tuple, check_one_tangent_per_primal, primals_at, tangent_like
from .batched_jac import Blocks
from .batched_rows import Rows
from .callables import BoundCall, bound_call
from .deep import deeply
from .errors import S2SADError
from .higher_paths import USERS, Parts, Path, runner
from .higher_paths import check_argnums as _check_argnums, where as _where     # (hvp's names for them)
from .jacdiag import Diagonal
from .jacobian_paths import (BatchedColumns, BatchedRows, BatchedRowsHot, BlocksOfGrad, DiagonalFull, DiagonalHot,
                             PerColumn, PerRow, UnrolledFull, UnrolledHessian, UnrolledHot, UnrolledOfGrad)
from .small_hessian import OfGrad, SmallHessian
from .small_jacobian import SmallJacobian


class HessianBlocks(Path):
    """hessian of an array program: all blocks from one sweep of batched tangents (batched_jac)."""
    name, step, checks_argnums, planner = "batched", "batched columns (batched_jac)", True, "batched"

    def try_(self, args: tuple) -> Any:
        nums = self.parts.argnums
        norm = tuple(i % len(args) for i in argnums_tuple(nums))
        blocks = self.parts.batched(args, norm, norm)
        if blocks is None:
            return None
        if not self.parts.many:
            return blocks[(norm[0], norm[0])]
        return tuple(tuple(blocks[(i, j)] for j in norm) for i in norm)


class HessianTree(Path):
    """hessian in containers (dicts, lists, namedtuples...): one forward-over-reverse
    sweep per element of the leaves, nested as JAX's (tree_higher.py)."""
    name, step, when = "containers", "containers: a column per leaf element (tree_higher)", USERS

    why_not = "no container among the differentiated arguments"

    def try_(self, args: tuple) -> Any:
        if not tree_higher.any_container(args, self.parts.argnums):
            return None
        return tree_higher.hessian_tree(self.parts.fun, args, self.parts.argnums, self.parts.backend)


class HessianColumns(Path):
    """hessian by jacfwd of its grad (each block by jacfwd's own table); `took` names that
    jacfwd (explain shows its levels)."""
    name, step, checks_argnums, total = "one by one", "jacfwd of the grad", True, True
    inners: dict | None = None      # (i, j) -> jacfwd(grads[i], j): made at the first call, kept

    def try_(self, args: tuple) -> Any:
        # The jacfwd wrappers are made once: made per call, each call re-planned them
        # (164 us a call for a scalar cubic, session 19) and left ~47 objects in
        # reference cycles (a wrapper and its explain hook) for the cyclic collector.
        p = self.parts
        argnums, grads = p.argnums, p.grads
        if self.inners is None:
            nums = argnums_tuple(argnums) if p.many else (argnums,)
            self.inners = {(i, j): jacfwd(grads[i], j, backend=p.backend) for i in nums for j in nums}
        if not p.many:
            inner = self.inners[(argnums, argnums)]
            self.took = (self.name, inner)
            return inner(*args)
        nums = argnums_tuple(argnums)
        self.took = (self.name, self.inners[(nums[0], nums[0])]) if nums else (self.name,)
        return tuple(tuple(self.inners[(i, j)](*args) for j in nums) for i in nums)


# The path tables, tried in order (higher_paths.runner; each path's `when` says which
# functions it serves): the warm paths first, each planner's full path after them, the
# one that always answers last.
JACFWD = (UnrolledOfGrad, UnrolledHot, DiagonalHot, DiagonalFull, UnrolledFull, BatchedColumns, PerColumn)
JACREV = (UnrolledOfGrad, UnrolledHot, BatchedRowsHot, DiagonalHot, DiagonalFull, UnrolledFull, BlocksOfGrad,
          BatchedRows, PerRow)
HESSIAN = (UnrolledHessian, HessianTree, HessianBlocks, HessianColumns)


def jacfwd(fun: Callable, argnums=0, *, backend: str = "auto") -> Callable:
    """The Jacobian of `fun` by forward mode: one jvp per input direction; an elementwise
    map: its diagonal from one gradient (jacdiag.py); an array program or the grad of
    one: all columns from one sweep of batched tangents where every statement has a
    batched form (batched_jac.py). Its paths: JACFWD."""
    _check_callable(fun, "jacfwd")
    unbound = rebind.unbound(fun)
    if unbound is not None:     # the grad of a bound method: its function's grad, the bound arguments first
        made, call = unbound
        return _leading(jacfwd(made, rebind.shifted(argnums, len(call.args)), backend=backend), call, fun, argnums)
    parts = Parts(fun, argnums, backend, diagonal=Diagonal(fun, argnums_tuple(argnums), backend, "jacfwd"))
    inner = parts.inner
    parts.batched = Blocks(inner.fun if inner else fun,
                           inner.backend if inner and backend == "auto" else backend, "jacfwd")
    parts.small = _small_of_grad(parts) if inner else _small(parts)
    return _named(runner("jacfwd", parts, JACFWD), parts)


def jacrev(fun: Callable, argnums=0, *, backend: str = "auto") -> Callable:
    """The Jacobian of `fun` by reverse mode: one vjp, pulled back once per output element
    (an elementwise map: its diagonal from one gradient, jacdiag.py; the grad of an array
    program: the batched forward-over-reverse sweep, batched_jac.py; another array
    program: one pullback of batched cotangents, batched_rows.py). Its paths: JACREV."""
    _check_callable(fun, "jacrev")
    unbound = rebind.unbound(fun)
    if unbound is not None:
        made, call = unbound
        return _leading(jacrev(made, rebind.shifted(argnums, len(call.args)), backend=backend), call, fun, argnums)
    parts = Parts(fun, argnums, backend, diagonal=Diagonal(fun, argnums_tuple(argnums), backend, "jacrev"))
    inner = parts.inner
    # the grad of an array program: its Jacobian (a Hessian block) from the batched
    # forward-over-reverse sweep, the same numbers as its rows; any other array
    # program: all rows from one batched pullback (batched_rows.py)
    parts.batched = Blocks(inner.fun, inner.backend if backend == "auto" else backend, "jacrev") \
        if inner is not None else Rows(fun, backend)
    parts.small = _small_of_grad(parts) if inner is not None else _small(parts)
    return _named(runner("jacrev", parts, JACREV), parts)


jacobian = jacrev


def hessian(fun: Callable, argnums=0, *, backend: str = "auto") -> Callable:
    """The Hessian of a scalar `fun`: jacfwd of its grad (forward over reverse). For a
    tuple of argnums, H[i][j] = d^2 fun / d args[i] d args[j] (a tuple of tuples). A
    small fixed-shape program: one call (small_hessian.py); an array program: all
    columns from one sweep of batched tangents (batched_jac.py) where every statement
    has a batched form, else one sweep per column. Its paths: HESSIAN."""
    _check_callable(fun, "hessian")
    call = bound_call(fun)
    if call is not None:        # a bound method: its function's Hessian, the bound arguments first
        rebind.check_not_bound(call, rebind.shifted(argnums, len(call.args)))
        return _leading(hessian(call.fn, rebind.shifted(argnums, len(call.args)), backend=backend), call, fun,
                        argnums)
    grads = {i: grad(fun, argnums=i, backend=backend) for i in argnums_tuple(argnums)}
    parts = Parts(fun, argnums, backend, grads=grads, batched=Blocks(fun, backend, "hessian"),
                  small=SmallHessian(fun, argnums, backend), first_order=False)     # (its grads check that)
    return _named(runner("hessian", parts, HESSIAN), parts)


def hvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], *, argnums=0, backend: str = "auto"):
    """The Hessian of scalar `fun` (in its `argnums` arguments) times `tangents`: the jvp
    of grad(fun, argnums) at `primals` along `tangents` (forward over reverse), the
    product alone (shaped as that grad's gradient). An array program's runs the
    forward-over-reverse program that computes no gradient the product does not read."""
    _check_callable(fun, "hvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):    # (as jvp)
        raise S2SADError(f"s2sad.hvp takes its primals and its tangents as tuples or lists, not a "
                         f"{type(primals if not isinstance(primals, (tuple, list)) else tangents).__name__}",
                         _where(fun), hint="Write s2sad.hvp(f, (x,), (v,)) for one argument.")
    primals = tuple(primals)
    if tree_higher.any_container(primals, argnums) and marks.derivative_mark(fun) is None and bound_call(fun) is None:
        check_one_tangent_per_primal(fun, primals, tangents)
        return tree_higher.hvp_tree(fun, primals, tangents, argnums, backend)     # (containers: tree_higher.py)
    _check_argnums(argnums, primals, fun)
    call = bound_call(fun)
    if call is not None:        # a bound method: its function's, the bound arguments first (zero tangents)
        check_one_tangent_per_primal(fun, primals, tangents)
        rebind.check_not_bound(call, rebind.shifted(argnums, len(call.args)))
        full = rebind.full_primals(call, primals)
        return hvp(call.fn, full, rebind.full_tangents(call, full, tangents),
                   argnums=rebind.shifted(argnums, len(call.args)), backend=backend)
    g = grad(fun, argnums, backend=backend)
    mark = marks.derivative_mark(g)
    if isinstance(tangents, (tuple, list)) and array_higher.is_array_derivative(mark):
        product = _array_hvp(mark, primals, tuple(tangents), backend)
        # (in the dtype of grad's result, its arguments' own: a '>f4' stays '>f4', as jvp's tangent of it)
        return tangent_like(primals_at(primals, argnums), product)
    return jvp(g, primals, tangents, backend=backend)[1]


@deeply
@mempool.pooled
def _array_hvp(mark, primals: tuple, tangents: tuple, backend: str):
    """(as jvp runs jvp_of_derivative: a deep tree's retry, the warm memory pool)"""
    return array_higher.hvp_of_derivative(mark, primals, tangents, backend)




# ---------------------------------------------------------------- helpers

def _small_of_grad(parts: Parts) -> OfGrad:
    """jacfwd/jacrev of grad(f): hessian(f)'s unrolled plan for small fixed shapes (the
    grad's function and argnums from its mark; its backend where this one is "auto")."""
    inner = parts.inner
    return OfGrad(parts.mark.of, inner.argnums_spec, parts.argnums,
                  inner.backend if parts.backend == "auto" else parts.backend)


def _small(parts: Parts) -> SmallJacobian | None:
    """The unrolled first-derivative plan of a small fixed-shape program (small_jacobian);
    none for a derivative s2sad made (its own paths answer)."""
    return SmallJacobian(parts.fun, parts.argnums, parts.backend) if parts.mark is None else None


def _named(wrapper: Callable, parts: Parts) -> Callable:
    """The wrapper's names, what it differentiates (`of`), its planners (`small`: why not
    unrolled; `batched`: why not batched) and its explain hook (which path its last call
    took: `took`, higher_explain)."""
    fun, argnums, what = parts.fun, parts.argnums, wrapper.kind
    wrapper.of, wrapper.argnums, wrapper.took = fun, argnums, ()
    wrapper.small, wrapper.batched = parts.small, parts.batched
    wrapper.__s2sad_explain__ = lambda *args: higher_explain.explanation(wrapper, args)
    name = marks.function_name(fun)
    wrapper.__name__ = f"{what}_of_{getattr(fun, '__name__', 'fn')}"
    wrapper.__qualname__ = f"s2sad.{what}({name})"
    wrapper.__doc__ = f"s2sad.{what} of {name}."
    return marks.mark_jacobian(wrapper, what, fun)     # (differentiated again: refused, marks.jacobian_error)


def _leading(inner: Callable, call: BoundCall, fun: Callable, argnums) -> Callable:
    """`inner` (a Jacobian wrapper of call.fn) called with call's bound arguments first:
    the wrapper of the bound callable `fun` (rebind), its marks and explain inner's."""
    shifted = rebind.shifted(argnums, len(call.args))

    def bound_wrapper(*args, **kwargs):
        call.check_current()        # (Python's call of fun now: its class's __call__, its partial's keywords)
        if call.kwargs:
            rebind.check_not_bound(call, shifted)
        return inner(*call.args, *args, **({**call.kwargs, **kwargs} if call.kwargs else kwargs))
    bound_wrapper.kind, bound_wrapper.paths = inner.kind, inner.paths
    bound_wrapper.of, bound_wrapper.argnums, bound_wrapper.inner = fun, argnums, inner
    bound_wrapper.small, bound_wrapper.batched = inner.small, inner.batched
    bound_wrapper.__s2sad_explain__ = lambda *args: inner.__s2sad_explain__(*call.args, *args)
    for name in ("__name__", "__qualname__", "__doc__"):
        setattr(bound_wrapper, name, getattr(inner, name))
    return marks.mark_jacobian(bound_wrapper, inner.kind, fun)


def _check_callable(fun: Any, what: str) -> None:
    if not callable(fun):
        raise S2SADError(f"s2sad.{what} needs a function, not a {type(fun).__name__}",
                         hint="Pass a Python function (a def or a lambda).")

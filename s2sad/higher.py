"""Jacobians and Hessians, JAX's names and conventions: jacfwd, jacrev, jacobian (=
jacrev), hessian, hvp.

Built on the public jvp, vjp and grad only:
- `jacfwd(fun)`: one jvp per basis direction of the input (a column each); where the
  plan shows an elementwise map of the input (a fused kernel with no reduction, the
  output of the input's shape), one jvp along ones gives the diagonal, which is the
  whole Jacobian.
- `jacrev(fun)`: one vjp, its pullback run once per output element (a row each).
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
- Arguments not differentiated get zero tangents; an argument that is not a float is
  refused by jvp/vjp as for any derivative.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import marks, tree
from .api import grad, jvp, vjp
from .arguments import argnums_tuple, dtype_of
from .errors import NonDifferentiableInputError, S2SADError
from .frontend import bound
from .plans import compiled
from .reduce import float_dtype
from .targets import target


def jacfwd(fun: Callable, argnums=0, *, backend: str = "auto") -> Callable:
    """The Jacobian of `fun` by forward mode: one jvp per input direction."""
    def jacfwd_fun(*args):
        _check_argnums(argnums, args, fun)
        per = {i: _jacfwd_one(fun, args, i, backend) for i in argnums_tuple(argnums)}
        if not per:     # argnums=(): no Jacobian, as grad gives no gradient
            return ()
        td = next(iter(per.values()))[0]
        return _by_output(td, argnums, lambda i, k: per[i][1][k])
    return _named(jacfwd_fun, "jacfwd", fun)


def jacrev(fun: Callable, argnums=0, *, backend: str = "auto") -> Callable:
    """The Jacobian of `fun` by reverse mode: one vjp, pulled back once per output element."""
    def jacrev_fun(*args):
        _check_argnums(argnums, args, fun)
        out, pullback = vjp(fun, *args, backend=backend)
        outs, td = tree.flatten(out)
        rows: list[list] = [[] for _ in outs]       # per output leaf, one pullback per element
        for k, leaf in enumerate(outs):
            for e in np.ndindex(np.shape(leaf)):
                seeds = [np.zeros(np.shape(o)) if np.shape(o) else 0.0 for o in outs]
                if np.shape(leaf):
                    seeds[k][e] = 1.0
                else:
                    seeds[k] = 1.0
                rows[k].append(pullback(tree.unflatten(td, seeds)))
        return _by_output(td, argnums, lambda i, k: _assemble([r[i] for r in rows[k]], np.shape(outs[k]),
                                                              np.shape(args[i]), rows_first=True,
                                                              dtype=float_dtype(args[i])))
    return _named(jacrev_fun, "jacrev", fun)


def _by_output(td, argnums, jac: Callable) -> Any:
    """The Jacobians in the output's structure, each leaf's a tuple over a tuple of
    argnums (JAX's layout); `jac(i, k)`: output leaf k's Jacobian in argument i."""
    leaves = [_per_argnum(argnums, lambda i: jac(i, k)) for k in range(td.num_leaves)]
    return tree.unflatten(td, leaves)


jacobian = jacrev


def hessian(fun: Callable, argnums=0, *, backend: str = "auto") -> Callable:
    """The Hessian of a scalar `fun`: jacfwd of its grad (forward over reverse). For a
    tuple of argnums, H[i][j] = d^2 fun / d args[i] d args[j] (a tuple of tuples)."""
    nums = argnums_tuple(argnums)
    grads = {i: grad(fun, argnums=i, backend=backend) for i in nums}

    def hessian_fun(*args):
        _check_argnums(argnums, args, fun)
        if not isinstance(argnums, (tuple, list)):
            return jacfwd(grads[argnums], argnums, backend=backend)(*args)
        return tuple(tuple(jacfwd(grads[i], j, backend=backend)(*args) for j in nums) for i in nums)
    return _named(hessian_fun, "hessian", fun)


def hvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], *, backend: str = "auto"):
    """The Hessian of scalar `fun` (in its first argument) times `tangents`: the jvp of
    grad(fun) at `primals` along `tangents` (forward over reverse)."""
    primals = tuple(primals)
    _check_argnums(0, primals, fun)
    return jvp(grad(fun, backend=backend), primals, tuple(tangents), backend=backend)[1]


# ---------------------------------------------------------------- helpers

def _named(wrapper: Callable, what: str, fun: Callable) -> Callable:
    name = marks.function_name(fun)
    wrapper.__name__ = f"{what}_of_{getattr(fun, '__name__', 'fn')}"
    wrapper.__qualname__ = f"s2sad.{what}({name})"
    wrapper.__doc__ = f"s2sad.{what} of {name}."
    return wrapper


def _check_argnums(argnums, args: Sequence[Any], fun: Any = None) -> None:
    """Each argnum names an argument, and that argument is a float (jvp and vjp take an
    int as a constant: its zero derivative is not the Jacobian asked for); refused at
    `fun`'s definition."""
    for i in argnums_tuple(argnums):
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool) or not -len(args) <= i < len(args):
            raise S2SADError(f"argnums {i!r} is out of range for a call with {len(args)} argument(s)",
                             _where(fun), hint="Pick argnums among the function's positional parameters.")
        a = args[i]
        dtype = dtype_of(a)
        if dtype.kind != "f" or dtype.itemsize > 8 or isinstance(a, (bool, int, np.integer, np.bool_)):
            raise NonDifferentiableInputError(
                f"argument {i} has {type(a).__name__} {dtype}; only float arguments (float32, float64) can be "
                "differentiated", _where(fun), hint="Pass floats (e.g. np.asarray(x, dtype=np.float64)).")


def _where(fun: Any):
    """Where the user's function starts (through the derivatives s2sad made of it)."""
    mark = marks.derivative_mark(fun)
    while mark is not None:
        fun = mark.of
        mark = marks.derivative_mark(fun)
    return marks.location_of_function(getattr(fun, "__wrapped__", fun))


def _per_argnum(argnums, one: Callable) -> Any:
    if isinstance(argnums, (tuple, list)):
        return tuple(one(i) for i in argnums)
    return one(argnums)


def _jacfwd_one(fun: Callable, args: tuple, i: int, backend: str):
    """(the output's structure, the Jacobian of each of its leaves in args[i])."""
    x = args[i]
    zeros = [_zero_tangent(a) for a in args]
    diagonal = _elementwise_diagonal(fun, args, i, zeros, backend)
    if diagonal is not None:
        return tree.LEAF, [diagonal]
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
    return td, [_assemble([c[k] for c in columns], np.shape(o), in_shape, rows_first=False, dtype=float_dtype(x))
                for k, o in enumerate(outs)]


def _elementwise_diagonal(fun, args, i, zeros, backend):
    """The Jacobian of an elementwise map in args[i] from one jvp along ones, or None
    when the plan is not one (see the module doc)."""
    x = args[i]
    if np.ndim(x) == 0 or not _is_elementwise_map(fun):
        return None
    tangents = list(zeros)
    tangents[i] = np.ones(np.shape(x), dtype=np.result_type(x, np.float32))
    out, diag = jvp(fun, tuple(args), tuple(tangents), backend=backend)
    if np.shape(out) != np.shape(x):     # broadcast against a larger argument: not diagonal
        return None
    n = int(np.size(x))
    jac = np.zeros((n, n), dtype=np.asarray(diag).dtype)
    jac[np.arange(n), np.arange(n)] = np.ravel(diag)
    return jac.reshape(np.shape(x) + np.shape(x))


def _is_elementwise_map(fun: Callable) -> bool:
    try:
        planned = target(fun, "jacfwd")
        with bound(planned):
            c = compiled(planned)
    except S2SADError:
        return False        # jvp says why, where it is called
    return c.fused and c.plan.reduction == "none" and not c.plan.program.state \
        and not c.plan.program.captures


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


def _assemble(parts: list, out_shape: tuple, in_shape: tuple, rows_first: bool, dtype=np.float64):
    """Columns (one per input element) or rows (one per output element) -> the Jacobian,
    shape out_shape + in_shape; a float when both are scalars; zeros of `dtype` when
    there are no parts (an empty input or output)."""
    if not out_shape and not in_shape:
        return parts[0] if not isinstance(parts[0], np.ndarray) else parts[0][()]
    if not parts:
        return np.zeros(out_shape + in_shape, dtype=dtype)
    stacked = np.asarray([np.asarray(p) for p in parts])
    if rows_first:      # (out..., in...)
        return stacked.reshape(out_shape + in_shape)
    n_in = int(np.prod(in_shape, dtype=int))
    return stacked.reshape((n_in,) + out_shape).reshape((n_in, -1)).T.reshape(out_shape + in_shape)

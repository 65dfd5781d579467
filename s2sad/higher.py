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
- Arguments not differentiated get zero tangents; an argument that is not a float is
  refused by jvp/vjp as for any derivative.
"""
from __future__ import annotations

import types
from typing import Any, Callable, Sequence

import numpy as np

from . import array_higher, higher_explain, marks, mempool, tree
from .api import grad, jvp, vjp
from .arguments import argnums_tuple, check_argnums_spec, dtype_of, reraise_located, SHAPE_ERRORS
from .errors import ArgumentError, NonDifferentiableInputError, S2SADError
from .targets import arity, bind
from .batched_jac import Blocks
from .batched_rows import Rows
from .deep import deeply
from .first_order import first_order_checked
from .jacdiag import Diagonal
from .small_hessian import OfGrad, SmallHessian
from .small_jacobian import SmallJacobian
from .reduce import float_dtype

# which path a wrapper's last call took (`wrapper.took`, read by higher_explain)
DIAGONAL, BATCHED, ONE_BY_ONE, UNROLLED = ("diagonal",), ("batched",), ("one by one",), ("unrolled",)


def jacfwd(fun: Callable, argnums=0, *, backend: str = "auto") -> Callable:
    """The Jacobian of `fun` by forward mode: one jvp per input direction; an elementwise
    map: its diagonal from one gradient (jacdiag.py); an array program or the grad of
    one: all columns from one sweep of batched tangents where every statement has a
    batched form (batched_jac.py)."""
    _check_callable(fun, "jacfwd")
    diagonal = Diagonal(fun, argnums_tuple(argnums), backend, "jacfwd")
    mark = marks.derivative_mark(fun)
    of_grad = mark is not None and mark.made_by == "grad" and mark.derivative is not None
    inner = mark.derivative if of_grad else None
    batched = Blocks(inner.fun if of_grad else fun,
                     inner.backend if of_grad and backend == "auto" else backend, "jacfwd")
    small = _small_of_grad(mark, inner, argnums, backend) if of_grad else _small(mark, fun, argnums, backend)

    def jacfwd_fun(*args, **kwargs):
        try:
            if kwargs:
                args = _with_keywords(fun, args, kwargs)
            if of_grad:     # (what the grad refuses: a map's grad is no elementwise derivative)
                first_order_checked(mark, args)
                got = small(args)       # a small fixed-shape program: hessian's unrolled plan
                if got is not None:
                    jacfwd_fun.took = UNROLLED
                    return got
            got = _unrolled_hot(small, args) if not of_grad else None
            if got is not None:
                jacfwd_fun.took = UNROLLED
                return got
            got = _diagonal_of(diagonal, argnums, args)
            if got is not None:
                jacfwd_fun.took = DIAGONAL
                return got
            got = small.full(args) if small is not None and not of_grad else None
            if got is not None:
                jacfwd_fun.took = UNROLLED
                return got
            got = _batched_columns(batched, inner, argnums, args)
            if got is not None:
                jacfwd_fun.took = BATCHED
                return got
            _check_argnums(argnums, args, fun)
            jacfwd_fun.took = ONE_BY_ONE
            per = {i: _jacfwd_one(fun, args, i, backend) for i in argnums_tuple(argnums)}
            if not per:     # argnums=(): no Jacobian, as grad gives no gradient
                return ()
            td = next(iter(per.values()))[0]
            return _by_output(td, argnums, lambda i, k: per[i][1][k])
        except SHAPE_ERRORS as e:     # (numpy refusing the user's shapes: located)
            reraise_located(fun, e)
    jacfwd_fun.batched = batched        # (why_not: the statement with no batched form, if any)
    jacfwd_fun.small = small
    return _named(jacfwd_fun, "jacfwd", fun, argnums)


def jacrev(fun: Callable, argnums=0, *, backend: str = "auto") -> Callable:
    """The Jacobian of `fun` by reverse mode: one vjp, pulled back once per output element
    (an elementwise map: its diagonal from one gradient, jacdiag.py; the grad of an array
    program: the batched forward-over-reverse sweep, batched_jac.py; another array
    program: one pullback of batched cotangents, batched_rows.py)."""
    _check_callable(fun, "jacrev")
    diagonal = Diagonal(fun, argnums_tuple(argnums), backend, "jacrev")
    mark = marks.derivative_mark(fun)
    inner = mark.derivative if mark is not None and mark.made_by == "grad" else None
    # the grad of an array program: its Jacobian (a Hessian block) from the batched
    # forward-over-reverse sweep, the same numbers as its rows; any other array
    # program: all rows from one batched pullback (batched_rows.py)
    batched = Blocks(inner.fun, inner.backend if backend == "auto" else backend, "jacrev") \
        if inner is not None else Rows(fun, backend)
    small = _small_of_grad(mark, inner, argnums, backend) if inner is not None else _small(mark, fun, argnums, backend)

    def jacrev_fun(*args, **kwargs):
        try:
            if kwargs:
                args = _with_keywords(fun, args, kwargs)
            if inner is not None:   # (as jacfwd's)
                first_order_checked(mark, args)
                got = small(args)
                if got is not None:
                    jacrev_fun.took = UNROLLED
                    return got
            # an array program's warm paths first (the unrolled one's, the batched rows'; it is
            # never an elementwise map's)
            got = _unrolled_hot(small, args) if inner is None else None
            if got is not None:
                jacrev_fun.took = UNROLLED
                return got
            got = _batched_rows(batched, argnums, args, hot=True) if inner is None else None
            if got is not None:
                jacrev_fun.took = BATCHED
                return got
            got = _diagonal_of(diagonal, argnums, args)
            if got is not None:
                jacrev_fun.took = DIAGONAL
                return got
            got = small.full(args) if small is not None and inner is None else None
            if got is not None:
                jacrev_fun.took = UNROLLED
                return got
            got = _batched_columns(batched, inner, argnums, args) if inner is not None else \
                _batched_rows(batched, argnums, args)
            if got is not None:
                jacrev_fun.took = BATCHED
                return got
            _check_argnums(argnums, args, fun)
            jacrev_fun.took = ONE_BY_ONE
            return _jacrev_rows(fun, args, argnums, backend)
        except SHAPE_ERRORS as e:     # (numpy refusing the user's shapes: located)
            reraise_located(fun, e)
    jacrev_fun.batched = batched
    jacrev_fun.small = small
    return _named(jacrev_fun, "jacrev", fun, argnums)


jacobian = jacrev


def _jacrev_rows(fun: Callable, args: tuple, argnums, backend: str):
    """jacrev by one vjp, its pullback run once per output element (a row each)."""
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
    return _by_output(td, argnums, lambda i, k: _assemble([r[i] for r in rows[k]], np.shape(outs[k]),
                                                          np.shape(args[i]), rows_first=True,
                                                          dtype=float_dtype(args[i]),
                                                          array_in=isinstance(args[i], np.ndarray)))


def _small_of_grad(mark, inner, argnums, backend: str) -> OfGrad:
    """jacfwd/jacrev of grad(f): hessian(f)'s unrolled plan for small fixed shapes (the
    grad's function and argnums from its mark; its backend where this one is "auto")."""
    return OfGrad(mark.of, inner.argnums_spec, argnums, inner.backend if backend == "auto" else backend)


def _small(mark, fun: Callable, argnums, backend: str) -> SmallJacobian | None:
    """The unrolled first-derivative plan of a small fixed-shape program (small_jacobian);
    none for a derivative s2sad made (its own paths answer)."""
    return SmallJacobian(fun, argnums, backend) if mark is None else None


def _unrolled_hot(small: SmallJacobian | None, args: tuple) -> Any:
    """The unrolled plan's hot path (warm after a call it answered), or None."""
    return small.hot(args) if small is not None else None


def _by_output(td, argnums, jac: Callable) -> Any:
    """The Jacobians in the output's structure, each leaf's a tuple over a tuple of
    argnums (JAX's layout); `jac(i, k)`: output leaf k's Jacobian in argument i."""
    leaves = [_per_argnum(argnums, lambda i: jac(i, k)) for k in range(td.num_leaves)]
    return tree.unflatten(td, leaves)


jacobian = jacrev


def hessian(fun: Callable, argnums=0, *, backend: str = "auto") -> Callable:
    """The Hessian of a scalar `fun`: jacfwd of its grad (forward over reverse). For a
    tuple of argnums, H[i][j] = d^2 fun / d args[i] d args[j] (a tuple of tuples). An
    array program: all columns from one sweep of batched tangents (batched_jac.py) where
    every statement has a batched form, else one sweep per column."""
    _check_callable(fun, "hessian")
    nums = argnums_tuple(argnums)
    grads = {i: grad(fun, argnums=i, backend=backend) for i in nums}
    batched = Blocks(fun, backend, "hessian")
    small = SmallHessian(fun, argnums, backend)     # small fixed shapes: one call (small_hessian.py)

    def hessian_fun(*args, **kwargs):
        try:
            if kwargs:
                args = _with_keywords(fun, args, kwargs)
            got = small(args)
            if got is not None:
                hessian_fun.took = UNROLLED
                return got
            _check_argnums(argnums, args, fun)
            norm = tuple(i % len(args) for i in nums)
            blocks = batched(args, norm, norm)
            if blocks is not None:
                hessian_fun.took = BATCHED
                if not isinstance(argnums, (tuple, list)):
                    return blocks[(norm[0], norm[0])]
                return tuple(tuple(blocks[(i, j)] for j in norm) for i in norm)
            if not isinstance(argnums, (tuple, list)):
                inner = jacfwd(grads[argnums], argnums, backend=backend)
                hessian_fun.took = (ONE_BY_ONE[0], inner)
                return inner(*args)
            inners = {(i, j): jacfwd(grads[i], j, backend=backend) for i in nums for j in nums}
            hessian_fun.took = (ONE_BY_ONE[0], inners[(nums[0], nums[0])]) if nums else ONE_BY_ONE
            return tuple(tuple(inners[(i, j)](*args) for j in nums) for i in nums)
        except SHAPE_ERRORS as e:     # (numpy refusing the user's shapes: located)
            reraise_located(fun, e)
    hessian_fun.batched = batched       # (why_not: the statement with no batched form, if any)
    hessian_fun.small = small           # (why_not: what kept the program from unrolling, if anything)
    return _named(hessian_fun, "hessian", fun, argnums)


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
    _check_argnums(argnums, primals, fun)
    g = grad(fun, argnums, backend=backend)
    mark = marks.derivative_mark(g)
    if isinstance(tangents, (tuple, list)) and array_higher.is_array_derivative(mark):
        return _array_hvp(mark, primals, tuple(tangents), backend)
    return jvp(g, primals, tangents, backend=backend)[1]


@deeply
@mempool.pooled
def _array_hvp(mark, primals: tuple, tangents: tuple, backend: str):
    """(as jvp runs jvp_of_derivative: a deep tree's retry, the warm memory pool)"""
    return array_higher.hvp_of_derivative(mark, primals, tangents, backend)


# ---------------------------------------------------------------- helpers

def _named(wrapper: Callable, what: str, fun: Callable, argnums=0) -> Callable:
    """The wrapper's names, what it differentiates (`of`) and its explain hook (which
    path its last call took: `took`, higher_explain)."""
    wrapper.of, wrapper.kind, wrapper.argnums, wrapper.took = fun, what, argnums, ()
    wrapper.__s2sad_explain__ = lambda *args: higher_explain.explanation(wrapper, args)
    name = marks.function_name(fun)
    wrapper.__name__ = f"{what}_of_{getattr(fun, '__name__', 'fn')}"
    wrapper.__qualname__ = f"s2sad.{what}({name})"
    wrapper.__doc__ = f"s2sad.{what} of {name}."
    return marks.mark_jacobian(wrapper, what, fun)     # (differentiated again: refused, marks.jacobian_error)


def _check_argnums(argnums, args: Sequence[Any], fun: Any = None) -> None:
    """Each argnum names an argument, and that argument is a float (jvp and vjp take an
    int as a constant: its zero derivative is not the Jacobian asked for); refused at
    `fun`'s definition."""
    nums = argnums_tuple(argnums)
    if not all(type(i) is int for i in nums):   # (the common case without building a location)
        check_argnums_spec(argnums, _where(fun))
    for i in nums:
        a = args[i] if -len(args) <= i < len(args) else None
        if type(a) is np.ndarray and a.dtype.kind == "f" and a.dtype.itemsize <= 8:
            continue        # (the common case quickly)
        if not -len(args) <= i < len(args):
            raise S2SADError(f"argnums {i!r} is out of range for a call with {len(args)} argument(s)",
                             _where(fun), hint="Pick argnums among the function's positional parameters.")
        a = args[i]
        if isinstance(a, (list, tuple, dict)):
            raise NonDifferentiableInputError(
                f"argument {i} is a {type(a).__name__}; Jacobians and Hessians are taken in arrays and numbers "
                "(a container's has no array layout here, and Python's operators join or repeat a list)",
                _where(fun), hint="Pass np.asarray(...) and write the function for an array; s2sad.grad takes "
                                  "containers.")
        dtype = dtype_of(a)
        if dtype.kind != "f" or dtype.itemsize > 8 or isinstance(a, (bool, int, np.integer, np.bool_)):
            raise NonDifferentiableInputError(
                f"argument {i} has {type(a).__name__} {dtype}; only float arguments (float32, float64) can be "
                "differentiated", _where(fun), hint="Pass floats (e.g. np.asarray(x, dtype=np.float64)).")


def _check_numbers(outs: list, fun: Any, what: str) -> None:
    """Each output leaf a number or an array of numbers: a string's (or None's, an
    object's) Jacobian is no array of zeros."""
    for leaf in outs:
        kind = np.asarray(leaf).dtype.kind if leaf is not None and not isinstance(leaf, str) else "O"
        if kind not in "biuf":
            raise S2SADError(f"s2sad.{what}: {marks.function_name(fun)} returns {type(leaf).__name__} "
                             f"{leaf!r:.40} among its outputs; a Jacobian is taken of numbers", _where(fun),
                             hint="Return only numbers and arrays (leave the rest out, or return it from another "
                                  "function).")


def _check_callable(fun: Any, what: str) -> None:
    if not callable(fun):
        raise S2SADError(f"s2sad.{what} needs a function, not a {type(fun).__name__}",
                         hint="Pass a Python function (a def or a lambda).")


def _with_keywords(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    """A call's keyword arguments bound to the positions of the user's function under
    `fun` (through the derivatives s2sad made of it), as Python binds them; argnums
    count those positions. Refused for a function whose parameters are not named."""
    mark = marks.derivative_mark(fun)
    base = mark.innermost() if mark is not None else fun
    base = marks.user_function_of(base) or base
    if type(base) is not types.FunctionType or arity(base) < 0:
        raise ArgumentError(f"{marks.function_name(fun)} is called with keyword arguments, which s2sad binds only "
                            "for a Python function with named parameters", _where(fun),
                            hint="Pass the arguments by position.")
    return bind(base, args, kwargs)


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


def _diagonal_of(diagonal: Diagonal, argnums, args: tuple):
    """The Jacobian(s) of an elementwise map (hot path first), or None: not one."""
    got = diagonal.hot(args) if len(args) == diagonal.arity else None
    if got is None:
        _check_argnums(argnums, args, diagonal.fun)
        got = diagonal.full(args)
        if got is None:
            return None
    return got if isinstance(argnums, (tuple, list)) else got[0]


def _batched_columns(batched: Blocks, inner, argnums, args: tuple):
    """jacfwd of an array program (inner None) or of its grad `inner` (a Derivative) from
    batched tangents, or None: the per-column path runs (see batched_jac). A grad of a
    tuple of argnums gives a tuple of Jacobians, outputs outside, argnums inside (JAX's)."""
    n = len(args)
    norm = tuple(i % n for i in argnums_tuple(argnums))
    many = isinstance(argnums, (tuple, list))
    if inner is None:
        blocks = batched(args, None, norm)
        if blocks is None:
            return None
        return tuple(blocks[j] for j in norm) if many else blocks[norm[0]]
    grad_nums = tuple(i % n for i in argnums_tuple(inner.argnums_spec))
    blocks = batched(args, grad_nums, norm)
    if blocks is None:
        return None

    def of_output(i):
        return tuple(blocks[(i, j)] for j in norm) if many else blocks[(i, norm[0])]
    if isinstance(inner.argnums_spec, (tuple, list)):
        return tuple(of_output(i) for i in grad_nums)
    return of_output(grad_nums[0])


def _batched_rows(batched: Rows, argnums, args: tuple, hot: bool = False):
    """jacrev of an array program from one batched pullback (`hot`: by its warm path
    only), or None: the per-row path runs (see batched_rows)."""
    n = len(args)
    if not n:
        return None
    norm = tuple(i % n if type(i) is int else i for i in argnums_tuple(argnums))
    if not norm:
        return None
    rows = batched.hot_call(args, norm) if hot else batched(args, norm)
    if rows is None:
        return None
    if "tree" in rows:      # a container output: each leaf's Jacobians (JAX's layout)
        return _by_output(rows["tree"], argnums, lambda i, k: rows[(i % n, k)])
    return tuple(rows[j] for j in norm) if isinstance(argnums, (tuple, list)) else rows[norm[0]]


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

"""jvp of a derivative s2sad made of an array program: forward over reverse.

`jvp(grad(f), primals, tangents)` (and of `value_and_grad(f)`) where `f` is planned at
the array level runs f's forward-over-reverse program (passes/hvp_sweep.py through
passes/array_jvp.py): the gradient and its directional derivative along the tangents
(a Hessian-vector product) in one forward and one reverse sweep, compiled. Any other
derivative (of a fused or scalar plan, a vjp pullback) keeps the marks refusal
(HigherOrderNotSupportedError, naming the level and the function), unless another
path takes it first.

Results are shaped as the derivative's own: one gradient for an int argnums, a tuple
for a tuple, each like its argument (arguments.as_result); the tangent likewise.

Reverse over reverse: a grad of an array program called inside another array program
is one statement of the table's "derivative" entry (array_prims/derivcall.py); its VJP
and JVP are `derivative_vjp` and `derivative_jvp` here (registered with
marks.entry_point, bound by the builder). For g = grad_a f at x, the adjoint of operand
i from g's seed v is H_ia v: the tangent of grad_i f along v on the argnums inputs (0
on the others), from the same forward-over-reverse program jvp(grad(f)) runs.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import hvp_columns, marks
from .arguments import as_result, as_value, check_args, check_one_tangent_per_primal, check_tangents, converted, dtype_of
from .errors import S2SADError, ShapeError, non_scalar_loss
from .linalg_base import Parts
from .frontend import bound, location_of
from .passes.array_jvp import array_hvp, tangent_plans
from .plans import compiled, compiled_array
from .targets import bind


def is_array_derivative(mark: marks.DerivativeMark | None) -> bool:
    """Is this s2sad's grad or value_and_grad of a function planned at the array level?"""
    d = mark.derivative if mark is not None else None
    if d is None or mark.made_by not in ("grad", "value_and_grad"):
        return False
    try:
        return not compiled(d.fun).fused
    except S2SADError:      # not plannable: the refusal of the derivative says so first
        return False


def jvp_of_derivative(mark: marks.DerivativeMark, primals: Sequence[Any], tangents: Sequence[Any],
                      backend: str):
    """(derivative(*primals), its directional derivative along tangents) for an array
    program's grad or value_and_grad; otherwise the marks refusal."""
    if not is_array_derivative(mark):
        raise marks.higher_order_error(mark, None)
    with bound(mark.derivative.fun):    # the plan reads this function's cells and globals (a closure's)
        return _jvp_of_array_derivative(mark, primals, tangents, backend)


def hvp_of_derivative(mark: marks.DerivativeMark, primals: Sequence[Any], tangents: Sequence[Any],
                      backend: str):
    """The directional derivative alone of an array program's grad (`mark`, made by
    grad) at `primals` along `tangents`: what jvp_of_derivative gives second, from the
    forward-over-reverse program that computes no gradient no tangent reads (s2sad.hvp).
    The caller has checked is_array_derivative(mark)."""
    with bound(mark.derivative.fun):
        return _jvp_of_array_derivative(mark, primals, tangents, backend, grads=False)[1]


def _jvp_of_array_derivative(mark: marks.DerivativeMark, primals: Sequence[Any], tangents: Sequence[Any],
                             backend: str, grads: bool = True):
    """jvp_of_derivative's pair; grads False: the gradient None (not computed)."""
    d = mark.derivative
    c = compiled_array(d.fun)       # (compiled(d.fun) itself, for an array program)
    check_one_tangent_per_primal(d.fun, primals, tangents, ShapeError)
    primals = converted(tuple(primals), range(len(primals)))
    tangents = converted(tuple(tangents), range(len(tangents)))
    check_tangents(c, tangents)
    # a tangent that is exactly zero contributes nothing: its argument is not carried
    # (jvp(grad(f)) along the weights, the data's tangents zero, runs no product of them)
    moved = tuple(i for i, p in enumerate(primals) if dtype_of(p).kind == "f" and np.any(tangents[i]))
    if len(primals) != len(c.params):
        primals = bind(d.fun, primals, {})
    grad_argnums = tuple(i % len(c.params) for i in d.argnums)
    argnums = tuple(sorted(set(moved) | set(grad_argnums)))
    check_args(c, primals, argnums)
    tans = [_tangent(c, tangents, primals, i) for i in argnums]
    chosen = backend if backend != "auto" else d.backend
    # a grad's jvp reads no loss: its value is not computed where the program need not
    (value, value_dot), gs, grad_dots = array_hvp(c, primals, tans, argnums, grad_argnums, chosen,
                                                  value=mark.made_by != "grad", names=hvp_columns.runtime_names,
                                                  grads=grads)
    if value is not None and np.ndim(value) != 0:
        raise non_scalar_loss(c.fun.__name__, np.shape(value), location_of(c.pf.filename, c.program.return_node))
    many = isinstance(d.argnums_spec, (tuple, list))
    g = _shaped(gs, primals, grad_argnums, many) if grads else None
    g_dot = _shaped(grad_dots, primals, grad_argnums, many)
    if mark.made_by == "grad":
        return g, g_dot
    return (as_value(value), g), (as_value(value_dot), g_dot)


def _tangent(c, tangents, primals, i: int):
    t, p = tangents[i] if i < len(tangents) else 0.0, primals[i]
    if np.shape(t) != np.shape(p):
        raise ShapeError(f"the tangent of argument {i} of {c.fun.__name__} has shape {np.shape(t)}, its primal "
                         f"{np.shape(p)}", c.pf.location(), hint="Give each tangent its primal's shape.")
    return np.asarray(t, dtype=dtype_of(p)) if isinstance(p, np.ndarray) else float(t)


def _shaped(grads, primals, grad_argnums, many: bool):
    out = tuple(as_result(g, primals[i]) for g, i in zip(grads, grad_argnums))
    return out if many else out[0]


def hvp_source(fun, grad_argnums: tuple[int, ...], argnums: tuple[int, ...] | None = None,
               product_only: bool = False) -> str:
    """The source of what `jvp(grad(fun, grad_argnums), primals, tangents)` runs for an
    array program, with tangents along `argnums` (default: the differentiated arguments):
    the forward-over-reverse program, then its kernels; product_only: what
    `s2sad.hvp(fun, primals, tangents, argnums=grad_argnums)` runs (no gradient, no value)."""
    c = compiled(fun)
    if c.fused:
        raise S2SADError(f"{getattr(fun, '__name__', fun)} is not planned as an array program",
                         hint="hvp_source shows the forward-over-reverse program of array programs only.")
    argnums = tuple(sorted(set(argnums if argnums is not None else grad_argnums) | set(grad_argnums)))
    return tangent_plans(c).hvp_source(argnums, tuple(grad_argnums), *((False, False) if product_only else ()))


# ---------------------------------------------------------------- a derivative called inside a program

@marks.entry_point("derivative_plan")
def derivative_plan(d) -> None:
    """Plan the function of the Derivative `d` (called inside an array program being
    built): its refusal, if any, is raised now; the plan is cached for the VJP."""
    with bound(d.fun):
        compiled_array(d.fun)


@marks.entry_point("derivative_vjp")
def derivative_vjp(fn, active: tuple[int, ...], seed, args: tuple) -> tuple:
    """The adjoints of `args[i]` for i in `active` (in that order) of the call
    `fn(*args)` inside an array program, `fn` a grad or value_and_grad of an array
    program, its output's adjoint `seed` (a Parts for a tuple output)."""
    mark = marks.derivative_mark(fn)
    try:
        with bound(mark.derivative.fun):    # the plan reads this function's cells and globals (a closure's)
            return _derivative_vjp(mark, active, seed, args)
    except S2SADError as err:
        if err.location is None or not err.location.filename.startswith(marks.GENERATED_CALLER_PREFIX):
            raise
        # a refusal inside the caller s2sad generated for a derivative of a derivative
        # (nested.py): the user's, located at their def
        raise marks.higher_order_error(mark, None, f"its derivative of order {mark.order + 1} is refused: "
                                                   f"{err.message}") from None


def _derivative_vjp(mark: marks.DerivativeMark, active: tuple[int, ...], seed, args: tuple) -> tuple:
    d = mark.derivative
    c = compiled_array(d.fun)     # (a fused loss's too: its forward over reverse is an array plan's)
    primals = bind(d.fun, converted(tuple(args), range(len(args))), {})
    n = len(c.params)
    grad_argnums = tuple(i % n for i in d.argnums)
    value_seed, grad_seeds = _seeds(mark, seed)
    along: dict[int, Any] = {}      # argument -> its tangent: the seed of its gradient
    for i, s in zip(grad_argnums, grad_seeds):
        if s is not None:
            s = _like(s, primals[i])
            along[i] = along[i] + s if i in along else s
    wanted = tuple(sorted(set(active)))
    argnums = tuple(sorted(set(along) | set(wanted)))
    check_args(c, primals, argnums)
    tans = [along[i] if i in along else _zero_like(primals[i]) for i in argnums]
    _, grads, grad_dots = array_hvp(c, primals, tans, argnums, wanted, d.backend, value=False,
                                  names=hvp_columns.runtime_names)
    out = {}
    for i, g, g_dot in zip(wanted, grads, grad_dots):
        bar = g_dot if value_seed is None else g_dot + value_seed * g
        out[i] = as_result(bar, primals[i])
    return tuple(out[i] for i in active)


@marks.entry_point("derivative_jvp")
def derivative_jvp(fn, args: tuple, tangents: tuple):
    """The tangent of `fn(*args)` along `tangents` (None: a constant operand), `fn` a grad
    or value_and_grad of an array program: a Parts for a tuple output."""
    mark = marks.derivative_mark(fn)
    tans = tuple(_zero_like(a) if t is None else t for a, t in zip(args, tangents))
    with bound(mark.derivative.fun):    # (a fused loss's too: derivative_plan took it)
        _, dot = _jvp_of_array_derivative(mark, tuple(args), tans, "auto")
    if mark.made_by == "value_and_grad":
        return Parts(dot)
    return Parts(dot) if isinstance(mark.derivative.argnums_spec, (tuple, list)) else dot


def _seeds(mark, seed):
    """(the value's seed or None, one seed per gradient or None) from g's output's adjoint."""
    many = isinstance(mark.derivative.argnums_spec, (tuple, list))
    if mark.made_by == "value_and_grad":
        value_seed, grad_seed = seed[0], seed[1]
        return value_seed, (grad_seed,)
    return None, (tuple(seed) if many else (seed,))


def _like(seed, primal):
    """A seed as an array of its argument's shape (a unit seed 1.0 for a 0-d one)."""
    dtype = dtype_of(primal)
    if isinstance(primal, np.ndarray):
        return np.broadcast_to(np.asarray(seed, dtype=dtype), primal.shape)
    return float(np.asarray(seed).reshape(()))


def _zero_like(a):
    if isinstance(a, np.ndarray):
        return np.zeros(a.shape, dtype=a.dtype if a.dtype.kind == "f" else np.float64)
    return 0.0


def explain_levels(mark: marks.DerivativeMark) -> list[str]:
    """For explain of grad(grad(f)) (and deeper) where f is an array program: the path of
    each level, outermost first (reverse over reverse, not nested duals)."""
    lines = [f"  higher order: {mark.describe()}, a derivative of order {mark.order}, reverse over reverse "
             "(array programs)"]
    m, level = mark, mark.order
    while m is not None:
        nums = m.derivative.argnums_spec if m.derivative is not None else "-"
        if level == mark.order:
            path = "the generated derivative of a program that calls the level below (one 'derivative' statement)"
        elif level > 1:
            path = ("called by the level above; its adjoint needs a derivative of order 3 of the array program "
                    "below, refused where it is differentiated")
        else:
            path = ("forward: its compiled gradient program; its adjoint: the Hessian of the level below times the "
                    "seed, from that program's forward over reverse (hvp sweep)")
        lines.append(f"    level {level}: {m.describe()} (argnums {nums}): {path}")
        m, level = marks.derivative_mark(m.of), level - 1
    lines.append(f"    level 0: {marks.function_name(mark.innermost())}: an array program")
    return lines

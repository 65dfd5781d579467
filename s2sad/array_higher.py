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
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import marks
from .arguments import as_result, as_value, check_args, converted, dtype_of
from .errors import NonScalarLossError, S2SADError, ShapeError
from .frontend import location_of
from .passes.array_jvp import array_hvp, tangent_plans
from .plans import compiled
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
    d = mark.derivative
    c = compiled(d.fun)
    if len(primals) != len(tangents):
        raise ShapeError("jvp needs one tangent per primal", hint="Pass tangents of the same structure.")
    primals = converted(tuple(primals), range(len(primals)))
    tangents = converted(tuple(tangents), range(len(tangents)))
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
    (value, value_dot), grads, grad_dots = array_hvp(c, primals, tans, argnums, grad_argnums, chosen,
                                                     value=mark.made_by != "grad")
    if value is not None and np.size(value) != 1:
        raise NonScalarLossError(
            f"{c.fun.__name__} returns an array of {np.size(value)} elements, not a scalar loss",
            location_of(c.pf.filename, c.program.return_node),
            hint="grad needs a real scalar: reduce the result, e.g. return np.sum(...), or use s2sad.vjp.")
    many = isinstance(d.argnums_spec, (tuple, list))
    g = _shaped(grads, primals, grad_argnums, many)
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


def hvp_source(fun, grad_argnums: tuple[int, ...], argnums: tuple[int, ...] | None = None) -> str:
    """The source of what `jvp(grad(fun, grad_argnums), primals, tangents)` runs for an
    array program, with tangents along `argnums` (default: the differentiated arguments):
    the forward-over-reverse program, then its kernels."""
    c = compiled(fun)
    if c.fused:
        raise S2SADError(f"{getattr(fun, '__name__', fun)} is not planned as an array program",
                         hint="hvp_source shows the forward-over-reverse program of array programs only.")
    argnums = tuple(sorted(set(argnums if argnums is not None else grad_argnums) | set(grad_argnums)))
    return tangent_plans(c).hvp_source(argnums, tuple(grad_argnums))

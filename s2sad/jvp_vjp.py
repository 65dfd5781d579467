"""jvp and vjp of a planned function: forward and reverse products through its plan.

A fused plan runs the runtime's kernel entry points (jvp, sum_dual, store_partials,
apply) and pulls back through the runtime's own kernel pullback
(derivative_runtime.kernel_grads, as kernel_rowsum_vjp does); a plan whose kernel
writes state (a scan) sweeps it with scan_grads, writing the state back once, as a
plain call would; an array program (array_compiled.ArrayCompiled) gives its own vjp,
and its jvp runs its tangent program (passes/array_jvp.py), whatever the result's
shape. Every adjoint is shaped like its primal (arguments.as_result).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import derivative_runtime, runtime
from .arguments import as_result, as_value, check_args, check_cotangent, check_one_tangent_per_primal, check_tangents, converted, dtype_of
from .errors import S2SADError, ShapeError, StatefulError
from .passes.array_jvp import array_jvp
from .passes.kernelpairs import choose_mode
from .plans import Compiled, compiled, read_state, return_location, write_state
from .targets import bind
from .zerograds import finite_tangents, proven_zero, times_seed

def jvp_at(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], backend, layout=None) -> tuple:
    """(fun(*primals), its directional derivative along tangents), `fun` bound and
    what targets.target gave; `layout`: the plan of fun with container arguments as
    their leaves (plans.compiled), primals and tangents given as those leaves."""
    c = compiled(fun, layout)
    primals, tangents = converted(tuple(primals), range(len(primals))), converted(tuple(tangents), range(len(tangents)))
    check_one_tangent_per_primal(fun, primals, tangents)
    check_tangents(c, tangents)
    argnums = tuple(i for i, p in enumerate(primals) if dtype_of(p).kind == "f")
    primals = bind(fun, primals, {}) if len(primals) != len(c.params) else primals
    check_args(c, primals, argnums)
    if not c.fused:
        return _array_jvp(c, primals, tangents, argnums, backend)
    pairs = c.active_pairs(argnums)
    active = tuple(k for k, _, _ in pairs)
    tans = [tangents[i] if index is None else np.asarray(tangents[i])[index] for _, i, index in pairs]
    if c.plan.program.state:
        return _stateful_jvp(c, primals, active, tans, backend)
    zero = _zero_jvp(c, primals, active, tans, backend)
    if zero is not None:
        return zero
    out, out_dot = runtime.jvp(c.kernel, c.kernel_args(primals), active, tans,
                               backend=backend)
    if c.plan.reduction in ("sum", "mean"):
        scale = 1.0 / max(out.size, 1) if c.plan.reduction == "mean" else 1.0
        return float(np.sum(out)) * scale, float(np.sum(out_dot)) * scale
    if out.shape == () and not any(isinstance(p, np.ndarray) for p in primals):
        return out.item(), out_dot.item()
    return out, out_dot


def _zero_jvp(c, primals, active: tuple, tans: list, backend):
    """(value, +0.0) for a summed kernel whose partials are the constant +0 and finite
    tangents (zerograds.finite_tangents says why the tangent is +0): the value from the
    kernel's sum, the number grad and vjp give, with no tangent pass nor the values and
    tangents stored at every element; None otherwise (numpy arrays and numbers only)."""
    if c.plan.reduction not in ("sum", "mean") or not active:
        return None
    kargs = c.kernel_args(primals)
    if not all(type(a) in (float, int) or type(a) is np.ndarray for a in kargs):
        return None
    if not proven_zero(c.kernel, active, "jvp"):
        return None
    if not finite_tangents(tans, [kargs[c.kernel.params.index(a)] for a in active]):
        return None
    value, _ = runtime.sum_dual(c.kernel, kargs, (), backend=backend, with_grads=False)
    scale = 1.0 / max(runtime.broadcast_size(*kargs), 1) if c.plan.reduction == "mean" else 1.0
    return float(value) * scale, 0.0


def pullback_of(pullback: Callable, given: int) -> Callable:
    """The pullback vjp returns: one adjoint per primal given (none for defaults)."""
    def vjp_pullback(out_bar):
        return pullback(out_bar)[:given]
    return vjp_pullback


def vjp_at(fun: Callable, primals, backend, mode: str, layout=None):
    """(fun(*primals), pullback), `fun` bound and what targets.target gave; the pullback
    gives one adjoint per parameter (defaults bound); `layout` as for jvp_at."""
    c = compiled(fun, layout)
    float_nums = tuple(i for i in range(len(primals)) if dtype_of(primals[i]).kind == "f")
    primals = bind(fun, primals, {}) if len(primals) != len(c.params) else tuple(primals)
    check_args(c, primals, float_nums)
    out, pullback = _vjp_at(c, primals, float_nums, backend, mode)
    shape = np.shape(out)

    def checked(out_bar):
        check_cotangent(c, shape, out_bar)
        return pullback(out_bar)
    return out, checked


def _vjp_at(c, primals, float_nums, backend, mode: str):
    if not c.fused:
        out, pull = c.vjp(primals, float_nums, mode, backend)
        return as_value(out) if np.ndim(out) == 0 else out, \
            lambda out_bar: _array_per_primal(primals, float_nums, pull(out_bar))
    pairs = c.active_pairs(float_nums)
    active = tuple(k for k, _, _ in pairs)
    kargs = c.kernel_args(primals)
    if c.plan.program.state:
        return _stateful_vjp(c, primals, pairs, active, kargs, backend)
    if c.plan.reduction in ("sum", "mean"):
        # partials proven the constant +0 (zerograds): the value alone now, the pullback's
        # gradients made as zeros when asked, signed as g * ob (zerograds.times_seed)
        zero = bool(active) and proven_zero(c.kernel, active, "pullback")
        value, grads = runtime.sum_dual(c.kernel, kargs, () if zero else active, backend=backend,
                                        with_grads=not zero)
        n = runtime.broadcast_size(*kargs)
        scale = 1.0 / n if c.plan.reduction == "mean" else 1.0
        out = value * scale

        def pullback(out_bar):
            ob = float(np.asarray(out_bar)) * scale
            if zero:    # (seed 1: +0 everywhere, then the product's sign; a scalar param's sum seeded
                # by ob would stay +0 where g * ob is -0)
                return _per_primal(c, primals, pairs, times_seed(runtime.sum_grads(c.kernel, kargs, active,
                                                                                   backend=backend), ob))
            return _per_primal(c, primals, pairs, [g * ob for g in grads])
    else:
        how, _ = choose_mode(c.kernel, mode)
        if how == "store" and active:
            out, partials = runtime.store_partials(c.kernel, kargs, active, backend=backend)
        else:
            out, partials = runtime.apply(c.kernel, kargs, backend=backend), None

        def pullback(out_bar):   # the runtime's kernel pullback, as generated adjoints call it
            ob = np.asarray(out_bar) if partials is not None else out_bar
            return _per_primal(c, primals, pairs, derivative_runtime.kernel_grads(c.kernel, kargs, active, ob,
                                                                                  partials, backend))
    return out, pullback


def _array_per_primal(primals, float_nums, grads) -> tuple:
    by = dict(zip(float_nums, grads))
    return tuple(as_result(by[i], p) if i in by else as_result(np.zeros(np.shape(p)), p)
                 for i, p in enumerate(primals))


def _array_jvp(c, primals, tangents, argnums, backend):
    """jvp of an array program, any result shape: its tangent program (passes/array_jvp.py).
    An argument whose tangent is exactly zero is not carried (it contributes nothing)."""
    tans = []
    argnums = tuple(i for i in argnums if np.shape(tangents[i]) != np.shape(primals[i]) or np.any(tangents[i]))
    for i in argnums:
        t, p = tangents[i], primals[i]
        if np.shape(t) != np.shape(p):
            raise ShapeError(f"the tangent of argument {i} of {c.fun.__name__} has shape {np.shape(t)}, its "
                             f"primal {np.shape(p)}", c.pf.location(),
                             hint="Give each tangent its primal's shape.")
        tans.append(np.asarray(t, dtype=dtype_of(p)) if isinstance(p, np.ndarray) else t)
    value, dot = array_jvp(c, primals, tans, argnums, backend)
    if np.ndim(value) == 0:
        return as_value(value), as_value(dot)
    return value, as_result(dot, value) if isinstance(value, np.ndarray) else dot


def _stateful_jvp(c: Compiled, primals, active, tans, backend):
    """A scan's jvp for a scalar loss: the reverse sweep's gradients dotted with the tangents."""
    if c.plan.reduction not in ("sum", "mean"):
        raise StatefulError(f"jvp of {c.fun.__name__}, which returns an array computed by a function that "
                            "writes state, is not supported", return_location(c),
                            hint="Reduce it to a scalar (np.sum) or use s2sad.vjp.")
    kargs = c.kernel_args(primals)
    scale = 1.0 / runtime.broadcast_size(*kargs) if c.plan.reduction == "mean" else 1.0
    value, grads, final = runtime.scan_grads(c.kernel, kargs, active, read_state(c), seed=scale, backend=backend)
    write_state(c, final)
    return value * scale, float(sum((g * t).sum() for g, t in zip(grads, tans)))


def _stateful_vjp(c: Compiled, primals, pairs, active, kargs, backend):
    """A scan's vjp: the primal runs (and writes its state) once; the pullback sweeps
    again from the saved initial state without writing it."""
    initial = read_state(c)
    if c.plan.reduction in ("sum", "mean"):
        scale = 1.0 / runtime.broadcast_size(*kargs) if c.plan.reduction == "mean" else 1.0
        value, grads, final = runtime.scan_grads(c.kernel, kargs, active, initial, seed=1.0, backend=backend)
        write_state(c, final)

        def pullback(out_bar):
            ob = float(np.asarray(out_bar)) * scale
            zeros = zero_products(grads, ob) if active and proven_zero(c.kernel, active, "pullback") else None
            return _per_primal(c, primals, pairs, [g * ob for g in grads] if zeros is None else zeros)
        return value * scale, pullback
    out, final = runtime.scan_apply(c.kernel, kargs, initial, backend=backend)
    write_state(c, final)

    def pullback(out_bar):
        _, grads, _ = runtime.scan_grads(c.kernel, kargs, active, initial, seed=np.asarray(out_bar),
                                         value="none", backend=backend)
        return _per_primal(c, primals, pairs, grads)
    return out, pullback


def _per_primal(c: Compiled, primals, pairs, grads) -> tuple:
    nums = tuple(range(len(primals)))
    return tuple(as_result(g, p) for g, p in zip(c.per_argument(pairs, grads, primals, nums), primals))



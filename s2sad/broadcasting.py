"""s2sad.broadcast: a scalar function applied elementwise with numpy broadcasting,
compiled (moved out of api.py, which had grown past its size limit; api re-exports it).

A numpy ufunc is numpy's to apply; any other callable (a def, a lambda, a math
function, a builtin such as max) is planned once per code (BROADCAST_PLANS, guarded by
the plan's assumptions) as one kernel; a function that indexes its parameter takes
rows (passes/rowelems.py); a function that writes state runs as a scan, the state
written back once. On dask arrays the kernel runs lazily on each block.
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import dask_grad, marks, mempool, rules, runtime
from .deep import deeply
from .errors import NonDifferentiableInputError, S2SADError
from .frontend import Assumptions, bound, parse_function, recording
from .plancache import PlanCache
from .plans import serves
from .passes.normalize import Normalizer, normalize
from .passes.rowcolumns import row_arguments
from .passes.rowelems import row_parameters, row_program
from .runtime import Kernel
from .targets import arity, bind, entry_function, target


BROADCAST_PLANS = PlanCache()   # code -> BroadcastPlan


@dataclass
class BroadcastPlan:
    kernel: Kernel
    assumptions: Any
    rows: Any = None    # per parameter, its rowelems.RowUse (None: a number); None: no rows


@marks.entry_point("broadcast")
@deeply
@mempool.pooled
def broadcast(f: Callable, *args, backend: str = "auto", signature: str | None = None):
    """f applied elementwise with numpy broadcasting (scalars broadcast), compiled;
    parameters not given take their defaults. A function that indexes its parameter
    (`p[0] + p[1]`) takes the rows of a 2-D array (passes/rowelems.py); `signature`
    (numpy's gufunc notation, "(3),()->()") says so and is checked."""
    if not isinstance(f, np.ufunc):     # (numpy applies a ufunc itself, complex numbers included)
        _check_real(f, args)
    if dask_grad.has_dask(args):   # lazy: the kernel runs on each block when computed
        if signature is not None or _takes_rows(f):
            raise S2SADError("s2sad.broadcast of a function of rows is not supported on dask arrays",
                             hint="Compute it on numpy arrays, or pass the columns: broadcast(f, X[:, 0], X[:, 1]) "
                                  "with f taking numbers.")
        return dask_grad.broadcast(broadcast, f, args, backend)
    plan = BROADCAST_PLANS.find(f, serves) if type(f) is types.FunctionType else None
    fun = f
    if plan is None:
        prim = rules.python_callables().get(f) if _hashable(f) else None
        if prim is not None and isinstance(f, np.ufunc):
            return f(*args)  # a numpy ufunc: numpy already applies it (math.sin takes numbers: compiled below)
        fun = target(f, "broadcast")
        with bound(fun):
            plan = BROADCAST_PLANS.get(fun, serves, lambda: _broadcast_plan(fun))
    with bound(fun):      # the plan reads fun's cells and globals
        if plan.rows is not None or signature is not None:
            if len(args) != arity(fun):
                raise S2SADError(f"s2sad.broadcast: {getattr(fun, '__name__', fun)} takes {arity(fun)} "
                                 f"argument(s), {len(args)} given", hint="Pass one array or number per parameter.")
            args = row_arguments(args, plan.rows, signature, getattr(fun, "__name__", "the function"),
                                 parse_function(fun).location())
        return _broadcast(plan.kernel, fun, args, backend)


def _check_real(f: Callable, args) -> None:
    """Refuse, at f's def, an argument whose numbers the kernel would change: complex (the
    imaginary part dropped), long double (rounded to float64), or no numbers at all (None,
    a string, an object: read as NaN or parsed, where numpy's arithmetic refuses them)."""
    for k, a in enumerate(args):
        if type(a) is float or type(a) is int:
            continue
        dtype = getattr(a, "dtype", None)
        if dtype is None:
            try:
                dtype = np.asarray(a).dtype
            except (TypeError, ValueError):     # ragged: the kernel's own refusal
                continue
        if not isinstance(dtype, np.dtype):
            continue
        if dtype.kind not in "biufc":
            why = "it holds " + ("None" if a is None else f"dtype {dtype}") + ", not numbers"
        elif dtype.kind == "c":
            why = "its kernel computes with real numbers and would drop the imaginary part"
        elif dtype.kind == "f" and dtype.itemsize > 8:
            why = "its kernel computes in float64 or float32 and would round the extra precision away"
        else:
            continue
        raise NonDifferentiableInputError(
            f"s2sad.broadcast of {marks.function_name(f)}: argument {k} ({type(a).__name__}, dtype {dtype}): {why}",
            marks.location_of_function(f),
            hint="Pass float64 or float32 values (np.asarray(x, dtype=np.float64)); for complex numbers apply the "
                 "function to the real and imaginary parts as two real arguments.")


def _takes_rows(f) -> bool:
    return type(f) is types.FunctionType and row_parameters(entry_function(parse_function(f))) is not None


def _broadcast_plan(f: Callable) -> BroadcastPlan:
    pf = entry_function(parse_function(f))
    with recording() as log:
        rows = row_parameters(pf) if rules.user_rule(pf.fn) is None else None
        program = normalize(pf) if rows is None else row_program(pf, Normalizer())
    return BroadcastPlan(Kernel(program, program.entry), Assumptions(log, PlanCache.key_of(f)), rows)


def _broadcast(kernel: Kernel, fun: Callable, args, backend: str):
    program = kernel.program
    n_args = len(program.params) - len(program.captures) - len(program.state)
    if len(args) < n_args and arity(fun) == n_args:    # defaults to fill in
        try:
            args = bind(fun, args, {})
        except TypeError:
            pass
    if len(args) != n_args:
        raise S2SADError(f"s2sad.broadcast: {getattr(fun, '__name__', fun)} takes {n_args} argument(s), "
                         f"{len(args)} given", hint="Pass one array or number per parameter.")
    args = list(args) + [c.read() for c in program.captures]  # free data, read now
    state = program.state
    if state:  # a scan: elements in order, the state written back once
        out, final = runtime.scan_apply(kernel, args, [float(c.get()) for c in state], backend=backend)
        for cell, v in zip(state, final):
            cell.set(v)
        return out
    return runtime.apply(kernel, args, backend=backend)


def _hashable(f) -> bool:
    try:
        hash(f)
        return True
    except TypeError:
        return False

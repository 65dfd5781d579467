"""The user's entry points: grad, value_and_grad, jvp, vjp, broadcast, differentiate,
explain, source, defrule, defvjp.

What they stand on, one job a module: plans.py plans a function once and caches the
plan by its code (plans.compiled); derivative.py generates and runs the derivative
grad and value_and_grad return (Derivative, its hot path); jvp_vjp.py takes forward
and reverse products through a plan; arguments.py checks the user's arguments and
shapes the gradients. The derivative that runs is generated Python source
(`source(g)` prints it) calling the runtime's kernel entry points.
"""
from __future__ import annotations

import functools
import inspect
import types
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from . import marks, nested, rules, runtime
from .arguments import argnums_tuple, converted
from .array_prims import register_vjp
from .deep import deeply
from .derivative import Derivative
from .errors import S2SADError
from .frontend import Assumptions, bound, parse_function, recording
from .jvp_vjp import jvp_at, pullback_of, vjp_at
from .plancache import PLANNING, PlanCache
from .plans import PLANS, compiled, is_array, serves
from .passes.normalize import normalize
from .runtime import Kernel
from .targets import arity, bind, entry_function, target

def calls_bound(api: Callable) -> Callable:
    """`api(fun, ...)` run with fun bound (frontend.bound): the plan reads fun's values."""
    @functools.wraps(api)
    def run(fun, *args, **kwargs):
        try:
            planned = target(fun, api.__name__)   # what api plans (and binds)
        except S2SADError:
            planned = fun       # api raises it
        with bound(planned):
            return api(fun, *args, **kwargs)
    return run


@marks.entry_point("value_and_grad")
def value_and_grad(fun: Callable, argnums=0, *, backend: str = "auto", mode: str = "auto") -> Callable:
    """`mode`: how elementwise sites that are not summed get their pullback: "store"
    their partials in the forward pass, "recompute" them in the reverse pass, or "auto"
    (s2sad.explain says which); both give identical results."""
    _check_mode(mode)
    d = Derivative(target(fun, "value_and_grad"), argnums, backend, "value_and_grad", mode)

    def value_and_grad_fun(*args, **kwargs):
        if kwargs:
            args = d.bind(args, kwargs)
        r = d.hot(*args)
        return d(*args) if r is NotImplemented else r

    _named_like(value_and_grad_fun, fun)
    value_and_grad_fun.__s2sad__ = d
    return marks.mark_derivative(value_and_grad_fun, "value_and_grad", fun, d)


@marks.entry_point("grad")
def grad(fun: Callable, argnums=0, *, backend: str = "auto", mode: str = "auto") -> Callable:
    """The gradient of a scalar loss; `mode` as for value_and_grad."""
    _check_mode(mode)
    d = Derivative(target(fun, "grad"), argnums, backend, "grad", mode)

    def grad_fun(*args, **kwargs):
        if kwargs:     # (keywords to positions; a positional call pays for nothing more)
            args = d.bind(args, kwargs)
        r = d.hot(*args)
        return d(*args)[1] if r is NotImplemented else r

    _named_like(grad_fun, fun)
    grad_fun.__s2sad__ = d
    return marks.mark_derivative(grad_fun, "grad", fun, d)


def _named_like(wrapper: Callable, fun: Callable) -> None:
    """functools.wraps(fun)(wrapper), for a plain function in a third of its time (a
    training loop that makes a new grad object per step pays for it)."""
    if type(fun) is not types.FunctionType:
        functools.update_wrapper(wrapper, fun)
        return
    wrapper.__module__, wrapper.__name__, wrapper.__qualname__ = fun.__module__, fun.__name__, fun.__qualname__
    wrapper.__doc__, wrapper.__annotations__ = fun.__doc__, fun.__annotations__
    if fun.__dict__:
        wrapper.__dict__.update(fun.__dict__)
    wrapper.__wrapped__ = fun


def _check_mode(mode: str) -> None:
    if mode not in ("auto", "store", "recompute"):
        raise S2SADError(f"unknown mode {mode!r}", hint="Use mode='auto', 'store' or 'recompute'.")


@deeply
@calls_bound
def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], *, backend: str = "auto"):
    """(fun(*primals), its directional derivative along tangents); parameters not given
    take their defaults (and no tangent)."""
    return jvp_at(target(fun, "jvp"), primals, tangents, backend)


@deeply
@calls_bound
def vjp(fun: Callable, *primals, backend: str = "auto", mode: str = "auto"):
    """(fun(*primals), pullback) with pullback(out_bar) -> one adjoint per primal.
    `mode`: "store" the partials of elementwise sites in the forward pass, "recompute"
    them in the pullback, or "auto"; both give identical results."""
    _check_mode(mode)
    fun = target(fun, "vjp")
    primals = converted(primals, range(len(primals)))
    out, pullback = vjp_at(fun, primals, backend, mode)
    # a pullback may plan and compile kernels too (deeply)
    return out, marks.mark_derivative(pullback_of(deeply(pullback), len(primals)), "vjp", fun)



# ---------------------------------------------------------------- broadcast

_BROADCAST = PlanCache()   # code -> BroadcastPlan


@dataclass
class BroadcastPlan:
    kernel: Kernel
    assumptions: Any


@marks.entry_point("broadcast")
@deeply
def broadcast(f: Callable, *args, backend: str = "auto"):
    """f applied elementwise with numpy broadcasting (scalars broadcast), compiled;
    parameters not given take their defaults."""
    plan = _BROADCAST.find(f, serves) if type(f) is types.FunctionType else None
    fun = f
    if plan is None:
        prim = rules.python_callables().get(f) if _hashable(f) else None
        if prim is not None:
            return f(*args)  # a numpy/math primitive: numpy already applies it
        fun = target(f, "broadcast")
        with bound(fun):
            plan = _BROADCAST.get(fun, serves, lambda: _broadcast_plan(fun))
    with bound(fun):      # the plan reads fun's cells and globals
        return _broadcast(plan.kernel, fun, args, backend)


def _broadcast_plan(f: Callable) -> BroadcastPlan:
    pf = entry_function(parse_function(f))
    with recording() as log:
        program = normalize(pf)
    return BroadcastPlan(Kernel(program, program.entry), Assumptions(log, PlanCache.key_of(f)))


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


# ---------------------------------------------------------------- explain / source

@dataclass
class Explanation:
    function: str
    lines: list[str]

    def __str__(self) -> str:
        return "\n".join(self.lines) + "\n"

    __repr__ = __str__


@deeply
def explain(fun: Callable, argnums=0, *, mode: str = "auto") -> Explanation:
    """Every elementwise site of `fun`, the path chosen for it, and why; for an array
    program also each primitive's rule, what was fused into each kernel, and whether
    its partials are stored or recomputed (`mode`, as for grad)."""
    mark = marks.derivative_mark(fun)
    if mark is not None and mark.derivative is not None:   # explain(grad(f)): f's plan, as that grad uses it
        d = mark.derivative
        fun, argnums, mode = d.fun, d.argnums_spec, d.mode
    else:
        fun = target(fun, "explain")
    with bound(fun):
        explanation = _explain(fun, argnums, mode)
    if mark is not None and mark.order > 1:     # explain(grad(grad(f))): the path of each level
        explanation.lines += nested.explain_levels(mark)
    return explanation


def _explain(fun: Callable, argnums, mode: str) -> Explanation:
    with PLANNING:
        return _explain_planned(fun, argnums, mode)


def _explain_planned(fun: Callable, argnums, mode: str) -> Explanation:
    c = compiled(fun)
    pf = parse_function(c.fun)
    lines = [f"s2sad.explain: {c.fun.__qualname__} ({pf.location()})"]
    if is_array(c):
        nums = tuple(i % len(c.params) for i in argnums_tuple(argnums))
        return Explanation(c.fun.__qualname__, lines + c.explain(nums, mode))
    for s in c.plan.sites:
        lines.append(f"  {s.location}: {s.applied} -> {s.path}: {s.reason}")
        if s.source_line:
            lines.append(f"      {s.source_line}")
    active = c.active_for(tuple(i % len(c.params) for i in argnums_tuple(argnums)))
    red = {"sum": "summed in the kernel", "mean": "averaged in the kernel",
           "none": "a scalar function of scalars"}[c.plan.reduction]
    lines.append(f"  fused: {len(c.plan.sites)} site(s) into one kernel {c.kernel.name}"
                 f"({', '.join(c.kernel.params)}), {red}; "
                 f"dual with {len(active)} partial(s) per element ({', '.join(active) or 'none'})")
    return Explanation(c.fun.__qualname__, lines)


def source(g: Callable) -> str:
    """The generated derivative source of a function made by grad/value_and_grad/differentiate."""
    d = getattr(g, "__s2sad__", None)
    if d is None:
        raise S2SADError(f"{getattr(g, '__name__', g)!r} was not made by s2sad.grad, value_and_grad or differentiate",
                         hint="Pass the function that s2sad.grad(f) returned.")
    return d.source()


# ---------------------------------------------------------------- differentiate

class Differentiable(marks.HoldsUserFunction):
    """A function decorated with @s2sad.differentiate: callable as before, plus
    derivatives. It is the user's function (marks.HoldsUserFunction): passed to grad or
    called inside a differentiated function, its function is what is differentiated."""

    def __init__(self, fun: Callable, argnums=0, backend: str = "auto"):
        planned = target(fun, "differentiate")
        functools.update_wrapper(self, fun)
        self.__wrapped_fun__ = planned
        self._call = fun
        self.argnums = argnums
        self.backend = backend
        self._vg = Derivative(planned, argnums, backend, "value_and_grad")
        self._g = Derivative(planned, argnums, backend, "grad")
        self.__s2sad__ = self._vg

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def grad(self, *args, **kwargs):
        if kwargs:
            args = self._g.bind(args, kwargs)
        r = self._g.hot(*args)
        return self._g(*args)[1] if r is NotImplemented else r

    def value_and_grad(self, *args, **kwargs):
        if kwargs:
            args = self._vg.bind(args, kwargs)
        r = self._vg.hot(*args)
        return self._vg(*args) if r is NotImplemented else r

    def explain(self) -> Explanation:
        return explain(self.__wrapped_fun__, self.argnums)

    def source(self) -> str:
        return self._vg.source()


def differentiate(fun: Callable | None = None, *, argnums=0, backend: str = "auto"):
    if fun is None:
        return lambda f: Differentiable(f, argnums, backend)
    return Differentiable(fun, argnums, backend)


# ---------------------------------------------------------------- user rules

def defvjp(fn: Callable, *vjps: Callable) -> Callable:
    """Register the reverse-mode rule of an array function (np.sort, np.cumsum, one of
    your own...) for array programs: `vjps[i](g, out, *args)` returns the adjoint of its
    i-th argument (that argument's shape) given the adjoint `g` of its output `out`.
    Returns `fn`.

        s2sad.defvjp(np.cumsum, lambda g, out, x: np.cumsum(g[::-1])[::-1])
    """
    if not callable(fn) or not all(callable(v) for v in vjps) or not vjps:
        raise S2SADError(f"defvjp({getattr(fn, '__name__', fn)!r}, ...) needs a function and one vjp function "
                         "per argument", hint="Pass vjp_i(g, out, *args) for each argument i.")
    register_vjp(fn, vjps)
    PLANS.clear()
    return fn


def defrule(fn: Callable, *partials: str | None, impl: Callable | None = None) -> Callable:
    """Register the derivative of a scalar function of your own; it wins everywhere,
    inside broadcasts and compiled kernels too.

    `partials[i]` is d out / d (i-th parameter) as a Python expression in the
    parameters and `out` (the function's value), e.g. for `def softplus(z)`:
    `s2sad.defrule(softplus, "1.0 / (1.0 + math.exp(-z))")`; None for a zero partial.
    `impl` is a Python function with source that computes `fn`: needed when `fn` has
    none (a C function), since kernels compile the value from source. Returns `fn`.
    """

    impl = impl or fn
    try:
        parse_function(impl)
    except S2SADError as e:
        raise type(e)(f"defrule needs the source of the function that computes {getattr(fn, '__name__', fn)!r}: {e.message}",
                      e.location, hint="Pass impl=<a Python function with the same value>.") from None
    params = tuple(inspect.signature(impl).parameters)
    if len(partials) != len(params):
        raise S2SADError(f"defrule for {getattr(fn, '__name__', fn)!r}: {len(params)} parameter(s) "
                         f"({', '.join(params)}) but {len(partials)} partial(s)",
                         hint="Give one partial per parameter (None for zero).")
    for p in partials:
        if p is not None:
            try:
                compile(p, "<partial>", "eval")
            except SyntaxError as e:
                raise S2SADError(f"defrule: the partial {p!r} is not a Python expression ({e.msg})",
                                 hint="Write it as an expression in the parameters and `out`.") from None
    rules.USER_RULES[fn] = rules.UserRule(fn, impl, params, tuple(partials))
    PLANS.clear()
    _BROADCAST.clear()
    return fn

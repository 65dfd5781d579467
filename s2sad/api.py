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
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from . import dask_grad, marks, mempool, nested, rebind, rules, tree_higher
from .arguments import argnums_tuple, check_argnums_spec, check_cotangent_of, check_one_tangent_per_primal, converted, primals_at, tangent_like, value_like_arguments, pullback_shapes_located, shapes_located
from .callables import bound_call
from . import array_prims
from .array_prims import register_vjp
from .broadcasting import BROADCAST_PLANS, broadcast    # noqa: F401 (s2sad.broadcast)
from .deep import deeply
from .first_order import first_order_checked
from .small_grad import path_lines
from .array_hot import warm_lines
from .derivative import Derivative, decline
from .errors import S2SADError
from .frontend import bound, classify, parse_function
from . import array_higher
from .array_higher import is_array_derivative, jvp_of_derivative
from .jvp_vjp import jvp_at, pullback_of, vjp_at
from .plancache import PLANNING
from .plans import PLANS, compiled
from .targets import bind, positional_count, target
from .treecalls import flattening, has_nodes, jvp_tree, needs_trees, tree_calls, tree_source, vjp_tree

def calls_bound(api: Callable) -> Callable:
    """`api(fun, ...)` run with fun bound (frontend.bound): the plan reads fun's values."""
    @functools.wraps(api)
    def run(fun, *args, **kwargs):
        call = bound_call(fun) or rebind.as_call(fun)
        try:
            planned = target(fun if call is None else call.fn, api.__name__)   # what api plans (and binds)
        except S2SADError:
            planned = fun       # api raises it
        with bound(planned):
            return api(fun, *args, **kwargs)
    return run


def _prepared(fun: Callable, entry: str, argnums):
    """(the function planned, argnums among its parameters, the BoundCall or None): a
    bound method, a callable object or a functools.partial is its function with the
    bound arguments first (data), argnums counted after them."""
    call = bound_call(fun) or rebind.as_call(fun)    # (a grad of a bound method: its function's grad)
    if call is None:
        return target(fun, entry), argnums, None
    k = len(call.args)
    if isinstance(argnums, (tuple, list)):
        argnums = tuple(i + k if i >= 0 else i for i in argnums)
    elif isinstance(argnums, int):
        argnums = argnums + k if argnums >= 0 else argnums
    return target(call.fn, entry), argnums, call


def current(call, argnums) -> None:
    """A bound call as Python would make it now (checked at each call of a derivative
    made of it): the object's class still calls the function differentiated, and argnums
    (counted among the function's parameters) selects none that the partial's keywords,
    read now, bind."""
    call.check_current()
    if call.kwargs:
        rebind.check_not_bound(call, argnums)


def _differentiated(fun: Callable, argnums, backend: str, what: str, mode: str, has_aux: bool) -> Callable:
    """The function grad or value_and_grad returns: the plain path (positional arrays and
    floats, the hot path first), or, for containers, methods, partials and has_aux,
    treecalls.TreeCalls."""
    _check_mode(mode)
    check_argnums_spec(argnums, marks.location_of_function(fun))
    planned, argnums, call = _prepared(fun, what, argnums)
    if call is not None:
        rebind.check_not_bound(call, argnums)
    d = Derivative(planned, argnums, backend, what, mode)
    if call is None and not has_aux:
        grad_only = what == "grad"
        npos = positional_count(planned)

        def differentiated(*args, **kwargs):
            if kwargs or len(args) > npos:   # (keywords to positions, or Python's refusal of a
                # keyword-only parameter given by position; a positional call pays for nothing more)
                args = d.bind(args, kwargs)
            token = mempool.enter(args)     # the call's arrays from s2sad's pool (mempool)
            try:
                r = d.hot(*args)
                if r is NotImplemented:
                    if dask_grad.has_dask(args):
                        r = dask_value_and_grad(d, args, want_value=not grad_only)
                    else:
                        r = tree_calls(d)(args) if has_nodes(args) else d(*args)
                    if grad_only:
                        return r[1]
                elif grad_only:
                    return r
                # the value in the loss's dtype (np.float32 for a float32 loss), whatever path gave it
                return (value_like_arguments(r[0], args), r[1]) if type(r[0]) is float else r
            finally:
                mempool.leave(token)
    else:
        tc = mempool.pooled(tree_calls(d, has_aux))

        def differentiated(*args, **kwargs):
            if call is not None:
                current(call, argnums)
                args, kwargs = call.args + args, {**call.kwargs, **kwargs} if call.kwargs else kwargs
            args = d.bind(args, kwargs)
            value, g = tc(args)
            if what == "grad":
                return (g, value[1]) if has_aux else g
            if has_aux:
                return (value_like_arguments(value[0], args), value[1]), g
            return value_like_arguments(value, args), g
    _named_like(differentiated, fun)
    differentiated.__s2sad__ = d
    if call is not None and not has_aux:    # differentiated again: the same derivative of call.fn (rebind)
        rebind.remember(differentiated, call, lambda: _differentiated(call.fn, argnums, backend, what, mode, False))
    return marks.mark_derivative(differentiated, what, fun, d)


@marks.entry_point("value_and_grad")
def value_and_grad(fun: Callable, argnums=0, *, has_aux: bool = False, backend: str = "auto",
                   mode: str = "auto") -> Callable:
    """(fun's value, its gradient) for the arguments `argnums` (an int, or a tuple for a
    tuple of gradients), each in its argument's structure (dicts, lists, tuples,
    namedtuples, dataclasses of arrays and floats). has_aux: fun returns (loss, aux);
    the value is then (loss, aux). `mode`: how elementwise sites that are not summed get
    their pullback: "store" their partials in the forward pass, "recompute" them in the
    reverse pass, or "auto" (s2sad.explain says which); both give identical results."""
    return _differentiated(fun, argnums, backend, "value_and_grad", mode, has_aux)


@marks.entry_point("grad")
def grad(fun: Callable, argnums=0, *, has_aux: bool = False, backend: str = "auto", mode: str = "auto") -> Callable:
    """The gradient of a scalar loss, in the structure of its argument; with has_aux
    (fun returns (loss, aux)), (gradient, aux). `mode` as for value_and_grad."""
    return _differentiated(fun, argnums, backend, "grad", mode, has_aux)


def dask_value_and_grad(d: Derivative, args, want_value: bool):
    """(value, grads) over dask arrays (dask_grad), shaped as a numpy call's."""
    with bound(d.fun):
        value, grads, d.dask_report = dask_grad.value_and_grad(d.fun, args, d.argnums, backend=d.backend,
                                                               mode=d.mode, want_value=want_value)
    return value, (grads if isinstance(d.argnums_spec, (tuple, list)) else grads[0])


def _named_like(wrapper: Callable, fun: Callable) -> None:
    """functools.wraps(fun)(wrapper), for a plain function in a third of its time (a
    training loop that makes a new grad object per step pays for it)."""
    if type(fun) is not types.FunctionType:
        try:
            functools.update_wrapper(wrapper, fun)
        except (AttributeError, TypeError):     # a callable object without a __name__...
            pass
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
@shapes_located
@mempool.pooled
@calls_bound
def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], *, backend: str = "auto"):
    """(fun(*primals), its directional derivative along tangents); primals, tangents
    and the result may be containers (tangents in the primals' structure); parameters
    not given take their defaults (and no tangent)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):   # (JAX's rule too)
        raise S2SADError(f"jvp takes its primals and its tangents as tuples or lists, not a "
                         f"{type(primals if not isinstance(primals, (tuple, list)) else tangents).__name__}",
                         marks.location_of_function(fun), hint="Write jvp(f, (x,), (v,)) for one argument.")
    unbound = rebind.unbound(fun)
    if unbound is not None:     # a grad of a bound method: its function's grad, the bound arguments first
        made, call = unbound
        check_one_tangent_per_primal(fun, primals, tangents)
        full = rebind.full_primals(call, primals)
        return jvp(made, full, rebind.full_tangents(call, full, tangents), backend=backend)
    mark = marks.derivative_mark(fun)
    if mark is not None and mark.derivative is not None:
        first_order_checked(mark, tuple(primals))
    if mark is not None and mark.made_by in ("grad", "value_and_grad") and mark.derivative is not None \
            and tree_higher.any_container(primals, mark.derivative.argnums_spec) and not tree_higher.with_aux(mark):
        return tree_higher.jvp_of_grad_tree(mark.derivative.fun, tuple(primals), tangents,    # (containers)
                                            mark.derivative.argnums_spec, mark.made_by == "value_and_grad",
                                            backend if backend != "auto" else mark.derivative.backend)
    if mark is not None and is_array_derivative(mark):   # grad of an array program: forward over reverse
        return _tangent_in_out_dtype(jvp_of_derivative(mark, primals, tangents, backend))
    planned, _, call = _prepared(fun, "jvp", 0)
    primals, tangents = tuple(primals), tuple(tangents)
    if call is not None or needs_trees(planned, primals, False):
        check_one_tangent_per_primal(planned, primals, tangents)
        if call is not None:
            primals, tangents = call.args + primals, (None,) * len(call.args) + tangents
        primals = bind(planned, converted(primals, range(len(primals))), call.kwargs if call else {})
        return _scalar_pair_like(jvp_tree(planned, primals, tangents, backend), primals)
    r = _scalar_pair_like(jvp_at(planned, primals, tangents, backend), primals)
    if mark is not None and mark.made_by == "grad" and mark.derivative is not None:
        # (a grad's result has its arguments' dtypes, '>f4' too: so has its jvp's output and tangent)
        like = primals_at(primals, mark.derivative.argnums_spec)
        r = tangent_like(like, r[0]), tangent_like(like, r[1])
    return _tangent_in_out_dtype(r)


def _tangent_in_out_dtype(r: tuple) -> tuple:
    return r[0], tangent_like(r[0], r[1])


def _scalar_pair_like(r: tuple, primals) -> tuple:
    """jvp's (output, tangent) of a scalar function in its dtype, as value_and_grad's value
    is (value_like_arguments: np.float32 for float32 arguments, else Python floats)."""
    if type(r[0]) is float and type(r[1]) is float:
        return value_like_arguments(r[0], primals), value_like_arguments(r[1], primals)
    return r


@deeply
@shapes_located
@mempool.pooled
@calls_bound
def vjp(fun: Callable, *primals, has_aux: bool = False, backend: str = "auto", mode: str = "auto"):
    """(fun(*primals), pullback) with pullback(out_bar) -> one adjoint per primal, each in
    its primal's structure, out_bar in the output's; with has_aux (fun returns (out,
    aux)), (out, pullback, aux). `mode`: "store" the partials of elementwise sites in
    the forward pass, "recompute" them in the pullback, or "auto"; both give identical
    results."""
    _check_mode(mode)
    if rebind.unbound(fun) is not None:
        return _vjp_unbound(fun, primals, has_aux, backend, mode)
    mark = marks.derivative_mark(fun)
    if mark is not None and mark.derivative is not None and not has_aux:
        first_order_checked(mark, primals)
    planned, _, call = _prepared(fun, "vjp", 0)
    if dask_grad.has_dask(primals) and call is None and not has_aux:
        out, pullback = _dask_vjp(planned, primals, backend, mode)
        return out, marks.mark_derivative(pullback, "vjp", planned)
    primals = converted(primals, range(len(primals)))
    if call is not None or needs_trees(planned, primals, has_aux):
        k = len(call.args) if call is not None else 0
        given = k + len(primals)
        full = bind(planned, (call.args if call else ()) + primals, call.kwargs if call else {})
        res = vjp_tree(planned, full, given, backend, mode, has_aux)
        pull = deeply(res[1])
        pullback = (lambda out_bar: pull(out_bar)[k:]) if k else pull
        res = (res[0], marks.mark_derivative(_pullback_fn(pullback), "vjp", planned)) + res[2:]
        return res
    out, pullback = vjp_at(planned, primals, backend, mode)
    # a pullback may plan and compile kernels too (deeply)
    pullback = pullback_shapes_located(fun, pullback)
    return out, marks.mark_derivative(pullback_of(deeply(mempool.pooled(pullback)), len(primals)), "vjp", planned)


def _vjp_unbound(fun: Callable, primals: tuple, has_aux: bool, backend: str, mode: str):
    """vjp of a grad of a bound method: its function's grad, the bound arguments first
    (rebind); the pullback gives the adjoints of the user's primals only."""
    made, call = rebind.unbound(fun)
    k, n = len(call.args), len(primals)
    res = vjp(made, *rebind.full_primals(call, primals), has_aux=has_aux, backend=backend, mode=mode)
    pull = res[1]
    return (res[0], marks.mark_derivative(_pullback_fn(lambda out_bar: pull(out_bar)[k:k + n]), "vjp", call.fn)) \
        + tuple(res[2:])


def _pullback_fn(pull: Callable) -> Callable:
    def vjp_pullback(out_bar):
        return pull(out_bar)
    return vjp_pullback


def _dask_vjp(fun: Callable, primals, backend, mode: str):
    """vjp over dask arrays: the loss is a scalar (dask_grad splits only those), so the
    pullback scales the gradient; one adjoint per primal (None for a non-float one)."""
    floats = tuple(i for i, p in enumerate(primals)
                   if np.dtype(getattr(p, "dtype", np.result_type(p))).kind == "f")
    with bound(fun):
        value, grads, _ = dask_grad.value_and_grad(fun, primals, floats, backend=backend, mode=mode,
                                                   want_value=True)
    by = dict(zip(floats, grads))

    def dask_pullback(out_bar):
        check_cotangent_of(fun, (), out_bar)
        return tuple(by[i] * out_bar if i in by else None for i in range(len(primals)))
    return value, dask_pullback


# ---------------------------------------------------------------- explain / source

@dataclass
class Explanation:
    function: str
    lines: list[str]

    def __str__(self) -> str:
        return "\n".join(self.lines) + "\n"

    __repr__ = __str__


EXAMPLES_NOT_GIVEN = None     # explain(f): argnums 0; explain(jacrev(f)): its last call


@deeply
def explain(fun: Callable, argnums=EXAMPLES_NOT_GIVEN, *args, mode: str = "auto") -> Explanation:
    """Every elementwise site of `fun`, the path chosen for it, and why; for an array
    program also each primitive's rule, what was fused into each kernel, and whether
    its partials are stored or recomputed (`mode`, as for grad). For a wrapper of
    s2sad.hessian / jacfwd / jacrev: `explain(wrapper, *example_args)`, which path each
    level took on those arguments (higher_explain)."""
    own = getattr(fun, "__s2sad_explain__", None)
    if own is not None:         # the example arguments are what follows fun
        return own(*(() if argnums is EXAMPLES_NOT_GIVEN else (argnums,)), *args)
    mark = marks.derivative_mark(fun)
    if mark is not None and mark.derivative is not None:   # explain(grad(f)): f's plan, as that grad uses it
        d = mark.derivative
        examples = None if argnums is EXAMPLES_NOT_GIVEN or _argnums_like(argnums) else (argnums, *args)
        fun, argnums, mode = d.fun, d.argnums_spec, d.mode
        with bound(fun):
            e = explain_containers(d)
            if e is None:
                e = _explain(fun, argnums, mode)
                if mark.order == 1:     # (grad(f)(*examples): unrolled or not)
                    if not d.c.fused:   # (the generated program's warm calls: what they run)
                        e.lines += warm_lines(None if d.leaf_hot is decline else d.leaf_hot, examples)
                    e.lines += path_lines(d.small_for_explain(), d.c.fused, examples)
        e.lines += getattr(d, "dask_report", [])     # how its last call over dask arrays was split
        if mark.order > 1:      # explain(grad(grad(f))): the path of each level
            e.lines += _levels(mark)
        return e
    argnums = 0 if argnums is EXAMPLES_NOT_GIVEN else argnums
    if args:
        raise S2SADError(f"s2sad.explain takes fun and argnums, {2 + len(args)} arguments given",
                         hint="Pass explain(f, argnums); example arguments are for grad, value_and_grad, "
                              "hessian, jacfwd and jacrev objects.")
    fun = target(fun, "explain")
    with bound(fun):
        explanation = _explain(fun, argnums, mode)
    if mark is not None and mark.order > 1:     # explain(grad(grad(f))): the path of each level
        explanation.lines += _levels(mark)
    return explanation


def _argnums_like(a) -> bool:
    """explain(grad(f), a): is `a` an argnums (an int, a tuple of them) rather than an example argument?"""
    return type(a) is int or (isinstance(a, (tuple, list)) and all(type(i) is int for i in a) and bool(a))


def explain_containers(d: Derivative) -> Explanation | None:
    """explain of a grad object whose last call had containers: how it was flattened,
    then the plan of its leaves (None for a grad object never called with containers)."""
    got = flattening(d)
    if got is None:
        return None
    sub, lines = got
    e = _explain(sub.fun, sub.argnums, d.mode, sub.layout)
    e.lines[1:1] = lines
    return e


def _levels(mark: marks.DerivativeMark) -> list[str]:
    """Each level's path: nested duals for scalar functions, reverse over reverse for an
    array program's gradient (array_higher)."""
    inner = marks.derivative_mark(mark.of)
    while inner is not None and marks.derivative_mark(inner.of) is not None:
        inner = marks.derivative_mark(inner.of)
    if inner is not None and is_array_derivative(inner):
        return array_higher.explain_levels(mark)
    return nested.explain_levels(mark)


def _explain(fun: Callable, argnums, mode: str, layout=None) -> Explanation:
    with PLANNING:
        return _explain_planned(fun, argnums, mode, layout)


def _explain_planned(fun: Callable, argnums, mode: str, layout=None) -> Explanation:
    c = compiled(fun, layout)
    pf = parse_function(c.fun)
    lines = [f"s2sad.explain: {c.fun.__qualname__} ({pf.location()})", f"  route: {c.route.kind}: {c.route.reason}"]
    nums = tuple(i % len(c.params) for i in argnums_tuple(argnums))
    return Explanation(c.fun.__qualname__, lines + c.explain(nums, mode))


def source(g: Callable) -> str:
    """The generated derivative source of a function made by grad/value_and_grad/differentiate."""
    d = getattr(g, "__s2sad__", None)
    if d is None:
        raise S2SADError(f"{getattr(g, '__name__', g)!r} was not made by s2sad.grad, value_and_grad or differentiate",
                         hint="Pass the function that s2sad.grad(f) returned.")
    return tree_source(d)


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
        # s2sad's own derivatives (not methods of this object): jacfwd(f.grad) is
        # jacfwd(grad(f)), never a differentiation of this class's code
        self.grad = _differentiated(planned, argnums, backend, "grad", "auto", False)
        self.value_and_grad = _differentiated(planned, argnums, backend, "value_and_grad", "auto", False)
        self._vg = self.__s2sad__ = self.value_and_grad.__s2sad__
        self._g = self.grad.__s2sad__

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def __get__(self, instance, owner=None):
        """A decorated method read from an instance: bound to it, as a def's would be."""
        return self if instance is None else _BoundDifferentiable(self, instance)

    def explain(self) -> Explanation:
        return explain(self.__wrapped_fun__, self.argnums)

    def source(self) -> str:
        return self._vg.source()


class _BoundDifferentiable(marks.HoldsBoundMethod):
    """m.loss for a method decorated with @s2sad.differentiate: calls it with m first; its
    derivatives are those of the bound method (argnums counted after self, as
    grad(m.loss)'s), made when read; it holds m only while it is held."""

    def __init__(self, d: Differentiable, instance):
        self._d, self.bound_method = d, types.MethodType(d._call, instance)
        functools.update_wrapper(self, d._call)

    def __call__(self, *args, **kwargs):
        return self.bound_method(*args, **kwargs)

    @property
    def grad(self) -> Callable:
        return grad(self.bound_method, self._d.argnums, backend=self._d.backend)

    @property
    def value_and_grad(self) -> Callable:
        return value_and_grad(self.bound_method, self._d.argnums, backend=self._d.backend)

    def explain(self) -> Explanation:
        return explain(self._d.__wrapped_fun__, self._d.argnums)

    def source(self) -> str:
        return self._d.source()


def differentiate(fun: Callable | None = None, *, argnums=0, backend: str = "auto"):
    if fun is None:
        return lambda f: Differentiable(f, argnums, backend)
    return Differentiable(fun, argnums, backend)


# ---------------------------------------------------------------- user rules

def defvjp(fn: Callable, *vjps: Callable) -> Callable:
    """Register the reverse-mode rule of an array function s2sad has no rule for (np.ptp,
    one of your own...) for array programs: `vjps[i](g, out, *args)` returns the adjoint
    of its i-th argument (that argument's shape) given the adjoint `g` of its output
    `out`. Returns `fn`. A function s2sad already differentiates is refused (its built-in
    rule would win): wrap the call in a function of your own and register that.

        def my_cumsum(x): return np.cumsum(x)
        s2sad.defvjp(my_cumsum, lambda g, out, x: np.cumsum(g[::-1])[::-1])
    """
    if not callable(fn) or not all(callable(v) for v in vjps) or not vjps:
        raise S2SADError(f"defvjp({getattr(fn, '__name__', fn)!r}, ...) needs a function and one vjp function "
                         "per argument", hint="Pass vjp_i(g, out, *args) for each argument i.")
    builtin = _builtin_derivative(fn)
    if builtin is not None:
        label = getattr(fn, "__name__", "f")
        params = ", ".join(_required_params(fn))
        rule = f"lambda g, out, {params}: ..."
        raise S2SADError(f"defvjp({label}, ...): s2sad already differentiates {label} ({builtin}); a rule "
                         "registered for it would not be used",
                         hint=f"To use your own rule, wrap the call in a function of yours and register that:\n"
                              f"    def my_{label}({params}): return {_spelled(fn)}({params})\n"
                              f"    s2sad.defvjp(my_{label}, {', '.join([rule] * len(_required_params(fn)))})")
    register_vjp(fn, vjps)
    PLANS.clear()
    return fn


def _required_params(fn) -> list[str]:
    """The parameters a call of `fn` needs (a ufunc's inputs x, y; else its signature's
    parameters without defaults), for an example in a hint."""
    nin = getattr(fn, "nin", None)
    if isinstance(nin, int):
        return ["x", "y", "z"][:nin] if nin <= 3 else [f"x{k}" for k in range(nin)]
    try:
        ps = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ["x"]
    names = [p.name for p in ps if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names or ["x"]


def _spelled(fn) -> str:
    """`fn` as a user's source names it (np.linalg.solve, scipy.special.gammaln, sum)."""
    mod = str(getattr(fn, "__module__", None) or "")
    name = getattr(fn, "__name__", "f")
    special = sys.modules.get("scipy.special")
    if not mod and special is not None and getattr(special, name, None) is fn:
        return "scipy.special." + name
    if mod in ("builtins", ""):
        return name
    return ("np" + mod[len("numpy"):] if mod.startswith("numpy") else mod) + "." + name


def _builtin_derivative(fn) -> str | None:
    """How s2sad already differentiates `fn` (an array-table entry, an elementwise rule,
    a selector the array level reads), else None: the built-in wins where both exist, so
    defvjp refuses such a function rather than keep a rule that would be ignored."""
    entries = array_prims.for_function(fn)
    if entries:
        return "the array primitive " + " / ".join(repr(p.name) for p in entries)
    if fn is sum:
        return "the array primitive 'sum'"
    if any(fn is f for f in (np.where, np.clip, np.select)):
        return "an elementwise select"
    kind = classify(fn).kind
    if kind in ("primitive", "user_rule"):
        return "an elementwise derivative rule"
    return None


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
    BROADCAST_PLANS.clear()
    return fn

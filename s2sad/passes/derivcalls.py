"""A call of a derivative s2sad made, met by the array-program builder: one statement of
the table's "derivative" entry (array_prims/derivcall.py) where the derivative is a
grad or value_and_grad of a function planned at the array level; a located refusal
where it cannot be right.

Taken: `g(W, X)` for g = s2sad.grad(f) or value_and_grad(f) (any argnums; a tuple of
argnums or value_and_grad gives a tuple, one `item` per entry), with positional
arguments, called by its name (read at each call, as free data is: the plan holds no
user function), f's route an array program or a fused loss (passes/routes.py). The
statement's forward is g's own call; its VJP and JVP call the plan layer's derivative_vjp / derivative_jvp
(s2sad/array_higher.py), registered with marks.entry_point and bound by value here
(this layer cannot import them: they are s2sad's own); its `derivative_plan` plans the derivative's function
while the outer program is built, so that a function s2sad refuses (state written, a
free value it cannot read) is refused at the call, naming the level.

Refused, located at the call, naming the derivative: keyword arguments, a call with
more or fewer arguments than f takes, value_and_grad with a tuple of argnums (a tuple
inside a tuple), a derivative whose function is not an array program (a fused loss, a
scalar function: differentiated again only as nested duals, elsewhere). A pullback (a
vjp's) is left to the builder's own refusal (returns None).
"""
from __future__ import annotations

import threading
import types

import gast

from .. import array_prims, marks
from ..errors import HigherOrderNotSupportedError, S2SADError
from ..frontend import parse_function, shown_location
from ..nested import parameters_of
from .arrayir import operand_expr
from .routes import ARRAY, FUSED, route_of


_PLANNING = threading.local()     # .codes: the derivatives' functions being planned in this thread, innermost last


def derivative_statement(prims, value, e: gast.Call, scope, want=None):
    """The "derivative" statement of the call `e` of `value`, its items for a tuple
    output; None when `value` is no grad/value_and_grad s2sad made (see the module doc)."""
    mark = marks.derivative_mark(value)
    d = mark.derivative if mark is not None else None
    if d is None or mark.made_by not in ("grad", "value_and_grad") or type(d.fun) is not types.FunctionType:
        return None
    b = prims.b
    at = b.loc(scope.ctx, e)
    _check_route(mark, at)
    _check_call(mark, e, at)
    if not isinstance(e.func, gast.Name) or b.lookup_local(e.func.id, scope) is not None:
        raise marks.higher_order_error(mark, at, "it is called here through an expression; inside a function s2sad "
                                                 "differentiates, call it by its name (a global or a closure's)")
    fn = b.free_operand(scope.ctx, e.func.id)     # read at each call, as free data is: the plan holds no user function
    xs = [b.array(a, scope) for a in e.args]
    many = isinstance(d.argnums_spec, (tuple, list))
    count = 2 if mark.made_by == "value_and_grad" else (len(d.argnums) if many else None)
    p = {"fn": fn, "vjp": b.bind_value(_helper("derivative_vjp"), "derivative_vjp"),
         "jvp": b.bind_value(_helper("derivative_jvp"), "derivative_jvp"),
         "count": None if count is None else gast.Constant(value=count, kind=None)}
    p = {k: (gast.Name(id=v, ctx=gast.Load(), annotation=None, type_comment=None) if isinstance(v, str) else v)
         for k, v in p.items() if v is not None}
    prim = array_prims.PRIMS["derivative"]
    fwd = gast.Call(func=operand_expr(p["fn"].id), args=[operand_expr(x) for x in xs], keywords=[])
    t = prims.emit_prim(prim, "derivative", xs, p, e, scope, want, fwd, set())
    return prims.unpacked(prim, t, e, scope)


def _helper(role: str):
    fn = marks.entry_point_function(role)
    if fn is None:      # s2sad's package import registers it (array_higher.py)
        raise RuntimeError(f"s2sad: {role} is not registered (import s2sad first)")
    return fn


def _check_route(mark, at) -> None:
    """The derivative's function is an array program that s2sad plans (the plan layer's
    derivative_plan, now: its VJP is that plan's forward-over-reverse sweep). Otherwise
    refused, naming the derivative and saying why."""
    fun = mark.derivative.fun
    name = getattr(fun, "__qualname__", fun)
    planning = _PLANNING.__dict__.setdefault("codes", [])
    if fun.__code__ in planning:
        raise marks.higher_order_error(mark, at, f"its function {name} calls it (a derivative of itself, through "
                                                 f"the calls being planned): recursion is not supported")
    try:
        route = route_of(parse_function(fun))
        if route.kind in (ARRAY, FUSED):
            planning.append(fun.__code__)
            try:
                _helper("derivative_plan")(mark.derivative)
            finally:
                planning.pop()
    except HigherOrderNotSupportedError:
        raise           # a level below's refusal (recursion): already names the derivative
    except S2SADError as err:
        where = f" ({shown_location(err.location)})" if err.location is not None else ""
        raise marks.higher_order_error(mark, at, f"its function {name} is refused: {err.message}{where}") from None
    if route.kind not in (ARRAY, FUSED):
        raise marks.higher_order_error(
            mark, at, f"called inside an array program, a derivative is differentiated again when its function "
                      f"is an array program or a fused loss, and {name} is planned as a {route.kind} "
                      f"({route.reason})")


def _check_call(mark, e: gast.Call, at) -> None:
    d = mark.derivative
    if e.keywords:
        raise marks.higher_order_error(mark, at, "it is called here with keyword arguments; inside a function "
                                                 "s2sad differentiates, pass its arguments by position")
    if mark.made_by == "value_and_grad" and isinstance(d.argnums_spec, (tuple, list)):
        raise marks.higher_order_error(mark, at, "its output, (value, (gradients...)), is a tuple inside a tuple, "
                                                 "which an array program does not take apart; use one argnums, "
                                                 "or s2sad.grad with the tuple of argnums")
    params = parameters_of(d.fun)
    required = len(params or ()) - len(d.fun.__defaults__ or ())
    if params is None or not required <= len(e.args) <= len(params):
        raise marks.higher_order_error(
            mark, at, f"it is called here with {len(e.args)} argument(s) and its function takes "
                      f"{'*args' if params is None else len(params)}")


def derivative_call_text(op, free: dict) -> str:
    """What explain says of a "derivative" statement: the inner level's path (`free`:
    the program's free names, the derivative's among them)."""
    resolver, name = free.get(op.fn.id, (None, None))
    mark = marks.derivative_mark(resolver.lookup(name)) if resolver is not None else None
    what = mark.describe() if mark is not None else "a derivative"
    return (f"a call of {what}, a derivative of an array program: forward, its compiled gradient program; "
            f"its adjoint, the Hessian of {marks.function_name(mark.innermost()) if mark else 'its function'} "
            f"times the seed, from that program's forward over reverse (hvp sweep) for all operands in one "
            f"call (array_higher.derivative_vjp; no tape of the inner adjoint); its tangent, the same sweep "
            f"along the operands' tangents; a third derivative through it is refused")

"""Which planner takes a function: one decision, made once by reading its tree (`route_of`).

Routes (plans.py builds the one chosen; a refusal by it is the user's error, located):

    fused   straight-line, `R(E)` or `E` with E elementwise and the scalar functions E
            applies free of array operations: one fused kernel (elementwise.plan_loss)
    scalar  the whole function as one scalar function of scalars (elementwise.plan_scalar):
            a function with a defrule rule; or one that uses no array operation and is
            not a fused loss (control flow, `and`/`or` as a value, a conditional
            expression, a tuple's item...): scalar code
    array   everything else: an array program (arrayprog.build_program)

The analysis reads syntax and the values names resolve to, never runs a planner: which
statements the body has (elementwise.straight_line), the fused planner's own check
(elementwise.fused_check, which records its first refusal instead of raising), and the
first *array operation* the function or a function it calls uses (`first_array_use`):
`@`, a call of a numpy function that is not a scalar primitive (np.sum, np.dot...) or of
a function with an array rule (s2sad.defvjp) or without source, an attribute of an
array (x.T, x.sum), an index that is not a constant position (x[i], x[:, 0]), a free
array read whole, an array default, an item of a parameter written in place; a call
of a derivative s2sad made whose function is an array program, or whose gradient is
not elementwise (the normalizer inlines only an elementwise function's dual, or a sum
over the one argument: normderiv.py), whether named, made inline (`s2sad.grad(f)(x)`)
or bound to a local (`g = s2sad.grad(f)`; the array builder refuses these two with
`made_in_place_refusal`, saying to name it at module level); or a function whose parameters the scalar
language does not take (keyword-only, *args...), which array programs inline. Not array
operations: an item of a derivative's tuple output at a constant position,
math.prod/math.fsum of a tuple written out (folded by the normalizer). Scalar code
(the core language, elementwise.py's kernels) has none of these. A refusal of a
construct only the fused planner takes (broadcast's signature=) keeps the fused route,
whose planner raises it.
"""
from __future__ import annotations

import builtins
import math
import types
from dataclasses import dataclass

import gast
import numpy as np

from .. import array_prims, rules
from ..errors import HigherOrderNotSupportedError, S2SADError
from ..frontend import MISSING, ParsedFunction, attribute_value, classify, location_of, parse_function
from ..marks import derivative_mark, is_entry_point
from ..targets import entry_function
from .trees import constant_index, dotted
from .elementwise import FusedCheck, LossPlan, fused_check, function_body, plan_loss, straight_line, \
    straight_line_statement
from .normderiv import register_summed_loss


FUSED, SCALAR, ARRAY = "fused", "scalar", "array"


@dataclass(frozen=True)
class Route:
    """The planner chosen for a function and why (explain prints both)."""

    kind: str       # FUSED | SCALAR | ARRAY
    reason: str


@dataclass(frozen=True)
class ArrayUse:
    """The first array operation found: what it is and where."""

    what: str
    where: str      # file:line:col


def route_of(pf: ParsedFunction) -> Route:
    """The route of `pf` and why, by the table of the module docstring (in its order)."""
    node = pf.node
    if rules.user_rule(pf.fn) is not None:
        return Route(SCALAR, "its rule registered with s2sad.defrule: one scalar function of scalars")
    if not straight_line(node):
        flow = next(s for s in function_body(node) if not straight_line_statement(s))
        what = f"{_statement_kind(flow)} ('{type(flow).__name__.lower()}' at {location_of(pf.filename, flow)})"
        use = first_array_use(pf)
        if use is None:
            return Route(SCALAR, f"{what} and no array operation: one scalar function of "
                                 "scalars, applied elementwise")
        return Route(ARRAY, f"{what} with array operations ({use.what} at {use.where}): "
                            "an array program")
    check = fused_check(pf)
    if check.refusal is None:
        use = _Scan().applied(pf, check.applied_nodes, check.applied_functions)
        if use is None:
            return Route(FUSED, _FUSED_REASON[check.reduction])
        return Route(ARRAY, f"an elementwise function uses an array operation ({use.what} at {use.where}): "
                            "an array program")
    refused = check.refusal
    where = location_of(pf.filename, refused.node)
    if refused.fused_only:
        return Route(FUSED, f"a construct only a fused kernel takes, refused there ({where}: {refused.message})")
    if first_array_use(pf) is None:
        return Route(SCALAR, f"not one elementwise expression ({where}: {refused.message}) and no array "
                             "operation: one scalar function of scalars, applied elementwise")
    return Route(ARRAY, f"more than one elementwise expression ({where}: {refused.message}): an array program")


def elementwise_gradient(pf: ParsedFunction) -> bool:
    """Is the gradient of `pf` elementwise: a fused loss `np.sum(E(x))` of its one
    argument x that reads no free array, whose gradient is E'(x) element by element?
    The one analysis behind both the normalizer's inlining of that gradient where its
    grad is called in scalar code (normderiv, through `summed_loss_plan`) and this
    module's verdict that such a call is no array operation (`_Scan.derivative`)."""
    return route_of(pf).kind == FUSED and _sums_its_argument(pf, fused_check(pf))


def _sums_its_argument(pf: ParsedFunction, check: FusedCheck) -> bool:
    return (check.refusal is None and check.reduction == "sum" and len(pf.node.args.args) == 1
            and not check.free_arrays)


def summed_loss_plan(pf: ParsedFunction) -> LossPlan | None:
    """The fused plan of `pf` when its gradient is elementwise (`elementwise_gradient`),
    else None; a refusal by the planner it was routed to is the user's, raised."""
    return plan_loss(pf) if elementwise_gradient(pf) else None


register_summed_loss(summed_loss_plan)    # normderiv cannot import this module (it is below it)


def _statement_kind(s) -> str:
    """How a statement the fused planner does not read is named in a route's reason."""
    if isinstance(s, (gast.For, gast.While, gast.If, gast.Try, gast.With, gast.Break, gast.Continue, gast.Raise)):
        return "control flow"
    return "a statement other than an assignment to a name"


_FUSED_REASON = {
    "sum": "the sum of one elementwise expression: one fused kernel, summed in its pass",
    "mean": "the mean of one elementwise expression: one fused kernel, summed in its pass",
    "none": "one elementwise expression of numbers and arrays: one fused kernel",
}


def first_array_use(pf: ParsedFunction) -> ArrayUse | None:
    """The first array operation of `pf` or of a function it calls, else None."""
    return _Scan().function(pf)


# builtins that scalar code calls (range, len, zip, float...): not array operations
_BUILTINS = frozenset(v for v in vars(builtins).values() if callable(v))


class _Scan:
    """One walk for array operations over a function and the functions it calls (each
    read once)."""

    def __init__(self):
        self.seen: set[int] = set()
        self.tuples: set[str] = set()    # locals of the tree being read bound to a tuple literal
        self.made: dict = {}             # its locals bound to s2sad.grad(fn) -> (fn, label) (_made_locally)

    def applied(self, pf: ParsedFunction, nodes, functions) -> ArrayUse | None:
        """In what a fused kernel applies: the loss's lambdas/defs, user functions and
        derivatives made in the loss (`s2sad.grad(f)(x)`, `g = s2sad.grad(f)`)."""
        local = _locals(pf.node)
        got = self.made_in(pf)
        if got is not None:
            return got
        for n in nodes:
            got = self.tree(n, pf, local)
            if got is not None:
                return got
        for value in functions:
            got = self.value(value)
            if got is not None:
                return got
        return None

    def function(self, pf: ParsedFunction) -> ArrayUse | None:
        self.seen.add(id(pf.fn))
        return self.tree(pf.node, pf, _locals(pf.node))

    def value(self, value) -> ArrayUse | None:
        """A called value's array operations (its own, or its body's if a Python function)."""
        if id(value) in self.seen:
            return None
        self.seen.add(id(value))
        mark = derivative_mark(value)
        if mark is not None:
            return self.marked(mark)
        r = classify(value)
        if r.kind in ("primitive", "user_rule", "constant", "module", "s2sad") or rules.ordered_family(value):
            return None
        if r.kind == "function":
            return self.python_function(r.value)
        return None

    def marked(self, mark) -> ArrayUse | None:
        """A derivative s2sad made is scalar code when the function it differentiates is
        (the normalizer inlines its dual); a derivative of an array program is an array
        operation (array programs refuse it, naming the derivative and its order)."""
        fun = getattr(mark.derivative, "fun", None)
        if not isinstance(fun, types.FunctionType):
            return None       # a pullback: refused where it is called, whichever route
        return self.derivative(fun, f"s2sad.{mark.made_by} of '{getattr(mark.of, '__qualname__', mark.of)}'")

    def derivative(self, fun, of: str) -> ArrayUse | None:
        """`marked` for the function `fun` the derivative `of` differentiates."""
        try:
            pf = entry_function(parse_function(fun))
            route = route_of(pf)
        except S2SADError:    # unreadable: the route chosen says so when it reads it
            return None
        if route.kind == SCALAR:
            return None
        if route.kind == FUSED:
            check = fused_check(pf)
            # what the normalizer inlines (normderiv): an elementwise function's dual, or
            # a sum of one over the loss's one argument only (elementwise_gradient)
            if check.reduction == "none" or _sums_its_argument(pf, check):
                return None
            return ArrayUse(f"a derivative whose gradient is not elementwise ({of}: a {check.reduction} over "
                            "more than its one argument's elements)", "its call")
        return ArrayUse(f"a derivative of an array program ({of}: {route.reason})", "its call")

    def python_function(self, fn) -> ArrayUse | None:
        if array_prims.for_function(fn):
            return ArrayUse(f"'{getattr(fn, '__qualname__', fn)}' (an array rule, s2sad.defvjp)", "its call")
        for d in getattr(fn, "__defaults__", None) or ():
            if isinstance(d, np.ndarray) or callable(d):
                return ArrayUse(f"a default of '{fn.__qualname__}' that is not a number "
                                f"({type(d).__name__})", "its def")
        try:
            pf = parse_function(fn)
        except S2SADError:   # unreadable: the route chosen says so when it reads it
            return None
        self.seen.add(id(pf.fn))
        return self.tree(pf.node, pf, _locals(pf.node))

    def tree(self, root, pf: ParsedFunction, local: set) -> ArrayUse | None:
        bases = {id(n.value) for n in gast.walk(root) if isinstance(n, gast.Subscript)}
        outer, self.tuples = self.tuples, {t.id for n in gast.walk(root) if isinstance(n, gast.Assign)
                                           and isinstance(n.value, gast.Tuple) for t in n.targets
                                           if isinstance(t, gast.Name)}
        outer_made, self.made = self.made, _made_locally(root, pf)
        # decorators run when the def runs, not in what is differentiated
        decorating = {id(d) for n in gast.walk(root) if isinstance(n, gast.FunctionDef)
                      for top in n.decorator_list for d in gast.walk(top)}
        found = None
        for n in gast.walk(root):
            if id(n) in decorating:
                continue
            what = self.node(n, pf, local, bases, root)
            if what is not None:
                found = what if isinstance(what, ArrayUse) else ArrayUse(what, str(location_of(pf.filename, n)))
                break
        self.tuples, self.made = outer, outer_made
        return found

    def made_in(self, pf: ParsedFunction) -> ArrayUse | None:
        """The first call in `pf` of a derivative made there that is an array operation."""
        self.made = _made_locally(pf.node, pf)
        for n in gast.walk(pf.node):
            made = self.made_here(n.func, pf) if isinstance(n, gast.Call) else None
            got = self.derivative(*made) if made is not None else None
            if got is not None:
                return ArrayUse(got.what, str(location_of(pf.filename, n)))
        return None

    def made_here(self, f: gast.expr, pf: ParsedFunction):
        """(function, label) of the derivative the callee `f` is when s2sad.grad or
        value_and_grad makes it in this tree: written inline, or bound to a local."""
        if isinstance(f, gast.Call):
            return _made_by_call(f, pf.resolver)
        if isinstance(f, gast.Name):
            return self.made.get(f.id)
        return None

    def node(self, n, pf: ParsedFunction, local: set, bases: set, root=None):
        """What array operation `n` is (a description, or an ArrayUse found in a callee), else None."""
        if isinstance(n, (gast.BinOp, gast.AugAssign)) and isinstance(n.op, gast.MatMult):
            return "'@'"
        if isinstance(n, (gast.FunctionDef, gast.Lambda)):
            return _signature(n, defaults_ok=n is root)
        if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store) and isinstance(n.value, gast.Name) \
                and n.value.id in _parameters(root):
            return f"an item of the parameter '{n.value.id}' written in place"   # a number in scalar code
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and n.id not in local and id(n) not in bases:
            if isinstance(pf.resolver.lookup(n.id), np.ndarray):
                return f"the array '{n.id}' read whole"
        if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Load):
            return self.subscript(n, pf, local)
        if isinstance(n, gast.Attribute) and isinstance(n.ctx, gast.Load):
            root = n.value
            while isinstance(root, gast.Attribute):
                root = root.value
            if not isinstance(root, gast.Name) or root.id in local:
                return f"'{dotted(n)}'"
            if not isinstance(pf.resolver.lookup(root.id), types.ModuleType):
                return f"'{dotted(n)}'"
        if isinstance(n, gast.Call):
            return self.call(n, pf, local)
        return None

    def written_out(self, n: gast.Call) -> bool:
        """math.prod/fsum of one tuple or list written out, or of a local tuple."""
        if len(n.args) != 1 or n.keywords:
            return False
        a = n.args[0]
        return isinstance(a, (gast.Tuple, gast.List)) or (isinstance(a, gast.Name) and a.id in self.tuples)

    def subscript(self, n: gast.Subscript, pf: ParsedFunction, local: set):
        base = n.value
        if isinstance(base, gast.Call) and isinstance(n.slice, gast.Constant) \
                and derivative_mark(attribute_value(pf.resolver, base.func)) is not None:
            return None            # an item of a derivative's tuple output (value_and_grad, argnums)
        if isinstance(base, gast.Name):
            if base.id in self.tuples or (base.id not in local and
                                          classify(pf.resolver.lookup(base.id)).kind == "tuple"):
                return None        # a tuple, indexed or looped over
            if constant_index(n.slice) is not None or isinstance(n.slice, gast.Constant):
                return None        # an element at a constant position (a capture), or a key
        return f"'{dotted(base) if isinstance(base, (gast.Name, gast.Attribute)) else type(base).__name__}[...]'"

    def call(self, n: gast.Call, pf: ParsedFunction, local: set):
        f = n.func
        made = self.made_here(f, pf)
        if made is not None:       # s2sad.grad(fn)(x), or g(x) for a local g = s2sad.grad(fn)
            got = self.derivative(*made)
            return got.what if got is not None else None
        if isinstance(f, gast.Name) and f.id in local:
            return None            # a local def or lambda: its body is in this tree
        value = attribute_value(pf.resolver, f)
        if value is MISSING:
            return None            # unresolved: the route chosen refuses it, located
        if is_entry_point(value, "broadcast") or (value in _BUILTINS if _hashable(value) else False):
            return None
        if derivative_mark(value) is not None:   # located at this call
            got = self.value(value)
            return got.what if got is not None else None
        if (value is math.prod or value is math.fsum) and self.written_out(n):
            return None            # folded into products and sums (the normalizer's math_fold)
        r = classify(value)
        if r.kind in ("primitive", "user_rule", "s2sad") or rules.ordered_family(value) is not None:
            return None
        if r.kind == "function":
            return self.value(value)
        return f"'{dotted(f)}'"


def made_in_place_refusal(call: gast.Call, resolver, at) -> HigherOrderNotSupportedError | None:
    """The refusal, located `at`, of calling in an array program the derivative `call`
    makes there (`s2sad.grad(f)(x)`, `g = s2sad.grad(f)`) when f is an array program
    (what `_Scan.derivative` calls an array operation); None when `call` is no such
    derivative. The same derivative named outside the function is differentiated again
    (reverse over reverse, derivcalls.py): the program reads it by name at each call."""
    made = _made_by_call(call, resolver)
    use = _Scan().derivative(*made) if made is not None else None
    if use is None:
        return None
    fn, label = made
    return HigherOrderNotSupportedError(
        f"{label} is made here, inside a function s2sad differentiates, and it is {use.what}: a derivative "
        f"made in place is not differentiated again; named at module level it is (reverse over reverse)", at,
        hint=f"Name it at module level: write g = {label.split(' of ')[0]}({fn.__name__}, ...) outside this "
             f"function, and call g(...) here.")


def _made_by_call(call: gast.Call, resolver):
    """(fn, label) when `call` is s2sad.grad(fn, ...) or value_and_grad(fn, ...) of a
    Python function fn named where `resolver` reads, else None (what the normalizer
    makes of it: normderiv's derivative_value)."""
    maker = attribute_value(resolver, call.func)
    role = next((r for r in ("grad", "value_and_grad") if is_entry_point(maker, r)), None)
    if role is None or not call.args:
        return None
    fn = attribute_value(resolver, call.args[0])
    if not isinstance(fn, types.FunctionType):
        return None                # not read here: the route chosen refuses it, located
    return fn, f"s2sad.{role} of '{fn.__qualname__}'"


def _made_locally(root, pf: ParsedFunction) -> dict:
    """The locals of `root` assigned a derivative s2sad.grad makes there (`g = s2sad.grad(f)`)."""
    out = {}
    for n in gast.walk(root):
        if isinstance(n, gast.Assign) and isinstance(n.value, gast.Call):
            made = _made_by_call(n.value, pf.resolver)
            if made is not None:
                out.update((t.id, made) for t in n.targets if isinstance(t, gast.Name))
    return out


def _signature(fn, defaults_ok: bool) -> str | None:
    """Parameters the scalar language does not take (array programs inline such
    functions): *args, **kwargs, keyword-only or positional-only ones, and defaults of
    a local def (a function object's are filled in at its calls)."""
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or (a.defaults and not defaults_ok):
        label = getattr(fn, "name", "lambda")
        return f"'{label}' taking *args, **kwargs, keyword-only parameters or defaults"
    return None


def _parameters(root) -> set:
    """The parameters of the defs and lambdas in `root`."""
    return {n.id for n in gast.walk(root) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Param)}


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _locals(node) -> set:
    """Every name bound inside a function (parameters, assignments, defs, lambdas' and
    comprehensions' parameters): not free names."""
    out = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Param, gast.Del)):
            out.add(n.id)
        elif isinstance(n, gast.FunctionDef):
            out.add(n.name)
    return out

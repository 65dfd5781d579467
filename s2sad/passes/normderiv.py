"""Calls of derivatives s2sad made, inside scalar code -> helpers built from their own
programs (a mixin of `Normalizer`, through CallMixin).

`g = s2sad.grad(f, argnums=k)` called as `g(x, y)` in a function being normalized
becomes a call of the helper `f__d_<p>`:

    def f__d_p(x, y):
        f_value, f_dot = f__dual_p(x, y)
        return f_dot

where `f__dual_p` is passes/forward.py's dual of f's helper in the direction of its
parameter p (the k-th), itself core language. Dualizing the program again (the outer
derivative) dualizes `f__dual_p` like any helper: nested duals (value, first and second
partials) in one kernel. `vg(x)[0]` of a value_and_grad is f's own helper; `vg(x)[1]`
(and `g(x, y)[j]` of a grad with a tuple of argnums) the partial it selects. A
derivative of a derivative (`grad(grad(f))` called inside) is normalized through its
generated caller (nested.py), which calls the inner derivative: any depth.

Invariants:
- A derivative is taken again only for scalar code: its function normalizes as a
  scalar function (else that function's own located refusal). A derivative of a
  function that writes state, a pullback, or a derivative whose output is a tuple used
  whole is refused where it is called, naming the composition (marks.describe).
- A grad of a loss `np.sum(E(x))` of one argument (a fused plan reading nothing else)
  is elementwise: E' per element, from E's kernel program adopted as helpers, so
  that hessian's jacfwd sees an elementwise map and takes the diagonal from one jvp.
- The derivative helper's parameters are f's helper's (its captures included), so a
  call passes captures as a call of f does; captured values are constants of the inner
  derivative and differentiated through by an outer one, as Python's closures are.
"""
from __future__ import annotations

import ast
import copy

import gast

from .. import marks
from ..errors import HigherOrderNotSupportedError
from ..frontend import MISSING, attribute_value, location_of, parse_function
from ..nested import is_taken_again, parameters_of
from ..targets import entry_function
from .forward import make_dual
from .normscope import Scope
from .trees import function_def, name


# routes.summed_loss_plan, registered by passes/routes.py when it is imported (routes
# imports the fused planner, which imports the normalizer, which imports this module: a
# registration, not an import). s2sad's package imports routes (plans.py) before any
# normalizer runs.
_SUMMED_LOSS: list = []


def register_summed_loss(summed_loss_plan) -> None:
    _SUMMED_LOSS[:] = [summed_loss_plan]


class DerivativeCallMixin:
    """Needs `user_function`, `call_args`, `pass_captures`, `functions`, `captures`,
    `state_of`, `origins`, `custom_rules`, `err`, `expr`."""

    def derivative_value(self, f: gast.expr, scope: Scope):
        """The derivative `f` names (`dg`, `s2sad.grad(fn, argnums=1)` written inline), or None."""
        if isinstance(f, gast.Call):
            return self._made_inline(f, scope)
        if isinstance(f, gast.Name) and (scope.find_local_function(f.id) or f.id in scope.locals):
            return None
        value = attribute_value(scope.resolver, f)
        if value is not MISSING and marks.derivative_mark(value) is not None:
            return value
        return None

    def derivative_item(self, e: gast.Subscript, scope: Scope) -> gast.expr | None:
        """`vg(x)[0]`, `g(x, y)[1]`, `vg(x)[1][0]`: the item of a derivative's output, or None
        when `e` is not one."""
        picked: list[int] = []
        node = e
        while isinstance(node, gast.Subscript):
            k = _literal(node.slice)
            if not isinstance(k, int):
                return None
            picked.insert(0, k)
            node = node.value
        if not isinstance(node, gast.Call):
            return None
        value = self.derivative_value(node.func, scope)
        if value is None:
            return None
        return self.derivative_call(node, value, scope, tuple(picked))

    def _made_inline(self, e: gast.Call, scope: Scope):
        """`s2sad.grad(fn, argnums=k)` written where it is called: made now, as Python
        would when it runs the line (fn and argnums are names and constants)."""
        maker = attribute_value(scope.resolver, e.func)
        role = next((r for r in ("grad", "value_and_grad") if marks.is_entry_point(maker, r)), None)
        if role is None:
            return None
        if len(e.args) != 1 or any(k.arg not in ("argnums",) for k in e.keywords):
            raise self.err(scope, e, f"s2sad.{role} written inside differentiated code takes the function and "
                           "argnums= only", f"Make it outside: g = s2sad.{role}(f), and call g.")
        fn = attribute_value(scope.resolver, e.args[0])
        argnums = 0
        for k in e.keywords:
            argnums = _literal(k.value)
            if argnums is MISSING:
                raise self.err(scope, k.value, "argnums must be a number or a tuple of numbers written in place",
                               "Write argnums=1 or argnums=(0, 1).")
        if fn is MISSING:
            raise self.err(scope, e.args[0], f"cannot tell which function s2sad.{role} is given here",
                           "Pass a function s2sad can name: a def, or a variable holding one.")
        return marks.entry_point_function(role)(fn, argnums=argnums)

    def derivative_call(self, e: gast.Call, value, scope: Scope, picked: tuple[int, ...] = ()) -> gast.expr:
        """The call `e` of the derivative `value`, with the items `picked` from its output
        (`vg(x)[1]`: (1,)), as a call of a helper made from its program."""
        mark = marks.derivative_mark(value)
        at = location_of(scope.filename, e)
        if not is_taken_again(mark):
            raise marks.higher_order_error(mark, at, "a pullback has no program s2sad can differentiate again")
        d = mark.derivative
        inner = d.fun
        params = parameters_of(inner)
        if params is None or inner.__code__.co_kwonlyargcount:
            raise marks.higher_order_error(mark, at, "its function takes keyword-only parameters, *args or "
                                           "**kwargs, which a derivative inside scalar code cannot bind")
        label = mark.describe()
        args = self.call_args(inner, e, scope, label)
        summed = self._summed_elementwise(inner, mark, at)
        if summed is not None:     # grad of np.sum(E(x)): elementwise, E'(x) per element
            if self._selected(mark, len(params), picked, e, scope) is None:
                raise marks.higher_order_error(mark, at, "the value of a summed loss is one number for the whole "
                                               "array, not a function of each element")
            return gast.Call(func=name(self.partial_helper(summed, 0, mark)), args=args, keywords=[])
        helper = self.user_function(inner, at=at)
        if self.state_of.get(helper):
            raise marks.higher_order_error(
                mark, at, f"{marks.function_name(inner)} writes state, which its derivative would write again "
                "at every level of differentiation; a derivative of a stateful function cannot be differentiated "
                "or applied inside differentiated code")
        which = self._selected(mark, len(params), picked, e, scope)
        caps = self.captures.get(helper, [])
        target = helper if which is None else self.partial_helper(helper, which, mark)
        return gast.Call(func=name(target), args=args + self.pass_captures(caps, scope, e, {}), keywords=[])

    def _selected(self, mark: marks.DerivativeMark, nparams: int, picked: tuple[int, ...], e, scope: Scope):
        """Which scalar the call with `picked` items gives: None (the function's value) or
        the index of the parameter whose partial it is."""
        d = mark.derivative
        nums = d.argnums
        for i in nums:
            if not -nparams <= i < nparams:
                raise self.err(scope, e, f"argnums {i} of {mark.describe()} is out of range for a function of "
                               f"{nparams} argument(s)", "Pick argnums among the function's positional parameters.")
        single = not isinstance(d.argnums_spec, (tuple, list))
        parts = [i % nparams for i in nums]
        # the output's structure: (value, grads) for value_and_grad; grads: one partial, or a tuple
        grads = parts[0] if single else tuple(parts)
        out = (None, grads) if d.what == "value_and_grad" else grads
        for k in picked:
            if not isinstance(out, tuple) or not -len(out) <= k < len(out):
                raise self.err(scope, e, f"{mark.describe()} has no item [{k}] here", "Index its output as it is: "
                               "value_and_grad gives (value, gradient), grad with a tuple of argnums one "
                               "gradient per argnum.", HigherOrderNotSupportedError)
            out = out[k]
        if isinstance(out, tuple):
            raise self.err(scope, e, f"{mark.describe()} returns a tuple here, which scalar code cannot hold",
                           "Index it where it is called: vg(x)[0] for the value, vg(x)[1] for the gradient.",
                           HigherOrderNotSupportedError)
        return out

    def _summed_elementwise(self, inner, mark: marks.DerivativeMark, at) -> str | None:
        """When `inner` is a loss `np.sum(E(x))` of its one argument x (a fused plan:
        elementwise E, summed, reading nothing else), its gradient is E' element by
        element: the helper computing E here (adopted from its plan), else None. Decided
        by the route analysis (routes.elementwise_gradient, which also decides that a
        call of this derivative is no array operation), never by a planner's refusal: a
        refusal of the plan it decided on is the user's, and so is a plan that reads
        more than its argument (a captured element, state), which the helper cannot."""
        memo = self.__dict__.setdefault("summed_helpers", {})
        if id(inner) in memo:
            return memo[id(inner)]
        found = None
        if len(parameters_of(inner) or ()) == 1:
            assert _SUMMED_LOSS, "passes/routes.py registers the summed-loss planner when imported"
            plan = _SUMMED_LOSS[0](entry_function(parse_function(inner, at)))
            if plan is not None:
                _check_reads_its_argument_only(plan, mark, at)
                found = self._adopt(plan.program)
        memo[id(inner)] = found
        return found

    def _adopt(self, program) -> str:
        """Another normalizer's program as helpers of this one (renamed where taken);
        returns its entry's name here."""
        renamed = {old: self._fresh(old, derived=True) for old in program.functions}

        class Rename(gast.NodeTransformer):
            def visit_Call(self, node):
                self.generic_visit(node)
                if isinstance(node.func, gast.Name) and node.func.id in renamed:
                    node.func = name(renamed[node.func.id])
                return node

        for old, fn in program.functions.items():
            new_fn = Rename().visit(copy.deepcopy(fn))
            new_fn.name = renamed[old]
            self.functions[renamed[old]] = new_fn
            self.captures[renamed[old]], self.state_of[renamed[old]] = [], []
            self.origins[renamed[old]] = program.origins.get(old, "")
        for old, (params, trees) in program.custom_rules.items():
            self.custom_rules[renamed[old]] = (params, [None if t is None else Rename().visit(copy.deepcopy(t))
                                                        for t in trees])
        return renamed[program.entry]

    def partial_helper(self, helper: str, which: int, mark: marks.DerivativeMark) -> str:
        """`helper__d_<p>`: the partial of `helper` in its parameter p, from its dual."""
        fn = self.functions[helper]
        params = [a.id for a in fn.args.args]
        p = params[which]
        key = (helper, p)
        made = self._derivative_helpers().get(key)
        if made is not None:
            return made
        dname, duals = make_dual(self.functions, helper, (p,), self.custom_rules)
        for k, v in duals.items():
            self.functions.setdefault(k, v)
            self.origins.setdefault(k, f"forward mode (a dual) made for {mark.describe()}")
        made = self._fresh(f"{helper}__d_{p}", derived=True)
        taken = set(params)
        value, partial = _fresh_local(f"{helper}_value", taken), _fresh_local(f"d{helper}_d{p}", taken)
        body = [gast.Assign(targets=[gast.Tuple(elts=[name(value, gast.Store()), name(partial, gast.Store())],
                                                ctx=gast.Store())],
                            value=gast.Call(func=name(dname), args=[name(q) for q in params], keywords=[]),
                            type_comment=None),
                gast.Return(value=name(partial))]
        self.functions[made] = function_def(made, params, body)
        self.captures[made] = list(self.captures.get(helper, []))
        self.state_of[made] = []
        self.origins[made] = f"d {helper} / d {p}: {mark.describe()}, its forward dual selecting the partial"
        self._derivative_helpers()[key] = made
        return made

    def _derivative_helpers(self) -> dict:
        """(helper, parameter) -> its partial helper, made once per normalizer."""
        return self.__dict__.setdefault("derivative_helpers", {})


def _check_reads_its_argument_only(plan, mark: marks.DerivativeMark, at) -> None:
    """The gradient of a summed loss, inlined element by element, reads the element of
    its argument only: refused, located, when its plan reads anything else."""
    program = plan.program
    if program.state:
        raise marks.higher_order_error(mark, at, f"{marks.function_name(mark.derivative.fun)} writes state, which "
                                       "its derivative would write again at every level of differentiation")
    if program.captures or plan.inputs != [("arg", 0)]:
        read = ", ".join(f"{c.base}[{', '.join(map(str, c.index))}]" if c.index else c.base
                         for c in program.captures) or "values other than its argument"
        raise marks.higher_order_error(mark, at, f"its loss reads {read} besides its argument's elements, which "
                                       "the gradient taken element by element cannot pass; pass them as arguments "
                                       "of a function that is not summed")


def _fresh_local(base: str, taken: set[str]) -> str:
    cand = base
    while cand in taken:
        cand += "_"
    taken.add(cand)
    return cand




def _literal(node: gast.expr):
    """The value of a literal number or tuple of numbers; MISSING otherwise."""
    try:
        value = ast.literal_eval(gast.gast_to_ast(node))
    except (ValueError, TypeError, SyntaxError):
        return MISSING
    ok = lambda v: isinstance(v, int) and not isinstance(v, bool)   # noqa: E731
    return value if ok(value) or isinstance(value, tuple) and all(map(ok, value)) else MISSING

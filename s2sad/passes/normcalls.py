"""Calls in a scalar function -> the core language (a mixin of `Normalizer`).

A call becomes a primitive call (math functions, `abs`, `min`/`max` of several
arguments nested), a call of a helper for a user function (keywords placed, defaults
filled in as constants) or for a user rule (s2sad.defrule, special functions), or a
call of a lifted local function or lambda, whose captured locals lead its arguments.
Captures and state are passed along (passes/captures.py, passes/state.py).
"""
from __future__ import annotations

import copy
import inspect
import math
import types

import gast
import numpy as np

from .. import rules
from .. import special
from ..defaults import bind_call
from ..errors import FreeVariableError, NoSourceError, UnsupportedOperationError
from ..frontend import MISSING, attribute_value, classify, location_of
from ..marks import jacobian_error, jacobian_mark
from .normderiv import DerivativeCallMixin
from .normscope import LocalFunction, Scope
from .trees import assigned_names, const, constant_value, dotted, name, primitive_call


# numpy's round with decimals (the builtin round(x, n) rounds the decimal value: not these)
_NUMPY_ROUNDS = tuple(f for f in (np.round, getattr(np, "around", None)) if f is not None)
# numpy's roundings give floats where math's and the builtins give ints (np.floor(nan) is
# nan, np.sum(np.floor(x)) a float64): their primitive is wrapped in float() so that the
# kernel's result kind (activity.result_kind) is numpy's
_NUMPY_FLOAT_ROUNDINGS = tuple(getattr(np, n) for n in ("floor", "ceil", "trunc", "rint") if hasattr(np, n)) + _NUMPY_ROUNDS


class CallMixin(DerivativeCallMixin):
    """Normalizes calls; needs `expr`, `err`, `user_function`, `rule_helper`, `_fresh`,
    `_emit` and the capture/state/tuple mixins. Calls of derivatives s2sad made are
    DerivativeCallMixin's (passes/normderiv.py)."""

    def call(self, e: gast.Call, scope: Scope) -> gast.expr:
        scope.call_depth = getattr(scope, "call_depth", 0) + 1
        try:
            return self._call(e, scope)
        finally:
            scope.call_depth -= 1

    def _call(self, e: gast.Call, scope: Scope) -> gast.expr:
        if any(isinstance(a, gast.Starred) for a in e.args):
            raise self.err(scope, e, "calls in scalar functions take positional arguments only",
                           "Pass arguments by position.")
        if e.keywords:    # only a Python function's parameters can be named (call_args)
            f = e.func
            value = MISSING if isinstance(f, gast.Name) and (scope.find_local_function(f.id) or f.id in scope.locals) \
                else attribute_value(scope.resolver, f)
            if value is MISSING or classify(value).kind != "function":
                raise self.err(scope, e, "calls in scalar functions take positional arguments only",
                               "Pass arguments by position.")
        f = e.func
        derivative = self.derivative_value(f, scope)
        if derivative is not None:    # grad(f) called here: its own program (normderiv.py)
            return self.derivative_call(e, derivative, scope)
        n = self.tuple_len(e, scope)
        if n is not None:
            return n
        if isinstance(f, gast.Name) and f.id in self.synthesized:
            return self.synthesized_call(e, f.id, scope)
        if isinstance(f, gast.Name):
            found = scope.find_local_function(f.id)
            if found is not None:
                return self.local_call(e, found[0], found[1], scope)
            if f.id in scope.locals:
                raise self.err(scope, e, f"'{f.id}' is a local variable, not a function", "Call a function.")
        value = attribute_value(scope.resolver, f)
        label = getattr(f, "label", None) or dotted(f)     # (a value bound in a fused kernel: what the user wrote)
        if value is MISSING:
            raise self.err(scope, e, f"cannot resolve the function '{label}'",
                           "Call a function defined in Python or one of math/numpy's.", NoSourceError)
        r = classify(value)
        if any(value is f for f in (math.prod, math.fsum)):
            return self.math_fold(value, e, scope, label)
        if r.kind == "function":
            args = self.call_args(r.value, e, scope, label)
        else:
            args = [self.expr(a, scope) for a in e.args]
        if r.kind == "primitive":
            if r.value == "round" and len(args) == 2 and any(value is f for f in _NUMPY_ROUNDS):
                return self.round_decimals(args, e, scope, label)
            call = self.primitive(r.value, args, e, scope, label)
            if any(value is f for f in _NUMPY_FLOAT_ROUNDINGS):
                return primitive_call("float", [call])
            return call
        family = rules.ordered_family(value)
        if family is not None:
            return self.ordered_call(family, args, e, scope, label)
        if r.kind == "user_rule":
            self.check_value_only(r.value, e, scope, label)
            helper = self.rule_helper(r.value, location_of(scope.filename, e))
            if len(r.value.params) != len(args):
                raise self.err(scope, e, f"'{label}' takes {len(r.value.params)} arguments, {len(args)} given",
                               "Fix the call.")
            return gast.Call(func=name(helper), args=args, keywords=[])
        if r.kind == "function":
            helper = self.user_function(value, at=location_of(scope.filename, e))
            caps = self.captures.get(helper, [])
            nparams = len(self.functions[helper].args.args) - len(caps) - len(self.state_of.get(helper, []))
            if nparams != len(args):
                raise self.err(scope, e, f"'{label}' takes {nparams} arguments, {len(args)} given", "Fix the call.")
            call = gast.Call(func=name(helper), args=args + self.pass_captures(caps, scope, e, {}), keywords=[])
            return self.check_stateful(call, helper, scope, e)
        if jacobian_mark(value) is not None:     # a Jacobian or Hessian s2sad made: one order too many
            raise jacobian_error(value, location_of(scope.filename, e))
        raise self.err(scope, e, f"'{label}' has no Python source s2sad can read and no derivative rule",
                       f"Register a rule for it: s2sad.defrule({label}, \"<d out/d x>\", impl=<a Python "
                       f"function computing it>), or call a function written in Python.", NoSourceError)

    def synthesized_call(self, e: gast.Call, key: str, scope: Scope) -> gast.expr:
        """A call of a function rewritten for rows (passes/rowelems.py), emitted once
        with its own file and resolver."""
        helper = self._helper_of.get(key)
        if helper is None:
            pf = self.synthesized[key]
            helper = self._helper_of[key] = self._fresh(pf.name)
            self._emit(helper, pf.node, pf.filename, pf.resolver, None, captured=())
            self.origins[helper] = f"from {pf.filename}:{pf.node.lineno} (its rows taken apart)"
        caps = self.captures.get(helper, [])
        args = [self.expr(a, scope) for a in e.args]
        nparams = len(self.functions[helper].args.args) - len(caps) - len(self.state_of.get(helper, []))
        if nparams != len(args):
            raise self.err(scope, e, f"'{self.synthesized[key].name}' takes {nparams} components and arguments, "
                           f"{len(args)} given", "Pass one row or number per parameter.")
        call = gast.Call(func=name(helper), args=args + self.pass_captures(caps, scope, e, {}), keywords=[])
        return self.check_stateful(call, helper, scope, e)

    def check_value_only(self, rule: rules.UserRule, e, scope: Scope, label: str) -> None:
        """A special function without a derivative is called only by special.py and by rules' partials."""
        if rule.impl.__name__ not in rules.SPECIAL_VALUE_ONLY or rule is not rules.SPECIAL_USER_RULES.get(rule.impl.__name__):
            return
        if scope.filename != special.__file__ and not scope.filename.startswith("<s2sad.defrule for"):
            raise self.err(scope, e, f"'{label}' (polygamma of order 2) has no derivative in s2sad",
                           "Register your own with s2sad.defrule(...) to differentiate it.", UnsupportedOperationError)

    def ordered_call(self, family, args, e, scope: Scope, label: str) -> gast.expr:
        """scipy.special.polygamma(n, x): n must be a constant order with a special function."""
        fname, orders = family
        order = constant_value(args[0]) if len(args) == 2 else None
        if order is None or order != int(order) or int(order) not in orders:
            known = ", ".join(str(k) for k in sorted(orders))
            raise self.err(scope, e, f"'{label}' is differentiated for a constant order {known} only"
                           + ("" if order is None else f" (order {order:g} given)"),
                           f"Write the order as a literal ({fname}(1, x)); past order 1, register the function "
                           f"with s2sad.defrule(...).", UnsupportedOperationError)
        rule = rules.SPECIAL_USER_RULES[orders[int(order)]]
        helper = self.rule_helper(rule, location_of(scope.filename, e))
        return gast.Call(func=name(helper), args=[args[1]], keywords=[])

    def call_args(self, fn, e: gast.Call, scope: Scope, label: str) -> list[gast.expr]:
        """The arguments of a call of a Python function, one per parameter in order:
        keywords placed, defaults (the values its `def` computed) filled in as constants."""
        if not isinstance(fn, types.FunctionType) or fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
            return [self.expr(a, scope) for a in e.args]   # (refused where it is parsed)
        positional, filled = bind_call(fn, len(e.args), [k.arg for k in e.keywords],
                                       lambda msg: self.err(scope, e, msg, "Fix the call."))
        given = dict(zip(positional, e.args))
        given.update((k.arg, k.value) for k in e.keywords)
        code = fn.__code__
        out = []
        for p in code.co_varnames[:code.co_argcount]:
            if p in given:
                out.append(self.expr(given[p], scope))
                continue
            value = filled[p]
            if classify(value).kind != "constant":
                raise self.err(scope, e, f"the default of '{p}' of '{label}' is a {type(value).__name__}, which a "
                               "scalar function cannot use as a number", f"Pass '{p}' in the call.",
                               FreeVariableError)
            out.append(const(value))
        return out

    def primitive(self, prim: str, args, e, scope: Scope, label: str) -> gast.expr:
        rule = rules.RULES[prim]
        if prim in rules.VALUE_ONLY and scope.filename != special.__file__:
            raise self.err(scope, e, f"'{label}' is s2sad's value-only access to the math library",
                           "Call math.lgamma or math.gamma, which have derivatives.", UnsupportedOperationError)
        if prim in ("min", "max", "hypot") and len(args) > 2:   # hypot(x, y, z) is hypot(hypot(x, y), z)
            result = args[0]
            for a in args[1:]:
                result = primitive_call(prim, [result, a])
            return result
        if prim == "log" and len(args) == 2:   # log(x, base) = log(x) / log(base), as math computes it
            return gast.BinOp(left=primitive_call("log", [args[0]]), op=gast.Div(),
                              right=primitive_call("log", [args[1]]))
        if len(args) != rule.arity:
            raise self.err(scope, e, f"'{label}' takes {rule.arity} argument(s) here, {len(args)} given",
                           "Fix the call." if prim not in ("min", "max") else
                           "min/max of an iterable is not supported: list the arguments.")
        return primitive_call(prim, args)

    def math_fold(self, fn, e: gast.Call, scope: Scope, label: str) -> gast.expr:
        """math.prod / math.fsum of a tuple or list written out (or a tuple local): the
        product left to right, as math.prod multiplies (the same bits); the sum with each
        addition's rounding error added back (TwoSum, special.two_sum_error), as if in twice
        the precision: math.fsum's correctly rounded value except in rare cancellations (a
        sum that is not finite is the plain one). The derivative is the sum's or product's."""
        elts = None
        if len(e.args) == 1 and not e.keywords:
            node = e.args[0]
            if isinstance(node, (gast.Tuple, gast.List)) and not any(isinstance(x, gast.Starred) for x in node.elts):
                elts = [self.expr(x, scope) for x in node.elts]
            else:
                elts = self.tuple_elements(node, scope)
        if elts is None:
            raise self.err(scope, e, f"'{label}' takes one tuple or list written out here (or a tuple assigned "
                           "once)", f"Write its items: {label}((a, b, c)).", UnsupportedOperationError)
        if not elts:
            return const(1 if fn is math.prod else 0.0)
        if fn is math.prod:
            out = elts[0]
            for x in elts[1:]:
                out = gast.BinOp(left=out, op=gast.Mult(), right=x)
            return out
        helper = self.user_function(special.two_sum_error, at=location_of(scope.filename, e))
        total, error = elts[0], None
        for x in elts[1:]:
            err = gast.Call(func=name(helper), args=[copy.deepcopy(total), copy.deepcopy(x)], keywords=[])
            error = err if error is None else gast.BinOp(left=error, op=gast.Add(), right=err)
            total = gast.BinOp(left=total, op=gast.Add(), right=x)
        if error is None:
            return gast.BinOp(left=total, op=gast.Add(), right=const(0.0))     # a float, as fsum returns
        finite = gast.Compare(left=primitive_call("abs", [copy.deepcopy(total)]), ops=[gast.Lt()],
                              comparators=[const(math.inf)])
        return gast.IfExp(test=finite, body=gast.BinOp(left=copy.deepcopy(total), op=gast.Add(), right=error),
                          orelse=total)

    def round_decimals(self, args, e, scope: Scope, label: str) -> gast.expr:
        """np.round(x, d) with a literal integer d, as numpy computes it: rint(x * 10**d) /
        10**d (d < 0: rint(x / 10**-d) * 10**-d), the same bits; slope 0 like rint's."""
        d = constant_value(args[1])
        label = getattr(e.func, "label", None) or label     # (a template's call: its bound name)
        if d is None or d != int(d):
            raise self.err(scope, e, f"'{label}' takes its number of decimals as a literal integer here",
                           f"Write it as a literal ({label}(x, 2)).", UnsupportedOperationError)
        d = int(d)
        scale = const(float(10 ** abs(d)))
        if d >= 0:
            return gast.BinOp(left=primitive_call("round", [gast.BinOp(left=args[0], op=gast.Mult(), right=scale)]),
                              op=gast.Div(), right=copy.deepcopy(scale))
        return gast.BinOp(left=primitive_call("round", [gast.BinOp(left=args[0], op=gast.Div(), right=scale)]),
                          op=gast.Mult(), right=copy.deepcopy(scale))

    def local_call(self, e: gast.Call, owner: Scope, lf: LocalFunction, scope: Scope) -> gast.expr:
        if lf.helper is None:
            node = lf.node
            body = [gast.Return(value=node.body)] if isinstance(node, gast.Lambda) else node.body
            params = {a.id for a in node.args.args}
            own = params | assigned_names(body)
            used = {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
            captured = tuple(sorted(n for n in used - own if n in owner.locals and n not in owner.local_functions
                                    and n not in owner.tuples))
            base = node.name if isinstance(node, gast.FunctionDef) else f"lambda_{node.lineno}"
            lf.helper = self._fresh(base)
            lf.captured = self._emit(lf.helper, node, owner.filename, owner.resolver, owner, captured)
            self.origins[lf.helper] = f"local function at {owner.filename}:{node.lineno}"
        caps = self.captures.get(lf.helper, [])
        if scope is not owner and (lf.captured or any(c.origin == "param" for c in caps)):
            raise self.err(scope, e, "a local function that captures variables can only be called "
                           "from the function that defines it", "Pass the values as arguments.")
        args = [name(c) for c in lf.captured] + [self.expr(a, scope) for a in e.args]
        call = gast.Call(func=name(lf.helper), args=args + self.pass_captures(caps, scope, e, {}), keywords=[])
        return self.check_stateful(call, lf.helper, scope, e)

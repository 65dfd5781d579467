"""User scalar functions -> the core scalar language (see kernel.py).

Input: a `ParsedFunction` (a def or lambda with its resolver). Output: a
`ScalarProgram`: core-language `FunctionDef`s for the function and every user
function it calls, to any depth, each once.

What this pass does:
- resolves every free name: numbers and `math.pi` become constants, calls become
  primitive calls (`math.tanh`, `abs`, operators) or calls of helper functions;
- desugars: augmented and multiple assignment, tuple unpacking of tuple literals,
  chained comparisons, tuples (passes/tuples.py: loops over them unrolled), `range` with its
  defaults filled in, lambdas and local defs lifted to helpers whose captured locals
  become leading parameters (late binding, as in Python);
- refuses, with the file, line and column, everything outside the language:
  unsupported syntax, recursion, calls with no source and no rule, free names whose
  values a scalar kernel cannot hold.
It keeps the user's names, nesting and expression structure, so printed kernels read
like the user's code.
"""
from __future__ import annotations

import builtins
import copy
import inspect
import math
import re
import types
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np

from .. import rules
from ..defaults import bind_call
from .. import special
from ..kernel import fresh_name
from ..errors import (FreeVariableError, NoSourceError, RecursionNotSupportedError,
                      StatefulError, UnsupportedOperationError, UnsupportedSyntaxError)
from ..frontend import MISSING, ParsedFunction, Resolver, attribute_value, classify, location_of, parse_function
from ..parsing import gast_parse
from .captures import Capture, CaptureMixin
from .state import MUTATING_METHODS, StateCell, StateMixin, item_key
from .tuples import TupleMixin
from .trees import (assign, assigned_names, const, constant_value, definitely_returns, dotted, function_def,
                    name, primitive_call)


@dataclass
class ScalarProgram:
    """Core-language functions; `entry` is the one applied per element."""

    functions: dict[str, gast.FunctionDef]
    entry: str
    params: tuple[str, ...]
    origins: dict[str, str] = field(default_factory=dict)
    # helpers whose derivative is a user rule: name -> (params, partial trees or None)
    custom_rules: dict[str, tuple[tuple[str, ...], list]] = field(default_factory=dict)
    # the entry's trailing parameters that carry captured values, in order
    captures: list[Capture] = field(default_factory=list)
    # the entry's last parameters (and returned values after the first) that carry state
    state: list[StateCell] = field(default_factory=list)


_UNSUPPORTED_STMTS = {
    gast.Try: "try", gast.With: "with", gast.AsyncWith: "async with", gast.ClassDef: "class",
    gast.Import: "import", gast.ImportFrom: "import", gast.Delete: "del", gast.Raise: "raise",
    gast.Assert: "assert", gast.AsyncFor: "async for", gast.AsyncFunctionDef: "async def",
}


@dataclass
class _LocalFunction:
    node: gast.FunctionDef | gast.Lambda
    helper: str | None = None
    captured: tuple[str, ...] = ()


@dataclass
class _Scope:
    filename: str
    resolver: Resolver
    locals: set[str]
    local_functions: dict[str, _LocalFunction]
    parent: "_Scope | None" = None
    temps: int = 0
    # names whose elements may be captured (`y[0]`): lifted locals and synthesized entries' params
    capturable: set[str] = field(default_factory=set)
    captures: list[Capture] = field(default_factory=list)
    state: list[StateCell] = field(default_factory=list)
    stateful_call_ok: bool = False   # set while normalizing `v = f(...)`, `return f(...)`, `f(...)`
    tuples: dict = field(default_factory=dict)   # tuple locals -> their elements (passes/tuples.py)

    def state_cell(self, kind: str, base: str, index: tuple) -> StateCell | None:
        for c in self.state:
            if c.kind == kind and c.base == base and c.index == index:
                return c
        return None

    def temp(self) -> str:
        while True:
            self.temps += 1
            t = f"_t{self.temps}"
            if t not in self.locals:
                self.locals.add(t)
                return t

    def find_local_function(self, id_: str) -> tuple["_Scope", _LocalFunction] | None:
        scope: _Scope | None = self
        while scope is not None:
            if id_ in scope.local_functions:
                return scope, scope.local_functions[id_]
            if id_ in scope.locals:
                return None
            scope = scope.parent
        return None


class Normalizer(CaptureMixin, StateMixin, TupleMixin):
    """Builds a ScalarProgram; one instance per kernel, shared by all functions it reaches."""

    def __init__(self, local_data: dict[str, Any] | None = None) -> None:
        self.functions: dict[str, gast.FunctionDef] = {}
        self.origins: dict[str, str] = {}
        self._helper_of: dict[int, str] = {}
        self._stack: list[int] = []
        self.custom_rules: dict[str, tuple[tuple[str, ...], list]] = {}
        self.captures: dict[str, list[Capture]] = {}   # helper -> its capture params
        self.state_of: dict[str, list[StateCell]] = {}  # helper -> the state it threads
        self.local_data: dict[str, Any] = local_data or {}  # a loss's local containers

    # ------------------------------------------------------------ functions

    def program(self, pf: ParsedFunction) -> ScalarProgram:
        rule = rules.user_rule(pf.fn)
        if rule is not None:  # the function itself has a user rule: an entry that calls it
            helper = self.rule_helper(rule, pf.location())
            entry = self._fresh(f"{helper}__ruled", derived=True)
            call = gast.Call(func=name(helper), args=[name(p) for p in rule.params], keywords=[])
            self.functions[entry] = function_def(entry, list(rule.params), [gast.Return(value=call)])
            return ScalarProgram(self.functions, entry, rule.params, self.origins, self.custom_rules)
        entry = self.user_function(pf.fn, pf)
        # the entry goes last so helpers print first
        self.functions[entry] = self.functions.pop(entry)
        return self._program(entry)

    def _program(self, entry: str) -> ScalarProgram:
        caps = self.captures.get(entry, [])
        params = tuple(a.id for a in self.functions[entry].args.args)
        return ScalarProgram(self.functions, entry, params, self.origins, self.custom_rules, list(caps),
                             list(self.state_of.get(entry, [])))

    def program_from_node(self, node: gast.FunctionDef, pf: ParsedFunction, fname: str) -> ScalarProgram:
        """Normalize a function tree synthesized from `pf`'s code (same resolver and file);
        elements of its parameters may be captured by the local functions it defines."""
        self._emit(fname, node, pf.filename, pf.resolver, None, captured=(), entry=True)
        self.functions[fname] = self.functions.pop(fname)
        return self._program(fname)

    def user_function(self, fn, pf: ParsedFunction | None = None, at=None) -> str:
        key = id(fn)
        if key in self._stack:
            raise RecursionNotSupportedError(
                f"'{fn.__name__}' calls itself (recursion)", at,
                hint="Write the recursion as a while loop; s2sad kernels cannot recurse.")
        if key in self._helper_of:
            return self._helper_of[key]
        pf = pf or parse_function(fn, at)
        helper = self._fresh(pf.name)
        self._helper_of[key] = helper
        self._stack.append(key)
        try:
            self._emit(helper, pf.node, pf.filename, pf.resolver, None, captured=())
        finally:
            self._stack.pop()
        line = pf.node.lineno
        self.origins[helper] = f"from {pf.filename}:{line} ({fn.__qualname__})"
        return helper

    def rule_helper(self, rule: rules.UserRule, at) -> str:
        """The helper computing a user-ruled function, its partials recorded as custom."""
        helper = self.user_function(rule.impl, at=at)
        if helper not in self.custom_rules:
            resolver = Resolver(rule.impl, extra={"math": math, "np": np, "numpy": np})
            scope = _Scope(f"<s2sad.defrule for {rule.fn.__name__}>", resolver, set(rule.params) | {"out"}, {})
            trees = [None if src is None else self.expr(gast_parse(src, mode="eval").body, scope)
                     for src in rule.partials]
            self.custom_rules[helper] = (rule.params, trees)
            self.origins[helper] = (self.origins.get(helper, "") + "; derivative from s2sad.defrule").lstrip("; ")
        return helper

    def _fresh(self, base: str, derived: bool = False) -> str:
        """A new helper name. A user's function name is made safe first (`_helper_base`),
        so that helpers never take a builtin's or primitive's spelling and never
        contain `__`, which only names the passes derive (`h__dual`, `f__ruled`) have."""
        base = base if derived else _helper_base(base)
        cand = fresh_name(base, set(self.functions) | set(self._helper_of.values()) | _TAKEN_NAMES)
        self.functions[cand] = None  # reserve
        return cand

    def _emit(self, helper: str, node, filename: str, resolver: Resolver, parent: _Scope | None,
              captured: tuple[str, ...], entry: bool = False) -> tuple[str, ...]:
        """Emit `helper`; returns the lifted locals it really reads (the rest are dropped)."""
        args = node.args
        loc = location_of(filename, node)
        # a function object's defaults are filled in at its calls (call_args); a local
        # function's would be evaluated where its `def` runs: refused
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or (args.defaults and parent is not None):
            raise UnsupportedSyntaxError(
                "scalar functions take plain positional parameters only (no *args, **kwargs, "
                "defaults or keyword-only parameters)", loc,
                hint="Give the function plain parameters; bind constants with a closure instead.")
        params = [a.id for a in args.args]
        body = [gast.Return(value=node.body)] if isinstance(node, gast.Lambda) else node.body
        for n in gast.walk(node):
            if isinstance(n, (gast.Yield, gast.YieldFrom, gast.Await)):
                kw = {gast.Yield: "yield", gast.YieldFrom: "yield from", gast.Await: "await"}[type(n)]
                raise UnsupportedSyntaxError(
                    f"'{kw}' is not supported: generators and coroutines cannot be differentiated (Yield)",
                    location_of(filename, n), hint="Return a number instead.")
        scope = _Scope(filename, resolver, set(params) | set(captured) | assigned_names(body), {}, parent,
                       capturable=set(captured) | (set(params) if entry else set()))
        if isinstance(node, gast.FunctionDef) and node.decorator_list and parent is not None:
            raise UnsupportedSyntaxError("decorated local functions are not supported", loc,
                                         hint="Remove the decorator.")
        self.declare_state(body, scope, node)
        self.declare_tuples(body, scope, params)
        core = self.block(body, scope)
        if scope.state:  # state-passing: every return also gives back the state
            for r in (n for st in core for n in gast.walk(st)):
                if isinstance(r, gast.Return):
                    r.value = gast.Tuple(elts=[r.value] + [name(c.param) for c in scope.state], ctx=gast.Load())
        if not definitely_returns(core):
            raise UnsupportedSyntaxError(
                f"'{getattr(node, 'name', 'lambda')}' can reach its end without returning a number", loc,
                hint="Add a return statement on every path.")
        read = {n.id for st in core for n in gast.walk(st) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
        used_lifted = tuple(c for c in captured if c in read)
        self.functions[helper] = function_def(
            helper, list(used_lifted) + params + [c.param for c in scope.captures] + [c.param for c in scope.state], core)
        self.captures[helper] = list(scope.captures)
        self.state_of[helper] = list(scope.state)
        return used_lifted

    # ------------------------------------------------------------ statements

    def block(self, body: list[gast.stmt], scope: _Scope) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for s in body:
            out.extend(self.stmt(s, scope))
        return out

    def err(self, scope: _Scope, node, msg: str, hint: str, cls=UnsupportedSyntaxError):
        return cls(msg, location_of(scope.filename, node), hint=hint)

    def stmt(self, s: gast.stmt, scope: _Scope) -> list[gast.stmt]:
        if type(s) in _UNSUPPORTED_STMTS:
            kw = _UNSUPPORTED_STMTS[type(s)]
            raise self.err(scope, s, f"'{kw}' is not supported in a differentiated scalar function",
                           "Move it out of the function s2sad differentiates.")
        if isinstance(s, (gast.Global, gast.Nonlocal)):
            return []  # declared as state cells before the body (declare_state)
        if isinstance(s, gast.FunctionDef):
            scope.local_functions[s.name] = _LocalFunction(s)
            return []
        if isinstance(s, gast.Assign):
            return self.assign_stmt(s, scope)
        if isinstance(s, gast.AugAssign):
            if not isinstance(s.target, (gast.Name, gast.Subscript)):
                raise self.err(scope, s, "assignment into an attribute writes state s2sad cannot carry",
                               "Keep state in a global number or an item of a list, array or dict.",
                               StatefulError)
            value = gast.BinOp(left=copy.deepcopy(s.target), op=s.op, right=s.value)
            if isinstance(s.target, gast.Subscript):
                value.left.ctx = gast.Load()
            gast.copy_location(value, s)
            return self.assign_to(s.target, value, scope, s)
        if isinstance(s, gast.AnnAssign):
            if s.value is None:
                return []
            return self.assign_to(s.target, s.value, scope, s)
        if isinstance(s, gast.If):
            return [gast.If(test=self.expr(s.test, scope), body=self.block(s.body, scope) or [gast.Pass()],
                            orelse=self.block(s.orelse, scope))]
        if isinstance(s, gast.While):
            if s.orelse:
                raise self.err(scope, s, "'while ... else' is not supported", "Use a flag variable.")
            return [gast.While(test=self.expr(s.test, scope), body=self.block(s.body, scope) or [gast.Pass()], orelse=[])]
        if isinstance(s, gast.For):
            return self.for_stmt(s, scope)
        if isinstance(s, gast.Return):
            if s.value is None:
                raise self.err(scope, s, "a scalar function must return a number", "Return a value.")
            if isinstance(s.value, gast.Tuple):
                raise self.err(scope, s, "a scalar function used elementwise must return one number",
                               "Return a single number.")
            pre, value = self.maybe_stateful_call(s.value, scope)
            return pre + [gast.Return(value=value)]
        if isinstance(s, gast.Expr):
            if isinstance(s.value, gast.Constant) and isinstance(s.value.value, str):
                return []  # docstring
            v = s.value
            if isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) and v.func.attr in MUTATING_METHODS \
                    and isinstance(v.func.value, gast.Name):
                raise self.err(scope, s, f"calls the mutating method '{v.func.attr}' on '{v.func.value.id}'",
                               "s2sad carries numbers as state: a global number, or an item of a list, "
                               "array or dict assigned with `S[0] = ...`.", StatefulError)
            if isinstance(v, gast.Call):
                pre, value = self.maybe_stateful_call(v, scope)
                if pre:
                    return pre
            raise self.err(scope, s, "an expression whose value is unused (a call for its side effects?)",
                           "Remove it, or assign its value to a variable you use.")
        if isinstance(s, (gast.Pass, gast.Break, gast.Continue)):
            return [type(s)()]
        raise self.err(scope, s, f"'{type(s).__name__}' statements are not supported in a scalar function",
                       "Rewrite it with assignments, if, while and for-range.")

    def assign_stmt(self, s: gast.Assign, scope: _Scope) -> list[gast.stmt]:
        pre = self.tuple_assign(s, scope) if len(s.targets) == 1 else None
        if pre is not None:
            return pre
        if len(s.targets) == 1 and isinstance(s.value, gast.Lambda) and isinstance(s.targets[0], gast.Name):
            scope.local_functions[s.targets[0].id] = _LocalFunction(s.value)
            return []
        if len(s.targets) == 1:
            return self.assign_to(s.targets[0], s.value, scope, s)
        tmp = scope.temp()
        out = [assign(tmp, self.expr(s.value, scope))]
        for t in s.targets:
            out += self.assign_to(t, name(tmp), scope, s, normalized=True)
        return out

    def assign_to(self, target, value, scope: _Scope, s, normalized: bool = False) -> list[gast.stmt]:
        if isinstance(target, gast.Name):
            if target.id in scope.local_functions:
                del scope.local_functions[target.id]
            if normalized:
                return [assign(target.id, value)]
            pre, v = self.maybe_stateful_call(value, scope)
            return pre + [assign(target.id, v)]
        if isinstance(target, (gast.Tuple, gast.List)):
            names = target.elts
            if not all(isinstance(n, gast.Name) for n in names):
                raise self.err(scope, s, "only names can be unpacked into", "Unpack into plain variables.")
            if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(names) and not normalized:
                temps = [scope.temp() for _ in names]
                out = [assign(t, self.expr(v, scope)) for t, v in zip(temps, value.elts)]
                return out + [assign(n.id, name(t)) for n, t in zip(names, temps)]
            unpacked = self.tuple_unpack(names, value, scope, s) if not normalized else None
            if unpacked is not None:
                return unpacked
            raise self.err(scope, s, "tuple unpacking needs a tuple of the same length on the right",
                           "Assign each variable separately.")
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            cell = scope.state_cell("item", target.value.id, item_key(target.slice))
            if cell is not None:
                return [assign(cell.param, value if normalized else self.expr(value, scope))]
        if isinstance(target, (gast.Subscript, gast.Attribute)):
            raise self.err(scope, s, "assignment into an item or attribute that s2sad cannot carry as state",
                           "Keep state in a global number or an item (constant key) of a list, array or "
                           "dict defined outside the function.", StatefulError)
        raise self.err(scope, s, "unsupported assignment target", "Assign to a plain variable.")

    def for_stmt(self, s: gast.For, scope: _Scope) -> list[gast.stmt]:
        if s.orelse:
            raise self.err(scope, s, "'for ... else' is not supported", "Use a flag variable.")
        it = s.iter
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id not in scope.locals \
                and scope.resolver.lookup(it.func.id) is builtins.range:
            if not isinstance(s.target, gast.Name):
                raise self.err(scope, s, "a for loop over range() needs a plain loop variable",
                               "Write `for i in range(n):`.")
            if it.keywords or not 1 <= len(it.args) <= 3:
                raise self.err(scope, it, "range() takes one to three positional arguments", "Fix the call.")
            args = [self.expr(a, scope) for a in it.args]
            if len(args) == 1:
                args = [const(0), args[0], const(1)]
            elif len(args) == 2:
                args.append(const(1))
            step = constant_value(args[2])
            if step is None or step == 0:
                raise self.err(scope, it, "the step of range() in a scalar function must be a nonzero constant",
                               "Use a while loop for a variable step.")
            rng = gast.Call(func=name("range"), args=args, keywords=[])
            return [gast.For(target=name(s.target.id, gast.Store()), iter=rng,
                             body=self.block(s.body, scope) or [gast.Pass()], orelse=[], type_comment=None)]
        if _leaves_loop(s.body):
            raise self.err(scope, s, "break/continue in a loop over a tuple is not supported",
                           "Loop over range(len(...)) instead.")
        unrolled = self.unrolled_for(s, scope)
        if unrolled is None:
            raise self.err(scope, it, "a for loop in a scalar function must run over range(...) or a tuple "
                           "(also through enumerate or zip)", "Use range(...) or a while loop.")
        return unrolled

    # ------------------------------------------------------------ expressions

    def expr(self, e: gast.expr, scope: _Scope) -> gast.expr:
        if isinstance(e, gast.Name):
            return self.name_expr(e, scope)
        if isinstance(e, gast.Constant):
            if isinstance(e.value, (bool, int, float)) and not isinstance(e.value, complex):
                return const(e.value)
            raise self.err(scope, e, f"the constant {e.value!r} is not a number", "Use numbers only.")
        if isinstance(e, gast.BinOp):
            if type(e.op) not in rules.BINOPS:
                raise self.err(scope, e, f"the operator '{type(e.op).__name__}' is not supported on numbers",
                               "Use + - * / ** // %.")
            return gast.BinOp(left=self.expr(e.left, scope), op=type(e.op)(), right=self.expr(e.right, scope))
        if isinstance(e, gast.UnaryOp):
            if type(e.op) not in rules.UNARYOPS:
                raise self.err(scope, e, "bitwise inversion (~) is not supported", "Use arithmetic.")
            operand = self.expr(e.operand, scope)
            if isinstance(e.op, gast.USub) and isinstance(operand, gast.Constant) and not isinstance(operand.value, bool):
                return const(-operand.value)
            return gast.UnaryOp(op=type(e.op)(), operand=operand)
        if isinstance(e, gast.BoolOp):
            return gast.BoolOp(op=type(e.op)(), values=[self.expr(v, scope) for v in e.values])
        if isinstance(e, gast.Compare):
            for op in e.ops:
                if type(op) not in rules.CMPOPS:
                    raise self.err(scope, e, f"the comparison '{type(op).__name__}' is not supported",
                                   "Use < <= > >= == !=.")
            operands = [self.expr(x, scope) for x in [e.left] + e.comparators]
            pairs = [gast.Compare(left=operands[i], ops=[type(op)()], comparators=[operands[i + 1]])
                     for i, op in enumerate(e.ops)]
            return pairs[0] if len(pairs) == 1 else gast.BoolOp(op=gast.And(), values=pairs)
        if isinstance(e, gast.IfExp):
            return gast.IfExp(test=self.expr(e.test, scope), body=self.expr(e.body, scope),
                              orelse=self.expr(e.orelse, scope))
        if isinstance(e, gast.Call):
            return self.call(e, scope)
        if isinstance(e, gast.Attribute):
            value = attribute_value(scope.resolver, e)
            if value is not MISSING and classify(value).kind == "constant":
                return const(value)
            raise self.err(scope, e, f"'{dotted(e)}' is not a number s2sad can use here",
                           "Only numbers, and calls of math/numpy functions, can be read from modules.",
                           FreeVariableError)
        if isinstance(e, gast.Subscript):
            return self.subscript(e, scope)
        if isinstance(e, gast.Lambda):
            raise self.err(scope, e, "a lambda must be assigned to a name or called",
                           "Write `g = lambda ...` and call g.")
        raise self.err(scope, e, f"'{type(e).__name__}' expressions are not supported in a scalar function",
                       "Use arithmetic, comparisons, conditional expressions and calls.")

    def name_expr(self, e: gast.Name, scope: _Scope) -> gast.expr:
        self.tuple_as_value(e, scope)
        # a local of this function, or of an enclosing scalar function (captured when lifted)
        s: _Scope | None = scope
        while s is not None:
            if e.id in s.locals:
                if s is not scope:
                    raise AssertionError("captured names are passed as parameters")
                return name(e.id)
            s = s.parent
        r = scope.resolver.resolve(e.id)
        if r is None:
            raise self.err(scope, e, f"name '{e.id}' is not defined", "Define it before calling the function.",
                           FreeVariableError)
        if r.kind == "constant":
            return const(r.value)
        if r.kind == "array":
            raise self.err(scope, e, f"'{e.id}' is a numpy array read inside a scalar function",
                           "Reading arrays or differentiated values from outside a scalar function is "
                           "not supported yet: pass it as an argument of s2sad.broadcast.",
                           FreeVariableError)
        raise self.err(scope, e, f"'{e.id}' holds a {type(r.value).__name__}, which a scalar function cannot use as a number",
                       "Only numbers (and tuples of numbers, indexed or looped over) can be read from "
                       "outside a scalar function.", FreeVariableError)

    def subscript(self, e: gast.Subscript, scope: _Scope) -> gast.expr:
        if isinstance(e.value, gast.Name):
            cell = scope.state_cell("item", e.value.id, item_key(e.slice))
            if cell is not None:
                return name(cell.param)
            captured = self.captured_element(e, e.value.id, scope)
            if captured is not None:
                return captured
        item = self.tuple_item(e, scope)
        if item is None:
            raise self.err(scope, e, "indexing is only supported on tuples here",
                           "Pass array elements as arguments of s2sad.broadcast.", FreeVariableError)
        return item

    def call(self, e: gast.Call, scope: _Scope) -> gast.expr:
        scope.call_depth = getattr(scope, "call_depth", 0) + 1
        try:
            return self._call(e, scope)
        finally:
            scope.call_depth -= 1

    def _call(self, e: gast.Call, scope: _Scope) -> gast.expr:
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
        n = self.tuple_len(e, scope)
        if n is not None:
            return n
        if isinstance(f, gast.Name):
            found = scope.find_local_function(f.id)
            if found is not None:
                return self.local_call(e, found[0], found[1], scope)
            if f.id in scope.locals:
                raise self.err(scope, e, f"'{f.id}' is a local variable, not a function", "Call a function.")
        value = attribute_value(scope.resolver, f)
        label = dotted(f)
        if value is MISSING:
            raise self.err(scope, e, f"cannot resolve the function '{label}'",
                           "Call a function defined in Python or one of math/numpy's.", NoSourceError)
        r = classify(value)
        if r.kind == "function":
            args = self.call_args(r.value, e, scope, label)
        else:
            args = [self.expr(a, scope) for a in e.args]
        if r.kind == "primitive":
            return self.primitive(r.value, args, e, scope, label)
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
        raise self.err(scope, e, f"'{label}' has no Python source s2sad can read and no derivative rule",
                       f"Register a rule for it: s2sad.defrule({label}, \"<d out/d x>\", impl=<a Python "
                       f"function computing it>), or call a function written in Python.", NoSourceError)

    def check_value_only(self, rule: rules.UserRule, e, scope: _Scope, label: str) -> None:
        """A special function without a derivative is called only by special.py and by rules' partials."""
        if rule.impl.__name__ not in rules.SPECIAL_VALUE_ONLY or rule is not rules.SPECIAL_USER_RULES.get(rule.impl.__name__):
            return
        if scope.filename != special.__file__ and not scope.filename.startswith("<s2sad.defrule for"):
            raise self.err(scope, e, f"'{label}' (polygamma of order 2) has no derivative in s2sad",
                           "Register your own with s2sad.defrule(...) to differentiate it.", UnsupportedOperationError)

    def ordered_call(self, family, args, e, scope: _Scope, label: str) -> gast.expr:
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

    def call_args(self, fn, e: gast.Call, scope: _Scope, label: str) -> list[gast.expr]:
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

    def primitive(self, prim: str, args, e, scope: _Scope, label: str) -> gast.expr:
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

    def local_call(self, e: gast.Call, owner: _Scope, lf: _LocalFunction, scope: _Scope) -> gast.expr:
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


# names a helper must not take: a call of one of these in the core language means the
# builtin (abs, min, max, float, int, round, range) or the math module, whatever the
# user's function was called
_TAKEN_NAMES = frozenset(dir(builtins)) | {"math"}


def _helper_base(user_name: str) -> str:
    """A user's function name as a helper's base name: `<lambda>` -> `lambda`, runs of
    underscores made one (`h__dual` -> `h_dual`), a builtin's name suffixed (`max` ->
    `max_fn`)."""
    base = re.sub(r"__+", "_", user_name.replace("<", "").replace(">", "")) or "fn"
    return base + "_fn" if base in _TAKEN_NAMES else base


def _leaves_loop(body: list[gast.stmt]) -> bool:
    """Whether a break/continue in `body` belongs to the loop around it (not to a loop
    nested inside)."""
    for st in body:
        if isinstance(st, (gast.Break, gast.Continue)):
            return True
        if isinstance(st, (gast.For, gast.While, gast.FunctionDef)):
            continue
        for field in ("body", "orelse"):
            if _leaves_loop(getattr(st, field, []) or []):
                return True
    return False


def normalize(pf: ParsedFunction) -> ScalarProgram:
    return Normalizer().program(pf)

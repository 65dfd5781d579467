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

`Normalizer` here holds the functions (entry, helpers, user rules) and expressions;
statements are in passes/normstmts.py, calls (primitives, helpers, rules, lifted local
functions) in passes/normcalls.py, the per-function `Scope` in passes/normscope.py.
"""
from __future__ import annotations

import builtins
import math
import re
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np

from .. import rules
from ..kernel import fresh_name
from ..errors import FreeVariableError, RecursionNotSupportedError, UnsupportedSyntaxError
from ..frontend import MISSING, ParsedFunction, Resolver, attribute_value, classify, location_of, parse_function
from ..parsing import gast_parse
from .captures import Capture, CaptureMixin
from .forward import no_derivative
from .normcalls import CallMixin
from .normscope import Scope
from .normstmts import StatementMixin
from .state import StateCell, StateMixin, item_key
from .tuples import TupleMixin
from .trees import assigned_names, const, definitely_returns, dotted, function_def, name


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


class Normalizer(StatementMixin, CallMixin, CaptureMixin, StateMixin, TupleMixin):
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
        # functions rewritten for rows (passes/rowelems.py): derived name -> ParsedFunction
        self.synthesized: dict[str, ParsedFunction] = {}

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
            scope = Scope(f"<s2sad.defrule for {rule.fn.__name__}>", resolver, set(rule.params) | {"out"}, {})
            if rules.SPECIAL_USER_RULES.get(rule.impl.__name__) is rule and rule.impl.__name__ in rules.SPECIAL_VALUE_ONLY:
                trees = [no_derivative(rule.impl.__name__) for _ in rule.partials]  # refused if differentiated
            else:
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

    def _emit(self, helper: str, node, filename: str, resolver: Resolver, parent: Scope | None,
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
        scope = Scope(filename, resolver, set(params) | set(captured) | assigned_names(body), {}, parent,
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

    # ------------------------------------------------------------ errors

    def err(self, scope: Scope, node, msg: str, hint: str, cls=UnsupportedSyntaxError):
        return cls(msg, location_of(scope.filename, node), hint=hint)

    # ------------------------------------------------------------ expressions

    def expr(self, e: gast.expr, scope: Scope) -> gast.expr:
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

    def name_expr(self, e: gast.Name, scope: Scope) -> gast.expr:
        self.tuple_as_value(e, scope)
        # a local of this function, or of an enclosing scalar function (captured when lifted)
        s: Scope | None = scope
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

    def subscript(self, e: gast.Subscript, scope: Scope) -> gast.expr:
        item = self.derivative_item(e, scope)   # vg(x)[0] of a derivative s2sad made
        if item is not None:
            return item
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


def normalize(pf: ParsedFunction) -> ScalarProgram:
    return Normalizer().program(pf)

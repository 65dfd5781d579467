"""Array-level loss -> one fused elementwise kernel and the reduction that consumes it.

Input: the function being differentiated (a `ParsedFunction`). It must be, after
substituting its local assignments, `R(E)` or `E`, where `R` is a reduction (`sum`,
`np.sum`, `np.mean`, `.sum()`, `.mean()`) and `E` an elementwise expression over its
arguments: arithmetic and comparisons, numpy ufuncs and math functions,
`s2sad.broadcast(f, ...)`, `map(f, x)` (also wrapped in `list`/`np.array`/`np.fromiter`),
list comprehensions and generator expressions over one array. Free names that hold
numpy arrays (data) become extra, undifferentiated kernel inputs read at call time.

Output: a `LossPlan`. `E` becomes one synthesized scalar function whose parameters
are the arrays it reads: every site is fused into it, so the gradient of `R(E)` is one
pass over the data (the dual of `E`, summed on the way). Each site is also recorded,
with its location, for `explain`.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

import gast
import numpy as np

from .. import rules
from ..errors import FreeVariableError, S2SADError, UnsupportedOperationError, UnsupportedSyntaxError
from ..marks import derivative_mark, is_entry_point
from ..frontend import MISSING, ParsedFunction, attribute_value, classify, location_of, source_line
from ..kernel_text import unparse
from .normalize import Normalizer, ScalarProgram
from .rowcolumns import Column, parse_signature
from .rowelems import RowCalls, is_zip
from .trees import dotted, function_def, literal, name
from .purity import classify_function


@dataclass
class Site:
    """One elementwise site, for explain."""

    location: str
    applied: str
    path: str
    reason: str
    source_line: str = ""


@dataclass
class LossPlan:
    program: ScalarProgram
    reduction: str                       # "sum" | "mean" | "none"
    inputs: list[tuple[str, object]]     # per kernel param: ("arg", index) or ("free", name)
    sites: list[Site] = field(default_factory=list)
    return_line: str = ""
    return_location: str = ""

    def capture_location(self, param: str) -> str:
        for kind, ref in self.inputs:
            if kind == "capture" and ref.param == param:
                return str(ref.location)
        return "?"


REDUCTIONS = {"sum": "sum", "mean": "mean"}


@dataclass(frozen=True)
class Refusal:
    """Why the fused planner does not take a function: the first construct it refused,
    where, and what to do; `error()` is the located error planning it would raise."""

    message: str
    node: gast.AST
    hint: str
    cls: type = UnsupportedSyntaxError
    filename: str = ""
    fused_only: bool = False     # a construct only the fused planner takes: its refusal is final

    def error(self) -> S2SADError:
        return self.cls(self.message, location_of(self.filename, self.node), hint=self.hint)


@dataclass
class FusedCheck:
    """What the fused planner's check found: its refusal (None: it takes the function)
    and the scalar functions the kernel would apply elementwise (lambdas and local
    defs as trees, the user's functions as values), which the route analysis reads."""

    refusal: Refusal | None
    reduction: str = "none"                 # when taken: "sum" | "mean" | "none"
    applied_nodes: list = field(default_factory=list)
    applied_functions: list = field(default_factory=list)
    free_arrays: list = field(default_factory=list)   # free data arrays the kernel would read


class _Planner:
    def __init__(self, pf: ParsedFunction, checking: bool = False):
        self.pf = pf
        # checking: the translation only (fused_check), no purity verdicts, no kernel
        self.checking = checking
        self.refusal: Refusal | None = None   # the first construct refused (see refuse)
        self.applied_functions: list = []     # user functions applied elementwise
        self.node = pf.node
        self.params = [a.id for a in self.node.args.args]
        self.env: dict[str, gast.expr] = {}   # local name -> array expression it holds
        self.prelude: list[gast.stmt] = []    # lambdas/defs the kernel needs
        self.free_arrays: list[str] = []
        self.sites: list[Site] = []
        self.comp_count = 0
        self.local_data: dict[str, list] = {}  # local lists/tuples of numbers (state of nested defs)
        self.rows = RowCalls(pf)              # row functions: their rewrites and the columns they read

    def refuse(self, node, msg, hint, cls=UnsupportedSyntaxError, fused_only=False) -> gast.expr:
        """Record the first construct the planner refuses (the walk goes on, its result
        unused): the check is an analysis; planning raises `self.refusal.error()`."""
        if self.refusal is None:
            self.refusal = Refusal(msg, node, hint, cls, self.pf.filename, fused_only)
        return gast.Constant(value=0.0, kind=None)

    def loc(self, node) -> str:
        return str(location_of(self.pf.filename, node))

    def translate(self):
        """The loss's statements and return -> (reduction, elementwise expression, its
        return statement), or None when a construct is refused (`self.refusal`): the
        planner's check, which raises nothing."""
        node = self.node
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            self.refuse(node, "the differentiated function cannot take *args or **kwargs",
                        "Name its parameters (def f(x, y, k=1.0)); a decorator's wrapper that only forwards them, "
                        "fn(*args, **kwargs), is taken.")
            return None
        ret = None
        for s in function_body(node):
            if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant) and isinstance(s.value.value, str):
                continue
            if ret is not None:
                self.refuse(s, "statements after return", "Remove them.")
                return None
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
                if isinstance(s.value, gast.Lambda):
                    self.prelude.append(s)
                elif _number_list(s.value) is not None:
                    self.local_data[s.targets[0].id] = _number_list(s.value)
                else:
                    self.env[s.targets[0].id] = self.subst(s.value)
                continue
            if isinstance(s, gast.FunctionDef):
                self.prelude.append(s)
                continue
            if isinstance(s, gast.Return) and s.value is not None:
                ret = s
                continue
            self.refuse(s, f"'{type(s).__name__}' at the array level is not supported yet",
                        "The differentiated function may assign array expressions and return a "
                        "reduction (np.sum, np.mean, sum) of an elementwise expression.")
            return None
        if ret is None:
            self.refuse(node, "the differentiated function does not return a value", "Return the loss.")
            return None
        reduction, inner = self.reduction(ret.value)
        self.reduced = (reduction, inner)   # a broadcast whose output is a tuple must be reduced by a sum
        for n in gast.walk(inner):
            if isinstance(n, gast.Name) and n.id in self.local_data:
                self.refuse(n, f"the local container '{n.id}' is read at the array level",
                            "Local lists may only be used as state by the scalar functions the loss "
                            "applies elementwise.", UnsupportedOperationError)
                return None
        expr = self.elementwise(inner)
        return None if self.refusal is not None else (reduction, expr, ret)

    def check(self) -> FusedCheck:
        """Whether the fused planner takes the function (straight-line: see
        `straight_line`), and what its kernel would apply elementwise."""
        got = self.translate()
        return FusedCheck(self.refusal, got[0] if got else "none", list(self.prelude), list(self.applied_functions),
                          list(self.free_arrays))

    def plan(self) -> LossPlan:
        """The fused plan of a straight-line function (one the route analysis gave to
        this planner); a refused construct is the user's error, located."""
        got = self.translate()
        if got is None:
            raise self.refusal.error()
        reduction, expr, ret = got
        node = self.node
        used = {n.id for n in gast.walk(expr) if isinstance(n, gast.Name)}
        used |= {n.id for s in self.prelude for n in gast.walk(s) if isinstance(n, gast.Name)}
        kparams = [p for p in self.params if p in used] + self.free_arrays + [c for c in self.rows.columns if c in used]
        fname = f"{self._name()}__elementwise"
        fn = function_def(fname, kparams, copy.deepcopy(self.prelude) + [gast.Return(value=expr)])
        gast.copy_location(fn, node)
        normalizer = Normalizer(self.local_data)
        normalizer.synthesized = self.rows.synthesized
        program = drop_unread_params(normalizer.program_from_node(fn, self.pf, fname))
        inputs = _inputs(program, self.params, self.rows.columns)
        program = unwrap_single_call(program)
        inputs = _renamed_columns(inputs, program.params)
        mark_closures(self.sites, program)
        _mark_state(self.sites, program)
        return LossPlan(program, reduction, inputs, self.sites,
                        return_line=source_line(self.pf.filename, ret), return_location=self.loc(ret))

    def plan_scalar(self) -> LossPlan:
        """The whole function as one scalar function of scalars."""
        node = self.node
        program = Normalizer().program(self.pf)
        _mark_state(self.sites, program)
        return LossPlan(program, "none", _inputs(program, self.params),
                        [Site(self.loc(node), self.pf.name, "dual", "a scalar function: differentiated as a whole"
                              if rules.user_rule(self.pf.fn) is None else "its rule registered with s2sad.defrule",
                              source_line(self.pf.filename, node))],
                        return_line=source_line(self.pf.filename, node), return_location=self.loc(node))

    def _name(self) -> str:
        n = self.pf.name
        return n if n.isidentifier() else "loss"

    # -- substitution of locals
    def subst(self, e: gast.expr) -> gast.expr:
        class Sub(gast.NodeTransformer):
            def visit_Name(s, node):
                if isinstance(node.ctx, gast.Load) and node.id in self.env:
                    return copy.deepcopy(self.env[node.id])
                return node

            def visit_Lambda(s, node):
                return node  # lambdas have their own scope

        return Sub().visit(copy.deepcopy(e))

    def reduction(self, e: gast.expr) -> tuple[str, gast.expr]:
        e = self.subst(e)
        if isinstance(e, gast.Call) and not e.keywords and len(e.args) == 1:
            f = e.func
            value = attribute_value(self.pf.resolver, f)
            if value is sum or value is np.sum:
                return "sum", e.args[0]
            if value is np.mean:
                return "mean", e.args[0]
        if isinstance(e, gast.Call) and not e.args and not e.keywords and isinstance(e.func, gast.Attribute) \
                and e.func.attr in ("sum", "mean"):
            return e.func.attr, e.func.value
        if isinstance(e, gast.Call) and e.keywords \
                and not is_entry_point(attribute_value(self.pf.resolver, e.func), "broadcast"):
            self.refuse(e, "reductions with keyword arguments (axis=...) are not supported at this level",
                        "Reduce over the whole array: np.sum(x).", UnsupportedOperationError)
        return "none", e

    # -- elementwise expressions
    def elementwise(self, e: gast.expr) -> gast.expr:
        if isinstance(e, gast.Name):
            if e.id in self.params:
                return e
            value = self.pf.resolver.lookup(e.id)
            if value is MISSING:
                return self.refuse(e, f"name '{e.id}' is not defined", "Define it.", FreeVariableError)
            if isinstance(value, np.ndarray):
                if e.id not in self.free_arrays:
                    self.free_arrays.append(e.id)
                return e
            if classify(value).kind == "constant":
                return e
            return self.refuse(e, f"'{e.id}' holds a {type(value).__name__}, not an array or a number",
                           "Pass it as an argument.", FreeVariableError)
        if isinstance(e, gast.Constant):
            return e
        if isinstance(e, gast.BinOp):
            if isinstance(e.op, gast.MatMult):
                return self.refuse(e, "'@' is not supported at this level yet", "Use elementwise operations.",
                               UnsupportedOperationError)
            return gast.BinOp(left=self.elementwise(e.left), op=e.op, right=self.elementwise(e.right))
        if isinstance(e, gast.UnaryOp):
            return gast.UnaryOp(op=e.op, operand=self.elementwise(e.operand))
        if isinstance(e, gast.Compare):
            return gast.Compare(left=self.elementwise(e.left), ops=e.ops,
                                comparators=[self.elementwise(c) for c in e.comparators])
        if isinstance(e, (gast.ListComp, gast.GeneratorExp)):
            return self.comprehension(e)
        if isinstance(e, gast.Call):
            return self.call(e)
        if isinstance(e, gast.Attribute):
            value = attribute_value(self.pf.resolver, e)
            if value is not MISSING and classify(value).kind == "constant":
                return e
        return self.refuse(e, f"'{type(e).__name__}' is not an elementwise expression s2sad supports here",
                       "Use arithmetic, numpy ufuncs, s2sad.broadcast, map or a comprehension.",
                       UnsupportedOperationError)

    def call(self, e: gast.Call) -> gast.expr:
        value = attribute_value(self.pf.resolver, e.func)
        signature = self.signature(e, value)    # (keywords other than broadcast's signature= refused)
        if isinstance(e.func, gast.Call):    # s2sad.grad(f)(x): the normalizer makes it, or refuses it
            return self.apply(e.func, [self.elementwise(a) for a in e.args], e, "call")
        label = dotted(e.func)
        if value in (list, np.array, np.asarray, np.fromiter, tuple) and len(e.args) >= 1:
            return self.elementwise(e.args[0])
        if is_entry_point(value, "broadcast") or value is map:
            if len(e.args) < 2:
                return self.refuse(e, f"{label} needs a function and at least one array", "Fix the call.")
            fnode, arrays = e.args[0], [self.element_source(a) for a in e.args[1:]]
            if signature is not None and signature[1] is not None and getattr(self, "reduced", None) != ("sum", e):
                return self.refuse(e, "signature= says this broadcast returns a tuple per element, which only a "
                                   "sum of the whole broadcast can take", "Write the loss as np.sum(s2sad.broadcast("
                                   "f, X, signature=...)), or sum the tuple in f.", UnsupportedOperationError,
                                   fused_only=True)
            return self.apply(fnode, arrays, e, label, signature)
        if value is MISSING:
            return self.refuse(e, f"cannot resolve '{label}'", "Call numpy or a function written in Python.",
                           UnsupportedOperationError)
        r = classify(value)
        if r.kind == "primitive":
            self.sites.append(Site(self.loc(e), label, "rule", f"{label} has a derivative rule ({r.value})",
                                   source_line(self.pf.filename, e)))
            # located: the normalizer refuses a wrong call (np.round(x, k)) at this line
            return gast.copy_location(gast.Call(func=e.func, args=[self.elementwise(a) for a in e.args],
                                                keywords=[]), e)
        if rules.ordered_family(value) is not None:   # polygamma(n, x): normalize checks n, located here
            self.sites.append(Site(self.loc(e), label, "rule", f"{label} has derivative rules for orders 0 and 1",
                                   source_line(self.pf.filename, e)))
            return gast.copy_location(gast.Call(func=e.func, args=[self.elementwise(a) for a in e.args],
                                                keywords=[]), e)
        if r.kind in ("function", "user_rule"):
            # a user function called on arrays: elementwise only if it is scalar code
            return self.apply(e.func, [self.elementwise(a) for a in e.args], e, label)
        return self.refuse(e, f"'{label}' is not supported by s2sad at the array level",
                       f"Use an elementwise form, or register a rule with s2sad.defrule({label}, ...).",
                       UnsupportedOperationError)

    def signature(self, e: gast.Call, value):
        """broadcast's `signature=` (per argument, its core dimension); other keywords refused."""
        if not e.keywords:
            return None
        k = e.keywords[0]
        if is_entry_point(value, "broadcast") and len(e.keywords) == 1 and k.arg == "signature" \
                and isinstance(k.value, gast.Constant):
            return parse_signature(k.value.value, location_of(self.pf.filename, e))
        self.refuse(e, "keyword arguments are not supported here", "Pass arguments by position.",
                    UnsupportedOperationError)
        return None

    def element_source(self, a: gast.expr) -> gast.expr:
        """An array map/broadcast reads, or `zip(a, b, ...)` of them (a row's components)."""
        if is_zip(self.pf.resolver, a):
            return gast.Call(func=a.func, args=[self.elementwise(x) for x in a.args], keywords=[])
        return self.elementwise(a)

    def origin(self, array) -> str | None:
        """Where a row function's 2-D array comes from: the loss's argument or a free array."""
        if isinstance(array, gast.Name):
            return "param" if array.id in self.params else "free" if array.id in self.free_arrays else None
        return None

    def local_call(self, fname: str, arrays, site, signature) -> gast.expr:
        """A call of the loss's lambda or local def `fname` on elements (rows rewritten
        when planning; the check reads the def as written)."""
        if self.checking or self.refusal is not None:
            return gast.Call(func=name(fname), args=arrays, keywords=[])
        return located(self.rows.local_call(self.prelude, fname, arrays, site, signature, self.origin), site)

    def apply(self, fnode, arrays, site, label, signature=None) -> gast.expr:
        """A call of a scalar function on elements: `f(a1, a2)` inside the kernel."""
        if isinstance(fnode, gast.Lambda):
            lam_name = f"_f{len(self.prelude) + 1}"
            self.prelude.append(gast.Assign(targets=[name(lam_name, gast.Store())], value=fnode, type_comment=None))
            self.sites.append(Site(self.loc(site), f"lambda at line {fnode.lineno}", "dual",
                                   "pure: reads only its arguments and constants", source_line(self.pf.filename, site)))
            return self.local_call(lam_name, arrays, site, signature)
        if isinstance(fnode, gast.Name) and any(
                isinstance(s, (gast.FunctionDef,)) and s.name == fnode.id or
                isinstance(s, gast.Assign) and s.targets[0].id == fnode.id for s in self.prelude):
            self.sites.append(Site(self.loc(site), fnode.id, "dual", "local function: pure",
                                   source_line(self.pf.filename, site)))
            return self.local_call(fnode.id, arrays, site, signature)
        if isinstance(fnode, gast.Call):   # s2sad.grad(f) written in place: the normalizer makes it
            self.sites.append(Site(self.loc(site), f"{label}({unparse(fnode).strip()})", "dual",
                                   "a derivative s2sad made: its forward dual program is the helper (nested duals)",
                                   source_line(self.pf.filename, site)))
            return gast.copy_location(gast.Call(func=fnode, args=arrays, keywords=[]), site)
        value = attribute_value(self.pf.resolver, fnode)
        if value is MISSING:
            return self.refuse(site, f"cannot tell which function '{dotted(fnode)}' is",
                           "Pass a function s2sad can name: a def, a lambda, or a variable holding one.",
                           FreeVariableError)
        self.applied_functions.append(value)
        if self.checking or self.refusal is not None:   # (verdicts are for planning's sites)
            return gast.Call(func=fnode, args=arrays, keywords=[])
        r = classify(value)
        if r.kind == "primitive":
            self.sites.append(Site(self.loc(site), f"{label}({dotted(fnode)})", "rule",
                                   f"{dotted(fnode)} has a derivative rule ({r.value})", source_line(self.pf.filename, site)))
        elif r.kind == "user_rule":
            self.sites.append(Site(self.loc(site), f"{label}({dotted(fnode)})", "rule",
                                   f"{dotted(fnode)} has a rule registered with s2sad.defrule",
                                   source_line(self.pf.filename, site)))
        else:
            verdict = classify_function(value, location_of(self.pf.filename, site))
            self.sites.append(Site(self.loc(site), f"{label}({dotted(fnode)})" if label in ("map", "broadcast", "s2sad.broadcast") else dotted(fnode),
                                   verdict.path, verdict.reason, source_line(self.pf.filename, site)))
            if derivative_mark(value) is not None:   # a grad s2sad made: the normalizer makes its helper
                return located(gast.Call(func=fnode, args=arrays, keywords=[]), site)
            return located(self.rows.function_call(fnode, value, arrays, site, signature, self.origin), site)
        return located(self.rows.plain_call(fnode, arrays, site, signature), site)

    def comprehension(self, e) -> gast.expr:
        if len(e.generators) != 1:
            return self.refuse(e, "only comprehensions with one 'for' are supported", "Use a single loop.",
                           UnsupportedOperationError)
        g = e.generators[0]
        unpacked = isinstance(g.target, gast.Tuple) and is_zip(self.pf.resolver, g.iter) \
            and len(g.target.elts) == len(g.iter.args) and all(isinstance(t, gast.Name) for t in g.target.elts)
        if g.ifs or g.is_async or not (isinstance(g.target, gast.Name) or unpacked):
            return self.refuse(e, "comprehensions with conditions or unpacking are not supported",
                               "Use a conditional expression inside: [f(z) if c else 0.0 for z in x]; unpack "
                               "only zip(...) of arrays: [a * b for a, b in zip(x, y)].",
                           UnsupportedOperationError)
        targets = g.target.elts if unpacked else [g.target]
        lam = gast.Lambda(args=gast.arguments(args=[name(t.id, gast.Param()) for t in targets], posonlyargs=[],
                                              vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
                          body=e.elt)
        gast.copy_location(lam, e)
        arrays = [self.elementwise(a) for a in g.iter.args] if unpacked else [self.element_source(g.iter)]
        lam_name = f"_f{len(self.prelude) + 1}"
        self.prelude.append(gast.Assign(targets=[name(lam_name, gast.Store())], value=lam, type_comment=None))
        self.sites.append(Site(self.loc(e), "comprehension", "dual", "pure: reads only its loop variable and constants",
                               source_line(self.pf.filename, e)))
        if self.checking or self.refusal is not None:
            return gast.Call(func=name(lam_name), args=arrays, keywords=[])
        return self.rows.local_call(self.prelude, lam_name, arrays, e, None, self.origin)


def located(node: gast.expr, site) -> gast.expr:
    """`node` at the user's call `site` (where errors about it point), unless it has a place."""
    if getattr(node, "lineno", None) is None:
        gast.copy_location(node, site)
    return node


def mark_closures(sites: list[Site], p: ScalarProgram) -> None:
    """Sites of a kernel that reads captured values take the dual+closure path."""
    if not p.captures:
        return
    reads = ", ".join(f"{c.base}[{', '.join(map(str, c.index))}] "
                      f"({'differentiated' if c.origin == 'param' else 'data'}, read at {c.location})"
                      for c in p.captures)
    for s in sites:
        if s.path in ("dual", "dual+closure"):
            s.path = "dual+closure"
            s.reason = f"closure: captured values become kernel arguments with their own partials: {reads}"


def _mark_state(sites: list[Site], p: ScalarProgram) -> None:
    """Sites of a kernel that threads state take the scan path."""
    if not p.state:
        return
    writes = ", ".join(f"{c.describe()} (written at {c.location})" for c in p.state)
    for s in sites:
        if s.path != "rule":
            s.path = "scan"
            s.reason = (f"stateful: writes {writes}; the elements run in order with the state threaded "
                        f"through, then a reverse sweep; on the GPU (cupy arrays) it runs in one thread, "
                        f"so it is slow there")


def _number_list(e) -> list | None:
    """The values of a list/tuple literal of numbers, else None."""
    if isinstance(e, (gast.List, gast.Tuple)) and e.elts:
        vals = [literal(x) for x in e.elts]
        if all(v is not None for v in vals):
            return [float(v) for v in vals]
    return None


def _inputs(p: ScalarProgram, params: list[str], columns=None) -> list[tuple]:
    """Where each non-state kernel parameter's value comes from: ("arg", index of the
    loss's argument), ("free", name of a free array) or ("capture", Capture or a row
    function's rowcolumns.Column)."""
    caps = {c.param: c for c in p.captures} | dict(columns or {})
    out = []
    for kp in p.params[: len(p.params) - len(p.state)]:
        if kp in caps:
            out.append(("capture", caps[kp]))
        elif kp in params:
            out.append(("arg", params.index(kp)))
        else:
            out.append(("free", kp))
    return out


def _renamed_columns(inputs: list[tuple], kernel_params) -> list[tuple]:
    """Row columns named as the kernel's parameters (after unwrap_single_call)."""
    return [(k, dataclasses.replace(ref, param=kernel_params[j]) if isinstance(ref, Column) else ref)
            for j, (k, ref) in enumerate(inputs)]


def drop_unread_params(p: ScalarProgram) -> ScalarProgram:
    """Parameters the kernel never reads (arrays read only through captured elements,
    `y` in `lambda z: z + y[0]`) are not broadcast with the others."""
    fn = p.functions[p.entry]
    read = {n.id for st in fn.body for n in gast.walk(st) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
    caps = {c.param for c in p.captures} | {c.param for c in p.state}
    keep = [a for a in fn.args.args if a.id in read or a.id in caps]
    if len(keep) == len(fn.args.args):
        return p
    fn.args.args = keep
    p.params = tuple(a.id for a in keep)
    return p


def unwrap_single_call(p: ScalarProgram) -> ScalarProgram:
    """`def loss__elementwise(x): return f(x)` -> f itself is the entry (reads better)."""
    fn = p.functions[p.entry]
    if len(fn.body) == 1 and isinstance(fn.body[0], gast.Return):
        call = fn.body[0].value
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Name) and call.func.id in p.functions \
                and call.func.id not in p.custom_rules \
                and [getattr(a, "id", None) for a in call.args] == list(p.params):
            helper = p.functions[call.func.id]
            functions = {k: v for k, v in p.functions.items() if k != p.entry}
            functions[call.func.id] = functions.pop(call.func.id)
            hparams = tuple(a.id for a in helper.args.args)
            by_position = {c.param: hparams[p.params.index(c.param)] for c in p.captures}
            captures = [dataclasses.replace(c, param=by_position[c.param]) for c in p.captures]
            return ScalarProgram(functions, call.func.id, hparams, p.origins, p.custom_rules, captures, p.state)
    return p


def straight_line_statement(s: gast.stmt) -> bool:
    """Statements the array-level planner handles: docstrings, assignments, defs, return."""
    if isinstance(s, gast.Expr):
        return isinstance(s.value, gast.Constant) and isinstance(s.value.value, str)
    if isinstance(s, gast.Assign):
        return len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
    return isinstance(s, (gast.FunctionDef, gast.Return))


def function_body(node) -> list:
    """The statements of a def, or of a lambda as `return <its body>`."""
    return [gast.Return(value=node.body)] if isinstance(node, gast.Lambda) else node.body


def straight_line(node) -> bool:
    """Whether a function's body is statements the fused planner reads (docstrings,
    assignments to names, defs, return): no control flow."""
    return all(straight_line_statement(s) for s in function_body(node))


def fused_check(pf: ParsedFunction) -> FusedCheck:
    """The fused planner's check of a straight-line function, which raises nothing:
    whether it takes `R(E)`/`E` (its refusal, else None) and what E applies."""
    return _Planner(pf, checking=True).check()


def plan_loss(pf: ParsedFunction) -> LossPlan:
    """The fused plan of a straight-line function the fused check takes (plans routes
    it here); a refusal is raised, located."""
    return _Planner(pf).plan()


def plan_scalar(pf: ParsedFunction) -> LossPlan:
    """`pf` as one scalar function of scalars: a function with a defrule rule, or one
    that uses no array operation but control flow or `and`/`or` as a value (passes/routes.py)."""
    return _Planner(pf).plan_scalar()


def translate_elementwise(pf: ParsedFunction, expr: gast.expr, params, prelude=()):
    """The planner's translation of one elementwise user expression, shared with the
    array level (passes/arrayprog.py): `expr` over the names `params` (and numbers) ->
    (kernel expression, prelude of lambdas/defs it calls, its Sites, free arrays read)."""
    t = _Planner(pf)
    t.params = list(params)
    t.prelude = list(prelude)
    out = t.elementwise(expr)
    if t.refusal is not None:
        raise t.refusal.error()
    if t.rows.columns or t.rows.synthesized:
        t.refuse(expr, "a function of rows is applied inside an array program",
                 "Apply it in a loss of the form sum(map(f, X)) or np.sum(s2sad.broadcast(f, X)), or "
                 "pass the columns as arrays: map(f, X[:, 0], X[:, 1]) with f taking numbers.",
                 UnsupportedOperationError)
        raise t.refusal.error()
    return out, t.prelude, t.sites, t.free_arrays

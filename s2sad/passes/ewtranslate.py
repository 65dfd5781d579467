"""The fused planner's translation of elementwise expressions (passes/elementwise.py):
a user's array expression over the loss's parameters -> the expression of one scalar
kernel over their elements, the scalar functions it applies (lambdas, local defs, the
user's functions: `prelude`, `applied_functions`), and where each was applied (`Site`,
for explain). A construct it does not read is recorded (`refuse`: the first `Refusal`)
and the walk goes on, so that the check is an analysis that raises nothing.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import gast
import numpy as np

from .. import rules
from ..errors import FreeVariableError, S2SADError, UnsupportedOperationError, UnsupportedSyntaxError
from ..frontend import MISSING, ParsedFunction, attribute_value, classify, location_of, source_line
from ..freedata import HINT as FREE_DATA_HINT, lossy_data
from ..kernel_text import unparse
from ..marks import derivative_mark, is_entry_point
from .purity import classify_function
from .rowcolumns import parse_signature
from .rowelems import RowCalls, is_zip
from .trees import dotted, name


@dataclass
class Site:
    """One elementwise site, for explain."""

    location: str
    applied: str
    path: str
    reason: str
    source_line: str = ""


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


def located(node: gast.expr, site) -> gast.expr:
    """`node` at the user's call `site` (where errors about it point), unless it has a place."""
    if getattr(node, "lineno", None) is None:
        gast.copy_location(node, site)
    return node


class Translation:
    """One translation's state: the loss's parameters, its local assignments (`env`),
    the scalar functions its kernel applies, the free arrays it reads, and the first
    construct refused."""

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

    # the loss's own names (arrays, or numbers a plan for arrays serves): `not` of one is refused;
    # the array level's translation (translate_elementwise) checked its names itself (ewexprs)
    names_are_arrays = True

    def refuse(self, node, msg, hint, cls=UnsupportedSyntaxError, fused_only=False) -> gast.expr:
        """Record the first construct the planner refuses (the walk goes on, its result
        unused): the check is an analysis; planning raises `self.refusal.error()`."""
        if self.refusal is None:
            self.refusal = Refusal(msg, node, hint, cls, self.pf.filename, fused_only)
        return gast.Constant(value=0.0, kind=None)

    def loc(self, node) -> str:
        return str(location_of(self.pf.filename, node))

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
                lossy = lossy_data(value)
                if lossy is not None:
                    return self.refuse(e, f"'{e.id}' holds {lossy}", FREE_DATA_HINT, FreeVariableError)
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
            # (each rebuilt node keeps the user's location: a refusal of its operator quotes that line)
            return gast.copy_location(gast.BinOp(left=self.elementwise(e.left), op=e.op,
                                                 right=self.elementwise(e.right)), e)
        if isinstance(e, gast.UnaryOp):
            if isinstance(e.op, gast.Not) and self.names_are_arrays and not isinstance(e.operand, gast.Constant):
                # (numpy refuses the truth value of an array: elementwise here would be another function)
                return self.refuse(e, "'not' of an array: numpy refuses an array's truth value",
                                   "Write np.logical_not(x) (or x == 0) for each element.", UnsupportedOperationError)
            return gast.copy_location(gast.UnaryOp(op=e.op, operand=self.elementwise(e.operand)), e)
        if isinstance(e, gast.Compare):
            return gast.copy_location(gast.Compare(left=self.elementwise(e.left), ops=e.ops,
                                                   comparators=[self.elementwise(c) for c in e.comparators]), e)
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

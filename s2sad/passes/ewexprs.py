"""Elementwise expressions, lowered by the array-program builder
(passes/arrayprog.Builder): arithmetic, comparisons, ufuncs, user scalar functions,
`s2sad.broadcast`/`map`/comprehensions of scalar functions, and the selects
(`np.where`, `np.clip`, `a if c else b`).

A maximal elementwise expression becomes one `Elementwise` statement: its parts that
are not elementwise are lowered first, as operands (held as `__h0`, `__h1`... by a
`Template`, one per expression), and
the rest is the kernel planner's translation of it (elementwise.translate_elementwise),
a template over the holders. `bind_template` binds the template's global functions and
constants to objects, so that it means the same in any kernel passes/fusion.py fuses
it into. A local function applied elementwise goes into the template's prelude, the
locals it reads held as inputs.
"""
from __future__ import annotations

import copy
from typing import Any

import gast
import numpy as np

from .. import rules
from ..errors import FreeVariableError, S2SADError, UnsupportedOperationError
from ..frontend import MISSING, attribute_value, classify, source_line
from ..marks import is_entry_point
from .arrayir import Const, Ctx, Elementwise, const_expr, operand_expr
from .arrayscope import UNBOUND, Bound, LocalFn, Scope
from .elementwise import translate_elementwise
from .ewtranslate import Site
from .primhints import root_name
from .trees import assigned_names, dotted, name


class ElementwiseExprs:
    """The builder's lowering of elementwise expressions into `Elementwise` statements."""

    def __init__(self, builder):
        self.b = builder

    def is_elementwise(self, e, scope: Scope) -> bool:
        if isinstance(e, gast.BinOp):
            return not isinstance(e.op, gast.MatMult)
        if isinstance(e, gast.UnaryOp):
            return not isinstance(e.op, gast.Invert)
        if isinstance(e, (gast.Compare, gast.IfExp, gast.ListComp, gast.GeneratorExp)):
            return True
        if isinstance(e, gast.Call):
            kind, value = self.b.resolve_call(e.func, scope)
            if kind != "value":
                return False
            if is_entry_point(value, "broadcast") or value is map:
                return True
            if value in (np.where, np.clip) and not e.keywords and len(e.args) == 3:
                return True
            if value is np.select and select_arms(e) is not None:
                return True
            if value in (list, tuple, np.array, np.asarray, np.fromiter) and e.args and \
                    self.is_elementwise_sequence(e.args[0], scope):
                return True
            try:
                r = classify(value)
            except Exception:
                return False
            if r.kind == "primitive" and not e.keywords:
                return True
            if r.kind == "user_rule" or rules.ordered_family(value) is not None:
                return True
        return False

    def is_elementwise_sequence(self, e, scope):
        if isinstance(e, (gast.ListComp, gast.GeneratorExp)):
            return True
        if isinstance(e, gast.Call):
            kind, value = self.b.resolve_call(e.func, scope)
            if kind == "value" and value is map:
                return True
            if kind == "value" and value in (list, tuple) and e.args:
                return self.is_elementwise_sequence(e.args[0], scope)
        return False

    def elementwise(self, e, scope: Scope, want=None) -> str:
        """A maximal elementwise expression -> one "ew" statement whose template is the
        kernel planner's translation of it (elementwise.translate_elementwise)."""
        ctx = scope.ctx
        if self.is_select(e, scope):
            return self.select(e, scope, want)
        t = Template(self, e, scope)
        tree = t.walk(e)
        gast.copy_location(tree, e)
        try:
            expr, prelude2, sites, free_arrays = translate_elementwise(ctx.pf, tree, t.holders, list(t.prelude))
        except S2SADError as err:
            err.in_scalar_code = True
            raise
        assert not free_arrays, free_arrays
        mine = {p.name if isinstance(p, gast.FunctionDef) else p.targets[0].id for p in t.prelude}
        for p in prelude2:
            nm = p.name if isinstance(p, gast.FunctionDef) else p.targets[0].id
            if nm not in mine:   # the translator's own lambdas (comprehensions): unique names
                t.ctx_bound = True
                new = self.b.namer.fresh(nm)
                if new != nm:
                    rename_everywhere([expr] + prelude2, nm, new)
        bindings: dict[str, Any] = {}
        names = {p.name if isinstance(p, gast.FunctionDef) else p.targets[0].id for p in prelude2}
        expr = bind_template(expr, ctx, names, bindings)
        return self.emit_ew(expr, t.holders, t.ops, prelude2, sites, bindings, t.ctx_bound, e, scope, want)

    def emit_ew(self, expr, holders, ops, prelude, sites, bindings, ctx_bound, e, scope, want):
        self.b.sites.extend(sites)
        target = self.b.emit(Elementwise(expr, holders, prelude, sites, bindings, ctx_bound), ops, e, scope, want)
        if all((isinstance(o, str) and o in self.b.scalar) or isinstance(o, Const) for o in ops):
            self.b.scalar.add(target)
        self.b.fresh.add(target)
        return target

    def is_select(self, e, scope: Scope) -> bool:
        if isinstance(e, gast.IfExp):
            return True
        if isinstance(e, gast.Call):
            kind, value = self.b.resolve_call(e.func, scope)
            if kind == "value" and value is np.select:
                return select_arms(e) is not None
        if isinstance(e, gast.Call) and not e.keywords and len(e.args) == 3:
            kind, value = self.b.resolve_call(e.func, scope)
            return kind == "value" and (value is np.where or value is np.clip)
        return False

    def select(self, e, scope: Scope, want=None) -> str:
        """np.where(c, a, b), `a if c else b`, np.clip(x, lo, hi): elementwise statements
        of their own (fusion joins them to their neighbours)."""
        if isinstance(e, gast.IfExp):
            parts, clip = [e.test, e.body, e.orelse], False
        else:
            kind, value = self.b.resolve_call(e.func, scope)
            if value is np.select:    # np.select([c1, c2], [a1, a2], d): a1 if c1 else (a2 if c2 else d)
                return self.select(nested_where(e), scope, want)
            parts, clip = list(e.args), value is np.clip
        ops = [self.b.array(p, scope) for p in parts]
        holders = [f"__h{i}" for i in range(3)]
        h = [operand_expr(x) if isinstance(o, str) else const_expr(o.value) for x, o in zip(holders, ops)]
        if clip:
            # numpy's own definition, minimum(hi, maximum(lo, x)): NaN from any operand, x on
            # a tie (its sign of zero), and the slope JAX gives at a bound (0.5)
            inner = gast.Call(func=operand_expr("__np_maximum"), args=[h[1], h[0]], keywords=[])
            expr = gast.Call(func=operand_expr("__np_minimum"), args=[h[2], inner], keywords=[])
        else:
            expr = gast.IfExp(test=h[0], body=h[1], orelse=h[2])
        gast.copy_location(expr, e)
        keep = [(x, o) for x, o in zip(holders, ops) if isinstance(o, str)]
        label = "np.clip" if clip else ("np.where" if isinstance(e, gast.Call) else "a conditional expression")
        site = Site(str(self.b.loc(scope.ctx, e)), label, "rule",
                    "elementwise select: the derivative of the branch each element takes"
                    if not clip else "elementwise min/max: derivatives from the rules table",
                    source_line(scope.ctx.filename, e))
        return self.emit_ew(expr, [x for x, _ in keep], [o for _, o in keep], [], [site],
                            {"__np_minimum": np.minimum, "__np_maximum": np.maximum}, False, e, scope, want)


def select_arms(e: gast.Call):
    """np.select(condlist, choicelist, default=0) with both lists literal and of one
    length: ([(condition, choice)...], default); else None (not read as a select)."""
    kws = {k.arg: k.value for k in e.keywords}
    if set(kws) - {"default"} or len(e.args) + len(kws) > 3 or len(e.args) < 2:
        return None
    conds, choices = e.args[0], e.args[1]
    if not (isinstance(conds, (gast.List, gast.Tuple)) and isinstance(choices, (gast.List, gast.Tuple))):
        return None
    if not conds.elts or len(conds.elts) != len(choices.elts):
        return None
    default = e.args[2] if len(e.args) == 3 else kws.get("default", gast.Constant(value=0, kind=None))
    return list(zip(conds.elts, choices.elts)), default


def nested_where(e: gast.Call) -> gast.expr:
    """np.select's arms as nested conditional expressions: the first condition that holds
    picks its choice (numpy's rule), the default where none does."""
    arms, default = select_arms(e)
    out = default
    for cond, choice in reversed(arms):
        out = gast.copy_location(gast.IfExp(test=cond, body=choice, orelse=out), e)
    return out


def bind_template(expr, ctx: Ctx, prelude_names: set, bindings: dict):
    """Calls of global functions -> names bound to the function objects, free numbers ->
    constants: the template then means the same in any kernel it is fused into."""
    class T(gast.NodeTransformer):
        def visit_Call(s, node):
            node.args = [s.visit(a) for a in node.args]
            f = node.func
            if isinstance(f, gast.Name) and (f.id in prelude_names or f.id.startswith("__h")):
                return node
            value = attribute_value(ctx.resolver, f)
            if value is not MISSING:
                label = dotted(f)
                key = f"__b{id(value)}"
                bindings[key] = value
                node.func = operand_expr(key)
                node.func.label = label
            return node

        def visit_Name(s, node):
            if isinstance(node.ctx, gast.Load) and not node.id.startswith("__h") and node.id not in prelude_names:
                value = ctx.resolver.lookup(node.id)
                if value is not MISSING and classify(value).kind == "constant":
                    return const_expr(value)
            return node

        def visit_Attribute(s, node):
            value = attribute_value(ctx.resolver, node)
            if value is not MISSING and classify(value).kind == "constant":
                return const_expr(value)
            return node

        def visit_Lambda(s, node):
            return node

    return T().visit(expr)


def rename_everywhere(trees, old: str, new: str):
    for t in trees:
        for n in gast.walk(t):
            if isinstance(n, gast.Name) and n.id == old:
                n.id = new
            if isinstance(n, gast.FunctionDef) and n.name == old:
                n.name = new


class Template:
    """One maximal elementwise expression being read: a copy of its tree with every
    part that is not elementwise lowered by the builder and held (`__h0`, `__h1`...:
    `holders`, their operands `ops`), local functions it applies copied into `prelude`.
    `ctx_bound`: the template reads closures of the function it sits in."""

    def __init__(self, ew: "ElementwiseExprs", e, scope: Scope):
        self.ew, self.b = ew, ew.b
        self.e, self.scope, self.ctx = e, scope, scope.ctx
        self.ops: list = []
        self.holders: list[str] = []
        self.prelude: list = []
        self.ctx_bound = False

    def hold(self, op) -> gast.expr:
        if isinstance(op, Const):
            if isinstance(op.value, (int, float, bool, np.integer, np.floating, np.bool_)):
                return const_expr(op.value)
        elif isinstance(op, (list, LocalFn, Bound)):
            raise self.b.err(self.ctx, self.e, "expected a number or an array inside an elementwise expression",
                             "Pass numbers and arrays.", UnsupportedOperationError)
        for h, o in zip(self.holders, self.ops):
            if o == op:
                return operand_expr(h)
        h = f"__h{len(self.holders)}"
        self.holders.append(h)
        self.ops.append(op)
        return operand_expr(h)

    def local_fn_def(self, lf: LocalFn) -> str:
        """A local function applied elementwise: into the kernel's prelude, the locals
        it reads from its enclosing function held as kernel inputs."""
        self.ctx_bound = True
        node = copy.deepcopy(lf.node)
        uname = self.b.namer.fresh(lf.name)
        if isinstance(node, gast.FunctionDef):
            node = self.hold_free(node, set(), lf.scope)
            node.name = uname
            self.prelude.append(node)
        else:
            node = self.hold_free(node, set(), lf.scope)
            st = gast.Assign(targets=[name(uname, gast.Store())], value=node, type_comment=None)
            gast.copy_location(st, node)
            self.prelude.append(st)
        return uname

    def hold_free(self, tree, bound: set, defining: Scope):
        """Free names of `tree` that are locals of the user's function -> held inputs."""
        if isinstance(tree, gast.Name):
            if isinstance(tree.ctx, gast.Load) and tree.id not in bound:
                v = self.b.lookup_local(tree.id, defining)
                if isinstance(v, LocalFn):
                    return operand_expr(self.local_fn_def(v))
                if v is UNBOUND:
                    raise self.b.err(self.ctx, tree, f"'{tree.id}' is read before it is assigned", "Assign it first.",
                                     FreeVariableError)
                if v is not None:
                    return self.hold(v)
            return tree
        inner = bound
        if isinstance(tree, gast.Lambda):
            inner = bound | {a.id for a in tree.args.args}
        elif isinstance(tree, gast.FunctionDef):
            inner = bound | {a.id for a in tree.args.args} | assigned_names(tree.body) | {tree.name}
        elif isinstance(tree, (gast.ListComp, gast.GeneratorExp)):
            inner = bound | {n.id for g in tree.generators for n in gast.walk(g.target)
                             if isinstance(n, gast.Name)}
        for fld, val in gast.iter_fields(tree):
            if isinstance(val, list):
                setattr(tree, fld, [self.hold_free(x, inner, defining) if isinstance(x, gast.AST) else x
                                    for x in val])
            elif isinstance(val, gast.AST):
                setattr(tree, fld, self.hold_free(val, inner, defining))
        return tree

    def reads_an_array(self, e) -> bool:
        """Does `e` read a name that is not a Python number here (an array, or a value the
        builder does not know to be a scalar)?"""
        for n in gast.walk(e):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                v = self.b.lookup_local(n.id, self.scope)
                if isinstance(v, str) and v not in self.b.scalar and v not in self.b.stmts.ints:
                    return True
                if v is None and isinstance(attribute_value(self.ctx.resolver, n), np.ndarray):
                    return True
        return False

    def walk(self, x):
        """A copy of the elementwise tree with every non-elementwise part held."""
        if isinstance(x, gast.Constant):
            return x
        if isinstance(x, gast.Name):
            v = self.b.lookup(x.id, self.scope, x)
            if isinstance(v, Bound):
                raise self.b.err(self.ctx, x, f"'{x.id}' holds a {type(v.value).__name__}, not an array or a number",
                                 "Pass arrays and numbers.", FreeVariableError)
            return self.hold(v)
        if self.ew.is_select(x, self.scope) or not self.ew.is_elementwise(x, self.scope):
            if isinstance(x, gast.Attribute):
                value = attribute_value(self.ctx.resolver, x) if self.b.lookup_local(root_name(x) or "", self.scope) is None \
                    else MISSING
                if value is not MISSING and classify(value).kind == "constant":
                    return const_expr(value)
            return self.hold(self.b.array(x, self.scope))
        if isinstance(x, gast.BinOp):     # (rebuilt where the user wrote it: refusals quote that line)
            return gast.copy_location(gast.BinOp(left=self.walk(x.left), op=x.op, right=self.walk(x.right)), x)
        if isinstance(x, gast.UnaryOp):
            if isinstance(x.op, gast.Not) and self.reads_an_array(x.operand):
                raise self.b.err(self.ctx, x, "'not' of an array: numpy refuses an array's truth value",
                                 "Write np.logical_not(x) (or x == 0) for each element.", UnsupportedOperationError)
            return gast.copy_location(gast.UnaryOp(op=x.op, operand=self.walk(x.operand)), x)
        if isinstance(x, gast.Compare):
            return gast.copy_location(gast.Compare(left=self.walk(x.left), ops=x.ops,
                                                   comparators=[self.walk(c) for c in x.comparators]), x)
        if isinstance(x, (gast.ListComp, gast.GeneratorExp)):
            self.ctx_bound = True
            new = copy.deepcopy(x)
            if len(x.generators) == 1:
                new.generators[0].iter = self.walk(x.generators[0].iter)
                tgt = {n.id for n in gast.walk(x.generators[0].target) if isinstance(n, gast.Name)}
                new.elt = self.hold_free(new.elt, tgt, self.scope)
            return new
        kind, value = self.b.resolve_call(x.func, self.scope)
        if value in (list, tuple, np.array, np.asarray, np.fromiter):
            return self.walk(x.args[0])
        if is_entry_point(value, "broadcast") or value is map:
            fnode = x.args[0]
            if isinstance(fnode, gast.Name):
                lf = self.b.lookup_local(fnode.id, self.scope)
                if isinstance(lf, LocalFn):
                    fnode = operand_expr(self.local_fn_def(lf))
                elif lf is not None:
                    raise self.b.err(self.ctx, fnode, f"'{fnode.id}' is not a function", "Pass a function.",
                                     UnsupportedOperationError)
            elif isinstance(fnode, gast.Lambda):
                self.ctx_bound = True
                fnode = self.hold_free(copy.deepcopy(fnode), set(), self.scope)
            new = gast.Call(func=x.func, args=[fnode] + [self.walk(a) for a in x.args[1:]], keywords=[])
            return gast.copy_location(new, x)
        new = gast.Call(func=x.func, args=[self.walk(a) for a in x.args], keywords=[])
        return gast.copy_location(new, x)

"""The dual transform: a core-language function -> its dual, in the core language.

`f__dual(p1, ..., pn)` returns `(value, d value/d a1, ..., d value/d ak)` for the active
params a1..ak, computed in one forward pass in which every active variable `v`
carries one tangent per active parameter (`v_dot` when k == 1, `v_dot_a` otherwise).

Invariants:
- The dual is again in the core language, so every backend lowers it unchanged, and
  it can itself be transformed (dual of dual).
- Control flow is kept: branches, loops and early returns are the primal's, so a
  derivative is taken per element on the path that element takes (`sqrt(z) if z > 0
  else 0.0` has derivative 0, not NaN, at z = -1). Conditional expressions and
  `and`/`or` with active operands become `if` statements, so the branch not taken is
  not evaluated.
- Tangents exist only in the directions `Activity` lists; zero tangents are never
  written, and multiplications by 1 are folded away.
- A call to a helper with active arguments calls the helper's dual (specialised to
  which of its params are active) and applies the chain rule; derivatives of
  primitives come from `rules.RULES` and nowhere else.
- A dual is a program like any other: the derivative s2sad made of a scalar function
  is its dual selecting a partial (normderiv.py), and dualizing that again gives nested
  duals (`f__dual__dual`). A partial marked `no_derivative` (a value-only function) is
  refused when an active operand reaches it, never taken as zero.
"""
from __future__ import annotations

import copy

import gast

from .. import rules
from ..errors import HigherOrderNotSupportedError
from .activity import Activity, expr_primitive, operands, primitive_of
from .trees import assign, const, function_def, literal, name


_NO_DERIVATIVE = "s2sad: no derivative of "


def no_derivative(label: str) -> gast.Constant:
    """The partial of a value-only function (polygamma(2, x), reached only in trigamma's
    partial): a marker, never a zero, so that differentiating it again is refused."""
    return gast.Constant(value=_NO_DERIVATIVE + label, kind=None)


def _refuse_no_derivative(tree) -> None:
    if isinstance(tree, gast.Constant) and isinstance(tree.value, str) and tree.value.startswith(_NO_DERIVATIVE):
        label = tree.value[len(_NO_DERIVATIVE):]
        raise HigherOrderNotSupportedError(
            f"{label} (polygamma of order 2) has no derivative in s2sad, and this derivative of a derivative "
            "needs it (a derivative of order 3 of digamma or psi, of order 4 of lgamma or gammaln)",
            hint="Take one order less, or register the function with s2sad.defrule(...) with its derivative.")


def dual_name(fname: str, params: list[str], active: tuple[str, ...]) -> str:
    if tuple(params) == tuple(active):
        return f"{fname}__dual"
    return f"{fname}__dual_" + "_".join(active)


_PARTIAL_TREES: dict = {}


def _partial_trees(rule: rules.Rule) -> list:
    """A primitive's partials as trees, parsed once per rule (apply_rule copies a tree
    before it substitutes into it)."""
    trees = _PARTIAL_TREES.get(rule)
    if trees is None:
        trees = _PARTIAL_TREES[rule] = [rule.partial_tree(i) for i in range(rule.arity)]
    return trees


def _is_const(e, value: float) -> bool:
    return isinstance(e, gast.Constant) and not isinstance(e.value, bool) and e.value == value


def mul(a: gast.expr, b: gast.expr) -> gast.expr:
    if _is_const(a, 1.0):
        return b
    if _is_const(b, 1.0):
        return a
    if _is_const(a, -1.0) or (isinstance(a, gast.UnaryOp) and isinstance(a.op, gast.USub) and _is_const(a.operand, 1.0)):
        return gast.UnaryOp(op=gast.USub(), operand=b)
    if _is_const(b, -1.0) or (isinstance(b, gast.UnaryOp) and isinstance(b.op, gast.USub) and _is_const(b.operand, 1.0)):
        return gast.UnaryOp(op=gast.USub(), operand=a)
    return gast.BinOp(left=a, op=gast.Mult(), right=b)


def add(a: gast.expr | None, b: gast.expr | None) -> gast.expr | None:
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(b, gast.UnaryOp) and isinstance(b.op, gast.USub):
        return gast.BinOp(left=a, op=gast.Sub(), right=b.operand)
    # a + -p * t  ->  a - p * t
    lead, chain = b, []
    while isinstance(lead, gast.BinOp) and isinstance(lead.op, (gast.Mult, gast.Div)):
        chain.append(lead)
        lead = lead.left
    if chain and isinstance(lead, gast.UnaryOp) and isinstance(lead.op, gast.USub):
        chain[-1].left = lead.operand
        return gast.BinOp(left=a, op=gast.Sub(), right=b)
    return gast.BinOp(left=a, op=gast.Add(), right=b)


def _substitute(tree: gast.expr, mapping: dict[str, gast.expr]) -> gast.expr:
    class Sub(gast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in mapping:
                return copy.deepcopy(mapping[node.id])
            return node

    return _fold(Sub().visit(tree))


_LITERAL_TESTS = {gast.Eq: lambda a, b: a == b, gast.NotEq: lambda a, b: a != b}


def _fold(e: gast.expr) -> gast.expr:
    """Fold constant arithmetic left by substitution (`2.0 - 1.0` in a power rule), and
    a rule's select on a literal (`y - 1.0 if y != 0.0 else 0.0` with y = 3)."""
    if isinstance(e, gast.IfExp):
        e.test, e.body, e.orelse = _fold(e.test), _fold(e.body), _fold(e.orelse)
        t = e.test
        if isinstance(t, gast.Compare) and type(t.ops[0]) in _LITERAL_TESTS:
            lv, rv = literal(t.left), literal(t.comparators[0])
            if lv is not None and rv is not None:
                return e.body if _LITERAL_TESTS[type(t.ops[0])](lv, rv) else e.orelse
        return e
    if isinstance(e, gast.Call):
        e.args = [_fold(a) for a in e.args]
        return e
    if isinstance(e, gast.BinOp):
        e.left, e.right = _fold(e.left), _fold(e.right)
        lv, rv = literal(e.left), literal(e.right)
        if lv is not None and rv is not None and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult)):
            v = {gast.Add: lv + rv, gast.Sub: lv - rv, gast.Mult: lv * rv}[type(e.op)]
            return const(float(v))
        if isinstance(e.op, gast.Pow) and rv == 1.0:
            return e.left
        if isinstance(e.op, gast.Pow) and rv == 0.0:
            return const(1.0)        # pow(x, 0) is 1 for every x, NaN and inf included
        if isinstance(e.op, gast.Mult):
            return mul(e.left, e.right)
    return e


class DualBuilder:
    """Makes duals of a program's functions, memoised per (function, active params)."""

    def __init__(self, functions: dict[str, gast.FunctionDef], custom_rules: dict | None = None):
        self.functions = functions
        self.custom_rules = custom_rules or {}
        self.activity = Activity(functions, self.custom_rules)
        self.duals: dict[tuple[str, tuple[str, ...]], str] = {}
        self.out: dict[str, gast.FunctionDef] = {}

    def dual(self, fname: str, active: tuple[str, ...]) -> str:
        key = (fname, active)
        if key not in self.duals:
            fn = self.functions[fname]
            params = [a.id for a in fn.args.args]
            dname = dual_name(fname, params, active)
            self.duals[key] = dname
            self.out[dname] = _FunctionDual(self, fn, active).build(dname)
        return self.duals[key]


class _FunctionDual:
    def __init__(self, builder: DualBuilder, fn: gast.FunctionDef, active: tuple[str, ...]):
        self.b = builder
        self.fn = fn
        self.active = active
        self.params = [a.id for a in fn.args.args]
        self.deps = builder.activity.dependencies(fn.name, list(active))
        self.names = {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)}
        self.assigned = {n.id for n in gast.walk(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        self.temps = 0
        self.active_memo: dict = {}

    # naming
    def tname(self, v: str, a: str) -> str:
        base = f"{v}_dot" if len(self.active) == 1 else f"{v}_dot_{a}"
        while base in self.names:
            base += "_"
        return base

    def temp(self) -> str:
        while True:
            self.temps += 1
            t = f"_d{self.temps}"
            if t not in self.names:
                self.names.add(t)
                return t

    def tangent(self, v: str, a: str) -> gast.expr | None:
        if v in self.params and v not in self.assigned:
            return const(1.0) if v == a else None
        if a in self.deps.get(v, ()):
            return name(self.tname(v, a))
        return None

    def build(self, dname: str) -> gast.FunctionDef:
        body: list[gast.stmt] = []
        for p in self.params:
            if p in self.assigned:  # the param is overwritten later: seed its tangents explicitly
                for a in sorted(self.deps.get(p, ()), key=self.active.index):
                    body.append(assign(self.tname(p, a), const(1.0 if a == p else 0.0)))
        body += self.block(self.fn.body)
        return function_def(dname, self.params, body)

    def block(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, s: gast.stmt) -> list[gast.stmt]:
        if isinstance(s, gast.Assign):
            t = s.targets[0]
            if isinstance(t, gast.Tuple):
                return self.unpack_call([n.id for n in t.elts], s.value)
            out: list[gast.stmt] = []
            value, tans = self.expr(s.value, out, bind_to=t.id)
            self.bind(out, t.id, value, tans, sorted(self.deps.get(t.id, ()), key=self.active.index))
            return out
        if isinstance(s, gast.If):
            return [gast.If(test=s.test, body=self.block(s.body) or [gast.Pass()], orelse=self.block(s.orelse))]
        if isinstance(s, gast.While):
            return [gast.While(test=s.test, body=self.block(s.body) or [gast.Pass()], orelse=[])]
        if isinstance(s, gast.For):
            # the loop assigns its variable an inactive number each iteration: if the
            # variable is active elsewhere, its tangents restart at zero with it
            reset: list[gast.stmt] = []
            self.bind(reset, s.target.id, None, {}, sorted(self.deps.get(s.target.id, ()), key=self.active.index))
            return [gast.For(target=s.target, iter=s.iter, body=reset + self.block(s.body) or [gast.Pass()],
                             orelse=[], type_comment=None)]
        if isinstance(s, gast.Return):
            # one output, or several (a state-passing function): values first, then
            # each output's partials in the order of the active params
            out = []
            values, tangents = [], []
            for e in (s.value.elts if isinstance(s.value, gast.Tuple) else [s.value]):
                v, t = self.expr(e, out)
                values.append(v)
                tangents.append(t)
            elts = values + [t.get(a) or const(0.0) for t in tangents for a in self.active]
            out.append(gast.Return(value=gast.Tuple(elts=elts, ctx=gast.Load())))
            return out
        return [s]

    def bind(self, out: list[gast.stmt], target: str, value: gast.expr | None, tans: dict, dirs) -> None:
        """Assign tangents, then the value: tangents read the operands' old values."""
        for a in dirs:
            tn = self.tname(target, a)
            t = tans.get(a) or const(0.0)
            if not (isinstance(t, gast.Name) and t.id == tn):
                out.append(assign(tn, t))
        if value is not None and not (isinstance(value, gast.Name) and value.id == target):
            out.append(assign(target, value))

    def is_active(self, e: gast.expr) -> bool:
        # memoised per node: expr() asks at every level of a 5,000-term sum
        return bool(self.b.activity.expr_deps(e, self.deps, set(self.active), self.active_memo))

    def expr(self, e: gast.expr, out: list[gast.stmt], bind_to: str | None = None):
        """(value expression, {direction: tangent}) of e; statements it needs go to `out`.

        With `bind_to`, the caller assigns the value to that name; this may return
        value None after binding it itself (tuple unpacking of a helper's dual)."""
        if not self.is_active(e):
            return e, {}
        if isinstance(e, gast.Name):
            return e, {a: t for a in self.active if (t := self.tangent(e.id, a)) is not None}
        if isinstance(e, gast.IfExp) or isinstance(e, gast.BoolOp):
            return self.branching(e, out, bind_to)
        if isinstance(e, gast.Call) and primitive_of(e) is None:
            custom = self.b.custom_rules.get(e.func.id)
            if custom is None:
                return self.helper_call(e, out, bind_to)
            params, trees = custom
        else:
            rule = rules.RULES[expr_primitive(e)]
            params = rule.params
            trees = _partial_trees(rule)
        return self.apply_rule(e, params, trees, out, bind_to)

    def apply_rule(self, e: gast.expr, params, trees: list, out: list[gast.stmt], bind_to: str | None):
        """Chain rule through a primitive (or a helper with a user rule): partials from
        `trees`, expressions in `params` and `out`."""
        ops = operands(e)
        atoms, op_tans = [], []
        for o in ops:
            v, t = self.expr(o, out)
            if t and not isinstance(v, (gast.Name, gast.Constant)):
                tmp = self.temp()
                out.append(assign(tmp, v))
                v = name(tmp)
            atoms.append(v)
            op_tans.append(t)
        value = _rebuild(e, atoms)
        uses_out = any(t is not None and op_tans[i] and any(isinstance(n, gast.Name) and n.id == "out" for n in gast.walk(t))
                       for i, t in enumerate(trees))
        if bind_to is not None and bind_to in {n.id for n in gast.walk(e) if isinstance(n, gast.Name)}:
            bind_to = None  # `x = x ** y`: the partials still need the old x
        if uses_out:
            target = bind_to or self.temp()
            out.append(assign(target, value))
            value_ref: gast.expr = name(target)
        else:
            value_ref = value
        mapping = {p: atoms[i] for i, p in enumerate(params)}
        mapping["out"] = value_ref
        for i in range(len(ops)):
            if op_tans[i]:
                _refuse_no_derivative(trees[i])
        partials = [None if not op_tans[i] or trees[i] is None else _substitute(copy.deepcopy(trees[i]), mapping)
                    for i in range(len(ops))]
        for i, p in enumerate(partials):
            # a partial used in several directions is computed once
            if p is not None and len(op_tans[i]) > 1 and not isinstance(p, (gast.Name, gast.Constant)) \
                    and literal(p) is None:
                tmp = self.temp()
                out.append(assign(tmp, p))
                partials[i] = name(tmp)
        tans = {}
        for a in self.active:
            total = None
            for i in range(len(ops)):
                if partials[i] is not None and a in op_tans[i]:
                    total = add(total, mul(copy.deepcopy(partials[i]), op_tans[i][a]))
            if total is not None:
                tans[a] = total
        if uses_out and bind_to:
            return None, tans
        return value_ref, tans

    def helper_call(self, e: gast.Call, out, bind_to):
        """`helper(args)` with active args: its dual's partials, chained."""
        atoms, arg_tans = self._call_args(e, out)
        if bind_to in {n.id for a in atoms for n in gast.walk(a) if isinstance(n, gast.Name)}:
            bind_to = None
        target = bind_to or self.temp()
        (tans,) = self._dual_call(e.func.id, atoms, arg_tans, [target], out)
        return (None if bind_to else name(target)), tans

    def unpack_call(self, targets: list[str], e: gast.Call) -> list[gast.stmt]:
        """`t1, t2 = helper(args)` (a state-passing helper): each output chained."""
        out: list[gast.stmt] = []
        atoms, arg_tans = self._call_args(e, out)
        if not any(arg_tans):
            out.append(gast.Assign(targets=[gast.Tuple(elts=[name(t, gast.Store()) for t in targets], ctx=gast.Store())],
                                   value=e, type_comment=None))
            for t in targets:
                self.bind(out, t, None, {}, sorted(self.deps.get(t, ()), key=self.active.index))
            return out
        results = [self.temp() for _ in targets]
        per_target = self._dual_call(e.func.id, atoms, arg_tans, results, out)
        for t, r, tans in zip(targets, results, per_target):
            # the outputs may overwrite arguments: every tangent reads the old ones first
            self.bind(out, t, name(r), tans, sorted(self.deps.get(t, ()), key=self.active.index))
        return out

    def _call_args(self, e: gast.Call, out) -> tuple[list, list[dict]]:
        diff = self.b.activity.differentiable_params(e.func.id)
        atoms, arg_tans = [], []
        for i, arg in enumerate(e.args):
            v, t = self.expr(arg, out)
            if i not in diff:
                t = {}
            if t and not isinstance(v, (gast.Name, gast.Constant)):
                tmp = self.temp()
                out.append(assign(tmp, v))
                v = name(tmp)
            atoms.append(v)
            arg_tans.append(t)
        return atoms, arg_tans

    def _dual_call(self, fname: str, atoms, arg_tans, targets: list[str], out) -> list[dict]:
        """Call the helper's dual, binding its outputs to `targets` and their partials
        to `d<target>_d<param>`; returns each target's tangents."""
        cparams = [a.id for a in self.b.functions[fname].args.args]
        active_idx = [i for i, t in enumerate(arg_tans) if t]
        dname = self.b.dual(fname, tuple(cparams[i] for i in active_idx))
        pnames = []
        for t in targets:
            row = []
            for i in active_idx:
                pn = f"d{t}_d{cparams[i]}"
                while pn in self.names:
                    pn += "_"
                self.names.add(pn)
                row.append(pn)
            pnames.append(row)
        elts = [name(n, gast.Store()) for n in targets + [p for row in pnames for p in row]]
        out.append(gast.Assign(targets=[gast.Tuple(elts=elts, ctx=gast.Store())],
                               value=gast.Call(func=name(dname), args=atoms, keywords=[]), type_comment=None))
        result = []
        for row in pnames:
            tans = {}
            for a in self.active:
                total = None
                for i, pn in zip(active_idx, row):
                    if a in arg_tans[i]:
                        total = add(total, mul(name(pn), arg_tans[i][a]))
                if total is not None:
                    tans[a] = total
            result.append(tans)
        return result

    def branching(self, e, out, bind_to):
        """An active IfExp or BoolOp as an if statement, evaluating only what Python would."""
        if bind_to in {n.id for n in gast.walk(e) if isinstance(n, gast.Name)}:
            bind_to = None
        target = bind_to or self.temp()
        dirs = [a for a in self.active if a in self._deps_of(e)]
        tnames = {a: (self.tname(target, a) if bind_to else self.temp()) for a in dirs}

        def arm(sub: gast.expr) -> list[gast.stmt]:
            stmts: list[gast.stmt] = []
            v, t = self.expr(sub, stmts, bind_to=None)
            for a in dirs:
                if not (isinstance(t.get(a), gast.Name) and t[a].id == tnames[a]):
                    stmts.append(assign(tnames[a], t.get(a) or const(0.0)))
            if not (isinstance(v, gast.Name) and v.id == target):
                stmts.append(assign(target, v))
            return stmts or [gast.Pass()]

        if isinstance(e, gast.IfExp):
            out.append(gast.If(test=e.test, body=arm(e.body), orelse=arm(e.orelse)))
        else:  # a and b and c: keep the first falsy operand (or the last); `or`: the first truthy
            first, rest = e.values[0], e.values[1:]
            out.extend(arm(first))
            nested: list[gast.stmt] = out
            for v in rest:
                test = name(target) if isinstance(e.op, gast.And) else gast.UnaryOp(op=gast.Not(), operand=name(target))
                inner = arm(v)
                branch = gast.If(test=test, body=inner, orelse=[])
                nested.append(branch)
                nested = inner
        tans = {a: name(tnames[a]) for a in dirs}
        return (None if bind_to else name(target)), tans

    def _deps_of(self, e) -> set[str]:
        return self.b.activity.expr_deps(e, self.deps, set(self.active))


def _rebuild(e: gast.expr, atoms: list[gast.expr]) -> gast.expr:
    if isinstance(e, gast.BinOp):
        return gast.BinOp(left=atoms[0], op=type(e.op)(), right=atoms[1])
    if isinstance(e, gast.UnaryOp):
        return gast.UnaryOp(op=type(e.op)(), operand=atoms[0])
    if isinstance(e, gast.Compare):
        return gast.Compare(left=atoms[0], ops=[type(e.ops[0])()], comparators=[atoms[1]])
    if isinstance(e, gast.Call):
        return gast.Call(func=copy.deepcopy(e.func), args=atoms, keywords=[])
    raise AssertionError(type(e).__name__)


def make_dual(functions: dict[str, gast.FunctionDef], entry: str, active: tuple[str, ...],
              custom_rules: dict | None = None) -> tuple[str, dict[str, gast.FunctionDef]]:
    """The entry's dual and every helper dual it needs, as new functions (name -> def).
    `custom_rules`: helper -> (params, partial trees) of user rules (s2sad.defrule)."""
    b = DualBuilder(functions, custom_rules)
    dname = b.dual(entry, active)
    # callees first, entry dual last, for reading order
    ordered = {k: v for k, v in b.out.items() if k != dname}
    ordered[dname] = b.out[dname]
    return dname, ordered

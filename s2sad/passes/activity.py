"""Types and activity of core-language functions.

- `result_kind(program, fname)`: whether a function returns a bool, an int or a float
  (Python's rules; parameters are floats), for the dtype of a primal's output.
- `Activity`: for each variable of a function, the set of parameters it depends on
  *differentiably*, i.e. through primitives whose partials are not identically zero
  (`int(x)`, `x > 0` and `//` cut dependence; control dependence is not dependence,
  since derivatives are piecewise). Flow-insensitive: a variable is active in a
  direction if any assignment to it is. The dual transform gives a variable a tangent
  in exactly the directions listed here.
"""
from __future__ import annotations

import gast

from .. import rules

KIND_ORDER = {"bool": 0, "int": 1, "float": 2}


def _join(*kinds: str) -> str:
    return max(kinds, key=KIND_ORDER.__getitem__) if kinds else "float"


def primitive_of(call: gast.Call) -> str | None:
    """The primitive name of a core-language call, or None for a helper call."""
    f = call.func
    if isinstance(f, gast.Attribute):
        return f.attr
    if isinstance(f, gast.Name) and f.id in rules.RULES and rules.RULES[f.id].spelling == "builtin":
        return f.id
    return None


def expr_primitive(e: gast.expr) -> str | None:
    """The primitive an operator node applies (add, lt, neg, ...), if it is one."""
    if isinstance(e, gast.BinOp):
        return rules.BINOPS[type(e.op)]
    if isinstance(e, gast.UnaryOp):
        return rules.UNARYOPS[type(e.op)]
    if isinstance(e, gast.Compare):
        return rules.CMPOPS[type(e.ops[0])]
    if isinstance(e, gast.Call):
        return primitive_of(e)
    return None


def _propagate(fn, deps: dict[str, set[str]], value_deps, limit: int, what: str) -> dict[str, set[str]]:
    """`deps` (a name -> the set it depends on) grown to a fixpoint over `fn`'s
    assignments: each assigned name gets `value_deps(value)` of every value assigned to
    it (a loop variable, assigned no value, gets nothing)."""
    for _ in range(limit):
        changed = False
        for names, value in _assignments(fn):
            if value is None:
                continue
            d = value_deps(value)
            for n in names:
                cur = deps.setdefault(n, set())
                if not d <= cur:
                    cur |= d
                    changed = True
        if not changed:
            return deps
    raise AssertionError(f"{what} did not converge")


def _assignments(fn: gast.FunctionDef):
    """(target names, value expr or None for loop variables) for each binding in fn."""
    for node in gast.walk(fn):
        if isinstance(node, gast.Assign):
            t = node.targets[0]
            names = [t.id] if isinstance(t, gast.Name) else [n.id for n in t.elts]
            yield names, node.value
        elif isinstance(node, gast.For):
            yield [node.target.id], None


def result_kind(functions: dict[str, gast.FunctionDef], fname: str) -> str:
    memo: dict[str, str] = {}

    def fn_kind(name: str) -> str:
        if name in memo:
            return memo[name]
        fn = functions[name]
        env = {a.id: "float" for a in fn.args.args}
        for _ in range(8):  # fixpoint over a 3-level lattice
            changed = False
            for names, value in _assignments(fn):
                k = "int" if value is None else kind(value, env)
                for n in names:
                    new = _join(env.get(n, "bool"), k) if n in env else k
                    if env.get(n) != new:
                        env[n], changed = new, True
            if not changed:
                break
        rets = [kind(r.value.elts[0] if isinstance(r.value, gast.Tuple) else r.value, env)
                for r in gast.walk(fn) if isinstance(r, gast.Return)]
        memo[name] = _join(*rets)
        return memo[name]

    def kind(e, env) -> str:
        if isinstance(e, gast.Constant):
            return "bool" if isinstance(e.value, bool) else "int" if isinstance(e.value, int) else "float"
        if isinstance(e, gast.Name):
            return env.get(e.id, "float")
        if isinstance(e, gast.Compare) or (isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.Not)):
            return "bool"
        if isinstance(e, gast.UnaryOp):
            return _join("int", kind(e.operand, env))
        if isinstance(e, gast.BinOp):
            if isinstance(e.op, gast.Div):
                return "float"
            return _join("int", kind(e.left, env), kind(e.right, env))
        if isinstance(e, gast.BoolOp):
            return _join(*(kind(v, env) for v in e.values))
        if isinstance(e, gast.IfExp):
            return _join(kind(e.body, env), kind(e.orelse, env))
        if isinstance(e, gast.Call):
            prim = primitive_of(e)
            if prim is None:
                return fn_kind(e.func.id)
            if prim in ("floor", "ceil", "trunc", "int", "round"):
                return "int"
            if prim in ("abs", "min", "max", "maximum", "minimum"):
                return _join("int", *(kind(a, env) for a in e.args)) if prim == "abs" else _join(*(kind(a, env) for a in e.args))
            return "float"
        return "float"

    return fn_kind(fname)


class Activity:
    """Differentiable dependence of variables on parameters, per function."""

    def __init__(self, functions: dict[str, gast.FunctionDef], custom_rules: dict | None = None):
        self.functions = functions
        self.custom_rules = custom_rules or {}
        self._diff_params: dict[str, frozenset[int]] = {}

    def differentiable_params(self, fname: str) -> frozenset[int]:
        """Positions of the params a helper's result can depend on differentiably."""
        if fname in self.custom_rules:
            return frozenset(i for i, t in enumerate(self.custom_rules[fname][1]) if t is not None)
        if fname not in self._diff_params:
            fn = self.functions[fname]
            params = [a.id for a in fn.args.args]
            deps = self.dependencies(fname, params)
            ret: set[str] = set()
            for r in gast.walk(fn):
                if isinstance(r, gast.Return):
                    for v in (r.value.elts if isinstance(r.value, gast.Tuple) else [r.value]):
                        ret |= self.expr_deps(v, deps, set(params))
            self._diff_params[fname] = frozenset(i for i, p in enumerate(params) if p in ret)
        return self._diff_params[fname]

    def dependencies(self, fname: str, active: list[str]) -> dict[str, set[str]]:
        """variable -> the active params it depends on differentiably."""
        deps: dict[str, set[str]] = {p: {p} for p in active}
        return _propagate(self.functions[fname], deps, lambda value: self.expr_deps(value, deps, set(active)),
                          100, "activity")

    def expr_deps(self, e, deps: dict[str, set[str]], active: set[str], memo: dict | None = None) -> set[str]:
        """The active params `e` depends on differentiably. With `memo` (kept by the caller
        for one fixed `deps`), each node's answer is kept, so asking at every level of a
        deep expression stays linear; the node is held with it, so its id is not reused."""
        if memo is None:
            return self._expr_deps(e, deps, active, None)
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:
            return set(hit[1])
        out = self._expr_deps(e, deps, active, memo)
        memo[id(e)] = (e, frozenset(out))
        return out

    def _expr_deps(self, e, deps: dict[str, set[str]], active: set[str], memo: dict | None) -> set[str]:
        if isinstance(e, gast.Name):
            return set(deps.get(e.id, ()))
        if isinstance(e, gast.Constant):
            return set()
        if isinstance(e, gast.IfExp):
            return self.expr_deps(e.body, deps, active, memo) | self.expr_deps(e.orelse, deps, active, memo)
        if isinstance(e, gast.BoolOp):
            out: set[str] = set()
            for v in e.values:
                out |= self.expr_deps(v, deps, active, memo)
            return out
        if isinstance(e, gast.Call) and primitive_of(e) is None:
            diff = self.differentiable_params(e.func.id)
            out = set()
            for i, a in enumerate(e.args):
                if i in diff:
                    out |= self.expr_deps(a, deps, active, memo)
            return out
        prim = expr_primitive(e)
        operands = _operands(e)
        rule = rules.RULES[prim]
        out = set()
        for i, a in enumerate(operands):
            if rule.partials[i] is not None:
                out |= self.expr_deps(a, deps, active, memo)
        return out


def _operands(e) -> list:
    if isinstance(e, gast.BinOp):
        return [e.left, e.right]
    if isinstance(e, gast.UnaryOp):
        return [e.operand]
    if isinstance(e, gast.Compare):
        return [e.left, e.comparators[0]]
    if isinstance(e, gast.Call):
        return list(e.args)
    raise AssertionError(type(e).__name__)


operands = _operands


def partials_read(functions: dict[str, gast.FunctionDef], fname: str) -> frozenset[int]:
    """Positions of the params of a dual function `fname` (returning `(value, d1, ...)`)
    that its partials d1, ... may need: those they depend on by value, and, to be safe,
    every param that reaches a condition, a loop bound or a helper's argument (the
    function then runs the same way, and ends, whatever the other params hold).
    Flow-insensitive, like `Activity`, and conservative: a param not listed can be
    given any value (NaN, say) without changing the partials."""
    fn = functions[fname]
    params = [a.id for a in fn.args.args]
    deps: dict[str, set[str]] = {p: {p} for p in params}

    def reads(e) -> set[str]:
        out: set[str] = set()
        for n in gast.walk(e):
            if isinstance(n, gast.Name):
                out |= deps.get(n.id, set())
        return out

    _propagate(fn, deps, reads, 1000, "dependence")
    needed: set[str] = set()
    for node in gast.walk(fn):
        if isinstance(node, gast.Return):
            elts = node.value.elts if isinstance(node.value, gast.Tuple) else [node.value]
            for e in elts[1:]:
                needed |= reads(e)
        elif isinstance(node, (gast.If, gast.While, gast.IfExp)):
            needed |= reads(node.test)
        elif isinstance(node, gast.For):
            needed |= reads(node.iter)
        elif isinstance(node, gast.BoolOp):
            needed |= reads(node)
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id in functions:
            for a in node.args:
                needed |= reads(a)
    return frozenset(i for i, p in enumerate(params) if p in needed)


def same_partials(functions: dict[str, gast.FunctionDef], fname: str) -> tuple[int, ...]:
    """For each partial of a dual function `fname` (returning `(value, d1, ..., dk)`),
    the position (0-based among d1..dk) of the first partial that is the same value
    wherever the function returns: in every `return`, the same name, the same constant,
    or the same call-free arithmetic expression (names assigned once, to a number, read
    as that number: `z_dot_x = 1.0`). `tanh(h + b)`'s dual returns `(t, d, d)`: (0, 0);
    a sigmoid's `(s, 0.5 * (d * 0.5), 0.5 * (d * 0.5))` too. Such partials are equal bit
    for bit (one expression of the same values), so the caller may store and multiply
    one of them."""
    fn = functions[fname]
    rets = [n.value.elts for n in gast.walk(fn) if isinstance(n, gast.Return) and isinstance(n.value, gast.Tuple)]
    if not rets:
        return ()
    numbers = _numbers_assigned_once(fn)

    def key(e):
        if isinstance(e, gast.Name):
            return ("const", repr(numbers[e.id])) if e.id in numbers else ("name", e.id)
        if isinstance(e, gast.Constant) and type(e.value) in (int, float):
            return ("const", repr(e.value))
        if isinstance(e, _ARITHMETIC):
            parts = [key(c) for c in gast.iter_child_nodes(e) if not isinstance(c, _OPERATORS)]
            ops = [type(c).__name__ for c in gast.iter_child_nodes(e) if isinstance(c, _OPERATORS)]
            return None if None in parts else (type(e).__name__, tuple(ops), tuple(parts))
        return None

    k = len(rets[0]) - 1
    if any(len(r) != k + 1 for r in rets):
        return tuple(range(k))
    firsts = []
    for i in range(k):
        keys = [key(r[1 + i]) for r in rets]
        same = next((j for j in range(i) if None not in keys
                     and all(key(r[1 + j]) == kk for r, kk in zip(rets, keys))), i)
        firsts.append(same)
    return tuple(firsts)


# expressions whose value is their operands' values through IEEE arithmetic (no call)
_ARITHMETIC = (gast.BinOp, gast.UnaryOp, gast.Compare, gast.IfExp, gast.BoolOp)
_OPERATORS = (gast.operator, gast.unaryop, gast.cmpop, gast.boolop)


def _numbers_assigned_once(fn: gast.FunctionDef) -> dict:
    """name -> the int or float constant it is bound to, for names bound exactly once
    in `fn` (a parameter counts), by a plain `name = <number>`: wherever it is read, it
    holds that number."""
    stores: dict[str, int] = {}
    for n in gast.walk(fn):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Param, gast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    out = {}
    for n in gast.walk(fn):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name) \
                and isinstance(n.value, gast.Constant) and type(n.value.value) in (int, float) \
                and stores.get(n.targets[0].id) == 1:
            out[n.targets[0].id] = n.value.value
    return out

"""Random scalar Python programs in the language s2sad differentiates (for hypothesis).

`programs(...)` is a strategy of `Program`s: the source text of a module with two module
constants (`K0`, a number, and `KS`, a tuple of numbers), up to two helper functions
`h0`, `h1` (h1 may call h0), the function under test `f(a[, b[, c]])`, `loss(...)`,
which is `np.sum(s2sad.broadcast(f, ...))`, `fmap(...)`, which is
`s2sad.broadcast(f, ...)` (for jvp/vjp of an array result), `loss_alt(...)`, the same loss spelled
another way (np.mean, .sum(), map, a comprehension, a lambda around f; `ALT_SCALE` is
its ratio to `loss`), and `loss_rows(X)`, the loss over the rows of X = np.stack(args,
axis=1) through `frow(p)`, f of the row's components (p[0], p[-1], a, b = p). `load(program)` registers the text with linecache (s2sad's
frontend reads source from there) and executes it.

What the bodies contain:
- statements: assignments (also `p = q = e` and `v: float = e`), augmented assignments
  (+= -= *= /= **=), tuple unpacking (and swaps), if/elif/else, `for` over range (one to
  three arguments; the variable is read in the body and after the loop) and over a
  tuple of constants, bounded while loops with a counter, break/continue, early returns
  in branches, `pass`, local lambdas and local defs that read (capture) enclosing
  variables, late binding included;
- expressions: + - * / ** (small integer and positive-base fractional exponents), unary
  minus, abs, min/max (2 and 3 arguments), math.tanh/sin/cos/exp/sqrt/log/atan/asinh/
  erf/hypot/log1p/expm1, piecewise primitives (% // int round float math.floor
  math.fabs math.copysign), conditional expressions, comparisons used as numbers,
  chained comparisons, and/or/not (as tests and as values), module constants, tuple
  indexing by a constant and by a loop variable, and calls of the helpers and of the
  local functions.
Variable names sometimes collide with the names the passes invent (`_t1`, `_d1`,
`a_dot`...).

Keeping finite differences meaningful: every variable holds a value in [-VMAX, VMAX]
between statements (an assignment whose value may be larger is wrapped in tanh or a
clamp; an augmented assignment that may leave the range is followed by one), every
subexpression is bounded by EMAX (larger ones are squashed with tanh), divisions are by
`e*e + 1.0` or `1.5 + cos(e)`, sqrt/log/fractional powers take `e*e + 1.0`-like
arguments, exp takes tanh/sin/-e*e, and hypot is kept off the origin. Bounds are
tracked interval-style.

Some helpers and some f carry a user decorator (DECORATORS: functools.wraps
forwarders, one that scales the result). Some programs redefine abs, max or min at module level (SHADOWS: smooth versions with the
builtins' bounds), name helpers like rules or like generated code (HELPER_NAMES: `exp`,
`h__dual`, `hσ`...), and bind tuples to locals (constants or values) to loop over them
(plainly, with enumerate, zip or range(len(t)) and t[i]) or unpack them.
`long_programs()` makes functions of hundreds to thousands of terms (one long sum, or an
if/elif chain of hundreds of arms).

`straight=True` programs have only plain `name = expr` statements (and local lambdas)
in f: grad(f) then plans f at the array level instead of as "a scalar function
differentiated as a whole".
"""
from __future__ import annotations

import itertools
import linecache
import math
from dataclasses import dataclass, field

from hypothesis import strategies as st

from s2sad import rules

VMAX = 4.0
EMAX = 30.0
PARAMS = ("a", "b", "c")
HELPER_PARAMS = ("x", "y", "z")
# names s2sad's passes also make up: temporaries, tangents, helper partials
TRICKY_NAMES = ("_t1", "_d1", "_d2", "a_dot", "v0_dot", "b_dot_a", "d_d1_dx", "out", "a_bar", "_f1")
CONSTANTS = ("1.0", "0.5", "2.0", "-0.75", "1.5", "0.25", "3.0", "-2.0", "0.0")
MODULE_HEADER = """\
import functools
import math

import numpy as np

import s2sad

K0 = 1.5
KS = (0.5, -1.25, 2.0, 0.75)


def scaled(k):
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return k * fn(*args, **kwargs)
        return wrapper
    return decorator


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper
"""
# user decorators put on helpers and on f (functools.wraps forwarders, as users write
# them): s2sad differentiates the wrapper's code, so a decorator seen through (the
# wrapped function differentiated instead) gives a gradient off by the scale. Scales
# stay within [-1, 1], so that the bounds the generator tracks still hold.
DECORATORS = ("@scaled(0.5)", "@scaled(-1.0)", "@scaled(0.75)", "@traced")
K0, KS = 1.5, (0.5, -1.25, 2.0, 0.75)
# user functions that shadow builtins, each keeping the builtin's bounds (|abs(x)| <= |x|,
# max/min within 0.05 of the builtin's) but with other derivatives, so that a call
# resolved by its spelling instead of its object gives a wrong gradient
SHADOWS = {
    "abs": "def abs(x):\n    return x * math.tanh(3.0 * x)",
    "max": "def max(x, y):\n    return 0.5 * (x + y + math.sqrt((x - y) * (x - y) + 0.01))",
    "min": "def min(x, y):\n    return 0.5 * (x + y - math.sqrt((x - y) * (x - y) + 0.01))",
}
# helper names besides h0, h1: rule names, and names that look generated (`h` and
# `h__dual`, `hσ` and `h_3c3` are spelt alike by naive manglers)
HELPER_NAMES = (("h0", "h", "hσ", "exp", "tanh", "pow"), ("h1", "h__dual", "h_3c3", "sqrt", "sign", "x_dot"))


@dataclass(frozen=True)
class Program:
    source: str
    nparams: int
    straight: bool = False
    features: frozenset = field(default=frozenset(), repr=False, compare=False)

    @property
    def params(self) -> tuple[str, ...]:
        return PARAMS[: self.nparams]

    def __repr__(self) -> str:
        return f"Program(nparams={self.nparams}, straight={self.straight}, source='''\n{self.source}''')"


_counter = itertools.count()


def load(program: Program) -> dict:
    """Execute the program under a unique pseudo file name that linecache knows."""
    n = next(_counter)
    filename = f"<s2sad-randprog-{n}>"
    src = program.source
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {"__name__": f"randprog_{n}"}
    exec(compile(src, filename, "exec"), ns)
    return ns


class _Scope:
    """What a point of a block may read, assign and call.

    names: name -> kind (param, local, loopvar: an int from range, tvar: a tuple loop's
    variable, counter: a while loop's counter, never assigned); funcs: local lambdas and
    defs -> arity. A local def's body is a scope with `barrier`: it reads the enclosing
    names (captures them) but assigns only its own, and calls no enclosing local function.
    """

    def __init__(self, parent: "_Scope | None" = None, barrier: bool = False):
        self.parent = parent
        self.barrier = barrier
        self.names: dict[str, str] = {}
        self.funcs: dict[str, int] = {}

    def all(self) -> dict[str, str]:
        out = self.parent.all() if self.parent else {}
        out.update(self.names)
        return out

    def readable(self) -> list[str]:
        return sorted(self.all())

    def _own(self) -> dict[str, str]:
        out = self.parent._own() if self.parent and not self.barrier else {}
        out.update(self.names)
        return out

    def assignable(self, loopvars: bool) -> list[str]:
        ok = ("param", "local", "tvar") + (("loopvar",) if loopvars else ())
        return sorted(n for n, k in self._own().items() if k in ok)

    def callables(self) -> dict[str, int]:
        out = self.parent.callables() if self.parent and not self.barrier else {}
        out.update(self.funcs)
        return out


class _Gen:
    def __init__(self, draw, straight: bool, helpers: list[tuple[str, int]], assign_loop_vars: bool,
                 counters: dict, shadowed: frozenset = frozenset()):
        self.draw = draw
        self.shadowed = shadowed   # builtins the module redefines (SHADOWS)
        self.assign_loop_vars = assign_loop_vars
        self.straight = straight
        self.helpers = helpers
        self.lines: list[str] = []
        self.features: set[str] = set()
        self.fresh = counters.setdefault("fresh", itertools.count())
        self.loops = counters.setdefault("loops", itertools.count())
        self.lambdas = counters.setdefault("lambdas", itertools.count())
        self.used_tricky: set[str] = set()

    # ---------------------------------------------------------------- draws
    def int(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def choice(self, seq):
        return self.draw(st.sampled_from(list(seq)))

    def chance(self, p_in_8: int) -> bool:
        """True with probability about p_in_8/8 (shrinks towards False)."""
        return self.int(0, 7) >= 8 - p_in_8

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def new_name(self) -> str:
        if self.chance(1):
            free = [n for n in TRICKY_NAMES if n not in self.used_tricky]
            if free:
                n = self.choice(free)
                self.used_tricky.add(n)
                self.features.add("tricky_name")
                return n
        return f"v{next(self.fresh)}"

    # ---------------------------------------------------------------- expressions
    def leaf(self, scope: _Scope) -> tuple[str, float]:
        names = scope.readable()
        r = self.int(0, 7)
        if names and r <= 4:
            n = self.choice(names)
            kind = scope.all()[n]
            if kind != "local":
                self.features.add("read_" + kind)
            return n, VMAX
        if r == 5:
            self.features.add("module_constant")
            loopvars = [n for n, k in scope.all().items() if k == "loopvar"]
            if loopvars and not self.assign_loop_vars and "min" not in self.shadowed and self.chance(4):
                self.features.add("tuple_index_by_loop_var")
                return f"KS[min({self.choice(sorted(loopvars))}, 3)]", 2.0
            if self.chance(4):
                j = self.int(0, 3)
                return f"KS[{j}]", abs(KS[j])
            return "K0", K0
        c = self.choice(CONSTANTS)
        return (f"({c})" if c.startswith("-") else c), abs(float(c))

    def squash(self, text: str, bound: float, limit: float) -> tuple[str, float]:
        if bound <= limit:
            return text, bound
        self.features.add("squash")
        return f"math.tanh({text})", 1.0

    def expr(self, scope: _Scope, depth: int) -> tuple[str, float]:
        text, bound = self._expr(scope, depth)
        return self.squash(text, bound, EMAX)

    def _expr(self, scope: _Scope, depth: int) -> tuple[str, float]:
        if depth <= 0 or self.int(0, 3) == 0:
            return self.leaf(scope)
        kinds = ["add", "mul", "sub", "tanh", "div", "pow", "neg", "sin", "cos", "abs", "min",
                 "max", "exp", "sqrt", "log", "misc", "cmpval", "ifexp", "ifexp", "boolval",
                 "piecewise"]
        if self.helpers:
            kinds += ["call"] * 4
        if scope.callables():
            kinds += ["local_call"] * 3
        kind = self.choice(kinds)
        self.features.add(kind)
        sub = lambda: self.expr(scope, depth - 1)  # noqa: E731
        if kind in ("add", "sub", "mul"):
            (l, bl), (r, br) = sub(), sub()
            op = {"add": "+", "sub": "-", "mul": "*"}[kind]
            return f"({l} {op} {r})", (bl * br if kind == "mul" else bl + br)
        if kind == "div":
            (l, bl), (r, _) = sub(), sub()
            if self.chance(4):
                return f"({l} / ({r} * {r} + 1.0))", bl
            return f"({l} / (1.5 + math.cos({r})))", 2.0 * bl
        if kind == "pow":
            l, bl = sub()
            form = self.int(0, 2)
            if form == 0:
                return f"({l} ** 2)", bl ** 2
            if form == 1:
                return f"({l} ** 3)", bl ** 3
            self.features.add("pow_fractional")
            return f"(({l} * {l} + 0.5) ** 1.5)", (bl * bl + 0.5) ** 1.5
        if kind == "neg":
            l, bl = sub()
            return f"(-{l})", bl
        if kind in ("tanh", "sin", "cos"):
            l, _ = sub()
            return f"math.{kind}({l})", 1.0
        if kind == "abs":
            l, bl = sub()
            return f"abs({l})", bl
        if kind in ("min", "max"):
            (l, bl), (r, br) = sub(), sub()
            if kind not in self.shadowed and self.chance(1):
                self.features.add("minmax3")
                m, bm = sub()
                return f"{kind}({l}, {r}, {m})", max(bl, br, bm)
            return f"{kind}({l}, {r})", max(bl, br)
        if kind == "exp":
            l, _ = sub()
            form = self.int(0, 2)
            if form == 0:
                return f"math.exp(math.tanh({l}))", math.e
            if form == 1:
                return f"math.exp(math.sin({l}))", math.e
            return f"math.exp(-({l} * {l}))", 1.0
        if kind == "sqrt":
            l, bl = sub()
            return f"math.sqrt({l} * {l} + 1.0)", math.sqrt(bl * bl + 1.0)
        if kind == "log":
            l, bl = sub()
            if self.chance(4):
                return f"math.log({l} * {l} + 1.0)", math.log(bl * bl + 1.0)
            return f"math.log(1.5 + math.sin({l}))", 1.0
        if kind == "misc":
            form = self.choice(["atan", "asinh", "erf", "hypot", "log1p", "expm1"])
            self.features.add(form)
            l, bl = sub()
            if form == "atan":
                return f"math.atan({l})", math.pi / 2
            if form == "asinh":
                return f"math.asinh({l})", math.asinh(bl)
            if form == "erf":
                return f"math.erf({l})", 1.0
            if form == "hypot":  # kept off the origin, where it has no derivative
                r, br = sub()
                return f"math.hypot({l}, {r} * {r} + 0.5)", bl + br * br + 0.5
            if form == "log1p":
                return f"math.log1p({l} * {l})", math.log1p(bl * bl)
            return f"math.expm1(math.tanh({l}))", math.e - 1.0
        if kind == "piecewise":  # jumps and kinks: finite differences skip those points
            form = self.choice(["mod", "floordiv", "int", "round", "float", "floor", "fabs", "copysign"])
            self.features.add(form)
            l, bl = sub()
            if form == "mod":
                return f"({l} % 1.5)", 1.5
            if form == "floordiv":
                return f"({l} // 0.75)", bl / 0.75 + 1.0
            if form == "copysign":
                r, _ = sub()
                return f"math.copysign({l}, {r})", bl
            if form == "floor":
                return f"math.floor({l})", bl + 1.0
            if form == "fabs":
                return f"math.fabs({l})", bl
            return f"{form}({l})", bl + 1.0
        if kind == "cmpval":
            c = self.simple_cond(scope, depth - 1)
            l, bl = sub()
            return f"(({c}) * {l})", bl
        if kind == "ifexp":
            c = self.cond(scope, depth - 1)
            (l, bl), (r, br) = sub(), sub()
            return f"({l} if {c} else {r})", max(bl, br)
        if kind == "boolval":
            c = self.cond(scope, depth - 1)
            l, bl = sub()
            op = self.choice(["and", "or"])
            self.features.add("boolval_" + op)
            return f"({c} {op} {l})", max(bl, 1.0)
        if kind == "call":
            h, nargs = self.choice(self.helpers)
            args = [sub()[0] for _ in range(nargs)]
            return f"{h}({', '.join(args)})", VMAX
        if kind == "local_call":
            fns = scope.callables()
            h = self.choice(sorted(fns))
            args = [sub()[0] for _ in range(fns[h])]
            return f"{h}({', '.join(args)})", VMAX
        raise AssertionError(kind)

    def simple_cond(self, scope: _Scope, depth: int) -> str:
        l, _ = self.expr(scope, depth)
        op = self.choice(["<", ">", "<=", ">="])
        if self.chance(4):
            r = self.choice(["0.0", "0.5", "-0.5", "1.0", "-1.0", "0.25"])
            r = f"({r})" if r.startswith("-") else r
        else:
            r, _ = self.expr(scope, depth)
        return f"{l} {op} {r}"

    def cond(self, scope: _Scope, depth: int) -> str:
        form = self.int(0, 5)
        if form <= 2 or depth <= 0:
            return self.simple_cond(scope, depth)
        if form == 3:
            self.features.add("chained_compare")
            (l, _), (m, _), (r, _) = (self.expr(scope, depth - 1) for _ in range(3))
            op1, op2 = self.choice(["<", "<="]), self.choice(["<", "<=", ">"])
            return f"{l} {op1} {m} {op2} {r}"
        if form == 4:
            op = self.choice(["and", "or"])
            self.features.add("cond_" + op)
            return f"({self.cond(scope, depth - 1)} {op} {self.cond(scope, depth - 1)})"
        self.features.add("cond_not")
        return f"(not {self.cond(scope, depth - 1)})"

    # ---------------------------------------------------------------- statements
    def bounded_value(self, scope: _Scope, depth: int) -> str:
        text, bound = self.expr(scope, depth)
        if bound <= VMAX:
            return text
        self.features.add("bound_assign")
        form = self.int(0, 2)
        if form == 0:
            return f"math.tanh({text})"
        if form == 1:
            return f"min(max({text}, -{VMAX}), {VMAX})"
        return f"{VMAX} * math.tanh({text} * {1.0 / VMAX})"

    def block(self, scope: _Scope, indent: int, depth: int, n: int, loop: str | None,
              tail: bool) -> None:
        """n statements; `loop` is how break/continue may leave the innermost enclosing
        loop ('for', 'while': no continue, None: neither); with `tail`, the block may end
        with return/break/continue/pass."""
        for _ in range(n):
            self.stmt(scope, indent, depth, loop)
        if tail and not self.straight:
            t = self.int(0, 7)
            if t >= 5:
                self.features.add("early_return")
                self.emit(indent, f"return {self.bounded_value(scope, 2)}")
            elif t == 4 and loop is not None:
                self.features.add("break")
                self.emit(indent, "break")
            elif t == 3 and loop == "for":
                self.features.add("continue")
                self.emit(indent, "continue")
            elif t == 2:
                self.features.add("pass")
                self.emit(indent, "pass")

    def stmt(self, scope: _Scope, indent: int, depth: int, loop: str | None) -> None:
        kinds = ["assign", "assign", "assign", "reassign", "lambda"]
        if not self.straight:
            kinds += ["aug", "aug", "tuple", "multi", "def"]
            if depth > 0:
                kinds += ["if", "if", "for", "for", "while", "tuple_for"]
                if indent == 1:   # a tuple local is assigned once, at its function's top level
                    kinds += ["tuple_local", "tuple_local"]
            if loop is not None:
                kinds += ["guard"]
        kind = self.choice(kinds)
        targets = scope.assignable(loopvars=self.assign_loop_vars and self.chance(4))
        if kind in ("reassign", "aug") and not targets:
            kind = "assign"
        edepth = self.int(1, 3)
        if kind == "assign":
            value = self.bounded_value(scope, edepth)
            name = self.new_name()
            if not self.straight and self.chance(1):
                self.features.add("annotated_assign")
                self.emit(indent, f"{name}: float = {value}")
            else:
                self.emit(indent, f"{name} = {value}")
            scope.names[name] = "local"
            return
        if kind == "reassign":
            t = self.choice(targets)
            self.features.add("reassign_" + scope.all()[t])
            self.emit(indent, f"{t} = {self.bounded_value(scope, edepth)}")
            return
        if kind == "multi":
            self.features.add("multi_target")
            value = self.bounded_value(scope, edepth)
            names = [self.choice(targets) if targets and self.chance(4) else self.new_name()
                     for _ in range(2)]
            self.emit(indent, f"{' = '.join(names)} = {value}")
            for n in names:
                if n not in scope.all():
                    scope.names[n] = "local"
            return
        if kind == "aug":
            t = self.choice(targets)
            self.features.add("reassign_" + scope.all()[t])
            op = self.choice(["+=", "-=", "*=", "/=", "**="])
            self.features.add("aug" + op)
            e, be = self.expr(scope, edepth)
            if op == "/=":
                self.emit(indent, f"{t} /= ({e} * {e} + 1.0)")
                return
            if op == "**=":
                self.emit(indent, f"{t} **= 2")
                bound = VMAX ** 2
            else:
                self.emit(indent, f"{t} {op} {e}")
                bound = VMAX * be if op == "*=" else VMAX + be
            if bound > VMAX:
                form = self.int(0, 2)
                self.emit(indent, [f"{t} = math.tanh({t})", f"{t} = min(max({t}, -{VMAX}), {VMAX})",
                                   f"{t} = {VMAX} * math.tanh({t} * {1.0 / VMAX})"][form])
            return
        if kind == "tuple":
            self.features.add("tuple_unpack")
            if len(targets) >= 2 and self.chance(2):
                p, q = self.choice(targets), self.choice(targets)
                if p != q:
                    self.features.add("swap")
                    self.emit(indent, f"{p}, {q} = {q}, {p}")
                    return
            k = 3 if self.chance(1) else 2
            names: list[str] = []
            for _ in range(k):
                if targets and self.chance(4):
                    cand = self.choice(targets)
                    if cand not in names:
                        names.append(cand)
                        continue
                names.append(self.new_name())
            values = [self.bounded_value(scope, edepth) for _ in names]
            self.emit(indent, f"{', '.join(names)} = {', '.join(values)}")
            for n in names:
                if n not in scope.all():
                    scope.names[n] = "local"
            return
        if kind == "lambda":
            self.features.add("local_lambda")
            name = f"lam{next(self.lambdas)}"
            params = [f"t{next(self.fresh)}" for _ in range(self.int(1, 2))]
            inner = _Scope(scope, barrier=True)
            for p in params:
                inner.names[p] = "param"
            self.emit(indent, f"{name} = lambda {', '.join(params)}: {self.bounded_value(inner, edepth)}")
            scope.funcs[name] = len(params)
            return
        if kind == "def":
            self.features.add("local_def")
            name = f"g{next(self.lambdas)}"
            params = [f"t{next(self.fresh)}" for _ in range(self.int(1, 2))]
            inner = _Scope(scope, barrier=True)
            for p in params:
                inner.names[p] = "param"
            self.emit(indent, f"def {name}({', '.join(params)}):")
            self.block(inner, indent + 1, min(depth - 1, 1), self.int(0, 2), None, tail=False)
            self.emit(indent + 1, f"return {self.bounded_value(inner, 2)}")
            scope.funcs[name] = len(params)
            return
        if kind == "guard":  # `if c: break` (or continue) in a loop body
            jump = "continue" if loop == "for" and self.chance(4) else "break"
            self.features.add(jump)
            self.emit(indent, f"if {self.cond(scope, 1)}:")
            self.emit(indent + 1, jump)
            return
        if kind == "if":
            self.features.add("if")
            self.emit(indent, f"if {self.cond(scope, 2)}:")
            self.block(_Scope(scope), indent + 1, depth - 1, self.int(1, 2), loop, tail=True)
            for _ in range(self.int(0, 2)):
                self.features.add("elif")
                self.emit(indent, f"elif {self.cond(scope, 2)}:")
                self.block(_Scope(scope), indent + 1, depth - 1, self.int(1, 2), loop, tail=True)
            if self.chance(4):
                self.features.add("else")
                self.emit(indent, "else:")
                self.block(_Scope(scope), indent + 1, depth - 1, self.int(1, 2), loop, tail=True)
            return
        if kind == "for":
            self.features.add("for")
            i = f"i{next(self.loops)}"
            k = self.int(1, 4)
            form = self.int(0, 3)
            rng = [f"range({k})", f"range(1, {k + 1})", f"range({k}, 0, -1)", f"range(0, {2 * k}, 2)"][form]
            self.emit(indent, f"for {i} in {rng}:")
            body = _Scope(scope)
            body.names[i] = "loopvar"
            self.block(body, indent + 1, depth - 1, self.int(1, 3), "for", tail=False)
            scope.names[i] = "loopvar"  # the range is never empty: defined after the loop
            return
        if kind == "tuple_for":
            # s2sad unrolls it and refuses break/continue that leave it (`loop` None); loops
            # nested in it may break (test_regression_break_in_loop_inside_tuple_loop)
            self.features.add("tuple_for")
            w = f"w{next(self.loops)}"
            values = [self.choice(CONSTANTS) for _ in range(self.int(1, 3))]
            it = "KS" if self.chance(4) else f"({', '.join(values)},)"
            self.emit(indent, f"for {w} in {it}:")
            body = _Scope(scope)
            body.names[w] = "tvar"
            self.block(body, indent + 1, depth - 1, self.int(1, 2), None, tail=False)
            scope.names[w] = "tvar"
            return
        if kind == "tuple_local":
            self.tuple_local(scope, indent, depth)
            return
        if kind == "while":
            self.features.add("while")
            n = f"n{next(self.loops)}"
            self.emit(indent, f"{n} = 0")
            self.emit(indent, f"while {n} < {self.int(1, 3)}:")
            body = _Scope(scope)
            body.names[n] = "counter"
            self.block(body, indent + 1, depth - 1, self.int(1, 3), "while", tail=False)
            self.emit(indent + 1, f"{n} += 1")
            return
        raise AssertionError(kind)

    def tuple_local(self, scope: _Scope, indent: int, depth: int) -> None:
        """`c = (...)` (constants, or values of the function), then a loop over it: plain,
        enumerate, zip with KS, range(len(c)) with c[i], or unpacking."""
        c = f"c{next(self.loops)}"
        n = self.int(2, 4)
        if self.chance(2):
            self.features.add("tuple_of_values")
            elts = [self.bounded_value(scope, 1) for _ in range(n)]
        else:
            self.features.add("tuple_local")
            elts = [self.choice(CONSTANTS) for _ in range(n)]
        self.emit(indent, f"{c} = ({', '.join(elts)},)")
        form = self.choice(["plain", "enumerate", "zip", "len", "unpack"])
        self.features.add("tuple_" + form)
        if form == "unpack":
            names = [self.new_name() for _ in range(n)]
            self.emit(indent, f"{', '.join(names)} = {c}")
            for nm in names:
                scope.names[nm] = "local"
            return
        w, body = f"w{next(self.loops)}", _Scope(scope)
        extra: dict[str, str] = {}
        if form == "plain":
            self.emit(indent, f"for {w} in {c}:")
        elif form == "enumerate":
            i = f"i{next(self.loops)}"
            self.emit(indent, f"for {i}, {w} in enumerate({c}):")
            extra[i] = "loopvar"
        elif form == "zip":
            u = f"u{next(self.loops)}"
            self.emit(indent, f"for {w}, {u} in zip({c}, KS):")
            extra[u] = "tvar"
        else:
            i = f"i{next(self.loops)}"
            self.emit(indent, f"for {i} in range(len({c})):")
            self.emit(indent + 1, f"{w} = {c}[{i}]")
            extra[i] = "loopvar"
        body.names.update(extra, **{w: "tvar"})
        self.block(body, indent + 1, depth - 1, self.int(1, 2), None, tail=False)
        scope.names.update(extra, **{w: "tvar"})   # the tuple is never empty

    def function(self, fname: str, params: tuple[str, ...], nstmts: int, depth: int) -> None:
        scope = _Scope()
        for p in params:
            scope.names[p] = "param"
        self.emit(0, f"def {fname}({', '.join(params)}):")
        self.block(scope, 1, depth, nstmts, None, tail=False)
        self.emit(1, f"return {self.bounded_value(scope, 3)}")


# loss_alt spellings: (source of the body given the params, ratio of loss_alt to loss)
def _alt_losses(ps: tuple[str, ...]):
    args = ", ".join(ps)
    inner = ", ".join(p + "_" for p in ps)
    out = [
        (f"np.mean(s2sad.broadcast(f, {args}))", "mean"),
        (f"s2sad.broadcast(f, {args}).sum()", "1"),
        (f"sum(map(f, {args}))", "1"),
        (f"np.sum(s2sad.broadcast(lambda {inner}: 2.0 * f({inner}), {args}))", "2"),
    ]
    if len(ps) == 1:
        out += [(f"sum([f(z) for z in {ps[0]}])", "1"), (f"sum(f(z) for z in {ps[0]})", "1")]
    return out


@st.composite
def programs(draw, nparams=None, straight=None, max_helpers: int = 2, max_stmts: int = 6,
             assign_loop_vars: bool | None = None, depth: int = 2):
    """A random program; see the module docstring.

    assign_loop_vars: a for loop's variable may be assigned a value, in the loop body
    (Python resets it at the next iteration) or after the loop (see
    test_regression_assigned_loop_variable); then `KS[min(i, 3)]` is not generated, since
    i may no longer be an int. None: drawn per program.
    depth: how deeply f's if/for/while statements nest (helpers: 1)."""
    if nparams is None:
        nparams = draw(st.integers(1, 3))
    if straight is None:
        straight = draw(st.integers(0, 5)) == 0
    if assign_loop_vars is None:
        assign_loop_vars = draw(st.booleans())
    counters: dict = {}
    nhelpers = draw(st.integers(0, max_helpers))
    helpers: list[tuple[str, int]] = []
    chunks: list[str] = []
    features: set[str] = set()
    shadowed = frozenset(n for n in SHADOWS if draw(st.integers(0, 7)) == 0)
    for n in sorted(shadowed):
        chunks.append(SHADOWS[n])
        features.add("shadow_" + n)
    for j in range(nhelpers):
        g = _Gen(draw, False, list(helpers), assign_loop_vars, counters, shadowed)
        nargs = draw(st.integers(1, 2))
        hname = HELPER_NAMES[j][0] if draw(st.integers(0, 3)) else draw(st.sampled_from(HELPER_NAMES[j][1:]))
        g.function(hname, HELPER_PARAMS[:nargs], draw(st.integers(0, 3)), 1)
        chunks.append(_decorated(draw, g.lines, features))
        features |= g.features
        helpers.append((hname, nargs))
        if hname != f"h{j}":
            features.add("helper_named_like_" + ("rule" if hname in rules.RULES else "generated"))
    if helpers:
        features.add("helper")
    g = _Gen(draw, straight, helpers, assign_loop_vars, counters, shadowed)
    params = PARAMS[:nparams]
    g.function("f", params, draw(st.integers(1, max_stmts)), depth)
    features |= g.features
    chunks.append(_decorated(draw, g.lines, features))
    ps = ", ".join(params)
    chunks.append(f"def loss({ps}):\n    return np.sum(s2sad.broadcast(f, {ps}))")
    chunks.append(f"def fmap({ps}):\n    return s2sad.broadcast(f, {ps})")
    alt, scale = draw(st.sampled_from(_alt_losses(params)))
    chunks.append(f"ALT_SCALE = {scale!r}\n\n\ndef loss_alt({ps}):\n    return {alt}")
    # the row shape: chosen from what is drawn already, so that the other tests' programs stay as they were
    chunks.extend(_row_functions(params, len(source_so_far := "".join(chunks))))
    features.add(f"rows_{len(source_so_far) % 3}")
    source = MODULE_HEADER + "\n\n" + "\n\n\n".join(chunks) + "\n"
    return Program(source, nparams, bool(straight), frozenset(features))


def _row_functions(params: tuple[str, ...], pick: int) -> list[str]:
    """`frow(p)`: f of a row's components (indices, an unpacking, or negative indices),
    and `loss_rows(X)`: the loss over the rows of X = np.stack(args, axis=1), spelled
    with map, s2sad.broadcast(..., signature=) or a generator expression."""
    k = len(params)
    names = ", ".join(p + "_r" for p in params)
    bodies = [f"    return f({', '.join(f'p[{i}]' for i in range(k))})",
              f"    {names}{',' if k == 1 else ''} = p\n    return f({names})",
              f"    return f({', '.join(f'p[{i - k}]' for i in range(k))})"]
    losses = ["sum(map(frow, X))", f'np.sum(s2sad.broadcast(frow, X, signature="({k})->()"))',
              "sum(frow(r) for r in X)"]
    return [f"def frow(p):\n{bodies[pick % 3]}", f"def loss_rows(X):\n    return {losses[(pick // 3) % 3]}"]


def _decorated(draw, lines: list[str], features: set[str]) -> str:
    """A function's text, with one of DECORATORS above it one time in six."""
    text = "\n".join(lines)
    if draw(st.integers(0, 5)):
        return text
    deco = draw(st.sampled_from(DECORATORS))
    features.add("decorated_" + ("traced" if deco == "@traced" else "scaled"))
    return deco + "\n" + text


# ---------------------------------------------------------------- programs of many terms

def _long_term(rng, k: int) -> str:
    c = rng.choice(CONSTANTS)
    c = f"({c})" if c.startswith("-") else c
    form = rng.randrange(5)
    if form == 0:
        return f"{c} * a"
    if form == 1:
        return f"{c} * math.sin({0.25 * (k % 9)} * a)"
    if form == 2:
        return f"{c} * math.tanh(a - {0.125 * (k % 17)})"
    if form == 3:
        return f"{c} * (a * a)"
    return f"{c} * KS[{k % 4}] * a"


@st.composite
def long_programs(draw, min_terms: int = 200, max_terms: int = 1000):
    """`f(a)`: a sum of hundreds to thousands of terms written as one expression, or an
    if/elif chain of hundreds of arms (one deep tree either way), with `loss` and
    `fmap` as in `programs`. The terms come from a seeded generator (one draw each
    would make hypothesis slow), so they do not shrink."""
    import random
    n = draw(st.integers(min_terms, max_terms))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()):
        body = "    return " + " + ".join(_long_term(rng, k) for k in range(n))
        features = {"long_sum"}
    else:
        n = min(n, 600)
        cuts = sorted(rng.uniform(-2.0, 2.0) for _ in range(n))
        lines = [f"    {'if' if k == 0 else 'elif'} a < {cut!r}:\n        return {_long_term(rng, k)}"
                 for k, cut in enumerate(cuts)]
        body = "\n".join(lines) + f"\n    return {_long_term(rng, n)}"
        features = {"long_elif"}
    source = (MODULE_HEADER + "\n\ndef f(a):\n" + body + "\n\n\ndef loss(a):\n    return np.sum(s2sad.broadcast(f, a))"
              "\n\n\ndef fmap(a):\n    return s2sad.broadcast(f, a)\n")
    return Program(source, 1, False, frozenset(features))

"""A scan's element body split into the part that does not depend on the state and the
part that does, and whether the reverse sweep needs the state at all.

A scan driver (kernel.py, "Scan drivers") runs a state-passing entry
`f(p1..pn, s1..sk) -> (value, s1'..sk')` in order, one element after another. Most of
what a stateful function computes usually does not depend on the state (in
`t = tanh(x) * x; s += t; return s + t`, everything but the two adds): that part can
run in a vectorised pass ahead of the serial chain. And when the partials of the dual
do not depend on the state (they do not, in an accumulator), the reverse sweep needs
nothing from the forward sweep: no tape, and the two sweeps' chains can run side by
side.

`split_entry` inlines the entry's helpers (core language -> core language, with unique
names), finds by a dependence analysis (data and control) which top-level statements
read nothing the state reaches, and returns

    pre(p1..pn) -> (v1..vm)                    the state-free statements
    rest(p1..pn, v1..vm, s1..sk) -> returns    the others, in order; the entry's returns

with, per returned slot, whether it is independent of the states. `rest` evaluated
after `pre` is the entry, statement for statement (no arithmetic moves or changes, so
every value and state is bitwise what the entry computes). `scan_plan` applies it to a
scan module's primal entry and its dual. Anything the inliner does not handle (a
`return` inside a loop, a helper called in a while test or a conditional expression)
gives no split: the drivers then call the entry as before, with the tape.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import gast

from ..kernel import ArityError, return_arity
from .trees import const, definitely_returns, function_def, name

# statements worth running in a vectorised pass ahead of the chain: what they contain
_COSTLY_OPS = (gast.Pow, gast.Div, gast.FloorDiv, gast.Mod)


class _GiveUp(Exception):
    pass


@dataclass
class EntrySplit:
    """`pre` (None: nothing worth hoisting) and `rest`; see the module docstring."""

    pre: gast.FunctionDef | None
    rest: gast.FunctionDef
    n_iface: int                     # m: values pre returns and rest takes after the params
    slot_free: tuple[bool, ...]      # per returned slot: independent of the states
    rest_loops: bool                 # rest holds a loop (it must not run on a made-up state)


@dataclass
class ScanPlan:
    """How the llvm scan driver runs a module (primal: the entry; dual: the dual entry)."""

    primal: EntrySplit | None
    dual: EntrySplit | None
    tape: bool                       # the reverse sweep reads the state before each element


def scan_plan(kmod, n_state: int, grads: bool) -> ScanPlan:
    primal = split_entry(kmod.functions, kmod.entry, n_state, kmod.entry + "__scan")
    dual = None
    tape = grads
    if grads:
        dual = split_entry(kmod.functions, kmod.dual_entry, n_state, kmod.dual_entry + "__scan")
        if dual is not None and all(dual.slot_free[1 + n_state:]) and not dual.rest_loops:
            tape = False
    return ScanPlan(primal, dual, tape)


# ------------------------------------------------------------------ names

def _reads(node) -> set[str]:
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _writes(node) -> set[str]:
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _all_names(node) -> set[str]:
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


class _Rename(gast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node):
        if node.id in self.mapping:
            return gast.Name(id=self.mapping[node.id], ctx=node.ctx, annotation=None, type_comment=None)
        return node


# ------------------------------------------------------------------ inlining

class _Inliner:
    def __init__(self, functions: dict[str, gast.FunctionDef], taken: set[str]) -> None:
        self.functions = functions
        self.taken = set(taken)
        self.count = 0
        self.arity_memo: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        while True:
            self.count += 1
            cand = f"_sc{self.count}_{base}"
            if cand not in self.taken:
                self.taken.add(cand)
                return cand

    def arity(self, fname: str) -> int:
        try:
            return return_arity(self.functions, fname, self.arity_memo)
        except ArityError:
            raise _GiveUp from None

    def is_helper(self, e) -> bool:
        return isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and e.func.id in self.functions

    def hoist(self, e, pre: list[gast.stmt], guarded: bool = False):
        """`e` with every helper call replaced by a temporary assigned (inlined) in `pre`."""
        if isinstance(e, (gast.IfExp, gast.BoolOp)):
            guarded = True
        if self.is_helper(e):
            if guarded or self.arity(e.func.id) != 1:
                raise _GiveUp
            args = [self.hoist(a, pre, guarded) for a in e.args]
            tmp = self.fresh("call")
            pre.extend(self.inline_call(e.func.id, args, [tmp]))
            return name(tmp)
        for field, value in gast.iter_fields(e):
            if isinstance(value, gast.expr):
                setattr(e, field, self.hoist(value, pre, guarded))
            elif isinstance(value, list):
                setattr(e, field, [self.hoist(v, pre, guarded) if isinstance(v, gast.expr) else v for v in value])
        return e

    def body(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for s in stmts:
            if isinstance(s, gast.Assign):
                t = s.targets[0]
                if self.is_helper(s.value):
                    targets = [x.id for x in t.elts] if isinstance(t, gast.Tuple) else [t.id]
                    if len(targets) != self.arity(s.value.func.id):
                        raise _GiveUp
                    args = [self.hoist(a, out) for a in s.value.args]
                    out.extend(self.inline_call(s.value.func.id, args, targets))
                    continue
                s.value = self.hoist(s.value, out)
                out.append(s)
            elif isinstance(s, gast.Return):
                if self.is_helper(s.value):
                    m = self.arity(s.value.func.id)
                    tmps = [self.fresh("ret") for _ in range(m)]
                    args = [self.hoist(a, out) for a in s.value.args]
                    out.extend(self.inline_call(s.value.func.id, args, tmps))
                    s.value = (name(tmps[0]) if m == 1
                               else gast.Tuple(elts=[name(t) for t in tmps], ctx=gast.Load()))
                else:
                    s.value = self.hoist(s.value, out)
                out.append(s)
            elif isinstance(s, gast.If):
                s.test = self.hoist(s.test, out)
                s.body, s.orelse = self.body(s.body), self.body(s.orelse)
                out.append(s)
            elif isinstance(s, gast.For):
                s.iter = self.hoist(s.iter, out)
                s.body = self.body(s.body)
                out.append(s)
            elif isinstance(s, gast.While):
                if any(self.is_helper(n) for n in gast.walk(s.test)):
                    raise _GiveUp
                s.body = self.body(s.body)
                out.append(s)
            elif isinstance(s, gast.Expr):
                if any(self.is_helper(n) for n in gast.walk(s)):
                    raise _GiveUp
                out.append(s)
            else:
                out.append(s)
        return out

    def inline_call(self, fname: str, args: list[gast.expr], targets: list[str]) -> list[gast.stmt]:
        fn = self.functions[fname]
        params = [a.id for a in fn.args.args]
        local = params + sorted(_all_names(fn) - set(params) - {"math", fname} - set(self.functions)
                                - {"abs", "min", "max", "float", "int", "round", "range"})
        mapping = {v: self.fresh(v) for v in local}
        body = [_Rename(mapping).visit(copy.deepcopy(s)) for s in fn.body]
        out = [gast.Assign(targets=[name(mapping[p], gast.Store())], value=a, type_comment=None)
               for p, a in zip(params, args)]
        return out + self.body(_tail_assign(body, targets))


def _assign_result(value: gast.expr, targets: list[str]) -> list[gast.stmt]:
    if len(targets) > 1 and isinstance(value, gast.Call):   # a helper's tuple: inlined next
        return [gast.Assign(targets=[gast.Tuple(elts=[name(t, gast.Store()) for t in targets], ctx=gast.Store())],
                            value=value, type_comment=None)]
    if len(targets) == 1:
        return [gast.Assign(targets=[name(targets[0], gast.Store())], value=value, type_comment=None)]
    if not isinstance(value, gast.Tuple) or len(value.elts) != len(targets):
        raise _GiveUp
    return [gast.Assign(targets=[name(t, gast.Store())], value=v, type_comment=None)
            for t, v in zip(targets, value.elts)]


def _has_return(s) -> bool:
    return any(isinstance(n, gast.Return) for n in gast.walk(s))


def _tail_assign(body: list[gast.stmt], targets: list[str]) -> list[gast.stmt]:
    """`body` with its returns made assignments to `targets` (returns only at the end of
    paths: what follows an `if` that returns on one side moves into the other side)."""
    out: list[gast.stmt] = []
    for idx, s in enumerate(body):
        if isinstance(s, gast.Return):
            return out + _assign_result(s.value, targets)
        if isinstance(s, gast.If) and _has_return(s):
            rest = body[idx + 1:]
            b = s.body + ([] if definitely_returns(s.body) else copy.deepcopy(rest))
            o = s.orelse + ([] if definitely_returns(s.orelse) else copy.deepcopy(rest))
            s.body, s.orelse = _tail_assign(b, targets), _tail_assign(o, targets)
            return out + [s]
        if _has_return(s):
            raise _GiveUp     # a return inside a loop
        out.append(s)
    raise _GiveUp             # a path without a return


# ------------------------------------------------------------------ constants and copies

def _propagate(body: list[gast.stmt], params: set[str]) -> list[gast.stmt]:
    """Reads of a name bound to a constant, or to a copy of another name, replaced by
    that (top-level statements in order; inside a compound statement only names it does
    not write): the forward mode's `d = 1.0` and `_t = _d` chains no longer hide that a
    partial is a constant or a value already at hand. No arithmetic changes."""
    env: dict[str, gast.expr] = {}

    def forget(written: set[str]) -> None:
        for v in list(env):
            if v in written or _reads(env[v]) & written:
                del env[v]

    out = []
    for s in body:
        written = _writes(s)
        usable = {v: e for v, e in env.items() if v not in written or isinstance(s, gast.Assign)}
        if isinstance(s, gast.Assign):
            s.value = _Fold().visit(_Substitute(usable).visit(s.value))
        elif usable:
            s = _Substitute({v: e for v, e in usable.items() if v not in written}).visit(s)
        forget(written)
        if isinstance(s, gast.Assign) and len(written) == 1 and isinstance(s.targets[0], gast.Name):
            v, e = s.targets[0].id, s.value
            simple = e.operand if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub) else e
            if isinstance(simple, gast.Constant) or (isinstance(e, gast.Name) and e.id != v):
                env[v] = e
        out.append(s)
    return out


def _small_int(e) -> float | None:
    """The value of a constant that is a small integer (exact in float32 and float64)."""
    sign = 1.0
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub):
        e, sign = e.operand, -1.0
    if isinstance(e, gast.Constant) and type(e.value) in (int, float) and float(e.value).is_integer() \
            and abs(e.value) <= 2 ** 20:
        return sign * float(e.value)
    return None


class _Fold(gast.NodeTransformer):
    """c1 * c2, c1 + c2, c1 - c2 of small integers: exact in either precision."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        a, b = _small_int(node.left), _small_int(node.right)
        if a is None or b is None or not isinstance(node.op, (gast.Add, gast.Sub, gast.Mult)):
            return node
        v = a + b if isinstance(node.op, gast.Add) else a - b if isinstance(node.op, gast.Sub) else a * b
        return const(v)


class _Substitute(gast.NodeTransformer):
    def __init__(self, env: dict[str, gast.expr]) -> None:
        self.env = env

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.env:
            return copy.deepcopy(self.env[node.id])
        return node


# ------------------------------------------------------------------ dependence on the state

def _taint(body: list[gast.stmt], tainted: set[str], ctl: bool, top: bool) -> None:
    """Grow `tainted` with every name the state reaches through `body` (data and
    control dependence); at the top level an untainted assignment clears its name."""
    for s in body:
        if isinstance(s, gast.Assign):
            t = ctl or bool(_reads(s.value) & tainted)
            for n in _writes(s):
                if t:
                    tainted.add(n)
                elif top:
                    tainted.discard(n)
        elif isinstance(s, gast.If):
            c = ctl or bool(_reads(s.test) & tainted)
            _taint(s.body, tainted, c, False)
            _taint(s.orelse, tainted, c, False)
        elif isinstance(s, (gast.For, gast.While)):
            while True:
                before = set(tainted)
                head = s.iter if isinstance(s, gast.For) else s.test
                c = ctl or bool(_reads(head) & tainted) or _exits_on_state(s.body, tainted)
                if c:
                    tainted |= _writes(s)
                _taint(s.body, tainted, c, False)
                if tainted == before:
                    break


def _exits_on_state(body: list[gast.stmt], tainted: set[str]) -> bool:
    """A break or continue under a condition the state reaches."""
    for n in (x for s in body for x in gast.walk(s)):
        if isinstance(n, (gast.If, gast.While)) and _reads(n.test) & tainted \
                and any(isinstance(m, (gast.Break, gast.Continue)) for m in gast.walk(n)):
            return True
    return False


def _rematerialisable(e, params: list[str]) -> bool:
    if isinstance(e, gast.UnaryOp):
        e = e.operand
    return isinstance(e, gast.Constant) or (isinstance(e, gast.Name) and e.id in params)


def _costly(stmts: list[gast.stmt]) -> bool:
    for n in (x for s in stmts for x in gast.walk(s)):
        if isinstance(n, (gast.For, gast.While)):
            return True
        if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute):
            return True
        if isinstance(n, gast.BinOp) and isinstance(n.op, _COSTLY_OPS):
            return True
    return False


# ------------------------------------------------------------------ the split

def split_entry(functions: dict[str, gast.FunctionDef], entry: str, n_state: int,
                prefix: str) -> EntrySplit | None:
    fn = functions.get(entry)
    if fn is None:
        return None
    params = [a.id for a in fn.args.args]
    names, states = params[:len(params) - n_state], params[len(params) - n_state:]
    taken = set(functions)
    for f in functions.values():
        taken |= _all_names(f)
    inl = _Inliner(functions, taken)
    try:
        arity = inl.arity(entry)
        slots = [inl.fresh("slot") for _ in range(arity)]
        body = inl.body(_tail_assign([copy.deepcopy(s) for s in fn.body], slots))
    except (_GiveUp, RecursionError, AttributeError, KeyError):
        return None
    ret = gast.Return(value=name(slots[0]) if arity == 1
                      else gast.Tuple(elts=[name(s) for s in slots], ctx=gast.Load()))
    body = _propagate(body + [ret], set(params))[:-1]

    tainted = set(states)
    _taint(body, tainted, False, True)
    slot_free = tuple(s not in tainted for s in slots)

    # top-level statements in order: to `pre` when they read nothing the state (or a
    # statement left in `rest`) reaches, and moving them ahead breaks no order
    pre, rest = [], []
    late = set(states)              # names the state reaches, or `rest` writes
    rest_reads, rest_writes = set(), set()
    for s in body:
        r, w = _reads(s), _writes(s)
        if not (r & late) and not (w & (rest_reads | rest_writes | set(params))):
            pre.append(s)
            late -= w
        else:
            rest.append(s)
            late |= w
            rest_reads |= r
            rest_writes |= w
    if not _costly(pre):
        rest, pre = body, []
    rest_uses = set().union(*(_reads(s) for s in rest), _reads(ret))
    pre_writes = set().union(*(_writes(s) for s in pre)) if pre else set()
    iface = sorted(pre_writes & rest_uses)
    # a constant, or a copy of a param, is set again at the start of rest, not carried
    prelude = []
    for v in list(iface):
        defs = [s for s in pre if v in _writes(s)]
        if len(defs) == 1 and isinstance(defs[0], gast.Assign) and _rematerialisable(defs[0].value, names):
            prelude.append(copy.deepcopy(defs[0]))
            iface.remove(v)
    rest = prelude + rest
    if pre and not iface:
        rest, pre = body, []
    pre_fn = None
    if pre:
        value = name(iface[0]) if len(iface) == 1 else gast.Tuple(elts=[name(v) for v in iface], ctx=gast.Load())
        pre_fn = function_def(prefix + "_pre", names, pre + [gast.Return(value=value)])
    rest_fn = function_def(prefix + "_rest", names + iface + states, rest + [ret])
    loops = any(isinstance(n, (gast.For, gast.While)) for s in rest for n in gast.walk(s))
    return EntrySplit(pre_fn, rest_fn, len(iface), slot_free, loops)

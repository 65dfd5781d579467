"""The differentiated function's body -> an array-level program in ANF, with its
elementwise regions fused into kernels.

Input: a `ParsedFunction` that the fused planner (elementwise.py) does not take: any
mix of numpy calls, `@`, indexing, Python `for` over `range`, `if` on scalars, local
and module-level helper functions (inlined), and elementwise code (arithmetic,
ufuncs, `np.where`/`np.clip`/`np.maximum`, `s2sad.broadcast`/`map`/comprehensions of
scalar functions).

Output: an `ArrayProgram` (passes/arrayir.py), statements in administrative normal
form. Every value has one SSA name, named after the user's variable where there is one
(`h`, then `h_2` when it is assigned again), `_1`, `_2`... for intermediates. `args`
are the operands derivatives flow through; everything else an operation needs (an
axis, a shape, an index) is a *static* parameter, rendered as Python source.

Ops: a call, method or syntax the `array_prims` table knows becomes its typed op
(recognised by identity through the table: `prim_call`, `prim_method`, `emit_prim`);
elementwise code becomes `Elementwise` statements, which `fuse` joins into `RunKernel`
/ `KernelSum` statements; anything else is `Py`, evaluated as written.

Free names holding arrays are data: read at call time, never differentiated. In-place
updates (`x[0] = ...`, and `x += ...` where x may share memory with another name) are
refused: the generated code never mutates, so they would differentiate wrongly.
"""
from __future__ import annotations

import builtins
import copy
import types
from dataclasses import dataclass
from typing import Any, Callable

import gast
import numpy as np

from .. import rules
from ..array_prims import HELPER_NAMES, Index, Reduce
from ..errors import (FreeVariableError, RecursionNotSupportedError, S2SADError, StatefulError, UnsupportedOperationError,
                      UnsupportedSyntaxError)
from ..defaults import DefaultValues, bind_call
from ..kernel_text import unparse
from ..marks import is_entry_point
from ..frontend import (MISSING, ParsedFunction, Resolver, attribute_value, classify, location_of, parse_function,
                        source_line)
from .arrayir import (ArrayProgram, ArrayStmt, Const, Ctx, Elementwise, ForStmt, IfStmt, KernelInfo, KernelSum, Namer,
                      Phi, Py, RunKernel, const_expr, operand_expr, stmt_reads, walk_stmts)
from .kernelpairs import pair_kernels
from .primcalls import PrimCalls, register_hint, root_name, unsupported  # register_hint: also for tests
from .elementwise import Site, drop_unread_params, mark_closures, translate_elementwise, unwrap_single_call
from .normalize import Normalizer, ScalarProgram
from .trees import assigned_names as _assigned_names, const, dotted, function_def, name

# Names generated code uses for its own purposes (reverse.py binds them).
RESERVED = {"apply", "vjp", "store_partials", "sum_dual", "sum_grads", "not_needed", "broadcast_size", "check_scalar_loss",
            "kernel_matmul", "kernel_matmul_vjp", "kernel_rowsum", "kernel_rowsum_vjp", "matmul", "dot", "reduce_sum", "reduce_mean", "reduce_max",
            "reduce_min",
            "np", "range", "reversed", "zip", "len", "float", "int", "None", "True", "False",
            "math", "_residuals"} | HELPER_NAMES


# ------------------------------------------------------------------ scopes


@dataclass
class LocalFn:
    node: Any                        # gast FunctionDef or Lambda
    scope: "Scope"                   # where it was defined (its closure, read late)
    name: str


@dataclass
class Scope:
    ctx: Ctx
    vars: dict
    locals: set
    parent: "Scope | None" = None

    def child_copy(self) -> "Scope":
        return Scope(self.ctx, dict(self.vars), self.locals, self.parent)


def _dotted(node) -> str:
    d = dotted
    return d(node)


def _np_funcs(*names):
    return {getattr(np, n) for n in names if hasattr(np, n)}


# functions whose value does not depend differentiably on their inputs: evaluated as is
NOGRAD_FUNCS = _np_funcs(
    "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange",
    "linspace", "eye", "identity", "shape", "size", "ndim", "argmax", "argmin", "argsort", "nonzero",
    "isnan", "isinf", "isfinite", "flatnonzero", "count_nonzero", "logical_and", "logical_or",
    "logical_not", "logical_xor", "all", "any", "array_equal", "allclose", "isclose", "searchsorted",
    "digitize", "tril_indices", "triu_indices", "ravel_multi_index", "unravel_index") | {len, range, bool}
FRESH_NOGRAD = _np_funcs("zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
                         "empty_like", "arange", "linspace", "eye", "identity")
SCALAR_NOGRAD = {len} | _np_funcs("size", "ndim")
NOGRAD_ATTRS = {"shape", "ndim", "size", "dtype", "itemsize", "nbytes"}
# ------------------------------------------------------------------ the builder


class Builder:
    def __init__(self, pf: ParsedFunction, new_kernel: Callable[[ScalarProgram, str], Any]):
        self.pf = pf
        self.new_kernel = new_kernel    # (program, name) -> a runtime.Kernel (see build_program)
        node = pf.node
        self.fname = pf.name if pf.name.isidentifier() else "loss"
        params = [a.id for a in node.args.args]
        self.namer = Namer(RESERVED | set(params))
        self.out: list = []
        self.free: dict[str, tuple[Resolver, str]] = {}
        self._free_key: dict[tuple[int, str], str] = {}
        self.bound: dict[str, Any] = {}
        self._bound_key: dict[int, str] = {}
        self.fresh: set[str] = set()
        self.aliased: set[str] = set()
        self.scalar: set[str] = set()
        self.sites: list[Site] = []
        self.stack: list[int] = []
        self.cur_stmt = None
        self.phi_inplace: dict[str, tuple] = {}   # phi name -> (node, ctx) of an in-place update on it
        self.phis_open: set[str] = set()          # phis of the loops being built
        self.named: set[str] = set()              # SSA values bound to a user's name
        self.params = params
        self.root = Ctx(pf)
        self.prims = PrimCalls(self)     # numpy calls, methods and syntax that are array primitives

    # -------------------------------------------------------------- errors

    def err(self, ctx: Ctx, node, msg, hint, cls=UnsupportedSyntaxError):
        return cls(msg, location_of(ctx.filename, node), hint=hint)

    def loc(self, ctx: Ctx, node):
        return location_of(ctx.filename, node)

    def label(self, node) -> str:
        """The user's spelling of a callee or an expression, for messages."""
        return _src(node)

    # -------------------------------------------------------------- entry

    def build(self) -> ArrayProgram:
        node = self.pf.node
        a = node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise self.err(self.root, node, "the differentiated function cannot take *args or **kwargs",
                           "Name its parameters (def f(x, y, k=1.0)); a decorator's wrapper that only forwards them, "
                           "fn(*args, **kwargs), is taken.")
        body = [gast.Return(value=node.body)] if isinstance(node, gast.Lambda) else node.body
        if isinstance(node, gast.Lambda):
            gast.copy_location(body[0], node.body)
        scope = Scope(self.root, {p: p for p in self.params}, set(self.params) | _assigned_names(body))
        self.stack.append(id(self.pf.fn))
        result, ret = self.function_body(body, scope, node, want="loss")
        if isinstance(result, (list, LocalFn)):
            raise self.err(self.root, ret, "the differentiated function must return one value (its loss)",
                           "Return a single array or number.", UnsupportedOperationError)
        prog = ArrayProgram(self.fname, self.pf, list(self.params), self.out, result, ret, self.free, self.bound,
                            [], self.sites, self.namer, self.scalar)
        _drop_dead_phis(prog)
        fuse(prog, self)
        pair_kernels(prog)
        return prog

    def function_body(self, body, scope: Scope, fnode, want=None):
        """Lower a function body ending in its one return; -> (result operand, return node)."""
        stmts = [s for s in body if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant)
                                         and isinstance(s.value.value, str))]
        if not stmts or not isinstance(stmts[-1], gast.Return) or stmts[-1].value is None:
            raise self.err(scope.ctx, stmts[-1] if stmts else fnode,
                           f"'{getattr(fnode, 'name', 'lambda')}' must end with `return <value>` (one return, last)",
                           "Return the result once, at the end of the function; use np.where or an "
                           "`if` that assigns a variable instead of an early return.")
        for s in stmts[:-1]:
            for n in _walk_no_defs(s):
                if isinstance(n, gast.Return):
                    raise self.err(scope.ctx, n, "an early return at the array level is not supported",
                                   "Assign the value to a variable in each branch and return it once, at the end.")
        self.block(stmts[:-1], scope)
        ret = stmts[-1]
        self.cur_stmt = ret
        return self.expr(ret.value, scope, want), ret

    # -------------------------------------------------------------- statements

    def block(self, stmts, scope: Scope):
        for s in stmts:
            self.cur_stmt = s
            self.stmt(s, scope)

    def stmt(self, s, scope: Scope):
        ctx = scope.ctx
        if isinstance(s, gast.Expr):
            if isinstance(s.value, gast.Constant) and isinstance(s.value.value, str):
                return
            raise self.err(ctx, s, "an expression whose value is unused (a call for its side effects?)",
                           "s2sad differentiates functions without side effects: assign the value to a "
                           "variable you use, or remove the statement.", UnsupportedOperationError)
        if isinstance(s, gast.Pass):
            return
        if isinstance(s, gast.FunctionDef):
            if s.decorator_list:
                raise self.err(ctx, s, "decorated local functions are not supported", "Remove the decorator.")
            scope.vars[s.name] = LocalFn(s, scope, s.name)
            return
        if isinstance(s, gast.Assign):
            if len(s.targets) != 1:
                raise self.err(ctx, s, "chained assignment (a = b = ...) is not supported at the array level",
                               "Assign each name separately.")
            return self.assign(s.targets[0], s.value, scope, s)
        if isinstance(s, gast.AnnAssign):
            if s.value is None:
                return
            return self.assign(s.target, s.value, scope, s)
        if isinstance(s, gast.AugAssign):
            return self.augassign(s, scope)
        if isinstance(s, gast.For):
            return self.for_stmt(s, scope)
        if isinstance(s, gast.If):
            return self.if_stmt(s, scope)
        if isinstance(s, gast.While):
            raise self.err(ctx, s, "'while' loops over array values are not supported",
                           "Use `for i in range(n):` (its iterations are recorded for the reverse pass), "
                           "or move the loop into a scalar function applied with s2sad.broadcast.")
        if isinstance(s, (gast.Global, gast.Nonlocal)):
            raise self.err(ctx, s, f"'{'global' if isinstance(s, gast.Global) else 'nonlocal'} "
                           f"{', '.join(s.names)}': the differentiated function writes state outside itself",
                           "Return the value instead of storing it.", StatefulError)
        if isinstance(s, (gast.Break, gast.Continue)):
            raise self.err(ctx, s, f"'{type(s).__name__.lower()}' in an array-level loop is not supported",
                           "Loop over the exact range you need; select values with np.where.")
        kw = {gast.Try: "try", gast.With: "with", gast.ClassDef: "class", gast.Import: "import",
              gast.ImportFrom: "import", gast.Delete: "del", gast.Raise: "raise", gast.Assert: "assert"}
        what = kw.get(type(s), type(s).__name__)
        raise self.err(ctx, s, f"'{what}' is not supported in a differentiated function",
                       "Move it out of the function s2sad differentiates.")

    def assign(self, target, value, scope: Scope, s):
        ctx = scope.ctx
        if isinstance(target, gast.Name):
            if isinstance(value, gast.Lambda):
                scope.vars[target.id] = LocalFn(value, scope, target.id)
                return
            op = self.expr(value, scope, want=target.id)
            self.bind(scope, target.id, op)
            return
        if isinstance(target, (gast.Tuple, gast.List)):
            if not all(isinstance(t, gast.Name) for t in target.elts):
                raise self.err(ctx, s, "only names can be unpacked into", "Unpack into plain variables.")
            if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts):
                ops = [self.expr(v, scope, want=t.id) for t, v in zip(target.elts, value.elts)]
            else:
                ops = self.expr(value, scope)
                if not isinstance(ops, list) or len(ops) != len(target.elts):
                    raise self.err(ctx, s, "tuple unpacking at the array level needs a tuple of the same length",
                                   "Assign each variable separately.", UnsupportedOperationError)
            for t, op in zip(target.elts, ops):
                self.bind(scope, t.id, op)
            return
        if isinstance(target, gast.Subscript):
            base = root_name(target)
            raise self.err(ctx, s, f"assignment into an array element ({_src(target)} = ...) updates "
                           f"'{base}' in place, which s2sad does not differentiate",
                           "Build a new array instead, e.g. with np.where(mask, new, old), np.concatenate, "
                           "or x_new = x + delta.", UnsupportedOperationError)
        raise self.err(ctx, s, "unsupported assignment target", "Assign to a plain variable.")

    def bind(self, scope: Scope, user_name: str, op):
        if isinstance(op, str):
            if op in self.named:
                self.aliased.add(op)   # two names now refer to one object
            self.named.add(op)
        scope.vars[user_name] = op

    def augassign(self, s, scope: Scope):
        ctx = scope.ctx
        if not isinstance(s.target, gast.Name):
            base = root_name(s.target)
            raise self.err(ctx, s, f"'{_src(s.target)} {_opsym(s.op)}= ...' updates '{base}' in place, which s2sad "
                           f"does not differentiate",
                           "Build a new array instead, e.g. with np.where(mask, new, old) or np.concatenate.",
                           UnsupportedOperationError)
        nm = s.target.id
        cur = self.lookup(nm, scope, s.target)
        if isinstance(cur, str) and cur not in self.scalar and (cur not in self.fresh or cur in self.aliased):
            what = ("an argument of the differentiated function" if cur in self.params else
                    "a free variable" if cur in self.free else
                    "a value that may share memory with another name (a view, an alias or an argument)")
            raise self.err(ctx, s, f"'{nm} {_opsym(s.op)}= ...' updates '{nm}' in place, and '{nm}' is {what}: "
                           f"s2sad does not differentiate in-place updates",
                           f"Write `{nm} = {nm} {_opsym(s.op)} ...`, which makes a new array.",
                           UnsupportedOperationError)
        if isinstance(cur, str) and cur in self.phis_open:
            self.phi_inplace[cur] = (s, ctx)
        value = gast.BinOp(left=gast.Name(id=nm, ctx=gast.Load(), annotation=None, type_comment=None),
                           op=s.op, right=s.value)
        gast.copy_location(value, s)
        op = self.expr(value, scope, want=nm)
        self.bind(scope, nm, op)

    def tuple_items(self, it, scope: Scope) -> list | None:
        """The operands of a tuple a loop runs over (a display, a local bound to one, or a
        module-level tuple of numbers), else None."""
        if isinstance(it, (gast.Tuple, gast.List)):
            return self.expr(it, scope)
        if isinstance(it, gast.Name):
            v = self.lookup(it.id, scope, it)
            if isinstance(v, list):
                return v
            if isinstance(v, Const) and isinstance(v.value, tuple):
                return [Const(x) for x in v.value]
        return None

    def unrolled_for(self, s: gast.For, items: list, scope: Scope) -> None:
        """`for c in coeffs:` over a tuple: the body once per item, c bound to it."""
        for n in (x for st in s.body for x in gast.walk(st)):
            if isinstance(n, (gast.Break, gast.Continue)):
                raise self.err(scope.ctx, n, "break/continue in a loop over a tuple is not supported at the "
                               "array level", "Loop over range(len(...)) instead.", UnsupportedOperationError)
        for item in items:
            self.bind(scope, s.target.id, item)
            self.block(s.body, scope)

    def for_stmt(self, s: gast.For, scope: Scope):
        ctx = scope.ctx
        it = s.iter
        if s.orelse:
            raise self.err(ctx, s, "'for ... else' is not supported", "Use a flag variable.")
        if not isinstance(s.target, gast.Name):
            raise self.err(ctx, s, "an array-level loop needs a plain loop variable", "Write `for i in range(n):`.")
        items = self.tuple_items(it, scope)
        if items is not None:
            self.unrolled_for(s, items, scope)
            return
        is_range = (isinstance(it, gast.Call) and isinstance(it.func, gast.Name)
                    and self.lookup_local(it.func.id, scope) is None
                    and scope.ctx.resolver.lookup(it.func.id) is builtins.range)
        if not is_range or it.keywords or not 1 <= len(it.args) <= 3:
            raise self.err(ctx, it, "an array-level `for` must loop over range(...) or a tuple",
                           "Write `for i in range(n):` and index arrays with i (x[i]).",
                           UnsupportedOperationError)
        rargs, reads = [], set()
        for a in it.args:
            r, rr = self.static(a, scope)
            rargs.append(r)
            reads |= rr
        loopvar = s.target.id
        assigned = _assigned_names(s.body) - {loopvar}
        phis = []
        for nm in sorted(assigned):
            init = scope.vars.get(nm)
            if init is None or isinstance(init, LocalFn):
                continue
            ph = Phi(self.namer.fresh(nm), init, None, nm)
            phis.append(ph)
            if _is_number(init) or (isinstance(init, str) and init in self.fresh and init not in self.aliased):
                self.fresh.add(ph.name)
            self.phis_open.add(ph.name)
            scope.vars[nm] = ph.name
        var = self.namer.fresh(loopvar)
        self.scalar.add(var)
        scope.vars[loopvar] = var
        saved = self.out
        self.out = []
        self.block(s.body, scope)
        body, self.out = self.out, saved
        for ph in phis:
            ph.second = scope.vars.get(ph.user)
            self.phis_open.discard(ph.name)
        # names first assigned in the body: after the loop, their last value
        for nm in sorted(assigned - {ph.user for ph in phis}):
            v = scope.vars.get(nm)
            if v is None or isinstance(v, LocalFn):
                continue
            ph = Phi(self.namer.fresh(nm), Const(None), v, nm)
            phis.append(ph)
        for ph in phis:
            scope.vars[ph.user] = ph.name
            if (_is_number(ph.first) or ph.first in self.scalar) and \
                    (_is_number(ph.second) or ph.second in self.scalar):
                self.scalar.add(ph.name)
            if ph.name in self.phi_inplace and isinstance(ph.second, str) and \
                    (ph.second not in self.fresh or ph.second in self.aliased):
                node, c = self.phi_inplace[ph.name]
                raise self.err(c, node, f"'{ph.user}' is updated in place in a loop whose next iteration also "
                               f"sees it through another name: s2sad does not differentiate in-place updates",
                               f"Write `{ph.user} = {ph.user} + ...`, which makes a new array.",
                               UnsupportedOperationError)
            if not (isinstance(ph.second, str) and ph.second in self.fresh and ph.second not in self.aliased):
                self.fresh.discard(ph.name)
        self.out.append(ForStmt(var, rargs, body, phis, s, ctx, reads))

    def condition(self, e, scope: Scope):
        """An `if` test: only its truth counts, so `and`/`or`/`not` are control here."""
        if isinstance(e, gast.BoolOp) or (isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.Not)):
            parts = [self.condition(v, scope) for v in (e.values if isinstance(e, gast.BoolOp) else [e.operand])]
            fwd = gast.BoolOp(op=e.op, values=[operand_expr(p) for p in parts]) if isinstance(e, gast.BoolOp) else \
                gast.UnaryOp(op=gast.Not(), operand=operand_expr(parts[0]))
            return self.py_stmt(fwd, [p for p in parts if isinstance(p, str)], set(), e, scope, None, "nograd")
        return self.expr(e, scope)

    def if_stmt(self, s: gast.If, scope: Scope):
        ctx = scope.ctx
        test = self.condition(s.test, scope)
        if isinstance(test, (list, LocalFn)):
            raise self.err(ctx, s.test, "the condition of an `if` must be a value", "Fix the condition.")
        saved = self.out
        branches = []
        for stmts in (s.body, s.orelse):
            sc = scope.child_copy()
            self.out = []
            self.block(stmts, sc)
            branches.append((self.out, sc))
        self.out = saved
        (b1, s1), (b2, s2) = branches
        phis = []
        for nm in sorted(_assigned_names(s.body) | _assigned_names(s.orelse)):
            v1, v2 = s1.vars.get(nm, Const(None)), s2.vars.get(nm, Const(None))
            if isinstance(v1, LocalFn) or isinstance(v2, LocalFn):
                if v1 is not v2:
                    raise self.err(ctx, s, f"'{nm}' is bound to different functions in the branches of an `if`",
                                   "Define the function once, outside the `if`.")
                scope.vars[nm] = v1
                continue
            if v1 == v2:
                scope.vars[nm] = v1
                continue
            p = self.namer.fresh(nm)
            phis.append(Phi(p, v1, v2, nm))
            scope.vars[nm] = p
            if all(v in self.scalar or (isinstance(v, Const) and isinstance(v.value, (int, float))) for v in (v1, v2)):
                self.scalar.add(p)
            if all(v in self.fresh and v not in self.aliased for v in (v1, v2) if isinstance(v, str)):
                self.fresh.add(p)
        self.out.append(IfStmt(test, b1, b2, phis, s, ctx))

    # -------------------------------------------------------------- names

    def lookup_local(self, nm: str, scope: Scope):
        sc = scope
        while sc is not None:
            if nm in sc.vars:
                return sc.vars[nm]
            if nm in sc.locals:
                return _UNBOUND
            sc = sc.parent
        return None

    def lookup(self, nm: str, scope: Scope, node):
        v = self.lookup_local(nm, scope)
        if v is _UNBOUND:
            raise self.err(scope.ctx, node, f"'{nm}' is read before it is assigned",
                           "Assign it first.", FreeVariableError)
        if v is not None:
            return v
        return self.global_value(nm, scope.ctx, node)

    def global_value(self, nm: str, ctx: Ctx, node):
        value = ctx.resolver.lookup(nm)
        if value is MISSING:
            raise self.err(ctx, node, f"name '{nm}' is not defined", "Define it.", FreeVariableError)
        kind = classify(value).kind
        if kind == "constant":
            return Const(value)
        if kind == "tuple":
            return Const(value)
        if isinstance(value, (np.ndarray, list)):
            return self.free_operand(ctx, nm)
        if value is None:
            return Const(None)
        return _Bound(value, nm)

    def free_operand(self, ctx: Ctx, nm: str) -> str:
        key = (id(ctx.resolver.fn), nm)
        g = self._free_key.get(key)
        if g is None:
            g = self.namer.fresh(nm)
            self._free_key[key] = g
            self.free[g] = (ctx.resolver, nm)
        return g

    def bind_value(self, value, label: str) -> str:
        """A module or function that generated code refers to, bound at plan time."""
        if value is np:
            return "np"
        if isinstance(label, str) and getattr(builtins, label, None) is value:
            return label   # a builtin: generated code sees it as the user's code does
        g = self._bound_key.get(id(value))
        if g is None:
            base = label.split(".")[0] if isinstance(value, types.ModuleType) else label.replace(".", "_")
            g = self.namer.fresh(base)
            self._bound_key[id(value)] = g
            self.bound[g] = value
        return g

    # -------------------------------------------------------------- expressions

    def emit(self, op: str, args, node, scope: Scope, want=None, **kw) -> str:
        target = self.namer.fresh(want) if want else self.namer.temp()
        st = ArrayStmt(target, op, list(args), node, self.cur_stmt, scope.ctx, **kw)
        self.out.append(st)
        return target

    def expr(self, e, scope: Scope, want=None):
        ctx = scope.ctx
        if isinstance(e, gast.Name):
            v = self.lookup(e.id, scope, e)
            if isinstance(v, _Bound):
                raise self.err(ctx, e, f"'{e.id}' holds a {type(v.value).__name__}, not an array or a number",
                               "Pass arrays and numbers; call functions.", FreeVariableError)
            return v
        if isinstance(e, gast.Constant):
            return Const(e.value)
        if self.is_elementwise(e, scope):
            return self.elementwise(e, scope, want)
        if isinstance(e, gast.BinOp) and isinstance(e.op, gast.MatMult):
            return self.prims.matmul(e, scope, want)
        if isinstance(e, gast.Subscript):
            return self.prims.subscript(e, scope, want)
        if isinstance(e, gast.Attribute):
            return self.attribute(e, scope, want)
        if isinstance(e, gast.Call):
            return self.call(e, scope, want)
        if isinstance(e, (gast.Tuple, gast.List)):
            return [self.expr(x, scope) for x in e.elts]
        if isinstance(e, gast.Lambda):
            return LocalFn(e, scope, f"lambda_{e.lineno}")
        if isinstance(e, gast.BoolOp):
            # `a and b` is one of its operands (Python's semantics), so a derivative flows
            # through it; only an `if` test, where its truth is all that counts, takes it
            kw = "and" if isinstance(e.op, gast.And) else "or"
            raise self.err(ctx, e, f"'{kw}' used as a value is not supported at the array level",
                           "Use np.where / np.logical_" + kw + ", or move the computation into a scalar "
                           "function applied with s2sad.broadcast.", UnsupportedOperationError)
        raise self.err(ctx, e, f"'{type(e).__name__}' expressions are not supported at the array level",
                       "Use numpy operations, arithmetic and calls.", UnsupportedOperationError)

    def array(self, e, scope: Scope, want=None):
        """An operand that must be a value (not a tuple or a function)."""
        v = self.expr(e, scope, want)
        if isinstance(v, (list, LocalFn)):
            raise self.err(scope.ctx, e, "expected an array or a number here", "Pass an array.",
                           UnsupportedOperationError)
        return v

    def static(self, e, scope: Scope):
        """A static parameter: simple expressions are kept as source (names renamed), the
        rest computed once, before, as an operand. -> (gast expression, SSA names read)."""
        if _simple(e):
            reads = set()
            out = self.rename(e, scope, reads)
            return out, reads
        v = self.expr(e, scope)
        if isinstance(v, list):
            elts = [operand_expr(x) for x in v]
            return gast.Tuple(elts=elts, ctx=gast.Load()), {x for x in v if isinstance(x, str)}
        if isinstance(v, LocalFn):
            raise self.err(scope.ctx, e, "a function is not a static parameter", "Pass a value.")
        return operand_expr(v), ({v} if isinstance(v, str) else set())

    def rename(self, e, scope: Scope, reads: set):
        """A copy of a simple expression with names -> SSA names / constants / bound values."""
        b = self

        class R(gast.NodeTransformer):
            def visit_Name(s, node):
                if not isinstance(node.ctx, gast.Load):
                    return node
                v = b.lookup(node.id, scope, node)
                if isinstance(v, Const):
                    return const_expr(v.value)
                if isinstance(v, _Bound):
                    return operand_expr(b.bind_value(v.value, v.label))
                if isinstance(v, LocalFn):
                    raise b.err(scope.ctx, node, f"the local function '{node.id}' cannot be used as a value here",
                                "Call it.", UnsupportedOperationError)
                if isinstance(v, list):
                    return gast.Tuple(elts=[operand_expr(x) for x in v], ctx=gast.Load())
                reads.add(v)
                return operand_expr(v)

            def visit_Attribute(s, node):
                value = attribute_value(scope.ctx.resolver, node) if b.lookup_local(root_name(node) or "", scope) is None \
                    else MISSING
                if value is not MISSING and not isinstance(value, types.ModuleType):
                    if classify(value).kind == "constant" or value is None:
                        return const_expr(value)
                s.generic_visit(node)
                return node

        return R().visit(copy.deepcopy(e))

    # -------------------------------------------------------------- elementwise

    def resolve_call(self, f, scope: Scope):
        """(kind, value) of a called expression: ("local", LocalFn), ("method", attr),
        ("value", python object), or ("missing", None)."""
        if isinstance(f, gast.Name):
            v = self.lookup_local(f.id, scope)
            if isinstance(v, LocalFn):
                return "local", v
            if v is not None and v is not _UNBOUND:
                return "called_value", v
            value = scope.ctx.resolver.lookup(f.id)
            return ("value", value) if value is not MISSING else ("missing", None)
        if isinstance(f, gast.Attribute):
            root = root_name(f)
            if root is not None and self.lookup_local(root, scope) is None:
                value = attribute_value(scope.ctx.resolver, f)
                if value is not MISSING:
                    return "value", value
                base = attribute_value(scope.ctx.resolver, f.value)
                if base is not MISSING and isinstance(base, types.ModuleType):
                    return "missing", None
            return "method", f.attr
        return "expr", None

    def is_elementwise(self, e, scope: Scope) -> bool:
        if isinstance(e, gast.BinOp):
            return not isinstance(e.op, gast.MatMult)
        if isinstance(e, gast.UnaryOp):
            return not isinstance(e.op, gast.Invert)
        if isinstance(e, (gast.Compare, gast.IfExp, gast.ListComp, gast.GeneratorExp)):
            return True
        if isinstance(e, gast.Call):
            kind, value = self.resolve_call(e.func, scope)
            if kind != "value":
                return False
            if is_entry_point(value, "broadcast") or value is map:
                return True
            if value in (np.where, np.clip) and not e.keywords and len(e.args) == 3:
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
            kind, value = self.resolve_call(e.func, scope)
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
        ops: list = []
        holders: list[str] = []
        prelude: list = []
        ctx_bound = [False]
        b = self

        def hold(op) -> gast.expr:
            if isinstance(op, Const):
                if isinstance(op.value, (int, float, bool, np.integer, np.floating, np.bool_)):
                    return const_expr(op.value)
            elif isinstance(op, (list, LocalFn, _Bound)):
                raise b.err(ctx, e, "expected a number or an array inside an elementwise expression",
                            "Pass numbers and arrays.", UnsupportedOperationError)
            for h, o in zip(holders, ops):
                if o == op:
                    return operand_expr(h)
            h = f"__h{len(holders)}"
            holders.append(h)
            ops.append(op)
            return operand_expr(h)

        def local_fn_def(lf: LocalFn) -> str:
            """A local function applied elementwise: into the kernel's prelude, the locals
            it reads from its enclosing function held as kernel inputs."""
            ctx_bound[0] = True
            node = copy.deepcopy(lf.node)
            uname = b.namer.fresh(lf.name)
            if isinstance(node, gast.FunctionDef):
                node = hold_free(node, set(), lf.scope)
                node.name = uname
                prelude.append(node)
            else:
                node = hold_free(node, set(), lf.scope)
                st = gast.Assign(targets=[name(uname, gast.Store())], value=node, type_comment=None)
                gast.copy_location(st, node)
                prelude.append(st)
            return uname

        def hold_free(tree, bound: set, defining: Scope):
            """Free names of `tree` that are locals of the user's function -> held inputs."""
            if isinstance(tree, gast.Name):
                if isinstance(tree.ctx, gast.Load) and tree.id not in bound:
                    v = b.lookup_local(tree.id, defining)
                    if isinstance(v, LocalFn):
                        return operand_expr(local_fn_def(v))
                    if v is _UNBOUND:
                        raise b.err(ctx, tree, f"'{tree.id}' is read before it is assigned", "Assign it first.",
                                    FreeVariableError)
                    if v is not None:
                        return hold(v)
                return tree
            inner = bound
            if isinstance(tree, gast.Lambda):
                inner = bound | {a.id for a in tree.args.args}
            elif isinstance(tree, gast.FunctionDef):
                inner = bound | {a.id for a in tree.args.args} | _assigned_names(tree.body) | {tree.name}
            elif isinstance(tree, (gast.ListComp, gast.GeneratorExp)):
                inner = bound | {n.id for g in tree.generators for n in gast.walk(g.target)
                                 if isinstance(n, gast.Name)}
            for fld, val in gast.iter_fields(tree):
                if isinstance(val, list):
                    setattr(tree, fld, [hold_free(x, inner, defining) if isinstance(x, gast.AST) else x
                                        for x in val])
                elif isinstance(val, gast.AST):
                    setattr(tree, fld, hold_free(val, inner, defining))
            return tree

        def walk(x):
            """A copy of the elementwise tree with every non-elementwise part held."""
            if isinstance(x, gast.Constant):
                return x
            if isinstance(x, gast.Name):
                v = b.lookup(x.id, scope, x)
                if isinstance(v, _Bound):
                    raise b.err(ctx, x, f"'{x.id}' holds a {type(v.value).__name__}, not an array or a number",
                                "Pass arrays and numbers.", FreeVariableError)
                return hold(v)
            if b.is_select(x, scope) or not b.is_elementwise(x, scope):
                if isinstance(x, gast.Attribute):
                    value = attribute_value(ctx.resolver, x) if b.lookup_local(root_name(x) or "", scope) is None \
                        else MISSING
                    if value is not MISSING and classify(value).kind == "constant":
                        return const_expr(value)
                return hold(b.array(x, scope))
            if isinstance(x, gast.BinOp):
                return gast.BinOp(left=walk(x.left), op=x.op, right=walk(x.right))
            if isinstance(x, gast.UnaryOp):
                return gast.UnaryOp(op=x.op, operand=walk(x.operand))
            if isinstance(x, gast.Compare):
                return gast.Compare(left=walk(x.left), ops=x.ops, comparators=[walk(c) for c in x.comparators])
            if isinstance(x, (gast.ListComp, gast.GeneratorExp)):
                ctx_bound[0] = True
                new = copy.deepcopy(x)
                if len(x.generators) == 1:
                    new.generators[0].iter = walk(x.generators[0].iter)
                    tgt = {n.id for n in gast.walk(x.generators[0].target) if isinstance(n, gast.Name)}
                    new.elt = hold_free(new.elt, tgt, scope)
                return new
            kind, value = b.resolve_call(x.func, scope)
            if value in (list, tuple, np.array, np.asarray, np.fromiter):
                return walk(x.args[0])
            if is_entry_point(value, "broadcast") or value is map:
                fnode = x.args[0]
                if isinstance(fnode, gast.Name):
                    lf = b.lookup_local(fnode.id, scope)
                    if isinstance(lf, LocalFn):
                        fnode = operand_expr(local_fn_def(lf))
                    elif lf is not None:
                        raise b.err(ctx, fnode, f"'{fnode.id}' is not a function", "Pass a function.",
                                    UnsupportedOperationError)
                elif isinstance(fnode, gast.Lambda):
                    ctx_bound[0] = True
                    fnode = hold_free(copy.deepcopy(fnode), set(), scope)
                new = gast.Call(func=x.func, args=[fnode] + [walk(a) for a in x.args[1:]], keywords=[])
                return gast.copy_location(new, x)
            new = gast.Call(func=x.func, args=[walk(a) for a in x.args], keywords=[])
            return gast.copy_location(new, x)

        tree = walk(e)
        gast.copy_location(tree, e)
        try:
            expr, prelude2, sites, free_arrays = translate_elementwise(ctx.pf, tree, holders, list(prelude))
        except S2SADError as err:
            err.in_scalar_code = True
            raise
        assert not free_arrays, free_arrays
        mine = {p.name if isinstance(p, gast.FunctionDef) else p.targets[0].id for p in prelude}
        for p in prelude2:
            nm = p.name if isinstance(p, gast.FunctionDef) else p.targets[0].id
            if nm not in mine:   # the translator's own lambdas (comprehensions): unique names
                ctx_bound[0] = True
                new = b.namer.fresh(nm)
                if new != nm:
                    _rename_everywhere([expr] + prelude2, nm, new)
        bindings: dict[str, Any] = {}
        names = {p.name if isinstance(p, gast.FunctionDef) else p.targets[0].id for p in prelude2}
        expr = _bind_template(expr, ctx, names, bindings)
        return self.emit_ew(expr, holders, ops, prelude2, sites, bindings, ctx_bound[0], e, scope, want)

    def emit_ew(self, expr, holders, ops, prelude, sites, bindings, ctx_bound, e, scope, want):
        self.sites.extend(sites)
        target = self.emit(Elementwise(expr, holders, prelude, sites, bindings, ctx_bound), ops, e, scope, want)
        if all((isinstance(o, str) and o in self.scalar) or isinstance(o, Const) for o in ops):
            self.scalar.add(target)
        self.fresh.add(target)
        return target

    def is_select(self, e, scope: Scope) -> bool:
        if isinstance(e, gast.IfExp):
            return True
        if isinstance(e, gast.Call) and not e.keywords and len(e.args) == 3:
            kind, value = self.resolve_call(e.func, scope)
            return kind == "value" and (value is np.where or value is np.clip)
        return False

    def select(self, e, scope: Scope, want=None) -> str:
        """np.where(c, a, b), `a if c else b`, np.clip(x, lo, hi): elementwise statements
        of their own (fusion joins them to their neighbours)."""
        if isinstance(e, gast.IfExp):
            parts, clip = [e.test, e.body, e.orelse], False
        else:
            kind, value = self.resolve_call(e.func, scope)
            parts, clip = list(e.args), value is np.clip
        ops = [self.array(p, scope) for p in parts]
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
        site = Site(str(self.loc(scope.ctx, e)), label, "rule",
                    "elementwise select: the derivative of the branch each element takes"
                    if not clip else "elementwise min/max: derivatives from the rules table",
                    source_line(scope.ctx.filename, e))
        return self.emit_ew(expr, [x for x, _ in keep], [o for _, o in keep], [], [site],
                            {"__np_minimum": np.minimum, "__np_maximum": np.maximum}, False, e, scope, want)

    # -------------------------------------------------------------- other operations

    def attribute(self, e: gast.Attribute, scope: Scope, want=None):
        root = root_name(e)
        if root is not None and self.lookup_local(root, scope) is None:
            value = attribute_value(scope.ctx.resolver, e)
            if value is not MISSING:
                if classify(value).kind == "constant" or value is None:
                    return Const(value)
                if isinstance(value, np.ndarray):
                    raise self.err(scope.ctx, e, f"'{_src(e)}' is an array read through a module attribute",
                                   "Bind it to a module-level name, or pass it as an argument.",
                                   UnsupportedOperationError)
                return _Bound(value, _src(e))
        x = self.array(e.value, scope)
        if e.attr == "T":
            return self.prims.transpose_T(x, e, scope, want)
        if e.attr in NOGRAD_ATTRS:
            fwd = gast.Attribute(value=operand_expr(x), attr=e.attr, ctx=gast.Load())
            t = self.py_stmt(fwd, [x], set(), e, scope, want, "nograd")
            if e.attr in ("ndim", "size", "itemsize", "nbytes"):
                self.scalar.add(t)
            return t
        fwd = gast.Attribute(value=operand_expr(x), attr=e.attr, ctx=gast.Load())
        return self.py_stmt(fwd, [x], set(), e, scope, want, "unsupported", label=f".{e.attr}")

    def py_stmt(self, fwd, args, reads, e, scope: Scope, want, why, label="", fresh=False):
        t = self.emit(Py(why, label), [a for a in args], e, scope, want, forward=fwd, reads=set(reads))
        if fresh:
            self.fresh.add(t)
        else:
            for a in args:
                if isinstance(a, str):
                    self.aliased.add(a)
        return t

    def call(self, e: gast.Call, scope: Scope, want=None):
        ctx = scope.ctx
        if any(isinstance(a, gast.Starred) for a in e.args) or any(k.arg is None for k in e.keywords):
            raise self.err(ctx, e, "*args and **kwargs in calls are not supported at the array level",
                           "Pass arguments one by one.", UnsupportedOperationError)
        kind, value = self.resolve_call(e.func, scope)
        label = _src(e.func)
        if kind == "local":
            return self.inline_local(value, e, scope, want)
        if kind == "called_value":
            raise self.err(ctx, e, f"'{label}' is a value, not a function", "Call a function.",
                           UnsupportedOperationError)
        if kind == "missing":
            raise self.err(ctx, e, f"cannot resolve '{label}'", "Call numpy or a function written in Python.",
                           UnsupportedOperationError)
        if kind == "method":
            return self.method(e, scope, want)
        if kind == "expr":
            raise self.err(ctx, e, "calling the result of an expression is not supported",
                           "Call a named function.", UnsupportedOperationError)
        # a known Python object
        t = self.prims.function(value, e, scope, want)
        if t is not None:
            return t
        if value in NOGRAD_FUNCS or value is isinstance:
            fwd, reads = self.plain_call(e, scope)
            t = self.py_stmt(fwd, sorted(reads), set(), e, scope, want, "nograd", label,
                             fresh=value in FRESH_NOGRAD)
            if value in SCALAR_NOGRAD:
                self.scalar.add(t)
            return t
        r = classify(value)
        if r.kind == "function" and isinstance(r.value, types.FunctionType):   # (an @differentiate's function)
            return self.inline_function(r.value, e, scope, want)
        if r.kind == "s2sad":
            raise unsupported(label, self.loc(ctx, e), "cannot be called inside a function s2sad differentiates")
        # anything else: evaluated as is; an error if it reads a differentiated value
        fwd, reads = self.plain_call(e, scope)
        return self.py_stmt(fwd, sorted(reads), set(), e, scope, want, "unsupported", label)

    def plain_call(self, e: gast.Call, scope: Scope):
        """A call evaluated as written, its arguments computed first. -> (gast, reads)"""
        reads: set = set()
        args = []
        for a in e.args:
            if isinstance(a, gast.Lambda) or (isinstance(a, gast.Name) and
                                              isinstance(self.lookup_local(a.id, scope), LocalFn)):
                raise unsupported(_src(e.func), self.loc(scope.ctx, e), "is called with a function argument")
            v, rr = self.static(a, scope)
            args.append(v)
            reads |= rr
        kws = []
        for k in e.keywords:
            kv, rr = self.static(k.value, scope)
            kws.append(gast.keyword(arg=k.arg, value=kv))
            reads |= rr
        return gast.Call(func=self.rename(e.func, scope, set()), args=args, keywords=kws), reads

    def method(self, e: gast.Call, scope: Scope, want=None):
        f = e.func
        m = f.attr
        t = self.prims.reduction_method(e, scope, want)
        if t is not None:
            return t
        x = self.array(f.value, scope)
        t = self.prims.method(x, e, scope, want)
        if t is not None:
            return t
        args = [self.array(a, scope) for a in e.args]
        kws, reads = [], set()
        for k in e.keywords:
            kv, rr = self.static(k.value, scope)
            kws.append(gast.keyword(arg=k.arg, value=kv))
            reads |= rr
        fwd = gast.Call(func=gast.Attribute(value=operand_expr(x), attr=m, ctx=gast.Load()), args=[operand_expr(a) for a in args],
                        keywords=kws)
        return self.py_stmt(fwd, [x] + args, reads, e, scope, want, "unsupported", f".{m}()")

    # -------------------------------------------------------------- inlining

    def inline_local(self, lf: LocalFn, e: gast.Call, scope: Scope, want=None):
        return self._inline(lf.node, lf.scope.ctx, lf.scope, e, scope, want, key=id(lf.node), label=lf.name)

    def inline_function(self, fn, e: gast.Call, scope: Scope, want=None):
        pf = parse_function(fn, self.loc(scope.ctx, e))
        return self._inline(pf.node, Ctx(pf), None, e, scope, want, key=id(fn), label=fn.__qualname__, fn=pf.fn)

    def _inline(self, node, ctx: Ctx, parent: Scope | None, e: gast.Call, scope: Scope, want, key, label, fn=None):
        if key in self.stack:
            raise RecursionNotSupportedError(f"'{label}' calls itself (recursion)", self.loc(scope.ctx, e),
                                             hint="Write the recursion as a for loop.")
        a = node.args
        if a.vararg or a.kwarg:
            raise self.err(ctx, node, f"'{label}' cannot take *args or **kwargs to be used at the array level",
                           "Name its parameters (def f(x, y, k=1.0)); a decorator's wrapper that only forwards them, "
                           "fn(*args, **kwargs), is taken.")
        if fn is not None:    # a function object: its defaults are the values its `def` computed
            vals = self._bind_function(fn, node, ctx, e, scope)
        else:
            vals = self._bind_local(node, ctx, e, scope, label)
        params = list(vals)
        body = [gast.Return(value=node.body)] if isinstance(node, gast.Lambda) else node.body
        if isinstance(node, gast.Lambda):
            gast.copy_location(body[0], node.body)
        inner = Scope(ctx, dict(vals), set(params) | _assigned_names(body), parent)
        for v in vals.values():
            if isinstance(v, str):
                if v in self.named:
                    self.aliased.add(v)
                self.named.add(v)
        self.stack.append(key)
        saved_stmt = self.cur_stmt
        try:
            result, _ = self.function_body(body, inner, node, want)
        finally:
            self.stack.pop()
            self.cur_stmt = saved_stmt
        return result

    def _bind_local(self, node, ctx: Ctx, e: gast.Call, scope: Scope, label: str) -> dict:
        """A call's parameter values for a local function (a def or lambda of the code
        being differentiated): positional parameters, constant defaults."""
        a = node.args
        if a.kwonlyargs or a.posonlyargs:
            raise self.err(ctx, node, f"'{label}' must take plain positional parameters to be used at the "
                           "array level", "Remove keyword-only parameters.")
        params = [p.id for p in a.args]
        vals = {}
        for p, arg in zip(params, e.args):
            vals[p] = self.expr(arg, scope)
        for k in e.keywords:
            if k.arg not in params:
                raise self.err(scope.ctx, e, f"'{label}' has no parameter '{k.arg}'", "Fix the call.")
            vals[k.arg] = self.expr(k.value, scope)
        if len(e.args) > len(params):
            raise self.err(scope.ctx, e, f"'{label}' takes {len(params)} arguments, {len(e.args)} given",
                           "Fix the call.")
        defaults = a.defaults
        for i, p in enumerate(params):
            if p not in vals:
                j = i - (len(params) - len(defaults))
                if j < 0:
                    raise self.err(scope.ctx, e, f"'{label}' is missing the argument '{p}'", "Fix the call.")
                d = defaults[j]
                if not isinstance(d, gast.Constant):   # computed when the `def` ran, in its scope
                    raise self.err(ctx, d, f"the default of '{p}' of the local function '{label}' is not a "
                                   "constant", f"Pass '{p}' in the call, or make its default a number.")
                vals[p] = Const(d.value)
        return vals

    def _bind_function(self, fn, node, ctx: Ctx, e: gast.Call, scope: Scope) -> dict:
        """A call's parameter values (SSA names, constants) for a function object,
        bound as Python binds them (defaults.bind_call)."""
        positional, filled = bind_call(fn, len(e.args), [k.arg for k in e.keywords],
                                       lambda msg: self.err(scope.ctx, e, msg, "Fix the call."))
        given = dict(zip(positional, e.args))
        given.update((k.arg, k.value) for k in e.keywords)
        order = [p.id for p in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        vals = {}
        for p in order:
            vals[p] = self.expr(given[p], scope) if p in given else self.default_value(fn, p, filled[p], ctx)
        return vals

    def default_value(self, fn, p: str, value, ctx: Ctx):
        """A default as an operand: a number or tuple compiled in; an array read when
        the derivative runs (defaults.DefaultValues), as a free array is."""
        kind = classify(value).kind
        if kind in ("constant", "tuple") or value is None:
            return Const(value)
        if isinstance(value, (np.ndarray, list)):
            key = (id(fn), "default " + p)
            g = self._free_key.get(key)
            if g is None:
                g = self._free_key[key] = self.namer.fresh(p)
                self.free[g] = (DefaultValues(fn), p)
            return g
        return _Bound(value, p)


class _Bound:
    def __init__(self, value, label):
        self.value = value
        self.label = label


_UNBOUND = object()


def _walk_no_defs(node):
    """gast.walk, not entering nested function definitions."""
    if isinstance(node, (gast.FunctionDef, gast.Lambda)):
        return
    yield node
    for child in gast.iter_child_nodes(node):
        if not isinstance(child, (gast.FunctionDef, gast.Lambda)):
            yield from _walk_no_defs(child)


def _is_number(op) -> bool:
    return isinstance(op, Const) and isinstance(op.value, (int, float, np.integer, np.floating)) \
        and not isinstance(op.value, bool)


def _src(node) -> str:
    try:
        return unparse(node)
    except Exception:
        return _dotted(node)


def _opsym(op) -> str:
    return {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**", gast.FloorDiv: "//",
            gast.Mod: "%", gast.MatMult: "@"}.get(type(op), "?")


def _simple(e) -> bool:
    """A static expression cheap and pure enough to write twice (forward and reverse)."""
    if isinstance(e, (gast.Name, gast.Constant)):
        return True
    if isinstance(e, gast.Slice):
        return all(x is None or _simple(x) for x in (e.lower, e.upper, e.step))
    if isinstance(e, (gast.Tuple, gast.List)):
        return all(_simple(x) for x in e.elts)
    if isinstance(e, gast.UnaryOp):
        return _simple(e.operand)
    if isinstance(e, gast.BinOp) and not isinstance(e.op, gast.MatMult):
        return _simple(e.left) and _simple(e.right)
    if isinstance(e, gast.Attribute):
        return isinstance(e.value, gast.Name)
    return False


def _bind_template(expr, ctx: Ctx, prelude_names: set, bindings: dict):
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
                label = _dotted(f)
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


def _rename_everywhere(trees, old: str, new: str):
    for t in trees:
        for n in gast.walk(t):
            if isinstance(n, gast.Name) and n.id == old:
                n.id = new
            if isinstance(n, gast.FunctionDef) and n.name == old:
                n.name = new


def _drop_dead_phis(prog: ArrayProgram):
    used = set()
    for st in walk_stmts(prog.body):
        used |= stmt_reads(st)
    if isinstance(prog.result, str):
        used.add(prog.result)

    def visit(body):
        for st in body:
            if isinstance(st, ForStmt):
                st.phis = [p for p in st.phis if not (isinstance(p.first, Const) and p.first.value is None
                                                      and p.name not in used)]
                visit(st.body)
            elif isinstance(st, IfStmt):
                visit(st.body)
                visit(st.orelse)
    visit(prog.body)


# ------------------------------------------------------------------ fusion


def fuse(prog: ArrayProgram, b: Builder):
    """Maximal single-output regions of "ew" statements -> one kernel each; a region
    whose only consumer is a full np.sum/np.mean becomes one "kernel_sum" with it."""
    uses: dict[str, list] = {}

    def note(body):
        for st in body:
            for r in stmt_reads(st):
                uses.setdefault(r, []).append(st)
            if isinstance(st, ForStmt):
                note(st.body)
            elif isinstance(st, IfStmt):
                note(st.body)
                note(st.orelse)
    note(prog.body)
    if isinstance(prog.result, str):
        uses.setdefault(prog.result, []).append("return")
    b.uses = uses

    def block(body) -> list:
        region_of: dict[int, list] = {}
        regions: list[list] = []
        for st in reversed(body):
            if isinstance(st, ForStmt):
                st.body = block(st.body)
                continue
            if isinstance(st, IfStmt):
                st.body = block(st.body)
                st.orelse = block(st.orelse)
                continue
            if not isinstance(st.op, Elementwise):
                continue
            us = uses.get(st.target, [])
            cons = {id(u) for u in us}
            joined = None
            if us and all(isinstance(u, ArrayStmt) and isinstance(u.op, Elementwise) and id(u) in region_of for u in us):
                rs = {id(region_of[id(u)]) for u in us}
                if len(rs) == 1:
                    r = region_of[id(us[0])]
                    rctx = next((x.ctx for x in r if x.op.ctx_bound), None)
                    if not st.op.ctx_bound or rctx is None or rctx is st.ctx:
                        joined = r
            if joined is None:
                joined = []
                regions.append(joined)
            joined.insert(0, st)
            region_of[id(st)] = joined
            del cons
        # build kernels; place each at its root (or its consuming reduction)
        replace: dict[int, Any] = {}
        drop: set[int] = set()
        for r in regions:
            root = r[-1]
            us = uses.get(root.target, [])
            red = None
            if len(us) == 1 and isinstance(us[0], ArrayStmt) and isinstance(us[0].op, Reduce) \
                    and us[0].op.kind in ("sum", "mean") and us[0].op.full and us[0].args == [root.target] and any(us[0] is s for s in body) \
                    and root.target not in prog.known_scalar:
                red = us[0]
            kst, extra = make_kernel(prog, b, r, red)
            for s in r:
                drop.add(id(s))
            if red is not None:
                replace[id(red)] = (extra, kst)
            else:
                replace[id(root)] = (extra, kst)
                drop.discard(id(root))
        out = []
        for st in body:
            if id(st) in replace:
                extra, kst = replace[id(st)]
                out.extend(extra)
                out.append(kst)
            elif id(st) in drop:
                continue
            else:
                out.append(st)
        return out

    prog.body = block(prog.body)
    order = {id(st): i for i, st in enumerate(walk_stmts(prog.body))}
    prog.kernels.sort(key=lambda k: order.get(id(k.stmt), 0))


def make_kernel(prog: ArrayProgram, b: Builder, region: list, red) -> tuple[ArrayStmt, list]:
    """Synthesize the region's scalar function, normalize it as the kernel planner does,
    and return the statement that runs it (plus index statements for captured elements)."""
    inside = {s.target for s in region}
    inputs: list = []
    for s in region:
        for a in s.args:
            if isinstance(a, str) and a not in inside and a not in inputs:
                inputs.append(a)
    root = region[-1]
    ctx = next((s.ctx for s in region if s.op.ctx_bound), root.ctx)
    bindings: dict[str, Any] = {}
    body: list = []
    for s in region:
        bindings.update(s.op.bindings)
        mapping = {h: (a if isinstance(a, str) else None) for h, a in zip(s.op.holders, s.args)}
        consts = {h: a for h, a in zip(s.op.holders, s.args) if isinstance(a, Const)}
        for p in s.op.prelude:
            body.append(_subst(copy.deepcopy(p), mapping, consts))
        e = _subst(copy.deepcopy(s.op.expr), mapping, consts)
        if s is root:
            body.append(gast.Return(value=e))
        else:
            body.append(gast.Assign(targets=[name(s.target, gast.Store())], value=e, type_comment=None))
    target = red.target if red is not None else root.target
    base = target.lstrip("_") if not target.lstrip("_").isdigit() else (red.op.kind if red is not None else "ew")
    kname = b.namer.fresh(f"{prog.name}__{base}")
    fn = function_def(kname, list(inputs), body)
    gast.copy_location(fn, root.node)
    for st in body:
        if not hasattr(st, "lineno"):
            gast.copy_location(st, root.node)
    rpf = ParsedFunction(ctx.pf.fn, ctx.pf.node, ctx.pf.filename, Resolver(ctx.pf.fn, extra=bindings))
    try:
        program = Normalizer().program_from_node(fn, rpf, kname)
    except S2SADError as err:
        err.in_scalar_code = True   # found in a scalar function applied elementwise
        raise
    if getattr(program, "state", None):
        raise UnsupportedOperationError(
            "a function that writes state is applied elementwise inside an array program",
            location_of(ctx.filename, root.node),
            hint="Stateful scalar functions are supported in losses of the form np.sum(s2sad.broadcast(f, x)); "
                 "return values instead of storing them.")
    program = drop_unread_params(program)
    kept = {}
    extra: list = []
    caps = {c.param: c for c in getattr(program, "captures", [])}
    kin: list = []
    for p in program.params:
        if p in caps:
            c = caps[p]
            base = c.base if c.origin == "param" else b.free_operand(Ctx(ParsedFunction(
                c.resolver.fn, ctx.pf.node, ctx.pf.filename, c.resolver)), c.base)
            t = b.namer.fresh(f"{base}_{'_'.join(str(i) for i in c.index)}".replace("-", "m"))
            idx = gast.Tuple(elts=[const(i) for i in c.index], ctx=gast.Load()) if len(c.index) != 1 \
                else const(c.index[0])
            fwd = gast.Subscript(value=operand_expr(base), slice=idx, ctx=gast.Load())
            s_ = gast.Subscript(value=gast.Attribute(value=operand_expr("np"), attr="s_", ctx=gast.Load()),
                                slice=copy.deepcopy(idx), ctx=gast.Load())
            extra.append(ArrayStmt(t, Index(s_, capture=c), [base], root.node, root.stmt, root.ctx, forward=fwd))
            kin.append(t)
        else:
            kin.append(p)
        kept[p] = True
    program = unwrap_single_call(program)
    kernel = b.new_kernel(program, kname if program.entry == kname else b.namer.fresh(program.entry))
    scalar = all(a in prog.known_scalar for a in kin) and red is None
    sites = [site for s in region for site in s.op.sites]
    mark_closures(sites, program)
    lines = []
    for s in region + ([red] if red is not None else []):
        loc = str(location_of(s.ctx.filename, s.stmt if s.stmt is not None else s.node))
        ln = (loc, source_line(s.ctx.filename, s.stmt if s.stmt is not None else s.node))
        if ln not in lines:
            lines.append(ln)
    op = KernelSum(kernel, red.op.kind) if red is not None else RunKernel(kernel, scalar)
    st = ArrayStmt(target, op, [a for a in kin], root.node if red is None else red.node,
                   root.stmt if red is None else red.stmt, root.ctx)
    if scalar:
        prog.known_scalar.add(target)
    prog.kernels.append(KernelInfo(kernel.name, kernel, st, lines, sites))
    return st, extra


def _subst(tree, mapping: dict, consts: dict):
    class S(gast.NodeTransformer):
        def visit_Name(s, node):
            if node.id in consts:
                return const_expr(consts[node.id].value)
            if node.id in mapping and mapping[node.id] is not None:
                return gast.Name(id=mapping[node.id], ctx=node.ctx, annotation=None, type_comment=None)
            return node
    return S().visit(tree)


def build_program(pf: ParsedFunction, new_kernel: Callable[[ScalarProgram, str], Any]) -> ArrayProgram:
    """The array program of `pf`. Each fused region's kernel is `new_kernel(program, name)`:
    runtime.Kernel, handed down by the caller (plans), since the runtime is a layer above
    the passes."""
    return Builder(pf, new_kernel).build()

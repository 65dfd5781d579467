"""The differentiated function's body -> an array-level program in ANF, with its
elementwise regions fused into kernels.

Input: a `ParsedFunction` that the fused planner (elementwise.py) does not take: any
mix of numpy calls, `@`, indexing, Python `for` (over range, tuples, lists, the rows of
arrays) and `while`, `if` on scalars, writes into local arrays, local
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

Free names holding arrays are data: read at call time, never differentiated. The
generated code never mutates: a write into a local array (`y[0] = ...`) is a functional
update (passes/arraywrites.py), refused where numpy would show it through another name;
`x += ...` is taken only on a fresh, unaliased value. Before lowering, break, continue
and early returns become flags (passes/jumps.py).

The builder is a coordinator: it holds the program being built (the statements, the
SSA namer, the free and bound names, and what the in-place checks need: which values
are fresh, aliased, known scalars), resolves names and dispatches expressions; its
parts, each holding the builder and reading and emitting through it, do the rest:
primcalls.PrimCalls (array primitives), arraycalls.Calls (attributes, other calls),
arraystmts.Statements (statements and control flow), ewexprs.ElementwiseExprs
(elementwise expressions), inlining.Inliner (the user's own functions). After the body, fusion.fuse joins elementwise statements into
kernels and kernelpairs.pair_kernels pairs kernels with their matmul or row reduction.
"""
from __future__ import annotations

import builtins
import copy
import types
from typing import Any, Callable

import gast
import numpy as np

from ..array_prims import HELPER_NAMES
from ..errors import FreeVariableError, UnsupportedOperationError, UnsupportedSyntaxError
from ..frontend import MISSING, ParsedFunction, Resolver, attribute_value, classify, location_of
from ..freedata import HINT as FREE_DATA_HINT, lossy_data
from .arrayir import ArrayProgram, ArrayStmt, Const, Ctx, Namer, Py, const_expr, operand_expr
from .arrayscope import UNBOUND, Bound, LocalFn, Scope, source_text
from .arraycalls import Calls
from .arraystmts import Statements, drop_dead_phis
from .arrayints import int_expr
from .arraywrites import check_writes
from .freelists import check_free_lists
from .ewtranslate import Site
from .ewexprs import ElementwiseExprs
from .fusion import fuse
from .inlining import Inliner
from .jumps import needs_rewrite, remove_jumps
from .kernelpairs import pair_kernels
from .normalize import ScalarProgram
from .layernorm import fuse_layer_norms
from .rowdot import fuse_row_dots
from .rowfusion import fuse_rows
from .primcalls import PrimCalls
from .primhints import register_hint, root_name  # register_hint: also for tests
from .trees import assigned_names

# Names generated code uses for its own purposes (reverse.py binds them).
RESERVED = {"apply", "vjp", "jvp", "store_partials", "sum_dual", "sum_grads", "not_needed", "broadcast_size", "check_scalar_loss",
            "kernel_matmul", "kernel_matmul_vjp", "kernel_rowsum", "kernel_rowsum_vjp", "matmul", "dot", "reduce_sum", "reduce_mean", "reduce_max",
            "reduce_min", "row_logsumexp", "row_softmax", "row_log_softmax", "row_layer_norm",
            "row_dot_log_softmax", "product_sums", "unit_vjp", "matmul_bias", "product_partials", "lhs_bar_sums",
            "np", "range", "reversed", "zip", "len", "float", "int", "None", "True", "False",
            "math", "_residuals"} | HELPER_NAMES


# ------------------------------------------------------------------ the builder


class Builder:
    """One function body -> one ArrayProgram (build); see the module docstring."""

    def __init__(self, pf: ParsedFunction, new_kernel: Callable[[ScalarProgram, str], Any]):
        self.pf = pf
        self.new_kernel = new_kernel    # (program, name) -> a runtime.Kernel (see build_program)
        node = pf.node
        self.fname = pf.name if pf.name.isidentifier() else "loss"
        params = [a.id for a in node.args.args]
        self.namer = Namer(RESERVED | set(params))
        self.out: list = []
        self.free: dict[str, tuple[Resolver, str]] = {}
        self.free_keys: dict[tuple[int, str], str] = {}
        self.bound: dict[str, Any] = {}
        self._bound_key: dict[int, str] = {}
        self.fresh: set[str] = set()
        self.aliased: set[str] = set()
        self.scalar: set[str] = set()
        self.sites: list[Site] = []
        self.stack: list[int] = []
        self.cur_stmt = None
        self.named: set[str] = set()              # SSA values bound to a user's name
        self.unpacking = None                     # (call node, names) of `a, b = call(...)` being read
        self.params = params
        self.root = Ctx(pf)
        # its parts, each reading and emitting through the builder
        self.prims = PrimCalls(self)     # numpy calls, methods and syntax that are array primitives
        self.stmts = Statements(self)    # statements and control flow
        self.ew = ElementwiseExprs(self)  # elementwise expressions -> Elementwise statements
        self.inliner = Inliner(self)     # calls of the user's own functions
        self.calls = Calls(self)         # attributes and other calls

    # -------------------------------------------------------------- errors

    def err(self, ctx: Ctx, node, msg, hint, cls=UnsupportedSyntaxError):
        return cls(msg, location_of(ctx.filename, node), hint=hint)

    def loc(self, ctx: Ctx, node):
        return location_of(ctx.filename, node)

    def label(self, node) -> str:
        """The user's spelling of a callee or an expression, for messages."""
        return source_text(node)

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
        scope = Scope(self.root, {p: p for p in self.params}, set(self.params) | assigned_names(body))
        self.stack.append(id(self.pf.fn))
        result, ret = self.function_body(body, scope, node, want="loss")
        if isinstance(result, (list, LocalFn)):
            raise self.err(self.root, ret, "the differentiated function must return one value (its loss)",
                           "Return a single array or number.", UnsupportedOperationError)
        prog = ArrayProgram(self.fname, self.pf, list(self.params), self.out, result, ret, self.free, self.bound,
                            [], self.sites, self.namer, self.scalar)
        drop_dead_phis(prog)
        check_writes(prog, self)
        fuse_rows(prog)
        fuse_layer_norms(prog)
        fuse_row_dots(prog)
        fuse(prog, self)
        pair_kernels(prog)
        return prog

    def function_body(self, body, scope: Scope, fnode, want=None):
        """Lower a function body ending in its one return; -> (result operand, return node)."""
        stmts = [s for s in body if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant)
                                         and isinstance(s.value.value, str))]
        if stmts and needs_rewrite(stmts):     # break, continue, early returns -> flags (on a copy)
            stmts = remove_jumps(copy.deepcopy(stmts), fnode)
        if not stmts or not isinstance(stmts[-1], gast.Return) or stmts[-1].value is None:
            raise self.err(scope.ctx, stmts[-1] if stmts else fnode,
                           f"'{getattr(fnode, 'name', 'lambda')}' must end with `return <value>` (one return, last)",
                           "Return the result once, at the end of the function; use np.where or an "
                           "`if` that assigns a variable instead of an early return.")
        for s in stmts[:-1]:
            for n in _walk_no_defs(s):
                if isinstance(n, gast.Return):
                    raise self.err(scope.ctx, n, "a return that not every path reaches (the function may end "
                                   "without returning a value)",
                                   "Return a value on every path, or assign a variable and return it once, at the end.")
        self.stmts.block(stmts[:-1], scope)
        ret = stmts[-1]
        self.cur_stmt = ret
        return self.expr(ret.value, scope, want), ret

    # -------------------------------------------------------------- names

    def lookup_local(self, nm: str, scope: Scope):
        sc = scope
        while sc is not None:
            if nm in sc.vars:
                return sc.vars[nm]
            if nm in sc.locals:
                return UNBOUND
            sc = sc.parent
        return None

    def lookup(self, nm: str, scope: Scope, node):
        v = self.lookup_local(nm, scope)
        if v is UNBOUND:
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
            _refuse_lossy(self, ctx, node, nm, value)
            return self.free_operand(ctx, nm)
        if value is None:
            return Const(None)
        return Bound(value, nm)

    def free_operand(self, ctx: Ctx, nm: str) -> str:
        key = (id(ctx.resolver.fn), nm)
        g = self.free_keys.get(key)
        if g is None:
            g = self.namer.fresh(nm)
            self.free_keys[key] = g
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
            if isinstance(v, Bound):
                raise self.err(ctx, e, f"'{e.id}' holds a {type(v.value).__name__}, not an array or a number",
                               "Pass arrays and numbers; call functions.", FreeVariableError)
            return v
        if isinstance(e, gast.Constant):
            return Const(e.value)
        if int_expr(e, lambda n: self.stmts.is_int(n, scope)):     # shape metadata: a Python int, never a kernel's
            return self.stmts.int_value(e, scope, want)
        listed = self.stmts.lists.expr(e, scope, want)   # comprehensions over lists, hs[k], sum(hs)
        if listed is not None:
            return listed
        if self.ew.is_elementwise(e, scope):
            return self.ew.elementwise(e, scope, want)
        if isinstance(e, gast.BinOp) and isinstance(e.op, gast.MatMult):
            return self.prims.matmul(e, scope, want)
        if isinstance(e, gast.Subscript):
            return self.prims.subscript(e, scope, want)
        if isinstance(e, gast.Attribute):
            return self.calls.attribute(e, scope, want)
        if isinstance(e, gast.Call):
            return self.calls.call(e, scope, want)
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
        if isinstance(v, list):     # (Python's operators join, repeat or refuse lists: never numpy's meaning)
            raise self.err(scope.ctx, e, "a list or tuple is used here where an array or a number is expected (Python's "
                           "operators join, repeat or refuse lists)",
                           "Convert it first (np.asarray(...)), or read its items by index.", UnsupportedOperationError)
        if isinstance(v, LocalFn):
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
        if isinstance(e, (gast.Slice, gast.UnaryOp, gast.Tuple)) or (isinstance(e, gast.BinOp)
                                                                       and not isinstance(e.op, gast.MatMult)):
            return _static_parts(self, e, scope)
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
                if isinstance(v, Bound):
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

    # -------------------------------------------------------------- calls

    def resolve_call(self, f, scope: Scope):
        """(kind, value) of a called expression: ("local", LocalFn), ("method", attr),
        ("value", python object), or ("missing", None)."""
        if isinstance(f, gast.Name):
            v = self.lookup_local(f.id, scope)
            if isinstance(v, LocalFn):
                return "local", v
            if v is not None and v is not UNBOUND:
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

    # -------------------------------------------------------------- evaluated as written

    def py_stmt(self, fwd, args, reads, e, scope: Scope, want, why, label="", fresh=False):
        t = self.emit(Py(why, label), [a for a in args], e, scope, want, forward=fwd, reads=set(reads))
        if fresh:
            self.fresh.add(t)
        else:
            for a in args:
                if isinstance(a, str):
                    self.aliased.add(a)
        return t


def _refuse_lossy(b: Builder, ctx: Ctx, node, nm: str, value) -> None:
    """Free data the kernels would change (complex, long double: freedata) is refused at its read."""
    lossy = lossy_data(value)
    if lossy is not None:
        raise b.err(ctx, node, f"'{nm}' holds {lossy}", FREE_DATA_HINT, FreeVariableError)


def _walk_no_defs(node):
    """gast.walk, not entering nested function definitions."""
    if isinstance(node, (gast.FunctionDef, gast.Lambda)):
        return
    yield node
    for child in gast.iter_child_nodes(node):
        if not isinstance(child, (gast.FunctionDef, gast.Lambda)):
            yield from _walk_no_defs(child)


def _static_parts(b: Builder, e, scope: Scope):
    """An index with a slice in it (`x[:len(x) - 1]`, `x[1:n + 1, 0]`), or arithmetic
    (`(i + 1) % len(x)`, `np.arange(n) % 2`): each bound, item or operand its own static
    parameter (Builder.static), the slice or the operator kept as written around them. A
    static parameter carries no derivative, so its arithmetic is numpy's as written (an
    index stays an integer array), never a float kernel's."""
    reads: set = set()

    def part(x):
        if x is None:
            return None
        out, rr = b.static(x, scope)
        reads.update(rr)
        return out
    if isinstance(e, gast.Slice):
        out = gast.Slice(lower=part(e.lower), upper=part(e.upper), step=part(e.step))
    elif isinstance(e, gast.BinOp):
        out = gast.BinOp(left=part(e.left), op=e.op, right=part(e.right))
    elif isinstance(e, gast.UnaryOp):
        out = gast.UnaryOp(op=e.op, operand=part(e.operand))
    else:
        out = gast.Tuple(elts=[part(x) for x in e.elts], ctx=gast.Load())
    return gast.copy_location(out, e), reads


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




def build_program(pf: ParsedFunction, new_kernel: Callable[[ScalarProgram, str], Any]) -> ArrayProgram:
    """The array program of `pf`. Each fused region's kernel is `new_kernel(program, name)`:
    runtime.Kernel, handed down by the caller (plans), since the runtime is a layer above
    the passes."""
    builder = Builder(pf, new_kernel)
    prog = builder.build()
    prog.checked_lists = check_free_lists(prog, builder)     # (last: every pass above sees np.array(L))
    return prog

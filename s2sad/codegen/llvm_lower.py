"""Kernel -> LLVM IR text: the scalar functions of a `KernelModule`.

`ModuleWriter.render` prints, deterministically and without consulting the host, a module
holding the scalar functions a driver needs (entry, dual entry, helpers) as internal
`alwaysinline` functions, and the driver (whose C ABI `kernel.py` defines) that
`llvm_drivers` writes; `llvm_drivers.lower_module` is the entry point. Locals are
allocas in the entry block (mem2reg promotes them); values and blocks are named after
the user's variables. `llvm_jit` optimises and JIT-compiles the text.

By job: this module holds the module (`ModuleWriter`) and the statements of a function
(`FunctionEmitter`); `llvm_expr` its expressions, `llvm_math` the math calls (libm,
libmvec variants, vecmath), `llvm_ir` the pieces every IR writer shares (types,
literals, names, `Body`). All of them load only on a cache miss (see layers.LAZY_INTERNAL).

Semantics follow the python backend (the oracle): every value is T (double or float),
comparisons give 1.0/0.0, `and`/`or` short-circuit and return an operand, `//` and `%`
are Python's float floor division and remainder (x // 0 is x / 0, as in numpy),
`int`/`round`/`floor`/`ceil`/`trunc` are IEEE trunc/roundeven/floor/ceil/trunc (they
keep the sign of a zero, as numpy's do), `min`/`max` are Python's (`b if b < a else a`), `math.maximum`/`math.minimum` numpy's
(`a if a > b or a is NaN else b`: NaN if either is).

Transcendental functions (`ModuleWriter.libm`) give each element the same bits wherever it
falls (vector body or scalar remainder, any array length, offset or thread split, any
driver), and keep loops vectorisable where they can:
- float64 tanh, exp and log (OWN_BEFORE_LIBMVEC), and without a libmvec variant
  float64 expm1 and log1p too, where the vector width is known (the widest libmvec
  ISA's, else the host's, `vector_bits`): s2sad's own vector function
  (`vecmath.define_vector`, `@s2sad.<f>.v8` for AVX-512) wired exactly like a libmvec
  variant below (`@vecmath.<f>`: lane 0 of it); after the vectoriser has called it,
  `llvm_jit.optimize` inlines it into the vector loop;
- where glibc's libmvec has a variant, calls go to `@libmvec.<f>`, lane 0 of the
  widest variant on a splat, and carry the `vector-function-abi-variant` call-site
  attribute that lets the loop vectoriser call that same variant (and, in remainder
  loops, `@libmvec.<f>.v4`, `.v2`: a few lanes of it);
- else s2sad's own straight-line versions (`vecmath`: exp, expm1, log, log1p, tanh,
  cbrt), inlined like any other code;
- else libm's scalar function (and a loop that calls it stays scalar).

Why the first: the gradient of sum(f(x)) at 1M float64, one thread, AMD EPYC znver4
(ms; x.copy() 0.21): tanh 2.1-2.6 with libmvec, 1.0 with s2sad's own; exp 1.0-1.7 and
1.1; log 1.25-2.0 and 1.2; expm1, log1p and cbrt are faster with libmvec, and float32
keeps libmvec throughout (16 lanes). Wired as a vector function, not inlined before the
vectoriser: LLVM's vectoriser can take exponential time analysing several inlined
copies of a long straight-line body on loop-invariant operands (a random-program test
never finished compiling).
"""
from __future__ import annotations

import math
import re
from typing import Callable, Iterable

import gast

from ..kernel import ArityError, KernelModule, LoopSpec, ScanSpec, return_arity
from .llvm_expr import ExprEmitter, const_value
from .llvm_ir import Body, LoweringError, Ty, driver_name, fconst, ir_ref, sanitize
from .llvm_math import (ALL_VECTOR_ISAS, LIBMVEC_FUNCTIONS, OWN_BEFORE_LIBMVEC, RESERVED_SYMBOLS, VECTOR_ISA_BITS,
                        MathDecls)

# what the other IR writers and llvm.py read from here (their homes: llvm_ir, llvm_math)
__all__ = ["ModuleWriter", "Body", "LoweringError", "driver_name", "ir_ref", "ALL_VECTOR_ISAS",
           "LIBMVEC_FUNCTIONS", "OWN_BEFORE_LIBMVEC", "VECTOR_ISA_BITS"]


def function_symbol(name: str, taken: set[str], driver: str) -> str:
    """The LLVM symbol of the module's function `name`, distinct from `taken`: `sanitize`
    maps `hσ` and `h_3c3` alike, so a clash (or a reserved symbol) takes a `.fn` suffix,
    which no sanitized Python name has (they never contain a dot)."""
    base = sanitize(name)
    if not (base in taken or base in RESERVED_SYMBOLS or base == driver or base.startswith(("llvm.", "_ZGV"))):
        return base
    ll, k = base + ".fn", 1
    while ll in taken:
        k += 1
        ll = f"{base}.fn{k}"
    return ll


def walk_stmts(body):
    for s in body:
        yield s
        for field in ("body", "orelse"):
            yield from walk_stmts(getattr(s, field, []) or [])


# ---------------------------------------------------------------------------------
# the module
class ModuleWriter(MathDecls):
    def __init__(self, kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype, vector_isas: Iterable[str],
                 available: Callable[[str], bool] | None, own_math: bool = True,
                 vector_bits: int | None = None) -> None:
        super().__init__(Ty(dtype), vector_isas, available, own_math, vector_bits)
        self.kmod = kmod
        self.spec = spec
        self.arity_memo: dict[str, int] = {}
        self.extra_roots: tuple[str, ...] = ()   # functions only the driver calls (a scan's split)
        self.driver = driver_name(kmod, spec, dtype)
        self.fns = {fn.name: fn for fn in kmod.functions.values()}
        self.llnames: dict[str, str] = {}
        taken: set[str] = set()
        for name in self.fns:
            ll = function_symbol(name, taken, self.driver)
            taken.add(ll)
            self.llnames[name] = ll

    # -- functions

    def arity(self, fname: str) -> int:
        """How many values `fname` returns (1, or the length of its tuples)."""
        try:
            return return_arity(self.fns, fname, self.arity_memo)
        except ArityError as e:
            raise LoweringError(f"recursive helper {e.name!r}" if e.lengths is None else
                                f"{e.name!r} returns tuples of different lengths: {e.lengths}") from None

    def ret_type(self, fname: str) -> str:
        n = self.arity(fname)
        return self.ty.name if n == 1 else "{ " + ", ".join([self.ty.name] * n) + " }"

    def reachable(self) -> list[str]:
        roots = [self.kmod.entry, *self.extra_roots]
        if self.spec.needs_dual:
            if not self.kmod.dual_entry:
                raise LoweringError(f"spec {self.spec.tag()} needs a dual function; {self.kmod.name} has none")
            roots.append(self.kmod.dual_entry)
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            if name not in self.fns:
                raise LoweringError(f"no function {name!r} in kernel module {self.kmod.name!r}")
            seen.add(name)
            for node in gast.walk(self.fns[name]):
                if (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
                        and node.func.id in self.fns):
                    todo.append(node.func.id)
        return [n for n in self.fns if n in seen]

    def render(self, emit_driver: Callable[["ModuleWriter"], str]) -> str:
        """The module's text: declarations, the reachable functions and the driver that
        `emit_driver(self)` writes (see `llvm_drivers`)."""
        names = self.reachable()
        bodies = [FunctionEmitter(self, self.fns[n]).render() for n in names]
        driver = emit_driver(self)
        parts = [f"; s2sad kernel module {self.kmod.name!r}: driver @{self.driver} (T = {self.ty.name})"]
        if self.decls:
            parts.append("\n".join(self.decls.values()))
        if self.vector_decls:
            parts.append("; glibc's libmvec: one variant per function (the widest ISA). Scalar code calls\n"
                         "; lane 0 of it, remainder loops a few lanes of it, and each call's\n"
                         "; vector-function-abi-variant attribute lets the loop vectoriser call it itself:\n"
                         "; an element gets the same bits wherever it falls\n"
                         + "\n".join(self.vector_decls.values()))
        parts.extend(self.lane_fns.values())
        parts.extend(self.runtime.values())
        parts.extend(bodies)
        parts.append(driver)
        if self.narrow_fns:     # kept whole for the vectoriser, which finds them through the attributes
            parts.append(f"@llvm.compiler.used = appending global [{len(self.narrow_fns)} x ptr] "
                         f"[{', '.join('ptr @' + f for f in self.narrow_fns)}], section \"llvm.metadata\"")
        # the driver: with libmvec variants, the vectoriser works at their width; an
        # arithmetic loop at the host's (`wide_worth`); else at LLVM's choice for the host
        bits = self.vector_bits or (self.own_vector_bits if wide_worth(bodies, self.spec) else 0)
        width = f' "prefer-vector-width"="{bits}"' if bits else ""
        attrs = ["attributes #0 = { alwaysinline nounwind }", f"attributes #1 = {{ nounwind{width} }}"]
        if any(line.endswith("#2") for line in [*self.decls.values(), *self.vector_decls.values()]):
            attrs.append("attributes #2 = { nounwind willreturn memory(none) }")
        if self.lane_fns:
            attrs.append("attributes #3 = { noinline nounwind willreturn memory(none) }")
        for group, text in self.vfabi_text.items():
            attrs.append(f"attributes #{group} = {{ {text} }}")
        parts.append("\n".join(attrs))
        return "\n\n".join(parts) + "\n"


WIDE_MIN_OPS = 16     # multiplies and adds per element from which a loop takes the host's full width
_ARITH = re.compile(r" = (?:fmul|fadd|fsub) |@llvm\.fmuladd\.|@llvm\.fma\.")


def wide_worth(bodies: list[str], spec) -> bool:
    """Does an elementwise loop over these scalar functions run at the host's full vector
    width rather than at LLVM's choice for the host? Where it is arithmetic: at least
    WIDE_MIN_OPS multiplies and adds per element, with no division, square root or loop
    of the user's (whose 512-bit forms are no faster per element on Intel's AVX-512 cores).

    Measured (session 13, a Xeon of the Sapphire Rapids class under KVM, where LLVM picks
    256 bits for AVX-512; the main table's rows, two revisions interleaved, default
    threads and one pinned thread): the 16-term Horner polynomial 0.75x the time at 10k
    and 0.87x at 1M; sum(abs(x)) at 1M 0.94x but at 10k 1.10x (a loop of loads and stores
    gains little from the width and a short call loses): so not below WIDE_MIN_OPS; the
    Newton row (divisions in a loop) 1.01-1.13x: so not with those.
    """
    if not isinstance(spec, LoopSpec):
        return False
    text = "\n".join(bodies)
    if "fdiv" in text or "sqrt" in text or "label %for" in text or "label %while" in text:
        return False
    return len(_ARITH.findall(text)) >= WIDE_MIN_OPS


# ---------------------------------------------------------------------------------
# scalar functions
class FunctionEmitter(ExprEmitter):
    """One scalar function as an internal alwaysinline LLVM function: its statements here,
    its expressions in `ExprEmitter`."""

    def __init__(self, module: ModuleWriter, fn: gast.FunctionDef) -> None:
        super().__init__(module, fn)
        self.arity = module.arity(fn.name)
        self.rtype = module.ret_type(fn.name)
        self.allocas: list[str] = []
        self.loops: list[tuple[str, str]] = []       # (break target, continue target)

    # -- setup

    def render(self) -> str:
        fn, T = self.fn, self.T
        params = []
        for a in fn.args.args:
            if not isinstance(a, gast.Name):
                raise LoweringError(f"{fn.name}: parameters must be plain names")
            params.append(a.id)
        # names assigned only by top-level statements are SSA values, rebound at each
        # assignment (top-level statements run once, in order); the others live in allocas
        assigned: list[str] = []

        def visit(body, nested: bool) -> None:
            for s in body:
                targets = []
                if isinstance(s, gast.Assign):
                    for t in s.targets:
                        targets.extend(t.elts if isinstance(t, gast.Tuple) else [t])
                elif isinstance(s, gast.For):
                    targets.append(s.target)
                for t in targets:
                    if not isinstance(t, gast.Name):
                        raise LoweringError(f"{fn.name}: assignment target {type(t).__name__} is not a name")
                    if (nested or isinstance(s, gast.For)) and t.id not in assigned:
                        assigned.append(t.id)
                for field in ("body", "orelse"):
                    visit(getattr(s, field, []) or [], True)

        visit(fn.body, False)
        sig = []
        for p in params:                      # parameter names first: they are the signature
            ref = self.local(p)
            sig.append(f"{T} {ref}")
            self.vars[p] = ("ssa", ref)
        self.start(self.fresh("entry"))
        for name in assigned:
            slot = self.local(name + ".addr")
            self.allocas.append(f"  {slot} = alloca {T}")
            if name in params:
                self.emit(f"store {T} {self.vars[name][1]}, ptr {slot}")
            self.vars[name] = ("ptr", slot)
        returns = [s for s in walk_stmts(fn.body) if isinstance(s, gast.Return)]
        self.direct = len(returns) == 1 and fn.body and fn.body[-1] is returns[0]
        if not self.direct:
            self.retslot = self.local("retval")
            self.allocas.insert(0, f"  {self.retslot} = alloca {self.rtype}")
            self.exit = self.new_block("return")
        self.stmts(fn.body)
        if self.cur is not None:              # fell off the end: Python would return None
            nan = self.nan_result()
            if self.direct:
                self.terminate(f"ret {self.rtype} {nan}")
            else:
                self.emit(f"store {self.rtype} {nan}, ptr {self.retslot}")
                self.br(self.exit)
        if not self.direct and self.preds.get(self.exit):
            self.start(self.exit)
            v = self.inst("retval.v", f"load {self.rtype}, ptr {self.retslot}")
            self.terminate(f"ret {self.rtype} {v}")
        self.blocks[0][1][0:0] = self.allocas
        llname = ir_ref("@", self.m.llnames[fn.name])
        text = f"define internal {self.rtype} {llname}({', '.join(sig)}) #0 {{\n"
        origin = self.m.kmod.origins.get(fn.name)
        if origin:
            text = f"; {origin}\n" + text
        return text + self.render_blocks() + "\n}"

    def nan_result(self) -> str:
        nan = fconst(math.nan, self.ty)
        if self.arity == 1:
            return nan
        return "{ " + ", ".join(f"{self.T} {nan}" for _ in range(self.arity)) + " }"

    # -- statements

    def stmts(self, body) -> None:
        for s in body:
            if self.cur is None:              # after return/break/continue: dead code
                return
            method = getattr(self, "_s_" + type(s).__name__, None)
            if method is None:
                raise LoweringError(f"{self.where(s)}: {type(s).__name__} is not in the core language")
            method(s)

    def store(self, name: str, value: str) -> None:
        kind, ref = self.vars.get(name, ("ssa", None))
        if kind == "ssa":
            self.vars[name] = ("ssa", value)
        else:
            self.emit(f"store {self.T} {value}, ptr {ref}")

    def _s_Pass(self, node) -> None:
        pass

    def _s_Expr(self, node) -> None:
        pass  # a docstring or a call for nothing: the core language has no side effects

    def _s_Assign(self, node) -> None:
        if len(node.targets) != 1:
            raise LoweringError(f"{self.where(node)}: chained assignment")
        target = node.targets[0]
        if isinstance(target, gast.Name):
            self.store(target.id, self.expr(node.value, target.id))
            return
        if not isinstance(target, gast.Tuple):
            raise LoweringError(f"{self.where(node)}: assignment to {type(target).__name__}")
        call = node.value
        if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Name)
                and call.func.id in self.m.fns):
            raise LoweringError(f"{self.where(node)}: only a helper call can be unpacked")
        n = self.m.arity(call.func.id)
        if n != len(target.elts):
            raise LoweringError(f"{self.where(node)}: unpacking {n} values into {len(target.elts)} names")
        agg = self.call_helper(call, call.func.id + ".ret", allow_tuple=True)
        rtype = self.m.ret_type(call.func.id)
        for k, elt in enumerate(target.elts):
            v = self.inst(elt.id, f"extractvalue {rtype} {agg}, {k}")
            self.store(elt.id, v)

    def _s_Return(self, node) -> None:
        value = node.value
        if isinstance(value, gast.Tuple):
            if len(value.elts) != self.arity:
                raise LoweringError(f"{self.where(node)}: returns {len(value.elts)} values, not {self.arity}")
            parts = [self.expr(e) for e in value.elts]
            agg = "poison"
            for k, p in enumerate(parts):
                agg = self.inst("ret.tuple" if k < len(parts) - 1 else "ret",
                                f"insertvalue {self.rtype} {agg}, {self.T} {p}, {k}")
            result = agg
        elif (isinstance(value, gast.Call) and isinstance(value.func, gast.Name)
              and value.func.id in self.m.fns and self.m.arity(value.func.id) > 1):
            if self.m.arity(value.func.id) != self.arity:
                raise LoweringError(f"{self.where(node)}: returns a tuple of the wrong length")
            result = self.call_helper(value, "ret", allow_tuple=True)
        else:
            if value is None or self.arity != 1:
                raise LoweringError(f"{self.where(node)}: returns one value where {self.arity} are due")
            result = self.expr(value, "ret")
        if self.direct:
            self.terminate(f"ret {self.rtype} {result}")
        else:
            self.emit(f"store {self.rtype} {result}, ptr {self.retslot}")
            self.br(self.exit)

    def _s_If(self, node) -> None:
        cond = self.cond(node.test)
        then = self.new_block("if.then")
        other = self.new_block("if.else") if node.orelse else None
        end = self.new_block("if.end")
        self.cbr(cond, then, other or end)
        self.start(then)
        self.stmts(node.body)
        if self.cur is not None:
            self.br(end)
        if other:
            self.start(other)
            self.stmts(node.orelse)
            if self.cur is not None:
                self.br(end)
        if self.preds[end]:
            self.start(end)

    def _s_While(self, node) -> None:
        if node.orelse:
            raise LoweringError(f"{self.where(node)}: while ... else")
        head = self.new_block("while.cond")
        body = self.new_block("while.body")
        end = self.new_block("while.end")
        self.br(head)
        self.start(head)
        self.cbr(self.cond(node.test), body, end)
        self.start(body)
        self.loops.append((end, head))
        self.stmts(node.body)
        self.loops.pop()
        if self.cur is not None:
            self.br(head)
        self.start(end)

    def _s_For(self, node) -> None:
        it = node.iter
        if node.orelse:
            raise LoweringError(f"{self.where(node)}: for ... else")
        if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords):
            raise LoweringError(f"{self.where(node)}: for loops run over range(start, stop, step)")
        var = node.target.id
        args = list(it.args)
        if len(args) == 1:
            args = [gast.Constant(value=0, kind=None)] + args
        if len(args) == 2:
            args.append(gast.Constant(value=1, kind=None))
        start = self.expr(args[0], var + ".start")
        stop = self.expr(args[1], var + ".stop")
        step_c = const_value(args[2])
        if step_c is None or step_c == 0 or step_c != int(step_c):
            raise LoweringError(f"{self.where(node)}: range() needs a nonzero integer constant step")
        step = fconst(step_c, self.ty)
        counter = self.local(var + ".iter")
        self.allocas.append(f"  {counter} = alloca {self.T}")
        self.emit(f"store {self.T} {start}, ptr {counter}")
        head = self.new_block("for.cond")
        body = self.new_block("for.body")
        inc = self.new_block("for.inc")
        end = self.new_block("for.end")
        self.br(head)
        self.start(head)
        cur = self.inst(var + ".cur", f"load {self.T}, ptr {counter}")
        pred = "olt" if step_c > 0 else "ogt"
        more = self.inst("for.more", f"fcmp {pred} {self.T} {cur}, {stop}")
        self.cbr(more, body, end)
        self.start(body)
        self.store(var, cur)
        self.loops.append((end, inc))
        self.stmts(node.body)
        self.loops.pop()
        if self.cur is not None:
            self.br(inc)
        if self.preds[inc]:
            self.start(inc)
            nxt = self.inst(var + ".next", f"fadd {self.T} {cur}, {step}")
            self.emit(f"store {self.T} {nxt}, ptr {counter}")
            self.br(head)
        self.start(end)

    def _s_Break(self, node) -> None:
        if not self.loops:
            raise LoweringError(f"{self.where(node)}: break outside a loop")
        self.br(self.loops[-1][0])

    def _s_Continue(self, node) -> None:
        if not self.loops:
            raise LoweringError(f"{self.where(node)}: continue outside a loop")
        self.br(self.loops[-1][1])

"""The core scalar language's expressions -> LLVM IR instructions (values T, conditions i1).

Semantics are the python backend's (see llvm_lower's docstring): comparisons give
1.0/0.0, `and`/`or` short-circuit and return an operand, `IfExp` evaluates only the arm
chosen, `//` and `%` are Python's; math calls go through `llvm_math.MathDecls`. Anything
outside the core language raises LoweringError, or BackendUnavailableError for a function
this backend has no implementation of.
"""
from __future__ import annotations

import math

import gast

from ..errors import BackendUnavailableError
from .llvm_ir import Body, LoweringError, fconst, ir_ref
from .llvm_math import INTRINSIC1, LIBM1, LIBM2, LIBM_VALUE_ONLY

_BINOPS = {gast.Add: ("fadd", "add"), gast.Sub: ("fsub", "sub"), gast.Mult: ("fmul", "mul"),
           gast.Div: ("fdiv", "div")}
_FCMP = {gast.Lt: ("olt", "lt"), gast.LtE: ("ole", "le"), gast.Gt: ("ogt", "gt"),
         gast.GtE: ("oge", "ge"), gast.Eq: ("oeq", "eq"), gast.NotEq: ("une", "ne")}
_MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan}


def const_value(node) -> float | None:
    """The value of a literal (possibly signed) constant expression, else None."""
    if isinstance(node, gast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        v = const_value(node.operand)
        if v is not None:
            return -v if isinstance(node.op, gast.USub) else v
    return None


class ExprEmitter(Body):
    """Expressions and conditions of one scalar function, lowered into this body: values
    are T, conditions i1; names are read from `vars` (an SSA value, or an alloca loaded)."""

    def __init__(self, module, fn: gast.FunctionDef) -> None:
        # module: the llvm_lower.ModuleWriter whose function `fn` is (its functions' symbols,
        # arities and math declarations)
        super().__init__(module.ty)
        self.m = module
        self.fn = fn
        self.vars: dict[str, tuple[str, str]] = {}   # name -> ("ssa"|"ptr", ref)

    def where(self, node) -> str:
        line = getattr(node, "lineno", None)
        return f"{self.fn.name}" + (f" line {line}" if line else "")

    # -- conditions (i1)

    def cond(self, node) -> str:
        T = self.T
        if isinstance(node, gast.Compare):
            return self.compare(node)
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not):
            return self.inst("not", f"xor i1 {self.cond(node.operand)}, true")
        if isinstance(node, gast.Constant) and isinstance(node.value, (bool, int, float)):
            return "true" if node.value else "false"
        if isinstance(node, gast.BoolOp):
            return self.boolop(node, as_cond=True)
        v = self.expr(node)
        return self.inst("tobool", f"fcmp une {T} {v}, 0.0")

    def compare(self, node) -> str:
        if len(node.ops) != 1 or len(node.comparators) != 1:
            raise LoweringError(f"{self.where(node)}: chained comparison")
        pred, name = _FCMP.get(type(node.ops[0]), (None, None))
        if pred is None:
            raise LoweringError(f"{self.where(node)}: comparison {type(node.ops[0]).__name__}")
        a = self.expr(node.left)
        b = self.expr(node.comparators[0])
        return self.inst(name, f"fcmp {pred} {self.T} {a}, {b}")

    def boolop(self, node, as_cond: bool, hint: str | None = None) -> str:
        is_and = isinstance(node.op, gast.And)
        kind = "and" if is_and else "or"
        end = self.new_block(kind + ".end")
        incoming = []
        values = node.values
        for k, v in enumerate(values):
            if k == len(values) - 1:
                x = self.cond(v) if as_cond else self.expr(v)
                incoming.append((x, self.label))
                self.br(end)
                break
            nxt = self.new_block(kind + ".rhs")
            if as_cond:
                c = self.cond(v)
                incoming.append(("false" if is_and else "true", self.label))
            else:
                x = self.expr(v)
                c = self.inst("tobool", f"fcmp une {self.T} {x}, 0.0")
                incoming.append((x, self.label))
            if is_and:
                self.cbr(c, nxt, end)
            else:
                self.cbr(c, end, nxt)
            self.start(nxt)
        self.start(end)
        ty = "i1" if as_cond else self.T
        arms = ", ".join(f"[ {x}, {ir_ref('%', lab)} ]" for x, lab in incoming)
        return self.inst(hint or kind, f"phi {ty} {arms}")

    # -- expressions (T)

    def expr(self, node, hint: str | None = None) -> str:
        method = getattr(self, "_e_" + type(node).__name__, None)
        if method is None:
            raise LoweringError(f"{self.where(node)}: {type(node).__name__} is not in the core language")
        return method(node, hint)

    def _e_Constant(self, node, hint) -> str:
        v = node.value
        if isinstance(v, bool):
            return fconst(1.0 if v else 0.0, self.ty)
        if isinstance(v, (int, float)):
            try:
                return fconst(float(v), self.ty)
            except OverflowError:
                return fconst(math.inf if v > 0 else -math.inf, self.ty)
        raise LoweringError(f"{self.where(node)}: constant {v!r} is not a number")

    def _e_Name(self, node, hint) -> str:
        if node.id not in self.vars:
            raise LoweringError(f"{self.where(node)}: unknown name {node.id!r}")
        kind, ref = self.vars[node.id]
        if kind == "ssa":
            return ref
        return self.inst(hint or node.id, f"load {self.T}, ptr {ref}")

    def _e_Attribute(self, node, hint) -> str:
        if (isinstance(node.value, gast.Name) and node.value.id == "math"
                and node.attr in _MATH_CONSTANTS):
            return fconst(_MATH_CONSTANTS[node.attr], self.ty)
        raise LoweringError(f"{self.where(node)}: attribute {node.attr!r}")

    def _e_BinOp(self, node, hint) -> str:
        T, op = self.T, type(node.op)
        if op is gast.Pow and const_value(node.right) == 2.0:
            a = self.expr(node.left)
            return self.inst(hint or "square", f"fmul {T} {a}, {a}")
        a = self.expr(node.left)
        b = self.expr(node.right)
        if op in _BINOPS:
            instr, name = _BINOPS[op]
            return self.inst(hint or name, f"{instr} {T} {a}, {b}")
        if op is gast.Pow:
            return self.call_libm("pow", [a, b], hint)
        if op is gast.FloorDiv:
            fn = self.m.runtime_helper("floordiv")
            return self.inst(hint or "floordiv", f"call {T} {fn}({T} {a}, {T} {b})")
        if op is gast.Mod:
            fn = self.m.runtime_helper("mod")
            return self.inst(hint or "mod", f"call {T} {fn}({T} {a}, {T} {b})")
        raise LoweringError(f"{self.where(node)}: operator {op.__name__}")

    def _e_UnaryOp(self, node, hint) -> str:
        op = type(node.op)
        if op is gast.UAdd:
            return self.expr(node.operand, hint)
        if op is gast.USub:
            a = self.expr(node.operand)
            return self.inst(hint or "neg", f"fneg {self.T} {a}")
        if op is gast.Not:
            c = self.inst("not", f"xor i1 {self.cond(node.operand)}, true")
            return self.inst(hint or "not.f", f"uitofp i1 {c} to {self.T}")
        raise LoweringError(f"{self.where(node)}: unary {op.__name__}")

    def _e_Compare(self, node, hint) -> str:
        c = self.compare(node)
        return self.inst(hint or c.lstrip("%") + ".f", f"uitofp i1 {c} to {self.T}")

    def _e_BoolOp(self, node, hint) -> str:
        return self.boolop(node, as_cond=False, hint=hint)

    def _e_IfExp(self, node, hint) -> str:
        c = self.cond(node.test)
        then = self.new_block("cond.true")
        other = self.new_block("cond.false")
        end = self.new_block("cond.end")
        self.cbr(c, then, other)
        self.start(then)
        a = self.expr(node.body)
        a_from = self.label
        self.br(end)
        self.start(other)
        b = self.expr(node.orelse)
        b_from = self.label
        self.br(end)
        self.start(end)
        return self.inst(hint or "cond", f"phi {self.T} [ {a}, {ir_ref('%', a_from)} ], "
                                         f"[ {b}, {ir_ref('%', b_from)} ]")

    def _e_Call(self, node, hint) -> str:
        if node.keywords:
            raise LoweringError(f"{self.where(node)}: keyword arguments")
        f = node.func
        if isinstance(f, gast.Name):
            if f.id in self.m.fns:
                return self.call_helper(node, hint or f.id, allow_tuple=False)
            return self.builtin(f.id, node, hint)
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and f.value.id == "math":
            return self.math(f.attr, node, hint)
        raise LoweringError(f"{self.where(node)}: call of {type(f).__name__}")

    # -- calls

    def nargs(self, node, *counts: int) -> list:
        if len(node.args) not in counts:
            raise LoweringError(f"{self.where(node)}: wrong number of arguments ({len(node.args)})")
        return node.args

    def call_helper(self, node, hint: str, allow_tuple: bool) -> str:
        name = node.func.id
        fn = self.m.fns[name]
        if len(node.args) != len(fn.args.args):
            raise LoweringError(f"{self.where(node)}: {name} takes {len(fn.args.args)} arguments")
        if self.m.arity(name) != 1 and not allow_tuple:
            raise LoweringError(f"{self.where(node)}: the tuple {name} returns must be unpacked")
        args = [self.expr(a) for a in node.args]
        argstr = ", ".join(f"{self.T} {a}" for a in args)
        return self.inst(hint, f"call {self.m.ret_type(name)} {ir_ref('@', self.m.llnames[name])}({argstr})")

    def call_intrinsic(self, base: str, args: list[str], hint: str) -> str:
        fn = self.m.intrinsic(base, len(args))
        argstr = ", ".join(f"{self.T} {a}" for a in args)
        return self.inst(hint, f"call {self.T} {fn}({argstr})")

    def call_libm(self, fname: str, args: list[str], hint: str | None) -> str:
        sym, attr = self.m.libm(fname, len(args))
        argstr = ", ".join(f"{self.T} {a}" for a in args)
        return self.inst(hint or fname, f"call {self.T} {sym}({argstr}){attr}")

    def builtin(self, name: str, node, hint) -> str:
        T = self.T
        if name == "abs":
            (a,) = self.nargs(node, 1)
            return self.call_intrinsic("fabs", [self.expr(a)], hint or "abs")
        if name in ("min", "max"):
            if len(node.args) < 2:
                raise LoweringError(f"{self.where(node)}: {name} of fewer than two numbers")
            pred = "olt" if name == "min" else "ogt"
            best = self.expr(node.args[0])
            for k, arg in enumerate(node.args[1:]):
                b = self.expr(arg)
                c = self.inst(name + ".cmp", f"fcmp {pred} {T} {b}, {best}")
                last = k == len(node.args) - 2
                best = self.inst((hint or name) if last else name, f"select i1 {c}, {T} {b}, {T} {best}")
            return best
        if name == "float":
            (a,) = self.nargs(node, 1)
            if isinstance(a, gast.Constant) and isinstance(a.value, str):
                return fconst(float(a.value), self.ty)
            return self.expr(a, hint)
        if name == "int":
            (a,) = self.nargs(node, 1)
            return self.call_intrinsic("trunc", [self.expr(a)], hint or "int")
        if name == "round":
            (a,) = self.nargs(node, 1)
            return self.call_intrinsic("roundeven", [self.expr(a)], hint or "round")
        raise BackendUnavailableError(
            f"the llvm backend has no implementation of {name}() (in {self.where(node)})",
            hint="use the python backend for this kernel")

    def math(self, name: str, node, hint) -> str:
        T = self.T
        if name in INTRINSIC1:
            (a,) = self.nargs(node, 1)
            return self.call_intrinsic(INTRINSIC1[name], [self.expr(a)], hint or name)
        if name == "copysign":
            a, b = self.nargs(node, 2)
            return self.call_intrinsic("copysign", [self.expr(a), self.expr(b)], hint or name)
        if name == "sign":
            (a,) = self.nargs(node, 1)
            x = self.expr(a)
            pos = self.inst("sign.pos", f"fcmp ogt {T} {x}, 0.0")
            neg = self.inst("sign.neg", f"fcmp olt {T} {x}, 0.0")
            s = self.inst("sign.lo", f"select i1 {neg}, {T} -1.0, {T} {x}")
            return self.inst(hint or "sign", f"select i1 {pos}, {T} 1.0, {T} {s}")
        if name in ("maximum", "minimum"):
            # numpy's: x when it wins or is NaN, else y (so NaN if either is; y on a tie)
            a, b = self.nargs(node, 2)
            x, y = self.expr(a), self.expr(b)
            wins = self.inst(name + ".wins", f"fcmp {'ogt' if name == 'maximum' else 'olt'} {T} {x}, {y}")
            nan = self.inst(name + ".nan", f"fcmp uno {T} {x}, 0.0")
            pick = self.inst(name + ".pick", f"or i1 {wins}, {nan}")
            return self.inst(hint or name, f"select i1 {pick}, {T} {x}, {T} {y}")
        if name == "square":
            (a,) = self.nargs(node, 1)
            x = self.expr(a)
            return self.inst(hint or "square", f"fmul {T} {x}, {x}")
        if name == "reciprocal":
            (a,) = self.nargs(node, 1)
            return self.inst(hint or "reciprocal", f"fdiv {T} 1.0, {self.expr(a)}")
        if name == "fmod":
            a, b = self.nargs(node, 2)
            x, y = self.expr(a), self.expr(b)
            return self.inst(hint or "fmod", f"frem {T} {x}, {y}")
        if name in LIBM1:
            (a,) = self.nargs(node, 1)
            return self.call_libm(name, [self.expr(a)], hint)
        if name in LIBM_VALUE_ONLY:
            (a,) = self.nargs(node, 1)
            return self.call_libm(LIBM_VALUE_ONLY[name], [self.expr(a)], hint)
        if name in LIBM2 and name != "pow":
            a, b = self.nargs(node, 2)
            return self.call_libm(name, [self.expr(a), self.expr(b)], hint)
        if name == "pow":
            a, b = self.nargs(node, 2)
            return self.call_libm("pow", [self.expr(a), self.expr(b)], hint)
        raise BackendUnavailableError(
            f"the llvm backend has no implementation of math.{name} (in {self.where(node)})",
            hint="a rule registered with s2sad.defrule runs on the python backend only")

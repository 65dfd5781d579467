"""The core scalar language -> CUDA C `__device__` functions (one function's text at a time).

`function_text` prints one function of a `KernelModule`: a function whose returns are
tuples returns a small struct `<fn>_ret { T r0, r1, ...; }`; every local is declared at
the top, initialised to zero. The semantics are Python's, as codegen/cuda.py's docstring
("Math") lists them: `IfExp` and the right operand of `and`/`or` are evaluated only when
chosen, `//`, `%`, `min`, `max`, `round` and `int` as Python has them, `maximum` and
`minimum` as numpy has them (the s2sad_ helpers of `HELPERS`, emitted once per module
for the ones its functions use). Anything outside the core language raises a located
BackendUnavailableError, never writes wrong C.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import gast

from ..errors import BackendUnavailableError, S2SADError
from ..kernel import KernelModule
from ..kernel_text import unparse
from .cuda_abi import BUILTIN_CALLS, MATH_CALLS, mangle

# C precedence levels (higher binds tighter)
_PRIMARY, _UNARY, _MUL, _ADD, _REL, _EQ, _LAND, _LOR, _COND = 16, 14, 13, 12, 10, 9, 5, 4, 3
_BINOPS = {gast.Add: ("+", _ADD), gast.Sub: ("-", _ADD), gast.Mult: ("*", _MUL), gast.Div: ("/", _MUL)}
_CMPOPS = {gast.Lt: ("<", _REL), gast.LtE: ("<=", _REL), gast.Gt: (">", _REL),
           gast.GtE: (">=", _REL), gast.Eq: ("==", _EQ), gast.NotEq: ("!=", _EQ)}


def _par(text_prec: tuple[str, int], prec: int) -> str:
    text, p = text_prec
    return text if p >= prec else f"({text})"


class _Ctx:
    """Lowering state of one function: T, names, temporaries, used s2sad_ helpers."""

    def __init__(self, T: str, sfx: str, fnames: dict[str, str], tuple_fns: dict[str, int],
                 helpers: set[str]):
        self.T, self.sfx = T, sfx
        self.fnames = fnames          # python function name -> C name
        self.tuple_fns = tuple_fns    # C name of tuple-returning functions -> arity
        self.helpers = helpers        # s2sad_ helpers used (shared across the module)
        self.names: dict[str, str] = {}
        self.taken: set[str] = set(fnames.values()) | {c + "_ret" for c in tuple_fns}
        self.ntemp = 0

    def local(self, name: str) -> str:
        if name not in self.names:
            self.names[name] = mangle(name, self.taken)
            self.taken.add(self.names[name])
        return self.names[name]

    def temp(self, stem: str) -> str:
        while True:
            self.ntemp += 1
            t = f"_{stem}{self.ntemp}"
            if t not in self.taken:
                self.taken.add(t)
                return t

    def lit(self, v: float) -> tuple[str, int]:
        v = float(v)
        if v != v:
            return f"(0.0{self.sfx} / 0.0{self.sfx})", _PRIMARY
        if v in (float("inf"), float("-inf")):
            sign = "-" if v < 0 else ""
            return f"({sign}1.0{self.sfx} / 0.0{self.sfx})", _PRIMARY
        text = repr(v) + self.sfx
        return text, (_UNARY if text.startswith("-") else _PRIMARY)

    def math(self, cname: str) -> str:
        if cname.startswith("s2sad_"):
            self.helpers.add(cname)
            return cname
        return cname + self.sfx


def _const_int(node: gast.expr) -> int:
    v = _literal_int(node)
    if v is None:
        raise _unsupported(node, "range step must be a nonzero constant")
    return v


def _literal_int(node: gast.expr) -> int | None:
    """A literal number (signed) as an int, else None."""
    if isinstance(node, gast.Constant) and not isinstance(node.value, str):
        return int(node.value)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        v = _literal_int(node.operand)
        return None if v is None else -v if isinstance(node.op, gast.USub) else v
    return None


def _unsupported(node: Any, what: str) -> S2SADError:
    try:
        text = unparse(node)
    except Exception:  # pragma: no cover - best effort
        text = type(node).__name__
    return BackendUnavailableError(f"the CUDA backend cannot lower `{text}`: {what}",
                                   hint="This is outside the core scalar language (kernel.py); "
                                        "please report it.")


class _Expr:
    """Lowers expressions; statements they need (temporaries for lazy operands) go to `pre`."""

    def __init__(self, ctx: _Ctx):
        self.c = ctx

    # value of an expression, as (C text, precedence)
    def value(self, e: gast.expr, pre: list[str]) -> tuple[str, int]:
        c = self.c
        if isinstance(e, gast.Constant):
            if isinstance(e.value, (bool, int, float)):
                return c.lit(e.value)
            raise _unsupported(e, "only numeric constants")
        if isinstance(e, gast.Name):
            return c.local(e.id), _PRIMARY
        if isinstance(e, gast.BinOp):
            a = self.value(e.left, pre)
            b = self.value(e.right, pre)
            op = type(e.op)
            if op in _BINOPS:
                sym, p = _BINOPS[op]
                return f"{_par(a, p)} {sym} {_par(b, p + 1)}", p
            fn = {gast.Pow: c.math("pow"), gast.FloorDiv: c.math("s2sad_floordiv"),
                  gast.Mod: c.math("s2sad_mod")}.get(op)
            if fn is None:
                raise _unsupported(e, "operator")
            return f"{fn}({a[0]}, {b[0]})", _PRIMARY
        if isinstance(e, gast.UnaryOp):
            if isinstance(e.op, gast.Not):
                cond = self.cond(e.operand, pre)
                return f"{_par(cond, _COND + 1)} ? 0.0{c.sfx} : 1.0{c.sfx}", _COND
            a = self.value(e.operand, pre)
            if isinstance(e.op, gast.UAdd):
                return a
            if isinstance(e.op, gast.USub):
                inner = a[0] if a[1] > _UNARY else f"({a[0]})"
                return f"-{inner}", _UNARY
            raise _unsupported(e, "operator")
        if isinstance(e, gast.Compare):
            cond = self.cond(e, pre)
            return f"{_par(cond, _COND + 1)} ? 1.0{c.sfx} : 0.0{c.sfx}", _COND
        if isinstance(e, gast.BoolOp):
            return self._boolop(e, pre)
        if isinstance(e, gast.IfExp):
            test = self.cond(e.test, pre)
            pb: list[str] = []
            pc: list[str] = []
            b = self.value(e.body, pb)
            o = self.value(e.orelse, pc)
            if not pb and not pc:
                return f"{_par(test, _LAND + 1)} ? {_par(b, _COND + 1)} : {_par(o, _COND + 1)}", _COND
            t = c.temp("t")
            pre.append(f"{c.T} {t};")
            pre.append(f"if ({test[0]}) {{")
            pre.extend("    " + line for line in pb + [f"{t} = {b[0]};"])
            pre.append("} else {")
            pre.extend("    " + line for line in pc + [f"{t} = {o[0]};"])
            pre.append("}")
            return t, _PRIMARY
        if isinstance(e, gast.Call):
            return self._call(e, pre)
        raise _unsupported(e, "expression")

    def _strict_once(self, e: gast.expr, pre: list[str]) -> tuple[str, int]:
        """The value of e as a name or literal, hoisting it into a temporary if needed."""
        v = self.value(e, pre)
        if isinstance(e, (gast.Name, gast.Constant)) or re.fullmatch(r"[A-Za-z_]\w*", v[0]):
            return v
        t = self.c.temp("t")
        pre.append(f"const {self.c.T} {t} = {v[0]};")
        return t, _PRIMARY

    def _boolop(self, e: gast.BoolOp, pre: list[str]) -> tuple[str, int]:
        # a and b and c == a and (b and c): fold from the right
        is_and = isinstance(e.op, gast.And)
        first, rest = e.values[0], e.values[1:]
        right: gast.expr = rest[0] if len(rest) == 1 else gast.BoolOp(op=e.op, values=rest)
        a = self._strict_once(first, pre)
        pb: list[str] = []
        b = self.value(right, pb)
        z = f"0.0{self.c.sfx}"
        test = f"{a[0]} != {z}" if is_and else f"{a[0]} == {z}"  # NaN is true, as in Python
        if not pb:
            return f"{test} ? {_par(b, _COND + 1)} : {a[0]}", _COND
        t = self.c.temp("t")
        pre.append(f"{self.c.T} {t} = {a[0]};")
        pre.append(f"if ({test}) {{")
        pre.extend("    " + line for line in pb + [f"{t} = {b[0]};"])
        pre.append("}")
        return t, _PRIMARY

    def _call(self, e: gast.Call, pre: list[str]) -> tuple[str, int]:
        c = self.c
        f = e.func
        if e.keywords:
            raise _unsupported(e, "keyword arguments")
        args = [self.value(a, pre) for a in e.args]
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and f.value.id == "math":
            cname = MATH_CALLS.get(f.attr)
            if cname is None:
                raise BackendUnavailableError(
                    f"math.{f.attr} has no CUDA implementation",
                    hint="A primitive registered with a user rule runs on the python and llvm "
                         "backends only; compute it outside the CUDA kernel.")
            return f"{c.math(cname)}({', '.join(a[0] for a in args)})", _PRIMARY
        if isinstance(f, gast.Name):
            if f.id in c.fnames:
                cname = c.fnames[f.id]
                if cname in c.tuple_fns:
                    raise _unsupported(e, "a helper returning a tuple is only called to unpack it")
                return f"{cname}({', '.join(a[0] for a in args)})", _PRIMARY
            if f.id in BUILTIN_CALLS:
                if f.id == "float":
                    return args[0]
                cname = BUILTIN_CALLS[f.id]
                return f"{c.math(cname)}({', '.join(a[0] for a in args)})", _PRIMARY
        raise _unsupported(e, "call")

    # a C boolean expression for the truth of e (Python truthiness: nonzero, NaN true)
    def cond(self, e: gast.expr, pre: list[str]) -> tuple[str, int]:
        if isinstance(e, gast.Compare):
            if len(e.ops) != 1:
                raise _unsupported(e, "chained comparison")
            sym, p = _CMPOPS[type(e.ops[0])]
            a = self.value(e.left, pre)
            b = self.value(e.comparators[0], pre)
            return f"{_par(a, p)} {sym} {_par(b, p + 1)}", p
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.Not):
            inner = self.cond(e.operand, pre)
            return f"!{_par(inner, _UNARY)}", _UNARY
        if isinstance(e, gast.BoolOp):
            # truth of `a and b` is truth(a) && truth(b); && and || are lazy in C too
            sym, p = ("&&", _LAND) if isinstance(e.op, gast.And) else ("||", _LOR)
            first: list[str] = []
            parts = [self.cond(e.values[0], first)]
            for v in e.values[1:]:
                sub: list[str] = []
                parts.append(self.cond(v, sub))
                if sub:  # needs statements: fall back to the operand-returning value
                    val = self.value(e, pre)
                    return f"{_par(val, _EQ + 1)} != 0.0{self.c.sfx}", _EQ
            pre.extend(first)
            # parenthesize && inside || (as -Wparentheses asks)
            return f" {sym} ".join(_par(x, _LAND + 1) for x in parts), p
        if isinstance(e, gast.Constant) and isinstance(e.value, (bool, int, float)):
            return ("true" if e.value else "false"), _PRIMARY
        v = self.value(e, pre)
        return f"{_par(v, _EQ + 1)} != 0.0{self.c.sfx}", _EQ


class _Stmts:
    def __init__(self, ctx: _Ctx, fn: gast.FunctionDef, ret_struct: str | None):
        self.c = ctx
        self.x = _Expr(ctx)
        self.fn = fn
        self.ret_struct = ret_struct

    def block(self, stmts: Sequence[gast.stmt]) -> list[str]:
        lines: list[str] = []
        for s in stmts:
            lines.extend(self.stmt(s))
        return lines

    def stmt(self, s: gast.stmt) -> list[str]:
        c, x = self.c, self.x
        pre: list[str] = []
        if isinstance(s, gast.Assign):
            if len(s.targets) != 1:
                raise _unsupported(s, "one assignment target")
            tgt = s.targets[0]
            if isinstance(tgt, gast.Name):
                v = x.value(s.value, pre)
                return pre + [f"{c.local(tgt.id)} = {v[0]};"]
            if isinstance(tgt, gast.Tuple):
                call = s.value
                if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Name)
                        and call.func.id in c.fnames and c.fnames[call.func.id] in c.tuple_fns):
                    raise _unsupported(s, "tuple assignment unpacks a tuple-returning helper")
                cname = c.fnames[call.func.id]
                if c.tuple_fns[cname] != len(tgt.elts):
                    raise _unsupported(s, f"{cname} returns {c.tuple_fns[cname]} values")
                args = [x.value(a, pre) for a in call.args]
                t = c.temp("r")
                lines = pre + [f"const {cname}_ret {t} = {cname}({', '.join(a[0] for a in args)});"]
                for k, el in enumerate(tgt.elts):
                    if not isinstance(el, gast.Name):
                        raise _unsupported(s, "unpacking into names")
                    lines.append(f"{c.local(el.id)} = {t}.r{k};")
                return lines
            raise _unsupported(s, "assignment target")
        if isinstance(s, gast.Return):
            if isinstance(s.value, gast.Tuple):
                if self.ret_struct is None:
                    raise _unsupported(s, "returns of one arity")
                vals = [x.value(v, pre) for v in s.value.elts]
                return pre + [f"return {self.ret_struct}{{{', '.join(v[0] for v in vals)}}};"]
            call = s.value
            if (self.ret_struct is not None and isinstance(call, gast.Call)
                    and isinstance(call.func, gast.Name) and call.func.id in c.fnames
                    and c.fnames[call.func.id] in c.tuple_fns):
                # `return helper(...)` of a tuple-returning helper: its fields, repacked
                cname = c.fnames[call.func.id]
                arity = c.tuple_fns[cname]
                if arity != c.tuple_fns[self.ret_struct[:-len("_ret")]]:
                    raise _unsupported(s, "returns of one arity")
                args = [x.value(a, pre) for a in call.args]
                t = c.temp("r")
                fields = ", ".join(f"{t}.r{k}" for k in range(arity))
                return pre + [f"const {cname}_ret {t} = {cname}({', '.join(a[0] for a in args)});",
                              f"return {self.ret_struct}{{{fields}}};"]
            if s.value is None or self.ret_struct is not None:
                raise _unsupported(s, "returns of one arity")
            v = x.value(s.value, pre)
            return pre + [f"return {v[0]};"]
        if isinstance(s, gast.If):
            return self._if(s)
        if isinstance(s, gast.While):
            if s.orelse:
                raise _unsupported(s, "while-else")
            test = x.cond(s.test, pre)
            body = self.block(s.body)
            if not pre:
                return [f"while ({test[0]}) {{", *indent(body), "}"]
            return ["while (true) {", *indent(pre), f"    if (!{_par(test, _UNARY)}) break;",
                    *indent(body), "}"]
        if isinstance(s, gast.For):
            return self._for(s)
        if isinstance(s, gast.Break):
            return ["break;"]
        if isinstance(s, gast.Continue):
            return ["continue;"]
        if isinstance(s, gast.Pass):
            return []
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant):
            return []  # docstring
        raise _unsupported(s, "statement")

    def _if(self, s: gast.If) -> list[str]:
        pre: list[str] = []
        test = self.x.cond(s.test, pre)
        lines = pre + [f"if ({test[0]}) {{", *indent(self.block(s.body))]
        orelse = s.orelse
        while orelse:
            if len(orelse) == 1 and isinstance(orelse[0], gast.If):
                sub: list[str] = []
                t2 = self.x.cond(orelse[0].test, sub)
                if not sub:
                    lines += [f"}} else if ({t2[0]}) {{", *indent(self.block(orelse[0].body))]
                    orelse = orelse[0].orelse
                    continue
            lines += ["} else {", *indent(self.block(orelse))]
            break
        lines.append("}")
        return lines

    def _for(self, s: gast.For) -> list[str]:
        c, x = self.c, self.x
        it = s.iter
        if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range"
                and len(it.args) == 3 and isinstance(s.target, gast.Name)) or s.orelse:
            raise _unsupported(s, "for loops are `for name in range(start, stop, step)`")
        step = _const_int(it.args[2])
        if step == 0:
            raise _unsupported(s, "range step must be nonzero")
        pre: list[str] = []

        def bound(e: gast.expr, stem: str) -> str:
            if isinstance(e, gast.Constant) and isinstance(e.value, int):
                return str(int(e.value))
            if _literal_int(e) is not None:
                return str(_literal_int(e))
            v = x.value(e, pre)
            t = c.temp(stem)
            pre.append(f"const long long {t} = (long long)({v[0]});")
            return t

        start = bound(it.args[0], "start")
        stop = bound(it.args[1], "stop")
        k = c.temp("k")
        target = c.local(s.target.id)
        cmp = "<" if step > 0 else ">"
        inc = f"++{k}" if step == 1 else (f"--{k}" if step == -1 else f"{k} += {step}")
        return pre + [f"for (long long {k} = {start}; {k} {cmp} {stop}; {inc}) {{",
                      f"    {target} = ({c.T}){k};", *indent(self.block(s.body)), "}"]


def function_text(kmod: KernelModule, name: str, fnames: dict[str, str], tuple_fns: dict[str, int],
                  helpers: set[str], T: str, sfx: str) -> str:
    """The `__device__` definition of `kmod.functions[name]` (its origin as a comment
    above it); the s2sad_ helpers it calls are added to `helpers`."""
    fn = kmod.functions[name]
    ctx = _Ctx(T, sfx, fnames, tuple_fns, helpers)
    cname = fnames[name]
    ret_struct = (cname + "_ret") if cname in tuple_fns else None
    params = [ctx.local(a.id) for a in fn.args.args]
    locals_ = [ctx.local(v) for v in _assigned(fn)]
    body = _Stmts(ctx, fn, ret_struct).block(fn.body)
    head = []
    origin = kmod.origins.get(name)
    if origin:
        head += [f"// {line}" for line in origin.splitlines()]
    if ret_struct:
        fields = ", ".join(f"r{k}" for k in range(tuple_fns[cname]))
        head.append(f"struct {ret_struct} {{ {T} {fields}; }};")
        head.append("")
    rtype = ret_struct or T
    decl = [f"__device__ {rtype} {cname}({', '.join(f'{T} {p}' for p in params)})", "{"]
    if locals_:
        decl += indent(_wrap(f"{T} ", [f"{v} = 0.0{sfx}" for v in locals_], ";"))
    return "\n".join(head + decl + indent(body) + ["}"])


def _wrap(head: str, items: list[str], end: str, width: int = 96) -> list[str]:
    """`head item, item, ...end` broken into lines of at most `width` characters."""
    lines: list[str] = []
    cur = head
    for k, item in enumerate(items):
        piece = item + (end if k + 1 == len(items) else ",")
        if cur.strip() and len(cur) + 1 + len(piece) > width and cur != head:
            lines.append(cur)
            cur = " " * len(head) + piece
        else:
            cur = cur + ("" if cur == head else " ") + piece
    lines.append(cur)
    return lines


def indent(lines: list[str], n: int = 1) -> list[str]:
    return [("    " * n + line) if line else line for line in lines]


def _assigned(fn: gast.FunctionDef) -> list[str]:
    names: list[str] = []
    for node in gast.walk(fn):
        if isinstance(node, gast.Assign):
            for t in node.targets:
                elts = t.elts if isinstance(t, gast.Tuple) else [t]
                names += [el.id for el in elts if isinstance(el, gast.Name)]
        elif isinstance(node, gast.For) and isinstance(node.target, gast.Name):
            names.append(node.target.id)
    params = {a.id for a in fn.args.args}
    out: list[str] = []
    for n in names:
        if n not in params and n not in out:
            out.append(n)
    return out




def _calls(fn: gast.FunctionDef, names: set[str]) -> list[str]:
    out = []
    for node in gast.walk(fn):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id in names:
            if node.func.id not in out:
                out.append(node.func.id)
    return out


def call_order(kmod: KernelModule, roots: list[str]) -> list[str]:
    """Functions reachable from roots, callees before callers (dict order otherwise)."""
    names = set(kmod.functions)
    done: list[str] = []

    def visit(n: str, stack: tuple[str, ...]) -> None:
        if n in done:
            return
        if n in stack:
            raise BackendUnavailableError(f"kernel function {n!r} is recursive")
        for m in _calls(kmod.functions[n], names):
            visit(m, stack + (n,))
        done.append(n)

    for r in roots:
        visit(r, ())
    return done


HELPERS = {
    "s2sad_floordiv": """\
// Python's float floor division (CPython's float_floor_div; x // 0 is x / 0, as in numpy)
__device__ inline T s2sad_floordiv(T a, T b)
{
    if (b == 0.0S) return a / b;
    T m = fmodF(a, b);
    T d = (a - m) / b;
    if (m != 0.0S) {
        if ((b < 0.0S) != (m < 0.0S)) d -= 1.0S;
    }
    if (d != 0.0S) {
        T f = floorF(d);
        if (d - f > 0.5S) f += 1.0S;
        return f;
    }
    return copysignF(0.0S, a / b);
}""",
    "s2sad_mod": """\
// Python's float modulo: the result has the divisor's sign
__device__ inline T s2sad_mod(T a, T b)
{
    T m = fmodF(a, b);
    if (m != 0.0S) {
        if ((b < 0.0S) != (m < 0.0S)) m += b;
        return m;
    }
    return copysignF(0.0S, b);
}""",
    "s2sad_min": """\
// Python's min(a, b): a unless b < a
__device__ inline T s2sad_min(T a, T b) { return b < a ? b : a; }""",
    "s2sad_max": """\
// Python's max(a, b): a unless b > a
__device__ inline T s2sad_max(T a, T b) { return b > a ? b : a; }""",
    "s2sad_maximum": """\
// numpy's maximum(a, b): a if it wins or is NaN, else b (NaN if either is; b on a tie)
__device__ inline T s2sad_maximum(T a, T b) { return (a > b || a != a) ? a : b; }""",
    "s2sad_minimum": """\
// numpy's minimum(a, b): a if it wins or is NaN, else b
__device__ inline T s2sad_minimum(T a, T b) { return (a < b || a != a) ? a : b; }""",
    "s2sad_sign": """\
// sign(x): -1, +1, or x itself for +-0 and NaN
__device__ inline T s2sad_sign(T x) { return (x != x || x == 0.0S) ? x : copysignF(1.0S, x); }""",
    "s2sad_square": """\
__device__ inline T s2sad_square(T x) { return x * x; }""",
    "s2sad_reciprocal": """\
__device__ inline T s2sad_reciprocal(T x) { return 1.0S / x; }""",
}


def helper_text(text: str, T: str, sfx: str) -> str:
    text = re.sub(r"\bT\b", T, text)
    text = re.sub(r"(\w+)F\(", lambda m: m.group(1) + sfx + "(", text)
    return re.sub(r"(\d\.\d+)S\b", lambda m: m.group(1) + sfx, text)

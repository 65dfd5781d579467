"""Kernel -> LLVM IR text: the scalar functions of a `KernelModule`.

`ModuleWriter.render` prints, deterministically and without consulting the host, a module
holding the scalar functions a driver needs (entry, dual entry, helpers) as internal
`alwaysinline` functions, and the driver (whose C ABI `kernel.py` defines) that
`llvm_drivers` writes; `llvm_drivers.lower_module` is the entry point. Locals are
allocas in the entry block (mem2reg promotes them); values and blocks are named after
the user's variables. `llvm_jit` optimises and JIT-compiles the text.

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
import numpy as np

from ..errors import BackendUnavailableError
from ..kernel import ArityError, KernelModule, LoopSpec, ScanSpec, return_arity
from . import vecmath


class LoweringError(ValueError):
    """The kernel is outside the core scalar language (a bug in the passes)."""


# ---------------------------------------------------------------------------------
# types, constants, names

class _Ty:
    def __init__(self, dtype) -> None:
        dt = np.dtype(dtype)
        if dt == np.float64:
            self.name, self.tag, self.bits, self.libm = "double", "f64", 64, ""
        elif dt == np.float32:
            self.name, self.tag, self.bits, self.libm = "float", "f32", 32, "f"
        else:
            raise TypeError(f"the llvm backend compiles float64 and float32 kernels, not {dt}")
        self.dtype = dt


def fconst(value: float, ty: _Ty) -> str:
    """An LLVM literal of type `ty` for `value` (rounded to float for f32)."""
    v = float(value)
    if ty.bits == 32:
        with np.errstate(over="ignore"):
            v = float(np.float32(v))
    return vecmath.double_literal(v)


def ir_ref(sigil: str, name: str) -> str:
    """`%name` or `@name`; names come from `_sanitize`, so they never need quoting."""
    return sigil + name


def _sanitize(base: str) -> str:
    """A plain LLVM identifier (letters, digits, _ . $; no leading digit): other characters,
    such as those of non-ASCII Python names, become `_<hex code>`."""
    out = re.sub(r"[^A-Za-z0-9_.$]", lambda c: "_%x" % ord(c.group()), base) or "v"
    if out[0].isdigit():
        out = "_" + out
    return out


def _function_symbol(name: str, taken: set[str], driver: str) -> str:
    """The LLVM symbol of the module's function `name`, distinct from `taken`: `_sanitize`
    maps `hσ` and `h_3c3` alike, so a clash (or a reserved symbol) takes a `.fn` suffix,
    which no sanitized Python name has (they never contain a dot)."""
    base = _sanitize(name)
    if not (base in taken or base in _RESERVED or base == driver or base.startswith(("llvm.", "_ZGV"))):
        return base
    ll, k = base + ".fn", 1
    while ll in taken:
        k += 1
        ll = f"{base}.fn{k}"
    return ll


# ---------------------------------------------------------------------------------
# the math library

# name in the kernel -> how to lower it
_LIBM1 = ("cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
          "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc")
_LIBM2 = ("atan2", "hypot", "pow")
# value-only primitives (rules.VALUE_ONLY) -> the libm function (no libmvec variant: scalar calls)
_LIBM_VALUE_ONLY = {"libm_lgamma": "lgamma", "libm_gamma": "tgamma"}
# libm functions whose libmvec variants kernels call (glibc >= 2.35 has all of them for
# x86_64; each is tested to stay within 4 ulp of libm in tests/test_llvm_backend.py)
LIBMVEC_FUNCTIONS = frozenset(_LIBM1 + _LIBM2)
# s2sad's own versions (vecmath) that kernels call even where libmvec has a variant,
# as (function, T), wired like a libmvec variant (`own_vector_fn`): faster where
# measured (see the module docstring); float keeps libmvec's variants, which run twice
# the lanes of vecmath's float versions (the double one, rounded)
OWN_BEFORE_LIBMVEC = frozenset({("tanh", "double"), ("exp", "double"), ("log", "double")})
# glibc's x86_64 vector ABI: ISA letter -> register width in bits (b: SSE4, d: AVX2, e: AVX-512)
VECTOR_ISA_BITS = {"b": 128, "d": 256, "e": 512}
ALL_VECTOR_ISAS = ("b", "d", "e")

_INTRINSIC1 = {"fabs": "fabs", "sqrt": "sqrt", "floor": "floor", "ceil": "ceil", "trunc": "trunc"}
# C names a kernel's own function must not take
_RESERVED = set(_LIBM1 + _LIBM2) | set(_LIBM_VALUE_ONLY.values()) | {"lgamma_r", "gamma", "signgam", "fmod", "fabs", "sqrt", "floor", "ceil", "trunc", "round",
                                     "copysign", "roundeven", "memset", "memcpy", "memmove",
                                     "abort", "malloc", "free", "ldexp", "frexp", "sincos"}
_RESERVED |= {n + "f" for n in list(_RESERVED)}

_BINOPS = {gast.Add: ("fadd", "add"), gast.Sub: ("fsub", "sub"), gast.Mult: ("fmul", "mul"),
           gast.Div: ("fdiv", "div")}
_FCMP = {gast.Lt: ("olt", "lt"), gast.LtE: ("ole", "le"), gast.Gt: ("ogt", "gt"),
         gast.GtE: ("oge", "ge"), gast.Eq: ("oeq", "eq"), gast.NotEq: ("une", "ne")}
_MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf, "nan": math.nan}


def _const_value(node) -> float | None:
    """The value of a literal (possibly signed) constant expression, else None."""
    if isinstance(node, gast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        v = _const_value(node.operand)
        if v is not None:
            return -v if isinstance(node.op, gast.USub) else v
    return None


def _walk_stmts(body):
    for s in body:
        yield s
        for field in ("body", "orelse"):
            yield from _walk_stmts(getattr(s, field, []) or [])


# ---------------------------------------------------------------------------------
# a function body under construction

class Body:
    """Blocks of instructions with unique names; the parts functions and drivers share."""

    def __init__(self, ty: _Ty) -> None:
        self.ty = ty
        self.T = ty.name
        self.counters: dict[str, int] = {}
        self.used: set[str] = set()
        self.blocks: list[tuple[str, list[str]]] = []
        self.cur: list[str] | None = None
        self.label = ""
        self.preds: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        base = _sanitize(base)
        if base not in self.used:
            self.used.add(base)
            return base
        k = self.counters.get(base, 0)
        while True:
            k += 1
            name = f"{base}.{k}"
            if name not in self.used:
                self.counters[base] = k
                self.used.add(name)
                return name

    def local(self, base: str) -> str:
        return ir_ref("%", self.fresh(base))

    def new_block(self, base: str) -> str:
        name = self.fresh(base)
        self.preds.setdefault(name, 0)
        return name

    def start(self, label: str) -> None:
        assert self.cur is None, "previous block not terminated"
        self.cur = []
        self.label = label
        self.blocks.append((label, self.cur))

    def emit(self, text: str) -> None:
        assert self.cur is not None, "emitting into a terminated block"
        self.cur.append("  " + text)

    def inst(self, hint: str, text: str) -> str:
        ref = self.local(hint)
        self.emit(f"{ref} = {text}")
        return ref

    def terminate(self, text: str, *targets: str) -> None:
        self.emit(text)
        for t in targets:
            self.preds[t] = self.preds.get(t, 0) + 1
        self.cur = None

    def br(self, target: str) -> None:
        self.terminate(f"br label {ir_ref('%', target)}", target)

    def cbr(self, cond: str, then: str, other: str) -> None:
        self.terminate(f"br i1 {cond}, label {ir_ref('%', then)}, label {ir_ref('%', other)}", then, other)

    def render_blocks(self) -> str:
        out = []
        for k, (label, lines) in enumerate(self.blocks):
            if k:
                out.append("")
            out.append(f"{label}:")
            out.extend(lines)
        return "\n".join(out)


# ---------------------------------------------------------------------------------
# the module

class ModuleWriter:
    def __init__(self, kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype, vector_isas: Iterable[str],
                 available: Callable[[str], bool] | None, own_math: bool = True,
                 vector_bits: int | None = None) -> None:
        self.kmod = kmod
        self.spec = spec
        self.ty = _Ty(dtype)
        self.isas = tuple(i for i in ALL_VECTOR_ISAS if i in tuple(vector_isas))
        self.available = available or (lambda name: True)
        self.own_math = own_math
        # the width of s2sad's own vector functions: the widest libmvec ISA's, else the host's
        self.own_vector_bits = max((VECTOR_ISA_BITS[i] for i in self.isas), default=vector_bits or 0)
        self.decls: dict[str, str] = {}          # symbol -> declare line
        self.vector_decls: dict[str, str] = {}   # vector variant -> declare line
        self.lane_fns: dict[str, str] = {}       # libmvec.* function -> definition
        self.narrow_fns: list[str] = []          # those only call-site attributes name
        self.vector_bits = 0                     # the width of the widest vector variant named
        self.math: dict[str, tuple[str, str]] = {}   # libm symbol -> (callee, call-site attribute)
        self.vfabi_text: dict[int, str] = {}     # attribute group number -> text
        self.runtime: dict[str, str] = {}        # s2sad.* helper -> definition
        self.arity_memo: dict[str, int] = {}
        self.extra_roots: tuple[str, ...] = ()   # functions only the driver calls (a scan's split)
        self.driver = driver_name(kmod, spec, dtype)
        self.fns = {fn.name: fn for fn in kmod.functions.values()}
        self.llnames: dict[str, str] = {}
        taken: set[str] = set()
        for name in self.fns:
            ll = _function_symbol(name, taken, self.driver)
            taken.add(ll)
            self.llnames[name] = ll

    # -- declarations

    def intrinsic(self, base: str, nargs: int) -> str:
        sym = f"llvm.{base}.{self.ty.tag}"
        if sym not in self.decls:
            args = ", ".join([self.ty.name] * nargs)
            self.decls[sym] = f"declare {self.ty.name} @{sym}({args})"
        return "@" + sym

    def libm(self, fname: str, nargs: int) -> tuple[str, str]:
        """What a call of math.`fname` calls, and the call-site attribute suffix (" #N" or ""):

        - where glibc's libmvec has a variant of it (the widest of `vector_isas` that
          `available` allows: one routine per function and process), `@libmvec.<f>`, lane
          0 of that variant on a splat, with the attribute that lets the loop vectoriser
          call the variant itself (`lane_fn`): every element gets the same result, in a
          vector body, a vector or scalar remainder, in any driver;
        - else, with `own_math`, s2sad's own vectorisable version (`vecmath`) if it has one;
        - else libm's scalar function (a loop that calls it stays scalar).
        """
        sym = fname + self.ty.libm
        if sym not in self.math:
            variant = self.libmvec_variant(fname, sym, nargs)
            own_vector = (self.own_math and self.own_vector_bits and self.ty.name == "double"
                          and fname in vecmath.VECTOR_FUNCTIONS
                          and (variant is None or (fname, "double") in OWN_BEFORE_LIBMVEC))
            if own_vector:
                self.math[sym] = self.own_vector_fn(fname, sym)
            elif variant is not None:
                self.math[sym] = self.lane_fn(sym, nargs, *variant)
            elif self.own_math and fname in vecmath.FUNCTIONS:
                symbol, defs, decls = vecmath.define(fname, self.ty.name)
                self.runtime.update(defs)
                for name, line in decls:
                    self.decls.setdefault(name, line)
                self.math[sym] = ("@" + symbol, "")
            else:
                T = self.ty.name
                self.decls[sym] = f"declare {T} @{sym}({', '.join([T] * nargs)}) #2"
                self.math[sym] = ("@" + sym, "")
        return self.math[sym]

    def libmvec_variant(self, fname: str, sym: str, nargs: int) -> tuple[str, int] | None:
        """(ISA letter, lanes) of the widest libmvec variant of `sym` there is, or None."""
        if fname not in LIBMVEC_FUNCTIONS:
            return None
        for isa in reversed(self.isas):
            width = VECTOR_ISA_BITS[isa] // self.ty.bits
            if self.available(f"_ZGV{isa}N{width}{'v' * nargs}_{sym}"):
                return isa, width
        return None

    def own_vector_fn(self, fname: str, sym: str) -> tuple[str, str]:
        """s2sad's own `fname` (vecmath) wired like a libmvec variant (`lane_fn`): its
        vector version on the widest lanes of `isas`, defined in the module, `@vecmath.<sym>`
        lane 0 of it. The vectoriser calls the vector version instead of widening an
        inlined body (which LLVM's vectoriser can take exponential time to analyse)."""
        width = self.own_vector_bits // self.ty.bits
        vname, text, decls = vecmath.define_vector(fname, width)
        # kept (llvm.compiler.used) for the vectoriser's calls, and inlined into them after
        # the vectoriser has run (alwaysinline: llvm_jit.optimize's last pass)
        self.runtime[vname] = text
        self.narrow_fns.append(vname)
        for name, line in decls:
            self.decls.setdefault(name, line)
        return self.lane_fn(sym, 1, "_LLVM_", width, vname=vname, prefix="vecmath")

    def lane_fn(self, sym: str, nargs: int, isa: str, width: int, vname: str | None = None,
                prefix: str = "libmvec") -> tuple[str, str]:
        """`@libmvec.<sym>`: lane 0 of the libmvec variant on a splat of the arguments
        (noinline), and the attribute that maps it to the variant, and to the same
        variant on fewer lanes for the vectoriser's remainder loops (`@libmvec.<sym>.v4`).
        With `vname`, the vector function is that one, defined in the module (`prefix`
        names the lane functions)."""
        vt = f"<{width} x {self.ty.name}>"
        if vname is None:
            vname = f"_ZGV{isa}N{width}{'v' * nargs}_{sym}"
            self.vector_decls[vname] = f"declare {vt} @{vname}({', '.join([vt] * nargs)}) #2"
        self.vector_bits = max(self.vector_bits, width * self.ty.bits)
        fn = f"{prefix}.{sym}"
        mappings = [f"_ZGV{isa}N{width}{'v' * nargs}_{fn}({vname})"]
        self.lane_fns[fn] = self.lanes_of(sym, nargs, vname, width, 1, prefix)
        # "used", so interprocedural passes never rewrite its signature: with a constant
        # argument they would drop the parameter, and the vectoriser, still mapping the
        # call to the variant by the attribute, would then emit invalid IR
        self.narrow_fns.append(fn)
        lanes = width // 2
        while lanes > 1:
            self.lane_fns[f"{fn}.v{lanes}"] = self.lanes_of(sym, nargs, vname, width, lanes, prefix)
            self.narrow_fns.append(f"{fn}.v{lanes}")
            mappings.append(f"_ZGV_LLVM_N{lanes}{'v' * nargs}_{fn}({fn}.v{lanes})")
            lanes //= 2
        group = 4 + len(self.vfabi_text)
        self.vfabi_text[group] = f'"vector-function-abi-variant"="{",".join(mappings)}"'
        return "@" + fn, f" #{group}"

    def lanes_of(self, sym: str, nargs: int, vname: str, width: int, lanes: int, prefix: str = "libmvec") -> str:
        """The definition of `@libmvec.<sym>` (lanes == 1) or `@libmvec.<sym>.v<lanes>`:
        the variant `vname` on the arguments repeated to `width` lanes, its first lanes."""
        T = self.ty.name
        wide, ty = f"<{width} x {T}>", (T if lanes == 1 else f"<{lanes} x {T}>")

        def mask(indices) -> str:
            return f"<{len(indices)} x i32> <" + ", ".join(f"i32 {k}" for k in indices) + ">"

        params = ("x",) if nargs == 1 else ("a", "b")
        body = []
        for p in params:
            if lanes == 1:      # a splat
                body += [f"%{p}.v = insertelement {wide} poison, {T} %{p}, i64 0",
                         f"%{p}.wide = shufflevector {wide} %{p}.v, {wide} poison, "
                         f"<{width} x i32> zeroinitializer"]
            else:               # the lanes, repeated
                body.append(f"%{p}.wide = shufflevector {ty} %{p}, {ty} poison, "
                            f"{mask([k % lanes for k in range(width)])}")
        body.append(f"%{sym}.wide = call {wide} @{vname}({', '.join(f'{wide} %{p}.wide' for p in params)})")
        if lanes == 1:
            name = f"{prefix}.{sym}"
            head = f"{sym} as {prefix} computes it: lane 0 of {vname} on a splat"
            body.append(f"%{sym} = extractelement {wide} %{sym}.wide, i64 0")
        else:
            name = f"{prefix}.{sym}.v{lanes}"
            head = f"{lanes} lanes of the same: the vectoriser's remainder loops"
            body.append(f"%{sym} = shufflevector {wide} %{sym}.wide, {wide} poison, {mask(list(range(lanes)))}")
        return (f"; {head}\ndefine internal {ty} @{name}({', '.join(f'{ty} %{p}' for p in params)}) #3 {{\n"
                "entry:\n" + "".join(f"  {line}\n" for line in body) + f"  ret {ty} %{sym}\n}}")

    def runtime_helper(self, which: str) -> str:
        """Python's float `//` or `%` as an internal function; returns its symbol."""
        T = self.ty.name
        sym = f"s2sad.{which}"
        if sym in self.runtime:
            return "@" + sym
        cs = self.intrinsic("copysign", 2)
        if which == "mod":
            body = f"""\
; Python's a % b: fmod, moved to the sign of b; a zero result takes b's sign
define internal {T} @s2sad.mod({T} %a, {T} %b) #0 {{
entry:
  %fmod = frem {T} %a, %b
  %nonzero = fcmp une {T} %fmod, 0.0
  %b.neg = fcmp olt {T} %b, 0.0
  %fmod.neg = fcmp olt {T} %fmod, 0.0
  %signs.differ = xor i1 %b.neg, %fmod.neg
  %adjust = and i1 %nonzero, %signs.differ
  %shifted = fadd {T} %fmod, %b
  %mod = select i1 %adjust, {T} %shifted, {T} %fmod
  %zero = call {T} {cs}({T} 0.0, {T} %b)
  %result = select i1 %nonzero, {T} %mod, {T} %zero
  ret {T} %result
}}"""
        else:
            fl = self.intrinsic("floor", 1)
            body = f"""\
; Python's a // b (CPython's float_floor_div); a / b when b == 0 (numpy's answer)
define internal {T} @s2sad.floordiv({T} %a, {T} %b) #0 {{
entry:
  %fmod = frem {T} %a, %b
  %diff = fsub {T} %a, %fmod
  %div = fdiv {T} %diff, %b
  %nonzero = fcmp une {T} %fmod, 0.0
  %b.neg = fcmp olt {T} %b, 0.0
  %fmod.neg = fcmp olt {T} %fmod, 0.0
  %signs.differ = xor i1 %b.neg, %fmod.neg
  %adjust = and i1 %nonzero, %signs.differ
  %div.down = fsub {T} %div, 1.0
  %div.1 = select i1 %adjust, {T} %div.down, {T} %div
  %floor = call {T} {fl}({T} %div.1)
  %frac = fsub {T} %div.1, %floor
  %round.up = fcmp ogt {T} %frac, 0.5
  %floor.up = fadd {T} %floor, 1.0
  %floordiv = select i1 %round.up, {T} %floor.up, {T} %floor
  %quot = fdiv {T} %a, %b
  %zero = call {T} {cs}({T} 0.0, {T} %quot)
  %div.nonzero = fcmp une {T} %div.1, 0.0
  %result = select i1 %div.nonzero, {T} %floordiv, {T} %zero
  %b.zero = fcmp oeq {T} %b, 0.0
  %result.1 = select i1 %b.zero, {T} %quot, {T} %result
  ret {T} %result.1
}}"""
        self.runtime[sym] = body
        return "@" + sym

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
        bodies = [_FnEmitter(self, self.fns[n]).render() for n in names]
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
        # the driver: with libmvec variants, the vectoriser works at their width
        width = f' "prefer-vector-width"="{self.vector_bits}"' if self.vector_bits else ""
        attrs = ["attributes #0 = { alwaysinline nounwind }", f"attributes #1 = {{ nounwind{width} }}"]
        if any(line.endswith("#2") for line in [*self.decls.values(), *self.vector_decls.values()]):
            attrs.append("attributes #2 = { nounwind willreturn memory(none) }")
        if self.lane_fns:
            attrs.append("attributes #3 = { noinline nounwind willreturn memory(none) }")
        for group, text in self.vfabi_text.items():
            attrs.append(f"attributes #{group} = {{ {text} }}")
        parts.append("\n".join(attrs))
        return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------
# scalar functions

class _FnEmitter(Body):
    def __init__(self, module: ModuleWriter, fn: gast.FunctionDef) -> None:
        super().__init__(module.ty)
        self.m = module
        self.fn = fn
        self.arity = module.arity(fn.name)
        self.rtype = module.ret_type(fn.name)
        self.vars: dict[str, tuple[str, str]] = {}   # name -> ("ssa"|"ptr", ref)
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
        returns = [s for s in _walk_stmts(fn.body) if isinstance(s, gast.Return)]
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

    def where(self, node) -> str:
        line = getattr(node, "lineno", None)
        return f"{self.fn.name}" + (f" line {line}" if line else "")

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
        step_c = _const_value(args[2])
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
        if op is gast.Pow and _const_value(node.right) == 2.0:
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
        if name in _INTRINSIC1:
            (a,) = self.nargs(node, 1)
            return self.call_intrinsic(_INTRINSIC1[name], [self.expr(a)], hint or name)
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
        if name in _LIBM1:
            (a,) = self.nargs(node, 1)
            return self.call_libm(name, [self.expr(a)], hint)
        if name in _LIBM_VALUE_ONLY:
            (a,) = self.nargs(node, 1)
            return self.call_libm(_LIBM_VALUE_ONLY[name], [self.expr(a)], hint)
        if name in _LIBM2 and name != "pow":
            a, b = self.nargs(node, 2)
            return self.call_libm(name, [self.expr(a), self.expr(b)], hint)
        if name == "pow":
            a, b = self.nargs(node, 2)
            return self.call_libm("pow", [self.expr(a), self.expr(b)], hint)
        raise BackendUnavailableError(
            f"the llvm backend has no implementation of math.{name} (in {self.where(node)})",
            hint="a rule registered with s2sad.defrule runs on the python backend only")


# ---------------------------------------------------------------------------------
# the driver's name (`llvm_drivers` writes the driver)

def driver_name(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype) -> str:
    """The driver's symbol: f"{kmod.name}__{spec.tag()}_{f64|f32}" (made a C identifier)."""
    return _sanitize(f"{kmod.name}__{spec.tag()}_{_Ty(dtype).tag}").replace(".", "_").replace("$", "_")

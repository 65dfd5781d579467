"""The math library of generated LLVM IR: which function a kernel's math call becomes.

A call of math.<f> goes, in this order of preference, to s2sad's own vector function
wired like a libmvec variant (float64 tanh, exp, log: OWN_BEFORE_LIBMVEC), glibc's libmvec
variant (lane 0 of it, with the attribute that lets the vectoriser call the variant),
s2sad's straight-line version (`vecmath`), or libm's scalar function; llvm_lower's
docstring says why. Invariant: whichever is chosen, an element gets the same bits
wherever it falls (vector body, remainder, scalar code), in any driver.
"""
from __future__ import annotations

from typing import Callable, Iterable

from . import vecmath
from .llvm_ir import Ty

# name in the kernel -> how to lower it
LIBM1 = ("cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
          "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc")
LIBM2 = ("atan2", "hypot", "pow")
# value-only primitives (rules.VALUE_ONLY) -> the libm function (no libmvec variant: scalar calls)
LIBM_VALUE_ONLY = {"libm_lgamma": "lgamma", "libm_gamma": "tgamma"}
# libm functions whose libmvec variants kernels call (glibc >= 2.35 has all of them for
# x86_64; each is tested to stay within 4 ulp of libm in tests/test_llvm_backend.py)
LIBMVEC_FUNCTIONS = frozenset(LIBM1 + LIBM2)
# s2sad's own versions (vecmath) that kernels call even where libmvec has a variant,
# as (function, T), wired like a libmvec variant (`own_vector_fn`): faster where
# measured (see the module docstring); float keeps libmvec's variants, which run twice
# the lanes of vecmath's float versions (the double one, rounded)
OWN_BEFORE_LIBMVEC = frozenset({("tanh", "double"), ("exp", "double"), ("log", "double")})
# glibc's x86_64 vector ABI: ISA letter -> register width in bits (b: SSE4, d: AVX2, e: AVX-512)
VECTOR_ISA_BITS = {"b": 128, "d": 256, "e": 512}
ALL_VECTOR_ISAS = ("b", "d", "e")

INTRINSIC1 = {"fabs": "fabs", "sqrt": "sqrt", "floor": "floor", "ceil": "ceil", "trunc": "trunc"}
# C names a kernel's own function must not take
RESERVED_SYMBOLS = set(LIBM1 + LIBM2) | set(LIBM_VALUE_ONLY.values()) | {"lgamma_r", "gamma", "signgam", "fmod", "fabs", "sqrt", "floor", "ceil", "trunc", "round",
                                     "copysign", "roundeven", "memset", "memcpy", "memmove",
                                     "abort", "malloc", "free", "ldexp", "frexp", "sincos"}
RESERVED_SYMBOLS |= {n + "f" for n in list(RESERVED_SYMBOLS)}


class MathDecls:
    """The math a module's functions call, declared or defined once per module: LLVM
    intrinsics, libm functions (through libmvec variants, s2sad's own vector math or
    plain scalar calls, as `libm` chooses), and Python's `//` and `%` (`runtime_helper`).
    `ModuleWriter` renders what is collected here."""

    def __init__(self, ty: Ty, vector_isas: Iterable[str], available: Callable[[str], bool] | None,
                 own_math: bool, vector_bits: int | None) -> None:
        self.ty = ty
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

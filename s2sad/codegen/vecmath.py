"""s2sad's own vector math: exp, expm1, log, log1p, tanh and cbrt as LLVM IR functions.

A call of a libm function keeps a loop scalar. Where glibc's libmvec has no vector
variant to name (no libmvec on this machine, S2SAD_LIBMVEC=0), and for float64 tanh, exp
and log always, `llvm_lower` defines these functions in the module instead of calling
libm: functions of straight-line arithmetic (fma, bit manipulation through bitcasts,
selects; no calls, no branches). The float64 ones (VECTOR_FUNCTIONS) are also written
on vectors (`define_vector`) and called by the loop vectoriser like a libmvec variant,
where the vector width is known; the others are inlined and widened like any other code.
Each is within 4 ulp of glibc's libm over its whole domain, signed zeros, infinities,
NaN, subnormals and the overflow and underflow edges included (tests/test_vecmath.py);
measured against exact results, each errs by less than 1 ulp (glibc's cbrt by up to 3.3).
Being plain IEEE arithmetic, a vector lane and a scalar call give the same bits.

    FUNCTIONS                  the math functions defined here
    define(fname, T) -> (symbol, ((symbol, definition), ...), ((intrinsic, declaration), ...))
    define_vector(fname, lanes) -> (symbol, definition, ((intrinsic, declaration), ...))
                               the double function on <lanes x double> (VECTOR_FUNCTIONS)

float versions evaluate the double one on the widened argument and round once (exact
widening: within 1 ulp; the double one runs at half the lanes).

Algorithms (the classic ones of fdlibm, without its branches):
- exp, expm1: x = n ln2 + r, |r| <= ln2/2, with ln2 in two parts (n ln2_hi is exact);
  expm1(r) = r + r^2 (1/2 + r P(r)), P a degree-9 fit; the sums that decide the last bit
  are exact (Fast2Sum). 2^n is made in the exponent field, in two halves for exp so that
  overflow and gradual underflow happen in the last multiplication.
- log, log1p: x = 2^k m, m in [sqrt(2)/2, sqrt(2)), f = m - 1, s = f / (2 + f),
  log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), R a degree-7 fit; log1p adds the
  rounding error of 1 + x back, (x - (u - 1)) / u.
- tanh: t / (t + 2) with t = expm1(2|x|), |x| clamped to 20, one division: 2|x| = n ln2 + r
  as for expm1 (n in [0, 58]: 2^n is a shift of k's bits and needs no halves), t =
  (2^n - 1) + 2^n (r + r^2 G(r)), G one term shorter than EXPM1_P's, no compensated sums;
  below 0.4, h - h z with h = t/2 (z's rounding errors scaled by h). About 25 operations
  and the division (fdlibm's expm1-based tanh with its corrections was ~55 and the
  division). Measured against exact results it errs by up to 2 ulp (glibc's tanh by up to
  2 as well), against glibc by up to 3 (2 million values below 0.7, its worst stretch).
- cbrt: an estimate from the exponent bits (integer division by 3), a polynomial to 23
  bits, rounded to 23 bits, and one Newton step (FreeBSD's s_cbrt.c).

Inlined bodies are deep expressions that reuse their values (tanh's r feeds eleven
operations). Where one's argument is loop-invariant but stays in a loop the vectoriser
takes on (after a phi of the kernel's control flow, which LICM leaves and VPlan hoists),
LLVM 22 tests it for uniformity by a recursion without memoisation
(vputils::isUniformAcrossVFsAndUFs) that walks every path through the expression, about a
thousand per body, so a few nested bodies put it past any budget. Seen when libmvec mode
used these for float64 tanh, exp and log next to libmvec calls: a random program of
test_broadcasting_shapes with only scalar operands was still compiling after 40 minutes (with
S2SAD_VECMATH=s2sad its other functions are libm calls, the loop stays scalar, and it
compiles in a second). Hence `define_vector`: the same function on vectors of doubles
(each lane exactly the scalar function's operations), which `llvm_lower` wires like a
libmvec variant (float64 tanh, exp and log always; expm1 and log1p where libmvec has no
variant): the vectoriser sees an opaque call and calls the vector version;
`llvm_jit.optimize` inlines it afterwards. (float32 and cbrt are still inlined.)

`python -m s2sad.codegen.vecmath` refits the polynomials (needs mpmath) and prints them.
"""
from __future__ import annotations

import functools
import math
import struct

FUNCTIONS = frozenset({"cbrt", "exp", "expm1", "log", "log1p", "tanh"})
# those `define_vector` writes on vectors too (cbrt's integer steps are written for one lane)
VECTOR_FUNCTIONS = frozenset({"exp", "expm1", "log", "log1p", "tanh"})

# -------------------------------------------------------------------------- constants

LN2_HI = float.fromhex("0x1.62e42feep-1")        # ln 2 to 32 bits: n * LN2_HI is exact
LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")  # ln 2 - LN2_HI
SHIFTER = float.fromhex("0x1.8p52")              # x + SHIFTER - SHIFTER rounds x to an integer
SHIFTER_BITS = 0x4338000000000000                # bits of SHIFTER: bits(SHIFTER + n) - this = n
SQRT_HALF_BITS = 0x3FE6A09E667F3BCD              # bits of sqrt(2)/2

# (e^r - 1 - r - r^2/2) / r^3 on |r| <= 1.02 ln2/2, a Chebyshev fit (error 1e-17), from r^0 up
EXPM1_P = ("0x1.5555555555556p-3", "0x1.5555555555555p-5", "0x1.1111111110871p-7",
           "0x1.6c16c16c16729p-10", "0x1.a01a01a8ba744p-13", "0x1.a01a01a507c0ep-16",
           "0x1.71de0a0471800p-19", "0x1.27e4dfdcad3dep-22", "0x1.af4134720f354p-26",
           "0x1.1f6bc0c6e8122p-29")
# (e^r - 1 - r) / r^2 on |r| <= 1.01 ln2/2, a Chebyshev fit (error 5e-17 relative to
# e^r - 1), from r^0 up: tanh's expm1, one term shorter than EXPM1_P's
TANH_G = ("0x1.0000000000001p-1", "0x1.5555555555556p-3", "0x1.5555555553b6cp-5",
          "0x1.1111111110918p-7", "0x1.6c16c1794e1dcp-10", "0x1.a01a01a83ba17p-13",
          "0x1.a019b621f9d08p-16", "0x1.71de0be2b5e96p-19", "0x1.2894f52583578p-22",
          "0x1.af3ce42b12b24p-26")
TANH_CLAMP = 20.0              # tanh(x) rounds to 1 from 19.07 on
TANH_SMALL = 0.4               # below: h - h z, above: z (see _def_tanh)
# (2 atanh(s) / s - 2) / s^2 as a polynomial in z = s^2, 0 <= z <= 1.01 (3 - 2 sqrt(2))^2
# (error 3e-16), from z^0 up
LOG_R = ("0x1.5555555555558p-1", "0x1.9999999994e76p-2", "0x1.2492492e6dfddp-2",
         "0x1.c71c6247410e3p-3", "0x1.7462e17b4cdd0p-3", "0x1.39f8963ccbdc2p-3",
         "0x1.2b9f7fb3de73fp-3")
# FreeBSD s_cbrt.c: |1/cbrt(x) - P(x)| < 2^-23.5, and the exponent biases
CBRT_P = (1.87595182427177009643, -1.88497979543377169875, 1.621429720105354466140,
          -0.758397934778766047437, 0.145996192886612446982)
CBRT_B1 = 715094163    # (1023 - 1023/3 - 0.03306235651) * 2^20
CBRT_B2 = 696219795    # (1023 - 1023/3 - 54/3 - 0.03306235651) * 2^20


def double_literal(v: float) -> str:
    """An LLVM literal for the double `v`: "0.0", a decimal where one denotes `v` exactly
    (LLVM rejects inexact decimals), else the bits in hex. llvm_lower prints its
    constants with it too."""
    if v == 0.0 and math.copysign(1.0, v) > 0:
        return "0.0"
    if math.isfinite(v) and v != 0.0:
        if v == int(v) and abs(v) < 2.0 ** 53:
            return f"{v:.1f}"
        r = repr(v)
        if "." in r and "e" not in r:
            whole, _, frac = r.partition(".")
            p, q = v.as_integer_ratio()
            if p * 10 ** len(frac) == int(whole + frac) * q:     # r / 10**k == p / q, exactly
                return r
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]


def _lit(v: float | str) -> str:
    """`double_literal` of a number or a hex float string ("0x1.8p52")."""
    return double_literal(float.fromhex(v) if isinstance(v, str) else float(v))


# -------------------------------------------------------------------------- a function body

class _Fn:
    """One function of straight-line double arithmetic, with named values; with `lanes`
    > 1 the same function on vectors of that many doubles (each lane computes exactly
    what the scalar function computes: the same IEEE operations in the same order)."""

    INTRINSICS = {"fma": 3, "fabs": 1, "copysign": 2}

    def __init__(self, symbol: str, params: tuple[str, ...] = ("x",), lanes: int = 1) -> None:
        self.symbol = symbol
        self.params = params
        self.lanes = lanes
        self.result = ""                # the value returned
        self.doc = ""                   # the comment above the definition
        self.lines: list[str] = []
        self.names: set[str] = set(params)
        self.intrinsics: set[str] = set()
        self.D = self.ty("double")

    def ty(self, t: str) -> str:
        """The type of a value that is a `t` per lane."""
        return t if self.lanes == 1 else f"<{self.lanes} x {t}>"

    def __call__(self, hint: str, text: str) -> str:
        name, k = hint, 0
        while name in self.names:
            k += 1
            name = f"{hint}.{k}"
        self.names.add(name)
        self.lines.append(f"  %{name} = {text}")
        return "%" + name

    def comment(self, text: str) -> None:
        self.lines.append(f"  ; {text}")

    # operands: "%name", or a number (floats, hex float strings "0x1.8p52", ints)
    def _op(self, x, t: str = "double") -> str:
        if isinstance(x, str) and x.startswith("%"):
            return x
        lit = _lit(x) if t == "double" else str(int(x))
        return lit if self.lanes == 1 else f"splat ({t} {lit})"

    def _ops(self, *xs) -> list[str]:
        return [self._op(x) for x in xs]

    def add(self, hint, a, b):
        return self(hint, "fadd {} {}, {}".format(self.D, *self._ops(a, b)))

    def sub(self, hint, a, b):
        return self(hint, "fsub {} {}, {}".format(self.D, *self._ops(a, b)))

    def mul(self, hint, a, b):
        return self(hint, "fmul {} {}, {}".format(self.D, *self._ops(a, b)))

    def div(self, hint, a, b):
        return self(hint, "fdiv {} {}, {}".format(self.D, *self._ops(a, b)))

    def neg(self, hint, a):
        return self(hint, f"fneg {self.D} {a}")

    def intrinsic_name(self, fn: str) -> str:
        return f"llvm.{fn}.f64" if self.lanes == 1 else f"llvm.{fn}.v{self.lanes}f64"

    def call(self, hint, fn, *args):
        """An intrinsic (llvm.fma.f64 ...) or another function of this module."""
        if fn in self.INTRINSICS:
            self.intrinsics.add(fn)
            fn = self.intrinsic_name(fn)
        return self(hint, f"call {self.D} @{fn}({', '.join(f'{self.D} ' + a for a in self._ops(*args))})")

    def fma(self, hint, a, b, c):
        return self.call(hint, "fma", a, b, c)

    def horner(self, hint, x, coeffs) -> str:
        """c0 + x (c1 + x (c2 + ...)) by fma, highest degree first."""
        acc = coeffs[-1]
        for c in reversed(coeffs[:-1]):
            acc = self.fma(hint, acc, x, c)
        return acc

    def fcmp(self, hint, pred, a, b):
        return self(hint, "fcmp {} {} {}, {}".format(pred, self.D, *self._ops(a, b)))

    def select(self, hint, cond, a, b, ty="double"):
        return self(hint, f"select {self.ty('i1')} {cond}, {self.ty(ty)} {self._op(a, ty)}, "
                          f"{self.ty(ty)} {self._op(b, ty)}")

    def clamp(self, hint, x, lo, hi):
        """lo <= x <= hi; NaN becomes lo (the caller returns NaN for it)."""
        above = self.fcmp(hint + ".above", "ogt", x, lo)
        x = self.select(hint + ".lo", above, x, lo)
        below = self.fcmp(hint + ".below", "olt", x, hi)
        return self.select(hint, below, x, hi)

    # bits
    def bits(self, hint, a):
        return self(hint, f"bitcast {self.D} {a} to {self.ty('i64')}")

    def double(self, hint, i):
        return self(hint, f"bitcast {self.ty('i64')} {i} to {self.D}")

    def int(self, hint, op, a, b, ty="i64"):
        return self(hint, f"{op} {self.ty(ty)} {self._op(a, ty)}, {self._op(b, ty)}")

    def cast(self, hint, op, a, src: str, dst: str):
        """A conversion (trunc, zext, sitofp...) from `src` to `dst` per lane."""
        return self(hint, f"{op} {self.ty(src)} {a} to {self.ty(dst)}")

    def pow2(self, hint, n):
        """2^n as a double from the i64 n (normal range)."""
        biased = self.int(hint + ".biased", "add", n, 1023)
        return self.double(hint, self.int(hint + ".bits", "shl", biased, 52))

    def render(self, doc: str, ret: str, ty: str = "double") -> str:
        ty = self.ty(ty)
        params = ", ".join(f"{ty} %{p}" for p in self.params)
        body = "\n".join(self.lines)
        head = "".join(f"; {line}\n" if line else ";\n" for line in doc.splitlines())
        return (f"{head}define internal {ty} @{self.symbol}({params}) #0 {{\nentry:\n{body}\n"
                f"  ret {ty} {ret}\n}}")


# -------------------------------------------------------------------------- the functions

def _exp_reduce(f: _Fn, x: str):
    """x = n ln2 + hi - lo, exactly up to lo's rounding; w ~ expm1(r) - r for r = hi - lo.
    Returns (n as i64, hi, lo, w)."""
    k = f.fma("k", x, 1 / math.log(2), SHIFTER)
    nf = f.sub("n.f", k, SHIFTER)
    n = f.int("n", "sub", f.bits("k.bits", k), SHIFTER_BITS)
    hi = f.fma("hi", f.neg("n.neg", nf), LN2_HI, x)
    lo = f.mul("lo", nf, LN2_LO)
    r = f.sub("r", hi, lo)
    p = f.horner("p", r, EXPM1_P)
    q = f.fma("q", r, p, 0.5)
    w = f.mul("w", f.mul("r2", r, r), q)
    return n, hi, lo, w


def _exp_of_r(f: _Fn, hi: str, lo: str, w: str) -> str:
    """e^r = 1 + hi + (w - lo): 1 + hi and its rounding error exactly (Fast2Sum, |hi| < 1)."""
    s = f.add("s", 1.0, hi)
    err = f.add("s.err", f.sub("s.hi", 1.0, s), hi)
    tail = f.add("tail", err, f.sub("w.lo", w, lo))
    return f.add("e.r", s, tail)


def _scale(f: _Fn, y: str, n: str) -> str:
    """y 2^n for n in [-1076, 1024]: two exact halves, so that the second multiplication
    overflows or rounds into the subnormals once."""
    n1 = f.int("n1", "ashr", n, 1)
    n2 = f.int("n2", "sub", n, n1)
    y1 = f.mul("e.1", y, f.pow2("scale1", n1))
    return f.mul("e.x", y1, f.pow2("scale2", n2))


def _def_exp(lanes: int = 1) -> _Fn:
    f = _Fn("s2sad.exp" + (f".v{lanes}" if lanes > 1 else ""), lanes=lanes)
    x = f.clamp("x.c", "%x", -746.0, 710.0)
    n, hi, lo, w = _exp_reduce(f, x)
    y = _scale(f, _exp_of_r(f, hi, lo, w), n)
    nan = f.fcmp("x.nan", "uno", "%x", 0.0)
    f.result = f.select("exp", nan, "%x", y)
    f.doc = ("exp(x): x = n ln2 + r with |r| <= ln2/2; e^r = 1 + r + r^2 (1/2 + r P(r));\n"
             "2^n in two halves (overflow and gradual underflow in the last product)")
    return f


def _expm1_parts(f: _Fn, x: str) -> tuple[str, str, str, str]:
    """expm1 of x (clamped to [-40, 710]): (few, s, tail, big), expm1(x) = s + tail
    (a pair more precise than a double) where `few` (n <= 52), else `big`."""
    n, hi, lo, w = _exp_reduce(f, x)
    # n <= 52: 2^n e^r - 1 = (t - 1) + t hi + t (w - lo), with t - 1 exact and the first
    # sum's rounding error kept (Fast2Sum: |t - 1| >= |t hi|, or t - 1 = 0)
    few = f.int("n.few", "icmp sle", n, 52)
    t = f.pow2("t", f.select("n.t", few, n, 52, ty="i64"))
    a = f.sub("a", t, 1.0)
    b = f.mul("b", t, hi)
    s = f.add("s.m", a, b)
    err = f.add("s.m.err", f.sub("s.m.a", a, s), b)
    tail = f.fma("tail.m", t, f.sub("w.lo.m", w, lo), err)
    # n > 52: e^x 2^n - 1 in one rounding (fma); overflows to inf by itself
    n1 = f.int("n1", "ashr", n, 1)
    y1 = f.mul("e.1", _exp_of_r(f, hi, lo, w), f.pow2("scale1", n1))
    big = f.fma("em1.big", y1, f.pow2("scale2", f.int("n2", "sub", n, n1)), -1.0)
    return few, s, tail, big


def _def_expm1(lanes: int = 1) -> _Fn:
    f = _Fn("s2sad.expm1" + (f".v{lanes}" if lanes > 1 else ""), lanes=lanes)
    few, s, tail, big = _expm1_parts(f, f.clamp("x.c", "%x", -40.0, 710.0))
    y = f.select("em1", few, f.add("em1.small", s, tail), big)
    keep = f.fcmp("x.keep", "ueq", "%x", 0.0)      # NaN, and the sign of a zero
    f.result = f.select("expm1", keep, "%x", y)
    f.doc = ("expm1(x): x = n ln2 + r as for exp; (t - 1) + t r + t r^2 (1/2 + r P(r))\n"
             "with t = 2^n, summed so that the result's last bit is right when it is small")
    return f


def _log_of(f: _Fn, fr: str, k: str, c: str | float) -> str:
    """k ln2 + log(1 + fr) + c for |fr| < sqrt(2) - 1 (k a double)."""
    s = f.div("s", fr, f.add("f.2", fr, 2.0))
    z = f.mul("z", s, s)
    big_r = f.mul("R", z, f.horner("R.p", z, LOG_R))
    hfsq = f.mul("hfsq", f.mul("f.half", fr, 0.5), fr)
    low = f.fma("k.lo", k, LN2_LO, c) if c != 0.0 else f.mul("k.lo", k, LN2_LO)
    t = f.fma("t", s, f.add("hfsq.R", hfsq, big_r), low)
    v = f.sub("v", f.sub("hfsq.t", hfsq, t), fr)
    return f.fma("log.k", k, LN2_HI, f.neg("v.neg", v))


def _split(f: _Fn, ix: str) -> tuple[str, str]:
    """The bits ix of a positive normal double: (k as i64, m) with x = 2^k m,
    m in [sqrt(2)/2, sqrt(2))."""
    k = f.int("k", "ashr", f.int("ix.off", "sub", ix, SQRT_HALF_BITS), 52)
    m = f.double("m", f.int("m.bits", "sub", ix, f.int("k.bits", "shl", k, 52)))
    return k, m


def _to_double(f: _Fn, k: str) -> str:
    return f.cast(k[1:] + ".f", "sitofp", f.cast(k[1:] + ".32", "trunc", k, "i64", "i32"), "i32", "double")


def _def_log(lanes: int = 1) -> _Fn:
    f = _Fn("s2sad.log" + (f".v{lanes}" if lanes > 1 else ""), lanes=lanes)
    tiny = f.fcmp("subnormal", "olt", "%x", float.fromhex("0x1p-1022"))
    xs = f.select("x.s", tiny, f.mul("x.scaled", "%x", 2.0 ** 54), "%x")
    k0, m = _split(f, f.bits("ix", xs))
    k = f.int("k.all", "add", k0, f.select("k.sub", tiny, -54, 0, ty="i64"))
    y = _log_of(f, f.sub("f", m, 1.0), _to_double(f, k), 0.0)
    y = f.select("log.inf", f.fcmp("x.inf", "oeq", "%x", math.inf), math.inf, y)
    edge = f.select("log.edge", f.fcmp("x.zero", "oeq", "%x", 0.0), -math.inf, math.nan)
    f.result = f.select("log", f.fcmp("x.pos", "ogt", "%x", 0.0), y, edge)
    f.doc = ("log(x): x = 2^k (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)), s = f / (2 + f);\n"
             "log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)) (fdlibm's e_log.c)")
    return f


def _def_log1p(lanes: int = 1) -> _Fn:
    f = _Fn("s2sad.log1p" + (f".v{lanes}" if lanes > 1 else ""), lanes=lanes)
    u = f.add("u", "%x", 1.0)
    k, m = _split(f, f.bits("iu", u))
    same = f.int("k.zero", "icmp eq", k, 0)
    # k = 0: f = x exactly; else f = m - 1 exactly, and c = (x - (u - 1)) / u puts back
    # the rounding error of u = 1 + x
    fr = f.select("f", same, "%x", f.sub("f.m", m, 1.0))
    c = f.select("c", same, 0.0, f.div("c.u", f.sub("u.err", "%x", f.sub("u.1", u, 1.0)), u))
    y = _log_of(f, fr, _to_double(f, k), c)
    y = f.select("log1p.inf", f.fcmp("x.inf", "oeq", "%x", math.inf), math.inf, y)
    low = f.select("log1p.low", f.fcmp("x.m1", "oeq", "%x", -1.0), -math.inf, math.nan)
    y = f.select("log1p.dom", f.fcmp("x.dom", "ogt", "%x", -1.0), y, low)
    keep = f.fcmp("x.keep", "oeq", "%x", 0.0)     # the sign of a zero
    f.result = f.select("log1p", keep, "%x", y)
    f.doc = ("log1p(x): log of u = 1 + x as for log, plus (x - (u - 1)) / u, the rounding\n"
             "error of u (fdlibm's s_log1p.c)")
    return f


def _def_tanh(lanes: int = 1) -> _Fn:
    f = _Fn("s2sad.tanh" + (f".v{lanes}" if lanes > 1 else ""), lanes=lanes)
    ax = f.call("ax", "fabs", "%x")
    # |x| <= 20 (tanh(20) rounds to 1, and 2^n below stays normal); NaN stays NaN
    a = f.select("a", f.fcmp("ax.big", "ogt", ax, TANH_CLAMP), TANH_CLAMP, ax)
    y = f.add("y", a, a)
    # y = n ln2 + r, |r| <= ln2/2 (n in [0, 58]); expm1(r) = r + r^2 G(r)
    k = f.fma("k", y, 1 / math.log(2), SHIFTER)
    nf = f.sub("n.f", k, SHIFTER)
    r = f.fma("r", nf, -LN2_LO, f.fma("hi", nf, -LN2_HI, y))
    q = f.fma("q", f.mul("r2", r, r), f.horner("g", r, TANH_G), r)
    # expm1(y) = (2^n - 1) + 2^n expm1(r), 2^n from k's low bits (2^n - 1 and 2^n q exact)
    s = f.double("s", f.int("s.bits", "add", f.int("n.sh", "shl", f.bits("k.bits", k), 52),
                            0x3FF0000000000000))
    t = f.fma("t", s, q, f.sub("s.m1", s, 1.0))
    # the one division; below 0.4, h - h z with h = t/2 (the same value, its error mostly
    # that of h: z's rounding errors are scaled by h)
    z = f.div("z", t, f.add("t.2", t, 2.0))
    h = f.mul("h", t, 0.5)
    z = f.select("z.s", f.fcmp("small", "olt", a, TANH_SMALL), f.fma("z.h", f.neg("h.neg", h), z, h), z)
    f.result = f.call("tanh", "copysign", z, "%x")
    f.doc = ("tanh(x): t / (t + 2) with t = expm1(2|x|) (|x| clamped to 20), the sign of x;\n"
             "expm1 from y = n ln2 + r, |r| <= ln2/2: (2^n - 1) + 2^n (r + r^2 G(r));\n"
             "below 0.4, h - h z with h = t/2 and z = t / (t + 2)")
    return f


def _def_cbrt(lanes: int = 1) -> _Fn:
    f = _Fn("s2sad.cbrt" + (f".v{lanes}" if lanes > 1 else ""), lanes=lanes)
    hx = f("hx", f"trunc i64 {f.int('ix.hi', 'lshr', f.bits('ix', '%x'), 32)} to i32")
    sign = f.int("sign", "and", hx, -0x80000000, ty="i32")
    ahx = f.int("ahx", "and", hx, 0x7FFFFFFF, ty="i32")
    # an estimate from the exponent: the high word / 3 plus a bias; subnormals scaled by 2^54
    sub = f.int("subnormal", "icmp ult", ahx, 0x00100000, ty="i32")
    ixs = f.bits("ixs", f.mul("x.s", "%x", 2.0 ** 54))
    hs = f("hx.s", f"trunc i64 {f.int('ixs.hi', 'lshr', ixs, 32)} to i32")
    h = f.select("h", sub, f.int("ahs", "and", hs, 0x7FFFFFFF, ty="i32"), ahx, ty="i32")
    third = f.int("h.3", "udiv", h, 3, ty="i32")
    bias = f.select("bias", sub, CBRT_B2, CBRT_B1, ty="i32")
    th = f.int("t.hi", "or", f.int("t.mag", "add", third, bias, ty="i32"), sign, ty="i32")
    t0 = f.double("t0", f.int("t0.bits", "shl", f("t.hi64", f"zext i32 {th} to i64"), 32))
    # to 23 bits: cbrt(x) = t cbrt(x / t^3) ~ t P(t^3 / x)
    r = f.mul("r", f.mul("t0.2", t0, t0), f.div("t0.x", t0, "%x"))
    pa = f.horner("p.a", r, CBRT_P[:3])
    pb = f.fma("p.b", r, CBRT_P[4], CBRT_P[3])
    p = f.fma("p", f.mul("r3", f.mul("r2", r, r), r), pb, pa)
    t1 = f.bits("t1.bits", f.mul("t1", t0, p))
    # rounded away from zero to 23 bits, so that t * t is exact; one Newton step to 53 bits
    t = f.double("t", f.int("t.round", "and", f.int("t1.up", "add", t1, 0x80000000),
                            0xFFFFFFFFC0000000 - (1 << 64)))
    rr = f.div("x.t2", "%x", f.mul("t2", t, t))
    step = f.div("step", f.sub("x.t2.t", rr, t), f.add("w.r", f.add("w", t, t), rr))
    y = f.fma("cbrt.t", t, step, t)
    special = f.int("special", "icmp uge", ahx, 0x7FF00000, ty="i32")      # inf, NaN
    keep = f("keep", f"or i1 {special}, {f.fcmp('x.zero', 'oeq', '%x', 0.0)}")
    f.result = f.select("cbrt", keep, "%x", y)
    f.doc = ("cbrt(x): an estimate from the exponent bits, a polynomial to 23 bits, rounded to\n"
             "23 bits, then one Newton step (FreeBSD's s_cbrt.c); 0, inf and NaN are themselves")
    return f


_DEFS = {"exp": _def_exp, "expm1": _def_expm1, "log": _def_log, "log1p": _def_log1p,
         "tanh": _def_tanh, "cbrt": _def_cbrt}
assert set(_DEFS) == FUNCTIONS


@functools.lru_cache(maxsize=None)
def define(fname: str, T: str) -> tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """(symbol, definitions, declarations) of `fname` for T ("double" or "float"): the
    function (for float, also the double one it evaluates) and the intrinsics it uses."""
    f = _DEFS[fname]()
    doc = f.doc + "\n(s2sad's vector math: straight-line code that the loop vectoriser widens)"
    defs = [(f.symbol, f.render(doc, f.result))]
    symbol = f.symbol
    if T == "float":
        g = _Fn(symbol + "f")
        wide = g("x.d", "fpext float %x to double")
        y = g(fname + ".d", f"call double @{symbol}(double {wide})")
        res = g(fname, f"fptrunc double {y} to float")
        defs.append((g.symbol, g.render(f"{fname}f(x): the double {fname}, rounded to float", res, "float")))
        symbol = g.symbol
    elif T != "double":
        raise TypeError(T)
    decls = tuple((f"llvm.{i}.f64", f"declare double @llvm.{i}.f64({', '.join(['double'] * _Fn.INTRINSICS[i])})")
                  for i in sorted(f.intrinsics))
    return symbol, tuple(defs), decls


def define_vector(fname: str, lanes: int) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """(symbol, definition, declarations) of the double `fname` on vectors of `lanes`
    doubles: in every lane exactly what `define`'s function computes (the same operations
    in the same order), as a function the loop vectoriser can be told to call."""
    if fname not in VECTOR_FUNCTIONS:
        raise KeyError(fname)
    f = _DEFS[fname](lanes)
    doc = f.doc + f"\n(s2sad's vector math on {lanes} lanes, each lane as the scalar function)"
    decls = tuple((f.intrinsic_name(i), f"declare {f.D} @{f.intrinsic_name(i)}({', '.join([f.D] * _Fn.INTRINSICS[i])})")
                  for i in sorted(f.intrinsics))
    return f.symbol, f.render(doc, f.result), decls


# -------------------------------------------------------------------------- refitting

def _refit() -> None:            # pragma: no cover - a maintenance tool
    import mpmath as mp

    mp.mp.dps = 60

    def fit(fn, a, b, degree):
        poly, err = mp.chebyfit(fn, [a, b], degree + 1, error=True)
        return [float(c).hex() for c in reversed(poly)], float(err)

    def p_expm1(r):
        if abs(r) < mp.mpf("1e-8"):
            return mp.mpf(1) / 6 + r / 24 + r * r / 120
        return (mp.exp(r) - 1 - r - r * r / 2) / r ** 3

    def r_log(z):
        if z < mp.mpf("1e-20"):
            return mp.mpf(2) / 3 + z * 2 / 5
        s = mp.sqrt(z)
        return (2 * mp.atanh(s) / s - 2) / z

    half = mp.log(2) / 2 * mp.mpf("1.02")
    print("EXPM1_P", fit(p_expm1, -half, half, 9))

    def g_tanh(r):
        if abs(r) < mp.mpf("1e-8"):
            return mp.mpf(1) / 2 + r / 6 + r * r / 24
        return (mp.exp(r) - 1 - r) / r ** 2

    print("TANH_G", fit(g_tanh, -mp.log(2) / 2 * mp.mpf("1.01"), mp.log(2) / 2 * mp.mpf("1.01"), 9))
    print("LOG_R", fit(r_log, 0, ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)) ** 2 * mp.mpf("1.01"), 6))


if __name__ == "__main__":      # pragma: no cover
    _refit()

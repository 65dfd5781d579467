"""Kernel -> CUDA C source, and NVRTC/ptxas checks of it (launches: backends/cuda_launch.py).

`lower(kmod, spec, dtype)` prints a `KernelModule` as one CUDA C++ translation unit:
every scalar function of the module becomes a `__device__` function (one whose
returns are tuples returns a small struct `<fn>_ret { T r0, r1, ...; }`), followed by
an `extern "C" __global__` driver named `driver_name(kmod, spec, dtype)` and, when the
driver reduces anything, a second kernel `<driver>__finish`. The text is
deterministic and has no `#include`: NVRTC compiles it as is, and so does g++ with
the shim header `cuda_host.SHIM` in front (see `cuda_host`).

Per-element semantics are exactly those of the `LoopSpec` contract in `kernel.py`
(the python backend's `run_driver` is the reference). What is specific to the GPU:

The CUDA driver ABI
-------------------
    driver(<the C ABI of kernel.py, parameter for parameter>, [T* partials])

with `int64` spelled `long long` and input arrays `const T*`. The index space
k = o * n_inner + i, 0 <= k < n_outer * n_inner, is walked with a grid-stride loop
over 64-bit indices; any 1-D grid and block shape computes the same result.

- contig grads are plain stores: `g[k] = partial * seed`.
- strided grads (broadcast rows, stride 0 included) are `atomicAdd`ed:
  `atomicAdd(&g[o*so + i*si], partial * seed)` (double atomicAdd needs sm_60+).
- "sum" values and scalar-layout grads are the *reduced quantities*, numbered
  q = 0, 1, ...: the value sum first (if value == "sum"), then each scalar-layout
  active param in `kmod.active` order (if partials). Each thread sums its elements;
  each block sums its threads in shared memory (any blockDim.x up to
  `MAX_BLOCK` = 256) and thread 0 writes one partial per block:
      partials[q * gridDim.x + blockIdx.x]        (partials has n_red * gridDim.x double)
  Every one of these sums is a double for float32 too (`ACC`), so that a float32 sum
  of 10^7 terms is rounded to float once, when the finish step adds it into T* dest.
  The driver never touches acc or the scalar grads. The argument `partials` is
  present exactly when n_red > 0.
- Then `<driver>__finish(long long n_parts, const double* partials, <dest_0>, <dest_1>, ...)`
  is launched with one block of one thread, n_parts being the driver's gridDim.x; it
  adds sum_b partials[q * n_parts + b] into dest_q[0] (dest_q is acc or the grad),
  so that `acc[0] += sum` and `g[0] += sum` hold as in the contract. These sums are
  deterministic for a fixed launch shape (atomicAdd'ed strided grads are not); they
  differ from the serial order of the reference by rounding only.

Scan drivers (`ScanSpec`, stateful functions)
---------------------------------------------
    driver(<the scan ABI of kernel.py, parameter for parameter>)      (no finish kernel)

A scan is sequential: the driver is launched as ONE thread (grid 1, block 1; in any
other shape, every thread but thread 0 of block 0 returns at once) and does exactly
what `python.run_scan` does: the forward sweep over k = 0..n-1 (row-major, o outer)
with the state in locals, storing the state before each element at tape[k * n_state + j]
when there are grads; then the reverse sweep over k = n-1..0 with the adjoint of the
state in locals, summing `seed * d value/d w + sum_j lambda_j * d s_j'/d w` in that
order. Contig grads are stored, strided grads added (no atomics: one thread), scalar
grads and the value sum are summed in a double local and added to g[0] / acc[0] at the end.
The tape (n * n_state values) is allocated by the launcher (`backends/cuda_launch.py`'s
`execute`). Correct, but one thread of a GPU is slow: `explain` says so for scan sites.

This module writes text only: `backends/cuda_launch.py` launches it (cupy, or the g++
host emulation of `backends/cuda_host.py`), with the launch configuration, the partials
buffer and the finish step.

Math: CUDA's double functions (`tanh`, `cbrt`, `log1p`, `erf`, `hypot`...) and their
`f`-suffixed float twins; `sign` is built with `copysign`; `//`, `%`, `min`, `max`,
`round` (`rint`, half to even) and `int` (`trunc`) have Python's semantics (`x // 0.0`
is `x / 0.0`, as numpy has it, where Python raises), `maximum`/`minimum` numpy's (NaN
if either is); `and`/`or`
return an operand; `IfExp` and the right operand of `and`/`or` are evaluated only when
chosen (as C ternaries, or as if-statements when they need statements of their own).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any, Sequence

import gast
import numpy as np

from ..errors import BackendUnavailableError, S2SADError
from ..kernel import ArityError, KernelModule, LoopSpec, ScanSpec, active_indices, return_arity
from ..kernel_text import unparse

MAX_BLOCK = 256          # largest blockDim.x a reducing driver accepts (shared memory size)
ACC = "double"           # the type of every sum a driver carries (float32 included)
DEFAULT_BLOCK = 256

__all__ = [
    "lower", "driver_name", "finish_name", "compile_ptx", "check_ptxas", "driver_args",
    "finish_args", "reduced", "dtype_tag", "CudaCompileError", "Arg",
]


class CudaCompileError(S2SADError):
    """NVRTC or ptxas rejected generated CUDA code (a bug in s2sad: please report it)."""


# ---------------------------------------------------------------------------------
# dtypes and names

_CTYPES = {"f64": ("double", ""), "f32": ("float", "f")}


def dtype_tag(dtype: Any) -> str:
    """'f64' or 'f32' for anything numpy reads as float64/float32 (or 'f64'/'f32')."""
    if isinstance(dtype, str) and dtype in ("f64", "f32"):
        return dtype
    dt = np.dtype(dtype)
    if dt == np.float64:
        return "f64"
    if dt == np.float32:
        return "f32"
    raise TypeError(f"CUDA kernels are float64 or float32, not {dt}")


def _c_ident(name: str) -> str:
    out = "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else f"_u{ord(c):04x}" for c in name)
    if not out or out[0].isdigit():
        out = "k" + out
    return out


def driver_name(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype: Any) -> str:
    return f"{_c_ident(kmod.name)}__{spec.tag()}_{dtype_tag(dtype)}"


def finish_name(kmod: KernelModule, spec: LoopSpec, dtype: Any) -> str:
    return driver_name(kmod, spec, dtype) + "__finish"


_CXX_KEYWORDS = set("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
xor xor_eq restrict
threadIdx blockIdx blockDim gridDim warpSize atomicAdd dim3 uint3 main
errno assert NAN INFINITY HUGE_VAL NULL EOF unix linux stdin stdout stderr offsetof
""".split())
# math functions of CUDA and libm a generated name must not redefine or shadow
_MATH_FNS = set("""
min max abs pow rint trunc fabs isnan isinf isfinite signbit
j0 j1 jn y0 y1 yn gamma lgamma tgamma erfinv erfcinv erfcx normcdf normcdfinv rsqrt rcbrt
sinpi cospi sincos sincospi exp10 frexp ldexp modf remainder remquo nearbyint round lround
llround lrint llrint fdim fma fmax fmin ilogb logb scalbn scalbln nextafter nan drem
significand scalb norm norm3d norm4d rnorm rhypot cyl_bessel_i0 cyl_bessel_i1
""".split())
_MATH_FNS |= {w + "f" for w in _MATH_FNS}

# math.<name> -> CUDA double function (float: the same name with an "f" suffix,
# except our own s2sad_ helpers, which are emitted per dtype)
_MATH = {
    "fabs": "fabs", "copysign": "copysign", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "sqrt": "sqrt", "cbrt": "cbrt", "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log",
    "log2": "log2", "log10": "log10", "log1p": "log1p", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "asin", "acos": "acos", "atan": "atan", "atan2": "atan2", "sinh": "sinh",
    "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh",
    "erf": "erf", "erfc": "erfc", "hypot": "hypot", "fmod": "fmod", "pow": "pow",
    "libm_lgamma": "lgamma", "libm_gamma": "tgamma",
    "sign": "s2sad_sign", "square": "s2sad_square", "reciprocal": "s2sad_reciprocal",
    "maximum": "s2sad_maximum", "minimum": "s2sad_minimum",
}
_BUILTINS = {"abs": "fabs", "min": "s2sad_min", "max": "s2sad_max", "int": "trunc",
             "round": "rint", "float": None}

_RESERVED = (_CXX_KEYWORDS | _MATH_FNS | set(_MATH.values()) | {v + "f" for v in _MATH.values()}
             | {"s2sad_floordiv", "s2sad_mod", "s2sad_min", "s2sad_max", "s2sad_maximum", "s2sad_minimum",
                "s2sad_block_sum",
                "S2SAD_MAX_BLOCK"})

# names used by the driver's own code
_DRIVER_NAMES = {"n_outer", "n_inner", "n", "stride", "k", "o", "i", "r", "value", "s", "red",
                 "out", "acc", "seed", "out_dot", "partials", "n_parts", "b", "t", "sum_acc"}
# ... and by a scan driver's (reserved for scans only, so loop drivers keep their names)
_SCAN_NAMES = {"state", "state_bar", "tape", "sd"}


def _driver_names(spec: LoopSpec | ScanSpec | None) -> set[str]:
    return _DRIVER_NAMES | _SCAN_NAMES if isinstance(spec, ScanSpec) else set(_DRIVER_NAMES)


def _mangle(name: str, taken: set[str]) -> str:
    c = _c_ident(name)
    if c.startswith("__") or (c.startswith("_") and len(c) > 1 and c[1].isupper()):
        c = "v" + c
    while c in taken or c in _RESERVED:
        c += "_"
    return c


# ---------------------------------------------------------------------------------
# the driver ABI, shared by lowering and by both launchers

@dataclass(frozen=True)
class Arg:
    """One C parameter of a kernel. kind: 'index' (long long), 'value' (T), 'ptr' (T*),
    'cptr' (const T*), 'sums' / 'csums' (ACC* / const ACC*: the per-block partial sums). role says what it carries, for the launchers:
    ('n_outer'|'n_inner'|'n_parts'|'out'|'acc'|'seed'|'out_dot'|'partials', None) or
    ('param'|'grad'|'tangent', index of the param) with part 'base'|'so'|'si'."""

    name: str
    kind: str
    role: str
    index: int | None = None
    part: str = "base"

    def decl(self, T: str) -> str:
        return {"index": "long long ", "value": f"{T} ", "ptr": f"{T}* ", "cptr": f"const {T}* ",
                "sums": f"{ACC}* ", "csums": f"const {ACC}* "}[self.kind] + self.name


def _function_cnames(kmod: KernelModule, spec: LoopSpec | ScanSpec | None = None) -> dict[str, str]:
    """C names of the module's functions (a tuple-returning f also takes f_ret)."""
    fnames: dict[str, str] = {}
    taken: set[str] = _driver_names(spec)
    for n in kmod.functions:
        c = _mangle(n, taken)
        while c + "_ret" in taken or c + "_ret" in _RESERVED:
            c = _mangle(c + "_", taken)
        fnames[n] = c
        taken |= {c, c + "_ret"}
    return fnames


def _element(base: str, layout: str) -> str:
    """C expression for element (o, i) (flat index k) of an operand with `layout`."""
    if layout == "scalar":
        return base
    if layout == "contig":
        return f"{base}[k]"
    return f"{base}[o * {base}_so + i * {base}_si]"


def _param_cnames(kmod: KernelModule, spec: LoopSpec | ScanSpec) -> list[str]:
    """C base names of the entry params in drivers, distinct once suffixed with
    _so/_bar/_dot..., and from the driver's locals and the module's functions. (In a
    scan driver, a state param's name is the local holding the state, and _bar its
    adjoint.)"""
    scan = isinstance(spec, ScanSpec)
    taken = _driver_names(spec)
    for c in _function_cnames(kmod, spec).values():
        taken |= {c, c + "_ret"}
    bases: list[str] = []
    for p in kmod.params:
        c = _mangle(p, taken)
        while True:
            derived = {c, c + "_so", c + "_si", c + "_bar", c + "_bar_so", c + "_bar_si",
                       c + "_dot", c + "_dot_so", c + "_dot_si", "sum_" + c + "_bar"}
            if scan:
                derived.add(c + "_bar_next")
            if not (derived & taken) and not (derived & _RESERVED):
                break
            c += "_"
        taken |= derived
        bases.append(c)
    return bases


def reduced(kmod: KernelModule, spec: LoopSpec | ScanSpec) -> list[tuple[str, int | None]]:
    """The reduced quantities q = 0, 1, ... as (role, param index): ('acc', None) and
    ('grad', j) for scalar-layout active params. A scan reduces nothing across threads
    (its one thread sums as it goes): []."""
    q: list[tuple[str, int | None]] = []
    if isinstance(spec, ScanSpec):
        return q
    if spec.value == "sum":
        q.append(("acc", None))
    if spec.partials:
        for j in active_indices(kmod):
            if spec.layouts[j] == "scalar":
                q.append(("grad", j))
    return q


def driver_args(kmod: KernelModule, spec: LoopSpec | ScanSpec) -> list[Arg]:
    """The driver's C parameters, in ABI order (see the module docstring)."""
    _check_spec(kmod, spec)
    names = _param_cnames(kmod, spec)
    args = [Arg("n_outer", "index", "n_outer"), Arg("n_inner", "index", "n_inner")]

    def layout_args(role: str, j: int, suffix: str, const: bool, grad: bool = False) -> None:
        c = names[j] + suffix
        lay = spec.layouts[j]
        if lay == "scalar":
            args.append(Arg(c, "ptr" if grad else "value", role, j))
        else:
            args.append(Arg(c, "cptr" if const else "ptr", role, j))
            if lay == "strided":
                args.append(Arg(c + "_so", "index", role, j, "so"))
                args.append(Arg(c + "_si", "index", role, j, "si"))

    if isinstance(spec, ScanSpec):
        for j in range(len(spec.layouts)):
            layout_args("param", j, "", True)
        args.append(Arg("state", "ptr", "state"))
        if spec.value == "store":
            args.append(Arg("out", "ptr", "out"))
        elif spec.value == "sum":
            args.append(Arg("acc", "ptr", "acc"))
        if spec.grads:
            args.append(Arg("seed", "value" if spec.seed == "scalar" else "cptr", "seed"))
            for j in active_indices(kmod, spec):
                layout_args("grad", j, "_bar", False, grad=True)
            args.append(Arg("state_bar", "ptr", "state_bar"))
            args.append(Arg("tape", "ptr", "tape"))
        return args
    for j in range(len(kmod.params)):
        layout_args("param", j, "", True)
    if spec.value == "store":
        args.append(Arg("out", "ptr", "out"))
    elif spec.value == "sum":
        args.append(Arg("acc", "ptr", "acc"))
    if spec.partials:
        args.append(Arg("seed", "value" if spec.seed == "scalar" else "cptr", "seed"))
        for j in active_indices(kmod):
            layout_args("grad", j, "_bar", False, grad=True)
    if spec.tangents:
        for j in active_indices(kmod):
            layout_args("tangent", j, "_dot", True)
        args.append(Arg("out_dot", "ptr", "out_dot"))
    if reduced(kmod, spec):
        args.append(Arg("partials", "sums", "partials"))
    return args


def finish_args(kmod: KernelModule, spec: LoopSpec) -> list[Arg]:
    """The finish kernel's C parameters: n_parts, partials, then one T* per reduced quantity."""
    names = _param_cnames(kmod, spec)
    args = [Arg("n_parts", "index", "n_parts"), Arg("partials", "csums", "partials")]
    for role, j in reduced(kmod, spec):
        args.append(Arg("acc", "ptr", "acc") if role == "acc" else Arg(names[j] + "_bar", "ptr", "grad", j))
    return args


def _check_spec(kmod: KernelModule, spec: LoopSpec | ScanSpec) -> None:
    if isinstance(spec, ScanSpec):
        _check_scan(kmod, spec)
        return
    if not isinstance(spec, LoopSpec):
        raise TypeError(f"a driver is made from a LoopSpec or a ScanSpec, not {type(spec).__name__}")
    if len(spec.layouts) != len(kmod.params):
        raise ValueError(f"LoopSpec has {len(spec.layouts)} layouts for {len(kmod.params)} params")
    if spec.needs_dual and not kmod.dual_entry:
        raise ValueError(f"kernel module {kmod.name!r} has no dual entry; {spec} needs one")


def _check_scan(kmod: KernelModule, spec: ScanSpec) -> None:
    """The module against kernel.py's scan contract (as the llvm backend checks it)."""
    k, n_params = spec.n_state, len(spec.layouts)
    if n_params + k != len(kmod.params):
        raise ValueError(f"scan spec has {n_params} layouts and {k} states for "
                         f"{len(kmod.params)} parameters of {kmod.entry!r}")
    arity = _arities(kmod)[kmod.entry]
    if arity not in ((1 + k,) if k else (0, 1)):
        raise ValueError(f"{kmod.entry} returns {arity or 1} values; the value and {k} states are due")
    if not spec.grads:
        return
    if not kmod.dual_entry:
        raise ValueError(f"kernel module {kmod.name!r} has no dual entry; {spec} needs one")
    states = kmod.params[n_params:]
    wrt = tuple(kmod.active)
    if k and wrt[len(wrt) - k:] != states:
        raise ValueError(f"the dual of a scan differentiates w.r.t. the active params, then "
                         f"the states {states}; {kmod.name} has active={wrt}")
    if any(kmod.params.index(a) >= n_params for a in wrt[:len(wrt) - k]):
        raise ValueError(f"{kmod.name}: active params {wrt} list a state before the others")
    arity = _arities(kmod)[kmod.dual_entry]
    if arity != (1 + k) * (1 + len(wrt)):
        raise ValueError(f"{kmod.dual_entry} returns {arity or 1} values; a scan's dual returns "
                         f"{(1 + k) * (1 + len(wrt))}: (value, states, (1 + {k}) x {len(wrt)} partials)")


# ---------------------------------------------------------------------------------
# lowering the core scalar language

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
            self.names[name] = _mangle(name, self.taken)
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
    if isinstance(node, gast.Constant) and not isinstance(node.value, str):
        return int(node.value)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        v = _const_int(node.operand)
        return -v if isinstance(node.op, gast.USub) else v
    raise _unsupported(node, "range step must be a nonzero constant")


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
            cname = _MATH.get(f.attr)
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
            if f.id in _BUILTINS:
                if f.id == "float":
                    return args[0]
                cname = _BUILTINS[f.id]
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
                return [f"while ({test[0]}) {{", *_ind(body), "}"]
            return ["while (true) {", *_ind(pre), f"    if (!{_par(test, _UNARY)}) break;",
                    *_ind(body), "}"]
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
        lines = pre + [f"if ({test[0]}) {{", *_ind(self.block(s.body))]
        orelse = s.orelse
        while orelse:
            if len(orelse) == 1 and isinstance(orelse[0], gast.If):
                sub: list[str] = []
                t2 = self.x.cond(orelse[0].test, sub)
                if not sub:
                    lines += [f"}} else if ({t2[0]}) {{", *_ind(self.block(orelse[0].body))]
                    orelse = orelse[0].orelse
                    continue
            lines += ["} else {", *_ind(self.block(orelse))]
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
            try:
                return str(_const_int(e))
            except S2SADError:
                pass
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
                      f"    {target} = ({c.T}){k};", *_ind(self.block(s.body)), "}"]


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


def _ind(lines: list[str], n: int = 1) -> list[str]:
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


def _arities(kmod: KernelModule) -> dict[str, int]:
    """Arity of each function's tuple returns, 0 for one value; `return helper(...)`
    has the helper's arity."""
    memo: dict[str, int] = {}
    try:
        for n in kmod.functions:
            return_arity(kmod.functions, n, memo, single=0)
    except ArityError as e:
        raise BackendUnavailableError(f"kernel function {e.name!r} is recursive" if e.lengths is None else
                                      f"kernel function {e.name!r} returns tuples of different "
                                      f"lengths: {e.lengths}") from None
    return memo


def _calls(fn: gast.FunctionDef, names: set[str]) -> list[str]:
    out = []
    for node in gast.walk(fn):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id in names:
            if node.func.id not in out:
                out.append(node.func.id)
    return out


def _order(kmod: KernelModule, roots: list[str]) -> list[str]:
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


_HELPERS = {
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

_BLOCK_SUM = """\
#ifndef S2SAD_MAX_BLOCK
#define S2SAD_MAX_BLOCK 256
#endif

// Sums s[q * S2SAD_MAX_BLOCK + t] over the block's threads t into s[q * S2SAD_MAX_BLOCK]
// for q < nq. Any blockDim.x <= S2SAD_MAX_BLOCK; every thread of the block must call it.
__device__ void s2sad_block_sum(double* s, int nq)
{
    const unsigned int t = threadIdx.x;
    unsigned int h = 1;
    while (2 * h < blockDim.x) h *= 2;
    __syncthreads();
    for (; h > 0; h /= 2) {
        if (t < h && t + h < blockDim.x) {
            for (int q = 0; q < nq; ++q) s[q * S2SAD_MAX_BLOCK + t] += s[q * S2SAD_MAX_BLOCK + t + h];
        }
        __syncthreads();
    }
}"""


def _helper_text(text: str, T: str, sfx: str) -> str:
    text = re.sub(r"\bT\b", T, text)
    text = re.sub(r"(\w+)F\(", lambda m: m.group(1) + sfx + "(", text)
    return re.sub(r"(\d\.\d+)S\b", lambda m: m.group(1) + sfx, text)


def lower(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype: Any) -> str:
    """CUDA C++ source of the module's functions, the driver and its finish kernel (a
    scan driver has none)."""
    tag = dtype_tag(dtype)
    T, sfx = _CTYPES[tag]
    _check_spec(kmod, spec)
    if isinstance(spec, ScanSpec):   # the forward sweep calls the entry, the reverse its dual
        roots = [kmod.entry] + ([kmod.dual_entry] if spec.grads else [])
    else:
        roots = [kmod.dual_entry if spec.needs_dual else kmod.entry]
    order = _order(kmod, roots)

    fnames = _function_cnames(kmod, spec)
    arities = _arities(kmod)
    tuple_fns = {fnames[n]: arities[n] for n in kmod.functions if arities[n]}
    helpers: set[str] = set()

    chunks: list[str] = []
    for n in order:
        fn = kmod.functions[n]
        ctx = _Ctx(T, sfx, fnames, tuple_fns, helpers)
        cname = fnames[n]
        ret_struct = (cname + "_ret") if cname in tuple_fns else None
        params = [ctx.local(a.id) for a in fn.args.args]
        locals_ = [ctx.local(v) for v in _assigned(fn)]
        body = _Stmts(ctx, fn, ret_struct).block(fn.body)
        head = []
        origin = kmod.origins.get(n)
        if origin:
            head += [f"// {line}" for line in origin.splitlines()]
        if ret_struct:
            fields = ", ".join(f"r{k}" for k in range(tuple_fns[cname]))
            head.append(f"struct {ret_struct} {{ {T} {fields}; }};")
            head.append("")
        rtype = ret_struct or T
        decl = [f"__device__ {rtype} {cname}({', '.join(f'{T} {p}' for p in params)})", "{"]
        if locals_:
            decl += _ind(_wrap(f"{T} ", [f"{v} = 0.0{sfx}" for v in locals_], ";"))
        chunks.append("\n".join(head + decl + _ind(body) + ["}"]))

    if isinstance(spec, ScanSpec):
        driver = _scan_driver_text(kmod, spec, tag, fnames, tuple_fns)
    else:
        driver = _driver_text(kmod, spec, tag, fnames, tuple_fns)
    red = reduced(kmod, spec)
    pre = [f"// s2sad kernel module {kmod.name!r}: {spec.tag()}, "
           f"{'float64' if tag == 'f64' else 'float32'} (generated; see s2sad/codegen/cuda.py for the ABI)"]
    for h in sorted(helpers):
        pre.append(_helper_text(_HELPERS[h], T, sfx))
    if red:
        pre.append(_helper_text(_BLOCK_SUM, T, sfx))
    parts = pre + chunks + driver
    return "\n\n".join(parts) + "\n"


def _driver_text(kmod: KernelModule, spec: LoopSpec, tag: str, fnames: dict[str, str],
                 tuple_fns: dict[str, int]) -> list[str]:
    T, sfx = _CTYPES[tag]
    name = driver_name(kmod, spec, tag)
    args = driver_args(kmod, spec)
    cnames = _param_cnames(kmod, spec)
    active = active_indices(kmod)
    red = reduced(kmod, spec)
    strided_any = any(spec.layouts[j] == "strided" for j in range(len(kmod.params)))

    def elem(base: str, j: int) -> str:
        return _element(base, spec.layouts[j])

    body: list[str] = []
    if strided_any:
        body += ["const long long o = k / n_inner;", "const long long i = k - o * n_inner;"]
    call_args = ", ".join(elem(cnames[j], j) for j in range(len(kmod.params)))
    if spec.needs_dual:
        dual = fnames[kmod.dual_entry]
        arity = tuple_fns.get(dual, 0)
        if arity != 1 + len(active):
            raise ValueError(f"dual entry {kmod.dual_entry!r} returns {arity} values, "
                             f"expected {1 + len(active)} (value and one partial per active param)")
        body.append(f"const {dual}_ret r = {dual}({call_args});")
        value = "r.r0"
        partial = [f"r.r{m + 1}" for m in range(len(active))]
    else:
        entry = fnames[kmod.entry]
        if entry in tuple_fns:
            raise ValueError(f"entry {kmod.entry!r} returns a tuple")
        body.append(f"const {T} value = {entry}({call_args});")
        value = "value"
        partial = []
    sums = {}
    for q, (role, j) in enumerate(red):
        sums[(role, j)] = "sum_acc" if role == "acc" else f"sum_{cnames[j]}_bar"
    if spec.value == "store":
        body.append(f"out[k] = {value};")
    elif spec.value == "sum":
        body.append(f"{sums[('acc', None)]} += {value};")
    if spec.partials:
        if spec.seed == "array":
            body.append(f"const {T} s = seed[k];")
            s = "s"
        else:
            s = "seed"
        for m, j in enumerate(active):
            g = cnames[j] + "_bar"
            lay = spec.layouts[j]
            if lay == "scalar":
                body.append(f"{sums[('grad', j)]} += {partial[m]} * {s};")
            elif lay == "contig":
                body.append(f"{g}[k] = {partial[m]} * {s};")
            else:
                body.append(f"atomicAdd(&{g}[o * {g}_so + i * {g}_si], {partial[m]} * {s});")
    if spec.tangents:
        terms = [f"{partial[m]} * {elem(cnames[j] + '_dot', j)}" for m, j in enumerate(active)]
        body.append(f"out_dot[k] = {' + '.join(terms) if terms else '0.0' + sfx};")

    lines = [f'extern "C" __global__ void {name}(']
    lines += [f"    {a.decl(T)}{',' if n + 1 < len(args) else ')'}" for n, a in enumerate(args)]
    lines += ["{",
              "    const long long n = n_outer * n_inner;",
              "    const long long stride = (long long)gridDim.x * blockDim.x;"]
    if red:
        lines.append(f"    {ACC} " + ", ".join(f"{sums[r]} = 0.0" for r in red) + ";")
    lines += ["    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {",
              *_ind(body, 2), "    }"]
    if red:
        nq = len(red)
        lines += [f"    // block sums of the {nq} reduced quantit{'y' if nq == 1 else 'ies'} -> one partial per block",
                  f"    __shared__ {ACC} red[{nq} * S2SAD_MAX_BLOCK];"]
        lines += [f"    red[{q} * S2SAD_MAX_BLOCK + threadIdx.x] = {sums[r]};" for q, r in enumerate(red)]
        lines += [f"    s2sad_block_sum(red, {nq});", "    if (threadIdx.x == 0) {"]
        lines += [f"        partials[{q} * gridDim.x + blockIdx.x] = red[{q} * S2SAD_MAX_BLOCK];"
                  for q in range(nq)]
        lines += ["    }"]
    lines.append("}")
    out = ["\n".join(lines)]

    if red:
        fargs = finish_args(kmod, spec)
        fl = [f'extern "C" __global__ void {name}__finish(']
        fl += [f"    {a.decl(T)}{',' if n + 1 < len(fargs) else ')'}" for n, a in enumerate(fargs)]
        fl += ["{", "    // one thread adds the per-block partials into their destinations",
               "    if (blockIdx.x != 0 || threadIdx.x != 0) return;"]
        for q, a in enumerate(fargs[2:]):
            fl += [f"    {ACC} t{q} = 0.0;",
                   f"    for (long long b = 0; b < n_parts; ++b) t{q} += partials[{q} * n_parts + b];",
                   f"    {a.name}[0] += t{q};"]
        fl.append("}")
        out.append("\n".join(fl))
    return out


def _scan_driver_text(kmod: KernelModule, spec: ScanSpec, tag: str, fnames: dict[str, str],
                      tuple_fns: dict[str, int]) -> list[str]:
    """kernel.py's scan driver, run by one thread: the forward sweep (state in locals,
    the state before each element onto the tape when there are grads), then the reverse
    sweep backwards over the elements, summing as `run_scan` does."""
    T = _CTYPES[tag][0]
    name = driver_name(kmod, spec, tag)
    args = driver_args(kmod, spec)
    cnames = _param_cnames(kmod, spec)
    k, n_p = spec.n_state, len(spec.layouts)
    states = cnames[n_p:]
    active = active_indices(kmod, spec)
    n_wrt = len(kmod.active) if spec.grads else 0

    def elem(base: str, j: int) -> str:
        return _element(base, spec.layouts[j])

    def call(fn: str, extra: list[str]) -> str:
        return f"{fn}({', '.join([elem(cnames[j], j) for j in range(n_p)] + extra)})"

    index = (["const long long o = k / n_inner;", "const long long i = k - o * n_inner;"]
             if "strided" in spec.layouts else [])
    entry = fnames[kmod.entry]
    fwd = list(index)
    if spec.grads:
        fwd += [f"tape[k * {k} + {j}] = {s};" for j, s in enumerate(states)]
    if k or entry in tuple_fns:
        fwd.append(f"const {entry}_ret r = {call(entry, list(states))};")
        value = "r.r0"
        fwd += [f"{s} = r.r{j + 1};" for j, s in enumerate(states)]
    else:
        fwd.append(f"const {T} value = {call(entry, [])};")
        value = "value"
    if spec.value == "store":
        fwd.append(f"out[k] = {value};")
    elif spec.value == "sum":
        fwd.append(f"sum_acc += {value};")

    lines = [f'extern "C" __global__ void {name}(']
    lines += [f"    {a.decl(T)}{',' if n + 1 < len(args) else ')'}" for n, a in enumerate(args)]
    lines += ["{",
              "    // a scan: the elements in order, threading the state, in one thread (grid 1, block 1)",
              "    if (blockIdx.x != 0 || threadIdx.x != 0) return;",
              "    const long long n = n_outer * n_inner;"]
    lines += [f"    {T} {s} = state[{j}];" for j, s in enumerate(states)]
    if spec.value == "sum":
        lines.append(f"    {ACC} sum_acc = 0.0;")
    lines += ["    for (long long k = 0; k < n; ++k) {", *_ind(fwd, 2), "    }"]
    lines += [f"    state[{j}] = {s};" for j, s in enumerate(states)]
    if spec.value == "sum":
        lines.append("    acc[0] += sum_acc;")

    if spec.grads:
        dual = fnames[kmod.dual_entry]
        rev = list(index)
        rev.append(f"const {dual}_ret r = {call(dual, [f'tape[k * {k} + {j}]' for j in range(k)])};")
        if spec.seed == "array":
            rev.append(f"const {T} sd = seed[k];")
            sd = "sd"
        else:
            sd = "seed"

        def combine(w: int) -> str:
            """seed * d value/d w + sum_j lambda_j * d sj'/d w (run_scan's order)."""
            terms = [f"r.r{1 + k + w} * {sd}"]
            terms += [f"{s}_bar * r.r{1 + k + (1 + j) * n_wrt + w}" for j, s in enumerate(states)]
            return " + ".join(terms)

        sums = []
        for m, j in enumerate(active):
            g = cnames[j] + "_bar"
            lay = spec.layouts[j]
            if lay == "scalar":
                rev.append(f"sum_{g} += {combine(m)};")
                sums.append(g)
            elif lay == "contig":
                rev.append(f"{g}[k] = {combine(m)};")
            else:
                rev.append(f"{g}[o * {g}_so + i * {g}_si] += {combine(m)};")
        rev += [f"const {T} {s}_bar_next = {combine(len(active) + j)};" for j, s in enumerate(states)]
        rev += [f"{s}_bar = {s}_bar_next;" for s in states]
        lines.append("    // reverse sweep: <state>_bar is the adjoint of the state after element k")
        lines += [f"    {T} {s}_bar = state_bar[{j}];" for j, s in enumerate(states)]
        lines += [f"    {ACC} sum_{g} = 0.0;" for g in sums]
        lines += ["    for (long long k = n - 1; k >= 0; --k) {", *_ind(rev, 2), "    }"]
        lines += [f"    state_bar[{j}] = {s}_bar;" for j, s in enumerate(states)]
        lines += [f"    {g}[0] += sum_{g};" for g in sums]
    lines.append("}")
    return ["\n".join(lines)]


# ---------------------------------------------------------------------------------
# NVRTC and ptxas

def compile_ptx(source: str, name: str, arch: str = "sm_90") -> str:
    """PTX for `source` from NVRTC (no GPU needed). Raises CudaCompileError with NVRTC's
    log and the offending generated lines on failure."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise BackendUnavailableError(
            "NVRTC is not installed", hint='pip install "s2sad[nvrtc]"') from exc

    def check(res: Any, what: str) -> Any:
        err = res[0]
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CudaCompileError(f"NVRTC {what} failed: {err}")
        return res[1:] if len(res) > 2 else (res[1] if len(res) == 2 else None)

    prog_name = name if name.endswith(".cu") else name + ".cu"
    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), prog_name.encode(), 0, [], []), "create")
    try:
        opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17"]
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        size = check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = log.rstrip(b"\0").decode(errors="replace")
        if res != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CudaCompileError(_compile_message("NVRTC", prog_name, log_text, source))
        size = check(nvrtc.nvrtcGetPTXSize(prog), "PTX size")
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(prog, ptx)
        return ptx.rstrip(b"\0").decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _compile_message(tool: str, prog_name: str, log: str, source: str) -> str:
    lines = source.splitlines()
    nums = sorted({int(m) for m in re.findall(re.escape(prog_name) + r"\((\d+)\)", log)})
    parts = [f"{tool} rejected the generated CUDA source {prog_name}:", log.rstrip()]
    for ln in nums[:5]:
        parts.append(f"generated source around line {ln}:")
        for k in range(max(1, ln - 2), min(len(lines), ln + 2) + 1):
            parts.append(f"{'>' if k == ln else ' '} {k:5d} | {lines[k - 1]}")
    parts.append("This is a bug in s2sad's CUDA backend; please report it with the source above.")
    return "\n".join(parts)


def _ptxas_path() -> str | None:
    for cand in (shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas"):
        if cand and os.path.exists(cand):
            return cand
    return None


def check_ptxas(ptx: str, arch: str = "sm_90") -> bool:
    """Assemble `ptx` with ptxas when it is installed. Returns False when there is no
    ptxas (nothing checked), True when it assembled; raises CudaCompileError otherwise."""
    exe = _ptxas_path()
    if exe is None:
        return False
    with tempfile.TemporaryDirectory(prefix="s2sad-ptxas-") as d:
        src = os.path.join(d, "kernel.ptx")
        with open(src, "w") as fh:
            fh.write(ptx)
        proc = subprocess.run([exe, f"-arch={arch}", src, "-o", os.path.join(d, "kernel.cubin")],
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise CudaCompileError(f"ptxas -arch={arch} failed:\n{proc.stderr}{proc.stdout}")
    return True

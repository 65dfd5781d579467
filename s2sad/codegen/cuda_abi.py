"""The CUDA driver ABI and the C names of generated code (shared by the writer and the launchers).

The ABI itself is stated in codegen/cuda.py's docstring; this module is its one
implementation: the C parameters of a driver and of its finish kernel (`driver_args`,
`finish_args`, `Arg`), the reduced quantities (`reduced`), the kernels' names, and the
C names every generated identifier is mangled to. Invariants: a mangled name is never a
C++ keyword, a CUDA or libm function, one of s2sad's own helpers or a name a driver's code
uses (`RESERVED`, the driver names); an entry param's base name stays distinct once
suffixed (_so, _si, _bar, _dot...). A spec is checked against its module (`check_spec`)
before anything is named from it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BackendUnavailableError
from ..kernel import ArityError, KernelModule, LoopSpec, ScanSpec, active_indices, return_arity

MAX_BLOCK = 256          # largest blockDim.x a reducing driver accepts (shared memory size)
ACC = "double"           # the type of every sum a driver carries (float32 included)
DEFAULT_BLOCK = 256


# ---------------------------------------------------------------------------------
# dtypes and names

CTYPES = {"f64": ("double", ""), "f32": ("float", "f")}


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


def c_ident(name: str) -> str:
    out = "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else f"_u{ord(c):04x}" for c in name)
    if not out or out[0].isdigit():
        out = "k" + out
    return out


def driver_name(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype: Any) -> str:
    return f"{c_ident(kmod.name)}__{spec.tag()}_{dtype_tag(dtype)}"


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
MATH_CALLS = {
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
BUILTIN_CALLS = {"abs": "fabs", "min": "s2sad_min", "max": "s2sad_max", "int": "trunc",
             "round": "rint", "float": None}

RESERVED = (_CXX_KEYWORDS | _MATH_FNS | set(MATH_CALLS.values()) | {v + "f" for v in MATH_CALLS.values()}
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


def mangle(name: str, taken: set[str]) -> str:
    c = c_ident(name)
    if c.startswith("__") or (c.startswith("_") and len(c) > 1 and c[1].isupper()):
        c = "v" + c
    while c in taken or c in RESERVED:
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


def function_cnames(kmod: KernelModule, spec: LoopSpec | ScanSpec | None = None) -> dict[str, str]:
    """C names of the module's functions (a tuple-returning f also takes f_ret)."""
    fnames: dict[str, str] = {}
    taken: set[str] = _driver_names(spec)
    for n in kmod.functions:
        c = mangle(n, taken)
        while c + "_ret" in taken or c + "_ret" in RESERVED:
            c = mangle(c + "_", taken)
        fnames[n] = c
        taken |= {c, c + "_ret"}
    return fnames


def element(base: str, layout: str) -> str:
    """C expression for element (o, i) (flat index k) of an operand with `layout`."""
    if layout == "scalar":
        return base
    if layout == "contig":
        return f"{base}[k]"
    return f"{base}[o * {base}_so + i * {base}_si]"


def param_cnames(kmod: KernelModule, spec: LoopSpec | ScanSpec) -> list[str]:
    """C base names of the entry params in drivers, distinct once suffixed with
    _so/_bar/_dot..., and from the driver's locals and the module's functions. (In a
    scan driver, a state param's name is the local holding the state, and _bar its
    adjoint.)"""
    scan = isinstance(spec, ScanSpec)
    taken = _driver_names(spec)
    for c in function_cnames(kmod, spec).values():
        taken |= {c, c + "_ret"}
    bases: list[str] = []
    for p in kmod.params:
        c = mangle(p, taken)
        while True:
            derived = {c, c + "_so", c + "_si", c + "_bar", c + "_bar_so", c + "_bar_si",
                       c + "_dot", c + "_dot_so", c + "_dot_si", "sum_" + c + "_bar"}
            if scan:
                derived.add(c + "_bar_next")
            if not (derived & taken) and not (derived & RESERVED):
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
    check_spec(kmod, spec)
    names = param_cnames(kmod, spec)
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
    names = param_cnames(kmod, spec)
    args = [Arg("n_parts", "index", "n_parts"), Arg("partials", "csums", "partials")]
    for role, j in reduced(kmod, spec):
        args.append(Arg("acc", "ptr", "acc") if role == "acc" else Arg(names[j] + "_bar", "ptr", "grad", j))
    return args


def check_spec(kmod: KernelModule, spec: LoopSpec | ScanSpec) -> None:
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
    arity = arities(kmod)[kmod.entry]
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
    arity = arities(kmod)[kmod.dual_entry]
    if arity != (1 + k) * (1 + len(wrt)):
        raise ValueError(f"{kmod.dual_entry} returns {arity or 1} values; a scan's dual returns "
                         f"{(1 + k) * (1 + len(wrt))}: (value, states, (1 + {k}) x {len(wrt)} partials)")



def arities(kmod: KernelModule) -> dict[str, int]:
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

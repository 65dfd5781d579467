"""The host as LLVM sees it, and the math mode: what machine code is compiled for.

`host()` describes this machine (triple, CPU, features, LLVM's and llvmlite's versions)
without importing llvmlite when the cache directory holds a plausible record of it
(`implausible`: cheap checks); `verified_host()` checks it once a process against LLVM's
own probe (imports llvmlite), so LLVM is never given another machine's triple or
features. `vector_math_support` and `math_mode` say how transcendental functions are
computed (glibc's libmvec, s2sad's own vector math, or libm).

Invariant: importing this module imports neither llvmlite nor an IR writer (a warm start
uses it: tests/test_cache.py). `state` is the one per-process dict of what has been
probed or made (llvmlite.binding, the host, libmvec; `llvm_jit` keeps its target
machine, JIT and symbol handles there too), so that replacing it starts afresh.
"""
from __future__ import annotations

import ctypes
import os

from .. import envflags
from . import objcache

__all__ = ["Host", "MATH_MODES", "binding", "host", "host_vector_bits", "implausible", "libmvec",
           "math_mode", "state", "vector_math_support", "verified_host"]

state: dict = {}


class Host:
    """LLVM's view of this machine: what the machine code is compiled for."""

    FIELDS = ("triple", "cpu", "features", "llvm_version", "llvmlite_version")
    __slots__ = FIELDS

    def __init__(self, triple: str, cpu: str, features: str, llvm_version: str, llvmlite_version: str) -> None:
        self.triple = triple
        self.cpu = cpu
        self.features = features                    # LLVM's "+avx2,-avx512f,..." list
        self.llvm_version = llvm_version
        self.llvmlite_version = llvmlite_version

    def as_dict(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in self.FIELDS}

    def replace(self, **changes) -> "Host":
        return Host(**{**self.as_dict(), **changes})

    def __eq__(self, other) -> bool:
        return isinstance(other, Host) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.as_dict().values()))

    def __repr__(self) -> str:
        return "Host(" + ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items()) + ")"

    @property
    def feature_set(self) -> frozenset[str]:
        return frozenset(f[1:] for f in self.features.split(",") if f.startswith("+"))


def binding():
    """llvmlite.binding with the native target ready (imported on first use: 30-100 ms)."""
    llvm = state.get("llvm")
    if llvm is None:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        state["llvm"] = llvm
    return llvm


def _probe_host() -> Host:
    llvm = binding()
    import llvmlite

    return Host(triple=llvm.get_process_triple(), cpu=llvm.get_host_cpu_name(),
                features=llvm.get_host_cpu_features().flatten(),
                llvm_version=".".join(map(str, llvm.llvm_version_info)),
                llvmlite_version=llvmlite.__version__)


def host() -> Host:
    """This machine as LLVM sees it; from the cache directory when it has been seen before
    and the record is plausible (`implausible`), else probed (and checked against the
    record: `verified_host`)."""
    h = state.get("host")
    if h is not None:
        return h
    fp = objcache.host_fingerprint()
    rec = objcache.read_record("host-" + fp) if fp else None
    if rec is None:
        h = _probe_host()
        state["probed"] = h
        if fp:
            objcache.write_record("host-" + fp, h.as_dict())
        state["host"] = h
        return h
    why = implausible(rec)
    state["host"] = Host(**{k: rec.get(k, "") for k in Host.FIELDS})
    return verified_host() if why else state["host"]


_X86_FLAGS = {"avx512f": "avx512f", "avx2": "avx2", "avx": "avx", "fma": "fma", "sse4.1": "sse4_1",
              "sse4.2": "sse4_2"}


def implausible(rec: dict[str, str]) -> str | None:
    """Why a host record cannot describe this machine (None: it may). Cheap: no LLVM.
    A record is authenticated (objcache), so this guards against s2sad's own mistakes
    and a key that leaked; the x86 features checked are those that choose libmvec's
    variants, which would not run on a CPU without them."""
    missing = [k for k in Host.FIELDS if not rec.get(k)]
    if missing:
        return f"it lacks {', '.join(missing)}"
    arch = rec["triple"].split("-", 1)[0]
    machine = os.uname().machine if hasattr(os, "uname") else arch
    same = {"amd64": "x86_64", "arm64": "aarch64"}
    if same.get(arch, arch) != same.get(machine, machine):
        return f"its triple {rec['triple']!r} is not for this {machine} machine"
    feats = [f for f in rec["features"].split(",") if f]
    if any(f[:1] not in "+-" or not f[1:].replace(".", "").replace("-", "").replace("_", "").isalnum()
           for f in feats):
        return "its feature list is malformed"
    flags = objcache.cpu_flags()
    if arch in ("x86_64", "amd64") and flags:
        claimed = [f[1:] for f in feats if f[0] == "+" and f[1:] in _X86_FLAGS and _X86_FLAGS[f[1:]] not in flags]
        if claimed:
            return f"it claims {', '.join(claimed)}, which this CPU does not have"
    return None


def verified_host() -> Host:
    """`host()`, checked once a process against LLVM's probe of this machine (imports
    llvmlite): a record that disagrees is reported, replaced, and not used again, so
    code is never compiled for another CPU, nor LLVM given a triple it cannot use."""
    if "probed" not in state:
        recorded, real = host(), _probe_host()
        if recorded != real:
            objcache.report(("record", "host"), f"s2sad: the host record in the kernel cache ({recorded!r}) "
                            f"does not describe this machine ({real!r}); it is replaced and kernels are "
                            f"compiled for this machine", stacklevel=4)
            fp = objcache.host_fingerprint()
            if fp:
                objcache.write_record("host-" + fp, real.as_dict())
            state.pop("vector", None)            # (chosen from the record's features)
        state["host"] = state["probed"] = real
    return state["host"]


def host_vector_bits(h: Host) -> int | None:
    """The widest vector register this host's code may use (for s2sad's own vector
    functions where libmvec gives no width); None where it is not known."""
    feats = h.feature_set
    if h.triple.startswith(("x86_64", "amd64")):
        return 512 if "avx512f" in feats else 256 if "avx2" in feats or "avx" in feats else 128
    if h.triple.startswith(("aarch64", "arm64")):
        return 128
    return None



# ------------------------------------------------------------------ libmvec and the math mode

def libmvec():
    """(ctypes handle, path) of glibc's libmvec, or (None, None)."""
    if "libmvec" not in state:
        found = (None, None)
        for path in ("libmvec.so.1", None):
            try:
                if path is None:
                    from ctypes.util import find_library     # slow: it may run ldconfig

                    path = find_library("mvec")
                    if path is None:
                        break
                found = (ctypes.CDLL(path), path)
                break
            except OSError:
                continue
        state["libmvec"] = found
    return state["libmvec"]


def vector_math_support() -> tuple[tuple[str, ...], object]:
    """The libmvec ISAs this host can run and a symbol-presence test; ((), None) without libmvec."""
    if "vector" in state:
        return state["vector"]
    h = host()
    result: tuple[tuple[str, ...], object] = ((), None)
    if h.triple.startswith(("x86_64", "amd64")):
        lib, _ = libmvec()
        if lib is not None:
            feats = h.feature_set
            isas = tuple(isa for isa, need in (("b", "sse4.1"), ("d", "avx2"), ("e", "avx512f"))
                         if need in feats)
            seen: dict[str, bool] = {}

            def available(symbol: str) -> bool:
                if symbol not in seen:
                    try:
                        lib[symbol]
                        seen[symbol] = True
                    except AttributeError:
                        seen[symbol] = False
                return seen[symbol]

            result = (isas, available)
    state["vector"] = result
    return result


MATH_MODES = ("libmvec", "s2sad", "libm")


def math_mode(vector_math: bool | str | None = None) -> str:
    """How compiled kernels compute transcendental functions, one of MATH_MODES:

    - "libmvec": glibc's libmvec variants (the widest ISA this host runs), and s2sad's
      own vector math for the functions it has no variant of (all of them without libmvec)
    - "s2sad": s2sad's own vector math (`vecmath`: exp, expm1, log, log1p, tanh, cbrt),
      libm's scalar functions for the others
    - "libm": libm's scalar functions (a loop that calls one stays scalar)

    `vector_math`: a mode, True ("libmvec"), False ("libm"), or None: the environment,
    S2SAD_VECMATH=<mode>, else S2SAD_LIBMVEC=0 for "s2sad", else "libmvec".
    """
    if vector_math is None:
        env = envflags.choice("S2SAD_VECMATH", MATH_MODES)     # (a bad value warns: the default below)
        if env:
            return env
        return "libmvec" if envflags.switch("S2SAD_LIBMVEC") else "s2sad"
    if isinstance(vector_math, bool):
        return "libmvec" if vector_math else "libm"
    if vector_math not in MATH_MODES:
        raise ValueError(f"vector_math={vector_math!r}: expected a bool, None or one of "
                         f"{', '.join(MATH_MODES)}")
    return vector_math


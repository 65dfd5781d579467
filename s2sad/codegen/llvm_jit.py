"""LLVM IR text -> optimised machine code in this process, with a ctypes entry point.

One LLJIT instance serves the process; each compiled driver lives in its own JIT
library, kept alive by the `CompiledDriver` (and by the in-memory cache, keyed by the
kernel's source and the driver signature, so a kernel compiles once per signature and
never per array length). The optimiser runs O3 with loop and SLP vectorisation for the
host CPU. When glibc's libmvec can be loaded, calls to libm functions name their SIMD
variants for the ISAs this CPU has (SSE4/AVX2/AVX-512); without it they stay scalar.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import os
import threading
from dataclasses import dataclass, field

import numpy as np

from ..kernel import KernelModule, LoopSpec, ScanSpec
from .llvm_drivers import lower_module
from .llvm_lower import driver_name

_lock = threading.RLock()
_cache: dict[tuple, "CompiledDriver"] = {}
_libnames = itertools.count()
_state: dict = {}


@dataclass(eq=False)
class CompiledDriver:
    """A JIT-compiled driver: call `cfunc(*args)` with the C ABI of kernel.py."""

    name: str
    address: int
    cfunc: object                 # ctypes CFUNCTYPE instance, built once
    argtypes: tuple
    ir: str                       # the module as lowered, before optimisation
    optimized_ir: str
    spec: LoopSpec | ScanSpec
    dtype: np.dtype
    _keepalive: object = field(default=None, repr=False)

    def __call__(self, *args):
        return self.cfunc(*args)


def _llvm():
    """llvmlite.binding with the native target ready, the target machine and the JIT."""
    if not _state:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        features = llvm.get_host_cpu_features()
        tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features.flatten(),
                                          opt=3, jit=True)
        _state.update(llvm=llvm, tm=tm, features={k for k, v in features.items() if v},
                      jit=llvm.create_lljit_compiler(tm))
    return _state


def vector_math_support() -> tuple[tuple[str, ...], object]:
    """The libmvec ISAs this host can run and a symbol-presence test; ((), None) without libmvec."""
    if "vector" in _state:
        return _state["vector"]
    st = _llvm()
    result: tuple[tuple[str, ...], object] = ((), None)
    triple = st["llvm"].get_process_triple()
    if triple.startswith(("x86_64", "amd64")):
        path = ctypes.util.find_library("mvec") or "libmvec.so.1"
        try:
            lib = ctypes.CDLL(path)
            st["llvm"].load_library_permanently(path)
        except (OSError, RuntimeError):
            lib = None
        if lib is not None:
            feats = st["features"]
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
    _state["vector"] = result
    return result


def argtypes_for(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype) -> tuple:
    """ctypes argument types of the driver ABI (pointers as c_void_p: pass `arr.ctypes.data`)."""
    T = ctypes.c_double if np.dtype(dtype) == np.float64 else ctypes.c_float
    i64, ptr = ctypes.c_int64, ctypes.c_void_p

    def layout(lay: str) -> list:
        return {"scalar": [T], "contig": [ptr], "strided": [ptr, i64, i64]}[lay]

    def grad(lay: str) -> list:
        return [ptr] if lay != "strided" else [ptr, i64, i64]

    types: list = [i64, i64]
    for lay in spec.layouts:
        types += layout(lay)
    if isinstance(spec, ScanSpec):
        types.append(ptr)                                   # state
        if spec.value in ("store", "sum"):
            types.append(ptr)
        if spec.grads:
            types.append(T if spec.seed == "scalar" else ptr)
            n_active = len(kmod.active) - spec.n_state
            for a in kmod.active[:n_active]:
                types += grad(spec.layouts[kmod.params.index(a)])
            types += [ptr, ptr]                             # state_bar, tape
        return tuple(types)
    if spec.value in ("store", "sum"):
        types.append(ptr)
    if spec.partials:
        types.append(T if spec.seed == "scalar" else ptr)
    active_layouts = [spec.layouts[kmod.params.index(a)] for a in kmod.active] if spec.needs_dual else []
    if spec.partials:
        for lay in active_layouts:
            types += grad(lay)
    if spec.tangents:
        for lay in active_layouts:
            types += layout(lay)
        types.append(ptr)
    return tuple(types)


def optimize(ir: str) -> tuple[object, str]:
    """Parse, verify and optimise (O3, loop + SLP vectorisation) for the host; (module, text)."""
    st = _llvm()
    llvm, tm = st["llvm"], st["tm"]
    mod = llvm.parse_assembly(ir)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod, str(mod)


def compile_driver(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype, *,
                   vector_math: bool | None = None) -> CompiledDriver:
    """The driver for (kmod, spec, dtype), compiled once per signature and cached.

    `vector_math=False` keeps every libm call scalar (None: use libmvec where it loads,
    unless the environment sets S2SAD_LIBMVEC=0).
    """
    dt = np.dtype(dtype)
    if vector_math is None:
        vector_math = os.environ.get("S2SAD_LIBMVEC", "1") != "0"
    key = (kmod.name, kmod.source(), kmod.entry, tuple(kmod.params), kmod.dual_entry,
           tuple(kmod.active), spec, dt.str, bool(vector_math))
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            return hit
        st = _llvm()
        isas, available = vector_math_support() if vector_math else ((), None)
        ir = lower_module(kmod, spec, dt, vector_isas=isas, available=available)
        _mod, optimized = optimize(ir)
        name = driver_name(kmod, spec, dt)
        tracker = (st["llvm"].JITLibraryBuilder().add_ir(optimized).add_current_process()
                   .export_symbol(name).link(st["jit"], f"s2sad_{next(_libnames)}_{name}"))
        address = tracker[name]
        argtypes = argtypes_for(kmod, spec, dt)
        cfunc = ctypes.CFUNCTYPE(None, *argtypes)(address)
        compiled = CompiledDriver(name=name, address=address, cfunc=cfunc, argtypes=argtypes, ir=ir,
                                  optimized_ir=optimized, spec=spec, dtype=dt, _keepalive=tracker)
        _cache[key] = compiled
        return compiled

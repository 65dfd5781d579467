"""LLVM IR text -> optimised machine code in this process, with a ctypes entry point;
compiled kernels cached in memory and on disk.

A driver is compiled once per signature, never per array length: both the in-memory
cache and the disk cache (`objcache`) are keyed by a digest of the module's IR text
(which holds the kernel's functions and every helper it calls, as lowered), the spec
and dtype, the s2sad version, the optimisation pipeline, llvmlite's and LLVM's
versions, the host's triple, CPU name and features, and the math mode with the libmvec
ISAs (`llvm_keys.disk_key`). The optimiser runs O3 with loop and SLP vectorisation for
the host CPU; `TargetMachine.emit_object` writes relocatable object code, which is stored
on disk and mapped into the process by `objload` (LLVM's JIT links it where `objload`
cannot).

Transcendental functions (`llvm_host.math_mode`): when glibc's libmvec can be loaded, calls name
its variant for the widest ISA this CPU has (SSE4/AVX2/AVX-512), the same routine in
vector loops and scalar code; functions it lacks, or all of them without libmvec, use
s2sad's own vector math (`vecmath`) where it has them, libm's scalar functions elsewhere.

A warm start does not import llvmlite, nor make the dual, nor lower IR: the runtime asks
for a driver by its source (`driver`, keyed by `source_key`: a digest of the kernel's
scalar program, its user rules and s2sad's own source files, with everything `disk_key`
holds besides the IR; lowering is deterministic, so this decides the IR too). The
host's LLVM-side description is stored in the cache directory under a fingerprint of
the host (`objcache.host_fingerprint`), and the object is loaded, authenticated (an
HMAC under the user's key: `objcache`), and mapped. A host record that does not
describe this machine is probed again (`llvm_host.host`: cheap checks on a warm start;
`verified_host`: LLVM's own probe whenever something is compiled), so LLVM is never
given another machine's triple or features. Only on a miss is the module made, lowered
and compiled, and filed under that key.

Environment: S2SAD_CACHE_DIR, S2SAD_CACHE=0, S2SAD_CACHE_KEY (see objcache), S2SAD_LIBMVEC=0 (no libmvec:
s2sad's own vector math), S2SAD_VECMATH=libmvec|s2sad|libm (see `math_mode`),
S2SAD_OBJLOAD=0 (link objects with LLVM's JIT, not `objload`).
"""
from __future__ import annotations

import _thread
import ctypes
import itertools
import os
import sys
import time
import warnings
from typing import Callable

import numpy as np

from .. import envflags
from ..kernel import KernelModule, KernelSignature, LoopSpec, ScanSpec, active_indices
from . import llvm_host, llvm_pool, objcache, objload
# (host, host_vector_bits: called through this module, so that a test may replace them here)
from .llvm_host import host, host_vector_bits, math_mode, vector_math_support, verified_host
from .llvm_keys import disk_key, source_key

_lock = _thread.RLock()        # (threading's RLock, without importing threading)


def _new_lock_in_child() -> None:
    """A child forked while another thread compiled would wait for `_lock` forever: it
    gets its own. (LLVM objects a compile was building in the parent are not touched
    again by the child: that compile's thread does not exist there.)"""
    global _lock
    _lock = _thread.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)
_cache: dict[str, "CompiledDriver"] = {}     # disk key -> driver
_libnames = itertools.count()

# the optimisation level of the target machine (llvm_keys.PIPELINE names it in every key)
OPT_LEVEL = 3


class CompiledDriver:
    """A compiled driver: call `cfunc(*args)` with the C ABI of kernel.py.

    (A plain class, not a dataclass: a warm start pays for every class it creates.)"""

    __slots__ = ("name", "address", "cfunc", "argtypes", "ir", "optimized_ir", "spec", "dtype", "origin",
                 "key", "timings", "active_idx", "_entry", "_large_entry", "_keepalive", "__weakref__")

    def __init__(self, *, name: str, address: int, cfunc, argtypes: tuple, ir: str, optimized_ir: str,
                 spec: LoopSpec | ScanSpec, dtype: np.dtype, origin: str = "compiled", key: str = "",
                 timings: dict | None = None, active_idx: tuple[int, ...] = (), _keepalive=None) -> None:
        self.name = name
        self.address = address
        self.cfunc = cfunc                  # ctypes CFUNCTYPE instance, built once
        self.argtypes = argtypes
        self.ir = ir                        # the module as lowered, before optimisation
        self.optimized_ir = optimized_ir
        self.spec = spec
        self.dtype = dtype
        self.origin = origin                # "compiled" (by LLVM, in this process) | "disk" (the cache)
        self.key = key                      # the disk cache key
        self.timings = timings or {}        # seconds per phase of the first call
        self.active_idx = active_idx        # the params it differentiates (a scan's states not)
        self._entry = None
        self._large_entry = None
        self._keepalive = _keepalive        # the mapped code (objload) or LLJIT's resource tracker

    def python_entry(self):
        """The driver's Python entry (`llvm_entry`: entry(*params, scale) -> (value,
        grads...) or NotImplemented), or None when it has none or this process cannot
        use one."""
        if self._entry is None:
            from . import llvm_entry

            self._entry = False
            if llvm_entry.qualifies(self.spec) and llvm_entry.supported():
                address, keep, name = entry_code(self.spec, self.dtype, self.active_idx)
                self._entry = llvm_entry.python_entry(self.address, address, name, self.dtype,
                                                      (keep, self._keepalive)) or False
        return self._entry or None

    def large_python_entry(self):
        """The driver's large entry (`llvm_entry`: any size, the GIL released around the
        driver), or None where its spec has none or this process cannot use one."""
        if self._large_entry is None:
            from . import llvm_entry

            self._large_entry = False
            if llvm_entry.large_qualifies(self.spec, self.active_idx) and llvm_entry.supported():
                address, keep, name = entry_code(self.spec, self.dtype, self.active_idx, large=True)
                self._large_entry = llvm_entry.python_entry(self.address, address, name, self.dtype,
                                                            (keep, self._keepalive)) or False
        return self._large_entry or None

    def __call__(self, *args):
        return self.cfunc(*args)

    def __repr__(self) -> str:
        return (f"CompiledDriver(name={self.name!r}, address={self.address:#x}, spec={self.spec!r}, "
                f"dtype={self.dtype!r}, origin={self.origin!r})")


# ------------------------------------------------------------------ the target machine

def _llvm():
    """llvmlite.binding, the target machine for this host (`host()`), and the JIT (lazily)."""
    if "tm" not in llvm_host.state:
        llvm, h = llvm_host.binding(), verified_host()
        target = llvm.Target.from_triple(h.triple)
        llvm_host.state["tm"] = target.create_target_machine(cpu=h.cpu, features=h.features, opt=OPT_LEVEL,
                                                    reloc="pic", codemodel="default")
    return llvm_host.state


def _machine(level: int):
    """The host's target machine with the code generator at `level` (OPT_LEVEL: `_llvm`'s)."""
    if level == OPT_LEVEL:
        return _llvm()["tm"]
    key = f"tm{level}"
    if key not in llvm_host.state:
        llvm, h = _llvm()["llvm"], verified_host()
        llvm_host.state[key] = llvm.Target.from_triple(h.triple).create_target_machine(
            cpu=h.cpu, features=h.features, opt=level, reloc="pic", codemodel="default")
    return llvm_host.state[key]


def _lljit():
    if "jit" not in llvm_host.state:
        st = _llvm()
        llvm_host.state["jit"] = st["llvm"].create_lljit_compiler(st["tm"])
    return llvm_host.state["jit"]


# ------------------------------------------------------------------ symbols

_symbols: dict[str, int | None] = {}


def _resolve(name: str) -> int | None:
    """The address of a symbol a kernel calls: libmvec, then the process (libm is there)."""
    if name in _symbols:
        return _symbols[name]
    if "handles" not in llvm_host.state:
        handles = [llvm_host.libmvec()[0], ctypes.CDLL(None)]
        try:
            handles.append(ctypes.CDLL("libm.so.6"))
        except OSError:
            pass
        llvm_host.state["handles"] = [h for h in handles if h is not None]
    addr = None
    for h in llvm_host.state["handles"]:
        try:
            addr = ctypes.cast(h[name], ctypes.c_void_p).value
            break
        except AttributeError:
            continue
    _symbols[name] = addr
    return addr


# ------------------------------------------------------------------ the ABI

def argtypes_for(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype) -> tuple:
    """ctypes argument types of the driver ABI (pointers as c_void_p: pass `arr.ctypes.data`)."""
    T = ctypes.c_double if np.dtype(dtype) == np.float64 else ctypes.c_float
    i64, ptr = ctypes.c_int64, ctypes.c_void_p

    def layout(lay: str) -> list:
        return [T] if lay == "scalar" else [ptr] if lay == "contig" else [ptr, i64, i64]

    def grad(lay: str) -> list:
        return [ptr] if lay in ("scalar", "contig") else [ptr, i64, i64]

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


# ------------------------------------------------------------------ compiling

def parse(ir: str):
    """The module of `ir`, verified, for the host's target."""
    st = _llvm()
    mod = st["llvm"].parse_assembly(ir)
    mod.triple = st["tm"].triple
    mod.data_layout = str(st["tm"].target_data)
    mod.verify()
    return mod


def optimize(ir: str) -> tuple[object, str]:
    """Parse, verify and optimise (O3, loop + SLP vectorisation) for the host; (module, text)."""
    st = _llvm()
    llvm, tm = st["llvm"], st["tm"]
    mod = parse(ir)
    pto = llvm.create_pipeline_tuning_options(speed_level=OPT_LEVEL)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    # the vector functions the vectoriser called (s2sad's own vector math) are inlined
    # into the vector loops now; inlining ran before the vectoriser made those calls
    after = llvm.create_new_module_pass_manager()
    after.add_always_inliner_pass()
    after.run(mod, pb)
    return mod, str(mod)


def _link(obj: bytes, names: list[str]) -> tuple[dict[str, int], object]:
    """Map object code into the process; (the address of each of `names`, what keeps it alive)."""
    if objload.supported() and envflags.switch("S2SAD_OBJLOAD"):
        try:
            mapped = envflags.switch("S2SAD_PERF_MAP", False)
            loaded = objload.load(obj, names, _resolve, functions=mapped)
            if mapped:
                perf_map(loaded.functions)
            return {n: loaded.addresses[n] for n in names}, loaded
        except objload.UnsupportedObject:
            pass
    st = _llvm()
    if "libmvec_permanent" not in llvm_host.state:
        _, path = llvm_host.libmvec()
        if path is not None:
            st["llvm"].load_library_permanently(path)
        llvm_host.state["libmvec_permanent"] = True
    builder = st["llvm"].JITLibraryBuilder().add_object_img(obj).add_current_process()
    for name in names:
        builder = builder.export_symbol(name)
    tracker = builder.link(_lljit(), f"s2sad_{next(_libnames)}_{names[0]}")
    return {name: tracker[name] for name in names}, tracker


def perf_map(functions, folder: str = "/tmp") -> str:
    """Append (address, size, name) of mapped machine code to `folder`/perf-PID.map, the
    file Linux `perf report` reads to name samples in code no ELF file describes
    (S2SAD_PERF_MAP=1: every object s2sad's loader maps, from then on). Its path."""
    path = os.path.join(folder, f"perf-{os.getpid()}.map")
    with open(path, "a") as f:
        f.writelines(f"{a:x} {n:x} {name}\n" for a, n, name in functions)
    return path


def module_ir(kmod: KernelModule, spec: LoopSpec | ScanSpec, dt: np.dtype, **lowering) -> str:
    """The driver's module as lowered (`llvm_drivers.lower_module`)."""
    from .llvm_drivers import lower_module

    return lower_module(kmod, spec, dt, **lowering)


def _from_disk(key: str, spec: LoopSpec | ScanSpec, dt: np.dtype, sig, name: str | None,
               timings: dict[str, float], ir: str = "") -> CompiledDriver | None:
    """The driver stored under `key`, mapped into the process; None when there is none or
    it cannot be used (a warning says why, and the caller compiles it afresh). `ir`: the
    module's IR where the caller has it (older entries hold only the object and the
    optimised IR)."""
    entry = objcache.load(key)
    if entry is None:
        return None
    header, blobs = entry
    try:
        symbol = header.get("symbol", "")
        if (name is not None and symbol != name) or len(blobs) not in (2, 3) or not symbol.isidentifier():
            raise ValueError("the entry holds another kernel")
        obj, optimized = blobs[0], blobs[1].decode()
        ir = blobs[2].decode() if len(blobs) == 3 else ir
        addresses, keep = _link(obj, [symbol])
    except Exception as e:  # noqa: BLE001 - whatever is wrong with it: compile afresh
        warnings.warn(f"s2sad: the cached kernel for {name or sig.name} could not be loaded ({e}); "
                      f"compiling it again", objcache.CacheWarning, stacklevel=4)
        return None
    return _driver_at(symbol, addresses[symbol], keep, sig, spec, dt, ir, optimized, "disk", key, timings)


def callable_at(address: int, argtypes, keep):
    """A ctypes function of `argtypes` (returning nothing) at `address`, holding `keep`:
    whoever holds the entry point holds the code."""
    cfunc = ctypes.CFUNCTYPE(None, *argtypes)(address)
    cfunc._s2sad_code = keep
    return cfunc


def _driver_at(name: str, address: int, keep, kmod, spec, dt: np.dtype, ir: str, optimized: str, origin: str,
               key: str, timings: dict) -> CompiledDriver:
    argtypes = argtypes_for(kmod, spec, dt)
    cfunc = callable_at(address, argtypes, keep)
    return CompiledDriver(name=name, address=address, cfunc=cfunc, argtypes=argtypes, ir=ir, optimized_ir=optimized,
                          spec=spec, dtype=dt, origin=origin, key=key, timings=timings,
                          active_idx=active_indices(kmod, spec), _keepalive=keep)


_entries: dict[str, tuple[dict[str, int], object]] = {}   # first symbol -> ({symbol: address}, keepalive)


def _named_code(names: tuple[str, ...], make_ir: Callable[[], str], spec, dt: np.dtype,
                optimized: bool = True, codegen_level: int = OPT_LEVEL) -> tuple[dict[str, int], object]:
    """({name: address}, keepalive) of the functions `names` in the module `make_ir()`
    makes: compiled once a process, and cached on disk by a digest of the IR and the
    host. `optimized` False: the IR is as it should run (only the code generator's own
    optimisations); `codegen_level` the code generator's (0: fast instruction selection
    and register allocation, for long straight-line code). Call with _lock held."""
    hit = _entries.get(names[0])
    if hit is None:
        ir = make_ir()
        key = disk_key(ir, spec, dt, "libm", (), host())
        hit = _named_from_disk(key, names)
        if hit is None:
            with objcache.building(key):          # (one process of the machine compiles it)
                hit = _named_from_disk(key, names)
                if hit is None:
                    mod = optimize(ir)[0] if optimized else parse(ir)
                    obj = _machine(codegen_level).emit_object(mod)
                    objcache.store(key, [obj], {"symbol": ",".join(names)})
                    hit = _link(obj, list(names))
        _entries[names[0]] = hit
    return hit


def _named_from_disk(key: str, names: tuple[str, ...]) -> tuple[dict[str, int], object] | None:
    got = objcache.load(key)
    if got is None:
        return None
    try:
        if got[0].get("symbol") != ",".join(names) or len(got[1]) < 1:
            raise ValueError("the entry holds other functions")
        return _link(got[1][0], list(names))
    except Exception as e:  # noqa: BLE001 - compile afresh
        warnings.warn(f"s2sad: the cached entry {names[0]} could not be loaded ({e}); compiling it again",
                      objcache.CacheWarning, stacklevel=5)
        return None


def entry_code(spec: LoopSpec | ScanSpec, dtype, active_idx: tuple[int, ...],
               large: bool = False) -> tuple[int, object, str]:
    """The Python entry for drivers of this shape (`llvm_entry`; `large`: its large
    entry), compiled once per shape and cached in memory and on disk like a driver:
    (address, keepalive, symbol)."""
    from . import llvm_entry

    dt = np.dtype(dtype)
    name = llvm_entry.entry_name(spec, dt, active_idx, large)     # names the shape: one entry a process
    with _lock:
        addresses, keep = _named_code((name,), lambda: llvm_entry.entry_ir(spec, dt, active_idx, large), spec, dt)
        return addresses[name], keep, name


def small_code(name: str, make_ir: Callable[[], str], long: bool) -> tuple[int, object]:
    """(address, keepalive) of a straight-line function s2sad wrote whole
    (`llvm_small`: an unrolled Hessian), named `name` (a digest of its program, so one
    name is one IR), compiled once a process and cached on disk. Not optimised: the
    program is already one expression per value (hash-consed), and its size is bounded.
    `long`: its code generated at level 0 (LLVM's scheduler and register allocator take
    seconds on a block of thousands of values; level 0 about 15x less, the code ~3x slower)."""
    level = 0 if long else OPT_LEVEL
    with _lock:
        addresses, keep = _named_code((name,), make_ir, f"small (not optimised, codegen {level})",
                                      np.dtype(np.float64), optimized=False, codegen_level=level)
        return addresses[name], keep


def gemm_code(dtype, bias: bool = False) -> tuple[int, object]:
    """(address, keepalive) of s2sad's matrix product for `dtype` (`llvm_gemm`), its
    tiles sized for this host's vector registers (`bias`: the one that adds a bias row
    to its result). Its IR is explicit vector code, which runs as fast unoptimised (the
    register allocator keeps the tile) and compiles in about 20 ms instead of 170."""
    from . import llvm_gemm

    dt = np.dtype(dtype)
    with _lock:
        h = host()
        bits = host_vector_bits(h)
        wide = "avx512f" in h.feature_set or h.triple.startswith(("aarch64", "arm64"))
        make = lambda: llvm_gemm.gemm_ir(dt, llvm_gemm.lanes_for(bits, dt), llvm_gemm.vectors_for(32 if wide else 16))
        names = (llvm_gemm.symbol(dt), llvm_gemm.symbol(dt, bias=True))
        addresses, keep = _named_code(names, make, "gemm (not optimised)", dt, optimized=False)
        return addresses[names[bias]], keep


def pool_code() -> tuple[dict[str, int], object]:
    """({symbol: address}, keepalive) of the memory pool's handler functions (`llvm_pool`)."""
    with _lock:
        return _named_code(llvm_pool.NAMES, llvm_pool.pool_ir, "pool", np.dtype(np.uint8))


def reduce_code(dtype) -> tuple[dict[str, int], object]:
    """({symbol: address}, keepalive) of the reductions of `dtype` (`llvm_reduce`)."""
    from . import llvm_reduce

    dt = np.dtype(dtype)
    names = tuple(llvm_reduce.symbol("rows", op, dt) for op in llvm_reduce.ROW_OPS) + \
        (llvm_reduce.symbol("cols", "sum", dt),)
    with _lock:
        return _named_code(names, lambda: llvm_reduce.reduce_ir(dt), "reduce", dt)


def rows_code(dtype) -> tuple[dict[str, int], object]:
    """({symbol: address}, keepalive) of the row-wise kernels of `dtype` (`llvm_rows`:
    log-sum-exp, softmax, log-softmax, layer normalisation, one pass per row)."""
    from . import llvm_rows

    dt = np.dtype(dtype)
    names = tuple(llvm_rows.symbol(kind, dt) for kind in llvm_rows.ALL_KINDS)
    with _lock:
        return _named_code(names, lambda: llvm_rows.rows_ir(dt), "rows", dt)


def compile_driver(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype, *,
                   vector_math: bool | str | None = None, key: str | None = None) -> CompiledDriver:
    """The driver for (kmod, spec, dtype), compiled once per signature and cached.

    `vector_math` chooses how transcendental functions are computed (`math_mode`):
    None reads the environment (libmvec where it loads), False keeps every libm call
    scalar, "s2sad" uses s2sad's own vector math. `key`: the cache key to file it under
    (`source_key`, see `driver`); by default the digest of its IR (`disk_key`).
    """
    from .llvm_lower import driver_name

    dt = np.dtype(dtype)
    mode = math_mode(vector_math)
    with _lock:
        clock = time.perf_counter
        t0 = t = clock()
        timings: dict[str, float] = {}

        def lap(phase: str) -> None:
            nonlocal t
            now = clock()
            timings[phase] = timings.get(phase, 0.0) + now - t
            t = now

        h = verified_host()                      # (it compiles: LLVM is needed anyway)
        isas, available = vector_math_support() if mode == "libmvec" else ((), None)
        lap("host")
        # the IR holds every function the driver runs and its signature: modules that lower
        # to the same text share one driver
        ir = module_ir(kmod, spec, dt, vector_isas=isas, available=available, own_math=mode != "libm",
                       vector_bits=host_vector_bits(h))
        name = driver_name(kmod, spec, dt)
        dkey = key or disk_key(ir, spec, dt, mode, isas, h)
        hit = _cache.get(dkey)
        if hit is not None:
            return hit
        lap("lower")
        compiled = None if key else _from_disk(dkey, spec, dt, kmod, name, timings, ir)
        lap("cache")
        if compiled is None and not key:
            # one process of the machine compiles it (`driver` holds the lock when it gives a key)
            with objcache.building(dkey):
                compiled = _from_disk(dkey, spec, dt, kmod, name, timings, ir)
                lap("wait")
                if compiled is None:
                    compiled = _compile(kmod, spec, dt, ir, name, dkey, h, timings, lap)
        elif compiled is None:
            compiled = _compile(kmod, spec, dt, ir, name, dkey, h, timings, lap)
        lap("load")
        timings["total"] = clock() - t0
        _cache[dkey] = compiled
        return compiled


def _compile(kmod, spec, dt: np.dtype, ir: str, name: str, dkey: str, h, timings: dict, lap) -> CompiledDriver:
    """LLVM's compile of `ir`, filed on disk under `dkey`, mapped. Call with _lock held."""
    st = _llvm()
    lap("llvm init")
    mod, optimized = optimize(ir)
    lap("optimize")
    obj = st["tm"].emit_object(mod)
    lap("codegen")
    objcache.store(dkey, [obj, optimized.encode(), ir.encode()],
                   {"symbol": name, "s2sad": getattr(sys.modules.get("s2sad"), "__version__", "?"),
                    "llvm": h.llvm_version, "cpu": h.cpu})
    lap("store")
    addresses, keep = _link(obj, [name])
    return _driver_at(name, addresses[name], keep, kmod, spec, dt, ir, optimized, "compiled", dkey, timings)


def driver(sig: KernelSignature, make_module: Callable[[], KernelModule], spec: LoopSpec | ScanSpec, dtype,
           *, vector_math: bool | str | None = None) -> CompiledDriver:
    """The driver for the kernel `sig` names, found by its source before anything is made.

    A warm start lands here: the key (`source_key`) is a digest of the program's source
    and of s2sad's own, so a driver on disk is mapped without making the dual
    (`make_module`), lowering IR or importing the lowering modules. Otherwise the module
    is made and compiled (`compile_driver`) and filed under the same key.
    """
    dt = np.dtype(dtype)
    mode = math_mode(vector_math)
    with _lock:
        t0 = time.perf_counter()
        isas = vector_math_support()[0] if mode == "libmvec" else ()
        key = source_key(sig, spec, dt, mode, isas, host())
        hit = _cache.get(key)
        if hit is not None:
            return hit
        compiled = _from_disk(key, spec, dt, sig, None, {})
        if compiled is None:
            with objcache.building(key):          # (one process of the machine compiles it)
                compiled = _from_disk(key, spec, dt, sig, None, {})
                if compiled is None:
                    return compile_driver(make_module(), spec, dt, vector_math=vector_math, key=key)
        compiled.timings["total"] = time.perf_counter() - t0
        _cache[key] = compiled
        return compiled

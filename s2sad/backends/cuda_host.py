"""Run the CUDA backend's generated source on the CPU: g++ plus a shim header.

The generated `.cu` text is compiled *unmodified*: a wrapper translation unit includes
`SHIM` (which defines `__global__`, `__device__`, `__shared__`, `threadIdx`,
`blockIdx`, `blockDim`, `gridDim`, `__syncthreads` and `atomicAdd` for the host; the
math functions come from libm) and then each source inside its own namespace, and
adds, per kernel, an `extern "C" <kernel>__host(unsigned grid, unsigned block, <the
kernel's parameters>)` that runs the kernel as a launch of `grid` x `block` threads:

- blocks run one after another; the threads of a block are fibers (ucontext) that
  one OS thread runs in lockstep phases: each runs until its next `__syncthreads()`
  or its end, then the next; so `__syncthreads()` is a barrier and `__shared__`
  (a function-local `static thread_local`) is shared by the block, exactly as the
  shared-memory block reduction of the generated drivers needs. Threads that
  diverge at a barrier (some finish while others wait) raise an error.
- `atomicAdd` is a plain read-modify-write (one launch runs on one OS thread).
Everything is deterministic for a given launch shape.

`launch` has the signature and argument conventions of `cuda_launch.launch` (numpy arrays in
place of cupy arrays) plus an explicit `grid`/`block`, and goes through the same
`cuda_launch.execute` (launch configuration, partials buffer, finish kernel; for a `ScanSpec`,
the one-thread launch and the tape). `build` compiles
many drivers into one shared library with a single g++ run; libraries are cached in a
temporary directory keyed by the hash of their text.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import BackendUnavailableError
from ..kernel import KernelModule, LoopSpec, ScanSpec
from ..codegen import cuda, objcache, safedir
from . import cuda_launch

SHIM = r"""// s2sad: host emulation of the CUDA subset used by generated kernels (g++ -std=c++17)
#pragma once
#include <math.h>
#include <ucontext.h>
#include <functional>
#include <memory>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static thread_local
#define __restrict__

struct uint3 { unsigned int x, y, z; };

inline thread_local uint3 threadIdx = {0, 0, 0};
inline thread_local uint3 blockIdx = {0, 0, 0};
inline thread_local uint3 blockDim = {1, 1, 1};
inline thread_local uint3 gridDim = {1, 1, 1};

// The threads of a block are fibers run in lockstep phases by one OS thread: each
// runs until its next __syncthreads() (or its end), then the next one runs.
inline thread_local ucontext_t s2sad_scheduler;
inline thread_local ucontext_t* s2sad_current = nullptr;   // null: a block of one thread
inline thread_local const std::function<void()>* s2sad_kernel = nullptr;
inline thread_local bool s2sad_finished = false;
inline thread_local int s2sad_error = 0;   // 1: threads of a block diverged at a barrier

inline void __syncthreads() {
    if (s2sad_current) swapcontext(s2sad_current, &s2sad_scheduler);
}

static void s2sad_fiber_main() {
    (*s2sad_kernel)();
    s2sad_finished = true;  // returning resumes the scheduler (uc_link)
}

inline double atomicAdd(double* p, double v) { const double old = *p; *p = old + v; return old; }
inline float atomicAdd(float* p, float v) { const float old = *p; *p = old + v; return old; }

// Runs `kernel` as a launch of grid x block threads: blocks one after another, the
// threads of a block as fibers, so that __syncthreads and __shared__ behave as on a GPU.
inline void s2sad_host_launch(unsigned int grid, unsigned int block, const std::function<void()>& kernel) {
    s2sad_kernel = &kernel;
    gridDim = {grid, 1, 1};
    blockDim = {block, 1, 1};
    if (block == 1) {
        s2sad_current = nullptr;
        for (unsigned int b = 0; b < grid; ++b) {
            blockIdx = {b, 0, 0};
            threadIdx = {0, 0, 0};
            kernel();
        }
        return;
    }
    const size_t stack_size = size_t(1) << 18;
    std::unique_ptr<char[]> stacks(new char[stack_size * block]);
    std::vector<ucontext_t> ctx(block);
    std::vector<char> done(block);
    for (unsigned int b = 0; b < grid; ++b) {
        blockIdx = {b, 0, 0};
        for (unsigned int t = 0; t < block; ++t) {
            getcontext(&ctx[t]);
            ctx[t].uc_stack.ss_sp = stacks.get() + stack_size * t;
            ctx[t].uc_stack.ss_size = stack_size;
            ctx[t].uc_link = &s2sad_scheduler;
            makecontext(&ctx[t], s2sad_fiber_main, 0);
            done[t] = 0;
        }
        unsigned int alive = block;
        while (alive) {
            unsigned int finished = 0, waiting = 0;
            for (unsigned int t = 0; t < block; ++t) {
                if (done[t]) continue;
                threadIdx = {t, 0, 0};
                s2sad_current = &ctx[t];
                s2sad_finished = false;
                swapcontext(&s2sad_scheduler, &ctx[t]);
                if (s2sad_finished) {
                    done[t] = 1;
                    ++finished;
                } else {
                    ++waiting;
                }
            }
            if (finished && waiting) s2sad_error = 1;
            alive -= finished;
        }
    }
    s2sad_current = nullptr;
}
"""

# -fno-gnu-unique: each library keeps its own copy of the shim's inline variables
CXXFLAGS = ["-O2", "-std=c++17", "-fPIC", "-shared", "-ffp-contract=off", "-fno-gnu-unique"]

_LOCK = threading.Lock()
_LIBS: dict[str, ctypes.CDLL] = {}        # source hash -> library holding its kernels
_FUNCS: dict[tuple[str, str], Any] = {}   # (source hash, kernel) -> ctypes function


def available() -> str | None:
    """None when g++ is installed, else a message."""
    return None if shutil.which("g++") else "g++ is not installed"


_PRIVATE: list[Path] = []       # this process's own directory, where the shared one is refused


def cache_dir() -> Path:
    """Where sources and libraries are kept: `$S2SAD_CUDA_HOST_CACHE`, else a directory
    in the temporary directory named for the user. The libraries are loaded into this
    process, so it is checked as the kernel cache is (`safedir`: this user's, written by
    nobody else, under parents only this user or root can write) every time; a directory
    that fails is not used (a warning, and a private temporary directory instead)."""
    d = os.environ.get("S2SAD_CUDA_HOST_CACHE")
    path = Path(d) if d else Path(tempfile.gettempdir()) / f"s2sad-cuda-host-{os.getuid()}"
    if not safedir.supported():
        path.mkdir(parents=True, exist_ok=True)
        return path
    try:
        return Path(safedir.open_private(str(path)).real)
    except safedir.Unsafe as e:
        objcache.report(("cuda host directory", str(path)), f"s2sad: not using {path} for the CUDA host "
                        f"emulation's libraries: {e}. A private temporary directory is used instead; set "
                        f"S2SAD_CUDA_HOST_CACHE to a private directory to keep them.", stacklevel=3)
    if not _PRIVATE:
        _PRIVATE.append(Path(tempfile.mkdtemp(prefix="s2sad-cuda-host-")))
    return _PRIVATE[0]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _write(path: Path, text: str) -> None:
    if path.exists():
        return
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _kernels(kmod: KernelModule, spec: LoopSpec | ScanSpec, tag: str) -> list[tuple[str, list[cuda.Arg]]]:
    kernels = [(cuda.driver_name(kmod, spec, tag), cuda.driver_args(kmod, spec))]
    if cuda.reduced(kmod, spec):
        kernels.append((cuda.finish_name(kmod, spec, tag), cuda.finish_args(kmod, spec)))
    return kernels


def _wrapper(entries: list[tuple[str, str, list]]) -> str:
    lines = [f'#include "cuda_shim_{_hash(SHIM)}.h"', ""]
    for k, (source, tag, kernels) in enumerate(entries):
        ns = f"s2sad_k{k}"
        T = "double" if tag == "f64" else "float"
        lines += [f"namespace {ns} {{", f'#include "k_{_hash(source)}.cu"', f"}}  // namespace {ns}", ""]
        for name, args in kernels:
            decls = ", ".join(["unsigned int grid", "unsigned int block"] + [a.decl(T) for a in args])
            names = ", ".join(a.name for a in args)
            lines += [f'extern "C" void {name}__host({decls})', "{",
                      f"    s2sad_host_launch(grid, block, [&] {{ {ns}::{name}({names}); }});", "}", ""]
    lines += ['extern "C" int s2sad_host_take_error()', "{",
              "    const int e = s2sad_error;", "    s2sad_error = 0;", "    return e;", "}", ""]
    return "\n".join(lines)


def build(items: Iterable[tuple[KernelModule, LoopSpec, Any]]) -> None:
    """Compile the drivers of several (module, spec, dtype) with one g++ run (one per
    batch of distinct driver names), and register them for `launch`."""
    build_sources((cuda.lower(kmod, spec, dtype), cuda.dtype_tag(dtype),
                   _kernels(kmod, spec, cuda.dtype_tag(dtype))) for kmod, spec, dtype in items)


def build_sources(entries: Iterable[tuple[str, str, list]]) -> None:
    """Compile CUDA sources given as (source, dtype tag, [(kernel name, [Arg...])...])."""
    todo: list[tuple[str, str, list]] = []
    seen: set[str] = set()
    for source, tag, kernels in entries:
        h = _hash(source)
        if h in _LIBS or h in seen:
            continue
        seen.add(h)
        todo.append((source, tag, kernels))
    batches = []
    while todo:
        batch, rest, names = [], [], set()
        for e in todo:
            mine = {name for name, _ in e[2]}
            (rest if mine & names else batch).append(e)
            names |= mine
        batches.append(batch)
        todo = rest
    # one g++ per core: split big batches, compile them concurrently
    jobs = max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else (os.cpu_count() or 1), 8))
    chunks = []
    for batch in batches:
        size = max(8, -(-len(batch) // jobs))
        chunks += [batch[k:k + size] for k in range(0, len(batch), size)]
    if len(chunks) == 1:
        _build_batch(chunks[0])
        return
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for f in [pool.submit(_build_batch, c) for c in chunks]:
            f.result()


def _build_batch(entries: list[tuple[str, str, list]]) -> None:
    if available() is not None:
        raise BackendUnavailableError("the CUDA host emulation needs g++", hint="install g++")
    d = cache_dir()
    _write(d / f"cuda_shim_{_hash(SHIM)}.h", SHIM)
    for source, *_ in entries:
        _write(d / f"k_{_hash(source)}.cu", source)
    tu = _wrapper(entries)
    key = _hash(SHIM + "\0" + " ".join(CXXFLAGS) + "\0" + tu + "\0"
                + "\0".join(e[0] for e in entries))
    so = d / f"lib_{key}.so"
    if not so.exists():
        cpp = d / f"tu_{key}.cpp"
        _write(cpp, tu)
        tmp = so.with_name(f"{so.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        proc = subprocess.run(["g++", *CXXFLAGS, f"-I{d}", "-o", str(tmp), str(cpp)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise cuda.CudaCompileError(
                f"g++ rejected the generated CUDA source (host emulation, {cpp}):\n"
                + proc.stderr[-8000:])
        os.replace(tmp, so)
    lib = ctypes.CDLL(str(so))
    lib.s2sad_host_take_error.restype = ctypes.c_int
    with _LOCK:
        for source, *_ in entries:
            _LIBS[_hash(source)] = lib


def _function(source: str, name: str, tag: str, args: Sequence[cuda.Arg]) -> Any:
    h = _hash(source)
    fn = _FUNCS.get((h, name))
    if fn is not None:
        return fn
    lib = _LIBS[h]
    fn = getattr(lib, name + "__host")
    real = ctypes.c_double if tag == "f64" else ctypes.c_float
    kinds = {"index": ctypes.c_longlong, "value": real, "ptr": ctypes.c_void_p, "cptr": ctypes.c_void_p,
             "sums": ctypes.c_void_p, "csums": ctypes.c_void_p}
    fn.argtypes = [ctypes.c_uint, ctypes.c_uint] + [kinds[a.kind] for a in args]
    fn.restype = None
    _FUNCS[(h, name)] = fn
    return fn


def call(source: str, name: str, tag: str, grid: int, block: int,
         args: Sequence[tuple[cuda.Arg, Any]]) -> None:
    """Launch kernel `name` of an already built `source` over grid x block emulated
    threads; args are (Arg, value) with numpy arrays for pointers."""
    fn = _function(source, name, tag, [a for a, _ in args])
    conv = [v.ctypes.data if a.kind in ("ptr", "cptr", "sums", "csums") else v for a, v in args]
    fn(int(grid), int(block), *conv)
    if _LIBS[_hash(source)].s2sad_host_take_error():
        raise RuntimeError(f"{name}: threads of a block diverged at __syncthreads "
                           f"(grid {grid}, block {block})")


class _HostLauncher:
    def __init__(self, kmod: KernelModule, spec: LoopSpec | ScanSpec):
        self.kmod, self.spec = kmod, spec

    def max_grid(self, block: int) -> int:
        return 8

    def empty(self, n: int, tag: str) -> np.ndarray:
        # NaN, so that a partial a block failed to write shows in the result
        return np.full(n, np.nan, dtype=np.float64 if tag == "f64" else np.float32)

    def check(self, arr: Any, tag: str, what: str) -> None:
        want = np.float64 if tag == "f64" else np.float32
        if not isinstance(arr, np.ndarray) or arr.dtype != want or not arr.flags.c_contiguous:
            raise TypeError(f"{what}: expected a contiguous {np.dtype(want)} numpy array, got "
                            f"{type(arr).__name__} {getattr(arr, 'dtype', '')}")

    def call(self, source: str, name: str, tag: str, grid: int, block: int,
             args: list[tuple[cuda.Arg, Any]]) -> None:
        if _hash(source) not in _LIBS:
            build([(self.kmod, self.spec, tag)])
        call(source, name, tag, grid, block, args)


def launch(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype: Any, n_outer: int, n_inner: int,
           params: Sequence[Any], out: Any = None, acc: Any = None, seed: Any = None,
           grads: Sequence[Any] | None = None, tangents: Sequence[Any] | None = None,
           out_dot: Any = None, grid: int | None = None, block: int | None = None,
           state: Any = None, state_bar: Any = None) -> None:
    """Run the driver (and its finish kernel) on numpy arrays on the CPU, as `cuda_launch.launch`
    runs it on cupy arrays; `grid`/`block` choose the emulated launch shape (block
    defaults to 32 here, grid to what `cuda_launch.launch_config` gives; a scan driver, with
    `state`/`state_bar` as in `python.run_scan`, defaults to grid 1, block 1)."""
    if block is None and not isinstance(spec, ScanSpec):
        block = 32
    cuda_launch.execute(_HostLauncher(kmod, spec), kmod, spec, dtype, n_outer, n_inner, params,
                        out=out, acc=acc, seed=seed, grads=grads, tangents=tangents, out_dot=out_dot,
                        grid=grid, block=block, state=state, state_bar=state_bar)

"""The llvm backend: kernel modules -> LLVM IR -> machine code in this process.

`spec` is a `LoopSpec` (elementwise drivers) or a `ScanSpec` (sequential drivers of a
state-passing entry); kernel.py defines the C ABI of both.

    lower(kmod, spec, dtype) -> str             the IR text (deterministic, before optimisation)
    driver_name(kmod, spec, dtype) -> str       the driver's symbol
    compile_driver(kmod, spec, dtype, vector_math=None) -> CompiledDriver
        .address, .cfunc (ctypes, C ABI of kernel.py; pointers as ints from arr.ctypes.data),
        .ir, .optimized_ir

`llvm_lower` writes the functions' text, `llvm_drivers` the driver's; `llvm_jit`
optimises and compiles it to object code, and caches it in memory and on disk
(`objcache`: S2SAD_CACHE_DIR, default ~/.cache/s2sad); `objload` maps object code into
the process, so that a kernel found on disk runs without importing llvmlite.
"""
from __future__ import annotations

import numpy as np

from ..kernel import KernelModule, LoopSpec, ScanSpec
from .llvm_drivers import lower_module
from .llvm_host import MATH_MODES, math_mode, vector_math_support
from .llvm_jit import CompiledDriver, argtypes_for, compile_driver, module_ir
from .llvm_lower import LIBMVEC_FUNCTIONS, OWN_BEFORE_LIBMVEC, LoweringError, driver_name
from .vecmath import FUNCTIONS as VECMATH_FUNCTIONS

__all__ = ["lower", "driver_name", "compile_driver", "CompiledDriver", "LoweringError",
           "argtypes_for", "vector_math_support", "math_mode", "MATH_MODES", "LIBMVEC_FUNCTIONS",
           "VECMATH_FUNCTIONS", "OWN_BEFORE_LIBMVEC"]


def lower(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype) -> str:
    """LLVM IR text of every scalar function the driver needs, and the driver (see kernel.py).

    The text does not depend on the host: calls to libm functions name their libmvec
    variants for the widest x86_64 ISA (AVX-512), or s2sad's own vector math on as many
    lanes for those of OWN_BEFORE_LIBMVEC; `compile_driver` names the widest this
    host can run, or s2sad's own vector math (see llvm_host.math_mode).
    """

    return module_ir(kmod, spec, np.dtype(dtype))

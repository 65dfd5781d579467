"""The llvm backend: kernels as machine code for this CPU (codegen/llvm_*).

Drivers come from `llvm_jit.driver`: the disk cache by the kernel's source when there
(no dual made, no IR lowered), else lowered and compiled. A launch is a generated stub
(`launch_stub`) that makes the driver's C call with the sizes and strides as
constants: for a run of at most LAUNCH_MAX elements through a compiled launcher
(codegen/llvm_launch: one call into machine code that reads the arrays' data pointers
and calls the driver, the GIL held, or released for a run of RELEASE_MIN elements or
more), else, or where the launcher declines its
arguments, through ctypes (which releases the GIL while the driver runs). The same
driver either way: the same bits. `ptr` reads an array's data pointer from the array object (the launch
stubs and runtime's lean paths use it). Host memory (numpy), sums in float64.
"""
from __future__ import annotations

import ctypes
import dataclasses
import re
from typing import Any, Callable

import numpy as np

from .. import envflags
from ..codegen import llvm_jit, llvm_launch
from ..kernel import LoopSpec, ScanSpec
from ..passes.scansplit import scan_plan
from .host import HostBackend


def _probe_data_offset() -> int | None:
    """Offset of `data` in numpy's array struct (after the object header), if we can
    verify it on this interpreter; None means use arr.ctypes.data."""
    probe = np.arange(3.0)
    for off in (16,):
        if ctypes.c_void_p.from_address(id(probe) + off).value == probe.ctypes.data:
            return off
    return None


DATA_OFFSET = _probe_data_offset()
from_address = ctypes.c_void_p.from_address


def ptr(a: np.ndarray) -> int:
    """The address of `a`'s first element."""
    if DATA_OFFSET is not None:
        return from_address(id(a) + DATA_OFFSET).value
    return a.ctypes.data


def compiled_driver(kernel: Any, active: tuple[str, ...], spec: LoopSpec | ScanSpec, dtype: np.dtype):
    """The compiled driver (llvm_jit.CompiledDriver) of `kernel` for `active`, `spec`
    and `dtype`: from the disk cache by the program's source when it is there."""
    return llvm_jit.driver(kernel.signature(active), lambda: kernel.module(active), spec, dtype)


def known_strides(spec: LoopSpec, inner: list[int]) -> LoopSpec:
    """The spec with each strided param whose inner stride is 1 or 0 (`inner[1 + i]`)
    given as a row or a column (kernel.py), whose driver reads it without the stride."""
    layouts = tuple({1: "row", 0: "column"}.get(inner[1 + i], l) if l == "strided" else l
                    for i, l in enumerate(spec.layouts))
    return dataclasses.replace(spec, layouts=layouts) if layouts != spec.layouts else spec


def launch_stub(cfunc, spec: LoopSpec, active_idx: tuple[int, ...], dims, itemsize: int) -> Callable:
    """A generated function that makes launch's llvm call, in kernel.py's C ABI order: the
    sizes and strides are constants, each array argument one data pointer (`ptr`).
    Where the index space has leading dims, the stub takes `offs` (each column's offset,
    in elements, at one run of them) and launch calls it once per run."""
    (n_outer, outer), (n_inner, inner) = dims[-2], dims[-1]
    runs = len(dims) > 2

    def at(expr: str, col: int) -> str:
        return f"P({expr}) + offs[{col}] * {itemsize}" if runs else f"P({expr})"

    def operand(expr: str, i: int) -> list[str]:
        """LAYOUT(param i) of the array or value `expr` (a grad or tangent: the same)."""
        if spec.layouts[i] == "scalar":
            return [expr]
        if spec.layouts[i] == "contig":
            return [at(expr, 0)]
        return [at(expr, 1 + i), str(outer[1 + i]), str(inner[1 + i])]

    argv = [str(n_outer), str(n_inner)]
    for i in range(len(spec.layouts)):
        argv += operand(f"vals[{i}]", i)
    if spec.value == "store":
        argv.append(at("out", 0))
    elif spec.value == "sum":
        argv.append("P(acc)")
    if spec.seed == "scalar":
        argv.append("seed")
    elif spec.seed == "array":
        argv.append(at("seed", 0))
    if spec.partials:
        for k, a in enumerate(active_idx):       # a scalar param's gradient: one accumulator
            argv += [f"P(grads[{k}])"] if spec.layouts[a] == "scalar" else operand(f"grads[{k}]", a)
    if spec.tangents:
        for k, a in enumerate(active_idx):
            argv += operand(f"tangents[{k}]", a)
        argv.append(at("out_dot", 0))
    call = f"cfunc({', '.join(argv)})"
    small = not runs and n_outer * n_inner <= LAUNCH_MAX
    launch = compiled_launch(cfunc, argv, n_outer * n_inner >= RELEASE_MIN) if small and LAUNCHERS else None
    if launch is not None:      # one call into machine code; ctypes only where it declines
        call = f"if L({', '.join(launch[1])}) is NotImplemented:\n        {call}"
    text = f"def stub(vals, out, acc, seed, grads, tangents, out_dot{', offs' if runs else ''}):\n    {call}\n"
    if DATA_OFFSET is not None:     # the data pointer read inline: a Python call less per array
        text = re.sub(r"P\(([^()]+)\)", rf"from_address(id(\1) + {DATA_OFFSET}).value", text)
    ns = {"cfunc": cfunc, "P": ptr, "from_address": from_address, "L": launch and launch[0]}
    exec(compile(text, "<s2sad launch stub>", "exec"), ns)
    ns["stub"].launch = launch     # (launcher, the expressions it takes) or None: array_program reads it
    ns["stub"].call = None if runs else (cfunc, argv)      # (its C call's function and arguments: blockloop reads it)
    return ns["stub"]


# a run of at most this many elements is launched holding the GIL (a compiled launcher,
# llvm_launch); a longer one through ctypes, which releases it while the driver runs.
# S2SAD_LAUNCHERS=0: every launch through ctypes (read when a launch is planned)
LAUNCH_MAX = 1 << 15
# a launcher's run of at least this many elements releases the GIL while its driver runs
# (~0.1 us against a few us of work): other threads run meanwhile, as under ctypes (the
# blocks of a product's pass on two threads, gemm_epilogue: their launches, each exactly
# LAUNCH_MAX elements, held it and ran one at a time; issue 17's 3-layer MLP gradient at
# 10k rows, 2 threads, one process, 100 calls each: 4.19-4.23 ms (min) against 5.14-5.42)
RELEASE_MIN = 1 << 12
LAUNCHERS = envflags.switch("S2SAD_LAUNCHERS")


def compiled_launch(cfunc, argv: list[str], release: bool = False) -> tuple[Callable, list[str]] | None:
    """(launcher, the Python expressions it takes) making the call `cfunc(*argv)` of a
    launch stub (argv: integer constants, `P(array)` data pointers, scalar expressions),
    the GIL released around it where `release`; or None where this process has no
    launcher."""
    kinds, words, srcs, exprs, types = "", [], [], [], []
    for text, ctype in zip(argv, cfunc.argtypes):
        kind = llvm_launch.KINDS.get(ctype)
        if kind is None:
            return None
        kinds += kind
        pointer = re.fullmatch(r"P\(([^()]+)\)", text)
        if re.fullmatch(r"-?\d+", text):
            words.append(int(text))
            srcs.append(None)
            continue
        expr = pointer.group(1) if pointer else text
        if (pointer is None) != (kind != "i"):      # (a pointer for an integer, a number for a double)
            return None
        if expr not in exprs:
            exprs.append(expr)
            types.append(np.ndarray if pointer else float)
        words.append(0)
        srcs.append(exprs.index(expr))
    launch = llvm_launch.launcher(llvm_launch.function_address(cfunc), kinds, words, srcs, types, cfunc, release)
    return None if launch is None else (launch, exprs)


class LlvmBackend(HostBackend):
    name = "llvm"
    fast_path = True

    def compile_loop(self, kernel: Any, active: tuple[str, ...], spec: LoopSpec, dtype: np.dtype) -> Any:
        return compiled_driver(kernel, active, spec, dtype)

    def plan_launch(self, kernel: Any, spec: LoopSpec, active: tuple[str, ...], dtype: np.dtype, dims: list):
        """The driver told which strided params are rows or columns, called by a stub."""
        sp = known_strides(spec, dims[-1][1]) if "strided" in spec.layouts else spec
        active_idx = tuple(kernel.params.index(a) for a in active)
        cfunc = self.compile_loop(kernel, active, sp, dtype).cfunc
        return sp, launch_stub(cfunc, sp, active_idx, dims, dtype.itemsize)

    def compile_scan(self, kernel: Any, kmod: Any, active: tuple[str, ...], spec: ScanSpec,
                     dtype: np.dtype) -> Callable:
        compiled = compiled_driver(kernel, kmod.active, spec, dtype)
        cfunc = compiled.cfunc
        # the driver reads the tape only when the dual's partials depend on the state
        needs_tape = spec.grads and scan_plan(kmod, spec.n_state, spec.grads).tape
        no_tape = np.zeros(1, dtype)

        def d(n, params, state, out=None, acc=None, seed=None, grads=None, state_bar=None):
            argv = [1, n] + [v if l == "scalar" else ptr(v) for v, l in zip(params, spec.layouts)]
            argv.append(ptr(state))
            if spec.value == "store":
                argv.append(ptr(out))
            elif spec.value == "sum":
                argv.append(ptr(acc))
            if spec.grads:
                argv.append(seed if spec.seed == "scalar" else ptr(seed))
                argv += [ptr(g) for g in grads]
                tape = np.empty(max(1, n * spec.n_state), dtype) if needs_tape else no_tape  # alive until cfunc returns
                argv += [ptr(state_bar), ptr(tape)]
            cfunc(*argv)

        d.cfunc, d.needs_tape, d.no_tape, d.compiled = cfunc, needs_tape, no_tape, compiled
        return d


LLVM = LlvmBackend()

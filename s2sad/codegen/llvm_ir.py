"""LLVM IR text's building blocks: the float type, literals, names, a body of blocks.

What the scalar functions (`llvm_lower`, `llvm_expr`) and the drivers (`llvm_drivers`,
`llvm_entry`, `llvm_reduce`, `llvm_gemm`) share. Invariants: a name `sanitize` returns is a
plain LLVM identifier, so `ir_ref` never quotes; `Body.fresh` never returns a name twice
within one body; a literal `fconst` prints is exact (rounded to float first for f32).
"""
from __future__ import annotations

import re

import numpy as np

from ..kernel import KernelModule, LoopSpec, ScanSpec
from . import vecmath


class LoweringError(ValueError):
    """The kernel is outside the core scalar language (a bug in the passes)."""


class Ty:
    def __init__(self, dtype) -> None:
        dt = np.dtype(dtype)
        if dt == np.float64:
            self.name, self.tag, self.bits, self.libm = "double", "f64", 64, ""
        elif dt == np.float32:
            self.name, self.tag, self.bits, self.libm = "float", "f32", 32, "f"
        else:
            raise TypeError(f"the llvm backend compiles float64 and float32 kernels, not {dt}")
        self.dtype = dt


def fconst(value: float, ty: Ty) -> str:
    """An LLVM literal of type `ty` for `value` (rounded to float for f32)."""
    v = float(value)
    if ty.bits == 32:
        with np.errstate(over="ignore"):
            v = float(np.float32(v))
    return vecmath.double_literal(v)


def ir_ref(sigil: str, name: str) -> str:
    """`%name` or `@name`; names come from `sanitize`, so they never need quoting."""
    return sigil + name


def sanitize(base: str) -> str:
    """A plain LLVM identifier (letters, digits, _ . $; no leading digit): other characters,
    such as those of non-ASCII Python names, become `_<hex code>`."""
    out = re.sub(r"[^A-Za-z0-9_.$]", lambda c: "_%x" % ord(c.group()), base) or "v"
    if out[0].isdigit():
        out = "_" + out
    return out


class Body:
    """Blocks of instructions with unique names; the parts functions and drivers share."""

    def __init__(self, ty: Ty) -> None:
        self.ty = ty
        self.T = ty.name
        self.counters: dict[str, int] = {}
        self.used: set[str] = set()
        self.blocks: list[tuple[str, list[str]]] = []
        self.cur: list[str] | None = None
        self.label = ""
        self.preds: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        base = sanitize(base)
        if base not in self.used:
            self.used.add(base)
            return base
        k = self.counters.get(base, 0)
        while True:
            k += 1
            name = f"{base}.{k}"
            if name not in self.used:
                self.counters[base] = k
                self.used.add(name)
                return name

    def local(self, base: str) -> str:
        return ir_ref("%", self.fresh(base))

    def new_block(self, base: str) -> str:
        name = self.fresh(base)
        self.preds.setdefault(name, 0)
        return name

    def start(self, label: str) -> None:
        assert self.cur is None, "previous block not terminated"
        self.cur = []
        self.label = label
        self.blocks.append((label, self.cur))

    def emit(self, text: str) -> None:
        assert self.cur is not None, "emitting into a terminated block"
        self.cur.append("  " + text)

    def inst(self, hint: str, text: str) -> str:
        ref = self.local(hint)
        self.emit(f"{ref} = {text}")
        return ref

    def terminate(self, text: str, *targets: str) -> None:
        self.emit(text)
        for t in targets:
            self.preds[t] = self.preds.get(t, 0) + 1
        self.cur = None

    def br(self, target: str) -> None:
        self.terminate(f"br label {ir_ref('%', target)}", target)

    def cbr(self, cond: str, then: str, other: str) -> None:
        self.terminate(f"br i1 {cond}, label {ir_ref('%', then)}, label {ir_ref('%', other)}", then, other)

    def render_blocks(self) -> str:
        out = []
        for k, (label, lines) in enumerate(self.blocks):
            if k:
                out.append("")
            out.append(f"{label}:")
            out.extend(lines)
        return "\n".join(out)


def driver_name(kmod: KernelModule, spec: LoopSpec | ScanSpec, dtype) -> str:
    """The driver's symbol: f"{kmod.name}__{spec.tag()}_{f64|f32}" (made a C identifier)."""
    return sanitize(f"{kmod.name}__{spec.tag()}_{Ty(dtype).tag}").replace(".", "_").replace("$", "_")

"""Golden files: every generated artifact of a fixed set of examples.

`python -m s2sad.golden --write` rewrites golden/; `--check` (the test) compares.
For each case in golden/examples.py: `<case>.grad.py` (the derivative source with its
kernels), `<case>.ll` (LLVM IR of the fused value+gradient driver, before
optimisation; for a stateful case, its scan driver), `<case>.cu` (its CUDA C) and
`<case>.explain.txt`; for ENTRY_CASES also `<case>.entry.ll`, the Python entry of the
driver's shape. For each of ARRAY_CASES (array programs): `<case>.grad.py` and
`<case>.explain.txt`; for each of VALUE_CASES `<case>.vgrad.py`, its value_and_grad
program, and `<case>.vsplit.py`, the same as grad's program then the value; for each of HVP_CASES (array programs' Hessian-vector products)
`<case>.hvp.py`, the forward-over-reverse program and its kernels; for each of
PRODUCT_CASES `<case>.product.py`, what s2sad.hvp runs (the product alone); for each of
BATCHED_CASES (what hessian runs for an array program) `<case>.bhvp.py`, the
forward-over-reverse program with batched tangents and its kernels; for each of
SMALL_CASES (hessian of a small fixed-shape program, small_hessian.py) `<case>.shess.py`,
the unrolled Hessian program as Python, and `<case>.shess.ll`, its entry's LLVM IR; for each of
SMALL_GRAD_CASES (value_and_grad of a small fixed-shape program, small_grad.py)
`<case>.sgrad.py` and `<case>.sgrad.ll`, the same for its unrolled gradient; for each of
CONTAINER_CASES (a loss and its container arguments) the source and explain of its
grad called once with them. `gemm_f64.ll`: s2sad's matrix product (codegen/llvm_gemm) with
the tile of a host with 512-bit vectors; `reduce_f64.ll`: the reductions along an
axis (codegen/llvm_reduce); `launch_iiiidf.ll`: the compiled launcher of a driver taking
four integers or pointers, a double and a float (codegen/llvm_launch); `program_gemm_sum.ll`:
a program launcher of two steps, a BLAS gemm and a sum driver (codegen/llvm_program). Absolute paths are
written relative to the repository so the files are the same on every machine.
"""
from __future__ import annotations

import argparse
import difflib
import importlib.util
import sys

import numpy as np

from . import api, array_higher, batched_jac, small_grad, small_hessian
from .codegen import cuda, llvm, llvm_entry, llvm_gemm, llvm_launch, llvm_program, llvm_reduce
from .frontend import PROJECT_ROOT
from .kernel import LoopSpec, ScanSpec, active_indices

ROOT = PROJECT_ROOT
GOLDEN = ROOT / "golden"
# cases whose driver's Python entry (codegen/llvm_entry.py) is pinned too: one per kind
ENTRY_CASES = ("three", "state_global")


def _examples():
    spec = importlib.util.spec_from_file_location("golden_examples", GOLDEN / "examples.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["golden_examples"] = module
    spec.loader.exec_module(module)
    return module


def artifacts() -> dict[str, str]:
    """file name -> text, for every golden case."""

    out: dict[str, str] = {}
    for case, (loss, argnums) in _examples().CASES.items():
        d = api.grad(loss, argnums=argnums).__s2sad__
        out[f"{case}.grad.py"] = d.source()
        out[f"{case}.explain.txt"] = str(api.explain(loss, argnums))
        c = d.c
        active = c.active_for(d.argnums)
        state = c.plan.program.state
        if state:  # a scan: its sequential driver (one thread on the GPU)
            params = c.kernel.params
            kmod = c.kernel.module(active + params[len(params) - len(state):])
            spec = ScanSpec(tuple("contig" for _ in params[: len(params) - len(state)]), len(state),
                            value="sum", grads=True, seed="scalar")
            out[f"{case}.ll"] = llvm.lower(kmod, spec, np.float64)
            out[f"{case}.cu"] = cuda.lower(kmod, spec, np.float64)
            if case in ENTRY_CASES:
                out[f"{case}.entry.ll"] = llvm_entry.entry_ir(spec, np.float64, active_indices(kmod, spec))
            continue
        kmod = c.kernel.module(active)
        spec = LoopSpec(tuple("contig" for _ in c.kernel.params), value="sum", partials=True, seed="scalar")
        out[f"{case}.ll"] = llvm.lower(kmod, spec, np.float64)
        out[f"{case}.cu"] = cuda.lower(kmod, spec, np.float64)
        if case in ENTRY_CASES:
            out[f"{case}.entry.ll"] = llvm_entry.entry_ir(spec, np.float64, active_indices(kmod, spec))
    for case, (loss, argnums) in _examples().ARRAY_CASES.items():
        out[f"{case}.grad.py"] = api.grad(loss, argnums=argnums).__s2sad__.source()
        out[f"{case}.explain.txt"] = str(api.explain(loss, argnums))
    for case, (loss, argnums) in getattr(_examples(), "VALUE_CASES", {}).items():
        d = api.value_and_grad(loss, argnums=argnums).__s2sad__
        out[f"{case}.vgrad.py"] = d.source()
        split = d.split_source()
        if split is not None:       # (what a small batch specialises: passes/valuesplit)
            out[f"{case}.vsplit.py"] = split
    for case, (loss, args) in getattr(_examples(), "CONTAINER_CASES", {}).items():   # called once with them
        g = api.grad(loss)
        g(*args())
        out[f"{case}.grad.py"] = api.source(g)
        out[f"{case}.explain.txt"] = str(api.explain(g))
    for case, (loss, argnums) in getattr(_examples(), "HVP_CASES", {}).items():
        out[f"{case}.hvp.py"] = array_higher.hvp_source(loss, argnums)
    for case, (loss, argnums) in getattr(_examples(), "PRODUCT_CASES", {}).items():
        out[f"{case}.product.py"] = array_higher.hvp_source(loss, argnums, product_only=True)
    for case, (loss, argnums) in getattr(_examples(), "BATCHED_CASES", {}).items():
        out[f"{case}.bhvp.py"] = batched_jac.hessian_source(loss, argnums)
    for case, (loss, shapes, argnums) in getattr(_examples(), "SMALL_CASES", {}).items():
        args = tuple(np.zeros(s) for s in shapes)
        out[f"{case}.shess.py"] = small_hessian.source(loss, args, argnums)
        out[f"{case}.shess.ll"] = small_hessian.ir(loss, args, argnums)
    for case, (loss, shapes, argnums) in getattr(_examples(), "SMALL_GRAD_CASES", {}).items():
        args = tuple(np.linspace(-1.0, 1.0, int(np.prod(s))).reshape(s) for s in shapes)
        out[f"{case}.sgrad.py"] = small_grad.source(loss, args, argnums)
        out[f"{case}.sgrad.ll"] = small_grad.ir(loss, args, argnums)
    out["gemm_f64.ll"] = llvm_gemm.gemm_ir(np.float64, lanes=8, vectors=4)
    out["reduce_f64.ll"] = llvm_reduce.reduce_ir(np.float64)
    out["launch_iiiidf.ll"] = llvm_launch.launcher_ir("iiiidf")
    out["program_gemm_sum.ll"] = llvm_program.program_ir(4, [
        ("wwwiiidiiiidii", [None] * 7 + [0, None, 1, None, None, 3, None]),   # out(3) = a0 @ a1
        ("iiiidi", [None, None, 3, 2, None, 3])])                             # a sum driver over (3, 2)
    root = str(ROOT) + "/"
    return {k: v.replace(root, "") for k, v in out.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m s2sad.golden")
    p.add_argument("--write", action="store_true", help="rewrite golden/")
    args = p.parse_args(argv)
    arts = artifacts()
    status = 0
    for name, text in sorted(arts.items()):
        path = GOLDEN / name
        if args.write:
            path.write_text(text)
            continue
        old = path.read_text() if path.exists() else ""
        if old != text:
            status = 1
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                       f"golden/{name}", f"generated/{name}"))
    if args.write:
        print(f"wrote {len(arts)} files to {GOLDEN}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())

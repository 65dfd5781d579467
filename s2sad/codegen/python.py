"""Kernel -> Python source, and the python backend: the readable reference.

`module_source` prints a `KernelModule` as Python text; `compile_module` executes it
(with `math` bound to `s2sad.smath`, so that domain errors give NaN like compiled
code). `run_driver` applies the entry element by element with exactly the semantics
of a compiled driver for a `LoopSpec` (see `kernel.py`): it is the oracle the tests
compare the llvm and cuda backends against, so it is written for clarity, not speed.
"""
from __future__ import annotations

import ast
from typing import Callable

import gast
import numpy as np

from .. import smath
from ..kernel import KernelModule, LoopSpec


def unparse(node: gast.AST) -> str:
    """Python text of a gast tree."""
    tree = gast.gast_to_ast(node)
    if not hasattr(tree, "lineno") and isinstance(tree, ast.stmt):
        tree.lineno = 1
    return ast.unparse(ast.fix_missing_locations(tree))


def module_source(kmod: KernelModule) -> str:
    chunks = []
    for name, fn in kmod.functions.items():
        origin = kmod.origins.get(name)
        text = unparse(fn)
        if origin:
            text = f"# {origin}\n{text}"
        chunks.append(text)
    return "\n\n\n".join(chunks) + "\n"


def compile_module(kmod: KernelModule) -> dict[str, Callable]:
    """Execute the module's source; returns its namespace (function name -> callable)."""
    namespace: dict = {"math": smath, **SCALAR_BUILTINS}
    code = compile(module_source(kmod), f"<s2sad kernel {kmod.name}>", "exec")
    exec(code, namespace)
    return namespace


# Builtins as the compiled backends define them on floats (see kernel.py).
SCALAR_BUILTINS = {
    "float": np.float64,
    "int": lambda x: np.float64(np.trunc(x)),
    "round": lambda x: np.float64(np.round(x)),
}


def run_driver(fn: Callable, spec: LoopSpec, active_idx: tuple[int, ...], n_outer: int, n_inner: int,
               params: list, out=None, acc=None, seed=None, grads=None, tangents=None,
               out_dot=None) -> None:
    """Apply `fn` over the index space as a compiled driver would (see kernel.py).

    `active_idx` are the positions of the active params (those with partials);
    `params[i]` is a scalar, or for contig/strided layouts a tuple (array, so, si) of a
    flat array and element strides; grads and tangents likewise follow their param's
    layout; out, acc, seed (array) and out_dot are flat arrays.
    """
    def read(p, layout, o, i):
        if layout == "scalar":
            return np.float64(p)
        arr, so, si = p
        return np.float64(arr[o * so + i * si])

    active_layouts = [spec.layouts[k] for k in active_idx]
    with np.errstate(all="ignore"):
        for o in range(n_outer):
            for i in range(n_inner):
                flat = o * n_inner + i
                args = [read(p, l, o, i) for p, l in zip(params, spec.layouts)]
                res = fn(*args)
                if isinstance(res, tuple):
                    value, partials = res[0], res[1:]
                else:
                    value, partials = res, ()
                if spec.value == "store":
                    out[flat] = value
                elif spec.value == "sum":
                    acc[0] += value
                if spec.partials:
                    s = seed if spec.seed == "scalar" else seed[flat]
                    for g, layout, d in zip(grads, active_layouts, partials):
                        contrib = d * s
                        if layout == "scalar":
                            g[0] += contrib
                        elif layout == "contig":
                            g[0][flat] = contrib
                        else:
                            arr, so, si = g
                            arr[o * so + i * si] += contrib
                if spec.tangents:
                    total = 0.0
                    for t, layout, d in zip(tangents, active_layouts, partials):
                        total += d * read(t, layout, o, i)
                    out_dot[flat] = total


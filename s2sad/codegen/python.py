"""Kernel -> Python source, and the python backend: the readable reference.

`module_source` prints a `KernelModule` as Python text; `compile_module` executes it
(with `math` bound to `s2sad.smath`, so that domain errors give NaN like compiled
code). `run_driver` applies the entry element by element with exactly the semantics
of a compiled driver for a `LoopSpec` (see `kernel.py`), and `run_scan` those of a scan
driver for a `ScanSpec`: they are the oracles the tests compare the llvm and cuda
backends against, so they are written for clarity, not speed.
"""
from __future__ import annotations

import ast
import math
from typing import Callable

import numpy as np

from .. import smath
from ..kernel import KernelModule, LoopSpec, ScanSpec
from ..kernel_text import module_source
from ..parsing import ast_parse


def compile_module(kmod: KernelModule) -> dict[str, Callable]:
    """Execute the module's source; returns its namespace (function name -> callable).

    The source runs with every number it makes an `smath.Real` (`_AllReal`), so that
    `1.0 / 0.0`, `0.0 ** -1.0`, `(x < y) % 0.0` or a loop counter divided by zero give
    IEEE results (inf, NaN), as compiled kernels do, never a ZeroDivisionError."""
    namespace: dict = {"math": smath, **smath.BUILTINS}
    tree = ast_parse(module_source(kmod))
    tree = ast.fix_missing_locations(_AllReal(namespace).visit(tree))
    code = compile(tree, f"<s2sad kernel {kmod.name}>", "exec")
    exec(code, namespace)
    return namespace


class _AllReal(ast.NodeTransformer):
    """Numeric constants -> names bound to `smath.Real`s in `namespace` (loaded, not
    built, at each use); comparisons and `not` (Python bools) -> `Real(...)` of them.
    Every other value a kernel makes comes from a Real, an smath function, or a
    builtin of `smath.BUILTINS` (range counts in Reals), so is a Real too."""

    REAL = "__s2sad_Real"

    def __init__(self, namespace: dict):
        self.namespace = namespace
        namespace[self.REAL] = smath.Real
        self.names: dict[str, str] = {}

    def visit_Constant(self, node):
        v = node.value
        if not isinstance(v, (bool, int, float)):
            return node             # float("inf")'s string
        try:
            v = float(v)
        except OverflowError:       # an int literal past float's range, as llvm reads it
            v = math.inf if v > 0 else -math.inf
        key = repr(v)               # 0.0 and -0.0 apart; True, 1 and 1.0 the same Real
        if key not in self.names:
            self.names[key] = f"__s2sad_k{len(self.names)}"
            self.namespace[self.names[key]] = smath.Real(v)
        return ast.copy_location(ast.Name(self.names[key], ast.Load()), node)

    def _real(self, node):
        return ast.copy_location(ast.Call(ast.Name(self.REAL, ast.Load()), [node], []), node)

    def visit_Compare(self, node):
        return self._real(self.generic_visit(node))

    def visit_UnaryOp(self, node):
        node = self.generic_visit(node)
        return self._real(node) if isinstance(node.op, ast.Not) else node


def run_driver(fn: Callable, spec: LoopSpec, active_idx: tuple[int, ...], n_outer: int, n_inner: int,
               params: list, out=None, acc=None, seed=None, grads=None, tangents=None,
               out_dot=None) -> None:
    """Apply `fn` over the index space as a compiled driver would (see kernel.py).

    `active_idx` are the positions of the active params (those with partials);
    `params[i]` is a scalar, or for contig/strided layouts a tuple (array, so, si) of a
    flat array and element strides; grads and tangents likewise follow their param's
    layout; out, acc, seed (array) and out_dot are flat arrays. `acc` and a scalar
    param's gradient cell are float64 whatever the dtype (kernel.py's A): sums are
    accumulated in float64, as the compiled drivers do, and rounded by the caller.
    """
    active_layouts = [spec.layouts[k] for k in active_idx]
    with np.errstate(all="ignore"):
        for o in range(n_outer):
            for i in range(n_inner):
                flat = o * n_inner + i
                args = [_read(p, l, o, i) for p, l in zip(params, spec.layouts)]
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
                        _add_to_grad(g, layout, o, i, flat, d * s)
                if spec.tangents:
                    total = 0.0
                    for t, layout, d in zip(tangents, active_layouts, partials):
                        total += d * _read(t, layout, o, i)
                    out_dot[flat] = total


def _read(p, layout: str, o: int, i: int) -> smath.Real:
    """Element (o, i) of a param given as a scalar or an (array, so, si) tuple."""
    if layout == "scalar":
        return smath.Real(p)
    arr, so, si = p
    return smath.Real(arr[o * so + i * si])


def _add_to_grad(g, layout: str, o: int, i: int, flat: int, contrib) -> None:
    """GRAD(a) += contrib at element (o, i), by the param's layout (contig stores)."""
    if layout == "scalar":
        g[0] += contrib
    elif layout == "contig":
        g[0][flat] = contrib
    else:
        arr, so, si = g
        arr[o * so + i * si] += contrib


def run_scan(primal_fn: Callable, dual_fn: Callable | None, spec: ScanSpec, active_idx: tuple[int, ...],
             n_outer: int, n_inner: int, params: list, state, out=None, acc=None, seed=None,
             grads=None, state_bar=None) -> None:
    """Run a state-passing entry over the elements in order, as a compiled scan driver would.

    `primal_fn(*params(e), *s) -> (value, s1', ..., sk')` and `dual_fn` (see kernel.py,
    "Scan drivers") are the entry and its dual w.r.t. the active params, then the k
    states. Argument conventions are those of `run_driver`: `params[n]` (one per
    non-state param) is a scalar or (flat array, so, si); `active_idx` are the positions
    of the active params among them; `grads` follow their param's layout; `seed` is a
    scalar or a flat array. `state` (k values) is read, then overwritten with the final
    state; with grads, `state_bar` (k values) holds the adjoint of the final state on
    entry and of the initial state on return. Every number read (params, state, seed,
    state_bar) becomes an `smath.Real`, so the state is threaded in float64 with IEEE
    arithmetic whatever the arrays' dtype.
    """
    k = spec.n_state
    n_wrt = len(active_idx) + k
    active_layouts = [spec.layouts[a] for a in active_idx]

    def args(o: int, i: int) -> list:
        return [_read(p, lay, o, i) for p, lay in zip(params, spec.layouts)]

    s = [smath.Real(state[j]) for j in range(k)]
    tape = []
    with np.errstate(all="ignore"):
        # forward sweep: values, and the state before each element on the tape
        for o in range(n_outer):
            for i in range(n_inner):
                flat = o * n_inner + i
                if spec.grads:
                    tape.append(tuple(s))
                res = primal_fn(*args(o, i), *s)
                if k:
                    value, s = res[0], list(res[1:1 + k])
                else:
                    value = res[0] if isinstance(res, tuple) else res
                if spec.value == "store":
                    out[flat] = value
                elif spec.value == "sum":
                    acc[0] += value
        for j in range(k):
            state[j] = s[j]
        if not spec.grads:
            return

        # reverse sweep: lam is the adjoint of the state after element e
        lam = [smath.Real(state_bar[j]) for j in range(k)]
        for o in reversed(range(n_outer)):
            for i in reversed(range(n_inner)):
                flat = o * n_inner + i
                res = dual_fn(*args(o, i), *tape[flat])
                assert len(res) == (1 + k) * (1 + n_wrt), "a scan's dual returns (1+k)*(1+|dual_wrt|) values"
                d_value = res[1 + k:1 + k + n_wrt]
                d_state = [res[1 + k + (1 + j) * n_wrt:1 + k + (2 + j) * n_wrt] for j in range(k)]
                sd = smath.Real(seed if spec.seed == "scalar" else seed[flat])

                def adjoint(w: int):
                    total = sd * d_value[w]
                    for j in range(k):
                        total += lam[j] * d_state[j][w]
                    return total

                for n, (g, layout) in enumerate(zip(grads, active_layouts)):
                    _add_to_grad(g, layout, o, i, flat, adjoint(n))
                lam = [adjoint(len(active_idx) + j) for j in range(k)]
        for j in range(k):
            state_bar[j] = lam[j]

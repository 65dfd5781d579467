"""Program-level analyses of fused kernels, kept on the IR: how a kernel's pullback is
taken (`choose_mode`), and which kernels run with the one statement that reads them
(`pair_kernels`, recorded as `ArrayStmt.partner` on both).

A kernel whose values only `values @ w` (or np.dot) reads, as its left operand, later
in the same block, runs with that product (`column_products.kernel_matmul`), which
never forms the values where w is one column: only kernels cheap to evaluate
(`choose_mode`'s test), which the pair evaluates again in the reverse sweep whatever
the mode, so store and recompute modes still give the same bits. Likewise a kernel
without a loop whose values only a sum or mean along the last axis reads
(`row_reduction`): `kernel_rowsum` (passes/reverse.py), which decides at run time,
from the row length, whether the values are formed. Neither depends on which
arguments are differentiated, so the pairing is made once, when the program is built.
"""
from __future__ import annotations

import gast

from ..array_prims import Product, Reduce
from ..errors import S2SADError
from .arrayir import ArrayProgram, ArrayStmt, ForStmt, IfStmt, RunKernel, stmt_reads, walk_stmts

MODES = ("auto", "store", "recompute")
_CHEAP_MATH = {"fabs", "sign", "copysign", "floor", "ceil", "trunc"}


def choose_mode(kernel, mode: str) -> tuple[str, str]:
    """(store | recompute, why) for an elementwise kernel whose pullback is needed."""
    if mode in ("store", "recompute"):
        return mode, f"mode={mode!r} was asked for"
    if mode != "auto":
        raise S2SADError(f"unknown mode {mode!r}", hint="Use mode='auto', 'store' or 'recompute'.")
    why = None
    for fname, fn in kernel.program.functions.items():
        for n in gast.walk(fn):
            if isinstance(n, (gast.For, gast.While)):
                why = f"{fname} has a loop"
                break
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr not in _CHEAP_MATH:
                why = f"{fname} calls math.{n.func.attr}"
                break
            if isinstance(n, gast.BinOp) and isinstance(n.op, gast.Pow) and not (
                    isinstance(n.right, gast.Constant) and n.right.value in (2, 2.0, 3, 3.0)):
                why = f"{fname} raises to a power"
                break
        if why:
            break
    if why:
        return "store", f"auto: {why}, so its partials are stored in the forward pass rather than recomputed"
    return "recompute", "auto: cheap to evaluate (no loops, no transcendental calls), so recomputed in the reverse pass"


def row_reduction(st) -> tuple[int, bool] | None:
    """(axis, keepdims) of a sum or mean along the last axis of a 2-D array (axis 1 or
    -1, written as a constant; keepdims a constant or absent), else None."""
    if not isinstance(st, ArrayStmt) or not isinstance(st.op, Reduce) or st.op.kind not in ("sum", "mean"):
        return None
    axis, keep = st.params.get("axis"), st.params.get("keepdims", gast.Constant(value=False, kind=None))
    if isinstance(axis, gast.UnaryOp) and isinstance(axis.op, gast.USub) and isinstance(axis.operand, gast.Constant) \
            and type(axis.operand.value) is int:
        axis = gast.Constant(value=-axis.operand.value, kind=None)       # -1 is parsed as -(1)
    if not (isinstance(axis, gast.Constant) and type(axis.value) is int and axis.value in (1, -1)):
        return None
    if not (isinstance(keep, gast.Constant) and type(keep.value) is bool):
        return None
    return axis.value, keep.value


def pair_kernels(prog: ArrayProgram) -> None:
    """Set `partner` on each kernel that runs with its one reader, and on that reader."""
    readers: dict[str, int] = {}
    for st in walk_stmts(prog.body):
        for r in stmt_reads(st):
            readers[r] = readers.get(r, 0) + 1
    _pair_block(prog.body, prog.result, readers)


def _pair_block(body: list, result, readers: dict) -> None:
    for j, st in enumerate(body):
        if isinstance(st, ForStmt):
            _pair_block(st.body, result, readers)
        elif isinstance(st, IfStmt):
            _pair_block(st.body, result, readers)
            _pair_block(st.orelse, result, readers)
        elif (isinstance(st.op, RunKernel) and not st.op.scalar and st.target and st.target != result
                and readers.get(st.target) == 1 and st.op.kernel.module(()).result_kind == "float"):
            reader = next((m for m in body[j + 1:] if isinstance(m, ArrayStmt) and m.args
                           and m.args[0] == st.target), None)
            if reader is not None and _runs_with(st, reader):
                st.partner, reader.partner = reader, st


def _runs_with(kernel_st: ArrayStmt, m: ArrayStmt) -> bool:
    mode, why = choose_mode(kernel_st.op.kernel, "auto")
    if isinstance(m.op, Product) and m.op.kind in ("matmul", "dot"):
        return m.args.count(kernel_st.target) == 1 and mode == "recompute"
    return row_reduction(m) is not None and "has a loop" not in why

"""LLVM IR for an elementwise product and its column sums in one pass over memory: the
adjoint of a kernel that adds a bias row (`h = tanh(X @ W + b)`), where the partial
times the seed is the adjoint of the full-shape input and its column sums are the
bias's (partials.product_sums calls it):

    void s2sad_rowsm_mulsum_<f64|f32>(A, B, out, sums, n_rows, k, a_stride, b_stride)
        out[r, j] = A[r, j] * B[r, j];   sums[j] += out[r, j]  for r in order

`out` is C-contiguous (n_rows x k); `sums` holds k values, zeroed by the caller. Each
sums[j] is one chain of additions over the rows in order from the caller's 0.0, as
numpy's reduction over axis 0 of a C-contiguous array runs (codegen/llvm_reduce's
column sum: the same bits); the products are IEEE products, numpy's bits. The loop over
a row's columns vectorises (each lane its own column's chain), so the order is kept.
"""
from __future__ import annotations

from .llvm_rowloop import counted_loop, loop_pre, row_loop

KINDS = ("mulsum",)


def mulsum_ir(ty: str, symbol) -> list[str]:
    """The function for LLVM type `ty`, named by `symbol("mulsum")`."""
    define = (f"define void @{symbol('mulsum')}(ptr noalias %A, ptr noalias %B, ptr noalias %out, "
              "ptr noalias %sums, i64 %n_rows, i64 %k, i64 %a_stride, i64 %b_stride) {")
    body = [f"  %c.ap = getelementptr {ty}, ptr %arow, i64 %c.j",
            f"  %c.a = load {ty}, ptr %c.ap",
            f"  %c.bp = getelementptr {ty}, ptr %brow, i64 %c.j",
            f"  %c.b = load {ty}, ptr %c.bp",
            f"  %c.p = fmul {ty} %c.a, %c.b",
            f"  %c.op = getelementptr {ty}, ptr %orow, i64 %c.j",
            f"  store {ty} %c.p, ptr %c.op",
            f"  %c.sp = getelementptr {ty}, ptr %sums, i64 %c.j",
            f"  %c.s = load {ty}, ptr %c.sp",
            f"  %c.s1 = fadd {ty} %c.s, %c.p",
            f"  store {ty} %c.s1, ptr %c.sp"]
    row = loop_pre("c") + counted_loop("c", "0", body, "row.done")
    rows = (("arow", "A", "%a_stride"), ("brow", "B", "%b_stride"), ("orow", "out", "%k"))
    return [row_loop(define, ty, rows, row)]

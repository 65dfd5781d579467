"""LLVM IR for the layer normalisation of each row of a 2-D float array, the row's mean,
centring, variance, reciprocal square root and scaling in one pass over memory (the
row, k elements, stays in cache between its sweeps):

    void s2sad_rowsm_ln_<f64|f32>(A, n_rows, k, row_stride, eps, out)
        out[r, j] = (a[r, j] - mu_r) * r_r,   mu_r = sum_j a[r, j] / k,
        r_r = 1 / sqrt(sum_j (a[r, j] - mu_r)^2 / k + eps)

and its adjoint, one pass over g and a per row (the centred values recomputed from a):

    void s2sad_rowsm_lnbar_<f64|f32>(G, A, n_rows, k, g_stride, a_stride, eps, out)
        out = r_r (g - mean_j(g) - xhat mean_j(g xhat)),  xhat = (a - mu_r) r_r

`out` is C-contiguous (n_rows x k); k >= 1 (the caller handles empty rows); eps is a
double, rounded to the array's type first (numpy adds a Python float to a float32
array in float32). The row sums carry `reassoc` so that they vectorise (several
partial sums, as numpy's pairwise sums have): results agree with numpy's formula to a
few ulp, not bit for bit (rowlayernorm.py states the tolerance). The numpy formula
divides by sqrt(v + eps) where this multiplies by its reciprocal: one more rounding.
"""
from __future__ import annotations

from .llvm_rowloop import counted_loop, loop_pre, row_loop

KINDS = ("ln", "lnbar")


def _loop(tag: str, body: list[str], after: str, phis=()) -> list[str]:
    """j = 0..k-1 named `tag` (entered from block `{tag}.pre`), then block `after`;
    `phis`: (type, name, initial, next) values carried round it."""
    return loop_pre(tag) + counted_loop(tag, "0", body, after, phis)


def _load(ty: str, tag: str, row: str, name: str) -> list[str]:
    return [f"  %{tag}.{name}p = getelementptr {ty}, ptr %{row}, i64 %{tag}.j",
            f"  %{tag}.{name} = load {ty}, ptr %{tag}.{name}p"]


def _stats(ty: str, row: str) -> list[str]:
    """The row's mean %mu and reciprocal standard deviation %rs (eps in %epsv)."""
    body = _loop("ms", [*_load(ty, "ms", row, "v"), f"  %ms.next = fadd reassoc {ty} %s1, %ms.v"],
                 "ms.done", [(ty, "s1", "0.0", "%ms.next")])
    body += ["ms.done:", f"  %kf = sitofp i64 %k to {ty}", f"  %mu = fdiv {ty} %s1, %kf"]
    body += _loop("vs", [*_load(ty, "vs", row, "v"), f"  %vs.c = fsub {ty} %vs.v, %mu",
                         f"  %vs.q = fmul {ty} %vs.c, %vs.c", f"  %vs.next = fadd reassoc {ty} %s2, %vs.q"],
                  "vs.done", [(ty, "s2", "0.0", "%vs.next")])
    sqrt = "llvm.sqrt.f64" if ty == "double" else "llvm.sqrt.f32"
    body += ["vs.done:", f"  %var = fdiv {ty} %s2, %kf", f"  %ve = fadd {ty} %var, %epsv",
             f"  %sd = call {ty} @{sqrt}({ty} %ve)", f"  %rs = fdiv {ty} 1.0, %sd"]
    return body


def _eps(ty: str) -> list[str]:
    return ["  %epsv = fptrunc double %eps to float"] if ty == "float" else ["  %epsv = fadd double %eps, 0.0"]


def _forward(ty: str, name: str) -> str:
    body = _stats(ty, "row")
    body += _loop("o", [*_load(ty, "o", "row", "v"), f"  %o.c = fsub {ty} %o.v, %mu", f"  %o.r = fmul {ty} %o.c, %rs",
                        "  %o.op = getelementptr {ty}, ptr %orow, i64 %o.j".format(ty=ty),
                        f"  store {ty} %o.r, ptr %o.op"], "row.done")
    return row_loop(f"define void @{name}(ptr noalias %A, i64 %n_rows, i64 %k, i64 %row_stride, double %eps, "
                    f"ptr noalias %out) {{", ty, [("row", "A", "%row_stride"), ("orow", "out", "%k")], body,
                    entry=_eps(ty))


def _adjoint(ty: str, name: str) -> str:
    body = _stats(ty, "arow")
    body += _loop("gs", [*_load(ty, "gs", "grow", "g"), *_load(ty, "gs", "arow", "v"),
                         f"  %gs.c = fsub {ty} %gs.v, %mu", f"  %gs.h = fmul {ty} %gs.c, %rs",
                         f"  %gs.gh = fmul {ty} %gs.g, %gs.h",
                         f"  %gs.n1 = fadd reassoc {ty} %sg, %gs.g", f"  %gs.n2 = fadd reassoc {ty} %sgh, %gs.gh"],
                  "gs.done", [(ty, "sg", "0.0", "%gs.n1"), (ty, "sgh", "0.0", "%gs.n2")])
    body += ["gs.done:", f"  %mg = fdiv {ty} %sg, %kf", f"  %mgh = fdiv {ty} %sgh, %kf"]
    body += _loop("o", [*_load(ty, "o", "grow", "g"), *_load(ty, "o", "arow", "v"),
                        f"  %o.c = fsub {ty} %o.v, %mu", f"  %o.h = fmul {ty} %o.c, %rs",
                        f"  %o.t1 = fsub {ty} %o.g, %mg", f"  %o.t2 = fmul {ty} %o.h, %mgh",
                        f"  %o.t3 = fsub {ty} %o.t1, %o.t2", f"  %o.r = fmul {ty} %o.t3, %rs",
                        f"  %o.op = getelementptr {ty}, ptr %orow, i64 %o.j", f"  store {ty} %o.r, ptr %o.op"],
                  "row.done")
    return row_loop(f"define void @{name}(ptr noalias %G, ptr noalias %A, i64 %n_rows, i64 %k, i64 %g_stride, "
                    f"i64 %a_stride, double %eps, ptr noalias %out) {{", ty,
                    [("grow", "G", "%g_stride"), ("arow", "A", "%a_stride"), ("orow", "out", "%k")], body,
                    entry=_eps(ty))


def norm_ir(ty: str, symbol) -> list[str]:
    """The forward and adjoint functions for LLVM type `ty`, named by `symbol(kind)`,
    and the declaration of the square root they call."""
    sqrt = "llvm.sqrt.f64" if ty == "double" else "llvm.sqrt.f32"
    return [f"declare {ty} @{sqrt}({ty})", _forward(ty, symbol("ln")), _adjoint(ty, symbol("lnbar"))]

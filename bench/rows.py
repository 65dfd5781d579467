"""Rows as elements against the same arithmetic on three column arrays (issue 15,
"Rows and small vectors as elements"): s2sad.grad of `sum(map(energy, X))`, energy
reading p[0], p[1], p[2] of each row of a (n, 3) array, against (the target)
s2sad.grad of `sum(map(lambda a, b, c: ..., X[:, 0], X[:, 1], X[:, 2]))`, the same
loss of X written on its columns, and (for reference, no gradient w.r.t. X assembled)
s2sad.grad(argnums=(0, 1, 2)) of the lambda's loss called on the three columns. Target:
the row function costs at most TARGET times the column-slice loss. Gradients are
checked equal.
"""
from __future__ import annotations

import numpy as np

import s2sad

S2_ROWS = "s2sad grad, row function over X"
S2_COLS = "s2sad grad, X[:, 0], X[:, 1], X[:, 2] in the loss"
S2_ARGS = "s2sad grad, three column arguments"
TARGET = 1.5
SIZES = (1_000, 100_000, 1_000_000)
CASE = "energy(p) = p[0]**2 + p[1]*sin(p[2]) over rows vs columns"


def energy(p):
    return p[0] ** 2 + p[1] * np.sin(p[2])


def by_rows(X):
    return sum(map(energy, X))


def by_slices(X):
    return sum(map(lambda x, y, z: x ** 2 + y * np.sin(z), X[:, 0], X[:, 1], X[:, 2]))


def by_columns(a, b, c):
    return sum(map(lambda x, y, z: x ** 2 + y * np.sin(z), a, b, c))


def run_rows(rows, errors, quick, measure_block, timing_row, log):
    rng = np.random.default_rng(15)
    for n in SIZES:
        X = rng.normal(size=(n, 3))
        cols = (X[:, 0], X[:, 1], X[:, 2])
        gr, gs = s2sad.grad(by_rows), s2sad.grad(by_slices)
        gc = s2sad.grad(by_columns, argnums=(0, 1, 2))
        got, want, parts = gr(X), gs(X), gc(*cols)
        err = max(float(np.max(np.abs(got - want))),
                  max(float(np.max(np.abs(got[:, j] - parts[j]))) for j in range(3)))
        errors.append({"case": CASE, "n": n, "system": S2_ROWS, "max_abs_diff": err, "vs": S2_COLS})
        fns = {S2_ROWS: (lambda gr=gr, X=X: gr(X)), S2_COLS: (lambda gs=gs, X=X: gs(X)),
               S2_ARGS: (lambda gc=gc, cols=cols: gc(*cols))}
        measured = measure_block(fns, repeats=7 if quick else 25, budget_s=0.5 if quick else 2.0,
                                 batch_s=0.005 if quick else 0.02)
        r_row, c_row, a_row = (timing_row(CASE, n, s, measured[s]) for s in (S2_ROWS, S2_COLS, S2_ARGS))
        r_row["ratio_vs_columns"] = r_row["median_us"] / c_row["median_us"]
        r_row["ratio_vs_arguments"] = r_row["median_us"] / a_row["median_us"]
        rows.extend([r_row, c_row, a_row])
        log(f"  n={n:>9,}  rows {r_row['median_us']:10.1f} us  X[:, j] in the loss {c_row['median_us']:10.1f} us  "
            f"ratio {r_row['ratio_vs_columns']:.3f}  (column arguments {a_row['median_us']:10.1f} us, ratio "
            f"{r_row['ratio_vs_arguments']:.3f}; max diff {err:.1e})")


def markdown(rows) -> list[str]:
    out = [f"| case | n | rows (us) | X[:, j] in the loss (us) | ratio (target <= {TARGET}) | "
           "column arguments (us) | ratio |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["system"] == S2_ROWS:
            col = next(q for q in rows if q["n"] == r["n"] and q["system"] == S2_COLS)
            arg = next(q for q in rows if q["n"] == r["n"] and q["system"] == S2_ARGS)
            ok = "met" if r["ratio_vs_columns"] <= TARGET else "missed"
            out.append(f"| {r['case']} | {r['n']:,} | {r['median_us']:.1f} | {col['median_us']:.1f} | "
                       f"{r['ratio_vs_columns']:.3f} ({ok}) | {arg['median_us']:.1f} | {r['ratio_vs_arguments']:.3f} |")
    return out

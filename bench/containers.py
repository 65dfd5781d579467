"""Parameters in a dict against the same loss with positional arrays (issue 15,
"Containers"): s2sad.grad of `loss(p, x)` reading p["w"], p["b"] against
s2sad.grad(loss, argnums=(0, 1)) of `loss(w, b, x)`, for an elementwise loss (the
fused kernel and its hot path) and a small MLP (an array program). Target: the dict
costs at most TARGET times the positional call. Both gradients are checked equal.
"""
from __future__ import annotations

import numpy as np

import s2sad

S2_DICT = "s2sad grad, dict params"
S2_POS = "s2sad grad, positional"
TARGET = 1.05
SIZES = (1_000, 100_000, 1_000_000)
CASE = {"ew": "dict params vs positional arrays: sum(tanh(w*x+b)^2)",
        "mlp": "dict params vs positional arrays: 2-layer MLP"}


def ew_positional(w, b, x):
    return np.sum(np.tanh(w * x + b) ** 2)


def ew_dict(p, x):
    return np.sum(np.tanh(p["w"] * x + p["b"]) ** 2)


def mlp_positional(W1, b1, w2, X):
    return np.mean(np.tanh(X @ W1 + b1) @ w2)


def mlp_dict(p, X):
    return np.mean(np.tanh(X @ p["W1"] + p["b1"]) @ p["w2"])


ORDER = {"ew": ("w", "b"), "mlp": ("W1", "b1", "w2")}   # the positional loss's parameters


def _args(key: str, n: int, rng):
    if key == "ew":
        w, b, x = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
        return {"w": w, "b": b}, (w, b), x
    rows = max(n // 64, 4)
    W1, b1, w2, X = rng.normal(size=(64, 32)) * 0.1, rng.normal(size=32), rng.normal(size=32), rng.normal(size=(rows, 64))
    return {"W1": W1, "b1": b1, "w2": w2}, (W1, b1, w2), X


def run_containers(rows, errors, quick, measure_block, timing_row, log):
    rng = np.random.default_rng(15)
    losses = {"ew": (ew_dict, ew_positional), "mlp": (mlp_dict, mlp_positional)}
    for key, (by_dict, by_pos) in losses.items():
        for n in SIZES:
            p, pos, x = _args(key, n, rng)
            gd = s2sad.grad(by_dict)
            gp = s2sad.grad(by_pos, argnums=tuple(range(len(pos))))
            got, want = gd(p, x), gp(*pos, x)
            err = max(float(np.max(np.abs(got[k] - w))) for k, w in zip(ORDER[key], want))
            errors.append({"case": CASE[key], "n": n, "system": S2_DICT, "max_abs_diff": err, "vs": S2_POS})
            fns = {S2_DICT: (lambda gd=gd, p=p, x=x: gd(p, x)), S2_POS: (lambda gp=gp, pos=pos, x=x: gp(*pos, x))}
            measured = measure_block(fns, repeats=7 if quick else 25, budget_s=0.5 if quick else 2.0,
                                     batch_s=0.005 if quick else 0.02)
            d_row = timing_row(CASE[key], n, S2_DICT, measured[S2_DICT])
            p_row = timing_row(CASE[key], n, S2_POS, measured[S2_POS])
            d_row["ratio_vs_positional"] = d_row["median_us"] / p_row["median_us"]
            rows.extend([d_row, p_row])
            log(f"  {CASE[key]:55s} n={n:>9,}  dict {d_row['median_us']:10.1f} us  positional "
                f"{p_row['median_us']:10.1f} us  ratio {d_row['ratio_vs_positional']:.3f}")


def markdown(rows) -> list[str]:
    out = [f"| case | n | dict (us) | positional (us) | ratio (target <= {TARGET}) |", "|---|---|---|---|---|"]
    for r in rows:
        if r["system"] == S2_DICT:
            pos = next(q for q in rows if q["case"] == r["case"] and q["n"] == r["n"] and q["system"] == S2_POS)
            ok = "met" if r["ratio_vs_positional"] <= TARGET else "missed"
            out.append(f"| {r['case']} | {r['n']:,} | {r['median_us']:.1f} | {pos['median_us']:.1f} | "
                       f"{r['ratio_vs_positional']:.3f} ({ok}) |")
    return out

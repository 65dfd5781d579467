"""Closures and state for the benchmark (issue 4, "State"): s2sad's gradient of a loss
over a closure, and over stateful scalar functions, against the same arithmetic as a
pure function.

- closure: `sum(map(lambda z: tanh(w * z), x))`, the gradient w.r.t. x and the scalar
  w the lambda closes over, against the pure two-argument `f(z, w) = tanh(w * z)`
  broadcast over (x, w): the closure path (dual+closure) should cost what the pure one
  does (target: at most 1.1x).
- state: three stateful functions (a global accumulator, an item of a list, a global
  with a heavy state-free part), each against the same arithmetic with the state
  replaced by a constant (the dual path): the scan (elements in order, the state
  threaded, a reverse sweep) should cost at most 3x the dual path.

Every gradient is checked against its analytic form. Rows go into results.json with the
main table's row format; the case names are STATE_LABEL's values.
"""
from __future__ import annotations

import math

import numpy as np

import s2sad
from report import fmt_us

S2 = "s2sad grad"
PURE, OTHER = "pure function", "closure or state"
SIZES = (10_000, 1_000_000)
TOL = 1e-9
CLOSURE_TARGET = 1.1
STATE_TARGET = 3.0


# ---------------------------------------------------------------- the closure pair

def tanh_wz(z, w):
    return math.tanh(w * z)


def pure_closure_loss(x, w):
    return np.sum(s2sad.broadcast(tanh_wz, x, w))


def closure_loss(x, w):
    return sum(map(lambda z: math.tanh(w * z), x))


def closure_grad(x, w):
    d = 1.0 - np.tanh(w * x) ** 2
    return w * d, float(np.sum(x * d))


# ---------------------------------------------------------------- the stateful functions and their pure twins

total = 0.0
STORE = [0.0]
heavy_total = 0.0


def running(x):
    global total
    total += x
    return total


def running_pure(x):
    return x + 0.5


def item(x):
    STORE[0] += x * x
    return STORE[0] * 0.5


def item_pure(x):
    return (x * x + 0.5) * 0.5


def heavy(x):
    global heavy_total
    t = math.tanh(x) * x
    heavy_total += t
    return heavy_total + t


def heavy_pure(x):
    t = math.tanh(x) * x
    return (t + 0.5) + t


def running_loss(x):
    return sum(map(running, x))


def running_pure_loss(x):
    return sum(map(running_pure, x))


def item_loss(x):
    return sum(map(item, x))


def item_pure_loss(x):
    return sum(map(item_pure, x))


def heavy_loss(x):
    return sum(map(heavy, x))


def heavy_pure_loss(x):
    return sum(map(heavy_pure, x))


def _later(n):
    """How many values an element's state reaches: itself and every later one."""
    return n - np.arange(n, dtype=np.float64)


def _dt(x):
    th = np.tanh(x)
    return th + x * (1.0 - th * th)


STATE_CASES = {
    # key: (label, stateful loss, pure loss, analytic grad of the stateful loss, of the pure loss)
    "running": ("global accumulator: s += x; return s",
                running_loss, running_pure_loss, lambda x: _later(x.size), lambda x: np.ones_like(x)),
    "item": ("list item: S[0] += x*x; return S[0] * 0.5",
             item_loss, item_pure_loss, lambda x: _later(x.size) * x, lambda x: x),
    "heavy": ("heavy state-free part: t = tanh(x)*x; s += t; return s + t",
              heavy_loss, heavy_pure_loss, lambda x: (_later(x.size) + 1.0) * _dt(x), lambda x: 2.0 * _dt(x)),
}
CLOSURE_LABEL = "closure: sum(map(lambda z: tanh(w*z), x)), grad w.r.t. x and w"
STATE_LABEL = {"closure": CLOSURE_LABEL, **{k: v[0] for k, v in STATE_CASES.items()}}


def rel_err(got, ref) -> float:
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    return float(np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref)))) if ref.size else 0.0


def run_state(rows, errors, quick, measure_block, timing_row, log):
    """Time every pair at both sizes; rows/errors as in run.py's main table."""
    rng = np.random.default_rng(4)
    w = 0.7
    gp, go = s2sad.grad(pure_closure_loss, argnums=(0, 1)), s2sad.grad(closure_loss, argnums=(0, 1))
    grads = {key: (s2sad.grad(pure), s2sad.grad(loss), pref, ref)
             for key, (_, loss, pure, ref, pref) in STATE_CASES.items()}

    def closure_err(r, x):
        gx, gw = closure_grad(x, w)
        return max(rel_err(r[0], gx), rel_err(r[1], gw))

    for n in SIZES:
        x = rng.standard_normal(n)
        for key, label in STATE_LABEL.items():
            if key == "closure":
                fns = {PURE: (lambda x=x: gp(x, w)), OTHER: (lambda x=x: go(x, w))}
                checks = {PURE: closure_err, OTHER: closure_err}
            else:
                pure, other, pref, ref = grads[key]
                fns = {PURE: (lambda g=pure, x=x: g(x)), OTHER: (lambda g=other, x=x: g(x))}
                checks = {PURE: (lambda r, x, f=pref: rel_err(r, f(x))),
                          OTHER: (lambda r, x, f=ref: rel_err(r, f(x)))}
            for name in list(fns):
                try:
                    errors.append({"case": label, "n": n, "system": name,
                                   "max_rel_err": checks[name](fns[name](), x)})
                except Exception as e:  # noqa: BLE001
                    msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                    errors.append({"case": label, "n": n, "system": name, "error": msg})
                    log(f"  ! {name} failed on {label} n={n}: {msg}")
                    del fns[name]
            if not fns:
                continue
            small = n <= SIZES[0]
            res = measure_block(fns, repeats=(7 if quick else 31) if small else (5 if quick else 15),
                                budget_s=(0.05 if quick else 0.25) if small else (0.1 if quick else 0.6),
                                batch_s=2e-3 if small else 1e-9)
            line = []
            for name in (PURE, OTHER):
                if name in res:
                    rows.append(timing_row(label, n, f"{S2}: {name}", res[name], name))
                    line.append(f"{name}={rows[-1]['median_us']:.1f}")
            log(f"{key:8s} n={n:>9,d}  " + "  ".join(line))


# ---------------------------------------------------------------- report

def markdown(rows, errors) -> list:
    idx = {(r["case"], r["n"], r["system"]): r["median_us"] for r in rows if r.get("median_us") is not None}
    L = ["## Closures and state (issue 4)", ""]
    if not any(r["case"] in STATE_LABEL.values() for r in rows):
        L += ["Not measured.", ""]
        return L
    L.append("s2sad's gradient of a loss over a closure and over stateful scalar functions, against the same "
             "arithmetic as a pure function (float64, in the run's environment). The closure row closes `lambda z: tanh(w*z)` "
             "over a scalar w and differentiates w.r.t. x and w; its pure twin is `f(z, w) = tanh(w*z)` "
             "broadcast over (x, w). The stateful rows write a global or a list item (the scan path: the "
             "elements in order, the state threaded through, a reverse sweep); their pure twins replace the "
             "state by a constant (the dual path). Each cell is the median per-call time over interleaved "
             "batches; the last column is stateful (or closure) over pure.")
    L.append("")
    L.append(f"| case | N | {PURE} | {OTHER} | ratio |")
    L.append("|---|---:|---:|---:|---:|")
    ratios = {}
    for key, label in STATE_LABEL.items():
        for n in SIZES:
            p, o = idx.get((label, n, f"{S2}: {PURE}")), idx.get((label, n, f"{S2}: {OTHER}"))
            if p is None or o is None:
                L.append(f"| {label} | {n:,} | {'—' if p is None else fmt_us(p)} | "
                         f"{'—' if o is None else fmt_us(o)} | — |")
                continue
            ratios[(key, n)] = o / p
            L.append(f"| {label} | {n:,} | {fmt_us(p)} | {fmt_us(o)} | {o / p:.2f}x |")
    L.append("")
    mine = [e for e in errors if e["case"] in STATE_LABEL.values()]
    errs = [e["max_rel_err"] for e in mine if "max_rel_err" in e]
    if errs:
        bad = [e for e in mine if "max_rel_err" in e and not e["max_rel_err"] <= TOL]
        L.append(f"Every gradient was checked against its analytic form: the largest error, relative to "
                 f"max(1, |g|), was {max(errs):.1e}" + (f" (all within {TOL:g})." if not bad else "."))
        for e in bad:
            L.append(f"- **mismatch**: {e['system']} on {e['case']} at N={e['n']:,}: {e['max_rel_err']:.1e}")
    for e in mine:
        if "error" in e:
            L.append(f"- **failed**: {e['system']} on {e['case']} at N={e['n']:,}: {e['error']}")
    L.append("")
    L.append("Targets (issue 4, \"State\"):")
    L.append("")

    def target(keys, limit, what):
        parts, ok = [], True
        for key in keys:
            for n in SIZES:
                r = ratios.get((key, n))
                if r is None:
                    ok = False
                    parts.append(f"{key} n={n:,}: not measured")
                    continue
                ok &= r <= limit
                parts.append(f"{key} n={n:,}: {r:.2f}x{'' if r <= limit else ' MISSED'}")
        L.append(f"- {what}: {'**met**' if ok else '**missed**'} (" + "; ".join(parts) + ").")

    target(["closure"], CLOSURE_TARGET, f"The closure path at most {CLOSURE_TARGET}x the equivalent pure function")
    target(list(STATE_CASES), STATE_TARGET,
           f"The scan path at most {STATE_TARGET:g}x the pure dual path on the same element count")
    L.append("")
    return L

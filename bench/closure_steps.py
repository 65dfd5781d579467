"""A new closure per step (issue 12, "Memory"): the training-loop pattern
`s2sad.grad(lambda w: loss(w, batch))(w)`, a new lambda over each step's batch, against
one long-lived grad object whose lambda reads the batch from a cell rebound each step.

Targets: memory flat over STEPS steps (tracemalloc, after a warm-up) and a step at most
STEP_TARGET times a long-lived step. Every gradient is checked against its analytic
form. Rows go into results.json with the main table's row format.
"""
from __future__ import annotations

import gc
import time
import tracemalloc

import numpy as np

import s2sad

S2 = "s2sad grad"
STEPS = 10_000
N = 1_000
SIZES = (1_000, 100_000)     # timing; memory at N
STEP_TARGET = 1.2
FLAT_BYTES = 1_000_000     # "flat": less than this over all the steps (a leak would keep 8 kB a step)
CASE_NEW = "new closure per step: grad(lambda w: loss(w, batch))(w)"
CASE_LONG = "one long-lived grad object, batch rebound each step"
CASE_MEM = "new closure per step: tracemalloc growth"


def loss(w, batch):
    return np.sum(np.tanh(w * batch) + 0.5 * w * w)


def expected(w, batch):
    return batch * (1.0 - np.tanh(w * batch) ** 2) + w


def new_closure_steps(w, batches):
    for batch in batches:
        g = s2sad.grad(lambda w: loss(w, batch))(w)
    return g


def long_lived_steps(w, batches):
    batch = batches[0]
    grad = s2sad.grad(lambda w: loss(w, batch))
    for batch in batches:       # rebinds the cell the lambda reads
        g = grad(w)
    return g


def _timed(fn, w, batches, rounds: int) -> list[float]:
    """µs per step of each round."""
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(w, batches)
        out.append((time.perf_counter() - t0) / len(batches) * 1e6)
    return out


def run_closure_steps(rows, errors, quick, log):
    rng = np.random.default_rng(0)
    steps = STEPS // 10 if quick else STEPS
    per = {}
    for n in SIZES:
        w = rng.random(n)
        batches = [rng.random(n) for _ in range(200 if n <= 10_000 else 20)]
        for fn in (new_closure_steps, long_lived_steps):
            got = fn(w, batches[-1:])
            if np.max(np.abs(got - expected(w, batches[-1]))) > 1e-12:
                errors.append(f"{fn.__name__}: wrong gradient")
        ts_new, ts_long = [], []
        for _ in range(5 if quick else 30):   # turns, so that a slow spell hits both
            ts_new += _timed(new_closure_steps, w, batches, 1)
            ts_long += _timed(long_lived_steps, w, batches, 1)
        for case, ts in ((CASE_NEW, ts_new), (CASE_LONG, ts_long)):
            per[case, n] = (float(np.median(ts)), float(np.min(ts)))
            rows.append({"case": case, "n": n, "system": S2, "median_us": per[case, n][0],
                         "min_us": per[case, n][1], "batches": len(ts), "calls_per_batch": len(batches)})
    w = rng.random(N)

    # memory over `steps` steps, each with a fresh batch
    def one_step():
        batch = rng.random(N)
        return s2sad.grad(lambda w: loss(w, batch))(w)
    for _ in range(100):
        one_step()
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(steps // 10):
            one_step()
        gc.collect()
        first = tracemalloc.get_traced_memory()[0]
        for _ in range(steps - steps // 10):
            one_step()
        gc.collect()
        last = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    growth = last - first
    rows.append({"case": CASE_MEM, "n": N, "system": S2, "median_us": None, "min_us": None,
                 "steps": steps, "growth_bytes": int(growth), "batch_bytes": N * 8})
    for n in SIZES:
        (new, new_min), (long, long_min) = per[CASE_NEW, n], per[CASE_LONG, n]
        log(f"  new closure per step, N={n:,}: {new:.1f} us/step (min {new_min:.1f}), long-lived grad "
            f"{long:.1f} us/step (min {long_min:.1f}): {new / long:.2f}x (min/min {new_min / long_min:.2f}x)")
    log(f"  memory over {steps:,} new-closure steps at N={N:,}: {growth / 1e3:+.1f} kB")
    return {"per_step_us": {f"{case} N={n}": v for (case, n), v in per.items()}, "steps": steps,
            "growth_bytes": int(growth)}


def markdown(rows) -> list[str]:
    by = {(r["case"], r["n"]): r for r in rows if r["case"] in (CASE_NEW, CASE_LONG, CASE_MEM)}
    mem = by.get((CASE_MEM, N))
    if mem is None:
        return []
    L = ["", "### A new closure per step (loss(w, batch) = sum(tanh(w * batch) + w²/2))", "",
         "| pattern | N | µs per step (median) | min |", "|---|---|---|---|"]
    ratios = []
    for n in SIZES:
        new, long = by[(CASE_NEW, n)], by[(CASE_LONG, n)]
        L.append(f"| {CASE_NEW} | {n:,} | {new['median_us']:.1f} | {new['min_us']:.1f} |")
        L.append(f"| {CASE_LONG} | {n:,} | {long['median_us']:.1f} | {long['min_us']:.1f} |")
        ratios.append(f"N={n:,}: {new['median_us'] / long['median_us']:.2f}x")
        ok = new["median_us"] / long["median_us"] <= STEP_TARGET
    flat = mem["growth_bytes"] < FLAT_BYTES
    fixed = by[(CASE_NEW, SIZES[0])]["median_us"] - by[(CASE_LONG, SIZES[0])]["median_us"]
    L += ["",
          f"- A step with a new closure costs at most {STEP_TARGET}x a long-lived step: "
          f"{'met' if ok else 'missed'} at N={SIZES[-1]:,} ({'; '.join(ratios)}; the difference is a fixed "
          f"cost per new grad object and its first call, {fixed:.1f} µs at N={SIZES[0]:,}).",
          f"- Memory flat over {mem['steps']:,} steps (a new {mem['batch_bytes']:,}-byte batch each): "
          f"{'met' if flat else 'missed'} ({mem['growth_bytes'] / 1e3:+.1f} kB after the first tenth)."]
    return L

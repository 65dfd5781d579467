"""The dask section of the benchmark (issue 18's targets), in fresh dask schedulers:

- the user-function row at 10M elements: s2sad's gradient of a dask array in 4 chunks
  on the threaded scheduler, against s2sad's gradient of the same numpy array (target:
  at most 1.3x), interleaved; the dask gradient both persisted (kept in X's blocks) and
  computed into one numpy array (dask's concatenation into fresh memory, about 8 ms of
  the 80 MB at 10M on this machine, included);
- a compute-bound gradient at 50M elements (made on the workers, never shipped) on a
  LocalCluster of 2 worker processes against 1 (target: at least 1.7x faster);
- examples/dask_logistic_regression.py out of core: rows per second against the
  in-memory gradient of one block timed between its steps (target: within 2x), with the
  file as its writer left it (in the page cache: the example says so in its line), and
  each worker's peak memory against its limit.

Timings take the median of a few calls after a warm-up; a dask call costs tens of
milliseconds of scheduling, so these rows are about large arrays only.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

import s2sad
from cases import user_loss

HERE = os.path.dirname(os.path.abspath(__file__))


def _median_s(fn, calls: int) -> float:
    fn()
    ts = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def compute_bound(x):
    return np.sum(np.log1p(np.exp(np.sin(x) * np.cos(2.0 * x))) * np.tanh(x))


def run_dask(rows: list, errors: list, quick: bool, log) -> None:
    try:
        import dask
        import dask.array as da
        from distributed import Client, LocalCluster
    except ImportError as e:
        errors.append(f"dask section skipped: {e} (pip install .[dask])")
        return
    calls = 3 if quick else 7
    n = 2_000_000 if quick else 10_000_000
    x = np.random.default_rng(0).uniform(-2, 2, n)
    g = s2sad.grad(user_loss)
    X = da.from_array(x, chunks=n // 4)
    # interleaved: the numpy call, the gradient computed and kept in X's blocks (persist: a
    # dask user's in-memory result), and computed into one numpy array (compute: dask's
    # concatenation into fresh memory included)
    ways = {"numpy": lambda: g(x), "persist": lambda: g(X).persist(), "compute": lambda: g(X).compute()}
    with dask.config.set(scheduler="threads"):
        for fn in ways.values():
            fn()
        samples = {k: [] for k in ways}
        for _ in range(calls):
            for k, fn in ways.items():
                t = time.perf_counter()
                fn()
                samples[k].append(time.perf_counter() - t)
    numpy_s = float(np.median(samples["numpy"]))
    for way in ("persist", "compute"):
        dask_s = float(np.median(samples[way]))
        rows.append({"case": f"dask: user function, 4 chunks, threaded scheduler, .{way}()", "n": n,
                     "system": "s2sad+dask", "median_us": dask_s * 1e6, "vs_numpy": dask_s / numpy_s,
                     "target": "<= 1.3x numpy"})
        log(f"  dask 4 chunks (threads), .{way}() {dask_s * 1e3:.1f} ms vs numpy {numpy_s * 1e3:.1f} ms: "
            f"{dask_s / numpy_s:.2f}x (target <= 1.3x)")

    m = 5_000_000 if quick else 50_000_000
    gc_ = s2sad.grad(compute_bound)
    times = {}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None,
                          silence_logs=40) as cluster, Client(cluster):
            Z = da.random.default_rng(1).uniform(-2, 2, m, chunks=m // 8)
            times[workers] = _median_s(lambda: gc_(Z).sum().compute(), max(2, calls // 2))
    speedup = times[1] / times[2]
    rows.append({"case": "dask: compute-bound gradient, 2 worker processes vs 1", "n": m, "system": "s2sad+dask",
                 "median_us": times[2] * 1e6, "speedup": speedup, "target": ">= 1.7x"})
    log(f"  2 workers {times[2]:.2f} s vs 1 worker {times[1]:.2f} s: {speedup:.2f}x (target >= 1.7x)")

    rows_n = 2_000_000 if quick else 50_000_000
    chunk = 500_000 if quick else 1_000_000
    r = subprocess.run([sys.executable, os.path.join(HERE, "..", "examples", "dask_logistic_regression.py"),
                        "--rows", str(rows_n), "--chunk", str(chunk), "--steps", "5"],
                       capture_output=True, text=True, timeout=3600)
    tail = [line for line in r.stdout.splitlines() if "rows/s" in line or "peak memory" in line]
    rows.append({"case": "dask: out-of-core logistic regression (examples/dask_logistic_regression.py)",
                 "n": rows_n, "system": "s2sad+dask", "median_us": float("nan"), "report": tail,
                 "exit": r.returncode})
    for line in tail:
        log("  " + line)
    if r.returncode != 0:
        errors.append(f"dask example exited {r.returncode}: {r.stderr[-500:]}")


def markdown(rows) -> list[str]:
    out = ["", "### dask", "", "| case | n | time | against | target |", "|---|---|---|---|---|"]
    for r in rows:
        if not r["case"].startswith("dask:"):
            continue
        against = (f"{r['vs_numpy']:.2f}x numpy" if "vs_numpy" in r else
                   f"{r['speedup']:.2f}x faster" if "speedup" in r else "; ".join(r.get("report", [])))
        t = "" if r["median_us"] != r["median_us"] else f"{r['median_us'] / 1e3:.1f} ms"
        out.append(f"| {r['case'][6:]} | {r['n']:,} | {t} | {against} | {r.get('target', 'peak < limit; within 2x')} |")
    return out

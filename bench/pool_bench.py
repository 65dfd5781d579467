"""Warm memory in the default environment (issue 17): the MLP gradient at n = 10,000 in
processes with nothing set (s2sad's pool on), with glibc told to keep freed memory
(GLIBC_TUNABLES), and with the pool off (S2SAD_POOL=0). Target: the default within 1.1x
of the tuned one.

How it is timed, and why: the settings need their own processes (glibc reads
GLIBC_TUNABLES at start), so a setting cannot share a process with another, as the
main table's systems do. Timing each process alone, one after the other (what this
section did until session 12), let a slow spell of a few seconds on a shared machine
land on one setting's processes only: the same code read 0.93x in one full run and
1.51x in the next, and 0.98-1.03x in three runs of this section alone right after.
So here the processes live through the whole measurement and take turns:

- PROCESSES processes a setting (a process's own luck, such as a thread count its
  choosers settled on or where its memory landed, is one of several), each warmed up
  first (WARMUP calls: the thread choosers have probed and settled, the pool is full);
- then ROUNDS rounds, in which every process runs one batch in turn (the order rotated
  each round, so that no setting always follows the same one): one untimed call (its
  caches after the other processes ran), then BATCH calls timed whole, with the
  garbage collector off, as bench/run.py's batches;
- per setting: the median and the minimum over its batches, the page faults a call
  and the cores its calls used (process CPU time / wall time).

A process waits for its turn blocked on a pipe: it holds no core meanwhile. Its
environment is the parent's less any malloc or thread setting (child_environment: the
dask section before this one in run.py left distributed's there).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TUNED = "glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824"
WARMUP = 40          # calls before the timing
BATCH = 20           # calls timed whole, a batch
ROUNDS = 30          # batches of each process (--quick: 6)
PROCESSES = 3        # processes of each setting (--quick: 1)

CHILD = r"""
import gc, json, resource, sys, time
import numpy as np
sys.path.insert(0, {here!r})
import s2sad
from arrays import mlp_loss
rng = np.random.default_rng(0)
n = 10000
W1 = rng.standard_normal((10, 64)) * 0.3; b1 = np.zeros(64); W2 = rng.standard_normal((64, 1)) * 0.3
X = rng.standard_normal((n, 10)); y = rng.standard_normal((n, 1))
g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
for _ in range({warmup}):
    g(W1, b1, W2, X, y)
print("ready", flush=True)
for line in sys.stdin:
    calls = int(line)
    if calls <= 0:
        break
    g(W1, b1, W2, X, y)
    gc.disable()
    f0, c0, t0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time(), time.perf_counter()
    for _ in range(calls):
        g(W1, b1, W2, X, y)
    t1, c1, f1 = time.perf_counter(), time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    gc.enable()
    print(json.dumps({{"us": (t1 - t0) / calls * 1e6, "cpu_s": c1 - c0, "wall_s": t1 - t0, "faults": f1 - f0}}),
          flush=True)
"""

SETTINGS = {"default": {}, "GLIBC_TUNABLES": {"GLIBC_TUNABLES": TUNED}, "S2SAD_POOL=0": {"S2SAD_POOL": "0"}}
# what a setting's process must not inherit: s2sad's and glibc's malloc settings, and
# the thread caps. distributed's Nanny sets MALLOC_TRIM_THRESHOLD_=65536 and
# OMP/MKL/OPENBLAS_NUM_THREADS=1 in the very process that starts a LocalCluster (its
# pre-spawn-environ, by os.environ.update) and leaves them there: run.py's dask section
# runs just before this one, and its default processes then trimmed glibc's heap on
# every call (4.7 page faults a call against 0.0 measured alone)
UNSET = ("GLIBC_TUNABLES", "S2SAD_POOL", "S2SAD_POOL_MB", "S2SAD_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
         "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")


def child_environment(environ) -> dict:
    """`environ` less what would make the default setting other than a user's default."""
    return {k: v for k, v in environ.items() if k not in UNSET and not k.startswith("MALLOC_")}


def _start(code: str, env: dict) -> subprocess.Popen:
    # stderr to a file: a pipe nobody reads until the end could fill and block the child
    err = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=err, text=True)
    p.err = err
    if p.stdout.readline().strip() != "ready":
        p.kill()
        p.wait()
        why = _stderr(p)
        err.close()
        raise RuntimeError(why)
    return p


def _stderr(p: subprocess.Popen) -> str:
    p.err.seek(0)
    return p.err.read()[-300:]


def _batch(p: subprocess.Popen, calls: int) -> dict:
    p.stdin.write(f"{calls}\n")
    p.stdin.flush()
    line = p.stdout.readline()
    if not line:
        p.wait()
        raise RuntimeError(_stderr(p))
    return json.loads(line)


def _stop(procs) -> None:
    for _, _, p in procs:
        try:
            p.stdin.write("0\n")
            p.stdin.close()
            p.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            p.kill()
        p.err.close()


def measure(rounds: int, processes: int, warmup: int = WARMUP, batch: int = BATCH) -> dict:
    """{setting: [batch results]} from `processes` processes a setting taking turns for
    `rounds` rounds (see the module docstring)."""
    code = CHILD.format(here=HERE, warmup=warmup)
    env0 = child_environment(os.environ)
    procs: list = []
    try:
        for i in range(processes):
            for name, extra in SETTINGS.items():
                procs.append((name, i, _start(code, {**env0, **extra})))
        got = {name: [] for name in SETTINGS}
        for r in range(rounds):
            k = r % len(procs)
            for name, i, p in procs[k:] + procs[:k]:
                got[name].append({**_batch(p, batch), "process": i})
        return got
    finally:
        _stop(procs)


def summary(batches: list, calls_per_batch: int) -> dict:
    us = [b["us"] for b in batches]
    wall = sum(b["wall_s"] for b in batches)
    per_process = [float(np.median([b["us"] for b in batches if b["process"] == i]))
                   for i in sorted({b["process"] for b in batches})]
    return {"process_medians_us": per_process, "median_us": float(np.median(us)), "min_us": float(np.min(us)),
            "batches": len(us), "calls_per_batch": calls_per_batch,
            "cores": sum(b["cpu_s"] for b in batches) / max(wall, 1e-12),
            "page_faults_per_call": sum(b["faults"] for b in batches) / (len(us) * calls_per_batch)}


def run_pool(rows: list, errors: list, quick: bool, log) -> None:
    try:
        got = measure(rounds=6 if quick else ROUNDS, processes=1 if quick else PROCESSES)
    except (RuntimeError, OSError, ValueError) as e:
        errors.append(f"pool bench: {e}")
        return
    sums = {name: summary(b, BATCH) for name, b in got.items()}
    tuned = sums["GLIBC_TUNABLES"]
    for name, s in sums.items():
        vs, vs_min = s["median_us"] / tuned["median_us"], s["min_us"] / tuned["min_us"]
        rows.append({"case": f"pool: MLP gradient n=10,000, {name}", "n": 10_000, "system": "s2sad", **s,
                     "vs_tuned": vs, "vs_tuned_min": vs_min})
        log(f"  MLP gradient n=10,000, {name}: median {s['median_us']:.0f} us ({vs:.2f}x the tuned malloc's), "
            f"min {s['min_us']:.0f} us ({vs_min:.2f}x); {s['page_faults_per_call']:.1f} page faults a call, "
            f"{s['cores']:.2f} cores; {s['batches']} batches of {s['calls_per_batch']}; medians by process "
            f"{', '.join(f'{m:.0f}' for m in s['process_medians_us'])} us")


def markdown(rows) -> list[str]:
    out = ["", "### Warm memory in the default environment", "",
           "Processes of each setting take turns, a batch of calls each per round (bench/pool_bench.py).", "",
           "| MLP gradient n = 10,000 | median | vs GLIBC_TUNABLES | min | vs GLIBC_TUNABLES | page faults a call "
           "| cores | target |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["case"].startswith("pool:"):
            target = "<= 1.1x" if r["case"].endswith("default") else ""
            out.append(f"| {r['case'].split(', ', 1)[1]} | {r['median_us']:.0f} us | {r['vs_tuned']:.2f}x "
                       f"| {r.get('min_us', r['median_us']):.0f} us | {r.get('vs_tuned_min', r['vs_tuned']):.2f}x "
                       f"| {r.get('page_faults_per_call', float('nan')):.1f} | {r.get('cores', float('nan')):.2f} "
                       f"| {target} |")
    return out + [""]

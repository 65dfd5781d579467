"""Warm memory in the default environment (issue 17): the MLP gradient at n = 10,000 in
fresh processes with nothing set (s2sad's pool on), with glibc told to keep freed memory
(GLIBC_TUNABLES), and with the pool off (S2SAD_POOL=0). Target: the default within 1.1x
of the tuned one. Each process times 300 calls after a warm-up and prints its median."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TUNED = "glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824"

CHILD = r"""
import sys, time, numpy as np
sys.path.insert(0, {here!r})
import s2sad
from arrays import mlp_loss
rng = np.random.default_rng(0)
n = 10000
W1 = rng.standard_normal((10, 64)) * 0.3; b1 = np.zeros(64); W2 = rng.standard_normal((64, 1)) * 0.3
X = rng.standard_normal((n, 10)); y = rng.standard_normal((n, 1))
g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
for _ in range(20):
    g(W1, b1, W2, X, y)
ts = []
for _ in range({calls}):
    t = time.perf_counter(); r = g(W1, b1, W2, X, y); ts.append(time.perf_counter() - t)
print(np.median(ts) * 1e6)
"""

SETTINGS = {"default": {}, "GLIBC_TUNABLES": {"GLIBC_TUNABLES": TUNED}, "S2SAD_POOL=0": {"S2SAD_POOL": "0"}}


def run_pool(rows: list, errors: list, quick: bool, log) -> None:
    code = CHILD.format(here=HERE, calls=100 if quick else 300)
    env0 = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "S2SAD_POOL", "S2SAD_NUM_THREADS")}
    got = {name: [] for name in SETTINGS}
    for _ in range(1 if quick else 3):       # the settings take turns
        for name, extra in SETTINGS.items():
            r = subprocess.run([sys.executable, "-c", code], env={**env0, **extra}, capture_output=True, text=True,
                               timeout=600)
            if r.returncode != 0:
                errors.append(f"pool bench ({name}): {r.stderr[-300:]}")
                return
            got[name].append(float(r.stdout.strip()))
    for name, ts in got.items():
        med = float(np.median(ts))
        rows.append({"case": f"pool: MLP gradient n=10,000, {name}", "n": 10_000, "system": "s2sad",
                     "median_us": med, "vs_tuned": med / float(np.median(got["GLIBC_TUNABLES"]))})
        log(f"  MLP gradient n=10,000, {name}: {med:.0f} us ({med / float(np.median(got['GLIBC_TUNABLES'])):.2f}x "
            f"the tuned malloc's)")


def markdown(rows) -> list[str]:
    out = ["", "### Warm memory in the default environment", "",
           "| MLP gradient n = 10,000 | median | vs GLIBC_TUNABLES | target |", "|---|---|---|---|"]
    for r in rows:
        if r["case"].startswith("pool:"):
            target = "<= 1.1x" if r["case"].endswith("default") else ""
            out.append(f"| {r['case'].split(', ', 1)[1]} | {r['median_us']:.0f} us | {r['vs_tuned']:.2f}x | {target} |")
    return out

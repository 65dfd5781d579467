"""The headline table's blocks for a few cases, alone: bench/run.py's conditions (its
interleaving, one call a batch at 1M: x.copy(), s2sad, JAX jit(grad), numba in turn, so
that each system meets the caches the others left, as in the table), without the rest
of the run. For the memory-bound rows at 1M (`sum(x > 0.1)`, `sum(abs(x))`, tanh,
`ident(tanh)`), where timing a system alone (warm caches) and the table disagree.

    PYTHONPATH=. <python with jax> bench/mem_rows.py [--cases gt,abs,tanh,ident_tanh]
                                                     [--n 1000000] [--blocks 3]

Prints one line a block: each system's median per-call time, s2sad / JAX, s2sad's page
faults a call and the cores it used, the load average. Default environment (nothing
pinned, nothing set): run it under `taskset -c 1` with S2SAD_NUM_THREADS=1 for one core.
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run  # noqa: E402 - sets bench/run.py's environment (fresh kernel cache, JAX on the CPU)
from cases import CASES, make_input  # noqa: E402

import s2sad  # noqa: E402


def block(systems: dict, jax_table: dict, key: str, n: int) -> dict:
    """{system: median us} of one block of case `key` at n elements, run.py's way."""
    label, loss, analytic = CASES[key]
    g = s2sad.grad(loss)
    x = make_input(key, n)
    fns = {run.COPY: lambda: x.copy(), run.S2: lambda: g(x)}
    if "jax" in systems:
        xj, f, done = systems["jax"]["prepare"](x), jax_table[key][run.JG], systems["jax"]["block"]
        fns[run.JG] = lambda: done(f(xj))
    if "numba" in systems:
        nf = systems["numba"][key][run.NB]
        fns[run.NB] = lambda: nf(x)
    for fn in fns.values():
        fn()                                   # compile, as run.py's first call
    small = n <= 10_000
    res = run.measure_block(fns, repeats=61 if small else 31, budget_s=0.8 if small else 1.5,
                            batch_s=2e-3 if small else 1e-9)
    return {name: run.stats(times)[0] for name, (times, _) in res.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="gt,abs,tanh,ident_tanh", help="comma-separated keys of bench/cases.CASES")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--blocks", type=int, default=3, help="blocks of each case, in turn")
    args = ap.parse_args(argv)
    keys = [k for k in args.cases.split(",") if k]
    unknown = [k for k in keys if k not in CASES]
    if unknown:
        ap.error(f"unknown cases {unknown}; known: {sorted(CASES)}")
    print(f"s2sad from {s2sad.__file__}; cpus {sorted(os.sched_getaffinity(0))}", flush=True)
    systems, _ = run.load_systems({}, ["torch"])
    jax_table = systems["jax"]["build"]() if "jax" in systems else {}
    for _ in range(args.blocks):
        for key in keys:
            med = block(systems, jax_table, key, args.n)
            use = run.LAST_USAGE[run.S2]
            ratio = f"  s2sad/jax {med[run.S2] / med[run.JG]:.2f}" if run.JG in med else ""
            print(f"{CASES[key][0][:30]:30s} n={args.n:,}  " + "  ".join(f"{k} {v:.0f} us" for k, v in med.items())
                  + f"{ratio}  s2sad faults/call {use['faults_per_call']:.0f} cores {use['cores']:.2f}"
                  + f"  load {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

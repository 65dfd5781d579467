"""value_and_grad of the losses around the cross-entropy's dense head (session 22,
passes/xentvalues): the program with the value's join against the same program written
without it, grad, and JAX's `jit(value_and_grad)` where jax imports; in one process.

    python bench/value_rows.py                 # the cross-entropy and the MLP3, n = 32, 10k, 100k
    python bench/value_rows.py --sizes 10000   # one size

The two s2sad programs are each a function of its own (its own file and code object):
a grad object asks the plan cache for its function's plan on every call, so a second
program made for the same function would replace the first's. The value join is
left out of the second by generating it with `xentvalues.value_lines` returning None (the
oracle the tests use). s2sad's three ways take turns in a shuffled order each round (a
slow spell hits all); JAX runs in its own stretch after them (its thread pool spins
after a call and slowed whichever s2sad call came next). Medians; the ratios are what
to read.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import random
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]     # bench's losses; this checkout's s2sad
import s2sad  # noqa: E402
from fusion_rows import make_args, mlp3_loss, xent_loss  # noqa: E402
from s2sad.passes import xentvalues  # noqa: E402

LOSSES = {"xent": xent_loss, "mlp3": mlp3_loss}
JOINED, UNJOINED, JAX = "value_and_grad", "without the value's join", "jax jit(value_and_grad)"


def copy_of(f, tag: str, folder: str):
    """f as a function of its own: its source written to a file of its own and imported."""
    path = os.path.join(folder, f"{f.__name__}_{tag}.py")
    with open(path, "w") as fh:
        fh.write("import numpy as np\n\n" + inspect.getsource(f))
    spec = importlib.util.spec_from_file_location(f"{f.__name__}_{tag}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, f.__name__)


def made(f, argnums, args, joined: bool, folder: str):
    """value_and_grad of a copy of f, its program generated with or without the value's join."""
    real = xentvalues.value_lines
    if not joined:
        xentvalues.value_lines = lambda *a: None
    try:
        g = s2sad.value_and_grad(copy_of(f, "joined" if joined else "unjoined", folder), argnums=argnums)
        for _ in range(15):          # (generated, specialised, threads chosen)
            g(*args)
    finally:
        xentvalues.value_lines = real
    return g


def jax_way(case: str, argnums, args):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    from fusion_rows import jax_losses
    losses, _ = jax_losses()
    f = jax.jit(jax.value_and_grad(losses[case], argnums=argnums))
    ja = tuple(jnp.asarray(a) for a in args)
    for _ in range(5):
        jax.block_until_ready(f(*ja))
    return lambda: jax.block_until_ready(f(*ja))


def run(case: str, n: int, folder: str) -> dict:
    args, argnums = make_args(case, n)
    argnums = argnums if isinstance(argnums, tuple) else (argnums,)
    f = LOSSES[case]
    joined, unjoined = made(f, argnums, args, True, folder), made(f, argnums, args, False, folder)
    grad = s2sad.grad(copy_of(f, "grad", folder), argnums=argnums)
    for _ in range(15):
        grad(*args)
    ways = {JOINED: lambda: joined(*args), UNJOINED: lambda: unjoined(*args), "grad": lambda: grad(*args)}
    reps = 300 if n < 1000 else 60 if n < 50_000 else 20
    times = {k: [] for k in ways}
    order = list(ways)
    for _ in range(reps):
        random.shuffle(order)
        for k in order:
            t = time.perf_counter()
            ways[k]()
            times[k].append(time.perf_counter() - t)
    jx = jax_way(case, argnums, args)
    if jx is not None:
        times[JAX] = []
        for _ in range(reps):
            t = time.perf_counter()
            jx()
            times[JAX].append(time.perf_counter() - t)
    return {k: float(np.median(v)) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[32, 10_000, 100_000])
    ap.add_argument("--only", nargs="+", choices=sorted(LOSSES), default=sorted(LOSSES))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for case in a.only:
            for n in a.sizes:
                med = run(case, n, folder)
                line = "  ".join(f"{k} {v * 1e6:.0f} us" for k, v in med.items())
                ratios = f"against the unjoined {med[JOINED] / med[UNJOINED]:.2f}"
                if JAX in med:
                    ratios += f", against JAX {med[JOINED] / med[JAX]:.2f}"
                print(f"{case} n={n:,}: {line}  ({ratios})")


if __name__ == "__main__":
    main()

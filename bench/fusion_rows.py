"""Fusion around reductions (issue 17): gradients of the losses whose elementwise work
sits around row reductions, s2sad against JAX `jit(grad)`, same shapes, same data.

    softmax cross-entropy   -mean(sum(Y * log_softmax(X @ W + b))), 10 classes, d = 32, w.r.t. W, b
    log-sum-exp             sum of the max-shifted row log-sum-exp of Z (n, 10), w.r.t. Z
    layer norm              sum(tanh(layer_norm(x) * g + b)), 64 features, w.r.t. x, g, b
    3-layer MLP             tanh(X W1 + b1) -> relu(. W2 + b2) -> . W3 + b3 -> 10-class
                            softmax cross-entropy (d = 32, hidden 64, 64), w.r.t. all six

at n = 10,000 and 100,000 rows. Standalone: run it with the project's Python
(`python bench/fusion_rows.py`) for the s2sad side, fused and unfused (the same loss
with S2SAD_ROW_FUSION=0 when its plan is built and called); give `--jax-python PATH`
(a Python with jax and numpy, e.g. /tmp/jaxenv/bin/python) and this same file runs
there as a worker (`--jax-worker`, which imports numpy and jax only), each JAX timing
taken in turn with s2sad's: interleaved rounds, medians over rounds, ratios within a
round. If the current Python imports jax, it is used in process instead. Nothing is
pinned: default threads, default malloc (the environment a user has); `--rounds`,
`--reps`, `--sizes` and `--only` trim it. Every s2sad gradient is checked against
JAX's (1e-9 relative, float64) where JAX runs, and the fused against the unfused.

Output: one line per case and size, and `--json PATH` writes the rows.

`make bench` (bench/run.py) runs the same cases as a section of both its tables (the
default environment, and one pinned thread in its child process), JAX in process
(`run_section`, `markdown`): the targets are read from those rows.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

import numpy as np

D, H, CLASSES, FEATURES = 32, 64, 10, 64
LABEL = {"xent": "softmax cross-entropy, 10 classes (d=32), w.r.t. W, b",
         "lse": "row log-sum-exp of Z (n, 10), w.r.t. Z",
         "layer_norm": "layer norm, 64 features, tanh(ln(x) * g + b), w.r.t. x, g, b",
         "mlp3": "3-layer MLP (tanh, relu, 10-class softmax; d=32, hidden 64), w.r.t. all"}
TARGET = {"xent": 1.0, "lse": 1.0, "layer_norm": 1.0, "mlp3": 0.8}     # issue 17: s2sad / JAX at most


# ---------------------------------------------------------------- data (numpy only: both sides)

def make_args(case: str, n: int, seed: int = 0):
    """(arguments, argnums) for `case` at n rows; the same on both sides."""
    rng = np.random.default_rng(seed + n)
    Y = np.eye(CLASSES)[rng.integers(0, CLASSES, n)]
    if case == "xent":
        return (rng.normal(size=(D, CLASSES)) * 0.2, rng.normal(size=(1, CLASSES)) * 0.1,
                rng.normal(size=(n, D)), Y), (0, 1)
    if case == "lse":
        return (rng.normal(size=(n, CLASSES)) * 2,), 0
    if case == "layer_norm":
        return (rng.normal(size=(n, FEATURES)) * 2 + 1, rng.normal(size=FEATURES) * 0.3 + 1,
                rng.normal(size=FEATURES) * 0.1), (0, 1, 2)
    return (rng.normal(size=(D, H)) / np.sqrt(D), rng.normal(size=(1, H)) * 0.1,
            rng.normal(size=(H, H)) / np.sqrt(H), rng.normal(size=(1, H)) * 0.1,
            rng.normal(size=(H, CLASSES)) / np.sqrt(H), rng.normal(size=(1, CLASSES)) * 0.1,
            rng.normal(size=(n, D)), Y), (0, 1, 2, 3, 4, 5)


# ---------------------------------------------------------------- the losses, as numpy (s2sad)

def xent_loss(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def lse_loss(Z):
    m = np.max(Z, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(Z - m), axis=1, keepdims=True)) + m)


def layer_norm_loss(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    v = np.mean(xc ** 2, axis=-1, keepdims=True)
    return np.sum(np.tanh(xc / np.sqrt(v + 1e-5) * g + b))


def mlp3_loss(W1, b1, W2, b2, W3, b3, X, Y):
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    z = h2 @ W3 + b3
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


NUMPY_LOSSES = {"xent": xent_loss, "lse": lse_loss, "layer_norm": layer_norm_loss, "mlp3": mlp3_loss}


# ---------------------------------------------------------------- JAX

def jax_losses():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def xent(W, b, X, Y):
        return -jnp.mean(jnp.sum(Y * jax.nn.log_softmax(X @ W + b, axis=1), axis=1))

    def lse(Z):
        return jnp.sum(jax.nn.logsumexp(Z, axis=1))

    def layer_norm(x, g, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        v = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return jnp.sum(jnp.tanh((x - mu) / jnp.sqrt(v + 1e-5) * g + b))

    def mlp3(W1, b1, W2, b2, W3, b3, X, Y):
        h1 = jnp.tanh(X @ W1 + b1)
        h2 = jnp.maximum(h1 @ W2 + b2, 0.0)
        return xent(W3, b3, h2, Y)

    return {"xent": xent, "lse": lse, "layer_norm": layer_norm, "mlp3": mlp3}, jax


class JaxSide:
    """jit(grad) of each case, built once per (case, n), timed on request."""

    def __init__(self):
        self.losses, self.jax = jax_losses()
        self.made: dict = {}

    def _get(self, case, n):
        if (case, n) not in self.made:
            args, argnums = make_args(case, n)
            jargs = tuple(self.jax.numpy.asarray(a) for a in args)
            f = self.jax.jit(self.jax.grad(self.losses[case], argnums=argnums))
            self.jax.block_until_ready(f(*jargs))
            self.made[(case, n)] = (f, jargs)
        return self.made[(case, n)]

    def time(self, case, n, reps):
        f, jargs = self._get(case, n)
        return median_time(lambda: self.jax.block_until_ready(f(*jargs)), reps)

    def grads(self, case, n):
        f, jargs = self._get(case, n)
        out = f(*jargs)
        return [np.asarray(g) for g in (out if isinstance(out, tuple) else (out,))]


def median_time(call, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def worker() -> None:
    """--jax-worker: one JSON request a line on stdin, one JSON answer a line."""
    side = JaxSide()
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "time":
            out = {"t": side.time(req["case"], req["n"], req["reps"])}
        else:
            out = {"grads": [g.tolist() for g in side.grads(req["case"], req["n"])]}
        print(json.dumps(out), flush=True)


class RemoteJax:
    """A JaxSide in another Python (the worker), asked in turn."""

    def __init__(self, python: str):
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), "--jax-worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def _ask(self, req: dict) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the JAX worker stopped (does that Python import jax?)")
        return json.loads(line)

    def time(self, case, n, reps):
        return self._ask({"op": "time", "case": case, "n": n, "reps": reps})["t"]

    def grads(self, case, n):
        return [np.asarray(g) for g in self._ask({"op": "grads", "case": case, "n": n})["grads"]]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# ---------------------------------------------------------------- s2sad

class S2sadSide:
    """s2sad.grad of each case, fused, and unfused (a copy of the loss whose plan is
    built and run with S2SAD_ROW_FUSION=0)."""

    def __init__(self):
        import s2sad
        self.s2sad = s2sad
        self.made: dict = {}
        self.copies: dict | None = None

    def _unfused(self) -> dict:
        """The losses again, compiled from a copy of their source in a module of its own:
        other code objects, so other plans and specialised copies. (A function object
        made from the same `__code__` shares the fused one's plan, found by its code: the
        unfused calls then recorded the specialised copy the fused calls ran, with the row
        fusion off, where no block pass was reached, so the fused calls ran without their
        whole-call thread choice: the MLP3 at 10k rows read 7.4-8.3 ms here against
        6.0-6.5 ms alone, session 20.)"""
        if self.copies is None:
            import atexit
            import importlib.util
            import inspect
            import shutil
            import tempfile
            folder = tempfile.mkdtemp(prefix="s2sad_unfused_")
            atexit.register(shutil.rmtree, folder, True)      # (s2sad reads the file when it plans)
            path = os.path.join(folder, "fusion_rows_unfused.py")
            with open(path, "w") as f:
                f.write("import numpy as np\n\n\n" + "\n\n".join(inspect.getsource(fn) for fn in NUMPY_LOSSES.values()))
            spec = importlib.util.spec_from_file_location("fusion_rows_unfused", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.copies = {case: getattr(module, fn.__name__) for case, fn in NUMPY_LOSSES.items()}
        return self.copies

    def _get(self, case, n, fused):
        key = (case, n, fused)
        if key not in self.made:
            args, argnums = make_args(case, n)
            f = NUMPY_LOSSES[case] if fused else self._unfused()[case]
            with _fusion(fused):
                g = self.s2sad.grad(f, argnums=argnums)
                g(*args)
            self.made[key] = (g, args)
        return self.made[key]

    def time(self, case, n, reps, fused=True):
        g, args = self._get(case, n, fused)
        with _fusion(fused):
            return median_time(lambda: g(*args), reps)

    def grads(self, case, n, fused=True):
        g, args = self._get(case, n, fused)
        with _fusion(fused):
            out = g(*args)
        return list(out if isinstance(out, tuple) else (out,))


class _fusion:
    def __init__(self, on: bool):
        self.on = on

    def __enter__(self):
        self.old = os.environ.get("S2SAD_ROW_FUSION")
        os.environ["S2SAD_ROW_FUSION"] = "1" if self.on else "0"
        _reread_switch()

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop("S2SAD_ROW_FUSION", None)
        else:
            os.environ["S2SAD_ROW_FUSION"] = self.old
        _reread_switch()


def _reread_switch() -> None:
    """s2sad reads S2SAD_ROW_FUSION when a plan is built or when asked, not at every call
    (passes/rowfusion.SWITCH): ask, so that the calls inside the block run as it says."""
    from s2sad import rowsoftmax
    rowsoftmax.enabled()


def _check(a: list, b: list, what: str, tol: float = 1e-9) -> None:
    for x, y in zip(a, b):
        scale = max(np.abs(y).max(initial=0.0), 1e-300)
        err = np.abs(np.asarray(x, float) - np.asarray(y, float)).max(initial=0.0) / scale
        if not err <= tol:
            raise AssertionError(f"{what}: gradients differ by {err:.2e} relative")


def _jax_side(python: str | None):
    if python:
        return RemoteJax(python)
    try:
        return JaxSide()
    except ImportError:
        return None


def run(cases, sizes, rounds: int, reps: int, jax_python: str | None, log=print) -> list[dict]:
    shuffle = random.Random(0).shuffle
    s2 = S2sadSide()
    jx = _jax_side(jax_python)
    rows = []
    for case in cases:
        for n in sizes:
            _check(s2.grads(case, n), s2.grads(case, n, fused=False), f"{case} n={n} fused vs unfused")
            if jx is not None:
                _check(s2.grads(case, n), jx.grads(case, n), f"{case} n={n} s2sad vs JAX")
            fused, unfused, jax_t, ratio = [], [], [], []
            timers = {"fused": lambda: fused.append(s2.time(case, n, reps)),
                      "unfused": lambda: unfused.append(s2.time(case, n, reps, fused=False))}
            if jx is not None:
                timers["jax"] = lambda: jax_t.append(jx.time(case, n, reps))
            for _ in range(rounds):          # interleaved: each round times every system once,
                order = list(timers)         # in a shuffled order (bench/run.py's measure_block says why)
                shuffle(order)
                for name in order:
                    timers[name]()
                if jx is not None:
                    ratio.append(fused[-1] / jax_t[-1])
            row = {"case": case, "label": LABEL[case], "n": n, "s2sad_us": 1e6 * np.median(fused),
                   "unfused_us": 1e6 * np.median(unfused), "fused_over_unfused": float(np.median(
                       np.array(fused) / np.array(unfused)))}
            if jax_t:
                row.update(jax_us=1e6 * np.median(jax_t), s2sad_over_jax=float(np.median(ratio)),
                           ratio_range=[float(min(ratio)), float(max(ratio))], target=TARGET[case])
            rows.append(row)
            log(_line(row))
    if isinstance(jx, RemoteJax):
        jx.close()
    return rows


# ---------------------------------------------------------------- a section of make bench

SECTION = "fusion: "         # the rows' case prefix in bench/run.py's results


def run_section(rows: list, errors: list, quick: bool, log) -> None:
    """Every case at 10k and 100k rows (10k, 3 rounds with --quick), in this process's
    environment (bench/run.py's main table or its pinned child), JAX in process where it
    imports: each becomes a row {case: SECTION + label, n, system, median_us, fusion: the
    row `run` made}."""
    sizes = [10_000] if quick else [10_000, 100_000]
    try:
        got = run(list(LABEL), sizes, 3 if quick else 7, 10, None, log=lambda line: log("  " + line))
    except Exception as e:  # noqa: BLE001 - a failed section is reported, the others still run
        errors.append(f"fusion rows failed: {type(e).__name__}: {e}")
        return
    for r in got:
        rows.append({"case": SECTION + r["label"], "n": r["n"], "system": "s2sad", "median_us": r["s2sad_us"],
                     "fusion": r})


def markdown(rows: list, heading: str) -> list[str]:
    """The section's table from `rows` (bench/run.py's, either table), with each row's
    target met or missed; [] where the section did not run."""
    got = [r["fusion"] for r in rows if r.get("case", "").startswith(SECTION) and "fusion" in r]
    if not got:
        return []
    L = [heading, "", "| loss | n | s2sad | unfused | JAX jit(grad) | s2sad / JAX [range over rounds] | target |",
         "|---|---:|---:|---:|---:|---:|---|"]
    for r in got:
        if "jax_us" in r:
            lo, hi = r["ratio_range"]
            ratio = f"{r['s2sad_over_jax']:.2f} [{lo:.2f}-{hi:.2f}]"
            verdict = f"<= {r['target']}: {'**met**' if r['s2sad_over_jax'] <= r['target'] else '**missed**'}"
            jax = f"{r['jax_us'] / 1e3:.2f} ms"
        else:
            ratio, verdict, jax = "", "not evaluated (JAX missing)", ""
        L.append(f"| {r['label']} | {r['n']:,} | {r['s2sad_us'] / 1e3:.2f} ms | {r['unfused_us'] / 1e3:.2f} ms | "
                 f"{jax} | {ratio} | {verdict} |")
    L += ["", "Medians over interleaved rounds (each round times s2sad, s2sad unfused (S2SAD_ROW_FUSION=0) "
          "and JAX once, 10 calls each, in a shuffled order); the ratio is the median of the per-round ratios.", ""]
    return L


def _line(row: dict) -> str:
    s = (f"{row['case']:>10} n={row['n']:>7}: s2sad {row['s2sad_us']:9.0f} us  unfused {row['unfused_us']:9.0f} us "
         f"(fused/unfused {row['fused_over_unfused']:.2f})")
    if "jax_us" in row:
        lo, hi = row["ratio_range"]
        s += (f"  jax {row['jax_us']:9.0f} us  s2sad/jax {row['s2sad_over_jax']:.2f} [{lo:.2f}-{hi:.2f}] "
              f"(target <= {row['target']})")
    return s


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jax-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--jax-python", help="a Python with jax (e.g. /tmp/jaxenv/bin/python)")
    ap.add_argument("--only", nargs="*", choices=sorted(LABEL), help="these cases only")
    ap.add_argument("--sizes", nargs="*", type=int, default=[10_000, 100_000])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args(argv)
    if args.jax_worker:
        worker()
        return
    rows = run(args.only or list(LABEL), args.sizes, args.rounds, args.reps, args.jax_python,
               log=lambda line: print(line, flush=True))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()

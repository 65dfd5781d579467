"""Two revisions of s2sad, row by row, in one session: is there a regression?

    python bench/compare_revs.py REV_A REV_B [--rounds 31] [--batch-ms 20] [--pinned]
           [--only abs,gt] [--sizes 10000,1000000] [--tol 0.05] [--json FILE]
    make bench-compare A=REV_A B=REV_B [COMPARE_FLAGS=--pinned]

REV is anything `git rev-parse` takes (a commit, a branch, HEAD~1) or a directory holding
an `s2sad/` package (`.`: this working tree, uncommitted edits included). A commit is
exported with `git archive` to /tmp/s2sad-compare-<sha> (a checkout of that revision,
made once and reused; the repository itself is not touched: no worktree metadata, no
checkout).

What it times: the main table's s2sad rows (bench/run.py): `s2sad.grad` of every case of
bench/cases.py at every size of report.SIZES, and `s2sad.value_and_grad` of VG_CASE. Both
revisions run the same cases (this checkout's cases.py, read by path), each in its own
process (a worker: this script with --worker, its s2sad imported from the revision's
directory, its own fresh kernel cache). The workers take turns: round after round, every
row is timed once in each, A first on even rounds and B first on odd ones, one batch of
calls at a time while the other worker waits on its pipe, so a slow spell on a shared
machine hits both and the two never compete for a core. Each batch is timed whole (the
garbage collector off) and divided by its calls; after a warm-up, which also lets
s2sad's thread chooser settle.

What it prints, per row: each revision's median per-call time, the median of the
per-round ratios B/A (each ratio from two batches adjacent in time) and their quartiles,
and a verdict: "B slower" when the first quartile of the ratios is above 1 and the
median above 1 + tol, "B faster" symmetrically, otherwise "same" (within the noise).
Both revisions' gradients are checked against the case's analytic gradient at start-up;
a wrong one is printed as WRONG. `make bench-compare A=HEAD B=HEAD` shows the noise
floor: a revision against itself.

--pinned: both workers on one thread (bench_env.one_thread) and on one CPU, the same
for both (the idlest: bench_env.pin_one_cpu, inherited by the workers); default: the
default environment, as the main table.
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
VG_CASE = "user"                  # bench/run.py's: the case that also runs value_and_grad
DEFAULT_SIZES = (10_000, 1_000_000)   # report.SIZES (not imported: report imports numpy)
TAG = "@@ "                       # the workers' protocol lines (anything else is passed on)


# ------------------------------------------------------------------ revisions

def source_dir(rev: str) -> tuple[str, str]:
    """(directory holding s2sad/ for `rev`, a label for it)."""
    if os.path.isdir(rev) and os.path.isdir(os.path.join(rev, "s2sad")):
        return os.path.abspath(rev), rev
    sha = subprocess.run(["git", "-C", REPO, "rev-parse", "--verify", f"{rev}^{{commit}}"], capture_output=True,
                         text=True, check=False)
    if sha.returncode != 0:
        sys.exit(f"compare_revs: {rev!r} is neither a revision of {REPO} nor a directory with s2sad/")
    sha = sha.stdout.strip()
    out = os.path.join(tempfile.gettempdir(), f"s2sad-compare-{sha[:12]}")
    if not os.path.isdir(os.path.join(out, "s2sad")):
        tmp = tempfile.mkdtemp(prefix=f"s2sad-compare-{sha[:12]}-", dir=tempfile.gettempdir())
        archive = subprocess.Popen(["git", "-C", REPO, "archive", sha], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", tmp], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            sys.exit(f"compare_revs: git archive {sha} failed")
        try:
            os.rename(tmp, out)
        except OSError:           # made meanwhile by another run: use that one
            subprocess.run(["rm", "-rf", tmp], check=False)
    return out, f"{rev} ({sha[:10]})"


# ------------------------------------------------------------------ the worker

def worker(src: str, cases_path: str, sizes: list[int], only: list[str] | None) -> None:
    """Runs in its own process: sets up every row, then times batches on request."""
    sys.path.insert(0, src)
    import numpy as np

    import s2sad
    if not os.path.abspath(s2sad.__file__).startswith(src + os.sep):
        raise SystemExit(f"compare_revs worker: imported s2sad from {s2sad.__file__}, not from {src}")
    spec = importlib.util.spec_from_file_location("compare_cases", cases_path)
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)

    rows, fns = [], []
    for key, (label, loss, analytic) in cases.CASES.items():
        if only and key not in only:
            continue
        systems = [("s2sad grad", s2sad.grad(loss))]
        if key == VG_CASE:
            systems.append(("s2sad value_and_grad", s2sad.value_and_grad(loss)))
        for n in sizes:
            x = cases.make_input(key, n)
            ref = analytic(x)
            for system, d in systems:
                fn = (lambda d=d, x=x: d(x))
                got = fn()
                got = got[1] if system.endswith("value_and_grad") else got
                err = float(np.max(np.abs(np.asarray(got, dtype=np.float64) - ref) / np.maximum(1.0, np.abs(ref))))
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < 0.05:      # warm-up (the thread chooser's probes)
                    fn()
                one = min(_batch(fn, 1) for _ in range(3))
                rows.append({"case": label, "n": n, "system": system, "err": err, "one_call_s": one})
                fns.append(fn)
    _say({"rows": rows, "s2sad": s2sad.__file__})
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("quit"):
            return
        _say({"t": _batch(fns[msg["row"]], msg["calls"])})


def _batch(fn, calls: int) -> float:
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t0) / calls
    finally:
        if gc_was:
            gc.enable()


def _say(obj) -> None:
    sys.stdout.write(TAG + json.dumps(obj) + "\n")
    sys.stdout.flush()


# ------------------------------------------------------------------ the driver

class Worker:
    """One revision's worker process, talked to over its pipes."""

    def __init__(self, src: str, args, env: dict):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", src,
               "--sizes", ",".join(map(str, args.sizes))] + (["--only", ",".join(args.only)] if args.only else [])
        env = dict(env, S2SAD_CACHE_DIR=tempfile.mkdtemp(prefix="s2sad-compare-cache-"))
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                                     bufsize=1)

    def read(self) -> dict:
        for line in self.proc.stdout:
            if line.startswith(TAG):
                return json.loads(line[len(TAG):])
            sys.stderr.write(line)
        raise SystemExit(f"compare_revs: a worker exited with {self.proc.wait()}")

    def time(self, row: int, calls: int) -> float:
        self.proc.stdin.write(json.dumps({"row": row, "calls": calls}) + "\n")
        self.proc.stdin.flush()
        return self.read()["t"]

    def close(self) -> None:
        try:
            self.proc.stdin.write(json.dumps({"quit": True}) + "\n")
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=60)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    v = sorted(values)

    def q(p):
        k = (len(v) - 1) * p
        lo = int(k)
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (v[hi] - v[lo]) * (k - lo)
    return q(0.25), q(0.5), q(0.75)


def verdict(q1: float, med: float, q3: float, tol: float) -> str:
    if q1 > 1.0 and med > 1.0 + tol:
        return "B slower"
    if q3 < 1.0 and med < 1.0 - tol:
        return "B faster"
    return "same"


def compare(args) -> list[dict]:
    env = dict(os.environ)
    (src_a, label_a), (src_b, label_b) = source_dir(args.rev_a), source_dir(args.rev_b)
    if args.pinned:
        sys.path.insert(0, HERE)
        import bench_env
        bench_env.one_thread()
        cpu = bench_env.pin_one_cpu()         # the workers inherit it
        env = dict(os.environ)
        print(f"pinned: one thread, CPU {cpu}")
    print(f"A = {label_a}: {src_a}\nB = {label_b}: {src_b}")
    a, b = Worker(src_a, args, env), Worker(src_b, args, env)
    try:
        rows_a, rows_b = a.read()["rows"], b.read()["rows"]
        if [(r["case"], r["n"], r["system"]) for r in rows_a] != [(r["case"], r["n"], r["system"]) for r in rows_b]:
            raise SystemExit("compare_revs: the two workers set up different rows")
        calls = [max(1, int(args.batch_ms * 1e-3 / max(ra["one_call_s"], rb["one_call_s"], 1e-9)))
                 for ra, rb in zip(rows_a, rows_b)]
        ta, tb = [[] for _ in rows_a], [[] for _ in rows_a]
        t0 = time.perf_counter()
        for r in range(args.rounds):
            for i, k in enumerate(calls):
                if r % 2 == 0:
                    ta[i].append(a.time(i, k))
                    tb[i].append(b.time(i, k))
                else:
                    tb[i].append(b.time(i, k))
                    ta[i].append(a.time(i, k))
        elapsed = time.perf_counter() - t0
    finally:
        a.close()
        b.close()
    out = []
    for ra, rb, xa, xb, k in zip(rows_a, rows_b, ta, tb, calls):
        q1, med, q3 = quartiles([y / x for x, y in zip(xa, xb)])
        wrong = max(ra["err"], rb["err"]) > 1e-6
        out.append({"case": ra["case"], "n": ra["n"], "system": ra["system"], "calls_per_batch": k,
                    "a_median_us": quartiles(xa)[1] * 1e6, "b_median_us": quartiles(xb)[1] * 1e6,
                    "ratio_median": med, "ratio_q1": q1, "ratio_q3": q3, "err_a": ra["err"], "err_b": rb["err"],
                    "verdict": "WRONG" if wrong else verdict(q1, med, q3, args.tol)})
    print(f"{args.rounds} rounds in {elapsed:.0f} s; ratio = B/A per round (adjacent batches), "
          f"quartiles; tol {args.tol:.0%}")
    print(table(out))
    return out


def table(rows: list[dict]) -> str:
    lines = [f"{'row':44s} {'n':>9s} {'A us':>9s} {'B us':>9s} {'B/A':>6s}  {'[q1, q3]':15s} verdict"]
    for r in rows:
        name = r["case"] + ("" if r["system"] == "s2sad grad" else " (value_and_grad)")
        lines.append(f"{name[:44]:44s} {r['n']:>9,d} {r['a_median_us']:9.1f} {r['b_median_us']:9.1f} "
                     f"{r['ratio_median']:6.3f}  [{r['ratio_q1']:.3f}, {r['ratio_q3']:.3f}] {r['verdict']}")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rev_a", nargs="?")
    p.add_argument("rev_b", nargs="?")
    p.add_argument("--rounds", type=int, default=31)
    p.add_argument("--batch-ms", type=float, default=20.0)
    p.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    p.add_argument("--only", default="", help="case keys of bench/cases.py, comma-separated")
    p.add_argument("--tol", type=float, default=0.05)
    p.add_argument("--pinned", action="store_true")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    args.only = [s for s in args.only.split(",") if s]
    if args.worker:
        worker(args.worker, os.path.join(HERE, "cases.py"), args.sizes, args.only)
        return
    if not args.rev_a or not args.rev_b:
        p.error("two revisions: REV_A REV_B")
    rows = compare(args)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"a": args.rev_a, "b": args.rev_b, "pinned": args.pinned, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()

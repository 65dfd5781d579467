"""Two revisions of s2sad, row by row, in one session: is there a regression?

    python bench/compare_revs.py REV_A REV_B [--rounds 31] [--batch-ms 20] [--pinned]
           [--only abs,gt] [--sizes 10000,1000000] [--all-vg] [--no-null] [--tol 0.05] [--json FILE]
    make bench-compare A=REV_A B=REV_B [COMPARE_FLAGS=--pinned]

REV is anything `git rev-parse` takes (a commit, a branch, HEAD~1) or a directory holding
an `s2sad/` package (`.`: this working tree, uncommitted edits included). A commit is
exported with `git archive` to /tmp/s2sad-compare-<sha> (a checkout of that revision,
made once and reused; the repository itself is not touched: no worktree metadata, no
checkout).

What it times: the main table's s2sad rows (bench/run.py): `s2sad.grad` of every case of
bench/cases.py at every size of report.SIZES, and `s2sad.value_and_grad` of VG_CASE (of
every case with --all-vg). Both revisions run the same cases (this checkout's cases.py,
read by path), each in its own process (a worker: this script with --worker, its s2sad
imported from the revision's directory, its own fresh kernel cache). The workers take
turns: round after round, every row is timed once in each, the order of the workers
rotating from round to round, one batch of calls at a time while the others wait on
their pipes, so a slow spell on a shared machine hits all of them and they never compete
for a core. Each batch is timed whole (the garbage collector off) and divided by its
calls, after a warm-up, which also lets s2sad's thread chooser settle. The default run
(17 rows, 31 rounds, 20 ms batches, three workers) takes about a minute.

What it prints, per row: each revision's median per-call time, the median of the
per-round ratios B/A (each from two batches adjacent in time) and their quartiles,
the same for A'/A, where A' is revision A again in a third process (the null: what two
processes of one revision differ by, e.g. where s2sad's thread chooser settled, or
where their memory lies), and a verdict: "B slower" when the first quartile of B/A is
above 1 and its median above the noise band (the null's quartiles, widened to at least
1 +- tol), "B faster" symmetrically, otherwise "same". Both revisions' gradients are
checked against the case's analytic gradient at start-up; a wrong one is printed as
WRONG. `--no-null` leaves A' out (two processes, a fixed band of 1 +- tol).

--pinned: the workers on one thread (bench_env.one_thread) and on one CPU, the same
for all (the idlest: bench_env.pin_one_cpu, inherited by the workers); default: the
default environment, as the main table.
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import shutil
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

def worker(src: str, cases_path: str, sizes: list[int], only: list[str] | None, all_vg: bool) -> None:
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
        if key == VG_CASE or all_vg:
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
               "--sizes", ",".join(map(str, args.sizes))] + (["--only", ",".join(args.only)] if args.only else []) \
            + (["--all-vg"] if args.all_vg else [])
        self.cache = tempfile.mkdtemp(prefix="s2sad-compare-cache-")     # a cold disk cache, removed on close
        env = dict(env, S2SAD_CACHE_DIR=self.cache)
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
        shutil.rmtree(self.cache, ignore_errors=True)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    v = sorted(values)

    def q(p):
        k = (len(v) - 1) * p
        lo = int(k)
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (v[hi] - v[lo]) * (k - lo)
    return q(0.25), q(0.5), q(0.75)


def verdict(ratio: tuple[float, float, float], null: tuple[float, float, float] | None, tol: float) -> str:
    """From the quartiles (q1, median, q3) of the ratios B/A and of the null A'/A (A in a
    second process: what two processes of one revision differ by): "B slower" when at
    least three rounds in four have B slower and the median is beyond the noise band
    (the null's quartiles, widened to 1 +- tol); "B faster" symmetrically; else "same"."""
    q1, med, q3 = ratio
    lo, hi = 1.0 - tol, 1.0 + tol
    if null is not None:
        lo, hi = min(lo, null[0]), max(hi, null[2])
    if q1 > 1.0 and med > hi:
        return "B slower"
    if q3 < 1.0 and med < lo:
        return "B faster"
    return "same"


def _run_rounds(workers: list[Worker], calls: list[int], rounds: int) -> list[list[list[float]]]:
    """times[w][row]: per-call times, every row once per round in each worker, the
    workers' order rotating from round to round."""
    times = [[[] for _ in calls] for _ in workers]
    order = list(range(len(workers)))
    for r in range(rounds):
        turn = order[r % len(order):] + order[:r % len(order)]
        for i, k in enumerate(calls):
            for w in turn:
                times[w][i].append(workers[w].time(i, k))
    return times


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
    srcs = [src_a, src_b] + ([] if args.no_null else [src_a])     # A, B and A' (the null)
    workers = [Worker(src, args, env) for src in srcs]
    try:
        setups = [w.read()["rows"] for w in workers]
        keys = [[(r["case"], r["n"], r["system"]) for r in rows] for rows in setups]
        if any(k != keys[0] for k in keys):
            raise SystemExit("compare_revs: the workers set up different rows")
        calls = [max(1, int(args.batch_ms * 1e-3 / max(max(rows[i]["one_call_s"] for rows in setups), 1e-9)))
                 for i in range(len(keys[0]))]
        t0 = time.perf_counter()
        times = _run_rounds(workers, calls, args.rounds)
        elapsed = time.perf_counter() - t0
    finally:
        for w in workers:
            w.close()
    out = []
    for i, k in enumerate(calls):
        ra, rb = setups[0][i], setups[1][i]
        ratio = quartiles([y / x for x, y in zip(times[0][i], times[1][i])])
        null = quartiles([y / x for x, y in zip(times[0][i], times[2][i])]) if len(times) > 2 else None
        wrong = max(ra["err"], rb["err"]) > 1e-6
        out.append({"case": ra["case"], "n": ra["n"], "system": ra["system"], "calls_per_batch": k,
                    "a_median_us": quartiles(times[0][i])[1] * 1e6, "b_median_us": quartiles(times[1][i])[1] * 1e6,
                    "ratio_q1": ratio[0], "ratio_median": ratio[1], "ratio_q3": ratio[2],
                    "null_q1": null and null[0], "null_median": null and null[1], "null_q3": null and null[2],
                    "err_a": ra["err"], "err_b": rb["err"],
                    "verdict": "WRONG" if wrong else verdict(ratio, null, args.tol)})
    print(f"{args.rounds} rounds in {elapsed:.0f} s; B/A: the ratio per round (batches adjacent in time), "
          f"median [quartiles]; A'/A: A in a second process (the noise); band 1 +- {args.tol:.0%} at least")
    print(table(out))
    return out


def table(rows: list[dict]) -> str:
    lines = [f"{'row':40s} {'n':>9s} {'A us':>9s} {'B us':>9s}  {'B/A [q1, q3]':22s}  {'A_/A [q1, q3]':22s} verdict"
             .replace("A_", "A'")]
    for r in rows:
        name = r["case"] + ("" if r["system"] == "s2sad grad" else " (v&g)")
        null = (f"{r['null_median']:.3f} [{r['null_q1']:.3f}, {r['null_q3']:.3f}]" if r["null_median"] is not None
                else "-")
        lines.append(f"{name[:40]:40s} {r['n']:>9,d} {r['a_median_us']:9.1f} {r['b_median_us']:9.1f}  "
                     f"{r['ratio_median']:.3f} [{r['ratio_q1']:.3f}, {r['ratio_q3']:.3f}]  {null:22s} {r['verdict']}")
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
    p.add_argument("--all-vg", action="store_true", help="value_and_grad rows for every case, not only VG_CASE")
    p.add_argument("--no-null", action="store_true", help="no second process of A (no A'/A noise column)")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s]
    args.only = [s for s in args.only.split(",") if s]
    if args.worker:
        worker(args.worker, os.path.join(HERE, "cases.py"), args.sizes, args.only, args.all_vg)
        return
    if not args.rev_a or not args.rev_b:
        p.error("two revisions: REV_A REV_B")
    rows = compare(args)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"a": args.rev_a, "b": args.rev_b, "pinned": args.pinned, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()

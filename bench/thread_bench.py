"""The thread rows (issue 17, "threads that pay"): s2sad's default thread count (chosen per
kernel by timing, threadchoice.py) against one thread and two, in this process,
interleaved. run.py passes its timing helpers in, as to its other sections."""
from __future__ import annotations

import os
import time

import s2sad
from cases import CASES, make_input
from report import COPY, SIZES

THREAD_CASE = "user"
THREAD_N = 10_000_000
PROBE_CALLS = 12        # more than a probe takes (threadchoice: a warm-up and 3 timed calls of each count)


def _machine_busy() -> tuple[float, float]:
    """(busy CPU seconds of the whole machine, wall seconds) from /proc/stat, now."""
    with open("/proc/stat") as f:
        p = f.readline().split()
    ticks = [int(v) for v in p[1:]]
    idle = ticks[3] + ticks[4]
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK"), time.perf_counter()


ONE_T, TWO_T, AUTO_T = "s2sad grad, 1 thread", "s2sad grad, 2 threads", "s2sad grad, default threads"


def _threads_call(g, x, count):
    """g(x) with S2SAD_NUM_THREADS=count (None: unset, the count chosen by timing), the
    variable restored after."""
    def call():
        old = os.environ.pop("S2SAD_NUM_THREADS", None)
        if count is not None:
            os.environ["S2SAD_NUM_THREADS"] = str(count)
        try:
            return g(x)
        finally:
            os.environ.pop("S2SAD_NUM_THREADS", None)
            if old is not None:
                os.environ["S2SAD_NUM_THREADS"] = old
    return call


def run_threads(rows, quick, measure_block, stats, timing_row, log, attempts=3):
    """s2sad with 1 thread, 2 threads and the default count on the compute-bound user
    function at N=10M.

    Two threads need both cores of a 2-core machine: when other processes took more
    than 0.2 of a core meanwhile (from /proc/stat, less this process's own CPU), the
    block is run again, up to `attempts` times, and the least disturbed attempt is kept.
    The choice looks at the disturbance only, never at the speed-up."""
    label, loss, _ = CASES[THREAD_CASE]
    x = make_input(THREAD_CASE, THREAD_N)
    g = s2sad.grad(loss)
    fns = {COPY: lambda: x.copy(), ONE_T: _threads_call(g, x, 1), TWO_T: _threads_call(g, x, 2),
           AUTO_T: _threads_call(g, x, None)}
    for f in fns.values():
        f()
    for _ in range(PROBE_CALLS):         # the default's first probe, before the timing
        fns[AUTO_T]()
    tries = []
    for attempt in range(1 if quick else attempts):
        c0 = time.process_time()
        b0, w0 = _machine_busy()
        out = measure_block(fns, repeats=5 if quick else 31, budget_s=1.0 if quick else 3.0, batch_s=1e-9)
        b1, w1 = _machine_busy()
        own = time.process_time() - c0
        other = max(0.0, (b1 - b0) - own) / (w1 - w0)
        tries.append((other, own / (w1 - w0), out))
        log(f"  threads at N=10M, attempt {attempt + 1}: other work used {other:.2f} cores meanwhile")
        if other <= 0.2:
            break
    other, cores_used, out = min(tries, key=lambda t: t[0])
    res = {}
    for name, (ts, number) in out.items():
        med, mn = stats(ts)
        res[name] = med
        rows.append({"case": f"threads: {label}", "n": THREAD_N, "system": name, "median_us": med,
                     "min_us": mn, "batches": len(ts), "calls_per_batch": number,
                     "other_work_cores": other, "attempts": len(tries)})
    speedup = res[ONE_T] / res[TWO_T]
    log(f"  threads at N=10M: 1 thread {res[ONE_T] / 1e3:.1f} ms, 2 threads {res[TWO_T] / 1e3:.1f} ms "
        f"(speed-up {speedup:.2f}x), default {res[AUTO_T] / 1e3:.1f} ms")
    return {"one_us": res[ONE_T], "two_us": res[TWO_T], "auto_us": res[AUTO_T],
            "copy_us": res[COPY], "speedup": speedup, "cores_used": cores_used, "other_cores": other,
            "attempts": len(tries),
            "one_min_us": min(out[ONE_T][0]) * 1e6, "two_min_us": min(out[TWO_T][0]) * 1e6}


def run_default_vs_one(rows, quick, measure_block, stats, timing_row, log):
    """Every headline case at N=1M with the default thread count against one thread, in
    this process, interleaved (the target: the default never slower than one thread).
    The steady state, as a training loop sees it: the default's first PROBE_CALLS calls
    (the chooser's first probe, a few calls on each count) are made before the timing."""
    out = {}
    for key, (label, loss, _) in CASES.items():
        x = make_input(key, SIZES[1])
        g = s2sad.grad(loss)
        fns = {ONE_T: _threads_call(g, x, 1), AUTO_T: _threads_call(g, x, None)}
        for _ in range(PROBE_CALLS):
            fns[AUTO_T]()
        res = measure_block(fns, repeats=7 if quick else 31, budget_s=0.3 if quick else 1.5, batch_s=1e-9)
        for name, measured in res.items():
            rows.append(timing_row(f"default vs one thread: {label}", SIZES[1], name, measured))
        one, auto = stats(res[ONE_T][0])[0], stats(res[AUTO_T][0])[0]
        out[key] = {"one_us": one, "auto_us": auto}
        log(f"  {label:36s} N=1M: 1 thread {one:.0f} us, default {auto:.0f} us ({auto / one:.2f}x)")
    return out

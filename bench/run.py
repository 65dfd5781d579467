"""The s2sad benchmark: gradients of sum(f(x)) against numpy's x.copy(), JAX, numba, torch.

Run with `make bench` (installs the `bench` extra first) or `.venv/bin/python bench/run.py`.
Options: `--quick` (fewer repeats, a smoke test), `--out DIR` (default: bench/),
`--only closures-state`, `--only arrays`, `--only closure-steps`, `--only containers`, `--only rows`,
`--only hvp`, `--only higher`, `--only pool` or `--only dask` (that section alone,
printed, no files written), `--without jax,numba,torch` (leave systems out),
`--pinned` (this run, or this section, on one pinned thread instead of the default
environment), `--no-pinned-table`, `--no-pin`, `--tuned-malloc`.

Two environments (bench_env.py), each in its own process, since the systems read their
thread settings at import:
- the main table and every other section: the default environment, as a user runs:
  nothing set, every system's own threads (s2sad's chosen per kernel by timing), glibc's
  malloc as it is, no CPU affinity;
- the second table (the headline cases, the array programs and the losses around row
  reductions, bench/fusion_rows.py, again): one pinned thread
  for every system (S2SAD_NUM_THREADS=1, XLA_FLAGS without Eigen threads, the BLAS and
  torch on one thread, the process pinned to one CPU), run by this script in a child
  process (`--pinned-table FILE`) after the main one has finished.
`--tuned-malloc` tells glibc to keep freed memory (what earlier runs did), in both, and
the headings say so. The thread rows compare 1 thread, 2 threads and the default count
(chosen by timing) at N=10M, with every thread unpinned.

Within a block (one case at one N) the systems take turns, one batch of calls each per
round, so that a slow spell on a shared machine hits them all. Each batch is timed whole
and divided by its number of calls; the median and the minimum over the batches are
reported, after a warm-up. Each row also records the cores it used and the page faults
per call, so that a row that used several threads or paid for fresh memory shows.

Writes results.json (rows {"case", "n", "system", "median_us", "min_us", "env", ...}),
results.md (tables and the issue's targets, met or missed) and results.png.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import importlib.util
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
import traceback

import bench_env

# ------------------------------------------------- the environment, before any import
PINNED = "--pinned" in sys.argv[1:] or "--pinned-table" in sys.argv[1:]
if PINNED:
    bench_env.one_thread()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# kernels this run compiles go to a fresh cache, never the user's ~/.cache/s2sad
_CACHE_ROOT = tempfile.mkdtemp(prefix="s2sad-bench-")
os.environ["S2SAD_CACHE_DIR"] = os.path.join(_CACHE_ROOT, "main")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# the first call below imports s2sad's code generators: from bytecode, as an installed
# package has them (pip compiles them at install), whatever PYTHONDONTWRITEBYTECODE says,
# so that it times s2sad and not the compilation of its source
import compileall  # noqa: E402

compileall.compile_dir(os.path.join(os.path.dirname(HERE), "s2sad"), quiet=2)

import numpy as np  # noqa: E402

import s2sad  # noqa: E402
import cases  # noqa: E402
import arrays  # noqa: E402
import hvp  # noqa: E402
import closures_state  # noqa: E402
import closure_steps  # noqa: E402
import dask_bench  # noqa: E402
import fusion_rows  # noqa: E402
import pool_bench  # noqa: E402
import thread_bench  # noqa: E402
import containers  # noqa: E402
import higher  # noqa: E402
import rows as row_elements  # noqa: E402
from cases import CASES, make_input  # noqa: E402

from report import COPY, JG, JV, JVF, NB, S2, S2VG, SIZES, TABLE_SYSTEMS, TO  # noqa: E402

SYSTEM_ORDER = [COPY, *TABLE_SYSTEMS]
VG_CASE = "user"     # the case that also runs s2sad.value_and_grad
MEM_N = 1_000_000


def log(*a):
    print(*a, flush=True)


# ----------------------------------------------------------------------------- machine

def machine_info() -> dict:
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "unknown CPU":
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        model = platform.processor() or model
    isa = [f for f in ("avx2", "fma", "avx512f") if f in flags]
    try:
        import llvmlite.binding as llvm
        llvm.initialize_native_target()
        cpu_name = llvm.get_host_cpu_name()
    except Exception:  # noqa: BLE001
        cpu_name = "?"
    return {"cpu": model, "cpu_name": cpu_name, "cores": os.cpu_count(), "isa": isa,
            "python": platform.python_version(), "numpy": np.__version__,
            "s2sad": getattr(s2sad, "__version__", "?"), "platform": platform.platform(),
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
            "loadavg_start": os.getloadavg()}


# ----------------------------------------------------------------------------- timing

def _batch(fn, number: int) -> float:
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t0) / number
    finally:
        if gc_was:
            gc.enable()


def measure_block(fns: dict, *, repeats: int, budget_s: float, batch_s: float) -> dict:
    """Per-call times (seconds) of every fn, in interleaved rounds (the systems in a
    shuffled order each round). Each fn has been called at least once already (compile,
    check); here it is warmed up, calibrated, then timed in batches of `number` calls,
    `repeats` batches at most and at least 5, as the per-system time budget allows."""
    plan = {}
    for name, fn in fns.items():
        fn()                                   # warm-up
        one = min(_batch(fn, 1) for _ in range(3))
        number = max(1, int(batch_s / max(one, 1e-9)))
        rounds = max(5, min(repeats, int(budget_s / max(one * number, 1e-9))))
        plan[name] = (number, rounds)
    samples = {name: [] for name in fns}
    usage = {name: [0.0, 0.0, 0, 0] for name in fns}     # cpu s, wall s, minor faults, calls
    names = list(fns)
    # the order shuffled each round (seeded): every system follows every other about as
    # often. A rotation keeps the cyclic order, so one system always ran right after the
    # same one: s2sad's array rows after JAX's, whose first calls after JAX's took 4-5x
    # their time (JAX's pool threads and caches), +20 us a call at 10k rows (session 20)
    shuffle = random.Random(0).shuffle
    for r in range(max(p[1] for p in plan.values())):
        order = list(names)
        shuffle(order)
        for name in order:
            number, rounds = plan[name]
            if len(samples[name]) < rounds:
                r0, c0, w0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time(), time.perf_counter()
                samples[name].append(_batch(fns[name], number))
                u = usage[name]
                u[0] += time.process_time() - c0
                u[1] += time.perf_counter() - w0
                u[2] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0
                u[3] += number
    LAST_USAGE.clear()
    LAST_USAGE.update({name: {"cores": u[0] / max(u[1], 1e-12), "faults_per_call": u[2] / max(u[3], 1)}
                       for name, u in usage.items()})
    return {name: (samples[name], plan[name][0]) for name in names}


LAST_USAGE: dict = {}


def stats(ts):
    return float(np.median(ts)) * 1e6, float(np.min(ts)) * 1e6


def timing_row(case: str, n: int, system: str, measured, name: str | None = None, **extra) -> dict:
    """A results.json row from measure_block's (times, calls per batch) of the function
    `name` (default: `system`), with the cores and page faults its last block took."""
    ts, number = measured
    med, mn = stats(ts)
    usage = LAST_USAGE[name or system]
    return {"case": case, "n": n, "system": system, "median_us": med, "min_us": mn, "batches": len(ts),
            "calls_per_batch": number, **extra, "cores": usage["cores"],
            "page_faults_per_call": usage["faults_per_call"]}


# ----------------------------------------------------------------------------- systems

def load_systems(missing: dict, without=()):
    """{system: its table} and {system: version} of the alternatives that import;
    `missing` gets why each other one is absent."""
    def jax():
        j = cases.make_jax()
        return j, j["version"]

    out, versions = {}, {}
    for name in without:
        missing[{"jax": "JAX"}.get(name, name)] = "left out with --without"
    for name, make, label in (("jax", jax, "JAX"), ("torch", cases.make_torch, "torch"),
                              ("numba", cases.make_numba, "numba")):
        if name in without:
            continue
        try:
            out[name], versions[name] = make()
        except Exception as e:  # noqa: BLE001
            missing[label] = f"{type(e).__name__}: {e}"
    return out, versions


def grad_part(system: str, r):
    """The gradient array inside a system's result."""
    if system in (S2VG, NB, JV, JVF):
        r = r[1]
    return np.asarray(r)


def max_err(got, ref) -> float:
    got = np.asarray(got, dtype=np.float64)
    return float(np.max(np.abs(got - ref) / np.maximum(1.0, np.abs(ref))))


# ----------------------------------------------------------------------------- sections

def run_cases(systems, rows, errors, quick, cpu_shares):
    """The main table: every case at every size, every system present."""
    jax = systems.get("jax")
    jax_table = jax["build"]() if jax else {}
    first_calls = []
    for key, (label, loss, analytic) in CASES.items():
        g = s2sad.grad(loss)
        vg = s2sad.value_and_grad(loss) if key == VG_CASE else None
        for n in SIZES:
            x = make_input(key, n)
            ref = analytic(x)
            fns = {COPY: (lambda x=x: x.copy())}
            firsts = {}

            def add(name, call, check=True):
                try:
                    t0 = time.perf_counter()
                    r = call()
                    firsts[name] = (time.perf_counter() - t0) * 1e6
                    if check:
                        err = max_err(grad_part(name, r), ref)
                        errors.append({"case": label, "n": n, "system": name, "max_rel_err": err})
                    fns[name] = call
                except Exception as e:  # noqa: BLE001
                    msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                    errors.append({"case": label, "n": n, "system": name, "error": msg})
                    log(f"  ! {name} failed on {label} n={n}: {msg}")
                    if os.environ.get("BENCH_DEBUG"):
                        traceback.print_exc()

            add(S2, lambda g=g, x=x: g(x))
            if vg is not None:
                add(S2VG, lambda vg=vg, x=x: vg(x))
            if jax:
                xj = jax["prepare"](x)
                block = jax["block"]
                for name, f in jax_table[key].items():
                    add(name, lambda f=f, xj=xj, block=block: block(f(xj)))
            if "numba" in systems:
                f = systems["numba"][key][NB]
                add(NB, lambda f=f, x=x: f(x))
            if "torch" in systems:
                f = systems["torch"][key][TO]
                add(TO, lambda f=f, x=x: f(x))
            for name, us in firsts.items():
                if name != COPY:
                    first_calls.append({"case": f"first call: {label}", "n": n, "system": name,
                                        "median_us": us, "min_us": us})
            small = n <= 10_000
            c0, w0 = time.process_time(), time.perf_counter()
            res = measure_block(fns, repeats=(9 if quick else 61) if small else (5 if quick else 31),
                                budget_s=(0.1 if quick else 0.8) if small else (0.2 if quick else 1.5),
                                batch_s=2e-3 if small else 1e-9)
            share = (time.process_time() - c0) / (time.perf_counter() - w0)
            cpu_shares.append(share)
            line = []
            for name in SYSTEM_ORDER:
                if name in res:
                    rows.append(timing_row(label, n, name, res[name], block_cpu_share=share))
                    line.append(f"{name}={rows[-1]['median_us']:.1f}")
            log(f"{label:36s} n={n:>9,d}  " + "  ".join(line) + f"  (cpu share {share:.2f})")
    return first_calls


def run_first_site_latency(workdir, rows, jax):
    """First call of a new site in a warm process: a fresh module per site, with a constant
    that no earlier run has seen, so neither the in-memory nor the disk cache can hold it."""
    templates = {
        "user function": ("def f(z):\n    return math.tanh(z) * z / (1.0 + z * z) + {c}\n\n"
                          "def loss(x):\n    return np.sum(s2sad.broadcast(f, x))\n"),
        "sum(abs(x))": "def loss(x):\n    return np.sum(np.abs(x) + {c})\n",
        "10-step Newton": ("def f(a):\n    x = {c}\n    for i in range(10):\n        x = 0.5 * (x + a / x)\n"
                           "    return x\n\ndef loss(a):\n    return sum(map(f, a))\n"),
        "16-term Horner": ("C = tuple((-1.0) ** k / (k + {c}) for k in range(16))\n\n"
                           "def f(z):\n    acc = 0.0\n    for c in C:\n        acc = acc * z + c\n    return acc\n\n"
                           "def loss(x):\n    return np.sum(s2sad.broadcast(f, x))\n"),
    }
    out = []
    x = np.abs(make_input("abs", 10_000)) + 0.5
    for i, (name, body) in enumerate(templates.items()):
        c = 1.0 + random.random()
        path = os.path.join(workdir, f"fresh_site_{i}_{os.getpid()}.py")
        with open(path, "w") as fh:
            fh.write("import math\nimport numpy as np\nimport s2sad\n\n" + body.format(c=repr(c)))
        spec = importlib.util.spec_from_file_location(f"fresh_site_{i}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        t0 = time.perf_counter()
        s2sad.grad(mod.loss)(x)
        us = (time.perf_counter() - t0) * 1e6
        out.append({"case": f"first call of a new site: {name}", "n": 10_000, "system": S2,
                    "median_us": us, "min_us": us})
        log(f"  first call, fresh s2sad site {name:16s} {us / 1e3:7.1f} ms")
        if jax is not None and name in ("user function", "sum(abs(x))"):
            import jax.numpy as jnp
            el = (lambda z, c=c: jnp.tanh(z) * z / (1.0 + z * z) + c) if name == "user function" \
                else (lambda z, c=c: jnp.abs(z) + c)
            f = jax["grad_of"](el)
            xj = jax["prepare"](x)
            t0 = time.perf_counter()
            jax["block"](f(xj))
            us = (time.perf_counter() - t0) * 1e6
            out.append({"case": f"first call of a new site: {name}", "n": 10_000, "system": JG,
                        "median_us": us, "min_us": us})
            xj2 = jax["prepare"](x[:9_999])
            t0 = time.perf_counter()
            jax["block"](f(xj2))
            us2 = (time.perf_counter() - t0) * 1e6
            out.append({"case": f"first call at a new length: {name}", "n": 9_999, "system": JG,
                        "median_us": us2, "min_us": us2})
            t0 = time.perf_counter()
            s2sad.grad(mod.loss)(x[:9_999])
            us3 = (time.perf_counter() - t0) * 1e6
            out.append({"case": f"first call at a new length: {name}", "n": 9_999, "system": S2,
                        "median_us": us3, "min_us": us3})
    rows.extend(out)
    return out


def run_warm_cache(workdir, rows, quick):
    """A new process reaching its first result from a warm (and from an empty) cache."""
    path = os.path.join(workdir, f"warm_site_{os.getpid()}.py")
    with open(path, "w") as fh:
        fh.write("import math\nimport numpy as np\nimport s2sad\n\n"
                 f"def f(z):\n    return math.tanh(z) * z / (1.0 + z * z) + {1.0 + random.random()!r}\n\n"
                 "def loss(x):\n    return np.sum(s2sad.broadcast(f, x))\n")
    child = os.path.join(HERE, "_warm_child.py")
    warm_dir = os.path.join(_CACHE_ROOT, "warm")

    def run(cache_dir):
        env = dict(os.environ, S2SAD_CACHE_DIR=cache_dir)
        # Python's bytecode caches as an installed package has them (the warming run writes
        # them where this machine's environment says not to): what is timed is s2sad, not
        # the compilation of its modules' source
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        p = subprocess.run([sys.executable, child, path, "10000"], env=env, capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"rc {p.returncode}")
        return json.loads(p.stdout.strip().splitlines()[-1])

    out = {}
    try:
        first = run(warm_dir)                    # fills the cache, if there is one
        warm = [run(warm_dir) for _ in range(3 if quick else 5)]
        cold = [run(os.path.join(_CACHE_ROOT, f"cold{i}")) for i in range(2 if quick else 3)]
    except Exception as e:  # noqa: BLE001
        out["error"] = f"{type(e).__name__}: {e}"
        log(f"  ! warm-cache measurement failed: {out['error']}")
        return out
    wt = [r["first_us"] for r in warm]
    ct = [r["first_us"] for r in cold]
    files = first["cache_files"]
    implemented = files > 0
    out.update({"warm_median_us": float(np.median(wt)), "warm_min_us": float(np.min(wt)),
                "cold_median_us": float(np.median(ct)), "cold_min_us": float(np.min(ct)),
                "filling_run_us": first["first_us"], "cache_files": files,
                "disk_cache_implemented": implemented,
                "second_grad_object_us": float(np.median([r["second_grad_object_us"] for r in warm])),
                "import_ms": float(np.median([r["import_ms"] for r in warm])),
                "llvmlite_loaded_at_first_result": warm[0]["llvmlite_loaded"]})
    rows.append({"case": "new process, first result, warm cache (1 kernel)", "n": 10_000, "system": S2,
                 "median_us": out["warm_median_us"], "min_us": out["warm_min_us"],
                 "cache_files": files, "disk_cache_implemented": implemented})
    rows.append({"case": "new process, first result, empty cache (1 kernel)", "n": 10_000, "system": S2,
                 "median_us": out["cold_median_us"], "min_us": out["cold_min_us"]})
    log(f"  new process, first result: warm cache {out['warm_median_us'] / 1e3:.1f} ms, "
        f"empty cache {out['cold_median_us'] / 1e3:.1f} ms, cache files {files}")
    return out


def run_memory(rows):
    """tracemalloc peak of one warm grad(sum(f(x))) call at N=1e6, against one output array."""
    import tracemalloc
    out = []
    for key, (label, loss, _) in CASES.items():
        x = make_input(key, MEM_N)
        g = s2sad.grad(loss)
        try:
            g(x)
            g(x)
            gc.collect()
            tracemalloc.start()
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
            r = g(x)
            peak = tracemalloc.get_traced_memory()[1] - base
            tracemalloc.stop()
            del r
        except Exception as e:  # noqa: BLE001
            if tracemalloc.is_tracing():
                tracemalloc.stop()
            log(f"  ! tracemalloc {label}: {e}")
            continue
        ratio = peak / x.nbytes
        out.append({"case": f"tracemalloc peak: {label}", "n": MEM_N, "system": S2, "median_us": None,
                    "min_us": None, "peak_bytes": int(peak), "output_bytes": int(x.nbytes), "ratio": ratio})
    rows.extend(out)
    log("  tracemalloc peak / output array: " + ", ".join(f"{r['case'][len('tracemalloc peak: '):]}={r['ratio']:.3f}" for r in out))
    return out


def run_pinned_table(args) -> dict:
    """The second table: this script again, in a child process on one pinned thread
    (`--pinned-table FILE`), after this process's measurements. Returns its rows, errors
    and environment, or {"error": why}."""
    with tempfile.TemporaryDirectory(prefix="s2sad-bench-pinned-") as tmp:
        path = os.path.join(tmp, "pinned.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--pinned-table", path]
        cmd += [flag for flag, on in (("--quick", args.quick), ("--no-pin", args.no_pin),
                                      ("--tuned-malloc", args.tuned_malloc)) if on]
        cmd += ["--without", args.without] if args.without else []
        log("\none pinned thread (a child process): " + " ".join(cmd[1:]))
        env = {k: v for k, v in os.environ.items() if k != "S2SAD_CACHE_DIR"}
        try:
            p = subprocess.run(cmd, env=env, timeout=7200)
            if p.returncode != 0:
                return {"error": f"the child process exited with {p.returncode}"}
            with open(path) as fh:
                return json.load(fh)
        except (OSError, subprocess.TimeoutExpired, ValueError) as e:
            return {"error": f"{type(e).__name__}: {e}"}


def pinned_child(args, path: str, env: dict) -> int:
    """The child's side of run_pinned_table: the headline cases, the array programs and the
    losses around row reductions (bench/fusion_rows.py)."""
    rows, errors, missing = [], [], {}
    systems, versions = load_systems(missing, [w for w in args.without.split(",") if w])
    run_cases(systems, rows, errors, args.quick, [])
    arrays.run_arrays(systems, rows, errors, args.quick, measure_block, timing_row, log)
    fusion_rows.run_section(rows, errors, args.quick, log)
    for r in rows:
        r["env"], r["table"] = "pinned", "second"
    with open(path, "w") as fh:
        json.dump({"rows": rows, "errors": errors, "missing": missing, "env": env}, fh)
    return 0


def run_back_to_back(rows, quick):
    """The memory-bound rows at N=1M timed call after call of the same system (caches
    warm with that system's own data), besides the main table's interleaved timing (where
    each call follows another system's, which left other data in the caches)."""
    out = {}
    for key in ("abs", "gt"):
        label, loss, _ = CASES[key]
        x = make_input(key, SIZES[1])
        g = s2sad.grad(loss)
        fns = {COPY: lambda x=x: x.copy(), S2: lambda g=g, x=x: g(x)}
        ts = {name: [] for name in fns}
        for _ in range(2 if quick else 4):                # alternate runs of 25 calls each
            for name, f in fns.items():
                for _ in range(3):
                    f()
                for _ in range(25):
                    ts[name].append(_batch(f, 1))
        for name in fns:
            med, mn = stats(ts[name])
            out[(key, name)] = med
            rows.append({"case": f"back-to-back: {label}", "n": SIZES[1], "system": name, "median_us": med,
                         "min_us": mn, "batches": len(ts[name]), "calls_per_batch": 1})
        log(f"  back-to-back at N=1M, {label}: x.copy() {out[(key, COPY)]:.0f} us, s2sad {out[(key, S2)]:.0f} us, "
            f"{out[(key, S2)] / out[(key, COPY)]:.2f}x")
    return {key: {"copy_us": out[(key, COPY)], "s2sad_us": out[(key, S2)]} for key in ("abs", "gt")}


def run_call_overhead(rows):
    """A gradient call on 10 elements (the kernel itself is a few ns): the call path's cost."""
    x = make_input("abs", 10)
    g = s2sad.grad(cases.abs_loss)
    g(x)
    fns = {COPY: lambda: x.copy(), S2: lambda: g(x), "numpy np.sign(x)": lambda: np.sign(x)}
    out = measure_block(fns, repeats=25, budget_s=0.2, batch_s=2e-3)
    res = {}
    for name, (ts, number) in out.items():
        med, mn = stats(ts)
        res[name] = (med, mn)
        rows.append({"case": "call overhead: sum(abs(x))", "n": 10, "system": name, "median_us": med,
                     "min_us": mn, "batches": len(ts), "calls_per_batch": number})
    log(f"  grad on 10 elements: {res[S2][0]:.2f} us (x.copy() {res[COPY][0]:.2f} us)")
    return res


# ----------------------------------------------------------------------------- main

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke test)")
    ap.add_argument("--out", default=HERE, help="where results.json/md/png go")
    ap.add_argument("--without", default="", help="comma-separated systems to leave out: jax,numba,torch")
    ap.add_argument("--pinned", action="store_true",
                    help="run on one pinned thread (every system) instead of the default environment")
    ap.add_argument("--no-pinned-table", action="store_true",
                    help="leave out the second table (the headline cases again on one pinned thread)")
    ap.add_argument("--pinned-table", metavar="FILE", help=argparse.SUPPRESS)   # the child that makes it
    ap.add_argument("--tuned-malloc", action="store_true",
                    help="tell glibc's malloc to keep freed memory (not what a user has; labelled)")
    ap.add_argument("--default-malloc", action="store_true", help="the default now; kept for old command lines")
    ap.add_argument("--no-pin", action="store_true",
                    help="on one thread, do not pin the process to one CPU (XLA may then use several)")
    ap.add_argument("--only", choices=["closures-state", "arrays", "closure-steps", "containers", "hvp", "higher",
                                       "dask", "rows", "pool"],
                    help="run one section and print its report (writes no results files)")
    return ap.parse_args(argv)


def enter_environment(args) -> dict:
    """This process's environment (bench_env.py; the thread variables were set at import):
    pinned to a CPU on one thread unless --no-pin, malloc tuned if asked."""
    env = {"name": "pinned" if PINNED else "default", "cores": os.cpu_count(), "pinned_cpu": None,
           "malloc_tuned": bool(args.tuned_malloc) and bench_env.keep_freed_memory()}
    if PINNED and not args.no_pin:
        env["pinned_cpu"] = bench_env.pin_one_cpu()
    env["text"] = bench_env.describe(env)
    return env


def main(argv=None) -> int:
    args = parse_args(argv)
    env = enter_environment(args)
    if args.pinned_table:
        return pinned_child(args, args.pinned_table, env)
    if args.only:
        log(f"{args.only}: {env['text']}")
    if args.only == "closures-state":
        rows, errors = [], []
        closures_state.run_state(rows, errors, args.quick, measure_block, timing_row, log)
        log("\n".join(closures_state.markdown(rows, errors)))
        return 0
    if args.only == "closure-steps":
        rows, errors = [], []
        closure_steps.run_closure_steps(rows, errors, args.quick, log)
        log("\n".join(closure_steps.markdown(rows) + [f"error: {e}" for e in errors]))
        return 0
    if args.only == "pool":
        rows, errors = [], []
        pool_bench.run_pool(rows, errors, args.quick, log)
        log("\n".join(pool_bench.markdown(rows) + [f"error: {e}" for e in errors]))
        return 0
    if args.only == "dask":
        rows, errors = [], []
        dask_bench.run_dask(rows, errors, args.quick, log)
        log("\n".join(dask_bench.markdown(rows) + [f"error: {e}" for e in errors]))
        return 0
    if args.only == "containers":
        rows, errors = [], []
        containers.run_containers(rows, errors, args.quick, measure_block, timing_row, log)
        log("\n".join(containers.markdown(rows)))
        return 0
    if args.only == "rows":
        rows, errors = [], []
        row_elements.run_rows(rows, errors, args.quick, measure_block, timing_row, log)
        log("\n".join(row_elements.markdown(rows)))
        return 0
    if args.only in ("hvp", "higher"):     # sections that compare with the other systems
        rows, errors, missing = [], [], {}
        systems, _ = load_systems(missing, [w for w in args.without.split(",") if w])
        section = hvp if args.only == "hvp" else higher
        (section.run_hvp if args.only == "hvp" else section.run_higher)(
            systems, rows, errors, args.quick, measure_block, timing_row, log)
        log("\n".join(section.markdown(rows, errors)))
        return 0
    if args.only == "arrays":
        rows, errors, missing = [], [], {}
        systems, _ = load_systems(missing, [w for w in args.without.split(",") if w])
        arrays.run_arrays(systems, rows, errors, args.quick, measure_block, timing_row, log)
        for r in rows:
            log(f"  {r['case'][:40]:40s} n={r['n']:>7} {r['system']:20s} {r['median_us']:9.1f} us")
        return 0
    return run_all(args, env)


def run_all(args, env: dict) -> int:
    """Every section in this process's environment, then the second table (one pinned
    thread, a child process) unless this run is pinned itself or --no-pinned-table."""
    t_start = time.perf_counter()
    info = machine_info()
    info["env"] = env
    info["pinned_cpu"], info["malloc_tuned"] = env["pinned_cpu"], env["malloc_tuned"]
    log(f"s2sad benchmark {info['date']} on {info['cpu']} ({info['cpu_name']}), {info['cores']} cores, "
        f"load {info['loadavg_start'][0]:.2f}; main table: {env['text']}")

    rows: list = []
    errors: list = []
    missing: dict = {}

    # the very first s2sad call in the process: LLVM's initialisation included
    x0 = make_input("abs", 10_000)
    t0 = time.perf_counter()
    s2sad.grad(cases.abs_loss)(x0)
    first_in_process = (time.perf_counter() - t0) * 1e6
    rows.append({"case": "first call, first site in the process: sum(abs(x))", "n": 10_000, "system": S2,
                 "median_us": first_in_process, "min_us": first_in_process})
    log(f"  first s2sad call in the process (LLVM start-up included): {first_in_process / 1e3:.1f} ms")

    t0 = time.perf_counter()
    systems, versions = load_systems(missing, [w for w in args.without.split(",") if w])
    info["versions"] = versions
    info["import_s"] = time.perf_counter() - t0
    for name, why in missing.items():
        log(f"  {name} not available: {why}")
    if "jax" in systems:
        import jax
        info["jax_devices"] = [str(d) for d in jax.devices()]

    cpu_shares: list = []
    first_calls = run_cases(systems, rows, errors, args.quick, cpu_shares)
    info["cpu_share"] = (float(np.median(cpu_shares)), float(np.min(cpu_shares))) if cpu_shares else None
    rows.extend(first_calls)
    arrays.run_arrays(systems, rows, errors, args.quick, measure_block, timing_row, log)
    fusion_rows.run_section(rows, errors, args.quick, log)
    hvp.run_hvp(systems, rows, errors, args.quick, measure_block, timing_row, log)
    closures_state.run_state(rows, errors, args.quick, measure_block, timing_row, log)
    closure_steps.run_closure_steps(rows, errors, args.quick, log)
    higher_rows, higher_errors = [], []
    higher.run_higher(systems, higher_rows, higher_errors, args.quick, measure_block, timing_row, log)
    rows.extend(higher_rows)
    errors.extend(higher_errors)
    call_overhead = run_call_overhead(rows)
    back_to_back = run_back_to_back(rows, args.quick)
    with tempfile.TemporaryDirectory(prefix="s2sad-bench-src-") as workdir:
        fresh = run_first_site_latency(workdir, rows, systems.get("jax"))
        warm = run_warm_cache(workdir, rows, args.quick)
    memory = run_memory(rows)
    bench_env.unpin_all_threads()
    threads = thread_bench.run_threads(rows, args.quick, measure_block, stats, timing_row, log)
    default_vs_one = thread_bench.run_default_vs_one(rows, args.quick, measure_block, stats, timing_row, log)
    environ = dict(os.environ)     # distributed's Nanny leaves MALLOC_TRIM_THRESHOLD_ and OMP_NUM_THREADS set
    dask_bench.run_dask(rows, errors, args.quick, log)
    os.environ.clear()             # (in this process: the later sections' children, the pinned table, inherit it)
    os.environ.update(environ)
    pool_bench.run_pool(rows, errors, args.quick, log)
    containers.run_containers(rows, errors, args.quick, measure_block, timing_row, log)
    row_elements.run_rows(rows, errors, args.quick, measure_block, timing_row, log)
    for r in rows:
        r.setdefault("env", env["name"])
    pinned = None if PINNED or args.no_pinned_table else run_pinned_table(args)
    if pinned and "rows" in pinned:
        rows.extend(pinned["rows"])

    info["loadavg_end"] = os.getloadavg()
    info["wall_s"] = time.perf_counter() - t_start
    extra = {"first_in_process_us": first_in_process, "fresh_sites": fresh, "warm_cache": warm,
             "memory": memory, "threads": threads, "call_overhead": call_overhead, "back_to_back": back_to_back,
             "default_vs_one": default_vs_one, "pinned": pinned}

    import report
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w") as fh:
        json.dump(rows, fh, indent=1)
    md = report.markdown(rows, errors, missing, info, extra)
    with open(os.path.join(args.out, "results.md"), "w") as fh:
        fh.write(md)
    png = os.path.join(args.out, "results.png")
    try:
        report.plot(rows, info, png)
    except Exception as e:  # noqa: BLE001
        log(f"  ! plot failed: {type(e).__name__}: {e}")
    log(f"\nwrote {os.path.join(args.out, 'results.json')}, results.md, results.png "
        f"in {info['wall_s']:.0f} s")
    log("")
    log(md)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    finally:
        import shutil
        shutil.rmtree(_CACHE_ROOT, ignore_errors=True)

"""The environments the benchmark measures in (issue 17: the truth by default).

- "default", the main table: what a user has. Nothing is set: every system's own thread
  count (s2sad's chosen per kernel by timing, XLA's and torch's pools, numpy's BLAS),
  glibc's malloc as it is, no CPU affinity.
- "pinned", the second table: one thread for every system. S2SAD_NUM_THREADS=1,
  OMP/MKL/OPENBLAS/NUMBA_NUM_THREADS=1, XLA_FLAGS without Eigen threads and with one
  intra-op thread, torch.set_num_threads(1) (cases.make_torch reads ONE_THREAD), numba
  without `parallel`, and the process pinned to its idlest CPU (sched_setaffinity, what
  `taskset` does): XLA's CPU runtime spreads a computation over the CPUs it may use
  whatever XLA_FLAGS say.
- malloc tuned (`--tuned-malloc`, either environment, labelled in the headings): glibc
  told to keep freed memory, as earlier runs of this benchmark did.

`one_thread()` must run before numpy, JAX or torch is imported: they read these variables
once, at import. Each environment therefore runs in its own process (run.py re-runs
itself for the pinned table).
"""
from __future__ import annotations

import os
import time

ONE_THREAD = "S2SAD_BENCH_ONE_THREAD"
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

ALL_CPUS = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()


def one_thread() -> None:
    """Every system on one thread (before any of them is imported)."""
    os.environ["S2SAD_NUM_THREADS"] = "1"
    os.environ[ONE_THREAD] = "1"
    for var in THREAD_VARS:
        os.environ[var] = "1"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + XLA_ONE_THREAD).strip()


def _idlest_cpu(cpus) -> int:
    """The CPU of `cpus` with the most idle time over 0.3 s (from /proc/stat)."""
    def idle():
        out = {}
        with open("/proc/stat") as f:
            for line in f:
                p = line.split()
                if p[0].startswith("cpu") and p[0] != "cpu":
                    out[int(p[0][3:])] = int(p[4]) + int(p[5])
        return out
    try:
        a = idle()
        time.sleep(0.3)
        b = idle()
        return max(cpus, key=lambda c: b.get(c, 0) - a.get(c, 0))
    except (OSError, ValueError, IndexError):
        return max(cpus)


def pin_one_cpu():
    """Pin the process to one CPU before JAX/torch start their thread pools (XLA sizes
    its pool from the CPUs it may use). Returns the CPU, or None (one CPU only)."""
    if len(ALL_CPUS) < 2:
        return None
    cpu = _idlest_cpu(sorted(ALL_CPUS))
    os.sched_setaffinity(0, {cpu})
    return cpu


def unpin_all_threads():
    """Every thread of the process back on every CPU (for the thread-scaling rows)."""
    if not ALL_CPUS:
        return
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), ALL_CPUS)
        except OSError:
            pass


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to serve every array from its heap and never give freed memory
    back to the kernel (one arena for all threads, M_MMAP_THRESHOLD=256 MiB,
    M_TRIM_THRESHOLD=1 GiB): repeated calls then reuse warm pages, as a tuned training
    loop's would. Not what a user has: only with --tuned-malloc, and labelled."""
    try:
        import ctypes
        import ctypes.util
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
        return (bool(libc.mallopt(M_ARENA_MAX, 1)) and bool(libc.mallopt(M_MMAP_THRESHOLD, 256 << 20))
                and bool(libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)))
    except (OSError, AttributeError):
        return False


def describe(env: dict) -> str:
    """One sentence for a table's heading: the environment its rows ran in. `env` is
    {"name": "default" or "pinned", "pinned_cpu": int or None, "malloc_tuned": bool,
    "cores": int}."""
    if env["name"] == "pinned":
        cpu = env.get("pinned_cpu")
        text = ("one pinned thread for every system: S2SAD_NUM_THREADS=1, " + "/".join(THREAD_VARS) + "=1, "
                f"XLA_FLAGS=`{XLA_ONE_THREAD}`, torch.set_num_threads(1), numba without `parallel`, "
                + (f"the process pinned to CPU {cpu} (sched_setaffinity, as `taskset` does)" if cpu is not None
                   else "the process not pinned (one CPU, or --no-pin)"))
    else:
        text = (f"the default environment, as a user runs: nothing set, every system's own threads on "
                f"{env.get('cores', '?')} cores (s2sad's count chosen per kernel by timing; XLA's, torch's "
                f"and the BLAS's pools), no CPU affinity")
    return text + ("; glibc's malloc tuned to keep freed memory (`--tuned-malloc`: not what a user has)"
                   if env.get("malloc_tuned") else "; glibc's malloc as it is")

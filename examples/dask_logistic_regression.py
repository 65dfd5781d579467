"""Logistic regression on data larger than a worker's memory: s2sad's gradients over dask.

The data (ROWS x 10 float64, 4 GB by default) is written once, block by block, to
memory-mapped .npy files; dask arrays read it back block by block, each block mapped
by the worker that needs it and read by the gradient straight from the page cache or
the disk, not copied (the data never passes through this process, but for the one
block the in-memory comparison runs on). A
`distributed.LocalCluster` of worker processes, each limited to --memory-limit, runs
the gradient: s2sad proves that the loss is a mean over rows plus a penalty (see
`s2sad.explain`), runs its compiled value-and-gradient on each block of rows, and
dask sums the blocks' parameter gradients by a tree reduction. The parameters are
sent once per call.

Prints the throughput (rows per second, against the in-memory gradient on one block,
timed between the steps; --cold drops the files from the page cache before each step,
so that the blocks are read from the disk), each worker's peak memory (and how much of it
is LLVM's library, which a worker maps only when it compiles: its machine's disk cache
lacked the kernels), the training accuracy, and exits with status 1 if a worker's peak
passed its limit or the accuracy is below TARGET.

    python examples/dask_logistic_regression.py                    # 4 GB, 2 workers of 1 GB
    python examples/dask_logistic_regression.py --rows 200000 --chunk 50000 --steps 3
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time

import numpy as np

import s2sad

TARGET = 0.75    # the Bayes rate of this data is about 0.8
D = 10


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def loss(w, b, X, y):
    p = sigmoid(X @ w + b)
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)) + 1e-4 * np.sum(w * w)


def write_data(folder: str, rows: int, chunk: int, seed: int = 0) -> tuple[str, str]:
    """Two .npy files written block by block (never all in memory): X and y."""
    xs, ys = os.path.join(folder, "X.npy"), os.path.join(folder, "y.npy")
    X = np.lib.format.open_memmap(xs, mode="w+", dtype=np.float64, shape=(rows, D))
    y = np.lib.format.open_memmap(ys, mode="w+", dtype=np.float64, shape=(rows,))
    rng = np.random.default_rng(seed)
    truth = np.linspace(-1.0, 1.0, D)
    for start in range(0, rows, chunk):
        stop = min(rows, start + chunk)
        block = rng.standard_normal((stop - start, D))
        X[start:stop] = block
        y[start:stop] = (rng.random(stop - start) < sigmoid(block @ truth)).astype(np.float64)
    X.flush()
    y.flush()
    del X, y
    return xs, ys


def load_rows(path: str, start: int, stop: int) -> np.ndarray:
    """Its block of rows: a read-only view of the memory-mapped file, not a copy. The
    gradient reads the rows straight from the page cache (or the disk), so a block costs no
    copy into fresh memory (a copy took as long as the gradient: measured, 1M rows); the
    mapped pages are the kernel's to drop once the task lets go of the view."""
    return np.asarray(np.load(path, mmap_mode="r")[start:stop])


def load_block(xs: str, ys: str, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """Run on a worker: one block's rows and labels, read by one task, so that they sit on the
    same worker (read by two tasks, the scheduler may place them apart and then move 80 MB)."""
    return load_rows(xs, start, stop), load_rows(ys, start, stop)


def as_dask(xs: str, ys: str, rows: int, chunk: int):
    """X and y as dask arrays whose blocks are read on the workers, a block of each per task."""
    import dask
    import dask.array as da

    X_blocks, y_blocks = [], []
    for s in range(0, rows, chunk):
        e = min(rows, s + chunk)
        both = dask.delayed(load_block, pure=True, nout=2)(xs, ys, s, e)
        X_blocks.append(da.from_delayed(both[0], shape=(e - s, D), dtype=np.float64))
        y_blocks.append(da.from_delayed(both[1], shape=(e - s,), dtype=np.float64))
    return da.concatenate(X_blocks), da.concatenate(y_blocks)


def peak_rss_bytes() -> int:
    """Run on a worker: its peak resident memory (VmHWM, the high-water mark of this process's
    own address space). Not getrusage's ru_maxrss: Linux carries that across fork and exec, so a
    worker started by a parent that had written the 4 GB file through a memory map reported the
    parent's peak, not its own."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def llvm_rss_bytes() -> int:
    """Run on a worker: the resident pages of LLVM's library (llvmlite's shared object) in
    this process, 0 where it is not mapped. A worker maps it only to compile kernels its
    machine's disk cache lacks (the first step on a cold cache), and its pages, ~70 MiB
    once a kernel is compiled, stay counted in the worker's resident memory though they
    are file pages that every process mapping the library shares (one copy in memory)."""
    total, inside = 0, False
    try:
        with open("/proc/self/smaps") as f:
            for line in f:
                head = line.split(maxsplit=1)[0]
                if "-" in head and not head.endswith(":"):      # a mapping's first line
                    inside = "llvmlite" in line
                elif inside and head == "Rss:":
                    total += int(line.split()[1]) * 1024
    except OSError:
        return 0
    return total


def peaks_said(peaks: dict, llvm: dict, limit: int) -> str:
    """The workers' peaks, with the part that is LLVM's library where a worker compiled."""
    mib = lambda values: ", ".join(f"{v / 2**20:.0f}" for v in values) + " MiB"     # noqa: E731
    said = f"peak memory per worker: {mib(peaks.values())}"
    if any(llvm.values()):
        said += (f" (of which LLVM's library {mib(llvm[k] for k in peaks)}: mapped to compile the kernels this "
                 f"machine's disk cache lacked, file pages the workers share)")
    return said + f" (limit {limit / 2**20:.0f} MiB)"


def cpu_seconds() -> float:
    """Run anywhere: the CPU time this process has used (every thread, user and system). On
    a machine others load, CPU per row says where the work goes when wall time cannot."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def evict(*paths: str) -> None:
    """Drop the files' pages from the page cache (--cold): the next read comes from the disk."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def in_memory_seconds(vg, w, b, block_X, block_y, calls: int = 3) -> tuple[list[float], float]:
    """The in-memory gradient on one block, timed between the steps so that both see the
    same machine (other work on it slows both alike): wall seconds per call, and the CPU
    seconds of all of them."""
    out, cpu = [], cpu_seconds()
    for _ in range(calls):
        t = time.perf_counter()
        vg(w, b, block_X, block_y)
        out.append(time.perf_counter() - t)
    return out, cpu_seconds() - cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--lr", type=float, default=2.0)
    ap.add_argument("--cold", action="store_true",
                    help="drop the files from the page cache before each step (read from the disk)")
    args = ap.parse_args(argv)

    from dask.utils import parse_bytes
    from distributed import Client, LocalCluster

    limit = parse_bytes(args.memory_limit)
    with tempfile.TemporaryDirectory(prefix="s2sad-dask-") as folder:
        xs, ys = write_data(folder, args.rows, args.chunk)
        X, y = as_dask(xs, ys, args.rows, args.chunk)
        # one block in this process's memory: the in-memory gradient the throughput is against
        block_X, block_y = np.array(load_rows(xs, 0, args.chunk)), np.array(load_rows(ys, 0, args.chunk))
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit,
                               dashboard_address=None, silence_logs=40)
        with cluster, Client(cluster) as client:
            vg = s2sad.value_and_grad(loss, argnums=(0, 1))
            w, b = np.zeros(D), 0.0
            seconds, in_memory_s, cpu = [], [], {"workers": 0.0, "client": 0.0, "in memory": 0.0}
            for step in range(args.steps):
                if args.cold:
                    evict(xs, ys)
                before, mine = client.run(cpu_seconds), cpu_seconds()
                start = time.perf_counter()
                value, (gw, gb) = vg(w, b, X, y)
                seconds.append(time.perf_counter() - start)
                if step:        # the first step compiles on the workers
                    cpu["client"] += cpu_seconds() - mine
                    cpu["workers"] += sum(client.run(cpu_seconds).values()) - sum(before.values())
                walls, used = in_memory_seconds(vg, w, b, block_X, block_y)
                in_memory_s += walls
                cpu["in memory"] += used if step else 0.0
                w, b = w - args.lr * gw, b - args.lr * gb
                print(f"step {step}: loss {value:.5f} ({seconds[-1]:.2f} s)")
            # the first step also compiles on each worker: the throughput is that of the
            # steps after it, as the in-memory figure is warm
            per_call = float(np.median(seconds[1:] if len(seconds) > 1 else seconds))
            peaks, llvm = client.run(peak_rss_bytes), client.run(llvm_rss_bytes)
            print(s2sad.explain(vg))
        in_memory = len(block_y) / float(np.median(in_memory_s[1:] or in_memory_s))
        acc = float(np.mean(((block_X @ w + b) > 0) == (block_y > 0.5)))
    rate = args.rows / per_call
    read = "from the disk (evicted from the page cache before each step)" if args.cold else \
        "from the page cache (as just written)"
    print(f"{rate:,.0f} rows/s over dask ({args.workers} workers, the file read {read}); in memory, one process: "
          f"{in_memory:,.0f} rows/s ({in_memory / rate:.2f}x)")
    timed = max(1, args.steps - 1)
    per_row = {k: v / (args.rows * timed if k != "in memory" else 3 * len(block_y) * timed) * 1e9
               for k, v in cpu.items()}
    print(f"CPU per row: workers {per_row['workers']:.1f} ns + client and scheduler {per_row['client']:.1f} ns "
          f"over dask; in memory {per_row['in memory']:.1f} ns "
          f"({(per_row['workers'] + per_row['client']) / max(per_row['in memory'], 1e-9):.2f}x)")
    print(peaks_said(peaks, llvm, limit))
    print(f"training accuracy (first block): {acc:.3f}")
    ok = acc >= TARGET and all(v <= limit for v in peaks.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

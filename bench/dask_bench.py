"""The dask section of the benchmark (issue 18's targets), in fresh dask schedulers:

- the user-function row at 10M elements: s2sad's gradient of a dask array in 4 chunks
  on the threaded scheduler, against s2sad's gradient of the same numpy array (target:
  at most 1.3x), interleaved; the dask gradient both persisted (kept in X's blocks) and
  computed into one numpy array (dask's concatenation into fresh memory, about 8 ms of
  the 80 MB at 10M on this machine, included);
  beside it, dask's own cost for the same 4 blocks, each returned as it is (the
  scheduling alone, the floor under any dask row), in two graphs: map_blocks' (a
  blockwise layer over X's data nodes, which dask fuses into a subgraph per block) and
  one of the shape s2sad builds for an array held in memory (dask_grad.held_graph: one
  layer of a task per block given its block's data, depending on nothing), which costs
  dask less: the s2sad rows are compared with the floor of their own shape;
- a compute-bound gradient at 50M elements (made on the workers, never shipped) on a
  LocalCluster of 2 worker processes against 1 (target: at least 1.7x faster), each worker
  one thread (dask's nanny sets OMP_NUM_THREADS=1, which s2sad's default count honours),
  in chunks of about 100 MB as dask advises, as many for each worker (`worker_chunks`);
  beside it, the same clusters running a compute-bound numpy function (a sine) in the same
  chunks (no s2sad: what dask itself gains from the second worker on this machine), and
  both graphs over 1,000-element blocks (dask's own cost of a call, which a second worker
  does not halve: the ceiling it puts on the row). Each row says how the calls split their
  blocks between the workers and how much of each call the 2 workers had a core (their
  CPU over twice the wall time: under other work's load the row cannot read 2x);
- examples/dask_logistic_regression.py out of core: rows per second against the
  in-memory gradient of one block timed between its steps (target: within 2x), with the
  file as its writer left it (in the page cache: the example says so in its line), and
  each worker's peak memory against its limit. The example runs this checkout's s2sad
  (PYTHONPATH), not whichever copy the interpreter would import.

The ways compared take turns, one call each per round (the 1- and 2-worker clusters both
up, idle in turn), after a warm-up that also settles the numpy call's thread chooser
(its first 8 calls alternate 1 and N threads: timed, they made the numpy reference slow
when the section ran alone, 1.00x, and fast after the thread rows had settled it, 1.56x
in the full run); the rows give the median and the minimum over the rounds (11 of each,
the worker rows too: with 5, their median moved 1.42-1.75x between two runs minutes
apart on the znver5, 2026-12-02).
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from collections import Counter

import numpy as np

import s2sad
from cases import user_loss

HERE = os.path.dirname(os.path.abspath(__file__))


SETTLE_CALLS = 12      # more than a thread chooser's probe takes (a warm-up and 3 timed calls of each count)


def interleaved(ways: dict, rounds: int) -> dict:
    """{name: [seconds per call]}: each way called once per round, in turn, after one
    warm-up call each."""
    for fn in ways.values():
        fn()
    samples = {k: [] for k in ways}
    for _ in range(rounds):
        for k, fn in ways.items():
            t = time.perf_counter()
            fn()
            samples[k].append(time.perf_counter() - t)
    return samples


def compute_bound(x):
    return np.sum(np.log1p(np.exp(np.sin(x) * np.cos(2.0 * x))) * np.tanh(x))


def compute_bound_terms(x):
    """The pure-dask baseline's block function: compute-bound numpy, no s2sad (numpy's
    value of compute_bound took 3x s2sad's gradient: one sine keeps the rounds short)."""
    return np.sin(x)


def as_it_is(block):
    """A block returned untouched: a graph of these costs dask its scheduling alone."""
    return block


def held_identity(X):
    """X's blocks returned as they are by a graph of the shape s2sad's gradient of an array
    held in memory has (dask_grad.held_graph): one layer, a task per block given the
    block's data, no dependencies; built the same way (a fresh name, nothing tokenized)."""
    import uuid

    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
    from dask.task_spec import Task

    name = f"as_it_is-{uuid.uuid4().hex}"
    layer = X.dask.layers[X.name]
    tasks = {(name,) + idx: Task((name,) + idx, as_it_is, layer[(X.name,) + idx]) for idx in np.ndindex(*X.numblocks)}
    return da.Array(HighLevelGraph({name: MaterializedLayer(tasks)}, {name: set()}), name, X.chunks, meta=X._meta)


def repo_env() -> dict:
    """The environment for a child Python that must import this checkout's s2sad (a
    script's own folder comes first on its path, and an installed s2sad after it)."""
    root = os.path.dirname(HERE)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run_dask(rows: list, errors: list, quick: bool, log) -> None:
    try:
        import dask.array  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as e:
        errors.append(f"dask section skipped: {e} (pip install .[dask])")
        return
    calls = 3 if quick else 11
    run_four_chunks(rows, quick, calls, log)
    run_workers(rows, quick, 3 if quick else 11, log)
    run_out_of_core(rows, errors, quick, log)


def run_four_chunks(rows: list, quick: bool, calls: int, log) -> None:
    """The user-function row: 4 chunks on the threaded scheduler against the numpy call,
    and dask's floors beside it (see the module docstring)."""
    import dask
    import dask.array as da

    n = 2_000_000 if quick else 10_000_000
    x = np.random.default_rng(0).uniform(-2, 2, n)
    g = s2sad.grad(user_loss)
    X = da.from_array(x, chunks=n // 4)
    # interleaved: the numpy call, the gradient computed and kept in X's blocks (persist: a
    # dask user's in-memory result), and computed into one numpy array (compute: dask's
    # concatenation into fresh memory included)
    ways = {"numpy": lambda: g(x), "persist": lambda: g(X).persist(), "compute": lambda: g(X).compute(),
            "floor": lambda: X.map_blocks(as_it_is, dtype=x.dtype).persist(),
            "floor, held": lambda: held_identity(X).persist()}
    for _ in range(SETTLE_CALLS):
        g(x)
    with dask.config.set(scheduler="threads"):
        samples = interleaved(ways, calls)
    numpy_s, numpy_min = float(np.median(samples["numpy"])), min(samples["numpy"])
    for way in ("persist", "compute"):
        dask_s, dask_min = float(np.median(samples[way])), min(samples[way])
        rows.append({"case": f"dask: user function, 4 chunks, threaded scheduler, .{way}()", "n": n,
                     "system": "s2sad+dask", "median_us": dask_s * 1e6, "vs_numpy": dask_s / numpy_s,
                     "vs_numpy_min": dask_min / numpy_min, "target": "<= 1.3x numpy"})
        log(f"  dask 4 chunks (threads), .{way}() {dask_s * 1e3:.1f} ms vs numpy {numpy_s * 1e3:.1f} ms: "
            f"{dask_s / numpy_s:.2f}x median, {dask_min / numpy_min:.2f}x min (target <= 1.3x)")
    for way, graph in (("floor", "map_blocks' graph"), ("floor, held", "a task per block given its data, "
                                                                       "the graph s2sad's rows have")):
        floor_s = float(np.median(samples[way]))
        rows.append({"case": f"dask: 4 chunks, threaded scheduler, blocks returned as they are ({graph}: dask's own "
                             f"cost)", "n": n, "system": "dask", "median_us": floor_s * 1e6,
                     "vs_numpy": 1.0 + floor_s / numpy_s, "vs_numpy_min": 1.0 + min(samples[way]) / numpy_min,
                     "target": "(the floor: 1 + its share)"})
        log(f"  dask's own cost of the 4 blocks (returned as they are, {graph}): {floor_s * 1e3:.2f} ms = "
            f"{floor_s / numpy_s:.2f} of the numpy call: a row of that graph cannot read under "
            f"{1 + floor_s / numpy_s:.2f}x")


def run_out_of_core(rows: list, errors: list, quick: bool, log) -> None:
    """examples/dask_logistic_regression.py in a child process (see the module docstring)."""
    rows_n = 2_000_000 if quick else 50_000_000
    chunk = 500_000 if quick else 1_000_000
    r = subprocess.run([sys.executable, os.path.join(HERE, "..", "examples", "dask_logistic_regression.py"),
                        "--rows", str(rows_n), "--chunk", str(chunk), "--steps", "5"],
                       capture_output=True, text=True, timeout=3600, env=repo_env())
    tail = [line for line in r.stdout.splitlines() if "rows/s" in line or "peak memory" in line or "CPU per row" in line]
    rows.append({"case": "dask: out-of-core logistic regression (examples/dask_logistic_regression.py)",
                 "n": rows_n, "system": "s2sad+dask", "median_us": float("nan"), "report": tail,
                 "exit": r.returncode})
    for line in tail:
        log("  " + line)
    if r.returncode != 0:
        errors.append(f"dask example exited {r.returncode}: {r.stderr[-500:]}")


CHUNK_BYTES = 100 * 2**20    # dask's advice for a chunk: about 100 MB


def worker_chunks(m: int, workers: int = 2, itemsize: int = 8) -> int:
    """The chunk length of `m` elements for the 2-worker row: chunks of about CHUNK_BYTES
    (dask's array best practices: "it is rare to see chunk sizes below 100 MB", chunks
    large to cut the overhead, and at least one a thread), their count a multiple of the
    workers so that each takes as many as the other (50M float64: 4 chunks of 100 MB, 2 a
    worker). Why not smaller: dask's cost of a call grows with its tasks (each block's
    task and its reduction's round trips) and a second worker does not halve it; the same
    graph over 1,000-element blocks took 48-55 ms a call in 4 blocks, 77-81 ms in 8, on
    this machine at load ~12, against ~0.5 s of gradient kernels at 50M."""
    per_worker = max(1, round(m * itemsize / CHUNK_BYTES / workers))
    return -(-m // (per_worker * workers))


def tasks_per_worker(stream: list) -> dict:
    """{worker: its tasks of the call's heaviest task group} from a distributed task stream
    (`Client.get_task_stream`): the group whose computing took longest (the block tasks,
    after dask's fusion), counted per worker, so that a row says how the blocks were split
    (4 + 4, or 5 + 3 when a worker fell behind)."""
    busy: dict = {}
    for t in stream:
        key = t["key"][0] if isinstance(t["key"], tuple) else t["key"]
        group = str(key).rsplit("-", 1)[0]
        spent = sum(s["stop"] - s["start"] for s in t["startstops"] if s["action"] == "compute")
        entry = busy.setdefault(group, [0.0, {}])
        entry[0] += spent
        entry[1][t["worker"]] = entry[1].get(t["worker"], 0) + 1
    return max(busy.values(), key=lambda e: e[0])[1] if busy else {}


class WorkerCpu:
    """The CPU seconds (every thread, user and system) the worker processes of a client's
    cluster used: over a call against its wall time it says how much of the call the
    workers had a core (on a machine others load, the 2-worker row cannot read 2x).
    Made, it also has the scheduler record its task stream from then on."""

    def __init__(self, client):
        import psutil     # (distributed's own dependency)

        self.procs = [psutil.Process(pid) for pid in client.run(os.getpid).values()]
        client.get_task_stream(start=time.time())      # the first asking starts the recording

    def seconds(self) -> float:
        return sum(sum(p.cpu_times()[:2]) for p in self.procs)


def timed_call(client, cpu: WorkerCpu, make) -> tuple:
    """(wall seconds, the workers' CPU seconds, tasks per worker) of one computed call."""
    t0, c0 = time.time(), cpu.seconds()
    t = time.perf_counter()
    client.compute(make()).result()
    wall = time.perf_counter() - t
    return wall, cpu.seconds() - c0, tasks_per_worker(client.get_task_stream(start=t0))


def split_counts(splits: list) -> str:
    """How the calls split their blocks between the workers, e.g. "2+2 (7 calls)" or
    "4+4 (5 calls), 5+3 (2 calls)", most frequent first."""
    counts = Counter("+".join(str(v) for v in sorted(d.values(), reverse=True)) for d in splits)
    return ", ".join(f"{k} ({n} call{'s' * (n != 1)})" for k, n in counts.most_common())


def in_turn(ways: dict, rounds: int) -> dict:
    """{name: [what each call returned]}: as `interleaved`, each way once per round after
    a warm-up call each, for ways that time themselves."""
    for fn in ways.values():
        fn()
    return {k: v for k, v in zip(ways, zip(*([fn() for fn in ways.values()] for _ in range(rounds))))}


def run_workers(rows: list, quick: bool, rounds: int, log) -> None:
    """The compute-bound gradient on 1 worker process and on 2, both clusters up, called in
    turn (a slow spell of the shared machine hits both); beside it np.sin in the same
    chunks, and both graphs over blocks of 1,000 elements (dask's own cost of the call)."""
    import dask.array as da
    from distributed import Client, LocalCluster

    m = 5_000_000 if quick else 50_000_000
    chunk = worker_chunks(m)
    gc_ = s2sad.grad(compute_bound)
    opts = dict(threads_per_worker=1, dashboard_address=None, silence_logs=40)
    with LocalCluster(n_workers=1, **opts) as one, Client(one, set_as_default=False) as c1, \
            LocalCluster(n_workers=2, **opts) as two, Client(two, set_as_default=False) as c2:
        Z = da.random.default_rng(1).uniform(-2, 2, m, chunks=chunk)
        tiny = da.random.default_rng(1).uniform(-2, 2, 1000 * len(Z.chunks[0]), chunks=1000)
        ways = {}
        for w, c in ((1, c1), (2, c2)):
            cpu = WorkerCpu(c)
            ways[("grad", w)] = functools.partial(timed_call, c, cpu, lambda: gc_(Z).sum())
            ways[("sin", w)] = functools.partial(timed_call, c, cpu, lambda: Z.map_blocks(compute_bound_terms).sum())
            ways[("tiny", w)] = functools.partial(timed_call, c, cpu, lambda: gc_(tiny).sum())
            ways[("tiny sin", w)] = functools.partial(timed_call, c, cpu,
                                                      lambda: tiny.map_blocks(compute_bound_terms).sum())
        s = in_turn(ways, rounds)
    load = os.getloadavg()[0]
    for kind, case, system, target in (
            ("grad", "compute-bound gradient, 2 worker processes vs 1", "s2sad+dask", ">= 1.7x"),
            ("sin", "np.sin in the same chunks, 2 worker processes vs 1 (no s2sad)", "dask", "(dask's own gain)")):
        one_s, two_s = ([r[0] for r in s[(kind, w)]] for w in (1, 2))
        speedup, speedup_min = float(np.median(one_s) / np.median(two_s)), min(one_s) / min(two_s)
        split = split_counts([r[2] for r in s[(kind, 2)]])
        on_core = float(np.median([r[1] / (r[0] * 2) for r in s[(kind, 2)]]))
        rows.append({"case": "dask: " + case, "n": m, "system": system, "median_us": float(np.median(two_s)) * 1e6,
                     "speedup": speedup, "speedup_min": speedup_min, "target": target, "chunks": chunk,
                     "tasks_per_worker": split, "workers_on_core": on_core, "load": load})
        log(f"  {case}: 2 workers {np.median(two_s):.2f} s vs 1 worker {np.median(one_s):.2f} s: {speedup:.2f}x "
            f"median, {speedup_min:.2f}x min over {rounds} rounds (target {target}); {len(Z.chunks[0])} chunks of "
            f"{chunk * 8 / 1e6:.0f} MB, blocks per worker {split}, the 2 workers on a core "
            f"{on_core:.0%} of the call (load {load:.1f})")
    fixed = {w: float(np.median([r[0] for r in s[("tiny", w)]])) for w in (1, 2)}
    fixed_sin = {w: float(np.median([r[0] for r in s[("tiny sin", w)]])) for w in (1, 2)}
    one_g = float(np.median([r[0] for r in s[("grad", 1)]]))
    work = max(one_g - fixed[1], 0.0)
    ceiling = one_g / (fixed[2] + work / 2)
    said = (f"{fixed[1] * 1e3:.0f} ms on 1 worker, {fixed[2] * 1e3:.0f} ms on 2: with the rest of the 1-worker "
            f"call ({work:.2f} s) halved, 2 workers cannot read over {ceiling:.2f}x (np.sin's graph: "
            f"{fixed_sin[1] * 1e3:.0f} ms / {fixed_sin[2] * 1e3:.0f} ms)")
    rows.append({"case": "dask: the same gradient's graph over 1,000-element blocks (dask's own cost of a call)",
                 "n": 1000 * len(Z.chunks[0]), "system": "s2sad+dask", "median_us": fixed[2] * 1e6,
                 "ceiling": ceiling, "report": [said], "target": "(the 2-worker row's ceiling)"})
    log("  dask's own cost of the call (the same graph over 1,000-element blocks): " + said)


def markdown(rows) -> list[str]:
    out = ["", "### dask", "", "| case | n | time | against | target |", "|---|---|---|---|---|"]
    for r in rows:
        if not r["case"].startswith("dask:"):
            continue
        against = (f"{r['vs_numpy']:.2f}x numpy (min {r.get('vs_numpy_min', float('nan')):.2f}x)" if "vs_numpy" in r
                   else f"{r['speedup']:.2f}x faster (min {r.get('speedup_min', float('nan')):.2f}x)"
                   if "speedup" in r else "; ".join(r.get("report", [])))
        t = "" if r["median_us"] != r["median_us"] else f"{r['median_us'] / 1e3:.1f} ms"
        out.append(f"| {r['case'][6:]} | {r['n']:,} | {t} | {against} | {r.get('target', 'peak < limit; within 2x')} |")
    return out

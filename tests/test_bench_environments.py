"""The benchmark says where it measured (issue 17: "the benchmark tells the truth by
default"): bench/bench_env.py's environments, and bench/report.py's two tables, each
with its environment in its heading, on made-up numbers (nothing is timed here)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def bench(monkeypatch):
    """bench/'s modules, imported as run.py imports them (its folder on sys.path)."""
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_env
    import report
    yield bench_env, report
    for name in ("bench_env", "report", "cases", "fusion_rows"):
        sys.modules.pop(name, None)


def test_one_thread_sets_every_systems_variable(bench, monkeypatch):
    bench_env, _ = bench
    for var in ("S2SAD_NUM_THREADS", bench_env.ONE_THREAD, "XLA_FLAGS", *bench_env.THREAD_VARS):
        monkeypatch.setenv(var, "")            # restored after the test
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/x")
    bench_env.one_thread()
    assert os.environ["S2SAD_NUM_THREADS"] == "1" and os.environ[bench_env.ONE_THREAD] == "1"
    assert all(os.environ[v] == "1" for v in bench_env.THREAD_VARS)
    assert os.environ["XLA_FLAGS"] == "--xla_dump_to=/tmp/x " + bench_env.XLA_ONE_THREAD


def test_each_environment_is_described_as_it_is(bench):
    bench_env, _ = bench
    default = bench_env.describe({"name": "default", "cores": 2, "malloc_tuned": False})
    assert "default environment" in default and "2 cores" in default and "chosen per kernel by timing" in default
    assert "malloc as it is" in default and "pinned" not in default
    pinned = bench_env.describe({"name": "pinned", "pinned_cpu": 1, "malloc_tuned": True})
    assert "one pinned thread" in pinned and "S2SAD_NUM_THREADS=1" in pinned and "CPU 1" in pinned
    assert "--tuned-malloc" in pinned and "not what a user has" in pinned
    unpinned = bench_env.describe({"name": "pinned", "pinned_cpu": None, "malloc_tuned": False})
    assert "not pinned" in unpinned


def _rows(report, table_env, jax_ratio, copy_us=100.0):
    """Made-up headline rows: s2sad at 1.0x copy, JAX taking `jax_ratio` times s2sad's time."""
    rows = []
    for label in report.LABEL.values():
        for n in report.SIZES:
            for system, us in ((report.COPY, copy_us), (report.S2, copy_us), (report.JG, copy_us * jax_ratio)):
                rows.append({"case": label, "n": n, "system": system, "median_us": us, "min_us": us,
                             "cores": 1.0 if table_env == "pinned" else 1.6, "page_faults_per_call": 0.0,
                             "env": table_env, **({"table": "second"} if table_env == "pinned" else {})})
    return rows


def _info(report, env):
    return {"date": "2026-12-01 20:00", "cpu": "a CPU", "cpu_name": "znver4", "cores": 2, "isa": ["avx2"],
            "python": "3.11", "numpy": "2", "s2sad": "0", "loadavg_start": (0.5, 0, 0),
            "loadavg_end": (0.6, 0, 0), "wall_s": 10.0, "env": env}


def _extra(pinned, default_vs_one):
    return {"first_in_process_us": 50_000.0, "fresh_sites": [], "warm_cache": {"error": "not run"},
            "memory": [], "call_overhead": {"numpy x.copy()": (0.2, 0.2), "s2sad grad": (0.5, 0.5)},
            "back_to_back": {}, "threads": {"one_us": 30e3, "two_us": 16e3, "auto_us": 16.5e3, "copy_us": 9e3,
                                            "speedup": 1.875, "cores_used": 1.5, "other_cores": 0.0,
                                            "attempts": 1, "one_min_us": 29e3, "two_min_us": 15e3},
            "default_vs_one": default_vs_one, "pinned": pinned}


def test_the_report_has_both_tables_each_with_its_environment(bench):
    bench_env, report = bench
    env = {"name": "default", "cores": 2, "pinned_cpu": None, "malloc_tuned": False}
    env["text"] = bench_env.describe(env)
    penv = {"name": "pinned", "cores": 2, "pinned_cpu": 0, "malloc_tuned": False}
    main, second = _rows(report, "default", jax_ratio=1.25), _rows(report, "pinned", jax_ratio=0.8)
    pinned = {"rows": second, "errors": [], "missing": {}, "env": penv}
    dvo = {"abs": {"one_us": 200.0, "auto_us": 150.0}, "tanh": {"one_us": 700.0, "auto_us": 701.0}}
    md = report.markdown(main + second, ["dask section skipped: no dask"], {}, _info(report, env),
                         _extra(pinned, dvo))
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads[0] == "## Time per gradient call, and multiple of x.copy(): default environment"
    assert heads[1] == "## The same on one pinned thread (second table)"
    first, rest = md.split(heads[1])
    assert "Environment: the default environment, as a user runs" in first
    assert "Environment: one pinned thread for every system" in rest.split("## ")[0]
    assert "pinned to CPU 0" in rest.split("## ")[0]
    # the first table holds the main run's rows only: JAX 1.25x s2sad's time there, 0.8x in the second
    t17 = md[md.index("## Targets (issue 17"):]
    assert "at most JAX jit(grad)'s time, default environment: **met**" in t17
    assert "at most JAX jit(grad)'s time, one pinned thread: **missed**" in t17
    assert "never slower than one thread: **met**" in t17                           # 1.00x, 0.75x, 16.5/30
    assert "| sum(abs(x)) | 200 µs | 150 µs | 0.75x |" in md
    assert "- dask section skipped: no dask" in md                                 # a section's words, kept


def test_a_missing_second_table_is_said_so(bench):
    bench_env, report = bench
    env = {"name": "default", "cores": 2, "pinned_cpu": None, "malloc_tuned": True}
    env["text"] = bench_env.describe(env)
    md = report.markdown(_rows(report, "default", 1.1), [], {}, _info(report, env),
                         _extra({"error": "the child process exited with 1"}, {}))
    assert "There is no second table (the child process exited with 1)." in md
    assert "--tuned-malloc" in md.split("## ")[1]
    assert "## The same on one pinned thread" not in md


def test_the_default_count_slower_than_one_thread_is_a_missed_target(bench):
    bench_env, report = bench
    env = {"name": "default", "cores": 2, "pinned_cpu": None, "malloc_tuned": False}
    env["text"] = bench_env.describe(env)
    dvo = {"abs": {"one_us": 200.0, "auto_us": 260.0}}
    md = report.markdown(_rows(report, "default", 1.1), [], {}, _info(report, env), _extra(None, dvo))
    assert "never slower than one thread: **missed**" in md and "1.30x (sum(abs(x)) N=1M)" in md


def _fusion_row(env: str, case: str, n: int, ratio: float | None):
    """A made-up row of bench/fusion_rows.py's section (JAX missing where ratio is None)."""
    import fusion_rows
    r = {"case": case, "label": fusion_rows.LABEL[case], "n": n, "s2sad_us": 800.0, "unfused_us": 2000.0,
         "fused_over_unfused": 0.4}
    if ratio is not None:
        r.update(jax_us=800.0 / ratio, s2sad_over_jax=ratio, ratio_range=[ratio * 0.9, ratio * 1.1],
                 target=fusion_rows.TARGET[case])
    return {"case": fusion_rows.SECTION + r["label"], "n": n, "system": "s2sad", "median_us": 800.0,
            "fusion": r, "env": env, **({"table": "second"} if env == "pinned" else {})}


def test_the_losses_around_row_reductions_are_in_both_tables_met_or_missed(bench):
    """make bench's fusion section (issue 17's targets: JAX's time, 0.8x for the MLP3):
    each environment's rows in its own table, each row's verdict from its own ratio."""
    bench_env, report = bench
    env = {"name": "default", "cores": 2, "pinned_cpu": None, "malloc_tuned": False}
    env["text"] = bench_env.describe(env)
    penv = {"name": "pinned", "cores": 2, "pinned_cpu": 0, "malloc_tuned": False}
    main = _rows(report, "default", 1.1) + [_fusion_row("default", "mlp3", 10_000, 0.85),
                                            _fusion_row("default", "xent", 10_000, 0.7)]
    second = _rows(report, "pinned", 1.1) + [_fusion_row("pinned", "mlp3", 10_000, 0.7),
                                             _fusion_row("pinned", "lse", 100_000, None)]
    pinned = {"rows": second, "errors": [], "missing": {}, "env": penv}
    md = report.markdown(main, [], {}, _info(report, env), _extra(pinned, {}))
    default_part = md[md.index("## Around row reductions: default environment"):
                      md.index("### Around row reductions on one pinned thread")]
    pinned_part = md[md.index("### Around row reductions on one pinned thread"):]
    assert "| 0.85 [0.77-0.94] | <= 0.8: **missed** |" in default_part
    assert "| 0.70 [0.63-0.77] | <= 1.0: **met** |" in default_part
    assert "| 0.70 [0.63-0.77] | <= 0.8: **met** |" in pinned_part.split("\n\n")[1]
    assert "not evaluated (JAX missing)" in pinned_part and "| 100,000 |" in pinned_part

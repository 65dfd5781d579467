"""bench/pool_bench.py (the warm-memory section) times its settings' processes in turns:
every process alive through the measurement, one batch each per round, the order
rotated, each setting summarised by its median AND minimum batch; a child that fails
is an error of the section, not a crash of the run. Fake children here (nothing timed)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

# a child that says which setting it runs under and how many batches it has run
FAKE = r"""
import json, os, sys
here, warmup = {here!r}, {warmup}
name = os.environ.get("GLIBC_TUNABLES", "") and "tuned" or os.environ.get("S2SAD_POOL", "") and "off" or "default"
print("ready", flush=True)
done = 0
for line in sys.stdin:
    calls = int(line)
    if calls <= 0:
        break
    done += 1
    us = {{"default": 100.0, "tuned": 90.0, "off": 400.0}}[name] + done
    print(json.dumps({{"us": us, "cpu_s": 0.5, "wall_s": 1.0, "faults": 3 * calls, "who": name, "n": done}}), flush=True)
"""


@pytest.fixture
def pool_bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import pool_bench
    yield pool_bench
    sys.modules.pop("pool_bench", None)


def test_processes_take_turns_for_every_round(pool_bench, monkeypatch):
    monkeypatch.setattr(pool_bench, "CHILD", FAKE)
    got = pool_bench.measure(rounds=4, processes=2, warmup=0, batch=5)
    assert set(got) == set(pool_bench.SETTINGS)
    expect = {"default": "default", "GLIBC_TUNABLES": "tuned", "S2SAD_POOL=0": "off"}
    for setting, batches in got.items():
        assert len(batches) == 4 * 2                           # a batch per process per round
        assert {b["who"] for b in batches} == {expect[setting]}  # each setting's own environment
        for i in (0, 1):
            assert [b["n"] for b in batches if b["process"] == i] == [1, 2, 3, 4]


def test_summary_reports_median_min_faults_cores_and_each_process(pool_bench):
    batches = [{"us": us, "cpu_s": 0.2, "wall_s": 0.4, "faults": 10, "process": p}
               for p, us in [(0, 5.0), (0, 7.0), (1, 1.0), (1, 9.0), (1, 11.0)]]
    s = pool_bench.summary(batches, calls_per_batch=10)
    assert s["median_us"] == 7.0 and s["min_us"] == 1.0 and s["batches"] == 5
    assert s["page_faults_per_call"] == pytest.approx(50 / 50)
    assert s["cores"] == pytest.approx(0.5)
    assert s["process_medians_us"] == [6.0, 9.0]


def test_section_rows_and_table(pool_bench, monkeypatch):
    monkeypatch.setattr(pool_bench, "CHILD", FAKE)
    rows, errors, lines = [], [], []
    pool_bench.run_pool(rows, errors, True, lines.append)
    assert not errors and len(rows) == 3
    by = {r["case"].split(", ")[1]: r for r in rows}
    assert by["GLIBC_TUNABLES"]["vs_tuned"] == 1.0
    assert by["default"]["vs_tuned"] > 1.0 and by["default"]["vs_tuned_min"] == pytest.approx(101 / 91)
    table = "\n".join(pool_bench.markdown(rows))
    assert "| default |" in table and "<= 1.1x" in table and "min" in table


def test_a_failing_child_is_an_error_of_the_section(pool_bench, monkeypatch):
    monkeypatch.setattr(pool_bench, "CHILD", "raise SystemExit('no numpy here {here} {warmup}')")
    rows, errors = [], []
    pool_bench.run_pool(rows, errors, True, lambda *a: None)
    assert rows == [] and len(errors) == 1 and "no numpy here" in errors[0]


def test_children_inherit_no_malloc_or_thread_settings(pool_bench):
    leaked = {"MALLOC_TRIM_THRESHOLD_": "65536", "MALLOC_ARENA_MAX": "2", "OMP_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "GLIBC_TUNABLES": "x", "S2SAD_POOL": "0",
              "S2SAD_POOL_MB": "1", "S2SAD_NUM_THREADS": "2"}
    env = pool_bench.child_environment({**leaked, "PATH": "/bin", "S2SAD_CACHE_DIR": "/tmp/c"})
    assert env == {"PATH": "/bin", "S2SAD_CACHE_DIR": "/tmp/c"}

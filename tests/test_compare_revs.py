"""bench/compare_revs.py: two revisions' s2sad rows in one session. A small run of this
checkout against itself (two worker processes, interleaved): every row present, its
gradients checked right, ratios near 1; the verdict's rule; a revision that does not
exist is refused with a message."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "compare_revs.py")


def _module():
    spec = importlib.util.spec_from_file_location("compare_revs", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_checkout_against_itself(tmp_path):
    out = tmp_path / "rows.json"
    p = subprocess.run([sys.executable, SCRIPT, ROOT, ROOT, "--only", "gt,user", "--sizes", "1000",
                        "--rounds", "4", "--batch-ms", "2", "--json", str(out)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [(r["case"], r["system"]) for r in rows] == [
        ("user function tanh(z)*z/(1+z*z)", "s2sad grad"),
        ("user function tanh(z)*z/(1+z*z)", "s2sad value_and_grad"), ("sum(x > 0.1)", "s2sad grad")]
    for r in rows:
        assert r["n"] == 1000 and r["err_a"] < 1e-12 and r["err_b"] < 1e-12
        assert r["verdict"] in ("same", "B slower", "B faster")
        assert r["ratio_q1"] <= r["ratio_median"] <= r["ratio_q3"]
        assert 0.2 < r["ratio_median"] < 5.0 and 0.2 < r["null_median"] < 5.0
        assert r["null_q1"] <= r["null_median"] <= r["null_q3"]
    assert "verdict" in p.stdout and "sum(x > 0.1)" in p.stdout


@pytest.mark.parametrize("ratios,null,want", [
    ([1.2, 1.25, 1.3, 1.22], None, "B slower"), ([0.8, 0.82, 0.85, 0.9], None, "B faster"),
    ([0.9, 1.1, 1.3, 0.95], None, "same"), ([1.01, 1.02, 1.03, 1.02], None, "same"),
    # the null's spread widens the band: two processes of A differ by up to 1.3x here
    ([1.2, 1.25, 1.3, 1.22], [0.7, 1.0, 1.3, 1.35], "same"), ([1.2, 1.25, 1.3, 1.22], [0.98, 1.0, 1.02, 1.0], "B slower")])
def test_verdict(ratios, null, want):
    mod = _module()
    assert mod.verdict(mod.quartiles(ratios), null and mod.quartiles(null), 0.05) == want


def test_an_unknown_revision_is_refused():
    p = subprocess.run([sys.executable, SCRIPT, "no-such-revision-xyz", ROOT], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert p.returncode != 0 and "neither a revision" in p.stderr

"""What the out-of-core example's worker peak holds (issue 18's third target): a process
that compiles a kernel maps LLVM's library, ~70 MiB of resident file pages that stay
counted in its peak; one whose machine's disk cache has the kernels never maps it. The
example says which part of a worker's peak is LLVM's (examples/dask_logistic_regression.py
llvm_rss_bytes, peaks_said): a worker's 186 MiB with the cache warm, 266 MiB compiling."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

pytestmark = pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads Linux's /proc/self/smaps")


@pytest.fixture
def example(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import dask_logistic_regression
    yield dask_logistic_regression
    sys.modules.pop("dask_logistic_regression", None)


FIRST_CALL = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import s2sad
    from dask_logistic_regression import llvm_rss_bytes

    def cubes(x):
        return np.sum(np.sin(x) * x * x)

    s2sad.grad(cubes)(np.linspace(0.0, 1.0, 50))
    print(llvm_rss_bytes())
""")


def llvm_after_first_call(folder: Path) -> int:
    """LLVM's resident bytes in a fresh process after its first gradient call (a script:
    s2sad reads the loss's source from its file), the disk cache in `folder`."""
    script = folder / "first_call.py"
    script.write_text(FIRST_CALL)
    env = dict(os.environ, S2SAD_CACHE_DIR=str(folder / "cache"), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(script), str(EXAMPLES)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return int(out.stdout.split()[-1])


def test_compiling_maps_llvm_and_the_warm_cache_does_not(tmp_path):
    cold = llvm_after_first_call(tmp_path)          # compiles, fills the cache
    warm = llvm_after_first_call(tmp_path)          # a fresh process: maps the kernel from the cache
    assert cold > 16 * 2**20, cold
    assert warm == 0, warm


def test_llvm_pages_are_part_of_the_resident_memory(example):
    import numpy as np
    import s2sad

    s2sad.grad(lambda x: np.sum(np.tanh(x) * x))(np.ones(7))     # this process has LLVM mapped by now
    with open("/proc/self/status") as f:
        rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    assert 0 <= example.llvm_rss_bytes() <= rss


def test_the_peak_line_names_llvm_only_where_a_worker_compiled(example):
    limit = 1000 * 2**20
    compiled = example.peaks_said({"a": 266 * 2**20, "b": 262 * 2**20}, {"a": 72 * 2**20, "b": 73 * 2**20}, limit)
    assert compiled.startswith("peak memory per worker: 266, 262 MiB (of which LLVM's library 72, 73 MiB")
    assert compiled.endswith("(limit 1000 MiB)")
    warm = example.peaks_said({"a": 186 * 2**20, "b": 183 * 2**20}, {"a": 0, "b": 0}, limit)
    assert warm == "peak memory per worker: 186, 183 MiB (limit 1000 MiB)"

"""The pool's large blocks get transparent huge pages as numpy's own do (mempool,
codegen/llvm_pool: numpy advises every block of at least 4 MiB MADV_HUGEPAGE, which is what
gets them where the system's THP setting is "madvise"; a handler in numpy's place lost
that: s2sad's gradients were on 4 KiB pages, numpy's arrays beside them on 2 MiB ones).
Each case runs in a fresh process (the pool is made once a process): the gradient's
mapping is read from /proc/self/smaps. Skipped where this machine gives numpy's own
arrays no huge pages (THP off, not Linux)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from s2sad import mempool
from s2sad.codegen import llvm_pool

pytestmark = pytest.mark.skipif(not mempool.stats()["on"], reason="pool unavailable: " + mempool.stats().get("why", ""))

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = """\
import json, re, sys
import numpy as np
import s2sad
from s2sad import mempool
if sys.argv[1] == "numpy-off":
    (getattr(np, "_core", None) or np.core).multiarray._set_madvise_hugepage(False)


def loss(x):
    return np.sum(np.tanh(x) * x)


def huge_kb(a):
    at = a.ctypes.data + a.nbytes // 2      # (the block's first page is a mapping of its own)
    inside = False
    for line in open("/proc/self/smaps"):
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
        if m:
            inside = int(m.group(1), 16) <= at < int(m.group(2), 16)
        elif inside and line.startswith("AnonHugePages"):
            return int(line.split()[1])
    return None


x = np.linspace(-1.0, 1.0, 2_000_000)              # 16 MB
g = s2sad.grad(loss)(x)
mine = np.copy(x)                                   # numpy's own allocator, beside it
print(json.dumps({"grad_huge_kb": huge_kb(g), "numpy_huge_kb": huge_kb(mine),
                  "handler": np._core.multiarray.get_handler_name(g),
                  "from": mempool.stats()["huge_pages_from"],
                  "right": bool(np.allclose(g, np.tanh(x) + x * (1 - np.tanh(x) ** 2), rtol=1e-13, atol=1e-15))}))
"""


def child(tmp_path, mode: str) -> dict:
    script = tmp_path / "child.py"            # (a file: s2sad reads the loss's source)
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("S2SAD_POOL", None)
    r = subprocess.run([sys.executable, str(script), mode], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="transparent huge pages are Linux's")
def test_a_large_gradient_gets_huge_pages_as_numpys_arrays_do(tmp_path):
    got = child(tmp_path, "default")
    if not got["numpy_huge_kb"]:
        pytest.skip("this machine gives numpy's own arrays no huge pages (THP off or none free)")
    assert got["handler"] == "s2sad_pool" and got["right"]
    assert got["from"] == mempool.HUGE_MIN == 4 << 20
    assert got["grad_huge_kb"] >= 8 << 10, got       # (before: 0, on 4 KiB pages)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="transparent huge pages are Linux's")
def test_numpys_setting_off_turns_the_advice_off(tmp_path):
    got = child(tmp_path, "numpy-off")
    assert got["from"] == 0 and got["grad_huge_kb"] == 0 and got["numpy_huge_kb"] == 0 and got["right"]


def test_the_madvise_call_is_in_the_module_only_where_asked():
    assert "@madvise" in llvm_pool.pool_ir(advise=True)
    assert "@madvise" not in llvm_pool.pool_ir(advise=False)
    assert ("@madvise" in llvm_pool.pool_ir()) == sys.platform.startswith("linux")


def test_small_blocks_are_not_advised():
    """Below HUGE_MIN the pool's blocks are libc's as before (no advice for them)."""
    ctx = mempool._state.get("ctx") if mempool.stats()["on"] else None
    assert ctx is not None
    assert ctx[llvm_pool.HUGE_WORD] in (0, mempool.HUGE_MIN)
    assert mempool.HUGE_MIN > mempool.THRESHOLD
    a = np.ones(mempool.THRESHOLD // 8)
    with mempool.scope():
        b = a * 2.0                       # a pooled size below HUGE_MIN: right, as ever
    np.testing.assert_array_equal(b, 2.0)

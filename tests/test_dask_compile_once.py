"""A fresh 2-worker LocalCluster compiles a kernel once for the machine (issue 18: "a
cluster of fresh processes compiles each kernel once per machine"): both workers get
blocks at once and need the same kernel; one compiles it and writes the disk cache's
entry, the other waits for the entry (objcache.building) and maps it. The client plans
the split but compiles nothing. Results against numpy's gradient.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad

da = pytest.importorskip("dask.array", reason="dask is an optional extra: make test installs it")
distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.usefixtures("fresh_reports")


def loss(x):
    return np.sum(np.log1p(x * x) * np.cos(x) + 0.25 * np.arctan(x))


def want(x):
    return 2 * x / (1 + x * x) * np.cos(x) - np.log1p(x * x) * np.sin(x) + 0.25 / (1 + x * x)


def drivers_here() -> list[str]:
    """On a worker: how each kernel driver in the process came (compiled, or mapped from disk)."""
    from s2sad.codegen import llvm_jit
    return sorted(c.origin for c in llvm_jit._cache.values())


def test_a_fresh_two_worker_cluster_compiles_the_kernel_once(cache):
    from s2sad.codegen import llvm_jit

    x = np.random.default_rng(18).uniform(-2.0, 2.0, 4000)
    # (the cache fixture set S2SAD_CACHE_DIR: the workers, started now, inherit it, empty)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        X = da.from_array(x, chunks=500)                  # 8 blocks: both workers busy at once
        got = s2sad.grad(loss)(X).compute()
        per_worker = list(client.run(drivers_here).values())
    assert llvm_jit._cache == {}, "the client compiled the kernel (the workers would only load it)"
    assert all(per_worker), per_worker                    # each worker ran blocks, so needed the kernel
    origins = sorted(o for w in per_worker for o in w)
    assert origins == ["compiled", "disk"], per_worker    # (before the build lock: compiled on both)
    np.testing.assert_allclose(got, want(x), rtol=1e-12, atol=1e-14)
    assert got.tobytes() == s2sad.grad(loss)(x).tobytes()

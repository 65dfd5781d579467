"""Kernels compiled once per machine (issue 18: "a cluster of fresh processes compiles each
kernel once per machine"): the disk cache's per-entry build lock (objcache.building).

Fresh processes started together with an empty cache, each differentiating one function:
exactly one compiles the kernel, the others wait for its entry and load it (before the
lock, each compiled it). A process killed while it holds the lock holds nobody up; a
holder that does not finish is waited for S2SAD_BUILD_WAIT seconds, then the waiter
compiles for itself (a warning, never a hang); a lock file that is a symlink, a FIFO,
another user's or writable by others is refused as an entry is, and the kernel is built
all the same. A 2-worker LocalCluster started fresh compiles the kernel on one worker.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest

from s2sad.codegen import objcache
from test_cache import child_env, entries

pytestmark = pytest.mark.usefixtures("fresh_reports")   # (conftest: the cache warnings afresh)


RACE = """\
import json, os, sys, time
import numpy as np
import s2sad


def f(x):
    return np.sum(np.sin(x) * x + np.tanh(x) / (1.0 + x * x))


ready, go = sys.argv[1], sys.argv[2]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
t = time.perf_counter()
v, g = s2sad.value_and_grad(f)(np.linspace(0.0, 1.0, 10))
from s2sad.codegen import llvm_jit
print(json.dumps({"value": v, "grad": g.tolist(), "origins": [c.origin for c in llvm_jit._cache.values()],
                  "s": time.perf_counter() - t}))
"""


def race(tmp_path, n: int, extra_env: dict | None = None) -> list[dict]:
    """`n` fresh processes that differentiate RACE's f at once (each imports s2sad, says it
    is ready, and waits for the go), on the cache `tmp_path/cache`; their reports."""
    script = tmp_path / "race.py"
    script.write_text(RACE)
    d, go = tmp_path / "cache", tmp_path / "go"
    env = dict(child_env(d), **(extra_env or {}))
    readies = [tmp_path / f"ready{i}" for i in range(n)]
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(go)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in readies]
    deadline = time.monotonic() + 120
    while not all(r.exists() for r in readies) and time.monotonic() < deadline:
        time.sleep(0.005)
    go.write_text("")
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
        outs.append(dict(json.loads(out), stderr=err))
    return outs


def test_three_fresh_processes_compile_the_kernel_once(tmp_path):
    outs = race(tmp_path, 3)
    origins = sorted(o["origins"][0] for o in outs)
    assert all(len(o["origins"]) == 1 for o in outs)
    assert origins == ["compiled", "disk", "disk"], origins          # (before the lock: 3 x compiled)
    assert all("Warning" not in o["stderr"] for o in outs), [o["stderr"] for o in outs]
    x = np.linspace(0.0, 1.0, 10)
    want = np.cos(x) * x + np.sin(x) + ((1 - np.tanh(x) ** 2) * (1 + x * x) - 2 * x * np.tanh(x)) / (1 + x * x) ** 2
    for o in outs:
        assert o["value"] == outs[0]["value"] and o["grad"] == outs[0]["grad"]
        np.testing.assert_allclose(o["grad"], want, rtol=1e-13, atol=1e-15)
    assert len(entries(tmp_path / "cache")) == 1
    assert not [p.name for p in (tmp_path / "cache").iterdir() if p.name.endswith(objcache.LOCK_SUFFIX)]


def test_without_a_disk_cache_each_process_compiles(tmp_path):
    """The lock is the disk cache's: with the cache off there is nothing to wait for."""
    outs = race(tmp_path, 2, {"S2SAD_CACHE": "0"})
    assert [o["origins"] for o in outs] == [["compiled"], ["compiled"]]


HOLDER = """\
import sys, time
from s2sad.codegen import objcache
with objcache.building(sys.argv[1]) as held:
    print("held" if held else "not held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def hold(cache, key: str, seconds: float) -> subprocess.Popen:
    """A process holding `key`'s build lock for `seconds` (started: it says so)."""
    p = subprocess.Popen([sys.executable, "-c", HOLDER, key, str(seconds)], env=child_env(cache),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


def test_a_process_killed_holding_the_lock_holds_nobody_up(cache, monkeypatch):
    monkeypatch.setenv("S2SAD_BUILD_WAIT", "60")
    key = "k" * 64
    p = hold(cache, key, 600)
    got = {}

    def wait():
        t = time.monotonic()
        with objcache.building(key) as held:
            got.update(held=held, s=time.monotonic() - t)

    th = threading.Thread(target=wait)
    th.start()
    time.sleep(0.5)
    assert th.is_alive()                     # waiting for the holder
    killed = time.monotonic()
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)
    th.join(timeout=30)
    assert not th.is_alive() and got["held"] is True
    assert got["s"] >= 0.5 and time.monotonic() - killed < 5.0      # its lock died with it
    assert not (cache / (key + objcache.LOCK_SUFFIX)).exists()        # (removed by the next holder)


def test_a_holder_that_does_not_finish_is_waited_for_a_bounded_time(cache, monkeypatch):
    monkeypatch.setenv("S2SAD_BUILD_WAIT", "0.5")
    key = "t" * 64
    p = hold(cache, key, 600)
    try:
        t = time.monotonic()
        with pytest.warns(objcache.CacheWarning, match="waited 0.5 s for another process compiling"):
            with objcache.building(key) as held:
                assert held is False
        assert 0.5 <= time.monotonic() - t < 5.0
    finally:
        p.kill()
        p.wait(timeout=30)


def test_a_waiting_process_compiles_for_itself_after_the_wait(tmp_path):
    """End to end: a holder of the kernel's lock that never finishes (a process stopped
    mid-compile): the process that needs the kernel waits S2SAD_BUILD_WAIT, warns, compiles."""
    outs = race(tmp_path, 1)                 # the key the kernel is filed under
    d = tmp_path / "cache"
    (name,) = entries(d)
    (d / name).unlink()
    p = hold(d, name[:-len(objcache.SUFFIX)], 600)
    try:
        t = time.monotonic()
        (again,) = race(tmp_path, 1, {"S2SAD_BUILD_WAIT": "1"})
        assert time.monotonic() - t < 60
    finally:
        p.kill()
        p.wait(timeout=30)
    assert again["origins"] == ["compiled"] and again["s"] >= 1.0
    assert "waited 1 s for another process compiling a kernel" in again["stderr"]
    assert again["grad"] == outs[0]["grad"]


def _fifo(path):
    os.mkfifo(path, 0o600)


def _link(path):
    os.symlink(path.parent / "elsewhere", path)


def _shared(path):
    path.write_bytes(b"")
    os.chmod(path, 0o666)


def _other_user(path):
    if os.getuid() != 0:
        pytest.skip("making another user's file needs root")
    path.write_bytes(b"")
    os.chown(path, 12345, 12345)


def _written(path):
    path.write_bytes(b"not empty")
    os.chmod(path, 0o600)


@pytest.mark.parametrize("make, says", [(_fifo, "a FIFO"), (_link, "a symbolic link"),
                                        (_shared, "writable by group or others"),
                                        (_other_user, "belongs to another user"), (_written, "more than the 0")])
def test_a_lock_file_that_fails_the_checks_is_refused(cache, make, says):
    cache.mkdir(mode=0o700)
    key = "r" * 64
    path = cache / (key + objcache.LOCK_SUFFIX)
    make(path)
    t = time.monotonic()
    with pytest.warns(objcache.CacheWarning, match=says):
        with objcache.building(key) as held:
            assert held is False
    assert time.monotonic() - t < 5.0                         # (a FIFO never blocks)
    assert not (cache / "elsewhere").exists()                  # (a link is never followed)
    assert os.path.lexists(path)                               # (not ours: left as it is)


def test_a_lock_file_refused_still_builds_the_kernel(cache):
    import s2sad

    def f(x):
        return np.sum(np.cos(x) * x * x)

    x = np.linspace(-1.0, 1.0, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s2sad.grad(f)(x)                    # the key, then a fresh start with its lock a FIFO
    from s2sad.codegen import llvm_jit
    (key,) = [k for k, c in llvm_jit._cache.items() if c.origin == "compiled"]
    llvm_jit._cache.clear()
    (cache / (key + objcache.SUFFIX)).unlink()
    os.mkfifo(cache / (key + objcache.LOCK_SUFFIX), 0o600)

    def f(x):                               # noqa: F811 - the same source, a new function
        return np.sum(np.cos(x) * x * x)

    with pytest.warns(objcache.CacheWarning, match="build lock .* is a FIFO"):
        g = s2sad.grad(f)(x)
    np.testing.assert_allclose(g, -np.sin(x) * x * x + 2 * x * np.cos(x), rtol=1e-13, atol=1e-15)
    assert llvm_jit._cache[key].origin == "compiled"


def test_the_warm_path_takes_no_lock(cache, monkeypatch):
    """A kernel found on disk is loaded without a lock file being made."""
    import s2sad

    def f(x):
        return np.sum(np.exp(x) * x)

    x = np.linspace(-1.0, 1.0, 5)
    s2sad.grad(f)(x)
    from s2sad.codegen import llvm_jit
    monkeypatch.setattr(llvm_jit, "_cache", {})
    taken = []
    real = objcache.building
    monkeypatch.setattr(objcache, "building", lambda key: taken.append(key) or real(key))

    def f(x):                               # noqa: F811
        return np.sum(np.exp(x) * x)

    s2sad.grad(f)(x)
    assert taken == [] and [c.origin for c in llvm_jit._cache.values()] == ["disk"]


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_bad_wait_warns_and_waits_the_default(cache, monkeypatch, value):
    from s2sad import envflags

    monkeypatch.setattr(envflags, "_warned", set())
    monkeypatch.setenv("S2SAD_BUILD_WAIT", value)
    cache.mkdir(mode=0o700)
    seen = []
    monkeypatch.setattr(objcache.time, "sleep", lambda s: seen.append(s))
    monkeypatch.setattr(objcache.fcntl, "flock", lambda fd, op: (_ for _ in ()).throw(BlockingIOError()))
    clock = iter(range(0, 10_000))
    monkeypatch.setattr(objcache.time, "monotonic", lambda: float(next(clock)))
    with pytest.warns(RuntimeWarning, match=f"S2SAD_BUILD_WAIT={value!r} is not a non-negative number"):
        with pytest.warns(objcache.CacheWarning, match=f"waited {objcache.BUILD_WAIT:g} s"):
            with objcache.building("w" * 64) as held:
                assert held is False
    assert len(seen) == int(objcache.BUILD_WAIT) - 1     # (one clock tick a try: the default's ticks)


WAITER = """\
import sys, time
from s2sad.codegen import objcache
t = time.monotonic()
with objcache.building(sys.argv[1]) as held:
    print(held, time.monotonic() - t, flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_while_the_lock_is_held_does_not_keep_it(cache, monkeypatch):
    """A process waiting on the lock (it opened the lock file) gets it when the holder lets
    go, though a child the holder forked meanwhile still lives."""
    monkeypatch.setenv("S2SAD_BUILD_WAIT", "30")
    key = "f" * 64
    with objcache.building(key) as held:
        assert held
        pid = os.fork()
        if pid == 0:                          # the child: lives on, as a worker would
            time.sleep(20)
            os._exit(0)
        waiter = subprocess.Popen([sys.executable, "-c", WAITER, key], env=child_env(cache),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2.0)                       # (it has opened the lock file and waits)
        let_go = time.monotonic()
    try:
        out, err = waiter.communicate(timeout=60)
        held, waited = out.split()
        assert held == "True" and time.monotonic() - let_go < 5.0, out + err
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)

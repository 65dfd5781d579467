"""The disk cache of compiled kernels (codegen/objcache.py, codegen/llvm_jit.py).

A new process finds the kernel an earlier one compiled, without importing llvmlite;
keys separate what must be separate; a damaged entry is never loaded (it is compiled
again, with a warning); the directory is private; writers racing on one entry leave a
whole one.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from conftest import kernel
from s2sad.codegen import llvm_jit, llvm_keys, objcache, objload
from s2sad.kernel import LoopSpec

F64, F32 = np.float64, np.float32
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


STORE = LoopSpec(layouts=("contig",), value="store")
SUM = LoopSpec(layouts=("contig",), value="sum")


pytestmark = pytest.mark.usefixtures("fresh_reports")   # (conftest: the cache warnings afresh)


def run_store(drv, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    drv.cfunc(1, x.size, x.ctypes.data, out.ctypes.data)
    return out


def entries(d) -> list[str]:
    """The drivers in cache directory `d` (not records, not the Python entries that
    llvm_entry shares between drivers of one shape)."""
    def is_entry(p) -> bool:
        return b"\nsymbol=s2sad_entry_" in p.read_bytes()[:4096]
    return sorted(p.name for p in d.iterdir()
                  if p.suffix == ".s2o" and not p.name.startswith("rec-") and not is_entry(p))


def child_env(cache_dir) -> dict:
    env = dict(os.environ, S2SAD_CACHE_DIR=str(cache_dir), PYTHONPATH=REPO,
               S2SAD_CACHE_KEY=os.path.join(os.path.dirname(cache_dir), "key", "cache.key"))
    env.pop("S2SAD_CACHE", None)
    return env


# ---------------------------------------------------------------------------------
# a new process

USER = """\
import json, sys, time
import numpy as np
import s2sad
at_import = sorted(m for m in sys.modules if m.startswith("llvmlite"))


def f(x):
    return np.sum(np.tanh(x) * x / (1.0 + x * x))


x = np.linspace(-1.0, 1.0, 10)
t = time.perf_counter()
v, g = s2sad.value_and_grad(f)(x)
t = time.perf_counter() - t
from s2sad.codegen import llvm_jit
d = list(llvm_jit._cache.values())
print(json.dumps({"value": v, "grad": g.tolist(), "origins": [c.origin for c in d],
                  "keys": [c.key for c in d], "ms": 1e3 * t, "at_import": at_import,
                  "binding": "llvmlite.binding" in sys.modules,
                  "lowered": any(f"s2sad.codegen.{m}" in sys.modules
                                 for m in ("llvm_lower", "llvm_ir", "llvm_math", "llvm_expr"))}))
"""


def test_new_process_hits_the_cache_without_llvm(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(USER)
    d = tmp_path / "cache"
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(script)], env=child_env(d), capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        assert "Warning" not in p.stderr, p.stderr
        runs.append(json.loads(p.stdout))
    cold, warm = runs
    assert cold["origins"] == ["compiled"] and warm["origins"] == ["disk"]
    assert cold["keys"] == warm["keys"] and entries(d) == [cold["keys"][0] + ".s2o"]
    assert cold["at_import"] == [] and warm["at_import"] == []      # `import s2sad` stays light
    if objload.supported():
        assert not warm["binding"], "a warm start imported llvmlite.binding"
    assert cold["lowered"] and not warm["lowered"], "a warm start lowered IR (it is found by its source)"
    assert warm["value"] == cold["value"] and warm["grad"] == cold["grad"]
    x = np.linspace(-1.0, 1.0, 10)
    np.testing.assert_allclose(warm["value"], np.sum(np.tanh(x) * x / (1 + x * x)), rtol=1e-13)


# ---------------------------------------------------------------------------------
# keys

def _site(where, const: float):
    """A fresh loss (in a module file of its own) whose scalar function differs from
    another's only in a constant."""
    import importlib.util

    path = where / f"site_{str(const).replace('.', '_')}.py"
    path.write_text(f"import numpy as np\n\n\ndef loss(x):\n    return np.sum(np.tanh(x) * {const!r})\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.loss


def _drivers_of(fun, x, monkeypatch):
    import s2sad
    from s2sad import runtime

    seen = []
    driver = llvm_jit.driver
    monkeypatch.setattr(llvm_jit, "driver", lambda *a, **kw: seen.append(driver(*a, **kw)) or seen[-1])
    g = s2sad.grad(fun)(x)
    monkeypatch.setattr(llvm_jit, "driver", driver)
    assert runtime is not None and seen
    return g, seen


def test_source_keys_separate_programs_and_s2sad_versions(cache, monkeypatch, tmp_path):
    """A driver found by its source (llvm_jit.driver, what a warm start takes) is keyed
    by the scalar program and by s2sad's own source: change either and it is compiled."""
    import s2sad

    x = np.linspace(-2.0, 2.0, 33)
    g1, (d1,) = _drivers_of(_site(tmp_path, 1.5), x, monkeypatch)
    g2, (d2,) = _drivers_of(_site(tmp_path, 2.5), x, monkeypatch)
    assert d1.origin == d2.origin == "compiled" and d1.key != d2.key
    np.testing.assert_allclose(g2, 2.5 * (1 - np.tanh(x) ** 2), rtol=1e-14)
    monkeypatch.setattr(llvm_jit, "_cache", {})
    g1b, (d1b,) = _drivers_of(_site(tmp_path, 1.5), x, monkeypatch)       # a new plan, the same source
    assert d1b.origin == "disk" and d1b.key == d1.key and d1b.ir == d1.ir
    assert np.array_equal(g1b, g1)
    monkeypatch.setattr(llvm_jit, "_cache", {})
    monkeypatch.setattr(llvm_keys, "_digest", ["0" * 64])       # another s2sad
    _, (d1c,) = _drivers_of(_site(tmp_path, 1.5), x, monkeypatch)
    assert d1c.origin == "compiled" and d1c.key != d1.key
    # an entry for another kernel under this key is never loaded
    monkeypatch.setattr(llvm_jit, "_cache", {})
    objcache.entry_path(d1c.key).write_bytes(objcache.entry_path(d2.key).read_bytes())
    with pytest.warns(objcache.CacheWarning):
        g1d, (d1d,) = _drivers_of(_site(tmp_path, 1.5), x, monkeypatch)
    assert d1d.origin == "compiled" and np.array_equal(g1d, g1)
    assert s2sad is not None


def test_package_digest_follows_the_source(cache, monkeypatch, tmp_path):
    """The digest of s2sad's source is remembered under the files' sizes and times, and
    is the digest of their contents."""
    monkeypatch.setattr(llvm_keys, "_digest", [])
    first = llvm_keys.package_digest()
    monkeypatch.setattr(llvm_keys, "_digest", [])
    assert llvm_keys.package_digest() == first and len(first) == 64
    assert any(p.name.startswith("rec-source-") for p in cache.iterdir())
    import hashlib
    root = os.path.dirname(os.path.abspath(llvm_keys.__file__)).rsplit(os.sep, 1)[0]    # s2sad/
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(("_", ".")))
        for f in sorted(filenames):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                with open(path, "rb") as fh:
                    h.update(os.path.relpath(path, root).encode() + b"\0" + fh.read())
    assert first == h.hexdigest()

def test_package_digest_lists_the_files_os_walk_finds(tmp_path):
    """The files the digest reads, against os.walk and relpath (what it used before
    scandir): the same .py files in the same order, folders named _x or .x left out."""
    for rel in ("a.py", "b.txt", "z.py", "sub/c.py", "sub/deeper/d.py", "_private/e.py", ".hidden/f.py",
                "sub2/g.py", "sub/_skip/h.py"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    walked = []
    for dirpath, dirnames, filenames in os.walk(tmp_path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(("_", ".")))
        walked += [os.path.relpath(os.path.join(dirpath, f), tmp_path) for f in sorted(filenames) if f.endswith(".py")]
    got = llvm_keys._source_files(str(tmp_path))
    assert [rel for rel, _ in got] == walked == ["a.py", "z.py", "sub/c.py", "sub/deeper/d.py", "sub2/g.py"]
    assert all(os.path.samefile(entry.path, tmp_path / rel) for rel, entry in got)


def test_keys_separate_sources_dependencies_dtypes_specs(cache):
    a = kernel("def f(x):\n    return math.tanh(x) * 2.0\n", "f")
    b = kernel("def f(x):\n    return math.tanh(x) * 3.0\n", "f")
    helper1 = kernel("def g(x):\n    return x + 1.0\ndef f(x):\n    return g(x) * 2.0\n", "f")
    helper2 = kernel("def g(x):\n    return x + 2.0\ndef f(x):\n    return g(x) * 2.0\n", "f")
    drivers = [llvm_jit.compile_driver(a, STORE, F64), llvm_jit.compile_driver(b, STORE, F64),
               llvm_jit.compile_driver(a, STORE, F32), llvm_jit.compile_driver(a, SUM, F64),
               llvm_jit.compile_driver(a, STORE, F64, vector_math=False),
               llvm_jit.compile_driver(helper1, STORE, F64), llvm_jit.compile_driver(helper2, STORE, F64)]
    keys = [d.key for d in drivers]
    assert len(set(keys)) == len(keys)
    assert entries(cache) == sorted(k + ".s2o" for k in keys)
    # the same source (another object) is the same kernel
    again = kernel("def f(x):\n    return math.tanh(x) * 2.0\n", "f")
    assert llvm_jit.compile_driver(again, STORE, F64) is drivers[0]
    x = np.linspace(-2, 2, 37)
    np.testing.assert_allclose(run_store(drivers[1], x), np.tanh(x) * 3.0, rtol=1e-15)
    np.testing.assert_allclose(run_store(drivers[6], x), (x + 2.0) * 2.0, rtol=1e-15)


def test_key_covers_host_versions_and_pipeline(cache, monkeypatch):
    h = llvm_jit.host()
    isas, _ = llvm_jit.vector_math_support()
    ir = llvm_jit.compile_driver(kernel("def f(x):\n    return x * x\n", "f"), STORE, F64).ir
    base = llvm_keys.disk_key(ir, STORE, np.dtype(F64), True, isas, h)
    variants = [h.replace(cpu=h.cpu + "x"), h.replace(features=h.features + ",+x"),
                h.replace(llvm_version="0.0.0"), h.replace(llvmlite_version="0.0"),
                h.replace(triple="aarch64-unknown-linux-gnu")]
    keys = {llvm_keys.disk_key(ir, STORE, np.dtype(F64), True, isas, v) for v in variants}
    keys.add(llvm_keys.disk_key(ir, STORE, np.dtype(F64), False, isas, h))
    keys.add(llvm_keys.disk_key(ir + " ", STORE, np.dtype(F64), True, isas, h))
    monkeypatch.setattr(llvm_keys, "PIPELINE", llvm_keys.PIPELINE + " changed")
    keys.add(llvm_keys.disk_key(ir, STORE, np.dtype(F64), True, isas, h))
    monkeypatch.setattr(sys.modules["s2sad"], "__version__", "999")
    keys.add(llvm_keys.disk_key(ir, STORE, np.dtype(F64), True, isas, h))
    assert base not in keys and len(keys) == len(variants) + 4


# ---------------------------------------------------------------------------------
# damaged entries

def _flip(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _empty(path):
    path.write_bytes(b"")


def _garbage_object(path, key, name):
    objcache.store(key, [b"\x7fELF" + os.urandom(300), b"; not IR"], {"symbol": name})


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage_object", "stale"])
def test_damaged_entry_is_rebuilt_with_a_warning(cache, monkeypatch, damage):
    km = kernel(f"def f(x):\n    return math.exp(x) * 0.5 + {len(damage)}.0\n", "f")
    other = kernel("def f(x):\n    return x - 1.0\n", "f")
    x = np.linspace(-3, 3, 101)
    want = np.exp(x) * 0.5 + len(damage)
    d0 = llvm_jit.compile_driver(km, STORE, F64)
    path = objcache.entry_path(d0.key)
    assert d0.origin == "compiled" and path.exists()
    if damage == "flip":
        _flip(path)
    elif damage == "truncate":
        _truncate(path)
    elif damage == "empty":
        _empty(path)
    elif damage == "garbage_object":
        _garbage_object(path, d0.key, d0.name)
    else:                       # a whole entry, for another kernel, under this one's name
        path.write_bytes(objcache.entry_path(llvm_jit.compile_driver(other, STORE, F64).key).read_bytes())

    monkeypatch.setattr(llvm_jit, "_cache", {})
    with pytest.warns(objcache.CacheWarning, match="compil"):
        d1 = llvm_jit.compile_driver(km, STORE, F64)
    assert d1.origin == "compiled"
    np.testing.assert_allclose(run_store(d1, x), want, rtol=1e-15)

    monkeypatch.setattr(llvm_jit, "_cache", {})          # the rebuilt entry is whole again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d2 = llvm_jit.compile_driver(km, STORE, F64)
    assert d2.origin == "disk"
    np.testing.assert_allclose(run_store(d2, x), want, rtol=1e-15)


# ---------------------------------------------------------------------------------
# the directory

def test_directory_is_created_private(tmp_path, monkeypatch):
    d = tmp_path / "deep" / "er" / "s2sad"
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(d))
    monkeypatch.setenv("S2SAD_CACHE_KEY", str(tmp_path / "key" / "cache.key"))
    monkeypatch.delenv("S2SAD_CACHE", raising=False)
    old = os.umask(0)                       # even under a permissive umask
    try:
        assert objcache.directory() == d
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700


def test_default_directory_is_under_home(tmp_path, monkeypatch):
    for var in ("S2SAD_CACHE_DIR", "S2SAD_CACHE", "S2SAD_CACHE_KEY", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    d = objcache.directory()
    assert d == tmp_path / ".cache" / "s2sad"
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    key = tmp_path / ".config" / "s2sad" / "cache.key"          # the key: outside it, private
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600 and len(key.read_bytes()) == 32
    assert stat.S_IMODE(os.stat(key.parent).st_mode) == 0o700


def test_shared_directory_is_refused(tmp_path, monkeypatch):
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(d, 0o777)
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(d))
    monkeypatch.setenv("S2SAD_CACHE_KEY", str(tmp_path / "key" / "cache.key"))
    monkeypatch.delenv("S2SAD_CACHE", raising=False)
    monkeypatch.setattr(llvm_jit, "_cache", {})
    with pytest.warns(objcache.CacheWarning, match="writable by group or others"):
        assert objcache.directory() is None
    drv = llvm_jit.compile_driver(kernel("def f(x):\n    return x * 7.0\n", "f"), STORE, F64)
    assert drv.origin == "compiled" and list(d.iterdir()) == []
    np.testing.assert_allclose(run_store(drv, np.arange(3.0)), [0.0, 7.0, 14.0])


def test_cache_can_be_turned_off(cache, monkeypatch):
    monkeypatch.setenv("S2SAD_CACHE", "0")
    drv = llvm_jit.compile_driver(kernel("def f(x):\n    return x * 5.0\n", "f"), STORE, F64)
    assert drv.origin == "compiled" and not cache.exists()


# ---------------------------------------------------------------------------------
# concurrent writers

WRITER = """\
import os, sys, time
from s2sad.codegen import objcache
key, fill, go = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
blob = fill * (1 << 20)
while not os.path.exists(go):
    time.sleep(0.001)
for _ in range(40):
    objcache.store(key, [blob, fill * 1000], {"writer": sys.argv[2]})
"""


def test_concurrent_writers_leave_a_whole_entry(cache):
    cache.mkdir(mode=0o700)
    key = "c" * 64
    go = cache.parent / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, key, fill, str(go)], env=child_env(cache),
                              stderr=subprocess.PIPE, text=True) for fill in ("A", "B")]
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # a torn or mixed entry would warn
        go.write_text("")
        deadline = time.monotonic() + 60
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            got = objcache.load(key)
            if got is not None:
                header, (big, small) = got
                fill = header["writer"].encode()
                assert big == fill * (1 << 20) and small == fill * 1000
                seen.add(header["writer"])
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0 and "Warning" not in err, err
        header, _ = objcache.load(key)
    assert header["writer"] in ("A", "B")
    assert [p.name for p in cache.iterdir() if p.name != objcache.PRUNE_STAMP] == [key + ".s2o"]    # no temporary files left


RACE = """\
import json, os, sys, time
import numpy as np
import s2sad


def f(x):
    return np.sum(np.sin(x) * x)


go = sys.argv[1]
while not os.path.exists(go):
    time.sleep(0.001)
v, g = s2sad.value_and_grad(f)(np.linspace(0.0, 1.0, 10))
from s2sad.codegen import llvm_jit
print(json.dumps({"value": v, "grad": g.tolist(), "origins": [c.origin for c in llvm_jit._cache.values()]}))
"""


def test_two_processes_compiling_one_kernel(tmp_path):
    script = tmp_path / "race.py"
    script.write_text(RACE)
    d, go = tmp_path / "cache", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, str(script), str(go)], env=child_env(d), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    time.sleep(0.2)
    go.write_text("")
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and "Warning" not in err, err
        outs.append(json.loads(out))
    assert outs[0]["value"] == outs[1]["value"] and outs[0]["grad"] == outs[1]["grad"]
    (name,) = entries(d)
    third = subprocess.run([sys.executable, str(script), str(go)], env=child_env(d), capture_output=True,
                           text=True, timeout=120)
    assert third.returncode == 0 and "Warning" not in third.stderr, third.stderr
    res = json.loads(third.stdout)
    assert res["origins"] == ["disk"] and res["value"] == outs[0]["value"]


def test_objects_link_with_llvm_where_objload_is_not_used(cache, monkeypatch):
    """S2SAD_OBJLOAD=0 (and hosts objload does not know) link the same objects with LLJIT."""
    monkeypatch.setenv("S2SAD_OBJLOAD", "0")
    km = kernel("def f(x):\n    return math.tanh(x) * math.cbrt(x) + 0.1\n", "f")
    x = np.linspace(-3, 3, 257)
    want = np.tanh(x) * np.cbrt(x) + 0.1
    d1 = llvm_jit.compile_driver(km, STORE, F64)
    monkeypatch.setattr(llvm_jit, "_cache", {})
    d2 = llvm_jit.compile_driver(km, STORE, F64)
    assert (d1.origin, d2.origin) == ("compiled", "disk")
    assert type(d1._keepalive).__name__ == type(d2._keepalive).__name__ == "ResourceTracker"
    for d in (d1, d2):
        np.testing.assert_allclose(run_store(d, x), want, rtol=1e-14)
    monkeypatch.setenv("S2SAD_OBJLOAD", "1")              # and the same entry maps with objload
    monkeypatch.setattr(llvm_jit, "_cache", {})
    d3 = llvm_jit.compile_driver(km, STORE, F64)
    assert d3.origin == "disk" and (not objload.supported() or isinstance(d3._keepalive, objload.LoadedObject))
    np.testing.assert_allclose(run_store(d3, x), run_store(d1, x), rtol=0)


def test_perf_map_names_every_function_objload_maps(cache, monkeypatch, tmp_path):
    """S2SAD_PERF_MAP=1: each object mapped appends `address size name` lines for its
    functions to /tmp/perf-PID.map (what `perf report` reads for code no ELF describes);
    the driver's exported symbol is among them, its address the one called, and a call
    lands inside its range. Unset: nothing is written."""
    if not objload.supported():
        pytest.skip("objload does not know this host (LLJIT links: no map)")
    written, real = [], llvm_jit.perf_map
    monkeypatch.setattr(llvm_jit, "perf_map", lambda functions: written.append(functions))
    km = kernel("def f(x):\n    return math.sin(x) * 3.5 + x * x * 0.25\n", "f")
    monkeypatch.setenv("S2SAD_PERF_MAP", "1")
    d = llvm_jit.compile_driver(km, STORE, F64)
    assert len(written) == 1
    ranges = {name: (a, n) for a, n, name in written[0]}
    assert d.name in ranges and all(n > 0 for _, n in ranges.values())
    assert ranges[d.name][0] == d.address
    x = np.linspace(-1, 1, 33)
    np.testing.assert_allclose(run_store(d, x), np.sin(x) * 3.5 + x * x * 0.25, rtol=1e-14)
    monkeypatch.delenv("S2SAD_PERF_MAP")
    monkeypatch.setattr(llvm_jit, "_cache", {})
    llvm_jit.compile_driver(km, STORE, F64)           # from disk, mapped again: no map unless asked
    assert len(written) == 1
    out = real(written[0], str(tmp_path))             # the real writer: one line a function
    lines = open(out).read().splitlines()
    assert out.endswith(f"perf-{os.getpid()}.map") and len(lines) == len(written[0])
    assert lines[0] == "%x %x %s" % written[0][0]


def test_entry_point_keeps_its_code_alive(cache, monkeypatch):
    import gc

    drv = llvm_jit.compile_driver(kernel("def f(x):\n    return x * 9.0 + 1.0\n", "f"), STORE, F64)
    cfunc = drv.cfunc
    del drv
    monkeypatch.setattr(llvm_jit, "_cache", {})
    gc.collect()
    x, out = np.arange(5.0), np.empty(5)
    cfunc(1, 5, x.ctypes.data, out.ctypes.data)
    np.testing.assert_array_equal(out, x * 9.0 + 1.0)


# ---------------------------------------------------------------------------------
# the bound

def _stale_stamp(d) -> None:
    """As if no process had looked at the cache's size for a day."""
    stamp = d / objcache.PRUNE_STAMP
    if stamp.exists():
        past = time.time() - 86400
        os.utime(stamp, (past, past))


def _blob(i: int) -> list[bytes]:
    return [bytes([i % 251]) * 20_000]          # ~20 KB an entry


def test_the_disk_cache_keeps_to_its_bound_least_recently_used_first(cache, monkeypatch):
    """S2SAD_CACHE_MB: past it, a store removes the least recently used entries (written
    or loaded longest ago) down to PRUNE_TO of the bound; a loaded entry counts as used;
    records, lock files, temporary files and a symlink are never removed; a removed
    entry is a miss, never an error."""
    monkeypatch.setenv("S2SAD_CACHE_MB", "0.1")             # ~100 KB: five entries
    keys = [f"{i:064x}" for i in range(12)]
    for i, k in enumerate(keys[:5]):
        assert objcache.store(k, _blob(i)) is not None
        past = time.time() - 1000 + i           # each written a second after the one before
        os.utime(cache / (k + objcache.SUFFIX), (past, past))
    objcache.write_record("host-test", {"a": "1"})
    (cache / "keep.lock").write_bytes(b"")
    (cache / ".x.tmp").write_bytes(b"y" * 50_000)
    os.symlink(cache / (keys[0] + objcache.SUFFIX), cache / ("f" * 64 + objcache.SUFFIX))
    assert objcache.load(keys[0]) is not None                # entry 0 used now: the most recent
    _stale_stamp(cache)
    objcache.store(keys[5], _blob(5))                        # past the bound: a prune
    left = {p.name for p in cache.iterdir()}
    sizes = sum(p.stat().st_size for p in cache.iterdir() if p.suffix == objcache.SUFFIX
                and not p.is_symlink() and not p.name.startswith("rec-"))
    assert sizes <= objcache.PRUNE_TO * 0.1 * 2**20
    assert keys[0] + objcache.SUFFIX in left and keys[5] + objcache.SUFFIX in left   # the two used last
    assert keys[1] + objcache.SUFFIX not in left and keys[2] + objcache.SUFFIX not in left   # the oldest
    assert {"keep.lock", ".x.tmp", "f" * 64 + objcache.SUFFIX, objcache.PRUNE_STAMP} <= left
    assert any(n.startswith("rec-") for n in left)
    assert objcache.load(keys[1]) is None                    # removed: a miss
    # within PRUNE_EVERY of that look, stores do not look again (one scan an hour at most)
    for i, k in enumerate(keys[6:], 6):
        objcache.store(k, _blob(i))
    assert all((cache / (k + objcache.SUFFIX)).exists() for k in keys[6:])


def test_no_bound_and_the_bound_read_as_documented(cache, monkeypatch):
    """S2SAD_CACHE_MB=0: no bound (nothing removed); a bad value warns and keeps the default."""
    monkeypatch.setenv("S2SAD_CACHE_MB", "0")
    keys = [f"{i:064x}" for i in range(8)]
    for i, k in enumerate(keys):
        objcache.store(k, _blob(i))
        _stale_stamp(cache)
    assert all((cache / (k + objcache.SUFFIX)).exists() for k in keys)
    monkeypatch.setenv("S2SAD_CACHE_MB", "lots")
    with pytest.warns(RuntimeWarning, match="S2SAD_CACHE_MB"):
        objcache.store("e" * 64, _blob(9))
    assert all((cache / (k + objcache.SUFFIX)).exists() for k in keys)     # 1024 MB: far from it


def test_a_kernel_whose_entry_was_pruned_is_compiled_again(cache, monkeypatch):
    """A driver's entry removed (by another process's prune) is a miss: the next process
    compiles it again and gets the same results."""
    km = kernel("def f(x):\n    return math.sin(x) * 1.25 + x\n", "f")
    d1 = llvm_jit.compile_driver(km, STORE, F64)
    for p in cache.iterdir():
        if p.suffix == objcache.SUFFIX and not p.name.startswith("rec-"):
            p.unlink()
    monkeypatch.setattr(llvm_jit, "_cache", {})
    d2 = llvm_jit.compile_driver(km, STORE, F64)
    assert (d1.origin, d2.origin) == ("compiled", "compiled")
    x = np.linspace(-2, 2, 65)
    np.testing.assert_array_equal(run_store(d2, x), run_store(d1, x))

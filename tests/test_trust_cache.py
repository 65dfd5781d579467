"""The disk cache trusts nothing it finds (issue 12: "Cache entries are opened blindly",
"The cache executes what it finds").

Whatever is in the cache directory (a FIFO, a link to /dev/zero, a huge file, a file of
another user's, a forged entry with a valid checksum, a forged host record), a process
gives the right gradient, warns once with a CacheWarning that says what it found, and
compiles the kernel again: never a hang, never a raw error, never code it did not
write itself. The directory is checked like ssh checks ~/.ssh, held open, and checked
again before each use; the key that authenticates entries lives outside it.

Every test uses its own cache directory and key file (S2SAD_CACHE_DIR, S2SAD_CACHE_KEY),
never ~/.cache or ~/.config.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

from conftest import kernel, wait_for_child
from s2sad.codegen import cachekey, llvm_host, llvm_jit, objcache, objload
from s2sad.kernel import LoopSpec

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORE = LoopSpec(layouts=("contig",), value="store")
ROOT = hasattr(os, "getuid") and os.getuid() == 0
OTHER_UID = 54321          # a user that is not this one (for chown, as root)

pytestmark = [pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only"),
              pytest.mark.usefixtures("fresh_reports")]


def within(seconds: float, fn):
    """fn(), or a failure if it does not return in time (a hang must fail, not hang)."""
    box: list = []

    def run():
        try:
            box.append(("ok", fn()))
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            box.append(("raised", e))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{fn} hung"
    how, value = box[0]
    if how == "raised":
        raise value
    return value


def cache_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, objcache.CacheWarning)]


# ---------------------------------------------------------------------------------
# a new process against a tampered cache

CHILD = """\
import json, sys, warnings
import numpy as np
import s2sad


def f(x):
    return np.sum(np.sin(x) * x + SCALE * x * x)


SCALE = float(sys.argv[1])
x = np.linspace(-1.0, 1.5, 9)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    g = s2sad.grad(f)(x)
from s2sad.codegen import llvm_jit
print(json.dumps({"grad": g.tolist(), "origins": [c.origin for c in llvm_jit._cache.values()],
                  "keys": [c.key for c in llvm_jit._cache.values()],
                  "warnings": [type(w.message).__name__ + ": " + str(w.message) for w in seen]}))
"""


def want_grad(scale: float) -> np.ndarray:
    x = np.linspace(-1.0, 1.5, 9)
    return np.cos(x) * x + np.sin(x) + 2 * scale * x


def run_child(d, key, scale: float = 0.5) -> dict:
    env = dict(os.environ, S2SAD_CACHE_DIR=str(d), S2SAD_CACHE_KEY=str(key), PYTHONPATH=REPO)
    env.pop("S2SAD_CACHE", None)
    script = os.path.join(os.path.dirname(d), "user.py")       # (s2sad reads its source)
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(CHILD)
    p = subprocess.run([sys.executable, script, repr(scale)], env=env, capture_output=True, text=True,
                       timeout=180)                  # a hang fails here instead of hanging the suite
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    np.testing.assert_allclose(out["grad"], want_grad(scale), rtol=1e-13, atol=1e-14)
    return out


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """A cache a process filled (the kernels of scale 0.5 and 2.0), and its key."""
    root = tmp_path_factory.mktemp("warm")
    d, key = root / "cache", root / "config" / "cache.key"
    a, b = run_child(d, key, 0.5), run_child(d, key, 2.0)
    assert a["origins"] == b["origins"] == ["compiled"] and not a["warnings"]
    return d, key, a["keys"][0], b["keys"][0]


@pytest.fixture
def copy(warm, tmp_path):
    """A copy of the warm cache for this test to tamper with: (dir, key file, the entry
    of scale 0.5, the entry of scale 2.0)."""
    src, key, ka, kb = warm
    d = tmp_path / "cache"
    shutil.copytree(src, d)
    os.chmod(d, 0o700)
    assert run_child(d, key)["origins"] == ["disk"]
    return d, key, d / (ka + objcache.SUFFIX), d / (kb + objcache.SUFFIX)


def rebuilt(d, key, *expect: str) -> None:
    """A new process warns (each of `expect` in its warnings), gives the right gradient
    by compiling again, and the process after it loads the rebuilt entry quietly."""
    out = run_child(d, key)
    text = "\n".join(out["warnings"])
    assert out["origins"] == ["compiled"], out
    for e in expect:
        assert e in text, text
    assert all(w.startswith("CacheWarning") for w in out["warnings"]), text
    again = run_child(d, key)
    assert again["origins"] == ["disk"] and not again["warnings"], again


def test_fifo_entries_do_not_hang(copy):
    d, key, entry, _ = copy
    for p in list(d.iterdir()):                       # every entry and record: a FIFO
        p.unlink()
        os.mkfifo(p, 0o600)
    rebuilt(d, key, "FIFO")


def test_link_to_dev_zero_is_not_read(copy):
    d, key, entry, _ = copy
    entry.unlink()
    entry.symlink_to("/dev/zero")
    rebuilt(d, key, "symbolic link")


def test_entry_linked_into_a_world_writable_directory_is_refused(copy, tmp_path):
    d, key, entry, _ = copy
    public = tmp_path / "public"
    public.mkdir()
    os.chmod(public, 0o777)
    shutil.copy(entry, public / entry.name)           # a valid entry, but anyone may change it there
    entry.unlink()
    entry.symlink_to(public / entry.name)
    rebuilt(d, key, "symbolic link")


def forge(src, dst, scramble: bool = False) -> None:
    """Write at `dst` the entry `src` holds (valid object code of another kernel, or, with
    `scramble`, dst's own with its machine code altered), made to look like dst's entry:
    its header names dst's key, and the 32 bytes after the magic are recomputed as a
    checksum of the body, as in the format before entries were authenticated."""
    data = (dst if scramble else src).read_bytes()
    magic, body = data[:8], data[40:]
    n = int.from_bytes(body[:4], "little")
    header = body[4:4 + n].decode()
    lines = [f"key={dst.name[:-len(objcache.SUFFIX)]}" if line.startswith("key=") else line
             for line in header.splitlines()]
    new_header = ("\n".join(lines) + "\n").encode()
    rest = bytearray(body[4 + n:])
    if scramble:                                      # flip bits in the object's code section
        for k in range(200, 232):
            rest[k] ^= 0x5A
    body = len(new_header).to_bytes(4, "little") + new_header + bytes(rest)
    dst.write_bytes(magic + hashlib.sha256(body).digest() + body)


def test_forged_entry_of_another_kernel_is_not_run(copy):
    """Valid object code for another function (scale 2.0 instead of 0.5), under this
    kernel's key with a correct checksum: the gradient is still this function's."""
    d, key, entry, other = copy
    forge(other, entry)
    rebuilt(d, key, "authentication")


def test_scrambled_entry_with_a_recomputed_checksum_is_not_run(copy):
    d, key, entry, _ = copy
    forge(entry, entry, scramble=True)
    rebuilt(d, key, "authentication")


def test_forged_host_record_is_replaced_not_raised(copy):
    """A host record naming a triple and CPU LLVM cannot use (once a raw RuntimeError
    from every grad): with a checksum, it fails authentication; the process probes the
    host and compiles."""
    d, key, entry, _ = copy
    (rec,) = [p for p in d.iterdir() if p.name.startswith("rec-host-")]
    data = rec.read_bytes()
    body = data[40:]
    n = int.from_bytes(body[:4], "little")
    lines = [("triple=bogus-unknown-none" if ln.startswith("triple=") else
              "cpu=no-such-cpu" if ln.startswith("cpu=") else ln) for ln in body[4:4 + n].decode().splitlines()]
    header = ("\n".join(lines) + "\n").encode()
    body = len(header).to_bytes(4, "little") + header
    rec.write_bytes(data[:8] + hashlib.sha256(body).digest() + body)
    entry.unlink()                                    # so that the process compiles with LLVM
    out = run_child(d, key)
    assert out["origins"] == ["compiled"] and "authentication" in "\n".join(out["warnings"]), out


def test_authenticated_but_wrong_host_record_is_replaced(cache, monkeypatch):
    """A record that verifies but does not describe this machine (a leaked key, or a
    mistake of s2sad's own): checked against LLVM's probe before compiling, reported,
    replaced; the kernel is compiled for this machine and gives the right values."""
    real = llvm_jit.verified_host()
    fp = objcache.host_fingerprint()
    if fp is None:
        pytest.skip("no host fingerprint on this platform")
    objcache.write_record("host-" + fp, real.replace(cpu="no-such-cpu", triple=real.triple + "-bogus",
                                                     features="+made-up").as_dict())
    monkeypatch.setattr(llvm_host, "state", {"llvm": llvm_host.binding()})
    assert llvm_jit.host().cpu == "no-such-cpu"       # (plausible without LLVM: same architecture)
    with pytest.warns(objcache.CacheWarning, match="host record"):
        drv = llvm_jit.compile_driver(kernel("def f(x):\n    return math.sin(x) * 3.0\n", "f"), STORE,
                                      np.float64)
    x = np.linspace(-2, 2, 41)
    out = np.empty_like(x)
    drv.cfunc(1, x.size, x.ctypes.data, out.ctypes.data)
    np.testing.assert_allclose(out, np.sin(x) * 3.0, rtol=1e-15)
    assert llvm_jit.host() == real
    rec = objcache.read_record("host-" + fp)
    assert {k: rec[k] for k in llvm_host.Host.FIELDS} == real.as_dict()


def test_host_record_for_another_architecture_is_probed_on_a_warm_start(cache, monkeypatch):
    """Authenticated, but for another machine: caught without compiling anything."""
    real = llvm_jit.verified_host()
    fp = objcache.host_fingerprint()
    if fp is None:
        pytest.skip("no host fingerprint on this platform")
    other = "aarch64-unknown-linux-gnu" if os.uname().machine == "x86_64" else "x86_64-pc-linux-gnu"
    objcache.write_record("host-" + fp, real.replace(triple=other).as_dict())
    monkeypatch.setattr(llvm_host, "state", {"llvm": llvm_host.binding()})
    with pytest.warns(objcache.CacheWarning, match="does not describe this machine"):
        assert llvm_jit.host() == real


def test_implausible_host_record_is_probed(monkeypatch):
    h = llvm_jit.verified_host().as_dict()
    assert llvm_host.implausible(h) is None
    assert "lacks" in llvm_host.implausible({**h, "cpu": ""})
    assert "malformed" in llvm_host.implausible({**h, "features": "+avx2,;rm -rf"})
    other = "aarch64-unknown-linux-gnu" if os.uname().machine == "x86_64" else "x86_64-pc-linux-gnu"
    assert "not for this" in llvm_host.implausible({**h, "triple": other})
    if os.uname().machine == "x86_64":
        monkeypatch.setattr(objcache, "cpu_flags", lambda: frozenset({"sse2", "avx"}))
        assert "avx512f" in llvm_host.implausible({**h, "features": "+avx,+avx512f,-sse4a"})


# ---------------------------------------------------------------------------------
# entries, in this process

def stored(cache) -> tuple[str, object]:
    key = "e" * 64
    path = objcache.store(key, [b"object code", b"ir"], {"symbol": "s2sad_f"})
    assert path is not None and objcache.load(key)[1] == [b"object code", b"ir"]
    return key, path


def refused(key, *words) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert within(30, lambda: objcache.load(key)) is None
    text = "\n".join(cache_warnings(seen))
    assert len(cache_warnings(seen)) == 1, text
    for w in words:
        assert w in text, text


def test_fifo_entry_in_process(cache):
    key, path = stored(cache)
    path.unlink()
    os.mkfifo(path, 0o600)
    refused(key, "FIFO", str(path))


def test_huge_entry_is_not_read(cache):
    key, path = stored(cache)
    with open(path, "r+b") as f:
        f.truncate(objcache.MAX_ENTRY + 1)            # sparse: costs no disk
    refused(key, "more than")


def test_group_writable_entry_is_refused(cache):
    key, path = stored(cache)
    os.chmod(path, 0o664)
    refused(key, "writable by group or others")


@pytest.mark.skipif(not ROOT, reason="making a file of another user's needs root")
def test_entry_of_another_user_is_refused(cache):
    key, path = stored(cache)
    os.chown(path, OTHER_UID, OTHER_UID)
    refused(key, "another user")


def test_directory_in_place_of_an_entry(cache):
    key, path = stored(cache)
    path.unlink()
    path.mkdir()
    refused(key, "a directory")
    with pytest.warns(objcache.CacheWarning, match="could not write"):
        assert objcache.store(key, [b"x"]) is None    # (cannot replace it: a warning, no error)


def test_oversized_entry_is_not_written(cache):
    assert objcache.store("f" * 64, [b"\0" * (objcache.MAX_ENTRY + 1)]) is None
    assert not (cache / ("f" * 64 + objcache.SUFFIX)).exists()


def test_unauthenticated_entry_is_never_mapped(cache, monkeypatch):
    """The loader (objload) never sees bytes whose MAC did not verify: object code with
    one byte changed and the old-style checksum recomputed is not mapped."""
    km = kernel("def f(x):\n    return math.exp(x) - 2.0\n", "f")
    d0 = llvm_jit.compile_driver(km, STORE, np.float64)
    path = objcache.entry_path(d0.key)
    data = path.read_bytes()
    body = bytearray(data[40:])
    start = 4 + int.from_bytes(body[:4], "little")              # the object code, the first blob
    body[start + 200] ^= 0x01
    path.write_bytes(data[:8] + hashlib.sha256(body).digest() + bytes(body))
    tampered = bytes(body[start:start + 256])
    seen: list[bytes] = []
    load = objload.load
    monkeypatch.setattr(objload, "load", lambda obj, *a, **k: seen.append(bytes(obj)) or load(obj, *a, **k))
    monkeypatch.setattr(llvm_jit, "_cache", {})
    with pytest.warns(objcache.CacheWarning, match="authentication"):
        d1 = llvm_jit.compile_driver(km, STORE, np.float64)
    assert d1.origin == "compiled"
    assert not any(obj.startswith(tampered) for obj in seen)
    x = np.linspace(-1, 1, 11)
    out = np.empty_like(x)
    d1.cfunc(1, x.size, x.ctypes.data, out.ctypes.data)
    np.testing.assert_allclose(out, np.exp(x) - 2.0, rtol=1e-15)


def test_each_cause_is_reported_once(cache):
    key, path = stored(cache)
    other = objcache.store("d" * 64, [b"x"])
    for p in (path, other):
        p.unlink()
        os.mkfifo(p, 0o600)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert objcache.load(key) is None and objcache.load("d" * 64) is None
        assert objcache.load(key) is None
        os.unlink(path)
        path.symlink_to("/dev/zero")
        assert objcache.load(key) is None
    got = cache_warnings(seen)
    assert len(got) == 2 and "FIFO" in got[0] and "symbolic link" in got[1], got


# ---------------------------------------------------------------------------------
# the directory

def off_with(words: str) -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert objcache.directory() is None
        assert objcache.store("a" * 64, [b"x"]) is None and objcache.load("a" * 64) is None
    got = cache_warnings(seen)
    assert len(got) == 1 and words in got[0], got


def test_world_writable_parent_is_refused(tmp_path, monkeypatch, cache):
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chmod(parent, 0o777)
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(parent / "mine"))
    off_with("writable by group or others")
    assert not (parent / "mine").exists()


@pytest.mark.skipif(ROOT, reason="as root, a sticky directory of one's own is one owned by root")
def test_sticky_parent_must_be_roots(tmp_path, monkeypatch, cache):
    parent = tmp_path / "sticky"
    parent.mkdir()
    os.chmod(parent, 0o1777)
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(parent / "mine"))
    off_with("sticky directory owned by root")


def test_sticky_root_parent_like_tmp_is_accepted():
    import tempfile

    from s2sad.codegen import safedir

    st = os.stat("/tmp")
    if not (st.st_uid == 0 and st.st_mode & stat.S_ISVTX and st.st_mode & 0o002):
        pytest.skip("/tmp is not a world-writable sticky directory of root's here")
    with tempfile.TemporaryDirectory(dir="/tmp") as t:
        held = safedir.open_private(os.path.join(t, "c"))
        assert held.real == os.path.realpath(os.path.join(t, "c"))
        assert stat.S_IMODE(os.stat(held.real).st_mode) == 0o700


@pytest.mark.skipif(not ROOT, reason="making a directory of another user's needs root")
def test_parent_of_another_user_is_refused(tmp_path, monkeypatch, cache):
    parent = tmp_path / "theirs"
    parent.mkdir()
    os.chown(parent, OTHER_UID, OTHER_UID)
    os.chmod(parent, 0o755)
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(parent / "mine"))
    off_with("belongs to another user")


def test_a_file_named_as_the_directory(tmp_path, monkeypatch, cache):
    (tmp_path / "file").write_bytes(b"not a directory")
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(tmp_path / "file"))
    off_with("not a directory")
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(tmp_path / "file" / "below"))
    off_with("not a directory")


def test_link_to_a_private_directory_is_followed(tmp_path, monkeypatch, cache):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(tmp_path / "link"))
    assert objcache.store("a" * 64, [b"x"]) is not None and (real / ("a" * 64 + objcache.SUFFIX)).exists()


def test_link_into_a_shared_directory_is_refused(tmp_path, monkeypatch, cache):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    (shared / "c").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(shared / "c")
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(tmp_path / "link"))
    off_with("writable by group or others")


def test_directory_swapped_for_a_link_mid_process(cache, tmp_path):
    """The directory is held open and checked again before each use: swapped for a link
    to a directory an attacker controls, s2sad warns once, writes nothing there, and
    compiles in memory."""
    key, path = stored(cache)
    evil = tmp_path / "evil"
    evil.mkdir(mode=0o700)
    os.rename(cache, tmp_path / "moved")
    cache.symlink_to(evil)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert objcache.store("b" * 64, [b"y"]) is None
        assert objcache.load(key) is None and objcache.directory() is None
    got = cache_warnings(seen)
    assert len(got) == 1 and "replaced" in got[0], got
    assert list(evil.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "moved").iterdir() if p.name != objcache.PRUNE_STAMP) == [path.name]
    drv = llvm_jit.compile_driver(kernel("def f(x):\n    return x * 4.0\n", "f"), STORE, np.float64)
    assert drv.origin == "compiled" and list(evil.iterdir()) == []


def test_directory_made_shared_mid_process(cache):
    stored(cache)
    os.chmod(cache, 0o777)
    off_with("writable by group or others")


def test_directory_removed_mid_process(cache):
    stored(cache)
    shutil.rmtree(cache)
    off_with("was removed")
    assert not cache.exists()


# ---------------------------------------------------------------------------------
# the key

def test_key_is_made_private_outside_the_cache(cache, tmp_path, monkeypatch):
    monkeypatch.delenv("S2SAD_CACHE_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    stored(cache)
    key = tmp_path / "xdg" / "s2sad" / "cache.key"
    assert cachekey.path() == str(key)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert not any(p.name.endswith(".key") for p in cache.iterdir())


def test_another_key_does_not_verify(cache, tmp_path, monkeypatch):
    key, _ = stored(cache)
    monkeypatch.setenv("S2SAD_CACHE_KEY", str(tmp_path / "other" / "cache.key"))
    refused(key, "authentication")


def test_racing_processes_agree_on_one_key(tmp_path):
    code = ("import sys; from s2sad.codegen import cachekey; import os\n"
            "print(cachekey.load(sys.argv[1], '/nonexistent').hex())\n")
    where = str(tmp_path / "k" / "cache.key")
    env = dict(os.environ, PYTHONPATH=REPO)
    procs = [subprocess.Popen([sys.executable, "-c", code, where], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    keys = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(keys) == 1 and len(next(iter(keys))) == 64
    assert sorted(os.listdir(tmp_path / "k")) == ["cache.key"]      # no temporary files left


def bad_key(tmp_path, monkeypatch, make, words: str) -> None:
    where = tmp_path / "badkey" / "cache.key"
    where.parent.mkdir(mode=0o700)
    make(where)
    monkeypatch.setenv("S2SAD_CACHE_KEY", str(where))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert within(30, objcache.directory) is None
        assert objcache.store("a" * 64, [b"x"]) is None
    got = cache_warnings(seen)
    assert len(got) == 1 and "key" in got[0] and words in got[0], got


def test_readable_key_turns_the_cache_off(cache, tmp_path, monkeypatch):
    def make(p):
        p.write_bytes(os.urandom(32))
        os.chmod(p, 0o644)
    bad_key(tmp_path, monkeypatch, make, "readable or writable by group or others")


def test_fifo_key_does_not_hang(cache, tmp_path, monkeypatch):
    bad_key(tmp_path, monkeypatch, lambda p: os.mkfifo(p, 0o600), "FIFO")


def test_linked_key_is_refused(cache, tmp_path, monkeypatch):
    def make(p):
        real = tmp_path / "elsewhere.key"
        real.write_bytes(os.urandom(32))
        os.chmod(real, 0o600)
        p.symlink_to(real)
    bad_key(tmp_path, monkeypatch, make, "symbolic link")


def test_short_key_is_refused(cache, tmp_path, monkeypatch):
    def make(p):
        p.write_bytes(b"0123")
        os.chmod(p, 0o600)
    bad_key(tmp_path, monkeypatch, make, "not 32")


@pytest.mark.skipif(not ROOT, reason="making a file of another user's needs root")
def test_key_of_another_user_is_refused(cache, tmp_path, monkeypatch):
    def make(p):
        p.write_bytes(os.urandom(32))
        os.chmod(p, 0o600)
        os.chown(p, OTHER_UID, OTHER_UID)
    bad_key(tmp_path, monkeypatch, make, "another user")


def test_key_inside_the_cache_directory_is_refused(cache, monkeypatch):
    monkeypatch.setenv("S2SAD_CACHE_KEY", str(cache / "cache.key"))
    off_with("inside the cache directory")


# ---------------------------------------------------------------------------------
# the CUDA host emulation's libraries (loaded into the process like the cache's code)

def test_cuda_host_directory_is_checked(tmp_path, monkeypatch):
    from s2sad.backends import cuda_host

    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)                           # anyone could plant a library here
    monkeypatch.setenv("S2SAD_CUDA_HOST_CACHE", str(shared))
    with pytest.warns(objcache.CacheWarning, match="writable by group or others"):
        got = cuda_host.cache_dir()
    assert got != shared and stat.S_IMODE(os.stat(got).st_mode) == 0o700 and os.stat(got).st_uid == os.getuid()
    monkeypatch.setenv("S2SAD_CUDA_HOST_CACHE", str(tmp_path / "mine"))
    assert cuda_host.cache_dir() == tmp_path / "mine"
    assert stat.S_IMODE(os.stat(tmp_path / "mine").st_mode) == 0o700


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_child_forked_while_the_cache_is_busy_does_not_hang(cache):
    """A fork while another thread holds the cache's lock (for microseconds, but it
    happens): the child gets its own lock and the held directory still works."""
    key, _ = stored(cache)
    objcache._lock.acquire()
    try:
        pid = os.fork()
        if pid == 0:
            ok = objcache.load(key) is not None and objcache.store("b" * 64, [b"z"]) is not None
            os._exit(0 if ok else 3)
    finally:
        objcache._lock.release()
    wait_for_child(pid, 30, "the forked child hung on the cache's lock")
    assert objcache.load("b" * 64)[1] == [b"z"]

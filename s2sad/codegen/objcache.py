"""The disk cache of compiled kernels: one file per kernel, written atomically,
authenticated before use.

Where: `$S2SAD_CACHE_DIR`, else `~/.cache/s2sad`, created mode 0700. `S2SAD_CACHE=0`
turns the disk cache off. The cache holds machine code this process will run, so:

- the directory is opened once (`safedir.open_private`: its real path walked without
  following links, every parent checked as ssh does, the directory itself this user's
  and written by nobody else) and held open; entries are read and written relative to
  that descriptor, never through the path again;
- before each use the held directory is checked again (`PrivateDir.verify`: still this
  user's, still private, and still what the path names); if it changed, s2sad warns
  once and compiles in memory for the rest of the process, and never writes elsewhere;
- an entry is opened with O_NOFOLLOW | O_NONBLOCK and must be a regular file of this
  user's, not writable by group or others, at most MAX_ENTRY bytes (a symlink, a FIFO, a
  device, a huge file is a warning and a rebuild, never a hang);
- an entry is authenticated with HMAC-SHA256 under a per-user secret key kept outside
  the cache directory (`cachekey`); one that does not verify is never handed to the
  loader. A key that cannot be trusted turns the disk cache off, with a warning.

An entry is named by its key (a sha256 the caller computes over everything that decides
the machine code: see `llvm_keys.disk_key`) and holds

    MAGIC (8 bytes) | HMAC-SHA256(secret, MAGIC | body) (32 bytes) | body
    body = header length (4 bytes, little-endian) | header | blob | blob | ...

where the header is "name=value" lines (UTF-8) that repeat the key and the format and
give each blob's length. An entry that fails any check is reported with a
`CacheWarning` (once per kind of failure per process: `report`) and never used; the
caller compiles the kernel again and overwrites it. Writers write a private temporary
file in the directory and rename it into place, so readers see a whole entry or none.

Compiled once per machine (`building`): a process that misses an entry takes the entry's
build lock (an `fcntl.flock` on "KEY.lock" in the directory, opened and checked as an
entry is: `PrivateDir.open_lock`) before it compiles, and looks for the entry again once
it holds it; so of fresh processes that need one kernel at once (a dask cluster's workers
starting together) the first compiles and writes it, and the others wait for it and load
it. The wait is bounded (S2SAD_BUILD_WAIT seconds, default BUILD_WAIT): past it a process
warns once and compiles for itself, never a hang. A lock file that fails the checks
(a symlink, a FIFO, another user's) is refused as an entry is: a warning, and the kernel
is compiled without the lock. A flock dies with its process (or its descriptor), so a
process killed while compiling holds nobody up (a child forked while a thread held one
closes its copy: `_close_held_in_child`). The holder removes the lock file once the
entry is written (a process that opened the old file finds the entry when it gets the
lock; one that comes later finds the entry first, or a new lock file and then the entry).
Measured (Intel Xeon, 2 vCPUs, this session): three fresh processes differentiating one
function together compiled it three times before, once now (tests/test_cache_build_lock.py).

Bounded (`S2SAD_CACHE_MB`, default CACHE_MB; 0: no bound): a store looks at the cache's
size when no process has for PRUNE_EVERY seconds (the mtime of PRUNE_STAMP in the
directory says when one last did) and, past the bound, removes the least recently used
entries (by mtime: an entry's is set when it is written and again each time a process
loads it) down to PRUNE_TO of it. Records, lock files and temporary files are never
removed. A process that finds an entry gone compiles it again (a miss); one reading it
while it is removed reads it whole (unlink keeps an open file). Why: every change of
s2sad's source gives every kernel a new key, and each value of a number a closure
compiles in is a kernel of its own, so without a bound the directory only grows (a
development machine's held 240,000 entries, 8 GB, in session 19). Cost (the znver5):
a look at 60,000 entries and the removal of all of them took 1.4 s, ~24 us an entry, so
the store that first finds an old unbounded cache pays seconds once; a bounded one
(1 GiB: ~30,000 kernels) sheds at most a quarter a look, ~0.2 s an hour at worst.

The host description (`host_fingerprint`) lets a warm process key its kernels without
importing llvmlite: it is cheap to compute and names what LLVM's view of the host
depends on; the LLVM-side facts it maps to are stored next to the entries, as records
authenticated like entries.
"""
from __future__ import annotations

import _thread
import contextlib
import hashlib
import hmac
import importlib.util
import os
import stat
import sys
import time
import warnings
from pathlib import Path

from .. import envflags
from . import cachekey, safedir

try:
    import fcntl
except ImportError:           # (not POSIX: the disk cache is off there anyway, safedir.supported)
    fcntl = None

__all__ = ["CacheWarning", "FORMAT", "MAX_ENTRY", "directory", "entry_path", "load", "store", "read_record",
           "write_record", "host_fingerprint", "cpu_flags", "report", "reported", "building", "BUILD_WAIT", "prune"]

FORMAT = 2
MAGIC = b"S2SADOB\x02"
SUFFIX = ".s2o"
MAX_ENTRY = 64 << 20          # the largest entry s2sad writes or reads (kernels are ~10-300 KB)
CACHE_MB = 1024.0             # the most the entries may take, in MiB (S2SAD_CACHE_MB; 0: no bound)
PRUNE_EVERY = 3600.0          # seconds between two looks at the cache's size, by any process
PRUNE_TO = 0.75               # past the bound: least recently used entries removed down to this share of it
PRUNE_STAMP = "prune.stamp"   # its mtime: when a process last looked
_MAC = 32
_HEAD = 8 + _MAC + 4


class CacheWarning(RuntimeWarning):
    """A disk cache entry (or the cache directory, or its key) could not be used."""


reported: set = set()         # the causes already warned about in this process


def report(cause, message: str, stacklevel: int = 4) -> None:
    """Warn about `cause` once per process (a test may clear `reported`)."""
    if cause in reported:
        return
    reported.add(cause)
    warnings.warn(message, CacheWarning, stacklevel=stacklevel + 1)


class _Open:
    """The cache in use: the held directory and the key that authenticates its entries."""

    __slots__ = ("dir", "secret")

    def __init__(self, held: safedir.PrivateDir, secret: bytes) -> None:
        self.dir = held
        self.secret = secret


_lock = _thread.allocate_lock()
_current: list = [None, None]     # [(cache path, key path), _Open or None]


def _new_lock_in_child() -> None:
    """A child forked while another thread held the lock would wait for it forever."""
    global _lock
    _lock = _thread.allocate_lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


def _requested() -> tuple[str, str] | None:
    if os.environ.get("S2SAD_CACHE", "1").strip().lower() in ("0", "off", "no", "false"):
        return None
    env = os.environ.get("S2SAD_CACHE_DIR", "").strip()
    return (os.path.abspath(os.path.expanduser(env or os.path.join("~", ".cache", "s2sad"))),
            cachekey.path())


def _open(where: str, key_path: str) -> _Open | None:
    if not safedir.supported():
        return None                   # (not POSIX: no way to check; compile in memory, quietly)
    try:
        held = safedir.open_private(where)
    except (safedir.Unsafe, OSError) as e:
        report(("directory", where), f"s2sad: not using the kernel cache directory: {e}. Kernels are "
               f"compiled in memory only. Set S2SAD_CACHE_DIR to a private directory (yours, mode 0700, "
               f"under parents only you or root can write), or S2SAD_CACHE=0.", stacklevel=5)
        return None
    try:
        secret = cachekey.load(key_path, held.real)
    except (safedir.Unsafe, OSError) as e:
        report(("key", key_path), f"s2sad: not using the kernel cache: its key cannot be trusted ({e}). "
               f"Kernels are compiled in memory only. Remove the key file (s2sad makes a new one, "
               f"mode 0600) or set {cachekey.ENV} to a file of yours outside the cache directory.",
               stacklevel=5)
        return None
    return _Open(held, secret)


def _cache() -> _Open | None:
    """The cache in use, checked again; None when it is off or cannot be trusted."""
    wanted = _requested()
    if wanted is None:
        return None
    with _lock:
        if _current[0] != wanted:
            _current[:] = [wanted, _open(*wanted)]
        got = _current[1]
        if got is None:
            return None
        try:
            got.dir.verify()
        except (safedir.Unsafe, OSError) as e:
            report(("changed", wanted[0]), f"s2sad: stopped using the kernel cache directory: {e}. Kernels "
                   f"are compiled in memory until this process ends; the next process checks the "
                   f"directory afresh.", stacklevel=5)
            _current[1] = None
            return None
        return got


def directory() -> Path | None:
    """The cache directory, created 0700 if missing; None when the cache is off or unusable."""
    got = _cache()
    return None if got is None else Path(got.dir.path)


def entry_path(key: str, where: Path | None = None) -> Path | None:
    d = where or directory()
    return None if d is None else d / (key + SUFFIX)


_REMEDY = {
    "unauthenticated": "it was not written by s2sad with your key (it may be forged or damaged)",
    "symlink": "s2sad never writes links: check who else writes this directory",
    "not a regular file": "s2sad writes only regular files: check who else writes this directory",
    "owner": "check who else writes this directory",
    "mode": "s2sad writes entries 0600: check who changed it",
    "size": "it is larger than any entry s2sad writes",
}


def _refuse(cause: str, what: str) -> None:
    why = _REMEDY.get(cause)
    report(("entry", cause), f"s2sad: the cached kernel {what}; it is not loaded and the kernel is compiled "
           f"again{f' ({why})' if why else ''}. Other entries with this problem "
           f"are not reported again.", stacklevel=5)


def _mac(secret: bytes, body) -> bytes:
    h = hmac.new(secret, MAGIC, hashlib.sha256)
    h.update(body)
    return h.digest()


NEEDED = [0]      # loads asked for so far: each is code this process had not made yet (read by threadchoice)


def load(key: str) -> tuple[dict[str, str], list[bytes]] | None:
    """(header, blobs) of the entry for `key`; None if there is none or it fails a check
    (then with a CacheWarning). Nothing is returned that the MAC does not cover. Each
    call counts in NEEDED (it is asked only for code not yet in memory: a load or a
    compile follows)."""
    NEEDED[0] += 1
    got = _cache()
    if got is None:
        return None
    name = key + SUFFIX
    path = os.path.join(got.dir.path, name)
    try:
        data = got.dir.read(name, MAX_ENTRY)
    except safedir.Unsafe as e:
        _refuse(e.cause, str(e))
        return None
    if data is None:
        return None
    if len(data) < _HEAD or data[:8] != MAGIC:
        _refuse("corrupt", f"{path} is not an s2sad cache entry of this format")
        return None
    body = memoryview(data)[8 + _MAC:]
    if not hmac.compare_digest(_mac(got.secret, body), data[8:8 + _MAC]):
        _refuse("unauthenticated", f"{path} fails its authentication (HMAC)")
        return None
    try:                # used now: the last an entry is pruned (its mtime; never its contents)
        os.utime(name, dir_fd=got.dir.fd, follow_symlinks=False)
    except (OSError, NotImplementedError):
        pass
    return _parse(key, path, body)


def _parse(key: str, path: str, body: memoryview) -> tuple[dict[str, str], list[bytes]] | None:
    n = int.from_bytes(body[:4], "little")
    try:
        header = dict(line.split("=", 1) for line in bytes(body[4:4 + n]).decode().splitlines())
        sizes = [int(s) for s in header["blobs"].split(",") if s]
    except (UnicodeDecodeError, ValueError, KeyError):
        _refuse("corrupt", f"{path} has an unreadable header")
        return None
    if header.get("key") != key or header.get("format") != str(FORMAT):
        _refuse("stale", f"{path} was written for another key or format")
        return None
    if 4 + n + sum(sizes) != len(body) or min(sizes, default=0) < 0:
        _refuse("corrupt", f"{path} has the wrong length")
        return None
    blobs, pos = [], 4 + n
    for s in sizes:
        blobs.append(bytes(body[pos:pos + s]))
        pos += s
    return header, blobs


def store(key: str, blobs: list[bytes], meta: dict[str, str] | None = None) -> Path | None:
    """Write the entry for `key` atomically; its path, or None (cache off, too large, or
    the write failed: then with a CacheWarning, once)."""
    got = _cache()
    if got is None:
        return None
    fields = {"format": str(FORMAT), "key": key, "blobs": ",".join(str(len(b)) for b in blobs)}
    for k, v in (meta or {}).items():
        fields.setdefault(k, str(v).replace("\n", " "))
    header = "".join(f"{k}={v}\n" for k, v in fields.items()).encode()
    body = len(header).to_bytes(4, "little") + header + b"".join(blobs)
    data = MAGIC + _mac(got.secret, body) + body
    if len(data) > MAX_ENTRY:
        return None                   # (never read back: not worth the disk)
    name = key + SUFFIX
    try:
        got.dir.write(name, data)
    except OSError as e:
        report(("write", got.dir.path), f"s2sad: could not write the kernel cache entry "
               f"{os.path.join(got.dir.path, name)} ({e.strerror}); kernels are compiled in memory only",
               stacklevel=5)
        return None
    _maybe_prune(got)
    return Path(got.dir.path) / name


def _maybe_prune(got: _Open) -> None:
    """`prune` where the bound is on and no process has looked for PRUNE_EVERY seconds."""
    cap = envflags.number("S2SAD_CACHE_MB", CACHE_MB)
    if cap <= 0:
        return
    try:
        st = os.stat(PRUNE_STAMP, dir_fd=got.dir.fd, follow_symlinks=False)
        if time.time() - st.st_mtime < PRUNE_EVERY:
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        got.dir.write(PRUNE_STAMP, b"")         # (first: racing processes mostly see it and skip)
    except OSError:
        return
    prune(got.dir.fd, int(cap * 2**20))


def prune(dir_fd: int, cap_bytes: int) -> int:
    """Remove the least recently used entries of the directory (by mtime) until the entries
    take at most PRUNE_TO of `cap_bytes`, where they take more than `cap_bytes`; how many
    were removed. Only regular `*.s2o` entry files: never a record (`rec-*`), a lock file,
    a temporary file or anything else."""
    found, total = [], 0
    try:
        with os.scandir(dir_fd) as it:
            for e in it:
                name = e.name
                if not name.endswith(SUFFIX) or name.startswith(("rec-", ".")):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    found.append((st.st_mtime, name, st.st_size))
                    total += st.st_size
    except OSError:
        return 0
    if total <= cap_bytes:
        return 0
    found.sort()
    removed = 0
    for _, name, size in found:
        if total <= PRUNE_TO * cap_bytes:
            break
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


# ------------------------------------------------------------------ one build per machine

BUILD_WAIT = 60.0             # seconds to wait for another process building an entry (S2SAD_BUILD_WAIT)
LOCK_SUFFIX = ".lock"


@contextlib.contextmanager
def building(key: str):
    """Held while this process builds the entry for `key` (see the module docstring):
    entered, it holds the entry's build lock, waited for while another process held it,
    up to S2SAD_BUILD_WAIT seconds; it gives True then, False where the cache is off, the
    lock file was refused or the wait ran out (the caller compiles all the same). The
    caller looks for the entry again inside (`load`): the process it waited for wrote it."""
    got = _cache() if fcntl is not None else None
    fd = None if got is None else _take(got, key)
    if fd is not None:
        _held.add(fd)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            try:
                os.unlink(key + LOCK_SUFFIX, dir_fd=got.dir.fd)    # (still ours: only a holder removes it)
            except OSError:
                pass
            _held.discard(fd)
            os.close(fd)                  # (the lock goes with the last descriptor)


_held: set = set()            # the descriptors of the build locks this process holds


def _close_held_in_child() -> None:
    """A child forked while a thread held a build lock shares the lock (one open file):
    it would hold it after the parent let go, and hold up the others until it exited.
    The child's copies are closed; the parent's lock stands until the parent lets go."""
    for fd in list(_held):
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_held_in_child)


def _take(got: _Open, key: str) -> int | None:
    """A descriptor holding the build lock of `key`, or None (refused, or waited out)."""
    name = key + LOCK_SUFFIX
    try:
        fd = got.dir.open_lock(name)
    except safedir.Unsafe as e:
        report(("lock", e.cause), f"s2sad: the kernel cache's build lock {e}; it is not used, and a kernel "
               f"another process is compiling may be compiled here too. Other lock files with this problem "
               f"are not reported again.", stacklevel=6)
        return None
    wait = envflags.number("S2SAD_BUILD_WAIT", BUILD_WAIT)
    deadline, pause = time.monotonic() + wait, 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        except OSError:               # (a file system without flock: build without it)
            os.close(fd)
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            os.close(fd)
            report(("lock wait", got.dir.path), f"s2sad: waited {wait:g} s for another process compiling a "
                   f"kernel (its lock {os.path.join(got.dir.path, name)}); compiling it here. "
                   f"S2SAD_BUILD_WAIT sets the wait.", stacklevel=6)
            return None
        time.sleep(min(pause, left))
        pause = min(2 * pause, 0.02)


# ------------------------------------------------------------------ small records

def read_record(name: str) -> dict[str, str] | None:
    """A "name=value" record written by `write_record`, checked like an entry."""
    got = load("rec-" + name)
    if got is None:
        return None
    header, _ = got
    return header


def write_record(name: str, fields: dict[str, str]) -> None:
    store("rec-" + name, [], fields)


# ------------------------------------------------------------------ the host

_CPU_KEYS = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags",
             "cpu implementer", "cpu architecture", "cpu variant", "cpu part", "cpu revision",
             "features", "isa", "uarch")


_cpu: list = []


def _cpuinfo() -> str | None:
    """The first processor's identity and feature flags from /proc/cpuinfo (read once)."""
    if not _cpu:
        _cpu.append(_read_cpuinfo())
    return _cpu[0]


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as /proc/cpuinfo lists them; empty where unknown."""
    for line in (_cpuinfo() or "").splitlines():
        k, _, v = line.partition("=")
        if k in ("flags", "features"):
            return frozenset(v.split())
    return frozenset()


def _read_cpuinfo() -> str | None:
    try:
        with open("/proc/cpuinfo", "rb") as f:
            text = f.read(1 << 16).decode("utf-8", "replace")
    except OSError:
        return None
    out = []
    for line in text.split("\n\n", 1)[0].splitlines():
        k, sep, v = line.partition(":")
        if sep and k.strip().lower() in _CPU_KEYS:
            out.append(k.strip().lower() + "=" + v.strip())
    return "\n".join(out) if out else None


def host_fingerprint() -> str | None:
    """A digest of what LLVM's view of this host (CPU name and features, llvmlite and LLVM
    versions) and libmvec depend on, computed without importing llvmlite; None where it
    cannot be had cheaply (not Linux, no llvmlite)."""
    if not sys.platform.startswith("linux"):
        return None
    cpu = _cpuinfo()
    if cpu is None:
        return None
    mod = sys.modules.get("llvmlite")
    if mod is not None and getattr(mod, "__file__", None):
        pkg = os.path.dirname(mod.__file__)
    else:
        spec = importlib.util.find_spec("llvmlite")
        if spec is None or not spec.submodule_search_locations:
            return None
        pkg = list(spec.submodule_search_locations)[0]
    stats = []
    for sub in ("", "binding"):
        d = os.path.join(pkg, sub)
        try:
            names = sorted(n for n in os.listdir(d)
                           if n.endswith((".so", ".dylib", ".dll", ".pyd")) or n == "_version.py")
        except OSError:
            return None
        for n in names:
            st = os.stat(os.path.join(d, n))
            stats.append(f"{sub}/{n}:{st.st_size}:{st.st_mtime_ns}")
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        libc = ""
    text = "\0".join([str(FORMAT), sys.platform, os.uname().machine, cpu, pkg, *stats, libc])
    return hashlib.sha256(text.encode()).hexdigest()[:32]

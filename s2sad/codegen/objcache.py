"""The disk cache of compiled kernels: one file per kernel, written atomically, checked
before use.

Where: `$S2SAD_CACHE_DIR`, else `~/.cache/s2sad`, created mode 0700. A directory that
another user owns, or that group or others may write, is not used (the cache holds
machine code this process will run): s2sad warns once and compiles in memory.
`S2SAD_CACHE=0` turns the disk cache off.

An entry is named by its key (a sha256 the caller computes over everything that decides
the machine code: see `llvm_jit.disk_key`) and holds

    MAGIC (8 bytes) | sha256 of the body (32 bytes) | body
    body = header length (4 bytes, little-endian) | header | blob | blob | ...

where the header is "name=value" lines (UTF-8) that repeat the key and the format and
give each blob's length. An entry that fails any check (short, wrong magic, wrong
checksum, another key or format) is reported with a `CacheWarning` and never used;
the caller compiles the kernel again and overwrites it. Writers write a private
temporary file in the directory and `os.replace` it into place, so readers see a whole
entry or none, and two processes writing the same entry leave one whole copy.

The host description (`host_fingerprint`) lets a warm process key its kernels without
importing llvmlite: it is cheap to compute and names what LLVM's view of the host
depends on; the LLVM-side facts it maps to are stored next to the entries.
"""
from __future__ import annotations

import hashlib
import os
import sys
import warnings
from pathlib import Path

__all__ = ["CacheWarning", "FORMAT", "directory", "entry_path", "load", "store", "read_record",
           "write_record", "host_fingerprint"]

FORMAT = 1
MAGIC = b"S2SADOB\x01"
SUFFIX = ".s2o"
_HEAD = 8 + 32 + 4


class CacheWarning(RuntimeWarning):
    """A disk cache entry (or the cache directory) could not be used."""


_checked: dict[str, Path | None] = {}


def directory() -> Path | None:
    """The cache directory, created 0700 if missing; None when the cache is off or unusable."""
    if os.environ.get("S2SAD_CACHE", "1").strip() in ("0", "off", "no", "false"):
        return None
    env = os.environ.get("S2SAD_CACHE_DIR", "").strip()
    raw = os.path.abspath(os.path.expanduser(env or os.path.join("~", ".cache", "s2sad")))
    if raw in _checked:
        known = _checked[raw]
        if known is None or os.path.isdir(known):
            return known
    path = Path(raw)
    result: Path | None = path
    try:
        if not path.is_dir():
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                path.mkdir(mode=0o700)
                os.chmod(path, 0o700)             # whatever the umask took away
            except FileExistsError:
                pass
        st = os.stat(path)
        if not path.is_dir():
            raise NotADirectoryError(f"{path} is not a directory")
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise PermissionError(f"{path} belongs to another user")
        if os.name == "posix" and st.st_mode & 0o022:
            raise PermissionError(f"{path} is writable by group or others (mode {st.st_mode & 0o777:o})")
    except OSError as e:
        warnings.warn(f"s2sad: not using the kernel cache directory ({e}); kernels are compiled in "
                      f"memory only. Set S2SAD_CACHE_DIR to a private directory, or S2SAD_CACHE=0.",
                      CacheWarning, stacklevel=4)
        result = None
    _checked[raw] = result
    return result


def entry_path(key: str, where: Path | None = None) -> Path | None:
    d = where or directory()
    return None if d is None else d / (key + SUFFIX)


def _warn(path: Path, why: str) -> None:
    warnings.warn(f"s2sad: the cached kernel {path} is {why}; it is not loaded and will be "
                  f"compiled again", CacheWarning, stacklevel=4)


def load(key: str) -> tuple[dict[str, str], list[bytes]] | None:
    """(header, blobs) of the entry for `key`; None if there is none or it fails a check
    (then with a CacheWarning)."""
    path = entry_path(key)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        _warn(path, f"unreadable ({e})")
        return None
    if len(data) < _HEAD or data[:8] != MAGIC:
        _warn(path, "corrupt (bad header)" if data[:7] == MAGIC[:7] or len(data) < _HEAD
              else "not an s2sad cache entry of this format")
        return None
    body = memoryview(data)[40:]
    if hashlib.sha256(body).digest() != data[8:40]:
        _warn(path, "corrupt (checksum mismatch)")
        return None
    n = int.from_bytes(body[:4], "little")
    try:
        header = dict(line.split("=", 1) for line in bytes(body[4:4 + n]).decode().splitlines())
        sizes = [int(s) for s in header["blobs"].split(",") if s]
    except (UnicodeDecodeError, ValueError, KeyError):
        _warn(path, "corrupt (unreadable header)")
        return None
    if header.get("key") != key or header.get("format") != str(FORMAT):
        _warn(path, "stale (it was written for another key or format)")
        return None
    if 4 + n + sum(sizes) != len(body):
        _warn(path, "corrupt (wrong length)")
        return None
    blobs, pos = [], 4 + n
    for s in sizes:
        blobs.append(bytes(body[pos:pos + s]))
        pos += s
    return header, blobs


_write_failed: set[Path] = set()


def _atomic_write(path: Path, data: bytes) -> bool:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return True
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if path.parent not in _write_failed:       # once per directory, not once per kernel
            _write_failed.add(path.parent)
            warnings.warn(f"s2sad: could not write the kernel cache entry {path} ({e}); kernels "
                          f"are compiled in memory only", CacheWarning, stacklevel=4)
        return False


def store(key: str, blobs: list[bytes], meta: dict[str, str] | None = None) -> Path | None:
    """Write the entry for `key` atomically; its path, or None (cache off, or the write failed)."""
    path = entry_path(key)
    if path is None:
        return None
    fields = {"format": str(FORMAT), "key": key, "blobs": ",".join(str(len(b)) for b in blobs)}
    for k, v in (meta or {}).items():
        fields.setdefault(k, str(v).replace("\n", " "))
    header = "".join(f"{k}={v}\n" for k, v in fields.items()).encode()
    body = len(header).to_bytes(4, "little") + header + b"".join(blobs)
    data = MAGIC + hashlib.sha256(body).digest() + body
    return path if _atomic_write(path, data) else None


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


def _cpuinfo() -> str | None:
    """The first processor's identity and feature flags from /proc/cpuinfo."""
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
        import importlib.util

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

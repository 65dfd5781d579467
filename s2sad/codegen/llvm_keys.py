"""The keys of compiled code: digests of everything that decides the machine code.

`disk_key`: a driver by its IR (the module as lowered); `source_key`: a driver by its
source (the kernel's scalar program and user rules, `KernelSignature.digest`, and
s2sad's own source files, `package_digest`), which a warm start uses without lowering:
lowering is deterministic, so this decides the IR too. Both hold the s2sad version, the
cache format, the optimisation pipeline (`PIPELINE`), llvmlite's and LLVM's versions, the
host's triple, CPU and features, the math mode with the libmvec ISAs, the spec and dtype.

Invariant: importing this module imports neither llvmlite nor an IR writer (a warm start
makes its key: tests/test_cache.py).
"""
from __future__ import annotations

import hashlib
import os
import sys

import numpy as np

from ..kernel import KernelSignature, LoopSpec, ScanSpec
from . import objcache
from .llvm_host import Host, math_mode

__all__ = ["PIPELINE", "disk_key", "package_digest", "source_key"]

# Everything besides the IR and the host that decides the machine code: change it when
# the pipeline or the object loader changes, and old entries are no longer found.
PIPELINE = "new-pm O3 +loop-vectorize +slp-vectorize; codegen O3, reloc pic, small code model; objload 1"


def disk_key(ir: str, spec: LoopSpec | ScanSpec, dtype: np.dtype, vector_math: bool | str,
             isas: tuple[str, ...], h: Host) -> str:
    """The disk cache key: a digest of everything that decides the machine code
    (`vector_math`: the `math_mode`, or a bool as `math_mode` reads it)."""
    version = getattr(sys.modules.get("s2sad"), "__version__", "?")
    mode = math_mode(vector_math)
    parts = [f"s2sad {version}", f"cache format {objcache.FORMAT}", PIPELINE,
             f"llvmlite {h.llvmlite_version}", f"LLVM {h.llvm_version}", h.triple, h.cpu, h.features,
             f"vector math {mode}" + (f" libmvec {'+'.join(isas)}" if mode == "libmvec" and isas else ""),
             repr(spec), dtype.str, ir]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


_digest: list[str] = []


def package_digest() -> str:
    """sha256 of s2sad's own source files: everything that turns a program into machine
    code. Part of `source_key`, so that a changed s2sad never maps what another compiled.
    The digest is kept in the cache directory under the files' sizes and modification
    times (a warm start stats them instead of reading them)."""
    if not _digest:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        files = _source_files(root)       # (relative path, DirEntry), in a fixed order
        stats = hashlib.sha256()
        for rel, entry in files:
            st = entry.stat()
            stats.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        record = "source-" + stats.hexdigest()
        digest = (objcache.read_record(record) or {}).get("digest", "")
        if len(digest) != 64:
            h = hashlib.sha256()
            for rel, entry in files:
                h.update(rel.encode() + b"\0")
                with open(entry.path, "rb") as fh:
                    h.update(fh.read())
            digest = h.hexdigest()
            objcache.write_record(record, {"digest": digest})
        _digest.append(digest)
    return _digest[0]


def _source_files(root: str, rel: str = "") -> list:
    """[(path relative to root, os.DirEntry)] of the .py files under root, in sorted order,
    folders whose names start with "_" or "." left out. (os.scandir's entries stat with
    the folder's handle and the relative paths are joined, not computed: os.walk, stat and
    relpath over the ~240 files took 3 ms of a 10 ms warm start.)"""
    out, folders = [], []
    with os.scandir(os.path.join(root, rel) if rel else root) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.is_dir(follow_symlinks=True):
            if not e.name.startswith(("_", ".")):
                folders.append(e.name)
        elif e.name.endswith(".py"):
            out.append((rel + e.name, e))
    for name in folders:
        out += _source_files(root, rel + name + "/")
    return out


def source_key(sig: KernelSignature, spec: LoopSpec | ScanSpec, dtype: np.dtype, vector_math: bool | str,
               isas: tuple[str, ...], h: Host) -> str:
    """The cache key of a driver by its source: the kernel's (`sig.digest`: its scalar
    program and user rules) and s2sad's (`package_digest`), with all that `disk_key`
    holds besides the IR. Lowering is deterministic, so this decides the IR."""
    version = getattr(sys.modules.get("s2sad"), "__version__", "?")
    mode = math_mode(vector_math)
    parts = ["source", f"s2sad {version}", package_digest(), f"cache format {objcache.FORMAT}", PIPELINE,
             f"llvmlite {h.llvmlite_version}", f"LLVM {h.llvm_version}", h.triple, h.cpu, h.features,
             f"vector math {mode}" + (f" libmvec {'+'.join(isas)}" if mode == "libmvec" and isas else ""),
             repr(spec), dtype.str, sig.name, repr(sig.params), repr(sig.active), sig.digest]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()

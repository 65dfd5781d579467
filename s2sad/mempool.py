"""Warm memory for the arrays s2sad's calls make: a pool handed to numpy as a memory
handler (NEP 49), in force only while an s2sad call runs.

Why: an 8 MB gradient made fresh each call costs about 2,000 page faults (glibc hands
large blocks back to the kernel on free), which at 1M elements is most of a fused
gradient's time; with two threads the faults contend. glibc's `mallopt` or
`GLIBC_TUNABLES` fix it for the whole process, which s2sad must not do to its user.

How: numpy keeps its memory handler in a context variable and every array remembers
the handler that made it, so s2sad sets its handler on entry to a call and restores
the caller's on exit (`scope`): what a call allocates (its outputs, the temporaries of
its generated code) comes from the pool and goes back to it when freed, whenever and
wherever the user drops it; nothing else in the process is touched. The handler's
functions are compiled machine code (codegen/llvm_pool: numpy calls them on every
allocation, a Python callback would cost a microsecond each); large blocks (at least
THRESHOLD bytes) freed are kept, by exact size, and handed out again warm; when the
pool's slots are full or its bytes would pass the cap, the least recently freed blocks
go back to libc to make room (sizes a program stopped using never fill it for good); a
block over the cap alone is libc's, and so is the rest. A block of at least 4 MiB that the pool takes from libc
is advised for transparent huge pages as numpy's own allocator advises its blocks
(Linux, while numpy's `_get_madvise_hugepage()` says so when the pool is made): a
handler in numpy's place would otherwise lose them. Every block the handler hands out, pooled
or libc's, starts on a 64-byte boundary (llvm_pool.ALIGN: the kernels' AVX-512 loads and
stores stay within a cache line).

Environment: S2SAD_POOL=0 turns it off (numpy's own handler throughout);
S2SAD_POOL_MB caps the bytes kept (default 256). The pool is off where numpy has no
handler API (numpy < 1.22) or llvmlite cannot compile it; `stats()` says which.

Invariants: the handler and its state live as long as the process (arrays made under it
may outlive every s2sad object); a block is reused only for a request of the size its
header records; after fork the child's lock is free.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import mmap
import os
import sys
import threading

import numpy as np

from . import envflags
from .codegen import llvm_jit, llvm_pool

ndarray = np.ndarray         # (enter's loop runs on every grad call: a global, not an attribute)
THRESHOLD = 1 << 18          # 256 KiB: below it glibc keeps freed memory itself
NAME = b"s2sad_pool"


class _Handler(ctypes.Structure):
    # numpy's PyDataMem_Handler, version 1 (numpy/ndarraytypes.h)
    _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8), ("ctx", ctypes.c_void_p),
                ("malloc", ctypes.c_void_p), ("calloc", ctypes.c_void_p), ("realloc", ctypes.c_void_p),
                ("free", ctypes.c_void_p)]


_state: dict = {}            # "capsule", "set", "ctx", "keep" once made; "off": why not
_making = threading.Lock()


def _enabled() -> bool:
    return envflags.switch("S2SAD_POOL")


def _cap_bytes() -> int:
    mb = envflags.number("S2SAD_POOL_MB", 256.0)
    return max(0, int(mb * (1 << 20)))


def _set_handler_function():
    """numpy's PyDataMem_SetHandler, from its C API table (slot 304 since numpy 1.22)."""
    api = np._core._multiarray_umath._ARRAY_API if hasattr(np, "_core") else np.core._multiarray_umath._ARRAY_API
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    table = ctypes.cast(get_pointer(api, None), ctypes.POINTER(ctypes.c_void_p))
    return ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(table[304])


def _make() -> None:
    addresses, keep = llvm_jit.pool_code()
    ctx = (ctypes.c_int64 * llvm_pool.CTX_WORDS)()
    ctx[2], ctx[3] = _cap_bytes(), THRESHOLD
    ctx[llvm_pool.HUGE_WORD], ctx[llvm_pool.ADVICE_WORD] = _huge_pages()
    handler = _Handler(NAME, 1, ctypes.addressof(ctx), *(addresses[n] for n in llvm_pool.NAMES))
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = new_capsule(ctypes.addressof(handler), b"mem_handler", None)
    set_handler = _set_handler_function()
    old = set_handler(capsule)
    try:
        probe = np.empty(THRESHOLD // 8)
        ok = np._core.multiarray.get_handler_name(probe) == NAME.decode()
        del probe
    finally:
        set_handler(old)
    if not ok:
        raise RuntimeError("numpy did not take the handler")
    # arrays made under the handler may be freed at any time until the process ends, even
    # after this module's globals are cleared at shutdown: the code, the handler and the
    # pool's state must never be freed, so each gets a reference nothing takes back
    for obj in (keep, handler, ctx, capsule):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    _state.update(capsule=capsule, set=set_handler, ctx=ctx, keep=(keep, handler, addresses))


HUGE_MIN = 1 << 22     # numpy's: a block of at least 4 MiB is advised for huge pages


def _huge_pages() -> tuple[int, int]:
    """(the size from which a block libc gives is advised for transparent huge pages, 0:
    never; madvise's advice) as numpy's own allocator does it: on Linux, while numpy's
    setting says so (`_get_madvise_hugepage`, read when the pool is made; see llvm_pool)."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    core = getattr(np, "_core", None) or np.core
    get = getattr(core.multiarray, "_get_madvise_hugepage", None)
    if advice is None or get is None or not sys.platform.startswith("linux") or not get():
        return 0, 0
    return HUGE_MIN, int(advice)


def _ready() -> bool:
    if "set" in _state:
        return True
    if "off" in _state:
        return False
    with _making:
        if "set" not in _state and "off" not in _state:
            if not _enabled():
                _state["off"] = "S2SAD_POOL=0"
            else:
                try:
                    _make()
                except Exception as e:  # noqa: BLE001 - no pool is numpy's own handler: still right
                    _state["off"] = f"{type(e).__name__}: {e}"
    return "set" in _state


@contextlib.contextmanager
def scope():
    """Within: numpy allocates through s2sad's pool (in this thread's context only)."""
    token = _swap_in()
    try:
        yield
    finally:
        leave(token)


def stats() -> dict:
    """What the pool holds and has done: bytes cached, cap, reuses, misses, evictions,
    the kept blocks' sizes (least recently freed first), or why it is off. Read without
    the pool's lock: exact when no other thread is allocating."""
    if not _ready():
        return {"on": False, "why": _state.get("off", "")}
    ctx = _state["ctx"]
    return {"on": True, "cached_bytes": ctx[1], "cap_bytes": ctx[2], "threshold": ctx[3],
            "reuses": ctx[4], "misses": ctx[5], "evictions": ctx[6], "kept": _kept_sizes(ctx),
            "huge_pages_from": ctx[llvm_pool.HUGE_WORD]}


def _kept_sizes(ctx) -> list[int]:
    """The full slots' sizes, ordered by their stamps (oldest first)."""
    first, width = llvm_pool.FIRST_SLOT, llvm_pool.SLOT_WORDS
    slots = [ctx[first + width * i: first + width * (i + 1)] for i in range(llvm_pool.SLOTS)]
    return [size for _, size in sorted((stamp, size) for ptr, size, stamp in slots if ptr)]


def _unlock_in_child() -> None:
    ctx = _state.get("ctx")
    if ctx is not None:
        ctx[0] = 0


os.register_at_fork(after_in_child=_unlock_in_child)


WORTH = 1 << 15        # an argument of at least 32 KiB: the call's arrays may reach THRESHOLD


def enter(args):
    """The handler to restore (leave), or None: the pool is set for calls given an array
    of at least WORTH bytes (a smaller call allocates below THRESHOLD, where the pool
    would cost its 0.5 us and give nothing)."""
    for a in args:      # (every grad call pays this loop: one type() an argument)
        t = type(a)
        if t is ndarray:
            if a.nbytes >= WORTH:
                break
        elif (t is tuple or t is list) and any(type(b) is ndarray and b.nbytes >= WORTH for b in a):
            break       # jvp's primals, a list of arrays
    else:
        return None
    return _swap_in()


def _swap_in():
    """s2sad's handler set in this context; the one it replaced (for leave), or None
    when the pool is off."""
    if "set" not in _state and not _ready():
        return None
    return _state["set"](_state["capsule"])


def leave(token) -> None:
    if token is not None:
        _state["set"](token)


def pooled(fn):
    """`fn` run with the pool set for its arrays (enter/leave around it)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        token = enter(args)
        try:
            return fn(*args, **kwargs)
        finally:
            leave(token)
    return run

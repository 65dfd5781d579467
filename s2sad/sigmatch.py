"""Compiled signature matchers: `matcher(signature)(*args)` is True exactly when args are
exact ndarrays of that signature (per argument: shape, strides, the very dtype object),
in one call into machine code (codegen/llvm_sigmatch.py) instead of the ~1 us of Python
that reads fifteen attributes, builds a tuple and compares it (five arguments).

array_hot.py asks it first for the signature its hot path answered last.

Invariants: a matcher is never looser than comparing `signature_of(args)` with its
signature (dtype by identity, not equality: a miss is the caller's slower path, never a
wrong answer); it holds the signature's dtype objects alive as long as it lives (its
table holds their addresses); where the layout of this process's objects differs from
the one the code reads (a debug or free-threaded build) or llvmlite cannot compile it,
`matcher` returns None and the caller compares in Python.
"""
from __future__ import annotations

import ctypes
import sys
import sysconfig
import threading
from typing import Any, Callable

import numpy as np

from .codegen import llvm_jit, llvm_launch as launch, llvm_sigmatch as ir

_state: dict = {}
_making = threading.Lock()


def signature_of(args) -> tuple:
    """(shape, strides, dtype) of each argument, laid end to end (array_special's key)."""
    return tuple(x for a in args for x in (a.shape, a.strides, a.dtype))


def _word(address: int, offset: int, ctype=ctypes.c_uint64) -> int:
    return ctype.from_address(address + offset).value


def _layout_ok() -> bool:
    """The fields the matcher reads are where it reads them, on live objects."""
    if sysconfig.get_config_var("Py_GIL_DISABLED") or hasattr(sys, "gettotalrefcount"):
        return False
    a = np.zeros((3, 5), np.float32)[1:, ::2]
    return (_word(id(a), ir.OB_TYPE) == id(np.ndarray) and _word(id(a), ir.ARRAY_DATA) == a.ctypes.data
            and _word(id(a), ir.ARRAY_ND, ctypes.c_int32) == 2 and _word(id(a), ir.ARRAY_DESCR) == id(a.dtype)
            and [_word(_word(id(a), ir.ARRAY_DIMS), 8 * k, ctypes.c_int64) for k in range(2)] == [2, 3]
            and [_word(_word(id(a), ir.ARRAY_STRIDES), 8 * k, ctypes.c_int64) for k in range(2)] == [20, 8])


def _ready() -> bool:
    """The compiled matcher's address, made once a process (False where there is none)."""
    if "ok" not in _state:
        with _making:
            if "ok" not in _state:
                try:
                    ok = _layout_ok() and launch.layout_ok()
                    if ok:
                        address, keep = llvm_jit.small_code(ir.NAME, ir.sigmatch_ir, False)
                        head = [id(np.ndarray), id(True), id(False), launch.incref_address()]
                        _state.update(address=address, keep=keep, head=head)
                except Exception:  # noqa: BLE001 - no compiled matcher: the caller compares in Python
                    ok = False
                _state["ok"] = ok
    return _state["ok"]


def _table(signature: tuple) -> np.ndarray:
    words = list(_state["head"]) + [len(signature) // 3]
    for k in range(0, len(signature), 3):
        shape, strides, dtype = signature[k:k + 3]
        words += [id(dtype), len(shape), *shape, *strides]
    return np.array([w & 0xFFFFFFFFFFFFFFFF for w in words], dtype=np.uint64)


class _Holder:
    """What a matcher's table points at, kept alive with it."""
    __slots__ = ("signature",)

    def __init__(self, signature: tuple):
        self.signature = signature


def matcher(signature: tuple) -> Callable[..., bool] | None:
    """match(*args) -> whether args are exact ndarrays of `signature` (signature_of's
    tuple), or None where no matcher can be compiled."""
    if not _ready():
        return None
    # (the function's module slot holds the signature, so its dtypes live as long as it)
    return launch.fastcall_function(ir.NAME, _state["address"], _state["keep"], _table(signature),
                                    _Holder(signature))


def python_matcher(signature: tuple) -> Callable[..., Any]:
    """The same test in Python (where there is no compiled matcher)."""
    def match(*args) -> bool:
        return all(type(a) is np.ndarray for a in args) and signature_of(args) == signature
    return match


MAX_CACHED = 256
_cache: dict = {}


def never(*args) -> bool:
    """The matcher of no signature."""
    return False


def cached(signature: tuple) -> Callable[..., Any]:
    """The matcher of `signature` (compiled, else Python's), made once while cached (at
    most MAX_CACHED signatures; a hot path asks it when its last signature changes)."""
    m = _cache.get(signature)
    if m is None:
        m = matcher(signature) or python_matcher(signature)
        if len(_cache) >= MAX_CACHED:
            _cache.clear()
        _cache[signature] = m
    return m

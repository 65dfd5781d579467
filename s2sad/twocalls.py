"""Two independent calls of a generated program run side by side, one thread each.

Forward over reverse (passes/hvp_sweep.py) makes products in pairs that read the same
operands and not each other's results: `X @ W1` and its tangent `X @ W1_dot`, the
adjoint `X.T @ z_bar` and its tangent `X.T @ z_bar_dot`, a kernel's pass and its pair
kernel's pass (hvp_columns). Each of them alone splits its rows between threads poorly
or not at all (a product with 32 rows and 10,000 inner terms is one tile's work), so the
pair, one call on each of two threads, is the better split where two cores are free.

Which of the two is faster, the calls one after the other (each splitting itself as its
own chooser decides) or side by side (each on one thread, `threads.one_thread`), a
`ThreadChooser` per kind of pair decides by timing them (threadchoice.py), unless
S2SAD_NUM_THREADS or `one_thread` forces a count.

Invariants:
- The results, and the exception raised, are the ones the two calls made one after the
  other give: each call computes the same numbers on any number of threads (gemm's and
  the kernels' chunks depend on the sizes only), and where both raise, the first's is
  raised.
- The first call of a kind runs them one after the other, untimed: a first call may
  compile code (an LLVM module, a kernel's kept launch), which is never done on two
  threads at once.
- Only numpy arrays and Python scalars go side by side: another array module's calls
  (cupy's streams) run one after the other.
"""
from __future__ import annotations

import contextvars
from typing import Any, Callable, Hashable

import numpy as np

from .locks import ForkSafeLock
from .threadchoice import ThreadChooser
from .threads import one_thread, run_chunks

MAX_KINDS = 256              # choosers kept; past it they are dropped and measured afresh
_CHOOSERS: dict = {}         # kind -> ThreadChooser (absent: its first call has not run)
_LOCK = ForkSafeLock()


def both(f: Callable, first: tuple, second: tuple):
    """(f(*first), f(*second)), side by side where that is faster: the form the
    forward-over-reverse program calls for two products (`_1, _1_dot = both(matmul,
    (X, W1), (X, W1_dot))`)."""
    kind = _kind(f, first, second)
    if kind is None:
        return f(*first), f(*second)
    return two_calls(kind, lambda: f(*first), lambda: f(*second), _work(first, second))


def two_calls(kind: Hashable, first: Callable[[], Any], second: Callable[[], Any], work: int):
    """(first(), second()) for two calls that share nothing they write: side by side on
    two threads or one after the other, as the chooser of `kind` (its shapes, its
    functions) decides; `work` sizes the call for the chooser (elements or multiply-adds)."""
    with _LOCK:
        chooser = _CHOOSERS.get(kind)
        if chooser is None:
            if len(_CHOOSERS) >= MAX_KINDS:
                _CHOOSERS.clear()
            _CHOOSERS[kind] = ThreadChooser()
    if chooser is None:        # its first call: one after the other (it may compile)
        return first(), second()
    got: list = [None, None]
    calls = (first, second)

    def run(count: int) -> None:
        if count <= 1:
            got[0], got[1] = first(), second()
            return
        errors: list = [None, None]
        # each call in a copy of the caller's context: numpy's memory handler is a context
        # variable (mempool's warm memory for the arrays the call makes, on a pool thread too)
        contexts = (contextvars.copy_context(), contextvars.copy_context())

        def one(i: int) -> None:
            try:
                got[i] = contexts[i].run(_alone, calls[i])
            except BaseException as e:      # noqa: BLE001 - raised below, the first call's first
                errors[i] = e
        run_chunks(one, 2, 2)
        for e in errors:
            if e is not None:
                raise e

    chooser.run(max(int(work), 1), run)
    return got[0], got[1]


def _alone(call: Callable[[], Any]):
    with one_thread():
        return call()


def _kind(f: Callable, first: tuple, second: tuple):
    """What identifies a pair of calls of f for its chooser: f and each argument's
    shape and dtype (a scalar's type); None where something other than numpy arrays and
    scalars is passed (those run one after the other)."""
    parts: list = [f]
    for a in (*first, None, *second):
        if type(a) is np.ndarray:
            parts.append((a.shape, a.dtype.str))
        elif a is None or isinstance(a, (bool, int, float)):
            parts.append(type(a))
        else:
            return None
    return tuple(parts)


def _work(first: tuple, second: tuple) -> int:
    return sum(a.size for a in (*first, *second) if type(a) is np.ndarray)


def choices() -> dict:
    """{kind: {size class: settled count}}: for tests and explain."""
    with _LOCK:
        kept = dict(_CHOOSERS)
    return {k: c.choices() for k, c in kept.items()}

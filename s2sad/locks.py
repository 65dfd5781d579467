"""Locks that a forked child can take.

A child forked while another thread of the parent held a lock inherits it held, by a
thread that does not exist there, and waits for it forever (a plan made in one thread
while `multiprocessing` forks from another). `ForkSafeLock` is a lock or re-entrant
lock that every forked child gets anew (os.register_at_fork). Only the child's copy
is renewed: what the lock guarded was left as the other thread had it, which is why
s2sad's locks guard caches that are filled only once their entry is whole.
"""
from __future__ import annotations

import os
import threading
import weakref


class ForkSafeLock:
    """threading.Lock (or RLock with reentrant=True), renewed in a forked child."""

    __slots__ = ("_make", "_lock", "__weakref__")

    def __init__(self, reentrant: bool = False) -> None:
        self._make = threading.RLock if reentrant else threading.Lock
        self._lock = self._make()
        _ALL.add(self)

    def __enter__(self):
        return self._lock.__enter__()

    def __exit__(self, *exc):
        return self._lock.__exit__(*exc)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def renew(self) -> None:
        self._lock = self._make()


_ALL: "weakref.WeakSet[ForkSafeLock]" = weakref.WeakSet()


def _renew_all_in_child() -> None:
    for lock in list(_ALL):
        lock.renew()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_all_in_child)


# one lock for planning and for every parse of Python text (parsing.py says why)
PARSING = ForkSafeLock(reentrant=True)

"""How many threads a large call runs on: chosen by timing the calls themselves.

A fixed size threshold cannot be right on every machine and every load (measured: on a
2-core machine whose other core was busy, 2 threads were 1.0-1.7x slower than 1 on every
row from 200,000 to 4M elements; on an idle one they are up to 2x faster). So each
compiled kernel signature keeps a `ThreadChooser`, and it one `Bucket` per size class
(log2 of the element count), which times the calls it serves:

- probing: the calls alternate one thread and N (`threads.default_threads()`), PROBES of
  each, every call timed (perf_counter_ns around it) per element, since a bucket spans
  sizes a factor 2 apart;
- settled: N when its median time per element was at least MARGIN below one thread's,
  else one thread (a tie goes to one thread: the default is never slower than it);
- re-probing after REPROBE_EVERY settled calls, or after SLOW_STRIKES calls in a row
  that took SLOW_FACTOR times the settled time per element, so that a machine that
  becomes busy (or free) is followed.

Invariants:
- S2SAD_NUM_THREADS set: that count, every call, nothing timed (`threads.forced_threads`).
- The choice says which threads run a call's chunks, never what the chunks are (the
  callers cut them by the size alone): results never depend on it.
- Thread-safe: a bucket's state changes only under its chooser's lock, which is never
  held while a call runs; concurrent calls may probe at once, each records its own time.
- The clock is a constructor argument: tests drive the logic with a fake one.
"""
from __future__ import annotations

import time
from typing import Callable

from .locks import ForkSafeLock
from .threads import default_threads, forced_threads

PROBES = 3              # timed calls of each count before settling
MARGIN = 0.05           # N threads must be this much faster per element than one
REPROBE_EVERY = 256     # settled calls between two probes
SLOW_FACTOR = 2.0       # a call this much slower than the settled time is a strike
SLOW_STRIKES = 2        # strikes in a row that start a new probe


class Bucket:
    """One size class of one kernel signature: its probe samples and its choice."""

    __slots__ = ("most", "samples", "choice", "expected", "calls", "strikes")

    def __init__(self, most: int) -> None:
        self.most = most
        self.probe()

    def probe(self) -> None:
        """Start (again) measuring: no choice until both counts have PROBES samples."""
        self.samples: dict[int, list[float]] = {1: [], self.most: []}
        self.choice = 0
        self.expected = 0.0
        self.calls = 0
        self.strikes = 0

    def next_count(self) -> int:
        """The thread count for the next call: the settled choice, or while probing the
        count with fewer samples (one thread first)."""
        if self.choice:
            return self.choice
        ones, many = len(self.samples[1]), len(self.samples[self.most])
        return 1 if ones <= many else self.most

    def record(self, count: int, per_element: float) -> None:
        """A call on `count` threads took `per_element` (clock units per element)."""
        if not self.choice:
            if count in self.samples:
                self.samples[count].append(per_element)
                self._settle_if_measured()
            return
        if count != self.choice:       # a call that started before the choice changed
            return
        self.calls += 1
        self.strikes = self.strikes + 1 if per_element > SLOW_FACTOR * self.expected else 0
        if self.calls >= REPROBE_EVERY or self.strikes >= SLOW_STRIKES:
            self.probe()

    def _settle_if_measured(self) -> None:
        one, many = self.samples[1], self.samples[self.most]
        if len(one) < PROBES or len(many) < PROBES:
            return
        t_one, t_many = _median(one), _median(many)
        if t_many < (1.0 - MARGIN) * t_one:
            self.choice, self.expected = self.most, t_many
        else:
            self.choice, self.expected = 1, t_one


def _median(values: list[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else 0.5 * (s[mid - 1] + s[mid])


def size_class(n: int) -> int:
    """The bucket of a call on n elements: floor(log2(n))."""
    return n.bit_length() - 1


class ThreadChooser:
    """The thread counts of one kernel signature's large calls (see the module docstring)."""

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns) -> None:
        self.clock = clock
        self.lock = ForkSafeLock()
        self.buckets: dict[int, Bucket] = {}

    def run(self, n: int, work: Callable[[int], None]) -> int:
        """work(count) for a call on n elements, with the count chosen here (timed and
        recorded unless S2SAD_NUM_THREADS forces it). Returns the count used."""
        forced = forced_threads()
        if forced is not None:
            work(forced)
            return forced
        most = default_threads()     # what num_threads() is when nothing forces it
        if most <= 1:
            work(1)
            return 1
        with self.lock:
            bucket = self._bucket(n, most)
            count = bucket.next_count()
        t0 = self.clock()
        work(count)
        elapsed = self.clock() - t0
        with self.lock:
            bucket.record(count, elapsed / n)
        return count

    def _bucket(self, n: int, most: int) -> Bucket:
        key = size_class(n)
        b = self.buckets.get(key)
        if b is None or b.most != most:     # the default count changed: measure afresh
            b = self.buckets[key] = Bucket(most)
        return b

    def choices(self) -> dict[int, int]:
        """{size class: settled count} (0 while probing): for tests and explain."""
        with self.lock:
            return {k: b.choice for k, b in self.buckets.items()}

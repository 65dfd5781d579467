"""How many threads a large call runs on: chosen by timing the calls themselves.

A fixed size threshold cannot be right on every machine and every load (measured: on a
2-core machine whose other core was busy, 2 threads were 1.0-1.7x slower than 1 on every
row from 200,000 to 4M elements; on an idle one they are up to 2x faster). So each
compiled kernel signature keeps a `ThreadChooser`, which keeps one `Bucket` per size class
(log2 of the element count), which times the calls it serves:

- probing: the calls alternate one thread and N (`threads.default_threads()`), a warm-up
  and PROBES timed calls of each (perf_counter_ns around the call), per element, since
  a bucket spans sizes a factor 2 apart;
- settled: N when its mean time per element was at least MARGIN below one thread's,
  else one thread (a tie goes to one thread: the default is never slower than it). The
  mean, not the median: on a loaded machine N threads are often fast and sometimes 10x
  slow (a pool thread waits for the scheduler), and the user pays the mean. A call on
  N threads (a warm-up too) GIVE_UP times one thread's ends the probe at once: one
  thread (on a 2-core machine whose other core is busy, that is the first call on 2);
- re-probing after REPROBE_EVERY settled calls (doubled, up to REPROBE_MAX, each time a
  probe confirms the choice before it: a machine that stays busy pays for few probes),
  and, settled on N, as soon as a running mean of the calls (weight SMOOTHING each) is
  SLOW_FACTOR times the probe's: a machine that becomes busy (or free) is followed;
- a choice of one thread that was close (N threads' time under 1 + CLOSE times one's,
  at a probe or at a check) re-probed after REPROBE_CLOSE calls instead (doubled up to
  REPROBE_EVERY): there a probe's calls on N threads cost about what one thread's do,
  and the machine is on an edge where a spell of other work decides. (Measured, the
  MLP3's whole-gradient choice on the busy znver5: a probe that read 2 threads 8%
  slower than one kept one thread for 768 calls at 6.5-8.4 ms a call, where two took
  5.6-6.1 ms before and after.)
- settled on N, a call now and then on one thread (every CHECK_FIRST-th, then every 2x
  as many up to CHECK_MAX while N stays faster): three calls of each may have been
  unlucky, and a wrong N on a busy machine costs far more than a check. One thread
  as fast as N's running mean: a probe again (one call against a running mean is too
  little to settle on). (Settled on one thread there is no
  such check: a call on N threads is the one that can cost 10x; the periodic probe looks.)

Measured and rejected (session 19, the znver5): a longer probe for a whole call
(one_count_for_all): six timed calls of each count, each count's mean without its
slowest, and GIVE_UP only after two timed calls on N both that slow (never a warm-up:
the probe above compares N's first call, its warm-up, with one thread's). A model of
the host's hiccups (one call in a few 2-5x its neighbours) settles this probe on N
where the one above settles on one thread; but on the MLP3's gradient at 10k rows, two
grads alternated call by call in one process for 40 s, three times, the one above ran
3-6% of its calls on one thread and the longer probe 5-7% (its probes cost more calls),
at 1.004-1.007x the mean time. So the stretches seen in lone processes the same
morning (one thread for 33-129 calls at a time, 20% of a 12 s loop's calls, at 1.37x
two threads' median over the run; all of another loop's, under perf) were not the
probe's three samples; perhaps the host giving the second vCPU less then (not
measured: those calls ran on one thread).

A call during which s2sad loaded or compiled code (codegen/objcache.NEEDED moved) is not
a sample: with a fresh disk cache the MLP3's first calls on two threads compiled the loop
server's and the served passes' code (11-21 ms against 9.5 on one thread), and the
gradient settled on one thread for 256 calls (session 20).

Invariants:
- S2SAD_NUM_THREADS set: that count, every call, nothing timed (`threads.forced_threads`).
- The choice says which threads run a call's chunks, never what the chunks are (the
  callers cut them by the size alone): results never depend on it.
- Thread-safe: a bucket's state changes only under its chooser's lock, which is never
  held while a call runs; concurrent calls may probe at once, each records its own time.
- The clock is a constructor argument: tests drive the logic with a fake one.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from . import loopserver
from .codegen.objcache import NEEDED
from .locks import ForkSafeLock
from .threads import all_calls_on, default_threads, forced_threads

WHOLE_MIN = 1 << 16     # a call's largest argument, in elements, from which its passes may be threaded
PROBES = 3              # timed calls of each count that decide, after one warm-up call each
MARGIN = 0.05           # N threads must be this much faster per element than one
GIVE_UP = 2.0           # a call on N threads this much slower than one thread's: one it is
REPROBE_EVERY = 256     # settled calls before the next probe...
REPROBE_MAX = 4096      # ...doubled, up to this, each time a probe confirms the choice before
CLOSE = 0.25            # one thread chosen with N this close (N's time under (1 + CLOSE) x one's)...
REPROBE_CLOSE = 32      # ...is probed again after this many calls (doubled up to REPROBE_EVERY)
SLOW_FACTOR = 1.5       # on N threads, a running mean this far over the probe's: probe again
SMOOTHING = 0.125       # weight of a call in that running mean
CHECK_FIRST = 8         # settled on N threads, every CHECK_FIRST-th call runs on one...
CHECK_MAX = 128         # ...then every 2x as many, up to this, while N stays faster


class Bucket:
    """One size class of one kernel signature: its probe samples and its choice."""

    __slots__ = ("most", "samples", "choice", "expected", "recent", "calls", "interval", "previous",
                 "check_every", "until_check", "one_recent")

    def __init__(self, most: int) -> None:
        self.most = most
        self.interval = REPROBE_EVERY
        self.choice = 0
        self.probe()

    def probe(self) -> None:
        """Start (again) measuring: no choice until both counts have 1 + PROBES samples."""
        self.samples: dict[int, list[float]] = {1: [], self.most: []}
        self.previous, self.choice = self.choice, 0
        self.expected = self.recent = self.one_recent = 0.0
        self.calls = 0

    def next_count(self) -> int:
        """The thread count for the next call: the settled choice (on N threads, now and
        then one, to check), or while probing the count with fewer samples (one first)."""
        if self.choice == 1:
            return 1
        if self.choice:
            self.until_check -= 1
            if self.until_check <= 0:
                self.until_check = self.check_every
                return 1
            return self.choice
        ones, many = len(self.samples[1]), len(self.samples[self.most])
        return 1 if ones <= many else self.most

    def record(self, count: int, per_element: float) -> None:
        """A call on `count` threads took `per_element` (clock units per element)."""
        if not self.choice:
            if count in self.samples:
                self.samples[count].append(per_element)
                self._settle_if_measured()
        elif count == 1 and self.choice != 1:
            self._checked(per_element)
        elif count == self.choice:     # (not: a call that started before the choice changed)
            self._settled_call(per_element)

    def count_call(self) -> None:
        """A call settled on one thread: its time is not needed (nothing but the periodic
        probe looks again), so it is not taken (~2 us a call, on calls of ~40 us)."""
        self.calls += 1
        if self.calls >= self.interval:
            self.probe()

    def _settled_call(self, per_element: float) -> None:
        self.calls += 1
        self.recent += SMOOTHING * (per_element - self.recent)
        # one thread slower than it was means a busy machine, where threads help less
        # still: only the periodic probe looks again
        slow = self.choice != 1 and self.recent > SLOW_FACTOR * self.expected
        if self.calls >= self.interval or slow:
            self.probe()

    def _checked(self, one: float) -> None:
        """Settled on N threads, a call on one took `one`: the probe's verdict (3 calls of
        each, on a machine whose load changes) is kept only while it holds. One thread
        as fast starts a probe rather than settling on one thread: a check is one call,
        set against N's running mean, which a spell of other work inflates. (Measured,
        the MLP3 gradient at 10k rows beside JAX's process on the busy znver5: checks
        flipped the choice to one thread for 32-256 calls at a time, 1.45x two threads'
        time, in half the calls.)"""
        self.one_recent = one if not self.one_recent else 0.5 * (self.one_recent + one)
        if self.recent >= (1.0 - MARGIN) * self.one_recent:
            self.probe()
        else:
            self.check_every = self.until_check = min(2 * self.check_every, CHECK_MAX)

    def _settle_if_measured(self) -> None:
        one, many = self.samples[1], self.samples[self.most]
        if one and many:
            ref = _mean(one[1:]) if len(one) > 1 else one[0]
            if many[-1] > GIVE_UP * ref:           # more calls on N threads would only cost
                self._settle(1, ref)
                return
        if len(one) <= PROBES or len(many) <= PROBES:
            return
        # the mean, which is what the calls cost (2 threads on a loaded machine are often
        # fast and sometimes 10x slow); the first call of each, a warm-up, left out
        t_one, t_many = _mean(one[1:]), _mean(many[1:])
        if t_many < (1.0 - MARGIN) * t_one:
            self._settle(self.most, t_many)
        else:
            self._settle(1, t_one, close=t_many < (1.0 + CLOSE) * t_one)

    def _settle(self, choice: int, expected: float, close: bool = False) -> None:
        confirmed = choice == self.previous
        first, most = (REPROBE_CLOSE, REPROBE_EVERY) if close else (REPROBE_EVERY, REPROBE_MAX)
        self.interval = min(2 * self.interval, most) if confirmed else first
        self.choice, self.expected, self.recent = choice, expected, expected
        self.calls = 0
        self.check_every = self.until_check = CHECK_FIRST
        self.one_recent = 0.0


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def size_class(n: int) -> int:
    """The bucket of a call on n elements: floor(log2(n))."""
    return n.bit_length() - 1


class _Reached(threading.local):
    n = 0


_REACHED = _Reached()


def block_passes_reached() -> int:
    """How many calls on this thread have reached the chooser of a block pass (a
    ThreadChooser made with `block_pass`: gemm_epilogue's, whose passes read the rows
    the pass before wrote): a caller reads it before and after a call to know whether
    any part of it was one."""
    return _REACHED.n


class ThreadChooser:
    """The thread counts of one kernel signature's large calls (see the module docstring)."""

    def __init__(self, clock: Callable[[], int] = time.perf_counter_ns, block_pass: bool = False) -> None:
        self.clock = clock
        self.block_pass = block_pass
        self.lock = ForkSafeLock()
        self.buckets: dict[int, Bucket] = {}

    def run(self, n: int, work: Callable[[int], None]) -> int:
        """work(count) for a call on n elements, with the count chosen here (timed and
        recorded unless S2SAD_NUM_THREADS forces it). Returns the count used."""
        if self.block_pass:
            _REACHED.n += 1
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
            untimed = bucket.choice == 1       # settled on one thread: only counted (see Bucket.count_call)
            if untimed:
                bucket.count_call()
        if untimed:
            work(1)
            return 1
        made = NEEDED[0]
        t0 = self.clock()
        work(count)
        elapsed = self.clock() - t0
        if NEEDED[0] != made:       # code loaded or compiled during the call: its time is not the count's
            return count
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


class Choosers:
    """A ThreadChooser per key (a kernel's signature, a product's dtype and width), made
    on first use; two threads meeting a new key keep one (dict.setdefault)."""

    def __init__(self, block_pass: bool = False) -> None:
        self._by_key: dict = {}
        self.block_pass = block_pass

    def of(self, key) -> ThreadChooser:
        chooser = self._by_key.get(key)
        return chooser if chooser is not None else \
            self._by_key.setdefault(key, ThreadChooser(block_pass=self.block_pass))


def one_count_for_all(run: Callable, elements: int, clock: Callable[[], int] = time.perf_counter_ns) -> Callable:
    """run, each call of it on one thread count for all the calls it makes, that count
    chosen by a ThreadChooser of its own timing the whole call; run itself where its
    largest argument (`elements`) is below WHOLE_MIN (none of its passes is split). The
    caller wraps only a run with a block pass large enough to be split
    (`block_passes_reached`): a 10k-row logistic regression, none of whose passes
    splits, paid 10-15% for the wrapper and its probes; a softmax cross-entropy at 100k
    rows (a product, then the row pass), 1.05x its per-pass choosers' time on this busy
    znver5 (its row pass paid on two threads where its products did not).

    For a gradient's specialised copy (array_special): its passes read rows the pass
    before wrote, so whether a pass pays on two threads depends on where the one before
    left those rows (one core's cache or both). Each pass's own chooser timed it amid
    passes on other counts: at the MLP3's 10k rows three of its four block passes
    settled on one thread, 6.4-7.3 ms a gradient, where all on two took 5.0 ms (one
    thread: 6.9). Timed whole, the choice is the gradient's."""
    if elements < WHOLE_MIN:
        return run
    chooser = ThreadChooser(clock)

    def whole(*args):
        out = []

        def work(count: int) -> None:
            # (on two threads: the last call's server, parked, spins again for the first split;
            # it parks again at the call's end)
            with all_calls_on(count), loopserver.allowing(), loopserver.in_call(count):
                out.append(run(*args))
        chooser.run(elements, work)
        return out[0]
    whole.chooser, whole.__wrapped__ = chooser, run
    return whole

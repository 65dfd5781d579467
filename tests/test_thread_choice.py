"""The thread count of a large call chosen by timing (threadchoice.py), and results that do
not depend on it (fastpath.chunks_of cuts by the size alone).

The chooser's logic is driven by a fake clock that advances by a cost per element per
thread count: nothing here depends on how fast this machine is."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import s2sad
from s2sad import fastpath, gemm, threadchoice
from s2sad.threadchoice import (CHECK_FIRST, CHECK_MAX, CLOSE, GIVE_UP, MARGIN, PROBES, REPROBE_CLOSE, REPROBE_EVERY,
                                REPROBE_MAX, SLOW_FACTOR, ThreadChooser, size_class)

ROUND = 2 * (PROBES + 1)      # a probe's calls: a warm-up and PROBES timed calls of each count


class FakeClock:
    """A clock that a call on t threads over n elements advances by cost[t] * n."""

    def __init__(self, cost: dict[int, float]) -> None:
        self.now = 0
        self.cost = dict(cost)
        self.counts: list[int] = []

    def __call__(self) -> int:
        return self.now

    def work(self, n: int):
        def run(t: int) -> None:
            self.counts.append(t)
            self.now += int(self.cost[t] * n)
        return run


@pytest.fixture
def four_cores(monkeypatch):
    """The chooser sees 4 cores and no S2SAD_NUM_THREADS."""
    monkeypatch.delenv("S2SAD_NUM_THREADS", raising=False)
    monkeypatch.setattr(threadchoice, "default_threads", lambda: 4)


def calls(chooser: ThreadChooser, clock: FakeClock, n: int, k: int) -> list[int]:
    before = len(clock.counts)
    for _ in range(k):
        chooser.run(n, clock.work(n))
    return clock.counts[before:]


def settle(chooser: ThreadChooser, clock: FakeClock, n: int) -> list[int]:
    """Calls until n's size class has a choice: the counts they ran on."""
    out: list[int] = []
    while not chooser.choices().get(size_class(n)):
        out += calls(chooser, clock, n, 1)
        assert len(out) <= ROUND
    return out


def settled_on(counts: list[int], count: int) -> bool:
    """The calls ran on `count`, but for the checks on one thread that a choice of N
    threads makes now and then (at most every CHECK_FIRST-th call)."""
    if count == 1:
        return counts == [1] * len(counts)
    checks = counts.count(1)
    return set(counts) <= {1, count} and checks <= len(counts) // CHECK_FIRST + 1


# ------------------------------------------------------------------ the choice

@pytest.mark.parametrize("one, many, chosen", [(10.0, 4.0, 4),        # threads pay
                                               (10.0, 10.0, 1),       # a tie: one thread
                                               (10.0, 10.0 * (1 - MARGIN / 2), 1),   # within the margin
                                               (10.0, 1.5 * 10.0, 1)])   # threads cost (a busy machine)
def test_probes_alternate_then_the_faster_count_is_kept(four_cores, one, many, chosen):
    clock = FakeClock({1: one, 4: many})
    chooser = ThreadChooser(clock)
    assert settle(chooser, clock, 500_000) == [1, 4] * (PROBES + 1)
    assert chooser.choices() == {size_class(500_000): chosen}
    assert settled_on(calls(chooser, clock, 500_000, REPROBE_CLOSE - 1), chosen)     # (a close one: probed again then)
    assert chooser.choices() == {size_class(500_000): chosen}


@pytest.mark.parametrize("many", [10.0, 10.0 * (1 + CLOSE / 2)])     # a tie; threads a little slower
def test_a_close_choice_of_one_thread_is_probed_again_soon(four_cores, many):
    """One thread chosen by a hair: the next probe comes after REPROBE_CLOSE calls (its
    calls on N threads cost about what one thread's do), doubled while confirmed, up to
    REPROBE_EVERY; a machine that frees its cores then is followed within that."""
    clock = FakeClock({1: 10.0, 4: many})
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    bucket = chooser.buckets[size_class(500_000)]
    intervals = []
    for _ in range(5):
        intervals.append(bucket.interval)
        assert calls(chooser, clock, 500_000, bucket.interval) == [1] * bucket.interval
        assert settle(chooser, clock, 500_000) == [1, 4] * (PROBES + 1)
    assert intervals == [min(REPROBE_CLOSE << k, REPROBE_EVERY) for k in range(5)]
    clock.cost[4] = 4.0                       # the other cores free now
    calls(chooser, clock, 500_000, bucket.interval)
    settle(chooser, clock, 500_000)
    assert chooser.choices() == {size_class(500_000): 4}


def test_a_clear_choice_of_one_thread_waits_the_full_interval(four_cores):
    """N threads more than CLOSE slower: a probe costs, so the next one is REPROBE_EVERY
    calls away, as before."""
    clock = FakeClock({1: 10.0, 4: 10.0 * (1 + 2 * CLOSE)})
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    assert chooser.buckets[size_class(500_000)].interval == REPROBE_EVERY


def test_one_thread_found_as_fast_at_a_check_is_probed_again_soon(four_cores):
    """Settled on N, a check on one thread as fast as N's running mean: a probe at once;
    it finds one thread as fast (a close call): one thread, probed again after
    REPROBE_CLOSE calls."""
    clock = FakeClock({1: 10.0, 4: 6.0})
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    clock.cost = {1: 6.0, 4: 6.0}
    calls(chooser, clock, 500_000, CHECK_FIRST)
    assert chooser.choices() == {size_class(500_000): 0}          # probing
    assert settle(chooser, clock, 500_000) == [1, 4] * (PROBES + 1)
    bucket = chooser.buckets[size_class(500_000)]
    assert chooser.choices() == {size_class(500_000): 1} and bucket.interval == REPROBE_CLOSE


def test_a_lucky_check_on_one_thread_does_not_settle_on_it(four_cores):
    """Settled on 4, N's running mean raised by a spell of slower calls and one lucky
    call on one thread at the check: the probe that follows, in turn on each count,
    keeps 4 (a check alone would have run 32 or more calls on one thread at 2.5x)."""
    clock = FakeClock({1: 10.0, 4: 4.0})
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    clock.cost[4] = 5.9                     # (under SLOW_FACTOR x the probe's: no probe for it)
    assert calls(chooser, clock, 500_000, CHECK_FIRST - 1) == [4] * (CHECK_FIRST - 1)
    clock.cost[1] = 5.0
    assert calls(chooser, clock, 500_000, 1) == [1]               # the check
    clock.cost = {1: 10.0, 4: 4.0}
    assert settle(chooser, clock, 500_000) == [1, 4] * (PROBES + 1)
    assert chooser.choices() == {size_class(500_000): 4}


@pytest.mark.parametrize("warm_up, timed, seen", [(GIVE_UP * 10.0 + 1.0, 4.0, [1, 4]),            # the warm-up
                                                  (4.0, GIVE_UP * 10.0 + 1.0, [1, 4, 1, 4])])     # a timed call
def test_threads_much_slower_end_the_probe_at_once(four_cores, warm_up, timed, seen):
    clock = FakeClock({1: 10.0, 4: warm_up})
    chooser = ThreadChooser(clock)
    calls(chooser, clock, 500_000, 2)
    clock.cost[4] = timed
    assert clock.counts[:2] + settle(chooser, clock, 500_000) == seen
    assert chooser.choices() == {size_class(500_000): 1}


def test_a_call_that_made_code_is_not_a_sample(four_cores):
    """A call during which s2sad loaded or compiled code (objcache.NEEDED moved: a fresh
    disk cache, the first calls on N threads compiling the pool's serving code) is left
    out: here the calls on 4 threads that compile are 50x slow, and counting them would
    choose one thread (and keep it for REPROBE_EVERY calls)."""
    from s2sad.codegen import objcache
    clock = FakeClock({1: 10.0, 4: 4.0})
    chooser = ThreadChooser(clock)
    compiling = [3]                           # the first three calls on 4 threads compile

    def work(t: int) -> None:
        if t == 4 and compiling[0]:
            compiling[0] -= 1
            objcache.NEEDED[0] += 1
            clock.now += int(200.0 * 500_000)
        clock.work(500_000)(t)
    for _ in range(ROUND + 3):
        chooser.run(500_000, work)
    assert compiling[0] == 0 and chooser.choices() == {size_class(500_000): 4}


def test_the_warm_up_calls_are_left_out(four_cores):
    """The first call of each count (fresh memory, the pool's start) is not counted: here
    one thread's first call is slow, and counting it would choose the threads."""
    clock = FakeClock({1: 1000.0, 4: 20.0})
    chooser = ThreadChooser(clock)
    calls(chooser, clock, 500_000, 1)
    clock.cost[1] = 10.0
    calls(chooser, clock, 500_000, 1)
    clock.cost[4] = 12.0
    assert settle(chooser, clock, 500_000) == [1, 4] * PROBES
    assert chooser.choices() == {size_class(500_000): 1}


def test_the_mean_decides_not_the_median(four_cores):
    """Threads often fast and sometimes slow (a loaded machine): they lose on average."""
    clock = FakeClock({1: 10.0, 4: 6.0})
    chooser = ThreadChooser(clock)
    for i in range(ROUND):
        clock.cost[4] = 19.0 if i == ROUND - 1 else 6.0     # the last timed call on 4 threads
        chooser.run(500_000, clock.work(500_000))
    assert chooser.choices() == {size_class(500_000): 1}     # median 6, mean (6 + 6 + 19) / 3 > 10


def test_sizes_in_one_class_are_compared_per_element(four_cores):
    """A bucket spans a factor 2 of sizes: a larger call is not held against its count."""
    clock = FakeClock({1: 10.0, 4: 6.0})
    chooser = ThreadChooser(clock)
    for _ in range(PROBES + 1):
        chooser.run(600_000, clock.work(600_000))       # one thread, on the smaller size
        chooser.run(1_000_000, clock.work(1_000_000))   # four, on the larger
    assert size_class(600_000) == size_class(1_000_000)
    assert chooser.choices() == {size_class(600_000): 4}


def test_each_size_class_chooses_for_itself(four_cores):
    clock = FakeClock({1: 10.0, 4: 4.0})
    chooser = ThreadChooser(clock)
    calls(chooser, clock, 300_000, ROUND)
    clock.cost = {1: 10.0, 4: 20.0}
    calls(chooser, clock, 5_000_000, ROUND)
    assert chooser.choices() == {size_class(300_000): 4, size_class(5_000_000): 1}


def test_a_machine_that_becomes_free_is_followed_at_the_next_probe(four_cores):
    clock = FakeClock({1: 10.0, 4: 30.0})     # busy: threads lose
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    clock.cost = {1: 10.0, 4: 4.0}            # the other cores are free now
    settled = calls(chooser, clock, 500_000, REPROBE_EVERY)
    assert settled == [1] * REPROBE_EVERY
    assert settle(chooser, clock, 500_000) == [1, 4] * (PROBES + 1)
    assert settled_on(calls(chooser, clock, 500_000, 10), 4)


def test_a_machine_that_becomes_busy_is_followed_at_once(four_cores):
    clock = FakeClock({1: 10.0, 4: 4.0})
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    clock.cost = {1: 10.0, 4: 40.0}           # another process took the cores: 10x slower
    assert calls(chooser, clock, 500_000, 1) == [4]     # then a new probe, not 255 more slow calls
    assert settle(chooser, clock, 500_000) == [1, 4]
    assert chooser.choices() == {size_class(500_000): 1}


def test_one_thread_slowing_down_is_left_to_the_periodic_probe(four_cores):
    """Settled on one thread, slower calls mean a busier machine: probing threads then
    would only cost."""
    clock = FakeClock({1: 10.0, 4: 30.0})
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    clock.cost[1] = 40.0
    assert calls(chooser, clock, 500_000, 100) == [1] * 100


def test_a_confirmed_choice_is_probed_less_often(four_cores):
    clock = FakeClock({1: 10.0, 4: 30.0})
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    bucket = chooser.buckets[size_class(500_000)]
    intervals = []
    for _ in range(6):
        assert bucket.interval in (REPROBE_EVERY, *(REPROBE_EVERY << k for k in range(1, 5)))
        calls(chooser, clock, 500_000, bucket.interval)
        assert settle(chooser, clock, 500_000) == [1, 4]     # busy still: one thread again
        intervals.append(bucket.interval)
    assert intervals == [min(REPROBE_EVERY << k, REPROBE_MAX) for k in range(1, 7)]
    clock.cost[4] = 4.0                       # free now: the choice changes, the interval starts again
    calls(chooser, clock, 500_000, bucket.interval)
    settle(chooser, clock, 500_000)
    assert chooser.choices() == {size_class(500_000): 4} and bucket.interval == REPROBE_EVERY


def test_a_slower_spell_is_followed_within_a_few_calls(four_cores):
    clock = FakeClock({1: 10.0, 4: 4.0})
    chooser = ThreadChooser(clock)
    calls(chooser, clock, 500_000, ROUND)
    clock.cost[4] = 4.0 * (SLOW_FACTOR + 1.5)   # slower than one thread now, but not 10x
    slow = calls(chooser, clock, 500_000, 8)
    assert slow[:2] == [4, 4] and 1 in slow[2:5]


def test_threads_chosen_on_unlucky_probes_are_dropped_at_a_check(four_cores):
    """The probe met a slow spell on one thread and chose 4; one thread is faster after
    all: the first check on one thread (the CHECK_FIRST-th call) starts a probe, which
    says so."""
    clock = FakeClock({1: 20.0, 4: 8.0})
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    assert chooser.choices() == {size_class(500_000): 4}
    clock.cost[1] = 6.0
    assert calls(chooser, clock, 500_000, CHECK_FIRST) == [4] * (CHECK_FIRST - 1) + [1]
    assert settle(chooser, clock, 500_000) == [1, 4] * (PROBES + 1)     # the probe the check started
    assert chooser.choices() == {size_class(500_000): 1}
    assert calls(chooser, clock, 500_000, 50) == [1] * 50


def test_checks_thin_out_while_threads_stay_faster(four_cores):
    clock = FakeClock({1: 10.0, 4: 4.0})
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    first = calls(chooser, clock, 500_000, 120)
    assert [i for i, c in enumerate(first) if c == 1] == [7, 23, 55, 119]     # after 8, 16, 32, 64 calls
    late = calls(chooser, clock, 500_000, CHECK_MAX)     # (before the periodic probe, at 256 calls on 4)
    assert late == [4] * (CHECK_MAX - 1) + [1] and chooser.choices() == {size_class(500_000): 4}


def test_a_single_slow_call_does_not_start_a_probe(four_cores):
    clock = FakeClock({1: 10.0, 4: 4.0})
    chooser = ThreadChooser(clock)
    calls(chooser, clock, 500_000, ROUND)
    for _ in range(5):
        clock.cost[4] = 8.0                     # twice the expected time, once
        assert settled_on(calls(chooser, clock, 500_000, 1), 4)
        clock.cost[4] = 4.0
        assert settled_on(calls(chooser, clock, 500_000, 20), 4)
    assert chooser.choices() == {size_class(500_000): 4}


def test_a_new_default_count_measures_afresh(monkeypatch, four_cores):
    clock = FakeClock({1: 10.0, 4: 4.0, 2: 30.0})
    chooser = ThreadChooser(clock)
    settle(chooser, clock, 500_000)
    monkeypatch.setattr(threadchoice, "default_threads", lambda: 2)
    assert calls(chooser, clock, 500_000, 4) == [1, 2, 1, 1]      # 2 threads 3x slower: given up
    assert chooser.choices() == {size_class(500_000): 1}


def test_one_core_means_one_thread_and_no_timing(monkeypatch):
    monkeypatch.delenv("S2SAD_NUM_THREADS", raising=False)
    monkeypatch.setattr(threadchoice, "default_threads", lambda: 1)
    clock = FakeClock({1: 10.0})
    chooser = ThreadChooser(lambda: pytest.fail("the clock was read"))
    assert [chooser.run(500_000, clock.work(500_000)) for _ in range(5)] == [1] * 5
    assert chooser.choices() == {}


@pytest.mark.parametrize("value, count", [("1", 1), ("3", 3), (" 2 ", 2)])
def test_the_environment_forces_the_count_without_timing(monkeypatch, four_cores, value, count):
    monkeypatch.setenv("S2SAD_NUM_THREADS", value)
    clock = FakeClock({count: 10.0})
    chooser = ThreadChooser(lambda: pytest.fail("the clock was read"))
    assert calls(chooser, clock, 500_000, 20) == [count] * 20
    assert chooser.choices() == {}


def test_a_bad_environment_value_forces_the_default_with_a_warning(monkeypatch, four_cores):
    monkeypatch.setenv("S2SAD_NUM_THREADS", "lots")
    chooser = ThreadChooser(lambda: pytest.fail("the clock was read"))
    with pytest.warns(RuntimeWarning, match="S2SAD_NUM_THREADS='lots' is not an integer"):
        used = chooser.run(500_000, lambda t: None)
    assert used == (os.cpu_count() or 1)


def test_a_failing_call_leaves_the_chooser_usable(four_cores):
    clock = FakeClock({1: 10.0, 4: 4.0})
    chooser = ThreadChooser(clock)

    def fail(t):
        raise MemoryError("in the kernel's call")
    with pytest.raises(MemoryError):
        chooser.run(500_000, fail)
    assert chooser.lock.acquire(blocking=False)     # not left held
    chooser.lock.release()
    assert calls(chooser, clock, 500_000, ROUND) == [1, 4] * (PROBES + 1)
    assert chooser.choices() == {size_class(500_000): 4}


def test_concurrent_calls_keep_the_chooser_whole(four_cores):
    """8 threads calling one chooser at once (the clock shared, so the times they record
    are nonsense): no error, only counts 1 and 4, and a single caller afterwards still
    gets a probe and a choice."""
    lock = threading.Lock()
    ticks = iter(range(10**9))

    def clock():
        with lock:
            return next(ticks) * 1000
    chooser = ThreadChooser(clock)
    used, errors = [], []

    def caller(seed):
        rng = np.random.default_rng(seed)
        try:
            for _ in range(400):
                n = int(rng.integers(300_000, 3_000_000))
                used.append(chooser.run(n, lambda t: None))
        except BaseException as e:      # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors and len(used) == 8 * 400 and set(used) <= {1, 4}
    for b in chooser.buckets.values():
        assert b.choice in (0, 1, 4) and b.calls < b.interval <= REPROBE_MAX
    fresh = FakeClock({1: 10.0, 4: 4.0})
    chooser.clock = fresh
    for b in chooser.buckets.values():
        b.probe()
    assert calls(chooser, fresh, 500_000, ROUND) == [1, 4] * (PROBES + 1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_child_forked_while_the_lock_is_held_can_choose(four_cores):
    """The chooser's lock is renewed in a forked child (another thread of the parent held
    it at the fork): the child's large calls do not wait for it forever."""
    clock = FakeClock({1: 10.0, 4: 4.0})
    chooser = ThreadChooser(clock)
    with chooser.lock:
        pid = os.fork()
        if pid == 0:
            ok = False
            try:
                ok = calls(chooser, clock, 500_000, ROUND) == [1, 4] * (PROBES + 1)
            finally:
                os._exit(0 if ok else 3)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child waited for its parent's lock")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0


# ------------------------------------------------------------------ results that do not depend on it

@pytest.mark.parametrize("n", [2, 1000, fastpath.THREAD_MIN - 1, fastpath.THREAD_MIN, fastpath.THREAD_MIN + 1,
                               10**6 + 7, fastpath.MAX_CHUNKS * fastpath.CHUNK * 3 + 5])
def test_chunks_depend_on_the_size_alone(n):
    chunks = fastpath.chunks_of(n)
    assert chunks[0][0] == 0 and chunks[-1][1] == n
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(chunks, chunks[1:]))
    assert len(chunks) <= fastpath.MAX_CHUNKS
    if n < fastpath.THREAD_MIN:
        assert chunks == [(0, n)]
    else:
        assert len(chunks) >= 2 and min(hi - lo for lo, hi in chunks) >= fastpath.CHUNK - 1


def mean_square(x):
    return np.sum(np.tanh(x) * x) / x.size


def with_scale(x, a):
    return np.sum(np.sin(a * x) * x)


@pytest.fixture
def counts_used(monkeypatch):
    """The thread counts the fast path's calls ran on."""
    used = []
    on_threads = fastpath.on_threads

    def recording(chooser, n, n_chunks, work):
        on_threads(chooser, n, n_chunks, lambda t: (used.append(t), work(t)))
    monkeypatch.setattr(fastpath, "on_threads", recording)
    return used


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_probing_changes_no_bit(monkeypatch, four_cores, counts_used, dtype):
    """While the chooser probes, calls alternate 1 and 4 threads: every value and
    gradient is the same, bit for bit (value, array gradient, scalar gradient)."""
    x = np.random.default_rng(5).uniform(-2.0, 2.0, 3 * fastpath.THREAD_MIN + 17).astype(dtype)
    vg = s2sad.value_and_grad(with_scale, argnums=(0, 1))
    results = [vg(x, 0.3) for _ in range(ROUND + 2)]
    assert {1, 4} <= set(counts_used)
    v0, (gx0, ga0) = results[0]
    for v, (gx, ga) in results[1:]:
        assert v == v0 and ga == ga0
        np.testing.assert_array_equal(gx, gx0)
    want = np.sum(np.sin(0.3 * x.astype(np.float64)) * x)
    np.testing.assert_allclose(v0, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("count", ["1", "2", "3", "8"])
def test_forced_counts_give_the_same_bits(monkeypatch, counts_used, count):
    x = np.random.default_rng(6).standard_normal(fastpath.THREAD_MIN * 5 + 3)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    ref = s2sad.value_and_grad(mean_square)(x)
    monkeypatch.setenv("S2SAD_NUM_THREADS", count)
    got = s2sad.value_and_grad(mean_square)(x)
    assert counts_used[-1] == int(count)
    assert got[0] == ref[0]
    np.testing.assert_array_equal(got[1], ref[1])
    t = np.tanh(x)
    np.testing.assert_allclose(ref[1], (t + x * (1 - t * t)) / x.size, rtol=1e-12, atol=1e-18)


def test_a_nan_reaches_the_value_on_any_count(monkeypatch, four_cores):
    x = np.linspace(-1.0, 1.0, 4 * fastpath.THREAD_MIN)
    x[-3] = np.nan                       # in the last chunk
    vg = s2sad.value_and_grad(mean_square)
    for _ in range(ROUND):
        v, g = vg(x)
        assert np.isnan(v) and np.isnan(g[-3]) and np.isfinite(g[0])


def test_the_users_arrays_are_not_written(four_cores):
    x = np.random.default_rng(7).standard_normal(3 * fastpath.THREAD_MIN)
    before = x.copy()
    vg = s2sad.value_and_grad(mean_square)
    for _ in range(ROUND):
        vg(x)
        s2sad.broadcast(np.tanh, x)
    np.testing.assert_array_equal(x, before)


def test_a_gradient_without_a_value_makes_one_call_on_one_thread(monkeypatch, counts_used):
    """grad needs no sum: on one thread the chunks are one call (its bits cannot differ)."""
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    made = []
    real = fastpath.run_chunks
    monkeypatch.setattr(fastpath, "run_chunks", lambda *a: made.append(a[1]) or real(*a))
    x = np.random.default_rng(8).standard_normal(3 * fastpath.THREAD_MIN)
    g = s2sad.grad(lambda x: np.sum(np.tanh(x)))(x)
    assert counts_used == [1] and made == []
    np.testing.assert_allclose(g, 1 - np.tanh(x) ** 2, rtol=1e-12)
    s2sad.value_and_grad(lambda x: np.sum(np.tanh(x)))(x)
    assert made == [len(fastpath.chunks_of(x.size))]      # a value: every chunk, in turn


def test_products_choose_their_threads_and_keep_their_bits(monkeypatch, four_cores):
    rng = np.random.default_rng(9)
    x, w = rng.standard_normal((20_000, 32)), rng.standard_normal((32, 64))
    assert x.shape[0] * 32 * 64 >= gemm.THREAD_WORK
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    ref = gemm.matmul(x, w)
    monkeypatch.delenv("S2SAD_NUM_THREADS")
    chooser = gemm._chooser(x.dtype, 64, x.shape[0])
    chooser.buckets.clear()
    outs = [gemm.matmul(x, w) for _ in range(ROUND)]
    assert size_class(x.shape[0] * 32 * 64) in chooser.buckets     # timed by the chooser
    for out in outs:
        np.testing.assert_array_equal(out, ref)
    np.testing.assert_allclose(ref, x @ w, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- one count for a whole call

def test_a_small_call_is_left_to_its_passes_choosers():
    def run(x):
        return x
    assert threadchoice.one_count_for_all(run, threadchoice.WHOLE_MIN - 1) is run


def test_a_whole_call_runs_all_its_passes_on_the_count_its_chooser_gives(four_cores):
    """Every pass inside sees the count forced (threads.forced_threads), the one the
    whole call's chooser picked for this call; the chooser settles on the faster count
    of the whole call, and the wrapped call's result comes back."""
    from s2sad import threads
    clock = FakeClock({1: 4.0, 4: 1.0})
    n = threadchoice.WHOLE_MIN
    seen = []

    def run(x):
        seen.append(threads.forced_threads())
        clock.counts.append(seen[-1])
        clock.now += int(clock.cost[seen[-1]] * n)
        return x + 1

    whole = threadchoice.one_count_for_all(run, n, clock)
    assert [whole(i) for i in range(ROUND)] == list(range(1, ROUND + 1))
    assert sorted(set(seen)) == [1, 4]                   # the probe timed both counts, whole calls each
    assert whole.chooser.choices() == {size_class(n): 4}
    seen.clear()
    for _ in range(CHECK_FIRST - 1):
        whole(0)
    assert seen == [4] * (CHECK_FIRST - 1)
    assert threads.forced_threads() is None             # nothing forced outside the call


def test_a_whole_call_keeps_one_thread_where_threads_do_not_pay(four_cores):
    from s2sad import threads
    clock = FakeClock({1: 1.0, 4: 1.0})
    n = 1 << 20
    seen = []

    def run():
        seen.append(threads.forced_threads())
        clock.now += int(clock.cost[seen[-1]] * n)

    whole = threadchoice.one_count_for_all(run, n, clock)
    for _ in range(ROUND + 20):
        whole()
    assert whole.chooser.choices() == {size_class(n): 1}
    assert seen[-20:] == [1] * 20


def test_a_whole_call_under_a_forced_count_times_nothing(monkeypatch):
    from s2sad import threads
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    seen = []
    whole = threadchoice.one_count_for_all(lambda: seen.append(threads.forced_threads()), 1 << 20)
    for _ in range(5):
        whole()
    assert seen == [1] * 5 and whole.chooser.choices() == {}


def test_an_exception_in_a_whole_call_leaves_nothing_forced(four_cores):
    from s2sad import threads

    def run():
        raise ValueError("no")
    whole = threadchoice.one_count_for_all(run, 1 << 20)
    with pytest.raises(ValueError):
        whole()
    assert threads.forced_threads() is None


def _mlp3(W1, b1, W2, b2, X, Y):
    h1 = np.tanh(X @ W1 + b1)
    z = np.maximum(h1 @ W2 + b2, 0.0)
    z = z - np.max(z, axis=1, keepdims=True)
    return -np.mean(np.sum(Y * (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))), axis=1))


def test_a_large_gradients_passes_run_on_the_count_chosen_for_the_whole_gradient(monkeypatch):
    """The specialised copy of a large array program is timed whole: while it runs, every
    pass's own chooser finds a count forced (the whole call's), and the gradients have
    the bits of one thread's (MLP3-like: at 10k rows its passes, each timed alone amid
    passes on other counts, settled on one thread where all on two were 1.4x faster)."""
    from conftest import assert_same_bits, specialised_copy
    from s2sad import threads
    monkeypatch.delenv("S2SAD_NUM_THREADS", raising=False)
    monkeypatch.setattr(threadchoice, "default_threads", lambda: 2)
    rng = np.random.default_rng(5)
    n = 8192
    args = (rng.normal(size=(32, 64)) / 6, rng.normal(size=(1, 64)) * 0.1, rng.normal(size=(64, 10)) / 8,
            rng.normal(size=(1, 10)) * 0.1, rng.normal(size=(n, 32)), np.eye(10)[rng.integers(0, 10, n)])
    argnums = (0, 1, 2, 3)
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1")
    want = s2sad.grad(_mlp3, argnums=argnums)(*args)
    monkeypatch.delenv("S2SAD_NUM_THREADS")
    g = s2sad.grad(_mlp3, argnums=argnums)
    for _ in range(3):
        g(*args)
    whole = specialised_copy(g, args)[0]
    assert whole.__wrapped__ is specialised_copy(g, args)[3]
    inner = []
    run = ThreadChooser.run

    def spy(self, n, work):
        if self is not whole.chooser:
            inner.append(threads.forced_threads())
        return run(self, n, work)
    monkeypatch.setattr(ThreadChooser, "run", spy)
    for _ in range(ROUND + 4):
        assert_same_bits(g(*args), want)
    assert whole.chooser.choices()[size_class(n * 32)] in (1, 2)
    assert inner and set(inner) <= {1, 2}                 # every pass's chooser found the whole call's count
    # on two threads forced whole, the 10-class row adjoint (81,920 elements: below THREAD_MIN)
    # leaves its kept one-call launcher for run_rows's chunks, with the same bits
    from s2sad import rowthreads
    spans = []
    chunks = rowthreads.run_chunks
    monkeypatch.setattr(rowthreads, "run_chunks", lambda f, c, t, **k: (spans.append((c, t)), chunks(f, c, t, **k)))
    served = rowthreads.blockloop.served_calls      # (or handed to a serving pool thread: loopserver)
    monkeypatch.setattr(rowthreads.blockloop, "served_calls",
                        lambda f, rows: served(f, rows) and (spans.append((len(rows), 2)) or True))
    with threads.all_calls_on(2):
        assert_same_bits(whole.__wrapped__(*args), want)
    assert spans and all(c > 1 and t == 2 for c, t in spans)


def _logreg(w, X, y):
    z = X @ w
    return np.mean(np.log1p(np.exp(-z)) + (1.0 - y) * z)


def test_a_gradient_none_of_whose_passes_splits_is_not_timed_whole(monkeypatch):
    """A 10k-row logistic regression: X has 320,000 elements but no pass reaches a
    chooser (a matrix-vector product, elementwise work on 10,000): the copy runs as it
    is (the wrapper and its probes cost it 10-15%)."""
    from conftest import specialised_copy
    monkeypatch.delenv("S2SAD_NUM_THREADS", raising=False)
    rng = np.random.default_rng(2)
    args = (rng.normal(size=32) * 0.2, rng.normal(size=(10_000, 32)), (rng.random(10_000) < 0.5).astype(float))
    g = s2sad.grad(_logreg)
    for _ in range(3):
        g(*args)
    spec = specialised_copy(g, args)
    assert spec[0] is spec[3] and not hasattr(spec[0], "chooser")


def _xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    return -np.mean(np.sum(Y * (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))), axis=1))


def test_a_gradient_without_a_block_pass_keeps_its_passes_choosers(monkeypatch):
    """A softmax cross-entropy at 30,000 rows differentiated w.r.t. X too (so its logits
    are not joined with the adjoint in a block pass: passes/xentheads): its product and
    row passes reach choosers, but none is a block pass: each pass's own chooser decides
    (they may mix counts). W and b alone: the joined head is a block pass, timed whole."""
    from conftest import specialised_copy
    monkeypatch.delenv("S2SAD_NUM_THREADS", raising=False)
    rng = np.random.default_rng(4)
    n = 30_000
    args = (rng.normal(size=(32, 10)) * 0.2, rng.normal(size=(1, 10)) * 0.1, rng.normal(size=(n, 32)),
            np.eye(10)[rng.integers(0, 10, n)])
    for argnums, whole in (((0, 1, 2), False), ((0, 1), True)):
        g = s2sad.grad(_xent, argnums=argnums)
        for _ in range(3):
            g(*args)
        assert ("xent_head_bars(" in s2sad.source(g)) == whole
        spec = specialised_copy(g, args)
        assert (spec[0] is not spec[3]) == whole

"""Issue 12, the runtime's part: float32 sums at numpy's error on any thread count, no
hang in a forked child, and S2SAD_NUM_THREADS that is checked.

float32: a float32 sum of N terms accumulated in float32 drifts (2e6 x 0.1 came out
44.7 too large, numpy's pairwise sum 0.013); every sum a driver makes (the value's,
a broadcast scalar's gradient, a scan's) is accumulated in float64 and rounded once,
so it is within a float32 rounding of the float64 sum of the same terms."""
from __future__ import annotations

import multiprocessing
import os
import threading

import numpy as np
import pytest

import s2sad
import trust_runtime_child as child
from conftest import wait_for_child
from s2sad import fastpath, runtime, threads
from s2sad.frontend import parse_function
from s2sad.passes.normalize import normalize

N = 2_000_000                         # large enough that float32 accumulation is visibly off
F32 = np.float32


@pytest.fixture
def reset_state():
    child.state = 0.0
    yield
    child.state = 0.0


def tenths(n: int = N) -> np.ndarray:
    return np.full(n, 0.1, F32)


def assert_at_numpys_error(got, terms: np.ndarray) -> None:
    """`got` is the sum of the float32 `terms` within numpy's own error (or 2 float32
    ulps, where numpy is luckier): a float32 answer, not a drifted one."""
    exact = float(np.sum(terms.astype(np.float64)))
    numpy_err = abs(float(np.sum(terms)) - exact)
    tol = max(numpy_err, 2 * float(np.spacing(F32(exact))))
    assert abs(float(got) - exact) <= tol, (float(got), exact, tol)


def with_threads(monkeypatch, n: int, fn):
    monkeypatch.setenv("S2SAD_NUM_THREADS", str(n))
    return fn()


# ------------------------------------------------------------------ float32 sums

def test_float32_sum_value_and_gradient(monkeypatch):
    x = tenths()
    v, g = with_threads(monkeypatch, 1, lambda: s2sad.value_and_grad(lambda x: np.sum(x))(x))
    assert_at_numpys_error(v, x)
    assert v == float(F32(v))                  # a float32 result
    assert g.dtype == F32 and np.all(g == 1.0)


def test_float32_sum_of_a_broadcast_kernel(monkeypatch):
    x = tenths()
    loss = lambda x: np.sum(s2sad.broadcast(lambda z: z * z + 0.5, x))  # noqa: E731
    v, g = with_threads(monkeypatch, 1, lambda: s2sad.value_and_grad(loss)(x))
    assert_at_numpys_error(v, x * x + F32(0.5))
    np.testing.assert_allclose(g, 2 * x, rtol=1e-6)


def test_float32_mean():
    x = tenths()
    v = s2sad.value_and_grad(lambda x: np.mean(x * 3.0))(x)[0]
    assert abs(v - 0.3) < 1e-6                 # float32 accumulation gave 0.30067


@pytest.mark.parametrize("a", [F32(1.0), np.ones(1, F32), np.ones((1, 1), F32), 1.0],
                         ids=["f32 scalar", "f32 (1,)", "f32 (1, 1)", "python float"])
def test_gradient_wrt_a_broadcast_scalar(monkeypatch, a):
    x = tenths().reshape(-1, 1000) if np.ndim(a) == 2 else tenths()
    g = with_threads(monkeypatch, 1, lambda: s2sad.grad(lambda a, x: np.sum(a * x))(a, x))
    assert_at_numpys_error(np.reshape(g, ()), x)
    assert np.shape(g) == np.shape(a)
    if isinstance(a, (np.ndarray, np.generic)):
        assert np.asarray(g).dtype == F32


def test_two_scalar_gradients_and_the_value_in_one_pass(monkeypatch):
    x = tenths()
    vg = s2sad.value_and_grad(lambda a, b, x: np.sum(a * x + b), argnums=(0, 1))
    v, (ga, gb) = with_threads(monkeypatch, 1, lambda: vg(F32(2.0), F32(0.25), x))
    assert_at_numpys_error(v, 2 * x + F32(0.25))
    assert_at_numpys_error(ga, x)
    assert gb == F32(N)                        # exact in float32


def test_general_path_strided_input(monkeypatch):
    """A non-contiguous float32 input goes through prepare/launch, not the fast path."""
    x = np.full(2 * N, 0.1, F32)[::2]
    v = with_threads(monkeypatch, 1, lambda: s2sad.value_and_grad(lambda a, x: np.sum(a * x))(F32(1.0), x))
    assert_at_numpys_error(v[0], x)
    assert_at_numpys_error(v[1], x)


def test_gradient_wrt_a_column_and_row_sums():
    """A float32 (n, 1) param broadcast along long rows: each row's gradient is a double
    sum (float32 in-register sums were 0.006% off), and so is a fused row sum."""
    x = tenths().reshape(4, -1)
    g = s2sad.grad(lambda c, x: np.sum(c * x))(np.ones((4, 1), F32), x)
    assert g.dtype == F32 and g.shape == (4, 1)
    for row, gr in zip(x, g[:, 0]):
        assert_at_numpys_error(gr, row)
    rows = lambda x: np.sum(np.sum(s2sad.broadcast(lambda z: z * 1.0, x), axis=1) ** 2)  # noqa: E731
    v = s2sad.value_and_grad(rows)(x)[0]
    exact = float(np.sum(np.sum(x.astype(np.float64), axis=1) ** 2))
    assert abs(v - exact) <= 4 * np.spacing(F32(exact))


def test_vjp_of_a_broadcast_scalar():
    x = tenths()
    _, pullback = s2sad.vjp(lambda a: a * x, np.ones(1, F32))
    (g,) = pullback(np.ones(N, F32))
    assert g.dtype == F32 and g.shape == (1,)
    assert_at_numpys_error(g[0], x)


def test_scan_value_and_scalar_gradient(reset_state):
    """A stateful function runs as a scan: its summed value and the gradient w.r.t. a
    broadcast scalar are float64 sums too."""
    x = tenths(N // 2)
    values = s2sad.broadcast(child.ema, x)            # the primal's float32 values, in order
    child.state = 0.0
    v, g = s2sad.value_and_grad(lambda x: np.sum(s2sad.broadcast(child.ema, x)))(x)
    assert_at_numpys_error(v, values)
    assert g.dtype == F32 and abs(float(g[0]) - 2.0) < 1e-5
    child.state = 0.0
    # sum of the values is linear in a: its derivative is the sum at a = 1
    ga = s2sad.grad(lambda a, x: np.sum(s2sad.broadcast(child.ema_scaled, x, a)))(np.ones(1, F32), x)
    assert ga.dtype == F32
    assert_at_numpys_error(ga[0], values)


def test_python_reference_sums_in_float64():
    """The python backend, the oracle, accumulates the same way (runtime.sum_dual on a
    100,000-element float32 array: float32 accumulation in order is 0.02% off)."""
    p = normalize(parse_function(child.scaled))
    k = runtime.Kernel(p, p.entry)
    x = tenths(100_000)
    v, (ga,) = runtime.sum_dual(k, [x, F32(1.0)], ("a",), backend="python")
    assert_at_numpys_error(v, x)
    assert ga.dtype == F32 and ga.shape == ()
    assert_at_numpys_error(ga, x)
    v_llvm, (ga_llvm,) = runtime.sum_dual(k, [x, F32(1.0)], ("a",), backend="llvm")
    assert v_llvm == v and ga_llvm == ga


def test_float64_is_as_before():
    x = np.full(N, 0.1)
    v, g = s2sad.value_and_grad(lambda a, x: np.sum(a * x))(1.0, x)
    assert abs(v - 200_000.0) < 1e-6 and abs(g - 200_000.0) < 1e-6


# ------------------------------------------------------------------ thread-count independence

def _flat(result) -> list[np.ndarray]:
    """(value, grad or tuple of grads) -> [value, grads...] as arrays."""
    v, g = result
    return [np.asarray(v)] + [np.asarray(x) for x in (g if isinstance(g, tuple) else (g,))]


@pytest.mark.parametrize("loss, args, terms", [
    (lambda x: np.sum(np.tanh(x) * x), lambda x: (x,), lambda x: np.tanh(x) * x),
    (lambda a, x: np.sum(a * x), lambda x: (x.dtype.type(0.5), x), lambda x: x.dtype.type(0.5) * x),
], ids=["tanh", "broadcast scalar"])
def test_results_do_not_depend_on_the_thread_count(monkeypatch, loss, args, terms):
    """The same float32 and float64 gradients on 1, 2 and 3 threads: float32 results are
    identical (one rounding of a float64 sum), float64 ones agree up to the order of
    the sum, and the float32 value is at numpy's error on each."""
    x32 = tenths(3 * N // 2) * np.linspace(0.5, 1.5, 3 * N // 2, dtype=F32)
    x64 = x32.astype(np.float64)
    nargs = len(args(x32))
    vg = s2sad.value_and_grad(loss, argnums=tuple(range(nargs)) if nargs > 1 else 0)
    got32 = [_flat(with_threads(monkeypatch, t, lambda: vg(*args(x32)))) for t in (1, 2, 3)]
    assert threads.pool_size() >= 2                   # the 3-thread call ran on the pool
    got64 = [_flat(with_threads(monkeypatch, t, lambda: vg(*args(x64)))) for t in (1, 2, 3)]
    for r in got32[1:]:
        for a, b in zip(r, got32[0]):
            np.testing.assert_array_equal(a, b)
    for r in got64[1:]:
        for a, b in zip(r, got64[0]):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    for r in got32:
        assert_at_numpys_error(r[0], terms(x32))


# ------------------------------------------------------------------ fork and spawn

def _child_pool(method: str):
    return multiprocessing.get_context(method).Pool(1)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_child_process_runs_large_calls(monkeypatch, method):
    """After a large call started the thread pool, a child made by fork (the default on
    Linux) or spawn runs a large call and gets the right answer; a hang fails here."""
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} on this platform")
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    n = 4 * fastpath.THREAD_MIN
    dv, err, _ = child.large_gradient(n)               # starts the pool in this process
    assert threads.pool_size() >= 1 and abs(dv) < 1e-8 and err < 1e-12
    pool = _child_pool(method)
    try:
        dv, err, asked = pool.apply_async(child.large_gradient, (n,)).get(timeout=60)
        assert abs(dv) < 1e-8 and err < 1e-12 and asked == 2.0
    finally:
        pool.terminate()
        pool.join()


def test_the_fork_handler_drops_the_parents_pool():
    threads.run_chunks(lambda c: None, 8, 2)
    assert threads.pool_size() >= 1
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                       # the child: report and leave at once
        ok = threads.pool_size() == 0 and not threads._POOL.lock.locked()
        threads.run_chunks(lambda c: None, 8, 2)       # makes its own pool; would hang on the parent's
        os.write(w, b"1" if ok and threads.pool_size() == 1 else b"0")
        os._exit(0)
    os.close(w)
    try:
        assert os.read(r, 1) == b"1"
    finally:
        os.close(r)
        os.waitpid(pid, 0)


def _fork_while_held(lock, run_in_child) -> None:
    """Fork while another thread holds `lock`; the child runs `run_in_child()` (true on
    success) and must finish within 60 s."""
    held, release = threading.Event(), threading.Event()

    def holder():
        with lock:
            held.set()
            release.wait(60)
    t = threading.Thread(target=holder)
    t.start()
    held.wait(60)
    try:
        pid = os.fork()
        if pid == 0:
            try:
                ok = run_in_child()
            except BaseException:
                ok = False
            os._exit(0 if ok else 3)
    finally:
        release.set()
        t.join()
    wait_for_child(pid, 60, "the forked child hung on a lock its parent's other thread held")


def test_a_child_forked_during_another_threads_compile_can_compile():
    """A fork while another thread holds llvm_jit's compile lock: the child gets its own
    lock and compiles a new kernel (with the disk cache off: a real compile)."""
    from s2sad.codegen import llvm_jit

    def compile_in_child():
        os.environ["S2SAD_CACHE"] = "0"
        x = np.linspace(-1.0, 1.0, 1000)
        return np.allclose(s2sad.grad(child.forked_compile)(x), 3 * x * x + 1.0)
    _fork_while_held(llvm_jit._lock, compile_in_child)


def test_a_child_forked_while_another_thread_plans_can_plan():
    """s2sad's planning lock (and the locks of deep recursion and of generated callers)
    are renewed in a forked child."""
    from s2sad import callables, deep, plancache
    x = np.linspace(-1.0, 1.0, 100)
    for lock in (plancache.PLANNING, deep._lock, callables._LOCK):
        _fork_while_held(lock, lambda: np.allclose(s2sad.grad(child.planned_in_child)(x), 2 * x + np.cos(x))
                         and s2sad.grad(np.sin)(0.3) == pytest.approx(np.cos(0.3)))


# ------------------------------------------------------------------ S2SAD_NUM_THREADS

@pytest.mark.parametrize("value, why", [("abc", "not an integer"), ("2.5", "not an integer"),
                                        ("0", "not a positive integer"), ("-1", "not a positive integer")])
def test_a_bad_thread_count_is_warned_about_and_replaced(monkeypatch, value, why):
    monkeypatch.setenv("S2SAD_NUM_THREADS", value)
    default = os.cpu_count() or 1
    with pytest.warns(RuntimeWarning, match=rf"S2SAD_NUM_THREADS='{value}' is {why}; using {default} threads"):
        assert threads.num_threads() == default


def test_too_many_threads_are_capped(monkeypatch):
    monkeypatch.setenv("S2SAD_NUM_THREADS", "1000")
    cap = threads.max_threads()
    assert cap == threads.MAX_PER_CORE * (os.cpu_count() or 1) < 1000
    with pytest.warns(RuntimeWarning, match=rf"S2SAD_NUM_THREADS='1000' is more than .*; using {cap} threads"):
        assert threads.num_threads() == cap
    # a large call then runs on at most cap threads (the caller and cap - 1 of the pool's)
    x = np.linspace(-1.0, 1.0, 2 * fastpath.THREAD_MIN)
    with pytest.warns(RuntimeWarning, match="S2SAD_NUM_THREADS"):
        g = s2sad.grad(child.tanh_loss)(x)
    t = np.tanh(x)
    np.testing.assert_allclose(g, t + x * (1 - t * t), rtol=1e-12, atol=1e-15)
    assert threads.pool_size() <= cap - 1
    assert sum(th.name.startswith("s2sad") for th in threading.enumerate()) <= cap - 1


@pytest.mark.parametrize("value", ["1", "3", " 2 "])
def test_good_thread_counts_pass_silently(monkeypatch, value, recwarn):
    monkeypatch.setenv("S2SAD_NUM_THREADS", value)
    assert threads.num_threads() == min(int(value), threads.max_threads())
    assert not [w for w in recwarn if "S2SAD_NUM_THREADS" in str(w.message)]


def test_an_empty_value_means_the_default(monkeypatch, recwarn):
    monkeypatch.setenv("S2SAD_NUM_THREADS", "")
    assert threads.num_threads() == (os.cpu_count() or 1)
    assert not recwarn.list


# ------------------------------------------------------------------ what the float32 drivers are

def _sum_driver(dtype):
    from s2sad.codegen import llvm_jit
    from s2sad.kernel import LoopSpec

    p = normalize(parse_function(child.square))
    k = runtime.Kernel(p, p.entry)
    spec = LoopSpec(("contig",), value="sum", partials=True, seed="scalar")
    return llvm_jit.compile_driver(k.module(("z",)), spec, dtype)


def test_float32_sums_are_double_in_a_loop_vectorised_at_float32_width():
    """Each float32 term is widened and added in double; the inner loop asks for float32's
    lanes (double's would halve the vector width). float64 drivers carry no such hint."""
    import re

    d = _sum_driver(np.float32)
    hint = re.search(r'"llvm.loop.vectorize.width", i32 (\d+)', d.ir)
    assert hint is not None and "fadd reassoc nsz double" in d.ir
    lanes = int(hint.group(1))
    assert re.search(rf"fpext <{lanes} x float> \S+ to <{lanes} x double>", d.optimized_ir)
    assert f"load <{lanes} x float>" in d.optimized_ir
    assert "llvm.loop.vectorize.width" not in _sum_driver(np.float64).ir


def test_cuda_float32_sums_are_double_too():
    """The cuda driver's thread, block and per-block sums are double (cuda.ACC): run by
    the host emulation (g++), a float32 sum of 2e6 x 0.1 over 256 threads is at numpy's
    error (float32 thread sums were ~50 off)."""
    from s2sad.backends import cuda_host
    from s2sad.kernel import LoopSpec

    if cuda_host.available() is not None:
        pytest.skip(cuda_host.available())
    p = normalize(parse_function(child.scaled))
    kmod = runtime.Kernel(p, p.entry).module(("x", "a"))
    x = tenths()
    acc, gx, ga = np.zeros(1, F32), np.empty(N, F32), np.zeros(1, F32)
    spec = LoopSpec(("contig", "scalar"), "sum", partials=True, seed="scalar")
    cuda_host.launch(kmod, spec, "float32", 1, N, [(x, N, 1), 1.0], acc=acc, seed=1.0, grads=[(gx, N, 1), ga])
    assert_at_numpys_error(acc[0], x)
    assert_at_numpys_error(ga[0], x)
    assert np.all(gx == 1.0)

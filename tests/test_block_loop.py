"""A block pass's C calls made by a compiled loop (blockloop.py, codegen/llvm_blocks.py):
the same bits as the Python loop (S2SAD_BLOCK_LOOP=0) on one thread and several, for
every kind of block pass, float64 and float32, strided operands, arrays that move
between calls (a plan moved) and arrays whose strides change (a plan made again); the
loop's own mechanics on a hand-made pass; what it declines."""
import ctypes
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import s2sad
from s2sad import blockloop, productsums
from s2sad.backends.llvm import ptr

from conftest import assert_same_bits
from test_gemm_epilogue import leaky_numpy, mlp3, sigmoid_layer


def softmax_mlp(W1, b1, W2, b2, W3, X, Y):
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    z = h2 @ W3
    z = z - np.max(z, axis=1, keepdims=True)
    return -np.mean(np.sum(Y * (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))), axis=1))


def _args(loss, n, dtype, rng, strided=False):
    X = rng.normal(size=(n, 40 if strided else 32))
    X = X[:, 3:35] if strided else X
    if loss is softmax_mlp:
        a = (rng.normal(size=(32, 64)) / 6, rng.normal(size=(1, 64)) * 0.1, rng.normal(size=(64, 64)) / 8,
             rng.normal(size=(1, 64)) * 0.1, rng.normal(size=(64, 10)) / 8, X, np.eye(10)[rng.integers(0, 10, n)])
        argnums = (0, 1, 2, 3, 4)
    elif loss is mlp3:
        a = (rng.normal(size=(32, 64)) / 6, rng.normal(size=(1, 64)) * 0.1, rng.normal(size=(64, 64)) / 8,
             rng.normal(size=(1, 64)) * 0.1, rng.normal(size=(64, 10)) / 8, X, rng.normal(size=(n, 10)))
        argnums = (0, 1, 2, 3, 4)
    else:
        a = (rng.normal(size=(32, 64)) / 6, rng.normal(size=(1, 64)) * 0.1, rng.normal(size=(64, 10)) / 8, X,
             rng.normal(size=(n, 10)))
        argnums = (0, 1, 2)
    return tuple(x.astype(dtype) if x.dtype != dtype else x for x in a), argnums


@pytest.fixture
def loops_ran(monkeypatch):
    """How many passes the compiled loop ran (blockloop.runner's runs)."""
    ran = [0]
    make = blockloop.runner

    def counted(plan, buffer, server_buffer):
        run = make(plan, buffer, server_buffer)

        def go(c):
            ran[0] += 1
            run(c)

        def served():
            done = run.served()
            ran[0] += done
            return done
        go.served = served
        return go
    monkeypatch.setattr(blockloop, "runner", counted)
    return ran


def _grads(loss, args, argnums, monkeypatch, loop: str, calls: int = 3):
    monkeypatch.setenv("S2SAD_BLOCK_LOOP", loop)
    g = s2sad.grad(loss, argnums=argnums)
    out = [g(*args) for _ in range(calls)]
    for o in out[1:]:
        assert_same_bits(o, out[0])          # a plan made, then moved or reused: the same
    return out[-1]


@pytest.mark.parametrize("loss", [softmax_mlp, mlp3, sigmoid_layer, leaky_numpy])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_the_loop_gives_the_python_loops_bits(monkeypatch, loops_ran, loss, dtype, threads):
    monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
    rng = np.random.default_rng(len(threads) + (dtype == np.float32))
    args, argnums = _args(loss, 7777, dtype, rng, strided=threads == "2")
    want = _grads(loss, args, argnums, monkeypatch, "0")
    assert loops_ran[0] == 0
    got = _grads(loss, args, argnums, monkeypatch, "1")
    assert loops_ran[0] > 0
    assert_same_bits(got, want)


def test_a_plan_follows_arrays_that_move_and_is_made_again_for_new_strides(monkeypatch, loops_ran):
    """New arrays of the same shapes: the plan is moved (blockloop._moved); a strided X
    (its row stride a word of the product's call): made again; every result the Python
    loop's."""
    moved = []
    move = blockloop._moved
    monkeypatch.setattr(blockloop, "_moved", lambda *a: moved.append(move(*a)) or moved[-1])
    rng = np.random.default_rng(7)
    args, argnums = _args(softmax_mlp, 6000, np.float64, rng)
    g = s2sad.grad(softmax_mlp, argnums=argnums)
    monkeypatch.setenv("S2SAD_BLOCK_LOOP", "0")
    oracle = s2sad.grad(softmax_mlp, argnums=argnums)
    for k in range(4):
        fresh = tuple(a.copy() for a in args)          # other addresses
        if k == 2:
            wide = np.zeros((6000, 37))
            wide[:, 2:34] = fresh[5]
            fresh = fresh[:5] + (wide[:, 2:34],) + fresh[6:]
        monkeypatch.setenv("S2SAD_BLOCK_LOOP", "0")
        want = oracle(*fresh)
        monkeypatch.setenv("S2SAD_BLOCK_LOOP", "1")
        assert_same_bits(g(*fresh), want)
    assert loops_ran[0] > 0
    assert any(m is not None for m in moved)           # moved at least once
    assert any(m is None for m in moved)                # and made again (the strided X)


def test_two_python_threads_running_one_gradient_at_once(monkeypatch, loops_ran):
    """Each thread's blocks use its own scratch buffers (a dask worker's threads)."""
    monkeypatch.setenv("S2SAD_NUM_THREADS", "2")
    rng = np.random.default_rng(3)
    args, argnums = _args(softmax_mlp, 5000, np.float64, rng)
    want = _grads(softmax_mlp, args, argnums, monkeypatch, "0")
    monkeypatch.setenv("S2SAD_BLOCK_LOOP", "1")
    g = s2sad.grad(softmax_mlp, argnums=argnums)
    with ThreadPoolExecutor(2) as pool:         # (an exception in a thread is raised here by result())
        runs = [pool.submit(lambda: [g(*args) for _ in range(6)]) for _ in range(2)]
        results = [r for run in runs for r in run.result()]
    assert len(results) == 12 and loops_ran[0] > 0
    for r in results:
        assert_same_bits(r, want)


# ---------------------------------------------------------------- the loop on a hand-made pass

def _mulsum_pass(d, g, out, sums):
    """run_block of a pass `out = d * g`, each block's column sums into its row of `sums`
    (the mulsum call gemm_epilogue's stored-partial pass makes)."""
    f = productsums.mulsum_function(d.dtype)
    size, m = d.itemsize, d.shape[1]

    def run_block(lo, hi, i):
        blockloop.call(f, ptr(d) + lo * m * size, ptr(g) + lo * m * size, ptr(out) + lo * m * size,
                       ptr(sums) + i * m * size, hi - lo, m, m, m)
    return run_block


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_a_hand_made_pass_runs_every_block_once(threads):
    from s2sad.threads import run_chunks
    rng = np.random.default_rng(threads)
    p, m, rows = 1000, 24, 64
    d, g = rng.normal(size=(p, m)), rng.normal(size=(p, m))
    bounds = [(lo, min(p, lo + rows)) for lo in range(0, p, rows)]
    out, sums = np.full((p, m), np.nan), np.zeros((len(bounds), m))
    plan = blockloop.planned(("test", threads), bounds, _mulsum_pass(d, g, out, sums), dict)
    run = blockloop.runner(plan, lambda key: None, lambda buffers, key: None)
    run_chunks(run, threads, threads)
    np.testing.assert_array_equal(out, d * g)
    want = np.array([np.add.reduce(d[lo:hi] * g[lo:hi], axis=0) for lo, hi in bounds])
    np.testing.assert_allclose(sums, want, rtol=1e-13)


def test_it_declines_few_blocks_calls_that_differ_and_arguments_not_affine():
    f = productsums.mulsum_function(np.dtype(np.float64))
    bounds = [(lo, lo + 8) for lo in range(0, 80, 8)]
    with pytest.raises(blockloop.Decline):
        blockloop.planned("few", bounds[:blockloop.MIN_BLOCKS - 1], lambda lo, hi, i: None, dict)
    with pytest.raises(blockloop.Decline):      # block 1 makes one call more
        blockloop.planned("differ", bounds, lambda lo, hi, i: [blockloop.call(f, 1 << 41, 0, 0, 0, 0, 0, 0, 0)
                                                                for _ in range(1 + (i == 1))], dict)
    with pytest.raises(blockloop.Decline):      # i * i
        blockloop.planned("square", bounds, lambda lo, hi, i: blockloop.call(f, (1 << 41) + i * i * 8, 0, 0, 0,
                                                                             hi - lo, 0, 0, 0), dict)
    assert blockloop.recording() is False


def test_an_unrecordable_launch_declines_and_nothing_runs_while_recording():
    """A stub without its C call (runs over leading dims) is refused; recording makes no
    call (the out array stays untouched)."""
    def stub(vals, out, acc, seed, grads, tangents, out_dot):      # pragma: no cover (never called)
        raise AssertionError("called while recording")
    stub.call = None
    bounds = [(lo, lo + 8) for lo in range(0, 80, 8)]
    with pytest.raises(blockloop.Decline):
        blockloop.planned("stub", bounds, lambda lo, hi, i: blockloop.call_stub(stub, [], None, []), dict)
    assert blockloop.recording() is False
    f = productsums.mulsum_function(np.dtype(np.float64))
    assert isinstance(f, ctypes._CFuncPtr)


def test_a_bad_switch_value_warns_and_keeps_the_loop(monkeypatch):
    monkeypatch.setenv("S2SAD_BLOCK_LOOP", "off")
    with pytest.warns(RuntimeWarning, match="S2SAD_BLOCK_LOOP"):
        assert blockloop.on() is True
    monkeypatch.setenv("S2SAD_BLOCK_LOOP", "0")
    assert blockloop.on() is False


def _relayout(a: np.ndarray, how: str) -> np.ndarray:
    """a's values in another memory layout (a hostile caller's arrays)."""
    if a.ndim != 2 or how == "C":
        return a.copy()
    if how == "F":
        return np.asfortranarray(a)
    if how == "columns":             # a column window of a wider array
        w = np.zeros((a.shape[0], a.shape[1] + 5), a.dtype)
        w[:, 2:2 + a.shape[1]] = a
        return w[:, 2:2 + a.shape[1]]
    if how == "every other row":
        w = np.zeros((2 * a.shape[0], a.shape[1]), a.dtype)
        w[::2] = a
        return w[::2]
    return a[::-1].copy()[::-1]      # "reversed": negative row stride


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_plan_under_every_layout_of_every_argument_gives_the_python_loops_bits(monkeypatch, loops_ran, threads):
    """Each call's arguments in a layout drawn afresh (C, Fortran, a column window, every
    other row, reversed rows) and a row count whose last block is short or not: the plan
    is made, moved or declined, and every result is the Python loop's bits."""
    monkeypatch.setenv("S2SAD_NUM_THREADS", threads)
    rng = np.random.default_rng(int(threads))
    g = s2sad.grad(softmax_mlp, argnums=(0, 1, 2, 3, 4))
    layouts = ["C", "F", "columns", "every other row", "reversed"]
    for k in range(8):
        args, argnums = _args(softmax_mlp, int(rng.choice([6000, 6001])), np.float64, np.random.default_rng(k))
        args = tuple(_relayout(a, layouts[int(rng.integers(0, 5))]) for a in args)
        monkeypatch.setenv("S2SAD_BLOCK_LOOP", "0")
        want = s2sad.grad(softmax_mlp, argnums=argnums)(*args)
        monkeypatch.setenv("S2SAD_BLOCK_LOOP", "1")
        for _ in range(2):
            assert_same_bits(g(*args), want)
    assert loops_ran[0] > 0

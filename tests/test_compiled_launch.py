"""The compiled launchers (codegen/llvm_launch.py, backends/llvm.launch_stub): a short
run's driver call made by one METH_FASTCALL function instead of ctypes. Each launch
stub that has one gives the bits of its ctypes call (the same driver, forced by making
the launcher decline), for every layout a stub passes (contiguous, strided, row,
column, scalar; float64 and float32) and every entry point; the launcher declines
(NotImplemented: ctypes then runs) any argument of another type or count; long runs and
runs over leading dims keep ctypes; a gradient at n = 32 takes it and agrees with
S2SAD_LAUNCHERS=0 bit for bit."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import s2sad
from s2sad import runtime
from s2sad.backends import llvm as llvm_backend
from s2sad.codegen import llvm_launch
from s2sad.frontend import parse_function
from s2sad.passes.normalize import normalize
from conftest import central_fd, function_from_source

pytestmark = pytest.mark.skipif(not llvm_launch.layout_ok(), reason="no compiled launcher in this interpreter")
rng = np.random.default_rng(17)


def f(z, b, c):
    return math.tanh(z * b) + c * z


def _kernel(fn) -> runtime.Kernel:
    p = normalize(parse_function(fn))
    return runtime.Kernel(p, p.entry)


def _stubs(k):
    return [v[2] for key, v in k.launch_plans.items() if key[0] == "llvm" and isinstance(v, tuple) and len(v) == 4
            and v[2].__code__.co_filename == "<s2sad launch stub>"]


def _declining(*args):
    return NotImplemented


def _entry_points(k, args, active, tans, seed):
    return [runtime.apply(k, args, backend="llvm"), runtime.jvp(k, args, active, tans, backend="llvm"),
            runtime.vjp(k, args, active, seed, backend="llvm"), runtime.sum_dual(k, args, active, backend="llvm")]


def _flat(results) -> list:
    out = []
    for r in results:
        if isinstance(r, (tuple, list)):
            out += _flat(r)
        else:
            out.append(np.asarray(r))
    return out


def _strided(a):
    """`a`'s values in an array whose rows are not contiguous (every other row of a bigger one)."""
    if np.ndim(a) < 2:
        return a
    big = np.zeros((a.shape[0] * 2,) + a.shape[1:], a.dtype)
    big[::2] = a
    return big[::2]


LAYOUTS = {   # z, b, c: contiguous at the full shape, a row, a column, a scalar, strided, F-ordered
    "contig": lambda dt: (rng.normal(size=(6, 5)), rng.normal(size=(6, 5)), rng.normal(size=(6, 5))),
    "row-column-scalar": lambda dt: (rng.normal(size=(6, 5)), rng.normal(size=(1, 5)), rng.normal(size=(6, 1))),
    "scalar": lambda dt: (rng.normal(size=(6, 5)), 0.75, -1.25),
    "strided": lambda dt: (_strided(rng.normal(size=(6, 5))), rng.normal(size=(6, 5)), 0.5),
    "fortran": lambda dt: (np.asfortranarray(rng.normal(size=(6, 5))), rng.normal(size=(5,)), 0.5),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("active", [("z",), ("b", "c"), ("z", "b", "c")], ids="".join)
def test_the_launcher_gives_the_bits_of_ctypes(dtype, layout, active):
    k = _kernel(f)
    args = [a.astype(dtype) if isinstance(a, np.ndarray) else a for a in LAYOUTS[layout](dtype)]
    full = np.broadcast_shapes(*[np.shape(a) for a in args])
    tans = [np.asarray(rng.normal(size=np.shape(args["zbc".index(a)])), dtype) if np.ndim(args["zbc".index(a)])
            else 0.3 for a in active]
    seed = rng.normal(size=full).astype(dtype)
    _entry_points(k, args, active, tans, seed)      # plans made
    stubs = _stubs(k)
    assert stubs and all(s.__globals__["L"] is not None for s in stubs), "every short one-run launch has a launcher"
    compiled = _flat(_entry_points(k, args, active, tans, seed))
    for s in stubs:
        s.__globals__["L"] = _declining     # ctypes makes every call
    by_ctypes = _flat(_entry_points(k, args, active, tans, seed))
    assert len(compiled) == len(by_ctypes)
    for a, b in zip(compiled, by_ctypes):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b, equal_nan=True)
    python = _flat([runtime.apply(k, args, backend="python"), runtime.vjp(k, args, active, seed, backend="python")])
    tol = 1e-12 if dtype == np.float64 else 1e-5
    for a, b in zip(compiled[:1] + compiled[3:3 + len(active)], python):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _one_launcher():
    k = _kernel(f)
    args = [rng.normal(size=(4, 3)), rng.normal(size=(1, 3)), 0.5]     # (a row: not apply's lean path)
    runtime.apply(k, args, backend="llvm")
    runtime.apply(k, args, backend="llvm")
    (stub,) = _stubs(k)
    return stub, args


def test_the_launcher_declines_what_it_was_not_made_for():
    stub, (z, b, c) = _one_launcher()
    L = stub.__globals__["L"]
    out = np.empty((4, 3))

    class Sub(np.ndarray):
        pass

    assert L(z, b, c, out) is None      # (vals[0], vals[1], vals[2], out): it ran
    np.testing.assert_allclose(out, np.tanh(z * b) + c * z, rtol=1e-13, atol=1e-15)   # (s2sad's tanh against numpy's: cancels near zero)
    for bad in [(z, b, c), (z, b, c, out, out), (list(z), b, c, out), (z, b, 1, out), (z, b, np.float64(c), out),
                (z.view(Sub), b, c, out), (z, b, c, None), (z, b, "0.5", out)]:
        out[...] = 7.0
        assert L(*bad) is NotImplemented
        assert (out == 7.0).all(), "a declined call writes nothing"
    # a declined launch still runs, through ctypes
    out2 = np.empty((4, 3))
    stub([z, b, np.float64(c)], out2, None, None, None, None, None)
    np.testing.assert_allclose(out2, np.tanh(z * b) + c * z, rtol=1e-13, atol=1e-15)


def test_no_reference_leaks():
    stub, (z, b, c) = _one_launcher()
    L = stub.__globals__["L"]
    out = np.empty((4, 3))
    before = sys.getrefcount(None), sys.getrefcount(NotImplemented), sys.getrefcount(z), sys.getrefcount(out)
    for _ in range(1000):
        L(z, b, c, out), L(z, b, 1, out)
    assert (sys.getrefcount(None), sys.getrefcount(NotImplemented), sys.getrefcount(z),
            sys.getrefcount(out)) == before


def test_long_runs_and_leading_dims_keep_ctypes():
    k = _kernel(f)
    n = llvm_backend.LAUNCH_MAX + 1
    big = [rng.normal(size=(n, 1)), rng.normal(size=(1, 1)), 0.5]
    # (atol: tanh(z * b) + c * z cancels near zero, where a last-bit difference of the
    # two backends' tanh is a large relative one; which draws do depends on test order)
    np.testing.assert_allclose(runtime.apply(k, big, backend="llvm"), runtime.apply(k, big, backend="python"),
                               rtol=1e-13, atol=1e-15)
    runs = [rng.normal(size=(3, 4, 5)), rng.normal(size=(4, 1)), rng.normal(size=(5,))]
    np.testing.assert_allclose(runtime.apply(k, runs, backend="llvm"), runtime.apply(k, runs, backend="python"),
                               rtol=1e-13, atol=1e-15)
    stubs = _stubs(k)
    assert stubs and all(s.__globals__["L"] is None for s in stubs)


def test_the_switch_keeps_ctypes(monkeypatch):
    monkeypatch.setattr(llvm_backend, "LAUNCHERS", False)
    k = _kernel(f)
    args = [rng.normal(size=(4, 3)), rng.normal(size=(1, 3)), 0.5]
    runtime.apply(k, args, backend="llvm")
    assert _stubs(k) and all(s.__globals__["L"] is None for s in _stubs(k))


MLP_SOURCE = """
import numpy as np


def mlp(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)
"""


def _mlp(tmp_path, name):
    """A fresh copy of the MLP's loss (its own code: its own plan and kernels)."""
    return function_from_source(tmp_path, name, MLP_SOURCE, "mlp")


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_a_small_batch_gradient_takes_it_with_the_bits_of_ctypes(monkeypatch, tmp_path, dtype):
    n, d, h = 32, 8, 16
    args = [rng.normal(size=(d, h)) / 3, rng.normal(size=(1, h)) * 0.1, rng.normal(size=(h, 1)) / 4,
            rng.normal(size=(n, d)), rng.normal(size=(n, 1))]
    args = [a.astype(dtype) for a in args]
    with_launchers = s2sad.grad(_mlp(tmp_path, "mlp_on"), argnums=(0, 1, 2))
    got = [with_launchers(*args) for _ in range(4)]
    taken = [s for k in _kernels_of(with_launchers) for s in _stubs(k) if s.__globals__["L"] is not None]
    assert taken, "the gradient's launches go through launchers"
    monkeypatch.setattr(llvm_backend, "LAUNCHERS", False)
    by_ctypes = s2sad.grad(_mlp(tmp_path, "mlp_off"), argnums=(0, 1, 2))
    want = [by_ctypes(*args) for _ in range(4)]
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert a.dtype == b.dtype == dtype and np.array_equal(a, b)
    if dtype == np.float64:     # and right
        loss = _mlp(tmp_path, "mlp_value")
        for i in range(3):
            np.testing.assert_allclose(got[-1][i], central_fd(loss, args, i), rtol=1e-6, atol=1e-8)


def _kernels_of(g):
    """The kernels of a grad's generated program (the ones its namespace names)."""
    d = g.__s2sad__
    fn = d._array_impl[0]
    return [v for v in fn.__globals__.values() if isinstance(v, runtime.Kernel)]


def test_explain_says_what_a_warm_call_runs(tmp_path, monkeypatch):
    """(With no program made, array_program.build declining: the warm call is the
    specialised copy, site by site, and explain counts its launchers.)"""
    from s2sad import array_program
    monkeypatch.setattr(array_program, "build", lambda *a: (None, "no program in this test"))
    n, d, h = 32, 8, 16
    args = [rng.normal(size=(d, h)) / 3, rng.normal(size=(1, h)) * 0.1, rng.normal(size=(h, 1)) / 4,
            rng.normal(size=(n, d)), rng.normal(size=(n, 1))]
    g = s2sad.grad(_mlp(tmp_path, "mlp_explained"), argnums=(0, 1, 2))

    def warm():
        (line,) = [line for line in s2sad.explain(g, *args).lines if "warm calls" in line]
        return line

    assert "not called yet" in warm()
    g(*args)
    assert "not yet for these arguments" in warm()
    g(*args), g(*args)
    line = warm()
    assert "matched in machine code" in line and "not one compiled call for the whole gradient" in line
    got = [int(w) for w in line.split("; ")[1].split()[::4][:2]]   # "N of its kernels' M launch plans"
    assert got[0] == got[1] > 0, line
    fortran = [np.asfortranarray(a) for a in args]      # another signature: not specialised yet
    assert "not yet for these arguments" in [x for x in s2sad.explain(g, *fortran).lines if "warm calls" in x][0]


STORE_IR = """
define void @s2sad_test_launch_store(i64 %p, double %d, float %f, i64 %c) {
  %at = inttoptr i64 %p to ptr
  store double %d, ptr %at
  %fd = fpext float %f to double
  %at1 = getelementptr inbounds double, ptr %at, i64 1
  store double %fd, ptr %at1
  %cd = sitofp i64 %c to double
  %at2 = getelementptr inbounds double, ptr %at, i64 2
  store double %cd, ptr %at2
  ret void
}
"""


def test_every_kind_of_argument_reaches_the_driver():
    """An integer from an array's data pointer plus an offset or a constant, a double and a
    float from a Python float or a constant (the float rounded once, as ctypes' c_float)."""
    from s2sad.codegen import llvm_jit

    address, keep = llvm_jit.small_code("s2sad_test_launch_store", lambda: STORE_IR, False)
    out = np.full(4, np.nan)
    from_args = llvm_launch.launcher(address, "idfi", [8, 0, 0, -3], [0, 1, 2, None], [np.ndarray, float, float],
                                     keep)
    assert from_args(out, 1.0 / 3.0, 0.1) is None
    assert out[0] != out[0] and out[1] == 1.0 / 3.0 and out[2] == float(np.float32(0.1)) and out[3] == -3.0
    constants = llvm_launch.launcher(address, "idfi", [0, -2.5, 1e-40, 5], [0, None, None, None], [np.ndarray], keep)
    assert constants(out) is None
    assert out.tolist()[:3] == [-2.5, float(np.float32(1e-40)), 5.0]      # (a subnormal float: rounded, not flushed)
    assert constants(out, out) is NotImplemented and constants([0.0] * 4) is NotImplemented
    assert from_args(out, 1, 0.1) is NotImplemented and from_args(out, 0.5, True) is NotImplemented


def test_shapes_and_layouts_changing_between_calls(monkeypatch, tmp_path):
    """Warm calls alternating batch sizes, F-ordered and strided inputs and float32: each
    the bits of the same gradient with every launch through ctypes."""
    def args_for(n, dtype, how):
        a = [rng.normal(size=(6, 12)) / 3, rng.normal(size=(1, 12)) * 0.1, rng.normal(size=(12, 1)) / 4,
             rng.normal(size=(n, 6)), rng.normal(size=(n, 1))]
        a = [x.astype(dtype) for x in a]
        if how == "fortran":
            a[3] = np.asfortranarray(a[3])
        elif how == "strided":
            a[3] = _strided(a[3])
        return a

    calls = [args_for(n, dt, how) for n, dt, how in [(32, np.float64, "c"), (33, np.float64, "c"),
                                                    (32, np.float64, "fortran"), (32, np.float32, "c"),
                                                    (32, np.float64, "strided"), (5, np.float64, "c")]] * 3
    on = s2sad.grad(_mlp(tmp_path, "mlp_shapes_on"), argnums=(0, 1, 2))
    got = [on(*a) for a in calls]
    monkeypatch.setattr(llvm_backend, "LAUNCHERS", False)
    off = s2sad.grad(_mlp(tmp_path, "mlp_shapes_off"), argnums=(0, 1, 2))
    want = [off(*a) for a in calls]
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def test_a_long_run_releases_the_gil_around_its_driver():
    """A launcher's run of RELEASE_MIN elements or more calls its driver with the GIL
    released (t[5], t[6]: PyEval_SaveThread and PyEval_RestoreThread), a shorter one holds
    it (zeros there); both give ctypes' bits, and threads launching at once get each
    call's own bits."""
    k = _kernel(f)
    cols = llvm_backend.RELEASE_MIN // 32
    short = [rng.normal(size=(4, 3)), rng.normal(size=(1, 3)), 0.5]
    long = [rng.normal(size=(32, cols)), rng.normal(size=(1, cols)), 0.5]
    assert 32 * cols <= llvm_backend.LAUNCH_MAX
    want = {}
    for name, args in (("short", short), ("long", long)):
        runtime.apply(k, args, backend="llvm")
        want[name] = runtime.apply(k, args, backend="llvm")
    tables = {key[-1]: v[2].__globals__["L"].__self__ for key, v in k.launch_plans.items()
              if key[0] == "llvm" and isinstance(v, tuple) and len(v) == 4 and v[2].__globals__.get("L")}
    assert list(tables[(4, 3)][5:7]) == [0, 0]
    assert list(tables[(32, cols)][5:7]) == llvm_launch.release_addresses() and tables[(32, cols)][5] != 0
    for name, args in (("short", short), ("long", long)):
        held = {s: s.__globals__["L"] for s in _stubs(k)}
        for s in held:
            s.__globals__["L"] = _declining
        by_ctypes = runtime.apply(k, args, backend="llvm")
        for s, launcher in held.items():
            s.__globals__["L"] = launcher
        assert want[name].tobytes() == by_ctypes.tobytes()

    import threading
    got, errors = [], []

    def many():
        try:
            got.extend(runtime.apply(k, long, backend="llvm").tobytes() for _ in range(200))
        except BaseException as e:   # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=many) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(got) == 600 and set(got) == {want["long"].tobytes()}

"""The runtime's cuda backend: cupy arrays (or backend="cuda") go to the CUDA kernels,
cupy arrays come back; without cupy or a device, a clear BackendUnavailableError.

Without a GPU, a small fake cupy module stands in (`fake_cupy`): `ndarray` is a
numpy-backed subclass, allocation and conversion functions make such arrays, and
`RawKernel` compiles the generated CUDA source with g++ through `cuda_host` and runs
it on the host. Everything between the runtime and `cupy.RawKernel` (the cuda driver
ABI, layouts, offsets, the finish kernels, the one-thread scans) is the real code path.
Tests marked `gpu` run on a real device and are skipped without one.
"""
from __future__ import annotations

import math
import re
import sys
import types

import numpy as np
import pytest

import s2sad
from s2sad import backends, runtime
from s2sad.backends import cuda_host, cuda_launch
from s2sad.codegen import cuda
from s2sad.runtime import Kernel

# ------------------------------------------------------------------------------------
# the fake cupy


class FakeArray(np.ndarray):
    """cupy.ndarray, played by numpy memory ("device" memory: never the user's)."""


def _dev(a, dtype=None) -> FakeArray:
    """A fresh device copy of `a`."""
    return np.array(a, dtype=dtype).view(FakeArray)


def _needs_device(a, what: str) -> None:
    if not isinstance(a, FakeArray):   # real cupy raises too: no implicit host arrays
        raise TypeError(f"fake cupy.{what}: expected a cupy array, got {type(a).__name__}")


_KERNEL_DECL = re.compile(r'extern "C" __global__ void (\w+)\(\n(.*?)\)\n\{', re.S)


def _parse_kernels(source: str) -> dict[str, list]:
    """The kernels of a generated source and their parameters as cuda.Arg (kind and name)."""
    kinds = [(r"long long (\w+)", "index"), (r"const double\* (partials)", "csums"), (r"double\* (partials)", "sums"),
             (r"const \w+\* (\w+)", "cptr"), (r"\w+\* (\w+)", "ptr"),
             (r"\w+ (\w+)", "value")]
    kernels = {}
    for name, params in _KERNEL_DECL.findall(source):
        args = []
        for decl in (p.strip() for p in params.split(",")):
            kind, pname = next((k, m.group(1)) for pat, k in kinds if (m := re.fullmatch(pat, decl)))
            args.append(cuda.Arg(pname, kind, "?"))
        kernels[name] = args
    return kernels


class FakeRawKernel:
    """cupy.RawKernel(code, name, options): compiled with g++ (cuda_host), run on the host."""

    launches: list = []

    def __init__(self, code: str, name: str, options=()):
        assert "--std=c++17" in options
        self.code, self.name = code, name
        self.tag = "f64" if "float64" in code.splitlines()[0] else "f32"
        self.kernels = _parse_kernels(code)
        assert name in self.kernels, name

    def __call__(self, grid, block, args):
        cuda_host.build_sources([(self.code, self.tag, list(self.kernels.items()))])
        params = self.kernels[self.name]
        assert len(params) == len(args), (self.name, len(params), len(args))
        real = np.float64 if self.tag == "f64" else np.float32
        for a, v in zip(params, args):   # what cupy would be handed
            want = {"index": np.int64, "value": real}.get(a.kind, FakeArray)
            assert isinstance(v, want), (self.name, a, type(v))
        FakeRawKernel.launches.append((self.name, grid, block))
        cuda_host.call(self.code, self.name, self.tag, grid[0], block[0], list(zip(params, args)))


def make_fake_cupy(devices=1) -> types.ModuleType:
    """A cupy module with `devices` devices (an exception instance: getDeviceCount raises it)."""
    cp = types.ModuleType("cupy")
    cp.ndarray = FakeArray

    def asarray(a, dtype=None):
        if isinstance(a, FakeArray) and (dtype is None or a.dtype == np.dtype(dtype)):
            return a
        return _dev(a, dtype)

    def ascontiguousarray(a, dtype=None):
        _needs_device(a, "ascontiguousarray")
        return np.ascontiguousarray(a, dtype=dtype).view(FakeArray)

    def broadcast_to(a, shape):
        _needs_device(a, "broadcast_to")
        return np.broadcast_to(a, shape, subok=True)

    def asnumpy(a):
        _needs_device(a, "asnumpy")
        return np.array(a).view(np.ndarray)

    def device_count():
        if isinstance(devices, Exception):
            raise devices
        return devices

    cp.asarray = asarray
    cp.array = lambda a, dtype=None: _dev(a, dtype)
    cp.ascontiguousarray = ascontiguousarray
    cp.broadcast_to = broadcast_to
    cp.asnumpy = asnumpy
    # NaN, so that an output a kernel failed to write shows
    cp.empty = lambda shape, dtype=np.float64: np.full(shape, np.nan, dtype=dtype).view(FakeArray)
    cp.zeros = lambda shape, dtype=np.float64: np.zeros(shape, dtype=dtype).view(FakeArray)
    cp.RawKernel = FakeRawKernel
    cp.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=device_count),
        Device=lambda: types.SimpleNamespace(id=0, attributes={"MultiProcessorCount": 2}))
    return cp


@pytest.fixture
def fake_cupy(monkeypatch):
    if cuda_host.available() is not None:
        pytest.skip(cuda_host.available())
    cp = make_fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(cuda_launch, "_RAW_KERNELS", {})   # never hand a fake kernel to real cupy
    FakeRawKernel.launches = []
    return cp


def dev(a, dtype=None) -> FakeArray:
    return _dev(a, dtype)


def assert_close(got, want, rtol=1e-12, atol=1e-12, what=""):
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64),
                               rtol=rtol, atol=atol, err_msg=what)


# ------------------------------------------------------------------------------------
# functions differentiated end to end


def user(z):
    return math.tanh(z) * z / (1.0 + z * z)


def abs_loss(x):
    return np.sum(np.abs(x))


def tanh_loss(x):
    return np.sum(np.tanh(x))


def user_loss(x):
    return np.sum(s2sad.broadcast(user, x))


def mean_user_loss(x):
    return np.mean(s2sad.broadcast(user, x))


def closure_loss(x, y):
    return np.sum(s2sad.broadcast(lambda z: z ** 2 + y[0], x))


def two_arg_loss(x, w):
    return np.sum(np.tanh(x * w) + w)


total = 0.0


def running(x):
    global total
    total += x
    return total


def running_loss(x):
    return sum(map(running, x))


def gt_loss(x):
    return np.sum(x > 0.1)


# ------------------------------------------------------------------------------------
# dispatch and availability


def test_numpy_goes_to_llvm_without_importing_cupy(monkeypatch):
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    assert backends.backend_for("auto", [np.ones(3), 2.0]).name == "llvm"
    s2sad.grad(user_loss)(np.linspace(-1.0, 1.0, 7))
    assert "cupy" not in sys.modules


def test_cupy_arrays_pick_the_cuda_backend(fake_cupy):
    assert backends.backend_for("auto", [dev(np.ones(3)), 2.0]).name == "cuda"
    assert backends.backend_for("auto", [np.ones(3), dev(np.ones(3))]).name == "cuda"
    assert backends.backend_for("auto", [np.ones(3)]).name == "llvm"
    assert backends.backend_for("cuda", [np.ones(3)]).name == "cuda"
    assert backends.is_cupy(dev([1.0])) and not backends.is_cupy(np.ones(1))


def test_cupy_arrays_on_a_cpu_backend_are_refused_clearly(fake_cupy):
    k = _kernel(user)
    for backend in ("llvm", "python"):
        with pytest.raises(s2sad.BackendUnavailableError, match="cupy arrays cannot run on the"):
            runtime.apply(k, [dev(X[:10])], backend=backend)
        with pytest.raises(s2sad.BackendUnavailableError, match="backend='cuda'"):
            runtime.sum_dual(k, [dev(X[:10])], ("z",), backend=backend)


def test_without_cupy_backend_cuda_says_cupy_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)   # `import cupy` raises ImportError
    assert "cupy" in cuda_launch.available()
    for call in (lambda: s2sad.grad(user_loss, backend="cuda")(np.ones(4)),
                 lambda: s2sad.broadcast(user, np.ones(4), backend="cuda"),
                 lambda: backends.backend_for("cuda", [np.ones(2)])):
        with pytest.raises(s2sad.BackendUnavailableError, match="cupy is not installed") as e:
            call()
        assert isinstance(e.value, s2sad.S2SADError) and "backend='cuda'" in str(e.value)


@pytest.mark.skipif(cuda_launch.available() is None, reason="cupy and a device are here")
def test_backend_cuda_unavailable_here():
    """This machine (CI) lacks cupy or a device: backend='cuda' says which."""
    with pytest.raises(s2sad.BackendUnavailableError, match="cupy|device"):
        s2sad.grad(abs_loss, backend="cuda")(np.ones(3))


@pytest.mark.parametrize("devices", [0, RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")])
def test_without_a_device_backend_cuda_says_so(monkeypatch, devices):
    monkeypatch.setitem(sys.modules, "cupy", make_fake_cupy(devices=devices))
    with pytest.raises(s2sad.BackendUnavailableError, match="no CUDA device"):
        s2sad.value_and_grad(user_loss, backend="cuda")(np.ones(4))
    with pytest.raises(s2sad.BackendUnavailableError, match="no CUDA device"):
        runtime.scan_apply(Kernel(_running_program(), "running"), [np.ones(3)], [0.0], backend="cuda")


def test_explain_says_a_scan_is_slow_on_the_gpu():
    text = str(s2sad.explain(running_loss))
    assert "-> scan:" in text and "on the GPU (cupy arrays) it runs in one thread" in text


# ------------------------------------------------------------------------------------
# end to end through s2sad.grad / value_and_grad / broadcast: cuda against llvm

X = np.random.default_rng(0).uniform(-2.0, 2.0, 1000)


@pytest.mark.parametrize("loss", [abs_loss, tanh_loss, user_loss, mean_user_loss, gt_loss],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_grad_on_cupy_matches_llvm(fake_cupy, loss, dtype):
    x = X.astype(dtype)
    want_v, want_g = s2sad.value_and_grad(loss, backend="llvm")(x)
    xd = dev(x)
    got_v, got_g = s2sad.value_and_grad(loss)(xd)            # auto: a cupy array goes to cuda
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert_close(got_g, want_g, rtol, rtol, loss.__name__)
    assert got_v == pytest.approx(want_v, rel=rtol, abs=rtol * len(x))
    assert_close(s2sad.grad(loss, backend="cuda")(xd), want_g, rtol, rtol)
    np.testing.assert_array_equal(xd, x)                     # inputs are never written
    assert any(name.endswith("__finish") for name, _, _ in FakeRawKernel.launches)


def test_numpy_inputs_on_backend_cuda_come_back_as_numpy(fake_cupy):
    g = s2sad.grad(user_loss, backend="cuda")(X)
    assert type(g) is np.ndarray
    assert_close(g, s2sad.grad(user_loss, backend="llvm")(X))
    out = s2sad.broadcast(user, X, backend="cuda")
    assert type(out) is np.ndarray
    assert_close(out, s2sad.broadcast(user, X, backend="llvm"))
    assert FakeRawKernel.launches


def test_array_program_with_an_outer_product_seed_on_backend_cuda(fake_cupy):
    """The one-output MLP in recompute mode: on the cuda backend the kernel's pullback gets
    the outer product formed (no seeded kernel there) and the bias row materialized."""
    from test_seed_factors import mlp_args, one_output_mlp

    args = mlp_args(13)
    got = s2sad.grad(one_output_mlp, argnums=(0, 1, 2), backend="cuda", mode="recompute")(*args)
    want = s2sad.grad(one_output_mlp, argnums=(0, 1, 2), backend="llvm", mode="recompute")(*args)
    for g, w in zip(got, want):
        assert type(g) is np.ndarray
        assert_close(g, w, 1e-13, 1e-13)
    assert FakeRawKernel.launches


def test_broadcast_on_cupy_returns_cupy(fake_cupy):
    x = dev(X.reshape(10, 100))
    out = s2sad.broadcast(user, x)
    assert isinstance(out, FakeArray) and out.shape == (10, 100)
    assert_close(out, s2sad.broadcast(user, X.reshape(10, 100), backend="llvm"))
    row = dev(np.linspace(0.5, 1.5, 100))
    both = s2sad.broadcast(lambda a, b: a * b + math.tanh(b), x, row)   # a broadcast row: strided
    assert isinstance(both, FakeArray)
    assert_close(both, X.reshape(10, 100) * row + np.tanh(row), 1e-14, 1e-14)


def test_closure_keeps_its_gradient_on_the_gpu(fake_cupy):
    """`lambda z: z**2 + y[0]`: the gradient w.r.t. y is n, not dropped."""
    x, y = X[:300], np.array([0.5, 2.0])
    want_v, (want_gx, want_gy) = s2sad.value_and_grad(closure_loss, argnums=(0, 1), backend="llvm")(x, y)
    got_v, (gx, gy) = s2sad.value_and_grad(closure_loss, argnums=(0, 1))(dev(x), dev(y))
    assert got_v == pytest.approx(want_v, rel=1e-12)
    assert_close(gx, want_gx)
    assert_close(gy, want_gy)
    assert_close(gy, [300.0, 0.0])


def test_two_arguments_and_a_broadcast_scalar(fake_cupy):
    x = X[:257]
    for w in (0.75, np.float64(0.75)):
        want = s2sad.grad(two_arg_loss, argnums=(0, 1), backend="llvm")(x, w)
        got = s2sad.grad(two_arg_loss, argnums=(0, 1))(dev(x), w)
        assert_close(got[0], want[0])
        assert_close(got[1], want[1], 1e-12, 1e-10)


def test_stateful_running_sum_on_the_gpu(fake_cupy):
    """A global running sum: the scan runs in one GPU thread, the global is written once."""
    global total
    x = X[:200]
    total = 0.5
    want_v, want_g = s2sad.value_and_grad(running_loss, backend="llvm")(x)
    want_total = total
    total = 0.5
    FakeRawKernel.launches = []
    got_v, got_g = s2sad.value_and_grad(running_loss)(dev(x))
    assert total == pytest.approx(want_total, rel=1e-13)
    assert got_v == pytest.approx(want_v, rel=1e-13)
    assert_close(got_g, want_g, 1e-13, 1e-13)
    assert_close(got_g, np.arange(200.0, 0.0, -1.0), 1e-13, 1e-13)
    ((name, grid, block),) = FakeRawKernel.launches
    assert "__scan_" in name and grid == (1,) and block == (1,)
    total = 0.0
    out = s2sad.broadcast(running, dev(np.ones(5)))         # scan_apply
    assert isinstance(out, FakeArray)
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0, 4.0, 5.0])
    assert total == 5.0


def test_api_gradients_of_cupy_arguments_are_cupy(fake_cupy):
    g = s2sad.grad(user_loss)(dev(X))
    assert isinstance(g, FakeArray)
    v, (gx, gy) = s2sad.value_and_grad(lambda x, y: np.sum(s2sad.broadcast(lambda z: z * z + y[0], x)),
                                       argnums=(0, 1))(dev(X), dev(np.array([1.0, 2.0])))
    assert isinstance(gx, FakeArray) and isinstance(gy, FakeArray)
    np.testing.assert_allclose(np.asarray(gx), 2 * X)
    np.testing.assert_array_equal(np.asarray(gy), [X.size, 0.0])


# ------------------------------------------------------------------------------------
# every runtime entry point on cupy arrays: cupy arrays out, llvm's numbers


def _program(f):
    from s2sad.frontend import parse_function
    from s2sad.passes.normalize import normalize

    return normalize(parse_function(f))


def _kernel(f) -> Kernel:
    p = _program(f)
    return Kernel(p, p.entry)


def _running_program():
    return _program(running)


def f3(x, y, w):
    s = x * y + w ** 2
    return math.sin(s) if s > 0 else -s


# shapes: contiguous; a broadcast row and a scalar; three dims that do not merge (the
# runtime launches per leading index, at offsets)
SHAPES = [((50,), (50,), ()), ((4, 25), (25,), (1,)), ((3, 1, 4), (1, 5, 1), (3, 5, 4))]


def _args(shapes, rng):
    return [rng.uniform(0.2, 1.5, s) if s else float(rng.uniform(0.2, 1.5)) for s in shapes]


def _on_device(args):
    return [dev(a) if isinstance(a, np.ndarray) else a for a in args]


def _check_cupy(got, want, rtol=1e-12):
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _check_cupy(g, w, rtol)
        return
    if isinstance(want, np.ndarray):
        assert isinstance(got, FakeArray), type(got)
        assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    assert_close(got, want, rtol, rtol)


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_runtime_entry_points_on_cupy(fake_cupy, shapes):
    k = _kernel(f3)
    rng = np.random.default_rng(1)
    args = _args(shapes, rng)
    dargs = _on_device(args)
    active = ("x", "w")
    _check_cupy(runtime.apply(k, dargs), runtime.apply(k, args, backend="llvm"))
    v, g = runtime.sum_dual(k, dargs, active, scale=0.5)
    wv, wg = runtime.sum_dual(k, args, active, scale=0.5, backend="llvm")
    assert v == pytest.approx(wv, rel=1e-12)
    _check_cupy(g, wg)
    tans = [rng.normal(size=np.shape(args[0])), rng.normal(size=np.shape(args[2]))]
    dtans = [dev(t) if t.shape else float(t) for t in tans]
    _check_cupy(runtime.jvp(k, dargs, active, dtans), runtime.jvp(k, args, active, tans, backend="llvm"))
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    out_bar = rng.normal(size=shape)
    _check_cupy(runtime.vjp(k, dargs, active, dev(out_bar)), runtime.vjp(k, args, active, out_bar, backend="llvm"))
    _check_cupy(runtime.vjp(k, dargs, active, 2.0), runtime.vjp(k, args, active, 2.0, backend="llvm"))
    for a, d in zip(args, dargs):   # inputs untouched
        np.testing.assert_array_equal(d, a)


def test_runtime_scans_on_cupy(fake_cupy):
    k = _kernel(running)
    x = np.linspace(0.1, 1.0, 12).reshape(3, 4)
    want = runtime.scan_apply(k, [x], [0.25], backend="llvm")
    got = runtime.scan_apply(k, [dev(x)], [0.25])
    _check_cupy(got[0], want[0])
    assert got[1] == pytest.approx(want[1], rel=1e-15)
    for seed, value in [(1.0, "sum"), (np.linspace(0.5, 1.5, 12).reshape(3, 4), "store"),
                        (np.linspace(0.5, 1.5, 4), "none")]:
        want = runtime.scan_grads(k, [x], ("x",), [0.25], seed=seed, value=value, backend="llvm")
        dseed = dev(seed) if isinstance(seed, np.ndarray) else seed
        got = runtime.scan_grads(k, [dev(x)], ("x",), [0.25], seed=dseed, value=value)
        if value == "store":
            _check_cupy(got[0], want[0])
        else:
            assert got[0] == pytest.approx(want[0], rel=1e-14)
        _check_cupy(got[1], want[1])
        assert got[2] == pytest.approx(want[2], rel=1e-15)
    assert all(grid == (1,) and block == (1,) for _, grid, block in FakeRawKernel.launches)


def above(z):
    return z > 0.1


def test_float32_and_bool_results(fake_cupy):
    k = _kernel(above)
    x = X.astype(np.float32)
    got = runtime.apply(k, [dev(x)])
    assert isinstance(got, FakeArray) and got.dtype == np.bool_
    np.testing.assert_array_equal(got, x > 0.1)
    k2 = _kernel(user)
    _check_cupy(runtime.apply(k2, [dev(x)]), runtime.apply(k2, [x], backend="llvm"), 1e-6)


def test_drivers_are_lowered_once(fake_cupy, monkeypatch):
    k = _kernel(user)
    x = dev(X[:64])
    runtime.sum_dual(k, [x], ("z",))
    calls = []
    real_lower = cuda.lower
    monkeypatch.setattr(cuda, "lower", lambda *a: calls.append(a) or real_lower(*a))
    for _ in range(3):
        runtime.sum_dual(k, [x], ("z",))
    assert calls == []


# ------------------------------------------------------------------------------------
# a real device


def _device_reason():
    return cuda_launch.available() or ""


@pytest.mark.gpu
@pytest.mark.skipif(cuda_launch.available() is not None, reason=_device_reason())
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gpu_runtime_entry_points(shapes):
    import cupy

    k = _kernel(f3)
    rng = np.random.default_rng(2)
    args = _args(shapes, rng)
    dargs = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    active = ("x", "w")

    def same(got, want):
        if isinstance(want, (list, tuple)):
            for g, w in zip(got, want):
                same(g, w)
            return
        if isinstance(want, np.ndarray):
            assert isinstance(got, cupy.ndarray) and got.shape == want.shape
            got = cupy.asnumpy(got)
        # the GPU contracts into FMAs and has its own libm
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)

    same(runtime.apply(k, dargs), runtime.apply(k, args, backend="llvm"))
    v, g = runtime.sum_dual(k, dargs, active)
    wv, wg = runtime.sum_dual(k, args, active, backend="llvm")
    assert v == pytest.approx(wv, rel=1e-12)
    same(g, wg)
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    out_bar = rng.normal(size=shape)
    same(runtime.vjp(k, dargs, active, cupy.asarray(out_bar)), runtime.vjp(k, args, active, out_bar, backend="llvm"))


@pytest.mark.gpu
@pytest.mark.skipif(cuda_launch.available() is not None, reason=_device_reason())
def test_gpu_grad_and_scan_with_backend_cuda():
    global total
    x = X
    for loss in (abs_loss, tanh_loss, user_loss, gt_loss):
        np.testing.assert_allclose(s2sad.grad(loss, backend="cuda")(x), s2sad.grad(loss, backend="llvm")(x),
                                   rtol=1e-12, atol=1e-12)
    total = 0.0
    g = s2sad.grad(running_loss, backend="cuda")(x[:100])
    np.testing.assert_allclose(g, np.arange(100.0, 0.0, -1.0), rtol=1e-13)
    assert total == pytest.approx(float(np.sum(x[:100])), rel=1e-12)
    total = 0.0


# ------------------------------------------------------------------------------------
# bench/gpu.py (make gpu-check): its table on made-up numbers; here it says there is no GPU


def _bench_gpu():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "bench" / "gpu.py"
    spec = importlib.util.spec_from_file_location("bench_gpu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_gpu_table_on_fake_numbers():
    g = _bench_gpu()
    assert set(g.CASES) == {"abs", "cbrt", "tanh", "user", "gt", "ident_tanh", "newton"}
    rows = [g.row("x.copy()", g.COPY, 2.0, 1.9, "800 GB/s"),
            g.row("sum(abs(x))", "s2sad grad", 2.4, 2.3, "ok (0.0e+00)"),
            g.row("sum(abs(x))", "s2sad sum_dual", 2.2, 2.1, "ok (0.0e+00)"),
            g.row("sum(abs(x))", "jax jit(grad)", 5.0, 4.0),
            g.row("sum(cbrt(x))", "s2sad grad", note="error: TypeError: boom")]
    text = g.build_table(rows, "title line")
    lines = text.splitlines()
    assert lines[0] == "title line" and lines[1].split()[:2] == ["case", "system"]
    assert len(lines) == 3 + len(rows)
    assert re.search(r"cupy x\.copy\(\)\s+2\.000\s+1\.900\s+1\.00\s+800 GB/s", text)
    assert re.search(r"sum\(abs\(x\)\)\s+s2sad grad\s+2\.400\s+2\.300\s+1\.20\s+ok", text)
    assert re.search(r"^\s+s2sad sum_dual\s+2\.200\s+2\.100\s+1\.10", text, re.M)   # case not repeated
    assert re.search(r"jax jit\(grad\)\s+5\.000\s+4\.000\s+2\.50", text)
    assert re.search(r"sum\(cbrt\(x\)\)\s+s2sad grad\s+-\s+-\s+-\s+error: TypeError: boom", text)
    # without a copy row, no multiples
    assert "1.20" not in g.build_table(rows[1:2])


def test_bench_gpu_picks_a_smaller_n_when_memory_is_short():
    g = _bench_gpu()
    assert g.pick_n(140 * 2**30) == 10**8
    n = g.pick_n(4 * 2**30)
    assert n < 10**8 and n * 8 * g.ARRAYS <= 0.8 * 4 * 2**30 and 2 * n * 8 * g.ARRAYS > 0.8 * 4 * 2**30
    assert g.pick_n(0) >= 10**5


def test_bench_gpu_measure_and_jax_fallback():
    g = _bench_gpu()
    calls = []
    med, mn = g.measure(lambda: calls.append(1), lambda r: None, repeat=5, warmup=2)
    assert len(calls) == 7 and 0 <= mn <= med


@pytest.mark.skipif(cuda_launch.available() is None, reason="a GPU is here: make gpu-check runs the benchmark")
def test_bench_gpu_without_a_gpu_exits_cleanly(capsys):
    assert _bench_gpu().main([]) == 0
    assert "no GPU" in capsys.readouterr().out

import os
import textwrap
import time

import gast
import numpy as np
import pytest

import s2sad
from s2sad.kernel import KernelModule
from s2sad.passes import rowfusion

BACKENDS = ["python", "llvm"]


@pytest.fixture(autouse=True)
def row_fusion_switch_follows_the_environment():
    """S2SAD_ROW_FUSION is read when a plan is built (passes/rowfusion.SWITCH): a test that
    set it through monkeypatch leaves the switch as it read it; read it again after."""
    yield
    rowfusion.enabled()


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def central_fd(f, args, i, h=1e-6):
    """Central finite differences of scalar f(*args) w.r.t. args[i] (array or float)."""
    args = list(args)
    a = args[i]
    if np.ndim(a) == 0 and not isinstance(a, np.ndarray):
        args[i] = a + h
        fp = f(*args)
        args[i] = a - h
        fm = f(*args)
        return (fp - fm) / (2 * h)
    a = np.asarray(a, dtype=float)
    out = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        ap, am = a.copy(), a.copy()
        ap[idx] += h
        am[idx] -= h
        args[i] = ap
        fp = f(*args)
        args[i] = am
        fm = f(*args)
        out[idx] = (fp - fm) / (2 * h)
    return out


def assert_same_grads(got, want):
    """grad's gradients against value_and_grad's: the same types and shapes, and the
    same numbers to 1e-14 of the largest: bit for bit, in fact, except sums over
    elements (scalar arguments, captured elements), which a kernel without the value may
    vectorise differently, so add in another order."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w) and np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-14, atol=1e-14 * float(np.max(np.abs(w), initial=1.0)))


def assert_same_bits(got, want):
    """Two results of several arrays: the same types, shapes, dtypes and bytes."""
    assert type(got) is type(want) and len(got) == len(want)
    for a, b in zip(got, want):
        assert type(a) is type(b) and a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def specialised_copy(g, args):
    """What grad `g`'s hot path keeps for the signature of `args` (array_special.Specializer.specs:
    (what runs, as_is, why not one compiled call, the copy)), or None."""
    sp = g.__s2sad__.leaf_hot.special
    return sp.specs.get(tuple(x for a in args for x in (a.shape, a.strides, a.dtype)))


def kernel(src: str, entry: str, dual: str | None = None, active: tuple = ()) -> KernelModule:
    """A kernel module from core-language source (its functions, `entry` applied per
    element, `dual` its dual differentiating `active`), for the backends' tests."""
    tree = gast.parse(textwrap.dedent(src))
    fns = {f.name: f for f in tree.body}
    params = tuple(a.id for a in fns[entry].args.args)
    return KernelModule(name=entry, functions=fns, entry=entry, params=params, dual_entry=dual,
                        active=tuple(active))


def wait_for_child(pid: int, timeout: float, hung: str) -> None:
    """Wait for a forked child to exit 0; kill it and fail with `hung` past `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        ended, status = os.waitpid(pid, os.WNOHANG)
        if ended:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail(hung)
        time.sleep(0.01)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@pytest.fixture
def fresh_reports(monkeypatch):
    """The cache's warnings afresh for this test (objcache gives each once per process)."""
    from s2sad.codegen import objcache
    monkeypatch.setattr(objcache, "reported", set())


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache directory and key for this test, and no kernels in memory."""
    from s2sad.codegen import llvm_jit
    d = tmp_path / "cache"
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(d))
    monkeypatch.setenv("S2SAD_CACHE_KEY", str(tmp_path / "key" / "cache.key"))
    monkeypatch.delenv("S2SAD_CACHE", raising=False)
    monkeypatch.setattr(llvm_jit, "_cache", {})
    return d


# the Rosenbrock function of a vector and its Hessian by hand (the higher-order tests)
def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_hessian(x):
    """The Rosenbrock function's Hessian, by hand."""
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        h[i + 1, i + 1] += 200.0
        h[i, i + 1] = h[i + 1, i] = -400.0 * x[i]
    return h


def hessian_per_column(loss, args, i, j, backend="llvm"):
    """Block (i, j) of loss's Hessian one column at a time: jvp(grad_i loss) along each
    basis direction of argument j (the oracle the batched and unrolled paths are checked
    against)."""
    g = s2sad.grad(loss, argnums=i, backend=backend)
    x = np.asarray(args[j])
    cols = []
    for k in range(x.size):
        tangents = [np.zeros_like(a) if isinstance(a, np.ndarray) else 0.0 for a in args]
        e = np.zeros(x.size)
        e[k] = 1.0
        tangents[j] = e.reshape(x.shape)
        cols.append(np.asarray(s2sad.jvp(g, tuple(args), tuple(tangents), backend=backend)[1]))
    return np.stack(cols, axis=-1).reshape(np.shape(args[i]) + x.shape)


def two_worker_client():
    """A client of a LocalCluster of 2 worker processes, one thread each (a dask test
    module's cluster, module-scoped by its fixture), closed after."""
    import distributed
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                       silence_logs=40)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def directional_fd(G, args, tans, h=1e-6):
    """Central differences of G (a gradient: an array or a tuple of them) along the tangents
    `tans` of `args` (arguments that are not arrays or floats are passed as they are)."""
    plus = [a + h * t if isinstance(a, (np.ndarray, float)) else a for a, t in zip(args, tans)]
    minus = [a - h * t if isinstance(a, (np.ndarray, float)) else a for a, t in zip(args, tans)]
    gp, gm = G(*plus), G(*minus)
    if not isinstance(gp, tuple):
        return (np.asarray(gp) - np.asarray(gm)) / (2 * h)
    return tuple((np.asarray(p) - np.asarray(m)) / (2 * h) for p, m in zip(gp, gm))


def assert_close_each(got, want, tol):
    """Each pair of got and want has one shape and differs by at most tol * (1 + max |want|)."""
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        assert np.max(np.abs(np.asarray(g) - w), initial=0.0) <= tol * (1.0 + np.max(np.abs(w), initial=0.0))


def line_of(fun, text):
    """The file line of fun's one source line that contains `text`."""
    import inspect
    lines, first = inspect.getsourcelines(fun)
    hits = [first + k for k, l in enumerate(lines) if text in l]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def function_from_source(directory, module: str, source: str, name: str):
    """`name` from `source` written to directory/<module>.py and imported: a function
    with its own code (its own plan and kernels) and a file s2sad reads it from."""
    import importlib.util
    path = directory / f"{module}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(module, path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return getattr(loaded, name)


class no_value_join:
    """value_and_grad written without the cross-entropy's value join (passes/xentvalues:
    the forward's `row_dot_log_softmax` line kept), for tests of what the program is
    otherwise; plans made inside are dropped on both sides."""

    def __enter__(self):
        from s2sad.passes import xentvalues
        from s2sad.plans import PLANS
        self.real = xentvalues.value_lines
        xentvalues.value_lines = lambda *a: None
        PLANS.clear()
        return self

    def __exit__(self, *exc):
        from s2sad.passes import xentvalues
        from s2sad.plans import PLANS
        xentvalues.value_lines = self.real
        PLANS.clear()

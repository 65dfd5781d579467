"""grad computes what the gradient needs, not the loss's value: the fused `sum(f(x))`
path runs its kernel with LoopSpec value "none", and array programs skip every value
(kernel sums, scalar statements, the final loss) the reverse sweep does not read. The
gradients are bit for bit value_and_grad's, and where the gradient does need a value
(`np.log(np.mean(...))`, `np.sum(x) ** 2`) it is computed."""
import math

import numpy as np
import pytest

import s2sad
from s2sad import api, runtime
from s2sad.codegen import python as pybackend
from s2sad.passes.arrayir import KernelSum
import stateful_funcs as sf
from conftest import assert_same_grads, central_fd

rng = np.random.default_rng(11)
BACKENDS = ["python", "llvm"]


# ---------------------------------------------------------------- the fused path


def softplus(z):
    return math.log1p(math.exp(-abs(z))) + max(z, 0.0)


def sum_log(x):
    return np.sum(np.log(x))


def mean_softplus(x):
    return np.mean(s2sad.broadcast(softplus, x))


def outer_product(x, y):
    return np.sum(np.tanh(x * y))


def closure(x, y):
    return np.sum(s2sad.broadcast(lambda z: z ** 2 * y[0] + math.sin(y[1] * z), x))


def count_positive(x):
    return np.sum(x > 0.1)


FUSED = [  # (loss, args, argnums)
    (sum_log, lambda n: (rng.random(n) + 0.5,), 0),
    (mean_softplus, lambda n: (rng.normal(size=n),), 0),
    (outer_product, lambda n: (rng.normal(size=(n, 1)), rng.normal(size=(1, 3))), (0, 1)),   # broadcast
    (outer_product, lambda n: (rng.normal(size=n), 0.7), (0, 1)),                           # a scalar's grad
    (closure, lambda n: (rng.normal(size=n), np.array([0.3, -1.2])), (0, 1)),               # captured y[0], y[1]
    (count_positive, lambda n: (rng.normal(size=n),), 0),                                   # an int loss
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(FUSED)), ids=lambda i: f"{FUSED[i][0].__name__}{i}")
def test_fused_grad_is_value_and_grads_gradient(case, backend):
    loss, make, argnums = FUSED[case]
    sizes = (1, 2, 7, 40) if backend == "python" else (1, 2, 7, 40, 1001, 300_001)   # the last one threaded
    for n in sizes:
        args = make(n)
        _, want = s2sad.value_and_grad(loss, argnums=argnums, backend=backend)(*args)
        got = s2sad.grad(loss, argnums=argnums, backend=backend)(*args)
        assert_same_grads(got, want)
        if case < 2 or backend == "python":   # no sum over elements, or no vectors: bit for bit
            for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                np.testing.assert_array_equal(g, w)


def test_fused_grad_kernel_has_no_value():
    """The drivers a grad call compiles have LoopSpec value "none": on the fast path, on
    the general (broadcasting) path, and in the python backend's reference driver."""
    # a plan of its own: plans are found by code object (a copy of the code is another)
    fresh = type(sum_log)(sum_log.__code__.replace(), sum_log.__globals__, "sum_log")
    g = s2sad.grad(fresh)
    x = rng.random(50) + 0.5
    np.testing.assert_array_equal(g(x), 1.0 / x)
    kernel = api.compiled(fresh).kernel
    specs = [key[2] for key in kernel._drivers if key[0] == "compiled"]
    assert specs and all(s.value == "none" and s.partials for s in specs), specs
    g(x[:, None] + np.zeros((1, 3)))                        # contiguous, but through launch: not the fast path
    g(np.broadcast_to(x[:, None], (50, 3)))                  # strided: the general path
    launched = [key[2] for key in kernel.launch_plans]         # runtime.launch's plans: (backend, active, spec, ...)
    assert launched and all(s.value == "none" for s in launched), launched
    s2sad.value_and_grad(fresh)(x)                           # value_and_grad: its own driver, with the value
    assert any(key[2].value == "sum" for key in kernel._drivers if key[0] == "compiled")


def test_python_backend_never_sums_the_value(monkeypatch):
    seen = []
    run = pybackend.run_driver

    def recording(fn, spec, *a, **kw):
        seen.append(spec.value)
        return run(fn, spec, *a, **kw)

    monkeypatch.setattr(pybackend, "run_driver", recording)
    x = rng.random(9) + 0.5
    np.testing.assert_allclose(s2sad.grad(sum_log, backend="python")(x), 1.0 / x, rtol=1e-15)
    args = logistic_args(9)
    assert_same_grads(s2sad.grad(logistic, backend="python")(*args), s2sad.value_and_grad(logistic, backend="python")(*args)[1])
    assert seen.count("none") == 2 and seen.count("sum") == 1, seen   # value_and_grad's sum, grad's none


def test_runtime_sum_dual_without_value():
    """runtime.sum_dual(value=False): (None, the same grads), every layout and path."""
    kernel = api.compiled(outer_product).kernel
    for args in [(rng.normal(size=12), rng.normal(size=12)), (rng.normal(size=12), 0.5),
                 (rng.normal(size=(4, 1)), rng.normal(size=(1, 3))), (rng.normal(size=300_001), -0.25)]:
        for backend in ("llvm", "python") if np.size(args[0]) < 100 else ("llvm",):
            v, want = runtime.sum_dual(kernel, args, ("x", "y"), 0.5, backend=backend)
            none, got = runtime.sum_dual(kernel, args, ("x", "y"), 0.5, backend=backend, value=False)
            assert none is None and isinstance(v, float)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
            for g, w in zip(runtime.sum_grads(kernel, args, ("x", "y"), 0.5, backend=backend), want):
                np.testing.assert_array_equal(g, w)
    assert runtime.sum_dual(kernel, (np.ones(3), 1.0), (), value=False) == (None, [])


def dict_loss(x):
    return sum(map(sf.f_dict, x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_stateful_grad_still_writes_the_state(backend):
    """A scan runs its primal side effects once, as a plain call would, in grad too."""
    x = rng.normal(size=6)
    sf.D["n"] = 0.25
    dict_loss(x)
    plain = sf.D["n"]
    sf.D["n"] = 0.25
    _, want = s2sad.value_and_grad(dict_loss, backend=backend)(x)
    assert sf.D["n"] == pytest.approx(plain, rel=1e-15)
    sf.D["n"] = 0.25
    assert_same_grads(s2sad.grad(dict_loss, backend=backend)(x), want)
    assert sf.D["n"] == pytest.approx(plain, rel=1e-15)
    sf.D["n"] = 0.0


def test_differentiable_grad():
    d = s2sad.differentiate(sum_log)
    x = rng.random(5) + 0.5
    np.testing.assert_array_equal(d.grad(x), d.value_and_grad(x)[1])


# ---------------------------------------------------------------- array programs


def logistic(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def logistic_args(n):
    X = rng.normal(size=(n, 3))
    return rng.normal(size=3), X, (rng.random(n) < 0.5).astype(float)


def log_mean_exp(x):
    return np.log(np.mean(np.exp(x)))


def square_of_sum(x):
    return np.sum(x) ** 2


def product_of_sums(x, w):
    return np.sum(x * w) * np.sum(np.exp(x))


def two_sums(x):
    a = np.sum(np.log(x))
    b = np.sum(x * x)
    return a + 3.0 * b


def looped(w, x):
    total = 0.0
    h = x
    for t in range(3):
        h = np.tanh(w * h)
        total = total + np.sum(np.log1p(h * h))
    return total


def dead_product(x):
    a = np.sum(np.log(x))
    b = np.sum(x * x)
    r = a * b
    return a + b


def needs_value_in_loop(w, x):
    s = 0.0
    for t in range(3):
        s = s + np.log(np.sum(np.exp(w * x)) + s * s)
    return s


ARRAY = [  # (loss, args, argnums, in the forward sweep of grad's source, not in it)
    # its mean's value is not needed: its gradient runs in the reverse sweep (after this text)
    (logistic, lambda: logistic_args(20), 0, ["__dual(not_needed)"], ["sum_dual(", "sum_grads("]),
    (log_mean_exp, lambda: (rng.normal(size=8),), 0, ["sum_dual(", "__dual(_"], ["sum_grads(", "not_needed"]),
    (square_of_sum, lambda: (rng.normal(size=8),), 0, ["_1 = np.sum(x)", "__dual(_1)[1:]"], ["not_needed"]),
    (product_of_sums, lambda: (rng.normal(size=8) * 0.5, rng.normal(size=8)), (0, 1),
     ["_2, (d2_dx, d2_dw) = sum_dual(", "_4, (d4_dx,) = sum_dual(", "__dual(_2, _4)[1:]"], ["sum_grads("]),
    (two_sums, lambda: (rng.random(8) + 0.5,), 0, ["__dual(not_needed, not_needed)[1:]"], ["sum_dual("]),
    # a loop: its `total + ...` kernel reads the sum on the way back (recomputed pullback)
    (looped, lambda: (0.7, rng.normal(size=5)), (0, 1), ["sum_dual("], ["not_needed"]),
    (needs_value_in_loop, lambda: (0.3, rng.normal(size=5)), (0, 1), ["sum_dual("], ["sum_grads("]),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", range(len(ARRAY)), ids=lambda i: ARRAY[i][0].__name__)
def test_array_grad_matches_value_and_grad_and_differences(case, backend):
    loss, make, argnums, present, absent = ARRAY[case]
    args = make()
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    _, want = s2sad.value_and_grad(loss, argnums=nums, backend=backend)(*args)
    got = s2sad.grad(loss, argnums=nums, backend=backend)(*args)
    assert_same_grads(got, want)
    for i, g in zip(nums, got):
        fd = central_fd(lambda *a: float(loss(*a)), list(args), i)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8, err_msg=f"d/d arg {i}")
    text = s2sad.source(s2sad.grad(loss, argnums=nums)).split("# reverse sweep")[0]
    for p in present:
        assert p in text, (p, text)
    for p in absent:
        assert p not in text, (p, text)


def test_logistic_source_skips_the_mean_and_the_loss():
    text = s2sad.source(s2sad.grad(logistic)).split("# Kernel")[0]
    assert text.startswith("def logistic__grad(w, X, y):")
    assert "(dloss_d3,) = logistic__loss__dual(not_needed)[1:]  # its partials do not read _3" in text
    # the mean's gradient in the reverse sweep, the adjoint of its value folded into its scale
    forward, reverse = text.split("# reverse sweep")
    assert "sum_grads(" not in forward and "sum_dual(" not in forward
    assert ("(_1_bar,) = sum_grads(logistic__mean, (_1, y), active=('_1',), scale=_3_bar / broadcast_size(_1, y))"
            in reverse)
    assert "return (w_bar,)" in text
    vg = s2sad.source(s2sad.value_and_grad(logistic)).split("# Kernel")[0]
    assert "_3, (d3_d1,) = sum_dual(logistic__mean" in vg and "loss, dloss_d3 = logistic__loss__dual(_3)" in vg
    assert "not_needed" not in vg and vg.startswith("def logistic__value_and_grad(w, X, y):")


def test_dead_statements_are_dropped():
    """A statement only the value reads is not computed: `r = a * b` here."""
    whole = s2sad.source(s2sad.grad(dead_product))
    text = whole.split("# reverse sweep")[0]
    assert "r = " not in text and "# r = a * b" not in text   # its comment goes with it
    assert "sum_dual(" not in text and "sum_grads(" in whole.split("# reverse sweep")[1]
    x = rng.random(5) + 0.5
    assert_same_grads(s2sad.grad(dead_product)(x), s2sad.value_and_grad(dead_product)(x)[1])
    np.testing.assert_allclose(s2sad.grad(dead_product)(x), 1.0 / x + 2.0 * x, rtol=1e-14)


def test_value_read_by_a_partial_is_computed():
    """np.log(np.mean(...)): the partial 1/m reads the mean, so its sum is computed."""
    text = s2sad.source(s2sad.grad(log_mean_exp)).split("# reverse sweep")[0]
    assert "sum_dual(log_mean_exp__" in text and "not_needed" not in text
    x = rng.normal(size=6)
    e = np.exp(x)
    np.testing.assert_allclose(s2sad.grad(log_mean_exp)(x), e / e.sum(), rtol=1e-14)


def test_llvm_grad_kernel_drops_the_logs():
    """The logistic kernel of grad: value "none", and O3 removed the value's two logs, so
    its optimised code is much shorter than value_and_grad's."""
    fresh = type(logistic)(logistic.__code__, logistic.__globals__, "logistic")
    args = logistic_args(64)
    s2sad.grad(fresh)(*args)
    s2sad.value_and_grad(fresh)(*args)
    c = api.compiled(fresh)
    (info,) = [k for k in c.program.kernels if isinstance(k.stmt.op, KernelSum)]
    drivers = {key[2].value: d for key, d in info.kernel._drivers.items() if key[0] == "compiled"}
    assert set(drivers) == {"none", "sum"}
    n_none = len(drivers["none"].optimized_ir.splitlines())
    n_sum = len(drivers["sum"].optimized_ir.splitlines())
    assert n_none < 0.75 * n_sum, (n_none, n_sum)


def not_scalar(x, w):
    return np.sum(x * x) * w


def test_non_scalar_loss_still_refused_by_grad():
    """The check that the loss is a scalar reads the value: grad computes it."""
    from s2sad.errors import NonScalarLossError

    with pytest.raises(NonScalarLossError):
        s2sad.grad(not_scalar)(rng.normal(size=4), rng.normal(size=3))

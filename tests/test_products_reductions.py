"""The statistics and scans as a hostile user calls them: zeros in products, ties in
sorts and quantiles (JAX's numbers), std at zero variance, in-place spellings, refused
keywords and forms, inputs left untouched."""
from __future__ import annotations

import itertools
import linecache

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError, UnsupportedOperationError

from conftest import central_fd

_counter = itertools.count()


def load(src: str) -> dict:
    filename = f"<reductions-{next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {"__name__": filename, "np": np, "s2sad": s2sad}
    exec(compile(src, filename, "exec"), ns)
    return ns


def grad_of(body: str, x, **kw):
    return s2sad.grad(load(f"def f(x):\n    return {body}\n")["f"], **kw)(x)


# ------------------------------------------------------------------ JAX's numbers


def test_cumprod_with_zeros_is_exact():
    # jax.grad(lambda x: jnp.sum(jnp.cumprod(x)))([1., 0., 4., 0.]) == [1, 5, 0, 0]
    got = grad_of("np.sum(np.cumprod(x))", np.array([1.0, 0.0, 4.0, 0.0]))
    np.testing.assert_array_equal(got, [1.0, 5.0, 0.0, 0.0])


@pytest.mark.parametrize("x,want", [([2.0, 0.0, 3.0], [0.0, 6.0, 0.0]), ([0.0, 2.0, 0.0], [0.0, 0.0, 0.0]),
                                    ([0.0], [1.0])])
def test_prod_with_zeros_is_exact(x, want):
    np.testing.assert_array_equal(grad_of("np.prod(x)", np.array(x)), want)


def test_sort_ties_follow_the_stable_permutation():
    # jax: [0, 1, 3, 2] for sum(sort(x) * arange(4)) at [1, 1, 4, 2]
    got = grad_of("np.sum(np.sort(x) * np.arange(4.0))", np.array([1.0, 1.0, 4.0, 2.0]))
    np.testing.assert_array_equal(got, [0.0, 1.0, 3.0, 2.0])


def test_median_and_percentile_ties_as_jax():
    x = np.array([1.0, 1.0, 4.0, 2.0])
    np.testing.assert_allclose(grad_of("np.median(x)", x), [0.0, 0.5, 0.0, 0.5])
    np.testing.assert_allclose(grad_of("np.percentile(x, 30.0)", x), [0.1, 0.9, 0.0, 0.0])


def test_std_at_zero_variance_is_nan_as_jax():
    value, g = s2sad.value_and_grad(load("def f(x):\n    return np.std(x)\n")["f"])(np.ones(3))
    assert value == 0.0 and np.isnan(g).all()
    # var is smooth there
    np.testing.assert_array_equal(grad_of("np.var(x)", np.ones(3)), np.zeros(3))


# ------------------------------------------------------------------ refused


@pytest.mark.parametrize("call,word", [
    ("np.percentile(x, 30.0, method='nearest')", "method="),
    ("np.median(x, overwrite_input=True)", "overwrite_input="),
    ("np.cumsum(x, out=x)", "out="),
    ("np.interp(x, x, x, period=2.0)", "period="),
    ("np.var(x, 0, None, None, 1)", "arguments"),
])
def test_refused_calls_are_located(call, word):
    ns = load(f"def f(x):\n    y = x * 2.0\n    return np.sum({call})\n")
    with pytest.raises(UnsupportedOperationError) as e:
        s2sad.grad(ns["f"])(np.arange(1.0, 5.0))
    assert word in str(e.value) and ":3:" in str(e.value)


def test_in_place_sort_method_is_refused():
    ns = load("def f(x):\n    y = x * 1.0\n    y.sort()\n    return np.sum(y * np.arange(4.0))\n")
    with pytest.raises(S2SADError):
        s2sad.grad(ns["f"])(np.array([3.0, 1.0, 2.0, 0.5]))


def test_gradient_of_several_axes_is_refused():
    ns = load("def f(x):\n    return np.sum(np.gradient(x)[0])\n")
    with pytest.raises(S2SADError):
        s2sad.grad(ns["f"])(np.ones((3, 4)))


def test_gradient_wrt_coordinates_is_refused():
    ns = load("def f(x):\n    return np.sum(np.gradient(x * x, np.cumsum(x)))\n")
    with pytest.raises(UnsupportedOperationError, match="coordinates"):
        s2sad.grad(ns["f"])(np.arange(1.0, 5.0))


# ------------------------------------------------------------------ right


def test_inputs_not_mutated_and_grads_match():
    ns = load("def f(x):\n    s = np.sort(x, axis=0)\n    p = np.partition(x.ravel(), 3)\n"
              "    return np.sum(np.sin(s) * np.arange(6.0).reshape(3, 2)) + np.sum(np.cos(p) * np.arange(6.0))"
              " + np.var(np.cumsum(x, axis=1)) + np.median(x)\n")
    x = np.random.default_rng(3).uniform(size=(3, 2))
    x0 = x.copy()
    got = s2sad.grad(ns["f"])(x)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_allclose(got, central_fd(ns["f"], [x], 0), rtol=1e-6, atol=1e-8)


def test_interp_inside_the_range_and_at_its_ends():
    ns = load("def f(fp):\n    return np.sum(np.interp(np.array([-1.0, 0.0, 0.5, 2.0, 3.0]), "
              "np.array([0.0, 1.0, 2.0]), fp))\n")
    # -1 -> fp0 (left), 0 -> fp0, 0.5 -> halves, 2 -> fp2, 3 -> fp2 (right)
    np.testing.assert_allclose(s2sad.grad(ns["f"])(np.array([1.0, 2.0, 5.0])), [2.5, 0.5, 2.0])


def test_quantile_float32_keeps_dtype():
    x = np.random.default_rng(0).uniform(size=(5, 3)).astype(np.float32)
    g = grad_of("np.sum(np.quantile(x, 0.3, axis=0) ** 2)", x)
    assert g.dtype == np.float32 and g.shape == x.shape


# ------------------------------------------------------------------ scipy.special


def test_logsumexp_return_sign_is_refused_and_b_zeros_are_right():
    sps = pytest.importorskip("scipy.special")
    ns = load("def f(x):\n    return sps.logsumexp(x, return_sign=True)[0]\n"
              "def g(x, w):\n    return sps.logsumexp(x * 2.0, b=w)\n")
    ns["f"].__globals__["sps"] = sps
    with pytest.raises(UnsupportedOperationError, match="return_sign") as e:
        s2sad.grad(ns["f"])(np.ones(3))
    assert ":2:" in str(e.value)
    x, w = np.array([0.5, 1.0, 3.0]), np.array([1.0, 0.0, 2.0])
    gx, gw = s2sad.grad(ns["g"], argnums=(0, 1))(x, w)
    assert gx[1] == 0.0
    np.testing.assert_allclose(gx, central_fd(ns["g"], [x, w], 0), rtol=1e-6)
    np.testing.assert_allclose(gw, central_fd(ns["g"], [x, w], 1), rtol=1e-6)


def test_log_softmax_of_large_values_is_finite():
    sps = pytest.importorskip("scipy.special")
    ns = load("def f(x):\n    return np.sum(sps.log_softmax(x) * np.array([1.0, -2.0, 0.5]))\n")
    ns["f"].__globals__["sps"] = sps
    g = s2sad.grad(ns["f"])(np.array([1000.0, 0.0, -1000.0]))
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, [1.0 - (-0.5) * 1.0, -2.0, 0.5], atol=1e-12)


# ------------------------------------------------------------------ adjoints as numpy's transposes


def _transpose_holds(bar, forward, x, rng):
    out = forward(x)
    g = rng.normal(size=np.shape(out))
    t = rng.normal(size=np.shape(x))
    np.testing.assert_allclose(np.sum(bar(g) * t), np.sum(g * forward(t)), rtol=1e-10, atol=1e-10)


def test_gradient_adjoint_is_the_transpose_of_numpys_gradient():
    from s2sad.reduction_rules import gradient_bar
    rng = np.random.default_rng(5)
    for n, edge, axis in itertools.product(range(2, 8), (1, 2), (0, 1)):
        if n < edge + 1:
            continue
        f = rng.normal(size=(n, 3) if axis == 0 else (3, n))
        coords = np.cumsum(rng.uniform(0.2, 1.0, n))
        for spacing in (None, 0.7, coords):
            sp = () if spacing is None else (spacing,)
            _transpose_holds(lambda g: gradient_bar(0, g, f, spacing, axis, edge),
                             lambda v: np.gradient(v, *sp, axis=axis, edge_order=edge), f, rng)


def test_convolve_and_correlate_adjoints_are_numpys_transposes():
    from s2sad.reduction_rules import convolve_bar, correlate_bar
    rng = np.random.default_rng(6)
    for n, m, mode in itertools.product(range(1, 7), range(1, 7), ("full", "same", "valid")):
        a, v = rng.normal(size=n), rng.normal(size=m)
        for fn, bar in ((np.convolve, convolve_bar), (np.correlate, correlate_bar)):
            _transpose_holds(lambda g: bar(0, g, a, v, mode), lambda x: fn(x, v, mode), a, rng)
            _transpose_holds(lambda g: bar(1, g, a, v, mode), lambda y: fn(a, y, mode), v, rng)


def test_diff_adjoint_is_the_transpose_of_numpys_diff():
    from s2sad.reduction_rules import diff_bar
    rng = np.random.default_rng(7)
    for n, k, axis in itertools.product(range(1, 6), range(0, 4), (0, -1)):
        x = rng.normal(size=(n, 3) if axis == 0 else (3, n))
        pre = rng.normal(size=(1, 3) if axis == 0 else (3, 2))
        _transpose_holds(lambda g: diff_bar(0, g, x, None, None, k, axis), lambda v: np.diff(v, n=k, axis=axis), x, rng)
        _transpose_holds(lambda g: diff_bar(1, g, x, pre, None, k, axis),
                         lambda p: np.diff(np.zeros_like(x), n=k, axis=axis, prepend=p), pre, rng)


def _fd_holds(bar, forward, x, rng, h=1e-6, rtol=1e-6):
    out = forward(x)
    g = rng.normal(size=np.shape(out))
    t = rng.normal(size=np.shape(x))
    fd = np.sum(g * (forward(x + h * t) - forward(x - h * t))) / (2 * h)
    np.testing.assert_allclose(np.sum(bar(g) * t), fd, rtol=rtol, atol=1e-7)


def test_random_quantiles_cumprods_and_interps_against_differences():
    from s2sad.reduction_rules import cumprod_bar, interp_bar, quantile_bar
    rng = np.random.default_rng(8)
    for _ in range(60):
        shape = tuple(int(n) for n in rng.integers(1, 5, size=int(rng.integers(1, 4))))
        x = rng.normal(size=shape)
        axis = [None, 0, -1, tuple(range(len(shape)))[:2]][int(rng.integers(0, 4))]
        keep = bool(rng.integers(0, 2))
        q = rng.uniform(0.05, 0.95, size=int(rng.integers(1, 3))) if rng.random() < 0.5 else float(rng.uniform(0.05, 0.95))
        _fd_holds(lambda g: quantile_bar(0, g, x, q, axis, keep),
                  lambda v: np.quantile(v, q, axis=axis, keepdims=keep), x, rng)
        z = np.where(rng.random(shape) < 0.3, 0.0, x)
        ax = None if rng.random() < 0.3 else int(rng.integers(0, len(shape)))
        _fd_holds(lambda g: cumprod_bar(g, z, ax), lambda v: np.cumprod(v, axis=ax), z, rng)
        xp = np.cumsum(rng.uniform(0.3, 1.0, 5))
        fp = rng.normal(size=5)
        xs = rng.uniform(-0.5, 5.0, size=shape)
        _fd_holds(lambda g: interp_bar(2, g, xs, xp, fp), lambda v: np.interp(xs, xp, v), fp, rng)
        _fd_holds(lambda g: interp_bar(1, g, xs, xp, fp), lambda v: np.interp(xs, v, fp), xp, rng, rtol=1e-5)
        _fd_holds(lambda g: interp_bar(0, g, xs, xp, fp), lambda v: np.interp(v, xp, fp), xs, rng, rtol=1e-5)

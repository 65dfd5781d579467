"""Small batches (issue 17): an array program's gradient at minibatch sizes, through its
hot path (s2sad/array_hot.py) once a first call has gone through the full path.

The hot path must give the full path's results to the bit and take only calls the full
path would run unchanged: a changed shape or dtype, a float32 call, a 0-row batch, a
non-contiguous or int argument, a changed global, a rule registered since, and two
threads sharing one grad object all stay right (checked against the full path, the
python backend and central differences) or refused as before.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import s2sad
from s2sad.arguments import value_like_arguments
from s2sad import derivative
from s2sad.plans import PLANS
from s2sad.errors import NonDifferentiableInputError, S2SADError

from conftest import central_fd

D, H = 6, 5
SCALE = 2.0


def leaky(z):
    return z if z > 0 else 0.01 * z


def mlp_loss(W1, b1, W2, X, y):
    h = s2sad.broadcast(leaky, X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)


def softmax_loss(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def scaled_loss(w, X):
    return SCALE * np.sum(np.tanh(X @ w))


FREE = np.linspace(0.5, 1.5, 7)


def free_loss(w, X):
    return np.sum(np.tanh(X @ w) * FREE)


def mlp_args(n, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(D, H)).astype(dtype), rng.normal(size=(1, H)).astype(dtype) * 0.1,
            rng.normal(size=(H, 1)).astype(dtype), rng.normal(size=(n, D)).astype(dtype),
            rng.normal(size=(n, 1)).astype(dtype))


def full_path(g, *args):
    """The full path's gradients (Derivative.__call__), the hot path not tried."""
    d = g.__s2sad__
    value, grads = d(*args)     # (the value in the loss's dtype, as grad's wrapper gives it)
    return grads if d.grad_only else (value_like_arguments(value, args), grads)


def same_bits(a, b):
    for x, y in zip(a, b):
        assert type(x) is type(y)
        assert np.shape(x) == np.shape(y) and np.asarray(x).dtype == np.asarray(y).dtype
        assert np.array_equal(x, y, equal_nan=True)


def hot_taken(g) -> bool:
    return g.__s2sad__.hot is not derivative.decline


# ---------------------------------------------------------------- taken, and the full path's bits

def test_hot_path_is_made_after_a_first_call_and_gives_the_full_paths_bits():
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    args = mlp_args(32)
    first = g(*args)
    assert hot_taken(g)
    again = g(*args)
    same_bits(again, first)
    same_bits(again, full_path(g, *args))
    same_bits(g.__s2sad__.hot(*args), first)     # the hot path itself takes this call


def test_gradients_match_central_differences_and_the_python_backend():
    args = mlp_args(32, seed=1)
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    g(*args)
    got = g(*args)
    ref = s2sad.grad(mlp_loss, argnums=(0, 1, 2), backend="python")(*args)
    for i in range(3):
        np.testing.assert_allclose(got[i], ref[i], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got[i], central_fd(mlp_loss, args, i), rtol=1e-5, atol=1e-7)


def test_value_and_grad_and_a_single_argnum():
    args = mlp_args(16)
    vg = s2sad.value_and_grad(mlp_loss, argnums=1)
    v0, g0 = vg(*args)
    v1, g1 = vg(*args)
    assert hot_taken(vg) and type(v1) is float and v1 == v0 == pytest.approx(mlp_loss(*args), rel=1e-13)
    assert g1.shape == (1, H) and np.array_equal(g0, g1)


def test_softmax_hot_path():
    rng = np.random.default_rng(3)
    W, b, X = rng.normal(size=(D, 4)), rng.normal(size=(1, 4)), rng.normal(size=(32, D))
    Y = np.eye(4)[rng.integers(0, 4, 32)]
    g = s2sad.grad(softmax_loss, argnums=(0, 1))
    g(W, b, X, Y)
    got = g(W, b, X, Y)
    assert hot_taken(g)
    same_bits(got, full_path(g, W, b, X, Y))
    np.testing.assert_allclose(got[0], central_fd(softmax_loss, (W, b, X, Y), 0), rtol=1e-5, atol=1e-8)


# ---------------------------------------------------------------- calls it must not take wrongly

def test_a_changed_shape_between_calls_is_right():
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    g(*mlp_args(32))
    for n in (17, 1, 64, 32):
        args = mlp_args(n, seed=n)
        got = g(*args)
        same_bits(got, full_path(g, *args))
        np.testing.assert_allclose(got[0], central_fd(mlp_loss, args, 0), rtol=1e-5, atol=1e-7)


def test_a_changed_dtype_and_float32():
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    g(*mlp_args(32))
    a32 = mlp_args(32, np.float32)
    got = g(*a32)
    assert all(x.dtype == np.float32 for x in got)
    same_bits(got, full_path(g, *a32))
    np.testing.assert_allclose(got[0], g(*mlp_args(32))[0], rtol=2e-4, atol=1e-5)
    assert g(*mlp_args(32))[0].dtype == np.float64


def test_zero_rows():
    """The gradient of a mean over no rows: zeros (sums over no rows), as JAX gives."""
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    g(*mlp_args(32))
    with np.errstate(invalid="ignore", divide="ignore"):
        got = g(*mlp_args(0))
        ref = s2sad.grad(mlp_loss, argnums=(0, 1, 2), backend="python")(*mlp_args(0))
    for x, y in zip(got, ref):
        assert x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def test_non_contiguous_x_and_inputs_unchanged():
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    W1, b1, W2, X, y = mlp_args(32)
    g(W1, b1, W2, X, y)
    wide = np.random.default_rng(5).normal(size=(32, 2 * D))
    Xs = wide[:, ::2]                       # strided columns
    Xt = np.asfortranarray(X)               # column-major
    for Xn in (Xs, Xt):
        before = Xn.copy()
        got = g(W1, b1, W2, Xn, y)
        np.testing.assert_array_equal(Xn, before)
        ref = g(W1, b1, W2, np.ascontiguousarray(Xn), y)
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_int_and_list_arguments():
    # (16 rows: past the unrolled plan's 64 elements, small_grad.py, whose bits are its own)
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    W1, b1, W2, X, y = mlp_args(16)
    g(W1, b1, W2, X, y)
    yi = np.arange(16).reshape(16, 1)            # int data: taken, as numpy would compute
    same_bits(g(W1, b1, W2, X, yi), full_path(g, W1, b1, W2, X, yi))
    got = g(W1, b1, W2, X.tolist(), y)         # a list: the full path converts it
    same_bits(got, g(W1, b1, W2, X, y))
    with pytest.raises(NonDifferentiableInputError):
        g(W1.astype(int), b1, W2, X, y)         # an int argument differentiated: refused
    with pytest.raises(NonDifferentiableInputError):
        g(W1, b1, W2, X.astype(complex), y)     # complex data: refused, not cast
    with pytest.raises(NonDifferentiableInputError):
        g(W1.astype(np.longdouble), b1, W2, X, y)


def test_wrong_shapes_are_refused_located():
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    W1, b1, W2, X, y = mlp_args(8)
    g(W1, b1, W2, X, y)
    with pytest.raises((S2SADError, ValueError)):
        g(W1, b1, W2, X[:, :3], y)


def test_keywords_and_too_few_arguments():
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    W1, b1, W2, X, y = mlp_args(8)
    ref = g(W1, b1, W2, X, y)
    same_bits(g(W1, b1, W2, X=X, y=y), ref)
    with pytest.raises(TypeError):
        g(W1, b1, W2, X)


def test_a_changed_global_constant_replans():
    global SCALE
    rng = np.random.default_rng(7)
    w, X = rng.normal(size=3), rng.normal(size=(8, 3))
    g = s2sad.grad(scaled_loss)
    g(w, X)
    first = g(w, X)
    old = SCALE
    try:
        SCALE = 3.0
        np.testing.assert_allclose(g(w, X), first * 1.5, rtol=1e-14)
    finally:
        SCALE = old
    np.testing.assert_allclose(g(w, X), first, rtol=1e-14)


def test_free_data_is_read_at_each_call():
    rng = np.random.default_rng(8)
    w, X = rng.normal(size=3), rng.normal(size=(7, 3))
    g = s2sad.grad(free_loss)
    g(w, X)
    first = g(w, X)
    FREE[:] *= 2.0
    try:
        np.testing.assert_allclose(g(w, X), 2.0 * first, rtol=1e-14)
    finally:
        FREE[:] /= 2.0


def test_a_rule_registered_since_is_honoured():
    def squash(z):
        return z / (1.0 + abs(z))

    def loss(w, X):
        return np.sum(s2sad.broadcast(squash, X @ w))

    rng = np.random.default_rng(9)
    w, X = rng.normal(size=3), rng.normal(size=(8, 3))
    g = s2sad.grad(loss)
    g(w, X)
    g(w, X)
    gen = PLANS.generation
    s2sad.defrule(squash, "0.0")        # a (deliberately wrong) rule: it must be used now
    assert PLANS.generation == gen + 1
    np.testing.assert_array_equal(g(w, X), np.zeros(3))


def test_one_grad_object_from_two_threads():
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    sets = [mlp_args(n, seed=n) for n in (32, 32, 9, 17)]
    want = [full_path(g, *a) for a in sets]
    errors = []

    def work(k):
        try:
            for _ in range(200):
                for a, w in zip(sets[k::2], want[k::2]):
                    same_bits(g(*a), w)
        except BaseException as e:     # pragma: no cover (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_nan_inputs_give_nan_not_an_error():
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    args = list(mlp_args(8))
    g(*args)
    args[3] = args[3].copy()
    args[3][2, 1] = np.nan
    got = g(*args)
    assert np.isnan(got[0]).any() and np.isnan(got[2]).any()


def elementwise_mean(x):
    return np.mean(x ** 2)


def test_the_mean_over_no_elements_is_numpys_nan_not_a_python_error():
    """(it was a ZeroDivisionError: 1.0 / 0 in the generated code)"""
    with np.errstate(invalid="ignore", divide="ignore"):
        value, grad = s2sad.value_and_grad(elementwise_mean)(np.zeros(0))
        assert np.isnan(value) and grad.shape == (0,)
        value, grads = s2sad.value_and_grad(mlp_loss, argnums=(0, 1, 2))(*mlp_args(0))
    assert np.isnan(value)
    assert all(np.array_equal(g, np.zeros_like(a)) for g, a in zip(grads, mlp_args(0)))


# ---------------------------------------------------------------- the calls kept per signature

def bias_loss(W, b, X):
    z = np.tanh(X @ W + b)          # a bias row: two shapes, one elementwise site
    return np.sum(z * z) + np.sum(b * b)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_bias_rows_site_against_the_python_backend_across_signatures(dtype):
    """runtime.apply / vjp keep a call per plain signature (a bias row broadcast over a
    batch); each new shape, dtype or layout still gives the general path's numbers."""
    g = s2sad.grad(bias_loss, argnums=(0, 1))
    ref = s2sad.grad(bias_loss, argnums=(0, 1), backend="python")
    rng = np.random.default_rng(11)
    W = rng.normal(size=(D, 4)).astype(dtype)
    b = rng.normal(size=(1, 4)).astype(dtype)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for n in (32, 32, 5, 2, 32, 1, 0):
        X = rng.normal(size=(n, D)).astype(dtype)
        for Xn in (X, np.asfortranarray(X)):
            got, want = g(W, b, Xn), ref(W, b, Xn)
            for a, w in zip(got, want):
                assert a.dtype == dtype and a.shape == w.shape
                np.testing.assert_allclose(a, w, rtol=tol, atol=tol)
    X = rng.normal(size=(9, D))
    np.testing.assert_allclose(g(W.astype(float), b.astype(float), X)[1],
                               central_fd(bias_loss, (W.astype(float), b.astype(float), X), 1), rtol=1e-5, atol=1e-7)


def test_a_kept_call_writes_no_input_and_returns_fresh_arrays():
    g = s2sad.grad(bias_loss, argnums=(0, 1))
    rng = np.random.default_rng(12)
    W, b, X = rng.normal(size=(D, 4)), rng.normal(size=(1, 4)), rng.normal(size=(16, D))
    keep = [W.copy(), b.copy(), X.copy()]
    first = g(W, b, X)
    second = g(W, b, X)
    assert all(np.array_equal(u, v) for u, v in zip((W, b, X), keep))
    assert not any(np.shares_memory(p, q) for p in first for q in second)
    same_bits(first, second)


# ---------------------------------------------------------------- specialised per signature (array_special.py)

def logreg_loss(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def masked_loss(w, X):
    z = X @ w
    return np.sum(np.tanh(z[z > 0.0]))     # a mask: its result's shape depends on values


def looped_loss(w, X):
    s = 0.0
    for k in range(3):
        s = s + np.sum(np.tanh(X @ w * (k + 1.0)))
    return s


def softmax_args(n, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(D, 4)).astype(dtype), rng.normal(size=(1, 4)).astype(dtype),
            rng.normal(size=(n, D)).astype(dtype), np.eye(4, dtype=dtype)[rng.integers(0, 4, n)])


def logreg_args(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=D), rng.normal(size=(n, D)), (rng.random(n) < 0.5).astype(float)


def special_of(g):
    return getattr(g.__s2sad__.hot, "special", None)


def bias_args(n, seed=0):
    W1, b1, _, X, _ = mlp_args(n, seed=seed)
    return W1, b1, X


CASES = [(mlp_loss, (0, 1, 2), mlp_args), (softmax_loss, (0, 1), softmax_args), (bias_loss, (0, 1), bias_args),
         (logreg_loss, (0,), logreg_args)]


@pytest.mark.parametrize("loss,argnums,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_specialised_copies_give_the_full_paths_bits(loss, argnums, make):
    g = s2sad.grad(loss, argnums=argnums)
    args = make(32)
    for _ in range(4):
        got = g(*args)
    sp = special_of(g)
    assert sp is not None and sp.specialised(args)      # the straight-line derivative, specialised
    same_bits(got, full_path(g, *args))
    same_bits(g(*args), full_path(g, *args))
    ref = s2sad.grad(loss, argnums=argnums, backend="python")(*args)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("loss,argnums,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_each_signature_gets_its_own_copy(loss, argnums, make):
    """Shapes, dtypes and strides change between calls: each signature is recorded on its
    own, and every call gives the full path's bits."""
    g = s2sad.grad(loss, argnums=argnums)
    variants = []
    for n in (32, 7, 2):
        args = make(n, seed=n)
        variants.append(args)
        variants.append(tuple(a.astype(np.float32) for a in args))
        variants.append(tuple(np.asfortranarray(a) if a.ndim == 2 else a for a in args))
        wide = tuple(np.repeat(a, 2, axis=-1)[..., ::2] if a.ndim == 2 else a for a in args)
        variants.append(wide)   # strided views, the same numbers
    for _ in range(3):
        for args in variants:
            same_bits(g(*args), full_path(g, *args))
    assert special_of(g).specialised(variants[-1])


def test_a_mask_or_a_loop_is_not_specialised_and_stays_right():
    rng = np.random.default_rng(13)
    for loss in (masked_loss, looped_loss):
        g = s2sad.grad(loss)
        w = rng.normal(size=3)
        for n in (8, 8, 8, 8, 8, 9):
            X = rng.normal(size=(n, 3))       # (the mask keeps a different number of rows each time)
            got = g(w, X)
            same_bits((got,), (full_path(g, w, X),))
            np.testing.assert_allclose(got, central_fd(loss, (w, X), 0), rtol=1e-5, atol=1e-7)
        assert special_of(g) is None


def test_more_signatures_than_kept_stay_right():
    from s2sad import array_special
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    sets = [mlp_args(n, seed=n) for n in range(2, array_special.MAX_SIGNATURES + 6)]
    for _ in range(3):
        for args in sets:
            same_bits(g(*args), full_path(g, *args))
    assert 1 <= len(special_of(g).specs) <= array_special.MAX_SIGNATURES


def test_float_and_int_arguments_take_the_unspecialised_call():
    g = s2sad.grad(scaled_loss)     # (sizes past the unrolled plan's 64 elements: the array hot path)
    rng = np.random.default_rng(14)
    w, X = rng.normal(size=3), rng.normal(size=(32, 3))
    for _ in range(4):
        g(w, X)
    assert special_of(g).specialised((w, X))
    g2 = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    W1, b1, W2, X, y = mlp_args(16)
    yi = np.arange(16).reshape(16, 1)
    for _ in range(4):
        same_bits(g2(W1, b1, W2, X, yi), full_path(g2, W1, b1, W2, X, yi))
        same_bits(g2(W1, b1, W2, X, 0.5), full_path(g2, W1, b1, W2, X, 0.5))


# ---------------------------------------------------------------- random programs, specialised

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from randarray import draw_program, load  # noqa: E402


@st.composite
def programs(draw):
    return draw_program(draw, st)


@settings(max_examples=20, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate], print_blob=False,
          suppress_health_check=list(HealthCheck))
@given(program=programs(), seed=st.integers(0, 2**16))
def test_random_programs_specialised_give_the_full_paths_bits(program, seed):
    """Random array programs (tests/randarray.py), every argument an ndarray (c a 0-d
    one), called often enough to be specialised where they are straight-line: each call,
    with new values of the same signature and with a column-major X, gives the full
    path's bits (and the arguments are left as they were)."""
    loss = load(program)["loss"]
    sets = []
    for k in range(3):
        W, b, v, c, X = program.args(seed + k)
        sets.append((W, b, v, np.array(c), X))
    W, b, v, c, X = sets[0]
    sets.append((W, b, v, c, np.asfortranarray(X)))
    with np.errstate(all="ignore"):
        if not all(np.isfinite(loss(*a)) for a in sets):
            return
        for what in ("grad", "value_and_grad"):
            g = getattr(s2sad, what)(loss, argnums=(0, 1, 2, 3))
            for _ in range(3):
                for args in sets:
                    keep = [a.copy() for a in args]
                    got = g(*args)
                    want = full_path(g, *args)
                    if what == "value_and_grad":
                        assert got[0] == want[0] or (np.isnan(got[0]) and np.isnan(want[0]))
                        got, want = got[1], want[1]
                    same_bits(got, want)
                    assert all(np.array_equal(a, k, equal_nan=True) for a, k in zip(args, keep))


def test_refusals_stand_after_specialisation():
    g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
    W1, b1, W2, X, y = mlp_args(16)  # (past the unrolled plan's 64 elements)
    for _ in range(4):
        g(W1, b1, W2, X, y)
    assert special_of(g).specialised((W1, b1, W2, X, y))
    with pytest.raises(NonDifferentiableInputError):
        g(W1.astype(int), b1, W2, X, y)
    with pytest.raises(NonDifferentiableInputError):
        g(W1, b1, W2, X.astype(complex), y)
    with pytest.raises((S2SADError, ValueError)):
        g(W1, b1, W2, X[:, :3], y)
    same_bits(g(W1, b1, W2, X, y), full_path(g, W1, b1, W2, X, y))

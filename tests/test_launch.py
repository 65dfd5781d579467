"""runtime.launch, the path of kernels with broadcast operands: its per-signature plans
(`Kernel.launch_plans`, bounded) and the generated stub that calls the llvm driver, once
for an index space of one run and once per run of its leading dims otherwise, against
the python backend for every entry point."""
from __future__ import annotations

import math

import numpy as np
import pytest

from s2sad import backends, column_products, runtime
from s2sad.frontend import parse_function
from s2sad.passes.normalize import normalize

rng = np.random.default_rng(3)


def f(z, b, c):
    return math.tanh(z * b) + c * z


def _kernel(fn) -> runtime.Kernel:
    p = normalize(parse_function(fn))
    return runtime.Kernel(p, p.entry)


SHAPES = [((7, 5), (1, 5), (7, 1)), ((7, 5), (5,), ()), ((3, 4, 5), (4, 1), (5,)), ((2, 3, 4), (1, 3, 1), (4,))]


def _value(shape):
    return rng.normal(size=shape) if shape else 0.7


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: "x".join(str(t) for t in s))
@pytest.mark.parametrize("active", [("z",), ("b", "c"), ("z", "b", "c")], ids="".join)
def test_entry_points_agree_with_the_python_backend(shapes, active):
    k = _kernel(f)
    args = [_value(s) for s in shapes]
    tans = [_value(shapes["zbc".index(a)]) for a in active]
    full = np.broadcast_shapes(*[np.shape(a) for a in args])
    seed = rng.normal(size=full)
    for _ in range(2):       # the first call makes the plan, the second uses it
        got = [runtime.apply(k, args, backend="llvm"), runtime.jvp(k, args, active, tans, backend="llvm"),
               runtime.vjp(k, args, active, seed, backend="llvm"), runtime.sum_dual(k, args, active, backend="llvm")]
        want = [runtime.apply(k, args, backend="python"), runtime.jvp(k, args, active, tans, backend="python"),
                runtime.vjp(k, args, active, seed, backend="python"),
                runtime.sum_dual(k, args, active, backend="python")]
        for g, w in zip(got, want):
            for a, b in zip(*(x if isinstance(x, (tuple, list)) else [x] for x in (g, w))):
                for p, q in zip(*(y if isinstance(y, list) else [y] for y in (a, b))):
                    np.testing.assert_allclose(p, q, rtol=1e-12, atol=1e-12)
    plans = [v for key, v in k.launch_plans.items() if key[0] == "llvm"]
    # every llvm launch is a generated stub, which takes each run's offsets where there are leading dims
    assert plans and all(p[2].__code__.co_filename == "<s2sad launch stub>" for p in plans)
    assert all(("offs" in p[2].__code__.co_varnames) == (len(p[0]) > 2) for p in plans)


def test_the_shapes_above_take_both_paths():
    """SHAPES hold index spaces of one run (the stub) and with leading dims (the loop)."""
    runs = {len(runtime._index_space(runtime.prepare([_value(s) for s in shapes], ("z", "b", "c")))) == 2
            for shapes in SHAPES}
    assert runs == {True, False}


def test_launch_plans_are_bounded(monkeypatch):
    monkeypatch.setattr(runtime, "LAUNCH_PLANS", 4)
    k = _kernel(f)
    b = rng.normal(size=(1, 3))
    for n in range(2, 12):
        z = rng.normal(size=(n, 3))
        np.testing.assert_allclose(runtime.apply(k, (z, b, 0.5)), np.tanh(z * b) + 0.5 * z, rtol=1e-13, atol=1e-14)
        assert len(k.launch_plans) <= 4


def test_broadcast_shapes_is_numpys():
    from hypothesis import given, settings, strategies as st

    dims = st.sampled_from([0, 1, 2, 3])
    shapes = st.lists(st.lists(dims, max_size=4).map(tuple), min_size=1, max_size=4)

    @settings(max_examples=300, derandomize=True, database=None, deadline=None)
    @given(shapes)
    def check(ss):
        try:
            want = np.broadcast_shapes(*ss)
        except ValueError:
            with pytest.raises(ValueError):
                runtime.broadcast_shapes(*ss)
        else:
            assert runtime.broadcast_shapes(*ss) == want
    check()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_seeded_pullback_signature_seen_before_takes_its_stub(dtype):
    """The second call of a signature runs `_seeded_call` (buffers and the launch stub),
    with the first call's bits; arguments `prepare` would convert, a 1-element array or
    a non-contiguous one, take the full path again."""
    k = _kernel(f)
    z = rng.normal(size=(9, 5)).astype(dtype)
    b = rng.normal(size=(1, 5)).astype(dtype)
    left, right = rng.normal(size=(9, 1)).astype(dtype), rng.normal(size=(1, 5)).astype(dtype)
    c = 0.5 if dtype == np.float64 else rng.normal(size=(9, 1)).astype(dtype)   # a float, or a column
    first = runtime.vjp(k, (z, b, c), ("z", "b", "c"), runtime.SeedProduct(left, right))
    assert any(key[0] == "seeded" for key in k.launch_plans)
    slow = runtime.vjp(k, (z, np.float32(0.5) if dtype == np.float32 else b[0, :1], c), ("z",),
                       runtime.SeedProduct(left, right))     # a numpy scalar, a 1-element array: no stub
    assert slow[0].shape == z.shape and len([key for key in k.launch_plans if key[0] == "seeded"]) == 1
    again = runtime.vjp(k, (z, b, c), ("z", "b", "c"), runtime.SeedProduct(left, right))
    for a, g in zip(first, again):
        assert a.shape == g.shape and a.dtype == g.dtype
        np.testing.assert_array_equal(a, g)
    formed = runtime.vjp(k, (z, b, c), ("z", "b", "c"), left * right, backend="python")
    for a, g in zip(formed, again):
        np.testing.assert_allclose(g, a, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    # the right factor's gradient too, and an argument of another layout
    zf = np.asfortranarray(rng.normal(size=(9, 5)).astype(dtype))
    for _ in range(2):
        gz, gr = runtime.seeded_vjp(k, (zf, b, c), ("z",), [left, right], backends.LLVM, factor_grads=(1,))
        np.testing.assert_allclose(gr, np.sum(left * runtime.apply(k, (zf, b, c)), axis=0, keepdims=True),
                                   rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("vector", [False, True], ids=["column", "vector"])
def test_kernel_matmul_signature_seen_before(vector):
    """kernel_matmul and its vjp keep a call per signature: the second call gives the
    first call's bits, a kept column of ones is never handed out, and a w of another
    shape (a vector, not a column) or a non-contiguous argument takes the full path."""
    k = _kernel(f)
    z = rng.normal(size=(11, 6))
    b = rng.normal(size=(1, 6))
    w = rng.normal(size=(6,) if vector else (6, 1))
    ob = rng.normal(size=(11,) if vector else (11, 1))
    runs = []
    for _ in range(3):
        out, h = column_products.kernel_matmul(k, (z, b, 0.5), w)
        assert h is None and out.shape == ((11,) if vector else (11, 1))
        grads = column_products.kernel_matmul_vjp(k, (z, b, 0.5), ("z", "b"), w, True, ob, None)
        runs.append([out, *grads])
    assert any(key[0] == "matmul" for key in k.launch_plans) and any(key[0] == "matmul_vjp" for key in k.launch_plans)
    for a, c in zip(runs[0], runs[2]):
        np.testing.assert_array_equal(a, c)
        assert a.flags.writeable and c.flags.writeable
    values = runtime.apply(k, (z, b, 0.5), backend="python")
    np.testing.assert_allclose(runs[2][0], values @ w, rtol=1e-12)
    want_z, want_b = runtime.vjp(k, (z, b, 0.5), ("z", "b"), np.multiply.outer(ob.reshape(11), w.reshape(6)),
                                 backend="python")
    np.testing.assert_allclose(runs[2][1], want_z, rtol=1e-12)
    np.testing.assert_allclose(runs[2][2], want_b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(runs[2][3], values.T @ ob, rtol=1e-12)
    zf = np.asfortranarray(z)          # not C-contiguous: no kept call, the same numbers
    out, _ = column_products.kernel_matmul(k, (zf, b, 0.5), w)
    np.testing.assert_allclose(out, runs[0][0], rtol=1e-12)


def test_kernel_matmul_kept_call_reads_every_argument_anew():
    """The kept call of a signature reads the arguments' values at each call: a float
    argument or an array's contents that change give the new results."""
    k = _kernel(f)
    own = np.random.default_rng(7)     # its own data: the module's rng depends on which tests ran before
    z, b, w = own.normal(size=(8, 5)), own.normal(size=(1, 5)), own.normal(size=(5, 1))
    ob = own.normal(size=(8, 1))
    for _ in range(2):
        column_products.kernel_matmul(k, (z, b, 0.5), w)
        column_products.kernel_matmul_vjp(k, (z, b, 0.5), ("z",), w, True, ob, None)
    for c, scale in [(0.7, 1.0), (-1.5, 2.0)]:
        z2, w2, ob2 = z * scale, w * scale, ob * scale
        out, _ = column_products.kernel_matmul(k, (z2, b, c), w2)
        gz, gw = column_products.kernel_matmul_vjp(k, (z2, b, c), ("z",), w2, True, ob2, None)
        values = runtime.apply(k, (z2, b, c), backend="python")
        # the kernel's pass adds in another order than BLAS: compare at the terms' scale
        np.testing.assert_allclose(out, values @ w2, rtol=1e-12, atol=1e-13 * float((np.abs(values) @ np.abs(w2)).max()))
        np.testing.assert_allclose(gw, values.T @ ob2, rtol=1e-12,
                                   atol=1e-13 * float((np.abs(values).T @ np.abs(ob2)).max()))
        (want,) = runtime.vjp(k, (z2, b, c), ("z",), ob2 * w2.T, backend="python")
        np.testing.assert_allclose(gz, want, rtol=1e-12)

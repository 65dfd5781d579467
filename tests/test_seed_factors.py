"""A kernel's pullback seeded by an outer product, and the row/column layouts.

The adjoint of `h` in `h @ W2`, with W2 one column, is the outer product of the output's
adjoint and W2: when only the pullback of h's kernel reads it, the generated code keeps
it as two factors (`matmul_factors`, a runtime.SeedProduct) and the kernel multiplies
them in its loop. A bias row's gradient is summed inside the driver. Both must give
store mode's bits, and the llvm driver reads a broadcast row or column without its
stride (the "row" and "column" layouts)."""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad import column_products, runtime
from s2sad.array_rules import unbroadcast
from s2sad.frontend import parse_function
from s2sad.passes.normalize import normalize
from s2sad.runtime import Kernel, SeedProduct

from conftest import central_fd

rng = np.random.default_rng(7)


def leaky_relu(z):
    return z if z > 0 else 0.01 * z


def one_output_mlp(W1, b1, W2, X, y):
    h = s2sad.broadcast(leaky_relu, X @ W1 + b1)
    return np.mean((h @ W2 - y) ** 2)


def vector_output_mlp(W1, b1, w2, X, y):
    h = s2sad.broadcast(leaky_relu, X @ W1 + b1)     # b1 1-D: broadcast along the rows
    return np.mean((np.dot(h, w2) - y) ** 2)


def row_times_matrix(Z, a):
    B = s2sad.broadcast(leaky_relu, Z * 1.5)
    return np.sum((a @ B) ** 2)


def tanh_mlp(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)          # costly to evaluate: not run again with its matmul
    return np.mean((h @ W2 - y) ** 2)


def two_readers(W1, b1, W2, X, y):
    h = s2sad.broadcast(leaky_relu, X @ W1 + b1)
    return np.mean((h @ W2 - y) ** 2) + np.sum(h) * 0.1


def mlp_args(rows, vector=False):
    X = rng.normal(size=(rows, 5))
    W1 = rng.normal(size=(5, 8)) * 0.5
    b1 = rng.normal(size=(8,) if vector else (1, 8)) * 0.1
    W2 = rng.normal(size=(8,) if vector else (8, 1)) * 0.5
    y = rng.normal(size=(rows,) if vector else (rows, 1))
    return [W1, b1, W2, X, y]


def row_args(rows, vector=False):
    return [rng.normal(size=(6, rows)), rng.normal(size=(6,) if vector else (1, 6))]


CASES = [
    (one_output_mlp, lambda n: mlp_args(n), (0, 1, 2)),
    (vector_output_mlp, lambda n: mlp_args(n, vector=True), (0, 1, 2)),
    (row_times_matrix, lambda n: row_args(n), (0, 1)),
    (row_times_matrix, lambda n: row_args(n, vector=True), (0, 1)),
    (tanh_mlp, lambda n: mlp_args(n), (0, 1, 2)),
    (two_readers, lambda n: mlp_args(n), (0, 1, 2)),
]
IDS = ["one-column W2", "vector w2 (np.dot)", "row @ matrix", "vector @ matrix", "tanh, one-column W2", "h read twice"]
# how each runs: the kernel with its matmul (kernel_matmul), its pullback seeded by two
# factors (recompute mode), or neither
HOW = ["with matmul", "with matmul", "factors", "factors", "factors", "neither"]


@pytest.mark.parametrize("fn, make, nums", CASES, ids=IDS)
def test_gradients_against_finite_differences(fn, make, nums, backend):
    args = make(9)
    grads = s2sad.grad(fn, argnums=nums, backend=backend, mode="recompute")(*args)
    for i, g in zip(nums, grads):
        assert np.shape(g) == np.shape(args[i])
        np.testing.assert_allclose(g, central_fd(fn, args, i), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn, make, nums", CASES, ids=IDS)
def test_store_recompute_and_auto_are_identical(fn, make, nums, backend):
    """The factors' product is rounded once, as the formed outer product is, and the bias
    row's gradient is added row after row, as numpy's sum over the rows adds: the same
    bits as store mode at every size (the vectorised body and the remainder included)."""
    for n in (1, 2, 3, 5, 8, 13, 16, 17, 37):
        args = make(n)
        runs = [s2sad.grad(fn, argnums=nums, backend=backend, mode=m)(*args) for m in ("store", "recompute", "auto")]
        for k in (1, 2):
            for a, b in zip(runs[0], runs[k]):
                assert np.array_equal(a, b), n


@pytest.mark.parametrize("case", range(len(CASES)), ids=IDS)
def test_the_source_says_how_each_runs(case):
    fn, _, nums = CASES[case]
    text = s2sad.source(s2sad.grad(fn, argnums=nums, mode="recompute"))
    store = s2sad.source(s2sad.grad(fn, argnums=nums, mode="store"))
    explained = str(s2sad.explain(s2sad.grad(fn, argnums=nums, mode="recompute")))
    how = HOW[case]
    assert ("kernel_matmul(" in text and "kernel_matmul(" in store) == (how == "with matmul")
    assert ("_factors(" in text and "stays two factors" in text) == (how == "factors")
    assert ("seeds its kernel's pullback only, as two factors" in explained) == (how == "factors")
    assert "_factors(" not in store
    if how == "with matmul":
        assert "with the matmul that alone reads it" in explained and "store_partials(" not in store
        assert "h @ W2 in the pass of h's kernel" in text or "np.dot(h, w2)" in explained


def test_rank1_adjoints_are_the_outer_products():
    """matmul_factors gives a SeedProduct exactly where the adjoint is an outer product,
    and its product is matmul_lhs_bar / matmul_rhs_bar's array."""
    from s2sad.array_rules import matmul_factors, matmul_lhs_bar, matmul_rhs_bar

    a, col, vec, row = rng.normal(size=(4, 3)), rng.normal(size=(3, 1)), rng.normal(size=3), rng.normal(size=(1, 4))
    B = rng.normal(size=(4, 5))
    for i, g, x, y, rank1 in [(0, rng.normal(size=(4, 1)), a, col, True), (0, rng.normal(size=4), a, vec, True),
                              (1, rng.normal(size=(1, 5)), row, B, True), (1, rng.normal(size=5), B[:, 0], B, True),
                              (0, rng.normal(size=(4, 5)), a, rng.normal(size=(3, 5)), False)]:
        got = matmul_factors(i, g, x, y)
        want = (matmul_lhs_bar if i == 0 else matmul_rhs_bar)(g, x, y)
        assert isinstance(got, SeedProduct) == rank1
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.shape(got) == np.shape(x if i == 0 else y)


# ---------------------------------------------------------------- the runtime

def scaled_tanh(z, c):
    return c * z * z + z


def _kernel(f) -> Kernel:
    p = normalize(parse_function(f))
    return Kernel(p, p.entry)


@pytest.mark.parametrize("shape, c_shape", [((7, 9), (1, 9)), ((7, 9), (9,)), ((2, 3, 9), (9,)), ((2, 3, 9), (3, 9)),
                                            ((40, 3), (1, 3))])
def test_seeded_vjp_has_the_bits_of_the_formed_seed(shape, c_shape, backend):
    k = _kernel(scaled_tanh)
    z, c = rng.normal(size=shape), rng.normal(size=c_shape)
    left, right = rng.normal(size=shape[:-1] + (1,)), rng.normal(size=(1,) * (len(shape) - 1) + shape[-1:])
    got = runtime.vjp(k, (z, c), ("z", "c"), SeedProduct(left, right), backend=backend)
    want = runtime.vjp(k, (z, c), ("z", "c"), left * right, backend=backend)
    np.testing.assert_array_equal(got[0], want[0])            # full shape: the same products
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13)
    # c, a leading-axes broadcast, is summed in the driver row after row: the bits of
    # store mode, which forms the full-shape product and sums it back with numpy
    assert runtime.leading_broadcast(c_shape, shape)
    c_full = np.ascontiguousarray(np.broadcast_to(c, shape))
    store = unbroadcast(runtime.vjp(k, (z, c_full), ("c",), left * right, backend=backend)[0], c)
    assert np.array_equal(got[1], store)


def test_seeded_vjp_falls_back_where_it_does_not_apply():
    k = _kernel(scaled_tanh)
    z, c = rng.normal(size=(5, 4)).astype(np.float32), np.float32(0.5)
    left, right = rng.normal(size=(5, 1)), rng.normal(size=(1, 4))      # float64 factors: formed, then cast
    got = runtime.vjp(k, (z, c), ("z",), SeedProduct(left, right))
    want = runtime.vjp(k, (z, c), ("z",), (left * right).astype(np.float32))
    np.testing.assert_array_equal(got[0], want[0])
    assert got[0].dtype == np.float32
    with pytest.raises(ValueError):    # a seed of another shape than the values': numpy's broadcast error
        runtime.vjp(k, (z, c), ("z",), SeedProduct(rng.normal(size=(5, 1)), rng.normal(size=(2, 1, 4))))


def test_the_llvm_driver_reads_rows_and_columns_without_strides():
    """A (n, 1) operand is a column and a (1, k) one a row for the llvm driver; every
    entry point gives the python backend's numbers with them."""
    k = _kernel(scaled_tanh)
    z = rng.normal(size=(6, 5))
    for col, row in [(rng.normal(size=(6, 1)), rng.normal(size=(1, 5))), (rng.normal(size=(2, 3, 1)), rng.normal(size=5))]:
        zz = np.broadcast_to(z.reshape(-1)[:col.size * 5].reshape(col.shape[:-1] + (5,)) if col.ndim == 3 else z,
                             np.broadcast_shapes(col.shape, row.shape)).copy()
        for args in [(col, row), (row, col), (zz, row), (col, zz)]:
            for fn, extra in [(runtime.apply, ()), (runtime.sum_dual, (("z", "c"),))]:
                a = fn(k, args, *extra, backend="llvm")
                b = fn(k, args, *extra, backend="python")
                for x, y in zip(*(t if isinstance(t, tuple) else (t,) for t in (a, b))):
                    if isinstance(x, list):
                        for gx, gy in zip(x, y):
                            np.testing.assert_allclose(gx, gy, rtol=1e-13, atol=1e-13)
                    else:
                        np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-13)
    layouts = {lay for key, plan in k.launch_plans.items() if key[0] == "llvm" for lay in plan[1].layouts}
    assert {"row", "column"} <= layouts and "strided" not in layouts


# ---------------------------------------------------------------- a kernel times a column

def leaky(z, b):
    return z + b if z + b > 0 else 0.01 * (z + b)


@pytest.mark.parametrize("w_shape", [(6, 1), (6,), (6, 3)], ids=["column", "vector", "three columns"])
def test_kernel_matmul_against_forming_the_values(w_shape, backend):
    """kernel_matmul forms no values where w is one column (None), and gives numpy's
    product of the formed values up to the order of the sums; its vjp gives the
    kernel's vjp with numpy's adjoints of the product, and w's gradient."""
    k = _kernel(leaky)
    z, b = rng.normal(size=(37, 6)), rng.normal(size=(1, 6))
    w = rng.normal(size=w_shape)
    out, values = column_products.kernel_matmul(k, (z, b), w, backend=backend)
    formed = runtime.apply(k, (z, b), backend=backend)
    assert (values is None) == (w_shape != (6, 3))
    np.testing.assert_allclose(out, formed @ w, rtol=1e-14, atol=1e-14)
    assert out.shape == (formed @ w).shape
    ob = rng.normal(size=np.shape(out))
    gz, gb, gw = column_products.kernel_matmul_vjp(k, (z, b), ("z", "b"), w, True, ob, values, backend=backend)
    wz, wb = runtime.vjp(k, (z, b), ("z", "b"), np.reshape(ob, (37, -1)) @ np.reshape(w, (6, -1)).T, backend=backend)
    np.testing.assert_allclose(gz, wz, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(gb, wb, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(gw, np.reshape(formed.T @ np.reshape(ob, (37, -1)), w_shape), rtol=1e-13, atol=1e-13)
    assert gz.shape == z.shape and gb.shape == b.shape and gw.shape == w.shape
    # only some of them
    (gw_only,) = column_products.kernel_matmul_vjp(k, (z, b), (), w, True, ob, values, backend=backend)
    np.testing.assert_array_equal(gw_only, gw)
    (gz_only,) = column_products.kernel_matmul_vjp(k, (z, b), ("z",), w, False, ob, values, backend=backend)
    np.testing.assert_array_equal(gz_only, gz)


def test_kernel_matmul_forms_the_values_where_it_must():
    k = _kernel(leaky)
    z, b = rng.normal(size=(2, 5, 6)), rng.normal(size=6)
    w = rng.normal(size=(6, 1))
    out, values = column_products.kernel_matmul(k, (z, b), w)                 # values 3-D
    assert values is not None and out.shape == (2, 5, 1)
    out32, values32 = column_products.kernel_matmul(k, (z[0], b), w.astype(np.float32))   # w of another dtype
    assert values32 is not None
    np.testing.assert_allclose(out32, runtime.apply(k, (z[0], b)) @ w.astype(np.float32), rtol=1e-6)

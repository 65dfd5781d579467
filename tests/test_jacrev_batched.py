"""Issue 14, jacrev of an array program by ONE reverse sweep whose cotangent seed is the
identity with a leading batch axis on every adjoint (s2sad/batched_rows.py,
passes/batched_reverse.py), not one pullback per output element. Checked here: the
batched Jacobian against the per-row pullbacks (s2sad.vjp seeded with each basis
cotangent: the unbatched program) and central differences, on both backends; matmul,
slices, reductions along an axis, softmax, concatenation, a broadcast row; a tuple of
argnums; chunks of rows (a budget forced small); float32; a program with no batched
form (a loop, an in-place write) falls back to the per-row path and says why
(`.batched.why_not`); bad input refused located; no argument written.
"""
import numpy as np
import pytest

import s2sad
from s2sad.batched_rows import Rows
from s2sad.small_jacobian import SmallJacobian
from s2sad import batched_rows
from conftest import central_fd

A = np.linspace(-1.0, 1.2, 30).reshape(6, 5)
ROW = np.array([0.3, -0.2, 0.5, 1.1, -0.7])


def mlp(x):
    return np.tanh(A @ x)


def product(X, W):
    return X @ W


def slices(x):
    return x[1:] * x[:-1] ** 2 + np.sin(x[::2]).sum()


def axis_sums(X):
    return np.sum(X ** 2, axis=1) + np.mean(np.cos(X), axis=1)


def axis_mean_kept(X):
    return np.mean(np.exp(X), axis=0, keepdims=True) * X[0]


def softmax(X):
    z = X - np.max(X, axis=1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=1, keepdims=True)


def joined(x, W):
    h = np.tanh(W @ x) * 2.0
    return np.concatenate([h[1:], np.sum(W, axis=0), x[:2] ** 3])


def row_broadcast(X, b):
    return np.tanh(X * b + b) @ b


def scalar_out(x):
    return np.sum(np.sin(x) ** 2) * x[0]


def vector_dot(x, y):
    return np.dot(x, y) * x + y[::-1]


def matrix_vector(W, v):
    return np.exp(W @ v) + (np.cos(v) @ W.T) * 0.5


def broadcast_map(X, b):
    return np.tanh(X * b) * 2.0       # one fused kernel, not elementwise in b: its program of one statement


def total(x):
    return np.sum(np.sin(x) ** 2)     # one fused sum: the gradient as the one row


def two_leaves(x, W):
    h = np.tanh(W @ x)
    return h, {"a": x[1:] * h[0], "b": np.sum(W * W, axis=1)}


def looped(x):
    s = x * 1.0
    for _ in range(3):
        s = np.tanh(s * 1.1)
    return s[1:] * s[:-1]


def written(x):
    y = x.copy()
    y[0] = y[-1] * 2.0
    return y[1:] * y[:-1] ** 2


def const_out(x, y):
    return np.sin(y) * 2.0


def rng_args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(size=s) * 0.7 for s in shapes)


CASES = [
    (mlp, rng_args((5,)), 0),
    (product, rng_args((3, 4), (4, 2)), (0, 1)),
    (slices, rng_args((7,)), 0),
    (axis_sums, rng_args((3, 4)), 0),
    (axis_mean_kept, rng_args((3, 4)), 0),
    (softmax, rng_args((3, 4)), 0),
    (joined, rng_args((4,), (4, 4)), (0, 1)),
    (row_broadcast, rng_args((3, 5), (5,)), (0, 1)),
    (row_broadcast, (rng_args((3, 5))[0], ROW), 1),
    (scalar_out, rng_args((5,)), 0),
    (vector_dot, rng_args((4,), (4,)), (0, 1)),
    (matrix_vector, rng_args((3, 4), (4,)), (0, 1)),
    (broadcast_map, rng_args((3, 4), (4,)), (0, 1)),
    (total, rng_args((6,)), 0),
]
IDS = [f"{c[0].__name__}-{c[2]}" for c in CASES]


def per_row(fun, args, argnums, backend="auto"):
    """The Jacobian(s) row by row: the pullback of one vjp seeded with each basis cotangent."""
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    out, pullback = s2sad.vjp(fun, *args, backend=backend)
    shape = np.shape(out)
    rows = []
    for e in np.eye(int(np.prod(shape))):
        rows.append(pullback(e.reshape(shape)))
    jacs = tuple(np.array([r[i] for r in rows]).reshape(shape + np.shape(args[i])) for i in nums)
    return jacs if isinstance(argnums, tuple) else jacs[0]


def fd_jacobian(fun, args, i):
    out = np.asarray(fun(*args))
    rows = [central_fd(lambda *a: np.asarray(fun(*a)).reshape(-1)[k], args, i) for k in range(out.size)]
    return np.array(rows).reshape(out.shape + np.shape(args[i]))


def as_tuple(j, argnums):
    return j if isinstance(argnums, tuple) else (j,)


@pytest.mark.parametrize("backend", ["python", "llvm"])
@pytest.mark.parametrize("fun,args,argnums", CASES, ids=IDS)
def test_batched_rows_equal_per_row_pullbacks(fun, args, argnums, backend):
    jac = s2sad.jacrev(fun, argnums=argnums, backend=backend)
    got = as_tuple(jac(*args), argnums)
    assert jac.batched.why_not is None, jac.batched.why_not
    want = as_tuple(per_row(fun, args, argnums, backend), argnums)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    again = as_tuple(jac(*args), argnums)      # the warm path: the same numbers
    for g, h in zip(got, again):
        np.testing.assert_array_equal(g, h)


@pytest.mark.parametrize("fun,args,argnums", CASES, ids=IDS)
def test_batched_rows_match_central_differences(fun, args, argnums):
    got = as_tuple(s2sad.jacrev(fun, argnums=argnums)(*args), argnums)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    for g, i in zip(got, nums):
        np.testing.assert_allclose(g, fd_jacobian(fun, args, i), rtol=1e-6, atol=1e-6)


def test_backends_agree():
    args = rng_args((4,), (4, 4))
    a = s2sad.jacrev(joined, argnums=(0, 1), backend="python")(*args)
    b = s2sad.jacrev(joined, argnums=(0, 1), backend="llvm")(*args)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


def test_same_bits_as_per_row_where_the_same_kernels_run():
    """mlp's pullback: stored partials times the seed, and A.T @ g: row by row the same
    products (the batched matmul is g @ A; its sums run in the same order here)."""
    x = rng_args((5,))[0]
    got = Rows(slices, "auto")((x,), (0,))[0]      # (jacrev of so small a program: unrolled, small_jacobian)
    np.testing.assert_array_equal(got, per_row(slices, (x,), 0))


def test_chunks_of_rows_give_the_same_jacobian(monkeypatch):
    monkeypatch.setattr(SmallJacobian, "full", lambda self, args: None)     # (the batched rows' chunks here)
    args = rng_args((3, 5), (5,))
    whole = s2sad.jacrev(row_broadcast, argnums=(0, 1))
    want = whole(*args)
    assert whole.batched.chunks == (1, 3)
    monkeypatch.setattr(batched_rows, "BUDGET", 16)     # 16 // 15 elements: one row a chunk
    jac = s2sad.jacrev(row_broadcast, argnums=(0, 1))
    got = jac(*args)
    assert jac.batched.chunks == (3, 1) and jac.batched.why_not is None
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)
    monkeypatch.setattr(batched_rows, "BUDGET", 2 * 15)
    jac = s2sad.jacrev(softmax)
    X = rng_args((3, 5))[0]
    np.testing.assert_allclose(jac(X), per_row(softmax, (X,), 0), rtol=1e-12, atol=1e-13)
    assert jac.batched.chunks == (8, 2)       # 15 rows, 2 a chunk


@pytest.mark.parametrize("fun,what,line", [(looped, "a loop", "for _ in range(3)"),
                                           (written, "an in-place write", "y[0] = y[-1] * 2.0")])
def test_no_batched_form_falls_back_and_says_why(fun, what, line):
    x = rng_args((6,))[0]
    jac = s2sad.jacrev(fun)
    got = jac(x)
    assert jac.batched.why_not is not None and jac.batched.why_not.startswith(what), jac.batched.why_not
    assert "test_jacrev_batched.py" in jac.batched.why_not
    np.testing.assert_allclose(got, per_row(fun, (x,), 0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, fd_jacobian(fun, (x,), 0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["python", "llvm"])
def test_container_output_one_batched_pullback_per_leaf(backend):
    x, W = rng_args((4,), (3, 4))
    jac = s2sad.jacrev(two_leaves, argnums=(0, 1), backend=backend)
    got = jac(x, W)
    assert jac.batched.why_not is None, jac.batched.why_not
    want = s2sad.jacfwd(two_leaves, argnums=(0, 1), backend=backend)(x, W)     # forward mode: independent
    leaves = [got[0], got[1]["a"], got[1]["b"]]
    for g, w, name in zip(leaves, [want[0], want[1]["a"], want[1]["b"]], ("h", "a", "b")):
        assert isinstance(g, tuple) and len(g) == 2
        for i, (gi, wi) in enumerate(zip(g, w)):
            np.testing.assert_allclose(gi, wi, rtol=1e-12, atol=1e-12)
            leaf = {"h": lambda *a: two_leaves(*a)[0], "a": lambda *a: two_leaves(*a)[1]["a"],
                    "b": lambda *a: two_leaves(*a)[1]["b"]}[name]
            np.testing.assert_allclose(gi, fd_jacobian(leaf, (x, W), i), rtol=1e-6, atol=1e-6)
    one = s2sad.jacrev(two_leaves)(x, W)        # one argnum: each leaf's Jacobian, not a tuple
    np.testing.assert_allclose(one[1]["b"], np.zeros((3, 4)))
    np.testing.assert_allclose(one[0], leaves[0][0], rtol=1e-14)


def test_float32_gives_the_per_row_dtype():
    args = tuple(a.astype(np.float32) for a in rng_args((3, 4), (4, 2)))
    got = s2sad.jacrev(product, argnums=(0, 1))(*args)
    want = per_row(product, args, (0, 1))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_result_not_depending_on_an_argument_is_zero():
    x, y = rng_args((3,), (4,))
    jx, jy = s2sad.jacrev(const_out, argnums=(0, 1))(x, y)
    assert jx.shape == (4, 3) and not jx.any()
    np.testing.assert_allclose(jy, np.diag(2.0 * np.cos(y)), rtol=1e-14)


def test_free_data_read_at_each_call(monkeypatch):
    monkeypatch.setattr(SmallJacobian, "full", lambda self, args: None)     # (the batched rows' warm path here: unrolled otherwise)
    x = rng_args((5,))[0]
    jac = s2sad.jacrev(mlp)
    first = jac(x)
    assert jac.batched.hot is not None      # the warm path, free data read per call
    monkeypatch.setattr(__import__(__name__), "A", A * 2.0)
    second = jac(x)
    np.testing.assert_allclose(second, per_row(mlp, (x,), 0), rtol=1e-12, atol=1e-12)
    assert not np.allclose(first, second)


def test_arguments_not_written_and_not_kept():
    X, b = rng_args((3, 5), (5,))
    X0, b0 = X.copy(), b.copy()
    s2sad.jacrev(row_broadcast, argnums=(0, 1))(X, b)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(b, b0)


def test_hostile_arguments():
    x = rng_args((5,))[0]
    jac = s2sad.jacrev(slices)
    with pytest.raises(s2sad.NonDifferentiableInputError) as e:
        jac(np.arange(5))
    assert e.value.location is not None
    with pytest.raises(s2sad.S2SADError):
        s2sad.jacrev(slices, argnums=3)(x)
    empty = s2sad.jacrev(axis_sums)(np.zeros((0, 3)))
    assert empty.shape == (0, 0, 3)
    nan = np.full(5, np.nan)
    np.testing.assert_array_equal(jac(nan), per_row(slices, (nan,), 0))     # NaN where the rows give NaN
    with pytest.raises(s2sad.S2SADError):
        jac(2.5)        # a number where the function slices its parameter: located, as per row


def test_one_array_given_twice():
    x = rng_args((4,))[0]
    got = s2sad.jacrev(vector_dot, argnums=(0, 1))(x, x)
    want = per_row(vector_dot, (x, x), (0, 1))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    assert not np.shares_memory(got[0], got[1])


def test_zero_dimensional_argument_falls_back_and_is_right():
    y = rng_args((4,))[0]
    jac = s2sad.jacrev(lambda_like, argnums=(0, 1))
    got = jac(np.array(0.7), y)
    assert jac.batched.why_not == "an argument that is a number, 0-d or empty"
    want = per_row(lambda_like, (np.array(0.7), y), (0, 1))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def lambda_like(a, y):
    return np.exp(a * y[::-1]) @ np.ones((4, 2))

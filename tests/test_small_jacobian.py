"""Issue 14: jacfwd / jacrev of a small fixed-shape array program in one call into
machine code (s2sad/small_jacobian.py: the program unrolled per argument shapes, its
first derivatives by sparse forward mode, one LLVM function). Checked here against the
batched paths (batched_jac.Blocks columns, batched_rows.Rows rows), per-column jvps and
central differences; tuples of argnums; what falls back (containers, ints, float32,
0-d, empty, NaN, strided, loops) with the general path's numbers or
its located refusal; free global arrays read per call; shapes and globals changing between calls; no argument written,
the function not kept alive; explain says "unrolled".
"""
import gc
import weakref

import numpy as np
import pytest

import s2sad
from s2sad.batched_jac import Blocks
from s2sad.batched_rows import Rows
from conftest import central_fd

RNG = np.random.default_rng(11)
JACS = [s2sad.jacfwd, s2sad.jacrev]
K = 2.0
A = RNG.normal(size=(4, 4))


def neighbours(x):
    return x[1:] * x[:-1]


def mixed(x, y):
    return np.tanh(x[1:] * y[:-1]) + np.sin(x[:-1]) / (2.0 + y[1:]) + np.exp(0.1 * x[1:]) * y[1:] ** 3


def matrix(W, v):
    return np.tanh(W @ v) * np.sum(v ** 2)


def with_float(x, c):
    return c * x[1:] ** 2 - np.log1p(x[:-1] ** 2) * c


def uses_k(x):
    return K * x[1:] * x[:-1]


def reads_a(x):
    return np.tanh(A @ x)


def pair(x):
    return x[1:] * x[:-1], np.sum(x)


def looped(x):
    s = x * 1.0
    for _ in range(2):
        s = np.sin(s[1:] * s[:-1])
    return s


def loss(x):
    return np.sum(x[1:] * x[:-1] ** 2)


CASES = [
    (neighbours, ((10,),), 0),
    (mixed, ((6,), (6,)), 0),
    (mixed, ((6,), (6,)), 1),
    (mixed, ((6,), (6,)), (0, 1)),
    (mixed, ((6,), (6,)), (1, 0)),
    (matrix, ((3, 4), (4,)), (0, 1)),
    (matrix, ((3, 4), (4,)), -1),
    (with_float, ((5,), None), 0),
    (loss, ((7,),), 0),
]
IDS = [f"{f.__name__}-{n}" for f, _, n in CASES]


def args_of(shapes):
    return tuple(RNG.normal(size=s) if s is not None else float(RNG.normal()) for s in shapes)


def as_tuple(j, nums):
    return j if isinstance(nums, tuple) else (j,)


def per_column(fun, args, i):
    """d fun / d args[i] one jvp per basis direction, shape out + in."""
    x = args[i]
    cols = []
    for e in np.ndindex(x.shape):
        t = [np.zeros_like(a) if isinstance(a, np.ndarray) else 0.0 for a in args]
        t[i] = np.zeros_like(x)
        t[i][e] = 1.0
        cols.append(np.asarray(s2sad.jvp(fun, args, tuple(t))[1]))
    out = np.asarray(fun(*args))
    return np.stack(cols, axis=-1).reshape(out.shape + x.shape)


def close(got, want, rtol=1e-12):
    scale = max(1.0, float(np.max(np.abs(want)))) if np.size(want) else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("jac", JACS)
@pytest.mark.parametrize("fun,shapes,nums", CASES, ids=IDS)
def test_unrolled_jacobian_matches_the_other_paths(jac, fun, shapes, nums):
    args = args_of(shapes)
    w = jac(fun, nums)
    first, second = w(*args), w(*args)      # the full path, then the hot path
    assert w.took == ("unrolled",)
    n = len(args)
    norm = tuple(i % n for i in as_tuple(nums, nums))
    cols = Blocks(fun, "llvm", "jacfwd")(args, None, norm)
    rows = Rows(fun, "llvm")(args, norm) if fun is not loss else None
    for got, again, i in zip(as_tuple(first, nums), as_tuple(second, nums), norm):
        assert got.dtype == np.float64 and got.shape == np.shape(fun(*args)) + args[i].shape
        np.testing.assert_array_equal(got, again)
        close(got, per_column(fun, args, i))
        if cols is not None:
            close(got, cols[i])
        if rows is not None:
            close(got, rows[i])
        fd = np.array([central_fd(lambda *a: np.asarray(fun(*a)).reshape(-1)[k], args, i)
                       for k in range(np.size(fun(*args)))]).reshape(got.shape)
        close(got, fd, rtol=1e-6)


@pytest.mark.parametrize("jac", JACS)
def test_structural_zeros_are_zero(jac):
    x = RNG.normal(size=10)
    j = jac(neighbours)(x)
    assert np.count_nonzero(j) == 18
    np.testing.assert_array_equal(np.diag(j), x[1:])
    np.testing.assert_array_equal(np.diag(j, 1), x[:-1])


@pytest.mark.parametrize("jac", JACS)
def test_falls_back_as_the_general_path(jac):
    x = RNG.normal(size=6)
    w = jac(neighbours)
    want = w(x)
    for bad, dtype in ((x.astype(np.float32), np.float32), (np.linspace(0, 1, 12)[::2], np.float64)):
        got = w(bad)
        assert w.took != ("unrolled",) and got.dtype == dtype
        close(got, jac(neighbours, backend="python")(bad), rtol=1e-6)
    xn = x.copy()
    xn[2] = np.nan
    got = w(xn)
    assert w.took != ("unrolled",) and np.isnan(got).any()
    assert w(np.zeros(0)).shape == (0, 0) and w.took != ("unrolled",)
    with pytest.raises(s2sad.S2SADError):
        w(np.arange(6))         # ints: refused, located, as before
    w(x)
    assert w.took == ("unrolled",)
    np.testing.assert_array_equal(w(x), want)


@pytest.mark.parametrize("jac", JACS)
def test_zero_d_and_floats_fall_back(jac):
    def square(t):
        return t * t
    w = jac(square)
    got = w(np.array(0.7))
    assert w.took != ("unrolled",)
    close(got, 1.4)
    x = RNG.normal(size=4)
    w = jac(with_float, 1)
    got = w(x, 0.5)
    assert w.took != ("unrolled",) and np.shape(got) == (3,)
    close(got, x[1:] ** 2 - np.log1p(x[:-1] ** 2))     # d with_float / d c, analytic


@pytest.mark.parametrize("jac", JACS)
def test_containers_and_loops_fall_back(jac):
    x = RNG.normal(size=4)
    j, g = jac(pair)(x)
    assert jac(pair).took != ("unrolled",)
    close(j, per_column(neighbours, (x,), 0))
    close(g, np.ones(4))
    w = jac(looped)
    close(w(x), per_column(looped, (x,), 0))
    assert w.took != ("unrolled",) and w.small.why_not == "a loop"


@pytest.mark.parametrize("jac", JACS)
def test_a_free_global_array_is_read_per_call(jac):
    global A
    x = RNG.normal(size=4)
    keep = A
    w = jac(reads_a)
    try:
        for k in range(3):
            close(w(x), (1 - np.tanh(A @ x) ** 2)[:, None] * A)
            assert w.took == ("unrolled",)
        A[0, 0] += 1.0          # written in place: read now
        close(w(x), (1 - np.tanh(A @ x) ** 2)[:, None] * A)
        A = 2.0 * A             # rebound
        close(w(x), (1 - np.tanh(A @ x) ** 2)[:, None] * A)
        assert w.took == ("unrolled",)
        A = RNG.normal(size=(3, 4))     # another shape: planned again
        close(w(x), (1 - np.tanh(A @ x) ** 2)[:, None] * A)
        assert w.took == ("unrolled",)
        A = np.ones((4, 4), dtype=np.int64)     # ints: the general path
        close(w(x), (1 - np.tanh(A @ x) ** 2)[:, None] * A)
        assert w.took != ("unrolled",)
    finally:
        A = keep


@pytest.mark.parametrize("jac", JACS)
def test_shapes_change_between_calls(jac):
    w = jac(mixed, (0, 1))
    for n in (4, 7, 4, 9, 7):
        args = args_of(((n,), (n,)))
        got = w(*args)
        assert w.took == ("unrolled",)
        close(got[0], per_column(mixed, args, 0))
        close(got[1], per_column(mixed, args, 1))


@pytest.mark.parametrize("jac", JACS)
def test_a_global_changed_between_calls(jac):
    global K
    x = RNG.normal(size=5)
    w = jac(uses_k)
    first = w(x)
    w(x)
    try:
        K = 3.0
        close(w(x), first * 1.5)
    finally:
        K = 2.0
    close(w(x), first)


@pytest.mark.parametrize("jac", JACS)
def test_no_argument_written_and_the_function_not_kept(jac):
    def local(x):
        return np.sin(x[1:]) * x[:-1]
    x = RNG.normal(size=8)
    keep = x.copy()
    w = jac(local)
    w(x)
    w(x)
    assert w.took == ("unrolled",)
    np.testing.assert_array_equal(x, keep)
    ref = weakref.ref(local)
    del local, w
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("jac", JACS)
def test_explain_says_unrolled_first_derivatives(jac):
    text = str(s2sad.explain(jac(neighbours), RNG.normal(size=6)))
    assert "unrolled" in text and "first derivatives" in text and "small_jacobian" in text

"""Shape arithmetic inside array programs (session 8, trust): `h.shape[0] + 1`,
`len(x) - 1`, `x.size - 1`, `h.ndim - 1` are Python ints (integer metadata), evaluated as
written wherever they appear (np.zeros, np.ones, reshape, np.arange, range, slice
bounds, axes), never fused into a float kernel, where numpy raised a raw TypeError
('float' object cannot be interpreted as an integer). Each gradient is checked against
central differences on both backends."""
import numpy as np
import pytest

import s2sad
from conftest import central_fd


def zeros_plus_one(x):
    h = np.tanh(x)
    z = np.zeros(h.shape[0] + 1)
    z[1:] = h
    return np.sum(z ** 2)


def ones_of_len(x):
    n = x.shape[0]
    o = np.ones((n, 2))
    return np.sum(o * x[:, None] ** 2)


def reshape_half(x):
    h = np.tanh(x)
    y = h.reshape(h.shape[0] // 2, 2)
    return np.sum(y[:, 0] * y[:, 1])


def arange_minus_one(x):
    a = np.arange(x.shape[0] - 1)
    return np.sum(x[1:] * a)


def range_len_minus_one(x):
    s = 0.0
    for i in range(len(x) - 1):
        s = s + x[i] * x[i + 1]
    return s


def slice_len_minus_one(x):
    return np.sum(x[:len(x) - 1] * x[1:])


def size_minus_one(x):
    return np.sum(x) / x.size + np.sum(x ** 2) / (x.size - 1)


def axis_from_ndim(x):
    h = np.sin(x)
    return np.sum(np.sum(h, axis=h.ndim - 1) ** 2)


def half_of_last(x):
    h = np.sin(x)
    k = h.shape[-1] // 2
    return np.sum(h[..., :k] * h[..., k:2 * k])


def eye_of_shape(x):
    return np.sum(x[:, :x.shape[1] - 1] * np.eye(x.shape[0], x.shape[1] - 1))


def while_below_shape(x):
    s = 0.0
    i = 0
    while i < x.shape[0] - 1:
        s = s + x[i, 0] * x[i + 1, 1]
        i += 1
    return s


def shifted_writes(x):
    y = np.zeros((x.shape[0] + 1, x.shape[1]))
    for i in range(x.shape[0]):
        y[i + 1] = y[i] * 0.5 + x[i]
    return np.sum(y ** 2)


def full_and_half_slice(x):
    return np.sum(np.full(x.shape[0] - 1, 2.0) * x[1:, 0]) + np.sum(x[len(x) // 2:])


def float_scale_of_shape(x):
    m = x.shape[0] * 0.5          # a float: stays a float
    return np.sum(x * m)


def last_column_of_cumsum(x):
    h = np.tanh(x)
    return np.sum(np.cumsum(h, axis=-1)[:, h.shape[1] - 1])


def appended_pairs(x):
    out = []
    for i in range(len(x) - 1):
        out.append(x[i] * x[i + 1])
    return np.sum(np.stack(out) ** 2)


def named_count(x):
    n = x.shape[0]
    m = n - 1
    return np.sum(x[np.arange(m)] ** 2 * np.arange(m)[:, None])


def linspace_of_rows(x):
    W = np.tanh(x)
    return np.sum((W @ W.T).shape[1] * np.linspace(0.0, 1.0, W.T.shape[1]) * W[:, 0])


VECTOR = [zeros_plus_one, ones_of_len, reshape_half, arange_minus_one, range_len_minus_one, slice_len_minus_one,
          size_minus_one]
MATRIX = [size_minus_one, axis_from_ndim, half_of_last, eye_of_shape, while_below_shape, shifted_writes,
          full_and_half_slice, float_scale_of_shape, last_column_of_cumsum, appended_pairs, named_count,
          linspace_of_rows]


@pytest.mark.parametrize("f", VECTOR, ids=lambda f: f.__name__)
def test_shape_arithmetic_on_a_vector(f, backend):
    x = np.linspace(0.1, 0.9, 6)
    g = s2sad.grad(f, backend=backend)(x)
    np.testing.assert_allclose(g, central_fd(f, [x], 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", MATRIX, ids=lambda f: f.__name__)
def test_shape_arithmetic_on_a_matrix(f, backend):
    x = np.random.default_rng(3).normal(size=(5, 4))
    g = s2sad.grad(f, backend=backend)(x)
    np.testing.assert_allclose(g, central_fd(f, [x], 0), rtol=1e-6, atol=1e-7)


def test_shape_arithmetic_is_not_a_kernel():
    """The shape expression is one statement evaluated as written, not a kernel's input."""
    src = s2sad.source(s2sad.grad(zeros_plus_one, backend="python"))
    assert "_1 = h.shape[0]\n    z = np.zeros(_1 + 1)" in src
    assert all("+ 1" not in k for k in src.split("# Kernel")[1:])


def shape_unpacked(x):
    n, d = x.shape
    return np.sum(x) / n


def test_unpacking_a_shape_works():
    """(refused until session 9; tests/test_trust_s9_shape_unpacking.py has the routes)"""
    np.testing.assert_allclose(s2sad.grad(shape_unpacked)(np.ones((2, 3))), np.full((2, 3), 0.5), rtol=1e-15)


def shapes_of_a_row_program(x, W):
    h = np.tanh(x @ W)
    k = h.shape[1] - 1
    return np.sum(h[:, :k] ** 2) + np.sum(np.zeros((len(h), k + 1)) + h)


def test_shape_arithmetic_under_jvp_hessian_and_two_arguments(backend):
    rng = np.random.default_rng(1)
    x, W = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    gx, gW = s2sad.grad(shapes_of_a_row_program, argnums=(0, 1), backend=backend)(x, W)
    np.testing.assert_allclose(gx, central_fd(shapes_of_a_row_program, [x, W], 0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gW, central_fd(shapes_of_a_row_program, [x, W], 1), rtol=1e-6, atol=1e-7)
    v = rng.normal(size=x.shape)
    _, t = s2sad.jvp(lambda a: shapes_of_a_row_program(a, W), (x,), (v,), backend=backend)
    np.testing.assert_allclose(t, np.sum(central_fd(shapes_of_a_row_program, [x, W], 0) * v), rtol=1e-6)
    xv = np.linspace(0.1, 0.9, 6)
    H = s2sad.hessian(slice_len_minus_one)(xv)
    want = np.zeros((6, 6))
    for i in range(5):
        want[i, i + 1] = want[i + 1, i] = 1.0
    np.testing.assert_allclose(H, want, atol=1e-12)


def next_of_argmax(x):
    i = np.argmax(x)
    return x[i] * x[(i + 1) % len(x)]


def alternate_items(x):
    return np.sum(x[np.arange(len(x)) % 2] ** 2)


def diagonal_walk(x):
    return np.mean(x[np.arange(x.shape[0] - 1), np.arange(x.shape[0] - 1) % x.shape[1]])


def sorted_pairs(x):
    idx = np.argsort(x)
    return np.sum(x[idx[1:]] * x[idx[:-1]])


@pytest.mark.parametrize("f", [next_of_argmax, alternate_items, sorted_pairs], ids=lambda f: f.__name__)
def test_integer_arithmetic_in_an_index_stays_integer(f, backend):
    """An index computed with arithmetic on integer arrays or numpy ints ((i + 1) % len(x),
    np.arange(n) % 2) was fused into a float kernel, and numpy refused the float index
    with a raw IndexError; an index is a static parameter, evaluated as written."""
    x = np.array([0.3, -0.7, 1.2, 0.5, 0.1])
    np.testing.assert_allclose(s2sad.grad(f, backend=backend)(x), central_fd(f, [x], 0), rtol=1e-6, atol=1e-8)


def test_integer_arithmetic_in_a_tuple_index(backend):
    x = np.random.default_rng(5).normal(size=(5, 3))
    np.testing.assert_allclose(s2sad.grad(diagonal_walk, backend=backend)(x), central_fd(diagonal_walk, [x], 0),
                               rtol=1e-6, atol=1e-8)

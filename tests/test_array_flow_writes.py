"""In-place writes into local arrays at the array level (issue 15): `y[i] = ...`,
`y[mask] = 0`, `y[:, j] += v`, `x = x.copy(); x[0] = 0`, in loops too, lowered as
functional updates; the overwritten elements' adjoints are zeroed (PyTorch's semantics).
Writes into arguments, free arrays, views, and writes whose old contents another name
still reads are located refusals."""
import numpy as np
import pytest

import s2sad
from flow_helpers import check, refused

rng = np.random.default_rng(15)


def fill_elements(x):
    y = np.zeros(3)
    y[0] = x[0] * 2.0
    y[1:] = np.tanh(x[1:3])
    y[-1] += x[3] ** 2
    return np.sum(y * y)


def copy_then_zero(x):
    x = x.copy()
    x[0] = 0.0
    return np.sum(np.sin(x) * x)


def overwrite_kills_gradient(x):
    y = x * 2.0
    y[1] = 5.0
    return np.sum(y ** 2)


def masked(x):
    y = x.copy()
    y[y < 0] = 0.0
    return np.sum(y * x)


def column_update(X, v):
    Y = X * 1.0
    for j in range(X.shape[1]):
        Y[:, j] += v * j
    return np.sum(np.tanh(Y))


def recurrence(x):
    y = np.zeros(len(x))
    y[0] = x[0]
    for i in range(1, len(x)):
        y[i] = 0.5 * y[i - 1] * x[i] + np.sin(x[i])
    return np.sum(y ** 2)


def rows_of_matrix(W, x):
    H = np.zeros((3, len(x)))
    h = x
    for k in range(3):
        h = np.tanh(W @ h)
        H[k] = h
    return np.sum(H * H)


def repeated_assign(x):
    y = np.zeros(3)
    y[[0, 0, 2]] = x[:3]       # numpy keeps the last of the repeated index
    return np.sum(y * np.arange(1.0, 4.0))


def repeated_add(x):
    y = x[:3] * 1.0
    y[[0, 0]] += x[3:5]        # not accumulated: y[0] = y[0] + x[4]
    return np.sum(y ** 2)


def negative_fancy(x):
    y = np.ones(4)
    y[[-1, 1]] = x[:2] * x[2:4]
    return np.sum(np.exp(y))


def scalar_broadcast(x):
    y = np.zeros((2, 3))
    y[1] = np.sum(x)           # a number broadcast along the row
    y[:, 0] = x[:2]
    return np.sum(y * y)


def alias_not_read_after(x):
    y = x * 3.0
    z = y
    s = np.sum(z)
    y[0] = s
    return np.sum(y ** 2)


def write_in_if(x):
    y = np.zeros(2)
    if x[0] > 0:
        y[0] = x[1]
    else:
        y[1] = x[1] * 2.0
    return np.sum(y * x[:2])


def helper_writes(a, v):
    a[0] = v
    return a


def calls_a_writing_helper(x):
    y = x * 2.0
    y = helper_writes(y, np.sum(x))
    return np.sum(y ** 2)


@pytest.mark.parametrize("f,args", [
    (fill_elements, [rng.normal(size=4)]),
    (copy_then_zero, [rng.normal(size=4)]),
    (overwrite_kills_gradient, [rng.normal(size=3)]),
    (masked, [np.array([0.5, -1.0, 2.0, -0.3])]),
    (recurrence, [rng.normal(size=6)]),
    (repeated_assign, [rng.normal(size=3)]),
    (repeated_add, [rng.normal(size=5)]),
    (negative_fancy, [rng.normal(size=4)]),
    (scalar_broadcast, [rng.normal(size=3)]),
    (alias_not_read_after, [rng.normal(size=3)]),
    (write_in_if, [np.array([0.5, 2.0])]),
    (write_in_if, [np.array([-0.5, 2.0])]),
    (calls_a_writing_helper, [rng.normal(size=3)]),
], ids=lambda a: getattr(a, "__name__", ""))
def test_writes_match_finite_differences(f, args, backend):
    check(f, args, 0, backend)


def test_column_updates_and_rows_in_loops(backend):
    X, v = rng.normal(size=(4, 3)), rng.normal(size=4)
    check(column_update, [X, v], (0, 1), backend)
    W, x = rng.normal(size=(4, 4)) * 0.5, rng.normal(size=4)
    check(rows_of_matrix, [W, x], (0, 1), backend)


def test_overwritten_elements_get_no_gradient():
    g = s2sad.grad(overwrite_kills_gradient)(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(g, [8.0, 0.0, 24.0])


def test_repeated_index_is_not_accumulated():
    x = np.array([1.0, 2.0, 3.0])
    # y = [x1, 0, x2]: x0 is overwritten by x1 in y[0]
    np.testing.assert_allclose(s2sad.grad(repeated_assign)(x), [0.0, 1.0, 3.0])


def test_the_generated_code_writes_functionally():
    text = s2sad.source(s2sad.grad(fill_elements))
    assert "set_items(" in text and "set_items_base_bar(" in text or "set_items_value_bar(" in text


# ---------------------------------------------------------------- refusals

def into_argument(x):
    x[0] = 0.0
    return np.sum(x)


def into_argument_column(X):
    X[:, 0] += 1.0
    return np.sum(X)


FREE = np.ones(3)


def into_free(x):
    FREE[0] = x[0]
    return np.sum(FREE * x)


def into_view(x):
    Y = np.zeros((2, 3))
    r = Y[0]
    r[1] = x[0]
    return np.sum(Y) + np.sum(x)


def into_argument_view(X):
    c = X[:, 0]
    c[1] = 5.0
    return np.sum(X)


def alias_read_after(x):
    y = x * 2.0
    z = y
    y[0] = 1.0
    return np.sum(z * x)


def view_read_after(x):
    y = x * 2.0
    t = y[0:2]
    y[0] = 1.0
    return np.sum(t) + np.sum(y)


def view_read_next_iteration(x):
    y = x * 2.0
    t = y[0:2]
    s = 0.0
    for i in range(3):
        s = s + np.sum(t)
        y[i] = x[i]
    return s + np.sum(y)


def helper_writes_callers_array(x):
    y = x * 2.0
    helper_out = helper_writes(y, 1.0)
    return np.sum(y * helper_out)


def loop_rebinds_to_argument(x):
    y = np.zeros(3)
    for i in range(3):
        y[i] = 1.0
        y = x
    return np.sum(y * x)


def chained_index(x):
    y = np.zeros((2, 2))
    y[0][1] = x[0]
    return np.sum(y) + np.sum(x)


@pytest.mark.parametrize("f,needle,words", [
    (into_argument, "x[0] = 0.0", ["argument", "x = x.copy()"]),
    (into_argument_column, "X[:, 0] += 1.0", ["argument"]),
    (into_free, "FREE[0] = x[0]", ["outside the function"]),
    (into_view, "r[1] = x[0]", ["view"]),
    (into_argument_view, "c[1] = 5.0", ["view"]),
    (alias_read_after, "y[0] = 1.0", ["read after the write"]),
    (view_read_after, "y[0] = 1.0", ["read after the write"]),
    (view_read_next_iteration, "y[i] = x[i]", ["'y'"]),
    (helper_writes_callers_array, "a[0] = v", ["read after the write"]),
    (loop_rebinds_to_argument, "y[i] = 1.0", ["loop"]),
    (chained_index, "y[0][1] = x[0]", ["Index once"]),
], ids=lambda a: getattr(a, "__name__", "") if callable(a) else "")
def test_writes_that_numpy_would_see_elsewhere_are_refused(f, needle, words):
    x = np.ones((3, 3)) if f in (into_argument_column, into_argument_view) else np.ones(3)
    where = helper_writes if f is helper_writes_callers_array else None
    refused(f, [x], needle, s2sad.UnsupportedOperationError, words, where)
    if f in (into_argument, into_argument_column, into_argument_view):
        assert np.all(x == 1.0)     # the argument is not changed


def float_into_int(x):
    y = np.zeros(3, dtype=int)
    y[0] = x[0]
    return np.sum(y * x)


def test_a_float_written_into_an_int_array_is_refused_where_it_is_written():
    with pytest.raises(s2sad.UnsupportedOperationError) as e:
        s2sad.grad(float_into_int)(np.ones(3))
    assert "truncates" in str(e.value) and "test_array_flow_writes.py" in str(e.value) and e.value.hint


def int_writes(x):
    idx = np.zeros(3, dtype=int)
    for i in range(3):
        idx[i] = 2 - i
    return np.sum(x[idx] * x)


def test_integer_bookkeeping_arrays_are_written_without_derivative(backend):
    check(int_writes, [rng.normal(size=3)], 0, backend)

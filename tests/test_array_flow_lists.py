"""Lists of arrays at the array level (issue 15): `for a in list_of_arrays` (a list the
function builds), `for row in X`, `zip`, `enumerate`, comprehensions of arrays,
`np.stack` / `np.array` / `sum` of a list of differentiated values, lists built with
`append` (in a loop over a tuple or range(<constant>): unrolled). A list built by a loop
whose count is known only at run time is a located refusal that says what to write."""
import numpy as np
import pytest

import s2sad
from flow_helpers import check, refused

rng = np.random.default_rng(1516)


def rows_of_X(X, w):
    s = 0.0
    for row in X:
        s = s + np.tanh(row @ w)
    return s


def rows_of_product(X, W):
    s = 0.0
    for h in X @ W:
        s = s + np.sum(np.sin(h))
    return s


def zip_rows(X, Y):
    s = 0.0
    for a, b in zip(X, Y):
        s = s + np.sum(a * b) ** 2
    return s


def enumerate_rows(X):
    s = 0.0
    for i, row in enumerate(X):
        s = s + (i + 1) * np.sum(row ** 3)
    return s


def local_list(x, y):
    hs = [x, np.tanh(y)]
    t = 0.0
    for h in hs:
        t = t + np.sum(h * h)
    return t


def appended_in_tuple_loop(x, y):
    hs = []
    for a in (x, y, x * y):
        hs.append(np.sin(a))
    return np.sum(np.stack(hs) ** 2) + np.sum(hs[-1]) + np.sum(hs[0])


def rnn_constant_steps(W, x):
    h = x
    hs = []
    for t in range(4):
        h = np.tanh(W @ h + 0.1 * t)
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def comprehension_of_arrays(x, Ws):
    Ws = [Ws[0], Ws[1] * 2.0]
    outs = [np.tanh(W @ x) for W in Ws]
    return np.sum(np.array(outs)) + np.sum(sum(outs))


def comprehension_over_range(x):
    parts = [x * k for k in range(3)]
    return np.sum(np.stack(parts) ** 2) + np.sum(sum(p ** 2 for p in parts))


def zip_and_enumerate_of_lists(x, y):
    a = [x, y]
    b = [y * 2.0, x + 1.0]
    s = 0.0
    for i, (u, v) in enumerate(zip(a, b)):
        s = s + (i + 1) * np.sum(u * v)
    return s


def break_in_rows(X):
    s = 0.0
    for row in X:
        if np.sum(row) > 1.0:
            break
        s = s + np.sum(row ** 2)
    return s


def write_rows_in_loop(X):
    Y = np.zeros(X.shape)
    for i, row in enumerate(X):
        Y[i] = row * (i + 1.0)
    return np.sum(Y ** 2)


@pytest.mark.parametrize("f,args,nums", [
    (rows_of_X, [rng.normal(size=(4, 3)), rng.normal(size=3)], (0, 1)),
    (rows_of_product, [rng.normal(size=(3, 2)), rng.normal(size=(2, 4))], (0, 1)),
    (zip_rows, [rng.normal(size=(3, 2)), rng.normal(size=(3, 2))], (0, 1)),
    (zip_rows, [rng.normal(size=(3, 2)), rng.normal(size=(2, 2))], (0, 1)),   # zip stops at the shorter
    (enumerate_rows, [rng.normal(size=(3, 2))], 0),
    (local_list, [rng.normal(size=3), rng.normal(size=3)], (0, 1)),
    (appended_in_tuple_loop, [rng.normal(size=3), rng.normal(size=3)], (0, 1)),
    (rnn_constant_steps, [rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3)], (0, 1)),
    (comprehension_of_arrays, [rng.normal(size=3), rng.normal(size=(2, 3, 3))], (0, 1)),
    (comprehension_over_range, [rng.normal(size=3)], 0),
    (zip_and_enumerate_of_lists, [rng.normal(size=2), rng.normal(size=2)], (0, 1)),
    (break_in_rows, [np.array([[0.1, 0.2], [0.3, 0.4], [1.5, 0.1], [0.2, 0.2]])], 0),
    (write_rows_in_loop, [rng.normal(size=(3, 2))], 0),
], ids=lambda a: getattr(a, "__name__", "") if callable(a) else "")
def test_lists_match_finite_differences(f, args, nums, backend):
    check(f, args, nums, backend)


def test_rows_of_an_empty_array_run_no_iteration(backend):
    X = np.zeros((0, 3))
    value, (gX, gw) = s2sad.value_and_grad(rows_of_X, argnums=(0, 1), backend=backend)(X, np.ones(3))
    assert value == 0.0 and gX.shape == (0, 3) and np.all(gw == 0.0)


# ---------------------------------------------------------------- refusals

def append_in_runtime_loop(x):
    hs = []
    for i in range(len(x)):
        hs.append(x[i] * 2.0)
    return np.sum(np.stack(hs))


def list_rebound_in_runtime_loop(x):
    hs = []
    for i in range(len(x)):
        hs = hs + [x[i]]
    return np.sum(np.stack(hs))


def list_index_unknown(x, k):
    hs = [x, x * 2.0]
    return np.sum(hs[k])


def test_a_list_grown_by_a_runtime_loop_is_refused_with_what_to_write():
    e = refused(append_in_runtime_loop, [np.ones(3)], "hs.append(x[i] * 2.0)", s2sad.UnsupportedOperationError,
                ["known only at run time"])
    assert "np.zeros" in e.hint
    refused(list_rebound_in_runtime_loop, [np.ones(3)], "hs = hs + [x[i]]", s2sad.UnsupportedOperationError,
            ["list"])


def test_a_list_indexed_at_run_time_is_refused():
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.grad(list_index_unknown)(np.ones(2), 1)
    assert "test_array_flow_lists.py" in str(e.value) and e.value.hint

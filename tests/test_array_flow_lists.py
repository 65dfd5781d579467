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


# ---------------------------------------------------------------- lists grown at run time

def rnn_runtime_steps(W, xs):
    h = np.zeros(W.shape[0])
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        hs.append(h)
    return np.sum(np.stack(hs) ** 2) + np.sum(sum(hs)) + np.sum(hs[-1]) * len(hs)


def append_in_while(x):
    s = x * 1.0
    trace = [s]
    while np.sum(s * s) > 0.05:
        s = s * 0.6
        trace.append(s)
    return np.sum(np.array(trace) ** 2)


def append_in_branch(x):
    parts = [x * 1.0]
    if np.sum(x) > 0:
        parts.append(np.sin(x))
    else:
        parts.append(np.cos(x))
    return np.sum(np.stack(parts)) + np.sum(np.concatenate(parts) ** 2)


def append_scalars_then_loop(x):
    vals = []
    for i in range(len(x)):
        if x[i] > 0:
            vals.append(x[i] ** 2)
    total = 0.0
    for v in vals:
        total = total + v * 2.0
    return total + sum(vals)


def nothing_appended(x):
    hs = []
    for i in range(len(x) - len(x)):
        hs.append(x)
    return sum(hs) + np.sum(x ** 2)


@pytest.mark.parametrize("f,args,nums", [
    (rnn_runtime_steps, [rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(4, 3))], (0, 1)),
    (append_in_while, [np.array([0.8, -0.6])], 0),
    (append_in_branch, [np.array([0.8, -0.6])], 0),
    (append_in_branch, [np.array([-0.8, -0.6])], 0),
    (append_scalars_then_loop, [np.array([0.5, -1.0, 2.0, 0.1])], 0),
    (nothing_appended, [rng.normal(size=3)], 0),
], ids=lambda a: getattr(a, "__name__", "") if callable(a) else "")
def test_lists_grown_at_run_time_match_finite_differences(f, args, nums, backend):
    check(f, args, nums, backend)


# ---------------------------------------------------------------- refusals

def list_joined_by_plus(x):
    hs = []
    for i in range(len(x)):
        hs.append(x[i])
    both = hs + hs
    return np.sum(np.array(both))


def list_repeated(x):
    hs = []
    for i in range(len(x)):
        hs.append(x)
    return np.sum(np.stack(hs * 2))


def ragged_items(x):
    hs = []
    for i in range(1, len(x)):
        hs.append(x[:i])
    return np.sum(np.concatenate(hs))


def list_rebound_in_runtime_loop(x):
    hs = []
    for i in range(len(x)):
        hs = hs + [x[i]]
    return np.sum(np.stack(hs))


def list_index_unknown(x, k):
    hs = [x, x * 2.0]
    return np.sum(hs[k])


def test_operators_on_a_list_grown_at_run_time_are_refused():
    # a list and the array s2sad keeps it as differ there: + joins, * repeats
    refused(list_joined_by_plus, [np.ones(3)], "both = hs + hs", s2sad.UnsupportedOperationError, ["np.stack"])
    refused(list_repeated, [np.ones(3)], "np.stack(hs * 2)", s2sad.UnsupportedOperationError, ["list"])
    refused(list_rebound_in_runtime_loop, [np.ones(3)], "hs = hs + [x[i]]", s2sad.UnsupportedOperationError,
            ["list"])


def test_items_of_different_shapes_are_refused_where_appended():
    with pytest.raises(s2sad.UnsupportedOperationError) as e:
        s2sad.grad(ragged_items)(np.ones(4))
    assert "shape" in str(e.value) and "test_array_flow_lists.py" in str(e.value) and e.value.hint


def test_a_list_indexed_at_run_time_is_refused():
    with pytest.raises(s2sad.S2SADError) as e:
        s2sad.grad(list_index_unknown)(np.ones(2), 1)
    assert "test_array_flow_lists.py" in str(e.value) and e.value.hint


def append_through_alias(x):
    hs = [x]
    gs = hs
    gs.append(x * 2.0)
    return np.sum(np.stack(hs))


def helper_appends(hs, v):
    hs.append(v)
    return v


def append_in_helper(x):
    hs = [x]
    v = helper_appends(hs, x * 2.0)
    return np.sum(np.stack(hs)) + np.sum(v)


def grows_while_iterating(x):
    hs = [x]
    for h in hs:
        if np.sum(h) < 10.0:
            hs.append(h * 2.0)
    return np.sum(np.stack(hs))


def alias_of_runtime_list(x):
    hs = []
    for i in range(len(x)):
        gs = hs
        gs.append(x[i])
    return np.sum(np.stack(hs))


def test_appends_that_python_would_show_through_another_name_are_refused():
    refused(append_through_alias, [np.ones(2)], "gs.append(x * 2.0)", s2sad.UnsupportedOperationError, ["another name"])
    refused(append_in_helper, [np.ones(2)], "hs.append(v)", s2sad.UnsupportedOperationError, ["another name"],
            where=helper_appends)
    refused(alias_of_runtime_list, [np.ones(2)], "gs.append(x[i])", s2sad.UnsupportedOperationError,
            ["another name"])


def test_a_loop_that_appends_to_the_list_it_runs_over_is_refused():
    refused(grows_while_iterating, [np.ones(2)], "for h in hs:", s2sad.UnsupportedOperationError, ["runs over"])

"""Issue 15, containers at small sizes: a container call of a layout met before takes a
generated fast path (s2sad/treefast.py: the leaves read by constant keys inside the
hot path, the gradients built as literals), not the flattening. These tests hold it
to the general path's results bit for bit, and check that every change a hostile user
can make between calls (a key added or removed, a list grown, a leaf of another
dtype, shape or type, a dict subclass, a nested node swapped for a leaf) is seen:
the fast path declines, the general path answers (or refuses) as it always did."""
from collections import OrderedDict

import numpy as np
import pytest

import s2sad
from s2sad import treecalls
from tests.conftest import central_fd

rng = np.random.default_rng(1515)
N = 50
WV, BV, XV = rng.normal(size=N), rng.normal(size=N), rng.normal(size=N)


def ew_dict(p, x):
    return np.sum(np.tanh(p["w"] * x + p["b"]) ** 2)


def ew_pos(w, b, x):
    return np.sum(np.tanh(w * x + b) ** 2)


def ew_nested(p, x):
    return np.sum(np.tanh(p["layers"][0] * x + p["layers"][1]) ** 2 + p["scale"] * x)


def ew_sum_all(p, x):
    """Reads every key it is given among 'w', 'b' and 'c' (a third one when present)."""
    return np.sum(p["w"] * x + p["b"])


def mlp_dict(p, X):
    return np.mean(np.tanh(X @ p["W1"] + p["b1"]) @ p["w2"])


def mlp_pos(W1, b1, w2, X):
    return np.mean(np.tanh(X @ W1 + b1) @ w2)


def _params():
    return {"w": WV.copy(), "b": BV.copy()}


def _no_flattening(monkeypatch):
    """From here on, a call that flattens fails the test: the fast path must answer."""
    def refuse(*a, **k):
        raise AssertionError("flatten_call ran: the fast path did not take the call")
    monkeypatch.setattr(treecalls, "flatten_call", refuse)


def test_second_call_takes_the_fast_path_and_agrees_bit_for_bit(backend, monkeypatch):
    g = s2sad.grad(ew_dict, backend=backend)
    first = g(_params(), XV)            # the general path
    want = s2sad.grad(ew_pos, argnums=(0, 1), backend=backend)(WV, BV, XV)
    _no_flattening(monkeypatch)
    again = g(_params(), XV)
    for got in (first, again):
        assert list(got) == ["b", "w"]
        np.testing.assert_array_equal(got["w"], want[0])
        np.testing.assert_array_equal(got["b"], want[1])


def test_value_and_grad_and_argnums_tuple_on_the_fast_path(backend, monkeypatch):
    vg = s2sad.value_and_grad(ew_dict, argnums=(0, 1), backend=backend)
    p = _params()
    v0, (gp0, gx0) = vg(p, XV)
    _no_flattening(monkeypatch)
    v1, (gp1, gx1) = vg(p, XV)
    assert v0 == v1 == pytest.approx(ew_pos(WV, BV, XV), rel=1e-12)
    np.testing.assert_array_equal(gp0["w"], gp1["w"])
    np.testing.assert_array_equal(gx0, gx1)
    np.testing.assert_allclose(gx1, central_fd(ew_dict, (p, XV), 1), rtol=1e-6, atol=1e-8)


def test_nested_dict_of_list_on_the_fast_path(backend, monkeypatch):
    p = {"layers": [WV.copy(), BV.copy()], "scale": 0.5 * WV}
    g = s2sad.grad(ew_nested, backend=backend)
    first = g(p, XV)
    _no_flattening(monkeypatch)
    got = g(p, XV)
    assert type(got["layers"]) is list and len(got["layers"]) == 2
    for a, b in ((first["layers"][0], got["layers"][0]), (first["layers"][1], got["layers"][1]),
                 (first["scale"], got["scale"])):
        np.testing.assert_array_equal(a, b)
    w_fd = central_fd(lambda w: ew_nested({"layers": [w, p["layers"][1]], "scale": p["scale"]}, XV), (WV,), 0)
    np.testing.assert_allclose(got["layers"][0], w_fd, rtol=1e-6, atol=1e-8)


def test_array_program_takes_the_fast_call(backend, monkeypatch):
    W1, b1, w2 = rng.normal(size=(6, 4)) * 0.3, rng.normal(size=4), rng.normal(size=4)
    X = rng.normal(size=(9, 6))
    p = {"W1": W1, "b1": b1, "w2": w2}
    g = s2sad.grad(mlp_dict, backend=backend)
    g(p, X)
    _no_flattening(monkeypatch)
    got = g(p, X)
    want = s2sad.grad(mlp_pos, argnums=(0, 1, 2), backend=backend)(W1, b1, w2, X)
    for k, w in zip(("W1", "b1", "w2"), want):
        np.testing.assert_array_equal(got[k], w)


def test_large_arrays_past_the_entry_still_right(backend):
    n = 40_000      # more elements than the machine-code entry takes: the fast call's full path
    w, b, x = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    g = s2sad.grad(ew_dict, backend=backend)
    want = s2sad.grad(ew_pos, argnums=(0, 1), backend=backend)(w, b, x)
    for _ in range(3):
        got = g({"w": w, "b": b}, x)
        np.testing.assert_array_equal(got["w"], want[0])
        np.testing.assert_array_equal(got["b"], want[1])


@pytest.mark.parametrize("n", [40_000, 300_000])
@pytest.mark.parametrize("kind", ["arrays", "float b", "float32", "strided x"])
def test_large_dict_calls_take_the_hot_paths_large_entry(n, kind, monkeypatch):
    """Past the machine-code entry's bound, a dict call's hot path goes on to the large
    entry (one call, or the chunks on more threads) as a positional call's does, instead
    of the full path (session 19: 1.12-1.21x the positional call at 100k-1M): warm calls
    never reach the container machinery, and their bits are the positional call's.
    What the large entry does not take (a strided x; a float b, whose gradient is a sum:
    no large entry, for positional calls neither) still gets the right answer."""
    r = np.random.default_rng(n)
    w, b, x = r.normal(size=n), r.normal(size=n), r.normal(size=2 * n)[::2] if kind == "strided x" \
        else r.normal(size=n)
    if kind == "float b":
        b = 0.25
    if kind == "float32":
        w, b, x = w.astype(np.float32), b.astype(np.float32), x.astype(np.float32)
    g = s2sad.grad(ew_dict)
    want = s2sad.grad(ew_pos, argnums=(0, 1))(w, b, x)
    for _ in range(3):
        g({"w": w, "b": b}, x)
    if kind in ("arrays", "float32"):
        def refuse(*a, **k):
            raise AssertionError("the container machinery ran: the hot path did not take the call")
        monkeypatch.setattr(treecalls.TreeCalls, "__call__", refuse)
    for _ in range(2):
        got = g({"w": w, "b": b}, x)
        np.testing.assert_array_equal(got["w"], want[0])
        np.testing.assert_array_equal(got["b"], want[1])
        assert type(got["b"]) is type(want[1])


def test_a_key_added_between_calls_is_seen(backend):
    g = s2sad.grad(ew_sum_all, backend=backend)
    g(_params(), XV)
    g(_params(), XV)
    p = {**_params(), "c": np.ones(N)}      # not read: its gradient is zero, in the structure
    got = g(p, XV)
    assert sorted(got) == ["b", "c", "w"]
    np.testing.assert_array_equal(got["c"], np.zeros(N))
    np.testing.assert_allclose(got["w"], XV)


def test_a_key_removed_or_renamed_is_refused_where_it_is_read(backend):
    g = s2sad.grad(ew_dict, backend=backend)
    g(_params(), XV)
    g(_params(), XV)
    with pytest.raises(s2sad.S2SADError, match="'b'"):
        g({"w": WV}, XV)
    with pytest.raises(s2sad.S2SADError, match="'b'"):
        g({"w": WV, "B": BV}, XV)       # as many keys as before, one of them new
    np.testing.assert_allclose(g(_params(), XV)["w"], central_fd(ew_pos, (WV, BV, XV), 0), rtol=1e-6, atol=1e-8)


def test_a_list_grown_between_calls_is_seen(backend):
    g = s2sad.grad(sum_over_entries, backend=backend)
    g([WV, BV], XV)
    g([WV, BV], XV)
    got = g([WV, BV, 2.0 * WV], XV)
    assert type(got) is list and len(got) == 3
    for leaf in got:
        np.testing.assert_allclose(leaf, XV)
    got = g((WV, BV), XV)       # a tuple, not a list: its gradient a tuple
    assert type(got) is tuple and len(got) == 2


def sum_over_entries(p, x):
    total = 0.0
    for q in p:
        total = total + np.sum(q * x)
    return total


@pytest.mark.parametrize("change", ["float32", "int", "shape", "float", "np_float", "ordered", "nested", "none"])
def test_a_leaf_changed_between_calls_is_seen(backend, change):
    g = s2sad.grad(ew_dict, backend=backend)
    g(_params(), XV)
    g(_params(), XV)
    p = _params()
    if change == "float32":
        p["w"] = WV.astype(np.float32)
        got = g(p, XV)
        np.testing.assert_allclose(got["w"], central_fd(ew_pos, (WV.astype(np.float32), BV, XV), 0),
                                   rtol=1e-4, atol=1e-6)
    elif change == "int":
        p["w"] = np.arange(N)       # data: a zero gradient of its shape
        got = g(p, XV)
        np.testing.assert_array_equal(got["w"], np.zeros(N))
        np.testing.assert_allclose(got["b"], central_fd(ew_pos, (np.arange(N), BV, XV), 1), rtol=1e-6,
                                   atol=1e-8)
    elif change == "shape":
        p["w"] = WV[:10]
        with pytest.raises(s2sad.S2SADError):
            g(p, XV)
    elif change in ("float", "np_float"):
        p["w"] = 0.7 if change == "float" else np.float64(0.7)
        got = g(p, XV)
        assert np.ndim(got["w"]) == 0
        assert float(got["w"]) == pytest.approx(central_fd(ew_pos, (0.7, BV, XV), 0), rel=1e-6)
    elif change == "ordered":       # a node JAX takes: the fast path (exact dicts) declines, the gradient an OrderedDict
        got = g(OrderedDict(p), XV)
        assert type(got) is OrderedDict and list(got) == list(p)
        np.testing.assert_allclose(got["w"], central_fd(ew_pos, (WV, BV, XV), 0), rtol=1e-6, atol=1e-8)
    elif change == "nested":
        p["w"] = {"inner": WV}
        with pytest.raises(s2sad.S2SADError):
            g(p, XV)
    elif change == "none":
        p["w"] = None
        with pytest.raises((s2sad.S2SADError, TypeError)):
            g(p, XV)
    np.testing.assert_allclose(g(_params(), XV)["w"], central_fd(ew_pos, (WV, BV, XV), 0), rtol=1e-6, atol=1e-8)


def test_positional_and_container_calls_share_a_grad_object(backend):
    g = s2sad.grad(rows_first, backend=backend)
    A = np.stack([WV, BV])
    for _ in range(2):
        np.testing.assert_allclose(g((WV, BV), XV)[0], XV)
        ga = g(A, XV)
        assert isinstance(ga, np.ndarray) and ga.shape == A.shape
        np.testing.assert_allclose(ga[0], XV)
        np.testing.assert_array_equal(ga[1], np.zeros(N))


def rows_first(p, x):
    """p: a tuple of arrays, or a 2-D array (its first row)."""
    return np.sum(p[0] * x)


def test_inputs_not_mutated_and_results_fresh(backend):
    g = s2sad.grad(ew_dict, backend=backend)
    p = _params()
    keep = {k: v.copy() for k, v in p.items()}
    a, b = g(p, XV), g(p, XV)
    assert a["w"] is not b["w"] and a is not b
    for k in p:
        np.testing.assert_array_equal(p[k], keep[k])
    assert sorted(p) == ["b", "w"]


def test_new_grad_object_per_step_reuses_generated_code(backend):
    from s2sad import treefast
    p = _params()
    s2sad.grad(ew_dict, backend=backend)(p, XV)
    before = (len(treefast._READERS), len(treefast._MAKERS))
    for _ in range(5):
        g = s2sad.grad(ew_dict, backend=backend)
        g(p, XV)
        g(p, XV)
    assert (len(treefast._READERS), len(treefast._MAKERS)) == before


def _dict_mlp(p, X):
    return np.mean(np.tanh(X @ p["W1"] + p["b1"]) @ p["w2"])


def _pos_mlp(W1, b1, w2, X):
    return np.mean(np.tanh(X @ W1 + b1) @ w2)


@pytest.mark.parametrize("what", ["grad", "value_and_grad"])
def test_a_container_call_of_an_array_program_takes_its_hot_path(monkeypatch, what):
    """A dict of parameters into an array program: after the first calls, the container's
    fast call hands the leaves to the array program's hot path (the one its positional
    calls take), not to the full path; same bits as the positional gradient."""
    from s2sad import derivative

    rng = np.random.default_rng(4)
    p = {"W1": rng.normal(size=(6, 5)), "b1": rng.normal(size=5), "w2": rng.normal(size=5)}
    X = rng.normal(size=(20, 6))
    gd = getattr(s2sad, what)(_dict_mlp)
    gp = getattr(s2sad, what)(_pos_mlp, argnums=(0, 1, 2))
    for _ in range(3):
        got, want = gd(p, X), gp(p["W1"], p["b1"], p["w2"], X)
    full = []
    real = derivative.Derivative._array_call
    monkeypatch.setattr(derivative.Derivative, "_array_call", lambda self, c, a: full.append(1) or real(self, c, a))
    got = gd(p, X)
    assert not full
    grads, want_grads = (got, want) if what == "grad" else (got[1], want[1])
    if what == "value_and_grad":
        assert got[0] == want[0]
    for k, w in zip(("W1", "b1", "w2"), want_grads):
        np.testing.assert_array_equal(grads[k], w)
    p2 = dict(p, b1=rng.normal(size=5))             # new values, same layout: still right
    g2 = gd(p2, X)
    want2 = gp(p2["W1"], p2["b1"], p2["w2"], X)
    for k, w in zip(("W1", "b1", "w2"), want2 if what == "grad" else want2[1]):
        np.testing.assert_array_equal((g2 if what == "grad" else g2[1])[k], w)

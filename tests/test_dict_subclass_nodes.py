"""OrderedDict and defaultdict as pytree nodes, as JAX takes them: an OrderedDict's
children in insertion order, a defaultdict's in sorted key order with its
default_factory kept; the gradient (and vjp's adjoint) has the argument's container
type, key order and factory, on every route that takes dicts (the unrolled scalar path,
the fused elementwise path, array programs, value_and_grad, has_aux, vjp, jvp).
Any other dict subclass is refused, located at the def, naming the type and saying
what to pass (it was a misleading "indexing is only supported on tuples" refusal on
the scalar path). Numbers are checked against the same call with a plain dict and
against central differences."""
import gc
import weakref
from collections import Counter, OrderedDict, defaultdict

import numpy as np
import pytest

import s2sad
from conftest import central_fd, line_of

rng = np.random.default_rng(12)
BV = rng.normal(size=4)


def scalar_loss(p):
    return p["b"] ** 2 * p["a"] + p["a"]


def ew_loss(p):
    return np.sum(np.tanh(p["b"] * p["a"]) ** 2)


def array_loss(p):
    h = np.sin(p["b"]) @ np.cos(p["b"])
    return h * p["a"] + np.sum(p["b"][1:] * p["b"][:-1])


def aux_loss(p):
    return array_loss(p), p["a"] * 2.0


def fd_dict(f, p):
    """Central differences of f w.r.t. every entry of the dict-like p (a plain dict out)."""
    keys = list(p)
    return {k: central_fd(lambda v, k=k: f({**{j: p[j] for j in keys}, k: v}), (p[k],), 0) for k in keys}


def ordered(b):
    return OrderedDict([("b", b), ("a", 0.7)])


def default(b, factory=list):
    return defaultdict(factory, {"b": b, "a": 0.7})


def check_like(got, p, want):
    """got has p's type, key order (and default_factory), and want's numbers."""
    assert type(got) is type(p)
    assert list(got) == (sorted(p) if isinstance(p, defaultdict) else list(p))     # (JAX's orders)
    if isinstance(p, defaultdict):
        assert got.default_factory is p.default_factory
    for k in p:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-8)
        assert np.shape(got[k]) == np.shape(p[k])


CASES = [("scalar", scalar_loss, 1.3), ("fused", ew_loss, BV), ("array", array_loss, BV)]


@pytest.mark.parametrize("make", [ordered, default], ids=["OrderedDict", "defaultdict"])
@pytest.mark.parametrize("route,f,b", CASES, ids=[c[0] for c in CASES])
def test_grad_keeps_the_type_order_and_factory(backend, make, route, f, b):
    p = make(b)
    g = s2sad.grad(f, backend=backend)
    want = fd_dict(f, p)
    for _ in range(3):      # first call, then the warm and hot paths
        check_like(g(p), p, want)
    plain = g(dict(p))      # the same grad object, a plain dict: a plain dict back
    assert type(plain) is dict
    check_like(g(p), p, want)


@pytest.mark.parametrize("make", [ordered, default], ids=["OrderedDict", "defaultdict"])
@pytest.mark.parametrize("route,f,b", CASES, ids=[c[0] for c in CASES])
def test_value_and_grad_vjp_and_jvp(backend, make, route, f, b):
    p = make(b)
    want = fd_dict(f, p)
    value, got = s2sad.value_and_grad(f, backend=backend)(p)
    assert value == pytest.approx(f(dict(p)), rel=1e-12)
    check_like(got, p, want)
    out, pullback = s2sad.vjp(f, p, backend=backend)
    assert float(out) == pytest.approx(f(dict(p)), rel=1e-12)
    (adj,) = pullback(2.0)
    check_like(adj, p, {k: 2.0 * np.asarray(v) for k, v in want.items()})
    t = make(np.ones_like(b) if isinstance(b, np.ndarray) else 0.5)
    out, dot = s2sad.jvp(f, (p,), (t,), backend=backend)
    assert float(out) == pytest.approx(f(dict(p)), rel=1e-12)
    assert float(dot) == pytest.approx(sum(np.sum(want[k] * np.asarray(t[k])) for k in p), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("make", [ordered, default], ids=["OrderedDict", "defaultdict"])
def test_has_aux(backend, make):
    p = make(BV)
    got, aux = s2sad.grad(aux_loss, has_aux=True, backend=backend)(p)
    assert aux == pytest.approx(1.4)
    check_like(got, p, fd_dict(array_loss, p))
    (value, aux), got = s2sad.value_and_grad(aux_loss, has_aux=True, backend=backend)(p)
    assert aux == pytest.approx(1.4) and value == pytest.approx(array_loss(dict(p)), rel=1e-12)
    check_like(got, p, fd_dict(array_loss, p))


def test_an_ordered_dicts_gradient_follows_its_insertion_order(backend):
    g = s2sad.grad(array_loss, backend=backend)
    first = OrderedDict([("b", BV), ("a", 0.7)])
    second = OrderedDict([("a", 0.7), ("b", BV)])
    want = fd_dict(array_loss, first)
    check_like(g(first), first, want)
    check_like(g(second), second, want)
    check_like(g(first), first, want)


def test_nested_and_beside_plain_containers(backend):
    def loss(ps, x):
        return np.sum(ps[0]["w"] * x) * ps[1]["s"] + ps[0]["c"]

    ps = [OrderedDict([("w", BV), ("c", 0.3)]), {"s": defaultdict(int, {"s": 1.5})["s"]}]
    ps[1] = defaultdict(int, {"s": 1.5})
    x = rng.normal(size=4)
    got = s2sad.grad(loss, backend=backend)(ps, x)
    assert type(got) is list and type(got[0]) is OrderedDict and type(got[1]) is defaultdict
    assert got[1].default_factory is int
    np.testing.assert_allclose(got[0]["w"], x * 1.5, rtol=1e-12)
    assert got[0]["c"] == pytest.approx(1.0)
    assert got[1]["s"] == pytest.approx(np.sum(BV * x), rel=1e-12)


def test_an_int_entry_is_data_with_a_zero_gradient(backend):
    p = OrderedDict([("b", BV), ("n", 3)])
    got = s2sad.grad(lambda p: np.sum(p["b"] ** 2) * p["n"], backend=backend)(p)
    assert type(got) is OrderedDict and list(got) == ["b", "n"]
    np.testing.assert_allclose(got["b"], 6.0 * BV, rtol=1e-12)
    assert got["n"] == 0.0


def test_the_arguments_are_not_mutated_and_the_factory_not_kept(backend):
    factory = eval("lambda: 0.0")       # (a fresh function, to watch it die)
    gone = weakref.ref(factory)
    p = defaultdict(factory, {"b": BV.copy(), "a": 0.7})
    g = s2sad.grad(ew_loss, backend=backend)
    got = g(p)
    assert got.default_factory is factory
    assert list(p) == ["b", "a"] and np.array_equal(p["b"], BV)
    del p, got, factory
    gc.collect()
    assert gone() is None       # the grad object, still alive, keeps no user object


def test_a_tangent_of_another_container_type_is_refused():
    p = ordered(BV)
    with pytest.raises(s2sad.S2SADError, match="OrderedDict"):
        s2sad.jvp(ew_loss, (p,), ({"a": 1.0, "b": np.ones(4)},))


class Params(dict):
    pass


@pytest.mark.parametrize("cls", [Params, Counter])
@pytest.mark.parametrize("route", ["grad scalar", "grad array", "value_and_grad", "has_aux", "vjp", "jvp",
                                   "nested"])
def test_another_dict_subclass_is_refused_where_it_is_named(cls, route):
    p = cls({"a": 0.7, "b": 1.3})
    calls = {"grad scalar": lambda: s2sad.grad(scalar_loss)(p),
             "grad array": lambda: s2sad.grad(array_loss)(cls({"a": 0.7, "b": BV})),
             "value_and_grad": lambda: s2sad.value_and_grad(scalar_loss)(p),
             "has_aux": lambda: s2sad.grad(aux_loss, has_aux=True)(cls({"a": 0.7, "b": BV})),
             "vjp": lambda: s2sad.vjp(scalar_loss, p),
             "jvp": lambda: s2sad.jvp(scalar_loss, (p,), (p,)),
             "nested": lambda: s2sad.grad(lambda ps: ps[0]["a"] * 2.0)([p])}
    with pytest.raises(s2sad.S2SADError) as info:
        calls[route]()
    e = info.value
    assert f"a {cls.__name__}, a subclass of dict" in e.message
    assert "dict(" in e.hint and "OrderedDict" in e.hint
    assert e.location is not None
    fun = {"grad array": array_loss, "has_aux": aux_loss}.get(route, scalar_loss)
    if route != "nested":
        assert e.location.lineno == line_of(fun, f"def {fun.__name__}(")

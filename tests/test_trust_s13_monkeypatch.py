"""A function the loss calls, monkeypatched after warm calls (session 13, trust brief 1).

`np.tanh = np.sin`, `math.sin = math.cos`, or a module's `np` rebound to another module,
after some warm calls of a derivative: the warm plan used to keep the old derivative (a
silent wrong number). Now a plan's assumptions include what each dotted module name
resolved to (s2sad/assumptions.py), so the call is planned again with the new function
(a primitive, or a Python function s2sad reads), or refused, located. Every result is
checked against the derivative written by hand for the function now called.
"""
from __future__ import annotations

import math
import types

import numpy as np
import pytest

import s2sad

import patched_np_module

X = np.linspace(-1.2, 1.3, 10)
RNG = np.random.default_rng(0)
W = RNG.normal(size=(3, 10))


def ew_loss(x):
    return np.sum(np.tanh(x))


def ew_broadcast_loss(x):
    return np.sum(s2sad.broadcast(lambda t: np.tanh(t) * 2.0, x))


def mlp_loss(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


def scalar_loss(a, b):
    return math.sin(a) * b


def my_tanh(t):
    """A user's replacement with source: t / (1 + t*t)."""
    return t / (1.0 + t * t)


def d_my_tanh(t):
    return (1.0 - t * t) / (1.0 + t * t) ** 2


def warm(g, *args, calls=4):
    for _ in range(calls):
        got = g(*args)
    return got


def test_elementwise_np_function_patched(monkeypatch):
    g = s2sad.grad(ew_loss)
    np.testing.assert_allclose(warm(g, X), 1 - np.tanh(X) ** 2, rtol=1e-12)
    monkeypatch.setattr(np, "tanh", np.sin)
    for _ in range(3):
        np.testing.assert_allclose(g(X), np.cos(X), rtol=1e-12)
    monkeypatch.undo()
    np.testing.assert_allclose(g(X), 1 - np.tanh(X) ** 2, rtol=1e-12)


def test_elementwise_patched_with_a_user_function(monkeypatch):
    g = s2sad.grad(ew_loss)
    warm(g, X)
    monkeypatch.setattr(np, "tanh", my_tanh)
    np.testing.assert_allclose(g(X), d_my_tanh(X), rtol=1e-12)


def test_broadcast_patched(monkeypatch):
    g = s2sad.grad(ew_broadcast_loss)
    np.testing.assert_allclose(warm(g, X), 2 * (1 - np.tanh(X) ** 2), rtol=1e-12)
    monkeypatch.setattr(np, "tanh", np.sin)
    np.testing.assert_allclose(g(X), 2 * np.cos(X), rtol=1e-12)


def test_array_program_patched(monkeypatch):
    g = s2sad.grad(mlp_loss)
    warm(g, W, X)
    monkeypatch.setattr(np, "tanh", np.sin)
    z = W @ X
    want = np.outer(2 * np.sin(z) * np.cos(z), X)
    for _ in range(3):
        np.testing.assert_allclose(g(W, X), want, rtol=1e-10)


def test_array_program_large_batch_patched(monkeypatch):
    Xb = RNG.normal(size=(10, 200))
    g = s2sad.grad(mlp_loss)
    warm(g, W, Xb)
    monkeypatch.setattr(np, "tanh", np.sin)
    z = W @ Xb
    np.testing.assert_allclose(g(W, Xb), (2 * np.sin(z) * np.cos(z)) @ Xb.T, rtol=1e-10)


def test_scalar_math_function_patched(monkeypatch):
    g = s2sad.grad(scalar_loss, argnums=(0, 1))
    warm(g, 0.3, 2.0)
    sin, cos = math.sin, math.cos
    monkeypatch.setattr(math, "sin", cos)
    da, db = g(0.3, 2.0)
    assert da == pytest.approx(-sin(0.3) * 2.0, rel=1e-14)
    assert db == pytest.approx(cos(0.3), rel=1e-14)


def test_a_modules_np_rebound(monkeypatch):
    g, gm = s2sad.grad(patched_np_module.loss), s2sad.grad(patched_np_module.mlp)
    warm(g, X)
    warm(gm, W, X)
    fake = types.ModuleType("fake_np")
    fake.__dict__.update({k: getattr(np, k) for k in ("sum", "ndarray", "float64")})
    fake.tanh = np.sin
    monkeypatch.setattr(patched_np_module, "np", fake)
    np.testing.assert_allclose(g(X), np.cos(X), rtol=1e-12)
    z = W @ X
    np.testing.assert_allclose(gm(W, X), np.outer(2 * np.sin(z) * np.cos(z), X), rtol=1e-10)


def test_rebound_to_something_s2sad_cannot_read_is_refused(monkeypatch):
    g = s2sad.grad(ew_loss)
    warm(g, X)
    monkeypatch.setattr(np, "tanh", np.frompyfunc(math.tanh, 1, 1))
    with pytest.raises(s2sad.S2SADError) as e:
        g(X)
    assert "test_trust_s13_monkeypatch.py" in str(e.value)


@pytest.mark.parametrize("route", ["value_and_grad", "vjp", "jvp", "hessian"])
def test_other_routes_patched(monkeypatch, route):
    def run():
        if route == "value_and_grad":
            return s2sad.value_and_grad(ew_loss)(X)[1]
        if route == "vjp":
            return s2sad.vjp(elementwise_tanh, X)[1](np.ones_like(X))[0]
        if route == "jvp":
            return s2sad.jvp(ew_loss, (X,), (np.ones_like(X),))[1]
        return np.diag(s2sad.hessian(ew_loss)(X))
    want_before = {"value_and_grad": 1 - np.tanh(X) ** 2, "vjp": 1 - np.tanh(X) ** 2,
                   "jvp": np.sum(1 - np.tanh(X) ** 2), "hessian": -2 * np.tanh(X) * (1 - np.tanh(X) ** 2)}
    want_after = {"value_and_grad": np.cos(X), "vjp": np.cos(X), "jvp": np.sum(np.cos(X)),
                  "hessian": -np.sin(X)}
    for _ in range(4):
        np.testing.assert_allclose(run(), want_before[route], rtol=1e-10, atol=1e-14)
    monkeypatch.setattr(np, "tanh", np.sin)
    for _ in range(2):
        np.testing.assert_allclose(run(), want_after[route], rtol=1e-10, atol=1e-14)


def elementwise_tanh(x):
    return np.tanh(x)


@pytest.mark.parametrize("route", ["hessian_small", "hessian_batched", "jacfwd_map", "jacrev_map", "hvp_array"])
def test_second_order_and_jacobian_paths_patched(monkeypatch, route):
    """The Hessian's unrolled and batched paths, the Jacobian of an elementwise map
    (jacdiag) and the array hvp each keep a warm entry guarded by the plan's assumptions."""
    Xb = RNG.normal(size=(10, 70))      # (past small_hessian's 64 elements: the batched path)

    def run():
        if route == "hessian_small":
            return s2sad.hessian(mlp_loss, argnums=1)(W, X)
        if route == "hessian_batched":
            return s2sad.hessian(mlp_loss, argnums=0)(W, Xb)
        if route == "jacfwd_map":
            return s2sad.jacfwd(elementwise_tanh)(X)
        if route == "jacrev_map":
            return s2sad.jacrev(elementwise_tanh)(X)
        return s2sad.hvp(mlp_loss, (W, X), (np.ones_like(W), np.ones_like(X)), argnums=(0, 1))

    def want(t, dt, d2t):      # (the same route's result, written by hand for tanh -> t)
        if route == "hessian_small":
            z = W @ X
            s = 2 * (dt(z) ** 2 + t(z) * d2t(z))
            return W.T @ (s[:, None] * W)
        if route == "hessian_batched":
            z = W @ Xb          # H[(a, i), (b, j)] = sum_n s[a, n] Xb[i, n] Xb[j, n] delta_ab
            s = 2 * (dt(z) ** 2 + t(z) * d2t(z))
            H = np.zeros(W.shape + W.shape)
            for a in range(W.shape[0]):
                H[a, :, a, :] = (Xb * s[a]) @ Xb.T
            return H
        if route in ("jacfwd_map", "jacrev_map"):
            return np.diag(dt(X))
        z = W @ X
        s = 2 * (dt(z) ** 2 + t(z) * d2t(z))
        u = np.ones_like(W) @ X + W @ np.ones_like(X)     # z's tangent
        g1 = 2 * t(z) * dt(z)
        hW = np.outer(s * u, X) + np.outer(g1, np.ones_like(X))
        hx = W.T @ (s * u) + np.ones_like(W).T @ g1
        return hW, hx

    tanh, sin, cos = np.tanh, np.sin, np.cos
    before = want(tanh, lambda z: 1 - tanh(z) ** 2, lambda z: -2 * tanh(z) * (1 - tanh(z) ** 2))
    after = want(sin, cos, lambda z: -sin(z))
    for _ in range(4):
        for g, w in zip(run() if route == "hvp_array" else (run(),), before if route == "hvp_array" else (before,)):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
    monkeypatch.setattr(np, "tanh", sin)
    for _ in range(2):
        for g, w in zip(run() if route == "hvp_array" else (run(),), after if route == "hvp_array" else (after,)):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_a_modules_np_rebound_to_a_namespace_is_refused(monkeypatch):
    """Not a module: s2sad does not read attributes of arbitrary objects as functions."""
    g = s2sad.grad(patched_np_module.loss)
    warm(g, X)
    monkeypatch.setattr(patched_np_module, "np", types.SimpleNamespace(sum=np.sum, tanh=np.sin))
    with pytest.raises(s2sad.S2SADError) as e:
        g(X)
    assert "patched_np_module.py" in str(e.value)


def test_a_module_held_in_a_closure_cell_patched(monkeypatch):
    loss = patched_np_module.make_closure_loss()
    g = s2sad.grad(loss)
    np.testing.assert_allclose(warm(g, X), 1 - np.tanh(X) ** 2, rtol=1e-12)
    monkeypatch.setattr(np, "tanh", np.sin)
    np.testing.assert_allclose(g(X), np.cos(X), rtol=1e-12)

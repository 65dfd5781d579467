"""A warm call leaves nothing for Python's cyclic collector: every object a call makes
is freed by reference counting when the call is done.

Why it matters: objects in reference cycles wait for the collector, which then runs
more often (every 700 net allocations) and promotes survivors to the older generations,
whose collections walk the whole heap. Session 19 found the block loop's runner (a
closure holding its own `served` attribute) leaving 94 objects a call in cycles in the
3-layer MLP's gradient: ~120 us a call in the collector, 3% of the call; and hessian's
last path made a new jacfwd wrapper (a cycle with its explain hook) on every call.
"""
import gc
import weakref

import numpy as np
import pytest

import s2sad


def cubic(x):
    return x ** 3 + 2 * x


def user(x):
    return np.sum(np.tanh(x) * x / (1 + x * x))


def mlp3(W1, b1, W2, b2, W3, b3, X, Y):
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    z = h2 @ W3 + b3
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def layer_norm(x, g, b):
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    v = np.mean(xc ** 2, axis=-1, keepdims=True)
    return np.sum(np.tanh(xc / np.sqrt(v + 1e-5) * g + b))


def logreg(w, X, y):
    return np.mean(np.log1p(np.exp(-y * (X @ w))))


def tree_loss(p, X):
    return np.sum(np.tanh(X @ p["w"] + p["b"]) ** 2)


def vec(x):
    return np.sin(x) * x


def _mlp3_args(n):
    rng = np.random.default_rng(0)
    return (rng.normal(size=(32, 64)) / 6, rng.normal(size=(1, 64)) * 0.1, rng.normal(size=(64, 64)) / 8,
            rng.normal(size=(1, 64)) * 0.1, rng.normal(size=(64, 10)) / 8, rng.normal(size=(1, 10)) * 0.1,
            rng.normal(size=(n, 32)), np.eye(10)[rng.integers(0, 10, n)])


def _cases():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2, 300_000)
    lx = rng.normal(size=(500, 8))
    ln = (rng.normal(size=(4096, 64)), rng.normal(size=64), rng.normal(size=64))
    return {
        "grad, elementwise": (s2sad.grad(user), (x,)),
        "value_and_grad, elementwise": (s2sad.value_and_grad(user), (x[:1000],)),
        "grad of a scalar": (s2sad.grad(cubic), (1.5,)),
        "hessian of a scalar (jacfwd of the grad)": (s2sad.hessian(cubic), (1.5,)),
        "MLP3 gradient, block passes (4,096 rows)": (s2sad.grad(mlp3, argnums=(0, 1, 2, 3, 4, 5)), _mlp3_args(4096)),
        "MLP3 value_and_grad, 32 rows": (s2sad.value_and_grad(mlp3, argnums=(0, 1, 2, 3, 4, 5)), _mlp3_args(32)),
        "layer norm gradient": (s2sad.grad(layer_norm, argnums=(0, 1, 2)), ln),
        "hvp of a logistic regression": (lambda w, X, y: s2sad.hvp(logreg, (w, X, y), (np.ones(8), 0 * X, 0 * y)),
                                         (np.ones(8), lx, np.sign(lx[:, 0]))),
        "jacrev": (s2sad.jacrev(vec), (x[:50],)),
        "grad of a dict of parameters": (s2sad.grad(tree_loss), ({"w": rng.normal(size=8), "b": 0.1}, lx)),
    }


CASES = _cases()


@pytest.mark.parametrize("name", list(CASES))
def test_a_warm_call_leaves_no_reference_cycles(name):
    g, args = CASES[name]
    for _ in range(4):          # warm: plans, kept calls and thread choices made
        g(*args)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(3):
            got = g(*args)
        del got
        found = gc.collect()
    finally:
        if was:
            gc.enable()
    assert found == 0, f"{name}: {found} objects left in reference cycles by three warm calls"


def step_loss(w, batch):
    return np.sum(np.tanh(w * batch) + 0.5 * w * w)


def mlp_step_loss(W, X):
    return np.mean(np.tanh(X @ W) ** 2)


STEPS = {
    "grad, small shapes (unrolled)": (lambda b: s2sad.grad(lambda w: step_loss(w, b)), 8),
    "grad, elementwise": (lambda b: s2sad.grad(lambda w: step_loss(w, b)), 5000),
    "value_and_grad, elementwise": (lambda b: s2sad.value_and_grad(lambda w: step_loss(w, b)), 5000),
    "grad, array program": (lambda b: s2sad.grad(lambda W: mlp_step_loss(W, b)), (500, 8)),
}


@pytest.mark.parametrize("name", list(STEPS))
def test_a_new_closure_per_step_frees_its_batch_without_the_collector(name):
    """The training-loop pattern `grad(lambda w: loss(w, batch))(w)`: once the step is
    done and the caller drops the batch, the batch is freed at once (reference counting),
    not when Python's cyclic collector next runs. Session 19: small_grad's router and
    its SmallGrad referred to each other, and the SmallGrad holds the user's lambda,
    whose cell holds the batch: 21 objects a step in a cycle, the batch among them."""
    make, shape = STEPS[name]
    rng = np.random.default_rng(3)
    w = rng.normal(size=(8, 4)) if name == "grad, array program" else rng.normal(size=shape)

    def step(batch):
        return make(batch)(w)
    for _ in range(3):
        step(rng.normal(size=shape))      # warm: plans and kernels made
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        batch = rng.normal(size=shape)
        alive = weakref.ref(batch)
        step(batch)
        del batch
        assert alive() is None, f"{name}: the batch outlived its step (held by a reference cycle)"
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()

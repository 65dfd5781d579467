"""What test_trust_runtime.py runs in a child process (a module, so that a 'spawn'
child can import it) and the stateful functions its scan cases differentiate."""
from __future__ import annotations

import numpy as np

import s2sad

state = 0.0


def ema(x):
    global state
    state = 0.5 * state + x
    return state


def ema_scaled(x, a):
    global state
    state = 0.5 * state + a * x
    return state


def scaled(x, a):
    return a * x


def tanh_loss(x):
    return np.sum(np.tanh(x) * x)


def large_gradient(n: int) -> tuple[float, float, float]:
    """A large threaded gradient: (value, max error of the gradient, n threads asked)."""
    import os

    x = np.linspace(-2.0, 2.0, n)
    v, g = s2sad.value_and_grad(tanh_loss)(x)
    t = np.tanh(x)
    err = float(np.max(np.abs(g - (t + x * (1.0 - t * t)))))
    return float(v - np.sum(t * x)), err, float(os.environ.get("S2SAD_NUM_THREADS", "0"))


def square(z):
    return z * z


def forked_compile(x):
    """Compiled fresh in a forked child (test_trust_runtime)."""
    return np.sum(x * x * x + x)


def planned_in_child(x):
    """Planned for the first time in a forked child (test_trust_runtime)."""
    return np.sum(x * x + np.sin(x))

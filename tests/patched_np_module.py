"""A module whose losses read numpy through its global `np`, for
tests/test_trust_s13_monkeypatch.py: a test rebinds `patched_np_module.np`."""
import numpy as np


def loss(x):
    return np.sum(np.tanh(x))


def mlp(W, x):
    return np.sum(np.tanh(W @ x) ** 2)


def make_closure_loss():
    """A loss whose module is a closure cell (imported inside its maker)."""
    import numpy as xp

    def closure_loss(x):
        return xp.sum(xp.tanh(x))
    return closure_loss

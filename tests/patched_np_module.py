"""A module whose losses read numpy through its global `np`, for
tests/test_trust_s13_monkeypatch.py: a test rebinds `patched_np_module.np`."""
import numpy as np


def loss(x):
    return np.sum(np.tanh(x))


def mlp(W, x):
    return np.sum(np.tanh(W @ x) ** 2)

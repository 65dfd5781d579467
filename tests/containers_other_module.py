"""A helper in another module than the loss that calls it (tests/test_containers_helpers.py):
s2sad does not pass it a container whole (its names mean what its own module says)."""
import numpy as np


def layer(p, x):
    return np.tanh(x @ p["W"] + p["b"])

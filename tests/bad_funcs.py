"""Functions s2sad must refuse, each with its own error class (see test_errors.py)."""
import math

import numpy as np

import s2sad

DATA = np.arange(3.0)
COUNTER = [0.0]


def uses_try(z):
    try:
        return math.log(z)
    except ValueError:
        return 0.0


def uses_with(z):
    with open("x") as fh:
        return z


def uses_yield(z):
    yield z


def uses_class(z):
    class A:
        pass
    return z


def uses_import(z):
    import os
    return z


def uses_del(z):
    y = z
    del y
    return z


def reads_array(z):
    return z * DATA[int(z)]


def calls_opaque(z):
    return z + np.random.rand()


def recursive(z):
    if z < 1.0:
        return z
    return recursive(z / 2.0)


def no_return(z):
    if z > 0:
        return z


class Box:
    value = 0.0


BOX = Box()


def writes_attribute(z):
    BOX.value = z
    return z


def loss_try(x):
    return np.sum(s2sad.broadcast(uses_try, x))


def loss_vector(x):
    return s2sad.broadcast(math.tanh, x) * 2.0


def loss_unsupported(x):
    return np.sum(np.fft.fft(x).real)


def loss_ok(x):
    return np.sum(np.tanh(x))


_ns = {}
exec("def nofile(z):\n    return z\n", _ns)  # a function with no file behind it
nofile = _ns["nofile"]


def loss_nofile(x):
    return np.sum(s2sad.broadcast(nofile, x))

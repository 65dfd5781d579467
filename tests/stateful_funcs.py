"""Stateful scalar functions for test_state.py (module-level state, as users write it)."""
import math

import numpy as np

s = 0.0
S = [0.0]
A = np.zeros(1)
D = {"n": 0.0}


def f_global(x):
    global s
    s += x
    return s


def f_list(x):
    S[0] += x
    return S[0]


def f_array(x):
    A[0] += x
    return A[0]


def f_dict(x):
    D["n"] = D["n"] * 0.5 + math.tanh(x)
    return D["n"] * x


def make_counter():
    count = 0.0

    def f(x):
        nonlocal count
        count += x
        return count
    return f


f_nonlocal = make_counter()


def loss_local_list(x):
    T = [0.0]

    def inner(z):
        T[0] += z
        return T[0]
    return sum(map(inner, x))


def calls_stateful(x):
    y = f_global(x * 2.0)
    return y * y


def appends(x):
    S.append(x)
    return x

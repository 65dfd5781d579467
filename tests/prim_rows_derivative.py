"""Rows of the "derivative" entry (array_prims/derivcall.py): a grad or value_and_grad
s2sad made of an array program, called inside a loss. Its VJP is forward over reverse of
the inner program (a Hessian times the seed), its JVP the same sweep along the tangents."""
from __future__ import annotations

import numpy as np

import s2sad
from prim_rows import Row


def wrap(y):
    return np.sin(1.3 * y + 0.2)


def inner(w, x):
    return np.sum(np.tanh(x @ w) ** 2) + 0.5 * np.sum(w * w * w)


inner_grad = s2sad.grad(inner)
inner_grads = s2sad.grad(inner, argnums=(0, 1))
inner_value_and_grad = s2sad.value_and_grad(inner)


def grad_call(w, x):
    return np.sum(wrap(inner_grad(w, x)))


def grads_call(w, x):
    gw, gx = inner_grads(w, x)
    return np.sum(wrap(gw)) + np.sum(wrap(gx) * np.arange(np.size(gx)).reshape(np.shape(gx)))


def value_and_grad_call(w, x):
    v, gw = inner_value_and_grad(w, x)
    return wrap(v) + np.sum(wrap(gw))


ROWS = [
    Row("derivative", grad_call, (((3,), (4, 3)), ((2,), (1, 2)))),
    Row("derivative", grads_call, (((3,), (4, 3)),)),
    Row("derivative", value_and_grad_call, (((3,), (4, 3)),)),
]

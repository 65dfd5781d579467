"""Rows of the row-fused softmax family and layer norm (array_prims/rowfused.py): no call spells them;
passes/rowfusion builds them from the numpy idioms written below."""
from __future__ import annotations

import numpy as np

from prim_rows import Row


def wrap(y):
    return np.sin(1.3 * y + 0.2)


def log_softmax_idiom(x):
    t = x - np.max(x, axis=1, keepdims=True)
    return np.sum(wrap(t - np.log(np.sum(np.exp(t), axis=1, keepdims=True))) * np.arange(np.size(x)).reshape(x.shape))


def softmax_idiom(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return np.sum(wrap(e / np.sum(e, axis=-1, keepdims=True)) * np.arange(np.size(x)).reshape(x.shape))


def logsumexp_idiom(x):
    m = np.max(x, axis=-1, keepdims=True)
    return np.sum(wrap(np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)) + m))


def layer_norm_idiom(x):
    mu = np.mean(x, axis=-1, keepdims=True)
    v = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return np.sum(wrap((x - mu) / np.sqrt(v + 1e-3)) * np.arange(np.size(x)).reshape(x.shape))


def dot_log_softmax_idiom(x, y):
    t = x - np.max(x, axis=-1, keepdims=True)
    return np.sum(wrap(np.sum(y * (t - np.log(np.sum(np.exp(t), axis=-1, keepdims=True))), axis=-1)))


ROWS = [
    Row("row_log_softmax", log_softmax_idiom, (((3, 4),), ((1, 1),), ((2, 3, 4),))),
    Row("row_softmax", softmax_idiom, (((3, 4),), ((5,),))),
    Row("row_logsumexp", logsumexp_idiom, (((3, 4),), ((4, 1),), ((5,),))),
    Row("row_dot_log_softmax", dot_log_softmax_idiom, (((3, 4), (3, 4)), ((1, 1), (1, 1)), ((5,), (5,)),
                                                        ((2, 3, 4), (2, 3, 4)), ((3, 4), (1, 4)))),
    Row("row_layer_norm", layer_norm_idiom, (((3, 4),), ((4, 1),), ((5,),), ((2, 3, 4),))),
]

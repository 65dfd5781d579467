"""Finding the right source: lambdas that share a line are told apart by column (or
refused), never confused."""
import sys

import numpy as np
import pytest

import s2sad

LOSSES = {"abs": lambda x: np.sum(np.abs(x)), "gt": lambda x: np.sum(x > 0.1)}  # one line, same params


@pytest.mark.skipif(sys.version_info < (3, 11), reason="code positions (columns) arrived in Python 3.11")
def test_two_lambdas_on_one_line_are_told_apart():
    x = np.array([-1.0, 2.0])
    value, g = s2sad.value_and_grad(LOSSES["gt"])(x)
    assert value == 1 and not g.any()
    value, g = s2sad.value_and_grad(LOSSES["abs"])(x)
    assert value == 3.0 and (g == [-1.0, 1.0]).all()


@pytest.mark.skipif(sys.version_info >= (3, 11), reason="3.11+ has columns")
def test_two_lambdas_on_one_line_are_refused_without_columns():
    with pytest.raises(s2sad.UnsupportedSyntaxError, match="own line"):
        s2sad.grad(LOSSES["gt"])(np.array([-1.0, 2.0]))


def test_nested_lambdas():
    g = s2sad.grad(lambda x, w: np.sum(s2sad.broadcast(lambda z: z * w, x)), argnums=1)(np.ones(3), 2.0)
    assert g == 3.0

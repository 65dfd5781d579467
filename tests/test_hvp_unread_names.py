"""The forward-over-reverse program drops the loss's value where nothing reads it
(s2sad.hvp reads the product alone): whether it is read is decided from the generated
code's tree, not by a word search over its text. Before session 12 a loss the user
named `loss` was computed anyway (one kernel pass more, and its compilation on a cold
start): the statement comments quote `loss = np.sum(...)`, and the word search took
the comment for a read. Numbers are checked against the same loss unnamed and
against differences of the gradient."""
import numpy as np
import pytest

import s2sad
from s2sad import array_higher
from conftest import directional_fd

rng = np.random.default_rng(6)
W = rng.normal(size=(5, 4))
X = rng.normal(size=4)
T = rng.normal(size=4)


def named(x, W):
    h = np.tanh(W @ x)
    loss = np.sum(h * h)
    return loss


def unnamed(x, W):
    h = np.tanh(W @ x)
    return np.sum(h * h)


def test_a_loss_named_in_comments_only_is_not_computed():
    text = array_higher.hvp_source(named, (0,), product_only=True)
    program = text.split("\n\n\n")[0]
    assert "# loss = np.sum(h * h)" in program              # the comment is there ...
    assert not any(line.strip().startswith("loss = ") for line in program.splitlines())   # ... not the value
    assert "return (None, None)" in program
    assert "return (None, None)" in array_higher.hvp_source(unnamed, (0,), product_only=True)


def test_a_loss_read_is_kept():
    text = array_higher.hvp_source(named, (0,))     # jvp of grad: the value is returned
    program = text.split("\n\n\n")[0]
    assert any(line.strip().startswith("loss = ") for line in program.splitlines())


def test_the_products_are_right(backend):
    want = directional_fd(s2sad.grad(unnamed), (X, W), (T, np.zeros_like(W)))
    for f in (named, unnamed):
        got = s2sad.hvp(f, (X, W), (T, np.zeros_like(W)), backend=backend)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
        value, dot = s2sad.jvp(s2sad.value_and_grad(f, backend=backend), (X, W), (T, np.zeros_like(W)))
        assert value[0] == pytest.approx(unnamed(X, W), rel=1e-12)
        np.testing.assert_allclose(dot[1], want, rtol=1e-6, atol=1e-8)

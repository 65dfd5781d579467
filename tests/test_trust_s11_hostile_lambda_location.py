"""A lambda's refusals at its return are located at its body (file:line:col and the
source line). grad of a lambda returning an array was located at line 0 with no source
line: the lambda's body was read as a `return` statement without a location."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import NonScalarLossError

NOT_SCALAR = lambda a: a * 2.0     # noqa: E731  (a lambda on purpose)


@pytest.mark.parametrize("make", [lambda: s2sad.grad(NOT_SCALAR), lambda: s2sad.value_and_grad(NOT_SCALAR)])
def test_non_scalar_lambda_is_located_at_its_line(make):
    with pytest.raises(NonScalarLossError) as e:
        make()(np.ones(3))
    loc = e.value.location
    assert loc.lineno == NOT_SCALAR.__code__.co_firstlineno
    assert loc.col > 0
    assert "NOT_SCALAR = lambda a: a * 2.0" in str(e.value)


def test_the_grad_of_a_lambda_is_unchanged():
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(s2sad.grad(lambda a: np.sum(np.sin(a) * a))(x), np.sin(x) + x * np.cos(x), rtol=1e-14)

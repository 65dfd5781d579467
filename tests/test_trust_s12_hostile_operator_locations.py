"""Refused operators in elementwise code are located where the user wrote them (session
12, hostile pass).

The elementwise translators (passes/ewtranslate.py, passes/ewexprs.py) rebuilt each
BinOp, UnaryOp and Compare without its location, so `np.sum(np.sin(x) * (x is None))`,
`x ^ 2` or a `y = x is None` line fed to a fused kernel were refused at "file:0:1" with no
source line. Each refusal now quotes the user's line and column, on the fused, scalar and
hessian routes.
"""
import math

import numpy as np
import pytest

import s2sad
from conftest import line_of


def compare_in_a_product(x):
    return np.sum(np.sin(x) * (x is None))


def xor_of_a_sine(x):
    return np.sum(np.sin(x) ^ 2)


def compare_on_its_own_line(x):
    y = x is None
    return np.sum(np.sin(x) * y)


def compare_in_a_conditional(x):
    return np.sum(np.sin(x) * (1 if x is None else 2))


def scalar_compare(x):
    return math.sin(x) * (x is not None)


CASES = [(compare_in_a_product, "x is None"), (xor_of_a_sine, "np.sin(x) ^ 2"),
         (compare_on_its_own_line, "x is None"), (compare_in_a_conditional, "x is None"),
         (scalar_compare, "x is not None")]
ENTRIES = {"grad of an array": lambda f: s2sad.grad(f)(np.linspace(0.1, 1.0, 4)),
           "grad of a number": lambda f: s2sad.grad(f)(0.5),
           "hessian": lambda f: s2sad.hessian(f)(np.linspace(0.1, 1.0, 4))}


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("fun, text", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_refusal_quotes_the_users_line_and_column(fun, text, entry):
    if fun is scalar_compare and entry != "grad of a number":
        pytest.skip("math.sin takes numbers")
    with pytest.raises(s2sad.S2SADError) as e:
        ENTRIES[entry](fun)
    loc, line = e.value.location, line_of(fun, text)
    assert loc is not None and loc.lineno > 0
    if loc.lineno != line:      # (a second derivative's refusal at the def, naming the inner place)
        assert f":{line}:" in e.value.message and ":0:" not in e.value.message
        return
    assert loc.col > 0 and text.split()[0] in loc.source_line()

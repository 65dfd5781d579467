"""An operation s2sad has no rule for is refused at its call: a located
UnsupportedOperationError naming the operation as the user wrote it, with a
`s2sad.defvjp` example for it (one rule per argument of the call, named as the call
names them) that is valid Python, and that works once the `...` are filled in."""
from __future__ import annotations

import re

import numpy as np
import pytest
from numpy.linalg import eig

import s2sad
from s2sad import array_prims
from s2sad.errors import UnsupportedOperationError


def uses_eig(A):
    return np.sum(np.linalg.eig(A)[0])


def uses_imported_eig(A):
    w = eig(A)[0]
    return np.sum(w)


def uses_polymul(x, y):
    return np.sum(np.polymul(x, y) ** 2)


def uses_polymul_twice(x):
    return np.sum(np.polymul(x, x))


def uses_ptp_method(x):
    return np.sum(x.ptp())


CASES = [
    (uses_eig, "np.linalg.eig", ["A"], (np.eye(2) * 2.0,)),
    (uses_imported_eig, "eig", ["A"], (np.eye(2) * 2.0,)),
    (uses_polymul, "np.polymul", ["x", "y"], (np.ones(3), np.arange(2.0))),
    (uses_polymul_twice, "np.polymul", ["x", "y"], (np.ones(2),)),
    (uses_ptp_method, "np.ptp", ["x"], (np.ones(3),)),
]


def _example(hint: str) -> str:
    lines = [ln.strip() for ln in hint.splitlines() if ln.strip().startswith("s2sad.defvjp(")]
    assert len(lines) == 1, hint
    return lines[0]


@pytest.mark.parametrize("fn,label,params,args", CASES, ids=[c[1] + "-" + c[0].__name__ for c in CASES])
def test_uncovered_operation_is_refused_with_a_valid_defvjp_example(fn, label, params, args):
    with pytest.raises(UnsupportedOperationError) as e:
        s2sad.grad(fn, argnums=tuple(range(len(args))))(*args)
    err = e.value
    assert label.split(".")[-1] in err.message
    first = fn.__code__.co_firstlineno
    assert err.location is not None and first < err.location.lineno <= first + 2
    assert label.split(".")[-1] in err.location.source_line()
    example = _example(err.hint)
    compile(example, "<hint>", "exec")                  # valid Python
    assert example.startswith(f"s2sad.defvjp({label}, ")
    rule = f"lambda g, out, {', '.join(params)}: ..."
    assert example == f"s2sad.defvjp({label}, {', '.join([rule] * len(params))})"


def test_the_example_filled_in_makes_the_operation_differentiable():
    example = _example(pytest.raises(UnsupportedOperationError, s2sad.grad(uses_polymul, argnums=(0, 1)),
                                     np.ones(3), np.arange(2.0)).value.hint)
    # the adjoints of a polynomial product (a full convolution): correlations with the other operand
    filled = example.replace("lambda g, out, x, y: ...", "lambda g, out, x, y: np.correlate(g, y, 'valid')", 1) \
        .replace("lambda g, out, x, y: ...", "lambda g, out, x, y: np.correlate(g, x, 'valid')", 1)
    exec(filled, {"s2sad": s2sad, "np": np})
    try:
        x, y = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25])
        gx, gy = s2sad.grad(uses_polymul, argnums=(0, 1))(x, y)
        h = 1e-6
        for got, i in ((gx, 0), (gy, 1)):
            for k in range(got.size):
                up, down = [x.copy(), y.copy()], [x.copy(), y.copy()]
                up[i][k] += h
                down[i][k] -= h
                assert got[k] == pytest.approx((uses_polymul(*up) - uses_polymul(*down)) / (2 * h), rel=1e-6)
    finally:
        array_prims.USER_VJPS.pop(np.polymul, None)     # the rule is process-wide


def test_hint_names_the_call_with_its_arguments_on_a_line_of_its_own():
    with pytest.raises(UnsupportedOperationError) as e:
        s2sad.grad(uses_eig)(np.eye(2))
    assert re.search(r"^    s2sad\.defvjp\(np\.linalg\.eig, lambda g, out, A: \.\.\.\)$", e.value.hint, re.M)

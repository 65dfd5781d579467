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


def uses_polyval(p, x):
    return np.sum(np.polyval(p, x) ** 2)


def uses_polyval_twice(x):
    return np.sum(np.polyval(x, x))


def uses_ediff1d(x):
    return np.sum(np.sin(np.ediff1d(x)) ** 2)


MASK = np.array([True, False, True])


def uses_compress_method(x):
    return np.sum(x.compress(MASK))


CASES = [
    (uses_eig, "np.linalg.eig", ["A"], (np.eye(2) * 2.0,)),
    (uses_imported_eig, "eig", ["A"], (np.eye(2) * 2.0,)),
    (uses_polyval, "np.polyval", ["p", "x"], (np.ones(3), np.arange(2.0))),
    (uses_polyval_twice, "np.polyval", ["x", "y"], (np.ones(2),)),
    (uses_ediff1d, "np.ediff1d", ["x"], (np.arange(3.0),)),
    (uses_compress_method, "np.compress", ["x", "MASK"], (np.ones(3),)),
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
    example = _example(pytest.raises(UnsupportedOperationError, s2sad.grad(uses_ediff1d), np.arange(3.0)).value.hint)
    # the adjoint of consecutive differences: each element gets the difference it ends
    # minus the one it starts
    filled = example.replace("lambda g, out, x: ...",
                             "lambda g, out, x: np.concatenate([[0.0], g]) - np.concatenate([g, [0.0]])", 1)
    exec(filled, {"s2sad": s2sad, "np": np})
    try:
        x = np.array([0.5, -1.0, 2.0, 0.25])
        got = s2sad.grad(uses_ediff1d)(x)
        h = 1e-6
        for k in range(got.size):
            up, down = x.copy(), x.copy()
            up[k] += h
            down[k] -= h
            assert got[k] == pytest.approx((uses_ediff1d(up) - uses_ediff1d(down)) / (2 * h), rel=1e-6)
    finally:
        array_prims.USER_VJPS.pop(np.ediff1d, None)     # the rule is process-wide


def test_hint_names_the_call_with_its_arguments_on_a_line_of_its_own():
    with pytest.raises(UnsupportedOperationError) as e:
        s2sad.grad(uses_eig)(np.eye(2))
    assert re.search(r"^    s2sad\.defvjp\(np\.linalg\.eig, lambda g, out, A: \.\.\.\)$", e.value.hint, re.M)

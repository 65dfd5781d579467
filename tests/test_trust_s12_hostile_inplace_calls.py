"""Calls that write into an array in place, inside a differentiated function (session 12,
hostile pass).

1. A straight-line loss whose call's value is never read, `y = np.add.at(a, [0], 1.0)`
   then `return np.sum(a * b)`: the fused planner substitutes names where they are read,
   so the call was never translated and never ran: grad, value_and_grad, jvp and vjp
   answered for the function without it (value 0.76 where Python's is 0.86).
2. An array program runs a call on data as written: `y = b.fill(0.0)`, `np.exp(b, out=b)`,
   `np.put(b, ...)`, `np.random.shuffle(b)`, `np.fill_diagonal(B, 0.0)` on an argument
   that is not differentiated changed the caller's array (grad, value_and_grad, the
   python backend, the warm path), while hessian and jacfwd(grad) answered for the
   function without the call (a wrong Hessian).
Each is now an UnsupportedOperationError located at the call, with what to write
instead; the arguments are left as they were. `out=None` is no write (its own refusal
stands), and a pure call whose value is unused keeps working.
"""
import numpy as np
import pytest

import s2sad

X = np.linspace(0.1, 1.0, 4)


def adds_at_then_sums(a, b):
    y = np.add.at(a, [0], 1.0)
    return np.sum(a * b)


def subtracts_at_a_data_argument(a, b):
    y = np.subtract.at(b, [0], 1.0)
    return np.sum(np.sin(a) * b)


def fills_data(a, b, B):
    y = b.fill(0.0)
    return np.sum(np.sin(a) * b) + np.sum(B)


def exp_into_data(a, b, B):
    y = np.exp(b, out=b)
    return np.sum(np.sin(a) * b) + np.sum(B)


def exp_into_data_by_position(a, b, B):
    y = np.exp(b, b)
    return np.sum(np.sin(a) * y) + np.sum(B)


def puts_into_data(a, b, B):
    y = np.put(b, [0], [3.0])
    return np.sum(np.sin(a) * b) + np.sum(B)


def shuffles_data(a, b, B):
    y = np.random.shuffle(b)
    return np.sum(np.sin(a) * b) + np.sum(B)


def fills_a_diagonal(a, b, B):
    y = np.fill_diagonal(B, 0.0)
    return np.sum(np.sin(a) * b) + np.sum(B)


def sorts_data(a, b, B):
    y = b.sort()
    return np.sum(np.sin(a) * b) + np.sum(B)


def clips_into_data(a, b, B):
    z = b.clip(0.0, 0.5, out=b)
    return np.sum(np.sin(a) * z) + np.sum(B)


TWO = [(adds_at_then_sums, "np.add.at"), (subtracts_at_a_data_argument, "np.subtract.at")]
THREE = [(fills_data, ".fill()"), (exp_into_data, "out="), (exp_into_data_by_position, "output operand"),
         (puts_into_data, "np.put"), (shuffles_data, "np.random.shuffle"), (fills_a_diagonal, "np.fill_diagonal"),
         (sorts_data, ".sort()"), (clips_into_data, "out=")]
ENTRIES = {
    "grad": lambda f, args: s2sad.grad(f)(*args),
    "value_and_grad": lambda f, args: s2sad.value_and_grad(f)(*args),
    "python backend": lambda f, args: s2sad.grad(f, backend="python")(*args),
    "jvp": lambda f, args: s2sad.jvp(f, args, (np.ones(4),) + (None,) * (len(args) - 1)),
    "vjp": lambda f, args: s2sad.vjp(f, *args)[1](1.0),
    "hessian": lambda f, args: s2sad.hessian(f)(*args),
    "jacfwd of grad": lambda f, args: s2sad.jacfwd(s2sad.grad(f))(*args),
}


def arguments(f):
    return (X[::-1].copy(), X.copy()) if f.__code__.co_argcount == 2 else (X[::-1].copy(), X.copy(), np.outer(X, X))


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("fun, what", TWO + THREE, ids=[f.__name__ for f, _ in TWO + THREE])
def test_an_in_place_call_is_refused_at_it_and_nothing_changes(fun, what, entry):
    args = arguments(fun)
    before = [a.copy() for a in args]
    with pytest.raises(s2sad.S2SADError) as e:
        ENTRIES[entry](fun, args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    call_line = fun.__code__.co_firstlineno + 1          # (each function's first statement)
    if e.value.location.lineno != call_line:     # (a second derivative's refusal at the def names the inner one)
        assert f":{call_line}:" in e.value.message
    if "in place" in e.value.message:
        assert what in e.value.message
    assert "__b" not in e.value.message         # (no name s2sad made up)


def test_a_pure_call_whose_value_is_unused_still_works():
    def unused_sum(a, b):
        y = np.sum(b)
        return np.sum(np.sin(a) * b)
    g = s2sad.grad(unused_sum)(X, X)
    np.testing.assert_allclose(g, np.cos(X) * X, rtol=1e-14)

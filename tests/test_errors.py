"""Every error a user can cause: its own S2SADError subclass, naming file, line and
column, quoting the source line, and saying what to do."""
import os

import numpy as np
import pytest

import s2sad
import bad_funcs as bad

HERE = os.path.join(os.path.dirname(__file__), "bad_funcs.py")


def lineno(fn_name: str, needle: str) -> int:
    lines = open(HERE).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(f"def {fn_name}("))
    return next(i for i in range(start, len(lines)) if needle in lines[i]) + 1


def check(excinfo, cls, fn_name, needle, words):
    err = excinfo.value
    assert type(err) is cls, type(err)
    assert isinstance(err, s2sad.S2SADError)
    msg = str(err)
    line = lineno(fn_name, needle)
    assert f"bad_funcs.py:{line}:" in msg, msg
    assert needle in msg  # the source line is quoted
    assert "^" in msg
    for w in words:
        assert w in msg, msg
    assert err.hint  # says what to do


def grad_of(f):
    def loss(x):
        return np.sum(s2sad.broadcast(f, x))
    return s2sad.grad(loss, backend="python")


X = np.array([0.5, 1.5])


@pytest.mark.parametrize("fn_name,needle,keyword", [
    ("uses_try", "try:", "'try'"),
    ("uses_with", "with open", "'with'"),
    ("uses_class", "class A", "'class'"),
    ("uses_import", "import os", "'import'"),
    ("uses_del", "del y", "'del'"),
])
def test_unsupported_syntax(fn_name, needle, keyword):
    with pytest.raises(s2sad.UnsupportedSyntaxError) as e:
        grad_of(getattr(bad, fn_name))(X)
    check(e, s2sad.UnsupportedSyntaxError, fn_name, needle, [keyword, "not supported"])


def test_yield_is_refused():
    with pytest.raises(s2sad.UnsupportedSyntaxError) as e:
        grad_of(bad.uses_yield)(X)
    check(e, s2sad.UnsupportedSyntaxError, "uses_yield", "yield z", ["Yield"])


def test_array_read_inside_scalar_function():
    with pytest.raises(s2sad.FreeVariableError) as e:
        grad_of(bad.reads_array)(X)
    check(e, s2sad.FreeVariableError, "reads_array", "DATA[int(z)]", ["DATA", "constant positions"])


def test_opaque_call_names_the_function_and_how_to_add_a_rule():
    with pytest.raises(s2sad.NoSourceError) as e:
        grad_of(bad.calls_opaque)(X)
    check(e, s2sad.NoSourceError, "calls_opaque", "np.random.rand()", ["np.random.rand", "rule"])


def test_recursion():
    with pytest.raises(s2sad.RecursionNotSupportedError) as e:
        grad_of(bad.recursive)(X)
    check(e, s2sad.RecursionNotSupportedError, "recursive", "return recursive(z / 2.0)", ["recursive", "while"])


def test_missing_return():
    with pytest.raises(s2sad.UnsupportedSyntaxError) as e:
        grad_of(bad.no_return)(X)
    check(e, s2sad.UnsupportedSyntaxError, "no_return", "def no_return", ["without returning"])


def test_state_that_cannot_be_carried_is_refused():
    with pytest.raises(s2sad.StatefulError) as e:
        grad_of(bad.writes_attribute)(X)
    check(e, s2sad.StatefulError, "writes_attribute", "BOX.value = z", ["attribute"])


@pytest.mark.parametrize("arg", [np.arange(3), np.array([True, False]), 3, True])
def test_integer_and_bool_inputs_are_refused(arg):
    with pytest.raises(s2sad.NonDifferentiableInputError) as e:
        s2sad.grad(bad.loss_ok)(arg)
    msg = str(e.value)
    assert "'x'" in msg and "loss_ok" in msg and "float" in msg
    assert "bad_funcs.py:" in msg
    dt = str(np.asarray(arg).dtype) if isinstance(arg, np.ndarray) else type(arg).__name__
    assert dt in msg


def test_non_scalar_loss():
    with pytest.raises(s2sad.NonScalarLossError) as e:
        s2sad.grad(bad.loss_vector, backend="python")(X)
    check(e, s2sad.NonScalarLossError, "loss_vector", "return s2sad.broadcast(math.tanh, x) * 2.0",
          ["not a scalar", "np.sum"])


def loss_two(x, y):
    return np.sum(x * y)


def test_shapes_that_do_not_broadcast():
    with pytest.raises(s2sad.ShapeError) as e:
        s2sad.grad(loss_two, backend="python")(np.ones(3), np.ones(4))
    assert "(3,)" in str(e.value) and "(4,)" in str(e.value) and "x" in str(e.value)


def test_unsupported_array_operation():
    with pytest.raises(s2sad.UnsupportedOperationError) as e:
        s2sad.grad(bad.loss_unsupported)(X)
    check(e, s2sad.UnsupportedOperationError, "loss_unsupported", "np.fft.fft(x)", ["np.fft.fft", "defvjp"])


def test_function_without_source():
    with pytest.raises(s2sad.NoSourceError) as e:
        s2sad.grad(bad.loss_nofile)(X)
    check(e, s2sad.NoSourceError, "loss_nofile", "s2sad.broadcast(nofile, x)", ["nofile", "source"])


def test_bad_input_never_mutates():
    x = np.arange(3)
    before = x.copy()
    with pytest.raises(s2sad.S2SADError):
        s2sad.grad(bad.loss_ok)(x)
    np.testing.assert_array_equal(x, before)

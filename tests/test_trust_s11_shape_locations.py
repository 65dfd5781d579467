"""Where a refusal inside a generated derivative is located.

- jacfwd / jacrev of a one-kernel elementwise map (the diagonal path, jacdiag.py) whose
  operands do not broadcast (a global of another length): a ShapeError at the user's
  statement, as jvp and grad locate it; before, numpy's broadcast error was located at
  the def (the diagonal path asked numpy for the shape outside any generated program).
- A reverse loop's header and the lines under it before its body's first statement
  comment run for the loop statement (linemap.block_header); before, they were located
  at the statement generated before them (the one after the loop in the user's code)."""
import sys
import types

import numpy as np
import pytest

import s2sad
from conftest import line_of
from s2sad.errors import ShapeError
from s2sad.passes.linemap import statement_at

W = np.ones(4)


def tanh_map(x):
    y = x * 2.0
    return np.tanh(x) * W


@pytest.fixture
def global_w():
    global W
    W = np.ones(4)
    yield
    W = np.ones(4)


@pytest.mark.parametrize("warm", [0, 2])
@pytest.mark.parametrize("backend", ["llvm", "python"])
@pytest.mark.parametrize("jac", ["jacfwd", "jacrev"])
def test_a_diagonal_map_whose_operands_do_not_broadcast_is_located_at_the_statement(jac, backend, warm, global_w):
    global W
    J = getattr(s2sad, jac)(tanh_map, backend=backend)
    x = np.linspace(0.1, 0.9, 4)
    for _ in range(warm):
        np.testing.assert_allclose(J(x), np.diag(1 - np.tanh(x) ** 2), rtol=1e-12)
    W = np.ones(3)
    with pytest.raises(ShapeError) as e:
        J(x)
    assert e.value.location.filename == __file__
    assert e.value.location.lineno == line_of(tanh_map, "return np.tanh")
    W = np.full(4, 2.0)
    np.testing.assert_allclose(J(x), np.diag(2 * (1 - np.tanh(x) ** 2)), rtol=1e-12)


def looped(x, A):
    h = np.tanh(x)
    for i in range(3):
        h = np.sin(A @ h) + h
    return np.sum(h * h)


def _located(g, args) -> dict:
    """generated line number -> the user line statement_at says it runs for, for each
    line of the derivative that runs."""
    seen = {}

    def trace(frame, event, arg):
        if frame.f_code.co_name.endswith("__grad"):
            if event == "line":
                tb = types.SimpleNamespace(tb_frame=frame, tb_lineno=frame.f_lineno, tb_next=None)
                loc = statement_at(tb)
                seen[frame.f_lineno] = loc.lineno if loc is not None else None
            return trace
        return None
    sys.settrace(trace)
    try:
        g(*args)
    finally:
        sys.settrace(None)
    return seen


@pytest.mark.parametrize("backend", ["llvm", "python"])
def test_a_reverse_loops_first_lines_run_for_the_loop(backend):
    g = s2sad.grad(looped, backend=backend)
    args = (np.linspace(0.1, 0.5, 3), np.eye(3) * 0.5)
    g(*args)
    at = _located(g, args)
    text = g.__s2sad__.source().split("\n")
    head = next(n for n, t in enumerate(text, 1) if "# Grad of: for i in range(3)" in t)
    first = next(n for n in range(head + 1, len(text)) if text[n - 1].lstrip().startswith("# Grad of:"))
    assert first > head + 1         # (a line of the loop's own before its body's first statement)
    for n in range(head, first):
        assert at[n] == line_of(looped, "for i in range"), (n, text[n - 1])
    assert at[first + 1] == line_of(looped, "h = np.sin")

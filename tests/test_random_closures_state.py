"""Random scalar programs with captured reads (elements of a differentiated argument)
and state writes (a global list item), checked against central finite differences of a
plain Python loop that runs the same function over the elements in order, and for the
state they leave behind."""
import linecache
import sys
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import s2sad
from conftest import central_fd

ATOMS = ["z", "y[0]", "y[1]", "S[0]", "0.5", "1.25", "acc"]


@st.composite
def expressions(draw, depth=0):
    if depth >= 2 or draw(st.booleans()):
        return draw(st.sampled_from(ATOMS))
    a, b = draw(expressions(depth + 1)), draw(expressions(depth + 1))
    form = draw(st.sampled_from(["({a} + {b})", "({a} * {b})", "({a} - {b})", "math.tanh({a})",
                                 "math.sin({a}) * {b}", "({a} if {b} > 0.3 else -{a})"]))
    return form.format(a=a, b=b)


@st.composite
def programs(draw):
    lines = ["acc = z * 0.5"]
    for _ in range(draw(st.integers(1, 4))):
        e = draw(expressions())
        kind = draw(st.sampled_from(["acc", "state", "state_aug"]))
        if kind == "acc":
            lines.append(f"acc = math.tanh({e})")
        elif kind == "state":
            lines.append(f"S[0] = math.tanh({e})")
        else:
            lines.append(f"S[0] += 0.25 * math.tanh({e})")
    ret = draw(expressions())
    body = "\n        ".join(lines)
    return f"""import math
import numpy as np
import s2sad

S = [0.0]


def loss(x, y):
    def f(z):
        {body}
        return math.tanh({ret}) + acc * S[0]
    return sum(map(f, x))


def plain(x, y):
    def f(z):
        {body}
        return math.tanh({ret}) + acc * S[0]
    S[0] = 0.0
    return sum(f(float(z)) for z in x)
"""


def load(src: str):
    name = f"s2sad_randstate_{uuid.uuid4().hex[:8]}"
    filename = f"<{name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    module = type(sys)(name)
    module.__file__ = filename
    exec(compile(src, filename, "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("backend", ["python", "llvm"])
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(src=programs(), data=st.data())
def test_random_captures_and_state(backend, src, data):
    m = load(src)
    x = np.array(data.draw(st.lists(st.floats(-1.5, 1.5), min_size=2, max_size=4)))
    y = np.array(data.draw(st.lists(st.floats(-1.5, 1.5), min_size=2, max_size=2)))
    expected = m.plain(x, y)
    final_state = m.S[0]
    g_fd = [central_fd(m.plain, [x, y], i) for i in (0, 1)]
    # a kink (a branch threshold) within reach of the finite differences makes them meaningless
    g_fd2 = [central_fd(m.plain, [x, y], i, h=1e-7) for i in (0, 1)]
    assume(all(np.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(g_fd, g_fd2)))
    m.S[0] = 0.0
    value, (gx, gy) = s2sad.value_and_grad(m.loss, argnums=(0, 1), backend=backend)(x, y)
    assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert m.S[0] == pytest.approx(final_state, rel=1e-12, abs=1e-12)  # the state a plain loop leaves
    np.testing.assert_allclose(gx, g_fd[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gy, g_fd[1], rtol=1e-5, atol=1e-6)

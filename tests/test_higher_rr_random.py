"""Reverse over reverse on random array programs (tests/randarray.py): for a random
`loss(W, b, v, c, X)` and g = s2sad.grad(loss, argnums=i), the outer loss

    outer(W, b, v, c, X) = np.sum(np.sin(1.3 * g(W, b, v, c, X) + 0.2) * R)

(R fixed weights) is differentiated by s2sad.grad(outer, argnums=j): its VJP through g
is loss's forward-over-reverse program (array_prims/derivcall.py). Checked against
central differences of the outer loss itself, which calls s2sad's first derivative
(where two steps agree: no kink of a piecewise function within reach), and the llvm
backend against the python one. A random program whose forward over reverse s2sad
refuses must be refused located, never a wrong number; the share refused is bounded
so that the test keeps testing. S2SAD_RANDPROG_SCALE multiplies the number of programs.
"""
from __future__ import annotations

import linecache
import os

import numpy as np
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import s2sad

from randarray import draw_program, load

SCALE = float(os.environ.get("S2SAD_RANDPROG_SCALE", "1"))
OUTER = '''import numpy as np


def outer(W, b, v, c, X):
    return np.sum(np.sin(1.3 * g(W, b, v, c, X) + 0.2) * R)
'''
REFUSED: list[str] = []     # the refusals met (their share is checked by the last test)
RUN: list[int] = []


@st.composite
def programs(draw):
    return draw_program(draw, st)


def outer_loss(g, R, tag: str):
    """The outer loss over g, loaded from source s2sad can read (linecache)."""
    filename = f"<s2sad-rr-outer-{tag}>"
    linecache.cache[filename] = (len(OUTER), None, OUTER.splitlines(True), filename)
    ns = {"__name__": filename, "g": g, "R": R}
    exec(compile(OUTER, filename, "exec"), ns)
    return ns["outer"]


def central(fun, args, j, h):
    a = args[j]
    if np.ndim(a) == 0:
        hi, lo = list(args), list(args)
        hi[j], lo[j] = a + h, a - h
        return (fun(*hi) - fun(*lo)) / (2 * h)
    out = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        hi, lo = list(args), list(args)
        hi[j], lo[j] = a.copy(), a.copy()
        hi[j][idx] += h
        lo[j][idx] -= h
        out[idx] = (fun(*hi) - fun(*lo)) / (2 * h)
    return out


@settings(max_examples=max(1, int(20 * SCALE)), deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate], print_blob=False,
          suppress_health_check=list(HealthCheck))
@given(program=programs(), seed=st.integers(0, 2**16), i=st.integers(0, 3), j=st.integers(0, 3))
def test_a_loss_of_a_random_programs_gradient(program, seed, i, j):
    note(program.source)
    note(f"g = grad(loss, argnums={i}); grad(outer, argnums={j})")
    loss = load(program)["loss"]
    args = program.args(seed)
    if not np.isfinite(loss(*args)):
        return
    R = np.random.default_rng(seed).uniform(-1.0, 1.0, np.shape(args[i]))
    got = {}
    for backend in ("python", "llvm"):
        outer = outer_loss(s2sad.grad(loss, argnums=i, backend=backend), R, f"{backend}-{seed}")
        try:
            got[backend] = s2sad.grad(outer, argnums=j, backend=backend)(*args)
        except s2sad.S2SADError as e:      # refused: located, the same on both backends
            assert e.location is not None, str(e)
            REFUSED.append(e.message)
            note(f"refused: {e}")
            return
    RUN.append(1)
    a, b = got["python"], got["llvm"]
    scale = max(1.0, float(np.max(np.abs(a))))
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-9 * scale)
    outer = outer_loss(s2sad.grad(loss, argnums=i), R, f"fd-{seed}")
    fd1, fd2 = central(outer, args, j, 1e-5), central(outer, args, j, 1e-6)
    trusted = np.abs(fd1 - fd2) <= 1e-4 * np.maximum(1.0, np.abs(fd2))     # no kink within reach
    note(f"s2sad {a}\nfd {fd2}")
    bad = trusted & (np.abs(np.asarray(a) - fd2) > 1e-4 * max(1.0, float(np.max(np.abs(fd2)))))
    assert not np.any(bad), f"s2sad {a} fd {fd2}"


def test_most_random_programs_were_differentiated_not_refused():
    """(runs after the test above, in this module's order)"""
    if not RUN and not REFUSED:
        return      # the test above was deselected
    assert len(RUN) >= 2 * len(REFUSED), (len(RUN), sorted(set(REFUSED)))

"""Random array programs (tests/randarray.py) through the reverse mode: gradients against
central finite differences of the plain numpy program, the three pullback modes bit for
bit, and the llvm backend against the python one. A program with a container twin
(randarray.CONTAINER_SHARE of them: parameters in a dict, tuple, list, namedtuple or
nested dict) also runs the twin: its gradient in the arguments' structure, bit for bit
the positional program's on each backend, and against central differences.
S2SAD_RANDPROG_SCALE multiplies the number of programs, as for the scalar ones."""
from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import s2sad
from s2sad import gemm

from randarray import draw_program, load

SCALE = float(os.environ.get("S2SAD_RANDPROG_SCALE", "1"))
ARGNUMS = (0, 1, 2, 3)


@st.composite
def programs(draw):
    return draw_program(draw, st)


def central_fd(loss, args, i, h=1e-6):
    a = args[i]
    if np.ndim(a) == 0:
        return (loss(*args[:i], a + h, *args[i + 1:]) - loss(*args[:i], a - h, *args[i + 1:])) / (2 * h)
    out = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        ap, am = a.copy(), a.copy()
        ap[idx] += h
        am[idx] -= h
        out[idx] = (loss(*args[:i], ap, *args[i + 1:]) - loss(*args[:i], am, *args[i + 1:])) / (2 * h)
    return out


@settings(max_examples=max(1, int(30 * SCALE)), deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate], print_blob=False,
          suppress_health_check=list(HealthCheck))
@given(program=programs(), seed=st.integers(0, 2**16))
def test_random_array_programs(program, seed):
    check(program, seed)


@settings(max_examples=max(1, int(15 * SCALE)), deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate], print_blob=False,
          suppress_health_check=list(HealthCheck))
@given(program=programs(), seed=st.integers(0, 2**16 - 1))
def test_random_array_programs_through_gemm(program, seed):
    """The same with every 2-D float product, however small or narrow, in s2sad.gemm's
    loop on the llvm backend (numpy's on the python one, so the backends' comparison
    checks the loop against BLAS)."""
    saved = gemm.MIN_WORK, gemm.MIN_COLUMNS
    gemm.MIN_WORK, gemm.MIN_COLUMNS = 0, 1
    try:
        check(program, seed + 2**16)
    finally:
        gemm.MIN_WORK, gemm.MIN_COLUMNS = saved


def check(program, seed):
    note(program.source)
    loss = load(program)["loss"]
    args = program.args(seed)
    value = loss(*args)
    if not np.isfinite(value):
        return
    before = [np.copy(a) for a in args]
    runs = {}
    for backend in ("python", "llvm"):
        for mode in ("store", "recompute", "auto"):
            v, grads = s2sad.value_and_grad(loss, argnums=ARGNUMS, backend=backend, mode=mode)(*args)
            assert np.isclose(v, value, rtol=1e-12, atol=1e-12), (backend, mode, v, value)
            g_only = s2sad.grad(loss, argnums=ARGNUMS, backend=backend, mode=mode)(*args)
            for g, go, a in zip(grads, g_only, args):
                assert np.shape(g) == np.shape(a) and np.all(np.isfinite(g))
                np.testing.assert_allclose(go, g, rtol=1e-12, atol=1e-12 * max(1.0, float(np.max(np.abs(g)))))
            runs[backend, mode] = grads
    for backend in ("python", "llvm"):       # the modes give the same bits
        for mode in ("recompute", "auto"):
            for a, b in zip(runs[backend, "store"], runs[backend, mode]):
                np.testing.assert_array_equal(a, b, err_msg=f"{backend}: store vs {mode}")
    vg = s2sad.value_and_grad(loss, argnums=ARGNUMS)    # warm calls: specialised (and split: one program)
    g = s2sad.grad(loss, argnums=ARGNUMS)
    first, first_g = vg(*args), g(*args)
    for _ in range(3):
        again, again_g = vg(*args), g(*args)
        assert np.float64(again[0]).tobytes() == np.float64(first[0]).tobytes()
        for got, want in ((again[1], first[1]), (again_g, first_g)):
            assert all(np.asarray(a).tobytes() == np.asarray(b).tobytes() for a, b in zip(got, want))
    for a, b in zip(args, before):          # the user's arrays are never written
        np.testing.assert_array_equal(a, b)
    for a, b in zip(runs["python", "store"], runs["llvm", "store"]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-10 * max(1.0, float(np.max(np.abs(a)))))
    for i, g in zip(ARGNUMS, runs["llvm", "auto"]):
        assert_matches_fd(g, central_fd(loss, args, i), i)
    if program.container:
        check_container_twin(program, args, value, runs)


def assert_matches_fd(g, fd, i):
    scale = max(1.0, float(np.max(np.abs(fd))))
    bad = np.abs(np.asarray(g) - fd) > 1e-5 * scale
    assert not np.any(bad), f"argument {i}: s2sad {g} fd {fd}"


def check_container_twin(program, args, value, runs):
    """The same body reading W and b (and v, nested) from a container: the gradient in
    the container's structure, the same bits as the positional program's, and central
    differences of the twin itself (its leaves perturbed through `pack`)."""
    note(program.container_source)
    ns = load(program, program.container_source)
    twin = ns["loss"]
    packed = program.pack(ns, args)
    assert twin(*packed) == value
    argnums = program.container_argnums()
    for backend in ("python", "llvm"):
        v, grads = s2sad.value_and_grad(twin, argnums=argnums, backend=backend)(*packed)
        assert np.isclose(v, value, rtol=1e-12, atol=1e-12), (backend, v, value)
        for i, (g, g_positional) in enumerate(zip(program.flat_grads(grads), runs[backend, "auto"])):
            np.testing.assert_array_equal(g, g_positional, err_msg=f"{backend}: {program.container} leaf {i}")
    flat = program.flat_grads(grads)
    for i in ARGNUMS:
        assert_matches_fd(flat[i], central_fd(lambda *a: twin(*program.pack(ns, list(a))), args, i), i)

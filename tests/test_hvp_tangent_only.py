"""`s2sad.hvp(fun, primals, tangents, argnums=...)` returns the Hessian-vector product
alone: for an array program its forward-over-reverse program returns the adjoints as
None and drops the adjoints' lines no tangent reads (passes/dead_lines.py; a kernel
pass computes only the partials still read). Checked: the same product as
`jvp(grad(f))[1]` on every program of test_array_hvp, central differences of the
gradient, the text of the program (the MLP's `X.T @ G` for W1's gradient gone, its
tangent kept), jvp(grad) still returning both, the liveness pass alone, and the bad
inputs a user may try.
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad
from s2sad.passes.array_jvp import tangent_plans
from s2sad.passes.dead_lines import drop_dead
from s2sad.plans import compiled_array
from conftest import directional_fd
from tests.test_array_hvp import PROGRAMS, _tangent, mlp_leaky

BACKENDS = ("python", "llvm")
IDS = [f"{p[0].__name__}-{k}" for k, p in enumerate(PROGRAMS)]


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("fn,args,argnums", PROGRAMS, ids=IDS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_hvp_is_the_tangent_of_jvp_of_grad(fn, args, argnums, backend):
    rng = np.random.default_rng(11)
    tans = tuple(_tangent(a, rng) for a in args)
    G = s2sad.grad(fn, argnums=argnums, backend=backend)
    want = s2sad.jvp(G, tuple(args), tans, backend=backend)[1]
    got = s2sad.hvp(fn, tuple(args), tans, argnums=argnums, backend=backend)
    assert isinstance(got, tuple) == isinstance(argnums, tuple)
    fd = directional_fd(G, args, tans)
    for g, w, d, i in zip(_as_tuple(got), _as_tuple(want), _as_tuple(fd), _as_tuple(argnums)):
        assert np.shape(g) == np.shape(args[i]) and type(g) is type(w)
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(g, d, rtol=1e-5, atol=1e-6)


def _programs(fn, argnums):
    plans = tangent_plans(compiled_array(fn))
    both = plans.hvp_sweep(argnums, argnums, False, True)[0]
    product = plans.hvp_sweep(argnums, argnums, False, False)[0]
    return both, product


def test_the_mlp_product_computes_no_gradient():
    """W1's gradient X.T @ _1_bar (one of the largest products) and b1's are not
    computed; the h kernel's pass computes the tangents' partials only."""
    both, product = _programs(mlp_leaky, (0, 1, 2))
    assert "W1_bar, W1_bar_dot = both(matmul_rhs_bar, (_1_bar, X, W1), (_1_bar_dot, X, W1))" in both
    assert "W1_bar =" not in product and "W1_bar," not in product and "_1_bar =" not in product
    assert "W1_bar_dot = matmul_rhs_bar(_1_bar_dot, X, W1)" in product
    assert "('_1', 'b1', 'q__1', 'q_b1', 'c_sum'))" in both
    # W2's adjoint's tangent: column sums of h's seeded pass (no pass of its own)
    assert "(__1_g_dot, _b1_g_dot, _W2_g_dot_sums) = sum_grads(" in product and "('_1', 'b1', 'c_sum'))" in product
    assert "W2, W2_dot, True, out_bar" in both and "W2, W2_dot, 'tangent', out_bar" in product
    assert "h_values, True)" in product and "_W2_g_dot = column_sums(_W2_g_dot, _W2_g_dot_sums)" in product
    assert "return (None, None), (None, None, None), (W1_bar_dot, b1_bar_dot, W2_bar_dot)" in product


def test_jvp_of_grad_still_returns_the_gradient():
    fn, args, argnums = next(p for p in PROGRAMS if p[0] is mlp_leaky)
    tans = tuple(_tangent(a, np.random.default_rng(3)) for a in args)
    g, g_dot = s2sad.jvp(s2sad.grad(fn, argnums=argnums), tuple(args), tans)
    s2sad.hvp(fn, tuple(args), tans, argnums=argnums)      # the tangent-only program made too
    g2, _ = s2sad.jvp(s2sad.grad(fn, argnums=argnums), tuple(args), tans)
    want = s2sad.grad(fn, argnums=argnums)(*args)
    for a, b, c in zip(g, g2, want):
        np.testing.assert_allclose(a, c, rtol=1e-13)
        np.testing.assert_allclose(b, c, rtol=1e-13)


def test_a_loop_and_a_branch_are_kept_whole():
    """Lines inside a loop or an if are never dropped; what they read stays."""
    blocks = [p for p in PROGRAMS if p[0].__name__ in ("taped_loop", "nested_loops", "rnn", "branchy")]
    assert len(blocks) >= 4
    for fn, args, argnums in blocks:
        both, product = _programs(fn, _as_tuple(argnums))
        inner = [l for l in both.split("\n") if l.startswith("        ")]
        assert inner and all(l in product.split("\n") for l in inner)


# ---------------------------------------------------------------- the liveness pass alone

def test_drop_dead_drops_what_nothing_reads():
    lines = ["def f(a, b):", "    x = g(a)", "    y = g(b)", "    z, w = h(x)", "    # a comment",
             "    check(z)", "    return (y,)"]
    assert drop_dead(lines) == ["def f(a, b):", "    x = g(a)", "    y = g(b)", "    z, w = h(x)",
                                "    # a comment", "    check(z)", "    return (y,)"]
    lines[5] = "    pass"
    assert drop_dead(lines) == ["def f(a, b):", "    y = g(b)", "    # a comment", "    pass", "    return (y,)"]


def test_drop_dead_keeps_blocks_and_what_they_read():
    lines = ["def f(a):", "    t = []", "    u = k(a)", "    for i in range(3):", "        v = m(u)",
             "        t.append(v)", "    dead = k(a)", "    return t"]
    assert drop_dead(lines) == [l for l in lines if "dead" not in l]


def test_drop_dead_narrows_an_assignment_with_dead_names():
    lines = ["def f(a):", "    (p, q) = sum_grads(k, (a,), ('a', 'q_a'))", "    return p"]
    seen = []

    def narrow(text, node, dead):
        seen.append((text, dead))
        return "(p,) = sum_grads(k, (a,), ('a',))"
    assert drop_dead(lines, narrow)[1] == "    (p,) = sum_grads(k, (a,), ('a',))"
    assert seen == [("(p, q) = sum_grads(k, (a,), ('a', 'q_a'))", {"q"})]


# ---------------------------------------------------------------- bad inputs

def _mlp_args(n=9, d=3, hdim=4):
    rng = np.random.default_rng(5)
    return (rng.normal(size=(d, hdim)), rng.normal(size=hdim), rng.normal(size=(hdim, 1)),
            rng.normal(size=(n, d)), rng.normal(size=(n, 1)))


def test_hvp_refuses_wrong_tangents_located():
    args = _mlp_args()
    tans = tuple(np.ones_like(a) for a in args)
    with pytest.raises(s2sad.S2SADError, match=r"tangent of argument 0 .* has shape \(2, 4\)"):
        s2sad.hvp(mlp_leaky, args, (np.ones((2, 4)),) + tans[1:], argnums=(0, 1, 2))
    with pytest.raises(s2sad.S2SADError, match="tuples or lists"):
        s2sad.hvp(mlp_leaky, args, np.ones(3), argnums=(0, 1, 2))
    with pytest.raises(s2sad.S2SADError, match="one tangent per primal"):
        s2sad.hvp(mlp_leaky, args, tans[:2] + tans[3:], argnums=(0, 1, 2))
    with pytest.raises(s2sad.S2SADError, match="out of range"):
        s2sad.hvp(mlp_leaky, args, tans, argnums=(0, 7))
    ints = (args[0].astype(np.int64),) + args[1:]
    with pytest.raises(s2sad.S2SADError, match="only float arguments"):
        s2sad.hvp(mlp_leaky, ints, tans, argnums=0)


def test_hvp_leaves_its_inputs_and_propagates_nan():
    args = _mlp_args()
    tans = tuple(np.ones_like(a) for a in args)
    kept = [a.copy() for a in args + tans]
    got = s2sad.hvp(mlp_leaky, args, tans, argnums=(0, 1, 2))
    assert all(np.array_equal(a, b) for a, b in zip(args + tans, kept))
    assert all(np.isfinite(g).all() for g in got)
    bad = (args[0],) + args[1:3] + (np.where(np.arange(args[3].size).reshape(args[3].shape) == 4, np.nan,
                                              args[3]),) + args[4:]
    got = s2sad.hvp(mlp_leaky, bad, tans, argnums=(0, 1, 2))
    assert np.isnan(got[0]).any()


def test_hvp_of_zero_rows_float32_and_a_scalar_argument():
    def loss(W, X, s):
        return np.sum(np.tanh(X @ W) ** 2) * s

    W, X = np.ones((3, 2)) * 0.1, np.zeros((0, 3))
    got = s2sad.hvp(loss, (W, X, 2.0), (np.ones((3, 2)), np.zeros((0, 3)), 1.0), argnums=(0, 2))
    assert got[0].shape == (3, 2) and np.all(got[0] == 0) and got[1] == 0.0
    rng = np.random.default_rng(2)
    X32, W32 = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(3, 2)).astype(np.float32)
    V = rng.normal(size=(3, 2)).astype(np.float32)
    got32 = s2sad.hvp(loss, (W32, X32, 1.5), (V, np.zeros_like(X32), 0.0))
    want = s2sad.hvp(loss, (W32.astype(float), X32.astype(float), 1.5), (V.astype(float), np.zeros((5, 3)), 0.0))
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, want, rtol=1e-4, atol=1e-5)
    W64, X64, V64 = W32.astype(float), X32.astype(float), V.astype(float)
    along_s = s2sad.hvp(loss, (W64, X64, 1.5), (V64, np.zeros((5, 3)), 0.7), argnums=2)
    G = s2sad.grad(loss, argnums=2)
    fd = (G(W64 + 1e-6 * V64, X64, 1.5 + 0.7e-6) - G(W64 - 1e-6 * V64, X64, 1.5 - 0.7e-6)) / 2e-6
    assert isinstance(along_s, float) and along_s == pytest.approx(fd, rel=1e-5)


def test_the_column_pair_computes_w_bar_dot_alone():
    """kernel_matmul_hvp_bars with w_grad "tangent" (what s2sad.hvp's program passes where
    w's gradient is dead): w_bar None, w_bar_dot the same as with True, on the factored
    path and on the path with h and h_dot formed."""
    from s2sad import hvp_columns
    args = _mlp_args(n=7)
    W1, b1, W2, X, y = args
    fn = tangent_plans(compiled_array(mlp_leaky)).hvp_implementation((0, 1, 2), (0, 1, 2), "llvm", False,
                                                                     hvp_columns.runtime_names, False)
    ns = fn.__globals__
    k, pk = ns["mlp_leaky__h"], ns["mlp_leaky__h__pair_tangent"]
    rng = np.random.default_rng(9)
    z, z_dot, W2_dot = X @ W1, rng.normal(size=(7, 4)), rng.normal(size=W2.shape)
    out_bar, out_bar_dot = rng.normal(size=(7, 1)), rng.normal(size=(7, 1))
    h = np.where(z + b1 > 0, z + b1, 0.01 * (z + b1))
    h_dot = np.where(z + b1 > 0, 1.0, 0.01) * z_dot
    want = h_dot.T @ out_bar + h.T @ out_bar_dot
    for values in (None, (h, h_dot)):
        full = hvp_columns.kernel_matmul_hvp_bars(k, pk, (z, b1), (z_dot, np.zeros_like(b1)), W2, W2_dot, True,
                                                  out_bar, out_bar_dot, values, backend="llvm")
        alone = hvp_columns.kernel_matmul_hvp_bars(k, pk, (z, b1), (z_dot, np.zeros_like(b1)), W2, W2_dot,
                                                   "tangent", out_bar, out_bar_dot, values, backend="llvm")
        assert alone[2] is None and full[2].shape == W2.shape
        np.testing.assert_allclose(full[2], h.T @ out_bar, rtol=1e-12)
        np.testing.assert_allclose(alone[3], want, rtol=1e-12)
        np.testing.assert_array_equal(alone[3], full[3])

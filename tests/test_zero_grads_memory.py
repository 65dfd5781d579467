"""The memory of a gradient that is zero by the rules (zerograds.py, issue 17's
`sum(x > 0.1)`): whichever way it is obtained (numpy's calloc, or inside an s2sad call a
block of s2sad's pool that an earlier array used and the user may have written), every
returned gradient is a fresh array the user owns: writable, its own memory (no other
gradient, input or s2sad object shares it), every element the zero the kernel would
give (+0, or -0.0 for a negative seed), on the lean path and on the general one, float64
and float32."""
from __future__ import annotations

import math

import numpy as np
import pytest

import s2sad
from s2sad import mempool, runtime, zerograds
from s2sad.frontend import parse_function
from s2sad.passes.normalize import normalize

N = 300_000             # past the lean path's one-call entry and the pool's threshold (2.4 MB of float64)
handler_name = np._core.multiarray.get_handler_name
pool_on = pytest.mark.skipif(not mempool.stats()["on"], reason="pool unavailable")


def gt_loss(x):
    return np.sum(x > 0.1)


def two_loss(x, y):
    return np.sum(np.floor(x) + np.sign(y))


def k_gt(z):
    return z > 0.1


def kernel_of(fn) -> runtime.Kernel:
    p = normalize(parse_function(fn))
    return runtime.Kernel(p, p.entry)


def assert_owned_zeros(g, like, zero=0.0):
    """A fresh, writable, C-contiguous array of like's shape and dtype, each element `zero`."""
    assert type(g) is np.ndarray and g.shape == like.shape and g.dtype == like.dtype
    assert g.flags.writeable and g.flags.owndata and g.base is None and g.flags.c_contiguous
    assert g.tobytes() == np.full(like.shape, zero, like.dtype).tobytes()     # the sign of zero too
    assert not np.shares_memory(g, like)


def taken_calls(monkeypatch):
    """Count the lean and general paths' zero shortcuts (so a test cannot pass by running the kernel)."""
    count = [0]
    for name in ("zero_sum_fast", "zero_seed"):
        def spy(*a, real=getattr(runtime, name), **k):
            got = real(*a, **k)
            count[0] += got is not None
            return got
        monkeypatch.setattr(runtime, name, spy)
    return count


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("path", ["lean", "general"])
def test_each_zero_gradient_is_the_users_own_memory(path, dtype, monkeypatch):
    taken = taken_calls(monkeypatch)
    x = np.random.default_rng(1).standard_normal(N).astype(dtype)
    if path == "lean":
        f, args = s2sad.grad(gt_loss), (x,)
    else:
        f, args = s2sad.grad(two_loss, argnums=(0, 1)), (np.stack([x, -x]), x[::-1].copy())
    before = [a.copy() for a in args]
    f(*args)                       # the first call runs the kernel (proven_zero)
    first, second = f(*args), f(*args)
    assert taken[0] >= 2
    firsts = first if isinstance(first, tuple) else (first,)
    seconds = second if isinstance(second, tuple) else (second,)
    for g, h, a in zip(firsts, seconds, args):
        assert_owned_zeros(g, a)
        assert_owned_zeros(h, a)
        assert not np.shares_memory(g, h)
        g[...] = np.nan            # the user writes into one gradient: the other and the inputs keep theirs
        assert_owned_zeros(h, a)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)


@pool_on
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_a_pooled_block_the_user_wrote_comes_back_zeroed(dtype, monkeypatch):
    """The gradient comes from s2sad's pool; dropped after the user filled it with NaN,
    -0.0 and ones, its block may be handed out again, and every element is +0."""
    taken = taken_calls(monkeypatch)
    x = np.linspace(-1, 1, N, dtype=dtype)
    f = s2sad.grad(gt_loss)
    f(x)
    for dirt in (np.nan, -0.0, 1.0, np.inf):
        g = f(x)
        assert handler_name(g) == "s2sad_pool"
        g[...] = dirt
        g[::3] = -dirt
        del g
        g = f(x)        # (a reuse when the pool kept the block: not asserted, the suite's other tests fill it)
        assert_owned_zeros(g, x)
    assert taken[0] >= 8


@pool_on
@pytest.mark.parametrize("scale", [-1.0, 1.0, -2.5], ids=str)
def test_a_seeds_signed_zeros_after_other_data(scale):
    """sum_dual's zeros signed by the seed (-0.0 for a negative one), in a pooled block
    that held the other sign's zeros and then NaN."""
    k = kernel_of(k_gt)
    z = np.linspace(-1, 1, N)
    runtime.sum_dual(k, [z], ("z",), scale=scale, value=False)      # the first call runs the kernel
    for _ in range(3):
        with mempool.scope():
            dirty = runtime.sum_dual(k, [z], ("z",), scale=-scale, value=False)[1][0]
        assert_owned_zeros(dirty, z, math.copysign(0.0, -scale))
        dirty[...] = np.nan
        del dirty
        with mempool.scope():
            g = runtime.sum_dual(k, [z], ("z",), scale=scale, value=False)[1][0]
        assert_owned_zeros(g, z, math.copysign(0.0, scale))
        assert handler_name(g) == "s2sad_pool"


def test_zeros_are_memory_not_a_view_of_a_shared_constant():
    """signed_zeros makes a new array every call (never a broadcast view of one zero)."""
    a = zerograds.signed_zeros((N,), np.float64, 0.0)
    b = zerograds.signed_zeros((N,), np.float64, -0.0)
    assert_owned_zeros(a, a.copy())
    assert_owned_zeros(b, b.copy(), -0.0)
    a[0] = 5.0
    assert zerograds.signed_zeros((N,), np.float64, 0.0)[0] == 0.0

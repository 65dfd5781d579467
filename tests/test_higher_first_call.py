"""The first call of the higher-order API in a new process (issue 14's target: a first
call under 100 ms for `hessian` of a 10-vector's Rosenbrock and `jacfwd`/`jacrev` of a
10-to-10 map).

A fresh child process, after an earlier one filled the disk cache, times its first
call of each. A kernel compiled again on every start is caught by what the child loaded
(llvmlite.binding: no compile on a warm start), not by the clock; the time bound is
only a backstop against something far slower (2 s: 0.5 s failed once at load 10 on 2
cores; the 100 ms target is measured by `make bench`, not here). The results are checked against analytic values, so a fast wrong
answer fails too.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from conftest import rosen, rosen_hessian

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARM_FIRST_CALL_S = 2.0

CHILD = """\
import json, sys, time
import numpy as np
import s2sad

A = np.linspace(-1.0, 1.0, 100).reshape(10, 10) / 3.0


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def layer(x):
    return np.tanh(A @ x)


x = np.linspace(-1.0, 1.3, 10)
out = {}
for name, make, fun in (("hessian", s2sad.hessian, rosen), ("jacfwd", s2sad.jacfwd, layer),
                        ("jacrev", s2sad.jacrev, layer)):
    t = time.perf_counter()
    value = make(fun)(x)
    out[name] = {"s": time.perf_counter() - t, "value": np.asarray(value).tolist()}
out["binding"] = "llvmlite.binding" in sys.modules
print(json.dumps(out))
"""


def child_env(cache_dir) -> dict:
    env = dict(os.environ, S2SAD_CACHE_DIR=str(cache_dir), PYTHONPATH=REPO,
               S2SAD_CACHE_KEY=os.path.join(os.path.dirname(cache_dir), "key", "cache.key"))
    env.pop("S2SAD_CACHE", None)
    return env


def layer_jacobian(x):
    a = np.linspace(-1.0, 1.0, 100).reshape(10, 10) / 3.0
    t = np.tanh(a @ x)
    return (1.0 - t * t)[:, None] * a


def run_child(script, cache_dir) -> dict:
    p = subprocess.run([sys.executable, str(script)], env=child_env(cache_dir), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_warm_cache_first_calls_are_quick_and_right(tmp_path):
    script = tmp_path / "higher_user.py"
    script.write_text(CHILD)
    cache = tmp_path / "cache"
    run_child(script, cache)                 # fills the disk cache
    warm = run_child(script, cache)
    x = np.linspace(-1.0, 1.3, 10)
    np.testing.assert_allclose(warm["hessian"]["value"], rosen_hessian(x), rtol=1e-12, atol=1e-9)
    for name in ("jacfwd", "jacrev"):
        np.testing.assert_allclose(warm[name]["value"], layer_jacobian(x), rtol=1e-12, atol=1e-14)
    assert not warm["binding"], "a warm start compiled something: llvmlite.binding was loaded"
    for name in ("hessian", "jacfwd", "jacrev"):
        assert warm[name]["s"] < WARM_FIRST_CALL_S, (name, warm[name]["s"])


def test_a_grads_jvp_computes_no_loss_and_agrees_bit_for_bit():
    """jvp(grad(f)) reads no loss: its program runs no pass for the loss or its tangent
    (on a cold start, two kernels fewer compiled), and gives the bits of the program
    that computes them (jvp(value_and_grad(f)))."""
    import s2sad
    from s2sad.passes.array_jvp import tangent_plans
    from s2sad.plans import compiled

    x, v = np.linspace(-1.0, 1.3, 10), np.linspace(0.5, -0.7, 10)
    g, g_dot = s2sad.jvp(s2sad.grad(rosen), (x,), (v,))
    (value, g2), (value_dot, g2_dot) = s2sad.jvp(s2sad.value_and_grad(rosen), (x,), (v,))
    assert np.array_equal(g, g2) and np.array_equal(g_dot, g2_dot)
    np.testing.assert_allclose(g_dot, rosen_hessian(x) @ v, rtol=1e-12)
    assert value == rosen(x) or abs(value - rosen(x)) <= 1e-12 * abs(rosen(x))
    plans = tangent_plans(compiled(rosen))
    lean, _ = plans.hvp_sweep((0,), (0,), value=False)
    full, _ = plans.hvp_sweep((0,), (0,))
    assert "sum_dual(" in full and "sum_dual(" not in lean
    assert "return (None, None)" in lean

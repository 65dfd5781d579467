"""examples/gp.py: a Gaussian-process marginal likelihood (cholesky, solve_triangular,
the log-diagonal sum) fitted by gradient descent: the example runs and meets its
target, and its gradient matches central differences and the slogdet route."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import s2sad
from conftest import central_fd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
import gp  # noqa: E402


def test_gp_example_fits():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "gp.py")], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    rmse = float(r.stdout.split("held-out rmse ")[1].split()[0])
    assert rmse <= gp.TARGET


def test_gp_gradient_matches_finite_differences_and_slogdet_route():
    rng = np.random.default_rng(5)
    X = np.sort(rng.uniform(0.0, 4.0, 12))
    y = np.cos(X) + 0.05 * rng.normal(size=12)
    params = [0.3, -0.2, -1.5]
    argnums = (0, 1, 2)
    chol = s2sad.grad(gp.neg_log_marginal, argnums=argnums)(*params, X, y)
    slog = s2sad.grad(gp.neg_log_marginal_slogdet, argnums=argnums)(*params, X, y)
    fd = [central_fd(gp.neg_log_marginal, params + [X, y], k) for k in argnums]
    np.testing.assert_allclose(chol, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(slog, chol, rtol=1e-9, atol=1e-10)
    # with respect to the data too: y through solve_triangular, X through the kernel
    gX, gy = s2sad.grad(gp.neg_log_marginal, argnums=(3, 4))(*params, X, y)
    np.testing.assert_allclose(gy, central_fd(gp.neg_log_marginal, params + [X, y], 4), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gX, central_fd(gp.neg_log_marginal, params + [X, y], 3), rtol=1e-5, atol=1e-6)

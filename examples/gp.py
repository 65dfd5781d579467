"""A Gaussian process fitted by gradient descent on its marginal likelihood, with
s2sad's gradients only.

Noisy samples of sin(x); an RBF kernel k(x, x') = sf2 exp(-(x - x')^2 / (2 ell^2)) plus
noise sn2 on the diagonal. The loss is the negative log marginal likelihood

    0.5 y^T K^-1 y + 0.5 log det K + 0.5 n log(2 pi)

through a Cholesky factor: K = L L^T, alpha = L^-1 y (solve_triangular), and
log det K = 2 sum(log diag L). The three log-hyperparameters are fitted by plain
gradient descent. The example checks the gradient at the start against central
finite differences and the log-diagonal sum against np.linalg.slogdet, then prints
the fitted hyperparameters and the error of the posterior mean on held-out points;
it exits with status 1 if a check fails or that error is above TARGET.

    python examples/gp.py          (needs scipy: pip install .[scipy])
"""
import sys

import numpy as np
from scipy.linalg import solve_triangular

import s2sad

TARGET = 0.15     # the root-mean-square error of the posterior mean on held-out points


def rbf_kernel(log_ell, log_sf2, X1, X2):
    d = X1[:, None] - X2[None, :]
    return np.exp(log_sf2) * np.exp(-0.5 * d ** 2 / np.exp(2.0 * log_ell))


def neg_log_marginal(log_ell, log_sf2, log_sn2, X, y):
    n = X.shape[0]
    K = rbf_kernel(log_ell, log_sf2, X, X) + (np.exp(log_sn2) + 1e-8) * np.eye(n)
    L = np.linalg.cholesky(K)
    alpha = solve_triangular(L, y, lower=True)
    diag = np.arange(n)
    return 0.5 * np.sum(alpha ** 2) + np.sum(np.log(L[diag, diag])) + 0.5 * n * np.log(2.0 * np.pi)


def neg_log_marginal_slogdet(log_ell, log_sf2, log_sn2, X, y):
    """The same through slogdet and solve, to check the Cholesky route."""
    n = X.shape[0]
    K = rbf_kernel(log_ell, log_sf2, X, X) + (np.exp(log_sn2) + 1e-8) * np.eye(n)
    sign, logdet = np.linalg.slogdet(K)
    return 0.5 * y @ np.linalg.solve(K, y) + 0.5 * logdet + 0.5 * n * np.log(2.0 * np.pi)


def central_differences(f, params, data, h=1e-6):
    out = []
    for k in range(len(params)):
        up, down = list(params), list(params)
        up[k] += h
        down[k] -= h
        out.append((f(*up, *data) - f(*down, *data)) / (2 * h))
    return np.array(out)


def posterior_mean(params, X, y, X_new):
    log_ell, log_sf2, log_sn2 = params
    K = rbf_kernel(log_ell, log_sf2, X, X) + (np.exp(log_sn2) + 1e-8) * np.eye(X.shape[0])
    return rbf_kernel(log_ell, log_sf2, X_new, X) @ np.linalg.solve(K, y)


def main() -> int:
    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(0.0, 6.0, 40))
    y = np.sin(X) + 0.1 * rng.normal(size=X.shape)
    X_test = np.linspace(0.2, 5.8, 50)
    params = [0.0, 0.0, np.log(0.5)]          # log ell, log sf2, log sn2
    grad_fn = s2sad.value_and_grad(neg_log_marginal, argnums=(0, 1, 2))

    value, grads = grad_fn(*params, X, y)
    fd = central_differences(neg_log_marginal, params, (X, y))
    grad_error = float(np.max(np.abs(np.array(grads) - fd)))
    route_error = abs(value - neg_log_marginal_slogdet(*params, X, y))
    print(f"start: loss {value:.4f}  gradient vs central differences {grad_error:.2e}  "
          f"cholesky vs slogdet {route_error:.2e}")
    first = value
    lr = 0.01
    for step in range(400):
        value, grads = grad_fn(*params, X, y)
        params = [p - lr * g for p, g in zip(params, grads)]
        if step % 100 == 0:
            print(f"step {step:3d}  loss {value:.4f}")
    value, grads = grad_fn(*params, X, y)
    rmse = float(np.sqrt(np.mean((posterior_mean(params, X, y, X_test) - np.sin(X_test)) ** 2)))
    ell, sf2, sn2 = np.exp(params)
    print(f"final loss {value:.4f}  ell {ell:.3f}  sf2 {sf2:.3f}  sn2 {sn2:.4f}  "
          f"held-out rmse {rmse:.4f}  (target {TARGET})")
    ok = grad_error < 1e-5 and route_error < 1e-8 and value < first and rmse <= TARGET
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

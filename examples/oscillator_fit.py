"""Fitting a damped oscillator to noisy measurements, written as people write it: the
parameters in a dict, the data on an object, the loss a method, the residuals returned
as aux.

x(t) = amp * exp(-gamma t) * cos(omega t + phase), measured at 400 times with noise;
the fit minimises the mean squared residual with Adam, stopping when the gradient's
norm falls below a tolerance. Prints the fitted parameters; exits with status 1 if
they miss the true ones by more than TOLERANCE.

    python examples/oscillator_fit.py
"""
import sys

import numpy as np

import s2sad

TRUE = {"amp": 1.5, "log_gamma": np.log(0.3), "omega": 2.0, "phase": 0.4}
TOLERANCE = 0.05     # on each parameter


class Measurements:
    def __init__(self, t, x):
        self.t, self.x = t, x

    def loss(self, params):
        gamma = np.exp(params["log_gamma"])
        model = params["amp"] * np.exp(-gamma * self.t) * np.cos(params["omega"] * self.t + params["phase"])
        residual = model - self.x
        return np.mean(residual ** 2), residual


def simulate(rng, n=400):
    t = np.linspace(0.0, 10.0, n)
    gamma = np.exp(TRUE["log_gamma"])
    x = TRUE["amp"] * np.exp(-gamma * t) * np.cos(TRUE["omega"] * t + TRUE["phase"])
    return Measurements(t, x + 0.02 * rng.normal(size=n))


def fit(data, params, steps=4000, lr=0.01, tol=1e-7):
    """Adam on the parameters in their dict; every gradient is a dict too."""
    grad_loss = s2sad.value_and_grad(data.loss, has_aux=True)
    m = {k: 0.0 for k in params}
    v = {k: 0.0 for k in params}
    for step in range(1, steps + 1):
        (value, residual), g = grad_loss(params)
        if np.sqrt(sum(gk ** 2 for gk in g.values())) < tol:
            break
        m = s2sad.tree.map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = s2sad.tree.map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        params = s2sad.tree.map(lambda p, a, b: p - lr * (a / (1 - 0.9 ** step)) /
                                (np.sqrt(b / (1 - 0.999 ** step)) + 1e-8), params, m, v)
    return params, value, step


def main() -> int:
    rng = np.random.default_rng(3)
    data = simulate(rng)
    start = {"amp": 1.0, "log_gamma": np.log(0.5), "omega": 1.9, "phase": 0.0}
    params, value, steps = fit(data, start)
    print(f"mean squared residual {value:.2e} after {steps} steps")
    worst = 0.0
    for k in sorted(TRUE):
        err = abs(params[k] - TRUE[k])
        worst = max(worst, err)
        print(f"  {k:10s} fitted {params[k]: .4f}   true {TRUE[k]: .4f}")
    return 0 if worst < TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())

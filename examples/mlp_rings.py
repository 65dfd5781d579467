"""A two-layer MLP trained with s2sad's gradients on data no linear model separates.

Two noisy concentric rings in the plane, labelled 0 (inner) and 1 (outer). The model:
h = leaky_relu(X @ W1 + b1), applied by `s2sad.broadcast` of a plain scalar function;
p = sigmoid(h @ W2 + b2); the loss is the mean log-loss. Minibatch gradient descent
with momentum; every gradient is the derivative s2sad generated from `loss`
(`s2sad.source(step_grad)` prints it). A logistic regression on the same data stays
near chance, which is the point of the hidden layer.

Prints the loss as it trains and the test accuracy of both models; exits with status 1
if the MLP's test accuracy is below TARGET.

    python examples/mlp_rings.py
"""
import sys

import numpy as np

import s2sad

TARGET = 0.95     # the MLP's stated accuracy on held-out data
HIDDEN = 32


def leaky_relu(z):
    return z if z > 0 else 0.05 * z


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def loss(W1, b1, W2, b2, X, y):
    h = s2sad.broadcast(leaky_relu, X @ W1 + b1)
    p = sigmoid(h @ W2 + b2)
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def linear_loss(w, b, X, y):
    p = sigmoid(X @ w + b)
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def make_rings(n, rng):
    y = (rng.random(n) < 0.5).astype(float)
    radius = np.where(y > 0.5, 2.0, 1.0) + rng.normal(size=n) * 0.15
    angle = rng.random(n) * 2 * np.pi
    X = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    return X, y[:, None]


def predict(params, X):
    W1, b1, W2, b2 = params
    h = np.maximum(X @ W1 + b1, 0.05 * (X @ W1 + b1))
    return sigmoid(h @ W2 + b2)


def train(grad_fn, params, X, y, rng, steps, lr, batch=128, report=None):
    velocity = [np.zeros_like(p) for p in params]
    for step in range(steps):
        idx = rng.integers(0, len(X), batch)
        value, grads = grad_fn(*params, X[idx], y[idx])
        velocity = [0.9 * v + g for v, g in zip(velocity, grads)]
        params = [p - lr * v for p, v in zip(params, velocity)]
        if report and step % report == 0:
            print(f"step {step:4d}  minibatch loss {value:.4f}")
    return params


def main() -> int:
    rng = np.random.default_rng(0)
    X, y = make_rings(4000, rng)
    X_test, y_test = make_rings(2000, rng)
    params = [rng.normal(size=(2, HIDDEN)), np.zeros((1, HIDDEN)),
              rng.normal(size=(HIDDEN, 1)) / np.sqrt(HIDDEN), np.zeros((1, 1))]
    step_grad = s2sad.value_and_grad(loss, argnums=(0, 1, 2, 3))
    params = train(step_grad, params, X, y, rng, steps=1500, lr=0.05, report=300)
    mlp_test = float(np.mean((predict(params, X_test) > 0.5) == (y_test > 0.5)))

    lin = train(s2sad.value_and_grad(linear_loss, argnums=(0, 1)), [np.zeros((2, 1)), 0.0], X, y, rng,
                steps=500, lr=0.05)
    lin_test = float(np.mean((sigmoid(X_test @ lin[0] + lin[1]) > 0.5) == (y_test > 0.5)))
    print(f"test accuracy: MLP {mlp_test:.3f} (target {TARGET}), logistic regression {lin_test:.3f}")
    return 0 if mlp_test >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())

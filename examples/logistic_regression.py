"""Logistic regression trained by gradient descent, with s2sad's gradients only.

Two Gaussian clouds in 5 dimensions, labelled 0 and 1; the model is
p = sigmoid(X @ w + b), the loss the mean log-loss. Every gradient step calls the
derivative s2sad generated from `loss` (print it with `s2sad.source(grad_loss)`).
Prints the training and test accuracy; exits with status 1 if the test accuracy is
below TARGET.

    python examples/logistic_regression.py
"""
import sys

import numpy as np

import s2sad

TARGET = 0.90   # the stated accuracy on held-out data


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def loss(w, b, X, y):
    p = sigmoid(X @ w + b)
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def make_data(n, rng):
    y = (rng.random(n) < 0.5).astype(float)
    centers = np.where(y[:, None] > 0.5, 1.0, -1.0) * np.array([1.0, 0.6, -0.8, 0.3, 0.5])
    X = centers + rng.normal(size=(n, 5)) * 1.1
    return X, y


def accuracy(w, b, X, y):
    return float(np.mean((sigmoid(X @ w + b) > 0.5) == (y > 0.5)))


def main() -> int:
    rng = np.random.default_rng(0)
    X, y = make_data(2000, rng)
    X_test, y_test = make_data(1000, rng)
    w, b = np.zeros(5), 0.0
    grad_loss = s2sad.value_and_grad(loss, argnums=(0, 1))
    lr = 0.5
    for step in range(300):
        value, (gw, gb) = grad_loss(w, b, X, y)
        w, b = w - lr * gw, b - lr * gb
        if step % 100 == 0:
            print(f"step {step:3d}  loss {value:.4f}")
    value, _ = grad_loss(w, b, X, y)
    train, test = accuracy(w, b, X, y), accuracy(w, b, X_test, y_test)
    print(f"final loss {value:.4f}  train accuracy {train:.3f}  test accuracy {test:.3f}  (target {TARGET})")
    return 0 if test >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())

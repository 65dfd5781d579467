"""The headline example: gradients of sum(f(x)) at close to the cost of a copy.

Run with `make demo`. For xs = randn(10_000) it times the gradient of five losses next
to numpy's x.copy() (the floor), and checks each gradient against the analytic one.
"""
import math
import time

import numpy as np

import s2sad


def ident(z):
    return z


def ident_tanh(z):
    return ident(math.tanh(z))


def loss_abs(x):
    return np.sum(np.abs(x))


def loss_cbrt(x):
    return np.sum(np.cbrt(x))


def loss_tanh(x):
    return np.sum(np.tanh(x))


def loss_ident_tanh(x):
    return np.sum(s2sad.broadcast(ident_tanh, x))


def loss_gt(x):
    return np.sum(x > 0.1)


CASES = [
    ("sum(abs(x))", loss_abs, lambda x: np.sign(x)),
    ("sum(cbrt(x))", loss_cbrt, lambda x: 1.0 / (3.0 * np.cbrt(x) ** 2)),
    ("sum(tanh(x))", loss_tanh, lambda x: 1.0 - np.tanh(x) ** 2),
    ("sum(broadcast(ident∘tanh, x))", loss_ident_tanh, lambda x: 1.0 - np.tanh(x) ** 2),
    ("sum(x > 0.1)", loss_gt, lambda x: np.zeros_like(x)),
]


def best_time(fn, *args, repeat=7, number=None):
    """Median over `repeat` runs of the per-call time in microseconds."""
    fn(*args)
    if number is None:
        number, t = 1, 0.0
        while t < 2e-3:
            t0 = time.perf_counter()
            for _ in range(number):
                fn(*args)
            t = time.perf_counter() - t0
            number *= 2
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn(*args)
        times.append((time.perf_counter() - t0) / number)
    return float(np.median(times)) * 1e6


def main() -> int:
    xs = np.random.default_rng(0).standard_normal(10_000)
    copy_us = best_time(np.ndarray.copy, xs)
    print(f"s2sad {s2sad.__version__}: gradient of sum(f(x)) for xs = randn(10_000), float64, one thread\n")
    print(f"{'case':34s} {'time':>10s} {'x copy()':>10s}  {'max error vs analytic':>22s}")
    print(f"{'x.copy()':34s} {copy_us:9.1f}us {1.0:9.1f}x")
    ok = True
    for label, loss, analytic in CASES:
        g = s2sad.grad(loss)
        first = time.perf_counter()
        got = g(xs)
        first_ms = (time.perf_counter() - first) * 1e3
        err = float(np.max(np.abs(got - analytic(xs)) / np.maximum(1.0, np.abs(analytic(xs)))))
        ok &= err < 1e-12
        us = best_time(g, xs)
        print(f"{label:34s} {us:9.1f}us {us / copy_us:9.1f}x  {err:22.1e}   (first call {first_ms:.0f} ms)")
    print("\nall gradients match the analytic ones" if ok else "\nGRADIENT MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

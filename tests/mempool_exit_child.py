"""Run by tests/test_mempool.py in a child process: gradients of array programs over dask
arrays and a refusal, leaving pool-made arrays for interpreter shutdown to free (this
crashed at exit before the pool's code and state were kept for the life of the process)."""
import dask.array as da
import numpy as np

import s2sad
def leaky_relu(z):
    return z if z > 0 else 0.01 * z
def mlp_loss(W1, b1, W2, X, y):
    h = s2sad.broadcast(leaky_relu, X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)
def softmax_loss(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))
def reg_loss(w, X, y):
    return -np.mean(y * np.log(1 / (1 + np.exp(-(X @ w))))) + 0.1 * np.sum(w ** 2)
def sum_reg(w, X, y):
    return np.sum((X @ w - y) ** 2) + np.sum(w ** 2) * 3.0
def centred(w, X):
    z = X @ w
    return np.sum((z - np.mean(z)) ** 2)
rng = np.random.default_rng(0)
n = 1000
X = rng.standard_normal((n, 10)); y = (rng.random(n) > 0.5) * 1.0; w = rng.standard_normal(10) * 0.1
Xd = da.from_array(X, chunks=(300, 10)); yd = da.from_array(y, chunks=300)
for f, args, dargs, an in [(reg_loss, (w, X, y), (w, Xd, yd), (0, 1)), (sum_reg, (w, X, y), (w, Xd, y), (0, 1, 2)),
                   (softmax_loss, None, None, (0, 1))]:
    if args is None:
        W = rng.standard_normal((10, 5)) * 0.1; b = np.zeros(5); Y = np.eye(5)[rng.integers(0, 5, n)]
        args = (W, b, X, Y); dargs = (W, b, Xd, da.from_array(Y, chunks=(300, 5)))
    v, g = s2sad.value_and_grad(f, argnums=an)(*dargs)
    v0, g0 = s2sad.value_and_grad(f, argnums=an)(*args)
    print(f.__name__, v - v0, [float(np.abs((a.compute() if hasattr(a, "compute") else a) - b).max()) for a, b in zip(g, g0)])
W1 = rng.standard_normal((10, 16)) * 0.3; b1 = np.zeros(16); W2 = rng.standard_normal((16, 1)) * 0.3
yy = rng.standard_normal((n, 1))
g = s2sad.grad(mlp_loss, argnums=(0, 1, 2))
got = g(W1, b1, W2, Xd, da.from_array(yy, chunks=(300, 1))); want = g(W1, b1, W2, X, yy)
print("mlp", [float(np.abs(a - b).max()) for a, b in zip(got, want)])
print(s2sad.explain(g))
try:
    s2sad.grad(centred)(w, Xd)
except Exception as e:
    print(type(e).__name__, e)

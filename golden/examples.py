"""The fixed example functions whose generated artifacts golden/ pins."""
import math

import numpy as np

import s2sad


def ident(z):
    return z


def ident_tanh(z):
    return ident(math.tanh(z))


def softplus(z):
    if z > 20.0:
        return z
    elif z < -20.0:
        return math.exp(z)
    else:
        return math.log1p(math.exp(z))


def newton_sqrt(a):
    x = 1.0
    for i in range(10):
        x = 0.5 * (x + a / x)
    return x


def three(x, y, w):
    s = x * y + w ** 2
    return math.sin(s) if s > 0 else -s


def abs_loss(x):
    return np.sum(np.abs(x))


def cbrt_loss(x):
    return np.sum(np.cbrt(x))


def ident_tanh_loss(x):
    return np.sum(s2sad.broadcast(ident_tanh, x))


def softplus_loss(x):
    return np.sum(s2sad.broadcast(softplus, x))


def newton_loss(a):
    return sum(map(newton_sqrt, a))


def three_loss(x, y, w):
    return np.sum(s2sad.broadcast(three, x, y, w))


def closure_loss(x, y):
    return np.sum(s2sad.broadcast(lambda z: z ** 2 + y[0], x))


total = 0.0
STORE = [0.0]
BUFFER = np.zeros(1)


def running_global(x):
    global total
    total += x
    return total


def running_item(x):
    STORE[0] += x
    return STORE[0] * x


def running_array(x):
    BUFFER[0] = 0.5 * BUFFER[0] + math.tanh(x)
    return BUFFER[0]


def make_counter():
    count = 0.0

    def counter(x):
        nonlocal count
        count += x
        return count
    return counter


counter = make_counter()


def global_loss(x):
    return sum(map(running_global, x))


def item_loss(x):
    return sum(map(running_item, x))


def array_loss(x):
    return sum(running_array(z) for z in x)


def nonlocal_loss(x):
    return sum(map(counter, x))


def local_list_loss(x):
    acc = [0.0]

    def step(z):
        acc[0] += z
        return acc[0]
    return sum(map(step, x))


# name -> (loss, argnums)
CASES = {
    "abs": (abs_loss, 0),
    "cbrt": (cbrt_loss, 0),
    "ident_tanh": (ident_tanh_loss, 0),
    "softplus": (softplus_loss, 0),
    "newton": (newton_loss, 0),
    "three": (three_loss, (0, 1, 2)),
    "closure": (closure_loss, (0, 1)),
    "state_global": (global_loss, 0),
    "state_item": (item_loss, 0),
    "state_array": (array_loss, 0),
    "state_nonlocal": (nonlocal_loss, 0),
    "state_local_list": (local_list_loss, 0),
}


# array programs (issue 5): their generated derivative and explain only; their kernels
# are lowered as the cases above are
def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def logreg_loss(w, X, y):
    p = sigmoid(X @ w)
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


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


def image_loss(img, K):
    # a padded, rolled image against a lower-triangular kernel: the shape primitives'
    # adjoints (issue 16) as they print, each under its "# Grad of:" line
    padded = np.pad(img, 1, mode="edge")
    shifted = np.roll(padded, 1, axis=0)
    band = np.tril(K) @ np.take(shifted, [0, 1, 2], axis=1)
    return np.sum(np.logaddexp(band, 0.0)) + np.sum(np.diagonal(K) ** 2)


def spectral_loss(A):
    """Tuple-valued primitives: eigh's two outputs unpacked, slogdet's second read."""
    w, V = np.linalg.eigh(A)
    sign, logdet = np.linalg.slogdet(A)
    return np.sum(w * V[0] ** 2) + logdet


def flow_loss(A, b, X):
    """Programs as people write them (issue 15): rows written in place, a solver loop
    with a tolerance and a guard, an early exit."""
    H = np.zeros(X.shape)
    for i, row in enumerate(X):
        H[i] = np.tanh(row * b)
    x = np.zeros(len(b))
    k = 0
    err = np.inf
    while err > 1e-8 and k < 50:
        x_new = np.tanh(A @ x + b)
        err = np.max(np.abs(x_new - x))
        x = x_new
        k += 1
    if np.sum(x) > 10.0:
        return np.sum(x)
    return np.sum(H ** 2) + np.sum(x ** 2)


ARRAY_CASES = {
    "logreg": (logreg_loss, 0),
    "mlp": (mlp_loss, (0, 1, 2)),
    "softmax": (softmax_loss, (0, 1)),
    "image": (image_loss, (0, 1)),
    "spectral": (spectral_loss, 0),
    "flow": (flow_loss, (0, 1)),
}


# forward over reverse (issue 14): the Hessian-vector product of a two-layer tanh MLP,
# tangents along the weights (`s2sad.jvp(s2sad.grad(loss, argnums), primals, tangents)`)
def mlp_tanh_loss(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)


HVP_CASES = {
    "mlp_hvp": (mlp_tanh_loss, (0, 1, 2)),
}


# higher order (issue 14): a second derivative of a scalar function (grad of a grad),
# and a loss that applies a derivative elementwise: nested duals in one kernel
def wave(z):
    return math.sin(z) * z**3


second_wave = s2sad.grad(wave)
dtanh = s2sad.grad(math.tanh)


def broadcast_grad_loss(x):
    return np.sum(s2sad.broadcast(dtanh, x))


CASES.update({"second_wave": (second_wave, 0), "broadcast_grad": (broadcast_grad_loss, 0)})


# rows as elements (issue 15): a function of a row's components over a (n, 3) array;
# the row parameter becomes one kernel parameter per component, the gradient assembled
# from the columns' partials
def row_energy(p):
    a, b, c = p
    return a ** 2 + b * np.sin(c) - p[-1]


def rows_loss(X):
    return sum(map(row_energy, X))


CASES["rows"] = (rows_loss, 0)


# reverse over reverse (issue 14): a loss of an array program's gradient, differentiated;
# its call of the gradient is one "derivative" statement whose adjoint is mlp_tanh_loss's
# forward over reverse (array_higher.derivative_vjp): a gradient-norm penalty
mlp_tanh_grad = s2sad.grad(mlp_tanh_loss, argnums=0)


def gradient_penalty_loss(W1, b1, W2, X, y):
    return mlp_tanh_loss(W1, b1, W2, X, y) + 0.1 * np.sum(mlp_tanh_grad(W1, b1, W2, X, y) ** 2)


ARRAY_CASES["gradient_penalty"] = (gradient_penalty_loss, (0, 1, 2))


# containers (issue 15): parameters in a dict passed whole to a layer helper, a list of
# layers indexed by the loop counter, and a string that picks a branch; pinned as
# s2sad.source and s2sad.explain of a grad object called with them once (the flattening,
# the fast path's reading of a call, the leaf plan)
def dense(p, x):
    return np.tanh(x @ p["W"] + p["b"])


def containers_loss(params, X, opts):
    h = dense(params["inp"], X)
    for i in range(len(params["hidden"])):
        h = np.tanh(h @ params["hidden"][i])
    if opts["penalty"] == "l2":
        return np.mean(h ** 2) + 0.01 * np.sum(params["inp"]["W"] ** 2)
    return np.mean(h ** 2)


def _containers_args():
    rng = np.random.default_rng(15)
    params = {"inp": {"W": rng.normal(size=(4, 3)), "b": rng.normal(size=3)},
              "hidden": [rng.normal(size=(3, 3)), rng.normal(size=(3, 3))]}
    return params, rng.normal(size=(5, 4)), {"penalty": "l2"}


CONTAINER_CASES = {"containers": (containers_loss, _containers_args)}


# fusion around reductions (issue 17): a layer normalisation written with numpy becomes
# one row-fused statement, row_layer_norm (one pass per row forward, one backward); its
# scale and shift stay in the kernel of the tanh after it
def layer_norm_loss(x, g, b, W):
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    v = np.mean(xc ** 2, axis=-1, keepdims=True)
    h = np.tanh(xc / np.sqrt(v + 1e-5) * g + b)
    return np.sum((h @ W) ** 2)


ARRAY_CASES["layer_norm"] = (layer_norm_loss, (0, 1, 2, 3))


# the bench's MLP's Hessian-vector product (issue 14): its kernel runs with its
# one-column matmul (hvp_columns), neither h nor its tangent formed
HVP_CASES["mlp_leaky_hvp"] = (mlp_loss, (0, 1, 2))


# hessian of an array program (issue 14): one sweep whose tangents carry a leading batch
# axis of K directions (passes/batched_sweep.py), the Rosenbrock function of the bench
def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


BATCHED_CASES = {"rosen_hessian": (rosen, 0)}


# hessian of a small fixed-shape program (issue 14): the program unrolled for a 5-vector
# into straight-line scalars, its second derivatives by sparse forward mode, one function
# with a Python entry (small_hessian.py): the Rosenbrock Hessian's three bands
SMALL_CASES = {"rosen_small": (rosen, ((5,),), 0)}
# what grad / value_and_grad run for a small fixed-shape array program (small_grad.py): a
# 10-vector, so that its sum takes numpy's eight running sums
SMALL_GRAD_CASES = {"rosen_small": (rosen, ((10,),), 0)}
# what s2sad.hvp runs for the bench's MLP (HVP_CASES' mlp_leaky_hvp): the product alone, no
# gradient computed that it does not read
PRODUCT_CASES = {"mlp_leaky_hvp": (mlp_loss, (0, 1, 2))}


# dense layers with their activations next to the products (gemm_epilogue, session 10):
# tanh and relu forward in the product's blocks, their adjoints with the biases' sums
def mlp3_loss(W1, b1, W2, b2, W3, X, y):
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    return np.mean((h2 @ W3 - y) ** 2)


ARRAY_CASES["mlp3"] = (mlp3_loss, (0, 1, 2, 3, 4))


# value_and_grad of an array program: the softmax's dense head joined with its adjoint,
# the loss's value after the reverse sweep from the rows' values (passes/xentvalues)
VALUE_CASES = {
    "softmax": (softmax_loss, (0, 1)),
}

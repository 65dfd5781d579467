"""The benchmark's cases, written once per system.

Every case is the gradient of a scalar loss `sum(f(x))` with respect to a float64
array. s2sad reads the source of the functions in this file, so they are plain
module-level definitions. The other systems' versions (JAX, torch, numba) are built
lazily by the `make_*` functions, so that a missing package only removes its column.
"""
import math

import numpy as np

import s2sad

# ---------------------------------------------------------------- scalar functions


def user(z):
    return math.tanh(z) * z / (1.0 + z * z)


def ident(z):
    return z


def ident_tanh(z):
    return ident(math.tanh(z))


def newton_sqrt(a):
    x = 1.0
    for i in range(10):
        x = 0.5 * (x + a / x)
    return x


# 16 coefficients: a degree-15 polynomial (alternating 1/(k+1)).
HORNER_C = tuple((-1.0) ** k / (k + 1.0) for k in range(16))


def horner(z):
    acc = 0.0
    for c in HORNER_C:
        acc = acc * z + c
    return acc


# ---------------------------------------------------------------- s2sad losses


def abs_loss(x):
    return np.sum(np.abs(x))


def cbrt_loss(x):
    return np.sum(np.cbrt(x))


def tanh_loss(x):
    return np.sum(np.tanh(x))


def user_loss(x):
    return np.sum(s2sad.broadcast(user, x))


def newton_loss(a):
    return sum(map(newton_sqrt, a))


def gt_loss(x):
    return np.sum(x > 0.1)


def ident_tanh_loss(x):
    return np.sum(s2sad.broadcast(ident_tanh, x))


def horner_loss(x):
    return np.sum(s2sad.broadcast(horner, x))


# ---------------------------------------------------------------- inputs, references

def make_input(key: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    if key == "newton":
        return np.abs(rng.standard_normal(n)) + 0.5
    if key == "horner":
        return rng.uniform(-1.0, 1.0, n)
    return rng.standard_normal(n)


def _newton_ref(a):
    x, dx = np.ones_like(a), np.zeros_like(a)
    for _ in range(10):
        x, dx = 0.5 * (x + a / x), 0.5 * (dx + (x - a * dx) / (x * x))
    return dx


def _horner_ref(z):
    acc, dacc = np.zeros_like(z), np.zeros_like(z)
    for c in HORNER_C:
        acc, dacc = acc * z + c, dacc * z + acc
    return dacc


def _user_ref(z):
    t = np.tanh(z)
    q = 1.0 + z * z
    return ((1.0 - t * t) * z + t) / q - 2.0 * z * z * t / (q * q)


# key -> (label, s2sad loss, analytic gradient)
CASES = {
    "abs": ("sum(abs(x))", abs_loss, np.sign),
    "cbrt": ("sum(cbrt(x))", cbrt_loss, lambda x: 1.0 / (3.0 * np.cbrt(x) ** 2)),
    "tanh": ("sum(tanh(x))", tanh_loss, lambda x: 1.0 - np.tanh(x) ** 2),
    "user": ("user function tanh(z)*z/(1+z*z)", user_loss, _user_ref),
    "newton": ("10-step Newton loop per element", newton_loss, _newton_ref),
    "gt": ("sum(x > 0.1)", gt_loss, np.zeros_like),
    "ident_tanh": ("ident(tanh(z)) via broadcast", ident_tanh_loss, lambda x: 1.0 - np.tanh(x) ** 2),
    "horner": ("16-term Horner polynomial", horner_loss, _horner_ref),
}


# ---------------------------------------------------------------- JAX

def make_jax():
    """{key: {system: callable(jax_array) -> result}} plus the `prepare` and `block` helpers."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def j_newton(a):
        x = jnp.ones_like(a)
        for _ in range(10):
            x = 0.5 * (x + a / x)
        return x

    def j_newton_fori(a):
        return jax.lax.fori_loop(0, 10, lambda i, x: 0.5 * (x + a / x), jnp.ones_like(a))

    def j_horner(z):
        acc = jnp.zeros_like(z)
        for c in HORNER_C:
            acc = acc * z + c
        return acc

    def j_ident(z):
        return z

    elementwise = {
        "abs": jnp.abs,
        "cbrt": jnp.cbrt,
        "tanh": jnp.tanh,
        "user": lambda z: jnp.tanh(z) * z / (1.0 + z * z),
        "newton": j_newton,
        "gt": lambda x: (x > 0.1).astype(x.dtype),
        "ident_tanh": lambda z: j_ident(jnp.tanh(z)),
        "horner": j_horner,
    }

    def grad_of(f):
        return jax.jit(jax.grad(lambda x: jnp.sum(f(x))))

    def jvp_of(f):
        # f is elementwise, so its Jacobian is diagonal: the jvp with a tangent of ones
        # is the gradient of sum(f(x)); the value is summed too (value and gradient).
        def vg(x):
            out, dot = jax.jvp(f, (x,), (jnp.ones_like(x),))
            return jnp.sum(out), dot
        return jax.jit(vg)

    def build():
        table = {k: {"jax jit(grad)": grad_of(f)} for k, f in elementwise.items()}
        table["newton"]["jax jit(grad) fori_loop"] = grad_of(j_newton_fori)
        table["newton"]["jax jit(jvp)"] = jvp_of(j_newton)
        table["newton"]["jax jit(jvp) fori_loop"] = jvp_of(j_newton_fori)
        return table

    def block(r):
        return jax.block_until_ready(r)

    return {"build": build, "prepare": jnp.asarray, "block": block, "version": jax.__version__,
            "grad_of": grad_of, "elementwise": elementwise}


# ---------------------------------------------------------------- torch

def make_torch():
    import torch

    if os.environ.get("S2SAD_BENCH_ONE_THREAD"):     # bench_env.one_thread: the pinned table
        torch.set_num_threads(1)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass

    def t_cbrt(x):
        return torch.sign(x) * torch.abs(x).pow(1.0 / 3.0)

    def t_newton(a):
        x = torch.ones_like(a)
        for _ in range(10):
            x = 0.5 * (x + a / x)
        return x

    def t_horner(z):
        acc = torch.zeros_like(z)
        for c in HORNER_C:
            acc = acc * z + c
        return acc

    def t_ident(z):
        return z

    elementwise = {
        "abs": torch.abs,
        "cbrt": t_cbrt,
        "tanh": torch.tanh,
        "user": lambda z: torch.tanh(z) * z / (1.0 + z * z),
        "newton": t_newton,
        "gt": lambda x: (x > 0.1).to(x.dtype),
        "ident_tanh": lambda z: t_ident(torch.tanh(z)),
        "horner": t_horner,
    }

    def grad_of(f):
        def g(x):
            xt = torch.from_numpy(x).requires_grad_(True)
            loss = torch.sum(f(xt))
            if not loss.requires_grad:   # sum(x > 0.1): no graph; the gradient is zero
                return torch.zeros_like(xt).numpy()
            (gx,) = torch.autograd.grad(loss, xt)
            return gx.numpy()
        return g

    return {k: {"torch eager": grad_of(f)} for k, f in elementwise.items()}, torch.__version__


# ---------------------------------------------------------------- numba

def make_numba():
    """Hand-written fused loops: value and gradient in one pass, as a user would write them."""
    import numba
    from numba import njit

    @njit(nogil=True)
    def nb_abs(x, g):
        s = 0.0
        for i in range(x.shape[0]):
            v = x[i]
            s += abs(v)
            g[i] = 1.0 if v > 0.0 else (-1.0 if v < 0.0 else 0.0)
        return s

    @njit(nogil=True)
    def nb_cbrt(x, g):
        s = 0.0
        for i in range(x.shape[0]):
            c = np.cbrt(x[i])
            s += c
            g[i] = 1.0 / (3.0 * c * c)
        return s

    @njit(nogil=True)
    def nb_tanh(x, g):
        s = 0.0
        for i in range(x.shape[0]):
            t = math.tanh(x[i])
            s += t
            g[i] = 1.0 - t * t
        return s

    @njit(nogil=True)
    def nb_user(x, g):
        s = 0.0
        for i in range(x.shape[0]):
            z = x[i]
            t = math.tanh(z)
            q = 1.0 + z * z
            s += t * z / q
            g[i] = ((1.0 - t * t) * z + t) / q - 2.0 * z * z * t / (q * q)
        return s

    @njit(nogil=True)
    def nb_newton(a, g):
        s = 0.0
        for i in range(a.shape[0]):
            ai = a[i]
            x = 1.0
            dx = 0.0
            for _ in range(10):
                x, dx = 0.5 * (x + ai / x), 0.5 * (dx + (x - ai * dx) / (x * x))
            s += x
            g[i] = dx
        return s

    @njit(nogil=True)
    def nb_gt(x, g):
        s = 0.0
        for i in range(x.shape[0]):
            s += 1.0 if x[i] > 0.1 else 0.0
            g[i] = 0.0
        return s

    @njit(nogil=True)
    def nb_horner(x, g):
        s = 0.0
        for i in range(x.shape[0]):
            z = x[i]
            acc = 0.0
            dacc = 0.0
            for c in HORNER_C:
                dacc = dacc * z + acc
                acc = acc * z + c
            s += acc
            g[i] = dacc
        return s

    loops = {"abs": nb_abs, "cbrt": nb_cbrt, "tanh": nb_tanh, "user": nb_user, "newton": nb_newton,
             "gt": nb_gt, "ident_tanh": nb_tanh, "horner": nb_horner}

    def wrap(loop):
        def vg(x):
            g = np.empty_like(x)
            return loop(x, g), g
        return vg

    return {k: {"numba loop": wrap(f)} for k, f in loops.items()}, numba.__version__

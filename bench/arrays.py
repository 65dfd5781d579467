"""Array programs for the benchmark (issue 5, "Speed"): the gradients of a logistic
regression and of a two-layer MLP with respect to all their weights.

Systems: s2sad `grad`, a hand-written numpy gradient (the floor; checked against s2sad's
gradient here, and the run fails loudly if they disagree beyond 1e-9 relative), JAX
`jit(grad)` and torch eager, in the run's environment (run.py sets it up before any import).

Rows go into results.json with the main table's row format; the case names are
ARRAY_LABEL's values below.
"""
from __future__ import annotations

import numpy as np

import s2sad
from report import fmt_us

HAND = "numpy hand-written"
S2 = "s2sad grad"
JG = "jax jit(grad)"
TO = "torch eager"
BLAS = "numpy matmuls only"
ARRAY_SYSTEMS = [S2, HAND, JG, TO, BLAS]
BLAS_WHOLE = 0.9   # numpy's BLAS is "the whole cost" where the matmuls alone take this share of the floor
ARRAY_SIZES = (10_000, 100_000)
D = 32          # features
H = 64          # MLP hidden units
TOL = 1e-9      # hand-written vs s2sad, relative to the gradient's largest entry
CLASSES = 10    # softmax classes
ARRAY_LABEL = {"logreg": "logistic regression, grad w.r.t. w (d=32)",
               "mlp": "2-layer MLP, leaky-ReLU broadcast, grad w.r.t. W1, b1, W2 (d=32, hidden 64)",
               "softmax": "softmax cross-entropy, 10 classes, grad w.r.t. W, b (d=32; not an issue target)"}
TARGETED = ("logreg", "mlp")      # the programs issue 5's speed targets name


class GradientMismatch(AssertionError):
    pass


# ---------------------------------------------------------------- the losses, for s2sad

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


# ---------------------------------------------------------------- hand-written numpy

def logreg_hand(w, X, y):
    """d/dw of the mean log-loss: X.T @ (sigmoid(X @ w) - y) / n."""
    z = X @ w
    np.negative(z, out=z)
    np.exp(z, out=z)
    z += 1.0
    np.reciprocal(z, out=z)          # p
    z -= y
    return X.T @ z * (1.0 / X.shape[0])


def mlp_hand(W1, b1, W2, X, y):
    """The MLP's gradient by hand. leaky-ReLU(a) = max(a, 0.01 a), its slope
    0.505 + 0.495 sign(a) (1 or 0.01; at a == 0 the 0.505 is never hit by these data);
    with one output, r @ W2.T is an outer product, done as a broadcast multiply."""
    a = X @ W1
    a += b1
    h = a * 0.01
    np.maximum(h, a, out=h)
    r = h @ W2
    r -= y
    r *= 2.0 / r.size                # d loss / d out
    gW2 = h.T @ r
    dh = r * W2.T if W2.shape[1] == 1 else r @ W2.T
    s = np.sign(a)
    s *= 0.495
    s += 0.505
    dh *= s                          # d loss / d a
    gW1 = X.T @ dh
    gb1 = dh.sum(axis=0, keepdims=True)
    return gW1, gb1, gW2


def softmax_hand(W, b, X, Y):
    """d/dW, d/db of the mean cross-entropy (Y one-hot): with p = softmax(z),
    d loss / d z = (p - Y) / n."""
    z = X @ W
    z += b
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=1, keepdims=True)
    z -= Y
    z *= 1.0 / X.shape[0]
    return X.T @ z, z.sum(axis=0, keepdims=True)


def blas_only(key, args):
    """The matmuls of the hand-written gradient alone, on inputs of the right shapes made
    beforehand: how much of the floor is numpy's BLAS."""
    if key == "logreg":
        w, X, y = args
        v = y - 0.5
        return lambda: (X @ w, X.T @ v)
    if key == "softmax":
        W, b, X, Y = args
        return lambda: (X @ W, X.T @ Y)
    W1, b1, W2, X, y = args
    h = np.maximum(X @ W1, 0.0)
    r = h @ W2
    return lambda: (X @ W1, h @ W2, h.T @ r, X.T @ h)


# ---------------------------------------------------------------- data

def make_args(key, n, seed=0):
    rng = np.random.default_rng(seed + n)
    X = rng.normal(size=(n, D))
    if key == "logreg":
        w = rng.normal(size=D) * 0.2
        y = (rng.random(n) < sigmoid(X @ w + 0.3 * rng.normal(size=n))).astype(float)
        return (w, X, y), 1
    if key == "softmax":
        W = rng.normal(size=(D, CLASSES)) * 0.2
        b = rng.normal(size=(1, CLASSES)) * 0.1
        Y = np.eye(CLASSES)[rng.integers(0, CLASSES, n)]
        return (W, b, X, Y), 2
    W1 = rng.normal(size=(D, H)) / np.sqrt(D)
    b1 = rng.normal(size=(1, H)) * 0.1           # a bias row
    W2 = rng.normal(size=(H, 1)) / np.sqrt(H)
    y = rng.normal(size=(n, 1))
    return (W1, b1, W2, X, y), 3


# ---------------------------------------------------------------- JAX and torch

def make_jax_table():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def j_logreg(w, X, y):
        p = 1.0 / (1.0 + jnp.exp(-(X @ w)))
        return -jnp.mean(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))

    def j_mlp(W1, b1, W2, X, y):
        a = X @ W1 + b1
        h = jnp.where(a > 0, a, 0.01 * a)
        return jnp.mean((h @ W2 - y) ** 2)

    def j_softmax(W, b, X, Y):
        return -jnp.mean(jnp.sum(Y * jax.nn.log_softmax(X @ W + b, axis=1), axis=1))

    return ({"logreg": jax.jit(jax.grad(j_logreg, argnums=0)),
             "mlp": jax.jit(jax.grad(j_mlp, argnums=(0, 1, 2))),
             "softmax": jax.jit(jax.grad(j_softmax, argnums=(0, 1)))},
            lambda args: tuple(jnp.asarray(a) for a in args), jax.block_until_ready)


def make_torch_table():
    import torch
    import torch.nn.functional as F

    def t_logreg(w, X, y):
        p = torch.sigmoid(X @ w)
        return -torch.mean(y * torch.log(p) + (1.0 - y) * torch.log(1.0 - p))

    def t_mlp(W1, b1, W2, X, y):
        h = F.leaky_relu(X @ W1 + b1, 0.01)
        return torch.mean((h @ W2 - y) ** 2)

    def wrap(f, k):
        def call(args):
            ws = [torch.from_numpy(a).requires_grad_(True) for a in args[:k]]
            data = [torch.from_numpy(a) for a in args[k:]]
            gs = torch.autograd.grad(f(*ws, *data), ws)
            return tuple(g.numpy() for g in gs)
        return call

    def t_softmax(W, b, X, Y):
        return -torch.mean(torch.sum(Y * torch.log_softmax(X @ W + b, dim=1), dim=1))

    return {"logreg": lambda args: wrap(t_logreg, 1)(args)[0], "mlp": wrap(t_mlp, 3), "softmax": wrap(t_softmax, 2)}


# ---------------------------------------------------------------- the block

def _as_tuple(g):
    return tuple(np.asarray(a) for a in g) if isinstance(g, (tuple, list)) else (np.asarray(g),)


def rel_err(got, ref) -> float:
    """max |got - ref| / max |ref| over all the gradient's arrays, each array on its own."""
    got, ref = _as_tuple(got), _as_tuple(ref)
    if len(got) != len(ref):
        return float("inf")
    worst = 0.0
    for a, b in zip(got, ref):
        a = np.asarray(a, dtype=np.float64)
        if a.shape != b.shape:
            return float("inf")
        worst = max(worst, float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)))
    return worst


def run_arrays(systems, rows, errors, quick, measure_block, timing_row, log):
    """Time every array program at every size; rows/errors as in run.py's main table.
    Raises GradientMismatch if the hand-written gradient and s2sad's disagree."""
    jax_table = prepare = block = None
    if "jax" in systems:
        try:
            jax_table, prepare, block = make_jax_table()
        except Exception as e:  # noqa: BLE001
            log(f"  ! JAX array programs unavailable: {type(e).__name__}: {e}")
    torch_table = None
    if "torch" in systems:
        try:
            torch_table = make_torch_table()
        except Exception as e:  # noqa: BLE001
            log(f"  ! torch array programs unavailable: {type(e).__name__}: {e}")
    losses = {"logreg": (logreg_loss, logreg_hand), "mlp": (mlp_loss, mlp_hand),
              "softmax": (softmax_loss, softmax_hand)}
    for key, (loss, hand) in losses.items():
        label = ARRAY_LABEL[key]
        for n in ARRAY_SIZES:
            args, k = make_args(key, n)
            g = s2sad.grad(loss, argnums=0 if k == 1 else tuple(range(k)))
            ref = hand(*args)
            got = g(*args)
            err = rel_err(got, ref)
            errors.append({"case": label, "n": n, "system": S2, "max_rel_err": err, "vs": HAND})
            if not err <= TOL:
                raise GradientMismatch(f"{label} at n={n:,}: s2sad's gradient and the hand-written numpy "
                                       f"gradient differ by {err:.3e} (relative; limit {TOL:g})")
            fns = {S2: (lambda g=g, args=args: g(*args)), HAND: (lambda hand=hand, args=args: hand(*args)),
                   BLAS: blas_only(key, args)}

            def add(name, call):
                try:
                    e = rel_err(call(), ref)
                    errors.append({"case": label, "n": n, "system": name, "max_rel_err": e, "vs": HAND})
                    fns[name] = call
                except Exception as ex:  # noqa: BLE001
                    msg = f"{type(ex).__name__}: {ex}".splitlines()[0][:300]
                    errors.append({"case": label, "n": n, "system": name, "error": msg})
                    log(f"  ! {name} failed on {label} n={n}: {msg}")

            if jax_table is not None:
                jargs = prepare(args)
                add(JG, lambda f=jax_table[key], jargs=jargs: block(f(*jargs)))
            if torch_table is not None:
                add(TO, lambda f=torch_table[key], args=args: f(args))
            small = n <= ARRAY_SIZES[0]
            res = measure_block(fns, repeats=(7 if quick else 31) if small else (5 if quick else 15),
                                budget_s=(0.1 if quick else 0.6) if small else (0.2 if quick else 1.0),
                                batch_s=2e-3 if small else 1e-9)
            line = []
            for name in ARRAY_SYSTEMS:
                if name in res:
                    rows.append(timing_row(label, n, name, res[name]))
                    line.append(f"{name}={rows[-1]['median_us']:.0f}")
            log(f"{key:8s} n={n:>9,d}  " + "  ".join(line))


# ---------------------------------------------------------------- report

def markdown(rows, errors) -> list:
    idx = {(r["case"], r["n"], r["system"]): r["median_us"] for r in rows if r.get("median_us") is not None}
    present = [s for s in ARRAY_SYSTEMS if any(r["system"] == s and r["case"] in ARRAY_LABEL.values() for r in rows)]
    L = ["## Array programs (issue 5)", ""]
    if not any(r["case"] in ARRAY_LABEL.values() for r in rows):
        L += ["Not measured.", ""]
        return L
    L.append(f"The gradient of a logistic regression loss (`X @ w`, sigmoid, mean log-loss; w.r.t. w) and of a "
             f"two-layer MLP (`X @ W1 + b1` with a bias row, leaky-ReLU applied by `s2sad.broadcast` of a scalar "
             f"function, `@ W2`, mean squared error; w.r.t. W1, b1 and W2), and, outside the issue's targets, of a "
             f"10-class softmax cross-entropy (`X @ W + b`, max-shifted log-softmax by row reductions; w.r.t. W "
             f"and b), float64, in the environment stated at the top of the file (on one thread: every "
             f"system's, numpy's BLAS included), n samples × d = {D} features, hidden {H}, one output (the MLP). "
             f"The floor is a hand-written numpy gradient (forward pass, then the adjoints by hand, in place where "
             f"it can). JAX gets device arrays made beforehand and is timed to `block_until_ready`; torch eager "
             f"wraps the numpy arrays with `from_numpy` and calls `torch.autograd.grad` each time. Each cell is the "
             f"median per-call time over interleaved batches, and in brackets its multiple of the hand-written "
             f"numpy gradient. `numpy matmuls only` times just the hand-written gradient's matrix products, on "
             f"inputs made beforehand: the part of the floor that is numpy's BLAS.")
    L.append("")
    L.append("| program | n | " + " | ".join(present) + " |")
    L.append("|---|---:|" + "---:|" * len(present))
    for key, label in ARRAY_LABEL.items():
        for n in ARRAY_SIZES:
            h = idx.get((label, n, HAND))
            cells = []
            for s in present:
                v = idx.get((label, n, s))
                cells.append("—" if v is None else f"{fmt_us(v)} ({v / h:.2f}x)" if h else fmt_us(v))
            L.append(f"| {label} | {n:,} | " + " | ".join(cells) + " |")
    L.append("")
    mine = [e for e in errors if e["case"] in ARRAY_LABEL.values()]
    errs = [e["max_rel_err"] for e in mine if "max_rel_err" in e]
    if errs:
        per = {}
        for e in mine:
            if "max_rel_err" in e:
                per[e["system"]] = max(per.get(e["system"], 0.0), e["max_rel_err"])
        L.append("Every gradient was checked against the hand-written one (largest |difference| over the largest "
                 "|entry|, per weight array): " + ", ".join(f"{s} {v:.1e}" for s, v in per.items())
                 + f"; s2sad's must be within {TOL:g} or the run stops.")
    for e in mine:
        if "error" in e:
            L.append(f"- **failed**: {e['system']} on {e['case']} at n={e['n']:,}: {e['error']}")
    L.append("")
    L.append("Targets (issue 5, \"Speed\"):")
    L.append("")
    # 1. at most JAX where numpy's BLAS is not the whole cost
    parts, ok, judged, any_j = [], True, 0, False
    for key, label in ((k, ARRAY_LABEL[k]) for k in TARGETED):
        for n in ARRAY_SIZES:
            s, j = idx.get((label, n, S2)), idx.get((label, n, JG))
            h, b = idx.get((label, n, HAND)), idx.get((label, n, BLAS))
            if s is None or j is None:
                continue
            any_j = True
            share = b / h if (b and h) else None
            exempt = share is not None and share >= BLAS_WHOLE
            good = s <= j
            if not exempt:
                judged += 1
                ok &= good
            parts.append(f"{key} n={n:,}: {fmt_us(s)} vs {fmt_us(j)}, {s / j:.3f}x"
                         + (f", BLAS {share:.0%} of the floor" if share is not None else "")
                         + (" (BLAS-bound: not judged)" if exempt else "" if good else " MISSED"))
    if any_j:
        L.append(f"- s2sad at most JAX jit(grad)'s time where numpy's BLAS is not the whole cost (taken as: the "
                 f"matmuls alone under {BLAS_WHOLE:.0%} of the hand-written gradient's time; {judged} row(s) judged): "
                 f"{'**met**' if ok and judged else '**not evaluated**' if not judged else '**missed**'}. "
                 "s2sad vs JAX: " + "; ".join(parts) + ".")
    else:
        L.append("- s2sad at most JAX jit(grad)'s time: **not evaluated** (JAX missing).")
    # 2. at most 1.2x the hand-written numpy gradient
    parts, ok = [], True
    for key, label in ((k, ARRAY_LABEL[k]) for k in TARGETED):
        for n in ARRAY_SIZES:
            s, h = idx.get((label, n, S2)), idx.get((label, n, HAND))
            if s is None or h is None:
                ok = False
                continue
            m = s / h
            good = m <= 1.2
            ok &= good
            parts.append(f"{key} n={n:,}: {m:.3f}x{'' if good else ' MISSED'}")
    L.append(f"- s2sad at most 1.2x the hand-written numpy gradient everywhere: {'**met**' if ok else '**missed**'} ("
             + "; ".join(parts) + ").")
    L.append("")
    return L

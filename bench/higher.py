"""Higher order for the benchmark (issue 14): derivatives of derivatives against JAX jit.

Cases:
- the diagonal second derivative of the user function row, `grad(lambda x:
  np.sum(broadcast(grad(user), x)))` (one kernel with nested duals), next to the
  first-derivative kernel `grad(sum(broadcast(user, x)))` it is measured against
  (target: at most 2x) and JAX `jit(grad(sum(vmap(grad(user)))))`;
- `grad` of the Rosenbrock function of a 10-vector (the unrolled plan, small_grad.py),
  against JAX `jit(grad)`, per call after the first and the first call;
- `hessian` of the Rosenbrock function of a 10-vector, and `jacfwd` / `jacrev` of a
  10-to-10 elementwise map: per call after the first, and the first call (target: under
  100 ms), against JAX `jit(hessian)`, `jit(jacfwd)`, `jit(jacrev)`.
A composition s2sad refuses today is recorded as an error row with its message, never
timed. Every s2sad result is checked against an analytic value first.
"""
from __future__ import annotations

import math
import time

import numpy as np

import s2sad
from cases import user

S2 = "s2sad"
S2_FIRST = "s2sad first derivative"
JX = "jax jit"
DIAG_SIZES = (100_000, 1_000_000)
LABELS = {"diag": "diagonal second derivative, user function: grad(sum(broadcast(grad(f), x)))",
          "grad": "grad of Rosenbrock, 10-vector",
          "rosen": "hessian of Rosenbrock, 10-vector",
          "jacfwd": "jacfwd of a 10-to-10 elementwise map",
          "jacrev": "jacrev of a 10-to-10 elementwise map"}

dgrad_user = s2sad.grad(user)


def diag_loss(x):
    return np.sum(s2sad.broadcast(dgrad_user, x))


def first_loss(x):
    return np.sum(s2sad.broadcast(user, x))


def user_second(x):
    """d^2/dz^2 of tanh(z) z / (1 + z^2), by hand."""
    t = np.tanh(x)
    s = 1 - t * t
    q = 1 + x * x
    g = t * x                                   # numerator
    dg = s * x + t
    d2g = -2 * t * s * x + 2 * s
    return d2g / q - 2 * dg * (2 * x) / q**2 + g * (8 * x * x / q**3 - 2 / q**2)


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_gradient(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def rosen_hessian(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        h[i + 1, i + 1] += 200.0
        h[i, i + 1] = h[i + 1, i] = -400.0 * x[i]
    return h


def emap(x):
    return np.tanh(x) * x


def emap_jacobian(x):
    t = np.tanh(x)
    return np.diag((1 - t * t) * x + t)


def make_jax():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)

    def j_user(z):
        return jnp.tanh(z) * z / (1.0 + z * z)

    def j_rosen(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    def j_emap(x):
        return jnp.tanh(x) * x

    table = {"diag": jax.jit(jax.grad(lambda x: jnp.sum(jax.vmap(jax.grad(j_user))(x)))),
             "grad": jax.jit(jax.grad(j_rosen)), "rosen": jax.jit(jax.hessian(j_rosen)),
             "jacfwd": jax.jit(jax.jacfwd(j_emap)), "jacrev": jax.jit(jax.jacrev(j_emap))}
    return table, jnp.asarray, lambda r: r.block_until_ready()


def _first_call_ms(make, x) -> float:
    t0 = time.perf_counter()
    make()(x)
    return (time.perf_counter() - t0) * 1e3


def run_higher(systems, rows, errors, quick, measure_block, timing_row, log):
    jax_table = prepare = block = None
    if "jax" in systems:
        try:
            jax_table, prepare, block = make_jax()
        except Exception as e:  # noqa: BLE001
            log(f"  ! JAX higher-order cases unavailable: {type(e).__name__}: {e}")
    budget = dict(repeats=5 if quick else 30, budget_s=0.3 if quick else 2.0, batch_s=0.02 if quick else 0.1)
    rng = np.random.default_rng(14)
    for n in DIAG_SIZES[:1] if quick else DIAG_SIZES:
        x = rng.uniform(-2.0, 2.0, n)
        d2, d1 = s2sad.grad(diag_loss), s2sad.grad(first_loss)
        err = float(np.max(np.abs(d2(x) - user_second(x))) / np.max(np.abs(user_second(x))))
        errors.append({"case": LABELS["diag"], "n": n, "system": S2, "max_rel_err": err, "vs": "analytic"})
        fns = {S2: lambda: d2(x), S2_FIRST: lambda: d1(x)}
        if jax_table:
            xj, fj = prepare(x), jax_table["diag"]
            errors.append({"case": LABELS["diag"], "n": n, "system": JX, "vs": "analytic",
                           "max_rel_err": float(np.max(np.abs(np.asarray(fj(xj)) - user_second(x)))
                                                / np.max(np.abs(user_second(x))))})
            fns[JX] = lambda: block(fj(xj))
        measured = measure_block(fns, **budget)
        for name in fns:
            rows.append(timing_row(LABELS["diag"], n, name, measured[name]))
    x10 = np.linspace(-1.0, 1.3, 10)
    small = {"grad": (lambda: s2sad.grad(rosen), rosen_gradient),
             "rosen": (lambda: s2sad.hessian(rosen), rosen_hessian),
             "jacfwd": (lambda: s2sad.jacfwd(emap), emap_jacobian),
             "jacrev": (lambda: s2sad.jacrev(emap), emap_jacobian)}
    for key, (make, want) in small.items():
        label = LABELS[key]
        try:
            first_ms = _first_call_ms(make, x10)
            f = make()
            err = float(np.max(np.abs(f(x10) - want(x10))) / np.max(np.abs(want(x10))))
        except s2sad.S2SADError as e:
            msg = f"refused: {type(e).__name__}: {e.message}"[:300]
            errors.append({"case": label, "n": 10, "system": S2, "error": msg})
            log(f"  ! s2sad {label}: {msg}")
            f = None
        else:
            errors.append({"case": label, "n": 10, "system": S2, "max_rel_err": err, "vs": "analytic"})
            rows.append({"case": label + ": first call", "n": 10, "system": S2, "median_us": first_ms * 1e3,
                         "min_us": first_ms * 1e3})
        fns = {S2: (lambda f=f: f(x10))} if f is not None else {}
        if jax_table:
            xj, fj = prepare(x10), jax_table[key]
            t0 = time.perf_counter()
            block(fj(xj))
            rows.append({"case": label + ": first call", "n": 10, "system": JX,
                         "median_us": (time.perf_counter() - t0) * 1e6, "min_us": (time.perf_counter() - t0) * 1e6})
            fns[JX] = lambda fj=fj, xj=xj: block(fj(xj))
        if fns:
            measured = measure_block(fns, **budget)
            for name in fns:
                rows.append(timing_row(label, 10, name, measured[name]))


def _ours(r) -> bool:
    return any(r["case"].startswith(label) for label in LABELS.values())


def markdown(rows, errors) -> list[str]:
    rows, errors = [r for r in rows if _ours(r)], [e for e in errors if _ours(e)]
    out = ["## Higher order", "", "| case | n | system | median | min |", "|---|---:|---|---:|---:|"]
    for r in rows:
        out.append(f"| {r['case']} | {r['n']:,} | {r['system']} | {r['median_us']:.1f} us | {r['min_us']:.1f} us |")
    ratio = _ratio(rows)
    if ratio:
        out += ["", "second / first derivative kernel (target <= 2x): "
                + ", ".join(f"n={n:,}: {v:.2f}x" for n, v in ratio)]
    for e in errors:
        if "error" in e:
            out.append(f"- {e['case']} ({e['system']}): {e['error']}")
        else:
            out.append(f"- {e['case']} n={e['n']:,} ({e['system']}): max rel err {e['max_rel_err']:.1e} vs {e['vs']}")
    return out


def _ratio(rows) -> list:
    by = {(r["n"], r["system"]): r["median_us"] for r in rows if r["case"] == LABELS["diag"]}
    return [(n, by[(n, S2)] / by[(n, S2_FIRST)]) for n in sorted({k[0] for k in by})
            if (n, S2) in by and (n, S2_FIRST) in by and math.isfinite(by[(n, S2_FIRST)])]

"""Higher order for array programs (issue 14): the Hessian-vector product of the bench's
two-layer MLP (arrays.mlp_loss: `X @ W1 + b1`, leaky-ReLU by s2sad.broadcast, `@ W2`,
mean squared error) w.r.t. W1, b1 and W2, along a random direction, at n = 10,000.

Systems: s2sad `jvp(grad(loss, argnums=(0, 1, 2)), (W1, b1, W2, X, y), (V1, Vb, V2, 0, 0))`
(forward over reverse: the generated adjoint differentiated in forward mode) and JAX
`jit` of the same composition (`jvp` of `grad` w.r.t. the weights, the data closed over
as arguments), one thread each, as run.py sets up. s2sad's product is checked against
central differences of s2sad.grad along the direction (the run fails loudly if they
disagree beyond HVP_TOL), and JAX's against s2sad's.
"""
from __future__ import annotations

import numpy as np

import s2sad
from arrays import GradientMismatch, make_args, mlp_loss, rel_err

S2_HVP = "s2sad jvp(grad)"
JAX_HVP = "jax jit(jvp(grad))"
HVP_SYSTEMS = [S2_HVP, JAX_HVP]
HVP_LABEL = "MLP hvp (2-layer MLP of the array rows, jvp of grad w.r.t. W1, b1, W2)"
HVP_N = 10_000
HVP_TOL = 1e-6     # vs central differences of the gradient (h = 1e-6), relative to the largest entry


def _problem(n):
    args, _ = make_args("mlp", n)
    rng = np.random.default_rng(n + 1)
    direction = tuple(rng.normal(size=a.shape) for a in args[:3])
    return args, direction + (np.zeros_like(args[3]), np.zeros_like(args[4]))


def _fd_of_grad(g, args, tans, h=1e-6):
    plus = g(*[a + h * t for a, t in zip(args, tans)])
    minus = g(*[a - h * t for a, t in zip(args, tans)])
    return tuple((p - m) / (2 * h) for p, m in zip(plus, minus))


def make_jax_hvp():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def j_mlp(W1, b1, W2, X, y):
        a = X @ W1 + b1
        h = jnp.where(a > 0, a, 0.01 * a)
        return jnp.mean((h @ W2 - y) ** 2)

    g = jax.grad(j_mlp, argnums=(0, 1, 2))

    @jax.jit
    def hvp(W1, b1, W2, X, y, V1, Vb, V2):
        return jax.jvp(lambda a, b, c: g(a, b, c, X, y), (W1, b1, W2), (V1, Vb, V2))[1]

    return hvp, (lambda args: tuple(jnp.asarray(a) for a in args)), jax.block_until_ready


def run_hvp(systems, rows, errors, quick, measure_block, timing_row, log):
    """Time the MLP's Hessian-vector product; rows/errors as in run.py's main table."""
    args, tans = _problem(HVP_N)
    grad = s2sad.grad(mlp_loss, argnums=(0, 1, 2))

    def s2_call():
        return s2sad.jvp(grad, args, tans)[1]

    ref = _fd_of_grad(grad, args, tans)
    err = rel_err(s2_call(), ref)
    errors.append({"case": HVP_LABEL, "n": HVP_N, "system": S2_HVP, "max_rel_err": err,
                   "vs": "central differences of s2sad.grad"})
    if not err <= HVP_TOL:
        raise GradientMismatch(f"{HVP_LABEL}: s2sad's product and central differences of its gradient differ by "
                               f"{err:.3e} (relative; limit {HVP_TOL:g})")
    fns = {S2_HVP: s2_call}
    if "jax" in systems:
        try:
            hvp, prepare, block = make_jax_hvp()
            jargs = prepare(args + tans[:3])
            call = lambda: block(hvp(*jargs))   # noqa: E731
            e = rel_err(call(), s2_call())
            errors.append({"case": HVP_LABEL, "n": HVP_N, "system": JAX_HVP, "max_rel_err": e, "vs": S2_HVP})
            fns[JAX_HVP] = call
        except Exception as ex:  # noqa: BLE001
            msg = f"{type(ex).__name__}: {ex}".splitlines()[0][:300]
            errors.append({"case": HVP_LABEL, "n": HVP_N, "system": JAX_HVP, "error": msg})
            log(f"  ! {JAX_HVP} failed: {msg}")
    res = measure_block(fns, repeats=7 if quick else 31, budget_s=0.2 if quick else 1.0, batch_s=1e-9)
    line = []
    for name in HVP_SYSTEMS:
        if name in res:
            rows.append(timing_row(HVP_LABEL, HVP_N, name, res[name]))
            line.append(f"{name}={rows[-1]['median_us']:.0f} us")
    log(f"MLP hvp n={HVP_N:,d}  " + "  ".join(line))


def markdown(rows, errors) -> list:
    got = {r["system"]: r for r in rows if r["case"] == HVP_LABEL and r.get("median_us") is not None}
    L = ["## Higher order: the MLP's Hessian-vector product (issue 14)", ""]
    if not got:
        return L + ["Not measured.", ""]
    L.append(f"`s2sad.jvp(s2sad.grad(mlp_loss, argnums=(0, 1, 2)), (W1, b1, W2, X, y), (V1, Vb, V2, 0, 0))`: "
             f"forward mode over the generated adjoint program, against JAX `jit(jvp(grad))` of the same loss, "
             f"float64, one thread, n = {HVP_N:,}. s2sad's product is checked against central differences of its "
             f"gradient along the direction.")
    L += ["", "| system | median (us) | min (us) |", "|---|---:|---:|"]
    for name in HVP_SYSTEMS:
        if name in got:
            L.append(f"| {name} | {got[name]['median_us']:.0f} | {got[name]['min_us']:.0f} |")
    if S2_HVP in got and JAX_HVP in got:
        ratio = got[S2_HVP]["median_us"] / got[JAX_HVP]["median_us"]
        met = "met" if ratio <= 1.0 else "not met"
        L.append("")
        L.append(f"Target (at most JAX's `jit(jvp(grad))`): {met}, s2sad / JAX = {ratio:.2f}.")
    for e in errors:
        if e.get("case") == HVP_LABEL and "error" in e:
            L.append(f"- {e['system']}: {e['error']}")
    return L + [""]

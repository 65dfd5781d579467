"""Higher order for array programs (issue 14): the Hessian-vector product of the bench's
two-layer MLP (arrays.mlp_loss: `X @ W1 + b1`, leaky-ReLU by s2sad.broadcast, `@ W2`,
mean squared error) w.r.t. W1, b1 and W2, along a random direction, at n = 10,000.

Systems: s2sad `jvp(grad(loss, argnums=(0, 1, 2)), (W1, b1, W2, X, y), (V1, Vb, V2, 0, 0))`
(forward over reverse: the generated adjoint differentiated in forward mode; the
gradient and the product returned), s2sad `hvp(loss, primals, tangents, argnums=(0, 1,
2))` (the product alone: no gradient the product does not read is computed), and JAX
`jit` of the same composition (`jvp` of `grad` w.r.t. the weights, the data closed over
as arguments) returning the product alone and returning both, in the environment run.py
sets up. The target is judged product-only against product-only (s2sad.hvp vs JAX's
hvp); jvp(grad) is compared with JAX returning both. s2sad's product is checked against a
hand-written numpy product (`mlp_hvp_hand`; the run fails loudly if they disagree beyond
HVP_TOL), and JAX's against s2sad's. (Central differences of the gradient are no check
here: at n = 10,000 some of the 640,000 pre-activations lie within a step of
leaky-ReLU's kink.)
"""
from __future__ import annotations

import numpy as np

import s2sad
from arrays import GradientMismatch, make_args, mlp_loss, rel_err

S2_HVP = "s2sad jvp(grad)"
S2_PRODUCT = "s2sad hvp (product only)"
JAX_HVP = "jax jit(jvp(grad))"
JAX_BOTH = "jax jit(jvp(grad)), gradient and product returned"
HVP_SYSTEMS = [S2_PRODUCT, S2_HVP, JAX_HVP, JAX_BOTH]
HVP_LABEL = "MLP hvp (2-layer MLP of the array rows, jvp of grad w.r.t. W1, b1, W2)"
HVP_N = 10_000
HVP_TOL = 1e-9     # vs the hand-written product, relative to the largest entry


def _problem(n):
    args, _ = make_args("mlp", n)
    rng = np.random.default_rng(n + 1)
    direction = tuple(rng.normal(size=a.shape) for a in args[:3])
    return args, direction + (np.zeros_like(args[3]), np.zeros_like(args[4]))


def mlp_hvp_hand(W1, b1, W2, X, y, V1, Vb, V2):
    """The MLP's Hessian-vector product by hand: the gradient's adjoints, each with its
    tangent. leaky-ReLU's slope s is 1 or 0.01, constant along the direction (its second
    derivative is zero away from the kink), so the tangent of `s * h_bar` is `s * h_bar_dot`."""
    n = y.size
    z = X @ W1 + b1
    s = np.where(z > 0, 1.0, 0.01)
    h = s * z
    z_dot = X @ V1 + Vb
    h_dot = s * z_dot
    r = h @ W2 - y
    r_dot = h_dot @ W2 + h @ V2
    out_bar, out_bar_dot = 2.0 * r / n, 2.0 * r_dot / n
    W2_dot = h_dot.T @ out_bar + h.T @ out_bar_dot
    z_bar_dot = s * (out_bar_dot @ W2.T + out_bar @ V2.T)
    return X.T @ z_bar_dot, np.sum(z_bar_dot, axis=0, keepdims=True), W2_dot


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

    # the same composition returning what s2sad's jvp(grad) returns (the gradient too): with
    # only the product returned, XLA drops the gradient's last products
    @jax.jit
    def both(W1, b1, W2, X, y, V1, Vb, V2):
        return jax.jvp(lambda a, b, c: g(a, b, c, X, y), (W1, b1, W2), (V1, Vb, V2))

    return hvp, both, (lambda args: tuple(jnp.asarray(a) for a in args)), jax.block_until_ready


def run_hvp(systems, rows, errors, quick, measure_block, timing_row, log):
    """Time the MLP's Hessian-vector product; rows/errors as in run.py's main table."""
    args, tans = _problem(HVP_N)
    grad = s2sad.grad(mlp_loss, argnums=(0, 1, 2))

    def s2_call():
        return s2sad.jvp(grad, args, tans)[1]

    ref = mlp_hvp_hand(*args, *tans[:3])
    err = rel_err(s2_call(), ref)
    errors.append({"case": HVP_LABEL, "n": HVP_N, "system": S2_HVP, "max_rel_err": err,
                   "vs": "numpy hand-written product"})
    if not err <= HVP_TOL:
        raise GradientMismatch(f"{HVP_LABEL}: s2sad's product and the hand-written one differ by "
                               f"{err:.3e} (relative; limit {HVP_TOL:g})")
    def s2_product():
        return s2sad.hvp(mlp_loss, args, tans, argnums=(0, 1, 2))

    err = rel_err(s2_product(), ref)
    errors.append({"case": HVP_LABEL, "n": HVP_N, "system": S2_PRODUCT, "max_rel_err": err,
                   "vs": "numpy hand-written product"})
    if not err <= HVP_TOL:
        raise GradientMismatch(f"{HVP_LABEL}: s2sad.hvp's product and the hand-written one differ by "
                               f"{err:.3e} (relative; limit {HVP_TOL:g})")
    fns = {S2_PRODUCT: s2_product, S2_HVP: s2_call}
    if "jax" in systems:
        try:
            hvp, both, prepare, block = make_jax_hvp()
            jargs = prepare(args + tans[:3])
            call = lambda: block(hvp(*jargs))   # noqa: E731
            e = rel_err(call(), s2_call())
            errors.append({"case": HVP_LABEL, "n": HVP_N, "system": JAX_HVP, "max_rel_err": e, "vs": S2_HVP})
            fns[JAX_HVP] = call
            call_both = lambda: block(both(*jargs))     # noqa: E731
            e = rel_err(call_both()[1], s2_call())
            errors.append({"case": HVP_LABEL, "n": HVP_N, "system": JAX_BOTH, "max_rel_err": e, "vs": S2_HVP})
            fns[JAX_BOTH] = call_both
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
    L.append(f"`s2sad.hvp(mlp_loss, (W1, b1, W2, X, y), (V1, Vb, V2, 0, 0), argnums=(0, 1, 2))` (the product "
             f"alone) and `s2sad.jvp(s2sad.grad(mlp_loss, argnums=(0, 1, 2)), ...)` (the gradient and the product): "
             f"forward mode over the generated adjoint program, against JAX `jit(jvp(grad))` of the same loss "
             f"returning the product alone and returning both, float64, in the run's environment, n = {HVP_N:,}. "
             f"s2sad's products are checked against a hand-written numpy product.")
    L += ["", "| system | median (us) | min (us) |", "|---|---:|---:|"]
    for name in HVP_SYSTEMS:
        if name in got:
            L.append(f"| {name} | {got[name]['median_us']:.0f} | {got[name]['min_us']:.0f} |")
    if S2_PRODUCT in got and JAX_HVP in got:
        ratio = got[S2_PRODUCT]["median_us"] / got[JAX_HVP]["median_us"]
        met = "met" if ratio <= 1.0 else "not met"
        L.append("")
        L.append(f"Target (at most JAX's `jit(jvp(grad))`, both returning the product alone): {met}, "
                 f"s2sad.hvp / JAX = {ratio:.2f}.")
    if S2_HVP in got and JAX_BOTH in got:
        L.append(f"(Returning the gradient too: s2sad's `jvp(grad)` / JAX's `jvp(grad)` returning both = "
                 f"{got[S2_HVP]['median_us'] / got[JAX_BOTH]['median_us']:.2f}.)")
    for e in errors:
        if e.get("case") == HVP_LABEL and "error" in e:
            L.append(f"- {e['system']}: {e['error']}")
    return L + [""]

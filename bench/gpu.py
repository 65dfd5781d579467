"""GPU benchmark: the gradient of sum(f(x)) at N = 10^8 on a CUDA device, next to a
device-to-device copy of x and, where installed with GPU support, JAX.

    python bench/gpu.py [--n N] [--repeat R]        (`make gpu-check` runs it)

Rows, per case: `s2sad grad` is what a user calls, `s2sad.grad(loss)(x)` with x a cupy
array (the runtime sends it to the CUDA kernels); `s2sad sum_dual` is the runtime
entry point the generated derivative calls (`runtime.sum_dual` on the loss's fused
kernel), i.e. the kernels and their launches alone; `jax jit(grad)` is
`jax.jit(jax.grad(lambda x: jnp.sum(f(x))))` on the GPU. Each time is the median (and
the minimum) over `--repeat` calls after two warm-up calls, each call followed by a
device synchronisation; the `x copy` column divides by the median time of cupy's
`x.copy()` (read N doubles, write N doubles: the floor). Every s2sad gradient is
checked against the analytic one on the device.

N falls back below 10^8 when the device has too little free memory. Without cupy or
without a device the script says which and exits with status 0.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

import s2sad

N = 10 ** 8
ARRAYS = 10          # arrays of N float64 alive at once at most (x, grad, the checks' temporaries)
COPY = "cupy x.copy()"


# ---------------------------------------------------------------- the cases (s2sad reads this source)

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


def abs_loss(x):
    return np.sum(np.abs(x))


def cbrt_loss(x):
    return np.sum(np.cbrt(x))


def tanh_loss(x):
    return np.sum(np.tanh(x))


def user_loss(x):
    return np.sum(s2sad.broadcast(user, x))


def gt_loss(x):
    return np.sum(x > 0.1)


def ident_tanh_loss(x):
    return np.sum(s2sad.broadcast(ident_tanh, x))


def newton_loss(a):
    return sum(map(newton_sqrt, a))


def _newton_grad(xp, a):
    x, dx = xp.ones_like(a), xp.zeros_like(a)
    for _ in range(10):
        x, dx = 0.5 * (x + a / x), 0.5 * (dx + (x - a * dx) / (x * x))
    return dx


def _user_grad(xp, z):
    t = xp.tanh(z)
    q = 1.0 + z * z
    return ((1.0 - t * t) * z + t) / q - 2.0 * z * z * t / (q * q)


# key -> (label, loss, analytic gradient (array module, x) -> grad, input kind)
CASES: dict[str, tuple[str, Callable, Callable, str]] = {
    "abs": ("sum(abs(x))", abs_loss, lambda xp, x: xp.sign(x), "normal"),
    "cbrt": ("sum(cbrt(x))", cbrt_loss, lambda xp, x: 1.0 / (3.0 * xp.cbrt(x) ** 2), "normal"),
    "tanh": ("sum(tanh(x))", tanh_loss, lambda xp, x: 1.0 - xp.tanh(x) ** 2, "normal"),
    "user": ("user function tanh(z)*z/(1+z*z)", user_loss, _user_grad, "normal"),
    "gt": ("sum(x > 0.1)", gt_loss, lambda xp, x: xp.zeros_like(x), "normal"),
    "ident_tanh": ("ident(tanh(z)) via broadcast", ident_tanh_loss, lambda xp, x: 1.0 - xp.tanh(x) ** 2, "normal"),
    "newton": ("10-step Newton loop per element", newton_loss, _newton_grad, "positive"),
}


def jax_functions(jnp) -> dict[str, Callable]:
    """The same elementwise functions for JAX."""
    def j_newton(a):
        x = jnp.ones_like(a)
        for _ in range(10):
            x = 0.5 * (x + a / x)
        return x

    return {
        "abs": jnp.abs,
        "cbrt": jnp.cbrt,
        "tanh": jnp.tanh,
        "user": lambda z: jnp.tanh(z) * z / (1.0 + z * z),
        "gt": lambda x: (x > 0.1).astype(x.dtype),
        "ident_tanh": lambda z: (lambda w: w)(jnp.tanh(z)),
        "newton": j_newton,
    }


# ---------------------------------------------------------------- measuring and reporting

def pick_n(free_bytes: int, want: int = N, arrays: int = ARRAYS, itemsize: int = 8) -> int:
    """The largest of want, want/2, want/4, ... whose `arrays` arrays fit in 80% of the
    free device memory (not below 10^5)."""
    n = int(want)
    while n // 2 >= 10 ** 5 and n * itemsize * arrays > 0.8 * free_bytes:
        n //= 2
    return n


def measure(fn: Callable[[], Any], sync: Callable[[Any], Any], repeat: int = 10,
            warmup: int = 2) -> tuple[float, float]:
    """(median, min) wall-clock milliseconds of fn() followed by sync(result)."""
    for _ in range(warmup):
        sync(fn())
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        sync(fn())
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, min(times) * 1e3


def row(case: str, system: str, median_ms: float | None = None, min_ms: float | None = None,
        note: str = "") -> dict:
    return {"case": case, "system": system, "median_ms": median_ms, "min_ms": min_ms, "note": note}


def build_table(rows: list[dict], title: str = "") -> str:
    """The rows as a text table; `x copy` is each median over the median of the row
    whose system is COPY (rows without a time show '-' and their note)."""
    copy = next((r["median_ms"] for r in rows if r["system"] == COPY and r["median_ms"]), None)
    head = ("case", "system", "median ms", "min ms", "x copy", "note")
    body = []
    last_case = None
    for r in rows:
        med, mn = r["median_ms"], r["min_ms"]
        mult = f"{med / copy:.2f}" if (med is not None and copy) else "-"
        body.append((r["case"] if r["case"] != last_case else "", r["system"],
                     f"{med:.3f}" if med is not None else "-", f"{mn:.3f}" if mn is not None else "-",
                     mult, r["note"]))
        last_case = r["case"]
    widths = [max(len(str(x[k])) for x in [head] + body) for k in range(len(head))]
    right = {2, 3, 4}

    def fmt(cells) -> str:
        return "  ".join(str(c).rjust(w) if k in right else str(c).ljust(w)
                         for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [title] if title else []
    lines += [fmt(head), fmt(["-" * w for w in widths])]
    lines += [fmt(b) for b in body]
    return "\n".join(lines) + "\n"


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return "error: " + (text[:100] + "..." if len(text) > 100 else text)


def _check(cp, g, ref) -> str:
    """'ok' or the largest error, relative where |ref| > 1 and absolute below."""
    err = float(cp.max(cp.abs(g - ref) / cp.maximum(cp.abs(ref), 1.0)))
    return f"ok ({err:.1e})" if err <= 1e-9 else f"MISMATCH: max error {err:.3e}"


def s2sad_rows(cp, key: str, x, repeat: int) -> list[dict]:
    from s2sad import runtime
    from s2sad.api import compiled

    label, loss, analytic, _ = CASES[key]
    rows = []
    sync = lambda _: cp.cuda.Device().synchronize()   # noqa: E731
    ref = analytic(cp, x)
    g = s2sad.grad(loss)
    try:
        med, mn = measure(lambda: g(x), sync, repeat)
        rows.append(row(label, "s2sad grad", med, mn, _check(cp, cp.asarray(g(x)), ref)))
    except Exception as exc:   # noqa: BLE001 - reported in the table
        rows.append(row(label, "s2sad grad", note=_short(exc)))
    try:
        c = compiled(loss)
        args, active = c.kernel_args([x]), c.active_for((0,))

        def call():
            return runtime.sum_dual(c.kernel, args, active, backend="cuda")[1][0]

        med, mn = measure(call, sync, repeat)
        rows.append(row(label, "s2sad sum_dual", med, mn, _check(cp, call(), ref)))
    except Exception as exc:   # noqa: BLE001
        rows.append(row(label, "s2sad sum_dual", note=_short(exc)))
    del ref
    return rows


def jax_rows(x_host: dict[str, np.ndarray], repeat: int) -> tuple[list[dict], str]:
    """JAX jit(grad) on the GPU for every case, or ([], why not)."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")   # share the device with cupy
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return [], "JAX is not installed"
    try:
        dev = jax.devices("gpu")[0]
    except RuntimeError:
        return [], f"JAX {jax.__version__} has no GPU backend here"
    jax.config.update("jax_enable_x64", True)
    rows = []
    for key, f in jax_functions(jnp).items():
        label = CASES[key][0]
        try:
            xj = jax.device_put(x_host[CASES[key][3]], dev)
            g = jax.jit(jax.grad(lambda v, f=f: jnp.sum(f(v))))
            med, mn = measure(lambda g=g, xj=xj: g(xj), jax.block_until_ready, repeat)
            rows.append(row(label, "jax jit(grad)", med, mn))
            del xj
        except Exception as exc:   # noqa: BLE001
            rows.append(row(label, "jax jit(grad)", note=_short(exc)))
    return rows, f"JAX {jax.__version__} on {dev}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/gpu.py")
    p.add_argument("--n", type=int, default=N, help="elements (default 10^8; less if memory is short)")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--no-jax", action="store_true")
    args = p.parse_args(argv)

    from s2sad.backends import cuda_launch

    missing = cuda_launch.available()
    if missing is not None:
        print(f"bench/gpu.py: no GPU to measure on ({missing}); nothing to do.")
        return 0
    import cupy as cp

    free, total = cp.cuda.runtime.memGetInfo()
    n = pick_n(free, args.n)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    rs = cp.random.RandomState(0)
    xs = {"normal": rs.standard_normal(n, dtype=cp.float64)}
    xs["positive"] = cp.abs(xs["normal"]) + 0.5

    sync = lambda _: cp.cuda.Device().synchronize()   # noqa: E731
    med, mn = measure(lambda: xs["normal"].copy(), sync, args.repeat)
    rows = [row("x.copy() (device to device)", COPY, med, mn,
                f"{2 * 8 * n / (med * 1e-3) / 1e9:.0f} GB/s")]
    for key in CASES:
        rows += s2sad_rows(cp, key, xs[CASES[key][3]], args.repeat)
        cp.get_default_memory_pool().free_all_blocks()

    jax_note = "JAX skipped (--no-jax)"
    if not args.no_jax:
        host = {k: cp.asnumpy(v) for k, v in xs.items()}
        del xs
        cp.get_default_memory_pool().free_all_blocks()
        jrows, jax_note = jax_rows(host, args.repeat)
        by_case: dict[str, list[dict]] = {}
        for r in jrows:
            by_case.setdefault(r["case"], []).append(r)
        merged = []
        for r in rows:   # each JAX row after its case's s2sad rows
            merged.append(r)
            if r["system"] == "s2sad sum_dual":
                merged += by_case.pop(r["case"], [])
        rows = merged
    title = (f"GPU benchmark: gradient of sum(f(x)), float64, N = {n:,} on {name} "
             f"({total / 2**30:.0f} GiB; cupy {cp.__version__}; {jax_note})\n"
             f"median / min of {args.repeat} calls after 2 warm-up calls, each synchronised; "
             f"x copy = median / median of cupy's x.copy()\n")
    if n < args.n:
        title += f"(N lowered from {args.n:,}: {free / 2**30:.1f} GiB free)\n"
    print(build_table(rows, title))
    return 1 if any("MISMATCH" in r["note"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

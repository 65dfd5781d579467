"""Launching kernels: broadcasting, layouts, output allocation.

A `Kernel` (runkernel.py: a `passes.kernelplan.KernelPlan`, the scalar program and the
dual made from it, with the caches of its launches) is what the runtime applies over
arrays. Its entry points are what generated array-level code calls:

    apply(k, args)                      -> primal values, broadcast shape
    sum_dual(k, args, active, scale)    -> (scale * sum of values, grads of that sum)
    sum_grads(k, args, active, scale)   -> grads of that sum, the sum itself not computed
    jvp(k, args, active, tangents)      -> (values, tangent of values)
    vjp(k, args, active, out_bar)       -> grads of sum(out_bar * values); out_bar may be
                                           a SeedProduct (two factors, never formed)

(`column_products` adds a kernel's values times one column, and their row sums, in
the kernel's pass; scans.py runs state-passing kernels, `scan_apply` and `scan_grads`,
re-exported here.)

`backend` is a name ("auto", "python", "llvm", "cuda") or the object `backends.choose`
gave for one; each entry point resolves it once (`Choice.resolve`, for its arguments)
and hands the resulting `backends.Backend` down: what differs between backends
(memory, drivers, how a driver is called) is behind that object, never a name compared
here. Where the choice allows it (`fast_path`: "auto" or "llvm") and the arguments are
plain numpy, the lean paths (fastpath.py) call the llvm backend's machine code directly.

Invariants: the user's arrays are never written; every gradient has its argument's
shape (and float dtype), summed over the dimensions broadcasting added; a kernel is
compiled once per (program, LoopSpec, dtype), never per array length. Each input is
read in place when it is C-contiguous with the broadcast shape ("contig"), passed by
value when it has one element ("scalar"), and otherwise read through broadcast
strides of a contiguous copy of itself ("strided"; the llvm driver is told "row" or
"column" where the inner stride is 1 or 0, `_known_strides`).

Gradients that are zero by the rules (`sum(x > 0.1)`): `sum_dual` makes them as zeros,
without a derivative kernel (zerograds.py says when, and why that is right).

Sums (the value's, and the gradient of each param that is one element) are accumulated
in float64 for every dtype on the CPU backends (`ACC_DTYPE`: the llvm drivers add in
double, the python reference into float64 cells, threads' partial sums are combined
in float64) and rounded to the dtype once, at the end (`rounded`): a float32 sum of
10^7 terms has float64's error, then float32's last rounding, whatever the thread
count. The cuda backend sums in the dtype (its block sums are a tree already).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from . import backends
from .backends import Backend
from .backends.arraymodule import is_cupy
from .backends.arrays import Prepared, broadcast_shape, broadcast_shapes, compute_dtype, prepare  # noqa: F401
from .backends.host import ACC_DTYPE, rounded
from .errors import ShapeError
from .fastpath import fast_apply, fast_layouts, fast_sum_dual
from .kernel import LoopSpec
from .runkernel import Kernel
from .scans import scan_apply, scan_grads  # noqa: F401  (the entry points generated code calls)
from .zerograds import proven_zero, zero_buffers, zero_seed, zero_sum_fast, zero_worth

BACKENDS = backends.NAMES


@dataclass(frozen=True)
class SeedProduct:
    """An adjoint not formed yet: the elementwise product of two arrays that broadcast to
    its shape, such as the rank-1 `g @ w.T` of a matmul whose `w` has one column
    (array_rules' `*_factors`). `vjp` multiplies the factors inside its loop instead of
    reading an n x k array; anything else gets the product through np.asarray."""

    left: Any
    right: Any

    @property
    def shape(self) -> tuple[int, ...]:
        return np.broadcast_shapes(np.shape(self.left), np.shape(self.right))

    def __array__(self, dtype=None, copy=None):
        p = np.multiply(self.left, self.right)
        return p if dtype is None else p.astype(dtype, copy=False)


def broadcast_size(*args) -> int:
    """How many elements the arguments broadcast to (a kernel's mean divides by it; 1
    for none). None of them: numpy's 0.0, which a mean divides by as numpy does (inf
    or nan, with numpy's warning), not Python's int 0 (a ZeroDivisionError)."""
    shape = getattr(args[0], "shape", None) if args else None
    if shape is not None and all(getattr(a, "shape", None) == shape for a in args[1:]):
        n = int(args[0].size)      # one shape, the common case
    else:
        n = math.prod(broadcast_shapes(*(np.shape(a) for a in args)))
    return n if n else _EMPTY_SIZE


_EMPTY_SIZE = np.float64(0.0)


def _broadcast_strides(shape: tuple[int, ...], own: tuple[int, ...]) -> list[int]:
    """Element strides of a C-contiguous array of shape `own` broadcast to `shape`."""
    own = (1,) * (len(shape) - len(own)) + tuple(own)
    strides, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = 0 if own[d] == 1 and shape[d] != 1 else acc
        acc *= own[d]
    return strides


def _index_space(prep: Prepared) -> list[tuple[int, list[int]]]:
    """The broadcast shape as dims (size, [element stride per column]), adjacent dims
    merged where every array steps through them as one; column 0 is a C-contiguous
    array of the full shape, column 1 + i is input i. At least two dims (outer, inner)."""
    shape = tuple(prep.shape) or (1,)
    contig = _broadcast_strides(shape, shape)
    cols = [contig] + [contig if l == "contig" else [0] * len(shape) if l == "scalar"
                       else _broadcast_strides(shape, s) for l, s in zip(prep.layouts, prep.shapes)]
    dims = [(shape[d], [c[d] for c in cols]) for d in range(len(shape))]
    merged = [dims[-1]]
    for size, strides in reversed(dims[:-1]):
        isize, istrides = merged[0]
        if all(s == t * isize for s, t in zip(strides, istrides)):
            merged[0] = (size * isize, istrides)
        else:
            merged.insert(0, (size, strides))
    if len(merged) == 1:
        merged.insert(0, (1, [0] * len(cols)))
    return merged


# ------------------------------------------------------------------ launching

def _is_array(a: Any) -> bool:
    return isinstance(a, np.ndarray) or is_cupy(a)


LAUNCH_PLANS = 256


def _launch_key(backend: Backend, active: tuple[str, ...], spec: LoopSpec, prep: Prepared) -> tuple:
    """What a launch plan depends on (`Kernel.launch_plans`)."""
    return backend.name, active, spec, prep.dtype, prep.layouts, tuple(prep.shapes), tuple(prep.shape)


def launch_plan(kernel: Kernel, backend: Backend, spec: LoopSpec, active: tuple[str, ...], prep: Prepared):
    """(index space, spec, run, active indices): what a launch depends on the shapes and
    layouts for, not the data: made once per signature (a training loop's calls all
    share one) and kept on the kernel; `run(values, out, acc, seed, grads, tangents,
    out_dot)` is the backend's call of its driver (`Backend.plan_launch`)."""
    key = _launch_key(backend, active, spec, prep)
    got = kernel.launch_plans.get(key)
    if got is None:
        dims = _index_space(prep)
        sp, run = backend.plan_launch(kernel, spec, active, prep.dtype, dims)
        got = remember(kernel, key, (dims, sp, run, tuple(kernel.params.index(a) for a in active)))
    return got


def launch(kernel: Kernel, backend: Backend, spec: LoopSpec, active: tuple[str, ...], prep: Prepared,
           out=None, acc=None, seed=None, grads=None, tangents=None, out_dot=None) -> None:
    """Run one driver over the prepared inputs. Arrays are full-shape (or own-shape for
    strided grads/tangents); the n-d index space is walked as outer x inner."""
    dims, _, run, _ = launch_plan(kernel, backend, spec, active, prep)
    (n_outer, outer), (n_inner, _) = dims[-2], dims[-1]
    leading = dims[:-2]
    if n_outer * n_inner * math.prod(d[0] for d in leading) == 0:
        return
    if not leading:
        run(prep.values, out, acc, seed, grads, tangents, out_dot)
        return
    for at in np.ndindex(*[d[0] for d in leading]):
        # each column's offset (in elements) at this run of the leading dims
        offs = [sum(i * leading[d][1][col] for d, i in enumerate(at)) for col in range(len(outer))]
        run(prep.values, out, acc, seed, grads, tangents, out_dot, offs)


# ------------------------------------------------------------------ entry points

def _out_dtype(kernel: Kernel, dtype: np.dtype) -> np.dtype:
    kind = kernel.module(()).result_kind
    return {"bool": np.dtype(bool), "int": np.dtype(np.int64)}.get(kind, dtype)


def apply(kernel: Kernel, args: Sequence[Any], backend: str | backends.Choice = "auto"):
    """The primal applied elementwise: an array of the broadcast shape (a float for scalars)."""
    choice = backends.choose(backend)
    if choice.fast_path:
        fast = fast_layouts(args)
        if fast is not None:
            out = fast_apply(kernel, args, fast)
            odt = _out_dtype(kernel, fast[2])
            if odt != fast[2]:
                out = out != 0 if odt == np.dtype(bool) else out.astype(odt)
            return out
        call = kept_apply(kernel, args)
        if call is not None:
            return call(args)
    backend = choice.resolve(args)
    xp, prep = backend.xp, backend.prepare(args, kernel.params)
    out = xp.empty(prep.shape, prep.dtype)
    spec = LoopSpec(prep.layouts, value="store")
    launch(kernel, backend, spec, (), prep, out=out)
    odt = _out_dtype(kernel, prep.dtype)
    if choice.fast_path and odt == prep.dtype:
        keep_signature_call(kernel, ("apply", plain_signature(args)), backend, (), spec, prep, "out")
    if odt != prep.dtype:
        out = out != 0 if odt == np.dtype(bool) else out.astype(odt)
    if out.shape == () and not any(_is_array(a) for a in args):
        return out.item()
    return backend.results(args, out)


def _grad_buffers(prep: Prepared, kernel: Kernel, active: tuple[str, ...], backend: Backend,
                  xp=np) -> list[np.ndarray]:
    """The gradient buffers a driver writes: a param of one element gets a sum, in
    `acc_dtype` (`_shape_grad` rounds it to the dtype), any other an array of the dtype."""
    bufs = []
    for a in active:
        i = kernel.params.index(a)
        l = prep.layouts[i]
        if l == "scalar":
            bufs.append(xp.zeros(1, backend.acc_dtype(prep.dtype)))
        elif l == "contig":
            bufs.append(xp.empty(prep.shape, prep.dtype))
        else:
            # accumulated in element order from -0.0, which adds exactly as numpy's sum
            # that starts from the first term: a leading-axes broadcast's gradient gets
            # the bits of np.sum over those axes (see `leading_broadcast`; the cuda
            # backend's atomic adds have no order)
            bufs.append(np.full(prep.shapes[i], -0.0, prep.dtype) if xp is np else xp.zeros(prep.shapes[i], prep.dtype))
    return bufs


def leading_broadcast(own: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Is an array of shape `own` (more than one element) broadcast to `shape` along
    leading axes only, like a bias row? Its gradient, accumulated by a driver in
    element order (row after row), then has the bits of numpy's sum over the leading
    axes (`array_rules.unbroadcast`), which adds rows in order too."""
    trail = tuple(own)
    while trail and trail[0] == 1:
        trail = trail[1:]
    if not trail or math.prod(trail) < 2 or len(trail) >= len(shape):
        return False
    return tuple(shape[len(shape) - len(trail):]) == trail


def sum_dual(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], scale: float = 1.0,
             backend: str | backends.Choice = "auto", with_grads: bool = True, value: bool = True):
    """(scale * sum of the values, [grad of that w.r.t. each active param]) in one pass.
    value=False: the driver has value "none", so the compiled kernel computes only what
    the partials need, and the first result is None."""
    choice = backends.choose(backend)
    if not value and not (with_grads and active):
        choice.resolve(args).prepare(args, kernel.params)   # the same shape checks, nothing to compute
        return None, []
    if choice.fast_path:
        fast = fast_layouts(args)
        if fast is not None:
            if with_grads and active and zero_worth(fast[1]) and proven_zero(kernel, active):
                got = zero_sum_fast(kernel, args, active, scale, fast, value)
                if got is not None:
                    return got
            return fast_sum_dual(kernel, args, active if with_grads else (), scale, fast,
                                  "sum" if value else "none")
    backend = choice.resolve(args)
    xp, prep = backend.xp, backend.prepare(args, kernel.params)
    acc = xp.zeros(1, backend.acc_dtype(prep.dtype)) if value else None
    zero = zero_seed(kernel, active if with_grads else (), scale, xp, prep)
    if not with_grads or not active or zero is not None:     # the value only: no partials to compute
        if value:
            launch(kernel, backend, LoopSpec(prep.layouts, value="sum"), (), prep, acc=acc)
        total = rounded(acc[0], prep.dtype) * scale if value else None
        if zero is None:
            return total, []
        zeros = zero_buffers(prep, kernel, active, acc_dtype=backend.acc_dtype(prep.dtype), zero=zero)
        return total, backend.results(args, [_shape_grad(g, prep, kernel.params.index(a))
                                             for g, a in zip(zeros, active)])
    grads = _grad_buffers(prep, kernel, active, backend, xp)
    spec = LoopSpec(prep.layouts, value="sum" if value else "none", partials=True, seed="scalar")
    launch(kernel, backend, spec, active, prep, acc=acc, seed=scale, grads=grads)
    return rounded(acc[0], prep.dtype) * scale if value else None, backend.results(args, [
        _shape_grad(g, prep, kernel.params.index(a)) for g, a in zip(grads, active)])


def sum_grads(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], scale: float = 1.0,
              backend: str | backends.Choice = "auto"):
    """[grad of scale * sum of the values w.r.t. each active param], the values' sum not
    computed: `sum_dual(..., value=False)` for generated gradients that do not read it."""
    return sum_dual(kernel, args, active, scale, backend, value=False)[1]


def _shape_grad(g: np.ndarray, prep: Prepared, i: int):
    if prep.layouts[i] == "scalar":
        g = g.astype(prep.dtype, copy=False)    # a sum in float64: rounded once
        return g.reshape(prep.shapes[i]) if prep.shapes[i] != () else g.reshape(())
    return g.reshape(prep.shapes[i]) if g.shape != prep.shapes[i] else g


def jvp(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], tangents: Sequence[Any],
        backend: str | backends.Choice = "auto"):
    """(values, tangents of the values) for tangents of the active params."""
    inputs = list(args) + list(tangents)
    backend = backends.backend_for(backend, inputs)
    xp, prep = backend.xp, backend.prepare(args, kernel.params)
    tans = []
    for a, t in zip(active, tangents):
        i = kernel.params.index(a)
        t = xp.asarray(t, dtype=prep.dtype)
        if tuple(t.shape) != tuple(prep.shapes[i]):
            raise ShapeError(f"the tangent of '{a}' has shape {t.shape}, its primal {prep.shapes[i]}",
                             hint="Give each tangent its primal's shape.")
        tans.append(t.reshape(()).item() if prep.layouts[i] == "scalar" else xp.ascontiguousarray(t))
    out = xp.empty(prep.shape, prep.dtype)
    if not active:   # nothing differentiated reaches the kernel (it reads free data only)
        launch(kernel, backend, LoopSpec(prep.layouts, value="store"), (), prep, out=out)
        return backend.results(inputs, (out, xp.zeros(prep.shape, prep.dtype)))
    out_dot = xp.empty(prep.shape, prep.dtype)
    spec = LoopSpec(prep.layouts, value="store", tangents=True)
    launch(kernel, backend, spec, active, prep, out=out, tangents=tans, out_dot=out_dot)
    return backend.results(inputs, (out, out_dot))


def store_partials(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...],
                   backend: str | backends.Choice = "auto"):
    """(values, [d value / d a for each active param a]) at every element of the
    broadcast shape, in one pass: the "store" pullback of an elementwise site (the
    reverse pass then multiplies by the adjoint of the values and sums each back to its
    argument's shape). Active inputs are materialized at the broadcast shape, so each
    partial is a full-shape store: partial * seed with seed 1.0, bit for bit what
    `vjp` multiplies by its seed."""
    sig = plain_signature(args) if active and backends.choose(backend).fast_path else None
    if sig is not None:
        call = kernel.kept.get(("store", active, sig))
        if call is not None:
            return call(args)
    arrays = [a if isinstance(a, np.ndarray) else np.asarray(a) for a in args]
    dtype = compute_dtype(args)     # (Python numbers weak, as numpy 2)
    prep = prepare(arrays, kernel.params, dtype)
    as_given = True     # every active input already at the broadcast shape (the kept call's condition)
    if active:
        mat = list(arrays)
        for a in active:
            i = kernel.params.index(a)
            if prep.layouts[i] != "contig" and prep.shape != ():
                mat[i] = np.ascontiguousarray(np.broadcast_to(np.asarray(mat[i], dtype), prep.shape))
                as_given = False
        prep = prepare(mat, kernel.params, dtype)
    backend = backends.backend_for(backend, args)
    out = np.empty(prep.shape, prep.dtype)
    if not active:
        launch(kernel, backend, LoopSpec(prep.layouts, value="store"), (), prep, out=out)
        return out, []
    grads = _grad_buffers(prep, kernel, active, backend)
    spec = LoopSpec(prep.layouts, value="store", partials=True, seed="scalar")
    launch(kernel, backend, spec, active, prep, out=out, seed=1.0, grads=grads)
    odt = _out_dtype(kernel, prep.dtype)
    if odt != prep.dtype:
        out = out != 0 if odt == np.dtype(bool) else out.astype(odt)
    elif sig is not None and as_given and all(prep.layouts[kernel.params.index(a)] == "contig" for a in active):
        keep_stored_partials(kernel, ("store", active, sig), backend, active, spec, prep)
    return out, [g.astype(prep.dtype, copy=False).reshape(prep.shape) for g in grads]


def keep_stored_partials(kernel: Kernel, key: tuple, backend: Backend, active: tuple[str, ...], spec: LoopSpec,
                         prep: Prepared) -> None:
    """Keep, under `key` (its last item the arguments' plain_signature), the call that
    repeats this store_partials launch for the next arguments of that signature: new
    buffers (the values and one full-shape partial per active input) and the launch
    plan's stub, without `prepare` and `launch` (as keep_signature_call does for apply
    and vjp); the same driver, so the same bits."""
    if not backend.fast_path or kernel.program.state:
        return
    plan = kernel.launch_plans.get(_launch_key(backend, active, spec, prep))
    if plan is None or len(plan[0]) != 2:
        return
    stub, shape, dtype, n = plan[2], prep.shape, prep.dtype, len(active)

    def call(values):
        out = np.empty(shape, dtype)
        grads = [np.empty(shape, dtype) for _ in range(n)]
        stub(values, out, None, 1.0, grads, None, None)
        return out, grads
    call.parts = (stub, shape, dtype, n)        # (array_program lowers it)
    keep(kernel, key, call)


def vjp(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], out_bar: Any,
        backend: str | backends.Choice = "auto"):
    """Grads of sum(out_bar * values) w.r.t. the active params. `out_bar` may be a
    SeedProduct: on the CPU backends the kernel's `seeded` form reads its two factors."""
    if isinstance(out_bar, SeedProduct):
        factors = [out_bar.left, out_bar.right]
        backend = backends.backend_for(backend, list(args) + factors)
        got = seeded_vjp(kernel, args, active, factors, backend)
        if got is not None:
            return got
        out_bar = out_bar.left * out_bar.right     # formed by the factors' own array module
    inputs = list(args) + [out_bar]
    choice = backends.choose(backend)
    sig = plain_signature(inputs) if choice.fast_path else None
    if sig is not None:
        call = kernel.kept.get(("vjp", active, sig))
        if call is not None:
            return call(inputs)
    backend = choice.resolve(inputs)
    xp, prep = backend.xp, backend.prepare(args, kernel.params)
    ob = xp.asarray(out_bar, dtype=prep.dtype)
    same = tuple(ob.shape) == tuple(prep.shape)
    if not same:
        ob = xp.broadcast_to(ob, prep.shape)
    grads = _grad_buffers(prep, kernel, active, backend, xp)
    if ob.size == 1 and prep.shape == ():
        spec = LoopSpec(prep.layouts, value="none", partials=True, seed="scalar")
        launch(kernel, backend, spec, active, prep, seed=ob.item(), grads=grads)
    else:
        ob = xp.ascontiguousarray(ob)
        spec = LoopSpec(prep.layouts, value="none", partials=True, seed="array")
        launch(kernel, backend, spec, active, prep, seed=ob, grads=grads)
        if sig is not None and same:    # out_bar read in place: the call kept for its signature does so too
            keep_signature_call(kernel, ("vjp", active, sig), backend, active, spec, prep, "seed")
    return backend.results(inputs, [_shape_grad(g, prep, kernel.params.index(a)) for g, a in zip(grads, active)])


def seeded_vjp(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], factors: list, backend: Backend,
                factor_grads: tuple[int, ...] = ()):
    """vjp with the seed as two factors (see `Kernel.seeded`), or None where that does
    not apply: the cuda backend, a stateful kernel, factors of another dtype than the
    inputs' (the product would round differently), or a seed whose shape is not the
    values' shape. `factor_grads` (0 for the left factor, 1 for the right) adds the
    gradients of those factors, each summed to the factor's shape by the driver, after
    the params' ones."""
    if not backend.ordered_sums or kernel.program.state:
        return None
    values = list(args) + list(factors)
    sig = plain_signature(values)
    if sig is not None:
        call = kernel.launch_plans.get(("seeded", backend, active, factor_grads, sig))
        if call is not None:
            return call(values)
    dtype = compute_dtype(args)
    fs = [f if isinstance(f, np.ndarray) else np.asarray(f) for f in factors]
    if any(f.dtype != dtype for f in fs):
        return None
    seeded = kernel.seeded()
    prep = prepare(list(args) + fs, seeded.params, dtype)
    if prep.shape != broadcast_shapes(*(np.shape(a) for a in args)):
        return None
    wrt = tuple(active) + tuple(seeded.params[len(kernel.params) + j] for j in factor_grads)
    grads = _grad_buffers(prep, seeded, wrt, backend)
    spec = LoopSpec(prep.layouts, value="none", partials=True, seed="scalar")
    launch(seeded, backend, spec, wrt, prep, seed=1.0, grads=grads)
    plan = seeded.launch_plans.get(_launch_key(backend, wrt, spec, prep))
    if sig is not None and sig[0] == prep.dtype.num and backend.fast_path and plan is not None and len(plan[0]) == 2:
        # the next call with this signature: buffers and the plan's stub (one run) alone
        # (the fast path's backend, whose launch plans call machine code)
        remember(kernel, ("seeded", backend, active, factor_grads, sig), _seeded_call(plan[2], prep, seeded, wrt))
    return [_shape_grad(g, prep, seeded.params.index(a)) for g, a in zip(grads, wrt)]


def plain_signature(values: list) -> tuple | None:
    """(dtype number, (shape or None for a float, ...)) when every value is a Python float
    or a C-contiguous ndarray of more than one element, all of one float dtype (float64
    when a float is among them): values `prepare` would pass as they are. Else None.
    (Written for speed: every kept call of a small batch's sites starts with it.)"""
    dt = None
    shapes = []
    for v in values:
        if type(v) is float:
            shapes.append(None)
            continue
        if type(v) is not np.ndarray:
            return None
        d = v.dtype
        if d is not dt:
            if dt is None:
                if d.num not in _PLAIN_NUMS or not d.isnative:   # (a float16, long double or
                    return None     # byte-swapped array is converted by `prepare`, never passed as it is)
                dt = d
            elif d != dt:
                return None
        if v.size < 2 or not v.flags.c_contiguous:
            return None
        shapes.append(v.shape)
    if dt is None or (None in shapes and dt != _F64):
        return None
    return (dt.num, tuple(shapes))


_F64 = np.dtype(np.float64)
_PLAIN_NUMS = (np.dtype(np.float32).num, _F64.num)


def kept_apply(kernel: Kernel, args: Sequence[Any]):
    """The call `apply` kept for the signature of `args` (call(args) -> values), or None
    (the fast-path backend's; see keep_signature_call)."""
    sig = plain_signature(args)
    return None if sig is None else kernel.kept.get(("apply", sig))


def kept_vjp(kernel: Kernel, inputs: list, active: tuple[str, ...]):
    """The call `vjp` kept for the signature of `inputs` (its args, then out_bar):
    call(inputs) -> the active params' gradients, or None."""
    sig = plain_signature(inputs)
    return None if sig is None else kernel.kept.get(("vjp", active, sig))


def keep_signature_call(kernel: Kernel, key: tuple, backend: Backend, active: tuple[str, ...], spec: LoopSpec,
                        prep: Prepared, kind: str) -> None:
    """Keep, under `key` (whose last item is the arguments' `plain_signature`), the call
    that repeats this launch for the next arguments of that signature: its buffers and
    the launch plan's stub, without `prepare` and `launch` (at a small batch most of an
    elementwise site's time; a bias row `X @ W + b` is not one shape, so `fast_layouts`
    does not take it). `kind`: "out" (apply: the values) or "seed" (vjp: the gradients,
    the seed the last value). Kept only on the fast-path backend, for a plain signature
    (its values are what `prepare` passes: C-contiguous, of the dtype), a stateless
    kernel and an index space of one run (no leading dims)."""
    if key[-1] is None or not backend.fast_path or kernel.program.state:
        return
    plan = kernel.launch_plans.get(_launch_key(backend, active, spec, prep))
    if plan is None or len(plan[0]) != 2:
        return
    stub = plan[2]
    if kind == "out":
        shape, dtype = prep.shape, prep.dtype

        def call(values):
            out = np.empty(shape, dtype)
            stub(values, out, None, None, None, None, None)
            return out
        call.parts = (stub, shape, dtype)       # (array_program lowers it)
        keep(kernel, key, call)
    else:
        keep(kernel, key, _seeded_call(stub, prep, kernel, active, seed_last=True))


def _seeded_call(stub, prep: Prepared, kernel: Kernel, wrt: tuple[str, ...], seed_last: bool = False) -> Callable:
    """`seeded_vjp` for one signature: its gradient buffers, then the launch stub; with
    `seed_last`, vjp's: the seed is the last value (an array), not 1.0. Generated as
    straight-line code (a small batch's call is mostly its Python): a scalar param's
    gradient a float64 sum rounded to the dtype once, a strided one accumulated from
    -0.0 (a copy of a kept template), a contiguous one written whole."""
    ns = {"stub": stub, "empty": np.empty, "zeros": np.zeros, "ACC": ACC_DTYPE, "DT": prep.dtype,
          "SHAPE": prep.shape}
    lines, out = [], []
    parts = []      # per gradient (its buffer, its result): what array_program.py lowers
    for k, a in enumerate(wrt):
        i = kernel.params.index(a)
        lay, own = prep.layouts[i], tuple(prep.shapes[i])
        if lay == "scalar":
            lines.append(f"g{k} = zeros(1, ACC)")
            out.append(f"g{k}.astype(DT, copy=False).reshape({own!r})")
            parts.append((("zeros", (1,), ACC_DTYPE), ("cast", prep.dtype, own)))
        elif lay == "contig":
            lines.append(f"g{k} = empty(SHAPE, DT)")
            out.append(f"g{k}")
            parts.append((("empty", tuple(prep.shape), prep.dtype), None))
        else:
            template = np.full(own, -0.0, prep.dtype)
            template.flags.writeable = False
            ns[f"T{k}"] = template
            lines.append(f"g{k} = T{k}.copy()")
            out.append(f"g{k}")
            parts.append((("copy", template), None))
    grads = "[" + ", ".join(f"g{k}" for k in range(len(wrt))) + "]"
    lines.append(f"stub(values, None, None, {'values[-1]' if seed_last else '1.0'}, {grads}, None, None)")
    lines.append("return [" + ", ".join(out) + "]")
    text = "def call(values):\n" + "".join(f"    {line}\n" for line in lines)
    exec(compile(text, "<s2sad signature call>", "exec"), ns)
    ns["call"].parts = (stub, tuple(parts), seed_last)
    return ns["call"]


def keep(kernel: Kernel, key: tuple, value):
    """kernel.kept[key] = value, within the LAUNCH_PLANS bound; returns value."""
    if len(kernel.kept) >= LAUNCH_PLANS:
        kernel.kept.clear()
    kernel.kept[key] = value
    return value


def remember(kernel: Kernel, key: tuple, value):
    """kernel.launch_plans[key] = value, within the LAUNCH_PLANS bound (for calls of
    ever new shapes)."""
    if len(kernel.launch_plans) >= LAUNCH_PLANS:
        kernel.launch_plans.clear()
    kernel.launch_plans[key] = value
    return value


"""Launching kernels: broadcasting, layouts, output allocation, the lean llvm paths.

A `Kernel` is a scalar program (primal entry plus its dual) that the runtime applies
over arrays. Its entry points are what generated array-level code calls:

    apply(k, args)                      -> primal values, broadcast shape
    sum_dual(k, args, active, scale)    -> (scale * sum of values, grads of that sum)
    sum_grads(k, args, active, scale)   -> grads of that sum, the sum itself not computed
    jvp(k, args, active, tangents)      -> (values, tangent of values)
    vjp(k, args, active, out_bar)       -> grads of sum(out_bar * values); out_bar may be
                                           a SeedProduct (two factors, never formed)

(`column_products` adds a kernel's values times one column, and their row sums, in
the kernel's pass.)

`backend` is a name ("auto", "python", "llvm", "cuda") or the object `backends.choose`
gave for one; each entry point resolves it once (`Choice.resolve`, for its arguments)
and hands the resulting `backends.Backend` down: what differs between backends
(memory, drivers, how a driver is called) is behind that object, never a name compared
here. Where the choice allows it (`fast_path`: "auto" or "llvm") and the arguments are
plain numpy, the lean paths below call the llvm backend's machine code directly.

Invariants: the user's arrays are never written; every gradient has its argument's
shape (and float dtype), summed over the dimensions broadcasting added; a kernel is
compiled once per (program, LoopSpec, dtype), never per array length. Each input is
read in place when it is C-contiguous with the broadcast shape ("contig"), passed by
value when it has one element ("scalar"), and otherwise read through broadcast
strides of a contiguous copy of itself ("strided"; the llvm driver is told "row" or
"column" where the inner stride is 1 or 0, `_known_strides`).

Sums (the value's, and the gradient of each param that is one element) are accumulated
in float64 for every dtype on the CPU backends (`ACC_DTYPE`: the llvm drivers add in
double, the python reference into float64 cells, threads' partial sums are combined
in float64) and rounded to the dtype once, at the end (`rounded`): a float32 sum of
10^7 terms has float64's error, then float32's last rounding, whatever the thread
count. The cuda backend sums in the dtype (its block sums are a tree already).
"""
from __future__ import annotations

import functools
import hashlib
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import gast
import numpy as np

from . import backends
from .backends import LLVM, Backend
from .backends.arraymodule import is_cupy
from .backends.arrays import Prepared, broadcast_shape, broadcast_shapes, compute_dtype, prepare  # noqa: F401
from .backends.host import ACC_DTYPE
from .backends.llvm import DATA_OFFSET as _DATA_OFFSET
from .backends.llvm import compiled_driver
from .backends.llvm import from_address as _from_address
from .backends.llvm import ptr
from .codegen import python as pybackend
from .errors import ShapeError
from .kernel import KernelModule, KernelSignature, LoopSpec, ScanSpec, fresh_name
from .kernel_text import unparse
from .passes.activity import result_kind
from .passes.forward import make_dual
from .passes.normalize import ScalarProgram
from .parsing import gast_parse
from .threads import num_threads, run_chunks

BACKENDS = backends.NAMES


@dataclass
class Kernel:
    """A scalar program the runtime can apply elementwise, with duals made on demand."""

    program: ScalarProgram
    name: str
    _modules: dict[tuple[str, ...], KernelModule] = field(default_factory=dict)
    _python: dict[tuple[str, ...], dict] = field(default_factory=dict)
    _drivers: dict[tuple, Any] = field(default_factory=dict)  # see `cached`
    # (value, active) -> the Python entry of the fused driver last made for them (see
    # llvm_entry): what derivative's hot path calls with the user's arguments
    entries: dict[tuple, Any] = field(default_factory=dict)
    # launch's per-signature work (index space, layouts, driver), at most LAUNCH_PLANS
    launch_plans: dict[tuple, Any] = field(default_factory=dict)

    @property
    def params(self) -> tuple[str, ...]:
        return self.program.params

    def module(self, active: tuple[str, ...] = ()) -> KernelModule:
        """The kernel module with the dual for `active` params (none: primal only)."""
        if active not in self._modules:
            functions = dict(self.program.functions)
            dual_entry = None
            if active:
                dual_entry, duals = make_dual(self.program.functions, self.program.entry, active,
                                              self.program.custom_rules)
                functions.update(duals)
            self._modules[active] = KernelModule(
                name=self.name, functions=functions, entry=self.program.entry, params=self.params,
                result_kind=result_kind(self.program.functions, self.program.entry),
                dual_entry=dual_entry, active=active, origins=dict(self.program.origins))
        return self._modules[active]

    def cached(self, key: tuple, make: Callable[[], Any]) -> Any:
        """What this kernel compiled or generated, made once per key: compiled drivers,
        launchers, fast-path plans and call stubs (key[0] says which)."""
        value = self._drivers.get(key)
        if value is None:
            value = self._drivers[key] = make()
        return value

    def signature(self, active: tuple[str, ...]) -> KernelSignature:
        """The kernel's name, params, `active` and a digest of its scalar program's source
        (primal functions and user rules; the dual is made from them): what finds its
        compiled drivers on disk without making the dual."""
        def make() -> KernelSignature:
            text = [self.program.entry]
            for name, fn in self.program.functions.items():
                text += [name, self.program.origins.get(name, ""), unparse(fn)]
            for name, (params, partials) in sorted(self.program.custom_rules.items()):
                text += [name, repr(params)] + ["-" if p is None else unparse(p) for p in partials or ()]
            digest = hashlib.sha256("\0".join(text).encode()).hexdigest()
            return KernelSignature(self.name, self.params, active, digest)
        return self.cached(("signature", active), make)

    def seeded(self) -> "Kernel":
        """This kernel times a seed given as two factors, `entry__seeded(params..., a, b)
        = a * b * entry(params...)`: its partials are (a * b) * d entry / d p, the same
        bits as a partial times the seed a * b formed beforehand. `vjp` runs it when the
        seed is a `SeedProduct`, reading the two factors instead of their product."""
        def make() -> Kernel:
            prog = self.program
            taken = set(prog.params) | set(prog.functions)
            a, b, name = (fresh_name(base, taken) for base in ("seed_a", "seed_b", f"{prog.entry}__seeded"))
            params = ", ".join(prog.params)
            fn = gast_parse(f"def {name}({params}, {a}, {b}):\n    return {a} * {b} * {prog.entry}({params})\n").body[0]
            program = ScalarProgram({**prog.functions, name: fn}, name, prog.params + (a, b),
                                    {**prog.origins, name: f"{prog.entry} times a seed given as two factors"},
                                    prog.custom_rules)
            return Kernel(program, f"{self.name}__seeded")
        return self.cached(("seeded",), make)

    def python_functions(self, active: tuple[str, ...]) -> dict:
        if active not in self._python:
            self._python[active] = pybackend.compile_module(self.module(active))
        return self._python[active]


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


def rounded(total, dtype: np.dtype) -> float:
    """A sum accumulated in float64, rounded to `dtype` (as a Python float)."""
    return float(total) if dtype == ACC_DTYPE else float(dtype.type(total))


def broadcast_size(*args) -> int:
    """How many elements the arguments broadcast to (a kernel's mean divides by it; 1
    for none)."""
    shape = getattr(args[0], "shape", None) if args else None
    if shape is not None and all(getattr(a, "shape", None) == shape for a in args[1:]):
        return int(args[0].size)      # one shape, the common case
    return math.prod(broadcast_shapes(*(np.shape(a) for a in args)))


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


def launch(kernel: Kernel, backend: Backend, spec: LoopSpec, active: tuple[str, ...], prep: Prepared,
           out=None, acc=None, seed=None, grads=None, tangents=None, out_dot=None) -> None:
    """Run one driver over the prepared inputs. Arrays are full-shape (or own-shape for
    strided grads/tangents); the n-d index space is walked as outer x inner."""
    def plan():
        """What depends on the shapes and layouts only, not on the data: made once per
        signature (a training loop's calls all share one): the index space, and the
        backend's call of its driver over it (`Backend.plan_launch`)."""
        dims = _index_space(prep)
        sp, run = backend.plan_launch(kernel, spec, active, prep.dtype, dims)
        return dims, sp, run, tuple(kernel.params.index(a) for a in active)

    key = _launch_key(backend, active, spec, prep)
    got = kernel.launch_plans.get(key)
    if got is None:
        got = remember(kernel, key, plan())
    dims, _, run, _ = got
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


# ------------------------------------------------------------------ the fast path
#
# The common call: C-contiguous float arrays of one shape, and scalars, on the llvm
# backend. It skips `prepare`/`launch`: one layout check per argument, a cached
# driver, data pointers read straight from the array objects, and the index space
# split across threads above THREAD_MIN elements (ctypes releases the GIL).

THREAD_MIN = 200_000


def _fast_layouts(args: Sequence[Any]):
    """(layouts, shape, dtype) when every arg is a float scalar or a C-contiguous float
    array of one common shape (at least 2 elements); else None."""
    shape = None
    dtype = None
    layouts = []
    for a in args:
        t = type(a)
        if t is float or t is int:
            layouts.append("scalar")
            continue
        if t is not np.ndarray or not a.flags.c_contiguous or a.size < 2:
            return None
        dt = a.dtype
        if dt is not _F64 and dt != _F64 and dt != _F32:
            return None
        if shape is None:
            shape, dtype = a.shape, dt
        elif a.shape != shape or dt != dtype:
            return None
        layouts.append("contig")
    if shape is None:
        return None
    return tuple(layouts), shape, dtype


_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)


def _fast_driver(kernel: Kernel, active: tuple[str, ...], spec: LoopSpec, dtype: np.dtype):
    return kernel.cached(("compiled", active, spec, dtype), lambda: compiled_driver(kernel, active, spec, dtype))


# chunks per thread: enough that the threads end together when one is held up
CHUNKS_PER_THREAD = 8


def _split(n: int) -> tuple[list[tuple[int, int]], int]:
    """(chunks of [0, n), threads to run them on): one chunk below THREAD_MIN elements,
    else up to CHUNKS_PER_THREAD per thread, none under THREAD_MIN / 4 elements."""
    t = num_threads() if n >= THREAD_MIN else 1
    t = min(t, max(1, n // (THREAD_MIN // 4)))
    k = 1 if t == 1 else min(t * CHUNKS_PER_THREAD, max(t, n // (THREAD_MIN // 4)))
    step = -(-n // k)
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)], t


@dataclass
class _FastPlan:
    """What a fast call needs, computed once per (active, layouts, dtype)."""

    cfunc: Any
    first_contig: int
    grad_slots: list[int]      # per active param: index in layouts
    contig_grads: list[bool]
    driver: Any = None
    # the driver's Python entry (codegen/llvm_entry.py): None until the signature's second
    # call (a first result does not wait for it), then the entry or False (none)
    entry: Any = None
    called: bool = False


def _fast_plan(kernel: Kernel, active, layouts, dtype, value: str) -> _FastPlan:
    def make() -> _FastPlan:
        spec = LoopSpec(layouts, value=value, partials=bool(active), seed="scalar" if active else "none")
        driver = _fast_driver(kernel, active, spec, dtype)
        aidx = [kernel.params.index(a) for a in active]
        return _FastPlan(driver.cfunc, layouts.index("contig"), aidx, [layouts[i] == "contig" for i in aidx],
                         driver, None if active else False)
    return kernel.cached(("fast", value, active, layouts, dtype), make)


def _entry_of(plan, compiled) -> Any:
    """`plan.entry`, made on the second call (see _FastPlan)."""
    if plan.entry is None:
        if plan.called:
            plan.entry = compiled.python_entry() or False
        plan.called = True
    return plan.entry


def _fast_sum_dual(kernel: Kernel, args, active, scale, fast, value: str = "sum"):
    layouts, shape, dtype = fast
    fp = _fast_plan(kernel, active, layouts, dtype, value)
    entry = fp.entry if fp.entry is not None else _entry_of(fp, fp.driver)
    if entry:   # one call into machine code, up to llvm_entry.ENTRY_MAX elements
        res = entry(*args, scale, False)
        if res is not NotImplemented:
            kernel.entries[(value, active)] = entry     # the signature in use, for derivative's hot path
            return res[0], list(res[1:])
    stub = kernel.cached(("stub", value, active, layouts, dtype.num),
                         lambda: _sum_dual_stub(_fast_plan(kernel, active, layouts, dtype, value), layouts, dtype,
                                                value))
    res = stub(*args, scale)
    if res is not None:
        return res
    fp = _fast_plan(kernel, active, layouts, dtype, value)
    grads = [np.empty(shape, dtype) if c else None for c in fp.contig_grads]
    totals = _threaded_sum_dual(fp, args, layouts, dtype, grads, scale, args[fp.first_contig].size, value)
    g0 = 1 if value == "sum" else 0   # slot of the first scalar grad: after the value sum, if any
    return (rounded(totals[0], dtype) * scale if g0 else None,
            [g if g is not None else rounded(totals[g0 + k], dtype) for k, g in enumerate(grads)])


def _sum_dual_stub(fp: _FastPlan, layouts, dtype, value: str = "sum"):
    """A small Python function, generated per signature, that makes one unthreaded call:
    straight-line argument marshalling is what keeps a 10-element gradient within a few
    microseconds of the kernel. value "none": the driver gets no accumulator for the
    value (scalar grads still sum into `accs`) and the stub returns None for it."""
    params = [f"a{i}" for i in range(len(layouts))]
    first = params[fp.first_contig]
    g0 = 1 if value == "sum" else 0   # slot of the first scalar grad in accs
    lines = [f"def stub({', '.join(params)}, scale):",
             f"    n = {first}.size",
             "    if n >= THREAD_MIN:",
             "        return None",
             f"    accs = zeros({max(1, g0 + len(fp.grad_slots))}, ACC_DTYPE)",
             "    acc = PTR(accs)"]
    gnames = []
    total = "float" if dtype == ACC_DTYPE else "float32_total"   # `rounded`, inline for float64
    for k, (i, contig) in enumerate(zip(fp.grad_slots, fp.contig_grads)):
        if contig:
            lines.append(f"    g{k} = empty({first}.shape, dtype)")
            gnames.append((f"PTR(g{k})", f"g{k}"))
        else:
            gnames.append((f"acc + {(g0 + k) * ACC_DTYPE.itemsize}", f"{total}(accs[{g0 + k}])"))
    call = ["1", "n"] + [f"PTR({p})" if l == "contig" else p for p, l in zip(params, layouts)] + ["acc"] * g0
    if fp.grad_slots:
        call += ["scale"] + [g[0] for g in gnames]
    lines.append(f"    cfunc({', '.join(call)})")
    lines.append(f"    return {f'{total}(accs[0]) * scale' if g0 else 'None'}, [{', '.join(g[1] for g in gnames)}]")
    text = "\n".join(lines)
    if _DATA_OFFSET is not None:  # read the data pointer inline: a call less per array
        text = re.sub(r"PTR\((\w+)\)", rf"from_address(id(\1) + {_DATA_OFFSET}).value", text)
    ns = {"cfunc": fp.cfunc, "PTR": ptr, "from_address": _from_address, "zeros": np.zeros,
          "empty": np.empty, "dtype": dtype, "THREAD_MIN": THREAD_MIN, "ACC_DTYPE": ACC_DTYPE,
          "float32_total": lambda v: float(np.float32(v))}
    exec(compile(text, "<s2sad call stub>", "exec"), ns)
    return ns["stub"]


def _threaded_sum_dual(fp: _FastPlan, args, layouts, dtype, grads, scale, n, value: str = "sum"):
    """Chunks of the index space on threads, each with its own float64 accumulators (the
    value sum first when value is "sum", then each scalar grad), summed in float64."""
    chunks, threads = _split(n)
    g0 = 1 if value == "sum" else 0   # slot of the first scalar grad
    width = max(1, g0 + len(grads))
    accs = np.zeros(width * len(chunks), ACC_DTYPE)
    itemsize, accsize = dtype.itemsize, ACC_DTYPE.itemsize
    base = [ptr(a) if l == "contig" else a for a, l in zip(args, layouts)]
    gbase = [ptr(g) if g is not None else None for g in grads]
    acc0 = ptr(accs)

    def run(c):
        lo, hi = chunks[c]
        v = [1, hi - lo]
        v += [b + lo * itemsize if l == "contig" else b for b, l in zip(base, layouts)]
        acc = acc0 + c * width * accsize
        if g0:
            v.append(acc)
        if grads:
            v.append(scale)
            v += [g + lo * itemsize if g is not None else acc + (g0 + k) * accsize for k, g in enumerate(gbase)]
        fp.cfunc(*v)

    run_chunks(run, len(chunks), threads)
    return accs.reshape(len(chunks), width).sum(axis=0)


def _fast_apply(kernel: Kernel, args, fast):
    layouts, shape, dtype = fast
    cfunc = _fast_plan(kernel, (), layouts, dtype, "store").cfunc
    out = np.empty(shape, dtype)
    n = out.size
    itemsize = dtype.itemsize

    def run(lo, hi):
        argv = [1, hi - lo]
        for a, l in zip(args, layouts):
            argv.append(ptr(a) + lo * itemsize if l == "contig" else a)
        argv.append(ptr(out) + lo * itemsize)
        cfunc(*argv)

    chunks, threads = _split(n)
    run_chunks(lambda c: run(*chunks[c]), len(chunks), threads)
    return out


# ------------------------------------------------------------------ entry points

def _out_dtype(kernel: Kernel, dtype: np.dtype) -> np.dtype:
    kind = kernel.module(()).result_kind
    return {"bool": np.dtype(bool), "int": np.dtype(np.int64)}.get(kind, dtype)


def apply(kernel: Kernel, args: Sequence[Any], backend: str | backends.Choice = "auto"):
    """The primal applied elementwise: an array of the broadcast shape (a float for scalars)."""
    choice = backends.choose(backend)
    if choice.fast_path:
        fast = _fast_layouts(args)
        if fast is not None:
            out = _fast_apply(kernel, args, fast)
            odt = _out_dtype(kernel, fast[2])
            if odt != fast[2]:
                out = out != 0 if odt == np.dtype(bool) else out.astype(odt)
            return out
    backend = choice.resolve(args)
    xp, prep = backend.xp, backend.prepare(args, kernel.params)
    out = xp.empty(prep.shape, prep.dtype)
    launch(kernel, backend, LoopSpec(prep.layouts, value="store"), (), prep, out=out)
    odt = _out_dtype(kernel, prep.dtype)
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
    if not trail or int(np.prod(trail)) < 2 or len(trail) >= len(shape):
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
        fast = _fast_layouts(args)
        if fast is not None:
            return _fast_sum_dual(kernel, args, active if with_grads else (), scale, fast,
                                  "sum" if value else "none")
    backend = choice.resolve(args)
    xp, prep = backend.xp, backend.prepare(args, kernel.params)
    acc = xp.zeros(1, backend.acc_dtype(prep.dtype)) if value else None
    if not with_grads or not active:
        launch(kernel, backend, LoopSpec(prep.layouts, value="sum"), (), prep, acc=acc)
        return rounded(acc[0], prep.dtype) * scale, []
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
    arrays = [a if isinstance(a, np.ndarray) else np.asarray(a) for a in args]
    dtype = compute_dtype(arrays)
    prep = prepare(arrays, kernel.params, dtype)
    if active:
        mat = list(arrays)
        for a in active:
            i = kernel.params.index(a)
            if prep.layouts[i] != "contig" and prep.shape != ():
                mat[i] = np.ascontiguousarray(np.broadcast_to(np.asarray(mat[i], dtype), prep.shape))
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
    return out, [g.astype(prep.dtype, copy=False).reshape(prep.shape) for g in grads]


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
    backend = backends.backend_for(backend, inputs)
    xp, prep = backend.xp, backend.prepare(args, kernel.params)
    ob = xp.asarray(out_bar, dtype=prep.dtype)
    if tuple(ob.shape) != tuple(prep.shape):
        ob = xp.broadcast_to(ob, prep.shape)
    grads = _grad_buffers(prep, kernel, active, backend, xp)
    if ob.size == 1 and prep.shape == ():
        spec = LoopSpec(prep.layouts, value="none", partials=True, seed="scalar")
        launch(kernel, backend, spec, active, prep, seed=ob.item(), grads=grads)
    else:
        ob = xp.ascontiguousarray(ob)
        spec = LoopSpec(prep.layouts, value="none", partials=True, seed="array")
        launch(kernel, backend, spec, active, prep, seed=ob, grads=grads)
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
    when a float is among them): values `prepare` would pass as they are. Else None."""
    dt = None
    shapes = []
    has_float = False
    for v in values:
        if type(v) is float:
            has_float = True
            shapes.append(None)
        elif type(v) is np.ndarray and v.size > 1 and v.flags.c_contiguous and v.dtype.kind == "f":
            if dt is not None and v.dtype != dt:
                return None
            dt = v.dtype
            shapes.append(v.shape)
        else:
            return None
    if dt is None or (has_float and dt != np.float64):
        return None
    return (dt.num, tuple(shapes))


def _seeded_call(stub, prep: Prepared, kernel: Kernel, wrt: tuple[str, ...]) -> Callable:
    """`seeded_vjp` for one signature: its gradient buffers, then the launch stub."""
    made = []
    for a in wrt:
        i = kernel.params.index(a)
        lay, own = prep.layouts[i], prep.shapes[i]
        if lay == "scalar":
            made.append((functools.partial(np.zeros, 1, ACC_DTYPE), own))
        elif lay == "contig":
            made.append((functools.partial(np.empty, prep.shape, prep.dtype), own))
        else:
            made.append((functools.partial(np.full, own, -0.0, prep.dtype), own))

    def call(values: list) -> list:
        grads = [make() for make, _ in made]
        stub(values, None, None, 1.0, grads, None, None)
        grads = [g.astype(prep.dtype, copy=False) for g in grads]     # float64 sums rounded once
        return [g.reshape(own) if g.shape != own else g for g, (_, own) in zip(grads, made)]
    return call


def remember(kernel: Kernel, key: tuple, value):
    """kernel.launch_plans[key] = value, within the LAUNCH_PLANS bound (for calls of
    ever new shapes)."""
    if len(kernel.launch_plans) >= LAUNCH_PLANS:
        kernel.launch_plans.clear()
    kernel.launch_plans[key] = value
    return value


# ------------------------------------------------------------------ scans (stateful functions)
#
# A state-passing kernel (see kernel.py, "Scan drivers") runs its elements in order.
# Inputs are materialized at the broadcast shape (one row-major run); gradients of
# broadcast inputs are summed back to their shapes afterwards.

def _scan_inputs(kernel: Kernel, args: Sequence[Any], n_state: int, backend: Backend):
    names = kernel.params[: len(kernel.params) - n_state]
    xp, prep = backend.xp, backend.prepare(args, names)
    values, layouts = [], []
    for v, l in zip(prep.values, prep.layouts):
        if l == "scalar":
            values.append(v)
            layouts.append("scalar")
        else:
            values.append(xp.ascontiguousarray(xp.broadcast_to(v, prep.shape)).reshape(-1))
            layouts.append("contig")
    return xp, prep, values, tuple(layouts)


def _scan_driver(kernel: Kernel, backend: Backend, active: tuple[str, ...], spec: ScanSpec, dtype: np.dtype):
    """The backend's scan driver for the kernel's dual w.r.t. `active` and the state
    (primal only without grads), made once per (backend, active, spec, dtype)."""
    def make():
        kmod = kernel.module(active + kernel.params[len(kernel.params) - spec.n_state:]) if spec.grads \
            else kernel.module(())
        return backend.compile_scan(kernel, kmod, active, spec, dtype)
    return kernel.cached(("scan", backend.name, active, spec, dtype), make)


def scan_apply(kernel: Kernel, args: Sequence[Any], state: Sequence[float],
               backend: str | backends.Choice = "auto", value: str = "store"):
    """The primal of a state-passing kernel, elements in order: (values, final state)."""
    n_state = len(state)
    backend = backends.backend_for(backend, args)
    xp, prep, values, layouts = _scan_inputs(kernel, args, n_state, backend)
    spec = ScanSpec(layouts, n_state, value=value)
    st = xp.array(state, dtype=prep.dtype)
    n = int(np.prod(prep.shape, dtype=np.int64))
    out = xp.empty(prep.shape, prep.dtype) if value == "store" else None
    acc = xp.zeros(1, backend.acc_dtype(prep.dtype))
    _scan_driver(kernel, backend, (), spec, prep.dtype)(n, values, st, out=None if out is None else out.reshape(-1),
                                                         acc=acc)
    return ((backend.results(args, out) if value == "store" else rounded(acc[0], prep.dtype)),
            [float(v) for v in st.tolist()])


def scan_grads(kernel: Kernel, args: Sequence[Any], active: tuple[str, ...], state: Sequence[float],
               seed: Any = 1.0, value: str = "sum", backend: str | backends.Choice = "auto"):
    """Forward sweep and reverse sweep of a state-passing kernel: (values or their sum,
    grads of sum(seed * values) w.r.t. the active params, final state)."""
    n_state = len(state)
    choice = backends.choose(backend)
    if choice.fast_path and type(seed) is float and value == "sum":
        fast = _fast_layouts(args)
        if fast is not None:
            return _fast_scan_grads(kernel, args, active, state, seed, fast)
    inputs = list(args) + [seed]
    backend = choice.resolve(inputs)
    xp, prep, values, layouts = _scan_inputs(kernel, args, n_state, backend)
    seed_kind = "scalar" if np.ndim(seed) == 0 else "array"
    spec = ScanSpec(layouts, n_state, value=value, grads=True, seed=seed_kind)
    n = int(np.prod(prep.shape, dtype=np.int64))
    st = xp.array(state, dtype=prep.dtype)
    st_bar = xp.zeros(n_state, prep.dtype)
    acc = xp.zeros(1, backend.acc_dtype(prep.dtype))
    out = xp.empty(n, prep.dtype) if value == "store" else None
    grads = [xp.zeros(1, backend.acc_dtype(prep.dtype)) if layouts[kernel.params.index(a)] == "scalar"
             else xp.empty(n, prep.dtype)
             for a in active]
    s = float(seed) if seed_kind == "scalar" else xp.ascontiguousarray(
        xp.broadcast_to(xp.asarray(seed, dtype=prep.dtype), prep.shape)).reshape(-1)
    _scan_driver(kernel, backend, active, spec, prep.dtype)(n, values, st, out=out, acc=acc, seed=s, grads=grads,
                                                            state_bar=st_bar)
    shaped = []
    for a, g in zip(active, grads):
        i = kernel.params.index(a)
        if layouts[i] == "scalar":
            g = g.astype(prep.dtype, copy=False)     # a sum in float64: rounded once
            shaped.append(g.reshape(prep.shapes[i]) if prep.shapes[i] != () else g.reshape(()))
        else:
            shaped.append(_unbroadcast(g.reshape(prep.shape), prep.shapes[i]))
    vals = backend.results(inputs, out.reshape(prep.shape)) if value == "store" else rounded(acc[0], prep.dtype)
    return vals, backend.results(inputs, shaped), [float(v) for v in st.tolist()]


@dataclass
class _FastScan:
    """What a fast scan call needs, made once per (active, layouts, dtype, k)."""

    cfunc: Any
    needs_tape: bool
    no_tape: np.ndarray
    contig: list[bool]         # per param: an array (else a scalar)
    contig_grads: list[bool]   # per active param
    compiled: Any = None
    # the driver's Python entry (llvm_entry), for scans that need no tape: as _FastPlan's
    entry: Any = None
    called: bool = False


def _fast_scan_grads(kernel: Kernel, args, active, state, seed: float, fast):
    """scan_grads for float scalars and C-contiguous arrays of one shape on the llvm
    backend: the pointers straight from the arrays, no broadcasting, a cached driver."""
    layouts, shape, dtype = fast
    k = len(state)

    def make() -> _FastScan:
        spec = ScanSpec(layouts, k, value="sum", grads=True, seed="scalar")
        d = _scan_driver(kernel, LLVM, active, spec, dtype)
        idx = [kernel.params.index(a) for a in active]
        return _FastScan(d.cfunc, d.needs_tape, d.no_tape, [l == "contig" for l in layouts],
                         [layouts[i] == "contig" for i in idx], d.compiled, False if d.needs_tape else None)

    fs = kernel.cached(("scanfast", active, layouts, dtype, k), make)
    entry = fs.entry if fs.entry is not None else _entry_of(fs, fs.compiled)
    if entry:   # one call into machine code, up to llvm_entry.ENTRY_MAX elements
        res = entry(*args, *state, seed, False)
        if res is not NotImplemented:
            kernel.entries[("scan", active)] = entry     # the signature in use, for derivative's hot path
            return res[0], list(res[1:1 + len(active)]), list(res[1 + len(active):])
    n = 1
    for m in shape:
        n *= m
    st = np.array(state, dtype)
    st_bar = np.zeros(k, dtype)
    acc = np.zeros(1, ACC_DTYPE)
    grads = [np.empty(shape, dtype) if c else np.zeros(1, ACC_DTYPE) for c in fs.contig_grads]
    tape = np.empty(n * k, dtype) if fs.needs_tape else fs.no_tape
    argv = [1, n] + [ptr(a) if c else a for a, c in zip(args, fs.contig)]
    argv += [ptr(st), ptr(acc), seed] + [ptr(g) for g in grads] + [ptr(st_bar), ptr(tape)]
    fs.cfunc(*argv)
    return (rounded(acc[0], dtype), [g if c else g.astype(dtype).reshape(()) for g, c in zip(grads, fs.contig_grads)],
            [float(v) for v in st.tolist()])


def _unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum a full-shape gradient over the dimensions broadcasting added to `shape`."""
    extra = g.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(extra + d for d, n in enumerate(shape) if n == 1 and g.shape[extra + d] != 1)
    return g.sum(axis=axes).reshape(shape) if axes else g

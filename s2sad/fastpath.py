"""The lean llvm paths: a kernel's common calls without `prepare` and `launch`.

The common call: C-contiguous float arrays of one shape, and scalars, on the llvm
backend (`Choice.fast_path`). It skips `prepare`/`launch`: one layout check per
argument (`fast_layouts`), a cached driver, data pointers read straight from the array
objects, and from THREAD_MIN elements the index space cut into chunks that depend on its
size alone, run on the threads a per-signature `ThreadChooser` picks by timing the
calls (threadchoice.py; ctypes releases the GIL). Below THREAD_MIN a sum is one call of
a small Python stub generated per signature (`sum_dual_stub`); from a signature's second
call on, one call of the driver's Python entry (codegen/llvm_entry.py) where it has one;
larger, the gradient alone of array parameters goes to `large_call` (the large entry on
one thread or the chunks on more, its own chooser timing each whole call).

Invariants: the same results, bit for bit, as `runtime.launch` on the llvm backend:
sums accumulated in float64 (`ACC_DTYPE`) and rounded once (`rounded`), chunks'
partial sums combined in float64 in chunk order, so that no bit depends on the thread
count (nor on the chooser's probing); the user's arrays are never written. Everything
made for a signature is kept on the kernel (`Kernel.cached`), made once.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .backends.host import ACC_DTYPE, rounded
from .backends.llvm import DATA_OFFSET, compiled_driver, from_address, ptr
from .kernel import LoopSpec
from .runkernel import Kernel
from .threadchoice import ThreadChooser
from .threads import run_chunks

# A chunk is one call of the driver (~1-2 us of Python and ctypes) over at least CHUNK
# elements (>= ~20 us even memory-bound): one thread pays a few per cent for cutting a sum
# into chunks, which it must, for its bits to be the threads' bits.
CHUNK = 1 << 17
THREAD_MIN = 2 * CHUNK   # elements from which a call is cut into chunks and may run on threads
MAX_CHUNKS = 32          # enough for up to 8 threads to end together when one is held up


def fast_layouts(args: Sequence[Any]):
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


def chunks_of(n: int) -> list[tuple[int, int]]:
    """[0, n) cut into chunks that depend on n alone (never on the thread count, so that
    a sum's per-chunk accumulators, and so its bits, are the same on 1 thread or many):
    one below THREAD_MIN elements, else about n / CHUNK of them, at most MAX_CHUNKS."""
    k = max(1, min(MAX_CHUNKS, n // CHUNK)) if n >= THREAD_MIN else 1
    step = -(-n // k)
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


@dataclass
class FastPlan:
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
    chooser: ThreadChooser = field(default_factory=ThreadChooser)   # thread counts of large calls
    large: Any = None       # large_call's function once asked for (False: no large entry)


def fast_plan(kernel: Kernel, active, layouts, dtype, value: str) -> FastPlan:
    def make() -> FastPlan:
        spec = LoopSpec(layouts, value=value, partials=bool(active), seed="scalar" if active else "none")
        driver = _fast_driver(kernel, active, spec, dtype)
        aidx = [kernel.params.index(a) for a in active]
        return FastPlan(driver.cfunc, layouts.index("contig"), aidx, [layouts[i] == "contig" for i in aidx],
                         driver, None if active else False)
    return kernel.cached(("fast", value, active, layouts, dtype), make)


def entry_of(plan, compiled) -> Any:
    """`plan.entry`, made on the second call (see FastPlan)."""
    if plan.entry is None:
        if plan.called:
            plan.entry = compiled.python_entry() or False
        plan.called = True
    return plan.entry


def fast_sum_dual(kernel: Kernel, args, active, scale, fast, value: str = "sum"):
    layouts, shape, dtype = fast
    fp = fast_plan(kernel, active, layouts, dtype, value)
    entry = fp.entry if fp.entry is not None else entry_of(fp, fp.driver)
    if entry:   # one call into machine code, up to llvm_entry.ENTRY_MAX elements
        res = entry(*args, scale, False)
        if res is not NotImplemented:
            kernel.entries[(value, active)] = entry     # the signature in use, for derivative's hot path
            return res[0], list(res[1:])
        if value == "none":     # larger: the large entry on one thread, or the chunks on more (large_call)
            large = fp.large if fp.large is not None else large_of(fp, layouts, dtype)
            res = large(*args, scale, False) if large else NotImplemented
            if res is not NotImplemented:
                # for derivative's hot path (the small entry, then LARGE), but not for a gradient
                # proven zero: sum_dual's zeros (zerograds) cost less than the driver's pass, and
                # the hot path would bypass them (the proof is made here at the earliest on the
                # kernel's second call: the entry exists only from then, `entry_of`)
                if not kernel.zero_partials(active):
                    kernel.entries[(value, active)], kernel.entries[("large", active)] = entry, large
                return res[0], list(res[1:])
    stub = kernel.cached(("stub", value, active, layouts, dtype.num),
                         lambda: sum_dual_stub(fast_plan(kernel, active, layouts, dtype, value), layouts, dtype,
                                                value))
    res = stub(*args, scale)
    if res is not None:
        return res
    fp = fast_plan(kernel, active, layouts, dtype, value)
    grads = [np.empty(shape, dtype) if c else None for c in fp.contig_grads]
    totals = threaded_sum_dual(fp, args, layouts, dtype, grads, scale, args[fp.first_contig].size, value)
    g0 = 1 if value == "sum" else 0   # slot of the first scalar grad: after the value sum, if any
    return (rounded(totals[0], dtype) * scale if g0 else None,
            [g if g is not None else rounded(totals[g0 + k], dtype) for k, g in enumerate(grads)])


def large_of(fp: FastPlan, layouts, dtype):
    """`fp.large`, made on first use: large_call over the driver's large entry, or False."""
    big = fp.driver.large_python_entry()
    fp.large = large_call(fp, big, layouts, dtype) if big else False
    return fp.large


def large_call(fp: FastPlan, big, layouts, dtype):
    """The gradient alone of array parameters at any size, called as the large entry is
    (`(p1, ..., pn, scale, mean) -> (None, grads...)`, NotImplemented for what it does not
    take): below THREAD_MIN elements the large entry; from there the large entry on one
    thread or the chunks (threaded_sum_dual) on more, as a ThreadChooser of its own decides
    by timing the whole of each (S2SAD_NUM_THREADS, a dask block's one thread: that count).

    Whole calls, because the two differ outside the kernel: the large entry is one call
    into machine code, the chunks cost 20-60 us of Python (their calls, the pool's
    hand-over, the gradients' arrays). fp.chooser, timing the kernel alone, chose two
    threads where one thread's whole call was faster (measured on the busy znver5 at 1M,
    `sum(abs(x))`: the default count 1.24-1.27x one thread's time). The bits are the same
    either way: no accumulator (large_qualifies), each element's gradient its own."""
    first = fp.first_contig
    chooser = ThreadChooser()
    n_args = len(layouts)

    def work(a, shape, n: int, count: int, out: list) -> None:
        res = big(*a) if count == 1 else NotImplemented
        if res is NotImplemented:   # (on more threads; or what the entry declines: an int scalar)
            grads = [np.empty(shape, dtype) for _ in fp.grad_slots]
            scale = a[n_args] / n if a[n_args + 1] else a[n_args]
            threaded_sum_dual(fp, a[:n_args], layouts, dtype, grads, scale, n, "none", threads=count)
            res = (None, *grads)
        out.append(res)

    def call(*a):
        x = a[first] if len(a) == n_args + 2 else None
        if type(x) is not np.ndarray or x.size < THREAD_MIN:   # (one chunk, one thread; or declined)
            return big(*a)
        # what the chunks take, checked before any timing (a declined call's time would
        # mislead the chooser)
        fast = fast_layouts(a[:n_args])
        if (fast is None or fast[0] != layouts or fast[2] != dtype or type(a[n_args]) is not float
                or (a[n_args + 1] is not True and a[n_args + 1] is not False)):
            return NotImplemented
        n, out = x.size, []
        chooser.run(n, lambda count: work(a, fast[1], n, count, out))
        return out[0]
    call.chooser = chooser
    return call


def sum_dual_stub(fp: FastPlan, layouts, dtype, value: str = "sum"):
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
    if DATA_OFFSET is not None:  # read the data pointer inline: a call less per array
        text = re.sub(r"PTR\((\w+)\)", rf"from_address(id(\1) + {DATA_OFFSET}).value", text)
    ns = {"cfunc": fp.cfunc, "PTR": ptr, "from_address": from_address, "zeros": np.zeros,
          "empty": np.empty, "dtype": dtype, "THREAD_MIN": THREAD_MIN, "ACC_DTYPE": ACC_DTYPE,
          "float32_total": lambda v: float(np.float32(v))}
    exec(compile(text, "<s2sad call stub>", "exec"), ns)
    return ns["stub"]


def threaded_sum_dual(fp: FastPlan, args, layouts, dtype, grads, scale, n, value: str = "sum",
                      threads: int | None = None):
    """Chunks of the index space (chunks_of(n)) on `threads`, else the threads fp.chooser picks, each
    chunk with its own float64 accumulators (the value sum first when value is "sum",
    then each scalar grad), summed in float64 in chunk order."""
    chunks = chunks_of(n)
    g0 = 1 if value == "sum" else 0   # slot of the first scalar grad
    width = max(1, g0 + len(grads))
    accs = np.zeros(width * len(chunks), ACC_DTYPE)
    itemsize, accsize = dtype.itemsize, ACC_DTYPE.itemsize
    base = [ptr(a) if l == "contig" else a for a, l in zip(args, layouts)]
    gbase = [ptr(g) if g is not None else None for g in grads]
    acc0 = ptr(accs)
    # without accumulators the chunks cannot change a bit: one thread makes one call
    whole = not g0 and all(g is not None for g in grads)

    def argv(lo, hi, c):
        v = [1, hi - lo]
        v += [b + lo * itemsize if l == "contig" else b for b, l in zip(base, layouts)]
        acc = acc0 + c * width * accsize
        if g0:
            v.append(acc)
        if grads:
            v.append(scale)
            v += [g + lo * itemsize if g is not None else acc + (g0 + k) * accsize for k, g in enumerate(gbase)]
        return v

    cfunc = fp.cfunc

    def work(threads):
        if whole and threads == 1:
            cfunc(*argv(0, n, 0))
            return
        calls = [argv(lo, hi, c) for c, (lo, hi) in enumerate(chunks)]   # the chunks' only Python: their calls
        run_chunks(lambda c: cfunc(*calls[c]), len(calls), threads)

    if threads is not None:
        work(threads)
    else:
        on_threads(fp.chooser, n, len(chunks), work)
    return accs.reshape(len(chunks), width).sum(axis=0)


def on_threads(chooser: ThreadChooser, n: int, n_chunks: int, work) -> None:
    """work(threads): one thread for a single chunk, else the chooser's count."""
    if n_chunks <= 1:
        work(1)
    else:
        chooser.run(n, work)


def fast_apply(kernel: Kernel, args, fast):
    layouts, shape, dtype = fast
    fp = fast_plan(kernel, (), layouts, dtype, "store")
    cfunc = fp.cfunc
    out = np.empty(shape, dtype)
    n = out.size
    itemsize = dtype.itemsize

    def call(lo, hi):
        argv = [1, hi - lo]
        for a, l in zip(args, layouts):
            argv.append(ptr(a) + lo * itemsize if l == "contig" else a)
        argv.append(ptr(out) + lo * itemsize)
        cfunc(*argv)

    chunks = chunks_of(n)

    def work(threads):      # elementwise: the chunks cannot change a bit
        if threads == 1:
            call(0, n)
        else:
            run_chunks(lambda c: call(*chunks[c]), len(chunks), threads)

    on_threads(fp.chooser, n, len(chunks), work)
    return out

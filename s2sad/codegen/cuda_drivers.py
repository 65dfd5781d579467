"""The CUDA drivers: the `extern "C" __global__` kernels that walk a loop's index space or a scan.

`loop_driver_text` writes a LoopSpec's grid-stride driver and, when it reduces anything,
its `__finish` kernel (per-block partial sums in shared memory via `BLOCK_SUM`, then one
thread adding them into their destinations); `scan_driver_text` writes a ScanSpec's
one-thread driver (forward sweep, then the reverse sweep over the tape). Both follow the
ABI of codegen/cuda.py's docstring, parameter for parameter as `cuda_abi.driver_args`
lists them, and call the `__device__` functions `cuda_c` wrote under the C names given.
"""
from __future__ import annotations

from ..kernel import KernelModule, LoopSpec, ScanSpec, active_indices
from .cuda_abi import ACC, CTYPES, driver_args, driver_name, element, finish_args, param_cnames, reduced
from .cuda_c import indent

BLOCK_SUM = """\
#ifndef S2SAD_MAX_BLOCK
#define S2SAD_MAX_BLOCK 256
#endif

// Sums s[q * S2SAD_MAX_BLOCK + t] over the block's threads t into s[q * S2SAD_MAX_BLOCK]
// for q < nq. Any blockDim.x <= S2SAD_MAX_BLOCK; every thread of the block must call it.
__device__ void s2sad_block_sum(double* s, int nq)
{
    const unsigned int t = threadIdx.x;
    unsigned int h = 1;
    while (2 * h < blockDim.x) h *= 2;
    __syncthreads();
    for (; h > 0; h /= 2) {
        if (t < h && t + h < blockDim.x) {
            for (int q = 0; q < nq; ++q) s[q * S2SAD_MAX_BLOCK + t] += s[q * S2SAD_MAX_BLOCK + t + h];
        }
        __syncthreads();
    }
}"""



def loop_driver_text(kmod: KernelModule, spec: LoopSpec, tag: str, fnames: dict[str, str],
                 tuple_fns: dict[str, int]) -> list[str]:
    T, sfx = CTYPES[tag]
    name = driver_name(kmod, spec, tag)
    args = driver_args(kmod, spec)
    cnames = param_cnames(kmod, spec)
    active = active_indices(kmod)
    red = reduced(kmod, spec)
    strided_any = any(spec.layouts[j] == "strided" for j in range(len(kmod.params)))

    def elem(base: str, j: int) -> str:
        return element(base, spec.layouts[j])

    body: list[str] = []
    if strided_any:
        body += ["const long long o = k / n_inner;", "const long long i = k - o * n_inner;"]
    call_args = ", ".join(elem(cnames[j], j) for j in range(len(kmod.params)))
    if spec.needs_dual:
        dual = fnames[kmod.dual_entry]
        arity = tuple_fns.get(dual, 0)
        if arity != 1 + len(active):
            raise ValueError(f"dual entry {kmod.dual_entry!r} returns {arity} values, "
                             f"expected {1 + len(active)} (value and one partial per active param)")
        body.append(f"const {dual}_ret r = {dual}({call_args});")
        value = "r.r0"
        partial = [f"r.r{m + 1}" for m in range(len(active))]
    else:
        entry = fnames[kmod.entry]
        if entry in tuple_fns:
            raise ValueError(f"entry {kmod.entry!r} returns a tuple")
        body.append(f"const {T} value = {entry}({call_args});")
        value = "value"
        partial = []
    sums = {}
    for q, (role, j) in enumerate(red):
        sums[(role, j)] = "sum_acc" if role == "acc" else f"sum_{cnames[j]}_bar"
    if spec.value == "store":
        body.append(f"out[k] = {value};")
    elif spec.value == "sum":
        body.append(f"{sums[('acc', None)]} += {value};")
    if spec.partials:
        if spec.seed == "array":
            body.append(f"const {T} s = seed[k];")
            s = "s"
        else:
            s = "seed"
        for m, j in enumerate(active):
            g = cnames[j] + "_bar"
            lay = spec.layouts[j]
            if lay == "scalar":
                body.append(f"{sums[('grad', j)]} += {partial[m]} * {s};")
            elif lay == "contig":
                body.append(f"{g}[k] = {partial[m]} * {s};")
            else:
                body.append(f"atomicAdd(&{g}[o * {g}_so + i * {g}_si], {partial[m]} * {s});")
    if spec.tangents:
        terms = [f"{partial[m]} * {elem(cnames[j] + '_dot', j)}" for m, j in enumerate(active)]
        body.append(f"out_dot[k] = {' + '.join(terms) if terms else '0.0' + sfx};")

    lines = [f'extern "C" __global__ void {name}(']
    lines += [f"    {a.decl(T)}{',' if n + 1 < len(args) else ')'}" for n, a in enumerate(args)]
    lines += ["{",
              "    const long long n = n_outer * n_inner;",
              "    const long long stride = (long long)gridDim.x * blockDim.x;"]
    if red:
        lines.append(f"    {ACC} " + ", ".join(f"{sums[r]} = 0.0" for r in red) + ";")
    lines += ["    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {",
              *indent(body, 2), "    }"]
    if red:
        nq = len(red)
        lines += [f"    // block sums of the {nq} reduced quantit{'y' if nq == 1 else 'ies'} -> one partial per block",
                  f"    __shared__ {ACC} red[{nq} * S2SAD_MAX_BLOCK];"]
        lines += [f"    red[{q} * S2SAD_MAX_BLOCK + threadIdx.x] = {sums[r]};" for q, r in enumerate(red)]
        lines += [f"    s2sad_block_sum(red, {nq});", "    if (threadIdx.x == 0) {"]
        lines += [f"        partials[{q} * gridDim.x + blockIdx.x] = red[{q} * S2SAD_MAX_BLOCK];"
                  for q in range(nq)]
        lines += ["    }"]
    lines.append("}")
    out = ["\n".join(lines)]

    if red:
        fargs = finish_args(kmod, spec)
        fl = [f'extern "C" __global__ void {name}__finish(']
        fl += [f"    {a.decl(T)}{',' if n + 1 < len(fargs) else ')'}" for n, a in enumerate(fargs)]
        fl += ["{", "    // one thread adds the per-block partials into their destinations",
               "    if (blockIdx.x != 0 || threadIdx.x != 0) return;"]
        for q, a in enumerate(fargs[2:]):
            fl += [f"    {ACC} t{q} = 0.0;",
                   f"    for (long long b = 0; b < n_parts; ++b) t{q} += partials[{q} * n_parts + b];",
                   f"    {a.name}[0] += t{q};"]
        fl.append("}")
        out.append("\n".join(fl))
    return out


def scan_driver_text(kmod: KernelModule, spec: ScanSpec, tag: str, fnames: dict[str, str],
                      tuple_fns: dict[str, int]) -> list[str]:
    """kernel.py's scan driver, run by one thread: the forward sweep (state in locals,
    the state before each element onto the tape when there are grads), then the reverse
    sweep backwards over the elements, summing as `run_scan` does."""
    T = CTYPES[tag][0]
    name = driver_name(kmod, spec, tag)
    args = driver_args(kmod, spec)
    cnames = param_cnames(kmod, spec)
    k, n_p = spec.n_state, len(spec.layouts)
    states = cnames[n_p:]
    active = active_indices(kmod, spec)
    n_wrt = len(kmod.active) if spec.grads else 0

    def elem(base: str, j: int) -> str:
        return element(base, spec.layouts[j])

    def call(fn: str, extra: list[str]) -> str:
        return f"{fn}({', '.join([elem(cnames[j], j) for j in range(n_p)] + extra)})"

    index = (["const long long o = k / n_inner;", "const long long i = k - o * n_inner;"]
             if "strided" in spec.layouts else [])
    entry = fnames[kmod.entry]
    fwd = list(index)
    if spec.grads:
        fwd += [f"tape[k * {k} + {j}] = {s};" for j, s in enumerate(states)]
    if k or entry in tuple_fns:
        fwd.append(f"const {entry}_ret r = {call(entry, list(states))};")
        value = "r.r0"
        fwd += [f"{s} = r.r{j + 1};" for j, s in enumerate(states)]
    else:
        fwd.append(f"const {T} value = {call(entry, [])};")
        value = "value"
    if spec.value == "store":
        fwd.append(f"out[k] = {value};")
    elif spec.value == "sum":
        fwd.append(f"sum_acc += {value};")

    lines = [f'extern "C" __global__ void {name}(']
    lines += [f"    {a.decl(T)}{',' if n + 1 < len(args) else ')'}" for n, a in enumerate(args)]
    lines += ["{",
              "    // a scan: the elements in order, threading the state, in one thread (grid 1, block 1)",
              "    if (blockIdx.x != 0 || threadIdx.x != 0) return;",
              "    const long long n = n_outer * n_inner;"]
    lines += [f"    {T} {s} = state[{j}];" for j, s in enumerate(states)]
    if spec.value == "sum":
        lines.append(f"    {ACC} sum_acc = 0.0;")
    lines += ["    for (long long k = 0; k < n; ++k) {", *indent(fwd, 2), "    }"]
    lines += [f"    state[{j}] = {s};" for j, s in enumerate(states)]
    if spec.value == "sum":
        lines.append("    acc[0] += sum_acc;")

    if spec.grads:
        dual = fnames[kmod.dual_entry]
        rev = list(index)
        rev.append(f"const {dual}_ret r = {call(dual, [f'tape[k * {k} + {j}]' for j in range(k)])};")
        if spec.seed == "array":
            rev.append(f"const {T} sd = seed[k];")
            sd = "sd"
        else:
            sd = "seed"

        def combine(w: int) -> str:
            """seed * d value/d w + sum_j lambda_j * d sj'/d w (run_scan's order)."""
            terms = [f"r.r{1 + k + w} * {sd}"]
            terms += [f"{s}_bar * r.r{1 + k + (1 + j) * n_wrt + w}" for j, s in enumerate(states)]
            return " + ".join(terms)

        sums = []
        for m, j in enumerate(active):
            g = cnames[j] + "_bar"
            lay = spec.layouts[j]
            if lay == "scalar":
                rev.append(f"sum_{g} += {combine(m)};")
                sums.append(g)
            elif lay == "contig":
                rev.append(f"{g}[k] = {combine(m)};")
            else:
                rev.append(f"{g}[o * {g}_so + i * {g}_si] += {combine(m)};")
        rev += [f"const {T} {s}_bar_next = {combine(len(active) + j)};" for j, s in enumerate(states)]
        rev += [f"{s}_bar = {s}_bar_next;" for s in states]
        lines.append("    // reverse sweep: <state>_bar is the adjoint of the state after element k")
        lines += [f"    {T} {s}_bar = state_bar[{j}];" for j, s in enumerate(states)]
        lines += [f"    {ACC} sum_{g} = 0.0;" for g in sums]
        lines += ["    for (long long k = n - 1; k >= 0; --k) {", *indent(rev, 2), "    }"]
        lines += [f"    state_bar[{j}] = {s}_bar;" for j, s in enumerate(states)]
        lines += [f"    {g}[0] += sum_{g};" for g in sums]
    lines.append("}")
    return ["\n".join(lines)]

"""A fused plan (elementwise.LossPlan: one kernel and how the loss reduces it) -> its
derivative, as Python source that runs: the array-level function grad execs, which calls
the runtime's kernel entry points (sum_dual, sum_grads, scan_grads) on the kernel.

The derivative programs s2sad writes come from passes/: this module for a fused plan,
reverse.Generator for an array program; both write the same frame through adjoint_text
(`def <f>__<variant>(<params>, *, <free>)`, the `# Grad of:` line, tuples). For
variant "grad", `<f>__grad` returns the gradients only and its kernel computes no value
(a scan still does: its state is written back as a plain call would).

Invariant: the text depends on the plan, the differentiated arguments and the variant
only; what it calls by name is what plans.Compiled.implementation binds.
"""
from __future__ import annotations

from .adjoint_text import def_line, grad_of_line, tuple_text
from .elementwise import LossPlan
from .rowcolumns import Column, index_text


def input_text(kind: str, ref, params) -> str:
    """The expression, in generated code, that gives a kernel parameter's value."""
    if kind == "arg":
        return params[ref]
    if kind == "free":
        return ref
    if ref.origin == "free":
        return ref.param
    if isinstance(ref, Column):   # read (and its shape checked) at each call
        return f"columns({ref.base}, ({ref.param!r},))[0]"
    return ref.base + "[" + index_text(ref.index) + "]"


def column_reads(plan: LossPlan, params) -> tuple[list[str], list[str]]:
    """Lines reading each argument's row columns at once (`X__rows = columns(X, ...)`),
    and the kernel's arguments as text."""
    kargs = [input_text(kind, ref, params) for kind, ref in plan.inputs]
    blocks: dict[str, list[int]] = {}
    for j, (kind, ref) in enumerate(plan.inputs):
        if kind == "capture" and isinstance(ref, Column) and ref.origin == "param":
            blocks.setdefault(ref.base, []).append(j)
    lines = []
    for base, js in blocks.items():
        names = tuple(plan.inputs[j][1].param for j in js)
        lines.append(f"    {base}__rows = columns({base}, {names!r})")
        for k, j in enumerate(js):
            kargs[j] = f"{base}__rows[{k}]"
    return lines, kargs


def read_by_columns(plan: LossPlan, pairs) -> dict[int, tuple[list[str], list[int]]]:
    """Arguments read only through a row function's columns: their kernel parameters and columns."""
    cols = {ref.param: ref.col for kind, ref in plan.inputs if kind == "capture" and isinstance(ref, Column)}
    out: dict[int, tuple[list[str], list[int]]] = {}
    mixed = set()
    for kp, i, index in pairs:
        if index is None or kp not in cols:
            mixed.add(i)
        else:
            out.setdefault(i, ([], []))
            out[i][0].append(kp)
            out[i][1].append(cols[kp])
    return {i: v for i, v in out.items() if i not in mixed}


def free_names(plan: LossPlan) -> list[str]:
    """The derivative's keyword parameters: free data arrays and captured free elements."""
    return [ref if kind == "free" else ref.param for kind, ref in plan.inputs
            if kind == "free" or (kind == "capture" and ref.origin == "free")]


def fused_derivative(plan: LossPlan, params, fname: str, kernel_name: str, kernel_params, argnums,
                     pairs, variant: str) -> tuple[str, tuple[str, ...]]:
    """The derivative's source and the kernel's active params (states included) whose
    dual it calls. `pairs`: (kernel param, argument index, captured index or None) per
    differentiated kernel input (plans.Compiled.active_pairs)."""
    grad_only = variant == "grad"
    active = tuple(k for k, _, _ in pairs)
    column_lines, kargs = column_reads(plan, params)
    bars = [f"{params[i]}_bar" for i in argnums]
    lines = [def_line(fname, variant, params, free_names(plan)),
             f"    {grad_of_line(plan.return_line, plan.return_location)}"] + column_lines
    k = kernel_name
    karg_tuple = tuple_text(kargs)
    active_tuple = tuple_text(repr(a) for a in active)
    got_tuple = tuple_text(f"{params[i]}_bar" if index is None else f"{kp}_bar" for kp, i, index in pairs)
    if plan.reduction == "mean":
        lines.append(f"    scale = 1.0 / broadcast_size({', '.join(kargs)})")
        scale = "scale"
    else:
        scale = "1.0"
        if plan.reduction == "none":
            lines.append(f"    check_scalar_loss({', '.join(kargs)})")
    if plan.program.state:
        cells = ", ".join(cell.describe() for cell in plan.program.state)
        lines.append(f"    # {k} writes state ({cells}): its elements run in order, threading the state,")
        lines.append("    # then a reverse sweep; the state is written back once, as a plain call would")
        lines.append("    state = read_state()")
        lines.append(f"    value, {got_tuple}, state = scan_grads({k}, {karg_tuple}, active={active_tuple}, "
                     f"state=state, seed={scale})")
        lines.append("    write_state(state)")
    elif grad_only:
        lines.append(f"    {got_tuple} = sum_grads({k}, {karg_tuple}, active={active_tuple}, scale={scale})")
    else:
        lines.append(f"    value, {got_tuple} = sum_dual({k}, {karg_tuple}, active={active_tuple}, scale={scale})")
    direct = {i for _, i, index in pairs if index is None}
    by_rows = read_by_columns(plan, pairs)
    for i in argnums:
        if i in by_rows:
            kps, cols = by_rows[i]
            lines.append(f"    {params[i]}_bar = rows_gradient({params[i]}, ({', '.join(k + '_bar' for k in kps)},), "
                         f"{tuple(cols)!r}, zeros_like)  # its rows' columns, read at {plan.capture_location(kps[0])}")
        elif i not in direct:
            note = "" if any(j == i for _, j, _ in pairs) else "  # the loss does not read it"
            lines.append(f"    {params[i]}_bar = zeros_like({params[i]}){note}")
    for kp, i, index in pairs:
        if index is not None and i not in by_rows:
            lines.append(f"    {params[i]}_bar[{index_text(index)}] += {kp}_bar"
                         f"  # captured at {plan.capture_location(kp)}")
    bars_tuple = tuple_text(bars)
    lines.append(f"    return {bars_tuple}" if grad_only else f"    return value, {bars_tuple}")
    n_state = len(plan.program.state)
    state_params = tuple(kernel_params[len(kernel_params) - n_state:]) if n_state else ()
    return "\n".join(lines) + "\n", active + state_params


def with_kernel(text: str, kernel_name: str, kernel_source: str) -> str:
    """The derivative's source followed by its kernel's, as `s2sad.source` prints it."""
    return (text + "\n\n"
            f"# Kernel {kernel_name}: the loss's elementwise part, fused with its reduction.\n"
            f"# Its dual returns the value and one partial per active argument.\n"
            + kernel_source)

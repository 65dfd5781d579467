"""The generated derivative behind grad and value_and_grad: `Derivative`.

One Derivative per (function, argnums, backend, grad or value_and_grad, mode). Its
first call plans the function (plans.compiled), generates the array-level derivative
source (`source(g)` prints it: calls into the runtime's kernel entry points, or, for an
array program, passes/reverse.py's generated code) and execs it once per plan. Then
grad's wrapper calls `hot(*args)` first: the fused driver's entry called with the
user's arguments, one call into machine code; it declines (NotImplemented) whatever
it cannot take, and `__call__`, the full path, checks and runs it instead.

Invariant: generated code and hot paths are kept on the plan (`Compiled.generated`),
made under the planning lock, and follow the plan: a plan made again drops them.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from . import backends, runtime
from .arguments import argnums_tuple, as_result, as_value, check_args, check_call, converted, zeros_like
from .deep import deeply
from .errors import NonScalarLossError
from .frontend import bound
from .passes.rowelems import Column, index_text, rows_gradient
from .plancache import PLANNING
from .plans import Compiled, compiled, is_array, read_state, return_location, write_state
from .targets import arity, bind

def decline(*args):
    """A hot path that takes no call (Derivative._hot_path)."""
    return NotImplemented


class Derivative:
    """The generated value-and-gradient function of one (fun, argnums, backend); for
    `what` == "grad", the generated gradient function (calling it gives (None, grads))."""

    # what a new Derivative starts with (class attributes: a training loop that makes a new
    # grad object per step pays for each attribute set in __init__)
    _impl = None
    _array_impl = None      # an array program's generated function, argnums
    _text = None
    _fast = None
    _plan = None
    _chosen = None          # backends.choose(backend), on the first call (see `chosen`)
    hot = staticmethod(decline)     # see _hot_path
    layout = None           # the plan's layout (passes/containers.py): set for leaf calls (treecalls)
    trees = None            # treecalls.TreeCalls, made at the first call with containers

    def __init__(self, fun: Callable, argnums, backend: str, what: str, mode: str = "auto"):
        self.mode = mode
        self.fun = fun      # what targets.target gave
        self.arity = arity(fun)
        self.argnums_spec = argnums
        self.argnums = argnums if type(argnums) is tuple else argnums_tuple(argnums)
        self.backend = backend     # the name (or object) given
        self.what = what

    @property
    def chosen(self) -> backends.Choice:
        """The backend chosen for this derivative: one registry lookup, at its first call
        (an unknown name is refused then, as a call with it always was)."""
        if self._chosen is None:
            self._chosen = backends.choose(self.backend)
        return self._chosen

    @property
    def c(self) -> Compiled:
        c = compiled(self.fun, self.layout)
        if c is not self._plan:  # planned (again): generated code and call state follow
            self._plan, self._impl, self._text, self._fast, self.hot = c, None, None, None, decline
            self._array_impl = None
        return c

    @deeply
    def source(self) -> str:
        if self._text is None:
            with bound(self.fun), PLANNING:
                self._text = self._generate()
        return self._text

    def _generate(self) -> str:
        c = self.c
        if is_array(c):
            return c.source(tuple(i % len(c.params) for i in self.argnums), self.mode,
                            "grad" if self.grad_only else "value_and_grad")
        text, active = self._array_level()
        k = c.kernel.name
        return (text + "\n\n"
                f"# Kernel {k}: the loss's elementwise part, fused with its reduction.\n"
                f"# Its dual returns the value and one partial per active argument.\n"
                + c.kernel.module(active).source())

    @property
    def grad_only(self) -> bool:
        """grad: the generated function returns the gradients only, and computes the
        loss's value only where they need it."""
        return self.what == "grad"

    def _array_level(self) -> tuple[str, tuple[str, ...]]:
        """The array-level derivative (the code that runs) and the kernel's active params
        (states included) whose dual it calls. For grad, `<f>__grad` returns the gradients
        only and its kernel computes no value (a scan still does: its state is written
        back as a plain call would)."""
        c = self.c
        grad_only = self.grad_only
        argnums = [i % len(c.params) for i in self.argnums]
        pairs = c.active_pairs(tuple(argnums))
        active = tuple(k for k, _, _ in pairs)
        column_lines, kargs = _column_reads(c)
        free = list(c.free_values())
        sig = ", ".join(c.params) + (", *, " + ", ".join(free) if free else "")
        bars = [f"{c.params[i]}_bar" for i in argnums]
        fname = c.fun.__name__ if c.fun.__name__.isidentifier() else "loss"
        lines = [f"def {fname}__{'grad' if grad_only else 'value_and_grad'}({sig}):",
                 f"    # Grad of: {c.plan.return_line}    [{c.plan.return_location}]"] + column_lines
        k = c.kernel.name
        karg_tuple = "(" + ", ".join(kargs) + ("," if len(kargs) == 1 else "") + ")"
        active_tuple = "(" + ", ".join(repr(a) for a in active) + ("," if len(active) == 1 else "") + ")"
        got = [f"{c.params[i]}_bar" if index is None else f"{kp}_bar" for kp, i, index in pairs]
        got_tuple = "(" + ", ".join(got) + ("," if len(got) == 1 else "") + ")"
        if c.plan.reduction == "mean":
            lines.append(f"    scale = 1.0 / broadcast_size({', '.join(kargs)})")
            scale = "scale"
        else:
            scale = "1.0"
            if c.plan.reduction == "none":
                lines.append(f"    check_scalar_loss(broadcast_size({', '.join(kargs)}))")
        if c.plan.program.state:
            cells = ", ".join(cell.describe() for cell in c.plan.program.state)
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
        by_rows = _read_by_columns(c, pairs)
        for i in argnums:
            if i in by_rows:
                kps, cols = by_rows[i]
                lines.append(f"    {c.params[i]}_bar = rows_gradient({c.params[i]}, ({', '.join(k + '_bar' for k in kps)},), "
                             f"{tuple(cols)!r}, zeros_like)  # its rows' columns, read at {c.plan.capture_location(kps[0])}")
            elif i not in direct:
                note = "" if any(j == i for _, j, _ in pairs) else "  # the loss does not read it"
                lines.append(f"    {c.params[i]}_bar = zeros_like({c.params[i]}){note}")
        for kp, i, index in pairs:
            if index is not None and i not in by_rows:
                lines.append(f"    {c.params[i]}_bar[{index_text(index)}] += {kp}_bar"
                             f"  # captured at {c.plan.capture_location(kp)}")
        bars_tuple = f"({', '.join(bars)}{',' if len(bars) == 1 else ''})"
        lines.append(f"    return {bars_tuple}" if grad_only else f"    return value, {bars_tuple}")
        state_params = c.kernel.params[len(c.kernel.params) - len(c.plan.program.state):] if c.plan.program.state else ()
        return "\n".join(lines) + "\n", active + tuple(state_params)

    def _key(self, c, what: str) -> tuple:
        return (what, self.what, self.chosen, tuple(i % len(c.params) for i in self.argnums),
                isinstance(self.argnums_spec, (tuple, list)))

    def implementation(self) -> Callable:
        if self._impl is None:
            c = self.c
            key = self._key(c, "impl")
            with PLANNING:
                if key not in c.generated:
                    c.generated[key] = self._generated_implementation(c)
            self._impl = c.generated[key]
        return self._impl

    def _generated_implementation(self, c) -> Callable:
        namespace = {
            c.kernel.name: c.kernel,
            "sum_dual": functools.partial(runtime.sum_dual, backend=self.chosen),
            "sum_grads": functools.partial(runtime.sum_grads, backend=self.chosen),
            "broadcast_size": runtime.broadcast_size,
            "check_scalar_loss": functools.partial(_check_scalar_loss, c),
            "zeros_like": zeros_like,
            "columns": c.columns,
            "rows_gradient": rows_gradient,
            "scan_grads": _scan_value_and_grads(self.chosen),
            "read_state": functools.partial(read_state, c),
            "write_state": functools.partial(write_state, c),
        }
        text = self._array_level()[0]
        exec(compile(text, f"<s2sad derivative of {c.name}>", "exec"), namespace)
        suffix = "__grad" if self.grad_only else "__value_and_grad"
        return next(v for k, v in namespace.items() if k.endswith(suffix))

    def bind(self, args: Sequence[Any], kwargs: dict) -> tuple:
        """The arguments of a call with keywords or defaults, one per parameter in order."""
        return bind(self.fun, args, kwargs)

    @deeply
    def __call__(self, *args):
        if len(args) != self.arity:     # defaults to fill in (grad_fun binds keywords)
            args = bind(self.fun, args, {})
            r = self.hot(*args)
            if r is not NotImplemented:
                return (None, r) if self.grad_only else r
        with bound(self.fun):   # the plan reads this function's cells and globals
            return self._call(args)

    def _call(self, args):
        args = converted(args, self.argnums)
        fast = self._fast
        if fast is None or not fast[0].assumptions.hold(self.fun):
            c = self.c
            if is_array(c):
                return self._array_call(c, args)
            # the loss is a float unless it sums an int or bool kernel (a count); the mean
            # of one is a float, as numpy's is
            float_value = c.kernel.module(()).result_kind == "float" or c.plan.reduction == "mean"
            has_free = bool(c.free_values())
            fast = self._fast = (c, self.implementation(), float_value, has_free,
                                 isinstance(self.argnums_spec, (tuple, list)), self.grad_only)
            self.hot = self._hot_path(c, float_value, has_free)
        c, impl, float_value, has_free, many, grad_only = fast
        check_call(c, args, self.argnums)
        res = impl(*args, **c.free_values()) if has_free else impl(*args)
        if grad_only:   # (None, grads): the value was not computed
            value, grads = None, res
        else:
            value, grads = res
            if not float_value:
                value = int(round(value))
        if not many:
            return value, as_result(grads[0], args[self.argnums[0]])
        return value, tuple([as_result(g, args[i]) for g, i in zip(grads, self.argnums)])


    def _hot_path(self, c, float_value: bool, has_free: bool) -> Callable:
        """What grad and value_and_grad try first: `hot(*args)`, the fused driver's Python
        entry (codegen/llvm_entry.py) called with the user's arguments and the result
        picked from what it returns; one call into machine code from the user's call to
        the result. For the plain fused sum (the kernel's inputs are the loss's
        parameters in order, no captures, a sum or a mean; a float value), and the plain
        scan whose reverse sweep reads no tape (its state read before, written after).
        It declines (NotImplemented) whatever its entry declines, when the entry is not
        made yet (the first call), and when the plan's assumptions fail; the full path
        then runs, and checks. Made once per plan (as `make(FUN)`, FUN the function
        whose code it checks) and shared by the grad objects the plan serves."""
        key = self._key(c, "hot")
        with PLANNING:
            if key not in c.generated:
                c.generated[key] = self._hot_path_maker(c, float_value, has_free)
        return c.generated[key](self.fun)

    def _hot_path_maker(self, c, float_value: bool, has_free: bool) -> Callable:
        argnums = [i % len(c.params) for i in self.argnums]
        pairs = c.active_pairs(tuple(argnums))
        scan = bool(c.plan.program.state)
        plain = (self.chosen.fast_path and not has_free
                 and c.plan.reduction in ("sum", "mean") and (float_value or self.grad_only)
                 and not (scan and c.plan.reduction == "mean" and not self.grad_only)
                 and list(c.plan.inputs) == [("arg", j) for j in range(len(c.params))]
                 and all(index is None for _, _, index in pairs))
        if not plain:
            return lambda fun: decline
        active = tuple(k for k, _, _ in pairs)
        slot = {i: 1 + j for j, (_, i, _) in enumerate(pairs)}
        grads = [f"r[{slot[i]}]" for i in argnums]
        grads_text = grads[0] if not isinstance(self.argnums_spec, (tuple, list)) else \
            "(" + ", ".join(grads) + ("," if len(grads) == 1 else "") + ")"
        # a swapped __code__ or a failed assumption: the full path plans again
        checks = "entry is None" + (" or FUN.__code__ is not CODE" if hasattr(self.fun, "__code__") else "") \
            + (" or not hold(FUN)" if c.assumptions.entries else "")
        # a scan's entry takes the state's values after the arguments and returns the final
        # state after the gradients; the state is written back once, as the full path does
        state_in = ", *read_state(C, FUN)" if scan else ""
        text = (f"def hot(*args):\n"
                f"    entry = entries.get(KEY)\n"
                f"    if {checks}:\n"
                f"        return NotImplemented\n"
                f"    r = entry(*args{state_in}, 1.0, {c.plan.reduction == 'mean'})\n"
                f"    if r is NotImplemented:\n"
                f"        return r\n"
                + (f"    write_state(C, r[{1 + len(active)}:], FUN)\n" if scan else "")
                + f"    return {grads_text if self.grad_only else f'(r[0], {grads_text})'}\n")
        text = "def make(FUN):\n" + "".join("    " + line + "\n" for line in text.splitlines()) + "    return hot\n"
        ns = {"entries": c.kernel.entries, "KEY": ("scan" if scan else "none" if self.grad_only else "sum", active),
              "hold": c.assumptions.hold, "CODE": c.assumptions.code, "C": c,
              "read_state": read_state, "write_state": write_state}
        exec(compile(text, f"<s2sad hot path of {c.name}>", "exec"), ns)
        return ns["make"]

    def _array_call(self, c, args):
        """The derivative of an array program (passes/reverse.py): generated once per
        (argnums, mode, backend), checked and shaped like the fused path's. The
        generated function is kept with its plan (`_array_impl`), so that a call costs
        the plan's lookup, the argument checks and the call itself."""
        impl = self._array_impl
        if impl is None:   # (kept with the plan too: a new grad object of a known plan generates nothing)
            key = (self.argnums, self.mode, self.chosen, self.what)
            impl = c.generated.get(key)
            if impl is None:
                check_args(c, args, self.argnums)
                argnums = tuple(i % len(c.params) for i in self.argnums)
                with PLANNING:   # (generates the derivative's code once)
                    fn = c.implementation(argnums, self.mode, self.chosen,
                                          "grad" if self.grad_only else "value_and_grad")
                impl = c.generated[key] = (fn, argnums)
            self._array_impl = impl
        fn, argnums = impl
        check_call(c, args, self.argnums)
        free = c.free_values()
        res = fn(*args, **free) if free else fn(*args)
        if self.grad_only:
            value, grads = None, res
        else:
            value, grads = res
            value = as_value(value)
        if not isinstance(self.argnums_spec, (tuple, list)):
            return value, as_result(grads[0], args[argnums[0]])
        return value, tuple([as_result(g, args[i]) for g, i in zip(grads, argnums)])



def _column_reads(c) -> tuple[list[str], list[str]]:
    """Lines reading each argument's row columns at once (`X__rows = columns(X, ...)`),
    and the kernel's arguments as text."""
    kargs = [c.input_text(kind, ref) for kind, ref in c.plan.inputs]
    blocks: dict[str, list[int]] = {}
    for j, (kind, ref) in enumerate(c.plan.inputs):
        if kind == "capture" and isinstance(ref, Column) and ref.origin == "param":
            blocks.setdefault(ref.base, []).append(j)
    lines = []
    for base, js in blocks.items():
        params = tuple(c.plan.inputs[j][1].param for j in js)
        lines.append(f"    {base}__rows = columns({base}, {params!r})")
        for k, j in enumerate(js):
            kargs[j] = f"{base}__rows[{k}]"
    return lines, kargs


def _read_by_columns(c, pairs) -> dict[int, tuple[list[str], list[int]]]:
    """Arguments read only through a row function's columns: their kernel parameters and columns."""
    cols = {ref.param: ref.col for kind, ref in c.plan.inputs if kind == "capture" and isinstance(ref, Column)}
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


def _scan_value_and_grads(backend: backends.Choice):
    """scan_grads for generated code: (seed * sum of values, grads, final state)."""
    def scan_grads(kernel, args, active, state, seed):
        value, grads, final = runtime.scan_grads(kernel, args, active, state, seed=seed, backend=backend)
        return value * seed, grads, final
    return scan_grads



def _check_scalar_loss(c: Compiled, size: int) -> None:
    if size != 1:
        raise NonScalarLossError(
            f"{c.fun.__name__} returns an array of {size} elements, not a scalar loss",
            return_location(c),
            hint="grad needs a real scalar: reduce the result, e.g. return np.sum(...), or use s2sad.jvp/vjp.")



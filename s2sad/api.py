"""The user's entry points: grad, value_and_grad, jvp, vjp, broadcast, differentiate,
explain, source, defrule.

A function to differentiate is planned once (source -> `LossPlan` -> `Kernel`) and the
plan is cached by the function's code (plancache.PlanCache): it serves every function of
that code whose free names pass its Assumptions, and holds none of them; each call binds
the function called (frontend.bound), whose cells and globals the plan reads. The
derivative that runs is generated Python source (`source(g)` prints it) calling the
runtime's kernel entry points.
"""
from __future__ import annotations

import functools
import inspect
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from . import array_rules, backends, derivative_runtime, marks, rules, runtime
from .array_prims import register_vjp
from .array_rules import unbroadcast
from .backends.arraymodule import is_cupy
from .deep import deeply
from .errors import (NonDifferentiableInputError, NonScalarLossError, S2SADError, SourceLocation, StatefulError,
                     UnsupportedOperationError)
from .frontend import Assumptions, Resolver, bound, parse_function, recording
from .plancache import PLANNING, PlanCache
from .passes.arrayprog import build_program
from .passes.elementwise import LossPlan, plan_loss, plan_scalar
from .passes.normalize import normalize
from .passes.kernelpairs import choose_mode
from .passes.reverse import ArrayCompiled
from .runtime import Kernel
from .targets import arity, bind, entry_function, target

# ---------------------------------------------------------------- planning

_PLANS = PlanCache()


class Compiled:
    """A differentiated function's plan: its fused kernel and how the loss reduces it.
    `fun` is the function called now (bound) or the one planned, held weakly."""

    def __init__(self, fun: Callable, plan: LossPlan, kernel: Kernel, params: list[str], resolver: Any = None):
        self._handle = Resolver(fun)
        self.plan, self.kernel, self.params, self.resolver = plan, kernel, params, resolver
        self.assumptions: Any = None   # frontend.Assumptions: what the plan compiled in
        # generated derivatives and hot-path makers, shared by every grad object (and
        # closure) this plan serves: a new closure per step generates nothing
        self.generated: dict[tuple, Callable] = {}

    @property
    def fun(self) -> Callable:
        return self._handle.fn

    @property
    def name(self) -> str:
        return self.kernel.name

    def kernel_args(self, args: Sequence[Any]) -> list[Any]:
        """The value of each kernel parameter for a call with `args`."""
        vals = []
        for kind, ref in self.plan.inputs:
            if kind == "arg":
                vals.append(args[ref])
            elif kind == "free":
                vals.append(self.resolver.lookup(ref))
            elif ref.origin == "param":
                vals.append(ref.read(args[self.params.index(ref.base)]))
            else:
                vals.append(ref.read())
        return vals

    def input_text(self, kind: str, ref) -> str:
        """The expression, in generated code, that gives a kernel parameter's value."""
        if kind == "arg":
            return self.params[ref]
        if kind == "free":
            return ref
        if ref.origin == "free":
            return ref.param
        return ref.base + "[" + ", ".join(map(str, ref.index)) + "]"

    def free_values(self) -> dict[str, Any]:
        """Keyword arguments of the derivative: free data arrays and captured free
        elements, read now (at call time), as Python reads globals."""
        out = {}
        for kind, ref in self.plan.inputs:
            if kind == "free":
                out[ref] = self.resolver.lookup(ref)
            elif kind == "capture" and ref.origin == "free":
                out[ref.param] = ref.read()
        return out

    def active_pairs(self, argnums: tuple[int, ...]) -> list[tuple[str, int, tuple | None]]:
        """(kernel parameter, index of the function's argument, element index or None) for
        each differentiated kernel input: an argument, or an element captured from one."""
        out = []
        for j, (kind, ref) in enumerate(self.plan.inputs):
            if kind == "arg" and ref in argnums:
                out.append((self.kernel.params[j], ref, None))
            elif kind == "capture" and ref.origin == "param" and self.params.index(ref.base) in argnums:
                out.append((self.kernel.params[j], self.params.index(ref.base), ref.index))
        return out

    def active_for(self, argnums: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(k for k, _, _ in self.active_pairs(argnums))

    def per_argument(self, pairs, grads, args, argnums) -> list:
        """Kernel-parameter gradients -> one gradient per argument in argnums, captured
        elements scattered back to where they were read."""
        out = {i: g for (_, i, index), g in zip(pairs, grads) if index is None}
        for (_, i, index), g in zip(pairs, grads):
            if index is not None:
                if i not in out:
                    out[i] = _zeros_like(args[i])
                out[i][index] += g
        return [out[i] if i in out else _zeros_like(args[i]) for i in argnums]


def compiled(fun: Callable) -> Compiled:
    """The plan serving `fun`: one made for its code whose compiled-in free names
    (constants, functions) hold the same values and whose data names the same kinds;
    else a new one, made once whatever the threads."""
    return _PLANS.get(fun, _serves, lambda: _plan(fun))


def _serves(c, fun: Callable) -> bool:
    return c.assumptions.hold(fun)


def _plan(fun: Callable):
    pf = entry_function(parse_function(fun))
    with recording() as log:
        try:
            plan = plan_loss(pf)
        except S2SADError as e:
            # not `R(elementwise)`: the whole function as an array program (passes/reverse.py)
            c = _array_compiled(fun, pf, e)
        else:
            kernel = Kernel(plan.program, plan.program.entry)
            c = Compiled(fun, plan, kernel, [a.id for a in pf.node.args.args], pf.resolver)
    c.assumptions = Assumptions(log, PlanCache.key_of(fun))
    return c


def calls_bound(api: Callable) -> Callable:
    """`api(fun, ...)` run with fun bound (frontend.bound): the plan reads fun's values."""
    @functools.wraps(api)
    def run(fun, *args, **kwargs):
        try:
            planned = target(fun, api.__name__)   # what api plans (and binds)
        except S2SADError:
            planned = fun       # api raises it
        with bound(planned):
            return api(fun, *args, **kwargs)
    return run


def _array_compiled(fun: Callable, pf, planner_error: S2SADError):
    """The array-level plan of a function the fused planner does not take; when neither
    takes it, the error that points at the problem (the planner's when both found the
    same place)."""
    try:
        c = ArrayCompiled(fun, pf, build_program(pf, Kernel), array_rules.HELPERS, derivative_runtime.runtime_names)
        c.generated = {}    # as Compiled.generated
        return c
    except S2SADError as e:
        array_error = e
    try:  # a straight-line scalar function, e.g. with `and`: one scalar kernel, as with control flow
        plan = plan_scalar(pf)
    except S2SADError:
        pass
    else:
        return Compiled(fun, plan, Kernel(plan.program, plan.program.entry), [a.id for a in pf.node.args.args],
                        pf.resolver)
    e = array_error
    if getattr(e, "in_scalar_code", False) and e.location is not None and planner_error.location is not None \
            and (e.location.filename, e.location.lineno) == (planner_error.location.filename,
                                                             planner_error.location.lineno):
        raise planner_error from None
    raise e from None


def _is_array(c) -> bool:
    return type(c) is not Compiled


def _argnums_tuple(argnums) -> tuple[int, ...]:
    return tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)


def _check_args(c: Compiled, args: Sequence[Any], argnums: tuple[int, ...]) -> None:
    if len(args) != len(c.params):
        raise TypeError(f"{c.fun.__name__}() takes {len(c.params)} arguments, {len(args)} given")
    for i in argnums:
        if not -len(args) <= i < len(args):
            raise S2SADError(f"argnums {i} is out of range for {c.fun.__name__}, which has {len(args)} arguments",
                             hint="Pick argnums among the function's positional parameters.")
        a = args[i]
        dtype = _dtype_of(a)
        if dtype.kind != "f" or dtype.itemsize > 8 or isinstance(a, (bool, int, np.integer, np.bool_)):
            what = f"dtype {dtype}" if isinstance(a, np.ndarray) else f"type {type(a).__name__}"
            raise NonDifferentiableInputError(
                f"argument '{c.params[i]}' of {c.fun.__name__} has {what}; only float arguments "
                f"(float32, float64) can be differentiated",
                parse_function(c.fun).location(),
                hint=f"Pass floats (e.g. np.asarray({c.params[i]}, dtype=np.float64)), or leave "
                     f"'{c.params[i]}' out of argnums.")
    for i, a in enumerate(args):
        _check_data(c, i, a)


def _check_data(c: Compiled, i: int, a: Any) -> None:
    """Refuse an argument whose numbers s2sad would change: complex (the kernels are
    real: the imaginary part would be dropped) or wider than float64 (long double: the
    kernels compute in float64)."""
    if type(a) is float or type(a) is int:
        return
    if isinstance(a, complex):
        dtype = np.dtype(complex)
    elif isinstance(a, (np.ndarray, np.generic)) or is_cupy(a):
        dtype = a.dtype
    elif isinstance(a, (list, tuple)):
        try:
            dtype = np.asarray(a).dtype
        except (TypeError, ValueError):     # ragged, or not numbers: not numeric data
            return
    else:
        return
    if dtype.kind == "c" or (dtype.kind == "f" and dtype.itemsize > 8):
        why = ("s2sad differentiates real code and would drop the imaginary part" if dtype.kind == "c" else
               "s2sad computes in float64 or float32 and would silently lose the extra precision")
        raise NonDifferentiableInputError(
            f"argument '{c.params[i]}' of {c.fun.__name__} has dtype {dtype}: {why}",
            parse_function(c.fun).location(),
            hint="Pass float64 or float32 values (e.g. np.asarray(..., dtype=np.float64))"
                 + ("; split complex numbers into their real and imaginary parts." if dtype.kind == "c" else "."))


def _check_call(c, args: Sequence[Any], argnums: tuple[int, ...]) -> None:
    """`_check_args` for a compiled derivative's call: the common case (float64/float32
    or float ndarray arguments, as many as the function takes) is checked here, quickly;
    anything else in full."""
    for i in argnums:
        a = args[i] if i < len(args) else None
        if not (type(a) is float or (type(a) is np.ndarray and a.dtype.kind == "f" and a.dtype.itemsize <= 8)):
            _check_args(c, args, argnums)
            return
    if len(args) != len(c.params):
        _check_args(c, args, argnums)
        return
    if len(args) > len(argnums):    # data arguments: nothing complex or long double
        for i, a in enumerate(args):
            if type(a) is not float:
                _check_data(c, i, a)


def _array_like(a: Any) -> bool:
    """An object numpy converts through `__array__` (not an array, number, list or cupy array)."""
    return (hasattr(type(a), "__array__") and not isinstance(a, (np.ndarray, np.generic))
            and not is_cupy(a))


def _converted(args: Sequence[Any], positions) -> tuple:
    """`args` with each array-like object (one with `__array__`, not an ndarray) at
    `positions` converted once, up front, by np.asarray: its gradient is an ndarray of
    the converted array's shape and dtype."""
    n = len(args)
    for i in positions:   # the common case, floats and ndarrays, quickly
        a = args[i] if -n <= i < n else None
        if type(a) is not np.ndarray and type(a) is not float and _array_like(a):
            break
    else:
        return args
    out = list(args)
    for i in positions:
        if -len(args) <= i < len(args) and _array_like(out[i]):
            out[i] = np.asarray(out[i])
    return tuple(out)


def _dtype_of(a: Any) -> np.dtype:
    """The dtype of a numpy or cupy array, or of what numpy makes of a Python value."""
    if is_cupy(a):
        return a.dtype
    return np.asarray(a).dtype


def _as_result(g: np.ndarray, like: Any):
    """A gradient shaped and typed like its argument (a float for a Python float; on
    the device for a cupy argument)."""
    if is_cupy(like):
        xp = sys.modules["cupy"]
        return xp.asarray(g, dtype=like.dtype).reshape(like.shape)
    if type(like) is np.ndarray:
        if type(g) is np.ndarray and g.dtype == like.dtype and g.shape == like.shape:
            return g
        return np.asarray(g, dtype=like.dtype).reshape(like.shape)
    if isinstance(like, np.ndarray):
        return np.asarray(g, dtype=like.dtype).reshape(like.shape)
    if isinstance(like, (list, tuple)):
        return np.asarray(g, dtype=float).reshape(np.shape(like))
    if isinstance(like, np.floating):
        return type(like)(np.asarray(g).item())
    return float(np.asarray(g).item())


# ---------------------------------------------------------------- generated derivative

def _decline(*args):
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
    hot = staticmethod(_decline)     # see _hot_path

    def __init__(self, fun: Callable, argnums, backend: str, what: str, mode: str = "auto"):
        self.mode = mode
        self.fun = fun      # what targets.target gave
        self.arity = arity(fun)
        self.argnums_spec = argnums
        self.argnums = argnums if type(argnums) is tuple else _argnums_tuple(argnums)
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
        c = compiled(self.fun)
        if c is not self._plan:  # planned (again): generated code and call state follow
            self._plan, self._impl, self._text, self._fast, self.hot = c, None, None, None, _decline
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
        if _is_array(c):
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
        kargs = [c.input_text(kind, ref) for kind, ref in c.plan.inputs]
        free = list(c.free_values())
        sig = ", ".join(c.params) + (", *, " + ", ".join(free) if free else "")
        bars = [f"{c.params[i]}_bar" for i in argnums]
        fname = c.fun.__name__ if c.fun.__name__.isidentifier() else "loss"
        lines = [f"def {fname}__{'grad' if grad_only else 'value_and_grad'}({sig}):",
                 f"    # Grad of: {c.plan.return_line}    [{c.plan.return_location}]"]
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
        for i in argnums:
            if i not in direct:
                note = "" if any(j == i for _, j, _ in pairs) else "  # the loss does not read it"
                lines.append(f"    {c.params[i]}_bar = zeros_like({c.params[i]}){note}")
        for kp, i, index in pairs:
            if index is not None:
                lines.append(f"    {c.params[i]}_bar[{', '.join(map(str, index))}] += {kp}_bar"
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
            "zeros_like": _zeros_like,
            "scan_grads": _scan_value_and_grads(self.chosen),
            "read_state": functools.partial(_read_state, c),
            "write_state": functools.partial(_write_state, c),
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
        args = _converted(args, self.argnums)
        fast = self._fast
        if fast is None or not fast[0].assumptions.hold(self.fun):
            c = self.c
            if _is_array(c):
                return self._array_call(c, args)
            # the loss is a float unless it sums an int or bool kernel (a count); the mean
            # of one is a float, as numpy's is
            float_value = c.kernel.module(()).result_kind == "float" or c.plan.reduction == "mean"
            has_free = bool(c.free_values())
            fast = self._fast = (c, self.implementation(), float_value, has_free,
                                 isinstance(self.argnums_spec, (tuple, list)), self.grad_only)
            self.hot = self._hot_path(c, float_value, has_free)
        c, impl, float_value, has_free, many, grad_only = fast
        _check_call(c, args, self.argnums)
        res = impl(*args, **c.free_values()) if has_free else impl(*args)
        if grad_only:   # (None, grads): the value was not computed
            value, grads = None, res
        else:
            value, grads = res
            if not float_value:
                value = int(round(value))
        if not many:
            return value, _as_result(grads[0], args[self.argnums[0]])
        return value, tuple([_as_result(g, args[i]) for g, i in zip(grads, self.argnums)])


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
            return lambda fun: _decline
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
              "read_state": _read_state, "write_state": _write_state}
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
                _check_args(c, args, self.argnums)
                argnums = tuple(i % len(c.params) for i in self.argnums)
                with PLANNING:   # (generates the derivative's code once)
                    fn = c.implementation(argnums, self.mode, self.chosen,
                                          "grad" if self.grad_only else "value_and_grad")
                impl = c.generated[key] = (fn, argnums)
            self._array_impl = impl
        fn, argnums = impl
        _check_call(c, args, self.argnums)
        free = c.free_values()
        res = fn(*args, **free) if free else fn(*args)
        if self.grad_only:
            value, grads = None, res
        else:
            value, grads = res
            value = _as_value(value)
        if not isinstance(self.argnums_spec, (tuple, list)):
            return value, _as_result(grads[0], args[argnums[0]])
        return value, tuple([_as_result(g, args[i]) for g, i in zip(grads, argnums)])


def _as_value(v):
    """A loss as a Python number (a float, or an int for a count)."""
    if isinstance(v, (float, int)):
        return v
    a = np.asarray(v)
    if a.size == 1:
        return a.reshape(()).item()
    return v


def _read_state(c: Compiled, fun: Callable | None = None) -> list[float]:
    """The state's values now (read through `fun`, bound, when given: the hot path)."""
    if fun is not None:
        with bound(fun):
            return _read_state(c)
    return [float(cell.get()) for cell in c.plan.program.state]


def _write_state(c: Compiled, values, fun: Callable | None = None) -> None:
    if fun is not None:
        with bound(fun):
            return _write_state(c, values)
    for cell, v in zip(c.plan.program.state, values):
        cell.set(v)


def _scan_value_and_grads(backend: backends.Choice):
    """scan_grads for generated code: (seed * sum of values, grads, final state)."""
    def scan_grads(kernel, args, active, state, seed):
        value, grads, final = runtime.scan_grads(kernel, args, active, state, seed=seed, backend=backend)
        return value * seed, grads, final
    return scan_grads


def _zeros_like(a):
    xp = sys.modules["cupy"] if is_cupy(a) else np
    a = xp.asarray(a)
    return xp.zeros(a.shape, a.dtype if a.dtype.kind == "f" else np.float64)


def _check_scalar_loss(c: Compiled, size: int) -> None:
    if size != 1:
        raise NonScalarLossError(
            f"{c.fun.__name__} returns an array of {size} elements, not a scalar loss",
            _return_location(c),
            hint="grad needs a real scalar: reduce the result, e.g. return np.sum(...), or use s2sad.jvp/vjp.")


def _return_location(c: Compiled):
    fname, line, col = c.plan.return_location.rsplit(":", 2)
    return SourceLocation(fname, int(line), int(col) - 1)


def value_and_grad(fun: Callable, argnums=0, *, backend: str = "auto", mode: str = "auto") -> Callable:
    """`mode`: how elementwise sites that are not summed get their pullback: "store"
    their partials in the forward pass, "recompute" them in the reverse pass, or "auto"
    (s2sad.explain says which); both give identical results."""
    _check_mode(mode)
    d = Derivative(target(fun, "value_and_grad"), argnums, backend, "value_and_grad", mode)

    def value_and_grad_fun(*args, **kwargs):
        if kwargs:
            args = d.bind(args, kwargs)
        r = d.hot(*args)
        return d(*args) if r is NotImplemented else r

    _named_like(value_and_grad_fun, fun)
    value_and_grad_fun.__s2sad__ = d
    return marks.mark_derivative(value_and_grad_fun, "value_and_grad", fun, d)


def grad(fun: Callable, argnums=0, *, backend: str = "auto", mode: str = "auto") -> Callable:
    """The gradient of a scalar loss; `mode` as for value_and_grad."""
    _check_mode(mode)
    d = Derivative(target(fun, "grad"), argnums, backend, "grad", mode)

    def grad_fun(*args, **kwargs):
        if kwargs:     # (keywords to positions; a positional call pays for nothing more)
            args = d.bind(args, kwargs)
        r = d.hot(*args)
        return d(*args)[1] if r is NotImplemented else r

    _named_like(grad_fun, fun)
    grad_fun.__s2sad__ = d
    return marks.mark_derivative(grad_fun, "grad", fun, d)


def _named_like(wrapper: Callable, fun: Callable) -> None:
    """functools.wraps(fun)(wrapper), for a plain function in a third of its time (a
    training loop that makes a new grad object per step pays for it)."""
    if type(fun) is not types.FunctionType:
        functools.update_wrapper(wrapper, fun)
        return
    wrapper.__module__, wrapper.__name__, wrapper.__qualname__ = fun.__module__, fun.__name__, fun.__qualname__
    wrapper.__doc__, wrapper.__annotations__ = fun.__doc__, fun.__annotations__
    if fun.__dict__:
        wrapper.__dict__.update(fun.__dict__)
    wrapper.__wrapped__ = fun


def _check_mode(mode: str) -> None:
    if mode not in ("auto", "store", "recompute"):
        raise S2SADError(f"unknown mode {mode!r}", hint="Use mode='auto', 'store' or 'recompute'.")


@deeply
@calls_bound
def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any], *, backend: str = "auto"):
    """(fun(*primals), its directional derivative along tangents); parameters not given
    take their defaults (and no tangent)."""
    fun = target(fun, "jvp")
    c = compiled(fun)
    primals, tangents = _converted(tuple(primals), range(len(primals))), _converted(tuple(tangents), range(len(tangents)))
    if len(primals) != len(tangents):
        raise S2SADError("jvp needs one tangent per primal", hint="Pass tangents of the same structure.")
    argnums = tuple(i for i, p in enumerate(primals) if _dtype_of(p).kind == "f")
    primals = bind(fun, primals, {}) if len(primals) != len(c.params) else primals
    _check_args(c, primals, argnums)
    if _is_array(c):
        return _array_jvp(c, primals, tangents, argnums, backend)
    pairs = c.active_pairs(argnums)
    active = tuple(k for k, _, _ in pairs)
    tans = [tangents[i] if index is None else np.asarray(tangents[i])[index] for _, i, index in pairs]
    if c.plan.program.state:
        return _stateful_jvp(c, primals, active, tans, backend)
    out, out_dot = runtime.jvp(c.kernel, c.kernel_args(primals), active, tans,
                               backend=backend)
    if c.plan.reduction in ("sum", "mean"):
        scale = 1.0 / max(out.size, 1) if c.plan.reduction == "mean" else 1.0
        return float(np.sum(out)) * scale, float(np.sum(out_dot)) * scale
    if out.shape == () and not any(isinstance(p, np.ndarray) for p in primals):
        return out.item(), out_dot.item()
    return out, out_dot


@deeply
@calls_bound
def vjp(fun: Callable, *primals, backend: str = "auto", mode: str = "auto"):
    """(fun(*primals), pullback) with pullback(out_bar) -> one adjoint per primal.
    `mode`: "store" the partials of elementwise sites in the forward pass, "recompute"
    them in the pullback, or "auto"; both give identical results."""
    _check_mode(mode)
    fun = target(fun, "vjp")
    primals = _converted(primals, range(len(primals)))
    out, pullback = _vjp(compiled(fun), fun, primals, backend, mode)
    # a pullback may plan and compile kernels too (deeply)
    return out, marks.mark_derivative(_pullback_of(deeply(pullback), len(primals)), "vjp", fun)


def _pullback_of(pullback: Callable, given: int) -> Callable:
    """The pullback vjp returns: one adjoint per primal given (none for defaults)."""
    def vjp_pullback(out_bar):
        return pullback(out_bar)[:given]
    return vjp_pullback


def _vjp(c, fun: Callable, primals, backend: str, mode: str):
    float_nums = tuple(i for i in range(len(primals)) if _dtype_of(primals[i]).kind == "f")
    primals = bind(fun, primals, {}) if len(primals) != len(c.params) else tuple(primals)
    _check_args(c, primals, float_nums)
    if _is_array(c):
        out, pull = c.vjp(primals, float_nums, mode, backend)
        return _as_value(out) if np.ndim(out) == 0 else out, \
            lambda out_bar: _array_per_primal(primals, float_nums, pull(out_bar))
    pairs = c.active_pairs(float_nums)
    active = tuple(k for k, _, _ in pairs)
    kargs = c.kernel_args(primals)
    if c.plan.program.state:
        return _stateful_vjp(c, primals, pairs, active, kargs, backend)
    if c.plan.reduction in ("sum", "mean"):
        value, grads = runtime.sum_dual(c.kernel, kargs, active, backend=backend)
        n = runtime.broadcast_size(*kargs)
        scale = 1.0 / n if c.plan.reduction == "mean" else 1.0
        out = value * scale

        def pullback(out_bar):
            ob = float(np.asarray(out_bar)) * scale
            return _per_primal(c, primals, pairs, [g * ob for g in grads])
    else:
        how, _ = choose_mode(c.kernel, mode)
        if how == "store" and active:
            out, partials = runtime.store_partials(c.kernel, kargs, active, backend=backend)

            def pullback(out_bar):
                ob = np.asarray(out_bar)
                return _per_primal(c, primals, pairs, [unbroadcast(p * ob, kargs[c.kernel.params.index(a)])
                                                       for p, a in zip(partials, active)])
        else:
            out = runtime.apply(c.kernel, kargs, backend=backend)

            def pullback(out_bar):
                grads = derivative_runtime.kernel_vjp(c.kernel, kargs, active, out_bar, backend=backend)
                return _per_primal(c, primals, pairs, [unbroadcast(g, kargs[c.kernel.params.index(a)])
                                                       for g, a in zip(grads, active)])
    return out, pullback


def _array_per_primal(primals, float_nums, grads) -> tuple:
    by = dict(zip(float_nums, grads))
    return tuple(_as_result(by[i], p) if i in by else _as_result(np.zeros(np.shape(p)), p)
                 for i, p in enumerate(primals))


def _array_jvp(c, primals, tangents, argnums, backend):
    """jvp of an array program with a scalar result: its gradient (the pullback of 1)
    dotted with the tangents. Forward mode through array operations (an array result)
    is not supported yet: refused, after the forward pass says the result's shape."""
    value, pull = c.vjp(primals, argnums, "auto", backend)
    if np.size(value) != 1:
        raise UnsupportedOperationError(
            f"jvp of {c.fun.__name__}, whose result is an array of shape {np.shape(value)} computed with "
            "array operations (not only elementwise ones), is not supported yet: forward mode through array "
            "operations is not implemented", c.pf.location(c.program.return_node),
            hint="Use s2sad.vjp (its pullback gives J^T v), or jvp of a function that reduces the result "
                 "to a scalar.")
    grads = pull(np.ones_like(value) if np.ndim(value) else 1.0)
    dot = sum(float(np.sum(np.asarray(g) * np.asarray(tangents[i]))) for g, i in zip(grads, argnums))
    return _as_value(value), dot


def _stateful_jvp(c: Compiled, primals, active, tans, backend):
    """A scan's jvp for a scalar loss: the reverse sweep's gradients dotted with the tangents."""
    if c.plan.reduction not in ("sum", "mean"):
        raise StatefulError(f"jvp of {c.fun.__name__}, which returns an array computed by a function that "
                            "writes state, is not supported", _return_location(c),
                            hint="Reduce it to a scalar (np.sum) or use s2sad.vjp.")
    kargs = c.kernel_args(primals)
    scale = 1.0 / runtime.broadcast_size(*kargs) if c.plan.reduction == "mean" else 1.0
    value, grads, final = runtime.scan_grads(c.kernel, kargs, active, _read_state(c), seed=scale, backend=backend)
    _write_state(c, final)
    return value * scale, float(sum((g * t).sum() for g, t in zip(grads, tans)))


def _stateful_vjp(c: Compiled, primals, pairs, active, kargs, backend):
    """A scan's vjp: the primal runs (and writes its state) once; the pullback sweeps
    again from the saved initial state without writing it."""
    initial = _read_state(c)
    if c.plan.reduction in ("sum", "mean"):
        scale = 1.0 / runtime.broadcast_size(*kargs) if c.plan.reduction == "mean" else 1.0
        value, grads, final = runtime.scan_grads(c.kernel, kargs, active, initial, seed=1.0, backend=backend)
        _write_state(c, final)

        def pullback(out_bar):
            ob = float(np.asarray(out_bar)) * scale
            return _per_primal(c, primals, pairs, [g * ob for g in grads])
        return value * scale, pullback
    out, final = runtime.scan_apply(c.kernel, kargs, initial, backend=backend)
    _write_state(c, final)

    def pullback(out_bar):
        _, grads, _ = runtime.scan_grads(c.kernel, kargs, active, initial, seed=np.asarray(out_bar),
                                         value="none", backend=backend)
        return _per_primal(c, primals, pairs, grads)
    return out, pullback


def _per_primal(c: Compiled, primals, pairs, grads) -> tuple:
    nums = tuple(range(len(primals)))
    return tuple(_as_result(g, p) for g, p in zip(c.per_argument(pairs, grads, primals, nums), primals))


# ---------------------------------------------------------------- broadcast

_BROADCAST = PlanCache()   # code -> BroadcastPlan


@dataclass
class BroadcastPlan:
    kernel: Kernel
    assumptions: Any


@marks.entry_point("broadcast")
@deeply
def broadcast(f: Callable, *args, backend: str = "auto"):
    """f applied elementwise with numpy broadcasting (scalars broadcast), compiled;
    parameters not given take their defaults."""
    plan = _BROADCAST.find(f, _serves) if type(f) is types.FunctionType else None
    fun = f
    if plan is None:
        prim = rules.python_callables().get(f) if _hashable(f) else None
        if prim is not None:
            return f(*args)  # a numpy/math primitive: numpy already applies it
        fun = target(f, "broadcast")
        with bound(fun):
            plan = _BROADCAST.get(fun, _serves, lambda: _broadcast_plan(fun))
    with bound(fun):      # the plan reads fun's cells and globals
        return _broadcast(plan.kernel, fun, args, backend)


def _broadcast_plan(f: Callable) -> BroadcastPlan:
    pf = entry_function(parse_function(f))
    with recording() as log:
        program = normalize(pf)
    return BroadcastPlan(Kernel(program, program.entry), Assumptions(log, PlanCache.key_of(f)))


def _broadcast(kernel: Kernel, fun: Callable, args, backend: str):
    program = kernel.program
    n_args = len(program.params) - len(program.captures) - len(program.state)
    if len(args) < n_args and arity(fun) == n_args:    # defaults to fill in
        try:
            args = bind(fun, args, {})
        except TypeError:
            pass
    if len(args) != n_args:
        raise S2SADError(f"s2sad.broadcast: {getattr(fun, '__name__', fun)} takes {n_args} argument(s), "
                         f"{len(args)} given", hint="Pass one array or number per parameter.")
    args = list(args) + [c.read() for c in program.captures]  # free data, read now
    state = program.state
    if state:  # a scan: elements in order, the state written back once
        out, final = runtime.scan_apply(kernel, args, [float(c.get()) for c in state], backend=backend)
        for cell, v in zip(state, final):
            cell.set(v)
        return out
    return runtime.apply(kernel, args, backend=backend)


def _hashable(f) -> bool:
    try:
        hash(f)
        return True
    except TypeError:
        return False


# ---------------------------------------------------------------- explain / source

@dataclass
class Explanation:
    function: str
    lines: list[str]

    def __str__(self) -> str:
        return "\n".join(self.lines) + "\n"

    __repr__ = __str__


@deeply
def explain(fun: Callable, argnums=0, *, mode: str = "auto") -> Explanation:
    """Every elementwise site of `fun`, the path chosen for it, and why; for an array
    program also each primitive's rule, what was fused into each kernel, and whether
    its partials are stored or recomputed (`mode`, as for grad)."""
    mark = marks.derivative_mark(fun)
    if mark is not None and mark.derivative is not None:   # explain(grad(f)): f's plan, as that grad uses it
        d = mark.derivative
        fun, argnums, mode = d.fun, d.argnums_spec, d.mode
    else:
        fun = target(fun, "explain")
    with bound(fun):
        return _explain(fun, argnums, mode)


def _explain(fun: Callable, argnums, mode: str) -> Explanation:
    with PLANNING:
        return _explain_planned(fun, argnums, mode)


def _explain_planned(fun: Callable, argnums, mode: str) -> Explanation:
    c = compiled(fun)
    pf = parse_function(c.fun)
    lines = [f"s2sad.explain: {c.fun.__qualname__} ({pf.location()})"]
    if _is_array(c):
        nums = tuple(i % len(c.params) for i in _argnums_tuple(argnums))
        return Explanation(c.fun.__qualname__, lines + c.explain(nums, mode))
    for s in c.plan.sites:
        lines.append(f"  {s.location}: {s.applied} -> {s.path}: {s.reason}")
        if s.source_line:
            lines.append(f"      {s.source_line}")
    active = c.active_for(tuple(i % len(c.params) for i in _argnums_tuple(argnums)))
    red = {"sum": "summed in the kernel", "mean": "averaged in the kernel",
           "none": "a scalar function of scalars"}[c.plan.reduction]
    lines.append(f"  fused: {len(c.plan.sites)} site(s) into one kernel {c.kernel.name}"
                 f"({', '.join(c.kernel.params)}), {red}; "
                 f"dual with {len(active)} partial(s) per element ({', '.join(active) or 'none'})")
    return Explanation(c.fun.__qualname__, lines)


def source(g: Callable) -> str:
    """The generated derivative source of a function made by grad/value_and_grad/differentiate."""
    d = getattr(g, "__s2sad__", None)
    if d is None:
        raise S2SADError(f"{getattr(g, '__name__', g)!r} was not made by s2sad.grad, value_and_grad or differentiate",
                         hint="Pass the function that s2sad.grad(f) returned.")
    return d.source()


# ---------------------------------------------------------------- differentiate

class Differentiable(marks.HoldsUserFunction):
    """A function decorated with @s2sad.differentiate: callable as before, plus
    derivatives. It is the user's function (marks.HoldsUserFunction): passed to grad or
    called inside a differentiated function, its function is what is differentiated."""

    def __init__(self, fun: Callable, argnums=0, backend: str = "auto"):
        planned = target(fun, "differentiate")
        functools.update_wrapper(self, fun)
        self.__wrapped_fun__ = planned
        self._call = fun
        self.argnums = argnums
        self.backend = backend
        self._vg = Derivative(planned, argnums, backend, "value_and_grad")
        self._g = Derivative(planned, argnums, backend, "grad")
        self.__s2sad__ = self._vg

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)

    def grad(self, *args, **kwargs):
        if kwargs:
            args = self._g.bind(args, kwargs)
        r = self._g.hot(*args)
        return self._g(*args)[1] if r is NotImplemented else r

    def value_and_grad(self, *args, **kwargs):
        if kwargs:
            args = self._vg.bind(args, kwargs)
        r = self._vg.hot(*args)
        return self._vg(*args) if r is NotImplemented else r

    def explain(self) -> Explanation:
        return explain(self.__wrapped_fun__, self.argnums)

    def source(self) -> str:
        return self._vg.source()


def differentiate(fun: Callable | None = None, *, argnums=0, backend: str = "auto"):
    if fun is None:
        return lambda f: Differentiable(f, argnums, backend)
    return Differentiable(fun, argnums, backend)


# ---------------------------------------------------------------- user rules

def defvjp(fn: Callable, *vjps: Callable) -> Callable:
    """Register the reverse-mode rule of an array function (np.sort, np.cumsum, one of
    your own...) for array programs: `vjps[i](g, out, *args)` returns the adjoint of its
    i-th argument (that argument's shape) given the adjoint `g` of its output `out`.
    Returns `fn`.

        s2sad.defvjp(np.cumsum, lambda g, out, x: np.cumsum(g[::-1])[::-1])
    """
    if not callable(fn) or not all(callable(v) for v in vjps) or not vjps:
        raise S2SADError(f"defvjp({getattr(fn, '__name__', fn)!r}, ...) needs a function and one vjp function "
                         "per argument", hint="Pass vjp_i(g, out, *args) for each argument i.")
    register_vjp(fn, vjps)
    _PLANS.clear()
    return fn


def defrule(fn: Callable, *partials: str | None, impl: Callable | None = None) -> Callable:
    """Register the derivative of a scalar function of your own; it wins everywhere,
    inside broadcasts and compiled kernels too.

    `partials[i]` is d out / d (i-th parameter) as a Python expression in the
    parameters and `out` (the function's value), e.g. for `def softplus(z)`:
    `s2sad.defrule(softplus, "1.0 / (1.0 + math.exp(-z))")`; None for a zero partial.
    `impl` is a Python function with source that computes `fn`: needed when `fn` has
    none (a C function), since kernels compile the value from source. Returns `fn`.
    """

    impl = impl or fn
    try:
        parse_function(impl)
    except S2SADError as e:
        raise type(e)(f"defrule needs the source of the function that computes {getattr(fn, '__name__', fn)!r}: {e.message}",
                      e.location, hint="Pass impl=<a Python function with the same value>.") from None
    params = tuple(inspect.signature(impl).parameters)
    if len(partials) != len(params):
        raise S2SADError(f"defrule for {getattr(fn, '__name__', fn)!r}: {len(params)} parameter(s) "
                         f"({', '.join(params)}) but {len(partials)} partial(s)",
                         hint="Give one partial per parameter (None for zero).")
    for p in partials:
        if p is not None:
            try:
                compile(p, "<partial>", "eval")
            except SyntaxError as e:
                raise S2SADError(f"defrule: the partial {p!r} is not a Python expression ({e.msg})",
                                 hint="Write it as an expression in the parameters and `out`.") from None
    rules.USER_RULES[fn] = rules.UserRule(fn, impl, params, tuple(partials))
    _PLANS.clear()
    _BROADCAST.clear()
    return fn

"""The generated derivative behind grad and value_and_grad: `Derivative`.

One Derivative per (function, argnums, backend, grad or value_and_grad, mode). Its
first call plans the function (plans.compiled) and has the plan generate its derivative
(`Plan.implementation`: passes/fused_adjoint.py's source, calls into the runtime's
kernel entry points; for an array program, passes/reverse.py's), exec'd once per plan;
`source(g)` prints it (`Plan.source`). Then
grad's wrapper calls `hot(*args)` first: the fused driver's entry called with the
user's arguments, one call into machine code; it declines (NotImplemented) whatever
it cannot take, and `__call__`, the full path, checks and runs it instead.

Invariant: generated code and hot paths are kept on the plan (`Plan.generated`),
made under the planning lock, and follow the plan: a plan made again drops them.
"""
from __future__ import annotations

import weakref

from typing import Any, Callable, Sequence

from . import backends
from .array_hot import hot_maker
from .array_special import specializer_for
from .arguments import argnums_tuple, as_result, as_value, check_args, check_call, converted, reraise_located, SHAPE_ERRORS
from .deep import deeply
from .frontend import bound
from .plancache import PLANNING
from .plans import Plan, compiled, read_state, write_state
from .small_grad import SmallGrad
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
    leaf_hot = staticmethod(decline)    # an array program's hot path on the leaves (treefast's container calls)
    layout = None           # the plan's layout (passes/containers.py): set for leaf calls (treecalls)
    reader = None           # treefast.Reader: the hot path takes a container call's arguments (treecalls)
    trees = None            # treecalls.TreeCalls, made at the first call with containers
    small = None            # small_grad.SmallGrad: an array program's unrolled plan for small shapes

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
    def c(self) -> Plan:
        c = compiled(self.fun, self.layout)
        if c is not self._plan:  # planned (again): generated code and call state follow
            self._plan, self._impl, self._text, self._fast, self.hot = c, None, None, None, decline
            self._array_impl, self.leaf_hot = None, decline
        return c

    @deeply
    def source(self) -> str:
        if self._text is None:
            with bound(self.fun), PLANNING:
                self._text = self._generate()
        return self._text

    def split_source(self) -> str | None:
        """value_and_grad's text as grad's program then the value (passes/valuesplit: what a
        small batch specialises), or None where that does not apply (golden.py pins it)."""
        c = self.c
        with bound(self.fun), PLANNING:
            return c.source(tuple(i % len(c.params) for i in self.argnums), self.mode, "value_and_grad split")

    def _generate(self) -> str:
        c = self.c
        return c.source(tuple(i % len(c.params) for i in self.argnums), self.mode, self.variant)

    @property
    def grad_only(self) -> bool:
        """grad: the generated function returns the gradients only, and computes the
        loss's value only where they need it."""
        return self.what == "grad"

    @property
    def variant(self) -> str:
        return "grad" if self.grad_only else "value_and_grad"

    def _key(self, c, what: str) -> tuple:
        return (what, self.what, self.chosen, tuple(i % len(c.params) for i in self.argnums),
                isinstance(self.argnums_spec, (tuple, list)))

    def implementation(self) -> Callable:
        if self._impl is None:
            c = self.c
            key = self._key(c, "impl")
            with PLANNING:
                if key not in c.generated:
                    c.generated[key] = c.implementation(tuple(i % len(c.params) for i in self.argnums), self.mode,
                                                        self.chosen, self.variant)
            self._impl = c.generated[key]
        return self._impl

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
            if not c.fused:     # an array program: no kernel entry to call first
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
        try:
            res = impl(*args, **c.free_values()) if has_free else impl(*args)
        except SHAPE_ERRORS as e:   # (a kernel's operands that do not broadcast: located at its statement)
            reraise_located(self.fun, e)
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
        key = self._key(c, "hot") + (self.reader and self.reader.key,)
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
        reader = self.reader    # a container call: its leaves read first, the gradients put in its structure
        if reader is not None:
            grads_text = reader.result(grads)
        # a swapped __code__ or a failed assumption: the full path plans again
        # (only module attributes assumed, np.tanh: their identity tested inline, assumptions.guard)
        guard = c.assumptions.guard("G") if hasattr(self.fun, "__globals__") else None
        checks = "entry is None" + (" or FUN.__code__ is not CODE" if hasattr(self.fun, "__code__") else "") \
            + (f" or {guard[0]}" if guard else " or not hold(FUN)" if c.assumptions.entries else "")
        # a scan's entry takes the state's values after the arguments and returns the final
        # state after the gradients; the state is written back once, as the full path does
        state_in = ", *read_state(C, FUN)" if scan else ""
        # llvm_entry's large entry (fastpath registers it), on the leaves a container call's
        # reader binds too: without it a dict of 100k-element params took the full path,
        # 1.12-1.21x the positional call (session 19)
        large = self.grad_only and not scan
        text = (f"def hot(*args):\n"
                f"    entry = entries.get(KEY)\n"
                + (f"    try:\n        stale = {checks}\n    except (KeyError, AttributeError):\n        stale = True\n"
                   f"    if stale:\n" if guard else f"    if {checks}:\n")
                + f"        return NotImplemented\n"
                + "".join(f"    {line}\n" for line in (reader.prologue if reader else ()))
                + f"    r = entry({reader.leaves if reader else '*args'}{state_in}, 1.0, {c.plan.reduction == 'mean'})\n"
                + (f"    if r is NotImplemented:\n"      # larger than the entry takes: fastpath.large_call
                   f"        big = entries.get(LARGE)\n"
                   f"        if big is None:\n"
                   f"            return r\n"
                   f"        r = big({reader.leaves if reader else '*args'}, 1.0, {c.plan.reduction == 'mean'})\n"
                   if large else "")
                + f"    if r is NotImplemented:\n"
                f"        return r\n"
                + (f"    write_state(C, r[{1 + len(active)}:], FUN)\n" if scan else "")
                + f"    return {grads_text if self.grad_only else f'(r[0], {grads_text})'}\n")
        text = "def make(FUN):\n" + ("    G = FUN.__globals__\n" if guard else "") + "".join("    " + line + "\n" for line in text.splitlines()) + "    return hot\n"
        ns = {"entries": c.kernel.entries, "KEY": ("scan" if scan else "none" if self.grad_only else "sum", active),
              "hold": c.assumptions.hold, "CODE": c.assumptions.code, "C": c,
              "read_state": read_state, "write_state": write_state, "LARGE": ("large", active),
              **(guard[1] if guard else {})}
        exec(compile(text, f"<s2sad hot path of {c.name}>", "exec"), ns)
        return ns["make"]

    def _array_call(self, c, args):
        """The derivative of an array program (passes/reverse.py): generated once per
        (argnums, mode, backend), checked and shaped like the fused path's. The
        generated function is kept with its plan (`_array_impl`), so that a call costs
        the plan's lookup, the argument checks and the call itself."""
        small = self._small()
        if small is not None and small.never is None:   # small fixed shapes: one call into machine code
            got = small.first(args)
            if got is not None:
                if self.hot is decline:     # (the array hot path, when made, takes what it declines)
                    small.hand_on_to(self.leaf_hot)
                    self.hot = small.router
                return (None, got[1]) if self.grad_only else got
        impl = self._array_impl
        if impl is None:   # (kept with the plan too: a new grad object of a known plan generates nothing)
            key = (self.argnums, self.mode, self.chosen, self.what)
            impl = c.generated.get(key)
            if impl is None:
                check_args(c, args, self.argnums)
                argnums = tuple(i % len(c.params) for i in self.argnums)
                with PLANNING:   # (generates the derivative's code once)
                    fn = c.implementation(argnums, self.mode, self.chosen, self.variant)
                impl = c.generated[key] = (fn, argnums)
            self._array_impl = impl
        fn, argnums = impl
        check_call(c, args, self.argnums)
        free = c.free_values()
        try:
            res = fn(*args, **free) if free else fn(*args)
        except SHAPE_ERRORS as e:     # (numpy refusing the user's shapes: located)
            reraise_located(self.fun, e)
        if self.leaf_hot is decline:     # the next calls: the hot path first
            self.leaf_hot = self._array_hot_path(c, fn, argnums)
            if small is not None:
                small.hand_on_to(self.leaf_hot)
            routed = small is not None and small.never is None and small.fast    # (other shapes may unroll)
            self.hot = small.router if routed else self.leaf_hot
        if self.grad_only:
            value, grads = None, res
        else:
            value, grads = res
            value = as_value(value)
        if not isinstance(self.argnums_spec, (tuple, list)):
            return value, as_result(grads[0], args[argnums[0]])
        return value, tuple([as_result(g, args[i]) for g, i in zip(grads, argnums)])

    def _small(self):
        """The unrolled plan for small fixed shapes (small_grad.SmallGrad), made at the first
        array call; none for a container call's leaves (their own layout)."""
        if self.small is None and self.layout is None and self.reader is None:
            self.small = SmallGrad(self.fun, self.argnums_spec, self.backend, not self.grad_only)
        return self.small if self.layout is None and self.reader is None else None

    def small_for_explain(self):
        """The unrolled plan explain asks (none for a fused sum, a container call's leaves)."""
        return self._small() if not self.c.fused else None

    def _array_hot_path(self, c, fn: Callable, argnums: tuple[int, ...]) -> Callable:
        """What grad tries first for an array program (array_hot.py): made once per plan
        and (argnums, grad or value_and_grad, backend), shared by the grad objects the
        plan serves."""
        key = self._key(c, "array hot")
        with PLANNING:
            if key not in c.generated:
                special = specializer_for(c, fn, self._generate(), fn.__name__, self.chosen,
                                          _unjoined(c, self.argnums, self.mode, self.chosen, self.variant)
                                          if self.variant in ("grad", "value_and_grad") else None,
                                          _unjoined(c, self.argnums, self.mode, self.chosen, "value_and_grad split")
                                          if self.variant == "value_and_grad" else None)
                c.generated[key] = hot_maker(c, fn, argnums, isinstance(self.argnums_spec, (tuple, list)),
                                             self.grad_only, special)
        return c.generated[key](self.fun)


def _unjoined(c, argnums, mode: str, chosen, variant: str) -> Callable:
    """() -> (fn, text) of plan c's `variant` program (grad, value_and_grad) without joined
    heads (passes/xentheads), or None once c is gone: what array_special specialises where
    the heads ran unfused; of "value_and_grad split" (passes/valuesplit) as it is, None
    where it does not apply. (It holds the plan weakly and no grad object: the plan's
    specialiser keeps it.)"""
    plan = weakref.ref(c)
    normal = tuple(i % len(c.params) for i in argnums)
    plain = variant if variant.endswith(" split") else variant + " unjoined"

    def unjoined():
        got = plan()
        if got is None:
            return None
        fn = got.implementation(normal, mode, chosen, plain)
        return None if fn is None else (fn, got.source(normal, mode, plain))
    return unjoined

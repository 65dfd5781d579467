"""The path tables of jacfwd, jacrev and hessian (higher.py) and the one runner that
walks them, as a compiler declares its passes.

A wrapper is a table: the ways to its result, in the order they are tried (the cheap
warm ones first, the one that always answers last). Each way is a `Path` subclass: its
`name` is the `took` label explain shows ("unrolled", "diagonal", "batched", "one by
one"), `when` the kind of function it serves (the grad of one, a function s2sad did
not make, anything but a grad, any), `try_(args)` its result or None (it declines: the
next path is tried), `why_not` why it declined where it knows.

`runner(kind, parts, table)` keeps the paths whose `when` fits `parts.fun` and makes the
wrapper; a call of it, in order:
- binds keyword arguments to the positions of the user's function (`with_keywords`);
- for the grad of a function: what that grad refuses at these arguments, refused
  first (first_order_checked: a map's grad is no Hessian);
- tries each path in order (the first, a warm one, outside the loop); the argnums are
  checked (`check_argnums`) once, before the first path that needs them checked
  (`checks_argnums`: a full path; a warm path guards its own arguments);
- records the path that answered as `wrapper.took` (that path's own tuple: explain
  finds the path by identity) and returns its result;
- a shape numpy refuses while a path runs is re-raised located at the user's function.
Invariants: the last path of every table is total (it answers or raises located); a
path never writes an argument; the warm call costs one loop step over the table.
"""
from __future__ import annotations

import types
from typing import Any, Callable, Sequence

import numpy as np

from . import marks
from .arguments import argnums_tuple, check_argnums_spec, dtype_of, reraise_located, SHAPE_ERRORS
from .errors import ArgumentError, NonDifferentiableInputError, S2SADError
from .first_order import FirstOrderCheck
from .targets import arity, bind

# which kind of function a path serves (`Path.when`)
OF_GRAD = "the grad of a function"
USERS = "a function s2sad did not make"
NOT_GRAD = "anything but a grad"
ANY = "any function"
# why a warm path declined (it keeps no reason: none made yet, or one for other arguments)
NOT_WARM = "no warm entry for these arguments (none made yet, or one for other arguments)"


class Parts:
    """What one wrapper's paths share: the function, its argnums and backend, the grad it
    is of (`inner`: a Derivative, or None) and the planners the paths call (`small`, the
    unrolled plan; `diagonal`, jacdiag's; `batched`, batched_jac's or batched_rows')."""

    def __init__(self, fun: Callable, argnums, backend: str, *, small=None, diagonal=None, batched=None,
                 first_order: bool = True, grads: dict | None = None):
        self.fun, self.argnums, self.backend = fun, argnums, backend
        self.many = isinstance(argnums, (tuple, list))
        self.mark = mark = marks.derivative_mark(fun)
        self.inner = mark.derivative if mark is not None and mark.made_by == "grad" else None
        # the grad's mark, whose refusals a call checks first (first_order_checked), or None
        self.first_order = mark if first_order and self.inner is not None else None
        self.small, self.diagonal, self.batched = small, diagonal, batched
        self.grads = grads      # (hessian's: grad(fun, i) per argnum i)

    def kind(self) -> str:
        """Which `when` the function is: OF_GRAD or USERS (or NOT_GRAD: a derivative that is no grad)."""
        if self.inner is not None:
            return OF_GRAD
        return USERS if self.mark is None else NOT_GRAD


class Path:
    """One way to a wrapper's result (see the module doc); a subclass sets the class
    attributes and `try_`."""

    name = ""                   # the `took` label
    step = ""                   # what explain calls it in the list of paths (default: the name)
    when = ANY
    checks_argnums = False      # the argnums checked before it runs (its full path)
    total = False               # always answers (the table's last path)
    warm = False                # a planner's warm entry (it keeps no reason to decline)
    planner = ""                # the Parts attribute whose `why_not` says why it declined

    def __init__(self, parts: Parts):
        self.parts = parts
        self.took: tuple = (self.name,)     # (a fresh tuple per path: `took` names the path by identity)

    @classmethod
    def serves(cls, parts: Parts) -> bool:
        kind = parts.kind()
        return cls.when == ANY or cls.when == kind or (cls.when == NOT_GRAD and kind != OF_GRAD)

    def try_(self, args: tuple) -> Any:
        raise NotImplementedError

    @property
    def why_not(self) -> str | None:
        """Why the path declined its last try, where it knows (None: it does not say)."""
        if self.warm:
            return NOT_WARM
        return getattr(self.parts, self.planner).why_not if self.planner else None


def runner(kind: str, parts: Parts, table: Sequence[type]) -> Callable:
    """The wrapper `kind` ("jacfwd", "jacrev", "hessian") of `parts.fun`: the paths of
    `table` that serve it, walked by one runner (see the module doc)."""
    paths = tuple(p(parts) for p in table if p.serves(parts))
    assert paths and paths[-1].total, f"{kind}'s table ends with a path that may decline"
    assert not paths[0].checks_argnums and not paths[0].total, f"{kind}'s first path is not a warm one"
    fun, argnums = parts.fun, parts.argnums
    of_grad = FirstOrderCheck(parts.first_order) if parts.first_order is not None else None
    first, first_took = paths[0].try_, paths[0].took     # (the warm path: tried outside the loop)
    rest = _steps(paths[1:], lambda args: check_argnums(argnums, args, fun))

    def wrapper(*args, **kwargs):
        try:
            if kwargs:
                args = with_keywords(fun, args, kwargs)
            if of_grad is not None:     # (what the grad refuses: a map's grad is no elementwise derivative)
                of_grad(args)
            got = first(args)
            if got is not None:
                wrapper.took = first_took
                return got
            for try_, path in rest:
                got = try_(args)
                if got is not None:
                    wrapper.took = path.took
                    return got
        except SHAPE_ERRORS as e:     # (numpy refusing the user's shapes: located)
            reraise_located(fun, e)
        raise AssertionError(f"no path of {kind} answered")     # (unreachable: the last path is total)
    wrapper.kind, wrapper.paths = kind, paths
    return wrapper


def _steps(paths: tuple, check: Callable) -> tuple:
    """(try_, path) per path, the argnums `check` (which answers None) before the first
    path that needs it; the first path needs none (it is a warm one, or hessian's)."""
    at = next((k for k, p in enumerate(paths) if p.checks_argnums), len(paths))
    steps = [(p.try_, p) for p in paths]
    return tuple(steps[:at] + [(check, None)] + steps[at:]) if at < len(paths) else tuple(steps)


def answered(wrapper: Callable) -> int | None:
    """The position in `wrapper.paths` of the path its last call took (None: not called)."""
    return next((k for k, p in enumerate(wrapper.paths) if p.took is wrapper.took), None)


# ---------------------------------------------------------------- the shared guards

def check_argnums(argnums, args: Sequence[Any], fun: Any = None) -> None:
    """Each argnum names an argument, and that argument is a float (jvp and vjp take an
    int as a constant: its zero derivative is not the Jacobian asked for); refused at
    `fun`'s definition."""
    nums = argnums_tuple(argnums)
    if not all(type(i) is int for i in nums):   # (the common case without building a location)
        check_argnums_spec(argnums, where(fun))
    for i in nums:
        a = args[i] if -len(args) <= i < len(args) else None
        if type(a) is np.ndarray and a.dtype.kind == "f" and a.dtype.itemsize <= 8:
            continue        # (the common case quickly)
        if not -len(args) <= i < len(args):
            raise S2SADError(f"argnums {i!r} is out of range for a call with {len(args)} argument(s)",
                             where(fun), hint="Pick argnums among the function's positional parameters.")
        a = args[i]
        if isinstance(a, (list, tuple, dict)):
            raise NonDifferentiableInputError(
                f"argument {i} is a {type(a).__name__}; Jacobians and Hessians are taken in arrays and numbers "
                "(a container's has no array layout here, and Python's operators join or repeat a list)",
                where(fun), hint="Pass np.asarray(...) and write the function for an array; s2sad.grad takes "
                                 "containers.")
        dtype = dtype_of(a)
        if dtype.kind != "f" or dtype.itemsize > 8 or isinstance(a, (bool, int, np.integer, np.bool_)):
            raise NonDifferentiableInputError(
                f"argument {i} has {type(a).__name__} {dtype}; only float arguments (float32, float64) can be "
                "differentiated", where(fun), hint="Pass floats (e.g. np.asarray(x, dtype=np.float64)).")


def with_keywords(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    """A call's keyword arguments bound to the positions of the user's function under
    `fun` (through the derivatives s2sad made of it), as Python binds them; argnums
    count those positions. Refused for a function whose parameters are not named."""
    mark = marks.derivative_mark(fun)
    base = mark.innermost() if mark is not None else fun
    base = marks.user_function_of(base) or base
    if type(base) is not types.FunctionType or arity(base) < 0:
        raise ArgumentError(f"{marks.function_name(fun)} is called with keyword arguments, which s2sad binds only "
                            "for a Python function with named parameters", where(fun),
                            hint="Pass the arguments by position.")
    return bind(base, args, kwargs)


def where(fun: Any):
    """Where the user's function starts (through the derivatives s2sad made of it)."""
    mark = marks.derivative_mark(fun)
    while mark is not None:
        fun = mark.of
        mark = marks.derivative_mark(fun)
    return marks.location_of_function(getattr(fun, "__wrapped__", fun))

"""The hot path of an array program's derivative: what grad tries first once a call has
gone through the full path (derivative.Derivative._array_call).

At minibatch sizes the Python around the generated derivative costs as much as the
derivative itself: the plan's lookup, the argument checks and conversions, the
deep-recursion guard, the keyword and default binding. The hot path is one small
function generated per (plan, argnums, grad or value_and_grad), kept with the plan
(`Plan.generated`) like the fused path's: it checks what the full path would decide
from cheap facts of the call, then calls the generated derivative, every name it reads
bound as a constant of its closure.

Invariant: it takes a call only when the full path would run the same generated
function on the same arguments, unchanged, and shape its results the same way:
- the plan still serves the function: the function's code is the plan's, the plan's
  assumptions hold (its compiled-in globals and cells), and no rule was registered
  since it was made (`PlanCache.generation`);
- as many arguments as the plan's parameters (no defaults to fill in, no keywords);
- each differentiated argument a Python float or an exact ndarray of float64 or float32;
  each other one a float, an int, or an exact ndarray of a bool, integer or float dtype
  at most 8 bytes wide (nothing `converted` would convert or `check_call` refuse);
  one the function indexes or measures (arguments.array_params) an ndarray of at least
  one dimension (a number there is check_call's refusal).
Anything else, and a RecursionError inside, it declines (NotImplemented): the full path
then binds, converts, checks, refuses or plans again. The results are the full path's,
bit for bit: the same generated function, `as_result` and `as_value` on its results.
A specialised copy runs without `bound(FUN)`: it reads no free data and no state
(array_special.specializer_for refuses both), so nothing in it asks a resolver for
FUN's cells or globals; the general and recording calls run bound.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .arguments import array_params, as_result, as_value, reraise_located, SHAPE_ERRORS
from .array_special import Specializer, signature_text
from .frontend import bound
from .plans import PLANS
from . import sigmatch

_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


def data_ok(a: Any) -> bool:
    """A data argument the full path passes on unchanged (see the invariant)."""
    t = type(a)
    if t is float or t is int:
        return True
    return t is np.ndarray and a.dtype.kind in "biuf" and a.dtype.itemsize <= 8


def _stale_lines(c, n: int) -> tuple:
    """(guard, the hot path's first lines): make(FUN), hot(*args), and its test that the plan
    no longer serves (hold: FUN's code is the plan's, and the plan's assumptions hold; where
    only module attributes were assumed, np.tanh, their identities tested inline:
    assumptions.guard; a FUN with no __code__ is stale, as hold says)."""
    guard = c.assumptions.guard("G")
    stale = f"FUN.__code__ is not CODE or {guard[0]}" if guard else "not hold(FUN)"
    return guard, [
        "def make(FUN):",
        "    def hot(*args):",
        "        try:",
        f"            stale = len(args) != {n} or PLANS.generation != GEN or {stale}",
        "        except (KeyError, AttributeError):",
        "            stale = True",
        "        if stale:",
        "            return NotImplemented",
    ]


def hot_maker(c, fn: Callable, argnums: tuple[int, ...], many: bool, grad_only: bool,
              special: Specializer | None = None) -> Callable:
    """make(FUN) -> hot(*args): the hot path of the generated derivative `fn` of plan `c`
    for argnums (normalised, in order), bound to FUN (the function whose code and values
    it checks). `many`: argnums was a tuple (a tuple of gradients). `special`: fn's
    copies specialised per signature (array_special.py), run for calls whose arguments
    are all ndarrays."""
    n = len(c.params)
    names = [f"a{i}" for i in range(n)]
    checks = []
    arrays_only = {use[0] for use in array_params(c)}    # indexed, measured: a number is refused (check_call)
    for i, a in enumerate(names):
        if i in arrays_only:
            dtype_ok = f"{a}.dtype in FLOATS" if i in argnums else f"{a}.dtype.kind in 'biuf' and {a}.dtype.itemsize <= 8"
            checks.append(f"(type({a}) is ndarray and {a}.ndim and {dtype_ok})")
        elif i in argnums:
            checks.append(f"(type({a}) is ndarray and {a}.dtype in FLOATS or type({a}) is float)")
        else:   # (data_ok, inline for an ndarray)
            checks.append(f"(type({a}) is ndarray and {a}.dtype.kind in 'biuf' and {a}.dtype.itemsize <= 8"
                          f" or data_ok({a}))")
    # as_result, inline where the gradient is already an ndarray of its argument's dtype and shape
    # (a float argument's gradient may come back as a 0-d ndarray: as_result makes it a float)
    grads = [f"(g{k} if type(g{k}) is ndarray and type(a{i}) is ndarray and g{k}.dtype is a{i}.dtype "
             f"and g{k}.shape == a{i}.shape "
             f"else as_result(g{k}, a{i}))" for k, i in enumerate(argnums)]
    shaped = ("(" + ", ".join(grads) + ("," if len(grads) == 1 else "") + ")") if many else grads[0]
    free = ", **C.free_values()" if c.program.free else ""
    guard, lines = _stale_lines(c, n)
    lines += [
        f"        {', '.join(names)}{',' if n == 1 else ''} = args",
    ]
    check = [f"if not ({' and '.join(checks) or 'True'}):", "    return NotImplemented"]
    unpack = f"{', '.join(f'g{k}' for k in range(len(argnums)))}{',' if len(argnums) == 1 else ''} = "
    got = "r" if grad_only else "r[1]"
    if special is None:
        lines += [f"        {line}" for line in check]
        lines += ["        try:", "            with bound(FUN):", f"                r = fn(*args{free})"]
    else:
        arrays = " and ".join(f"type({a}) is ndarray" for a in names)
        # the signature answered last, asked first of its compiled matcher (sigmatch.py: ~0.1 us,
        # where building and hashing the key costs ~1.2 us for five arguments)
        lines += ["        sp = None",
                  "        last = LAST[0]",
                  "        if last[0](*args):",
                  "            sp = last[1]",
                  f"        elif {arrays}:",
                  f"            key = {signature_text(names)}",
                  "            sp = SPECIAL.specs.get(key)",
                  "            if sp is not None:",
                  "                LAST[0] = (matcher(key), sp)",
                  # a recorded signature passed the checks when it was recorded (same dtypes)
                  "        if sp is None:"]
        lines += [f"            {line}" for line in check]
        # a specialised copy reads no free data and no state (specializer_for, straight_line):
        # nothing in it reads a resolver, so it runs without `bound` (0.7 us of ~20 at n = 32)
        lines += ["        try:",
                  "            if sp is not None:",
                  "                r = sp[0](*args)",
                  "            else:",
                  "                with bound(FUN):",
                  f"                    if {arrays}:",
                  "                        r = SPECIAL.call(key, args, as_is)",
                  "                    else:",
                  f"                        r = fn(*args{free})"]
    lines += [
        "        except RecursionError:",
        "            return NotImplemented",
        "        except SHAPE_ERRORS as e:",   # (numpy refusing the user's shapes: located)
        "            reraise_located(FUN, e)",
    ]
    if special is not None:     # shaped when recorded: shaped now (types, dtypes, shapes follow the signature)
        direct = ("r" if many else "r[0]") if grad_only else ("r[1]" if many else "r[1][0]")
        lines += ["        if sp is not None and sp[1]:",
                  f"            return {direct if grad_only else f'as_value(r[0]), {direct}'}"]
    lines += [f"        {unpack}{got}", f"        return {shaped if grad_only else f'as_value(r[0]), {shaped}'}"]
    as_is = [f"(type(g{k}) is ndarray and type(a{i}) is ndarray and g{k}.dtype is a{i}.dtype "
             f"and g{k}.shape == a{i}.shape)" for k, i in enumerate(argnums)]
    lines = ["def as_is(r, args):",
              "    \"\"\"The results of the derivative on args need no as_result (returned as they are).\"\"\"",
              f"    {', '.join(names)}{',' if n == 1 else ''} = args",
              f"    if {'type(' + got + ') is not tuple' if many else 'False'}:",     # (returned as the tuple)
              "        return False",
              f"    {unpack}{got}",
              f"    return {' and '.join(as_is)}",
              "def make(FUN):",
              "    G = getattr(FUN, '__globals__', None)",
              "    LAST = [(never, None)]"] + lines[1:]
    lines += ["    hot.special = SPECIAL", "    return hot"]
    ns = {"ndarray": np.ndarray, "FLOATS": _FLOATS, "data_ok": data_ok, "as_result": as_result,
          "as_value": as_value, "reraise_located": reraise_located, "SHAPE_ERRORS": SHAPE_ERRORS, "bound": bound, "fn": fn, "C": c, "PLANS": PLANS, "GEN": PLANS.generation,
          "hold": c.assumptions.hold, "CODE": c.assumptions.code, "SPECIAL": special, **(guard[1] if guard else {}),
          "matcher": sigmatch.cached, "never": sigmatch.never}
    exec(compile("\n".join(lines) + "\n", f"<s2sad hot path of {c.name}>", "exec"), ns)
    return ns["make"]


def warm_lines(hot: Callable | None, examples: tuple | None) -> list[str]:
    """explain(grad(f), *example_args) for the generated program: what a warm call with
    those arguments runs. `hot`: the grad's array hot path (None before its first call);
    the kernels its program names say, by their launch plans, which launches are one
    compiled call each."""
    if examples is None:
        return []
    if hot is None:
        return ["  warm calls: not called yet (the hot path is made at the first call)"]
    special = getattr(hot, "special", None)
    if special is None:
        return ["  warm calls: the hot path, then the generated program (not straight-line code, or it reads "
                "free data: no copy specialised per signature)"]
    kernels = [v for v in special.fn.__globals__.values() if hasattr(v, "launch_plans")]
    # (a kernel times a seed of two factors, `seeded`, makes kernel_matmul's launches)
    launches = launch_counts(kernels + [k.seeded() for k in kernels if callable(getattr(k, "seeded", None))])
    launched = (f"; {launches[0]} of its kernels' {launches[1]} launch plans call their driver through a compiled "
                "launcher (one call into machine code each; ctypes for the others)") if launches[1] else ""
    if not (all(type(a) is np.ndarray for a in examples) and special.specialised(examples)):
        return ["  warm calls: the hot path, then the generated program; a copy specialised to a signature is made "
                f"at its second call (not yet for these arguments){launched}"]
    spec = special.specs.get(sigmatch.signature_of(examples))
    why = spec[2] if spec is not None else "not recorded"
    if why is None:
        return ["  warm calls with these arguments: their signature matched in machine code (sigmatch), then the whole "
                f"gradient as one compiled call (a program launcher: its {spec[0].steps} C calls, the drivers' and "
                "numpy's BLAS routines, in order; array_program.py), the results and temporaries allocated around it"]
    whole = getattr(spec[0], "chooser", None)
    counted = ("; its passes run on one thread count for the whole gradient, chosen by timing whole calls "
               f"(threadchoice.one_count_for_all: {_choice_words(whole)})") if whole is not None else ""
    return ["  warm calls with these arguments: their signature matched in machine code (sigmatch), then the copy "
            "specialised to it, each site bound to its kept call, numpy's product or compiled entry"
            f"{launched}; not one compiled call for the whole gradient ({why}){counted}"]


def _choice_words(chooser) -> str:
    counts = set(chooser.choices().values())
    if not counts or counts == {0}:
        return "still timing"
    return " or ".join(f"{c} thread{'s' if c > 1 else ''}" for c in sorted(counts - {0})) + " so far"


def launch_counts(kernels: list) -> tuple[int, int]:
    """(launch stubs with a compiled launcher, launch stubs) among the kernels' launch plans."""
    stubs = [run for k in kernels for plan in list(getattr(k, "launch_plans", {}).values())
             if isinstance(plan, tuple) and len(plan) == 4 and callable(run := plan[2])
             and getattr(run, "__code__", None) is not None and run.__code__.co_filename == "<s2sad launch stub>"]
    return sum(1 for s in stubs if s.__globals__.get("L") is not None), len(stubs)

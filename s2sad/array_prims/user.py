"""The user's array rules: `s2sad.defvjp(fn, vjp_0, vjp_1, ...)` records them here.

Each `vjp_i(g, out, *args)` returns the adjoint of the i-th argument; the table's "user"
entry (shapes.py) makes any call of `fn` at the array level a primitive whose VJP calls
them. Process-wide, keyed by the function's identity; this module imports nothing of
s2sad, so the passes (primcalls) read it and api writes it.
"""
from __future__ import annotations

from typing import Callable

# numpy (or other array) function -> one vjp per argument: vjp_i(g, out, *args)
USER_VJPS: dict[Callable, tuple[Callable, ...]] = {}


def register_vjp(fn: Callable, vjps: tuple[Callable, ...]) -> None:
    """Record the rule `s2sad.defvjp` was given (see there)."""
    USER_VJPS[fn] = tuple(vjps)


def user_vjp(value) -> tuple[Callable, ...] | None:
    """The rule registered for `value`, else None (also for an unhashable value)."""
    try:
        return USER_VJPS.get(value)
    except TypeError:
        return None

"""The S2SAD_* switches read as the README's environment table says, a bad value warned
about (DESIGN: "bad values warn"), never a raw exception and never silently taken.

`switch("S2SAD_ROW_FUSION")`: "0" off, "1" on, unset or empty the default; anything
else ("off", "false", "yes") a RuntimeWarning naming the variable and the default kept.
`choice("S2SAD_VECMATH", modes)`: one of `modes` (case and spaces ignored), unset or
empty None; anything else a warning and None (the caller's default).

Invariant: each (variable, bad value) is warned about once a process: these are read
when a plan or a kernel is made, which a program does many times.
"""
from __future__ import annotations

import os
import warnings

_warned: set = set()


def _warn(name: str, value: str, what: str) -> None:
    if (name, value) not in _warned:
        _warned.add((name, value))
        warnings.warn(f"{name}={value!r} is not {what}: ignored (the default is used)", RuntimeWarning,
                      stacklevel=3)


def switch(name: str, default: bool = True) -> bool:
    """The on/off switch `name` ("0" or "1"), the default where unset, empty or bad (warned)."""
    value = os.environ.get(name, "").strip()
    if value == "":
        return default
    if value in ("0", "1"):
        return value == "1"
    _warn(name, value, "0 or 1")
    return default


def number(name: str, default: float) -> float:
    """The non-negative number `name` holds, the default where unset, empty or bad (warned)."""
    value = os.environ.get(name, "").strip()
    if value == "":
        return default
    try:
        got = float(value)
    except ValueError:
        got = -1.0
    if got >= 0.0 and got == got and got != float("inf"):
        return got
    _warn(name, value, "a non-negative number")
    return default


def choice(name: str, options) -> str | None:
    """One of `options` named by `name`, or None where unset, empty or bad (warned)."""
    value = os.environ.get(name, "").strip().lower()
    if value == "":
        return None
    if value in options:
        return value
    _warn(name, value, "one of " + ", ".join(options))
    return None

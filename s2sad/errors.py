"""Errors the user can cause.

Every class here derives from `S2SADError`. Each message names the file, line and
column, shows the offending source line with a caret, and ends with what to do.
Code that raises one passes a `SourceLocation` (from `frontend.SourceMap`) when it
has one; errors about runtime values (dtypes, shapes) name the argument instead.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLocation:
    filename: str
    lineno: int
    col: int  # 0-based, as in Python's ast

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}:{self.col + 1}"

    def source_line(self) -> str:
        return linecache.getline(self.filename, self.lineno).rstrip("\n")


class S2SADError(Exception):
    """Base class of every error a user of s2sad can cause."""

    def __init__(self, message: str, location: SourceLocation | None = None, hint: str = ""):
        self.message = message
        self.location = location
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        parts = []
        if self.location is not None:
            parts.append(f"{self.location}: {self.message}")
            line = self.location.source_line()
            if line:
                parts.append("    " + line)
                parts.append("    " + " " * self.location.col + "^")
        else:
            parts.append(self.message)
        if self.hint:
            parts.append(self.hint)
        return "\n".join(parts)


class DaskSplitError(S2SADError):
    """A loss over dask arrays that s2sad cannot split into blocks (dask_grad)."""


class UnsupportedSyntaxError(S2SADError):
    """A construct outside the language s2sad differentiates (try, with, yield, class...)."""


class NoSourceError(S2SADError):
    """A function with neither Python source nor a derivative rule (OPAQUE)."""


class RecursionNotSupportedError(S2SADError):
    """A scalar function calls itself, directly or through others."""


class FreeVariableError(S2SADError):
    """A free name whose value s2sad cannot use where it is read."""


class NonDifferentiableInputError(S2SADError):
    """An integer or bool array (or a non-number) passed as a differentiated argument."""


class NonScalarLossError(S2SADError):
    """grad/value_and_grad of a function that does not return a real scalar."""


def non_scalar_loss(name: str, shape: tuple, location: SourceLocation | None) -> NonScalarLossError:
    """The refusal of a loss that is not 0-d, located at the return: a loss of one element
    ((1,), (1, 1)) too, as JAX refuses it ("Gradient only defined for scalar-output
    functions")."""
    shape = tuple(shape)
    size = 1
    for n in shape:
        size *= n
    if size == 1:
        return NonScalarLossError(
            f"{name} returns an array of shape {shape}, not a scalar loss: a gradient is defined for a scalar "
            "(0-d) output only, as in JAX", location,
            hint="Return its one element: index it (out[0]" + ", 0" * (len(shape) - 1) + ") or sum it (np.sum(out)).")
    return NonScalarLossError(f"{name} returns an array of {size} elements, not a scalar loss", location,
                              hint="grad needs a real scalar: reduce the result, e.g. return np.sum(...), or use "
                                   "s2sad.jvp/vjp.")


class ArgumentError(S2SADError, TypeError):
    """A call the function would not take (a missing or unexpected argument, too many):
    Python's own message, located at the function; a TypeError too, as Python raises."""


class ShapeError(S2SADError):
    """Arguments whose shapes do not broadcast together."""


class StatefulError(S2SADError):
    """A function that writes state, used where state cannot be carried."""


class BackendUnavailableError(S2SADError):
    """A backend was asked for whose software or hardware is missing."""


class UnsupportedOperationError(S2SADError):
    """A numpy function or method s2sad has no rule for."""


class StaleSourceError(S2SADError):
    """The source s2sad reads for a function is not the code Python runs (the file was
    edited after the module was imported)."""


class HigherOrderNotSupportedError(S2SADError):
    """A derivative made by s2sad (grad, value_and_grad, a vjp pullback) given to s2sad
    to differentiate again, or called inside a function s2sad differentiates."""

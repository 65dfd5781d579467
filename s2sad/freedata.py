"""Free data whose numbers s2sad would change: refused where the function reads it.

A global or closure array (or list) that an array program or a fused kernel reads at
call time is real float64/float32 data to the kernels. Complex data would lose its
imaginary part (numpy only warns), long double its extra precision, and an object or
string array has no numbers: the plan refuses them (located at the read, by its caller)
instead of computing with what numpy's cast leaves. A change of a global's dtype makes a
new plan (frontend.Assumptions keys arrays by dtype), so the check runs for every dtype
a call meets, at plan time. A list has no dtype to key on: the plan's assumption on a
list (frontend.Assumptions) also holds only while its data stays as usable as when
planned (`list_still_usable`, run per call), so a list whose elements turn complex,
long double or strings after warm calls is planned again, and refused there. Where the
array program itself converts the list (every statement reading it is plain Python,
`np.array(L)`), that conversion's result is checked instead (`RealData`, bound around the
statement by passes/freelists.py) and the per-call test only asks that it is still a
list (`still_a_list`): the list is converted once a call, not twice.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .errors import FreeVariableError, SourceLocation


def lossy_data(value: Any) -> str | None:
    """Why the kernels cannot read `value` (an array or a list of free data) as it is,
    or None when they can (real numbers of at most 64 bits, bools, ints)."""
    if isinstance(value, np.ndarray):
        dtype = value.dtype
    elif isinstance(value, list):
        try:
            dtype = np.asarray(value).dtype
        except (TypeError, ValueError):     # ragged or not numbers: the program says so where it reads it
            return None
    else:
        return None
    return lossy_dtype(dtype)


def lossy_dtype(dtype: np.dtype) -> str | None:
    """lossy_data's answer for data of `dtype`."""
    if dtype.kind == "c":
        return f"dtype {dtype}: s2sad differentiates real code and would drop the imaginary part"
    if dtype.kind == "f" and dtype.itemsize > 8:
        return f"dtype {dtype}: s2sad computes in float64 or float32 and would lose the extra precision"
    if dtype.kind not in "biuf":
        return f"dtype {dtype}, not numbers"
    return None


HINT = ("Make it a float64 (or float32) array: np.asarray(..., dtype=np.float64); split complex "
        "numbers into their real and imaginary parts.")


def list_usable(value: list) -> bool:
    """Whether the kernels can read the list `value` as it is (what the plan recorded)."""
    return lossy_data(value) is None


def still_a_list(current: Any, want: tuple) -> bool:
    """A plan's test on a free list whose conversions the generated code checks (RealData):
    still a list (want = (list, usable when planned), as list_still_usable's)."""
    return type(current) is want[0]


class RealData:
    """checker(array) -> array, bound in generated code around the statement that converts
    the free list `name` (`real_data(np.array(L))`, passes/freelists.py): an array whose
    numbers the kernels would change (complex, long double, strings, objects) is refused,
    located at the read, with the words the plan uses on a first call. Holds no user
    object."""

    __slots__ = ("name", "where")

    def __init__(self, name: str, where: SourceLocation | None):
        self.name, self.where = name, where

    def __call__(self, value: Any) -> Any:
        lossy = lossy_dtype(value.dtype) if type(value) is np.ndarray else None
        if lossy is not None:
            raise FreeVariableError(f"'{self.name}' holds {lossy}", self.where, hint=HINT)
        return value


def list_still_usable(current: Any, want: tuple) -> bool:
    """A plan's test on a free list (want = (list, usable when planned)): still a list,
    and its numbers as usable as they were (a list of functions stays one)."""
    return type(current) is want[0] and (type(current) is not list or list_usable(current) == want[1])

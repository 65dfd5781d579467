"""`x = a * b` in a specialised copy as a site (array_special._SiteNames writes it as a
call of `times_number`): an array times a number of the code, which array_program then
lowers to a compiled product. Logistic regression's gradient scales its rows' partials
by the loss's (`_1_bar = d3_d1 * _3_bar`), a number the copy knows from the code; done
by numpy in Python between the sites, it kept value_and_grad's copy (and any other with
such a line) from being one compiled call.

The site calls `a * b` as the line did: the same numpy product. It is marked for
array_program only for an exact float64 / float32 C-contiguous array and an exact
Python float or a float subclass (numpy casts a Python float to the array's dtype,
NEP 50: a float32 product stays float32; a float that overflows there is left to
numpy) whose product is a new array of the array's shape and dtype (np.float64 times a
float32 array is float64: declined by that check).
"""
from __future__ import annotations

import math

import numpy as np

from .codegen import llvm_launch
from .productsums import mulsum_function

TIMES = "s2sad_times"     # (the copy's name for `a * b`: no generated name has this form)


def times_number(a, b):
    """`a * b`: a specialised copy's `x = a * b` line, as a site."""
    return a * b


def specialise_times(full, backend, args, kwargs, result):
    """array_special's specializer of the site (see the module docstring): `a * b` marked
    with the number's place, or None (the full call, the same product)."""
    if kwargs or len(args) != 2 or full is not times_number:
        return None
    j = 0 if _number(args[0]) else 1 if _number(args[1]) else None
    x = args[1 - j] if j is not None else None
    if type(x) is not np.ndarray or x.dtype.char not in "fd" or not x.flags.c_contiguous or not x.size \
            or type(result) is not np.ndarray or result.dtype != x.dtype or result.shape != x.shape:
        return None
    with np.errstate(over="ignore"):
        if math.isfinite(args[j]) and not np.isfinite(x.dtype.type(args[j])):
            return None
    return _number_first if j == 0 else _number_second


def _number(v) -> bool:
    """A Python float, or a float subclass (smath.Real, a scalar dual's number; np.float64,
    whose product with a float32 array is float64: the result's dtype check declines it)."""
    return isinstance(v, float)


def _number_first(a, b):
    return a * b


def _number_second(a, b):
    return a * b


_number_first.parts = ("times", 0)
_number_second.parts = ("times", 1)


def lower(b, x, number: float, result) -> None:
    """array_program's lowering of the site (b its builder): x * number by product_sums's
    compiled pass (llvm_mulsum) over one row of x's size, times a kept row of the number
    in x's dtype (numpy's cast of it), stride 0: the IEEE products numpy's multiply
    makes; its column sums go to scratch, never read."""
    rx = b.ref(x)
    dt, size = b.slots[rx[0]]["dtype"], int(np.prod(rx[1]))
    row = np.full(size, number, dt)
    row.flags.writeable = False
    f = mulsum_function(dt)
    rn, out, sums = b.const(row), b.new("empty", rx[1], dt), b.new("empty", (size,), dt)
    b.keep.append(f)
    b.step(llvm_launch.function_address(f), "i" * 8,
           [("ptr", rx[0], 0), ("ptr", rn[0], 0), ("ptr", out[0], 0), ("ptr", sums[0], 0),
            ("word", 1), ("word", size), ("word", size), ("word", 0)])
    b.bind(result, out)

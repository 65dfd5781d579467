"""The outer product `np.multiply(g, row)` of a column g (n, 1) and a row (1, k): the
adjoint of `a @ w` w.r.t. a where w has one column (array_rules._rank1), as the kept
compiled apply of the kernel `a * b`, so that array_program can lower it inside a
layer's `lhs_bar_sums` (array_special binds that site with it; the copy keeps the full
call, numpy's multiply).

Invariant: the driver's products are the IEEE products numpy's multiply makes (one
multiply an element, a column value times a row value, in that order), so the bits are
numpy's; array_program's build checks the recording's, tests/test_program_layers.py
checks new values (signed zeros, infinities, NaNs) against the full path.
"""
from __future__ import annotations

import numpy as np

from . import runtime
from .parsing import gast_parse
from .passes.normalize import ScalarProgram
from .runkernel import Kernel

_KERNEL: list = []


def _kernel() -> Kernel:
    if not _KERNEL:
        fn = gast_parse("def outer_mul(a, b):\n    return a * b\n").body[0]
        program = ScalarProgram({"outer_mul": fn}, "outer_mul", ("a", "b"),
                                {"outer_mul": "a column times a row (an outer-product adjoint)"})
        _KERNEL.append(Kernel(program, "outer_mul"))
    return _KERNEL[0]


def kept_outer(g, row, backend="auto"):
    """call((g, row)) -> g * row (a new (n, k) array), the kept apply of this signature,
    with its parts (runtime.keep_signature_call); None where g is not an (n, 1) column
    and row a (1, k) row of one float dtype, or no call is kept."""
    if type(g) is not np.ndarray or type(row) is not np.ndarray or g.ndim != 2 or row.ndim != 2 \
            or g.shape[1] != 1 or row.shape[0] != 1 or g.dtype != row.dtype \
            or g.dtype not in (np.float64, np.float32) or g.shape[0] < 2 or row.shape[1] < 2:
        return None
    kernel = _kernel()
    call = runtime.kept_apply(kernel, (g, row))
    if call is None:
        got = runtime.apply(kernel, (g, row), backend)
        call = runtime.kept_apply(kernel, (g, row))
        if call is None or type(got) is not np.ndarray or got.shape != (g.shape[0], row.shape[1]) \
                or got.dtype != g.dtype:
            return None
    return call if getattr(call, "parts", None) is not None else None

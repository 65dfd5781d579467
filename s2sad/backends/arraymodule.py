"""Which array module an array belongs to (numpy or cupy), without importing cupy.

cupy is in sys.modules once a cupy array exists: `is_cupy` looks there and never
imports it, so numpy-only users never pay for (or need) cupy.
"""
from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np


def is_cupy(a: Any) -> bool:
    """Whether `a` is a cupy array (without importing cupy: none exists before it is)."""
    cp = sys.modules.get("cupy")
    if cp is None:
        return False
    nd = getattr(cp, "ndarray", None)
    return isinstance(nd, type) and nd is not np.ndarray and isinstance(a, nd)


def any_cupy(args: Sequence[Any]) -> bool:
    return any(is_cupy(a) for a in args)

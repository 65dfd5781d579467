"""What the python and llvm backends share: numpy memory, float64 sums, no cupy arrays."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import BackendUnavailableError
from .arraymodule import any_cupy
from .arrays import Prepared, prepare
from .base import Backend

# the dtype of every sum on the host (kernel.py's A): float64 for float32 data too, rounded once
ACC_DTYPE = np.dtype(np.float64)


def rounded(total, dtype: np.dtype) -> float:
    """A sum accumulated in float64, rounded to `dtype` (as a Python float)."""
    return float(total) if dtype == ACC_DTYPE else float(dtype.type(total))


class HostBackend(Backend):
    """A backend that runs in this process on numpy arrays, its sums in element order."""

    ordered_sums = True

    def resolve(self, arrays: Sequence[Any]) -> Backend:
        if any_cupy(arrays):
            raise BackendUnavailableError(f"cupy arrays cannot run on the {self.name!r} backend",
                                          hint="Use backend='cuda' (or 'auto'), or pass numpy arrays "
                                               "(cupy.asnumpy).")
        return self

    @property
    def xp(self) -> Any:
        return np

    def prepare(self, args: Sequence[Any], names: Sequence[str], dtype: np.dtype | None = None) -> Prepared:
        return prepare(args, names, dtype)

    def acc_dtype(self, dtype: np.dtype) -> np.dtype:
        return ACC_DTYPE

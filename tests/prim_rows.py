"""What a row of the array-primitive spec table is (tests/test_array_prims.py), and the
rows kept by family in tests/prim_rows_<family>.py (each a module-level list ROWS of
Row, with its losses defined in that module so s2sad can read their source)."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class Row:
    prim: str                         # the entry it covers
    fn: Callable
    shapes: tuple                     # one tuple of argument shapes per case
    dtypes: tuple = ("float64", "float32")
    # the arguments' values: (shape, dtype, seed) -> array; None: uniform in [0.5, 1.5)
    make: Callable | None = None
    tol64: dict | None = None         # a looser float64 tolerance, where the primitive needs it
    # forward mode refused (a located UnsupportedOperationError saying this), where the
    # tangent is undefined (a full svd's extra columns: JAX refuses it too)
    jvp_refused: str | None = None


def family_rows() -> list[Row]:
    rows = []
    for path in sorted(Path(__file__).parent.glob("prim_rows_*.py")):
        rows += importlib.import_module(path.stem).ROWS
    return rows

"""Row arguments: the columns a row function reads (passes/rowelems.py decides which
parameters are rows and which positions they read), as kernel inputs (`Column`), read
from the arrays given for them at call time and shape-checked there, their gradients
scattered back into those arrays; and s2sad.broadcast's `signature=`.

Whether a parameter is a row is decided by the function's code (rowelems), never by
shapes: the checks here run at every call (`check_rows`: 2-D, enough columns for the
highest index read, exactly as many as an unpacking or a `signature=` says).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import S2SADError, ShapeError, SourceLocation, UnsupportedOperationError
from ..frontend import Resolver


def index_text(index: tuple) -> str:
    """An element index as Python source: `0, 1`, `:, 2` (a column)."""
    return ", ".join(":" if isinstance(i, slice) else str(i) for i in index)


def row_error(msg: str, loc, hint: str, cls=UnsupportedOperationError) -> S2SADError:
    return cls(msg, loc, hint=hint)



@dataclass(frozen=True)
class Column:
    """Column `col` of the 2-D array `base` (an argument of the loss, origin "param",
    or a free array, "free") as the kernel parameter `param`; it stands in plan inputs
    where a Capture would (kind "capture": same fields, `read`, an `index` to scatter
    its gradient back with). `need`/`exact`: the columns the row function needs."""

    origin: str
    base: str
    col: int
    param: str
    location: SourceLocation
    need: int
    exact: int | None = None
    widest: int = 0
    resolver: Resolver | None = field(default=None, compare=False, repr=False)

    @property
    def index(self) -> tuple:
        return (slice(None), self.col)

    def key(self) -> tuple:
        return ("column", self.base, self.col)

    def read(self, value: Any = None):
        if value is None:
            value = self.resolver.lookup(self.base)
        if not hasattr(value, "shape"):
            value = np.asarray(value)
        check_rows(value.shape, f"'{self.base}'", self.need, self.exact, self.widest, self.location)
        return value[:, self.col]


def check_rows(shape: tuple, what: str, need: int, exact: int | None, widest: int, loc) -> None:
    """A row function's array (`what`: how to name it): 2-D, with the columns its reads need."""
    if len(shape) != 2:
        raise ShapeError(f"{what} has shape {tuple(shape)}, but the function applied to it reads "
                         f"components of its elements: a 2-D array is needed (one row per element)", loc,
                         hint="Pass a 2-D array whose rows are the elements, or a function of numbers "
                              "(not indexing its parameter) for a 1-D array.")
    if exact is not None and shape[1] != exact:
        raise ShapeError(f"{what} has shape {tuple(shape)}: each row must have exactly {exact} "
                         f"components here (an unpacking or signature= says so)", loc,
                         hint=f"Pass an array of shape (n, {exact}).")
    if shape[1] < need:
        raise ShapeError(f"{what} has shape {tuple(shape)}, but index {widest} of its rows is read: "
                         f"{need} columns are needed", loc,
                         hint=f"Pass an array with at least {need} columns, or fix the index.")


# ---------------------------------------------------------------- signature=

_SIG = re.compile(r"^\s*(\(\s*\w*\s*\)(\s*,\s*\(\s*\w*\s*\))*)\s*->\s*\(\s*(\w*)\s*\)\s*$")


def parse_signature(text: str, loc) -> tuple[list[int | str | None], int | str | None]:
    """numpy's gufunc notation, "(3),()->()": per argument, its core dimension (a
    length, a name, or None for a number), and the output's ("(2)": a tuple of 2)."""
    m = _SIG.match(text) if isinstance(text, str) else None
    if m is None:
        raise row_error(f"signature={text!r} is not supported", loc,
                        "Write one core dimension or none per argument and one for the output, e.g. "
                        "signature=\"(3),()->()\" or \"(3)->(2)\".")
    ins = re.findall(r"\(\s*(\w*)\s*\)", text.split("->")[0])
    out = m.group(3)
    return ([None if not d else int(d) if d.isdigit() else d for d in ins],
            None if not out else int(out) if out.isdigit() else out)


def row_arguments(args, rows: list | None, signature: str | None, name_: str, loc) -> list:
    """s2sad.broadcast's arguments with each row argument replaced by the columns its
    function reads (shape-checked: 2-D, enough columns, exactly the signature's);
    `rows`: per parameter its rowelems.RowUse, or None for a number."""
    cores, out = parse_signature(signature, loc) if signature is not None else (None, None)
    if out is not None:
        raise row_error(f"signature={signature!r}: s2sad.broadcast returns numbers per element for now",
                        loc, "Sum the tuple inside a loss (np.sum(s2sad.broadcast(f, X, signature=...))), or "
                        "write one function per entry.")
    if cores is not None and len(cores) != len(args):
        raise row_error(f"signature={signature!r} has {len(cores)} argument(s), {len(args)} are given", loc,
                        "Write one core dimension, or (), per argument.", ShapeError)
    rows = rows or [None] * len(args)
    out = []
    for pos, a in enumerate(args):
        use = rows[pos] if pos < len(rows) else None
        core = cores[pos] if cores is not None else None
        if use is not None and cores is not None and core is None:
            raise row_error(f"signature={signature!r} says argument {pos + 1} is a number, but {name_} indexes "
                            f"that parameter", loc, "Write its core dimension: signature=\"(3)->()\".", ShapeError)
        if use is None:
            if core is not None:
                raise row_error(f"signature={signature!r} gives argument {pos + 1} rows, but {name_} never "
                                f"indexes that parameter", loc, "Index its components in the function, or "
                                "write () for it.", ShapeError)
            out.append(a)
            continue
        if isinstance(core, int) and (use.need() > core or use.exact not in (None, core)):
            raise row_error(f"signature={signature!r} says argument {pos + 1} has rows of {core}, but {name_} "
                            f"reads {use.need()} components", loc, "Fix the signature or the indices.", ShapeError)
        value = a if hasattr(a, "shape") else np.asarray(a)
        check_rows(value.shape, f"argument {pos + 1} of {name_}", use.need(),
                   core if isinstance(core, int) else use.exact, use.widest(), loc)
        out.extend(value[:, i] for i in use.order())
    return out


def rows_gradient(like, grads, cols, zeros_like):
    """The gradient of a 2-D argument read only through columns: each column's kernel
    gradient in its place (one pass when the columns read are all of them, once each;
    else zeros with each added, unread columns 0, a column read twice summed)."""
    if not hasattr(like, "shape"):     # a list of rows: its gradient is an array of its shape
        like = np.asarray(like, dtype=float)
    k = like.shape[1]
    where = [c % k for c in cols]
    if type(like) is np.ndarray and sorted(where) == list(range(k)):
        out = np.empty(like.shape, dtype=like.dtype)
        for g, c in zip(grads, where):
            out[:, c] = g
        return out
    out = zeros_like(like)
    for g, c in zip(grads, where):
        out[:, c] += g
    return out


def read_columns(value, columns: list[Column]) -> list:
    """The columns a row function reads of one array, shape-checked once; read from one
    transposed copy when they are most of its columns (one pass over the array instead
    of one strided gather per column: the kernel reads contiguous columns)."""
    if not hasattr(value, "shape"):
        value = np.asarray(value)
    first = columns[0]
    check_rows(value.shape, f"'{first.base}'", first.need, first.exact, first.widest, first.location)
    k = value.shape[1]
    if type(value) is np.ndarray and len(columns) > 1 and 2 * len({c.col % k for c in columns}) >= k:
        t = np.ascontiguousarray(value.T)
        return [t[c.col] for c in columns]
    return [value[:, c.col] for c in columns]

"""Typed records of the generated lines a later fusion joins: what a sweep knew when it
wrote the line, kept beside the line's text.

A sweep that writes `x = matmul(A, B)` (or `x_bar = matmul_lhs_bar(G, A, B)`, ...) writes
it as `product_line(...)`: an `Emitted` line, a `str` whose text is its record's printing,
carrying the record (a frozen `ProductLine`). The fusions (epilogues, biasproducts,
paired_products) decide on `record_of(line)`, never by matching the text.

Invariants:
- a record is printed to text in exactly one place (`ProductCall.text`, `ProductLine.text`),
  and an `Emitted` line's text is always its record's printing: the two cannot disagree;
- only `product_line` makes a recorded line. A line edited after it was written (any
  `str` operation returns a plain `str`) or written as text elsewhere has no record, so
  no fusion joins it: a printing change can only keep a fusion from firing, never
  join lines that do not mean what the record says;
- a record holds texts only (names, constants): it keeps no user object alive.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..array_prims.ops import Product
from .adjoint_text import text_of

# the products written as records: the helpers their rules print (array_prims/products.py;
# tests/test_sweep_records.py holds the two printings equal)
RECORDED = ("matmul", "dot")


@dataclass(frozen=True)
class ProductCall:
    """`helper(operands...)`: a product of arrays (matmul, dot, matmul_lhs_bar, ...) whose
    operands are the texts of its positional arguments."""

    helper: str
    operands: tuple[str, ...]

    def text(self) -> str:
        return f"{self.helper}({', '.join(self.operands)})"

    def __str__(self) -> str:       # (an f-string of a term sums it with others: plain text)
        return self.text()


@dataclass(frozen=True)
class ProductLine:
    """`target = call` at `indent` (its block: the generated function's body is four
    spaces)."""

    indent: str
    target: str
    call: ProductCall

    @property
    def helper(self) -> str:
        return self.call.helper

    @property
    def operands(self) -> tuple[str, ...]:
        return self.call.operands

    def text(self) -> str:
        return f"{self.indent}{self.target} = {self.call.text()}"


class Emitted(str):
    """One line of generated text and the record it was printed from."""

    __record: ProductLine

    def __new__(cls, record: ProductLine):
        line = super().__new__(cls, record.text())
        line.__record = record
        return line

    @property
    def record(self) -> ProductLine:
        return self.__record


def product_line(indent: str, target: str, call: ProductCall) -> Emitted:
    """The line `target = call`, recorded (see the module docstring)."""
    return Emitted(ProductLine(indent, target, call))


def record_of(line) -> ProductLine | None:
    """The record `line` was printed from, or None (a plain line, or not a line)."""
    return line.record if isinstance(line, Emitted) else None


def named_product(line, helper: str, indent: str, arity: int) -> ProductLine | None:
    """`line`'s record when it is a `helper` product at `indent` whose `arity` operands
    are names (so what binds them can be checked), else None."""
    rec = record_of(line)
    if rec is None or rec.helper != helper or rec.indent != indent or len(rec.operands) != arity \
            or not all(o.isidentifier() for o in rec.operands):
        return None
    return rec


def _operands(st) -> tuple[str, ...] | None:
    """The operand texts of st when it is a recorded product (`RECORDED`), else None."""
    if not isinstance(st.op, Product) or st.op.kind not in RECORDED or len(st.args) != 2:
        return None
    return tuple(text_of(a) for a in st.args)


def product_call(st) -> ProductCall | None:
    """st's value as a recorded call, `matmul(A, B)`, or None where st is no such product."""
    ops = _operands(st)
    return None if ops is None else ProductCall(st.op.kind, ops)


def product_vjp_call(st, i: int, g: str, args: list) -> ProductCall | None:
    """The adjoint of st's operand i from the seed g (`matmul_lhs_bar(g, A, B)`), over
    the operand texts `args`, or None where st is no recorded product."""
    if _operands(st) is None:
        return None
    return ProductCall(f"{st.op.kind}_{'lhs' if i == 0 else 'rhs'}_bar", (g, args[0], args[1]))


def product_jvp_call(st, i: int, t: str, args: list) -> ProductCall | None:
    """The tangent term of st from its operand i's tangent t (`matmul(t, B)`), or None."""
    if _operands(st) is None:
        return None
    return ProductCall(st.op.kind, (t, args[1]) if i == 0 else (args[0], t))

"""A matrix product joined with the elementwise pass next to it, so that the product is
never stored (gemm_epilogue.py runs them a block of rows at a time):

forward (a kernel in store mode whose one stored partial is w.r.t. the product):

    _1 = matmul(X, W)                                  _1, h, (dh,) = product_partials(X, W,
    h, (dh,) = store_partials(k, (_1, b), ('_1',))  ->      k, 0, (None, b), ('_1',))

reverse (the adjoint of the kernel's output, made by the product's adjoint, then
multiplied by the stored partial and summed for the bias):

    h_bar = matmul_lhs_bar(G, h, W)                     (...)
    ...                                             ->  ...
    (_1_bar, b_bar) = product_sums(dh, h_bar, (_1, b))  (_1_bar, b_bar) = lhs_bar_sums(G, h, W, dh, (_1, b))

Invariants:
- forward: nothing but the kernel reads `_1` in the forward program and it is not the
  result; the kernel's partial w.r.t. `_1` is stored (store mode), so the reverse sweep
  reads only `_1`'s shape (unbroadcast, product_sums): the runtime binds `_1` to a
  zero-stride stand-in of its shape and dtype where it fuses.
- reverse: `h_bar`'s one binding is the product's line, in the same block at the
  function's top level, and no line between it and the sums reads or binds `h_bar` or
  binds G, h or W: the product moved down to the sums' line computes the same value,
  and `h_bar` is read by nothing else (the adjoint of a kernel's output is read only
  where that kernel is reversed).
- only the gradient's sweeps (forward_sweep, reverse_sweep) write these; the sweeps of
  higher derivatives keep the separate calls. S2SAD_GEMM_EPILOGUE=0 (or
  S2SAD_ROW_FUSION=0), read when a plan is built, keeps them too: the oracle tests and
  bench compare against.
"""
from __future__ import annotations

import os
import re

_PRODUCT = re.compile(r"^(?P<ind> *)(?P<x>\w+) = matmul\((?P<a>\w+), (?P<b>\w+)\)$")
_LHS_BAR = re.compile(r"^(?P<ind> *)(?P<g>\w+) = matmul_lhs_bar\((?P<G>\w+), (?P<a>\w+), (?P<w>\w+)\)$")
TOP = "    "          # the generated function's body: outside every loop and branch


def enabled() -> bool:
    """Are products joined with their elementwise neighbours? (Read when a plan is built.)"""
    return os.environ.get("S2SAD_GEMM_EPILOGUE", "1") != "0" and os.environ.get("S2SAD_ROW_FUSION", "1") != "0"


def fused_partials_line(st, kn: str, arg_texts: list, param: str, stored: list, prev: str | None, ind: str,
                        readers: dict) -> str | None:
    """The line that replaces `prev` (`x = matmul(A, B)`) and st's store_partials, whose
    one stored partial is w.r.t. kernel parameter `param` (see the module docstring),
    or None where st is not that kernel of that product."""
    m = _PRODUCT.match(prev or "")
    if m is None or m["ind"] != ind or not enabled():
        return None
    x = m["x"]
    if st.args.count(x) != 1 or readers.get(x, 0) != 1:
        return None
    at = st.args.index(x)
    if st.op.kernel.params[at] != param:
        return None
    texts = ["None" if i == at else t for i, t in enumerate(arg_texts)]
    tup = "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"
    stored_text = "(" + ", ".join(stored) + ("," if len(stored) == 1 else "") + ")"
    return (f"{ind}{x}, {st.target}, {stored_text} = product_partials({m['a']}, {m['b']}, {kn}, {at}, {tup}, "
            f"({param!r},))")


def _binds(line: str, names: set) -> bool:
    """Does `line` (an assignment, a comment or else) bind one of `names`?"""
    if line.lstrip().startswith("#"):
        return False
    lhs, eq, _ = line.partition(" = ")
    return bool(eq) and bool(names & set(re.findall(r"\w+", lhs)))


def fused_sums_call(out: list, g: str, d: str, inputs: str, ind: str) -> str | None:
    """The call that replaces `product_sums(d, g, inputs)`, with g's product line taken out
    of `out` (see the module docstring), or None (out unchanged) where g is not bound so."""
    if ind != TOP or not enabled():
        return None
    word = re.compile(rf"\b{re.escape(g)}\b")
    for i in range(len(out) - 1, -1, -1):
        line = out[i]
        if not isinstance(line, str) or "\n" in line:
            return None
        m = _LHS_BAR.match(line)
        if m is not None and m["g"] == g and m["ind"] == ind:
            later = out[i + 1:]
            if any(_binds(x, {m["G"], m["a"], m["w"]}) for x in later):
                return None
            del out[i]
            return f"lhs_bar_sums({m['G']}, {m['a']}, {m['w']}, {d}, {inputs})"
        if word.search(line) and not line.lstrip().startswith("#"):
            return None
    return None

"""A bias row added to a matrix product in the product's own pass (a gemm epilogue):

    _1 = matmul(X, W)                       _1, z = matmul_bias(X, W, kernel, 0, b)
    z = apply(kernel, (_1, b))        ->

where the kernel is exactly `_1 + b` (its entry returns the sum of its two parameters),
in recompute mode, and nothing but the kernel reads `_1` (the statement right before).
At run time (derivative_runtime.matmul_bias) s2sad's product adds the row in its tile's
store where it takes the operands and b is a row of its dtype (gemm.product_plus_row:
the product's bits, then the add's), and `_1` is then a read-only zero-stride array of
the product's shape and dtype, never its values: the kernel's pullback (its partials are
the literal 1: `unit_vjp`, or the kernel's vjp, which reads no value) and the generated
unbroadcast read only its shape and dtype. Elsewhere it is the product and the kernel's
apply, as written. The product is known by the forward sweep's record of its line
(passes/emitted.py: a `matmul` of two names at the kernel's indentation), never by its
text. Only the gradient's forward sweep (forward_sweep.py) does this; the
sweeps of higher derivatives keep the two statements.
"""
from __future__ import annotations

import gast

from .emitted import named_product
from .unitpartials import unit_partials


def _adds_its_params(kernel) -> bool:
    """Is the kernel's entry `return p0 + p1` over its two parameters (either order)?"""
    module = kernel.module(())
    fn = module.functions[module.entry]
    if len(module.params) != 2 or len(fn.body) != 1 or not isinstance(fn.body[0], gast.Return):
        return False
    e = fn.body[0].value
    if not isinstance(e, gast.BinOp) or not isinstance(e.op, gast.Add):
        return False
    names = [n.id for n in (e.left, e.right) if isinstance(n, gast.Name)]
    return sorted(names) == sorted(module.params)


def fused_bias_line(st, kn: str, active: tuple[str, ...], prev, ind: str, readers: dict,
                    result) -> str | None:
    """The line that replaces `prev` (`x = matmul(A, B)`) and st's apply (see the module
    docstring), or None where st is not that kernel of that product."""
    rec = named_product(prev, "matmul", ind, 2)     # the forward sweep's record of the product
    if rec is None or len(st.args) != 2:
        return None
    x = rec.target
    if st.args.count(x) != 1 or readers.get(x, 0) != 1 or x == result:
        return None
    at = st.args.index(x)
    other = st.args[1 - at]
    if not isinstance(other, str) or not _adds_its_params(st.op.kernel) or not unit_partials(st.op.kernel, active):
        return None
    a, b = rec.operands
    return f"{ind}{x}, {st.target} = matmul_bias({a}, {b}, {kn}, {at}, {other})"

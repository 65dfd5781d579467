"""Which generated derivatives array_special may specialise to a signature of their
arguments: straight-line code (no loop, no branch, no mask) every operand of which has a
type, shape, dtype and strides that follow from the arguments' ones, never from their
values (array_special's module docstring says why that matters).

NUMPY_FOLLOWS: numpy's reductions a generated forward line calls as `np.<name>` (a
value_and_grad's `np.mean` of the rows' values); allowing them (session 22) let
value_and_grad of the cross-entropy be specialised as grad is: 45 -> 21 us a call at 32
rows on the znver5.
"""
from __future__ import annotations

import ast

import numpy as np

from .parsing import ast_parse


# helpers whose results' types, shapes, dtypes and strides follow from their operands'
# ones (never from their values): a straight-line derivative calling only these, the
# sites below and its scalar kernels is specialised
SHAPE_FOLLOWS = frozenset({
    "unbroadcast", "sum_bar", "mean_bar", "zeros_bar", "maxmin_bar", "prod_bar",
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
    "row_logsumexp", "row_softmax", "row_log_softmax", "row_logsumexp_bar", "row_softmax_bar",
    "row_log_softmax_bar", "row_dot_log_softmax", "row_dot_log_softmax_bar", "row_dot_like", "row_layer_norm",
    "row_logsumexp_max_bar", "row_logsumexp_like",
    "row_layer_norm_bar",
    "check_scalar_loss", "sum_dual", "store_partials", "dot_lhs_bar", "dot_rhs_bar", "product_sums", "unit_vjp",
    "product_partials", "lhs_bar_sums", "head_logits", "xent_head_bars", "xent_head_sums"})


def straight_line(text: str, name: str, ns: dict, sites) -> ast.FunctionDef | None:
    """The function `name` of the generated `text` when it is straight-line code whose
    every operand's signature follows from the arguments' (see the module docstring):
    statements that assign, evaluate or return; calls only of the `sites`, SHAPE_FOLLOWS,
    NUMPY_FOLLOWS and the program's scalar kernels (ns: the namespace it runs in); subscripts only by
    constants (a mask's or an index array's result would depend on values); no
    conditional expression, boolean operator, comprehension or lambda."""
    node = next((n for n in ast_parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if node is None or not all(isinstance(s, (ast.Assign, ast.Expr, ast.Return, ast.Pass)) for s in node.body):
        return None
    for n in ast.walk(ast.Module(body=node.body, type_ignores=[])):
        if isinstance(n, (ast.IfExp, ast.BoolOp, ast.Lambda, ast.comprehension, ast.NamedExpr, ast.Await,
                          ast.Yield, ast.YieldFrom, ast.Starred)):
            return None
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and _follows(n.func.id, ns, sites)
                                            or _numpy_follows(n, ns)):
            return None
        if isinstance(n, ast.Subscript) and not _constant_index(n.slice):
            return None
    return node


def _follows(name: str, ns: dict, sites) -> bool:
    if name in sites or name in SHAPE_FOLLOWS:
        return True
    return scalar_kernel(ns.get(name))    # a scalar kernel's Python (its dual)


NUMPY_FOLLOWS = frozenset({"mean", "sum"})    # np.<name>(x[, axis=<constant>]): value_and_grad's forward reductions


def _numpy_follows(call: ast.Call, ns: dict) -> bool:
    """`np.mean(x)` or `np.sum(x, axis=1)` (numpy as the program's `np`, its operands
    names, any keyword a constant): the result's type, shape and dtype follow from x's."""
    f = call.func
    return (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and ns.get(f.value.id) is np
            and f.attr in NUMPY_FOLLOWS and all(isinstance(a, ast.Name) for a in call.args)
            and all(isinstance(k.value, ast.Constant) for k in call.keywords))


def _constant_index(index: ast.expr) -> bool:
    if isinstance(index, ast.Constant):
        return True
    if isinstance(index, ast.Slice):
        return all(p is None or isinstance(p, ast.Constant) for p in (index.lower, index.upper, index.step))
    if isinstance(index, ast.Tuple):
        return all(_constant_index(e) for e in index.elts)
    return False


def scalar_kernel(v) -> bool:
    """Is v a scalar kernel's Python (a generated derivative's plain call of its dual)?"""
    code = getattr(v, "__code__", None)
    return code is not None and code.co_filename.startswith("<s2sad kernel")

"""hessian and hvp of a function whose differentiated arguments are containers (pytrees:
dicts, lists, tuples, namedtuples, dataclasses), in JAX's layout.

The call is flattened as grad flattens it (treecalls.flatten_call: one leaf per array or
number, the layout's skeletons a plan key); the function is planned with one parameter
per leaf (plans.compiled_array with its Layout: an array program, a fused loss as one
KernelSum statement) and its forward-over-reverse program (passes/array_jvp.array_hvp)
gives the product of the Hessian with a tangent given per leaf:

- `hvp_tree`: the tangents are pytrees of the primals' structure (flattened up to it,
  tree.flatten_up_to); the product is in the structure of grad's gradient (a tuple of
  them for a tuple of argnums), each leaf in its primal's dtype.
- `hessian_tree`: one such product per element of every differentiated leaf (a column
  of the Hessian each), so its cost is that many forward-over-reverse sweeps (for a
  plain array argument the batched paths of higher.py answer instead). The result is
  JAX's nesting: for one argnum, the argument's structure of (the argument's structure of
  blocks), a dict argument giving a dict of dicts, `H[ki][kj]` of shape
  `p[ki].shape + p[kj].shape`; for a tuple of argnums, JAX's jacfwd(jacrev(f, argnums),
  argnums): a tuple over argument a of a's structure, each of its leaves a tuple over
  argument b of b's structure (`H[a][ki][b][kj]`; `H[a][b]` where both are arrays, as
  before). A block of a number by a number is a float, as hessian of floats gives.

Refused, located at the function's definition (NonDifferentiableInputError): a
differentiated container with a leaf that is not a float (an int, a string, an object:
JAX refuses them too), an object argument (data), a container with no leaf.
Checked against JAX and central differences in tests/test_trust_s13_tree_hessian.py.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import hvp_columns, tree
from .arguments import argnums_tuple, as_result, as_value, converted, dtype_of
from .errors import NonDifferentiableInputError
from .frontend import bound, parse_function
from .passes.array_jvp import array_hvp
from .passes.containers import Layout
from .plans import compiled_array
from .treecalls import Flat, flatten_call, leaf_argnums, rebuild, skeletons_of, tangent_leaves


def is_container(a: Any) -> bool:
    """Whether a differentiated argument takes this module's path (a container, not an
    array, a number or None)."""
    t = type(a)
    if t is np.ndarray or t is float or a is None:
        return False
    return t is dict or t is list or t is tuple or tree.is_node(a)


def with_aux(mark) -> bool:
    """Whether the grad `mark` is of was made with has_aux (its jvp is not this module's)."""
    trees = getattr(mark.derivative, "trees", None)
    return trees is not None and trees.has_aux


def any_container(args: Sequence[Any], argnums) -> bool:
    nums = argnums_tuple(argnums)
    n = len(args)
    return any(-n <= i < n and is_container(args[i]) for i in nums)


class _Leaves:
    """One call flattened for the Hessian: its leaves, the differentiated ones per
    argnum, the plan with one parameter per leaf."""

    def __init__(self, fun: Callable, args: Sequence[Any], argnums, backend: str = "auto"):
        n = len(args)
        self.backend = backend
        self.fun, self.many = fun, isinstance(argnums, (tuple, list))
        self.nums = tuple(i % n for i in argnums_tuple(argnums))
        flat: Flat = flatten_call(fun, args)
        self.flat = flat
        self.by_arg = {i: leaf_argnums(fun, flat, (i,), args) for i in self.nums}
        for i in self.nums:
            self._all_floats(i, args)
        self.diff = tuple(sorted({j for i in self.nums for j in self.by_arg[i]}))
        self.leaves = list(converted(tuple(flat.leaves), self.diff))
        self.plan = compiled_array(fun, Layout(skeletons_of(flat), False))

    def _all_floats(self, i: int, args: Sequence[Any]) -> None:
        flat = self.flat
        if flat.treedefs[i] is None:
            return
        start = flat.starts[i]
        end = flat.starts[i + 1] if i + 1 < len(flat.starts) else len(flat.leaves)
        count = flat.treedefs[i].num_leaves if isinstance(flat.treedefs[i], tree.TreeDef) else end - start
        if len(self.by_arg[i]) != count or end - start != count:
            names = getattr(getattr(self.fun, "__code__", None), "co_varnames", ())
            name = names[i] if i < len(names) else f"args[{i}]"
            kinds = sorted({type(v).__name__ for v in tree.leaves(args[i]) if not _is_float_leaf(v)})
            raise NonDifferentiableInputError(
                f"argument '{name}' of {getattr(self.fun, '__name__', self.fun)} holds leaves that are not floats "
                f"({', '.join(kinds) or 'strings'}): a Hessian is taken in every leaf of a differentiated container",
                parse_function(self.fun).location(), hint=f"Pass the data in '{name}' as another argument (left out of argnums), "
                "or make every leaf a float or a float array.")

    def products(self, tangents: dict, value: bool = False, grads: bool = False):
        """H t for tangents {leaf index: array} (the others zero): {differentiated leaf:
        product}; with grads (and value), ((value, its tangent), {leaf: gradient}, that)."""
        leaves, plan = self.leaves, self.plan
        moved = tuple(sorted(j for j, t in tangents.items() if np.any(t)))
        argnums = tuple(sorted(set(moved) | set(self.diff)))
        tans = [_tangent(tangents.get(j, 0.0), leaves[j]) for j in argnums]
        with bound(self.fun):
            pair, gs, dots = array_hvp(plan, leaves, tans, argnums, self.diff, self.backend, value=value,
                                       names=hvp_columns.runtime_names, grads=grads)
        if not grads:
            return dict(zip(self.diff, dots))
        return pair, dict(zip(self.diff, gs)), dict(zip(self.diff, dots))

    def trees(self, by_leaf: dict):
        """Values per differentiated leaf in grad's structure (a tuple for a tuple of argnums)."""
        shaped = {j: as_result(by_leaf[j], self.leaves[j]) for j in self.diff}
        trees = [rebuild(self.flat, i, shaped) for i in self.nums]
        return tuple(trees) if self.many else trees[0]


def _is_float_leaf(v: Any) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (float, np.floating)):
        return True
    return isinstance(v, np.ndarray) and v.dtype.kind == "f"


def _tangent(t: Any, like: Any):
    if isinstance(like, np.ndarray):
        return np.asarray(t, dtype=like.dtype) if np.shape(t) == like.shape else np.broadcast_to(
            np.asarray(t, dtype=like.dtype), like.shape).copy()
    return float(t)


def hvp_tree(fun: Callable, primals: tuple, tangents: Sequence[Any], argnums, backend: str = "auto") -> Any:
    """H(primals) @ tangents for containers in argnums: in grad's structure (see the module doc)."""
    lv = _Leaves(fun, primals, argnums, backend)
    per_leaf = tangent_leaves(lv.flat, primals, tuple(tangents))
    return lv.trees(lv.products({j: t for j, t in enumerate(per_leaf) if t is not None and j in lv.diff}))


def jvp_of_grad_tree(fun: Callable, primals: tuple, tangents: Sequence[Any], argnums, with_value: bool,
                     backend: str = "auto"):
    """jvp(grad(fun, argnums)) (with_value: of value_and_grad) with containers among the
    primals: (gradients, their tangents) in grad's structure, one forward-over-reverse
    sweep; the tangents of every argument (containers flattened up to their primals')."""
    lv = _Leaves(fun, primals, argnums, backend)
    per_leaf = tangent_leaves(lv.flat, primals, tuple(tangents))
    moved = {j: t for j, t in enumerate(per_leaf) if t is not None and lv.flat.floats[j]}
    (value, value_dot), gs, dots = lv.products(moved, value=with_value, grads=True)
    g, g_dot = lv.trees(gs), lv.trees(dots)
    if not with_value:
        return g, g_dot
    return (as_value(value), g), (as_value(value_dot), g_dot)


def hessian_tree(fun: Callable, args: tuple, argnums, backend: str = "auto") -> Any:
    """The Hessian of `fun` in the containers of argnums, nested as JAX's (module doc)."""
    lv = _Leaves(fun, args, argnums, backend)
    leaves = lv.leaves
    # columns[j][k]: the products along element k of leaf j, one per differentiated leaf i
    blocks: dict = {}
    for j in lv.diff:
        shape_j = np.shape(leaves[j])
        size = int(np.prod(shape_j))
        cols = []
        for k in range(size):
            e = np.zeros(size, dtype=dtype_of(leaves[j]))
            e[k] = 1.0
            cols.append(lv.products({j: e.reshape(shape_j) if shape_j else 1.0}))
        for i in lv.diff:
            shape_i = np.shape(leaves[i])
            dtype = dtype_of(leaves[i]) if isinstance(leaves[i], np.ndarray) else (
                dtype_of(leaves[j]) if isinstance(leaves[j], np.ndarray) else np.dtype(np.float64))
            block = np.empty(shape_i + shape_j, dtype=dtype)
            flat_block = block.reshape(int(np.prod(shape_i)), size) if size else block
            for k, col in enumerate(cols):
                flat_block[:, k] = np.reshape(col[i], -1)
            blocks[(i, j)] = float(block) if not shape_i and not shape_j and not isinstance(
                leaves[i], np.ndarray) and not isinstance(leaves[j], np.ndarray) else block
    flat = lv.flat

    def inner(i: int, b: int):
        return rebuild(flat, b, {j: blocks[(i, j)] for j in lv.by_arg[b]})

    if not lv.many:
        a = lv.nums[0]
        return rebuild(flat, a, {i: inner(i, a) for i in lv.by_arg[a]})
    # (JAX's jacfwd(jacrev(f, argnums), argnums): a tuple over argument a of its structure,
    # each leaf a tuple over argument b of b's structure)
    return tuple(rebuild(flat, a, {i: tuple(inner(i, b) for b in lv.nums) for i in lv.by_arg[a]}) for a in lv.nums)

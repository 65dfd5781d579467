"""The Jacobian of a small fixed-shape array program in one call into machine code.

As small_hessian.py for a Hessian: for arguments of small fixed shapes the program is a
straight-line scalar program (passes/unroll_small.py, its result here an array of at
least one element, or one number), its first derivatives by sparse forward mode
(passes/small_first.py) compile into one function with a Python entry
(codegen/llvm_small.py). `SmallJacobian(fun, argnums, backend)(args)` (jacfwd and jacrev
try it) gives the Jacobian, shape out.shape + x.shape (a tuple over a tuple of argnums,
JAX's), or None: the general path runs. The planning per (plan, shapes, argnums), the
guards, the hot path and the entry are SmallHessian's (this class only says which
derivative is compiled and how its output is laid out).

Not taken (None): what SmallHessian does not take (an argument not an exact float64
array or float, a differentiated one 0-d or empty, a backend other than llvm, a
program that reads free data such as a global array, one that does not unroll) and a
container result (a tuple, a dict: the general path's layout).
Invariants: a result is float64 of shape out.shape + x_i.shape per argnum, structural
zeros written as 0.0; no argument is written; nothing of the user's is kept but the
function the wrapper holds anyway.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .passes.small_first import first_order
from .passes.unroll_small import Unrolled
from .small_hessian import Plan, SmallHessian, compiled


class SmallJacobian(SmallHessian):
    """The Jacobian of `fun` in `argnums` for small fixed shapes (see the module doc)."""

    what = "jacfwd"
    takes_free = True       # a global array read: an extra entry argument, read per call

    def plan_for(self, program, kinds: tuple, nums: tuple[int, ...], free: tuple = ()) -> "JacobianPlan | str":
        return plan_for(program, kinds, nums, free)


class JacobianPlan(Plan):
    """One compiled Jacobian program: out[r * n + c] = d result[r] / d x[c] (x: the
    differentiated arguments' elements laid end to end)."""

    def __init__(self, *parts):
        super().__init__(*parts)
        self.out_shape = tuple(self.unrolled.shape)
        self.m = math.prod(self.out_shape)
        self.size, self.single = self.m * self.n, self.out_shape + self.shapes[0]

    def shaped(self, out: np.ndarray, many: bool) -> Any:
        if not many:
            return out.reshape(self.single)
        j = out.reshape(self.m, self.n)
        starts = np.cumsum([0] + self.sizes)
        return tuple(np.ascontiguousarray(j[:, starts[a]:starts[a + 1]]).reshape(self.out_shape + self.shapes[a])
                     for a in range(len(self.nums)))


def plan_for(program, kinds: tuple, nums: tuple[int, ...], free: tuple = ()) -> JacobianPlan | str:
    """The compiled small Jacobian of `program` for parameters of `kinds` in `nums` (free
    data named `free` read as the last parameters), or why there is none."""
    def jacobian(u: Unrolled) -> list:
        rows = first_order(u, nums)
        n = sum(math.prod(kinds[i]) for i in nums)
        outputs: list = [None] * (len(rows) * n)
        for r, row in enumerate(rows):
            for c, node in row.items():
                outputs[r * n + c] = node.id
        return outputs
    got = compiled(program, kinds, nums, jacobian, array=True, free=free)
    return got if isinstance(got, str) else JacobianPlan(*got)

"""The value's lines after a compiled program's steps (array_program.py): a specialised
value_and_grad copy written as grad's program, then the value (passes/valuesplit.py)
is one program whose wrapper returns `(tail(...), (gradients))`.

    def loss__value_and_grad(W, b, X, Y):
        <statements the gradients need: lowered to the program's C calls>
        _6 = row_dot_log_softmax(z, Y, axis=1)      # the tail: Python, run after the
        _7 = np.mean(_6)                            # program, on the arrays it made
        loss, dloss_d7 = k__dual(_7)
        return loss, (W_bar, b_bar)

The tail is the statements after the last one the gradients need (their backward
slice). It runs as the copy runs it (the same site callables, in the copy's globals),
given the names it reads from before it: a parameter, or an array a lowered site made
(then a named array of the program, not scratch: it outlives the call). Anything else
it reads (a number a site returned, an array not the program's) and there is no
program (`why`). Invariants: the tail writes no array (the split's value lines never
do) and binds no gradient; the program makes every array it reads, so the tail reads
what the copy's tail reads, and the wrapper's results are the copy's (array_program's
check, byte for byte, covers the value too).
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass
class ValueTail:
    """A copy's statements split around its value (see the module docstring)."""
    prefix: list            # the statements before the tail (the program's steps)
    tail: list              # the value's statements
    value: ast.expr         # the value's expression (the result's first item)
    grads: list             # the gradients' names, as the result returns them
    sites: set              # the site callables the tail calls
    inputs: list            # the names the tail reads from before it, in order


def _bound(stmt) -> set:
    targets = getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]
    return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}


def _read(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def split_tail(node: ast.FunctionDef, sites: set) -> ValueTail | str:
    """`node` (a specialised copy, its sites named) split around its value, or why not."""
    body = node.body
    ret = body[-1] if body else None
    if not isinstance(ret, ast.Return) or not isinstance(ret.value, ast.Tuple) or len(ret.value.elts) != 2 \
            or not isinstance(ret.value.elts[1], ast.Tuple) \
            or not all(isinstance(g, ast.Name) for g in ret.value.elts[1].elts):
        return "its result is not a value and a tuple of arrays"
    grads = [g.id for g in ret.value.elts[1].elts]
    stmts = body[:-1]
    needed, last = set(grads), -1
    for i in range(len(stmts) - 1, -1, -1):     # the gradients' backward slice
        if _bound(stmts[i]) & needed:
            last = max(last, i)
            needed |= _read(stmts[i])
    prefix, tail = stmts[:last + 1], stmts[last + 1:]
    if not all(isinstance(s, (ast.Assign, ast.Expr)) for s in tail):
        return "a value line that is not an assignment or a call"
    if any(isinstance(t, (ast.Subscript, ast.Attribute)) for s in tail for t in ast.walk(s)
           if isinstance(getattr(t, "ctx", None), ast.Store)):
        return "a value line that writes into an array"
    before = {a.arg for a in node.args.args} | set().union(*(_bound(s) for s in prefix))
    inputs: list = []
    mine: set = set()
    for s in tail + [ast.Expr(ret.value.elts[0])]:
        for name in sorted(_read(s) - mine):
            if name in before and name not in inputs:
                inputs.append(name)
        mine |= _bound(s)
    if mine & set(grads):
        return "a value line that binds a gradient"
    used = {n.func.id for s in tail for n in ast.walk(s) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return ValueTail(prefix, tail, ret.value.elts[0], grads, used & sites, inputs)


def bindings(prefix: list, results: dict) -> dict:
    """{name: the object it held in the recording} for the names `prefix`'s statements
    bind from a site's result (`results`: site -> its result), unpacked as the targets
    unpack it."""
    got: dict = {}

    def unpack(target, value) -> None:
        if isinstance(target, ast.Name):
            got[target.id] = value
        elif isinstance(target, ast.Tuple) and type(value) in (tuple, list) and len(value) == len(target.elts):
            for t, v in zip(target.elts, value):
                unpack(t, v)
    for s in prefix:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.value, ast.Call) \
                and isinstance(s.value.func, ast.Name) and s.value.func.id in results:
            unpack(s.targets[0], results[s.value.func.id])
    return got


def tail_function(vt: ValueTail, globals_: dict) -> Callable:
    """`tail(<inputs>)`: the tail's statements, returning the value, run in `globals_`
    (the copy's: its sites bound as the copy's are)."""
    tail = [_Means().visit(copy.deepcopy(st)) for st in vt.tail] if globals_.get("np") is np else list(vt.tail)
    lines = [f"def value_tail({', '.join(vt.inputs)}):"] + [f"    {ast.unparse(st)}" for st in tail] \
        + [f"    return {ast.unparse(vt.value)}"]
    ns: dict = {}
    exec(compile("\n".join(lines) + "\n", "<s2sad program value>", "exec"), dict(globals_, whole_mean=whole_mean), ns)
    return ns["value_tail"]


class _Means(ast.NodeTransformer):
    """`np.mean(x)` (one name, no keyword) -> `whole_mean(x)`."""

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "np" and f.attr == "mean" \
                and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and not node.keywords:
            return ast.Call(func=ast.Name(id="whole_mean", ctx=ast.Load()), args=node.args, keywords=[])
        return node


def whole_mean(a):
    """np.mean(a) with its bits, for a whole float64 / float32 array without np.mean's
    Python (0.8 against 2.6 us at 32 values): its sum (np.add.reduce, numpy's pairwise
    sum, as np.mean's), divided by the count as an np.intp (a float32 sum so divides in
    float64, then rounds to float32, as np.mean's does); anything else np.mean itself."""
    if type(a) is np.ndarray and a.dtype.char in "fd" and a.size:
        s = np.add.reduce(a, axis=None)
        return s.dtype.type(s / np.intp(a.size))
    return np.mean(a)


def same_bits(got, want) -> bool:
    """The same structure, types, shapes, dtypes and bytes."""
    if type(got) is not type(want):
        return False
    if type(want) is tuple:
        return len(got) == len(want) and all(same_bits(g, w) for g, w in zip(got, want))
    if type(want) is np.ndarray:
        return got.shape == want.shape and got.dtype == want.dtype and got.tobytes() == want.tobytes()
    g, w = np.asarray(got), np.asarray(want)
    return g.dtype == w.dtype and g.tobytes() == w.tobytes()

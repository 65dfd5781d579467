"""The fast path of a grad call with containers: one generated Python function per
layout of the common shapes (exact dicts with string keys, lists, tuples and None,
nested, of float arrays and floats; positional float arrays and floats beside them).

`fast(*args)` checks that the call has the layout it was made for, reads the leaves
by constant keys and positions, runs the leaf Derivative's hot path (one call into
machine code for a fused loss) or its full call, and builds the gradients' structure
as literals: no flattening, no plan key, no rebuild. It is what grad's wrapper tries
first for a grad object whose last container call had that layout (Derivative.hot),
so a dict of parameters costs a few dict reads more than positional arrays.

Invariants:
- it takes a call only when treecalls.flatten_call would give the layout it was made
  for: the same node types (exact dict, list, tuple, None), lengths and keys, and
  every leaf an exact float or a float ndarray: checked before the full call, and
  left to the hot path's entry before it (the entry takes exact floats and exact
  float ndarrays of its dtype only, codegen/llvm_entry.py); anything else declines
  (NotImplemented) and treecalls.TreeCalls runs with all its checks;
- its result is TreeCalls's to the bit (the same leaf Derivative, the same order);
- its text holds no user object (string keys, lengths and positions only); made once
  per (layout, argnums, grad or value_and_grad) and shared by grad objects, so a
  training loop that makes a grad object per step generates nothing.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import tree

_READERS: dict = {}         # Reader.key -> Reader
_MAKERS: dict = {}          # (Reader.key, grad only) -> make(SUB) -> fast
_MAX_MAKERS = 256           # (each bound: a program's layouts are few)


def _simple(td: tree.TreeDef) -> bool:
    """Whether fast paths take this structure: dict (string keys), list, tuple, None."""
    if td.kind == "leaf" or td.kind == "none":
        return True
    if td.kind == "dict":
        if td.type is not None or not all(type(k) is str for k in td.meta):     # (OrderedDict, defaultdict)
            return False
    elif td.kind not in ("list", "tuple"):
        return False
    return all(_simple(c) for c in td.children)


class Reader:
    """How a generated function reads a container call of one layout: `prologue` (lines
    that check the call's `args` has the layout and bind the leaves to names, returning
    NotImplemented otherwise), `leaves` (those names, in flatten order, as call
    arguments) and `result(grads)` (the gradients' structure, as a literal, from one
    expression per differentiated leaf in leaf_nums' order). `key`: what the text
    depends on (no user object)."""

    def __init__(self, key: tuple, flat, nums: Sequence[int], leaf_nums: Sequence[int], many: bool):
        self.key = key
        self._treedefs, self._starts = list(flat.treedefs), list(flat.starts)
        self._nums, self.leaf_nums, self._many = tuple(nums), tuple(leaf_nums), many
        text = _Text()
        n = len(flat.treedefs)
        params = [f"a{i}" for i in range(n)]
        names: list[str] = []
        text.add(f"if len(args) != {n}: return NotImplemented", 0)
        text.add(f"{', '.join(params)}{',' if n == 1 else ''} = args", 0)
        head = len(text.lines)
        for p, td in zip(params, flat.treedefs):
            _reads(text, tree.LEAF if td is None else td, p, names)
        if len(text.lines) > head:      # a dict without one of the keys declines too
            text.lines[head:] = ["try:"] + text.lines[head:] + ["except KeyError:", "    return NotImplemented"]
        self.prologue, self.names = text.lines, names
        self.leaves = ", ".join(names)

    def result(self, grads: Sequence[str]) -> str:
        where = {j: k for k, j in reversed(list(enumerate(self.leaf_nums)))}   # a leaf's first place
        trees = []
        for i in self._nums:
            td, start = self._treedefs[i], self._starts[i]
            count = 1 if td is None else td.num_leaves
            exprs = [grads[where[j]] for j in range(start, start + count)]
            trees.append(exprs[0] if td is None else _built(td, exprs))
        if not self._many:
            return trees[0]
        return "(" + ", ".join(trees) + ("," if len(trees) == 1 else "") + ")"


def reader(flat, nums: Sequence[int], leaf_nums: Sequence[int], many: bool) -> Reader | None:
    """The Reader of this call's layout, or None when the layout is not one fast paths
    take (a string leaf, an object, a namedtuple or dataclass, a leaf not a float)."""
    if not all(flat.floats):
        return None
    for td, skel in zip(flat.treedefs, flat.skeletons):
        if td is None:
            continue
        if not isinstance(td, tree.TreeDef) or skel is not td or not _simple(td):
            return None
    key = ("tree", tuple(flat.treedefs), tuple(nums), tuple(leaf_nums), many)
    got = _READERS.get(key)
    if got is None:
        got = Reader(key, flat, nums, leaf_nums, many)
        if len(_READERS) >= _MAX_MAKERS:
            _READERS.pop(next(iter(_READERS)))
        _READERS[key] = got
    return got


def fast_call(rd: Reader, grad_only: bool, sub) -> Callable:
    """A container call of rd's layout through the leaf Derivative `sub`'s full call
    (an array program, or a fused loss whose hot path declines): the leaves checked as
    flatten_call reads them, then sub called on them and its gradients put in structure."""
    make = _MAKERS.get((rd.key, grad_only))
    if make is None:
        make = _MAKERS[(rd.key, grad_only)] = _maker(rd, grad_only)
        if len(_MAKERS) > _MAX_MAKERS:
            _MAKERS.pop(next(iter(_MAKERS)))
    fast = make(sub)
    fast.tree_fast = True
    return fast


class _Text:
    """The generated function's lines, with fresh names."""

    def __init__(self):
        self.lines: list[str] = []
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def add(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + line)


def _reads(text: _Text, td: tree.TreeDef, expr: str, leaves: list[str]) -> None:
    """Lines that check the node `expr` has td's structure (declining otherwise) and
    read its leaves into names, appended to `leaves` in flatten order."""
    if td.kind == "leaf":
        leaves.append(expr)
        return
    if td.kind == "none":
        text.add(f"if {expr} is not None: return NotImplemented")
        return
    kind = td.kind
    text.add(f"if type({expr}) is not {kind} or len({expr}) != {len(td.children)}: return NotImplemented")
    keys = td.meta if kind == "dict" else range(len(td.children))
    for k, c in zip(keys, td.children):
        item = text.name("n")
        text.add(f"{item} = {expr}[{k!r}]")
        _reads(text, c, item, leaves)


def _built(td: tree.TreeDef, grads: list[str]) -> str:
    """A literal of td's structure with the expressions `grads` (consumed in order) at its leaves."""
    if td.kind == "leaf":
        return grads.pop(0)
    if td.kind == "none":
        return "None"
    parts = [_built(c, grads) for c in td.children]
    if td.kind == "dict":
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(td.meta, parts)) + "}"
    if td.kind == "list":
        return "[" + ", ".join(parts) + "]"
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _maker(rd: Reader, grad_only: bool) -> Callable:
    checks = " and ".join(f"(type({v}) is float or (type({v}) is ndarray and {v}.dtype.kind == 'f'))"
                          for v in rd.names)
    body = list(rd.prologue) + [
        f"if not ({checks}): return NotImplemented",     # the layout's leaves, as flatten_call reads them
        # an array program's hot path on the leaves first (the one its positional calls take)
        f"r = SUB.leaf_hot({rd.leaves})",
        "if r is NotImplemented:",
        f"    r = SUB({rd.leaves})",
        "    g = r[1]" if grad_only else "    v, g = r",
        "else:",
        "    g = r" if grad_only else "    v, g = r"]
    result = rd.result([f"g[{k}]" for k in range(len(rd.leaf_nums))])
    body.append(f"return {result}" if grad_only else f"return v, {result}")
    source = "def make(SUB):\n    def fast(*args):\n" + "".join(f"        {line}\n" for line in body) \
        + "    return fast\n"
    ns: dict[str, Any] = {"ndarray": np.ndarray}
    exec(compile(source, "<s2sad fast path of a container call>", "exec"), ns)
    return ns["make"]

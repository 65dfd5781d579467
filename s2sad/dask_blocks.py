"""The blocks of dask arrays as the inputs of s2sad's block tasks, with as few tasks between
the task that makes a block and the task that differentiates it as the graph allows.

Each task the scheduler runs costs it a round trip to a worker (milliseconds: the
out-of-core example's blocks took about 45 ms to differentiate): so a block that is only
another name for a task's result (an alias) names that task, and a block that is one item
of a task's result (from_delayed of `delayed(load, nout=2)(...)[0]`, X and y read together)
is handed to the block task as that result plus the item's index, which the block task
takes itself (`pick`), instead of a getitem task per block and array.

Invariants: the graphs are read, never changed; a block is an `Item` only when its task is
a getitem of a constant int from another task of the same graph, so `pick` gives the
object that task would have given; anything else stays a plain delayed block. Layer: plan
(with dask_grad; dask is imported only inside functions).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Item:
    """A block that is item `index` of the result of the delayed task `source`."""
    source: Any
    index: int


def delayed_blocks(arrays: dict) -> dict:
    """Each dask array's blocks as delayed objects or `Item`s, their graphs not optimised:
    optimised (to_delayed's default, and dask.optimize too, measured), two arrays read by
    one task (X and y of a block loaded together) each get their own fused copy of it, so
    every block was read twice."""
    from dask.delayed import Delayed

    out = {}
    for i, a in arrays.items():
        blocks = a.to_delayed(optimize_graph=False)
        graph = dict(blocks.flat[0].dask) if blocks.size else {}
        named = []
        for d in blocks.flat:
            layer = d.__dask_layers__()[0]
            key = producer(graph, d.key)
            item = item_of(graph, key)
            named.append(Item(Delayed(item[0], d.dask, layer=layer), item[1]) if item else
                         Delayed(key, d.dask, layer=layer))
        out[i] = np.array(named, dtype=object).reshape(blocks.shape)
    return out


def producer(graph: dict, key):
    """The task whose result `key` names: `key` itself, or the end of its chain of
    aliases (a graph value that is another key, or dask's Alias node)."""
    for _ in range(len(graph) + 1):
        v = graph.get(key)
        if type(v).__name__ == "Alias" and hasattr(v, "target"):
            key = v.target
        elif isinstance(v, (str, tuple)) and _hashable(v) and v in graph and v != key:
            key = v
        else:
            return key
    return key


def item_of(graph: dict, key):
    """(source key, index) when the task `key` is getitem(source's result, a constant int),
    in dask's task objects (Task(getitem, TaskRef(source), i)) or its older tuples
    ((getitem, source, i)); else None."""
    v = graph.get(key)
    func, args = getattr(v, "func", None), getattr(v, "args", None)
    if func is None and isinstance(v, tuple) and v and callable(v[0]):
        func, args = v[0], v[1:]
    if func is not operator.getitem or not isinstance(args, tuple) or len(args) != 2 or getattr(v, "kwargs", None):
        return None
    source, index = getattr(args[0], "key", args[0]), args[1]
    if type(index) is not int or not _hashable(source) or source not in graph or source == key:
        return None
    return producer(graph, source), index


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def as_task_inputs(parts: list) -> tuple[list, tuple]:
    """A block task's inputs and what it picks from them: each `Item` passed as its source's
    result (one dependency however many of its items the task takes) with its index."""
    picks = tuple(p.index if isinstance(p, Item) else None for p in parts)
    return [p.source if isinstance(p, Item) else p for p in parts], picks


def pick(blocks: tuple, picks: tuple) -> tuple:
    """Run in a block task: the blocks it was handed, the items `picks` names taken out."""
    if not picks:
        return blocks
    return tuple(b if k is None else b[k] for b, k in zip(blocks, picks))

"""The blocks of dask arrays as the inputs of s2sad's block tasks, with as few tasks between
the task that makes a block and the task that differentiates it as the graph allows.

Each task the scheduler runs costs it a round trip to a worker (milliseconds: the
out-of-core example's blocks took about 45 ms to differentiate): so a block that is only
another name for a task's result (an alias) names that task, and a block that is one item
of a task's result (from_delayed of `delayed(load, nout=2)(...)[0]`, X and y read together)
is handed to the block task as that result plus the item's index, which the block task
takes itself (`pick`), instead of a getitem task per block and array.

Before the call's graph goes to the scheduler, a task that only one block task reads (the
read itself) runs inside that task (`with_producers_inlined`): one task per block.

An array whose graph holds its blocks as data (in memory: from_array of numpy, a persisted
array) gives them up as they are (`held_blocks`): a task can take the block itself as
its argument, with no task between the data and it.

Invariants: the user's graphs are read, never changed (the inlined graph is a new one); a
block is an `Item` only when its task is a getitem of a constant int from another task of
the same graph, so `pick` gives the object that task would have given; anything else
stays a plain delayed block; an inlined task runs once, inside its one reader. Layer: plan
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


def held_blocks(a) -> "np.ndarray | None":
    """The blocks of dask array `a` as the numpy arrays its graph holds, when it holds them
    as data (an array in memory: from_array of a numpy array, a persisted array): one
    materialized layer, `a`'s own, each block's value a numpy array of the block's shape.
    None when any block is made by a task (a read, random numbers, an operation) or the
    graph is of another form: such blocks are the tasks' results, not data to pass on."""
    layers = getattr(a.dask, "layers", None)
    if not layers or len(layers) != 1 or type(layers.get(a.name)).__name__ != "MaterializedLayer":
        return None
    layer = layers[a.name]
    out = np.empty(a.numblocks, dtype=object)
    for idx in np.ndindex(*a.numblocks):
        block = data_of(layer.get((a.name,) + idx))
        if block is None or block.shape != tuple(a.chunks[k][i] for k, i in enumerate(idx)):
            return None
        out[idx] = block
    return out


def data_of(node) -> "np.ndarray | None":
    """A graph value that is a numpy array as data (bare, or in dask's DataNode), else None."""
    if type(node).__name__ == "DataNode":
        node = getattr(node, "value", None)
    return node if isinstance(node, np.ndarray) else None


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
    """A block task's inputs and what it picks from them: each `Item`'s source passed once
    however many of its items the task takes (one dependency; and, once the source is run
    inside the task, `with_producers_inlined`, one read), `picks` naming for each part its
    input's position and the item it takes (None: the input itself); () when no part is
    an Item (the inputs are the parts)."""
    if not any(isinstance(p, Item) for p in parts):
        return list(parts), ()
    inputs, at, picks = [], {}, []
    for p in parts:
        if isinstance(p, Item):
            key = getattr(p.source, "key", id(p.source))
            if key not in at:
                at[key] = len(inputs)
                inputs.append(p.source)
            picks.append((at[key], p.index))
        else:
            picks.append((len(inputs), None))
            inputs.append(p)
    return inputs, tuple(picks)


def pick(blocks: tuple, picks: tuple) -> tuple:
    """Run in a block task: its parts, from the inputs it was handed (as_task_inputs)."""
    if not picks:
        return blocks
    return tuple(blocks[i] if k is None else blocks[i][k] for i, k in picks)


def with_producers_inlined(objs, ours: str):
    """`objs` (delayed objects, in dicts, lists and tuples; None) with one graph in which
    each task whose key starts with `ours` runs, inside itself, every task that only it
    reads (a block's read, its slice of an in-memory array): one task per block, where
    there were two, so one scheduler round trip per block, where there were two (each a
    transition on the scheduler, a message to a worker and back; measured: the client's
    process spent 8 ns of CPU per row of the out-of-core example, a fifth of the workers').
    The producer runs on the worker that runs the block task either way (its result went
    nowhere else). Left as they are: a graph whose layers carry annotations (a plain
    graph would drop them), a task that is itself a result, one read by two tasks."""
    from dask.delayed import Delayed

    found = [d for d in _flat(objs) if isinstance(d, Delayed)]
    if not found:
        return objs
    graphs = list({id(d.dask): d.dask for d in found}.values())
    if len(graphs) > 1:
        from dask.highlevelgraph import HighLevelGraph

        graph = HighLevelGraph.merge(*graphs)
    else:
        graph = graphs[0]
    if any(getattr(layer, "annotations", None) for layer in getattr(graph, "layers", {}).values()):
        return objs
    keys = [d.key for d in found]
    needed = _needed(dict(graph), keys)
    if needed is None:
        return objs
    readers: dict = {}
    for node in needed.values():
        for dep in _deps(node):
            readers[dep] = readers.get(dep, 0) + 1
    outputs = set(keys)
    for key in [k for k in needed if _named(k, ours)]:
        node = needed[key]
        subs = {dep: needed[dep] for dep in _deps(node)
                if readers.get(dep) == 1 and dep not in outputs and dep in needed and _runs(needed[dep])}
        if subs and hasattr(node, "substitute"):
            needed[key] = node.substitute(subs)
            for dep in subs:
                del needed[dep]
    return _rebuilt(objs, lambda d: Delayed(d.key, needed))


def _runs(node) -> bool:
    """A task that computes (not data, which is no task to the scheduler, nor an alias)."""
    return hasattr(node, "func") and hasattr(node, "substitute")


def _named(key, prefix: str) -> bool:
    return str(key[0] if isinstance(key, tuple) else key).startswith(prefix)


def _deps(node) -> frozenset:
    return frozenset(getattr(node, "dependencies", ()) or ())


def _needed(graph: dict, keys) -> dict | None:
    """The tasks of `graph` that `keys` depend on, or None when a node does not name its
    dependencies (an older dask's tuple task, a bare value): such a graph is left whole."""
    todo, out = list(keys), {}
    while todo:
        k = todo.pop()
        if k in out or k not in graph:
            continue
        if not hasattr(graph[k], "dependencies"):
            return None
        out[k] = graph[k]
        todo.extend(_deps(graph[k]))
    return out


def _flat(objs):
    if isinstance(objs, dict):
        for v in objs.values():
            yield from _flat(v)
    elif isinstance(objs, (list, tuple)):
        for v in objs:
            yield from _flat(v)
    else:
        yield objs


def _rebuilt(objs, make):
    from dask.delayed import Delayed

    if isinstance(objs, dict):
        return {k: _rebuilt(v, make) for k, v in objs.items()}
    if isinstance(objs, (list, tuple)):
        return type(objs)(_rebuilt(v, make) for v in objs)
    return make(objs) if isinstance(objs, Delayed) else objs

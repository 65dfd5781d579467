"""Gradients over dask arrays: the loss split into one task per block, on dask's scheduler.

A loss whose plan decomposes over blocks (`split_of`) is differentiated block by block:
each task runs s2sad's own compiled value-and-gradient of the same loss on one block of
every chunked argument (and the matching slice of every in-memory one), and the pieces
are put back together by dask:

- the gradient w.r.t. a dask argument is a dask array with its chunks, lazy: each block
  is the task's gradient of that block (summed over the blocks it was broadcast across);
- the gradient w.r.t. an in-memory argument is a numpy array, the tasks' pieces summed
  by a tree of tasks adding up to 16 each (`tree_sum`), computed in the same
  `dask.compute` as the value;
- the value is the tree sum of the tasks' values.

Why that is exact: for a fused loss `sum(E)` (E elementwise over broadcast arguments),
the sum over all elements is the sum over blocks of the sum within each block, and
each element's partials depend on that element's arguments only; for `mean(E)` a block
of m of the n elements is weighted m / n (its task's mean and gradient times m / n).
Array programs, scans and unreduced losses do not decompose this way: they are refused
(a located `DaskSplitError`) before any work is submitted.

Workers compile for themselves: a task carries the loss (pickled by dask, by reference
when it is importable) and the lines of the file it was read from, never compiled code;
on the worker, s2sad plans the loss from that source as it does in the user's process,
and maps its kernels from the disk cache when this machine compiled them before.

Layer: plan (it drives derivative.Derivative); dask is imported only when a call is
given a dask array (`is_dask` looks in sys.modules, so a process without dask pays
nothing).
"""
from __future__ import annotations

import functools
import itertools
import math
import operator
import sys
import uuid
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .dask_blocks import as_task_inputs, delayed_blocks, held_blocks, with_producers_inlined
from .dask_tasks import BlockApply, BlockGrad, BlockTask, Shipped
from .errors import DaskSplitError, NonDifferentiableInputError
from .marks import location_of_function
from .frontend import location_of
from .passes.rowsplit import RowSplitRefusal, row_split
from .plans import compiled
from .passes.rowcolumns import Column

def is_dask(a: Any) -> bool:
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(a, da.Array)


def shape_of(a) -> tuple[int, ...]:
    """np.shape(a), a dask array's read as its attribute: np.shape or np.ndim of a dask
    array goes through dask's __array_function__, which inspects a signature (~20 us each,
    against 0.5; a call over 4 blocks made 15 of them: most of s2sad's part of the build)."""
    return a.shape if is_dask(a) else np.shape(a)


def ndim_of(a) -> int:
    """np.ndim(a), without dask's __array_function__ (see shape_of)."""
    return a.ndim if is_dask(a) else np.ndim(a)


def has_dask(args) -> bool:
    return "dask.array" in sys.modules and any(is_dask(a) for a in args)


def refuse_dask_leaves(fun: Callable, i: int, values: list) -> None:
    """A dask array inside a container is refused: dask calls are split on top-level
    dask arguments only (dask_grad), and a dask leaf here would be differentiated as
    nothing (its gradient came back None: a silent wrong answer). treecalls asks."""
    if has_dask(values):
        raise NonDifferentiableInputError(
            f"argument {i} of {getattr(fun, '__qualname__', 'the loss')} is a container holding a dask array; "
            "s2sad splits a call over dask arrays given as arguments of their own",
            location_of_function(fun),
            hint="Pass the dask array as a separate argument (f(w, X) rather than f({'w': w, 'X': X})).")


# ------------------------------------------------------------------ the plan's split


@dataclass(frozen=True)
class Split:
    kind: str          # "elementwise-sum" | "elementwise-mean"
    why: str           # for explain


def split_of(fun: Callable, args=None) -> Split:
    """How a call of `fun`'s gradient over dask arrays (`args`) is split, or a
    DaskSplitError saying why it cannot be."""
    c = compiled(fun)
    name = getattr(c.fun, "__qualname__", "the loss")
    at = location_of_function(c.fun)
    if not c.fused:
        return _row_split(c, name, args, at)
    if c.plan.program.state:
        raise DaskSplitError(
            f"{name} writes state while it runs over the elements: the order of the blocks would matter",
            hint="Pass numpy arrays, or keep the state out of the elementwise function.", location=at)
    _check_rows(c, name, args, at)
    if c.plan.reduction not in ("sum", "mean"):
        raise DaskSplitError(
            f"{name} does not reduce its elementwise expression to a scalar",
            hint="A gradient needs a scalar loss: np.sum(...) or np.mean(...) of the elementwise expression.",
            location=at)
    return Split(f"elementwise-{c.plan.reduction}",
                 f"the loss is the {c.plan.reduction} of one elementwise kernel: each block's "
                 f"{c.plan.reduction} and partials are its own, so any chunking splits it"
                 + (" (a block of m of n elements weighted m / n)" if c.plan.reduction == "mean" else ""))


def _check_rows(c, name: str, args, at) -> None:
    """A function of rows (passes/rowelems.py) splits over blocks of whole rows of its one
    array: a block cut through the rows would read other columns as the row's."""
    bases = {ref.base for kind, ref in c.plan.inputs if kind == "capture" and isinstance(ref, Column)}
    if not bases or args is None:
        return
    for p, a in zip(c.params, args):
        whole = p in bases and is_dask(a) and a.ndim == 2 and len(a.chunks[1]) == 1
        if (p in bases and is_dask(a) and not whole) or (p not in bases and ndim_of(a) > 0):
            raise DaskSplitError(
                f"{name} applies a function of rows: over dask arrays it splits only blocks of whole rows "
                f"of its one array argument", location=at,
                hint="Rechunk the array so that each block has whole rows (X.rechunk({1: -1})), and pass "
                     "its other arguments as numbers; or compute the arrays into memory (np.asarray).")


def _row_split(c, name: str, args, at) -> Split:
    rows = row_params(args) if args is not None else {}
    if not rows:
        raise DaskSplitError(f"{name} is an array program: it splits only over blocks of rows of the dask "
                             f"arrays it is given", location=at,
                             hint="Pass the data as dask arrays chunked along their first axis.")
    chunked = {c.program.params[i] for i in rows}
    ndims = {p: ndim_of(a) for p, a in zip(c.program.params, args)}
    try:
        split = row_split(c.program, chunked, ndims)
    except RowSplitRefusal as e:
        where = location_of(c.pf.filename, e.node) if e.node is not None else at
        raise DaskSplitError(
            f"{name} does not split over blocks of rows: {e.why}", location=where,
            hint="s2sad splits a loss that is a sum or mean over the rows of the chunked data (each row's "
                 "term reading only that row and the in-memory parameters), plus terms that read no rows. "
                 "Compute the data into memory (np.asarray) to differentiate this loss, or rewrite it "
                 "in that form.") from None
    return Split(f"rows-{split.kind}" + ("+offset" if split.offset else ""),
                 f"the loss is a * ({split.kind} over the rows of one term per row) + b, a and b reading no "
                 "row: each block of rows runs the whole program"
                 + (", weighted m / n for a block of m of n rows" if split.kind == "mean" else "")
                 + ("; b (the loss over no rows) taken off once per extra block"
                    if split.kind == "sum" and split.offset else ""))


def row_params(args) -> list[int]:
    """The arguments that hold rows of the data: every dask array, and every in-memory
    array with as many rows as the dask data (split with it)."""
    n = next((a.shape[0] for a in args if is_dask(a) and a.ndim >= 1), None)
    if n is None:
        return []
    return [i for i, a in enumerate(args)
            if (is_dask(a) and a.ndim >= 1) or (not is_dask(a) and ndim_of(a) >= 1 and shape_of(a)[0] == n)]


FAN_IN = 16    # blocks' results one task of the tree sums (dask's config "split_every" overrides it)


def tree_sum(items: list, add: Callable = operator.add):
    """The sum of delayed values by a tree of tasks, each folding up to `FAN_IN` of them in
    order (depth log_FAN_IN(len)). Not pairwise: each task of the tree costs the scheduler a
    round trip and, its inputs being on other workers, a transfer; the results summed here
    are small (a value, the parameters' gradients), and a binary tree cost the out-of-core
    example as much scheduling as a block's compute (measured: a third of a step)."""
    from dask import config, delayed

    every = config.get("split_every", None)
    fan_in = every if isinstance(every, int) and every >= 2 else FAN_IN
    items = list(items)
    while len(items) > 1:
        groups = [items[k:k + fan_in] for k in range(0, len(items), fan_in)]
        items = [delayed(tree_add, pure=False)(add, *g) if len(g) > 1 else g[0] for g in groups]
    return items[0]


def tree_add(add: Callable, first, *rest):
    """One task of `tree_sum`: its inputs added left to right (new objects: dask may still
    hold the inputs)."""
    for item in rest:
        first = add(first, item)
    return first


# ------------------------------------------------------------------ a call


@dataclass
class Layout:
    shape: tuple[int, ...]                  # the broadcast shape of every array argument
    chunks: tuple[tuple[int, ...], ...]     # the blocks along each axis of it


def layout_of(fun_name: str, args) -> Layout:
    shapes = [shape_of(a) for a in args]
    for a in args:
        if is_dask(a) and any(np.isnan(c) for cs in a.chunks for c in cs):
            raise DaskSplitError(f"{fun_name}: a dask argument has chunks of unknown size",
                                 hint="Call x.compute_chunk_sizes() first.")
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError as e:
        raise DaskSplitError(f"{fun_name}: the arguments do not broadcast together ({e})",
                             hint="Pass arrays whose shapes broadcast, as numpy requires.") from None
    chunks = []
    for axis in range(len(shape)):
        got = None
        for a in args:
            k = axis - (len(shape) - ndim_of(a))
            if is_dask(a) and k >= 0 and a.shape[k] == shape[axis] and shape[axis] != 1:
                got = got or a.chunks[k]
        chunks.append(got or (shape[axis],))
    return Layout(tuple(shape), tuple(chunks))


def _aligned(a, lay: Layout):
    """A dask argument rechunked to the layout along its non-broadcast axes."""
    off = len(lay.shape) - a.ndim
    want = tuple(lay.chunks[off + k] if a.shape[k] != 1 else (1,) for k in range(a.ndim))
    return a if a.chunks == want else a.rechunk(want)


def _own_index(a, lay: Layout, idx: tuple[int, ...]) -> tuple[int, ...]:
    """The block of argument `a` a block of the layout reads (0 along its broadcast axes)."""
    off = len(lay.shape) - ndim_of(a)
    return tuple(idx[off + k] if shape_of(a)[k] != 1 else 0 for k in range(ndim_of(a)))


def blocks_of(args, lay: Layout):
    """(index, shape, parts) for each block of the layout: its place in the grid, its
    shape, and each argument's part of it (a dask block as a delayed object or an
    `Item`, an in-memory argument's slice); the dask arguments already `_aligned`."""
    blocks = delayed_blocks({i: a for i, a in enumerate(args) if is_dask(a)})
    for idx in itertools.product(*(range(len(c)) for c in lay.chunks)):
        shape = tuple(lay.chunks[ax][k] for ax, k in enumerate(idx))
        yield idx, shape, [blocks[i][_own_index(a, lay, idx)] if i in blocks else _slice_of(a, lay, idx)
                           for i, a in enumerate(args)]


def _slice_of(a, lay: Layout, idx: tuple[int, ...]):
    """An in-memory argument's part for a block of the layout (a view)."""
    if ndim_of(a) == 0:
        return a
    off = len(lay.shape) - ndim_of(a)
    sl = []
    for k in range(ndim_of(a)):
        if shape_of(a)[k] == 1:
            sl.append(slice(None))
        else:
            edges = np.cumsum((0,) + lay.chunks[off + k])
            sl.append(slice(int(edges[idx[off + k]]), int(edges[idx[off + k] + 1])))
    return np.asarray(a)[tuple(sl)]


LAZY_LINES = {
    "held": "    the gradient alone, w.r.t. one dask argument held in memory: one layer of a task per block, "
            "each given its blocks' data (no task makes them, none to fuse)",
    "blockwise": "    the gradient alone, w.r.t. one dask argument: one blockwise layer (dask fuses it with the "
                 "tasks that make the blocks and those that reduce the gradient)"}


KEPT_LINE = ("    every dask argument held in memory: the gradients computed with the value, w.r.t. dask "
             "arguments kept as dask arrays of the computed blocks (the tasks compute them together); w.r.t. "
             "in-memory ones, the blocks' pieces summed by a tree reduction")


def report(split: Split, lay: Layout, args, lazy: str | None = None, kept: bool = False) -> list[str]:
    """What explain(grad(f)) says of its last call over dask arrays."""
    n = math.prod([len(c) for c in lay.chunks])
    which = ", ".join(f"argument {i} ({'dask, chunks ' + str(a.chunks) if is_dask(a) else 'in memory'})"
                      for i, a in enumerate(args) if ndim_of(a))
    return [f"  last call over dask arrays: {n} task(s), one per block of the broadcast shape "
            f"{lay.shape} in chunks {lay.chunks}; {which}",
            f"    split as {split.kind}: {split.why}",
            LAZY_LINES[lazy] if lazy else KEPT_LINE if kept else
            "    gradients w.r.t. dask arguments: lazy, with their chunks; w.r.t. in-memory ones: the "
            "blocks' pieces summed by a tree reduction, computed with the value"]


def value_and_grad(fun: Callable, args, argnums: tuple[int, ...], *, backend, mode: str, want_value: bool):
    """(value or None, grads per argnum, report) of `fun` over args some of which are dask arrays."""
    import dask
    import dask.array as da
    from dask import delayed

    name = getattr(fun, "__qualname__", "the loss")
    args = list(args)
    _refuse_containers(fun, name, args)
    for i in argnums:
        if not -len(args) <= i < len(args):
            raise DaskSplitError(f"argnums {i} is out of range for {name}, which has {len(args)} arguments",
                                 location_of_function(fun), hint="Pick argnums among the function's positional "
                                                                 "parameters.")
        a = args[i]
        dt = a.dtype if is_dask(a) else np.asarray(a).dtype
        if dt.kind != "f" or dt.itemsize > 8:
            raise DaskSplitError(f"{name}: argument {i} has dtype {dt}; only float arguments are differentiated",
                                 location_of_function(fun),
                                 hint="Convert it with .astype(np.float64), or leave it out of argnums.")
    split = split_of(fun, args)
    if split.kind.startswith("rows"):
        return rows_value_and_grad(fun, args, argnums, split, backend=backend, mode=mode, want_value=want_value)
    lay = layout_of(name, args)
    if not want_value and blockwise_applies(args, argnums, lay):
        grad, built = lazy_grad(fun, args, argnums[0], lay, split, backend=backend, mode=mode)
        return None, (grad,), report(split, lay, args, lazy=built)
    args = [_aligned(a, lay) if is_dask(a) else a for a in args]
    total = math.prod(lay.shape)
    n_blocks = math.prod([len(c) for c in lay.chunks])
    tasks, ship = {}, Shipped(fun)      # (the loss pickled once for all the blocks)
    for idx, shape, parts in blocks_of(args, lay):
        weight = math.prod(shape) / total if split.kind.endswith("mean") and total else 1.0
        inputs, picks = as_task_inputs(parts)
        tasks[idx] = delayed(BlockTask(ship, argnums, backend, mode, weight, picks, n_blocks), pure=False)(*inputs)
    value = tree_sum([t[0] for t in tasks.values()]) if want_value else None
    keep = keeps_dask_grads(args, argnums, want_value)
    grads, eager = [], {}
    for j, i in enumerate(argnums):
        groups: dict[tuple, list] = {}
        for idx, t in tasks.items():
            groups.setdefault(_own_index(args[i], lay, idx), []).append(t[1][j])
        summed = {k: tree_sum(v) for k, v in groups.items()}
        if is_dask(args[i]) and not (keep and args[i].ndim):
            grads.append(_assemble_lazy(da, args[i], summed))
        else:
            eager[j] = summed
            grads.append(None)
    computed = dask.compute(*with_producers_inlined((value, eager), BlockTask.PREFIX)) \
        if (want_value or eager) else (None, {})
    value, eager_done = computed
    for j, summed in eager_done.items():
        a = args[argnums[j]]
        grads[j] = held_array(a, summed) if is_dask(a) else _assemble(a, summed)
    return value, tuple(grads), report(split, lay, args, kept=keep)


def _refuse_containers(fun: Callable, name: str, args: list) -> None:
    """A list, tuple or dict beside a dask array is refused by name (its blocks would be
    sliced as an array's: numpy's raw error for a ragged list, 'dtype object' for a dict)."""
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple, dict)):
            raise DaskSplitError(f"{name}: argument {i} is a {type(a).__name__} beside a dask array; a call over "
                                 "dask arrays takes arrays and numbers only", location_of_function(fun),
                                 hint="Pass the container's arrays as arguments of their own.")


def keeps_dask_grads(args, argnums, want_value: bool) -> bool:
    """Whether the gradients w.r.t. dask arguments are computed with what the call computes
    now (the value, the in-memory arguments' gradients), and kept as data (`held_array`),
    rather than left lazy: when something is computed now and every dask argument is held
    in memory (dask_blocks.held_blocks). Each block task computes its block's value and
    gradients together, so a lazy gradient ran every task a second time when computed
    (measured at 10M in 4 blocks: value_and_grad then .persist() 2.7x the numpy call);
    kept, the gradient costs nothing more, and its memory is that of the arguments, which
    are in memory already. Over data not in memory (read by tasks), gradients stay lazy:
    kept, they could outgrow the memory the data never had to fit in."""
    return ((want_value or any(not is_dask(args[i]) for i in argnums))
            and all(held_blocks(a) is not None for a in args if is_dask(a)))


def held_array(a, blocks: dict):
    """A dask array in dask argument `a`'s chunks whose graph holds the computed `blocks`
    (its block index -> numpy array) as data, as a persisted array's does."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

    name = f"s2sad_grad-{uuid.uuid4().hex}"
    layer = MaterializedLayer({(name,) + idx: b for idx, b in blocks.items()})
    return da.Array(HighLevelGraph({name: layer}, {name: set()}), name, a.chunks,
                    meta=np.empty((0,) * a.ndim, a.dtype))


def blockwise_applies(args, argnums, lay: Layout) -> bool:
    """The gradient alone w.r.t. one dask argument of the loss's full shape, the others
    dask arrays or numbers: each block's gradient is its task's, nothing summed, so one
    blockwise layer is the whole graph (`lazy_grad`)."""
    if len(argnums) != 1 or not lay.shape:
        return False
    a = args[argnums[0]]
    return (is_dask(a) and a.shape == lay.shape
            and all(is_dask(b) or ndim_of(b) == 0 for b in args))


def lazy_grad(fun: Callable, args, argnum: int, lay: Layout, split: Split, *, backend, mode: str):
    """The gradient w.r.t. dask argument `argnum`, a task per block of the layout: (the lazy
    dask array, how its graph was built, for explain).

    Built directly (a name, the output's meta given: nothing inferred, nothing tokenized;
    the delayed objects of `value_and_grad`'s general graph cost ~3 ms at 4 blocks):
    - when every dask argument holds its blocks as data (in memory: from_array of a numpy
      array, a persisted array; dask_blocks.held_blocks), one layer of a task per block,
      each given its blocks as its arguments (`held_graph`): no task between the data and
      the gradient for dask to fuse, so persist's passes and the scheduler handle 4 tasks
      that depend on nothing (measured at 4 blocks: persist 0.5-0.75 ms, where map_blocks'
      graph of the same blocks costs 1.1-1.8);
    - else one blockwise layer, which dask fuses with the tasks that make its blocks
      (from_array's slices, random blocks, a file's read) and the ones that reduce it (a
      .sum()'s per-block sums)."""
    import dask.array as da

    ndim = len(lay.shape)
    args = [_aligned(a, lay) if is_dask(a) else a for a in args]
    total = math.prod(lay.shape) if split.kind.endswith("mean") else None
    n_blocks = math.prod([len(c) for c in lay.chunks])
    task = BlockGrad(BlockTask(fun, (argnum,), backend, mode, 1.0, blocks=n_blocks, what="grad"), argnum, total)
    dtype = args[argnum].dtype
    meta = np.empty((0,) * ndim, dtype)
    # a fresh name per call, as delayed(pure=False) gives: a closure's captured values may
    # have changed since the last call, so no earlier result may stand in for this one
    name = f"{task.__name__}-{uuid.uuid4().hex}"
    graph = held_graph(name, task, args, lay)
    if graph is not None:
        return da.Array(graph, name, lay.chunks, meta=meta), "held"
    pairs = []
    for a in args:
        pairs += [a, tuple(range(ndim - a.ndim, ndim))] if is_dask(a) else [a, None]
    return da.blockwise(task, tuple(range(ndim)), *pairs, dtype=dtype, meta=meta,
                        name=name, concatenate=True, align_arrays=False), "blockwise"


def held_graph(name: str, task: Callable, args, lay: Layout):
    """The graph of `lazy_grad`'s array when every dask argument holds its blocks as data
    and every other argument is a number: one materialized layer, the task of block idx
    `task(<each argument's block of idx, or the number>)`, depending on no other task (the
    blocks are in the tasks, as they were in the arguments' graphs: nothing is copied).
    None otherwise, or where dask has no task objects (before 2024.12)."""
    try:
        from dask.highlevelgraph import HighLevelGraph, MaterializedLayer
        from dask.task_spec import Task
    except ImportError:
        return None
    held = {}
    for i, a in enumerate(args):
        if is_dask(a):
            held[i] = held_blocks(a)
            if held[i] is None:
                return None
        elif not isinstance(a, (int, float, np.number)):
            return None             # (a 0-d array, an object: blockwise passes it as it is)
    layer = {}
    for idx in itertools.product(*(range(len(c)) for c in lay.chunks)):
        key = (name,) + idx
        layer[key] = Task(key, task, *[held[i][_own_index(a, lay, idx)] if i in held else a
                                       for i, a in enumerate(args)])
    return HighLevelGraph({name: MaterializedLayer(layer)}, {name: set()})


def rows_value_and_grad(fun: Callable, args, argnums, split: Split, *, backend, mode: str, want_value: bool):
    """An array program over blocks of rows (split proved by passes/rowsplit): each task
    runs the whole program on one block of rows of the data and the in-memory parameters
    (one graph key each: sent once per worker, not once per task)."""
    import dask
    import dask.array as da
    from dask import delayed

    rows = row_params(args)
    first = next(args[i] for i in rows if is_dask(args[i]))
    chunks = first.chunks[0]
    n = sum(chunks)
    edges = np.cumsum((0,) + chunks)
    # rows in the data's blocks, each block holding whole rows
    lazy = delayed_blocks({i: args[i].rechunk((chunks,) + tuple((s,) for s in args[i].shape[1:]))
                           for i in rows if is_dask(args[i])})
    parts_of = {i: list(lazy[i].reshape(-1)) if i in lazy else
                [np.asarray(args[i])[edges[k]:edges[k + 1]] for k in range(len(chunks))] for i in rows}
    shared = {i: delayed(a, pure=False) if isinstance(a, np.ndarray) else a
              for i, a in enumerate(args) if i not in parts_of}
    mean = split.kind.startswith("rows-mean")
    tasks, ship = [], Shipped(fun)      # (the loss pickled once for all the blocks)
    for k, m in enumerate(chunks):
        inputs, picks = as_task_inputs([parts_of[i][k] if i in parts_of else shared[i] for i in range(len(args))])
        task = BlockTask(ship, argnums, backend, mode, m / n if mean and n else 1.0, picks, len(chunks))
        tasks.append(delayed(task, pure=False)(*inputs))
    extra = []
    if split.kind.endswith("+offset") and not mean and len(chunks) > 1:
        # the loss over no rows is b: taken off once per block beyond the first
        empty = [np.empty((0,) + tuple(args[i].shape[1:]), dtype=args[i].dtype) if i in parts_of else shared[i]
                 for i in range(len(args))]
        extra.append(delayed(BlockTask(ship, argnums, backend, mode, -(len(chunks) - 1), blocks=len(chunks) + 1),
                             pure=False)(*empty))
    grads, eager = [None] * len(argnums), {}
    summed = tuple(j for j, i in enumerate(argnums) if i not in parts_of)
    for j, i in enumerate(argnums):
        if i in parts_of and is_dask(args[i]):
            grads[j] = da.concatenate([da.from_delayed(t[1][j], shape=(m,) + tuple(args[i].shape[1:]),
                                                       dtype=args[i].dtype) for t, m in zip(tasks, chunks)])
        elif i in parts_of:
            eager[j] = [t[1][j] for t in tasks]
    # the value and the parameters' gradients: one tree over the blocks' whole results (a
    # getitem task per block and per gradient, and a tree each, cost the scheduler more
    # than the sums)
    total = tree_sum(tasks + extra, add=functools.partial(add_results, summed)) \
        if (want_value or summed) else None
    total, done = dask.compute(*with_producers_inlined((total, eager), BlockTask.PREFIX)) \
        if (total is not None or eager) else (None, {})
    for j in summed:
        grads[j] = _scalar_like(args[argnums[j]], total[1][j])
    for j, g in done.items():
        grads[j] = np.concatenate(g)
    return (total[0] if want_value else None), tuple(grads), report_rows(split, chunks, args, rows)


def add_results(summed: tuple[int, ...], a, b):
    """Two blocks' (value, gradients) added: the value and the gradients at positions
    `summed`; the others (pieces of a row-split argument's gradient) are dropped."""
    return a[0] + b[0], tuple(a[1][j] + b[1][j] if j in summed else None for j in range(len(a[1])))


def _scalar_like(a, g):
    """The gradient of a Python float is a float, as a numpy call's is."""
    return float(g) if isinstance(a, float) else g


def report_rows(split: Split, chunks, args, rows) -> list[str]:
    return [f"  last call over dask arrays: {len(chunks)} task(s), one per block of rows {chunks}; rows from "
            f"argument(s) {', '.join(map(str, rows))}; the other arguments sent once per worker",
            f"    split as {split.kind}: {split.why}",
            "    gradients w.r.t. dask arguments: lazy, in their row blocks; w.r.t. in-memory ones: the "
            "blocks' pieces summed by a tree reduction, computed with the value"]


def _assemble_lazy(da, a, summed: dict):
    """The lazy gradient of dask argument `a`: one block per block of `a`, its chunks."""
    nested = np.empty(a.numblocks, dtype=object)
    for idx in itertools.product(*(range(n) for n in a.numblocks)):
        shape = tuple(a.chunks[k][idx[k]] for k in range(a.ndim))
        nested[idx] = da.from_delayed(summed[idx], shape=shape, dtype=a.dtype)
    return da.block(nested.tolist()) if a.ndim else nested[()]


def _assemble(a, summed: dict) -> Any:
    """An in-memory argument's gradient from its pieces (one per its own block)."""
    if ndim_of(a) == 0 or len(summed) == 1:
        g = next(iter(summed.values()))
        return _scalar_like(a, g)
    keys = sorted(summed)
    shape = tuple(max(k[ax] for k in keys) + 1 for ax in range(len(keys[0])))
    nested = np.empty(shape, dtype=object)
    for k in keys:
        nested[k] = summed[k]
    return np.block(nested.tolist())


# ------------------------------------------------------------------ broadcast


def broadcast(apply: Callable, f: Callable, args, backend):
    """s2sad.broadcast(f, *args) with dask arguments: a lazy dask array in the chunks of
    the broadcast shape (`layout_of`), f's kernel run on each block."""
    import dask.array as da
    from dask import delayed

    name = getattr(f, "__qualname__", "the function")
    sample = apply(f, *[np.ones((1,) * ndim_of(a), a.dtype) if is_dask(a) else a for a in args], backend=backend)
    dtype = np.asarray(sample).dtype
    lay = layout_of(name, args)
    args = [_aligned(a, lay) if is_dask(a) else a for a in args]
    nested = np.empty(tuple(len(c) for c in lay.chunks), dtype=object)
    ship = Shipped(f)       # (f pickled once for all the blocks)
    for idx, shape, parts in blocks_of(args, lay):
        inputs, picks = as_task_inputs(parts)
        # each block broadcast to its full shape (an argument may be broadcast along it)
        task = BlockApply(apply, ship, backend, picks, nested.size)
        out = delayed(np.broadcast_to)(delayed(task, pure=False)(*inputs), shape)
        nested[idx] = da.from_delayed(out, shape=shape, dtype=dtype)
    return da.block(nested.tolist()) if nested.ndim else nested[()]

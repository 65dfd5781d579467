"""Calls whose arguments are containers (pytrees) or a method's instance, and has_aux:
flattened at the boundary, differentiated as leaves, gradients rebuilt in the
arguments' structure.

A call is flattened (`flatten_call`): each container argument into its leaves (tree.py's
order) and a skeleton (a dask leaf refused); an object whose attributes the function
reads (a method's `self`) into those, an "object" node. The skeletons make a Layout
(passes/containers.py) whose plan has one parameter per leaf: its Derivative runs on
the leaves (hot path included), its gradients rebuilt in each argument's structure.

Invariants:
- nothing here keeps a user object: the layouts (plan keys) hold kinds, keys, field
  names and string leaves only; a TreeCalls holds its Derivatives, made per layout;
- a leaf is differentiated when it is a float (a Python or numpy float, a float
  array); otherwise it is data, and its gradient in the structure is a float zero of
  its shape for a number (an int, a bool, an int array), None for anything else;
  a differentiated argument with no float leaf is a located NonDifferentiableInputError;
- an object (not a container) is data: selecting it with argnums is refused;
- has_aux: the loss is the first of the pair the function returns (the plan returns it
  alone); aux is what a plain call of the function returns second, not differentiated.
"""
from __future__ import annotations

import numbers
import types
import weakref
from collections import OrderedDict
from typing import Any, Callable, Sequence

import gast
import numpy as np

from . import tree
from .backends.arraymodule import is_cupy
from .arguments import check_one_tangent_per_primal
from .dask_grad import refuse_dask_leaves
from .derivative import Derivative, decline
from .errors import NonDifferentiableInputError, S2SADError, ShapeError
from .frontend import parse_function
from .jvp_vjp import jvp_at, vjp_at
from .passes.container_returns import returns_container as container_literal
from .passes.containers import STATIC, Layout, attributes_read, read_by_keys
from .targets import entry_function
from .treefast import fast_call, reader

_READS: "weakref.WeakKeyDictionary[types.CodeType, tuple]" = weakref.WeakKeyDictionary()


def has_nodes(args: Sequence[Any]) -> bool:
    """Whether a call's arguments hold a container or an object (the plain path takes neither)."""
    for a in args:
        t = type(a)
        if t is dict or t is list or t is tuple or (t is not float and t is not np.ndarray and a is not None
                                                      and (tree.is_node(a) or _is_object(a))):
            return True
    return False


def parameter_reads(fun: Callable) -> tuple:
    """(parameter names, the attributes read off each, whether each is read as a list
    (read_as_list)) of fun's planned parameters, once per code."""
    code = fun.__code__
    got = _READS.get(code)
    if got is None:
        node = entry_function(parse_function(fun)).node
        names = tuple(a.id for a in node.args.args)
        got = _READS[code] = (names, tuple(attributes_read(node, n) for n in names),
                              tuple(read_as_list(node, n) for n in names))
    return got


def read_as_list(node: gast.AST, name: str) -> bool:
    """Whether the name is read as a Python list would be, not as numpy's array of it:
    by keys (`read_by_keys`), or under an operator whose other operand is not an array:
    a number or a list literal, or the list again (`a * 2` repeats a list, `a + a` joins
    lists, `a[1:] * a[:-1]`, `a * 2.0` and `-a` raise), itself or a slice of it. With an
    array on the other side (`a @ W`, `a * x`) numpy's operator runs, as s2sad reads it."""
    if read_by_keys(node, name):
        return True

    def is_list(e) -> bool:
        if isinstance(e, gast.Subscript) and isinstance(e.slice, gast.Slice):
            e = e.value
        return isinstance(e, gast.Name) and e.id == name

    def not_array(e) -> bool:
        return is_list(e) or isinstance(e, (gast.Constant, gast.List, gast.Tuple))
    for n in gast.walk(node):
        pairs = [(n.left, n.right)] if isinstance(n, gast.BinOp) else \
            [(n.left, c) for c in n.comparators] if isinstance(n, gast.Compare) else \
            [(n.target, n.value)] if isinstance(n, gast.AugAssign) else []
        if isinstance(n, gast.UnaryOp) and is_list(n.operand):
            return True
        if any((is_list(a) and not_array(b)) or (is_list(b) and not_array(a)) for a, b in pairs):
            return True
    return False


def _numbers_only(a: Any) -> bool:
    """A list or tuple (nested or not) of plain numbers: what numpy reads as an array."""
    for v in a:
        t = type(v)
        if t is list or t is tuple:
            if not _numbers_only(v):
                return False
        elif not (isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)):
            return False
    return True


def _array_like_list(fun: Callable, i: int, a: Any) -> bool:
    """A list or tuple of numbers the function never reads as a list (by keys, or with
    an operator, which means another thing for a list): numpy's array (the reading it had
    before containers, e.g. `np.sum(s2sad.broadcast(f, [1.0, 2.0]))`)."""
    if not (type(a) is list or type(a) is tuple) or not a or not _numbers_only(a):
        return False
    reads = parameter_reads(fun)
    return i < len(reads[2]) and not reads[2][i]


def _is_float(x: Any) -> bool:
    t = type(x)
    if t is float:
        return True
    if t is np.ndarray:
        return x.dtype.kind == "f"
    if isinstance(x, (np.ndarray, np.floating)) or is_cupy(x):
        return x.dtype.kind == "f"
    if (t is list or t is tuple) and x:     # an array-like list (_array_like_list)
        return np.asarray(x).dtype.kind == "f"
    return False


def _is_object(x: Any) -> bool:
    """An instance whose attributes a method reads (not a number, array, string, function, module or class)."""
    return not isinstance(x, (numbers.Number, str, bytes, np.ndarray, np.generic, types.FunctionType,
                              types.MethodType, types.BuiltinFunctionType, types.ModuleType, type)) \
        and x is not None and not hasattr(type(x), "__array__") and not is_cupy(x)


class Flat:
    """A call flattened: the leaves (the plan's arguments), each argument's structure
    (a TreeDef, or None for a plain argument) and first leaf, the layout's skeletons."""

    __slots__ = ("leaves", "treedefs", "starts", "skeletons", "floats")

    def __init__(self):
        self.leaves: list = []
        self.treedefs: list = []
        self.starts: list[int] = []
        self.skeletons: list = []
        self.floats: list[bool] = []


def flatten_call(fun: Callable, args: Sequence[Any]) -> Flat:
    flat = Flat()
    reads = None
    for i, a in enumerate(args):
        flat.starts.append(len(flat.leaves))
        t = type(a)
        if t is np.ndarray or t is float:     # (the common plain argument, quickly)
            flat.treedefs.append(None)
            flat.skeletons.append(None)
            flat.leaves.append(a)
            flat.floats.append(t is float or a.dtype.kind == "f")
            continue
        if tree.is_node(a) and a is not None and not _array_like_list(fun, i, a):
            values, td = _flattened(fun, i, a)
            refuse_dask_leaves(fun, i, values)
            flat.treedefs.append(td)
            # a string leaf, or an OrderedDict / defaultdict: a type-free skeleton (the call's
            # TreeDef, which holds a defaultdict's factory, rebuilds and is not kept)
            if any(type(v) is str for v in values) or tree.is_typed_dict(td):
                flat.skeletons.append(_skeleton(td, iter(values), flat))
            else:   # no string leaf: the TreeDef stands for its skeleton (hashed once, made when planned)
                flat.skeletons.append(td)
                flat.leaves.extend(values)
                flat.floats.extend([_is_float(v) for v in values])
            continue
        if _is_object(a):
            reads = reads or parameter_reads(fun)
            attrs = reads[1][i] if i < len(reads[1]) else ()
            if attrs:
                flat.treedefs.append("object")
                flat.skeletons.append(_object_skeleton(a, attrs, flat))
                continue
        flat.treedefs.append(None)
        flat.skeletons.append(None)
        flat.leaves.append(a)
        flat.floats.append(_is_float(a))
    return flat


def _flattened(fun: Callable, i: int, a: Any) -> tuple[list, tree.TreeDef]:
    """tree.flatten of argument i; a dict subclass s2sad cannot rebuild is refused at fun's def."""
    try:
        return tree.flatten(a)
    except tree.DictSubclassError as e:
        names = parameter_reads(fun)[0] if hasattr(fun, "__code__") else ()
        name = names[i] if i < len(names) else f"args[{i}]"
        where = f"argument '{name}' of {getattr(fun, '__name__', fun)} is or holds {e.message}"
        raise NonDifferentiableInputError(where, parse_function(fun).location() if hasattr(fun, "__code__")
                                          else None, hint=e.hint) from None


def _skeleton(td: tree.TreeDef, values, flat: Flat) -> tuple:
    """td's skeleton with string leaves compiled in (STATIC); the other leaves go to flat."""
    if td.kind == "leaf":
        v = next(values)
        if type(v) is np.ndarray:
            flat.leaves.append(v)
            flat.floats.append(v.dtype.kind == "f")
            return tree.LEAF_SKELETON
        if isinstance(v, str):
            return (STATIC, (v,), ())
        flat.leaves.append(v)
        flat.floats.append(_is_float(v))
        return tree.LEAF_SKELETON
    return (td.kind, td.meta, tuple(_skeleton(c, values, flat) for c in td.children))


_ABSENT = object()


def _object_skeleton(obj: Any, attrs: tuple, flat: Flat) -> tuple:
    names, children = [], []
    for name in attrs:
        v = getattr(obj, name, _ABSENT)
        if v is _ABSENT:
            continue
        names.append(name)
        if isinstance(v, (types.MethodType, types.FunctionType)) or (callable(v) and _is_object(v)
                                                                      and not tree.is_node(v)):
            children.append(("method", (name,), ()))
        elif tree.is_node(v) and v is not None:
            values, td = tree.flatten(v)
            children.append(_skeleton(td, iter(values), flat))
        else:
            children.append(_skeleton(tree.LEAF, iter([v]), flat))
    return ("object", tuple(names), tuple(children))


def leaf_argnums(fun: Callable, flat: Flat, argnums: Sequence[int], args: Sequence[Any]) -> tuple[int, ...]:
    """The leaves differentiated for these (normalised) argnums; refuses an argument
    with nothing to differentiate (see the module doc)."""
    out = []
    for i in argnums:
        td, start = flat.treedefs[i], flat.starts[i]
        if td is None:
            out.append(start)
            continue
        name = parameter_reads(fun)[0][i] if hasattr(fun, "__code__") else str(i)
        if td == "object":
            raise NonDifferentiableInputError(
                f"argument '{name}' of {fun.__name__} is a {type(args[i]).__name__} object, which s2sad reads "
                "as data (its attributes are not differentiated)", parse_function(fun).location(),
                hint="Pass the arrays to differentiate as arguments (a dict or a dataclass of them), or leave "
                     f"'{name}' out of argnums.")
        end = flat.starts[i + 1] if i + 1 < len(flat.starts) else len(flat.leaves)
        floats = [j for j in range(start, end) if flat.floats[j]]
        if not floats:
            kinds = sorted({type(v).__name__ for v in flat.leaves[start:end]}) or ["no leaves"]
            raise NonDifferentiableInputError(
                f"argument '{name}' of {fun.__name__} is a container with no float leaf ({', '.join(kinds)}): "
                "nothing in it can be differentiated", parse_function(fun).location(),
                hint=f"Put float values (float64 or float32) in '{name}', or leave it out of argnums.")
        out.extend(floats)
    return tuple(out)


def rebuild(flat: Flat, i: int, values: dict) -> Any:
    """Argument i's structure with `values[leaf index]` at its leaves (None where absent)."""
    td, start = flat.treedefs[i], flat.starts[i]
    if td is None:
        g = values.get(start)
        like = flat.leaves[start]
        if type(like) is list or type(like) is tuple:       # an array-like list: its gradient as one
            return type(like)(np.asarray(g).tolist())
        return g
    if td == "object":      # data
        return None
    n = td.num_leaves
    if all(j in values for j in range(start, start + n)):    # every leaf differentiated (no string)
        return tree.unflatten(td, [values[j] for j in range(start, start + n)])
    out, j = [], start
    for skel in _leaf_skeletons(flat.skeletons[i]):
        if skel[0] == STATIC:
            out.append(None)
        else:
            out.append(values[j] if j in values else _zero_for(flat.leaves[j]))
            j += 1
    return tree.unflatten(td, out)


def _zero_for(leaf: Any) -> Any:
    """The gradient of a leaf that is not differentiated: a float zero of its shape for
    a number or numeric array (an int), None for anything else (a string, an object)."""
    if isinstance(leaf, (int, float, np.integer, np.floating)):
        return 0.0
    if isinstance(leaf, np.ndarray) and leaf.dtype.kind in "biuf":
        return np.zeros(leaf.shape)
    return None


def skeletons_of(flat: Flat) -> tuple:
    """The layout's skeletons of a flattened call (a TreeDef standing for one made into it)."""
    return tuple(s.skeleton if isinstance(s, tree.TreeDef) else s for s in flat.skeletons)


def _leaf_skeletons(skel) -> list:
    if isinstance(skel, tree.TreeDef):
        return [tree.LEAF_SKELETON] * skel.num_leaves
    if skel[0] in ("leaf", STATIC):
        return [skel]
    return [x for c in skel[2] for x in _leaf_skeletons(c)]


class TreeCalls:
    """grad and value_and_grad of one Derivative for calls with containers (and every
    call with has_aux): one leaf Derivative per (layout, differentiated leaves)."""

    MAX_LAYOUTS = 32

    def __init__(self, d: Derivative, has_aux: bool = False):
        self.d, self.has_aux = d, has_aux
        self._subs: "OrderedDict[tuple, tuple]" = OrderedDict()
        self._last = None   # the fast call (treefast.fast_call) of the last layout met
        self.last = None    # (leaf Derivative, leaf paths, differentiated leaves) of the last new layout

    def __call__(self, args: Sequence[Any]) -> tuple:
        """(value, gradients) of a call, its arguments bound (one per parameter); value
        is (loss, aux) with has_aux."""
        d = self.d
        fun = d.fun
        if len(args) != d.arity:     # defaults to fill in
            args = d.bind(args, {})
        if self._last is not None:  # the last layout's fast call (it declines any other layout)
            r = self._last(*args)
            if r is not NotImplemented:
                return (None, r) if d.grad_only else r
        flat = flatten_call(fun, args)
        key = (tuple(flat.skeletons), tuple(flat.floats))
        got = self._subs.get(key)
        if got is None:
            got = self._sub(key, flat, args)
        sub, nums, leaf_nums, fast = got
        leaves = flat.leaves
        if fast is not None:    # sub's hot path takes the call's own arguments (treefast.py)
            r = sub.hot(*args)
            if r is NotImplemented:
                r = fast(*args)
            self._install(sub, fast)
            if r is not NotImplemented:
                return (None, r) if d.grad_only else r
        r = sub.hot(*leaves)
        if r is NotImplemented:
            value, grads = sub(*leaves)
        else:
            value, grads = (None, r) if d.grad_only else r
        by_leaf = dict(zip(leaf_nums, grads))
        trees = [rebuild(flat, i, by_leaf) for i in nums]
        result = trees[0] if not isinstance(d.argnums_spec, (tuple, list)) else tuple(trees)
        if self.has_aux:
            aux = aux_of(fun, args)
            return (value, aux), result
        return value, result

    def _install(self, sub: Derivative, fast: Callable) -> None:
        """What grad's wrapper tries first (Derivative.hot) after a call of sub's layout:
        sub's hot path (it reads the call's containers itself), or else the fast call;
        a positional hot path of the grad object is kept."""
        d = self.d
        self._last = fast
        if d.hot is decline or getattr(d.hot, "tree_fast", False):
            hot = sub.hot
            if hot is not decline and hot is not sub.leaf_hot:    # it reads the containers itself
                hot.tree_fast = True
                d.hot = hot
            else:           # an array program's hot path takes the leaves: the fast call reads them
                d.hot = fast

    def _sub(self, key: tuple, flat: Flat, args: Sequence[Any]) -> tuple:
        """(the leaf Derivative, argnums, differentiated leaves) of a layout not met yet."""
        d = self.d
        fun, n = d.fun, len(args)
        nums = [i % n if -n <= i < n else i for i in d.argnums]
        for i in nums:
            if not 0 <= i < n:
                raise S2SADError(f"argnums {i} is out of range for {fun.__name__}, which has {n} arguments",
                                 hint="Pick argnums among the function's positional parameters.")
        leaf_nums = leaf_argnums(fun, flat, nums, args)
        layout = Layout(skeletons_of(flat), self.has_aux)
        sub = Derivative(fun, leaf_nums, d.backend, d.what, d.mode)
        sub.layout, sub.arity = layout, len(flat.leaves)
        fast = None
        if not self.has_aux:
            sub.reader = reader(flat, nums, leaf_nums, isinstance(d.argnums_spec, (tuple, list)))
            fast = sub.reader and fast_call(sub.reader, d.grad_only, sub)
        got = self._subs[key] = (sub, nums, leaf_nums, fast)
        self.last = (sub, leaf_paths(fun, flat), set(leaf_nums))
        while len(self._subs) > self.MAX_LAYOUTS:
            self._subs.popitem(last=False)
        return got


def leaf_paths(fun: Callable, flat: Flat) -> list[tuple[str, Any]]:
    """(path, None) for each leaf the plan takes as a parameter, in order, and (path,
    value) for each string compiled in: `p['W']`, `p.layers[0]`, `self.b`."""
    names = parameter_reads(fun)[0] if hasattr(fun, "__code__") else ()
    out: list = []

    def walk(skel, path):
        kind, meta, children = skel
        if kind in ("leaf", STATIC):
            out.append((path, None if kind == "leaf" else meta[0]))
        elif kind in ("dict", "list", "tuple"):
            for k, c in zip(meta if kind == "dict" else range(len(children)), children):
                walk(c, f"{path}[{k!r}]")
        else:       # namedtuple, dataclass, object: fields by name
            for k, c in zip(meta, children):
                walk(c, f"{path}.{k}")
    for i, skel in enumerate(skeletons_of(flat)):
        name = names[i] if i < len(names) else f"args[{i}]"
        if skel is None:
            out.append((name, None))
        else:
            walk(skel, name)
    return out


def flattening(d: Derivative) -> tuple[Derivative, list[str]] | None:
    """(the leaf Derivative of d's last new container layout, explain's lines on how
    that call was flattened), or None when d has had no container call."""
    tc = d.trees
    if tc is None or tc.last is None:
        return None
    sub, paths, diffs = tc.last
    params = sub.c.params
    lines = [f"  containers: the last call's arguments flattened into the plan's {len(params)} parameter(s) "
             "(leaf path -> parameter):"]
    leaves = iter(zip(params, range(len(params))))
    for path, static in paths:
        if static is not None:
            lines.append(f"    {path} = {static!r}: a string, compiled in")
            continue
        param, j = next(leaves)
        lines.append(f"    {path} -> {param}{' (differentiated)' if j in diffs else ''}")
    if sub.reader is not None:
        lines.append("  containers: calls of this layout read the leaves by constant keys in the generated fast "
                     "path (treefast), then the gradients are built as literals in the arguments' structure")
    return sub, lines


def tree_source(d: Derivative) -> str:
    """s2sad.source of a grad object: with containers, how its last container call was
    flattened and the leaf plan's derivative (and the fast path's reading of the call)."""
    got = flattening(d)
    if got is None:
        return d.source()
    sub, lines = got
    head = ["# " + line[2:] for line in lines]
    if sub.reader is not None:
        head += ["# the fast path reads a call as:"] + ["#     " + line for line in sub.reader.prologue]
    return "\n".join(head) + "\n\n" + sub.source()


def tree_calls(d: Derivative, has_aux: bool = False) -> TreeCalls:
    """d's TreeCalls, made at its first container call (a plain grad object makes none)."""
    tc = d.trees
    if tc is None:
        tc = d.trees = TreeCalls(d, has_aux)
    return tc


def aux_of(fun: Callable, args: Sequence[Any]) -> Any:
    """The aux a has_aux function returns with its loss: a plain call's second value."""
    out = fun(*args)
    if not (isinstance(out, tuple) and len(out) == 2):
        raise S2SADError(f"{getattr(fun, '__name__', fun)} was given has_aux=True but does not return a pair "
                         "(loss, aux)", hint="Return loss, aux; or drop has_aux.")
    return out[1]


# ---------------------------------------------------------------- jvp and vjp

_RETURNS: "weakref.WeakKeyDictionary[types.CodeType, dict]" = weakref.WeakKeyDictionary()


def returns_container(fun: Callable, aux: bool) -> bool:
    """Whether fun returns a container literal (once per code)."""
    code = getattr(fun, "__code__", None)
    if code is None:
        return False
    got = _RETURNS.setdefault(code, {})
    if aux not in got:
        got[aux] = container_literal(entry_function(parse_function(fun)).node, aux)
    return got[aux]


def needs_trees(fun: Callable, primals: Sequence[Any], has_aux: bool) -> bool:
    """Whether a jvp or vjp call takes the tree path (containers in or out, has_aux)."""
    return has_aux or has_nodes(primals) or any(_is_object(p) for p in primals) or returns_container(fun, False)


def _plain_out(fun: Callable, primals: Sequence[Any], has_aux: bool) -> tuple:
    """(output, aux) of a plain call: the output's structure (and aux) for the tree path."""
    if has_aux:
        out = fun(*primals)
        if not (isinstance(out, tuple) and len(out) == 2):
            aux_of(fun, primals)    # the refusal
        return out
    return fun(*primals), None


def _out_skeleton(out: Any) -> tuple[list, tree.TreeDef, tuple]:
    values, td = tree.flatten(out)
    return values, td, td.skeleton


def vjp_tree(fun: Callable, primals: tuple, given: int, backend, mode: str, has_aux: bool):
    """vjp with containers in or out (primals bound: one per parameter; `given`: how many
    the user passed): (out, pullback) or (out, pullback, aux)."""
    flat = flatten_call(fun, primals)
    skels = skeletons_of(flat)
    floats = [j for j, f in enumerate(flat.floats) if f]
    container_out = returns_container(fun, has_aux)
    out, aux = _plain_out(fun, primals, has_aux) if (has_aux or container_out) else (None, None)
    if not container_out:
        value, pull = vjp_at(fun, flat.leaves, backend, mode, Layout(skels, has_aux))
        out_td = None
        pulls = [pull]
        if out is None:
            out = value
    else:
        out_values, out_td, out_skel = _out_skeleton(out)
        pulls = []
        for k, v in enumerate(out_values):
            pulls.append(vjp_at(fun, flat.leaves, backend, mode, Layout(skels, has_aux, k, out_skel))[1]
                         if _is_float(v) else None)

    def pullback(ct):
        cts = [ct] if out_td is None else tree.flatten_up_to(out_td, ct, "vjp's cotangent")
        total: dict = {}
        for pull, c, k in zip(pulls, cts, range(len(cts))):
            if pull is None:
                continue
            if out_td is not None:
                _check_shape(c, out_values[k], "vjp's cotangent", k)
            adj = pull(c)
            for j in floats:
                total[j] = adj[j] if j not in total else total[j] + adj[j]
        return tuple(rebuild(flat, i, total) for i in range(given))
    return (out, pullback, aux) if has_aux else (out, pullback)


def jvp_tree(fun: Callable, primals: tuple, tangents: tuple, backend):
    """jvp with containers in or out: (out, tangent out) in the output's structure."""
    if len(tangents) > len(primals):
        check_one_tangent_per_primal(fun, primals, tangents)
    flat = flatten_call(fun, primals)
    tans = tangent_leaves(flat, primals, tangents)
    skels = skeletons_of(flat)
    if not returns_container(fun, False):
        return jvp_at(fun, flat.leaves, tans, backend, Layout(skels))
    out = fun(*primals)
    out_values, out_td, out_skel = _out_skeleton(out)
    dots = [jvp_at(fun, flat.leaves, tans, backend, Layout(skels, False, k, out_skel))[1] if _is_float(v) else None
            for k, v in enumerate(out_values)]
    return out, tree.unflatten(out_td, dots)


def tangent_leaves(flat: Flat, primals: tuple, tangents: tuple) -> list:
    """One tangent per leaf, in the primals' structure; zero for parameters not given."""
    out: list = []
    for i, p in enumerate(primals):
        td = flat.treedefs[i]
        if i >= len(tangents):
            t = [None] * (len(flat.leaves) - len(out) if i + 1 == len(primals) else
                          flat.starts[i + 1] - flat.starts[i])
        elif td is None:
            t = [tangents[i]]
        elif td == "object":
            t = [None] * ((flat.starts[i + 1] if i + 1 < len(primals) else len(flat.leaves)) - flat.starts[i])
        else:
            sub = tree.flatten_up_to(td, tangents[i], f"jvp's tangent {i}")
            t = [x for x, s in zip(sub, _leaf_skeletons(flat.skeletons[i])) if s[0] != STATIC]
        out.extend(t)
    for j, (x, t) in enumerate(zip(flat.leaves, out)):
        if flat.floats[j]:
            if t is None:
                out[j] = np.zeros_like(x) if isinstance(x, np.ndarray) else 0.0
            else:
                _check_shape(t, x, "jvp's tangent", j)
    return out


def _check_shape(t: Any, like: Any, what: str, j: int) -> None:
    if np.shape(t) != np.shape(like):
        raise ShapeError(f"{what} for leaf {j} has shape {np.shape(t)}, but that leaf has shape {np.shape(like)}",
                         hint="Give each leaf a value of its own shape.")

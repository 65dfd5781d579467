"""Containers of arrays (pytrees): `flatten`, `unflatten`, `map`, `structure`.

s2sad's own small implementation (no dependency): the node types are fixed and few, and
s2sad needs two things a general library does not give it: a structure that holds no
user object (`TreeDef.skeleton`, the key of a plan, see plans.compiled) and leaves that
are exactly what a differentiated function reads.

Node types, as JAX has them:
- dict: children in sorted key order (JAX's); keys that cannot be ordered are refused;
- OrderedDict: children in insertion order (its keys, in that order, are the structure);
- defaultdict: children in sorted key order; rebuilt with the same default_factory
  (`TreeDef.aux`, compared but kept out of the hash and of the skeleton);
- any other dict subclass is refused (`DictSubclassError`): s2sad cannot rebuild it;
- list, tuple: in order;
- namedtuple: its fields in order (read by name or by position);
- dataclass instance: its fields in declaration order (dataclasses.fields);
- None: a node with no children.
Everything else is a leaf (arrays, numbers, strings...).

Invariants:
- `unflatten(td, flatten(t)[1])` rebuilds a tree equal to `t`, of the same types;
  a dataclass is rebuilt without running its __init__ or __post_init__.
- `TreeDef` compares and hashes by structure: types, keys, field names.
- `flatten` never copies a leaf.
"""
from __future__ import annotations

import builtins
import collections
import dataclasses
from typing import Any, Callable, Sequence

import numpy as np

from .errors import S2SADError

__all__ = ["flatten", "unflatten", "map", "structure", "leaves", "TreeDef", "is_node", "DictSubclassError",
           "is_typed_dict"]

_ORDERED, _DEFAULT = collections.OrderedDict, collections.defaultdict


class DictSubclassError(S2SADError):
    """A dict subclass s2sad cannot rebuild (not dict, OrderedDict or defaultdict): the
    caller locates it (treecalls.flatten_call, at the def)."""

    def __init__(self, t: type):
        self.type_name = t.__name__
        super().__init__(f"a {t.__name__}, a subclass of dict that s2sad cannot rebuild in a gradient (it "
                         "takes dict, collections.OrderedDict and collections.defaultdict)",
                         hint="Pass a plain dict of it instead (dict(p)), or a collections.OrderedDict to keep "
                              "its key order.")


class TreeDef:
    """The structure of a tree: `kind` ("leaf", "none", "tuple", "list", "dict",
    "namedtuple", "dataclass"), `meta` (dict keys, field names), the node type (for
    namedtuples and dataclasses; OrderedDict or defaultdict for a dict node that is
    one, None for a plain dict), `aux` (a defaultdict's default_factory) and the
    children's TreeDefs."""

    __slots__ = ("kind", "meta", "type", "aux", "children", "num_leaves", "_hash")

    def __init__(self, kind: str, meta: tuple, type_: type | None, children: tuple, aux: Any = None):
        self.kind, self.meta, self.type, self.children, self.aux = kind, meta, type_, children, aux
        n = 1 if kind == "leaf" else 0
        for c in children:
            n += c.num_leaves
        self.num_leaves = n
        self._hash = hash((kind, meta, type_, children))

    def __eq__(self, other) -> bool:
        return isinstance(other, TreeDef) and self._hash == other._hash and self.kind == other.kind \
            and self.meta == other.meta and self.type is other.type and self.children == other.children \
            and (self.aux is other.aux or self.aux == other.aux)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(f"{k!r}: {c!r}" if self.kind == "dict" else
                          f"{k}={c!r}" if self.kind in ("namedtuple", "dataclass") else repr(c)
                          for k, c in zip(self.meta or range(len(self.children)), self.children))
        if self.kind == "dict" and self.type is not None:
            return f"{self.type.__name__}({{{inner}}})"
        return {"tuple": f"({inner}{',' if len(self.children) == 1 else ''})", "list": f"[{inner}]",
                "dict": f"{{{inner}}}"}.get(self.kind, f"{getattr(self.type, '__name__', self.kind)}({inner})")

    @property
    def skeleton(self) -> tuple:
        """The structure with no type in it (kind, keys, children's skeletons): what a
        plan depends on, and all it keeps (a plan never holds a user's class)."""
        if self.kind == "leaf":
            return LEAF_SKELETON
        return (self.kind, self.meta, tuple(c.skeleton for c in self.children))


LEAF_SKELETON = ("leaf", (), ())
_NDARRAY = np.ndarray
LEAF = TreeDef("leaf", (), None, ())
NONE = TreeDef("none", (), None, ())


def is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and type(x) is not tuple and hasattr(type(x), "_fields")


def is_dataclass_instance(x: Any) -> bool:
    return dataclasses.is_dataclass(x) and not isinstance(x, type)


def is_node(x: Any) -> bool:
    """Whether `x` is a container (a node with children, or None), not a leaf. Every
    dict subclass is one: flatten refuses those it cannot rebuild (DictSubclassError)."""
    t = type(x)
    return t is dict or t is list or t is tuple or x is None or isinstance(x, dict) or is_namedtuple(x) \
        or is_dataclass_instance(x)


def is_typed_dict(td: TreeDef) -> bool:
    """Whether td holds an OrderedDict or a defaultdict node (a dict node with a type)."""
    return (td.kind == "dict" and td.type is not None) or any(is_typed_dict(c) for c in td.children)


def _dict_node(x: dict) -> tuple:
    """(keys in the node's order, node type or None, aux) of a dict or a subclass s2sad rebuilds."""
    t = type(x)
    if t is dict:
        return tuple(_sorted_keys(x)), None, None
    if t is _ORDERED:
        return tuple(x), _ORDERED, None
    if t is _DEFAULT:
        return tuple(_sorted_keys(x)), _DEFAULT, x.default_factory
    raise DictSubclassError(t)


def _sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:
        raise S2SADError(f"a dict with keys of several types ({', '.join(sorted({type(k).__name__ for k in d}))}) "
                         "cannot be ordered, and s2sad orders a dict's entries by key (as JAX does)",
                         hint="Use keys of one type (all strings, or all numbers).") from None


def flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeDef]:
    """(the leaves in order, the structure). `is_leaf(x)` True stops at x."""
    out: list = []
    return out, _flatten(tree, out, is_leaf)


def _flatten(x: Any, out: list, is_leaf) -> TreeDef:
    if is_leaf is not None and is_leaf(x):
        out.append(x)
        return LEAF
    t = type(x)
    if t is _NDARRAY or t is float:     # (the common leaves, quickly)
        out.append(x)
        return LEAF
    if t is tuple or t is list:
        return TreeDef(t.__name__, (), None, tuple([_flatten(v, out, is_leaf) for v in x]))
    if t is dict:
        keys = tuple(_sorted_keys(x))
        if is_leaf is None:
            values = [x[k] for k in keys]
            if all([type(v) is _NDARRAY or type(v) is float for v in values]):   # a flat dict, quickly
                out.extend(values)
                return _flat_dict(keys)
        return TreeDef("dict", keys, None, tuple([_flatten(x[k], out, is_leaf) for k in keys]))
    if x is None:
        return NONE
    if isinstance(x, dict):     # OrderedDict, defaultdict (others refused)
        keys, type_, aux = _dict_node(x)
        return TreeDef("dict", keys, type_, tuple([_flatten(x[k], out, is_leaf) for k in keys]), aux)
    if is_namedtuple(x):
        return TreeDef("namedtuple", tuple(t._fields), t, tuple([_flatten(v, out, is_leaf) for v in x]))
    if is_dataclass_instance(x):
        names = tuple(f.name for f in dataclasses.fields(x))
        return TreeDef("dataclass", names, t, tuple([_flatten(getattr(x, n), out, is_leaf) for n in names]))
    out.append(x)
    return LEAF


_FLAT_DICTS: dict = {}    # string keys -> the TreeDef of a dict of leaves with them


def _flat_dict(keys: tuple) -> TreeDef:
    td = _FLAT_DICTS.get(keys)
    if td is None:
        td = TreeDef("dict", keys, None, (LEAF,) * len(keys))
        if all(type(k) is str for k in keys) and len(_FLAT_DICTS) < 4096:   # (no user object kept)
            _FLAT_DICTS[keys] = td
    return td


def unflatten(treedef: TreeDef, leaves_: Sequence[Any]) -> Any:
    """The tree of structure `treedef` with these leaves (as many as it has)."""
    if len(leaves_) != treedef.num_leaves:
        raise S2SADError(f"the structure {treedef!r} has {treedef.num_leaves} leaves, {len(leaves_)} given",
                         hint="Pass one value per leaf of the structure.")
    it = iter(leaves_)
    return _build(treedef, it)


def _build(td: TreeDef, it) -> Any:
    kind = td.kind
    if kind == "leaf":
        return next(it)
    if kind == "none":
        return None
    values = [_build(c, it) for c in td.children]
    if kind == "tuple":
        return tuple(values)
    if kind == "list":
        return values
    if kind == "dict":
        if td.type is _DEFAULT:
            return _DEFAULT(td.aux, zip(td.meta, values))
        return (td.type or dict)(zip(td.meta, values))
    if kind == "namedtuple":
        return td.type(*values)
    obj = object.__new__(td.type)       # a dataclass: fields set as they are, no __init__ run
    for name, v in zip(td.meta, values):
        object.__setattr__(obj, name, v)
    return obj


def structure(tree: Any) -> TreeDef:
    return flatten(tree)[1]


def leaves(tree: Any) -> list:
    return flatten(tree)[0]


def _up_to(td: TreeDef, x: Any, where: str) -> list:
    """x's subtrees at td's leaves (x must have td's structure down to them)."""
    if td.kind == "leaf":
        return [x]
    got = structure_of_node(x)
    if got != (td.kind, td.meta, td.type, len(td.children)):
        raise S2SADError(f"{where}: a tree of structure {td!r} was expected, got {_describe(x)}",
                         hint="Give every tree the same structure (the same keys, lengths and types).")
    values = [x[k] for k in td.meta] if td.kind == "dict" else \
        [getattr(x, n) for n in td.meta] if td.kind == "dataclass" else [] if td.kind == "none" else list(x)
    out: list = []
    for c, v in zip(td.children, values):
        out.extend(_up_to(c, v, where))
    return out


def structure_of_node(x: Any) -> tuple:
    """(kind, keys, node type, number of children) of one node, as TreeDef has them."""
    t = type(x)
    if t is tuple or t is list:
        return (t.__name__, (), None, len(x))
    if t is dict:
        keys = tuple(_sorted_keys(x))
        return ("dict", keys, None, len(keys))
    if x is None:
        return ("none", (), None, 0)
    if isinstance(x, dict):
        keys, type_, _ = _dict_node(x)
        return ("dict", keys, type_, len(keys))
    if is_namedtuple(x):
        return ("namedtuple", tuple(t._fields), t, len(x))
    if is_dataclass_instance(x):
        names = tuple(f.name for f in dataclasses.fields(x))
        return ("dataclass", names, t, len(names))
    return ("leaf", (), None, 0)


def _describe(x: Any) -> str:
    if isinstance(x, dict):
        return f"a {type(x).__name__} with keys {[repr(k) for k in x] if type(x) is _ORDERED else sorted(builtins.map(repr, x))}"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)}"
    return f"a {type(x).__name__}"


def flatten_up_to(treedef: TreeDef, tree: Any, where: str = "s2sad.tree") -> list:
    """`tree`'s subtrees at the leaves of `treedef`; a located-free S2SADError that says
    both structures when `tree` does not have `treedef`'s structure down to them."""
    return _up_to(treedef, tree, where)


def map(f: Callable, tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """`f` applied to each leaf of `tree` (and the matching subtrees of `rest`, which
    have `tree`'s structure down to its leaves), in a tree of `tree`'s structure."""
    values, td = flatten(tree, is_leaf)
    others = [flatten_up_to(td, r, "s2sad.tree.map") for r in rest]
    return unflatten(td, [f(*xs) for xs in builtins.zip(values, *others)])

"""Container parameters read as their leaves: the function's tree rewritten for one
layout of its arguments (`flatten_parameters`), before either planner reads it.

A parameter that stands for a container (a dict, list, tuple, namedtuple, dataclass,
or a method's instance) becomes one parameter per leaf the call passes, and each read
of a leaf by constant keys (`p["W"]`, `p.W`, `p[0]`, `p["layers"][1]["b"]`,
`w, b = params`) becomes that parameter's name, at the read's own location, so the
fused planner and the array builder see plain parameters. A string leaf is compiled in
(it is part of the layout); None reads as None.

The same rewrite takes, for has_aux, the loss out of `return loss, aux`, and, for a
function returning a container, one leaf of the returned literal (`out`).

Invariants:
- the parsed tree handed in is not changed (a rewritten copy is returned);
- a read the rewrite cannot resolve (a key the argument lacks, a dict or object used
  whole, a container parameter assigned to) is a located UnsupportedSyntaxError that
  says what to write instead, never a guess;
- leaf parameter names are identifiers unused in the function (`p_W`, `params_0_b`).
"""
from __future__ import annotations

import copy
import re
from typing import Any

import gast

from ..errors import UnsupportedSyntaxError
from ..frontend import ParsedFunction, location_of
from .arrayscope import source_text

LEAF = "leaf"
STATIC = "static"     # a string leaf: (STATIC, (value,), ())


class Layout:
    """What a plan is made for, beyond the function's code: per parameter its skeleton
    (tree.TreeDef.skeleton, with STATIC leaves and "object" nodes) or None for a plain
    argument; has_aux; the output leaf kept (None: the whole return value) and the
    output's skeleton. Immutable; hashed once (it keys a plan, looked up per call)."""

    __slots__ = ("params", "aux", "out", "out_skeleton", "_key", "_hash")

    def __init__(self, params: tuple, aux: bool = False, out: int | None = None, out_skeleton: Any = None):
        self.params, self.aux, self.out, self.out_skeleton = params, aux, out, out_skeleton
        self._key = (params, aux, out, out_skeleton)
        self._hash = hash(self._key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, Layout) and self._hash == other._hash and self._key == other._key)

    def __repr__(self) -> str:
        return f"Layout{self._key!r}"


def dynamic_leaves(skeleton) -> int:
    """How many parameters the skeleton's leaves become (static ones are compiled in)."""
    kind = skeleton[0]
    if kind == LEAF:
        return 1
    return sum(dynamic_leaves(c) for c in skeleton[2])


def attributes_read(node: gast.AST, name: str) -> tuple[str, ...]:
    """The attributes read off the name `name` (`self.W`) in a function's tree, in order."""
    seen: dict[str, None] = {}
    for n in gast.walk(node):
        if isinstance(n, gast.Attribute) and isinstance(n.value, gast.Name) and n.value.id == name:
            seen.setdefault(n.attr, None)
    return tuple(seen)


def read_by_keys(node: gast.AST, name: str) -> bool:
    """Whether the name is read by constant keys or positions (`p[0]`, `p["W"]`) or
    unpacked (`a, b = p`) in a function's tree: read as a container, not as an array."""
    for n in gast.walk(node):
        if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) and n.value.id == name \
                and _const_key(n.slice)[0]:
            return True
        if isinstance(n, gast.Assign) and isinstance(n.value, gast.Name) and n.value.id == name \
                and any(isinstance(t, (gast.Tuple, gast.List)) for t in n.targets):
            return True
    return False


def flatten_parameters(pf: ParsedFunction, layout: Layout) -> ParsedFunction:
    """pf with its container parameters as leaf parameters, as the module doc says."""
    node = copy.deepcopy(pf.node)
    used = {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    containers, new_args = {}, []
    for arg, skel in zip(node.args.args, layout.params):
        if skel is None or skel[0] == LEAF:
            new_args.append(arg)
            continue
        names = _leaf_names(arg.id, skel, used)
        containers[arg.id] = (skel, names)
        for nm in names:
            new_args.append(gast.copy_location(gast.Name(id=nm, ctx=gast.Param(), annotation=None,
                                                         type_comment=None), arg))
    rw = _Rewriter(pf, containers)
    _check_not_rebound(pf, node, containers)
    if isinstance(node, gast.Lambda):
        node.body = rw.visit(node.body)
        node.body = _returned(pf, node.body, node.body, layout)
    else:
        node.body = _visit_block(rw, node.body)
        for r in _own_returns(node):
            if r.value is not None:
                r.value = _returned(pf, r.value, r, layout)
    node.args.args = new_args
    return ParsedFunction(pf.fn, node, pf.filename, pf.resolver)


def _visit_block(rw, stmts: list) -> list:
    """The statements rewritten; an `if` decided here is spliced in, and what follows a
    return it brings in is dropped (it never runs)."""
    out = []
    for st in stmts:
        got = rw.visit(st)
        for s in (got if isinstance(got, list) else [got]):
            out.append(s)
            if isinstance(s, gast.Return):
                return out
    return out


# ------------------------------------------------------------------ leaf names

def _leaf_names(base: str, skel, used: set) -> list[str]:
    out: list[str] = []

    def walk(s, parts):
        kind, meta, children = s
        if kind == LEAF:
            nm = "_".join([base] + parts) if parts else base + "_leaf"
            nm = re.sub(r"\W", "_", nm)
            while nm in used:
                nm += "_"
            used.add(nm)
            out.append(nm)
            return
        keys = meta if kind in ("dict", "namedtuple", "dataclass", "object") else range(len(children))
        for k, c in zip(keys, children):
            walk(c, parts + [str(k)])
    walk(skel, [])
    return out


def _check_not_rebound(pf, node, containers) -> None:
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and n.id in containers and isinstance(n.ctx, (gast.Store, gast.Del)):
            raise UnsupportedSyntaxError(
                f"'{n.id}' is a container argument ({containers[n.id][0][0]}) and is assigned to here; s2sad "
                "reads a container argument's entries as the differentiated values",
                location_of(pf.filename, n), hint=f"Give the new value another name than '{n.id}'.")


def _own_returns(fnode) -> list:
    """The function's own return statements (not those of functions defined inside)."""
    out, todo = [], list(fnode.body)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Return):
            out.append(n)
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)):
            continue
        todo.extend(gast.iter_child_nodes(n))
    return out


# ------------------------------------------------------------------ reads

def _const_key(e) -> tuple[bool, Any]:
    if isinstance(e, gast.Constant):
        return True, e.value
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub) and isinstance(e.operand, gast.Constant) \
            and isinstance(e.operand.value, int):
        return True, -e.operand.value
    if isinstance(e, gast.Tuple) and all(_const_key(x)[0] for x in e.elts):
        return True, tuple(_const_key(x)[1] for x in e.elts)
    return False, None


_FOLDED = {gast.Eq: lambda a, b: a == b, gast.NotEq: lambda a, b: a != b,
           gast.Is: lambda a, b: a is None and b is None, gast.IsNot: lambda a, b: not (a is None and b is None)}

_KIND_WORDS = {"dict": "dict", "list": "list", "tuple": "tuple", "namedtuple": "namedtuple",
               "dataclass": "dataclass", "object": "object", "none": "None", "method": "method"}


class _Rewriter(gast.NodeTransformer):
    """Reads of container parameters -> leaf names (see the module doc)."""

    def __init__(self, pf, containers: dict):
        self.pf, self.containers = pf, containers
        self.shadowed: list[set] = [set()]
        self.aliases: dict = {}     # a loop variable unrolled over a container's entries -> that entry
        self.leaf_names = {nm for _, names in containers.values() for nm in names}

    def err(self, node, msg: str, hint: str):
        return UnsupportedSyntaxError(msg, location_of(self.pf.filename, node), hint=hint)

    # a nested function whose parameter has a container's name reads its own parameter
    def _nested(self, node):
        a = node.args
        names = {x.id for x in a.args + a.posonlyargs + a.kwonlyargs if isinstance(x, gast.Name)}
        self.shadowed.append(self.shadowed[-1] | (names & set(self.containers)))
        try:
            return self.generic_visit(node)
        finally:
            self.shadowed.pop()

    visit_FunctionDef = visit_Lambda = _nested

    def _resolve(self, node):
        """(skeleton, first leaf index, param) for a read by constant keys of a container
        parameter, or None."""
        if isinstance(node, gast.Name):
            if not isinstance(node.ctx, gast.Load) or node.id in self.shadowed[-1]:
                return None
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id in self.containers:
                return self.containers[node.id][0], 0, node.id
            return None
        if isinstance(node, gast.Subscript):
            base = self._resolve(node.value)
            if base is None or base[0][0] in (LEAF, STATIC):
                return None
            ok, key = _const_key(node.slice)
            if not ok:
                return None
            return self._child(node, base, key, by="key")
        if isinstance(node, gast.Attribute):
            base = self._resolve(node.value)
            if base is None or base[0][0] in (LEAF, STATIC):
                return None
            return self._child(node, base, node.attr, by="attr")
        return None

    def _child(self, node, base, key, by: str):
        skel, start, param = base
        kind, meta, children = skel
        text = source_text(node.value)
        if by == "attr" and kind not in ("namedtuple", "dataclass", "object"):
            raise self.err(node, f"'{text}' is a {_KIND_WORDS[kind]} argument; s2sad reads its entries by constant "
                                 f"keys or positions, not through .{key}", f"Read its entries as {text}[<key>].")
        if by == "attr" or kind == "dict":
            if key not in meta:
                shown = ", ".join(map(repr, meta)) or "none"
                what = "attribute" if by == "attr" else "key"
                raise self.err(node, f"'{text}' has no {what} {key!r} in this call (its {what}s: {shown})",
                               "Pass an argument with that entry, or read one it has.")
            i = list(meta).index(key)
        elif kind == "dataclass" or kind == "object" or kind == "none":
            raise self.err(node, f"'{text}' is a {_KIND_WORDS[kind]} argument, which is not indexed",
                           f"Read its fields as {text}.<name>.")
        else:
            n = len(children)
            if isinstance(key, bool) or not isinstance(key, int) or not -n <= key < n:
                raise self.err(node, f"index {key!r} is out of range for '{text}', a {_KIND_WORDS[kind]} of {n} "
                                     "in this call", "Index it with a constant position it has.")
            i = key % n
        offset = start + sum(dynamic_leaves(c) for c in children[:i])
        return children[i], offset, param

    def _expr_of(self, node, resolved, unpack: bool = False, nested: bool = False):
        """The expression a resolved read becomes: a leaf's name, a constant, or (for a
        list or tuple used whole, or unpacked) a literal of its children."""
        skel, start, param = resolved
        kind, meta, children = skel
        if kind == LEAF:
            out = gast.Name(id=self.containers[param][1][start], ctx=gast.Load(), annotation=None,
                            type_comment=None)
        elif kind == STATIC or kind == "none":
            out = gast.Constant(value=meta[0] if kind == STATIC else None, kind=None)
        elif kind in ("list", "tuple") or (unpack and kind == "namedtuple"):
            elts, off = [], start
            for c in children:
                elts.append(self._expr_of(node, (c, off, param), nested=True))
                off += dynamic_leaves(c)
            out = (gast.List if kind == "list" else gast.Tuple)(elts=elts, ctx=gast.Load())
        elif kind == "method":
            text = source_text(node)
            raise self.err(node, f"'{text}' is a method; a differentiated method that calls another method of its "
                                 "object is not supported yet",
                           "Write what it computes as a function of the arrays it needs (at module level) and call "
                           "that, passing self's attributes.")
        else:
            text = source_text(node)
            what = f"holds a {_KIND_WORDS[kind]} and is" if nested else f"is a {_KIND_WORDS[kind]}"
            raise self.err(node, f"'{text}' {what} used whole here; s2sad reads a container "
                                 "argument entry by entry (its leaves are what it differentiates)",
                           f"Read the entries you need here ({text}[<key>] or {text}.<field>) and use or pass "
                           "those.")
        return gast.copy_location(out, node)

    def _read(self, node):
        if isinstance(getattr(node, "ctx", None), (gast.Store, gast.Del)) and not isinstance(node, gast.Name) \
                and self._resolve(node.value) is not None:
            text = source_text(node)
            raise self.err(node, f"'{text}' writes into an argument's container; s2sad differentiates functions "
                                 "that leave their arguments as they are",
                           "Build a new container (new = dict(p); new['W'] = ...) or a new local variable instead.")
        resolved = self._resolve(node)
        if resolved is None:
            return self.generic_visit(node)
        return self._expr_of(node, resolved)

    visit_Name = visit_Subscript = visit_Attribute = _read

    # a test on compiled-in leaves (a string's value: `if p["kind"] == "l2":`) is decided here
    def visit_Compare(self, node):
        node = self.generic_visit(node)
        consts = [node.left] + list(node.comparators)
        if len(node.ops) == 1 and isinstance(node.ops[0], (gast.Is, gast.IsNot)) and any(
                isinstance(c, gast.Name) and c.id in self.leaf_names for c in consts) and any(
                isinstance(c, gast.Constant) and c.value is None for c in consts):
            # a leaf the call passes is never None (a None entry is a node of its own, compiled in)
            return gast.copy_location(gast.Constant(value=isinstance(node.ops[0], gast.IsNot), kind=None), node)
        if all(isinstance(c, gast.Constant) for c in consts) and len(node.ops) == 1 \
                and type(node.ops[0]) in _FOLDED:
            value = _FOLDED[type(node.ops[0])](consts[0].value, consts[1].value)
            return gast.copy_location(gast.Constant(value=value, kind=None), node)
        return node

    def visit_IfExp(self, node):
        node = self.generic_visit(node)
        if isinstance(node.test, gast.Constant) and isinstance(node.test.value, bool):
            return node.body if node.test.value else node.orelse
        return node

    def visit_If(self, node):
        node = self.generic_visit(node)
        if isinstance(node.test, gast.Constant) and isinstance(node.test.value, bool):
            return node.body if node.test.value else (node.orelse or gast.copy_location(gast.Pass(), node))
        return node

    def visit_For(self, node):
        """`for v in <container>` (or `for i, v in enumerate(<container>)`), the
        container a list or tuple of an argument's: unrolled, v standing for each entry
        in turn (its reads rewritten as the entry's), i for its position."""
        target, it, counter = node.target, node.iter, None
        if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "enumerate" \
                and len(it.args) == 1 and not it.keywords and isinstance(target, gast.Tuple) \
                and len(target.elts) == 2 and isinstance(target.elts[0], gast.Name):
            counter, target, it = target.elts[0].id, target.elts[1], it.args[0]
        resolved = self._resolve(it)
        if resolved is None or resolved[0][0] not in ("list", "tuple") or not isinstance(target, gast.Name) \
                or node.orelse or any(isinstance(n, (gast.Break, gast.Continue)) for n in gast.walk(node)) \
                or any(isinstance(n, gast.Name) and n.id in (target.id, counter) and not isinstance(n.ctx, gast.Load)
                       for b in node.body for n in gast.walk(b)):
            return self.generic_visit(node)
        skel, start, param = resolved
        out, offset = [], start
        for i, child in enumerate(skel[2]):
            saved = dict(self.aliases)
            self.aliases[target.id] = (child, offset, param)
            if counter is not None:
                self.aliases[counter] = ((STATIC, (i,), ()), 0, param)
            out.extend(_visit_block(self, copy.deepcopy(node.body)))
            self.aliases = saved
            offset += dynamic_leaves(child)
        return out or [gast.copy_location(gast.Pass(), node)]

    def visit_Assign(self, node):
        resolved = self._resolve(node.value)
        if resolved is not None and len(node.targets) == 1 and isinstance(node.targets[0], (gast.Tuple, gast.List)):
            node.value = self._expr_of(node.value, resolved, unpack=True)
            node.targets = [self.visit(t) for t in node.targets]
            return node
        return self.generic_visit(node)


# ------------------------------------------------------------------ what is returned

def _returned(pf, value, at, layout: Layout):
    if layout.aux:
        if not (isinstance(value, gast.Tuple) and len(value.elts) == 2):
            raise UnsupportedSyntaxError(
                "with has_aux=True the function returns (loss, aux); this return is not a pair written out",
                location_of(pf.filename, at), hint="Return the pair as written: return loss, aux.")
        value = value.elts[0]
    if layout.out is not None:
        exprs = _literal_leaves(pf, value, layout.out_skeleton)
        value = exprs[layout.out]
    return value


def _literal_leaves(pf, e, skel) -> list:
    """The leaf expressions of a returned literal container, in flatten order."""
    kind, meta, children = skel
    if kind in (LEAF, STATIC):
        return [e]
    if kind == "none" and isinstance(e, gast.Constant) and e.value is None:
        return []
    if kind in ("tuple", "list") and isinstance(e, (gast.Tuple, gast.List)) and len(e.elts) == len(children):
        return [x for c, el in zip(children, e.elts) for x in _literal_leaves(pf, el, c)]
    if kind == "dict" and isinstance(e, gast.Dict) and all(k is not None and _const_key(k)[0] for k in e.keys):
        by_key = {_const_key(k)[1]: v for k, v in zip(e.keys, e.values)}
        if set(by_key) == set(meta) and len(by_key) == len(e.keys):
            return [x for k, c in zip(meta, children) for x in _literal_leaves(pf, by_key[k], c)]
    raise UnsupportedSyntaxError(
        f"this function returns a {kind}, and s2sad differentiates a returned container one leaf at a time "
        "from its literal; this return is not written as one",
        location_of(pf.filename, e),
        hint="Return the container as a literal of the values (return a, b or return {'a': a, 'b': b}).")


def returns_container(node, aux: bool) -> bool:
    """Whether the function's returns are written as container literals (of the loss, with aux)."""
    values = [node.body] if isinstance(node, gast.Lambda) else [r.value for r in _own_returns(node)]
    for v in values:
        if aux and isinstance(v, gast.Tuple) and len(v.elts) == 2:
            v = v.elts[0]
        if isinstance(v, (gast.Tuple, gast.List, gast.Dict)):
            return True
    return False

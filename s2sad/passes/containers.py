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

import builtins
import copy
import re
import types
from typing import Any

import gast

from ..errors import RecursionNotSupportedError, UnsupportedSyntaxError
from ..frontend import ParsedFunction, location_of, parse_function
from .arrayscope import source_text
from .container_returns import LEAF, STATIC, const_key, inlined_return, own_returns, returned



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
                and const_key(n.slice)[0]:
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
    rw = _Rewriter(pf, containers, _Helpers(node, used))
    _check_not_rebound(pf, node, containers)
    if isinstance(node, gast.Lambda):
        node.body = rw.visit(node.body)
        node.body = returned(pf, node.body, node.body, layout)
    else:
        node.body = _visit_block(rw, node.body)
        for r in own_returns(node):
            if r.value is not None:
                r.value = returned(pf, r.value, r, layout)
        node.body = rw.helpers.defs + node.body     # the helpers specialised for containers (_Helpers)
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


# ------------------------------------------------------------------ reads

_INT_OPS = {gast.Add: lambda a, b: a + b, gast.Sub: lambda a, b: a - b, gast.Mult: lambda a, b: a * b,
            gast.FloorDiv: lambda a, b: a // b, gast.Mod: lambda a, b: a % b}

_FOLDED = {gast.Eq: lambda a, b: a == b, gast.NotEq: lambda a, b: a != b,
           gast.Is: lambda a, b: a is None and b is None, gast.IsNot: lambda a, b: not (a is None and b is None)}

_KIND_WORDS = {"dict": "dict", "list": "list", "tuple": "tuple", "namedtuple": "namedtuple",
               "dataclass": "dataclass", "object": "object", "none": "None", "method": "method"}


class _Rewriter(gast.NodeTransformer):
    """Reads of container parameters -> leaf names (see the module doc)."""

    def __init__(self, pf, containers: dict, helpers: "_Helpers"):
        self.pf, self.containers, self.helpers = pf, containers, helpers
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
            ok, key = self._static(node.slice)
            if not ok:
                return None
            return self._child(node, base, key, by="key")
        if isinstance(node, gast.Attribute):
            base = self._resolve(node.value)
            if base is None or base[0][0] in (LEAF, STATIC):
                return None
            return self._child(node, base, node.attr, by="attr")
        return None

    def _static(self, e) -> tuple[bool, Any]:
        """(True, value) for an expression known now: a constant, a loop counter unrolled
        here, len() of a container argument, and + - * // % of those; (False, None) else."""
        ok, value = const_key(e)
        if ok:
            return ok, value
        if isinstance(e, gast.Name) and isinstance(e.ctx, gast.Load) and e.id in self.aliases:
            skel = self.aliases[e.id][0]
            return (True, skel[1][0]) if skel[0] == STATIC else (False, None)
        if isinstance(e, gast.BinOp) and type(e.op) in _INT_OPS:
            (ok_l, left), (ok_r, right) = self._static(e.left), self._static(e.right)
            if ok_l and ok_r and type(left) is int and type(right) is int and (right or type(e.op) not in (gast.FloorDiv, gast.Mod)):
                return True, _INT_OPS[type(e.op)](left, right)
        if isinstance(e, gast.Call) and isinstance(e.func, gast.Name) and e.func.id == "len" and len(e.args) == 1 \
                and not e.keywords and self._builtin("len"):
            got = self._resolve(e.args[0])
            if got is not None and got[0][0] in ("list", "tuple", "dict", "namedtuple"):
                return True, len(got[0][2])
        return False, None

    def _builtin(self, name: str) -> bool:
        """Whether `name` is the builtin here (not shadowed, not a global of that name)."""
        return name not in self.helpers.local_names and self.pf.resolver.lookup(name) is getattr(builtins, name)

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
        in turn (its reads rewritten as the entry's), i for its position. And `for i in
        range(...)` with bounds known now whose body indexes a container argument by i
        (`Ws[i]`): unrolled, i a constant in each copy."""
        counts = self._indexing_range(node)
        if counts is not None:
            out = []
            for k in counts:
                saved = dict(self.aliases)
                self.aliases[node.target.id] = ((STATIC, (k,), ()), 0, None)
                out.extend(_visit_block(self, copy.deepcopy(node.body)))
                self.aliases = saved
            return out or [gast.copy_location(gast.Pass(), node)]
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

    def _indexing_range(self, node) -> range | None:
        """The range of `for i in range(...)` to unroll (see visit_For), or None."""
        it, target = node.iter, node.target
        if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords and isinstance(target, gast.Name)) or node.orelse:
            return None
        if any(isinstance(n, (gast.Break, gast.Continue)) for n in gast.walk(node)) or any(
                isinstance(n, gast.Name) and n.id == target.id and not isinstance(n.ctx, gast.Load)
                for b in node.body for n in gast.walk(b)):
            return None
        indexes = any(isinstance(n, gast.Subscript) and any(isinstance(m, gast.Name) and m.id == target.id
                                                               for m in gast.walk(n.slice))
                      and self._resolve(n.value) is not None for b in node.body for n in gast.walk(b))
        if not indexes or not self._builtin("range"):
            return None
        bounds = [self._static(a) for a in it.args]
        if not all(ok and type(v) is int for ok, v in bounds):
            return None
        counts = range(*[v for _, v in bounds])
        return counts if len(counts) <= MAX_UNROLLED else None

    def visit_Call(self, node):
        """A call that passes a container argument (or an entry of one holding a dict, a
        namedtuple, a dataclass or an object) whole to a function of the module, or one
        defined in the function: the call of that function's copy made for it
        (_Helpers.specialise), the container's leaves passed one by one."""
        if not isinstance(node.func, gast.Name) or node.func.id in self.shadowed[-1]:
            return self.generic_visit(node)
        values = list(node.args) + [k.value for k in node.keywords]
        wholes = [self._resolve(v) for v in values]
        if not any(w is not None and _holds_mapping(w[0]) for w in wholes):
            return self.generic_visit(node)
        return self.helpers.specialise(self, node)

    def leaf_exprs(self, resolved, at) -> list:
        """The caller's expressions of a resolved container's dynamic leaves, in order."""
        skel, start, param = resolved
        return [gast.copy_location(gast.Name(id=self.containers[param][1][start + k], ctx=gast.Load(),
                                             annotation=None, type_comment=None), at)
                for k in range(dynamic_leaves(skel))]

    def visit_Assign(self, node):
        resolved = self._resolve(node.value)
        if resolved is not None and len(node.targets) == 1 and isinstance(node.targets[0], (gast.Tuple, gast.List)):
            node.value = self._expr_of(node.value, resolved, unpack=True)
            node.targets = [self.visit(t) for t in node.targets]
            return node
        return self.generic_visit(node)


def _free_names(fnode) -> set:
    """The names a function reads that it does not bind (its module's, or builtins)."""
    bound = {a.id for a in fnode.args.args + fnode.args.kwonlyargs + fnode.args.posonlyargs}
    bound |= {n.id for n in gast.walk(fnode) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
    bound |= {n.name for n in gast.walk(fnode) if isinstance(n, (gast.FunctionDef, gast.ClassDef)) and n is not fnode}
    return {n.id for n in gast.walk(fnode) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)} - bound


def _holds_mapping(skel) -> bool:
    """Whether a skeleton has a node read by key or attribute (dict, namedtuple, dataclass, object)."""
    return skel[0] in ("dict", "namedtuple", "dataclass", "object") or any(_holds_mapping(c) for c in skel[2])


MAX_UNROLLED = 256      # `for i in range(k)` indexing a container: unrolled up to k of these


class _Helpers:
    """The helpers a function's containers are passed to whole, each specialised once per
    (function, container parameters' skeletons): a copy of the helper whose container
    parameters are leaf parameters (its reads rewritten as the entry function's are),
    defined at the top of the entry function (`defs`). A module-level helper must share
    the entry function's globals (its names then mean the same there); a helper that
    reaches itself is refused (recursion)."""

    def __init__(self, entry, used: set):
        self.entry, self.used = entry, used
        self.local_defs = {} if isinstance(entry, gast.Lambda) else \
            {st.name: st for st in entry.body if isinstance(st, gast.FunctionDef)}
        self.local_names = {n.id for n in gast.walk(entry) if isinstance(n, gast.Name)
                            and not isinstance(n.ctx, gast.Load)} | set(self.local_defs)
        self.defs: list = []
        self.made: dict = {}
        self.stack: list = []

    def specialise(self, rw: "_Rewriter", call: gast.Call):
        name = call.func.id
        helper, hpf, identity = self._helper(rw, call, name)
        node = helper
        a = node.args
        params = [x.id for x in a.args]
        if a.vararg or a.kwarg or a.posonlyargs or a.kwonlyargs:
            raise rw.err(call, f"'{name}' is given a container whole here and has *args, **kwargs or "
                               "keyword-only parameters, which s2sad does not bind containers to",
                         f"Give '{name}' plain parameters, or pass it the container's entries.")
        bound = {}      # parameter -> (resolved container, the argument's node)
        for k, v in enumerate(call.args):
            if isinstance(v, gast.Starred) or k >= len(params):
                raise rw.err(call, f"this call of '{name}' passes more arguments than it takes, or *args",
                             "Pass one argument per parameter.")
            bound[params[k]] = v
        for kw in call.keywords:
            if kw.arg is None or kw.arg not in params or kw.arg in bound:
                raise rw.err(call, f"this call of '{name}' passes a keyword it does not take (or twice, or **)",
                             "Pass one argument per parameter, by name or position.")
            bound[kw.arg] = kw.value
        wholes = {p: rw._resolve(v) for p, v in bound.items()}
        wholes = {p: r for p, r in wholes.items() if r is not None and r[0][0] not in (LEAF, STATIC, "none")}
        first_default = len(params) - len(a.defaults)
        if any(params.index(p) >= first_default for p in wholes):
            raise rw.err(call, f"'{name}' is given a container whole for a parameter with a default value",
                         "Give that parameter no default, or pass the container's entries.")
        key = (identity, tuple((p, r[0]) for p, r in sorted(wholes.items())))
        if key in self.stack:
            raise RecursionNotSupportedError(f"'{name}' calls itself (recursion) with a container",
                                             location_of(rw.pf.filename, call), hint="Write the recursion as a for loop.")
        if not isinstance(identity, tuple):
            clash = sorted(_free_names(helper) & self.local_names)
            if clash:
                raise rw.err(call, f"'{name}' is given a container whole here and reads {', '.join(clash)} of its "
                                   "module, which this function also assigns: s2sad passes it the container through a "
                                   "copy defined inside this function, where that name would mean this function's",
                             "Rename the variable in this function (or in the helper), or pass the container's entries.")
        if key not in self.made:
            self.stack.append(key)
            try:
                self.made[key] = self._copy(hpf, helper, {p: r[0] for p, r in wholes.items()})
            finally:
                self.stack.pop()
        new_name, leaf_names, node = self.made[key]
        args, keywords = [], []
        for k, v in enumerate(call.args):
            p = params[k]
            args.extend(rw.leaf_exprs(wholes[p], v) if p in wholes else [rw.visit(v)])
        for kw in call.keywords:
            if kw.arg in wholes:
                keywords.extend(gast.keyword(arg=nm, value=e)
                                for nm, e in zip(leaf_names[kw.arg], rw.leaf_exprs(wholes[kw.arg], kw.value)))
            else:
                keywords.append(gast.keyword(arg=kw.arg, value=rw.visit(kw.value)))
        if not isinstance(identity, tuple):     # a module's one-line helper: its expression, in place
            inlined = inlined_return(node, args, keywords, self.local_names)
            if inlined is not None:
                return inlined
        if all(d is not node for d in self.defs):
            self.defs.append(node)
        func = gast.copy_location(gast.Name(id=new_name, ctx=gast.Load(), annotation=None, type_comment=None),
                                  call.func)
        return gast.copy_location(gast.Call(func=func, args=args, keywords=keywords), call)

    def _helper(self, rw, call, name: str):
        """(the helper's FunctionDef, its ParsedFunction, what identifies it: its code, or
        its name for a local def) for a call of `name`."""
        where = f"'{name}' is given a container whole here"
        if isinstance(self.entry, gast.Lambda):
            raise rw.err(call, f"{where}, in a lambda", "Write the function with def, or pass the container's entries.")
        if name in self.local_defs:
            return self.local_defs[name], rw.pf, ("local", name)
        fn = None if name in self.local_names else rw.pf.resolver.lookup(name)
        if not isinstance(fn, types.FunctionType) or fn.__globals__ is not rw.pf.fn.__globals__:
            raise rw.err(call, f"{where}; s2sad passes a container to a Python function of the same module (or one "
                               "defined in the function), not to this one",
                         "Read the entries you need here (p[<key>] or p.<field>) and pass those.")
        hpf = parse_function(fn)
        if not isinstance(hpf.node, gast.FunctionDef):
            raise rw.err(call, f"{where}, and '{name}' is a lambda", "Write it with def, or pass the entries.")
        return hpf.node, hpf, fn.__code__

    def _copy(self, hpf, helper, skeletons: dict) -> tuple[str, dict]:
        """(the name of helper's copy with leaf parameters for `skeletons`, each container
        parameter's leaf names, the copy: a def `specialise` puts in `defs` when a call
        is not inlined)."""
        node = copy.deepcopy(helper)
        base = re.sub(r"\W", "_", f"{helper.name}__flat")
        new_name = base
        while new_name in self.used:
            new_name += "_"
        self.used.add(new_name)
        node.name = new_name
        used = self.used | {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
        containers, new_args, leaf_names = {}, [], {}
        for arg in node.args.args:
            skel = skeletons.get(arg.id)
            if skel is None:
                new_args.append(arg)
                continue
            names = leaf_names[arg.id] = _leaf_names(arg.id, skel, used)
            containers[arg.id] = (skel, names)
            new_args.extend(gast.copy_location(gast.Name(id=nm, ctx=gast.Param(), annotation=None,
                                                         type_comment=None), arg) for nm in names)
        _check_not_rebound(hpf, node, containers)
        rw = _Rewriter(hpf, containers, self)
        node.body = _visit_block(rw, node.body)
        node.args.args = new_args
        node.decorator_list = []
        return new_name, leaf_names, node

"""What a plan took from outside its function, re-checked before the plan serves a call.

Invariants:
- `Assumptions(log, code)` is made from the free-name log a plan's making recorded
  (frontend.recording): every name it resolved (`(resolver, name, value)`) and every
  dotted module attribute it resolved (`(resolver, ("np", "tanh"), value)`, recorded by
  frontend.attribute_value). `hold(fun)` is true only while each still resolves as
  planned: a compiled-in value (a number, a function, a ufunc) is the same, data is of
  the same kind. A module itself is not an assumption; what the plan read through it is:
  `np.tanh = my_tanh`, `math.sin` replaced or a module's `np` rebound to another module
  after warm calls makes the plan fail `hold`, so the call is planned again with what
  the name now holds (a function s2sad knows or has the source of), or refused there,
  located (never the old derivative: that was a silent wrong number before session 13).
- Nothing here keeps a user's function, its globals or an array alive: functions are held
  by weak reference; long-lived C objects (builtins, ufuncs) as they are; a root module
  that `guard` compares by identity is held (modules live in sys.modules anyway).
- The per-call cost: `hold` is a loop over the entries (a dict read and a test each; a
  dotted one walks its attributes, modules only), generated per plan with the module
  attributes' identities inline (`_hold_all`/`_hold_rest` otherwise). The hot paths that
  skip `hold` when nothing was assumed (derivative.py's fused path, array_hot) use
  `guard()` instead when only module attributes were: one inline text, `G['np'] is not
  _M0 or _D0['tanh'] is not _A0 ...` (the root read once per module; the module's dict
  read, as numpy's module has a __getattr__ and CPython 3.11 does not specialise loads
  of its attributes: 20 ns each, 10-14 ns a dict read). Measured interleaved (Python
  3.11, the Intel Xeon of session 13), warm grads: sum(tanh(x) * exp(x)) of 10 elements
  0.62 -> 0.70-0.72 us (np, sum, tanh, exp: four tests); sum(tanh(W @ x)), W (3, 10),
  the small-grad path calling the generated hold, 0.94 -> 1.11 us. Rejected: `hold`
  called from the fused hot path (0.62 -> 0.85 us), the loop `hold` with getattr walks
  (0.44 us a call for two attributes, the array path 0.95 -> 1.59 us).
"""
from __future__ import annotations

import builtins
import itertools
import types
import weakref
from typing import Callable

import numpy as np

from . import freedata

MISSING = object()      # a name that resolves to nothing (frontend's lookups return it too)
_MISSING = MISSING


def walk(value, attrs: tuple):
    """`value.a.b` for attrs ("a", "b"), through modules only (MISSING past a non-module:
    no user attribute code runs while a plan is checked)."""
    for a in attrs:
        if not isinstance(value, types.ModuleType):
            return _MISSING
        value = getattr(value, a, _MISSING)
    return value


class Assumptions:
    """What a plan took from outside its function, and the test each must pass for the
    plan to serve a call of a function `fun` (`hold(fun)`):

    - fun's code is the planned code (a swapped `__code__` is planned again);
    - a name whose value was compiled in holds an equal number or tuple (by type and
      value) or the same object (a function, held weakly);
    - a dotted name through modules (`np.tanh`, `mod.np.tanh`, `math.sin`) resolves to
      the same object (or value) it did: a monkeypatched module attribute is planned again;
    - a name read at call time (an array, list, dict) holds the same kind (for arrays,
      dtype and ndim): a new closure of known code over a new batch reuses the plan; a
      list's numbers stay as usable as planned (freedata), tested here per call unless
      the generated code checks its one conversion (`checked_lists`).

    Modules themselves are not recorded. Nothing here holds a user's function, globals
    dict or array: names are read from `fun` (the planned code's own names, directly from
    its globals and closure) or through their resolver (other functions', weakly held)."""

    def __init__(self, log: list, code: types.CodeType, checked_lists=frozenset()) -> None:
        self.code = code
        self._globals, self._cells, self._others, self.entries = [], [], [], []
        self._attrs, self._cell_attrs, self._other_attrs = [], [], []
        self._inline: list = []     # (root, attrs, want): a global module's attribute, by identity
        self._roots: dict = {}      # their root names -> the module when planned
        self._attr_modules: dict = {}   # (root, attrs) of _attrs -> what root named when planned
        seen = set()
        for resolver, name, value in log:
            if isinstance(value, types.ModuleType) or (id(resolver), name) in seen:
                continue
            seen.add((id(resolver), name))
            dotted = isinstance(name, tuple)
            root = name[0] if dotted else name
            if root in resolver.extra and root not in resolver.freevars:
                continue        # a resolver's fixed `extra` value cannot change
            test, want = _expectation(value)
            if test is freedata.list_still_usable and (id(resolver), name) in checked_lists:
                test = freedata.still_a_list    # (its generated code checks its conversion)
            self.entries.append((".".join(name) if dotted else name, test))
            if not dotted:
                if resolver.code is not code:
                    self._others.append((resolver, name, test, want))
                elif name in resolver.freevars:
                    self._cells.append((resolver.freevars.index(name), test, want))
                else:
                    self._globals.append((name, test, want))
            elif resolver.code is not code:
                self._other_attrs.append((resolver, root, name[1:], test, want))
            elif root in resolver.freevars:
                self._cell_attrs.append((resolver.freevars.index(root), name[1:], test, want))
            else:
                module = resolver.current(root)
                if (test is _same_object or isinstance(value, types.BuiltinFunctionType)) \
                        and isinstance(module, types.ModuleType) \
                        and self._roots.setdefault(root, module) is module:
                    self._inline.append((root, name[1:], value))    # (a C function: its module's)
                else:
                    self._attrs.append((root, name[1:], test, want))
                    self._attr_modules[(root, name[1:])] = module
        # the other functions' names, by resolver: each function and its globals read once
        # a call, a plain global's value from that dict (ident(tanh(z)) through broadcast,
        # 10k elements, warm, on the Intel Xeon: 12.4 us against np.tanh's row's 10.1 with a
        # test per resolver that read a name, four for `ident`; about the same with these)
        by: dict = {}
        same: set = set()   # (a plan's passes resolve one helper through resolvers of their own:
        #                      its plain globals are tested once, whichever resolver read them)
        for r, n, attrs, test, want in [(r, n, None, t, w) for r, n, t, w in self._others] + self._other_attrs:
            plain = r.is_plain_global(n)
            if plain:
                key = (r.code, id(r.function_now()), n, attrs)
                if key in same:
                    continue
                same.add(key)
            by.setdefault(id(r), (r, []))[1].append((n, attrs, plain, test, want))
        self._by_resolver = list(by.values())
        self._helper_parts, self._helper_names = self._inline_helpers()
        self._rest = bool(self._globals or self._cells or self._by_resolver or self._attrs
                          or self._cell_attrs)
        if self._inline or self._helper_parts:   # (a generated hold: identity tests inline, the rest after)
            text, names = self.guard("g", whole=False)
            src = ("def make(CODE, REST, " + ", ".join(names) + "):\n"
                   "    def hold(fun):\n"
                   "        try:\n"
                   "            if fun.__code__ is not CODE:\n"
                   "                return False\n"
                   "            g = fun.__globals__\n"
                   f"            if {text}:\n"
                   "                return False\n"
                   "        except (KeyError, AttributeError):     # (no code; deleted from its module)\n"
                   "            return False\n"
                   f"        return {'REST(fun)' if self._rest else 'True'}\n"
                   "    return hold\n")
            ns: dict = {}
            exec(compile(src, "<s2sad assumptions>", "exec"), ns)
            self.hold = ns["make"](code, self._hold_rest, **names)
        else:
            self.hold = self._hold_all

    def _hold_all(self, fun) -> bool:
        """Whether this plan serves a call of `fun` (runs on every call: reads fun's dicts
        and cells directly). `hold` is this, or a generated function testing the module
        attributes inline before calling `_hold_rest`."""
        if getattr(fun, "__code__", fun) is not self.code:
            return False
        return self._hold_rest(fun) if self._rest else True

    def _hold_rest(self, fun) -> bool:
        """hold's tests other than the code's and the inline module attributes'."""
        if self._globals:
            g = fun.__globals__
            for n, test, want in self._globals:
                if not test(g.get(n, _MISSING), want):
                    return False
        if self._attrs:
            g = fun.__globals__
            for n, attrs, test, want in self._attrs:
                if not test(walk(g.get(n, _MISSING), attrs), want):
                    return False
        if self._cells or self._cell_attrs:
            closure = fun.__closure__
            try:
                for i, test, want in self._cells:
                    if not test(closure[i].cell_contents, want):
                        return False
                for i, attrs, test, want in self._cell_attrs:
                    if not test(walk(closure[i].cell_contents, attrs), want):
                        return False
            except ValueError:      # emptied
                return False
        return self._hold_others() if self._by_resolver else True

    def _inline_helpers(self) -> tuple[list, dict]:
        """The tests of helper functions and of what they read that can be written inline
        (a `guard` text's parts, `{G}` for the root's globals; and their names), taken out
        of the lists `_hold_rest` walks: a plain function global (the root's, or a helper's
        whose function is tested before it) by weak reference, code and no defaults; a
        module attribute a helper read, by identity, where it is a C function or ufunc (held:
        long-lived) or a plain function (weakly). One `g['user']` read then verifies `user`
        and lends its `__globals__` to its own names (`math.tanh`). Measured on the Intel
        Xeon, warm, against the same tests in `_hold_rest`'s loops (and 87b405b, before
        any module attribute was tested): the user function's gradient at 10k 19.9 ->
        19.0 us (18.8); logistic regression at n = 32 5.3 -> 4.1-4.2 us (4.4: the helper
        `sigmoid`, its weakref and cell reads before, now one dict read); ident(tanh(z))
        through broadcast at 10k 11.5 -> 10.3 us (11.5)."""
        parts: list = []
        names: dict = {}         # what the parts name, bound where the text runs
        verified: dict = {}      # id(a function) -> the variable that holds it, tested
        fresh = itertools.count()   # each part's names their own number

        def function_part(get: str, want) -> str:
            k = next(fresh)
            h, w, c = f"_s2h{k}", f"_s2w{k}", f"_s2c{k}"
            names[w], names[c] = want[0], want[1]
            verified[id(want[0]())] = h
            return (f"({h} := {get}) is not {w}() or {h}.__code__ is not {c} or {h}.__defaults__ is not None"
                    f" or {h}.__kwdefaults__ is not None")

        def module_part(get: str, module, attr: str, test, want) -> str | None:
            if not isinstance(module, types.ModuleType) or attr not in module.__dict__:
                return None
            j = next(fresh)
            m, d = f"_s2m{j}", f"_s2d{j}"
            value = module.__dict__[attr]
            if test is _same_plain_function and value is want[0]():
                names[m], names[d] = module, module.__dict__
                return f"{get} is not {m} or " + function_part(f"{d}[{attr!r}]", want)
            held = want if test is _same_object else want() if test is _same_referent else None
            if held is None or held is not value or not isinstance(held, (types.BuiltinFunctionType, np.ufunc)):
                return None
            a = f"_s2a{j}"
            names[m], names[d], names[a] = module, module.__dict__, held
            return f"{get} is not {m} or {d}[{attr!r}] is not {a}"

        kept = []
        for n, test, want in self._globals:
            if test is _same_plain_function and want[0]() is not None:
                parts.append(function_part(f"{{G}}[{n!r}]", want))
            else:
                kept.append((n, test, want))
        self._globals = kept
        kept = []
        for n, attrs, test, want in self._attrs:
            part = module_part(f"{{G}}[{n!r}]", self._attr_modules.get((n, attrs)), attrs[0], test, want) \
                if len(attrs) == 1 else None
            parts.append(part) if part else kept.append((n, attrs, test, want))
        self._attrs = kept
        groups, rest, progress = list(self._by_resolver), [], True
        while progress:             # a helper's helper is verified through the helper
            progress = False
            for group in list(groups):
                r, items = group
                fn = r.function_now()
                h = verified.get(id(fn)) if fn is not None else None
                if h is None:
                    continue
                groups.remove(group)
                progress = True
                gk = f"_s2g{next(fresh)}"          # (assigned inline: the helper's globals)
                mine, left = [f"({gk} := {h}.__globals__) is None"], []
                for item in items:
                    n, attrs, plain, test, want = item
                    part = None
                    if plain and attrs is None and test is _same_plain_function and want[0]() is not None:
                        part = function_part(f"{gk}[{n!r}]", want)
                    elif plain and attrs is not None and len(attrs) == 1:
                        part = module_part(f"{gk}[{n!r}]", fn.__globals__.get(n), attrs[0], test, want)
                    mine.append(part) if part else left.append(item)
                parts.extend(mine)
                if left:                # (tested by _hold_others, as before)
                    rest.append((r, left))
        self._by_resolver = groups + rest
        return parts, names

    def _hold_others(self) -> bool:
        """The tests of names other functions (helpers) resolved: per helper, its function
        and globals read once; a plain global from that dict, anything else as the
        resolver reads it (cells, fixed extras)."""
        for r, items in self._by_resolver:
            fn = r.function_now()
            if fn is None:
                return False
            g = fn.__globals__
            for n, attrs, plain, test, want in items:
                if plain:
                    v = g[n] if n in g else getattr(builtins, n, _MISSING)
                else:
                    v = r.current(n)
                if attrs is not None:
                    v = walk(v, attrs)
                if not test(v, want):
                    return False
        return True

    def guard(self, globals_name: str = "G", whole: bool = True) -> tuple[str, dict] | None:
        """(text, names) of an inline test that is true when this plan no longer serves a
        function of the planned code whose globals dict is `globals_name` (the code is
        the caller's test), where every entry is a global module's attribute held by
        identity (`np.tanh`, `math.sin`); None otherwise (call `hold`). whole=False: the
        test of those entries alone, whatever else was assumed. The text raises KeyError
        or AttributeError where a name was deleted: the caller takes that as true."""
        if not (self._inline or self._helper_parts) or (whole and self._rest):
            return None
        names, parts, root_of = dict(self._helper_names), [], {}
        for root, module in self._roots.items():
            m = root_of[root] = f"_M{len(root_of)}"
            names[m], names[f"_D{m[2:]}"] = module, module.__dict__
            parts.append(f"{globals_name}[{root!r}] is not {m}")
        for k, (root, attrs, want) in enumerate(self._inline):
            a, m = f"_A{k}", root_of[root]
            names[a] = want
            if len(attrs) > 1:
                names["_walk"] = walk
                parts.append(f"_walk({m}, {attrs!r}) is not {a}")
            elif self._roots[root].__dict__.get(attrs[0], _MISSING) is want:
                # (its dict read: numpy's module has a __getattr__, so its attributes' loads
                # are not specialised by CPython 3.11: 20 ns each, 10 ns a dict read)
                parts.append(f"_D{m[2:]}[{attrs[0]!r}] is not {a}")
            else:
                parts.append(f"{m}.{attrs[0]} is not {a}")
        parts += [p.replace("{G}", globals_name) for p in self._helper_parts]
        return " or ".join(parts), names


def _expectation(value) -> tuple[Callable, Any]:
    """(test(current, want), want) for a recorded value: its kind where it is read at
    call time, its value where it was compiled in."""
    if isinstance(value, np.ndarray):
        return _same_kind, ("array", value.dtype, value.ndim)
    if isinstance(value, list):     # (its elements' dtype: freedata)
        return freedata.list_still_usable, (type(value), freedata.list_usable(value))
    if isinstance(value, (dict, set)):
        return _same_kind, (type(value),)
    if isinstance(value, (bool, int, float, complex, np.bool_, np.number, tuple)) or value is None:
        return _same_value, value
    if isinstance(value, types.FunctionType):   # a helper: the same function, running the same code
        if value.__defaults__ is None and value.__kwdefaults__ is None:
            return _same_plain_function, (weakref.ref(value), value.__code__)
        return _same_function, (weakref.ref(value), value.__code__, _number_defaults(value))
    try:
        return _same_referent, weakref.ref(value)
    except TypeError:       # a builtin or C object: long-lived, held as is
        return _same_object, value


def _kind(v) -> tuple:
    if isinstance(v, np.ndarray):
        return ("array", v.dtype, v.ndim)
    return (type(v),)


def _same_kind(v, want) -> bool:
    return _kind(v) == want


def _same_object(v, want) -> bool:
    return v is want


def _same_referent(v, ref) -> bool:
    return v is ref()


def _same_function(v, want) -> bool:
    """The same function object, whose code and number defaults are still those planned:
    a swapped `__code__` (IPython's autoreload swaps it in place) or new defaults are
    planned again, as for the differentiated function itself."""
    ref, code, defaults = want
    return v is ref() and v.__code__ is code and _same_value(_number_defaults(v), defaults)


def _same_plain_function(v, want) -> bool:
    """_same_function for a helper planned without defaults (most: no tuple per call)."""
    return v is want[0]() and v.__code__ is want[1] and v.__defaults__ is None and v.__kwdefaults__ is None


def _number_defaults(f: types.FunctionType) -> tuple:
    """f's defaults where they are numbers (compiled in), kinds elsewhere (read when called)."""
    kw = f.__kwdefaults__
    values = tuple(f.__defaults__ or ()) + (tuple(kw[k] for k in sorted(kw)) if kw else ())
    return tuple(v if isinstance(v, (bool, int, float, np.number, str)) or v is None else _kind(v) for v in values)


def _same_value(v, want) -> bool:
    """Equal numbers of one type (0.0 is not -0.0; nan is nan), tuples of them."""
    if v is want:
        return True
    if type(v) is not type(want):
        return False
    if isinstance(v, tuple):
        return len(v) == len(want) and all(_same_value(a, b) for a, b in zip(v, want))
    if isinstance(v, (float, complex, np.floating, np.complexfloating)):
        return repr(v) == repr(want)
    try:
        return bool(v == want)
    except Exception:       # noqa: BLE001 (an object whose == is not a truth value)
        return False

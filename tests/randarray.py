"""Random array programs for the reverse mode (passes/reverse.py): a small MLP-like
grammar of numpy operations on an n x d input, its parameters differentiated.

`draw_program(draw)` (a hypothesis composite's `draw`) returns an `ArrayProgram`: the
source of `loss(W, b, v, c, X)` and how to make its arguments. Every statement binds a new
name from names already bound, with its shape tracked, so that the program always runs:

- matrix products with the parameters (`@`, `np.dot`, one column or a vector included,
  the shapes that make s2sad pair a kernel with its matmul or seed a pullback with factors);
- bias rows, scalar factors, elementwise numpy functions and `s2sad.broadcast` of scalar
  functions (smooth ones and piecewise ones), `np.where`, `np.maximum`;
- reductions along an axis (with keepdims or not), transposes, slices, binary ops of two
  bound names of one shape;
- programs as people write them (issue 15): in-place writes into a local copy (an
  element, a row, a column with +=, a mask, repeated fancy indices), a while loop with a
  data-dependent test and an iteration guard, a for loop that breaks, a loop over the
  rows of an array, a list grown by such a loop, a list comprehension stacked;
- shape arithmetic (session 8): `np.zeros(a.shape[0] + 1)` written into and sliced
  with `len(k) - 1` bounds, or an index computed as `(np.arange(len(a)) + 1) % a.shape[0]`;
- the result reduced to a scalar loss.

A few programs (CONTAINER_SHARE of them) also get a container twin (issue 15): the same
body with W and b taken from a dict (`p["W"]` read in place), a tuple or a list unpacked
(`W, b = params`), a namedtuple (`p.W`), or a nested dict (`W, b = p["layer"]`,
`p["v"]`). the body as a helper of the module given the dict whole (`return body_of(p, v, c, X)`),
or a list read by a loop counter (`for i in range(1, len(params)): b = params[i]`).
`ArrayProgram.pack` makes its arguments from the positional ones and
`ArrayProgram.flat_grads` flattens its gradients back, so that a test can compare the
twin with the positional program bit for bit.
"""
from __future__ import annotations

import itertools
import linecache
import re
from dataclasses import dataclass

import numpy as np

N, D, K = 5, 3, 4

HEADER = '''import math

import numpy as np

import s2sad


def leaky(z):
    return z if z > 0 else 0.1 * z


def softplus(z):
    return math.log(1.0 + math.exp(-abs(z))) + max(z, 0.0)


def bump(z, s):
    return math.tanh(z) * s + z * z * 0.25


'''

_counter = itertools.count()

# elementwise steps: the result has the operand's shape ("bias" needs (N, K))
SAME_SHAPE = {
    "tanh": "np.tanh({a})", "sin": "np.sin({a}) * c", "square": "{a} * {a}", "scale": "c * {a}",
    "leaky": "s2sad.broadcast(leaky, {a})", "softplus": "s2sad.broadcast(softplus, {a})",
    "bump": "s2sad.broadcast(bump, {a}, c)", "where": "np.where({a} > 0, {a}, 0.5 * {a})",
    "maximum": "np.maximum({a}, 0.2 * {a})", "bias": "{a} + b",
}


CONTAINERS = ("dict", "tuple", "list", "named", "nested", "helper", "indexed")
CONTAINER_SHARE = 4     # one program in CONTAINER_SHARE has a container twin

NAMEDTUPLE = 'from collections import namedtuple\n\nParams = namedtuple("Params", "W b")\n\n\n'


@dataclass
class ArrayProgram:
    source: str
    b_shape: tuple
    v_shape: tuple
    container: str | None = None
    container_source: str | None = None

    def pack(self, ns: dict, args: list) -> list:
        """The container twin's arguments from the positional ones (W, b, v, c, X);
        `ns` is the twin's loaded module (its Params type)."""
        W, b, v, c, X = args
        if self.container in ("dict", "helper"):
            return [{"W": W, "b": b}, v, c, X]
        if self.container == "tuple":
            return [(W, b), v, c, X]
        if self.container in ("list", "indexed"):
            return [[W, b], v, c, X]
        if self.container == "named":
            return [ns["Params"](W, b), v, c, X]
        return [{"layer": (W, b), "v": v}, c, X]        # nested

    def container_argnums(self) -> tuple:
        return (0, 1) if self.container == "nested" else (0, 1, 2)

    def flat_grads(self, grads) -> list:
        """The twin's gradients (in its arguments' structure) as [gW, gb, gv, gc]."""
        if self.container == "nested":
            p, gc = grads
            assert type(p) is dict and type(p["layer"]) is tuple, type(p)
            return [*p["layer"], p["v"], gc]
        p, gv, gc = grads
        if self.container in ("dict", "helper"):
            assert type(p) is dict and sorted(p) == ["W", "b"], p
            return [p["W"], p["b"], gv, gc]
        kind = {"tuple": tuple, "list": list, "indexed": list}.get(self.container)
        assert kind is None or type(p) is kind, type(p)
        if self.container == "named":
            assert type(p).__name__ == "Params", type(p)
            return [p.W, p.b, gv, gc]
        return [*p, gv, gc]

    def args(self, seed: int) -> list:
        rng = np.random.default_rng(seed)
        return [rng.normal(size=(D, K)) * 0.7, rng.normal(size=self.b_shape) * 0.3,
                rng.normal(size=self.v_shape) * 0.7, float(rng.uniform(0.5, 1.5)), rng.normal(size=(N, D))]


def load(program: ArrayProgram, src: str | None = None) -> dict:
    """Execute the program (or `src`, its container twin) under a pseudo file name that
    linecache knows (s2sad reads it)."""
    filename = f"<s2sad-randarray-{next(_counter)}>"
    src = program.source if src is None else src
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns: dict = {"__name__": filename}
    exec(compile(src, filename, "exec"), ns)
    return ns


def draw_program(draw, st) -> ArrayProgram:
    b_shape = draw(st.sampled_from([(1, K), (K,)]))
    v_shape = draw(st.sampled_from([(K, 1), (K,), (K, 2)]))
    shapes = {"X": (N, D)}
    lines: list[str] = []
    names = itertools.count()

    def bind(expr: str, shape: tuple) -> str:
        name = f"t{next(names)}"
        lines.append(f"    {name} = {expr}")
        shapes[name] = shape
        return name

    def block(a: str, shape: tuple, kind: str) -> str:
        """A few lines as people write them (see the module docstring) -> a new name."""
        t = f"t{next(names)}"
        k = f"k{t[1:]}"
        two = len(shape) == 2
        if kind == "write":
            lines.append(f"    {t} = {a}.copy()")
            lines.append(draw(st.sampled_from(
                [f"    {t}[0] = {t}[-1] * c", f"    {t}[{t} < 0] = 0.0", f"    {t}[[0, 0]] = {t}[[1, -1]] * 2.0",
                 f"    {t}[1:] += np.tanh({t}[:-1])"]
                + ([f"    {t}[:, 0] += c * {t}[:, -1]", f"    {t}[1, :] = np.sin({t}[0, :])"] if two else []))))
        elif kind == "while":
            lines.extend([f"    {t} = {a} * 1.0", f"    {k} = 0",
                          f"    while np.sum({t} * {t}) > {draw(st.sampled_from([0.5, 2.0, 8.0]))} and {k} < 12:",
                          f"        {t} = {t} * 0.7 + 0.01 * np.tanh({t})", f"        {k} += 1"])
        elif kind == "break":
            lines.extend([f"    {t} = {a} * 1.0", f"    for {k} in range(5):",
                          f"        {t} = np.tanh({t}) * 1.2",
                          f"        if np.max(np.abs({t})) < {draw(st.sampled_from([0.3, 0.6, 0.9]))}:",
                          f"            break"])
        elif kind == "rows":
            lines.extend([f"    {t} = np.zeros({shape[1]})", f"    for {k} in {a}:",
                          f"        {t} = {t} + np.tanh({k}) * c"])
            shapes[t] = (shape[1],)
            return t
        elif kind == "append":       # a list grown by a loop over rows (kept as one array)
            lines.extend([f"    {k} = []", f"    for r{k} in {a}:", f"        {k}.append(np.tanh(r{k}) * c)",
                          f"    {t} = np.sum(np.stack({k}) ** 2, axis=0) + sum({k})"])
            shapes[t] = (shape[1],)
            return t
        elif kind == "shape":        # shape arithmetic (integer metadata) in np.zeros and slice bounds
            size = f"({a}.shape[0] + 1, {a}.shape[1])" if two else f"{a}.shape[0] + 1"
            if draw(st.booleans()):
                lines.extend([f"    {k} = np.zeros({size})", f"    {k}[1:] = {a}",
                              f"    {t} = {k}[:len({k}) - 1] * c + {k}[1:{a}.shape[0] + 1]"])
            else:                    # an index computed by integer arithmetic (a roll by one)
                lines.append(f"    {t} = {a}[(np.arange(len({a})) + 1) % {a}.shape[0]] * c + {a}")
        elif kind == "stack":
            lines.extend([f"    {k} = [{a} * w for w in (0.5, -1.0, 2.0)]",
                          f"    {t} = np.sum(np.stack({k}) ** 2, axis=0) + sum({k})"])
        shapes[t] = shape
        return t

    # the first layer: always X @ W (+ b), so that every program reads W
    h = bind("X @ W" if draw(st.booleans()) else "np.dot(X, W)", (N, K))
    if draw(st.booleans()):
        h = bind(f"{h} + b", (N, K))
    for _ in range(draw(st.integers(1, 5))):
        a = draw(st.sampled_from(sorted(shapes)))
        s = shapes[a]
        options = [op for op in SAME_SHAPE if op != "bias"]
        if s == (N, K):
            options += ["bias", "matmul_v", "matmul_v", "transpose_back"]
        if len(s) == 2:
            options += ["sum0", "mean1", "T", "slice", "rows", "append"]
        if s[0] > 1:
            options += ["write", "while", "break", "stack", "shape"]
        same = [n for n in shapes if shapes[n] == s and n != a]
        if same:
            options += ["mul", "add", "sub"]
        op = draw(st.sampled_from(options))
        if op in SAME_SHAPE:
            bind(SAME_SHAPE[op].format(a=a), s)
        elif op in ("write", "while", "break", "rows", "append", "stack", "shape"):
            block(a, s, op)
        elif op == "matmul_v":
            out = (N,) if v_shape == (K,) else (N, v_shape[1])
            bind(f"{a} @ v" if draw(st.booleans()) else f"np.dot({a}, v)", out)
        elif op == "transpose_back":
            bind(f"{a} @ W.T", (N, D))
        elif op == "sum0":
            keep = draw(st.booleans())
            bind(f"np.sum({a}, axis=0{', keepdims=True' if keep else ''})", (1, s[1]) if keep else (s[1],))
        elif op == "mean1":
            bind(f"{a}.mean(axis=1)", (s[0],))
        elif op == "T":
            bind(f"{a}.T", (s[1], s[0]))
        elif op == "slice":
            bind(f"{a}[1:, :]", (s[0] - 1, s[1])) if s[0] > 1 else bind(f"{a}[:, :]", s)
        else:
            b = draw(st.sampled_from(sorted(same)))
            bind(f"{a} {dict(mul='*', add='+', sub='-')[op]} {b}", s)
    last = f"t{next(names) - 1}"
    # often an output layer: an elementwise kernel that only `@ v` reads (s2sad runs a
    # cheap one with its matmul, and seeds a costly one's pullback with two factors)
    head = draw(st.sampled_from([None, "leaky", "where", "softplus", "tanh"]))
    if head and shapes[last] == (N, K):
        k = bind(SAME_SHAPE[head].format(a=last), (N, K))
        out = (N,) if v_shape == (K,) else (N, v_shape[1])
        last = bind(f"{k} @ v" if draw(st.booleans()) else f"np.dot({k}, v)", out)
    final = draw(st.sampled_from([f"np.sum({last} ** 2)", f"np.mean(np.tanh({last}))",
                                  f"np.sum(s2sad.broadcast(softplus, {last}))", f"np.mean({last} * {last}) * c"]))
    body = "\n".join(lines) + f"\n    return {final}\n"
    src = HEADER + f"def loss(W, b, v, c, X):\n{body}"
    program = ArrayProgram(src, b_shape, v_shape)
    if draw(st.integers(0, CONTAINER_SHARE - 1)) == 0:      # drawn last: the rest stays as before
        program.container = draw(st.sampled_from(CONTAINERS))
        program.container_source = container_source(program.container, body)
    return program


def reads(body: str, names: dict) -> str:
    """The body with each parameter name read as the container's entry, in place."""
    for name, read in names.items():
        body = re.sub(rf"\b{name}\b", read, body)
    return body


def container_source(kind: str, body: str) -> str:
    if kind == "dict":
        return HEADER + "def loss(p, v, c, X):\n" + reads(body, {"W": 'p["W"]', "b": 'p["b"]'})
    if kind in ("tuple", "list"):
        return HEADER + "def loss(params, v, c, X):\n    W, b = params\n" + body
    if kind == "helper":        # the dict passed whole to a helper of the module
        return HEADER + "def body_of(p, v, c, X):\n" + reads(body, {"W": 'p["W"]', "b": 'p["b"]'}) \
            + "\n\ndef loss(p, v, c, X):\n    return body_of(p, v, c, X)\n"
    if kind == "indexed":       # a list read by a loop counter whose range the call fixes
        return HEADER + "def loss(params, v, c, X):\n    W = params[0]\n    for i in range(1, len(params)):\n" \
            "        b = params[i]\n" + body
    if kind == "named":
        return HEADER + NAMEDTUPLE + "def loss(p, v, c, X):\n" + reads(body, {"W": "p.W", "b": "p.b"})
    return HEADER + 'def loss(p, c, X):\n    W, b = p["layer"]\n' + reads(body, {"v": 'p["v"]'})

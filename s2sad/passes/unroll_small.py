"""Small fixed shapes are scalars: an array program, for one set of argument shapes,
unrolled into a straight-line program of scalar operations (a `Graph`).

Where every array in the program has a shape fixed by the arguments' shapes and few
elements, the program for those shapes is a finite expression DAG: `x[1:]` is the nodes
x1 .. x9, an elementwise kernel is its scalar body once per element (broadcast), `np.sum`
a chain of additions. The second derivatives of that DAG (passes/small_second.py)
compile into one function (codegen/llvm_small.py): a Hessian in one call.

    unroll(program, kinds) -> Unrolled(graph, inputs, loss)    or raises NotSmall

What unrolls: parameters that are float arrays (their shapes given) or floats; `Const`
operands; a fused kernel (RunKernel, KernelSum: sum or mean) whose body is straight-line
scalar code of + - * / unary minus, `**` by a constant, the math functions of `UNARY`,
comparisons, if-expressions (a `select` node: both branches are computed, the value
and the slopes of the branch taken), abs, min, max, np.maximum and np.minimum (their
slopes as the rules table has them); the structural primitives of STRUCTURAL (indexing by constants, reshape, sum,
mean, dot, matmul...), evaluated by numpy itself on arrays of nodes. Anything else (a
loop, an if statement, and/or/not, a `**` by a variable, a primitive not listed,
an index read from a variable, a kernel with state or captures, an array of more than
MAX_ELEMENTS elements, a graph of more than MAX_NODES nodes, a result that is not one
number) raises NotSmall with the reason; the caller then takes its general path.

Invariants: a node's operands are older nodes (creation order is a topological order);
equal (op, operands, constant) make one node (hash-consing); operations on constants
are folded with Python's float arithmetic (IEEE double, as the machine code's); the
only identities used are x * 1.0, x / 1.0, 1.0 * x (exact) and x + 0.0, 0.0 + x (exact
but for the sign of a zero sum). A fused kernel's sum adds in numpy's pairwise order
(`numpy_sum`), so the program's value is np.sum's. No user code runs: only the plan's own program.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import gast
import numpy as np

from .. import array_prims
from ..kernel_text import unparse
from .arrayir import ArrayStmt, Const, KernelSum, is_kernel

MAX_ELEMENTS = 64       # elements of any one array of the program
MAX_NODES = 6_000       # nodes of the graph, derivatives included (its first call compiles: ~0.1 s a thousand)

# primitives numpy evaluates on arrays of nodes by + and * alone (no comparison, no branch)
STRUCTURAL = frozenset({"index", "reshape", "sum", "mean", "dot", "matmul", "transpose", "ravel", "flatten",
                        "squeeze", "expand_dims", "concatenate", "stack", "hstack", "vstack", "outer", "inner",
                        "swapaxes", "moveaxis", "trace", "vdot", "atleast_1d", "atleast_2d", "copy"})

# math functions the kernels call that the second-order pass differentiates (small_second.py)
UNARY = frozenset({"exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "sinh", "cosh", "expm1", "log1p", "atan",
                   "square", "reciprocal", "cbrt", "log2", "log10", "exp2"})
BINARY = {gast.Add: "add", gast.Sub: "sub", gast.Mult: "mul", gast.Div: "div"}
# comparisons: nodes of value 1.0 or 0.0 (no derivative), read by `select` (an if-expression)
COMPARE = {gast.Lt: "lt", gast.LtE: "le", gast.Gt: "gt", gast.GtE: "ge", gast.Eq: "eq", gast.NotEq: "ne"}
PIECEWISE = {"fabs": "abs", "maximum": "maximum", "minimum": "minimum"}     # math.<name> -> node


class NotSmall(Exception):
    """The program does not unroll: `reason` says what stopped it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Node:
    """One scalar of the unrolled program, as numpy's object arrays use it (+ - * /)."""

    __slots__ = ("graph", "id")

    def __init__(self, graph: "Graph", id: int):
        self.graph, self.id = graph, id

    def __add__(self, other): return self.graph.op("add", self, other)
    def __radd__(self, other): return self.graph.op("add", other, self)
    def __sub__(self, other): return self.graph.op("sub", self, other)
    def __rsub__(self, other): return self.graph.op("sub", other, self)
    def __mul__(self, other): return self.graph.op("mul", self, other)
    def __rmul__(self, other): return self.graph.op("mul", other, self)
    def __truediv__(self, other): return self.graph.op("div", self, other)
    def __rtruediv__(self, other): return self.graph.op("div", other, self)
    def __neg__(self): return self.graph.op("neg", self)
    def __pos__(self): return self

    def __bool__(self):
        raise TypeError("a value of the unrolled program has no truth value")

    def __repr__(self) -> str:
        return f"v{self.id}"


def needed_nodes(ops: list, roots) -> set[int]:
    """The nodes `roots` read, themselves included (ops[k] = (name, operand ids, const)):
    what a sweep, a program's text or its IR needs of the graph."""
    seen, stack = set(roots), list(roots)
    while stack:
        for a in ops[stack.pop()][1]:
            if a not in seen:
                seen.add(a)
                stack.append(a)
    return seen


class Graph:
    """The straight-line program: `ops[k]` (name, operand ids, constant) of node k."""

    def __init__(self) -> None:
        self.ops: list[tuple[str, tuple[int, ...], Any]] = []
        self.nodes: list[Node] = []
        self.index: dict[tuple, Node] = {}

    # ---- making nodes
    def _make(self, name: str, args: tuple[int, ...], const: Any = None) -> Node:
        key = (name, args, const)
        got = self.index.get(key)
        if got is not None:
            return got
        if len(self.ops) >= MAX_NODES:
            raise NotSmall(f"more than {MAX_NODES} scalar operations")
        node = Node(self, len(self.ops))
        self.ops.append(key)
        self.nodes.append(node)
        self.index[key] = node
        return node

    def const(self, value: float) -> Node:
        v = float(value)
        # (a key by the bits: -0.0 and 0.0 differ, NaN equals itself)
        return self._make("const", (), v.hex() if not math.isnan(v) else "nan")

    def input(self, param: int, offset: int) -> Node:
        return self._make("input", (), (param, offset))

    def value(self, node: Node) -> float | None:
        """The value of a constant node, else None."""
        name, _, c = self.ops[node.id]
        return (float.fromhex(c) if c != "nan" else math.nan) if name == "const" else None

    def node(self, x) -> Node:
        if isinstance(x, Node):
            return x
        if isinstance(x, (bool, int, float, np.integer, np.floating)) and not isinstance(x, np.complexfloating):
            return self.const(float(x))
        raise NotSmall(f"a value of type {type(x).__name__} where the unrolled program needs a number")

    def op(self, name: str, *operands, const: Any = None) -> Node:
        """Node `name`(operands), folded where every operand is a constant or an exact identity holds."""
        args = [self.node(a) for a in operands]
        values = [self.value(a) for a in args]
        if all(v is not None for v in values):
            folded = _fold(name, values, const)
            if folded is not None:
                return self.const(folded)
        if name in ("mul", "div") and values[1] == 1.0:
            return args[0]
        if name == "mul" and values[0] == 1.0:
            return args[1]
        if name == "mul" and values[0] == -1.0:
            return self.op("neg", args[1])
        if name == "add" and (values[1] == 0.0 or values[0] == 0.0):
            return args[0] if values[1] == 0.0 else args[1]
        if name == "powc" and const == 1.0:
            return args[0]
        if name == "powc" and const == 0.0:
            return self.const(1.0)
        return self._make(name, tuple(a.id for a in args), const)

    def select(self, test, a, b) -> Node:
        """`a if test else b` (test a node of value 1.0 / 0.0, or any number: true when not 0)."""
        t = self.value(self.node(test))
        if t is not None and not math.isnan(t):
            return self.node(a if t != 0.0 else b)
        return self.op("select", test, a, b)

    def power(self, base, exponent) -> Node:
        c = self.value(self.node(exponent))
        if c is None:
            raise NotSmall("a power with a variable exponent")
        return self.op("powc", base, const=c)


_EVAL_BUILTINS = {"__import__": __import__}    # all a structural expression's eval may reach
_COMPARE_FOLD = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
                 "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def _fold(name: str, v: list[float], const: Any) -> float | None:
    """The constant an operation on constants gives (Python's float arithmetic), or None
    where Python would raise (the node stays, the machine code gives IEEE's answer)."""
    try:
        if name == "add":
            return v[0] + v[1]
        if name == "sub":
            return v[0] - v[1]
        if name == "mul":
            return v[0] * v[1]
        if name == "div":
            return v[0] / v[1]
        if name == "neg":
            return -v[0]
        if name == "powc":
            r = v[0] ** const
            return r if isinstance(r, float) else None
        if name in _COMPARE_FOLD:
            return 1.0 if _COMPARE_FOLD[name](v[0], v[1]) else 0.0
        if name == "abs":
            return abs(v[0])
        return None
    except (ZeroDivisionError, OverflowError, ValueError):
        return None


@dataclass
class Unrolled:
    graph: Graph
    kinds: tuple            # per parameter: its shape (an array) or None (a float)
    loss: Node | None       # the result, one number (None: an array result, unroll(..., array=True))
    shape: tuple = ()       # the result's shape
    results: tuple = ()     # its elements' nodes, C order


def unroll(program, kinds: tuple, array: bool = False, free: tuple = ()) -> Unrolled:
    """`program` (an ArrayProgram) for parameters of `kinds` (see the module doc); `array`:
    its result may be an array of at least one element (a Jacobian's program); `free`:
    names of free data the program reads, inputs after the parameters (`kinds` theirs last)."""
    g = Graph()
    env: dict[str, np.ndarray] = {}
    for p, (name, kind) in enumerate(zip(list(program.params) + list(free), kinds)):
        if kind is None:
            env[name] = _obj(g.input(p, 0))
            continue
        arr = np.empty(kind, dtype=object)
        if arr.size > MAX_ELEMENTS:
            raise NotSmall(f"an argument of {arr.size} elements (more than {MAX_ELEMENTS})")
        for k in range(arr.size):
            arr.flat[k] = g.input(p, k)
        env[name] = arr
    for st in program.body:
        if not isinstance(st, ArrayStmt):
            raise NotSmall(f"a {'loop' if hasattr(st, 'var') else 'branch'}")
        value = _statement(g, st, env)
        if value.size > MAX_ELEMENTS:
            raise NotSmall(f"an array of {value.size} elements (more than {MAX_ELEMENTS})")
        env[st.target] = value
    if not isinstance(program.result, (str, Const)):
        raise NotSmall("a result that is not one value")
    result = _operand(g, program.result, env)
    if result.shape != () and not (array and result.size):
        raise NotSmall("a result that is not one number" if not array else "an empty result")
    results = tuple(g.node(v) for v in result.flat)
    return Unrolled(g, tuple(kinds), results[0] if result.shape == () else None, result.shape, results)


def _obj(x) -> np.ndarray:
    """x (a node, a number, an array of nodes) as an array of objects (0-d for one)."""
    if isinstance(x, np.ndarray) and x.dtype == object:
        return x
    out = np.empty(np.shape(x), dtype=object)
    if out.ndim == 0:
        out[()] = x
    else:
        out[...] = x
    return out


def _operand(g: Graph, a, env: dict) -> np.ndarray:
    if isinstance(a, Const):
        if not isinstance(a.value, (bool, int, float)):
            raise NotSmall("a constant that is not a number")
        return _obj(g.const(a.value))
    if a not in env:
        raise NotSmall(f"{a}, a value the program does not compute")
    return env[a]


def _statement(g: Graph, st: ArrayStmt, env: dict) -> np.ndarray:
    if st.target is None:
        raise NotSmall("a statement with no value")
    if is_kernel(st.op):
        return _kernel(g, st, env)
    prim = array_prims.of(st.op)
    if prim is None or prim.name not in STRUCTURAL or st.reads or st.forward is None:
        raise NotSmall(f"'{getattr(st.op, 'name', type(st.op).__name__)}', not unrolled")
    text = unparse(st.forward)
    scope = {a: env[a] for a in st.args if isinstance(a, str) and a in env}
    try:    # numpy on arrays of nodes: only + and * reach the nodes
        # (numpy's C code imports its helpers lazily, through the running frame's
        # builtins: without __import__ the first such call in a process raised KeyError)
        value = eval(text, {"np": np, "__builtins__": _EVAL_BUILTINS}, scope)  # noqa: S307 - the plan's own expression
    except (NameError, TypeError, ValueError, IndexError, AttributeError, NotSmall) as e:
        raise NotSmall(f"{text!r} does not unroll ({type(e).__name__})") from None
    if not isinstance(value, (Node, np.ndarray)) or (isinstance(value, np.ndarray) and value.dtype != object):
        if isinstance(value, np.ndarray) and value.size == 0:
            raise NotSmall("an empty array")
        raise NotSmall(f"{text!r} gives no value of the program")
    return _obj(value)


def _kernel(g: Graph, st: ArrayStmt, env: dict) -> np.ndarray:
    kernel = st.op.kernel
    prog = kernel.program
    if prog.captures or prog.state or getattr(prog, "custom_rules", None):
        raise NotSmall("a kernel with captures, state or rules of its own")
    operands = [_operand(g, a, env) for a in st.args]
    try:
        arrays = np.broadcast_arrays(*operands) if len(operands) > 1 else operands
    except ValueError:
        raise NotSmall("operands that do not broadcast") from None
    shape = arrays[0].shape if arrays else ()
    out = np.empty(shape, dtype=object)
    body = _Body(g, prog.functions)
    for idx in np.ndindex(shape):
        out[idx] = body.call(prog.entry, [a[idx] for a in arrays])
    if isinstance(st.op, KernelSum):
        if out.size == 0:
            raise NotSmall("a sum over no elements")
        total = numpy_sum(g, list(out.flat))
        return _obj(total if st.op.reduction == "sum" else g.op("div", total, float(out.size)))
    return out


def numpy_sum(g: Graph, terms: list):
    """The sum of `terms` (C order) in the order numpy's pairwise summation adds a
    contiguous float64 array (below 8 terms one chain; up to 128, eight running sums
    then the tail; beyond, two halves): the value is np.sum's bit for bit."""
    n = len(terms)
    if n < 8:
        total = terms[0]
        for t in terms[1:]:
            total = g.op("add", total, t)
        return total
    if n <= 128:
        r = list(terms[:8])
        i = 8
        while i < n - n % 8:
            r = [g.op("add", r[j], terms[i + j]) for j in range(8)]
            i += 8
        add = lambda a, b: g.op("add", a, b)     # noqa: E731
        total = add(add(add(r[0], r[1]), add(r[2], r[3])), add(add(r[4], r[5]), add(r[6], r[7])))
        for t in terms[i:]:
            total = g.op("add", total, t)
        return total
    half = n // 2 - (n // 2) % 8
    return g.op("add", numpy_sum(g, terms[:half]), numpy_sum(g, terms[half:]))


class _Body:
    """A kernel's scalar functions evaluated on nodes (straight-line code only)."""

    def __init__(self, g: Graph, functions: dict):
        self.g, self.functions = g, functions

    def call(self, name: str, args: list):
        fd = self.functions.get(name)
        if fd is None:
            raise NotSmall(f"a call of {name}")
        env = {p.id: a for p, a in zip(fd.args.args, args)}
        for s in fd.body:
            if isinstance(s, gast.Assign) and len(s.targets) == 1:
                target, value = s.targets[0], self.expr(s.value, env)
                if isinstance(target, gast.Name) and not isinstance(value, tuple):
                    env[target.id] = value
                elif isinstance(target, gast.Tuple) and isinstance(value, tuple) and len(value) == len(target.elts) \
                        and all(isinstance(e, gast.Name) for e in target.elts):
                    env.update({e.id: v for e, v in zip(target.elts, value)})
                else:
                    raise NotSmall("an assignment the unroller does not take")
            elif isinstance(s, gast.Return):
                if isinstance(s.value, gast.Tuple):
                    return tuple(self.expr(e, env) for e in s.value.elts)
                return self.expr(s.value, env)
            elif not isinstance(s, gast.Pass):
                raise NotSmall(f"a {type(s).__name__.lower()} in a kernel")
        raise NotSmall("a kernel function with no return")

    def expr(self, e, env: dict):
        g = self.g
        if isinstance(e, gast.Name):
            if e.id not in env:
                raise NotSmall(f"the name {e.id}")
            return env[e.id]
        if isinstance(e, gast.Constant) and isinstance(e.value, (bool, int, float)):
            return g.const(e.value)
        if isinstance(e, gast.BinOp):
            a, b = self.expr(e.left, env), self.expr(e.right, env)
            if isinstance(e.op, gast.Pow):
                return g.power(a, b)
            if type(e.op) in BINARY:
                return g.op(BINARY[type(e.op)], a, b)
        if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
            a = self.expr(e.operand, env)
            return g.op("neg", a) if isinstance(e.op, gast.USub) else a
        if isinstance(e, gast.Compare) and len(e.ops) == 1 and type(e.ops[0]) in COMPARE:
            return g.op(COMPARE[type(e.ops[0])], self.expr(e.left, env), self.expr(e.comparators[0], env))
        if isinstance(e, gast.IfExp):   # (both branches computed: the entry checks every value is finite)
            return g.select(self.expr(e.test, env), self.expr(e.body, env), self.expr(e.orelse, env))
        if isinstance(e, gast.Call) and not e.keywords:
            return self.call_expr(e, env)
        raise NotSmall(f"'{unparse(e)}' in a kernel")

    def call_expr(self, e, env: dict):
        f = e.func
        args = [self.expr(a, env) for a in e.args]
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and f.value.id == "math" \
                and f.attr in UNARY and len(args) == 1:
            return self.g.op(f.attr, args[0])
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) and f.value.id == "math" \
                and f.attr in PIECEWISE and len(args) == (1 if f.attr == "fabs" else 2):
            return self.g.op(PIECEWISE[f.attr], *args)
        if isinstance(f, gast.Name) and f.id == "float" and len(args) == 1:
            return args[0]
        if isinstance(f, gast.Name) and f.id == "abs" and len(args) == 1:
            return self.g.op("abs", args[0])
        if isinstance(f, gast.Name) and f.id in ("min", "max") and len(args) == 2:
            # Python's min(x, y) is y if y < x else x (max: y > x): the slope goes with the value
            x, y = args
            return self.g.select(self.g.op("lt" if f.id == "min" else "gt", y, x), y, x)
        if isinstance(f, gast.Name) and f.id in self.functions:
            return self.call(f.id, args)
        raise NotSmall(f"'{unparse(e)}' in a kernel")

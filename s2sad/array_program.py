"""A specialised derivative as one compiled call (issue 17, small batches): where every
site of a straight-line copy (array_special.py) is bound to compiled work, the copy's
C calls in order, made by one program launcher (codegen/llvm_program.py).

At n = 32 the MLP gradient's specialised copy makes five calls, each a Python frame, a
launcher or ctypes call, its reshapes and allocations (~4 us a site). The program
launcher makes the same C calls from one METH_FASTCALL call; a generated Python
wrapper allocates the results and one scratch block for the temporaries (fresh every
call: two threads never share them), calls it, and returns the results shaped as the
copy returns them.

`build(...)` lowers the recording run's trace of a specialised copy, site by site:
- a numpy product bound by array_special (`a @ b`, `a.T @ g`, `g @ b.T`): numpy's own
  BLAS call (blas_calls.product_call: the routine and arguments numpy's matmul loop
  uses; declined where numpy would take another path);
- a kept `kernel_matmul` / `kernel_matmul_vjp` (column_products): its seeded call's
  buffers (runtime._seeded_call's parts: empty, zeros, a -0.0 template's copy) and its
  launch stub's launcher (llvm_launch.decode: the driver and its C arguments);
- a `sum_grads` bound to a fused entry: the entry's driver called as the entry calls it
  (kernel.py's ABI: 1, n, the params, the seed, the gradients), all params contiguous
  arrays of the driver's dtype of one shape with 2 to ENTRY_MAX elements, the scale a
  constant of the code (an expression of literals and constant sites);
- `matmul_bias` where numpy multiplies: numpy's BLAS call, then the kernel's kept apply
  (runtime.keep_signature_call's parts: its launch stub's launcher);
- the compiled calls made once (llvm_launch.array_call's parts: the C function and its
  argument pattern): the column sum of `unbroadcast` to a bias row
  (reduce.kept_unbroadcast) and the softmax cross-entropy's row pass
  (rowsoftmax.kept_dot_log_softmax_bar; its row fusion switch is read by the wrapper at
  each call: off, the copy runs);
- a dense layer's stored partial where numpy multiplies (products below gemm.MIN_WORK,
  array_special binds them; s2sad's own block pass, Python between its C calls, is not
  lowered): `product_partials`, numpy's BLAS call then the kernel's kept store_partials
  launch (runtime.keep_stored_partials's parts); `lhs_bar_sums` with one product and one
  bias row input, `g @ w.T`'s BLAS call (w of one column: the outer product g * w.T by
  outer_kernel's kept apply), product_sums's compiled pass (llvm_mulsum: d
  times it and its column sums into a zeroed row; the row fusion switch read by the
  wrapper each call), `a.T @ g` (rhs) and `x.T @` the product's adjoint (nxt, which then
  stays a temporary), each numpy's BLAS call;
- `unit_vjp` whose check passed and `unbroadcast` to the same shape: the argument itself
  (no step); `mean_bar` of a constant of the code: the recording's filled array, copied
  fresh each call; `row_dot_like`'s read-only zeros: read for their shape alone;
- `broadcast_size` and a scalar dual on NOT_NEEDED: constants (no step).
A copy returning a value and gradients (passes/valuesplit): what its gradients need is
lowered, the value's lines run after it on the program's arrays (program_tail.py).
Arrays are tracked by the identity of the objects the recording run passed between
sites (arguments, whole C-contiguous results of lowered sites and their reshapes):
any other array reaching a site or the result, any site left to its full call, a name
assigned twice, a float argument not constant, a result that is not a fresh array of
the program, more than LAUNCH_MAX elements in an array (the GIL held throughout), or
S2SAD_LAUNCHERS=0: no program (`why`), the specialised copy as before.

Invariants: the program makes the C calls the copy's sites make, with the same
arguments on buffers initialised the same way, so its results are the copy's to the
bit -- and `build` checks it: the program runs once on the recording's arguments and
must reproduce the recording's results byte for byte, else it is refused. It holds no
user object: its table holds addresses of drivers, BLAS and kept read-only constants,
kept alive by its holder. It declines (NotImplemented: the wrapper runs the copy) an
argument that is not an exact aligned ndarray; the hot path's signature match vouches
for shapes, strides and dtypes.
Measured (the bench MLP at n = 32, one process, a loaded machine): a warm grad call
9.8 us, of which the wrapper 8.6 us, of which its allocations ~1.9 us; the specialised
copy it replaces 13.3 us. What is left is mostly the C calls themselves (two BLAS
products, three drivers). Not done: allocating in the compiled code (at most those
~1.9 us, at the price of numpy's C-API table in the IR). Rejected: tracing raw pointers
at the C level (an allocation's initial contents would be guessed, not known).
bench/fusion_rows.py's 3-layer MLP (tanh, relu, softmax; d = 32, hidden 64) at n = 32,
15 C calls (one process, program and copy alternated, medians of 15 x 1000 calls, load
~0.6): the program 34 us, the specialised copy it replaces 71 us (0.48x); the warm grad
call 36 us against main's 81 us (separate processes, alternated twice).
Not lowered: s2sad's own block pass (products of gemm.MIN_WORK or more: Python between
its C calls; their arrays then mostly exceed LAUNCH_MAX elements anyway).
"""
from __future__ import annotations

import ast
import ctypes
import re

import numpy as np

from . import blas_calls, program_tail, times_site
from .backends import llvm as llvm_backend
from .codegen import llvm_jit, llvm_launch, llvm_program
from .passes.rowfusion import SWITCH
from .productsums import mulsum_function

ALIGN = 64      # bytes between temporaries in the scratch block
ENTRY_MAX = 1 << 15     # codegen/llvm_entry.ENTRY_MAX (its import loads the IR lowering: test_cache; a test pins it)


class Decline(Exception):
    """Why a copy gets no program."""


def _flags_ok() -> bool:
    """numpy's flags are the int the program launcher reads (llvm_program.ARRAY_FLAGS), on live arrays."""
    a, b = np.zeros(3), np.zeros(6, np.uint8)[1:5].view(np.float32)
    return all(ctypes.c_int32.from_address(id(x) + llvm_program.ARRAY_FLAGS).value == x.flags.num
               for x in (a, b, a.T))


def _word(value, kind: str) -> int:
    """A constant as the table word of its kind."""
    if kind in "df":
        return int(np.float64(value).view(np.uint64))
    return int(value) & 0xFFFFFFFFFFFFFFFF


class _Builder:
    """Slots (arrays the program reads or writes), the objects of the recording that
    stand for them, and the steps (C calls)."""

    def __init__(self, args):
        self.slots: list[dict] = []
        self.refs: dict[int, tuple[int, tuple]] = {}
        self.steps: list[tuple[int, str, list]] = []    # (address, kinds, [("ptr", slot, offset) | ("word", w)])
        self.guards: list = []      # switches (an `.on`) that must be on at call time, else the copy
        self.keep: list = []        # what the program's table points into: kept with it
        self.alive: list = []
        for a in args:
            self.refs[id(a)] = (self._slot("arg", a.shape, a.dtype), a.shape)

    def _slot(self, kind, shape, dtype, init=None) -> int:
        if int(np.prod(shape)) > llvm_backend.LAUNCH_MAX:
            raise Decline(f"an array of {int(np.prod(shape))} elements (more than LAUNCH_MAX)")
        self.slots.append({"kind": kind, "shape": tuple(shape), "dtype": np.dtype(dtype), "init": init})
        return len(self.slots) - 1

    def new(self, init, shape, dtype) -> tuple[int, tuple]:
        return self._slot("new", shape, dtype, init), tuple(shape)

    def const(self, a: np.ndarray) -> tuple[int, tuple]:
        if a.flags.writeable or not a.flags.c_contiguous:
            raise Decline("a kept constant that is writeable or not contiguous")
        self.keep.append(a)
        return self._slot("const", a.shape, a.dtype, a), a.shape

    def ref(self, obj) -> tuple[int, tuple]:
        r = self.refs.get(id(obj))
        if type(obj) is not np.ndarray or r is None:
            raise Decline("an operand the program does not make (computed by Python, or not an array)")
        if obj.shape != r[1] or obj.dtype != self.slots[r[0]]["dtype"]:
            raise Decline("an operand whose shape or dtype is not its slot's")
        return r

    def bind(self, obj, ref) -> None:
        """`obj` (a site's result in the recording) is slot ref[0] seen as shape ref[1]."""
        s = self.slots[ref[0]]
        if type(obj) is not np.ndarray or obj.shape != tuple(ref[1]) or obj.dtype != s["dtype"] \
                or not obj.flags.c_contiguous or int(np.prod(ref[1])) != int(np.prod(s["shape"])):
            raise Decline("a site's result not shaped as its lowering's")
        self.refs[id(obj)] = (ref[0], tuple(ref[1]))
        self.alive.append(obj)      # (its id stays its own while the build runs; not kept after)

    def step(self, address: int, kinds: str, args: list) -> None:
        self.steps.append((address, kinds, args))


# ---------------------------------------------------------------- sites

def _product(b: _Builder, form: str, args, result) -> None:
    if form == "ab":
        x, y = args
        A, B, sx, sy = x, y, x, y
    else:
        g, x, y = args
        A, B = (x.T, g) if form == "rhs" else (g, y.T)
        sx, sy = (x, g) if form == "rhs" else (g, y)
    b.bind(result, _blas(b, A, B, b.ref(sx), b.ref(sy)))


def _blas(b: _Builder, A, B, ra, rb) -> tuple:
    """numpy's BLAS call for `A @ B` (A, B: the recording's operands, or arrays of their
    slots' shapes and strides), its operands the slots ra, rb: the ref of a new array."""
    call = blas_calls.product_call(A, B)
    if call is None:
        raise Decline("a product numpy does not hand to BLAS as blas_calls does")
    address, kinds, cargs = call
    out = b.new("empty", (A.shape[0],) + B.shape[1:], A.dtype)
    where = {"a": ("ptr", ra[0], 0), "b": ("ptr", rb[0], 0), "out": ("ptr", out[0], 0)}
    b.step(address, kinds, [where[c[0]] if isinstance(c, tuple) else ("word", _word(c, k))
                            for c, k in zip(cargs, kinds)])
    return out


def _seeded(b: _Builder, seeded, values: list) -> list:
    """A kept seeded call (runtime._seeded_call) on `values` (refs): its buffers and its
    launch; the refs of its results."""
    parts = getattr(seeded, "parts", None)
    if parts is None:
        raise Decline("a seeded call not kept")
    _, gparts, seed_last = parts
    grads, outs = [], []
    for buf, res in gparts:
        if buf[0] == "copy":
            ref = b.new(("copy", buf[1]), buf[1].shape, buf[1].dtype)
        else:
            ref = b.new(buf[0], buf[1], buf[2])
        grads.append(ref)
        if res is not None:         # a scalar param's float64 sum, astype(DT) then reshaped
            if np.dtype(res[1]) != b.slots[ref[0]]["dtype"]:
                raise Decline("a float32 kernel's scalar gradient (a cast after the driver)")
            ref = (ref[0], tuple(res[2]))
        outs.append(ref)
    _launch(b, parts[0], {"vals": values, "grads": grads,
                          "seed": values[-1] if seed_last else 1.0})
    return outs


def _launch(b: _Builder, stub, names: dict) -> None:
    """A launch stub's call (its compiled launcher's driver and C arguments), each Python
    expression it reads resolved by `names`: "vals" / "grads" lists of refs, "out" a ref,
    "seed" a ref or the constant seed."""
    launch = getattr(stub, "launch", None)
    decoded = llvm_launch.decode(launch[0]) if launch else None
    if decoded is None:
        raise Decline("a kept call without a compiled launcher")
    L, exprs = launch
    address, kinds, cargs = decoded
    steps = []
    for k, (src, word) in zip(kinds, cargs):
        if src is None:
            steps.append(("word", word))
            continue
        m = re.fullmatch(r"(vals|grads)\[(\d+)\]|(out|seed)", exprs[src])
        if m is None or (m.group(1) or m.group(3)) not in names:
            raise Decline(f"a launch reading {exprs[src]!r}")
        got = names[m.group(1)][int(m.group(2))] if m.group(1) else names[m.group(3)]
        if isinstance(got, float) and k in "df":
            steps.append(("word", _word(got, k)))
        elif isinstance(got, tuple) and k == "i":
            steps.append(("ptr", got[0], word))
        else:
            raise Decline(f"a launch reading {exprs[src]!r} of another kind")
    b.keep += [L, stub]
    b.step(address, kinds, steps)


def _kernel_matmul(b: _Builder, fast, args, kwargs, result) -> None:
    tag, seeded, ones, k, shaped = fast.parts
    kernel, kargs, w = args
    rw = b.ref(w)
    outs = _seeded(b, seeded, [b.ref(a) for a in kargs] + [b.const(ones), (rw[0], (1, k))])
    if result[1] is not None:
        raise Decline("kernel_matmul formed its values")
    b.bind(result[0], (outs[0][0], shaped))


def _kernel_matmul_vjp(b: _Builder, fast, args, kwargs, result) -> None:
    tag, seeded, n, k, w_grad = fast.parts
    kernel, kargs, active, w, _, out_bar, _ = args
    rw, rg = b.ref(w), b.ref(out_bar)
    outs = _seeded(b, seeded, [b.ref(a) for a in kargs] + [(rg[0], (n, 1)), (rw[0], (1, k))])
    if w_grad:
        outs[-1] = (outs[-1][0], w.shape)
    if len(outs) != len(result):
        raise Decline("kernel_matmul_vjp's results are not its seeded call's")
    for obj, ref in zip(result, outs):
        b.bind(obj, ref)


def _matmul_bias(b: _Builder, call, at, args, result) -> None:
    """numpy's product, then the kernel's kept apply on it and the bias row."""
    a, w, _, _, row = args
    _product(b, "ab", (a, w), result[0])
    parts = getattr(call, "parts", None)
    if parts is None:
        raise Decline("matmul_bias's apply is not a kept call")
    stub, shape, dtype = parts
    p, r = b.ref(result[0]), b.ref(row)
    out = b.new("empty", shape, dtype)
    _launch(b, stub, {"vals": [p, r] if at == 0 else [r, p], "out": out})
    b.bind(result[1], out)


def _product_partials(b: _Builder, call, args, result) -> None:
    """The unfused product_partials (array_special binds it where numpy multiplies):
    numpy's product, then the kernel's kept store_partials launch (seed 1.0)."""
    a, w, _, at, kargs, _ = args
    _product(b, "ab", (a, w), result[0])
    stub, shape, dtype, n = call.parts
    values = [b.ref(x) for x in kargs[:at] + (result[0],) + kargs[at + 1:]]
    out, grads = b.new("empty", shape, dtype), [b.new("empty", shape, dtype) for _ in range(n)]
    _launch(b, stub, {"vals": values, "out": out, "grads": grads, "seed": 1.0})
    if len(result[2]) != n:
        raise Decline("product_partials' partials are not its kept call's")
    for obj, ref in zip([result[1]] + list(result[2]), [out] + grads):
        b.bind(obj, ref)


def _lhs_bar_sums(b: _Builder, rhs: bool, nxt: bool, outer, args, nxt_operands, result) -> None:
    """The unfused lhs_bar_sums (array_special binds it where every product is numpy's):
    `g @ w.T`, product_sums's compiled pass (d times it, its column sums), then `a.T @ g`
    (rhs) and `x.T @` the full-shape adjoint (nxt), each numpy's BLAS call."""
    g, a, w, d, inputs = args[:5]
    shapes = [np.shape(x) for x in inputs]
    (n, k), dtype = a.shape, a.dtype
    if not SWITCH.on:
        raise Decline("the row fusion switch is off")
    if k < 2 or d.shape != (n, k) or d.dtype != dtype or not d.flags.c_contiguous \
            or shapes.count((n, k)) != 1 or len(shapes) != 2 or not set(shapes) - {(n, k)} <= {(1, k), (k,)}:
        raise Decline("lhs_bar_sums of inputs other than one product and one bias row")
    b.guards.append(SWITCH)
    rg, rw = b.ref(g), b.ref(w)
    if outer is None:
        lhs = _blas(b, g, w.T, rg, rw)
    else:               # w of one column: g * w.T, the outer kernel's kept apply (outer_kernel.py)
        stub, shape, dt = outer.parts
        if tuple(shape) != (n, k) or dt != dtype:
            raise Decline("an outer product not of the layer's shape")
        lhs = b.new("empty", (n, k), dtype)
        b.keep.append(outer)
        _launch(b, stub, {"vals": [rg, (rw[0], (1, k))], "out": lhs})
    f = mulsum_function(dtype)
    full, sums = b.new("empty", (n, k), dtype), b.new("zeros", (k,), dtype)
    b.keep.append(f)
    b.step(llvm_launch.function_address(f), "i" * 8,
           [("ptr", b.ref(d)[0], 0), ("ptr", lhs[0], 0), ("ptr", full[0], 0), ("ptr", sums[0], 0),
            ("word", n), ("word", k), ("word", k), ("word", k)])
    refs = [full if s == (n, k) else (sums[0], s) for s in shapes]
    if rhs:
        refs.append(_blas(b, a.T, g, b.ref(a), rg))
    if nxt:
        j, x, _ = nxt_operands
        t = np.empty((n, k), dtype)         # stands for the adjoint, never a result
        refs = refs[:j] + refs[j + 1:] + [_blas(b, x.T, t, b.ref(x), full)]
    if type(result) is not tuple or len(result) != len(refs):
        raise Decline("lhs_bar_sums' results are not its parts'")
    for obj, ref in zip(result, refs):
        b.bind(obj, ref)


def _array_call(b: _Builder, parts, args, result) -> None:
    """A compiled call made once (llvm_launch.array_call) on some of the site's arguments
    and a new array: reduce.kept_unbroadcast's column sum, rowsoftmax's row pass."""
    _, call, inputs, (shape, dtype, shaped), switch = parts
    if switch is not None:
        if not switch.on:
            raise Decline("the row fusion switch is off")
        b.guards.append(switch)
    cfunc, pattern = call.parts
    kinds = "".join(llvm_launch.KINDS.get(t, "?") for t in cfunc.argtypes)
    if set(kinds) != {"i"} or len(pattern) != len(kinds):
        raise Decline("a compiled call of another ABI")
    arrays = [b.ref(args[i]) for i in inputs]     # (an argument's strides are the signature's, in the pattern)
    out = b.new("empty", shape, dtype)
    arrays.append(out)
    b.keep.append(cfunc)
    b.step(llvm_launch.function_address(cfunc), kinds,
           [("ptr", arrays[p[1]][0], 0) if isinstance(p, tuple) else ("word", _word(p, "i")) for p in pattern])
    b.bind(result, (out[0], shaped))


def _sum_grads(b: _Builder, plan, fast, args, kwargs, result, constant) -> None:
    layouts, shape, dtype = fast
    kernel, kargs = args[0], args[1]
    active = kwargs.get("active", args[2] if len(args) > 2 else None)
    if not constant("scale", 3):
        raise Decline("sum_grads' scale is not a constant of the code")
    scale = kwargs.get("scale", args[3] if len(args) > 3 else 1.0)
    refs = [b.ref(a) for a in kargs]
    size = int(np.prod(shape))
    if any(l != "contig" for l in layouts) or not 2 <= size <= ENTRY_MAX \
            or any(a.shape != tuple(shape) or a.dtype != dtype or not a.flags.c_contiguous for a in kargs):
        raise Decline("sum_grads of scalar params or of arrays its entry does not take")
    kind = "d" if np.dtype(dtype) == np.float64 else "f"
    grads = [b.new("empty", shape, dtype) for _ in active]
    kinds = "ii" + "i" * len(refs) + kind + "i" * len(grads)
    if len(plan.cfunc.argtypes) != len(kinds):
        raise Decline("a sum driver of another ABI")
    address = llvm_launch.function_address(plan.cfunc)
    b.keep += [plan.cfunc, plan.driver]
    b.step(address, kinds, [("word", 1), ("word", size)] + [("ptr", r[0], 0) for r in refs]
           + [("word", _word(float(scale), kind))] + [("ptr", g[0], 0) for g in grads])
    if len(result) != len(grads):
        raise Decline("sum_grads' results are not its gradients")
    for obj, ref in zip(result, grads):
        b.bind(obj, ref)


# ---------------------------------------------------------------- the copy's code

def _calls(body: list) -> dict[str, ast.Call]:
    """Each site's call (array_special names every site once)."""
    return {n.func.id: n for st in body for n in ast.walk(st) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _constants(body: list, constant_sites: set) -> set:
    """The names the copy's statements `body` assign from literals, constant sites and
    other such names."""
    names: set = set()
    assigned: set = set()
    for stmt in body:
        if not isinstance(stmt, ast.Assign):
            continue
        targets = [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if assigned & set(targets):
            raise Decline("a name assigned twice")
        assigned |= set(targets)
        if _is_constant(stmt.value, names, constant_sites):
            names |= set(targets)
    return names


def _is_constant(e: ast.expr, names: set, constant_sites: set) -> bool:
    if isinstance(e, ast.Call):
        return isinstance(e.func, ast.Name) and e.func.id in constant_sites
    if isinstance(e, ast.Name):
        return e.id in names
    if isinstance(e, (ast.Constant, ast.operator, ast.unaryop, ast.expr_context)):
        return True
    if isinstance(e, (ast.BinOp, ast.UnaryOp, ast.Tuple, ast.Subscript, ast.Slice)):
        return all(_is_constant(c, names, constant_sites) for c in ast.iter_child_nodes(e))
    return False


def _lower(b: _Builder, body: list, trace, bound) -> None:
    calls = _calls(body)
    constant_sites = {site for site, fn in bound.items() if getattr(fn, "parts", (None,))[0] == "constant"}
    names = _constants(body, constant_sites)
    for site, args, kwargs, result in trace:
        fn = bound.get(site)
        parts = getattr(fn, "parts", None)
        if parts is None:
            name = site.split("__site")[0]
            raise Decline(f"{name} keeps its full call" if fn is None else f"{name}'s bound work is not lowered")
        tag = parts[0]
        if tag == "constant":
            continue
        if tag == "product":
            _product(b, parts[1], args, result)
        elif tag == "kernel_matmul":
            _kernel_matmul(b, parts[1], args, kwargs, result)
        elif tag == "kernel_matmul_vjp":
            _kernel_matmul_vjp(b, parts[1], args, kwargs, result)
        elif tag == "matmul_bias":
            _matmul_bias(b, parts[1], parts[2], args, result)
        elif tag == "product_partials":
            _product_partials(b, parts[1], args, result)
        elif tag == "lhs_bar_sums":
            _lhs_bar_sums(b, parts[1], parts[2], parts[3], args, kwargs.get("nxt"), result)
        elif tag == "array_call":
            _array_call(b, parts, args, result)
        elif tag == "times":        # an array times a number of the code (times_site.py)
            if kwargs or not _is_constant(calls[site].args[parts[1]], names, constant_sites):
                raise Decline("a product by a number not constant in the code")
            times_site.lower(b, args[1 - parts[1]], args[parts[1]], result)
        elif tag == "same":      # its result (or each of them): its argument itself
            if not all(r is args[parts[1]] for r in (result if type(result) is list else [result])):
                raise Decline(f"{site.split('__site')[0]} made a new array")
        elif tag == "opaque":    # read for its shape alone: never an operand (b.ref refuses it)
            continue
        elif tag == "filled":    # an array filled with a function of a constant: the recording's copy
            if kwargs or not _is_constant(calls[site].args[parts[1]], names, constant_sites) \
                    or type(result) is not np.ndarray or not result.flags.c_contiguous:
                raise Decline(f"{site.split('__site')[0]} of a value not constant in the code")
            template = result.copy()
            template.flags.writeable = False
            b.bind(result, b.new(("copy", template), template.shape, template.dtype))
        elif tag == "sum_grads":
            call = calls[site]

            def constant(key, at, call=call):
                e = next((k.value for k in call.keywords if k.arg == key), None)
                e = e if e is not None else (call.args[at] if len(call.args) > at else ast.Constant(1.0))
                return _is_constant(e, names, constant_sites)
            _sum_grads(b, parts[1], parts[2], args, kwargs, result, constant)
        else:
            raise Decline(f"{site.split('__site')[0]} is not lowered")


def build(special, node: ast.FunctionDef, trace: list, bound: dict, args: tuple, result):
    """(the program's wrapper, None), or (None, why not): `special` the copy, `node` its
    code (sites named), `trace` its recording run's site calls (site, args, kwargs,
    result) in order, `bound` what each site was bound to, `args` and `result` the
    recording run's."""
    try:
        if not llvm_backend.LAUNCHERS or not llvm_launch.layout_ok() or not _flags_ok():
            raise Decline("no compiled launchers in this process")
        body, value, arrays = node.body, None, result
        if type(result) is tuple and len(result) == 2 and type(result[1]) is tuple \
                and type(result[0]) is not np.ndarray:     # (a value and gradients: the value's tail)
            value = program_tail.split_tail(node, set(bound) | {t[0] for t in trace})
            if isinstance(value, str):
                raise Decline(value)
            body, arrays = value.prefix, result[1]
            trace = [t for t in trace if t[0] not in value.sites]
        if type(arrays) is not tuple or not all(type(r) is np.ndarray for r in arrays):
            raise Decline("its result is not a tuple of arrays")
        b = _Builder(args)
        _lower(b, body, trace, bound)
        outs = [b.ref(r) for r in arrays]
        if len({o[0] for o in outs}) != len(outs) or any(b.slots[o[0]]["kind"] != "new" for o in outs):
            raise Decline("a result that is an argument, a constant or another result")
        tail = None if value is None else _tail(b, value, node, trace, special, len(args))
        program = _wrapper(b, outs, special, len(args), tail)
        got = program(*args)
        if not program_tail.same_bits(got, result):
            raise Decline("its results on the recording's arguments were not the copy's, bit for bit")
        return program, None
    except Decline as e:
        return None, str(e)
    except Exception as e:  # noqa: BLE001 - an IR or binding failure: the copy, as before
        return None, f"no program launcher ({type(e).__name__}: {e})"


def _tail(b: _Builder, vt, node: ast.FunctionDef, trace: list, special, n: int) -> tuple:
    """(the value's tail as a function, where each of its inputs is: ("arg", i) or
    ("slot", s), an array the program makes, named): program_tail.py."""
    params = [a.arg for a in node.args.args]
    held = program_tail.bindings(vt.prefix, {t[0]: t[3] for t in trace})
    where = []
    for name in vt.inputs:
        if name in params:
            where.append(("arg", params.index(name)))
            continue
        obj = held.get(name)
        if type(obj) is not np.ndarray:
            raise Decline(f"the value reads {name}, which the program does not make")
        s, shape = b.ref(obj)
        slot = b.slots[s]
        if slot["kind"] not in ("arg", "new") or tuple(shape) != slot["shape"]:
            raise Decline(f"the value reads {name}, not an array the program makes as it is")
        where.append(("arg", s) if slot["kind"] == "arg" else ("slot", s))
    return program_tail.tail_function(vt, special.__globals__), where


def _wrapper(b: _Builder, outs: list, special, n: int, tail: tuple | None = None):
    """The Python around the program launcher: allocate, call, return (see the docstring);
    `tail`: the value's function and its inputs (_tail), called after the launcher."""
    results = {o[0]: j for j, o in enumerate(outs)}
    named = {s for kind, s in (tail[1] if tail else ()) if kind == "slot"}     # (read by the tail: not scratch)
    py: dict[int, tuple[int, int]] = {}     # slot -> (Python argument, byte offset)
    names = [f"a{i}" for i in range(n)]
    lines, ns, scratch = [], {"empty": np.empty, "zeros": np.zeros, "SPECIAL": special, "u8": np.uint8}, 0
    for i in range(n):
        py[i] = (i, 0)
    for s, slot in enumerate(b.slots):
        if slot["kind"] != "new":
            continue
        init, shape, dt = slot["init"], slot["shape"], slot["dtype"]
        if s in results:
            shape = tuple(outs[results[s]][1])
        if s not in results and s not in named and init == "empty":
            py[s] = ("scratch", scratch)
            scratch += -(-int(np.prod(shape)) * dt.itemsize // ALIGN) * ALIGN
            continue
        name = f"r{len(names)}"
        ns[f"S{s}"], ns[f"D{s}"] = shape, dt
        if init in ("empty", "zeros"):
            lines.append(f"{name} = {init}(S{s}, D{s})")
        else:
            ns[f"T{s}"] = init[1].reshape(shape)
            lines.append(f"{name} = T{s}.copy()")
        py[s] = (len(names), 0)
        names.append(name)
    if scratch:
        lines.append(f"s = empty({scratch}, u8)")
        names.append("s")
    at = {s: (len(names) - 1 if w[0] == "scratch" else w[0], w[1]) for s, w in py.items()}
    head = [llvm_launch.incref_address(), id(None), id(NotImplemented), len(names), id(np.ndarray)]
    words, structure = [], []
    for address, kinds, cargs in b.steps:
        words.append(address)
        srcs = []
        for k, c in zip(kinds, cargs):
            if c[0] == "word":
                words.append(c[1])
                srcs.append(None)
            elif b.slots[c[1]]["kind"] == "const":
                words.append(b.slots[c[1]]["init"].ctypes.data + c[2])
                srcs.append(None)
            else:
                where = at[c[1]]
                words.append(where[1] + c[2])
                srcs.append(where[0])
        structure.append((kinds, srcs))
    nargs = len(names)
    name = llvm_program.program_name(nargs, structure)
    address, code = llvm_jit.small_code(name, lambda: llvm_program.program_ir(nargs, structure), False)
    table = np.array([x & 0xFFFFFFFFFFFFFFFF for x in head + words], dtype=np.uint64)
    run = llvm_launch.fastcall_function(name, address, code, table, llvm_launch.Holder((code, tuple(b.keep))))
    ns["RUN"] = run
    user = ", ".join(names[:n])
    outs_py = [names[at[o[0]][0]] for o in outs]
    ret = "(" + ", ".join(outs_py) + ("," if len(outs_py) == 1 else "") + ")"
    if tail is not None:
        ns["TAIL"] = tail[0]
        ret = f"(TAIL({', '.join(names[i] if k == 'arg' else names[at[i][0]] for k, i in tail[1])}), {ret})"
    for j, switch in enumerate(b.guards):       # (read each call: a signature does not fix them)
        ns[f"G{j}"] = switch
        lines.insert(0, f"if not G{j}.on:\n        return SPECIAL({', '.join(names[:n])})")
    body = lines + [f"if RUN({', '.join(names)}) is NotImplemented:",
                    f"    return SPECIAL({user})",
                    f"return {ret}"]
    text = f"def program({user}):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(text, "<s2sad program>", "exec"), ns)
    program = ns["program"]
    program.text, program.steps = text, len(b.steps)
    return program

"""An array program's derivative specialised to one signature of its arguments: each call
site bound to the work it does for that signature (array_hot.py calls it).

At a minibatch, most of a generated derivative's time is its sites finding out again
what they found out last call: the signature of their operands, the call kept for it
(`runtime.kept_*`, `column_products.kept_*`), whether a product is numpy's. For a
derivative that is straight-line code (no loop, no branch: each site runs once, in
order) every operand's type, shape, dtype and strides follow from the arguments' ones,
so the hot path, given arguments of a signature seen before (all ndarrays: their
shapes, strides and dtypes), runs a copy of the derivative whose sites were bound, by
a recording run of that signature, to what they did:

- `matmul(a, b)`, `dot(a, b)`, `matmul_lhs_bar` / `matmul_rhs_bar` of a plain 2-D
  product or a matrix times a vector: numpy's `@` (np.dot) where `gemm.numpy_takes`
  says that is what the site runs for any operands of those shapes;
- `kernel_matmul`, `kernel_matmul_vjp`, `vjp`, `apply`, `kernel_rowsum(_vjp)` taken by
  a kept call: that call, with the site's own operands;
- `sum_grads` taken by a fused driver's entry (codegen/llvm_entry.py): the entry,
  which checks its arguments itself (NotImplemented: the site's full call);
- `broadcast_size`: its number;
- `matmul_bias` (passes/biasproducts) where numpy multiplies: numpy's `@` and the
  kernel's kept apply (the two sites it replaced);
- `product_partials` where numpy multiplies: `@` and the kernel's kept store_partials
  call; `lhs_bar_sums` where every product is numpy's (w of one column: the outer
  product's kept apply, outer_kernel.py): its full call, its parts for array_program;
- `unit_vjp` where its check passed: the seed, once per active input; `unbroadcast`
  to the same shape: the gradient itself, to a row of 2-D columns: the compiled
  column sum made once (reduce.kept_unbroadcast); `mean_bar` of a whole array's mean:
  its one number filled in; `row_dot_like`'s read-only zeros: the same array;
  `row_dot_log_softmax_bar` (z's adjoint) by the compiled row pass made once
  (rowsoftmax.kept_dot_log_softmax_bar); a scalar kernel's dual called on NOT_NEEDED
  alone (a loss's `-mean`: its partials read no value): its numbers. The compiled ones are called through a
  compiled launcher (codegen/llvm_launch) up to backends.llvm.LAUNCH_MAX elements,
  and check what a signature does not fix (alignment, the row fusion switch): without
  it, the site's full call.

Every other site keeps its full call. Invariants: a specialised site does what its full
call would do for that signature, bit for bit (the same kept call, entry or product);
a derivative with loops, branches, masks, or free data (read at call time: its
signature is not the arguments') is never specialised; a signature is recorded on its
second hot call (the calls before make the kept calls), at most MAX_SIGNATURES are kept
per derivative. Specialised copies hold no user object (kept calls, entries, numbers).
"""
from __future__ import annotations

import ast
import math
import threading
from typing import Any, Callable

import numpy as np

from . import array_program, column_products, fastpath, gemm, outer_kernel, program_tail, reduce, rowsoftmax, runtime
from .array_rules import plain_product
from .backends import choose
from .backends import llvm as llvm_backend
from .derivative_runtime import NOT_NEEDED, unformed
from .parsing import ast_parse
from .straight_line import scalar_kernel, straight_line
from .threadchoice import block_passes_reached, one_count_for_all
from .times_site import TIMES, specialise_times, times_number
from .zerograds import proven_zero, zero_worth

MAX_SIGNATURES = 16


class Specializer:
    """The specialised copies of one generated derivative `fn`, one per signature."""

    def __init__(self, fn: Callable, node: ast.FunctionDef, backend, plain: Callable | None = None,
                 split: Callable | None = None):
        self.fn, self.backend = fn, backend
        self.node = node
        # () -> (fn, node) of the derivative with no dense logits joined with the
        # cross-entropy's adjoint (passes/xentheads), or None: what a signature whose heads
        # run unfused (small batches) specialises, so that it keeps its sites' bindings
        self.plain = plain
        # () -> (fn, node) of value_and_grad written as grad's program then the value
        # (passes/valuesplit), or None: what a signature specialises where the copy makes no
        # program and the split copy does, with the same results on the recording's arguments
        self.split = split
        self.specs: dict = {}       # signature -> (specialised function, its results returned as they are)
        self.seen: set = set()      # signatures called once
        self._lock = threading.Lock()

    def specialised(self, args) -> bool:
        """Is there a copy for the signature of `args` (all ndarrays)? (for tests)"""
        return tuple(x for a in args for x in (a.shape, a.strides, a.dtype)) in self.specs

    def call(self, key, args, as_is: Callable | None = None):
        """fn(*args), recording a specialised copy at a signature's second call; `as_is(result,
        args)`: may the hot path return that copy's results unshaped (each gradient already an
        ndarray of its argument's dtype and shape: they follow from the signature)."""
        if key not in self.seen:
            with self._lock:
                if len(self.seen) >= 4 * MAX_SIGNATURES:
                    self.seen.clear()
                self.seen.add(key)
            return self.fn(*args)
        reached = block_passes_reached()
        special, result, program, why = self._record(args)
        threaded = block_passes_reached() > reached        # (a block pass large enough to be split)
        with self._lock:
            if len(self.specs) >= MAX_SIGNATURES:
                self.specs.clear()
            # (what the hot path runs, its results returned as they are, why no program (None when
            # one: array_program.py), the specialised copy)
            runs = program or (one_count_for_all(special, max(a.size for a in args)) if threaded else special)
            self.specs[key] = (runs, as_is is not None and as_is(result, args), why, special)
        return result

    def _record(self, args):
        """(the specialised copy, the result of the recording run of fn on args, its
        program, why none): of the plain derivative where fn's joined heads all ran
        unfused on args (xent_head declined them: the plain copy's sites bind, and a small
        batch's may make one program), else of fn."""
        heads: list = []
        got = self._recorded(self.fn, self.node, args, heads)
        if heads and not any(heads) and self.plain is not None:
            plain = self.plain()
            if plain is not None:
                got = self._recorded(*plain, args, None)
        if got[2] is None and self.split is not None and max(a.size for a in args) <= llvm_backend.LAUNCH_MAX:
            split = self.split()        # (larger arguments: array_program refuses, so not run at all)
            if split is not None:
                split[0](*args)     # (its first call makes its kept calls, as fn's first did)
                made = self._recorded(*split, args, None)
                if made[2] is not None and program_tail.same_bits(made[1], got[1]):
                    return made
        return got

    def _recorded(self, fn: Callable, node: ast.FunctionDef, args, heads: list | None):
        """_record's work on one derivative; `heads`: each head_logits call's joined or not."""
        ns = dict(fn.__globals__)
        full_head = ns.get("head_logits")
        if heads is not None and full_head is not None:
            def head_logits(*a, **kw):
                p, z = full_head(*a, **kw)
                heads.append(unformed(z))
                return p, z
            ns["head_logits"] = head_logits
        ns.setdefault(TIMES, times_number)
        duals = {n for n, v in ns.items() if scalar_kernel(v)}
        node = _SiteNames((set(SPECIALIZERS) & set(ns)) | duals).visit(_copy(node))
        sites = node.sites
        bound: dict[str, Callable] = {}
        trace: list = []
        for site, name in sites.items():
            ns[site] = _recorder(ns[name], SPECIALIZERS.get(name, _not_needed_dual), self.backend, site, bound, trace)
        module = ast.Module(body=[node], type_ignores=[])
        ast.fix_missing_locations(module)
        exec(compile(module, f"<s2sad specialised {self.node.name}>", "exec"), ns)
        special = ns[self.node.name]
        result = special(*args)
        for site, name in sites.items():   # each site: what it did, or its full call
            ns[site] = bound.get(site) or ns[name]
        if full_head is not None:
            ns["head_logits"] = full_head
        program, why = array_program.build(special, node, trace, bound, args, result)
        return special, result, program, why


def _not_needed_dual(full, backend, args, kwargs, result):
    """A scalar kernel's dual called on NOT_NEEDED alone (`f__dual(not_needed)[1:]`: its
    partials do not read the value): its numbers, the same every call (a kernel's dual is
    a pure function of its arguments)."""
    if kwargs or not args or not all(a is NOT_NEEDED for a in args) or type(result) is not tuple \
            or not all(isinstance(v, float) for v in result):
        return None

    def dual(*args):
        return result
    dual.parts = ("constant", result)
    return dual


def _copy(node: ast.FunctionDef) -> ast.FunctionDef:
    return ast_parse(ast.unparse(node)).body[0]


class _SiteNames(ast.NodeTransformer):
    """Each call of a specialisable name renamed to its own site (`matmul__site3`)."""

    def __init__(self, names: set):
        self.names = names
        self.sites: dict[str, str] = {}

    def visit_Assign(self, node: ast.Assign):
        # `x = a * b` (names): a call of times_number, a site (array_program lowers an
        # array times a number of the code: logistic regression's `_1_bar = d3_d1 * _3_bar`)
        v = node.value
        if TIMES in self.names and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(v, ast.BinOp) and isinstance(v.op, ast.Mult) \
                and isinstance(v.left, ast.Name) and isinstance(v.right, ast.Name):
            node.value = ast.Call(func=ast.Name(id=TIMES, ctx=ast.Load()), args=[v.left, v.right], keywords=[])
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.names:
            site = f"{node.func.id}__site{len(self.sites)}"
            self.sites[site] = node.func.id
            node.func = ast.Name(id=site, ctx=ast.Load())
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.sites = self.sites
        return node


def _recorder(full: Callable, specializer: Callable, backend, site: str, bound: dict, trace: list) -> Callable:
    def record(*args, **kwargs):
        result = full(*args, **kwargs)
        trace.append((site, args, kwargs, result))     # (array_program lowers the sites in this order)
        special = specializer(full, backend, args, kwargs, result)
        if special is not None:
            bound[site] = special
        return result
    return record


# ---------------------------------------------------------------- one per site kind
#
# specializer(full, backend, args, kwargs, result) -> a function called as the site
# calls its name, doing what `full` did for this signature; or None (the full call).

def _matmul(full, backend, args, kwargs, result):
    if kwargs or len(args) != 2 or not gemm.numpy_takes(args[0], args[1], backend):
        return None
    return _numpy_matmul


def _numpy_matmul(a, b):
    return a @ b


_numpy_matmul.parts = ("product", "ab")     # (array_program lowers these to numpy's BLAS call)


def _dot(full, backend, args, kwargs, result):
    if kwargs or len(args) != 2 or not gemm.numpy_takes(args[0], args[1], backend):
        return None
    return np.dot


def _lhs_bar(full, backend, args, kwargs, result):
    if kwargs or len(args) != 3 or not plain_product(*args):
        return None
    g, a, b = args
    return _lhs_numpy if gemm.numpy_takes(g, b.T) else None


def _lhs_numpy(g, a, b):
    return g @ b.T


_lhs_numpy.parts = ("product", "lhs")


def _rhs_bar(full, backend, args, kwargs, result):
    if kwargs or len(args) != 3:
        return None
    g, a, b = args
    if plain_product(g, a, b) and gemm.numpy_takes(a.T, g):
        return _rhs_numpy
    # a matrix times a vector (X @ w): its vector's adjoint is numpy's a.T @ g
    vector = all(type(x) is np.ndarray for x in args) and a.ndim == 2 and b.ndim == 1 and g.ndim == 1
    return _rhs_numpy if vector and a.shape == (g.shape[0], b.shape[0]) else None


def _rhs_numpy(g, a, b):
    return a.T @ g


_rhs_numpy.parts = ("product", "rhs")


def _kernel_matmul(full, backend, args, kwargs, result):
    if kwargs or len(args) != 3 or result[1] is not None:
        return None
    kernel, kargs, w = args
    fast = column_products.kept_matmul(kernel, kargs, w, backend)
    if fast is None:
        return None

    def kernel_matmul(kernel, args, w):
        return fast(args, w), None
    kernel_matmul.parts = ("kernel_matmul", fast)     # (array_program lowers it)
    return kernel_matmul


def _kernel_matmul_vjp(full, backend, args, kwargs, result):
    if kwargs or len(args) != 7 or args[6] is not None:
        return None
    kernel, kargs, active, w, w_grad, out_bar, _ = args
    fast = column_products.kept_matmul_vjp(kernel, kargs, active, w, w_grad, out_bar, backend)
    if fast is None:
        return None

    def kernel_matmul_vjp(kernel, args, active, w, w_grad, out_bar, values):
        return fast(args, w, out_bar)
    kernel_matmul_vjp.parts = ("kernel_matmul_vjp", fast)
    return kernel_matmul_vjp


def _entry(backend, args, kwargs, value: str):
    """(the fused driver's entry, its plan, the operands' layouts) for a sum_grads or
    sum_dual site's operands (the plan its full call takes), or None."""
    if not choose(backend).fast_path or len(args) < 2 or set(kwargs) - {"active", "scale"}:
        return None
    kernel, kargs = args[0], args[1]
    active = kwargs.get("active", args[2] if len(args) > 2 else None)
    fast = runtime.fast_layouts(kargs)
    if not active or fast is None:
        return None
    plan = fastpath.fast_plan(kernel, active, fast[0], fast[2], value)
    return (plan.entry, plan, fast) if plan.entry else None


def _sum_dual(full, backend, args, kwargs, result):
    """A value line's sum_dual (value_and_grad split's tail): the entry its full call made."""
    got = _entry(backend, args, kwargs, "sum")
    active = kwargs.get("active", args[2] if len(args) > 2 else None)
    if got is None or zero_worth(got[2][1]) and proven_zero(args[0], active):
        return None         # (its full call: zeros for partials proven zero, zerograds)
    entry = got[0]

    def sum_dual(kernel, args, active, scale=1.0):
        r = entry(*args, scale, False)
        return (r[0], list(r[1:])) if r is not NotImplemented else full(kernel, args, active, scale)
    return sum_dual


def _sum_grads(full, backend, args, kwargs, result):
    got = _entry(backend, args, kwargs, "none")
    if got is None:
        return None
    entry, plan, fast = got

    def sum_grads(kernel, args, active, scale=1.0):
        # the entry takes an exact float (a Real from a scalar dual is one, as a number);
        # it declines what its driver was not made for
        r = entry(*args, scale if type(scale) is float else float(scale), False)
        return list(r[1:]) if r is not NotImplemented else full(kernel, args, active, scale)
    sum_grads.parts = ("sum_grads", plan, fast)
    return sum_grads


def _broadcast_size(full, backend, args, kwargs, result):
    if type(result) is not int:
        return None

    def broadcast_size(*args):
        return result
    broadcast_size.parts = ("constant", result)
    return broadcast_size


def _apply(full, backend, args, kwargs, result):
    if kwargs or len(args) != 2 or not choose(backend).fast_path:
        return None
    kernel, kargs = args
    call = runtime.kept_apply(kernel, kargs)
    if call is None or runtime.fast_layouts(kargs) is not None:   # (that one is apply's fast path)
        return None

    def apply(kernel, args):
        return call(args)
    return apply


def _matmul_bias(full, backend, args, kwargs, result):
    """`_1, z = matmul_bias(a, w, kernel, at, row)` where numpy multiplies (a small
    batch): numpy's product and the kernel's apply, as the two sites it stands for bind."""
    if kwargs or len(args) != 5 or not choose(backend).fast_path or not gemm.numpy_takes(args[0], args[1], backend):
        return None
    _, _, kernel, at, row = args
    kargs = (result[0], row) if at == 0 else (row, result[0])
    call = runtime.kept_apply(kernel, kargs)
    if call is None or runtime.fast_layouts(kargs) is not None:    # apply's own fast path

        def call(kargs):
            return runtime.apply(kernel, kargs, backend)

    def matmul_bias(a, w, kernel, at, row):
        p = a @ w
        return p, call((p, row) if at == 0 else (row, p))
    matmul_bias.parts = ("matmul_bias", call, at)
    return matmul_bias


def _product_partials(full, backend, args, kwargs, result):
    """product_partials where numpy multiplies (a product below gemm.MIN_WORK: the
    unfused path, `a @ w` then the kernel's kept store_partials call): those two."""
    if set(kwargs) - {"from_out"} or len(args) != 6 or not choose(backend).fast_path \
            or not gemm.numpy_takes(args[0], args[1], backend) or type(result[2]) is not list:
        return None
    a, w, kernel, at, kargs, active = args
    full_args = kargs[:at] + (result[0],) + kargs[at + 1:]
    sig = runtime.plain_signature(list(full_args))
    call = kernel.kept.get(("store", active, sig)) if sig is not None else None
    if call is None or getattr(call, "parts", None) is None:
        return None

    def product_partials(a, w, kernel, at, args, active, from_out=False):
        p = a @ w
        h, partials = call(args[:at] + (p,) + args[at + 1:])
        return p, h, partials
    product_partials.parts = ("product_partials", call)
    return product_partials


def _lhs_bar_sums(full, backend, args, kwargs, result):
    """lhs_bar_sums where every product is numpy's and d is a stored array (the unfused
    path: product_sums's compiled pass on `g @ w.T`, then `a.T @ g`, then nxt's
    `x.T @ t`): the full call, its parts for array_program (which guards the row fusion
    switch product_sums reads)."""
    if set(kwargs) - {"rhs", "nxt"} or len(args) != 5 or not choose(backend).fast_path:
        return None         # (the generated call: five operands, its flags by keyword)
    g, a, w, d, inputs = args
    rhs, nxt = kwargs.get("rhs", False), kwargs.get("nxt")
    if type(d) is not np.ndarray or (rhs and not gemm.numpy_takes(a.T, g, backend)):
        return None
    outer = None        # w of one column: a's adjoint is the outer product g * w.T (array_rules._rank1)
    if plain_product(g, a, w):
        if not gemm.numpy_takes(g, w.T, backend):
            return None
    elif type(a) is np.ndarray and type(w) is np.ndarray and a.ndim == 2 and w.ndim == 2 and a.shape[0] != 1 \
            and w.shape[1] == 1 and np.shape(g) == (a.shape[0], 1):
        outer = outer_kernel.kept_outer(g, w.T, backend)
    if not plain_product(g, a, w) and outer is None:
        return None
    if nxt is not None:
        at, x, v = nxt
        if not (isinstance(at, int) and 0 <= at < len(inputs) and np.shape(inputs[at]) == a.shape
                and plain_product(a, x, v) and gemm.numpy_takes(x.T, a, backend)):
            return None

    def lhs_bar_sums(*args, **kwargs):
        return full(*args, **kwargs)
    lhs_bar_sums.parts = ("lhs_bar_sums", bool(rhs), nxt is not None, outer)
    return lhs_bar_sums


def _vjp(full, backend, args, kwargs, result):
    if kwargs or len(args) != 4 or not choose(backend).fast_path or not args[2]:
        return None
    kernel, kargs, active, out_bar = args
    call = runtime.kept_vjp(kernel, [*kargs, out_bar], active)
    if call is None:
        return None

    def vjp(kernel, args, active, out_bar):
        return call([*args, out_bar])
    return vjp


def _kernel_rowsum(full, backend, args, kwargs, result):
    if kwargs or len(args) != 7 or result[1] is not None:
        return None
    kernel, kargs, _, axis, keepdims, mean, _ = args
    kept = column_products.kept_row_sums(kernel, kargs, axis, keepdims, mean, backend)
    if kept is None:
        return None

    def kernel_rowsum(kernel, args, active, axis, keepdims, mean, mode):
        return kept(args), None
    return kernel_rowsum


def _kernel_rowsum_vjp(full, backend, args, kwargs, result):
    if kwargs or len(args) != 8 or args[7] is not None:
        return None
    kernel, kargs, active, axis, keepdims, mean, out_bar, _ = args
    kept = column_products.kept_row_sums_vjp(kernel, kargs, active, axis, keepdims, mean, out_bar, backend)
    if kept is None:
        return None

    def kernel_rowsum_vjp(kernel, args, active, axis, keepdims, mean, out_bar, state):
        return kept(args, out_bar)
    return kernel_rowsum_vjp


def _unit_vjp(full, backend, args, kwargs, result):
    """unit_vjp where its check passed (the seed itself for each active input: the check
    reads types, dtypes and shapes only): that list."""
    if kwargs or len(args) != 4 or not isinstance(result, list) or not result \
            or not all(r is args[3] for r in result):
        return None
    n = len(result)

    def unit_vjp(kernel, args, active, out_bar):
        return [out_bar] * n
    unit_vjp.parts = ("same", 3)      # (its results: argument 3 itself)
    return unit_vjp


def _unbroadcast(full, backend, args, kwargs, result):
    if kwargs or len(args) != 2:
        return None
    return reduce.kept_unbroadcast(args[0], args[1], _short_max())


def _mean_bar(full, backend, args, kwargs, result):
    """mean_bar of a whole array's mean (axis None): np.full of its one number / the
    count, as sum_bar makes it."""
    g, x = args[0], args[1] if len(args) > 1 else None
    if len(args) != 2 or set(kwargs) - {"axis", "keepdims"} or kwargs.get("axis") is not None \
            or type(x) is not np.ndarray or np.asarray(g).size != 1:
        return None
    shape, count = x.shape, math.prod(x.shape)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)

    def mean_bar(g, x, axis=None, keepdims=False):
        out = np.empty(shape, dtype)      # (np.full's fill, its cast: the same bits, without its Python)
        out.fill(np.asarray(g) / count)
        return out
    mean_bar.parts = ("filled", 0)      # (a function of argument 0 alone)
    return mean_bar


def _row_dot_like(full, backend, args, kwargs, result):
    """row_dot_like where it made read-only zeros with zero strides (from z's and y's
    shapes and dtypes only): those zeros, the same array every call (nothing can write it)."""
    if type(result) is not np.ndarray or result.flags.writeable or any(result.strides) \
            or not isinstance(result.base, bytes):
        return None

    def row_dot_like(z, y, axis=None, keepdims=False):
        return result
    row_dot_like.parts = ("opaque",)    # (read for its shape only)
    return row_dot_like


def _row_dot_log_softmax(full, backend, args, kwargs, result):
    if set(kwargs) - {"axis", "keepdims"}:
        return None
    return rowsoftmax.kept_dot_log_softmax(args, kwargs.get("axis"), bool(kwargs.get("keepdims")), backend,
                                           _short_max())


def _row_dot_log_softmax_bar(full, backend, args, kwargs, result):
    if set(kwargs) - {"axis", "keepdims"}:
        return None
    return rowsoftmax.kept_dot_log_softmax_bar(args, kwargs.get("axis"), backend, _short_max())


def _short_max() -> int:
    """The most elements a bound compiled call runs through a launcher (none with
    S2SAD_LAUNCHERS=0, as for the kernels' launches)."""
    return llvm_backend.LAUNCH_MAX if llvm_backend.LAUNCHERS else -1


SPECIALIZERS: dict[str, Callable] = {
    "unit_vjp": _unit_vjp, "unbroadcast": _unbroadcast, "mean_bar": _mean_bar, "row_dot_like": _row_dot_like,
    "row_dot_log_softmax": _row_dot_log_softmax, "row_dot_log_softmax_bar": _row_dot_log_softmax_bar,
    TIMES: specialise_times,
    "matmul": _matmul, "dot": _dot, "matmul_lhs_bar": _lhs_bar, "matmul_rhs_bar": _rhs_bar,
    "kernel_matmul": _kernel_matmul, "kernel_matmul_vjp": _kernel_matmul_vjp, "sum_grads": _sum_grads,
    "sum_dual": _sum_dual,
    "broadcast_size": _broadcast_size, "apply": _apply, "vjp": _vjp, "matmul_bias": _matmul_bias,
    "kernel_rowsum": _kernel_rowsum, "kernel_rowsum_vjp": _kernel_rowsum_vjp,
    "product_partials": _product_partials, "lhs_bar_sums": _lhs_bar_sums,
}


def signature_text(names: list[str]) -> str:
    """The expression of a call's signature, every argument an ndarray: (shape, strides,
    dtype) of each."""
    return "(" + ", ".join(f"{a}.shape, {a}.strides, {a}.dtype" for a in names) + ",)"


def specializer_for(c, fn: Callable, text: str, name: str, backend, plain: Callable | None = None,
                    split: Callable | None = None) -> Any:
    """The Specializer of `fn` (the generated function `name` of `text`, plan c), or None
    where it is not straight-line code or reads free data. `plain`: () -> (fn, text) of
    the same derivative without joined heads (passes/xentheads), or None once it cannot
    be made, for a text that has them; `split`: () -> (fn, text) of value_and_grad as
    grad's program then the value (passes/valuesplit), or None where that does not apply."""
    if getattr(c.program, "free", None):
        return None
    node = straight_line(text, name, fn.__globals__, SPECIALIZERS)
    if node is None:
        return None

    def node_of(made: Callable) -> Callable:
        def made_node():
            got = made()
            if got is None:
                return None
            m_fn, m_text = got
            m_node = straight_line(m_text, name, m_fn.__globals__, SPECIALIZERS)
            return None if m_node is None else (m_fn, m_node)
        return made_node
    return Specializer(fn, node, backend, node_of(plain) if plain is not None and "head_logits(" in text else None,
                       node_of(split) if split is not None else None)

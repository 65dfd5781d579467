"""Batched tangents: the forward-over-reverse program (hvp_sweep.py) and the tangent
program (tangent_sweep.py) of an array program with every tangent carrying a leading
batch axis of K directions, so one sweep gives K columns of a Hessian or a Jacobian
(higher.hessian, jacfwd of a grad or of an array program) instead of K sweeps.

    def loss__hvp(x, x_dot):            # x_dot: (K,) + x.shape, the identity for a Hessian
        _1 = x[1:]
        _1_dot = bindex(x_dot, np.s_[1:])
        ...
        (__1_g_dot,), (__1_g,) = bseeded_grads(sum_grads, loss__seeded_tangent, ...)

What each statement becomes (batch_rules.py gives the helpers; primals and adjoints
have no batch axis, tangents and adjoints' tangents have one):
- an elementwise kernel: its value as before; its tangent from its tangent kernel over
  the primals and the tangents padded to the kernel's rank (a sum's: summed per row);
  its adjoint and the adjoint's tangent from one pass of its seeded tangent kernel with
  the active inputs given a batch axis (bseeded_grads);
- indexing, sum and mean: the same with the batch axis in front (an axis shifted by one);
- any other primitive with a per-operand jvp (linear in the tangent), and the tangents
  of its VJP (linear in the seed's tangent, or the other factor's, or prod's): the same
  text applied row by row (brows).
- a kernel on known scalars: its partials times the batched tangents; forward over
  reverse keeps its second partials, from its tangent dual once per active input.
A statement with none of these forms (a loop, an `if`, an in-place write or append, a
row-fused op, a primitive with no rule) raises NotBatched at
generation time, with the line; the caller then builds the Jacobian column by column
with the unbatched program, which refuses, located, what it cannot take. So a batched
program exists only where every statement has its batched form: row b of each result
is what the unbatched program gives along direction b.
"""
from __future__ import annotations

import ast
import weakref

from .. import array_prims
from ..array_prims.prim import kw
from ..frontend import location_of, shown_location as _short
from ..kernel_text import unparse
from ..parsing import ast_parse
from .adjoint_text import param_texts, text_of, tuple_text
from .arrayir import KernelSum, ListAppend, LoopExit, RunKernel, SetItem, is_kernel
from .array_jvp import scalar_check
from .dead_lines import drop_dead
from .hvp_reverse import SECOND_ORDER
from .hvp_sweep import ForwardOverReverse
from .linemap import compile_located
from .tangent_sweep import TangentSweep

VECTORIZED = ("index", "sum", "mean")   # primitives with a batched form of their own (the rest: row by row)


class NotBatched(Exception):
    """The program has a statement with no batched form: `reason` says which, where."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class BatchedForward:
    """The forward sweep with batched tangents (a mixin before TangentSweep)."""

    def not_batched(self, st, what: str):
        node = getattr(st, "node", None)
        where = f" ({_short(location_of(st.ctx.filename, node))})" if node is not None else ""
        raise NotBatched(f"{what}{where}")

    def loop(self, st, ind: str, out: list) -> None:
        self.not_batched(st, "a loop")

    def branch(self, st, ind: str, out: list) -> None:
        self.not_batched(st, "an if")

    def stmt(self, st, ind: str, out: list) -> None:
        if isinstance(st.op, LoopExit):
            self.not_batched(st, "a while loop")
        if not self.is_active(st.target):
            super().stmt(st, ind, out)
            return
        if is_kernel(st.op):
            self.batched_kernel(st, ind, out)
            return
        if isinstance(st.op, (SetItem, ListAppend)):
            self.not_batched(st, "an in-place write or append")
        prim = array_prims.of(st.op)
        if prim is None or (prim.jvp is None and prim.jvps is None):
            self.not_batched(st, f"'{st.op.name}', which has no forward rule")
        args = [text_of(a) for a in st.args]
        params = param_texts(st)
        line = prim.forward(args, params) if prim.forward else None
        out.append(f"{ind}{st.target} = {line if line is not None else _unparsed(st)}")
        out.append(f"{ind}{self.dot(st.target)} = {self.batched_jvp(prim, st, args, params)}")

    def row(self) -> str:
        return self.namer.fresh("_row")

    def batched_jvp(self, prim, st, args: list, params: dict) -> str:
        active = [i for i, a in enumerate(st.args) if self.is_active(a)]
        if prim.name == "index":
            return f"bindex({self.dot(st.args[0])}, {params['index']})"
        if prim.name in ("sum", "mean") and len(st.args) == 1:
            return (f"breduce({prim.name!r}, {self.dot(st.args[0])}, np.ndim({args[0]})"
                    f"{kw(params, 'axis', 'keepdims')})")
        if prim.jvps is not None:   # one text from every operand's tangent: all rows at once
            rows = {i: self.row() for i in active}
            dots = [rows.get(i) for i in range(len(st.args))]
            return (f"brows(lambda {', '.join(rows[i] for i in active)}: "
                    f"{prim.jvps(dots, args, st.target, params)}, {', '.join(self.dot(st.args[i]) for i in active)})")
        terms = []
        for i in active:
            r = self.row()
            terms.append(f"brows(lambda {r}: {prim.jvp(i, r, args, st.target, params)}, {self.dot(st.args[i])})")
        return " + ".join(terms)

    def batched_kernel(self, st, ind: str, out: list) -> None:
        if isinstance(st.op, RunKernel) and st.op.scalar:
            self.batched_scalar_kernel(st, ind, out)
            return
        t = st.target
        args = tuple_text([text_of(a) for a in st.args])
        act = self.ctx.kernel_active(st)
        names = tuple(p for _, p, _ in act)
        dots = tuple_text([self.dot(a) for _, _, a in act])
        kn = self.ctx.kernel_name(st)
        if isinstance(st.op, KernelSum):
            scale = "1.0" if st.op.reduction == "sum" else f"(1.0 / broadcast_size{args})"
            out.append(f"{ind}{t} = sum_dual({kn}, {args}, active=(), scale={scale})[0]")
            if not self.tangent_read(st):
                return
            out.append(f"{ind}{self.dot(t)} = bkernel_sum_tangent(apply, {self.tangent_kernel_name(st, names)}, "
                       f"{args}, {dots}) * {scale}")
            return
        out.append(f"{ind}{t} = apply({kn}, {args})")
        out.append(f"{ind}{self.dot(t)} = bkernel_tangent(apply, {self.tangent_kernel_name(st, names)}, {args}, "
                   f"{dots})")

    def tangent_read(self, st) -> bool:
        """Is this statement's tangent read? (Not the loss's, in forward over reverse:
        the batched program returns no value; its kernel is then not even made.)"""
        return True


    def batched_scalar_kernel(self, st, ind: str, out: list) -> None:
        """A kernel on known scalars: its tangent `sum of partial * tangent` takes batched
        tangents as it is (numbers times rows)."""
        self.scalar_kernel(st, ind, out, self.ctx.kernel_active(st))


def _unparsed(st) -> str:
    return unparse(st.forward)


class BatchedTangentSweep(BatchedForward, TangentSweep):
    """The tangent program with batched tangents: (value, its tangent (K,) + shape)."""


class BatchedForwardOverReverse(BatchedForward, ForwardOverReverse):
    """The forward-over-reverse program with batched tangents: the adjoints' tangents
    (K,) + shape (or an unbatched zero where the loss does not depend on an argument)."""

    def batched_scalar_kernel(self, st, ind: str, out: list) -> None:
        """A kernel on known scalars keeps its partials (its dual's) and their batched
        tangents: the tangent dual run once per active input along its unit tangent (the
        kernel's second partials), times the tangents (bscalar_tangents); its reverse
        (hvp_reverse) multiplies them as the unbatched one does."""
        args, act, dds, tdual = self.scalar_kernel_partials(st, ind, out)
        t = st.target
        out.append(f"{ind}{self.dot(t)}, {', '.join(dds)} = bscalar_tangents({tdual}, {tuple_text(args)}, "
                   f"{tuple_text([self.dot(a) for _, _, a in act])})")

    def tangent_read(self, st) -> bool:
        return st.target != self.p.result

    def reverse_for(self, st, ind: str, out: list, init: set) -> None:
        self.not_batched(st, "a loop")

    def reverse_if(self, st, ind: str, out: list, init: set) -> None:
        self.not_batched(st, "an if")

    def reverse_stmt(self, st, ind: str, out: list, init: set) -> None:
        g, gd = self.bar(st.target), self.bar_dot(st.target)
        if is_kernel(st.op):
            self.batched_reverse_kernel(st, g, gd, ind, out, init)
            return
        if isinstance(st.op, (SetItem, ListAppend)):
            self.not_batched(st, "an in-place write or append")
        rule = array_prims.of(st.op)
        kind = SECOND_ORDER.get(rule.name) if rule is not None else None
        if kind is None or kind == "own":
            self.not_batched(st, f"'{rule.name if rule is not None else st.op.name}', with no batched second-order "
                                 "rule")
        args = [text_of(a) for a in st.args]
        params = param_texts(st)
        for i, a in enumerate(st.args):
            if not self.is_active(a):
                continue
            term_dot = self.batched_vjp(rule, i, gd, args, st, params)
            other = 1 - i
            if kind == "bilinear" and self.is_active(st.args[other]):
                r = self.row()
                swapped = list(args)
                swapped[other] = r
                term_dot += (f" + brows(lambda {r}: {rule.vjp(i, g, swapped, st.target, params)}, "
                             f"{self.dot(st.args[other])})")
            if kind == "prod":
                r = self.row()
                term_dot += (f" + brows(lambda {r}: prod_bar_dot({g}, {a}, {r}{kw(params, 'axis', 'keepdims')}), "
                             f"{self.dot(a)})")
            self.contribute(a, rule.vjp(i, g, args, st.target, params), term_dot, ind, out, init)

    def batched_vjp(self, rule, i: int, gd: str, args: list, st, params: dict) -> str:
        """The VJP's text applied to the seed's batched tangent `gd`, row by row."""
        if rule.name == "index":
            return f"bindex_bar({gd}, {args[0]}, {params['index']})"
        if rule.name in ("sum", "mean") and len(args) == 1:
            return f"breduce_bar({rule.name!r}, {gd}, {args[0]}{kw(params, 'axis', 'keepdims')})"
        r = self.row()
        return f"brows(lambda {r}: {rule.vjp(i, r, args, st.target, params)}, {gd})"

    def batched_reverse_kernel(self, st, g: str, gd: str, ind: str, out: list, init: set) -> None:
        if st.adjoint.tangent_partials is not None:     # a kernel on known scalars: its kept partials
            self.reverse_kernel(st, g, gd, ind, out, init)
            return
        act = self.ctx.kernel_active(st)
        names = tuple(p for _, p, _ in act)
        if isinstance(st.op, KernelSum):
            g, gd = f"{g} * {self.scale(st)}", f"{gd} * {self.scale(st)}"
        kt = self.tangent_kernels.of(st.op.kernel, names, True)
        wrt = names + tuple(kt.params[len(kt.params) - len(names):])     # the active params, then their copies
        firsts = [self.namer.fresh(f"_{a}_g") for _, _, a in act]
        seconds = [self.namer.fresh(f"_{a}_g_dot") for _, _, a in act]
        positions = tuple(j for j, _, _ in act)
        out.append(f"{ind}{tuple_text(seconds)}, {tuple_text(firsts)} = bseeded_grads(sum_grads, "
                   f"{self.tangent_kernel_name(st, names, True)}, {tuple_text([text_of(a) for a in st.args])}, "
                   f"{positions!r}, {tuple_text([self.dot(a) for _, _, a in act])}, {g}, {gd}, {wrt!r})")
        for (_, _, a), first, second in zip(act, firsts, seconds):
            self.contribute(a, f"unbroadcast({first}, {a})", second, ind, out, init)

    def generate(self) -> str:
        text = super().generate()
        res = self.p.result
        if self.is_active(res):     # the loss's seed has no tangent along any direction: K zeros
            first = self.dot(self.p.params[self.argnums[0]])
            seed = f"    {self.bar(res)}, {self.bar_dot(res)} = 1.0, 0.0\n"
            text = text.replace(seed, f"    {self.bar(res)}, {self.bar_dot(res)} = 1.0, "
                                      f"np.zeros(np.shape({first})[0])\n", 1)
        text = text.replace("    # Tangent of the gradient of:", "    # Batched tangents of the gradient of:", 1)
        return _without_adjoints(text)


def _without_adjoints(text: str) -> str:
    """The program returning None for the value, its tangent and the adjoints (the
    caller reads the adjoints' tangents only), less each top-level line that binds only names nothing after it reads: the
    adjoints' own lines where no tangent needs them. (A batched program is straight-line
    code: loops and ifs have no batched form.)"""
    lines = text.split("\n")
    ret = next(k for k in range(len(lines) - 1, -1, -1) if lines[k].startswith("    return "))
    tree = ast_parse(lines[ret].strip()).body[0].value      # ((value, its tangent), adjoints, their tangents)
    lines[ret] = f"    return (None, None), {tuple_text(['None'] * len(tree.elts[1].elts))}, {ast.unparse(tree.elts[2])}"
    return "\n".join(drop_dead(lines))


# ---------------------------------------------------------------- compiled, once per plan

_PROGRAMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # plan -> {key: (text, fn) or why not}


def batched_hvp(plan, argnums: tuple[int, ...], grad_argnums: tuple[int, ...], backend: str, names):
    """The compiled batched forward-over-reverse program of an array plan (tangents for
    `argnums`, adjoints for `grad_argnums`, no value), or the NotBatched that says why
    there is none (kept: decided once). `names(backend)`: the runtime names it calls
    beyond the plan's (batch_rules' helpers among them)."""
    return _program(plan, ("hvp", argnums, grad_argnums), backend, names,
                    lambda: BatchedForwardOverReverse(plan.program, argnums, grad_argnums, False))


def batched_jvp(plan, argnums: tuple[int, ...], backend: str, names):
    """The compiled batched tangent program of an array plan, or its NotBatched."""
    return _program(plan, ("jvp", argnums), backend, names, lambda: BatchedTangentSweep(plan.program, argnums))


def batched_hvp_source(plan, argnums: tuple[int, ...], grad_argnums: tuple[int, ...]) -> str:
    """The batched forward-over-reverse program's source, then its kernels' (NotBatched
    where there is none)."""
    sweep = BatchedForwardOverReverse(plan.program, argnums, grad_argnums, False)
    text = sweep.generate()
    kernels = sweep.kernels_text()
    return text + ("\n\n" + kernels if kernels else "")


def _program(plan, key: tuple, backend: str, names, make):
    per_plan = _PROGRAMS.get(plan)
    if per_plan is None:
        per_plan = _PROGRAMS[plan] = {}
    got = per_plan.get(key + (backend,))
    if got is None:
        try:
            sweep = make()
            text = sweep.generate()
        except NotBatched as e:     # decided once: kept as its reason
            got = e.reason
        else:
            ns = sweep.namespace(plan.helpers, {**plan.runtime_names(backend), **names(backend)})
            ns["check_scalar_loss"] = scalar_check(plan.program)
            kind = "batched hvp" if key[0] == "hvp" else "batched jvp"
            exec(compile_located(text, f"<s2sad {kind} of {plan.program.name}>", getattr(sweep, "located", ()), program=plan.program), ns)
            got = (text, ns[f"{plan.program.name}__{key[0]}"])
        per_plan[key + (backend,)] = got
        per_plan[key] = got
    if isinstance(got, str):
        raise NotBatched(got)
    return got[1]

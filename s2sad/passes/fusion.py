"""Fusion: the elementwise statements of an array program (passes/ewexprs.py) -> kernels.

`fuse` joins maximal single-output regions of `Elementwise` statements (a statement
joins its consumers' region when all of them are in one region, and the closures it
reads come from the same function) and `make_kernel` turns each region into one
scalar function, normalized as the kernel planner does and compiled through the
builder's kernel constructor: a `RunKernel` statement, or, when the region's only
consumer is a full np.sum/np.mean, one `KernelSum` with it. Elements of arrays the
kernel captures (y[0]) become `Index` statements read as extra inputs.

Invariant: the program computes the same values before and after; `prog.kernels`
lists the kernels in program order. `b` is the builder (passes/arrayprog.Builder): its
namer, free operands and kernel constructor.
"""
from __future__ import annotations

import copy
from typing import Any

import gast

from ..array_prims import Index, Reduce
from ..errors import S2SADError, UnsupportedOperationError
from ..frontend import ParsedFunction, Resolver, location_of, source_line
from .arrayir import (ArrayProgram, ArrayStmt, Const, Ctx, Elementwise, ForStmt, IfStmt, KernelInfo, KernelSum,
                      RunKernel, const_expr, operand_expr, stmt_reads, walk_stmts)
from .elementwise import drop_unread_params, mark_closures, unwrap_single_call
from .normalize import Normalizer
from .trees import const, function_def, name


def fuse(prog: ArrayProgram, b):
    """Maximal single-output regions of "ew" statements -> one kernel each; a region
    whose only consumer is a full np.sum/np.mean becomes one "kernel_sum" with it."""
    uses: dict[str, list] = {}

    def note(body):
        for st in body:
            for r in stmt_reads(st):
                uses.setdefault(r, []).append(st)
            if isinstance(st, ForStmt):
                note(st.body)
            elif isinstance(st, IfStmt):
                note(st.body)
                note(st.orelse)
    note(prog.body)
    if isinstance(prog.result, str):
        uses.setdefault(prog.result, []).append("return")
    b.uses = uses

    def block(body) -> list:
        # statements are named by their targets (SSA), regions by their place in `regions`
        region_of: dict[str, int] = {}
        regions: list[list] = []
        for st in reversed(body):
            if isinstance(st, ForStmt):
                st.body = block(st.body)
                continue
            if isinstance(st, IfStmt):
                st.body = block(st.body)
                st.orelse = block(st.orelse)
                continue
            if not isinstance(st.op, Elementwise):
                continue
            us = uses.get(st.target, [])
            joined = None
            if us and all(isinstance(u, ArrayStmt) and isinstance(u.op, Elementwise) and u.target in region_of
                          for u in us):
                rs = {region_of[u.target] for u in us}
                if len(rs) == 1:
                    r = regions[rs.pop()]
                    rctx = next((x.ctx for x in r if x.op.ctx_bound), None)
                    if not st.op.ctx_bound or rctx is None or rctx is st.ctx:
                        joined = r
            if joined is None:
                joined = []
                regions.append(joined)
            joined.insert(0, st)
            region_of[st.target] = next(i for i, r in enumerate(regions) if r is joined)
        # build kernels; place each at its root (or its consuming reduction)
        replace: dict[str, Any] = {}     # target -> (index statements, the kernel's statement)
        drop: set[str] = set()
        for r in regions:
            root = r[-1]
            us = uses.get(root.target, [])
            red = None
            if len(us) == 1 and isinstance(us[0], ArrayStmt) and isinstance(us[0].op, Reduce) \
                    and us[0].op.kind in ("sum", "mean") and us[0].op.full and us[0].args == [root.target] and any(us[0] is s for s in body) \
                    and root.target not in prog.known_scalar:
                red = us[0]
            kst, extra = make_kernel(prog, b, r, red)
            drop |= {s.target for s in r}
            if red is not None:
                replace[red.target] = (extra, kst)
            else:
                replace[root.target] = (extra, kst)
                drop.discard(root.target)
        out = []
        for st in body:
            key = st.target if isinstance(st, ArrayStmt) else None
            if key in replace:
                extra, kst = replace[key]
                out.extend(extra)
                out.append(kst)
            elif key in drop:
                continue
            else:
                out.append(st)
        return out

    prog.body = block(prog.body)
    order = {st.target: i for i, st in enumerate(walk_stmts(prog.body)) if isinstance(st, ArrayStmt) and st.target}
    prog.kernels.sort(key=lambda k: order.get(k.stmt.target, 0))


def make_kernel(prog: ArrayProgram, b, region: list, red) -> tuple[ArrayStmt, list]:
    """Synthesize the region's scalar function, normalize it as the kernel planner does,
    and return the statement that runs it (plus index statements for captured elements)."""
    inside = {s.target for s in region}
    inputs: list = []
    for s in region:
        for a in s.args:
            if isinstance(a, str) and a not in inside and a not in inputs:
                inputs.append(a)
    root = region[-1]
    ctx = next((s.ctx for s in region if s.op.ctx_bound), root.ctx)
    bindings: dict[str, Any] = {}
    body: list = []
    for s in region:
        bindings.update(s.op.bindings)
        mapping = {h: (a if isinstance(a, str) else None) for h, a in zip(s.op.holders, s.args)}
        consts = {h: a for h, a in zip(s.op.holders, s.args) if isinstance(a, Const)}
        for p in s.op.prelude:
            body.append(subst(copy.deepcopy(p), mapping, consts))
        e = subst(copy.deepcopy(s.op.expr), mapping, consts)
        if s is root:
            body.append(gast.Return(value=e))
        else:
            body.append(gast.Assign(targets=[name(s.target, gast.Store())], value=e, type_comment=None))
    target = red.target if red is not None else root.target
    base = target.lstrip("_") if not target.lstrip("_").isdigit() else (red.op.kind if red is not None else "ew")
    kname = b.namer.fresh(f"{prog.name}__{base}")
    fn = function_def(kname, list(inputs), body)
    gast.copy_location(fn, root.node)
    for st in body:
        if not hasattr(st, "lineno"):
            gast.copy_location(st, root.node)
    rpf = ParsedFunction(ctx.pf.fn, ctx.pf.node, ctx.pf.filename, Resolver(ctx.pf.fn, extra=bindings))
    try:
        program = Normalizer().program_from_node(fn, rpf, kname)
    except S2SADError as err:
        err.in_scalar_code = True   # found in a scalar function applied elementwise
        raise
    if getattr(program, "state", None):
        raise UnsupportedOperationError(
            "a function that writes state is applied elementwise inside an array program",
            location_of(ctx.filename, root.node),
            hint="Stateful scalar functions are supported in losses of the form np.sum(s2sad.broadcast(f, x)); "
                 "return values instead of storing them.")
    program = drop_unread_params(program)
    kept = {}
    extra: list = []
    caps = {c.param: c for c in getattr(program, "captures", [])}
    kin: list = []
    for p in program.params:
        if p in caps:
            c = caps[p]
            base = c.base if c.origin == "param" else b.free_operand(Ctx(ParsedFunction(
                c.resolver.fn, ctx.pf.node, ctx.pf.filename, c.resolver)), c.base)
            t = b.namer.fresh(f"{base}_{'_'.join(str(i) for i in c.index)}".replace("-", "m"))
            idx = gast.Tuple(elts=[const(i) for i in c.index], ctx=gast.Load()) if len(c.index) != 1 \
                else const(c.index[0])
            fwd = gast.Subscript(value=operand_expr(base), slice=idx, ctx=gast.Load())
            s_ = gast.Subscript(value=gast.Attribute(value=operand_expr("np"), attr="s_", ctx=gast.Load()),
                                slice=copy.deepcopy(idx), ctx=gast.Load())
            extra.append(ArrayStmt(t, Index(s_, capture=c), [base], root.node, root.stmt, root.ctx, forward=fwd))
            kin.append(t)
        else:
            kin.append(p)
        kept[p] = True
    program = unwrap_single_call(program)
    kernel = b.new_kernel(program, kname if program.entry == kname else b.namer.fresh(program.entry))
    scalar = all(a in prog.known_scalar for a in kin) and red is None
    sites = [site for s in region for site in s.op.sites]
    mark_closures(sites, program)
    lines = []
    for s in region + ([red] if red is not None else []):
        loc = str(location_of(s.ctx.filename, s.stmt if s.stmt is not None else s.node))
        ln = (loc, source_line(s.ctx.filename, s.stmt if s.stmt is not None else s.node))
        if ln not in lines:
            lines.append(ln)
    op = KernelSum(kernel, red.op.kind) if red is not None else RunKernel(kernel, scalar)
    st = ArrayStmt(target, op, [a for a in kin], root.node if red is None else red.node,
                   root.stmt if red is None else red.stmt, root.ctx)
    if scalar:
        prog.known_scalar.add(target)
    prog.kernels.append(KernelInfo(kernel.name, kernel, st, lines, sites))
    return st, extra


def subst(tree, mapping: dict, consts: dict):
    class S(gast.NodeTransformer):
        def visit_Name(s, node):
            if node.id in consts:
                return const_expr(consts[node.id].value)
            if node.id in mapping and mapping[node.id] is not None:
                return gast.Name(id=mapping[node.id], ctx=node.ctx, annotation=None, type_comment=None)
            return node
    return S().visit(tree)

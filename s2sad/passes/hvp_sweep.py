"""Array program -> its adjoint program differentiated once more in forward mode
(forward over reverse: the Hessian-vector product of `jvp(grad(f), (x,), (v,))`), as
Python source that runs.

    def loss__hvp(w, x, w_dot, x_dot, *, data):
        <forward sweep: each value and its tangent (tangent_sweep.py)>
        check_scalar_loss(loss)
        loss_bar, loss_bar_dot = 1.0, 0.0
        <reverse sweep: each adjoint `x_bar` beside its tangent `x_bar_dot`>
        return (loss, loss_dot), (w_bar, x_bar), (w_bar_dot, x_bar_dot)

The adjoint s2sad writes (reverse_sweep.py) is differentiated term by term:
- a kernel's adjoint `g * dk/da` has the tangent `g * d(k_dot)/da + g_dot * dk/da`:
  both come from one `sum_grads` pass of its seeded tangent kernel
  `g * k_dot + g_dot * k + g * k(a -> q_a)` (tangent_kernels.py: from the kernel's
  dual, so from the one rules table) over the inputs, their tangents, the two seeds and
  the active inputs again as the copies q_a: its partials w.r.t. the inputs are the
  tangents, w.r.t. the copies the adjoints (a bias row's sums inside the pass). A
  kernel on known scalars keeps its partials and their tangents from its duals (plain
  Python) instead;
- a primitive's adjoint is its entry's VJP text, linear in the seed `g`: its tangent is
  the same text with `g_dot`, plus, where the VJP reads the operands' values (not only
  their shapes), the term `SECOND_ORDER` (hvp_reverse) gives: the other factor's tangent for the
  products, prod_bar's own tangent for prod, nothing for max/min (a piecewise-constant
  mask) and for the primitives that only move elements. A primitive not in
  `SECOND_ORDER` (a defvjp rule, a new entry) is refused, located, naming the level;
- an in-place write or a list append (a functional update) has adjoints linear in the
  seed that read only shapes: their tangents take the seed's tangent;
- loops push every value and tangent their reverse reads on a tape; `if`s branch on
  the same condition.
"""
from __future__ import annotations

import ast

from ..array_prims.ops import Product
from ..frontend import location_of, shown_location as _short, source_line as _line
from ..parsing import ast_parse
from .adjoint_analysis import annotated
from .adjoint_text import text_of, tuple_text
from .dead_lines import drop_dead
from .arrayir import ArrayProgram, ArrayStmt, ForStmt, RunKernel
from .hvp_reverse import ReverseOfTangents
from .paired_products import pair_products
from .linemap import LocatedLine, located_lines
from .tangent_sweep import TangentSweep



class _Tape:
    """A loop's tape in the forward sweep: its names known once its reverse is written.
    A counted loop's (a while, a break) is pushed every iteration, names or not: its
    length is the number of iterations the reverse walks."""

    def __init__(self, indent: str, name: str, init: bool, counted: bool = False):
        self.indent, self.name, self.init, self.counted = indent, name, init, counted
        self.names: list[str] = []

    def text(self) -> str | None:
        if not self.names and not self.counted:
            return None
        return f"{self.indent}{self.name} = []" if self.init else \
            f"{self.indent}{self.name}.append({tuple_text(self.names)})"


class ForwardOverReverse(ReverseOfTangents, TangentSweep):
    """One forward-over-reverse program: `grad_argnums` get adjoints (and their
    tangents), `argnums` (a superset) get tangents. `generate` once."""

    def __init__(self, prog: ArrayProgram, argnums: tuple[int, ...], grad_argnums: tuple[int, ...],
                 value: bool = True, grads: bool = True):
        super().__init__(annotated(prog), argnums)     # its own copy: the sweeps annotate it
        self.grad_argnums = grad_argnums
        # value False: the caller (jvp of a grad) reads no loss, so its value and tangent
        # are not computed where nothing else reads them (`_drop_unread`), returned as None
        self.value = value
        # grads False: the caller (s2sad.hvp) reads the adjoints' tangents only: the
        # adjoints are returned as None and their lines dropped where no tangent reads
        # them (dead_lines), a kernel pass then computing only the partials still read
        self.grads = grads
        self.bars: dict[str, str] = {}
        self.init: set[str] = set()
        # kernel outputs whose adjoint only seeds their kernel's pullback, given by a
        # matmul as factors (SeedProduct or array) and the adjoint's tangent as a tuple
        # of such terms: name -> how many terms
        self.factored: dict[str, int] = {}
        # kernel outputs h of `out = h @ w` whose pullback's pass also sums w's adjoint's
        # tangent: h -> (w, the names of w's adjoint and its tangent)
        self.column_sums: dict[str, tuple[str, str, str]] = {}

    # -------------------------------------------------------------- forward sweep

    def paired_with_column(self, st: ArrayStmt, active: bool) -> bool:
        """Does kernel `st` run with its one reader `h @ w` (kernelpairs' partner, both at
        the top level, h differentiated)? Then h and its tangent are not formed where w
        is one column (hvp_columns, at run time) and the matmul's lines say so."""
        m = st.partner
        if not (active and isinstance(st.op, RunKernel) and not st.op.scalar and m is not None
                and isinstance(m.op, Product) and m.op.kind == "matmul" and len(m.args) == 2
                and m.args[0] == st.target and m.args[1] != st.target and self.ctx.kernel_active(st)):
            return False
        return any(s is st for s in self.p.body) and any(s is m for s in self.p.body)

    def stmt(self, st: ArrayStmt, ind: str, out: list) -> None:
        kst = st.adjoint.column_kernel
        if kst is None:
            super().stmt(st, ind, out)
            return
        act = self.ctx.kernel_active(kst)
        names = tuple(p for _, p, _ in act)
        values = st.adjoint.pair_values = self.namer.fresh(f"{kst.target}_values")
        w = st.args[1]
        out.append(f"{ind}# {st.target} and its tangent in one pass of {kst.target}'s kernel's rows form; "
                   f"{kst.target} and its tangent are not formed (None) where {text_of(w)} is one column")
        out.append(f"{ind}{st.target}, {self.dot(st.target)}, {values} = kernel_matmul_jvp("
                   f"{self.ctx.kernel_name(kst)}, {self.tangent_kernel_name(kst, names, 'rows')}, "
                   f"{tuple_text([text_of(a) for a in kst.args])}, {names!r}, "
                   f"{tuple_text([self.dot(a) for _, _, a in act])}, {text_of(w)}, {self.dot_text(w)})")

    def kernel(self, st: ArrayStmt, ind: str, out: list, active: bool) -> None:
        """A kernel's value and tangent (tangent_sweep); a scalar kernel also keeps its
        partials and their tangents (its dual's and its tangent kernel's dual's), which
        its reverse multiplies. An array kernel's reverse recomputes what it needs; one
        paired with its matmul runs there (`stmt`)."""
        if self.paired_with_column(st, active):
            st.partner.adjoint.column_kernel = st
            return
        if not (active and isinstance(st.op, RunKernel) and st.op.scalar):
            super().kernel(st, ind, out, active)
            return
        args, act, dds, tdual = self.scalar_kernel_partials(st, ind, out)
        targs = args + [self.dot(a) for _, _, a in act]
        out.append(f"{ind}{self.dot(st.target)}, {', '.join(dds)} = {tdual}({', '.join(targs)})")

    def scalar_kernel_partials(self, st, ind: str, out: list) -> tuple:
        """The primal line of a kernel on known scalars, `t, dt_da, ... = dual(args)`,
        with its partials kept on the statement (tangent_partials, which the reverse
        half multiplies); returns (args, the active inputs, the partials' tangent names,
        the bound tangent dual) for the caller's tangent line (one direction here, a
        batch of them in batched_sweep)."""
        t = st.target
        args = [text_of(a) for a in st.args]
        act = self.ctx.kernel_active(st)
        names = tuple(p for _, p, _ in act)
        ds = [self.namer.fresh(f"d{t.lstrip('_')}_d{a.lstrip('_')}") for _, _, a in act]
        dds = [self.namer.fresh(f"{d}_dot") for d in ds]
        st.adjoint.tangent_partials = [(a, d, dd) for (_, _, a), d, dd in zip(act, ds, dds)]
        kt = self.tangent_kernels.of(st.op.kernel, names)
        kmod, ktmod = st.op.kernel.module(names), kt.module(names)
        dual = self.bind(kmod.dual_entry, st.op.kernel.python_functions(names)[kmod.dual_entry])
        tdual = self.bind(ktmod.dual_entry, kt.python_functions(names)[ktmod.dual_entry])
        out.append(f"{ind}{t}, {', '.join(ds)} = {dual}({', '.join(args)})")
        return args, act, dds, tdual

    def scale(self, st: ArrayStmt) -> str:
        if st.op.reduction == "sum":
            return "1.0"
        return f"(1.0 / broadcast_size({', '.join(text_of(a) for a in st.args)}))"

    def loop(self, st: ForStmt, ind: str, out: list) -> None:
        tape = self.namer.fresh("tape")
        init, push = _Tape(ind, tape, True, st.counted), _Tape(ind + "    ", tape, False, st.counted)
        st.adjoint.tape, st.adjoint.tape_lines = tape, (init, push)
        out.append(init)
        super().loop(st, ind, out)

    def loop_end(self, st: ForStmt, ind: str, body: list) -> None:
        body.append(st.adjoint.tape_lines[1])

    # -------------------------------------------------------------- the whole

    def generate(self) -> str:
        p = self.p
        fwd: list = []
        self.body(p.body, "    ", fwd)
        res = p.result
        rev: list = []
        if isinstance(res, str) and res not in p.known_scalar:
            fwd.append(f"    check_scalar_loss({res})")
        if self.is_active(res):
            rev.append(f"    {self.bar(res)}, {self.bar_dot(res)} = 1.0, 0.0")
            self.init.add(res)
            self.reverse(p.body, "    ", rev, self.init)
        if self.column_sums:    # (each pair's kernel is reversed after it: a bug of s2sad if not)
            raise AssertionError(f"column sums never taken: {sorted(self.column_sums)}")
        bars, bar_dots = [], []
        for i in self.grad_argnums:
            x = p.params[i]
            if x not in self.init:
                rev.append(f"    {self.bar(x)}, {self.bar_dot(x)} = zeros_bar({x}), zeros_bar({x})  # the result "
                           f"does not depend on it")
            bars.append(self.bar(x))
            bar_dots.append(self.bar_dot(x))
        lines = [l.text() if isinstance(l, _Tape) else l for l in fwd]
        lines = [l for l in lines if l is not None]
        shown = (text_of(res), self.dot_text(res))
        if not self.value and isinstance(res, str):
            shown = (shown[0], _drop_unread(lines, rev, shown[1]))
            shown = (_drop_unread(lines, rev, shown[0], shown[1]), shown[1])    # (zeros_bar(loss) reads it)
        sig = ", ".join(list(p.params) + [self.dot(p.params[i]) for i in self.argnums])
        sig += ", *, " + ", ".join(p.free) if p.free else ""
        head = (f"# Tangent of the gradient of: {_line(p.pf.filename, p.return_node)}    "
                f"[{_short(location_of(p.pf.filename, p.return_node))}]")
        ret = f"    return ({shown[0]}, {shown[1]}), {tuple_text(bars)}, {tuple_text(bar_dots)}"
        if not self.grads:
            ret = f"    return ({shown[0]}, {shown[1]}), {tuple_text(['None'] * len(bars))}, {tuple_text(bar_dots)}"
        # (an empty half leaves an empty line, as it always has: golden files pin the text)
        body = (lines or [""]) + ["    # reverse sweep, each adjoint with its tangent"] + (rev or [""]) + [ret]
        if not self.grads:     # one line each (a recorded line kept whole: paired_products reads its record)
            body = drop_dead([piece for line in body for piece in ([line] if "\n" not in line else line.split("\n"))],
                             _fewer_partials)
        body = pair_products(body)     # a product beside its tangent: one call
        text = f"def {p.name}__hvp({sig}):\n    {head}\n" + "\n".join(body) + "\n"
        self.located = ([LocatedLine("    " + head, location_of(p.pf.filename, p.return_node))]
                        + located_lines(lines) + located_lines(rev))
        ast_parse(text)   # the generated code is Python (a failure here is a bug of s2sad)
        return text



def _drop_unread(fwd: list[str], rev: list[str], name: str, returned: str = "None") -> str:
    """`name` (the loss or its tangent) when it is read (by the generated statements
    `fwd` and `rev`, or the expression `returned` beside it), else "None" with its one
    top-level assignment removed from `fwd`: a value nothing reads is not computed
    (its kernel pass, and on a cold start that kernel's compilation, saved). Reads are
    names in the code's tree: a comment quoting the user's `loss = ...` is none."""
    if not name.isidentifier():
        return name
    head = f"    {name} = "
    defs = [i for i, l in enumerate(fwd) if l.startswith(head) and "\n" not in l]
    if len(defs) != 1:
        return name
    body = [l for i, l in enumerate(fwd) if i != defs[0]] + rev
    if _reads("def _(): \n" + "\n".join(body) + "\n    pass\n", name) \
            or _reads(fwd[defs[0]][len(head):], name) or _reads(returned, name):
        return name
    del fwd[defs[0]]
    return "None"


def _reads(text: str, name: str) -> bool:
    """Whether the generated code `text` uses the name, from its tree: a name in a
    comment or a string is not a use. Text that does not parse uses it (kept: safe)."""
    try:
        tree = ast_parse(text)
    except SyntaxError:
        return True
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(tree))


def _fewer_partials(text: str, node, dead: set) -> str | None:
    """A pass that computes some results nothing reads, rewritten to compute fewer (for
    dead_lines.drop_dead), else None:
    - `(a_g_dot, ..., a_g, ...) = sum_grads(kernel, args, wrt)`: the targets are the
      partials w.r.t. `wrt`'s params in order, so each dead target leaves with its param;
    - `h_bar, h_bar_dot, w_g, w_g_dot = kernel_matmul_hvp_bars(..., True, ...)` with w_g
      dead: its w_grad True becomes "tangent" (w_g None, one kernel pass fewer)."""
    call, target = node.value, node.targets[0]
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and not call.keywords
            and isinstance(target, ast.Tuple) and all(isinstance(t, ast.Name) for t in target.elts)):
        return None
    names = [t.id for t in target.elts]
    if call.func.id == "sum_grads" and len(call.args) == 3:
        try:
            wrt = ast.literal_eval(call.args[2])
        except ValueError:
            return None
        if not isinstance(wrt, tuple) or len(wrt) != len(names):
            return None
        keep = [k for k, nm in enumerate(names) if nm not in dead]
        args = [ast.get_source_segment(text, a) for a in call.args[:2]]
        return (f"{tuple_text([names[k] for k in keep])} = sum_grads({args[0]}, {args[1]}, "
                f"{tuple(wrt[k] for k in keep)!r})")
    if call.func.id == "kernel_matmul_hvp_bars" and len(names) == 4 and names[2] in dead and names[3] not in dead:
        flag = call.args[6] if len(call.args) > 6 else None
        if not (isinstance(flag, ast.Constant) and flag.value is True):
            return None
        if "\n" in text:       # (drop_dead gives one line: the offsets are columns of it)
            return None
        return text[:flag.col_offset] + "'tangent'" + text[flag.end_col_offset:]
    return None

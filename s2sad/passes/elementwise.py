"""Array-level loss -> one fused elementwise kernel and the reduction that consumes it.

Input: the function being differentiated (a `ParsedFunction`). It must be, after
substituting its local assignments, `R(E)` or `E`, where `R` is a reduction (`sum`,
`np.sum`, `np.mean`, `.sum()`, `.mean()`) and `E` an elementwise expression over its
arguments: arithmetic and comparisons, numpy ufuncs and math functions,
`s2sad.broadcast(f, ...)`, `map(f, x)` (also wrapped in `list`/`np.array`/`np.fromiter`),
list comprehensions and generator expressions over one array. Free names that hold
numpy arrays (data) become extra, undifferentiated kernel inputs read at call time.

Output: a `LossPlan`. `E` becomes one synthesized scalar function whose parameters
are the arrays it reads: every site is fused into it, so the gradient of `R(E)` is one
pass over the data (the dual of `E`, summed on the way). Each site is also recorded,
with its location, for `explain`. The translation of `E` (and the check's refusals) is
passes/ewtranslate.py's; this module reads the loss's statements and builds the plan.
"""
from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field

import gast

from .. import rules
from ..errors import UnsupportedOperationError
from ..frontend import ParsedFunction, source_line
from .ewtranslate import Refusal, Site, Translation
from .normalize import Normalizer, ScalarProgram
from .rowcolumns import Column
from .trees import function_def, literal


@dataclass
class LossPlan:
    program: ScalarProgram
    reduction: str                       # "sum" | "mean" | "none"
    inputs: list[tuple[str, object]]     # per kernel param: ("arg", index) or ("free", name)
    sites: list[Site] = field(default_factory=list)
    return_line: str = ""
    return_location: str = ""

    def capture_location(self, param: str) -> str:
        for kind, ref in self.inputs:
            if kind == "capture" and ref.param == param:
                return str(ref.location)
        return "?"


REDUCTIONS = {"sum": "sum", "mean": "mean"}


@dataclass
class FusedCheck:
    """What the fused planner's check found: its refusal (None: it takes the function)
    and the scalar functions the kernel would apply elementwise (lambdas and local
    defs as trees, the user's functions as values), which the route analysis reads."""

    refusal: Refusal | None
    reduction: str = "none"                 # when taken: "sum" | "mean" | "none"
    applied_nodes: list = field(default_factory=list)
    applied_functions: list = field(default_factory=list)
    free_arrays: list = field(default_factory=list)   # free data arrays the kernel would read


class _Planner(Translation):
    """The fused planner: the loss's statements and return read by the translation
    (ewtranslate.Translation), then checked (`check`) or planned (`plan`, `plan_scalar`)."""

    def translate(self):
        """The loss's statements and return -> (reduction, elementwise expression, its
        return statement), or None when a construct is refused (`self.refusal`): the
        planner's check, which raises nothing."""
        node = self.node
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            self.refuse(node, "the differentiated function cannot take *args or **kwargs",
                        "Name its parameters (def f(x, y, k=1.0)); a decorator's wrapper that only forwards them, "
                        "fn(*args, **kwargs), is taken.")
            return None
        ret = None
        unread: dict = {}       # name -> its assignment of a call, not read since
        for s in function_body(node):
            if isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant) and isinstance(s.value.value, str):
                continue
            if ret is not None:
                self.refuse(s, "statements after return", "Remove them.")
                return None
            for n in gast.walk(s):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                    unread.pop(n.id, None)
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
                if s.targets[0].id in unread:
                    break       # (a call's value assigned over, never read)
                if isinstance(s.value, gast.Lambda):
                    self.prelude.append(s)
                elif _number_list(s.value) is not None:
                    self.local_data[s.targets[0].id] = _number_list(s.value)
                else:
                    self.env[s.targets[0].id] = self.subst(s.value)
                    if any(isinstance(n, gast.Call) for n in gast.walk(s.value)):
                        unread[s.targets[0].id] = s
                continue
            if isinstance(s, gast.FunctionDef):
                self.prelude.append(s)
                continue
            if isinstance(s, gast.Return) and s.value is not None:
                ret = s
                continue
            self.refuse(s, f"'{type(s).__name__}' at the array level is not supported yet",
                        "The differentiated function may assign array expressions and return a "
                        "reduction (np.sum, np.mean, sum) of an elementwise expression.")
            return None
        if unread:      # substituted where read, so never translated: its call would not run
            self.refuse(next(iter(unread.values())), "a call whose value is never read (run for its side effects?) "
                        "is not part of one elementwise expression",
                        "Remove the assignment, or use its value.")
            return None
        if ret is None:
            self.refuse(node, "the differentiated function does not return a value", "Return the loss.")
            return None
        reduction, inner = self.reduction(ret.value)
        self.reduced = (reduction, inner)   # a broadcast whose output is a tuple must be reduced by a sum
        for n in gast.walk(inner):
            if isinstance(n, gast.Name) and n.id in self.local_data:
                self.refuse(n, f"the local container '{n.id}' is read at the array level",
                            "Local lists may only be used as state by the scalar functions the loss "
                            "applies elementwise.", UnsupportedOperationError)
                return None
        expr = self.elementwise(inner)
        return None if self.refusal is not None else (reduction, expr, ret)

    def check(self) -> FusedCheck:
        """Whether the fused planner takes the function (straight-line: see
        `straight_line`), and what its kernel would apply elementwise."""
        got = self.translate()
        return FusedCheck(self.refusal, got[0] if got else "none", list(self.prelude), list(self.applied_functions),
                          list(self.free_arrays))

    def plan(self) -> LossPlan:
        """The fused plan of a straight-line function (one the route analysis gave to
        this planner); a refused construct is the user's error, located."""
        got = self.translate()
        if got is None:
            raise self.refusal.error()
        reduction, expr, ret = got
        node = self.node
        used = {n.id for n in gast.walk(expr) if isinstance(n, gast.Name)}
        used |= {n.id for s in self.prelude for n in gast.walk(s) if isinstance(n, gast.Name)}
        kparams = [p for p in self.params if p in used] + self.free_arrays + [c for c in self.rows.columns if c in used]
        fname = f"{self._name()}__elementwise"
        fn = function_def(fname, kparams, copy.deepcopy(self.prelude) + [gast.Return(value=expr)])
        gast.copy_location(fn, node)
        normalizer = Normalizer(self.local_data)
        normalizer.synthesized = self.rows.synthesized
        program = drop_unread_params(normalizer.program_from_node(fn, self.pf, fname))
        inputs = _inputs(program, self.params, self.rows.columns)
        program = unwrap_single_call(program)
        inputs = _renamed_columns(inputs, program.params)
        mark_closures(self.sites, program)
        _mark_state(self.sites, program)
        return LossPlan(program, reduction, inputs, self.sites,
                        return_line=source_line(self.pf.filename, ret), return_location=self.loc(ret))

    def plan_scalar(self) -> LossPlan:
        """The whole function as one scalar function of scalars."""
        node = self.node
        program = Normalizer().program(self.pf)
        _mark_state(self.sites, program)
        return LossPlan(program, "none", _inputs(program, self.params),
                        [Site(self.loc(node), self.pf.name, "dual", "a scalar function: differentiated as a whole"
                              if rules.user_rule(self.pf.fn) is None else "its rule registered with s2sad.defrule",
                              source_line(self.pf.filename, node))],
                        return_line=source_line(self.pf.filename, node), return_location=self.loc(node))

    def _name(self) -> str:
        n = self.pf.name
        return n if n.isidentifier() else "loss"


def mark_closures(sites: list[Site], p: ScalarProgram) -> None:
    """Sites of a kernel that reads captured values take the dual+closure path."""
    if not p.captures:
        return
    reads = ", ".join(f"{c.base}[{', '.join(map(str, c.index))}] "
                      f"({'differentiated' if c.origin == 'param' else 'data'}, read at {c.location})"
                      for c in p.captures)
    for s in sites:
        if s.path in ("dual", "dual+closure"):
            s.path = "dual+closure"
            s.reason = f"closure: captured values become kernel arguments with their own partials: {reads}"


def _mark_state(sites: list[Site], p: ScalarProgram) -> None:
    """Sites of a kernel that threads state take the scan path."""
    if not p.state:
        return
    writes = ", ".join(f"{c.describe()} (written at {c.location})" for c in p.state)
    for s in sites:
        if s.path != "rule":
            s.path = "scan"
            s.reason = (f"stateful: writes {writes}; the elements run in order with the state threaded "
                        f"through, then a reverse sweep; on the GPU (cupy arrays) it runs in one thread, "
                        f"so it is slow there")


def _number_list(e) -> list | None:
    """The values of a list/tuple literal of numbers, else None."""
    if isinstance(e, (gast.List, gast.Tuple)) and e.elts:
        vals = [literal(x) for x in e.elts]
        if all(v is not None for v in vals):
            return [float(v) for v in vals]
    return None


def _inputs(p: ScalarProgram, params: list[str], columns=None) -> list[tuple]:
    """Where each non-state kernel parameter's value comes from: ("arg", index of the
    loss's argument), ("free", name of a free array) or ("capture", Capture or a row
    function's rowcolumns.Column)."""
    caps = {c.param: c for c in p.captures} | dict(columns or {})
    out = []
    for kp in p.params[: len(p.params) - len(p.state)]:
        if kp in caps:
            out.append(("capture", caps[kp]))
        elif kp in params:
            out.append(("arg", params.index(kp)))
        else:
            out.append(("free", kp))
    return out


def _renamed_columns(inputs: list[tuple], kernel_params) -> list[tuple]:
    """Row columns named as the kernel's parameters (after unwrap_single_call)."""
    return [(k, dataclasses.replace(ref, param=kernel_params[j]) if isinstance(ref, Column) else ref)
            for j, (k, ref) in enumerate(inputs)]


def drop_unread_params(p: ScalarProgram) -> ScalarProgram:
    """Parameters the kernel never reads (arrays read only through captured elements,
    `y` in `lambda z: z + y[0]`) are not broadcast with the others."""
    fn = p.functions[p.entry]
    read = {n.id for st in fn.body for n in gast.walk(st) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
    caps = {c.param for c in p.captures} | {c.param for c in p.state}
    keep = [a for a in fn.args.args if a.id in read or a.id in caps]
    if len(keep) == len(fn.args.args):
        return p
    fn.args.args = keep
    p.params = tuple(a.id for a in keep)
    return p


def unwrap_single_call(p: ScalarProgram) -> ScalarProgram:
    """`def loss__elementwise(x): return f(x)` -> f itself is the entry (reads better)."""
    fn = p.functions[p.entry]
    if len(fn.body) == 1 and isinstance(fn.body[0], gast.Return):
        call = fn.body[0].value
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Name) and call.func.id in p.functions \
                and call.func.id not in p.custom_rules \
                and [getattr(a, "id", None) for a in call.args] == list(p.params):
            helper = p.functions[call.func.id]
            functions = {k: v for k, v in p.functions.items() if k != p.entry}
            functions[call.func.id] = functions.pop(call.func.id)
            hparams = tuple(a.id for a in helper.args.args)
            by_position = {c.param: hparams[p.params.index(c.param)] for c in p.captures}
            captures = [dataclasses.replace(c, param=by_position[c.param]) for c in p.captures]
            return ScalarProgram(functions, call.func.id, hparams, p.origins, p.custom_rules, captures, p.state)
    return p


def straight_line_statement(s: gast.stmt) -> bool:
    """Statements the array-level planner handles: docstrings, assignments, defs, return."""
    if isinstance(s, gast.Expr):
        return isinstance(s.value, gast.Constant) and isinstance(s.value.value, str)
    if isinstance(s, gast.Assign):
        return len(s.targets) == 1 and isinstance(s.targets[0], gast.Name)
    return isinstance(s, (gast.FunctionDef, gast.Return))


def function_body(node) -> list:
    """The statements of a def, or of a lambda as `return <its body>`."""
    if isinstance(node, gast.Lambda):   # (located at the body: errors and "# Grad of:" name its line)
        return [gast.copy_location(gast.Return(value=node.body), node.body)]
    return node.body


def straight_line(node) -> bool:
    """Whether a function's body is statements the fused planner reads (docstrings,
    assignments to names, defs, return): no control flow."""
    return all(straight_line_statement(s) for s in function_body(node))


def fused_check(pf: ParsedFunction) -> FusedCheck:
    """The fused planner's check of a straight-line function, which raises nothing:
    whether it takes `R(E)`/`E` (its refusal, else None) and what E applies."""
    return _Planner(pf, checking=True).check()


def plan_loss(pf: ParsedFunction) -> LossPlan:
    """The fused plan of a straight-line function the fused check takes (plans routes
    it here); a refusal is raised, located."""
    return _Planner(pf).plan()


def plan_scalar(pf: ParsedFunction) -> LossPlan:
    """`pf` as one scalar function of scalars: a function with a defrule rule, or one
    that uses no array operation but control flow or `and`/`or` as a value (passes/routes.py)."""
    return _Planner(pf).plan_scalar()


def translate_elementwise(pf: ParsedFunction, expr: gast.expr, params, prelude=()):
    """The planner's translation of one elementwise user expression, shared with the
    array level (passes/arrayprog.py): `expr` over the names `params` (and numbers) ->
    (kernel expression, prelude of lambdas/defs it calls, its Sites, free arrays read)."""
    t = _Planner(pf)
    t.names_are_arrays = False      # (ewexprs refused `not` of an array name, and kept it of an int)
    t.params = list(params)
    t.prelude = list(prelude)
    out = t.elementwise(expr)
    if t.refusal is not None:
        raise t.refusal.error()
    if t.rows.columns or t.rows.synthesized:
        t.refuse(expr, "a function of rows is applied inside an array program",
                 "Apply it in a loss of the form sum(map(f, X)) or np.sum(s2sad.broadcast(f, X)), or "
                 "pass the columns as arrays: map(f, X[:, 0], X[:, 1]) with f taking numbers.",
                 UnsupportedOperationError)
        raise t.refusal.error()
    return out, t.prelude, t.sites, t.free_arrays

"""A dense layer's logits joined with the softmax cross-entropy's adjoint through them,
in the gradient's program (xent_head.py runs the pass a block of rows at a time):

forward:
    _1, z = matmul_bias(X, W, k, 0, b)         ->  _1, z = head_logits(X, W, k, 0, b, Y)
reverse:
    z_bar = row_dot_log_softmax_bar(0, g, z, Y, axis=1)
    (__1_g, _b_g) = unit_vjp(k, (_1, b), ('_1', 'b'), z_bar)
    _1_bar = unbroadcast(__1_g, _1)            ->  (b_bar, W_bar) = xent_head_bars(g, _1, z, Y,
    b_bar = unbroadcast(_b_g, b)                        X, W, k, 0, b, ('_1', 'b'), axis=1)
    W_bar = matmul_rhs_bar(_1_bar, X, W)

(b's lines absent where b is not differentiated; the kernel's operands in either order,
`at` saying which is the product's.) Where the product's adjoint goes on to the layer
below instead, `(...) = lhs_bar_sums(_1_bar, X, W, d, inputs, ...)` (passes/epilogues: a
3-layer MLP's head over its relu layer) in W_bar's line's place, the joined line is
`(b_bar, ...) = xent_head_sums(g, _1, z, Y, X, W, k, 0, b, ('_1', 'b'), d, inputs, ...)`:
that layer's sums pass with the head's rows made in its blocks (xent_head.fused_head_sums). At run time head_logits leaves z unformed (a
stand-in) where xent_head takes the operands, and xent_head_bars forms it a block at a
time; elsewhere they make the calls written before, in the same order.

Where W's or b's adjoint was made first by another line (a weight decay's) and the
product's line adds to it (`W_bar = W_bar + matmul_rhs_bar(...)`, `b_bar = b_bar +
unbroadcast(...)`), the joined line binds the head's parts as `W_bar_head`, `b_bar_head`
and is followed by `W_bar = W_bar + W_bar_head` (and b's), as the lines added them.

Invariants (checked on the program's text, each line parsed):
- only the gradient's program (Generator.generate's "grad" variant, or value_and_grad's
  written from it by passes/xentvalues: no value, so the forward reads z nowhere but in
  these lines) and only top-level lines (four spaces);
- z is mentioned by no line but its own, the adjoint's, and `row_dot_like(z, ...)` (which
  reads z's shape and dtype alone, as a stand-in has them); the product `_1` by none but
  its own, unit_vjp's and its unbroadcast; each adjoint the replaced lines bind (z_bar,
  the unit_vjp results, _1_bar) by none but those lines: so nothing else reads a value
  the joined line no longer makes;
- the reverse lines: z_bar's line, other lines (a penalty's adjoint: they read none of
  the replaced lines' names, by the condition above), unit_vjp's line, its unbroadcast
  lines (one per target, any order), comments, W_bar's (or lhs_bar_sums') line, whose
  operands are _1_bar, X and W; the joined line's targets (b_bar and W_bar, or their
  `_head` parts) are mentioned by no line before (their first binding; a `_head` name by
  no line at all), X, W, b, Y, k and g are bound by no line between the forward line and
  the stretch's end (the values read are the ones written; so moving z_bar's work to the
  joined line reads the same), and Y is a parameter or bound before the forward line
  (head_logits reads it);
- the joined line takes W_bar's line's place; the lines it replaces are removed (the
  comment of the product's statement stays: the line runs for it).
S2SAD_GEMM_EPILOGUE=0 or S2SAD_ROW_FUSION=0 (read when a plan is built) keeps the lines
as they were: the oracle the tests compare against.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..parsing import ast_parse
from .adjoint_text import tuple_text
from .epilogues import enabled, line_names

TOP = "    "


@dataclass
class _Head:
    """The parts of one match (names as written)."""

    p: str
    z: str
    x: str
    w: str
    kernel: str
    at: int
    row: str
    forward: int        # the forward line's index


def statement_of(line) -> ast.stmt | None:
    """The one statement of a top-level line, None for anything else (a comment, a block)."""
    if not isinstance(line, str) or not line.startswith(TOP) or line.startswith(TOP + " ") or "\n" in line:
        return None
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    try:
        body = ast_parse(text).body
    except SyntaxError:
        return None
    return body[0] if len(body) == 1 else None


def call_parts(node, name: str):
    """(the target names, the call's positional arguments and {keyword: value}, as ast
    nodes) of `targets = name(...)` whose targets are names; None otherwise."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.value, ast.Call):
        return None
    call = node.value
    if not isinstance(call.func, ast.Name) or call.func.id != name:
        return None
    t = node.targets[0]
    elts = t.elts if isinstance(t, ast.Tuple) else [t]
    if not all(isinstance(e, ast.Name) for e in elts):
        return None
    return [e.id for e in elts], call.args, {k.arg: k.value for k in call.keywords}


def literal_of(node):
    """The value of a literal (`1`, `-1`), None for anything else."""
    try:
        return ast.literal_eval(node) if node is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def name_of(node) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _names(line) -> tuple[set, set] | None:
    """(bound, mentioned) of a line, a block's header too; ({}, {}) for a comment."""
    return line_names(line, headers=True)


def _forward(fwd: list, z: str) -> _Head | None:
    for i, line in enumerate(fwd):
        got = call_parts(statement_of(line), "matmul_bias")
        if got is None:
            continue
        targets, args, kw = got
        if len(targets) != 2 or targets[1] != z or kw or len(args) != 5:
            continue
        names = [name_of(a) for a in (args[0], args[1], args[2], args[4])]
        at = args[3].value if isinstance(args[3], ast.Constant) else None
        if None in names or at not in (0, 1):
            return None
        return _Head(targets[0], z, names[0], names[1], names[2], at, names[3], i)
    return None


def _only_shape_reads(line: str, z: str) -> bool:
    """Does every mention of z in `line` stand as row_dot_like's first argument?"""
    node = statement_of(line)
    if node is None:
        return False
    allowed = {id(c.args[0]) for c in ast.walk(node) if isinstance(c, ast.Call) and name_of(c.func) == "row_dot_like"
               and c.args and name_of(c.args[0]) == z}
    return all(id(n) in allowed for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == z)


@dataclass
class Joined:
    """One joined head, for passes/xentvalues (value_and_grad): its logits z, the product
    p, the labels y, the axis, and the joined line as `targets = call)` (`call` up to its
    closing parenthesis, for an argument to be added)."""

    z: str
    p: str
    y: str
    axis: int
    targets: list
    call: str

    def line(self, values: str | None = None) -> str:
        """The joined line; with `values`, also binding the rows' values (first)."""
        if values is None:
            return f"{TOP}{tuple_text(self.targets)} = {self.call})"
        return f"{TOP}{tuple_text([values] + self.targets)} = {self.call}, values=True)"


def join(fwd: list, rev: list, params: set, joined: list | None = None) -> int:
    """Rewrite every head of the gradient's program in place (see the module docstring):
    `fwd` its forward lines, `rev` its reverse sweep's, `params` the names bound before
    the first line; each head joined appended to `joined` (a `Joined`). Returns how many
    were joined."""
    if not enabled():
        return 0
    count, i = 0, 0
    heads = [] if joined is None else joined
    while i < len(rev):
        if _join_at(fwd, rev, i, params, heads):
            count += 1         # (rev[i] is now the line after the one joined)
        else:
            i += 1
    return count


def _join_at(fwd: list, rev: list, i: int, params: set, heads: list) -> bool:
    got = call_parts(statement_of(rev[i]), "row_dot_log_softmax_bar")
    if got is None or len(got[0]) != 1:
        return False
    (zb,), args, kw = got
    axis = literal_of(kw.get("axis"))
    if len(args) != 4 or set(kw) != {"axis"} or literal_of(args[0]) != 0 or axis not in (1, -1):
        return False
    g, z, y = (name_of(a) for a in args[1:])
    head = _forward(fwd, z) if None not in (g, z, y) else None
    if head is None:
        return False
    # then unit_vjp's line (other lines before it: a penalty's adjoint; _reads_ok checks
    # they read nothing the joined line no longer makes), its unbroadcasts, W_bar's line
    j = next((q for q in range(i + 1, len(rev)) if call_parts(statement_of(rev[q]), "unit_vjp") is not None), len(rev))
    got = call_parts(statement_of(rev[j]) if j < len(rev) else None, "unit_vjp")
    if got is None:
        return False
    grads, args, kw = got
    if kw or len(args) != 4 or name_of(args[0]) != head.kernel or name_of(args[3]) != zb:
        return False
    operands = (head.p, head.row) if head.at == 0 else (head.row, head.p)
    if not isinstance(args[1], ast.Tuple) or [name_of(e) for e in args[1].elts] != list(operands):
        return False
    if not isinstance(args[2], ast.Tuple) or not all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                                      for e in args[2].elts):
        return False
    active = tuple(e.value for e in args[2].elts)
    if len(active) != len(grads) or not 1 <= len(active) <= 2 or len(set(grads)) != len(grads):
        return False
    # each unit_vjp result unbroadcast to the operand it is the seed of (the row's summed
    # into its adjoint where another line made it first: `b_bar = b_bar + unbroadcast(...)`)
    p_bar, row_bar, row_summed, k, seen = None, None, None, j + 1, set()
    for _ in grads:
        node, summed = _unsummed(statement_of(rev[k]) if k < len(rev) else None)
        got = call_parts(node, "unbroadcast")
        if got is None or len(got[0]) != 1 or got[2] or len(got[1]) != 2:
            return False
        src, to = name_of(got[1][0]), name_of(got[1][1])
        if src not in grads or src in seen or to not in (head.p, head.row) or to in seen:
            return False
        seen |= {src, to}
        if to == head.p:
            if summed is not None:
                return False
            p_bar = got[0][0]
        else:
            row_bar, row_summed = got[0][0], summed
        k += 1
    if p_bar is None:
        return False
    seeds_end = k
    while k < len(rev) and _names(rev[k]) == (set(), set()):
        k += 1              # (the comment of the statement below: its layer's sums)
    last = statement_of(rev[k]) if k < len(rev) else None
    tail = _product_adjoint(last, p_bar, head)
    if tail is None:
        return False
    helper, bound, extra, summed = tail
    # `W_bar = W_bar + matmul_rhs_bar(...)` (or b's so): the head's part a name of its own, added after
    sums = [(t, f"{t}_head") for t in (row_summed, summed) if t is not None]
    if any(part in (_names(line) or (set(), {part}))[1] for _, part in sums for line in fwd + rev):
        return False
    if row_summed is not None:
        row_bar = f"{row_summed}_head"
    if summed is not None:
        bound = [f"{summed}_head"]
    if not _reads_ok(fwd, rev, head, i, k, zb, grads, p_bar, row_bar, bound, g, y, params):
        return False
    targets = ([row_bar] if row_bar else []) + bound
    fwd[head.forward] = (f"{TOP}{head.p}, {head.z} = head_logits({head.x}, {head.w}, {head.kernel}, {head.at}, "
                         f"{head.row}, {y})")
    joined = Joined(head.z, head.p, y, axis, targets,
                    f"{helper}({g}, {head.p}, {head.z}, {y}, {head.x}, {head.w}, {head.kernel}, {head.at}, {head.row}, "
                    f"{active!r}{extra}, axis={axis}")
    heads.append(joined)
    rev[k] = joined.line()
    rev[k + 1:k + 1] = [f"{TOP}{t} = {t} + {part}" for t, part in sums]
    rev[k:k] = [f"{TOP}# {head.z} and its adjoint a block of rows at a time in the cross-entropy's pass, "
                f"{head.x} read once (xent_head)"]
    del rev[j:seeds_end]    # (unit_vjp's line and its unbroadcasts; the comments stay)
    del rev[i]
    return True


def _product_adjoint(node, p_bar: str, head: _Head):
    """(helper, the names the line binds, the joined call's extra arguments' text, the name
    summed into or None) where `node` is the product's adjoint as the joined call may take
    it: `W_bar = matmul_rhs_bar(_1_bar, X, W)` (xent_head_bars), `W_bar = W_bar +
    matmul_rhs_bar(_1_bar, X, W)` (W's adjoint from another line too: a weight decay), or
    the layer below's `(...) = lhs_bar_sums(_1_bar, X, W, d, inputs[, rhs=...][,
    nxt=...])` (xent_head_sums); None otherwise."""
    node, summed = _unsummed(node)
    got = call_parts(node, "matmul_rhs_bar")
    if got is not None:
        if len(got[0]) != 1 or got[2] or [name_of(a) for a in got[1]] != [p_bar, head.x, head.w]:
            return None
        return "xent_head_bars", got[0], "", summed
    if summed is not None:
        return None
    got = call_parts(node, "lhs_bar_sums")
    if got is None or len(got[1]) != 5 or set(got[2]) - {"rhs", "nxt"} \
            or [name_of(a) for a in got[1][:3]] != [p_bar, head.x, head.w]:
        return None
    d, inputs = got[1][3], got[1][4]
    if name_of(d) is None or not isinstance(inputs, ast.Tuple) or not all(name_of(e) for e in inputs.elts):
        return None
    extra = f", {d.id}, {ast.unparse(inputs)}" + "".join(f", {key}={ast.unparse(v)}" for key, v in got[2].items())
    return "xent_head_sums", got[0], extra, None


def _unsummed(node):
    """(`t = call(...)`, t) for the statement `t = t + call(...)`; else (node, None)."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        return node, None
    t, v = node.targets[0].id, node.value
    if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Add) and name_of(v.left) == t \
            and isinstance(v.right, ast.Call):
        return ast.Assign(targets=[ast.Name(t, ast.Store())], value=v.right), t
    return node, None


def _reads_ok(fwd: list, rev: list, head: _Head, i: int, k: int, zb: str, grads: list, p_bar: str,
              row_bar: str | None, targets: list, g: str, y: str, params: set) -> bool:
    """The reader and binding conditions of the module docstring, over every line but the
    replaced ones (rev[i], rev[i+1:k+1]) and the forward line."""
    replaced = {("r", i)} | {("r", q) for q in range(i + 1, k + 1)} | {("f", head.forward)}
    private = {zb, p_bar, *grads}
    fixed = {head.x, head.w, head.row, head.kernel, g, y}
    y_ready = y in params
    for side, lines in (("f", fwd), ("r", rev)):
        for q, line in enumerate(lines):
            if (side, q) in replaced:
                continue
            got = _names(line)
            if got is None:
                return False
            bound, mentioned = got
            if private & mentioned or head.p in mentioned:
                return False
            if head.z in mentioned and not _only_shape_reads(line, head.z):
                return False
            before = side == "f" and q < head.forward
            if side == "f" and not before or side == "r" and q < k:
                if bound & fixed and not (side == "r" and q < i and bound == {g}):
                    return False     # (g itself is bound in the reverse, before z_bar's line)
            if side == "f" and before and y in bound:
                y_ready = True
            if (side == "f" or q < k) and ({row_bar} | set(targets)) & mentioned:
                return False
    return y_ready

"""value_and_grad with the cross-entropy's dense head joined (passes/xentheads): the
gradient's program, its forward sweep as the grad variant has it (z left unformed), and
the loss's value computed after the reverse sweep from the rows' values the joined pass
gives:

    _1, z = head_logits(X, W, k, 0, b, Y)
    (dloss_d7,) = k_loss__dual(not_needed)[1:]     # the partials alone, as in grad
    # reverse sweep
    ...
    (_6, b_bar, W_bar) = xent_head_bars(..., axis=1, values=True)
    # the value, from the rows' values the cross-entropy's pass gave
    _7 = np.mean(_6)
    loss, dloss_d7 = k_loss__dual(_7)
    return loss, (W_bar, b_bar)

Why: value_and_grad's forward reads z for the value (`_6 = row_dot_log_softmax(z, Y)`),
so the head was not joined there, and a training loop's value_and_grad paid the
unjoined program (about twice grad's time at 100,000 rows of 32 x 10). The rows' values
come from the same row kernel on the same z, a block of rows at a time (the same bits),
and the lines after them are value_and_grad's own lines: the value has the unjoined
program's bits.

`value_lines(fwd_g, rev, fwd_v, heads, result, grads)` gives the value's lines, or None
where this does not apply (the caller then writes value_and_grad unjoined). Invariants
(checked on the text, every line parsed):
- every line of both forward sweeps is a top-level statement or a comment (no loop, no
  branch); each name value_and_grad's forward binds, it binds once;
- each joined head's z is read in value_and_grad's forward by one line alone,
  `r = row_dot_log_softmax(z, y, axis=a)` (the head's y and axis, nothing else): that
  line's value comes from the joined pass;
- the value's lines are value_and_grad's forward lines the result needs, in their order,
  but for the row lines and the lines the grad variant's forward has as they are (those
  values are made there); no value line mentions a head's z or product, writes into an
  array (a target other than names), or binds a gradient returned;
- every name a value line reads that the grad program binds is bound there once, by a
  forward line value_and_grad has as it is, and never by the reverse sweep: it holds the
  value it held in value_and_grad's forward.
"""
from __future__ import annotations

import ast

from .epilogues import line_names
from .xentheads import TOP, Joined, call_parts, literal_of, name_of, statement_of

VALUE_COMMENT = f"{TOP}# the value, from the rows' values the cross-entropy's pass gave"


def value_lines(fwd_g: list, rev: list, fwd_v: list, heads: list, result: str, grads: list) -> list | None:
    """The lines computing `result` after the reverse sweep (see the module docstring), the
    joined lines in `rev` given the rows' values' targets (in place); None where this does
    not apply (nothing changed)."""
    if not heads or not all(plain_line(x) for x in fwd_g + fwd_v + rev):
        return None
    names = bound_once(fwd_v)
    if names is None:
        return None
    rows: dict = {}          # a row line's index in fwd_v -> (its head, its target)
    for head in heads:
        readers = [q for q, (_, mentioned) in enumerate(names) if head.z in mentioned and q != _binder(names, head.z)]
        target = _row_target(fwd_v[readers[0]], head) if len(readers) == 1 else None
        if target is None:
            return None
        rows[readers[0]] = (head, target)
    value, used = needed_lines(fwd_v, names, set(fwd_g), {result}, rows)
    if not used or not lines_allowed(value, {h.z for h in heads} | {h.p for h in heads}, grads):
        return None
    if not reads_hold(value, fwd_g, fwd_v, rev, {t for _, t in used.values()}):
        return None
    if any(rev.count(head.line()) != 1 for head, _ in used.values()):
        return None
    for head, target in used.values():
        rev[rev.index(head.line())] = head.line(target)
    return [VALUE_COMMENT] + value


def bound_once(fwd_v: list) -> list | None:
    """Each forward line's (names bound, names mentioned), or None where a name is bound
    twice."""
    names = [line_names(line) for line in fwd_v]
    bound = [n for b, _ in names for n in b]
    return names if len(bound) == len(set(bound)) else None


def needed_lines(fwd_v: list, names: list, in_grad: set, needed: set, rows: dict) -> tuple[list, dict]:
    """(the forward lines `needed`'s names come from, in their order, but those `in_grad`
    has as they are and the row lines `rows` (index -> (head, target)); the row lines
    used), `names` each line's (bound, mentioned)."""
    value, used = [], {}
    for q in range(len(fwd_v) - 1, -1, -1):
        bound, mentioned = names[q]
        if not bound & needed:
            continue
        needed = needed - bound
        if q in rows:
            used[q] = rows[q]           # (its value: the joined pass's)
        elif fwd_v[q] not in in_grad:   # (else made by the grad's forward, as it is here)
            value.insert(0, fwd_v[q])
            needed |= mentioned - bound
    return value, used


def plain_line(line) -> bool:
    """A top-level statement or a comment (no block, no block's header)."""
    if not isinstance(line, str):
        return False
    text = line.strip()
    return not text or text.startswith("#") and line.startswith(TOP) or statement_of(line) is not None


def _binder(names: list, name: str) -> int | None:
    return next((q for q, (bound, _) in enumerate(names) if name in bound), None)


def _row_target(line, head: Joined) -> str | None:
    """The target of `r = row_dot_log_softmax(z, y, axis=a)` for the head, else None."""
    got = call_parts(statement_of(line), "row_dot_log_softmax")
    if got is None:
        return None
    targets, args, kw = got
    if len(targets) != 1 or [name_of(a) for a in args] != [head.z, head.y] or set(kw) != {"axis"} \
            or literal_of(kw["axis"]) != head.axis:
        return None
    return targets[0]


def lines_allowed(value: list, stand_ins: set, grads: list) -> bool:
    """No value line mentions a name of `stand_ins` (a joined head's z or product: stand-ins
    there), writes into an array (a target other than names) or binds a gradient the
    program returns."""
    for line in value:
        node = statement_of(line)
        bound, mentioned = line_names(line)
        if not isinstance(node, ast.Assign) or stand_ins & mentioned or bound & set(grads):
            return False
        if not all(isinstance(n, (ast.Name, ast.Tuple, ast.expr_context)) for t in node.targets for n in ast.walk(t)):
            return False
    return True


def reads_hold(value: list, fwd_g: list, fwd_v: list, rev: list, row_names: set) -> bool:
    """Does every name the value lines read (bound earlier in the grad program) hold its
    value_and_grad value at the end of the reverse sweep? Bound once in the grad program,
    by a forward line value_and_grad has as it is, never by the reverse sweep (but the
    rows' values, which the joined lines bind)."""
    own = set().union(*(line_names(line)[0] for line in value))
    reads = set().union(*(line_names(line)[1] for line in value)) - own
    counts: dict = {}
    for line in fwd_g + rev:
        for n in line_names(line)[0]:
            counts[n] = counts.get(n, 0) + 1
    if any(line_names(line)[0] & (reads - row_names) for line in rev):
        return False
    same = set(fwd_v)
    for line in fwd_g:
        bound = line_names(line)[0] & reads
        if bound and (line not in same or any(counts[n] != 1 for n in bound)):
            return False
    return True

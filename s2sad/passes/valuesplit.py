"""value_and_grad written as the gradient's program, then the value: what array_special
specialises at a small batch, where the whole copy can then be one compiled program
(array_program.py: its steps, then the value's lines in Python).

    def loss__value_and_grad(W, b, X, Y):
        <grad's forward sweep (not deferred, no head joined): scalar partials from not_needed>
        # reverse sweep
        <grad's reverse sweep>
        # the value, after the gradients
        <value_and_grad's forward lines the value needs, but those grad's forward has as they are>
        return loss, (W_bar, b_bar)

Why: value_and_grad's own forward reads the value in its reverse sweep (`loss, dloss_d7 =
k__dual(_7)`, `loss, (d,) = sum_dual(...)`): runtime numbers between the sites, which a
compiled program does not carry, so at 32 rows value_and_grad ran its specialised copy
site by site, 3-4x grad's program.

`split_text(g, v)` gives (text, located) or None where this does not apply (the caller
then specialises value_and_grad as it is). Invariants (checked on the text):
- the two reverse sweeps are the same text: every gradient is computed by the same lines
  from the forward names they read, and grad's forward gives those names the values
  value_and_grad's forward gives them (its generator's invariant: a scalar partial
  read from `not_needed` does not read the value; `sum_grads` gives sum_dual's
  partials), so the gradients keep value_and_grad's bits; array_special also compares
  the two copies' results on the recording's arguments, byte for byte;
- the value's lines are value_and_grad's forward lines the result needs, in their order,
  less those grad's forward has as they are; they write no array, bind no gradient
  returned, and every name they read from the grad program holds its value_and_grad
  value there (xentvalues.reads_hold): so the value keeps value_and_grad's bits too.
"""
from __future__ import annotations

from dataclasses import dataclass

from .adjoint_text import def_line, tuple_text
from .epilogues import line_names
from .linemap import located_lines
from .xentvalues import bound_once, lines_allowed, needed_lines, plain_line, reads_hold

VALUE_COMMENT = "    # the value, after the gradients"


@dataclass(frozen=True)
class Sweeps:
    """One generation's parts (passes/reverse.Generator.generate): its first comment, its
    forward and reverse sweeps' lines, the check of a scalar loss, the result's
    expression, the gradients' names, and the located lines of its text."""
    name: str
    params: tuple
    free: tuple
    head: str
    fwd: list
    rev: list
    check: str
    result: str
    grads: list
    located: list


def split_text(g: Sweeps, v: Sweeps) -> tuple[str, list] | None:
    """(value_and_grad's text as grad's program then the value, its located lines) from
    grad's parts `g` and value_and_grad's `v` of one program (see the module docstring),
    or None where that does not apply."""
    if [str(x) for x in g.rev] != [str(x) for x in v.rev] or g.grads != v.grads:
        return None
    if not all(plain_line(x) for x in g.fwd + v.fwd + g.rev):
        return None
    names = bound_once(v.fwd)
    if names is None:
        return None
    value, _ = needed_lines(v.fwd, names, set(g.fwd), line_names(f"_ = {v.result}")[1], {})
    if not lines_allowed(value, set(), v.grads):
        return None
    # the result's expression read as one more value line: what it reads holds too
    if not reads_hold(value + [f"    _ = {v.result}"], g.fwd, v.fwd, g.rev, set()):
        return None
    body = [f"    {g.head}"] + [str(x) for x in g.fwd] + ([g.check.rstrip("\n")] if g.check else []) \
        + ["    # reverse sweep"] + [str(x) for x in g.rev] + [VALUE_COMMENT] + [str(x) for x in value] \
        + ([v.check.rstrip("\n")] if v.check and v.check != g.check else []) \
        + [f"    return {v.result}, {tuple_text(v.grads)}"]
    text = def_line(v.name, "value_and_grad", v.params, v.free) + "\n" + "\n".join(body) + "\n"
    return text, g.located + located_lines(value)

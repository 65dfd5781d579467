"""What a refusal of a call at the array level says: the hint that names the real
function and shows its rule as one line of valid Python (`register_hint`,
`defvjp_example`), the hint for a table entry's call in a form s2sad does not read
(`form_hint`), and the refusals built from them.
"""
from __future__ import annotations

import gast
import numpy as np

from .. import array_prims
from ..errors import UnsupportedOperationError
from ..frontend import classify

_RULE_HOW = ("one function per argument, each given the output's adjoint g, the output and the arguments, and "
             "returning the adjoint of its argument")
_OR_REWRITE = "or write the computation with supported numpy operations."


def defvjp_example(label: str, params: list[str] | None = None) -> str:
    """`s2sad.defvjp(<label>, lambda g, out, x: ..., ...)`: one line of valid Python, one
    rule per argument (`params`: the call's argument names, default one `x`)."""
    params = params or ["x"]
    rule = f"lambda g, out, {', '.join(params)}: ..."
    return f"s2sad.defvjp({label}, {', '.join([rule] * len(params))})"


def call_params(node) -> list[str] | None:
    """Parameter names for a rule of the call `node`: its positional arguments' own names
    where they are plain distinct names, else x, y, z... (None when it is no call)."""
    if not isinstance(node, gast.Call) or not node.args or any(isinstance(a, gast.Starred) for a in node.args):
        return None
    names = [a.id if isinstance(a, gast.Name) and a.id not in ("g", "out", "lambda") else None for a in node.args]
    taken = {"g", "out"} | {n for n in names if n is not None and names.count(n) == 1}
    spare = iter(n for n in ["x", "y", "z"] + [f"x{k}" for k in range(len(names))] if n not in taken)
    return [n if n is not None and names.count(n) == 1 else next(spare) for n in names]


def register_hint(label: str, params: list[str] | None = None) -> str:
    """What to do about a call with no rule, as valid Python naming the real function:
    `np.cumsum` -> s2sad.defvjp(np.cumsum, ...) (one rule per argument of the call,
    `params`); a method `.cumsum()` -> its function form np.cumsum(x, ...) and that
    function's rule (defvjp takes functions, not methods); anything else -> rewrite it.
    The example stands on a line of its own."""
    note = _COMPLEX_RESULTS.get(label.strip(".()").split(".")[-1])
    return (note + " " if note else "") + _register_hint(label, params)


# functions whose results are complex (s2sad differentiates real arrays only): what to use
_COMPLEX_RESULTS = {
    "eig": "Its results are complex (s2sad differentiates real arrays only); for a symmetric matrix, "
           "np.linalg.eigh is differentiated.",
    "eigvals": "Its results are complex (s2sad differentiates real arrays only); for a symmetric matrix, "
               "np.linalg.eigvalsh is differentiated.",
}
_COMPLEX_RESULTS.update({f: "Its results are complex (s2sad differentiates real arrays only)."
                         for f in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "rfft2", "rfftn")})


def _register_hint(label: str, params: list[str] | None) -> str:
    if label.startswith("."):
        m = label.strip(".()")
        fn = getattr(np, m, None)
        if callable(fn) and _differentiated(fn):
            return f"Call the function form np.{m}(x, ...) instead of the method: s2sad differentiates it."
        if callable(fn):
            return (f"Call the function form np.{m}(x, ...) instead of the method, and register its reverse-mode "
                    f"rule ({_RULE_HOW}):\n    {defvjp_example(f'np.{m}', _with_receiver(params))}\n{_OR_REWRITE}")
        return (f"'{label}' is a method or attribute s2sad has no derivative for (s2sad.defvjp takes "
                "functions, not methods): write the computation with supported numpy operations.")
    if all(part.isidentifier() for part in label.split(".")):
        return f"Register its reverse-mode rule ({_RULE_HOW}):\n    {defvjp_example(label, params)}\n{_OR_REWRITE}"
    return "Write the computation with supported numpy operations."


def _with_receiver(params: list[str] | None) -> list[str]:
    """A method call's parameter names with its object first (`x.m(a)` -> x, a), distinct."""
    rest = [p for p in (params or []) if p != "x"]
    spare = iter(n for n in ["y", "z"] + [f"x{k}" for k in range(len(params or []) + 1)] if n not in rest)
    rest += [next(spare) for _ in range(len(params or []) - len(rest))]
    return ["x"] + rest


def _differentiated(fn) -> bool:
    """Whether s2sad differentiates the numpy function `fn` itself (a table entry or an
    elementwise rule, np.clip's select): a method's hint then points at it."""
    return bool(array_prims.for_function(fn)) or fn is np.clip or classify(fn).kind in ("primitive", "user_rule")


def unsupported(label: str, loc, what: str = "") -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"'{label}' {what or 'has no derivative rule at the array level'}", loc, hint=register_hint(label))


def form_hint(label: str) -> str:
    """What to do about a call of a function s2sad differentiates, written in a form it
    does not read: s2sad.defvjp refuses such a function (its rule would not be used), so
    the example wraps the call in a function of the user's own."""
    short = label.split(".")[-1].strip("()") or "f"
    if label.startswith("."):                          # a method: x.reshape(...)
        body = f"x.{short}(...)"
    else:
        body = f"{label if all(part.isidentifier() for part in label.split('.')) else short}(x, ...)"
    return (f"Write the call in a form s2sad reads (README, \"What is covered\"), or wrap it in a function of your "
            f"own and register that function's rule ({_RULE_HOW}):\n"
            f"    def my_{short}(x): return {body}\n"
            f"    s2sad.defvjp(my_{short}, lambda g, out, x: ...)")


def refuse_form(label: str, loc, what: str) -> UnsupportedOperationError:
    """A table entry's call in a form s2sad does not read, located."""
    return UnsupportedOperationError(f"'{label}' {what}", loc, hint=form_hint(label))


def root_name(node):
    """The name an attribute/subscript chain starts from (np in np.linalg.norm), else None."""
    while isinstance(node, (gast.Attribute, gast.Subscript)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None

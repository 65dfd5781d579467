"""What s2sad differentiates, generated from its tables: the README's coverage list.

`coverage_markdown()` lists every entry of the array-primitive table
(`array_prims.PRIMS`: its numpy callables by identity, its ndarray methods, its syntax)
and every callable of the scalar rules table (`rules.scalar_spellings()`: math, numpy,
builtins, scipy.special). `with_coverage(readme)` puts that list between the README's
markers; `s2sad coverage --write` rewrites the README with it (`make readme-coverage`),
and tests/test_shape_coverage.py fails when the README's list is not the generated one,
so the list stays true as entries are added.

Layer: tools (reads the tables only; imports no pass or backend).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from . import array_prims, rules

START = "<!-- coverage:start (generated from the tables by `s2sad coverage --write`; do not edit by hand) -->"
END = "<!-- coverage:end -->"
README = Path(__file__).resolve().parent.parent / "README.md"

# entries spelled by syntax rather than (or besides) a callable
SYNTAX = {"item": ("a, b = f(...)", "f(...)[k]"), "index": ("x[...]",), "r_": ("np.r_[...]",), "c_": ("np.c_[...]",), "matmul": ("a @ b",),
          "transpose": ("x.T",), "copy": ("x.real", "x.astype(float)"), "sum": ("sum(x)",), "user": ("a function given rules by s2sad.defvjp",)}
PREFIXES = (("np", np), ("np.linalg", np.linalg), ("math", math))


def qualified(f) -> str:
    """The name a user calls `f` by: np.<name>, np.linalg.<name>, math.<name>, else its
    module's (scipy.linalg.<name>)."""
    name = getattr(f, "__name__", repr(f))
    for prefix, module in PREFIXES:
        if getattr(module, name, None) is f:
            return f"{prefix}.{name}"
    module = getattr(f, "__module__", None) or ""
    public = ".".join(p for p in module.split(".") if not p.startswith("_"))
    return f"{public}.{name}" if public else name


# what the entries no one writes by name stand for
FUSED = {
    "row_log_softmax": "z - max, then minus log(sum(exp)) along the last axis, fused (one pass per row)",
    "row_softmax": "exp(z - max) / sum(...) along the last axis, fused (one pass per row)",
    "row_logsumexp": "max + log(sum(exp(z - max))) along the last axis, fused (one pass per row)",
    "derivative": "a call g(...) of g = s2sad.grad(f) or s2sad.value_and_grad(f), f an array program (its VJP: "
                  "f's Hessian times the seed, forward over reverse)",
    "row_layer_norm": "(x - mean) / sqrt(var + eps) along the last axis (mean, var as np.mean/np.var or methods), "
                      "fused (one pass per row)",
    "row_dot_log_softmax": "np.sum(y * log_softmax, axis=-1) of a fused row_log_softmax (the cross-entropy's "
                           "one-hot product), fused into its pass",
}


def _entry_line(prim) -> str:
    spellings = [f"`{qualified(f)}`" for f in prim.funcs]
    # an optional module's callables by their names (the list does not depend on what
    # the process has imported)
    spellings += [f"`{module}.{name}`" for module, name in prim.module_funcs]
    spellings += [f"`{qualified(f)}([a, b, ...])`" for f in prim.literal_funcs]
    spellings += [f"`x.{m}()`" for m in prim.methods]
    spellings += [f"`{s}`" for s in SYNTAX.get(prim.name, ())]
    if not spellings:       # made by a pass, never written (passes/rowfusion's row_* ops)
        spellings = [FUSED.get(prim.name, "made by s2sad from other operations, not called by name")]
    jvp = "" if prim.jvp is not None else " (VJP only: no JVP text yet)"
    return f"- `{prim.name}`: {', '.join(spellings)}{jvp}"


def coverage_markdown() -> str:
    """The coverage list, as markdown (without the markers)."""
    prims = list(array_prims.PRIMS.values())
    lines = [f"Array primitives (`s2sad/array_prims`, {len(prims)} entries, each with its VJP and JVP; "
             "`grad`, `vjp`, `value_and_grad` and `jvp` go through them; `scipy.*` where scipy is installed, "
             "recognised by identity):", ""]
    lines += [_entry_line(p) for p in prims]
    spellings = rules.scalar_spellings()
    prefix = {"math": "math.", "numpy": "np.", "builtins": "", "scipy.special": "scipy.special."}
    note = {"scipy.special": " (where scipy is installed; recognised by identity)"}
    lines += ["", "Elementwise, with their partials in the rules table (`s2sad/rules.py`), on arrays and "
              "inside scalar functions:", ""]
    for where, names in spellings.items():
        lines.append(f"- {where}{note.get(where, '')}: " + ", ".join(f"`{prefix[where]}{n}`" for n in names))
    return "\n".join(lines)


def with_coverage(text: str) -> str:
    """`text` (the README) with the generated list between its markers."""
    if START not in text or END not in text:
        raise ValueError(f"the README has no coverage markers ({START!r} ... {END!r})")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{coverage_markdown()}\n{END}{tail}"


def write_readme(path: Path = README) -> bool:
    """Rewrite the README's coverage list; True when it changed."""
    old = path.read_text()
    new = with_coverage(old)
    if new != old:
        path.write_text(new)
    return new != old

"""Kernel modules and gast trees as Python text: what `s2sad.source` shows of a kernel,
what the python backend executes, and how passes quote user code in messages.

Invariants:
- `unparse(node)` is Python text for any gast node (a statement without a line number
  gets line 1).
- `module_source(kmod)` is deterministic: every function of the module in its order,
  each under a `# <origin>` comment where it has one, with its variables renamed where
  Python would read them in place of the `math` module, a builtin or a helper the
  function calls (`math` -> `math_`); the trees of `kmod` are never changed.
"""
from __future__ import annotations

import ast
import copy

import gast


def unparse(node: gast.AST) -> str:
    """Python text of a gast tree."""
    tree = gast.gast_to_ast(node)
    if not hasattr(tree, "lineno") and isinstance(tree, ast.stmt):
        tree.lineno = 1
    return ast.unparse(ast.fix_missing_locations(tree))


# names a kernel reads as Python's: `math.f(...)` (bound to smath), the builtins it calls
_MODULE_NAMES = frozenset({"math", "abs", "min", "max", "float", "int", "round", "range"})


def _unshadowed(fn: gast.FunctionDef, helpers) -> gast.FunctionDef:
    """`fn` with its variables (params, locals) that Python would read in place of the
    math module, a builtin or a helper it calls renamed (`math` -> `math_`): in the core
    language `math.sign(x)` is the module even where a variable is called math, and
    the dual may call what the user's code did not. Unchanged (the same tree) when
    nothing clashes, which is the rule."""
    reserved = _MODULE_NAMES | set(helpers)

    def variables(tree):
        meant = set()   # Name nodes that are the module, a builtin or a helper
        for n in gast.walk(tree):
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Name):
                meant.add(id(n.func))
            elif isinstance(n, gast.Attribute) and isinstance(n.value, gast.Name):
                meant.add(id(n.value))
        return [n for n in gast.walk(tree) if isinstance(n, gast.Name) and id(n) not in meant]

    clashes = sorted({n.id for n in variables(fn) if n.id in reserved})
    if not clashes:
        return fn
    taken = {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)} | reserved
    mapping = {}
    for c in clashes:
        new = c + "_"
        while new in taken:
            new += "_"
        taken.add(new)
        mapping[c] = new
    fn = copy.deepcopy(fn)
    for n in variables(fn):
        n.id = mapping.get(n.id, n.id)
    return fn


def module_source(kmod) -> str:
    """All functions of `kmod` (a KernelModule) as Python source, in its order."""
    chunks = []
    for name, fn in kmod.functions.items():
        origin = kmod.origins.get(name)
        text = unparse(_unshadowed(fn, kmod.functions))
        if origin:
            text = f"# {origin}\n{text}"
        chunks.append(text)
    return "\n\n\n".join(chunks) + "\n"

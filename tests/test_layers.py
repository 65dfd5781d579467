"""One-way layers, enforced: every import in s2sad/ read with ast and held to s2sad/layers.py.

A violation is one line of text (`up a -> b`, `cycle a b c`, ...). The test fails on any
violation that is not in KNOWN (the debts still open, each with why), and on any entry of
KNOWN that is no longer a violation (so that the list only shrinks).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from s2sad import layers

PACKAGE = Path(layers.__file__).resolve().parent
FOLDERS = ("s2sad.passes", "s2sad.codegen", "s2sad.backends", "s2sad.array_prims")  # each one unit (folder cycles)

# violations not yet fixed: line -> why it is still here. Empty: every debt the first
# version of this test listed is paid (backends as objects took `runtime._backend_for`; the
# passes are handed runtime.Kernel, array_rules.HELPERS and derivative_runtime's names by
# api; the defvjp registry moved to array_prims). A new entry needs a reason and an issue.
KNOWN: dict[str, str] = {}


@dataclass(frozen=True)
class Import:
    importer: str
    target: str          # the s2sad module imported (or the external module's dotted name)
    name: str | None     # the name taken from it (`from target import name`), None for a module
    line: int
    lazy: bool           # inside a function, not run when the module is imported


def module_names() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _with_scope(tree: ast.AST, in_function: bool = False):
    """(node, whether it sits inside a function) for every node of `tree`."""
    for child in ast.iter_child_nodes(tree):
        yield child, in_function
        yield from _with_scope(child, in_function or isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))


def imports_of(module: str, path: Path, modules) -> list[Import]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for n, lazy in _with_scope(tree):
        if isinstance(n, ast.Import):
            out += [Import(module, a.name, None, n.lineno, lazy) for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            base = _resolve(module, path.name == "__init__.py", n)
            for a in n.names:
                sub = f"{base}.{a.name}"
                out.append(Import(module, sub, None, n.lineno, lazy) if sub in modules
                           else Import(module, base, a.name, n.lineno, lazy))
    return out


def private_attributes(module: str, path: Path, modules) -> set[str]:
    """`mod._name` where `mod` is a name an import binds to another s2sad module."""
    tree = ast.parse(path.read_text(), str(path))
    bound = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            base = _resolve(module, path.name == "__init__.py", n)
            bound.update({a.asname or a.name: f"{base}.{a.name}" for a in n.names
                          if f"{base}.{a.name}" in modules})
        elif isinstance(n, ast.Import):
            bound.update({a.asname: a.name for a in n.names if a.asname and a.name in modules})
    return {f"private {module} <- {bound[n.value.id]}.{n.attr}" for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in bound
            and _private(n.attr) and bound[n.value.id] != module}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def all_imports():
    modules = module_names()
    return modules, [i for m, p in modules.items() for i in imports_of(m, p, modules)]


def internal_edges(modules, imports) -> set[tuple[str, str]]:
    return {(i.importer, i.target) for i in imports if i.target in modules and i.target != i.importer}


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    graph: dict[str, list[str]] = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def folder_of(module: str) -> str:
    return next((f for f in FOLDERS if module.startswith(f + ".")), module)


def violations(modules, imports) -> set[str]:
    out = set()
    tools = next(i for i, (name, _, _) in enumerate(layers.LAYERS) if name == "tools")
    for i in imports:
        internal = i.target in modules or i.target.split(".")[0] == "s2sad"
        if not internal:
            if i.lazy and i.target.split(".")[0] not in layers.LAZY_EXTERNAL:
                out.add(f"lazy {i.importer} -> {i.target}")
            if i.target.split(".")[0] == "tests" and layers.layer_of(i.importer) < tools:
                out.add(f"reads-tests {i.importer} -> {i.target}")
            continue
        lo, hi = layers.layer_of(i.importer), layers.layer_of(i.target)
        if hi is not None and lo is not None and hi > lo:
            out.add(f"up {i.importer} -> {i.target}")
        if i.lazy and (i.importer, i.target) not in layers.LAZY_INTERNAL:
            out.add(f"lazy {i.importer} -> {i.target}")
        if i.name is not None and _private(i.name):
            out.add(f"private {i.importer} <- {i.target}.{i.name}")
        if i.target == "s2sad.golden" and lo is not None and lo < tools:
            out.add(f"reads-golden {i.importer}")
    edges = internal_edges(modules, imports)
    out.update("cycle " + " ".join(c) for c in cycles(edges))
    folder_edges = {(folder_of(a), folder_of(b)) for a, b in edges if folder_of(a) != folder_of(b)}
    # a cycle through a folder (one among plain modules is already a module-level cycle)
    out.update("folder-cycle " + " ".join(c) for c in cycles(folder_edges) if set(c) & set(FOLDERS))
    return out


# ---------------------------------------------------------------------------------- tests

def test_every_module_has_a_layer():
    missing = [m for m in module_names() if layers.layer_of(m) is None]
    assert not missing, f"add these modules to a row of s2sad/layers.py: {missing}"


def test_every_row_names_modules_that_exist():
    modules = module_names()
    named = [m for _, ms, _ in layers.LAYERS for m in ms]
    gone = [m for m in named if not (m in modules or (m.endswith(".*") and any(
        x.startswith(m[:-1]) for x in modules)))]
    assert not gone, f"s2sad/layers.py names modules that do not exist: {gone}"


def test_lazy_allowances_are_used():
    modules, imports = all_imports()
    lazy = {(i.importer, i.target) for i in imports if i.lazy}
    unused = [k for k in layers.LAZY_INTERNAL if k not in lazy]
    assert not unused, f"s2sad/layers.py LAZY_INTERNAL allows imports no function makes: {unused}"


def test_imports_go_down_the_layers():
    modules, imports = all_imports()
    found = violations(set(modules), imports)
    for m, p in modules.items():
        found |= private_attributes(m, p, modules)
    new = sorted(found - set(KNOWN))
    fixed = sorted(set(KNOWN) - found)
    assert not new, "imports against the layer rule (s2sad/layers.py):\n" + "\n".join(new)
    assert not fixed, "fixed: remove these lines from KNOWN in tests/test_layers.py:\n" + "\n".join(fixed)


# the checker itself: each kind of violation, and today's old cycles, would be caught

def _imports(*edges, lazy=False, name=None):
    return [Import(a, b, name, 1, lazy) for a, b in edges]


@pytest.mark.parametrize("edges, expect", [
    ((("s2sad.kernel", "s2sad.codegen.python"), ("s2sad.codegen.python", "s2sad.kernel")),
     {"up s2sad.kernel -> s2sad.codegen.python", "cycle s2sad.codegen.python s2sad.kernel",
      "folder-cycle s2sad.codegen s2sad.kernel"}),
    ((("s2sad.runtime", "s2sad.cuda_runtime"), ("s2sad.cuda_runtime", "s2sad.runtime")),
     {"cycle s2sad.cuda_runtime s2sad.runtime"}),
    ((("s2sad.passes.reverse", "s2sad.golden"),),
     {"up s2sad.passes.reverse -> s2sad.golden", "reads-golden s2sad.passes.reverse"}),
    ((("s2sad.passes.elementwise", "s2sad.api"),),
     {"up s2sad.passes.elementwise -> s2sad.api"}),
    ((("s2sad.codegen.llvm", "s2sad.passes.trees"), ("s2sad.passes.trees", "s2sad.codegen.python")),
     {"up s2sad.passes.trees -> s2sad.codegen.python", "folder-cycle s2sad.codegen s2sad.passes"}),
    # the debts paid when backends and the array table landed
    ((("s2sad.passes.arrayprog", "s2sad.runtime"), ("s2sad.runtime", "s2sad.backends.llvm"),
      ("s2sad.backends.llvm", "s2sad.passes.scansplit")),
     {"up s2sad.passes.arrayprog -> s2sad.runtime",
      "folder-cycle s2sad.backends s2sad.passes s2sad.runtime"}),
    ((("s2sad.passes.primcalls", "s2sad.array_rules"),),
     {"up s2sad.passes.primcalls -> s2sad.array_rules"}),
    ((("s2sad.array_prims.shapes", "s2sad.runtime"),),
     {"up s2sad.array_prims.shapes -> s2sad.runtime"}),
    ((("s2sad.backends.llvm", "s2sad.runtime"),),
     {"up s2sad.backends.llvm -> s2sad.runtime"}),
])
def test_the_checker_catches(edges, expect):
    modules = {m for e in edges for m in e}
    assert violations(modules, _imports(*edges)) == expect


def test_the_checker_catches_lazy_and_private_imports():
    found = violations(set(), _imports(("s2sad.runtime", "s2sad.kernel"), lazy=True, name="ScanSpec")
                       + _imports(("s2sad.gemm", "s2sad.runtime"), name="_ptr")
                       + _imports(("s2sad.api", "inspect"), lazy=True))
    assert found == {"lazy s2sad.runtime -> s2sad.kernel", "private s2sad.gemm <- s2sad.runtime._ptr",
                     "lazy s2sad.api -> inspect"}


# ---------------------------------------------------------------------------------- one of each helper

def _defined(name: str) -> list[str]:
    """The modules of s2sad that define a function or class called `name` at module level."""
    return [m for m, p in module_names().items()
            if any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name
                   for n in ast.parse(p.read_text()).body)]


@pytest.mark.parametrize("name, home", [
    ("is_cupy", "s2sad.backends.arraymodule"), ("return_arity", "s2sad.kernel"), ("unparse", "s2sad.kernel_text"),
    ("module_source", "s2sad.kernel_text"), ("source_line", "s2sad.frontend"), ("fresh_name", "s2sad.kernel"),
])
def test_a_shared_helper_is_defined_once(name, home):
    assert _defined(name) == [home]
    assert _defined("_" + name) == [], f"a private copy of {name} is back"


def test_the_reserved_helper_names_are_the_helpers():
    """The passes keep user names off array_prims.HELPER_NAMES; generated code runs with
    array_rules.HELPERS (a layer above, handed down by api): the same names."""
    from s2sad import array_prims, array_rules

    assert set(array_rules.HELPERS) == array_prims.HELPER_NAMES


def test_fresh_name_takes_the_first_free_suffix():
    from s2sad.kernel import fresh_name

    taken = {"a", "a_2"}
    assert fresh_name("a", taken) == "a_3" and fresh_name("b", taken) == "b" and {"a_3", "b"} <= taken


def test_return_arity_counts_tuples_follows_helpers_and_refuses_the_rest():
    import gast

    from s2sad.kernel import ArityError, return_arity

    def fns(src):
        return {f.name: f for f in gast.parse(src).body}

    f = fns("def h(x):\n    return (x, x)\ndef g(x):\n    return h(x)\ndef one(x):\n    return x\n")
    assert [return_arity(f, n, {}) for n in ("h", "g", "one")] == [2, 2, 1]
    assert return_arity(f, "one", {}, single=0) == 0
    with pytest.raises(ArityError) as e:
        return_arity(fns("def r(x):\n    return r(x)\n"), "r", {})
    assert e.value.name == "r" and e.value.lengths is None
    with pytest.raises(ArityError) as e:
        return_arity(fns("def m(x):\n    if x:\n        return (x, x)\n    return x\n"), "m", {})
    assert e.value.lengths == [1, 2]

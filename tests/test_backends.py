"""The backends package: one object per backend behind base.Backend, one registry that
reads names, and no backend names compared anywhere else in s2sad."""
from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import s2sad
from s2sad import backends, runtime
from s2sad.backends import base

ROOT = pathlib.Path(s2sad.__file__).parent
NAMES = {"auto", "python", "llvm", "cuda"}


def loss(x):
    return np.sum(np.tanh(x) * x)


def test_the_registry_names_each_backend_once():
    assert set(backends.NAMES) == NAMES
    for name in NAMES:
        chosen = backends.choose(name)
        assert chosen.name == name and backends.choose(chosen) is chosen
    for name in NAMES - {"auto"}:
        assert isinstance(backends.choose(name), base.Backend)


@pytest.mark.parametrize("bad", ["nope", "LLVM", None, ["llvm"], 3])
def test_unknown_backends_are_refused_where_they_are_used(bad):
    with pytest.raises(s2sad.BackendUnavailableError, match="unknown backend"):
        backends.choose(bad)
    g = s2sad.grad(loss, backend=bad)       # chosen at the first call, as before
    with pytest.raises(s2sad.BackendUnavailableError, match="unknown backend"):
        g(np.ones(3))


def test_auto_is_llvm_for_numpy_and_the_host_backends_resolve_to_themselves():
    args = [np.ones(3), 2.0]
    assert backends.backend_for("auto", args) is backends.LLVM
    assert backends.backend_for("llvm", args) is backends.LLVM
    assert backends.backend_for(backends.PYTHON, args) is backends.PYTHON


def test_the_host_backends_differ_only_behind_the_protocol():
    """The same entry points on both host backends: the same numbers, each launch plan
    kept under its backend's name."""
    k = s2sad.api.compiled(loss).kernel
    x, b = np.linspace(-1.0, 1.0, 12).reshape(3, 4), np.linspace(0.5, 1.0, 4)
    k2 = runtime.Kernel(k.program, k.name + "_copy")
    got = {}
    for be in (backends.PYTHON, backends.LLVM):
        got[be.name] = runtime.vjp(k2, (x[:, :1] + b,), k2.params, np.ones((3, 4)), backend=be)
    np.testing.assert_allclose(got["python"][0], got["llvm"][0], rtol=1e-13)
    assert {key[0] for key in k2.launch_plans} == {"python", "llvm"}


def test_a_derivative_keeps_the_object_it_chose():
    from s2sad.api import Derivative
    from s2sad.targets import target

    d = Derivative(target(loss, "grad"), 0, "python", "grad")
    d(np.ones(4))
    assert d.chosen is backends.PYTHON


def _compares_to_a_name(tree: ast.AST) -> list[int]:
    """Lines comparing something to a backend name ("llvm" == x, x in ("auto", "llvm"))."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                consts = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                if any(isinstance(c, ast.Constant) and c.value in NAMES - {"auto"} for c in consts):
                    lines.append(node.lineno)
    return lines


def test_no_backend_name_is_compared_outside_the_registry():
    found = {}
    for path in ROOT.rglob("*.py"):
        if path == ROOT / "backends" / "__init__.py":
            continue
        lines = _compares_to_a_name(ast.parse(path.read_text()))
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    assert found == {}


def test_backends_never_import_the_layers_above_them():
    above = {"runtime", "api", "column_products", "gemm", "reduce", "cli", "golden", "plancache", "targets"}
    for path in (ROOT / "backends").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                mods = {(node.module or "").split(".")[0]} | {a.name for a in node.names if not node.module}
                if node.level == 2:
                    assert not mods & above, (path.name, node.lineno)

"""Issue 13's sizes: product modules of at most ~600 lines, classes of at most ~300,
functions of at most ~100, measured with ast over every module of s2sad. A unit over
its limit fails the test unless it is on the short allow-list below, with its reason;
an allow-list entry that no longer needs to be there fails too, so the list shrinks."""
import ast
import pathlib

import pytest

import s2sad

ROOT = pathlib.Path(s2sad.__file__).parent
MODULE_LINES, CLASS_LINES, FUNCTION_LINES = 600, 300, 100

# "<module path relative to s2sad>[:<qualified name>]" -> why it is over its limit today
ALLOWED: dict[str, str] = {}     # "path:Name" -> why it may exceed its limit (none today)


def units(path: pathlib.Path, root: pathlib.Path):
    """(key, kind, lines) of a module and of every class and function in it."""
    text = path.read_text()
    rel = path.relative_to(root).as_posix()
    yield rel, "module", len(text.splitlines())
    tree = ast.parse(text)

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{prefix}{child.name}"
                kind = "class" if isinstance(child, ast.ClassDef) else "function"
                yield f"{rel}:{qual}", kind, child.end_lineno - child.lineno + 1
                yield from walk(child, qual + ".")
            else:
                yield from walk(child, prefix)
    yield from walk(tree, "")


LIMIT = {"module": MODULE_LINES, "class": CLASS_LINES, "function": FUNCTION_LINES}


def over_limits(root: pathlib.Path) -> dict[str, str]:
    return {key: f"{kind} of {n} lines (limit {LIMIT[kind]})"
            for p in sorted(root.rglob("*.py")) for key, kind, n in units(p, root) if n > LIMIT[kind]}


def test_modules_classes_and_functions_are_within_their_limits():
    over = over_limits(ROOT)
    unexpected = {k: v for k, v in over.items() if k not in ALLOWED}
    assert unexpected == {}, "split these (or, for a reason, allow-list them in tests/test_code_shape.py)"


def test_the_allow_list_is_needed():
    over = over_limits(ROOT)
    assert sorted(set(ALLOWED) - set(over)) == [], "within the limits now: remove them from ALLOWED"


@pytest.mark.parametrize("source, expect", [
    ("x = 1\n" * 601, {"big.py": "module of 601 lines (limit 600)"}),
    ("class A:\n" + "    x = 1\n" * 300, {"big.py:A": "class of 301 lines (limit 300)"}),
    ("class A:\n    def f(self):\n" + "        x = 1\n" * 100,
     {"big.py:A.f": "function of 101 lines (limit 100)"}),
    ("def f():\n" + "    x = 1\n" * 99, {}),
])
def test_the_measure(tmp_path, source, expect):
    (tmp_path / "big.py").write_text(source)
    assert over_limits(tmp_path) == expect

"""Every parse s2sad makes goes through parsing.py's lock (CPython 3.11's ast module keeps one
recursion count per interpreter: two threads in ast.parse at once can raise "SystemError: AST
constructor recursion depth mismatch", seen in a dask worker running two tasks)."""
import importlib.util
import linecache
import pathlib
import re
import threading

import numpy as np

import s2sad

ROOT = pathlib.Path(s2sad.__file__).parent
DIRECT = re.compile(r"\b(g?ast)\.parse\(")


def test_no_module_but_parsing_calls_ast_parse_directly():
    found = [f"{p.relative_to(ROOT)}:{i}" for p in ROOT.rglob("*.py") if p.name != "parsing.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if DIRECT.search(line)]
    assert found == [], f"parse through s2sad.parsing.ast_parse / gast_parse: {found}"


def test_threads_planning_and_calling_at_once_get_the_same_gradients(tmp_path):
    src = "import numpy as np\n" + "".join(
        f"def loss_{k}(x):\n    return np.sum(np.tanh(x * {k + 1}.0) ** 2 + x[1:].sum() * x[0])\n" for k in range(8))
    path = tmp_path / "thread_losses.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("thread_losses", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def make(k):
        return getattr(module, f"loss_{k}")
    x = np.linspace(-1.0, 1.0, 7)
    results, errors = {}, []

    def work(k):
        try:
            results[k] = s2sad.grad(make(k), backend="python")(x)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    for k in range(8):
        c = k + 1.0
        t = np.tanh(c * x)
        want = 2 * t * (1 - t * t) * c
        want[1:] += x.size * x[0]       # the scalar term is summed once per element
        want[0] += x.size * x[1:].sum()
        np.testing.assert_allclose(results[k], want, rtol=1e-12, atol=1e-12)


def _flaky(real, fails: int):
    """ast.parse failing `fails` times as CPython 3.11 does when another thread parsed meanwhile."""
    calls = []

    def parse(*args, **kwargs):
        calls.append(args)
        if len(calls) <= fails:
            raise SystemError("AST constructor recursion depth mismatch (before=87, after=197)")
        return real(*args, **kwargs)
    return parse, calls


def test_a_parse_another_thread_disturbed_is_made_again(monkeypatch):
    """A dask worker's first gradient failed with this SystemError (the worker's event loop
    thread parsing meanwhile, outside s2sad's lock): the parse is made again, same tree."""
    import ast

    from s2sad import parsing
    parse, calls = _flaky(ast.parse, 2)
    monkeypatch.setattr(ast, "parse", parse)
    tree = parsing.ast_parse("y = x * 2")
    assert len(calls) == 3
    assert ast.dump(tree) == ast.dump(compile("y = x * 2", "<t>", "exec", ast.PyCF_ONLY_AST))


def test_gast_parse_is_made_again_too(monkeypatch):
    import gast

    from s2sad import parsing
    parse, calls = _flaky(gast.parse, 1)
    monkeypatch.setattr(gast, "parse", parse)
    assert isinstance(parsing.gast_parse("x + 1", mode="eval"), gast.Expression)
    assert len(calls) == 2


def test_other_system_errors_and_endless_mismatches_are_raised(monkeypatch):
    import ast

    import pytest

    from s2sad import parsing
    parse, calls = _flaky(ast.parse, 10 ** 6)
    monkeypatch.setattr(ast, "parse", parse)
    with pytest.raises(SystemError, match="mismatch"):
        parsing.ast_parse("x")
    assert len(calls) == parsing.RETRIES + 1

    def broken(*args, **kwargs):
        raise SystemError("something else")
    monkeypatch.setattr(ast, "parse", broken)
    with pytest.raises(SystemError, match="something else"):
        parsing.ast_parse("x")


class _Finalized:
    """Cyclic garbage whose finalizer runs Python code: the collector, run inside a parse's
    tree building, lets another thread take the interpreter there."""

    def __del__(self):
        sum(range(100))


def _at_depth(n: int, fn):
    return fn() if n == 0 else _at_depth(n - 1, fn)


def test_parses_while_a_foreign_thread_parses_without_the_lock():
    """The failure itself, as in a dask worker: another thread (not s2sad's, no lock), at
    another stack depth, parses while s2sad does; the collector's finalizers switch threads
    inside the parse. Without the retry, about one parse a second failed here."""
    import ast
    import sys
    import time

    from s2sad import parsing
    interval = sys.getswitchinterval()
    text = "\n".join(f"def f{k}(a, b):\n    return [a + b * {k} for _ in a] if a else {{'x': (a, [b])}}"
                     for k in range(300))
    want = ast.dump(ast.parse(text))
    stop = threading.Event()

    def foreign():
        while not stop.is_set():
            for _ in range(50):
                d = _Finalized()
                d.me = d
            try:
                _at_depth(60, lambda: ast.parse(text))
            except Exception:   # noqa: BLE001 - the other library's own failure, not this test's
                pass
    t = threading.Thread(target=foreign, daemon=True)
    sys.setswitchinterval(1e-6)
    t.start()
    try:
        end, parses = time.perf_counter() + 4.0, 0
        while time.perf_counter() < end:
            for _ in range(50):
                d = _Finalized()
                d.me = d
            assert ast.dump(parsing.ast_parse(text)) == want
            parses += 1
    finally:
        stop.set()
        t.join(10)
        sys.setswitchinterval(interval)
    assert parses > 0


def test_planning_while_a_foreign_thread_parses_without_the_lock():
    """As in a dask worker: another thread's ast.parse (not s2sad's, no lock) runs while
    s2sad plans; every gradient comes back right."""
    import ast

    stop = threading.Event()
    text = "\n".join(f"def f{k}(a, b):\n    return [a + b * {k} for _ in range(3)]" for k in range(200))

    def foreign():
        while not stop.is_set():
            ast.parse(text)
    t = threading.Thread(target=foreign, daemon=True)
    t.start()
    try:
        x = np.linspace(-1.0, 1.0, 5)
        for k in range(6):
            src = f"def loss(x):\n    return np.sum(np.sin(x * {k + 1}.0))\n"
            scope = {"np": np}
            name = f"<foreign-{k}>"
            linecache.cache[name] = (len(src), None, src.splitlines(True), name)    # the loss's source
            exec(compile(src, name, "exec"), scope)
            g = s2sad.grad(scope["loss"], backend="python")(x)
            np.testing.assert_allclose(g, (k + 1.0) * np.cos((k + 1.0) * x), rtol=1e-13)
    finally:
        stop.set()
        t.join(10)

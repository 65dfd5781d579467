"""Every parse s2sad makes goes through parsing.py's lock (CPython 3.11's ast module keeps one
recursion count per interpreter: two threads in ast.parse at once can raise "SystemError: AST
constructor recursion depth mismatch", seen in a dask worker running two tasks)."""
import importlib.util
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

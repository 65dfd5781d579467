"""Locations follow the file the user ran, whatever ran before with equal code.

Two copies of one module at different paths compile to code objects that compare equal
(CPython's code equality ignores co_filename), and the plan cache keys plans by code:
the plans, the generated sources, explain and the located errors of each copy must name
its own file. Across processes sharing one disk cache (which holds machine code only),
a module moved after a first run names its new path. (Session 10 saw explain print
another checkout's examples/ path once; these are the reproductions tried, kept.)"""
import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2sad
from s2sad.errors import S2SADError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SOURCE = textwrap.dedent("""\
    import numpy as np
    W = np.linspace(0.1, 1.0, 12).reshape(3, 4)


    def loss(x):
        h = np.tanh(W @ x)
        return np.sum(h * h)


    def small(x):
        return np.sum(np.sin(x) * x)
    """)


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _texts(fn, x) -> list[str]:
    g = s2sad.grad(fn)
    g(x)
    g(x)
    return [str(s2sad.explain(fn)), str(s2sad.explain(g, x)), g.__s2sad__.source(),
            str(s2sad.explain(s2sad.hessian(fn), x)), str(s2sad.explain(s2sad.jacfwd(s2sad.grad(fn)), x))]


def _naming(texts: list[str], path: str) -> list[str]:
    return [line for t in texts for line in t.splitlines() if path in line]


@pytest.mark.parametrize("name", ["loss", "small"])
def test_two_copies_of_a_module_each_name_their_file(tmp_path, name):
    paths = []
    for d in ("first", "second"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "mod.py").write_text(SOURCE)
        paths.append(str(tmp_path / d / "mod.py"))
    mods = [_load(p, f"t3_copy_{k}_{name}") for k, p in enumerate(paths)]
    fns = [getattr(m, name) for m in mods]
    assert fns[0].__code__ == fns[1].__code__ and fns[0].__code__ is not fns[1].__code__
    x = np.ones(4)
    for k in (0, 1, 0):
        mine, other = paths[k], paths[1 - k]
        texts = _texts(fns[k], x)
        assert any(mine in t for t in texts)
        assert _naming(texts, other) == []
        if name == "loss":      # (W @ x: 5 elements do not fit)
            with pytest.raises(S2SADError) as e:
                s2sad.grad(fns[k])(np.ones(5))
            assert e.value.location.filename == mine


CHILD = textwrap.dedent("""\
    import importlib.util, sys
    import numpy as np
    import s2sad
    spec = importlib.util.spec_from_file_location("moved_mod", sys.argv[1])
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    x = np.ones(4)
    g = s2sad.grad(m.loss)
    g(x)
    print(str(s2sad.explain(g, x)) + g.__s2sad__.source())
    try:
        g(np.ones(5))
    except s2sad.S2SADError as e:
        print("error at", e.location.filename)
    """)


def test_a_moved_module_names_its_new_path_with_a_warm_disk_cache(tmp_path):
    env = dict(os.environ, S2SAD_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=REPO,
               S2SAD_CACHE_KEY=str(tmp_path / "key" / "cache.key"))
    env.pop("S2SAD_CACHE", None)
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    (before / "mod.py").write_text(SOURCE)
    outs = []
    for where in (before, after):
        if where is after:
            os.rename(before, after)
        r = subprocess.run([sys.executable, str(child), str(where / "mod.py")], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert f"error at {after / 'mod.py'}" in outs[1]
    assert str(before) not in outs[1] and str(after / "mod.py") in outs[1]

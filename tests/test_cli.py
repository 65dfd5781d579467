"""`s2sad compile module.py -o out/`: one summary line per @differentiate function, its
generated source and explain report written, and a non-zero exit with file:line on
the first error."""
import subprocess
import sys
import textwrap

GOOD = textwrap.dedent("""
    import math
    import numpy as np
    import s2sad

    def softplus(z):
        return math.log1p(math.exp(z))

    @s2sad.differentiate
    def loss(x):
        return np.sum(s2sad.broadcast(softplus, x))

    @s2sad.differentiate(argnums=(0, 1))
    def two(x, w):
        return np.sum(np.tanh(x * w))

    def not_decorated(x):
        return x
""")

BAD = textwrap.dedent("""
    import numpy as np
    import s2sad

    def f(z):
        try:
            return z
        except ValueError:
            return 0.0

    @s2sad.differentiate
    def loss(x):
        return np.sum(s2sad.broadcast(f, x))
""")


def run(args, cwd):
    return subprocess.run([sys.executable, "-m", "s2sad", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_compile_writes_source_and_report(tmp_path):
    (tmp_path / "model.py").write_text(GOOD)
    r = run(["compile", "model.py", "-o", "out"], tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("loss:") and lines[1].startswith("two:")
    text = (tmp_path / "out" / "loss.grad.py").read_text()
    assert "def softplus__dual(z):" in text and "# Grad of:" in text
    compile(text, "loss.grad.py", "exec")  # the generated source is valid Python
    assert "dual" in (tmp_path / "out" / "loss.explain.txt").read_text()
    assert (tmp_path / "out" / "two.grad.py").exists()
    assert not (tmp_path / "out" / "not_decorated.grad.py").exists()


def test_compile_fails_with_the_location(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    r = run(["compile", "bad.py", "-o", "out"], tmp_path)
    assert r.returncode == 1
    assert "bad.py:6:" in r.stderr and "try" in r.stderr


def test_missing_file(tmp_path):
    r = run(["compile", "nope.py"], tmp_path)
    assert r.returncode == 2 and "no such file" in r.stderr

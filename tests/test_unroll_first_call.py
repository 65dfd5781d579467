"""A small array program's first gradient in a fresh process: the unrolled plan evaluates
numpy's structural calls on arrays of nodes, and numpy's C code imports its helpers
lazily through the running frame's builtins (x.mean() on an object array, the first time
in a process). With no __import__ there, the first call raised a raw KeyError
('__import__'), a flake that hung on which tests a worker had run before."""
import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent('''
    import numpy as np
    import s2sad

    def loss(x):
        return x.sum() * x.mean() + (x ** 2).sum(axis=1).mean() + x.max()

    x = np.arange(12.0).reshape(3, 4) / 7.0
    g = s2sad.grad(loss)(x)
    # analytic: d/dx [S * S/n] = 2 S / n; d/dx mean_i(sum_j x_ij^2) = 2 x / rows; max: one-hot
    n, rows = x.size, x.shape[0]
    want = 2 * x.sum() / n + 2 * x / rows
    want[np.unravel_index(np.argmax(x), x.shape)] += 1.0
    assert np.allclose(g, want, rtol=1e-12, atol=1e-12), (g, want)
    print("ok")
''')


def test_first_small_gradient_in_a_fresh_process(tmp_path):
    script = tmp_path / "first_call.py"
    script.write_text(PROGRAM)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"

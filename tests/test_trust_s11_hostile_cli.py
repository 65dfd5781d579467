"""`s2sad compile` with an output path it cannot write (an existing file): a one-line
message and status 2, not a FileExistsError traceback from s2sad's insides."""
import textwrap

from s2sad.cli import main


def test_output_path_that_is_a_file(tmp_path, capsys):
    module = tmp_path / "m.py"
    module.write_text(textwrap.dedent("""
        import numpy as np
        import s2sad

        @s2sad.differentiate
        def loss(x):
            return np.sum(np.tanh(x) ** 2)
    """))
    blocker = tmp_path / "out"
    blocker.write_text("not a folder")
    assert main(["compile", str(module), "-o", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and str(blocker) in err and "-o" in err
    assert blocker.read_text() == "not a folder"
    assert main(["compile", str(module), "-o", str(tmp_path / "ok")]) == 0
    assert (tmp_path / "ok" / "loss.grad.py").exists()

"""The README's coverage list is the one generated from the tables (s2sad.coverage):
adding an entry without regenerating it (`s2sad coverage --write`, `make
readme-coverage`) fails here; and the generator lists what the tables hold."""
from __future__ import annotations

import numpy as np

from s2sad import array_prims, coverage, rules
from s2sad.cli import main


def test_readme_coverage_list_is_the_generated_one():
    text = coverage.README.read_text()
    assert text == coverage.with_coverage(text), \
        "README's coverage list is stale: run `python -m s2sad coverage --write` (make readme-coverage)"


def test_generated_list_names_every_entry_callable_and_method():
    md = coverage.coverage_markdown()
    for prim in array_prims.PRIMS.values():
        assert f"- `{prim.name}`:" in md
        for f in prim.funcs:
            assert f"`{coverage.qualified(f)}`" in md
        for m in prim.methods:
            assert f"`x.{m}()`" in md
    for name in rules.NUMPY_ELEMENTWISE:
        assert f"`np.{name}`" in md
    assert "`math.degrees`" in md and "`scipy.special.gammaln`" in md and "`np.sinc`" in md


def test_qualified_names():
    assert coverage.qualified(np.pad) == "np.pad"
    assert coverage.qualified(np.linalg.norm) == "np.linalg.norm"


def test_write_rewrites_only_between_the_markers(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\nbefore\n{coverage.START}\nstale\n{coverage.END}\nafter\n")
    assert main(["coverage", "--write", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("# title\n\nbefore\n") and text.endswith(f"{coverage.END}\nafter\n")
    assert "stale" not in text and coverage.coverage_markdown() in text
    assert main(["coverage", "--write", str(readme)]) == 0
    assert "already up to date" in capsys.readouterr().out
    assert main(["coverage"]) == 0
    assert "`np.roll`" in capsys.readouterr().out

"""Generated code is part of the product: golden/ pins every artifact. On a change,
read the diff as code, then run `make golden`."""
import difflib

from s2sad import golden


def test_golden_files_match():
    arts = golden.artifacts()
    assert len(arts) >= 6 * 4 + 4 + 5 * 3
    diffs = []
    for name, text in sorted(arts.items()):
        path = golden.GOLDEN / name
        old = path.read_text() if path.exists() else ""
        if old != text:
            diffs.append("".join(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                      f"golden/{name}", f"generated/{name}")))
    assert not diffs, "generated code changed (run `make golden` after reading the diff):\n" + "\n".join(diffs)[:20000]

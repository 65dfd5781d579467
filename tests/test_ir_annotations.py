"""Issue 13's "analyses kept on the IR, not in side tables keyed by id()": an adjoint
generation annotates its own copy of the array program (adjoint_analysis.annotated),
so the shared, cached program is never changed, two generations never see each other's
facts, and no module of the adjoint keys a table by a statement."""
import ast
import pathlib

import numpy as np

import s2sad
from s2sad import api
from s2sad.passes.adjoint_analysis import annotated, deferrable_sums
from s2sad.passes.arrayir import ArrayStmt, ForStmt, KernelSum, LoopFacts, StmtFacts, walk_stmts
from s2sad.passes.reverse import Generator

from conftest import central_fd

PASSES = pathlib.Path(s2sad.__file__).parent / "passes"


def looped(w, X, y):
    h = np.tanh(X @ w)
    acc = 0.0
    for i in range(3):
        acc = acc + np.sum((h * w[0] - y) ** 2) * (i + 1)
    return acc


def cross_entropy(w, X, y):
    """Its mean's value is not read by grad's reverse sweep: the sum is deferred."""
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal(4), rng.standard_normal((6, 4)), (rng.random(6) < 0.5).astype(float)


def program_of(fun):
    w, X, y = data()
    s2sad.grad(fun)(w, X, y)
    return api.compiled(fun).program


def test_generations_leave_the_shared_program_unannotated():
    prog = program_of(looped)
    before = list(walk_stmts(prog.body))
    for variant in ("grad", "value_and_grad", "vjp"):
        Generator(prog, (0,)).generate(variant)
    after = list(walk_stmts(prog.body))
    assert len(before) == len(after) and all(a is b for a, b in zip(before, after))
    assert all(st.adjoint is None for st in after if isinstance(st, (ArrayStmt, ForStmt)))


def test_annotated_copy_has_fresh_nodes_and_keeps_pairs_inside():
    prog = program_of(looped)
    copy = annotated(prog)
    mine = list(walk_stmts(copy.body))
    theirs = list(walk_stmts(prog.body))
    assert len(mine) == len(theirs)
    assert not any(a is b for a, b in zip(mine, theirs))
    for st in mine:
        if isinstance(st, ArrayStmt):
            assert isinstance(st.adjoint, StmtFacts) and st.adjoint.partials == []
            assert st.partner is None or any(st.partner is other for other in mine)
        elif isinstance(st, ForStmt):
            assert isinstance(st.adjoint, LoopFacts) and st.adjoint.tape is None
    # two copies share no annotation
    again = annotated(prog)
    assert not any(a.adjoint is b.adjoint for a, b in zip(walk_stmts(again.body), mine)
                   if isinstance(a, ArrayStmt))


def test_loop_tape_and_partials_are_on_the_generations_statements():
    prog = program_of(looped)
    gen = Generator(prog, (0,))
    gen.generate("value_and_grad")
    loops = [st for st in walk_stmts(gen.p.body) if isinstance(st, ForStmt)]
    assert loops and all(lp.adjoint.tape for lp in loops)
    sums = [st for st in walk_stmts(gen.p.body) if isinstance(st, ArrayStmt) and isinstance(st.op, KernelSum)]
    assert sums and any(st.adjoint.partials for st in sums)


def test_deferred_sums_are_named_by_target_and_the_grad_is_right():
    prog = program_of(cross_entropy)
    gen = Generator(prog, (0,))
    gen.generate("grad")
    defer = deferrable_sums(gen.p)
    sums = {st.target for st in walk_stmts(prog.body) if isinstance(st, ArrayStmt) and isinstance(st.op, KernelSum)}
    assert defer and defer <= sums
    # the next generation, on its own copy, finds them by name: their gradients in the reverse sweep
    forward, reverse = Generator(prog, (0,), "auto", defer).generate("grad").split("# reverse sweep")
    assert "sum_grads(" in reverse and "sum_dual(" not in forward
    for fun in (cross_entropy, looped):
        w, X, y = data()
        g = s2sad.grad(fun)(w, X, y)
        np.testing.assert_allclose(g, central_fd(fun, (w, X, y), 0), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(s2sad.value_and_grad(fun)(w, X, y)[1], g, rtol=1e-13, atol=1e-14)


# the modules that write adjoints and the fusion pass: no table keyed by a statement
ADJOINT_MODULES = ("adjoint_analysis", "adjoint_context", "adjoint_text", "forward_sweep", "reverse_sweep",
                   "reverse", "fusion", "arrayir")
STATEMENT_NAMES = {"st", "s", "stmt", "u", "loop", "red", "root", "kst"}


def ids_of_statements(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [f"{path.name}:{n.lineno}" for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "id"
            and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id in STATEMENT_NAMES]


def test_no_statement_identity_in_the_adjoint_modules():
    found = [hit for m in ADJOINT_MODULES for hit in ids_of_statements(PASSES / f"{m}.py")]
    assert found == []


def test_the_scan_sees_a_statement_identity(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(body):\n    seen = {id(st): st for st in body}\n    return seen\n")
    assert ids_of_statements(bad) == ["bad.py:2"]

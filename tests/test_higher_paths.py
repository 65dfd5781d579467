"""jacfwd, jacrev and hessian as declared tables of paths (s2sad/higher.py JACFWD, JACREV,
HESSIAN; the runner in s2sad/higher_paths.py, the paths in s2sad/jacobian_paths.py):
each wrapper keeps the paths that serve its function, in the table's order, the last one
total; the runner applies the guards once (keywords, the argnums checked before the
first full path, numpy's shape errors located) and records the path that answered;
explain lists the paths in order, which declined (and why), which answered.
"""
import numpy as np
import pytest

import s2sad
from s2sad import higher
from s2sad.errors import NonDifferentiableInputError, S2SADError
from s2sad.higher_paths import ANY, NOT_GRAD, OF_GRAD, USERS, Parts, Path, answered, runner
from s2sad.jacobian_paths import PerColumn

A = np.linspace(-1.0, 1.0, 16).reshape(4, 4)
X = np.linspace(0.1, 0.9, 4)
BIG = np.linspace(0.1, 0.9, 100)        # more elements than the unrolled plans take


def mlp(x):
    return np.tanh(A @ x)


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def looped(x):
    s = x * 1.0
    for _ in range(3):
        s = np.tanh(s * 1.1)
    return np.sum(s ** 2)


def scaled(x, y):
    return np.sin(x) * y


def steps(wrapper) -> list[str]:
    return [p.step for p in wrapper.paths]


def kinds(wrapper) -> set:
    return {p.when for p in wrapper.paths}


@pytest.mark.parametrize("make", [s2sad.jacfwd, s2sad.jacrev, s2sad.hessian])
def test_each_table_ends_with_a_total_path_and_starts_warm(make):
    w = make(rosen)
    assert w.paths[-1].total and not any(p.total for p in w.paths[:-1])
    assert not w.paths[0].checks_argnums


def test_the_paths_kept_serve_the_function():
    # a function of the user's: no path of a grad's; the grad of one: no unrolled first-derivative plan
    assert OF_GRAD not in kinds(s2sad.jacfwd(mlp)) and OF_GRAD not in kinds(s2sad.jacrev(mlp))
    g = s2sad.grad(rosen)
    for make in (s2sad.jacfwd, s2sad.jacrev):
        assert kinds(make(g)) <= {OF_GRAD, ANY}, steps(make(g))
        assert make(g).paths[0].when == OF_GRAD
    assert [p.name for p in s2sad.jacrev(mlp).paths] == \
        ["unrolled", "batched", "diagonal", "diagonal", "unrolled", "batched", "one by one"]
    assert [p.name for p in s2sad.jacfwd(mlp).paths] == \
        ["unrolled", "diagonal", "diagonal", "unrolled", "batched", "one by one"]
    assert [p.name for p in s2sad.hessian(rosen).paths] == ["unrolled", "containers", "batched", "one by one"]
    assert {USERS, NOT_GRAD} & kinds(s2sad.jacrev(mlp))


def pairs(x):
    return np.tanh(x[1:] * x[:-1])


def pairs_jacobian(x):
    s = 1 - np.tanh(x[1:] * x[:-1]) ** 2
    n = len(x)
    jac = np.zeros((n - 1, n))
    jac[np.arange(n - 1), np.arange(n - 1)] = s * x[1:]
    jac[np.arange(n - 1), np.arange(1, n)] = s * x[:-1]
    return jac


def test_took_names_the_path_that_answered():
    w = s2sad.jacrev(pairs)
    w(X)
    first = answered(w)
    assert w.paths[first].step == "unrolled (small_jacobian)" and w.took == ("unrolled",)
    w(X)        # warm: the first path answers now
    assert answered(w) == 0 and w.took == ("unrolled",)
    big = np.linspace(0.1, 0.9, 80)       # past the unrolled plan's size: the batched rows
    np.testing.assert_allclose(w(big), pairs_jacobian(big), rtol=1e-12)
    assert w.paths[answered(w)].step == "batched rows (batched_rows)" and w.took == ("batched",)
    w(big)
    assert w.paths[answered(w)].step == "batched rows, warm (batched_rows)"
    np.testing.assert_allclose(w(X), pairs_jacobian(X), rtol=1e-12)
    assert answered(w) == 0


def test_explain_declined_answered_not_tried():
    w = s2sad.jacrev(mlp)
    t = str(s2sad.explain(w, X)).splitlines()
    at = t.index("  paths of s2sad.jacrev(mlp), in order:")
    listed = t[at + 1:]
    assert [line.split(". ", 1)[1].split(":")[0] for line in listed] == steps(w)
    assert listed[0].endswith("declined: no warm entry for these arguments (none made yet, or one for other "
                              "arguments)")
    assert "4. diagonal (jacdiag): declined: not an elementwise map" in listed[3]
    assert listed[4] == "    5. unrolled (small_jacobian): answered"
    assert listed[5].endswith(": not tried") and listed[6].endswith(": not tried")
    assert "    1. unrolled, warm (small_jacobian): answered" in str(s2sad.explain(w, X))     # warm now


def test_explain_of_a_hessian_lists_its_paths_and_its_jacfwd_s():
    t = str(s2sad.explain(s2sad.hessian(looped), X))
    assert "paths of s2sad.hessian(looped), in order:" in t
    assert "1. unrolled second derivatives, warm, else planned (small_hessian): declined: a loop" in t
    assert "2. containers: a column per leaf element (tree_higher): declined: no container" in t
    assert "3. batched columns (batched_jac): declined: a loop (" in t and "4. jacfwd of the grad: answered" in t
    assert "paths of s2sad.jacfwd(s2sad.grad(looped)), in order:" in t
    assert "one jvp per input element: answered" in t
    big = str(s2sad.explain(s2sad.hessian(rosen), BIG))
    assert "declined: an argument of more than 64 elements" in big and "3. batched columns (batched_jac): answered" in big
    assert "4. jacfwd of the grad: not tried" in big


def test_explain_says_why_a_map_is_not_diagonal():
    t = str(s2sad.explain(s2sad.jacfwd(scaled), X, np.ones((3, 4))))     # x broadcast against a larger y
    assert "diagonal (jacdiag): declined: the argument broadcasts against a larger one" in t


class Declines(Path):
    """A path that declines and records what it was given."""
    name, step, when = "test", "declines", ANY
    seen: list = []

    def try_(self, args):
        Declines.seen.append(args)
        return None


class DeclinesAfterCheck(Declines):
    step, checks_argnums = "declines after the argnums check", True


def test_the_runner_binds_keywords_and_checks_argnums_once_before_the_first_full_path(monkeypatch):
    checks = []
    monkeypatch.setattr("s2sad.higher_paths.check_argnums", lambda *a: checks.append(a))
    Declines.seen = []
    w = runner("jacfwd", Parts(scaled, 0, "auto"), (Declines, DeclinesAfterCheck, Declines, PerColumn))
    got = w(y=np.ones(4), x=X)        # keywords bound to positions before any path runs
    assert [type(a) for a in Declines.seen[0]] == [np.ndarray, np.ndarray] and len(Declines.seen) == 3
    assert len(checks) == 1 and w.took is w.paths[-1].took
    np.testing.assert_allclose(got, np.diag(np.cos(X)), rtol=1e-14)


def test_the_runner_refuses_a_table_without_a_total_path():
    with pytest.raises(AssertionError):
        runner("jacfwd", Parts(scaled, 0, "auto"), (Declines, DeclinesAfterCheck))


def test_the_shared_guards_still_refuse_located():
    for make in (s2sad.jacfwd, s2sad.jacrev, s2sad.hessian):
        with pytest.raises(S2SADError, match="out of range") as e:
            make(rosen, argnums=3)(X)
        assert "test_higher_paths.py" in str(e.value)
        with pytest.raises(NonDifferentiableInputError):
            make(rosen)(np.arange(4))
        with pytest.raises(s2sad.ShapeError):
            make(mlp if make is not s2sad.hessian else lambda_free_sum)(np.ones(5))


def lambda_free_sum(x):
    return np.sum(A @ x)


def test_tables_are_the_module_constants():
    assert higher.jacobian is higher.jacrev
    assert [t.__name__ for t in higher.HESSIAN] == ["UnrolledHessian", "HessianTree", "HessianBlocks", "HessianColumns"]
    assert len(higher.JACFWD) == 7 and len(higher.JACREV) == 9

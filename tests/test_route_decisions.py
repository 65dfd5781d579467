"""Issue 13's "planning picks paths by analysis, not by catching exceptions": whether a
grad called in scalar code is inlined element by element (normderiv) is the route
analysis's `elementwise_gradient`, the same one that makes such a call no array
operation for the caller's route; a plan it decides on that reads more than its
argument is refused, located, instead of another path being tried."""
import ast
import pathlib

import numpy as np
import pytest

import s2sad
from s2sad.frontend import parse_function
from s2sad.passes.routes import elementwise_gradient, route_of, summed_loss_plan
from s2sad.targets import entry_function

PASSES = pathlib.Path(s2sad.__file__).parent / "passes"
Y = np.array([2.0, 3.0])
counter = [0.0]


def cube_sum(x):
    return np.sum(x ** 3)


def cube_sum_rows(x):
    return np.sum(s2sad.broadcast(lambda t: t ** 3 - t, x))


def cube_mean(x):
    return np.mean(x ** 3)


def two_args(x, y):
    return np.sum(x ** 3 * y)


def free_array(x):
    return np.sum(x ** 3 * Y)


def looped(x):
    acc = 0.0
    for i in range(2):
        acc = acc + np.sum(x ** 3)
    return acc


def reads_element(x):
    def h(t):
        return t ** 3 * Y[0]
    return np.sum(s2sad.broadcast(h, x))


def counts(t):
    counter[0] = counter[0] + 1.0
    return t ** 3


def writes_state(x):
    return np.sum(s2sad.broadcast(counts, x))


def parsed(f):
    return entry_function(parse_function(f))


@pytest.mark.parametrize("fun, expect", [
    (cube_sum, True), (cube_sum_rows, True), (reads_element, True), (writes_state, True),
    (cube_mean, False), (two_args, False), (free_array, False), (looped, False)])
def test_elementwise_gradient_is_read_from_the_tree(fun, expect):
    assert elementwise_gradient(parsed(fun)) is expect
    assert (summed_loss_plan(parsed(fun)) is not None) is expect


def map_of_grad(fun):
    g = s2sad.grad(fun)

    def outer(x):
        return sum(map(g, x))
    return outer


@pytest.mark.parametrize("fun, second", [(cube_sum, lambda x: 6 * x), (cube_sum_rows, lambda x: 6 * x)])
def test_an_elementwise_gradient_is_inlined_and_right(fun, second):
    outer = map_of_grad(fun)
    assert route_of(parsed(outer)).kind == "fused"
    x = np.array([0.5, -1.5, 2.0])
    np.testing.assert_allclose(s2sad.grad(outer)(x), second(x), rtol=1e-13)


@pytest.mark.parametrize("fun, words", [(reads_element, "reads Y[0] besides its argument"),
                                        (writes_state, "writes state")])
def test_a_summed_loss_reading_more_than_its_argument_is_refused_where_called(fun, words):
    outer = map_of_grad(fun)
    before = counter[0]
    with pytest.raises(s2sad.HigherOrderNotSupportedError) as got:
        s2sad.grad(outer)(np.array([0.5, 1.5]))
    assert words in str(got.value) and got.value.location.filename == __file__
    assert counter[0] == before      # nothing ran


@pytest.mark.parametrize("fun", [cube_mean, free_array])
def test_a_gradient_that_is_not_elementwise_is_refused(fun):
    outer = map_of_grad(fun)
    with pytest.raises(s2sad.S2SADError):
        s2sad.grad(outer)(np.array([0.5, 1.5]))


def handlers_catching(tree, names=("S2SADError",)) -> list[int]:
    return [h.lineno for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler) and h.type is not None
            and any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(h.type))]


def test_normderiv_catches_no_refusal():
    tree = ast.parse((PASSES / "normderiv.py").read_text())
    assert handlers_catching(tree) == []


def test_the_scan_sees_a_caught_refusal():
    tree = ast.parse("try:\n    plan()\nexcept S2SADError:\n    pass\n")
    assert handlers_catching(tree) == [3]


# every `except S2SADError` in s2sad that does not end by raising (a path chosen by a
# caught refusal, or an error reported), by module and enclosing function, with why it stays
CAUGHT = {
    "cli.py:main": "reports the error to the user (exit status 1): not a path choice",
    "cli.py:compile_module": "reports the error to the user (exit status 1): not a path choice",
    "api.py:run": "calls_bound: the target of a call that fails to bind is the api's own to refuse, "
                  "where it is located (a deferral)",
    "first_order.py:_checked_planned": "a derivative whose function cannot be planned: the higher-order path "
                                  "refuses it, naming the composition's level (a deferral)",
    "array_higher.py:is_array_derivative": "owned by a parallel change this session (route_of would decide)",
    "jacdiag.py:full": "jacfwd/jacrev of what cannot be planned: the column-by-column path's jvp/vjp "
                       "refuses it, located (a deferral)",
    "batched_jac.py:__call__": "a Hessian or Jacobian of what cannot be planned: the per-column path "
                               "refuses it, located (a deferral)",
    "paramuses.py:_helper_calls": "a helper whose source cannot be read: no use of it to report (the "
                                  "planner takes or refuses the call where it is, located)",
    "arguments.py:only_return": "the location of an error already being raised: a function whose source "
                                "cannot be read has no return to point at (the def is used)",
    "small_hessian.py:full": "a Hessian of what cannot be planned: the batched or per-column path "
                             "refuses it, located (a deferral)",
    "batched_rows.py:__call__": "jacrev of what cannot be planned: the per-row path refuses it, located "
                                "(a deferral)",
    "passes/routes.py:derivative": "an unreadable function: the route chosen says so where it reads it "
                                   "(frontend has no non-raising parse)",
    "passes/routes.py:python_function": "an unreadable function: as derivative",
    "passes/rowelems.py:callee": "a callee without source: the normalizer refuses it where it is called "
                                 "(frontend has no non-raising parse)",
}


def caught_without_raising(path: pathlib.Path, root: pathlib.Path) -> list[str]:
    """module:function of each handler catching S2SADError whose body does not end in raise."""
    tree = ast.parse(path.read_text())
    found = []

    def walk(node, fn):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else fn
            if isinstance(child, ast.ExceptHandler) and handlers_catching(ast.Module([child], [])) \
                    and not isinstance(child.body[-1], ast.Raise):
                found.append(f"{path.relative_to(root).as_posix()}:{fn}")
            walk(child, inner)
    walk(tree, "<module>")
    return found


def test_refusals_caught_to_choose_a_path_are_the_listed_ones():
    root = PASSES.parent
    found = sorted(hit for p in sorted(root.rglob("*.py")) for hit in caught_without_raising(p, root))
    assert found == sorted(CAUGHT)

"""explain of a Jacobian or Hessian wrapper heads its output with the whole composition
the user wrote: `s2sad.jacfwd(s2sad.grad(f))`, not `s2sad.jacfwd(f)` (the grad wrapper
carries f's names, so the wrapper's own name lost the inner grad)."""
import numpy as np
import pytest

import s2sad


def loss(x):
    return np.sum(np.sin(x) * x)


def loss2(x, y):
    return np.sum(np.sin(x) * y * y)


def elementwise(x):
    return np.tanh(x) * x


X = np.linspace(0.1, 0.5, 3)
CASES = {
    "jacfwd(grad)": (lambda: s2sad.jacfwd(s2sad.grad(loss)), (X,), "s2sad.jacfwd(s2sad.grad(loss))"),
    "jacrev(grad)": (lambda: s2sad.jacrev(s2sad.grad(loss)), (X,), "s2sad.jacrev(s2sad.grad(loss))"),
    "jacfwd(grad, argnums)": (lambda: s2sad.jacfwd(s2sad.grad(loss2, argnums=1), argnums=1), (X, X),
                              "s2sad.jacfwd(s2sad.grad(loss2))"),
    "jacrev(grad), 70 elements (not unrolled)": (lambda: s2sad.jacrev(s2sad.grad(loss), argnums=0), (np.ones(70),),
                                  "s2sad.jacrev(s2sad.grad(loss))"),
    "hessian": (lambda: s2sad.hessian(loss), (X,), "s2sad.hessian(loss)"),
    "jacfwd": (lambda: s2sad.jacfwd(elementwise), (X,), "s2sad.jacfwd(elementwise)"),
    "jacrev": (lambda: s2sad.jacrev(elementwise), (X,), "s2sad.jacrev(elementwise)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_heading_names_the_whole_composition(case):
    make, args, want = CASES[case]
    e = s2sad.explain(make(), *args)
    assert str(e).splitlines()[0].startswith(f"s2sad.explain: {want} at (")
    assert e.function == want


def test_the_last_call_heading_too():
    j = s2sad.jacfwd(s2sad.grad(loss))
    j(X)
    assert str(s2sad.explain(j)).startswith("s2sad.explain: s2sad.jacfwd(s2sad.grad(loss)) (its last call)")

"""A Hessian or Jacobian function s2sad made (hessian, jacfwd, jacrev, jacobian),
differentiated again or called inside a function s2sad differentiates: refused as a
HigherOrderNotSupportedError that names the object, its order and the order asked for,
located at the call (inside a loss) or at the user's function. Before: a defvjp hint
("register its reverse-mode rule ... s2sad.defvjp(H, ...)") inside an array program, "no
Python source" inside a scalar one, and "cannot take *args" for grad(hessian(f))."""
import numpy as np
import pytest

import s2sad
from s2sad.errors import HigherOrderNotSupportedError


def cube_sum(x):
    return np.sum(x ** 3)


def cube(x):
    return x ** 3


def squares(x):
    return x * x * np.sum(x)


H = s2sad.hessian(cube_sum)
HS = s2sad.hessian(cube)
JF = s2sad.jacfwd(squares)
JR = s2sad.jacrev(squares)
JAC = s2sad.jacobian(squares)
JG = s2sad.jacfwd(s2sad.grad(cube_sum))


def loss_h(x):
    return np.sum(H(x))


def loss_hs(x):
    return HS(x) * 2.0


def loss_jf(x):
    return np.sum(JF(x))


def loss_jr(x):
    return np.sum(JR(x) * x)


def loss_jac(x):
    return np.sum(JAC(x))


def loss_jg(x):
    return np.sum(JG(x))


X = np.array([0.5, -1.0, 2.0])
INSIDE = [(loss_h, X, "s2sad.hessian(cube_sum)", 2), (loss_hs, 1.5, "s2sad.hessian(cube)", 2),
          (loss_jf, X, "s2sad.jacfwd(squares)", 1), (loss_jr, X, "s2sad.jacrev(squares)", 1),
          (loss_jac, X, "s2sad.jacrev(squares)", 1), (loss_jg, X, "s2sad.jacfwd(s2sad.grad(cube_sum))", 2)]


@pytest.mark.parametrize("entry", ["grad", "value_and_grad", "vjp", "jvp"])
@pytest.mark.parametrize("loss, x, named, order", INSIDE, ids=[i[0].__name__ for i in INSIDE])
def test_called_inside_a_loss_is_refused_naming_the_order(loss, x, named, order, entry):
    with pytest.raises(HigherOrderNotSupportedError) as e:
        if entry == "vjp":
            s2sad.vjp(loss, x)
        elif entry == "jvp":
            s2sad.jvp(loss, (x,), (x,))
        else:
            getattr(s2sad, entry)(loss)(x)
    text = str(e.value)
    assert named in text and f"order {order} " in text and f"order {order + 1}" in text
    assert "defvjp" not in text and "no Python source" not in text
    assert e.value.location.filename == __file__
    assert e.value.location.lineno == loss.__code__.co_firstlineno + 1     # the call


OBJECTS = [(H, X, cube_sum), (HS, 1.5, cube), (JF, X, squares), (JR, X, squares), (JG, X, cube_sum)]


@pytest.mark.parametrize("entry", ["grad", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "hvp"])
@pytest.mark.parametrize("obj, x, base", OBJECTS, ids=["H", "HS", "JF", "JR", "JG"])
def test_differentiated_again_is_refused_at_the_users_function(obj, x, base, entry):
    with pytest.raises(HigherOrderNotSupportedError, match="made by s2sad, differentiated") as e:
        if entry == "jvp":
            s2sad.jvp(obj, (x,), (x,))
        elif entry == "vjp":
            s2sad.vjp(obj, x)
        elif entry == "hvp":
            s2sad.hvp(obj, (x,), (x,))
        else:
            getattr(s2sad, entry)(obj)(x)
    assert e.value.location.lineno == base.__code__.co_firstlineno
    assert "*args" not in str(e.value)


def test_their_values_as_data_still_work(backend):
    """What the hint says to do: M computed outside, a constant in the loss."""
    M = H(X)

    def loss(x, M):
        return x @ M @ x

    np.testing.assert_allclose(M, np.diag(6 * X), rtol=1e-14)
    np.testing.assert_allclose(s2sad.grad(loss, backend=backend)(X, M), (M + M.T) @ X, rtol=1e-14)


def test_a_users_function_that_copied_the_dict_is_the_users():
    """The mark is recognised by s2sad's own wrapper code, not by the attribute alone."""
    def mine(x):
        return np.sum(x * x)
    mine.__dict__.update(H.__dict__)
    np.testing.assert_allclose(s2sad.grad(mine)(X), 2 * X, rtol=1e-15)

"""A hostile user's hessian / jacfwd / jacrev / hvp (session 8, trust): argnums tuples and
negative argnums, ints, 0-d and empty arrays, float32, functions returning tuples and dicts,
closures, stateful functions, a derivative inside a loss inside a derivative. Each answer
against central differences of a lower derivative, or a located refusal.

Fixed here: jacfwd of an empty input raised a raw ValueError (no column to learn the
output's shape from); jacfwd/jacrev of a function returning a tuple raised a raw ValueError,
and jacfwd of one returning a dict returned an object array of dicts (now the Jacobians in
the output's structure, JAX's layout)."""
import math

import numpy as np
import pytest

import s2sad
from s2sad.errors import NonDifferentiableInputError


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def two(x, y):
    return np.sum(np.sin(x) * y ** 2) + np.sum(x * x) * np.sum(y)


def scal(a, b):
    return a * a * b + math.sin(a * b)


def vecmap(x):
    return np.tanh(x) * x[::-1]


def pair_out(x):
    return np.sin(x), np.sum(x ** 2)


def dict_out(x):
    return {"b": x ** 3, "a": np.sin(x)}


def two_out(x, y):
    return x * y, np.sum(x ** 2 * y)


SCALE = np.array([1.0, 2.0, 3.0])


def closure_f(x):
    return np.sum(SCALE * x ** 3)


STATE = {"n": 0}


def stateful(x):
    STATE["n"] += 1
    return np.sum(x ** 2)


g_inner = s2sad.grad(lambda w: np.sum(np.sin(w) * w))


def dloss(w):
    return np.sum(g_inner(w) ** 2)


def jac_fd(f, args, i, h=1e-6):
    """Central differences of any array-valued f(*args) in args[i]: out.shape + in.shape."""
    args = list(args)
    a = np.asarray(args[i], dtype=float)
    f0 = np.asarray(f(*args), dtype=float)
    J = np.zeros(f0.shape + a.shape)
    for idx in np.ndindex(a.shape):
        ap, am = a.copy(), a.copy()
        ap[idx] += h
        am[idx] -= h
        args[i] = ap if a.ndim else float(ap)
        fp = np.asarray(f(*args), dtype=float)
        args[i] = am if a.ndim else float(am)
        fm = np.asarray(f(*args), dtype=float)
        J[(...,) + idx] = (fp - fm) / (2 * h)
    return J


X = np.array([0.3, -0.7, 1.2])
Y = np.array([0.5, 1.5, -0.2])


def close(got, want, tol=1e-5):
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_hessian_argnums_forms():
    H = jac_fd(s2sad.grad(rosen), [X], 0)
    close(s2sad.hessian(rosen)(X), H)
    close(s2sad.hessian(rosen, argnums=-1)(X), H)
    (H00,), = s2sad.hessian(rosen, argnums=(0,))(X)
    close(H00, H)
    (Hxx, Hxy), (Hyx, Hyy) = s2sad.hessian(two, argnums=(0, 1))(X, Y)
    gx, gy = s2sad.grad(two, argnums=0), s2sad.grad(two, argnums=1)
    close(Hxx, jac_fd(gx, [X, Y], 0))
    close(Hxy, jac_fd(gx, [X, Y], 1))
    close(Hyx, jac_fd(gy, [X, Y], 0))
    close(Hyy, jac_fd(gy, [X, Y], 1))
    close(s2sad.hessian(two, argnums=-2)(X, Y), Hxx)
    (a, b), (c, d) = s2sad.hessian(scal, argnums=(0, 1))(0.5, 1.5)
    assert isinstance(a, float) and b == pytest.approx(c, rel=1e-12)
    assert a == pytest.approx(2 * 1.5 - 1.5 ** 2 * math.sin(0.75), rel=1e-12)
    assert d == pytest.approx(-0.25 * math.sin(0.75), rel=1e-12)


def test_hessian_refusals_and_data_arguments():
    """Refused at the user's function (they named no file before)."""
    with pytest.raises(s2sad.S2SADError, match="test_trust_higher.py:.*argnums 5 is out of range"):
        s2sad.hessian(two, argnums=5)(X, Y)
    for call in (lambda: s2sad.hessian(rosen)(np.array([1, 2, 3])), lambda: s2sad.jacfwd(scal)(1, 1.5),
                 lambda: s2sad.jacrev(vecmap)(np.array([1, 2])), lambda: s2sad.hvp(rosen, (np.array([1, 2]),), (X[:2],))):
        with pytest.raises(NonDifferentiableInputError, match="test_trust_higher.py:"):
            call()
    Yi = np.array([1, 2, 3])
    close(s2sad.hessian(two)(X, Yi), jac_fd(lambda a: s2sad.grad(two)(a, Yi), [X], 0))


def test_float32_zero_d_and_empty():
    H32 = s2sad.hessian(rosen)(X.astype(np.float32))
    assert H32.dtype == np.float32
    close(H32, jac_fd(s2sad.grad(rosen), [X], 0), 1e-2)
    assert s2sad.jacfwd(vecmap)(X.astype(np.float32)).dtype == np.float32
    assert s2sad.jacrev(vecmap)(X.astype(np.float32)).dtype == np.float32
    assert float(s2sad.hessian(lambda a: np.sum(a ** 3))(np.array(0.5))) == pytest.approx(3.0)
    close(s2sad.hessian(lambda a: np.sum(a ** 2))(np.zeros(0)), np.zeros((0, 0)))
    close(s2sad.hessian(lambda a: np.sum(a ** 2))(np.zeros((0, 3))), np.zeros((0, 3, 0, 3)))
    for jac in (s2sad.jacfwd, s2sad.jacrev):
        close(jac(vecmap)(np.zeros(0)), np.zeros((0, 0)))
        J = jac(vecmap)(np.zeros(0, dtype=np.float32))
        assert J.shape == (0, 0) and J.dtype == np.float32
        close(jac(vecmap)(X), jac_fd(vecmap, [X], 0))


@pytest.mark.parametrize("jac", [s2sad.jacfwd, s2sad.jacrev], ids=["jacfwd", "jacrev"])
def test_container_outputs_have_their_jacobians_in_their_structure(jac):
    a, b = jac(pair_out)(X)
    close(a, jac_fd(lambda x: pair_out(x)[0], [X], 0))
    close(b, jac_fd(lambda x: pair_out(x)[1], [X], 0))
    d = jac(dict_out)(X)
    assert isinstance(d, dict) and sorted(d) == ["a", "b"]
    close(d["a"], np.diag(np.cos(X)))
    close(d["b"], np.diag(3 * X ** 2))
    (axx, axy), (bx, by) = jac(two_out, argnums=(0, 1))(X, Y)
    close(axx, np.diag(Y))
    close(axy, np.diag(X))
    close(bx, 2 * X * Y)
    close(by, X ** 2)


def test_closures_state_and_nesting():
    close(s2sad.hessian(closure_f)(X), np.diag(6 * SCALE * X))
    before = dict(STATE)
    with pytest.raises(s2sad.S2SADError, match="'STATE' holds a dict"):
        s2sad.hessian(stateful)(X)
    assert STATE == before          # refused before it ran
    close(s2sad.hessian(dloss)(X), jac_fd(s2sad.grad(dloss), [X], 0), 1e-4)
    g3 = s2sad.grad(lambda w: np.sum(s2sad.grad(dloss)(w)))(X)
    close(g3, np.sum(jac_fd(s2sad.grad(dloss), [X], 0), axis=0), 1e-4)


def test_hvp_forms_and_no_mutation():
    H = jac_fd(s2sad.grad(rosen), [X], 0)
    x, v = X.copy(), Y.copy()
    close(s2sad.hvp(rosen, (x,), (v,)), H @ Y)
    assert np.array_equal(x, X) and np.array_equal(v, Y)
    close(s2sad.hvp(rosen, (X,), (np.array([1, 0, 0]),)), H[:, 0])
    got32 = s2sad.hvp(rosen, (X.astype(np.float32),), (Y.astype(np.float32),))
    assert got32.dtype == np.float32
    close(got32, H @ Y, 1e-2)
    with pytest.raises(s2sad.S2SADError, match=r"has shape \(2,\), its primal \(3,\)"):
        s2sad.hvp(rosen, (X,), (Y[:2],))
    Hn = s2sad.hessian(rosen)(np.array([np.nan, 1.0, 2.0]))
    assert Hn.shape == (3, 3) and np.isnan(Hn[0, 0])

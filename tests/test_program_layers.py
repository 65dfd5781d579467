"""Dense layers whose partial is stored (`product_partials`, `lhs_bar_sums`: a tanh or
relu layer `act(X @ W + b)`) in the one compiled call of a warm gradient
(array_program.py): where numpy multiplies (products below gemm.MIN_WORK) their sites
are numpy's BLAS calls, the kernel's kept store_partials launch and product_sums's
compiled pass; the program's results are the full path's, bit for bit, and right."""
import numpy as np
import pytest

import s2sad
from s2sad import blas_calls
from conftest import assert_same_bits, directional_fd, function_from_source, specialised_copy

pytestmark = pytest.mark.skipif(not blas_calls.available(), reason="numpy bundles no scipy-openblas64")

SOURCE = '''
import numpy as np


def xent(z, Y):
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def mlp3(W1, b1, W2, b2, W3, b3, X, Y):
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.maximum(h1 @ W2 + b2, 0.0)
    z = h2 @ W3 + b3
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def tanh_softmax(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))
'''
rng = np.random.default_rng(1717)
NARGS = {"mlp3": 6, "tanh_softmax": 4}
CLASSES = 10


def _loss(tmp_path, name, module):
    return function_from_source(tmp_path, module, SOURCE, name)


def _args(name, n, d, dtype=np.float64, h=64):
    Y = np.eye(CLASSES)[rng.integers(0, CLASSES, n)]
    X = rng.normal(size=(n, d))
    if name == "mlp3":
        a = [rng.normal(size=(d, h)) / np.sqrt(d), rng.normal(size=(1, h)) * 0.1,
             rng.normal(size=(h, h)) / np.sqrt(h), rng.normal(size=(1, h)) * 0.1,
             rng.normal(size=(h, CLASSES)) / np.sqrt(h), rng.normal(size=(1, CLASSES)) * 0.1, X, Y]
    else:
        a = [rng.normal(size=(d, h)) / np.sqrt(d), rng.normal(size=(1, h)) * 0.1,
             rng.normal(size=(h, CLASSES)) / np.sqrt(h), rng.normal(size=(1, CLASSES)) * 0.1, X, Y]
    return [x.astype(dtype) for x in a]


def _grad(tmp_path, name, module):
    return s2sad.grad(_loss(tmp_path, name, module), argnums=tuple(range(NARGS[name])))


def _full(tmp_path, name, args, module):
    """The full path's result: a new grad's first call (its hot path not made yet)."""
    return _grad(tmp_path, name, module)(*args)


def _warm(tmp_path, name, args, module="warm"):
    g = _grad(tmp_path, name, f"{module}_{name}")
    for _ in range(3):
        g(*args)
    return g


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name,n,d,h", [("mlp3", 16, 32, 64), ("mlp3", 32, 32, 64), ("mlp3", 64, 32, 64),
                                        ("mlp3", 600, 8, 16), ("tanh_softmax", 16, 32, 64),
                                        ("tanh_softmax", 32, 32, 64), ("tanh_softmax", 64, 32, 64)])
def test_a_warm_call_is_one_program_with_the_full_paths_bits(tmp_path, name, n, d, h, dtype):
    args = _args(name, n, d, dtype, h)
    g = _warm(tmp_path, name, args)
    spec = specialised_copy(g, args)
    assert spec is not None and spec[2] is None, spec and spec[2]     # one program, no reason against
    assert spec[0] is not spec[3]
    line = [x for x in s2sad.explain(g, *args).lines if "warm calls" in x][0]
    assert "the whole gradient as one compiled call" in line
    for trial in range(3):      # new values of the signature: the program's results, the full path's bits
        new = _args(name, n, d, dtype, h)
        assert_same_bits(g(*new), _full(tmp_path, name, new, f"full_{name}_{trial}"))
    if dtype == np.float64:     # and right: central differences along a direction, the python backend
        loss = _loss(tmp_path, name, f"fd_{name}")
        k = NARGS[name]
        tans = [rng.normal(size=a.shape) if i < k else np.zeros(a.shape) for i, a in enumerate(args)]
        got = g(*args)
        fd = float(directional_fd(loss, args, tans))
        np.testing.assert_allclose(sum(float(np.sum(x * t)) for x, t in zip(got, tans)), fd, rtol=1e-6, atol=1e-9)
        python = s2sad.grad(_loss(tmp_path, name, f"py_{name}"), argnums=tuple(range(k)), backend="python")(*args)
        for a, b in zip(got, python):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_zeros_ties_and_signed_zeros_are_the_full_paths(tmp_path):
    """relu's tie (a product of exactly 0: its stored partial), zero rows, -0.0 weights,
    an infinity and a NaN: the program's bits are the full path's."""
    args = _args("mlp3", 32, 32)
    g = _warm(tmp_path, "mlp3", args)
    assert specialised_copy(g, args)[2] is None
    cases = []
    a = _args("mlp3", 32, 32)
    a[6][:5] = 0.0                  # zero rows: relu ties where b2's entries are 0
    a[3][0, :8] = 0.0
    a[2][:, :4] = -0.0
    cases.append(a)
    a = _args("mlp3", 32, 32)
    a[0][:] = -0.0                  # every product -0.0 or 0.0
    a[1][:] = 0.0
    a[3][:] = -0.0
    cases.append(a)
    a = _args("mlp3", 32, 32)
    a[6][3, 2], a[6][7, 1] = np.inf, np.nan
    cases.append(a)
    for k, case in enumerate(cases):
        with np.errstate(all="ignore"):
            assert_same_bits(g(*case), _full(tmp_path, "mlp3", case, f"ties_{k}"))


def test_the_outer_product_adjoint_is_numpys_multiply(tmp_path):
    """A layer before one output column (outer_kernel.py): signed zeros, an infinity and
    a NaN in the column or the row, the program's bits the full path's."""
    def args_of(n=32):
        return [rng.normal(size=(8, 16)), rng.normal(size=(1, 16)) * 0.1, rng.normal(size=(16, 1)),
                rng.normal(size=(n, 8)), rng.normal(size=(n, 1))]
    source = SOURCE + '''

def tanh_mlp(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)
    return np.mean((h @ W2 - y) ** 2)
'''
    def grad(module):
        return s2sad.grad(function_from_source(tmp_path, module, source, "tanh_mlp"), argnums=(0, 1, 2))
    args = args_of()
    g = grad("outer_warm")
    for dtype in (np.float64, np.float32):
        typed = [a.astype(dtype) for a in args]
        for _ in range(3):
            g(*typed)
        assert specialised_copy(g, typed)[2] is None
    cases = []
    a = args_of()
    a[2][:5] = -0.0                 # -0.0 and 0.0 in the row
    a[2][5:8] = 0.0
    cases.append(a)
    a = args_of()
    a[2][3, 0] = np.inf             # inf times a column: NaN where the column is 0
    a[4][:4] = 0.0
    cases.append(a)
    a = args_of()
    a[4][6, 0] = np.nan             # a NaN in the column's seed
    cases.append(a)
    for k, case in enumerate(cases):
        for dtype in (np.float64, np.float32):
            typed = [x.astype(dtype) for x in case]
            with np.errstate(all="ignore"):
                assert_same_bits(g(*typed), grad(f"outer_full_{k}_{np.dtype(dtype).name}")(*typed))


def test_the_row_fusion_switch_turned_off_after_warm_calls(tmp_path, monkeypatch):
    """product_sums's compiled pass is the switch's: off, the program runs the copy."""
    from s2sad.passes.rowfusion import SWITCH
    args = _args("mlp3", 32, 32)
    g = _warm(tmp_path, "mlp3", args)
    assert specialised_copy(g, args)[2] is None
    on = g(*args)
    monkeypatch.setattr(SWITCH, "on", False)
    off = g(*args)
    assert_same_bits(off, specialised_copy(g, args)[3](*args))
    for a, b in zip(on, off):      # (off: the numpy formulas, within rounding)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    monkeypatch.setattr(SWITCH, "on", True)
    assert_same_bits(g(*args), on)


def test_s2sads_own_product_declines_with_a_reason(tmp_path):
    """A product of gemm.MIN_WORK multiply-adds or more is s2sad's own (the fused block
    pass, Python between its C calls): not lowered, the copy, and explain says why."""
    args = _args("mlp3", 512, 64)       # 512 x 64 x 64 = 2M multiply-adds, X at LAUNCH_MAX elements
    g = _warm(tmp_path, "mlp3", args)
    spec = specialised_copy(g, args)
    assert spec is not None and spec[2] and "product_partials" in spec[2] and spec[0] is spec[3]
    line = [x for x in s2sad.explain(g, *args).lines if "warm calls" in x][0]
    assert "not one compiled call for the whole gradient" in line and spec[2] in line
    assert_same_bits(g(*args), _full(tmp_path, "mlp3", args, "own_full"))


def test_more_than_launch_max_elements_declines(tmp_path):
    args = _args("mlp3", 600, 8, h=64)      # h1: 38,400 elements (numpy multiplies: 600 x 8 x 64)
    g = _warm(tmp_path, "mlp3", args)
    spec = specialised_copy(g, args)
    assert spec is not None and "LAUNCH_MAX" in spec[2] and spec[0] is spec[3]
    assert_same_bits(g(*args), _full(tmp_path, "mlp3", args, "big_full"))


def test_new_strides_and_dtypes_after_warm_calls(tmp_path):
    args = _args("mlp3", 32, 32)
    g = _warm(tmp_path, "mlp3", args)
    W1, b1, W2, b2, W3, b3, X, Y = args
    others = [
        [W1, b1, W2, b2, W3, b3, np.asfortranarray(X), Y],                  # Fortran-ordered
        [W1, b1, W2.T.copy().T, b2, W3, b3, X, Y],                          # a transposed parameter
        [W1, b1, W2, b2, W3, b3, np.concatenate([X, X], axis=1)[:, ::2], Y],   # a non-contiguous view
        [a.astype(np.float32) for a in args],                               # another dtype
        [W1, b1.ravel(), W2, b2, W3, b3, X, Y],                             # a 1-D bias
    ]
    for k, other in enumerate(others):
        for i in range(4):      # recorded at its second call, then its program or copy
            assert_same_bits(g(*other), _full(tmp_path, "mlp3", other, f"adv_{k}_{i}"))
    assert_same_bits(g(*args), _full(tmp_path, "mlp3", args, "adv_back"))


def test_results_are_fresh(tmp_path):
    args = _args("mlp3", 32, 32)
    g = _warm(tmp_path, "mlp3", args)
    assert specialised_copy(g, args)[2] is None
    first, second = g(*args), g(*args)
    for a, b in zip(first, second):
        assert a is not b and not np.shares_memory(a, b) and a.flags.writeable
    keep = [x.copy() for x in second]
    for a in first:
        a[...] = np.nan
    assert_same_bits(second, tuple(keep))
    assert all(not np.shares_memory(x, a) for x in second for a in args)

"""The whole gradient as one compiled call (array_program.py, codegen/llvm_program.py,
blas_calls.py): a warm call of a straight-line array program whose every site is
compiled work runs one program launcher; its results are the full path's, bit for bit,
and right; anything it was not made for declines to the specialised copy."""
import ctypes
import gc
import threading
import weakref

import numpy as np
import pytest

import s2sad
from s2sad import array_program, blas_calls
from s2sad.backends import llvm as llvm_backend
from conftest import assert_same_bits, directional_fd, function_from_source, specialised_copy

pytestmark = pytest.mark.skipif(not blas_calls.available(), reason="numpy bundles no scipy-openblas64")

SOURCE = '''
import numpy as np
import s2sad


def leaky(z):
    return z if z > 0 else 0.01 * z


def mlp(W1, b1, W2, X, y):
    h = s2sad.broadcast(leaky, X @ W1 + b1)
    return np.mean((h @ W2 - y) ** 2)


def tanh_mlp(W1, b1, W2, X, y):
    h = np.tanh(X @ W1 + b1)
    return np.mean((h @ W2 - y) ** 2)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def logreg(w, X, y):
    p = sigmoid(X @ w)
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def softmax(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))
'''
rng = np.random.default_rng(17)
NARGS = {"mlp": 3, "tanh_mlp": 3, "logreg": 1, "softmax": 2}     # the params differentiated


def _loss(tmp_path, name, module=None):
    return function_from_source(tmp_path, module or f"prog_{name}", SOURCE, name)


def _args(name, n, d, dtype=np.float64, h=16):
    if name in ("mlp", "tanh_mlp"):
        a = [rng.normal(size=(d, h)) / np.sqrt(d), rng.normal(size=(1, h)) * 0.1, rng.normal(size=(h, 1)) / 4,
             rng.normal(size=(n, d)), rng.normal(size=(n, 1))]
    elif name == "logreg":
        a = [rng.normal(size=d) * 0.3, rng.normal(size=(n, d)), (rng.random(n) < 0.5).astype(float)]
    else:
        a = [rng.normal(size=(d, 5)) * 0.3, rng.normal(size=(1, 5)) * 0.1, rng.normal(size=(n, d)),
             np.eye(5)[rng.integers(0, 5, n)]]
    return [x.astype(dtype) for x in a]


def _full(tmp_path, name, args, module):
    """The full path's result: a new grad's first call (its hot path not made yet)."""
    return s2sad.grad(_loss(tmp_path, name, module), argnums=tuple(range(NARGS[name])))(*args)


# ---------------------------------------------------------------- numpy's BLAS call

CT = {"w": ctypes.c_int32, "i": ctypes.c_int64, "d": ctypes.c_double, "f": ctypes.c_float}


def _blas(a, b):
    call = blas_calls.product_call(a, b)
    if call is None:
        return None
    address, kinds, cargs = call
    out = np.empty((a.shape[0],) + b.shape[1:], a.dtype)
    fn = ctypes.CFUNCTYPE(None, *[CT[k] for k in kinds])(address)
    fn(*[{"a": a, "b": b, "out": out}[c[0]].ctypes.data if isinstance(c, tuple) else c for c in cargs])
    return out


def test_blas_calls_are_numpys_products_bit_for_bit():
    taken = 0
    for trial in range(1500):
        dt = (np.float64, np.float32)[trial % 2]
        m, n, p = (int(v) for v in rng.integers(1, 90, 3))
        p = 1 if trial % 5 == 0 else p
        A = rng.normal(size=(m, n)).astype(dt)
        A = (A, np.asfortranarray(A), np.ascontiguousarray(A.T).T, rng.normal(size=(m, 2 * n)).astype(dt)[:, ::2])[trial % 4]
        B = rng.normal(size=(n, p)).astype(dt)
        B = B[:, 0] if trial % 7 == 3 and p == 1 else (B if trial % 3 else np.asfortranarray(B))
        got = _blas(A, B)
        if got is not None:
            taken += 1
            want = A @ B
            assert got.shape == want.shape and got.tobytes() == want.tobytes(), (dt, A.shape, A.strides, B.strides)
    assert taken > 1000
    big = rng.normal(size=(300, 200))       # large enough for OpenBLAS's threads
    assert _blas(big, big.T[:, :150]).tobytes() == (big @ big.T[:, :150]).tobytes()


def test_blas_calls_decline_what_numpy_does_another_way():
    a = rng.normal(size=(6, 4))
    assert blas_calls.product_call(a, a.T) is None                       # syrk: one buffer times its transpose
    assert blas_calls.product_call(a[:1], a.T) is None                   # a row: numpy's own loops
    assert blas_calls.product_call(a, a.T.astype(np.float32)) is None    # mixed dtypes
    assert blas_calls.product_call(a.astype(np.int64), a.T.astype(np.int64)) is None
    assert blas_calls.product_call(a[:, ::2], rng.normal(size=(2, 3))) is None        # rows not unit-stride
    raw = np.zeros(6 * 4 * 8 + 1, np.uint8)[1:].view(np.float64).reshape(6, 4)   # unaligned
    assert blas_calls.product_call(raw, rng.normal(size=(4, 3))) is None


# ---------------------------------------------------------------- the program against the full path

@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name,n,d", [("mlp", 32, 32), ("mlp", 8, 5), ("mlp", 100, 12),
                                      ("tanh_mlp", 16, 32), ("tanh_mlp", 32, 8), ("tanh_mlp", 64, 12),
                                      ("logreg", 32, 32), ("logreg", 20, 5), ("logreg", 200, 20),
                                      ("softmax", 32, 32), ("softmax", 7, 12), ("softmax", 150, 6)])
def test_a_warm_call_is_one_program_with_the_full_paths_bits(tmp_path, name, n, d, dtype):
    g = s2sad.grad(_loss(tmp_path, name), argnums=tuple(range(NARGS[name])))
    args = _args(name, n, d, dtype)
    for _ in range(3):
        g(*args)
    spec = specialised_copy(g, args)
    assert spec is not None and spec[2] is None, spec and spec[2]     # one program, no reason against
    assert spec[0] is not spec[3]
    for trial in range(3):      # new values of the signature: the program's results, the full path's bits
        new = _args(name, n, d, dtype)
        assert_same_bits(g(*new), _full(tmp_path, name, new, f"full_{name}_{trial}"))
    if dtype == np.float64:     # and right: central differences along a direction
        loss = _loss(tmp_path, name, f"fd_{name}")
        k = NARGS[name]
        tans = [rng.normal(size=a.shape) if i < k else np.zeros(a.shape) for i, a in enumerate(args)]
        got = g(*args)
        fd = float(directional_fd(loss, args, tans))
        np.testing.assert_allclose(sum(float(np.sum(x * t)) for x, t in zip(got, tans)), fd, rtol=1e-6, atol=1e-9)
        python = s2sad.grad(_loss(tmp_path, name, f"py_{name}"), argnums=tuple(range(NARGS[name])),
                            backend="python")(*args)
        for a, b in zip(got, python):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_explain_says_when_and_why_not(tmp_path):
    g = s2sad.grad(_loss(tmp_path, "tanh_mlp"), argnums=(0, 1, 2))
    args = _args("tanh_mlp", 5000, 4)       # X 20,000 elements, h 80,000: more than LAUNCH_MAX
    for _ in range(3):
        g(*args)
    spec = specialised_copy(g, args)
    assert spec[2] and spec[0] is spec[3]
    line = [x for x in s2sad.explain(g, *args).lines if "warm calls" in x][0]
    assert "not one compiled call for the whole gradient (" in line and spec[2] in line
    m = s2sad.grad(_loss(tmp_path, "mlp"), argnums=(0, 1, 2))
    margs = _args("mlp", 32, 8)
    for _ in range(3):
        m(*margs)
    line = [x for x in s2sad.explain(m, *margs).lines if "warm calls" in x][0]
    assert "the whole gradient as one compiled call" in line and "5 C calls" in line


def test_the_entry_bound_is_the_entrys():
    from s2sad.codegen import llvm_entry
    assert array_program.ENTRY_MAX == llvm_entry.ENTRY_MAX and array_program._flags_ok()


def test_the_row_fusion_switch_turned_off_after_warm_calls(tmp_path, monkeypatch):
    """The softmax's row pass is the switch's: off, the program runs the copy, whose site
    takes the full call (the numpy formula)."""
    from s2sad.passes.rowfusion import SWITCH
    g = s2sad.grad(_loss(tmp_path, "softmax"), argnums=(0, 1))
    args = _args("softmax", 32, 8)
    for _ in range(3):
        g(*args)
    assert specialised_copy(g, args)[2] is None
    on = g(*args)
    monkeypatch.setattr(SWITCH, "on", False)
    off = g(*args)
    assert_same_bits(off, specialised_copy(g, args)[3](*args))        # the copy's, its row site's full call (the numpy formula)
    assert any(a.tobytes() != b.tobytes() for a, b in zip(on, off))
    for a, b in zip(on, off):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    monkeypatch.setattr(SWITCH, "on", True)
    assert_same_bits(g(*args), on)


def test_no_program_without_launchers(tmp_path, monkeypatch):
    monkeypatch.setattr(llvm_backend, "LAUNCHERS", False)
    g = s2sad.grad(_loss(tmp_path, "mlp"), argnums=(0, 1, 2))
    args = _args("mlp", 32, 8)
    for _ in range(3):
        g(*args)
    assert specialised_copy(g, args)[2]


# ---------------------------------------------------------------- adversarial

def test_new_shapes_strides_and_dtypes_after_warm_calls(tmp_path):
    g = s2sad.grad(_loss(tmp_path, "mlp"), argnums=(0, 1, 2))
    args = _args("mlp", 32, 8)
    for _ in range(3):
        g(*args)
    W1, b1, W2, X, y = args
    others = [
        _args("mlp", 40, 8),                                        # a new shape
        [W1, b1, W2, np.asfortranarray(X), y],                      # Fortran-ordered
        [W1, b1, W2, np.concatenate([X, X], axis=1)[:, ::2], y],    # a non-contiguous view
        [W1.T.copy().T, b1, W2, X, y],                              # a transposed parameter
        [a.astype(np.float32) for a in args],                       # another dtype
        [W1, b1, W2, X[:, :4], y],                                  # a shape numpy refuses
    ]
    for k, other in enumerate(others):
        for _ in range(4):      # recorded at its second call, then its program or copy
            try:
                got = g(*other)
            except Exception as e:      # noqa: BLE001 - refused as the full path refuses
                with pytest.raises(type(e)):
                    _full(tmp_path, "mlp", other, f"adv_refused_{k}")
                break
            assert_same_bits(got, _full(tmp_path, "mlp", other, f"adv_{k}_{_}"))
    assert_same_bits(g(*args), _full(tmp_path, "mlp", args, "adv_back"))      # the first signature still right


def test_more_than_launch_max_elements_declines(tmp_path):
    g = s2sad.grad(_loss(tmp_path, "mlp"), argnums=(0, 1, 2))
    args = _args("mlp", 5000, 8)        # X: 40,000 elements, more than LAUNCH_MAX
    assert args[3].size > llvm_backend.LAUNCH_MAX
    for _ in range(3):
        g(*args)
    spec = specialised_copy(g, args)
    assert spec is not None and "LAUNCH_MAX" in spec[2] and spec[0] is spec[3]
    assert_same_bits(g(*args), _full(tmp_path, "mlp", args, "big_full"))


def test_value_and_grad_is_the_full_paths(tmp_path):
    vg = s2sad.value_and_grad(_loss(tmp_path, "mlp"), argnums=(0, 1, 2))
    args = _args("mlp", 32, 8)
    for _ in range(3):
        vg(*args)
    got = vg(*args)
    want = s2sad.value_and_grad(_loss(tmp_path, "mlp", "vg_full"), argnums=(0, 1, 2))(*args)
    assert got[0] == want[0]
    assert_same_bits(got[1], want[1])


def test_an_unaligned_argument_declines_to_the_copy(tmp_path):
    g = s2sad.grad(_loss(tmp_path, "mlp"), argnums=(0, 1, 2))
    args = _args("mlp", 32, 8)
    for _ in range(3):
        g(*args)
    X = args[3]
    raw = np.zeros(X.nbytes + 1, np.uint8)[1:].view(np.float64).reshape(X.shape)
    raw[...] = X
    assert not raw.flags.aligned and raw.strides == X.strides
    other = args[:3] + [raw, args[4]]
    assert_same_bits(g(*other), _full(tmp_path, "mlp", other, "unaligned"))


def test_threads_share_no_temporaries(tmp_path):
    g = s2sad.grad(_loss(tmp_path, "mlp"), argnums=(0, 1, 2))
    sets = [_args("mlp", 32, 8) for _ in range(4)]
    for _ in range(3):
        g(*sets[0])
    want = [g(*s) for s in sets]
    errors = []

    def work(k):
        for _ in range(200):
            got = g(*sets[k])
            if not all(a.tobytes() == b.tobytes() for a, b in zip(got, want[k])):
                errors.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_a_patched_module_attribute_after_warm_calls_replans(tmp_path, monkeypatch):
    g = s2sad.grad(_loss(tmp_path, "logreg"), argnums=0)
    args = _args("logreg", 32, 8)
    for _ in range(3):
        g(*args)
    assert specialised_copy(g, args)[2] is None
    before = g(*args)
    monkeypatch.setattr(np, "exp", np.sin)      # the sigmoid's exp, compiled into the program's driver
    after = g(*args)
    assert not np.array_equal(after, before)
    want = s2sad.grad(_loss(tmp_path, "logreg", "patched_full"), argnums=0)(*args)
    assert after.tobytes() == want.tobytes()


def test_tanh_mlp_is_one_call_and_a_site_computed_by_python_declines(tmp_path):
    """The tanh MLP (one output column: h's adjoint the outer product of a column and a
    row, outer_kernel.py) is one call; with s2sad's own product (gemm.MIN_WORK
    multiply-adds or more: its block pass runs Python between its C calls) it keeps its
    copy, and says so."""
    g = s2sad.grad(_loss(tmp_path, "tanh_mlp"), argnums=(0, 1, 2))
    args = _args("tanh_mlp", 32, 8)
    for _ in range(3):
        g(*args)
    assert specialised_copy(g, args)[2] is None
    big = _args("tanh_mlp", 256, 64, h=64)     # 256 x 64 x 64 = 2^20 multiply-adds
    for _ in range(3):
        g(*big)
    spec = specialised_copy(g, big)
    assert spec[2] == "product_partials keeps its full call" and spec[0] is spec[3]
    assert_same_bits(g(*big), _full(tmp_path, "tanh_mlp", big, "tanh_full"))


def test_results_are_fresh_and_no_user_object_is_kept(tmp_path):
    g = s2sad.grad(_loss(tmp_path, "mlp"), argnums=(0, 1, 2))
    args = _args("mlp", 32, 8)
    for _ in range(3):
        g(*args)
    first, second = g(*args), g(*args)
    for a, b in zip(first, second):
        assert a is not b and not np.shares_memory(a, b) and a.flags.writeable and a.flags.owndata
    keep = [x.copy() for x in second]
    for a in first:
        a[...] = np.nan
    assert_same_bits(second, tuple(keep))
    refs = [weakref.ref(a) for a in args]
    del args, first, second
    gc.collect()
    assert all(r() is None for r in refs)


def test_a_program_that_does_not_reproduce_the_recording_is_refused(tmp_path, monkeypatch):
    """build's own check: a program whose results differ from the recording's (here made
    wrong on purpose) is refused, and the copy runs."""
    real = array_program._wrapper

    def wrong(*a):
        program = real(*a)

        def off_by_one_bit(*args):
            out = program(*args)
            out[0].view(np.uint64 if out[0].dtype == np.float64 else np.uint32).flat[0] ^= 1
            return out
        off_by_one_bit.steps = program.steps
        return off_by_one_bit
    monkeypatch.setattr(array_program, "_wrapper", wrong)
    g = s2sad.grad(_loss(tmp_path, "mlp"), argnums=(0, 1, 2))
    args = _args("mlp", 32, 8)
    for _ in range(3):
        g(*args)
    spec = specialised_copy(g, args)
    assert "bit for bit" in spec[2] and spec[0] is spec[3]
    assert_same_bits(g(*args), _full(tmp_path, "mlp", args, "refused_full"))

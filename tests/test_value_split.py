"""value_and_grad at a small batch as one compiled program: the copy written as grad's
program then the value (passes/valuesplit), the value's lines run after the program's
C calls (program_tail).

Checked: which losses split into a program and which keep value_and_grad's own copy
(with why); every call's results bit for bit those of value_and_grad's own derivative
(the first call's, and the unspecialised derivative's on new arguments of the recorded
signature); the value against the loss, the gradients against central differences;
float32; NaN; two threads; the program's text; random MLP and softmax heads
(hypothesis); and no user object kept alive.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import s2sad
from s2sad import program_tail
from s2sad.arguments import as_value
from s2sad.passes import valuesplit
from s2sad.plans import PLANS

from conftest import central_fd, function_from_source


def softmax_xent(W, b, X, Y):
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def leaky(z):
    return z if z > 0 else 0.01 * z


def mlp_mse(W1, b1, W2, X, y):
    h = s2sad.broadcast(leaky, X @ W1 + b1)
    out = h @ W2
    return np.mean((out - y) ** 2)


def mlp_tanh_sum(W1, b1, W2, X, y):
    """As logreg: `out_bar = d3_dout * _3_bar`, an array times a number of the code (times_site)."""
    h = np.tanh(X @ W1 + b1)
    out = h @ W2
    return 0.5 * np.sum((out - y) ** 2)


def softmax_penalised(W, b, X, Y):
    """The value needs a line grad's forward leaves out (a penalty on the data)."""
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1)) + 1e-3 * np.mean(X * X)


def softmax_log(W, b, X, Y):
    """The loss's partial reads its value: the reverse sweeps differ, no split."""
    z = X @ W + b
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return np.log(-np.mean(np.sum(Y * logp, axis=1)))


def logreg(w, X, y):
    """Its gradient scales an array by the loss's partial (`_1_bar = d3_d1 * _3_bar`): the
    copy's line a site (times_site), lowered to a compiled product."""
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def _softmax_args(n=32, d=8, k=10, dtype=np.float64, seed=0):
    r = np.random.default_rng(seed)
    Y = np.eye(k)[r.integers(0, k, n)]
    return [r.normal(size=(d, k)).astype(dtype), r.normal(size=(1, k)).astype(dtype),
            r.normal(size=(n, d)).astype(dtype), Y.astype(dtype)]


def _mlp_args(n=32, d=8, h=16, dtype=np.float64, seed=0):
    r = np.random.default_rng(seed)
    return [r.normal(size=(d, h)).astype(dtype), r.normal(size=(1, h)).astype(dtype),
            r.normal(size=(h, 1)).astype(dtype), r.normal(size=(n, d)).astype(dtype), r.normal(size=(n, 1)).astype(dtype)]


def _logreg_args(n=32, d=8, dtype=np.float64, seed=0):
    r = np.random.default_rng(seed)
    return [r.normal(size=d).astype(dtype), r.normal(size=(n, d)).astype(dtype), (r.random(n) < 0.5).astype(dtype)]


CASES = {"softmax_xent": (softmax_xent, _softmax_args, (0, 1)), "mlp_mse": (mlp_mse, _mlp_args, (0, 1, 2)),
         "mlp_tanh_sum": (mlp_tanh_sum, _mlp_args, (0, 1, 2)),
         "softmax_penalised": (softmax_penalised, _softmax_args, (0, 1)),
         "softmax_log": (softmax_log, _softmax_args, (0, 1)), "logreg": (logreg, _logreg_args, (0,))}


def _key(args):
    return tuple(x for a in args for x in (a.shape, a.strides, a.dtype))


def _first_calls(f, argnums, arg_lists):
    """Each argument list's results from a fresh value_and_grad's first call (its own
    plan: the derivative unspecialised, shaped as the hot path shapes it)."""
    got = []
    for args in arg_lists:
        PLANS.clear()
        got.append(s2sad.value_and_grad(f, argnums=argnums)(*args))
    return got


def _bits(r):
    value, grads = r
    return np.float64(value).tobytes(), [(g.shape, g.dtype, g.tobytes()) for g in grads]     # (as_value's float)


def _calls(f, args, argnums, calls=4):
    """(the value_and_grad object, each call's results, the recorded signature's entry)."""
    PLANS.clear()
    g = s2sad.value_and_grad(f, argnums=argnums)
    got = [g(*args) for _ in range(calls)]
    return g, got, g.__s2sad__.leaf_hot.special.specs.get(_key(args))


@pytest.mark.parametrize("name,program", [("softmax_xent", True), ("mlp_mse", True), ("mlp_tanh_sum", True),
                                          ("softmax_penalised", True), ("softmax_log", False), ("logreg", True)])
def test_which_losses_become_one_program(name, program):
    f, make, argnums = CASES[name]
    g, got, spec = _calls(f, make(), argnums)
    runs, _, why, copy = spec
    assert (why is None) == program, why
    assert ("TAIL(" in getattr(runs, "text", "")) == program
    if program:     # the split copy: grad's partials, then the value
        names = copy.__code__.co_names
        assert "not_needed" in names or any(n.startswith("sum_grads__site") for n in names)
    for r in got[1:]:
        assert _bits(r) == _bits(got[0])


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_new_arguments_get_the_unspecialised_bits(name, dtype):
    f, make, argnums = CASES[name]
    args = make(dtype=dtype)
    news = [make(dtype=dtype, seed=seed) for seed in (1, 2, 3)]
    wants = _first_calls(f, argnums, news)
    g, got, spec = _calls(f, args, argnums)
    for new, want in zip(news, wants):
        assert _key(new) == _key(args)
        assert _bits(g(*new)) == _bits(want)


@pytest.mark.parametrize("name", ["softmax_xent", "mlp_mse", "softmax_penalised"])
def test_against_the_loss_and_central_differences(name):
    f, make, argnums = CASES[name]
    args = make()
    _, got, spec = _calls(f, args, argnums)
    assert spec[2] is None
    value, grads = got[-1]
    assert type(value) is float
    np.testing.assert_allclose(value, f(*args), rtol=1e-13)
    for i, gi in zip(argnums, grads):
        np.testing.assert_allclose(gi, central_fd(f, args, i), rtol=1e-6, atol=1e-8)


def test_nan_in_the_data_gives_what_the_copy_gives():
    args = _mlp_args()
    g, _, spec = _calls(mlp_mse, args, (0, 1, 2))
    assert spec[2] is None
    bad = [a.copy() for a in args]
    bad[3][5, 2] = np.nan
    value, grads = g(*bad)
    want = _first_calls(mlp_mse, (0, 1, 2), [bad])[0]
    assert np.isnan(value) and np.isnan(want[0])
    for a, b in zip(grads, want[1]):
        assert np.array_equal(np.isnan(a), np.isnan(b)) and a[~np.isnan(a)].tobytes() == b[~np.isnan(b)].tobytes()


def test_inputs_are_not_written_and_threads_agree():
    args = _softmax_args()
    copies = [a.copy() for a in args]
    mine = {t: [a + 0.01 * np.random.default_rng(t).normal(size=a.shape) if i < 3 else a for i, a in enumerate(args)]
            for t in range(2)}
    wants = dict(zip(mine, _first_calls(softmax_xent, (0, 1), list(mine.values()))))
    g, got, spec = _calls(softmax_xent, args, (0, 1))
    assert spec[2] is None
    out: dict = {}

    def run(t):
        out[t] = [_bits(g(*mine[t])) for _ in range(50)]
    threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for t in range(2):
        assert all(bits == _bits(wants[t]) for bits in out[t])
    for a, c in zip(args, copies):
        assert a.tobytes() == c.tobytes()


def test_the_split_text_reads_as_grad_then_the_value():
    PLANS.clear()
    g = s2sad.value_and_grad(softmax_xent, argnums=(0, 1))
    g(*_softmax_args())
    src = _split_source(softmax_xent, (0, 1))
    assert src.index("# reverse sweep") < src.index(valuesplit.VALUE_COMMENT.strip()) < src.index("row_dot_log_softmax(")
    assert "softmax_xent__loss__dual(not_needed)" in src


def _split_source(f, argnums, make=False):
    """The split text of f's plan (what array_special specialises at a small batch)."""
    import gc
    from s2sad.passes.array_compiled import ArrayCompiled
    if make:
        PLANS.clear()
        s2sad.value_and_grad(f, argnums=argnums)(*_softmax_args())
    plan = next(o for o in gc.get_objects() if isinstance(o, ArrayCompiled) and o.name == f.__name__)
    return plan.source(argnums, "auto", "value_and_grad split")


@pytest.mark.parametrize("name", ["softmax_xent", "mlp_mse"])
def test_where_the_split_does_not_apply_the_copy_runs(name, monkeypatch):
    """(split_text None: the reverse sweeps differ, say) value_and_grad's own copy, as before."""
    from s2sad.passes import array_compiled
    f, make, argnums = CASES[name]
    args = make()
    want = _first_calls(f, argnums, [args])[0]
    monkeypatch.setattr(array_compiled, "split_text", lambda g, v: None)
    g, got, spec = _calls(f, args, argnums)
    assert spec[2] is not None and "TAIL(" not in getattr(spec[0], "text", "")
    assert all(_bits(r) == _bits(want) for r in got)


def test_a_tail_that_writes_into_an_array_is_refused():
    import ast
    node = ast.parse("def f(a):\n    x = g(a)\n    b_bar = h(x)\n    x[0] = 1.0\n    return (x, (b_bar,))\n").body[0]
    assert program_tail.split_tail(node, {"g", "h"}) == "a value line that writes into an array"
    node = ast.parse("def f(a):\n    x = g(a)\n    b_bar = h(x)\n    v = k(x)\n    return (v, (b_bar,))\n").body[0]
    vt = program_tail.split_tail(node, {"g", "h", "k"})
    assert [ast.unparse(s) for s in vt.tail] == ["v = k(x)"] and vt.inputs == ["x"] and vt.sites == {"k"}


@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(n=st.integers(1, 200), d=st.integers(1, 12), k=st.integers(2, 12), shape=st.sampled_from(list(CASES)),
       dtype=st.sampled_from([np.float64, np.float32]))
def test_random_heads_keep_value_and_grads_bits(n, d, k, shape, dtype):
    f, make, argnums = CASES[shape]
    if shape == "logreg":
        args = make(n=n, d=d, dtype=dtype)
    elif shape.startswith("mlp"):
        args = make(n=n, d=d, h=k, dtype=dtype)
    else:
        args = make(n=n, d=d, k=k, dtype=dtype)
    new = [a * 1.25 if a.dtype.kind == "f" and i in argnums else a for i, a in enumerate(args)]
    want = _first_calls(f, argnums, [new])[0]
    g, got, spec = _calls(f, args, argnums, calls=3)
    for r in got[1:]:
        assert _bits(r) == _bits(got[0])
    assert _bits(g(*new)) == _bits(want)
    value = got[-1][0]
    np.testing.assert_allclose(value, f(*args), rtol=1e-10 if dtype == np.float64 else 1e-4)


def test_no_user_object_is_kept(tmp_path):
    import gc
    import inspect
    import weakref
    f = function_from_source(tmp_path, "split_leak", "import numpy as np\nimport s2sad\n\n"
                             + inspect.getsource(leaky) + "\n\n" + inspect.getsource(mlp_mse), "mlp_mse")
    scale = np.ones((1, 16))

    def loss(W1, b1, W2, X, y):
        return f(W1 * scale, b1, W2, X, y)
    refs = [weakref.ref(f), weakref.ref(loss), weakref.ref(scale)]
    g = s2sad.value_and_grad(f, argnums=(0, 1, 2))
    for _ in range(4):
        g(*_mlp_args())
    assert g.__s2sad__.leaf_hot.special.specs[_key(_mlp_args())][2] is None     # (the program ran)
    g2 = s2sad.value_and_grad(loss, argnums=(0, 1, 2))
    for _ in range(4):
        g2(*_mlp_args())
    del f, loss, scale, g, g2
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(n=st.integers(0, 700), dtype=st.sampled_from([np.float64, np.float32, np.float16, np.int64]),
       scale=st.integers(-30, 30), step=st.sampled_from([1, 2, 3]), special=st.sampled_from([None, np.nan, np.inf, -0.0]))
def test_the_tails_mean_has_np_means_bits(n, dtype, scale, step, special):
    """program_tail.whole_mean (the tail's `np.mean(x)`): numpy's bits and type, on any
    length (pairwise sums past 8 and 128 values), dtype, stride, and special values."""
    import warnings
    with np.errstate(over="ignore"):
        a = (np.random.default_rng(n).normal(size=n) * 2.0 ** scale).astype(dtype)[::step]
    if special is not None and a.size and a.dtype.kind == "f":
        a[a.size // 2] = special
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = program_tail.whole_mean(a), np.mean(a)
    assert type(got) is type(want)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("number", [-1.0, 0.1, 3.0e38, -0.0, float("inf"), float("nan")])
def test_an_array_times_a_number_is_numpys_product(dtype, number):
    """times_site: marked only where numpy's product is the array's dtype, and then the
    compiled product (llvm_mulsum over one row, the number's row) has numpy's bits."""
    import warnings
    from s2sad import times_site
    from s2sad.productsums import mulsum_function
    x = np.random.default_rng(1).normal(size=(7, 5)).astype(dtype) * 1e30
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = x * number
        marked = times_site.specialise_times(times_site.times_number, "auto", (x, number), {}, want)
        assert marked is not None and marked.parts == ("times", 1)
        row = np.full(x.size, number, dtype)
    out, sums = np.empty_like(x), np.empty(x.size, dtype)
    f = mulsum_function(np.dtype(dtype))
    f(x.ctypes.data, row.ctypes.data, out.ctypes.data, sums.ctypes.data, 1, x.size, x.size, 0)
    assert out.tobytes() == want.tobytes()
    with np.errstate(over="ignore", invalid="ignore"):
        first = number * x
    assert times_site.specialise_times(times_site.times_number, "auto", (number, x), {}, first).parts == ("times", 0)


def test_what_the_times_site_leaves_to_numpy():
    from s2sad import times_site
    x32, x64 = np.ones(4, np.float32), np.ones(4)
    spec = times_site.specialise_times
    full = times_site.times_number
    assert spec(full, "auto", (x32, np.float64(2.0)), {}, x32 * np.float64(2.0)) is None   # (a float64 product)
    assert spec(full, "auto", (x32, 1e300), {}, x32 * np.float32(1.0)) is None             # (overflows float32)
    assert spec(full, "auto", (x64, x64), {}, x64 * x64) is None                           # (two arrays)
    assert spec(full, "auto", (x64[::2], 2.0), {}, x64[::2] * 2.0) is None                 # (not contiguous)
    assert spec(full, "auto", (np.ones(3, int), 2.0), {}, np.ones(3, int) * 2.0) is None   # (an integer array)
    assert spec(lambda a, b: a * b, "auto", (x64, 2.0), {}, x64 * 2.0) is None              # (another function)


def rows_not_summed(W, b, X, Y):
    """Not a scalar: value_and_grad refuses it, on every call (no program hides that)."""
    z = X @ W + b
    return np.sum(z * Y, axis=1)


def test_a_loss_that_is_not_a_scalar_is_refused_on_every_call():
    args = _softmax_args()
    PLANS.clear()
    g = s2sad.value_and_grad(rows_not_summed, argnums=(0, 1))
    for _ in range(4):
        with pytest.raises(s2sad.S2SADError) as e:
            g(*args)
        assert "rows_not_summed" in str(e.value) or "scalar" in str(e.value)


@pytest.mark.parametrize("layout", ["fortran", "transposed_view", "strided_rows"])
def test_odd_layouts_give_the_first_calls_bits(layout):
    f, make, argnums = CASES["softmax_xent"]
    args = make()
    X = args[2]
    if layout == "fortran":
        args[2] = np.asfortranarray(X)
    elif layout == "transposed_view":
        args[2] = np.ascontiguousarray(X.T).T
    else:
        big = np.zeros((2 * X.shape[0], X.shape[1]))
        big[::2] = X
        args[2] = big[::2]
    want = _first_calls(f, argnums, [args])[0]
    g, got, spec = _calls(f, args, argnums)
    assert all(_bits(r) == _bits(want) for r in got)
    assert _bits(g(*args)) == _bits(want)

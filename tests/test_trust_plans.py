"""Issue 12, plans: the source read is the code that runs, plans keep nothing of the
user's alive and serve new closures of known code, planning is thread-safe.

- Stale source: a module file edited on disk (no reload), a function whose text in
  linecache is older than its code, code exec'd under a real file's name: refused with
  StaleSourceError (never the new text differentiated); `f.__code__ = g.__code__` is
  planned again, even through an existing grad object.
- Memory: after `g = grad(f); g(x); del f, g, x` the function and a big array its
  closure holds are freed (fused, array-program, broadcast, jvp, vjp paths); the
  training-loop pattern (a new closure per step over a new batch) plans once, reads each
  step's batch, and keeps memory flat.
- Threads: 96 functions planned from 8 threads at once each record their own globals;
  a first call of one function from 8 threads at once plans once.
"""
from __future__ import annotations

import gc
import importlib
import linecache
import math
import os
import sys
import textwrap
import threading
import tracemalloc
import uuid
import weakref

import numpy as np
import pytest

import s2sad
from s2sad import frontend, plans
from s2sad.errors import S2SADError, StaleSourceError

rng = np.random.default_rng(12)


# ---------------------------------------------------------------- helpers

@pytest.fixture
def make_module(tmp_path, monkeypatch):
    """make_module(source) -> an imported module made from `source` (TAG replaced by a
    number of its own, so that no other module has its code objects); edit(mod, source)
    rewrites its file on disk (another size and a later mtime, so that caches see it)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    made = []

    def make(source: str):
        name = f"s2sad_plans_{uuid.uuid4().hex}"
        path = tmp_path / f"{name}.py"
        path.write_text(tagged(source))
        importlib.invalidate_caches()
        mod = importlib.import_module(name)
        made.append(name)
        return mod

    yield make
    for name in made:
        sys.modules.pop(name, None)


def tagged(source: str) -> str:
    return textwrap.dedent(source).replace("TAG", repr(float(uuid.uuid4().int % 10**6)))


def edit(mod, source: str) -> None:
    path = mod.__file__
    st = os.stat(path)
    with open(path, "w") as fh:
        fh.write(tagged(source))
    os.utime(path, (st.st_atime + 10, st.st_mtime + 10))
    linecache.checkcache(path)


CUBE = """\
import numpy as np

def f(x):
    return np.sum(x * x * x) + TAG
"""
SQUARE_PADDED = """\
import numpy as np

def f(x):
    return np.sum(x * x) + TAG          # square now
"""


# ---------------------------------------------------------------- stale source

def test_file_edited_after_import_is_refused(make_module):
    mod = make_module(CUBE)
    edit(mod, SQUARE_PADDED)          # Python still runs the cube
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(StaleSourceError) as info:
        s2sad.grad(mod.f)(x)
    e = info.value
    assert isinstance(e, S2SADError)
    assert e.location.filename == mod.__file__ and e.location.lineno == 3
    assert "importlib.reload" in e.hint
    with pytest.raises(StaleSourceError):      # refused again, never planned from the new text
        s2sad.value_and_grad(mod.f)(x)


def test_file_edited_after_planning_keeps_the_running_code(make_module):
    """A function planned before the edit keeps the gradient of the code that runs."""
    mod = make_module(CUBE)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s2sad.grad(mod.f)(x), 3 * x**2)
    edit(mod, SQUARE_PADDED)
    np.testing.assert_allclose(s2sad.grad(mod.f)(x), 3 * x**2)
    assert mod.f(2 * x) - mod.f(x) == pytest.approx(7 * np.sum(x**3))   # Python runs the cube


def test_reload_then_new_gradient(make_module):
    mod = make_module(CUBE)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s2sad.grad(mod.f)(x), 3 * x**2)
    edit(mod, SQUARE_PADDED)
    mod = importlib.reload(mod)
    np.testing.assert_allclose(s2sad.grad(mod.f)(x), 2 * x)


def test_old_text_in_linecache_is_refreshed(make_module):
    """linecache holds the text it read first; after a reload the code is the new text's,
    which s2sad finds (not the old text's gradient)."""
    mod = make_module(CUBE)
    path = mod.__file__
    assert "x * x * x" in "".join(linecache.getlines(path))     # linecache holds v1
    with open(path, "w") as fh:
        fh.write(tagged(SQUARE_PADDED))
    st = os.stat(path)
    os.utime(path, (st.st_atime + 10, st.st_mtime + 10))
    mod = importlib.reload(mod)                                  # runs v2; linecache still v1
    assert "x * x * x" in "".join(linecache.cache[path][2])
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(s2sad.grad(mod.f)(x), 2 * x)


def test_linecache_text_that_is_not_the_code_is_refused(make_module):
    """linecache made to hold a text that is not the code (and no file to refresh from)."""
    mod = make_module(CUBE)
    path = mod.__file__
    lines = tagged(SQUARE_PADDED).splitlines(True)
    os.remove(path)
    linecache.cache[path] = (len("".join(lines)), None, lines, path)   # no mtime: not refreshed
    try:
        with pytest.raises(StaleSourceError):
            s2sad.grad(mod.f)(np.array([1.0, 2.0]))
    finally:
        linecache.cache.pop(path, None)


def test_code_compiled_under_a_real_files_name_is_refused(make_module):
    """exec'd code naming a real file at a line that holds another text."""
    mod = make_module(CUBE)
    ns = {"np": np}
    exec(compile("\n\ndef f(x):\n    return np.sum(x * x) + 1.5\n", mod.__file__, "exec"), ns)
    with pytest.raises(StaleSourceError):
        s2sad.grad(ns["f"])(np.array([1.0, 2.0]))


CODE_SWAP = """\
import numpy as np

def f(x):
    return np.sum(x * x * x) + TAG

def g(x):
    return np.sum(np.sin(x)) + TAG

def h(x):
    return x * x * x + TAG

def k(x):
    return math.sin(x) + TAG

import math
"""


def test_code_swap_is_planned_again_through_an_existing_grad(make_module):
    mod = make_module(CODE_SWAP)
    x = np.linspace(0.1, 1.0, 10)
    gf = s2sad.grad(mod.f)
    for _ in range(3):                     # the hot path is made on the second call
        np.testing.assert_allclose(gf(x), 3 * x**2)
    mod.f.__code__ = mod.g.__code__        # what IPython's autoreload does
    for _ in range(3):
        np.testing.assert_allclose(gf(x), np.cos(x))
    np.testing.assert_allclose(s2sad.grad(mod.f)(x), np.cos(x))
    v, dv = s2sad.value_and_grad(mod.f)(x)
    assert v == pytest.approx(mod.g(x))
    np.testing.assert_allclose(dv, np.cos(x))


def test_code_swap_scalar_function(make_module):
    mod = make_module(CODE_SWAP)
    gh = s2sad.grad(mod.h)
    assert gh(0.5) == pytest.approx(0.75)
    mod.h.__code__ = mod.k.__code__
    assert gh(0.5) == pytest.approx(math.cos(0.5))
    assert s2sad.jvp(mod.h, (0.5,), (1.0,))[1] == pytest.approx(math.cos(0.5))


SHAPES = '''\
from __future__ import annotations

import functools
import math

import numpy as np


def deco(fn):
    return fn


@deco
def decorated(x: np.ndarray) -> float:
    return np.sum(x * x)


class Holder:
    @staticmethod
    def method(x: np.ndarray) -> float:
        return np.sum(np.sin(x))

    square = staticmethod(lambda x: np.sum(x * x * x))


def outer(c: float):
    def inner(x: np.ndarray) -> float:
        return np.sum(c * x * x)
    return inner


def outer_lambda(c):
    return lambda x: np.sum(c * np.exp(x))


def nested_helper(x):
    def sq(z):
        return z * z
    return np.sum(sq(x) + x)
'''


def test_every_shape_of_definition_passes_the_check(make_module):
    """Decorators, class bodies, nested defs, closures, lambdas, future annotations."""
    mod = make_module(SHAPES)
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(s2sad.grad(mod.decorated)(x), 2 * x)
    np.testing.assert_allclose(s2sad.grad(mod.Holder.method)(x), np.cos(x))
    np.testing.assert_allclose(s2sad.grad(mod.Holder.square)(x), 3 * x**2)
    np.testing.assert_allclose(s2sad.grad(mod.outer(2.5))(x), 5 * x)
    np.testing.assert_allclose(s2sad.grad(mod.outer_lambda(1.5))(x), 1.5 * np.exp(x))
    np.testing.assert_allclose(s2sad.grad(mod.nested_helper)(x), 2 * x + 1)


def test_the_check_is_made_once_per_code(make_module, monkeypatch):
    mod = make_module(CUBE)
    calls = []
    real = frontend.sourcecheck.matches
    monkeypatch.setattr(frontend.sourcecheck, "matches", lambda *a: calls.append(1) or real(*a))
    for _ in range(5):
        frontend.parse_function(mod.f)
    assert len(calls) == 1


# ---------------------------------------------------------------- plans keyed by code

def loss(w, batch):
    return np.sum((w - batch) ** 2)


def matmul_loss(w, batch):
    return np.sum(np.tanh(batch @ w))


def test_new_closure_per_step_reuses_the_plan_and_reads_its_batch():
    w = rng.random(16)
    made = None
    for step in range(50):
        batch = rng.random(16)
        g = s2sad.grad(lambda w: loss(w, batch))(w)
        np.testing.assert_allclose(g, 2 * (w - batch))
        if step == 0:
            made = plans.PLANS.made
    assert plans.PLANS.made == made


def test_new_closure_per_step_array_program():
    w = rng.random(4)
    made = None
    for step in range(30):
        batch = rng.random((8, 4))
        g = s2sad.grad(lambda w: matmul_loss(w, batch))(w)
        np.testing.assert_allclose(g, batch.T @ (1 - np.tanh(batch @ w) ** 2), rtol=1e-12)
        if step == 0:
            made = plans.PLANS.made
    assert plans.PLANS.made == made


def test_compiled_in_values_are_keyed_by_value():
    """A number a closure holds is compiled in: another number, another plan; the same
    number in a new closure, the same plan."""
    x = np.array([1.0, 2.0])

    def make(c):
        return lambda x: np.sum(c * x * x)
    for c in (2.0, 3.0, 2.0, -0.0, 0.0):
        np.testing.assert_array_equal(s2sad.grad(make(c))(x), 2 * c * x)
    before = plans.PLANS.made
    np.testing.assert_array_equal(s2sad.grad(make(3.0))(x), 6 * x)
    assert plans.PLANS.made == before


def test_another_kind_of_value_is_another_plan():
    """The same code over a number, then an array: each its own plan, each right."""
    def make(c):
        return lambda x: np.sum(x * c)
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(s2sad.grad(make(2.0))(x), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(s2sad.grad(make(np.array([1.0, 5.0, 7.0])))(x), [1.0, 5.0, 7.0])
    np.testing.assert_array_equal(s2sad.grad(make(4.0))(x), [4.0, 4.0, 4.0])


def test_closures_over_helper_functions():
    """A function a closure calls is compiled in by identity: each helper its own plan."""
    def make(k):
        def helper(z):
            return k * z * z
        return lambda x: np.sum(helper(x))
    x = np.array([1.0, 2.0])
    for k in (1.0, 2.0, 3.0):
        np.testing.assert_allclose(s2sad.grad(make(k))(x), 2 * k * x)


def test_nonlocal_state_of_a_new_closure():
    """A scan's state cell is the closure called, not the one planned."""
    def make():
        total = 0.0

        def acc(z):
            nonlocal total
            total = total + z
            return total * z
        return (lambda x: np.sum(s2sad.broadcast(acc, x))), (lambda: total)
    x = np.array([1.0, 2.0, 3.0])
    for _ in range(3):
        f, read = make()
        v, g = s2sad.value_and_grad(f)(x)
        assert v == pytest.approx(1 * 1 + 3 * 2 + 6 * 3)
        assert read() == pytest.approx(6.0)


def _freed(make_call) -> None:
    """make_call(f) runs s2sad on f, a closure over a big array; afterwards neither f nor
    the array may be alive."""
    big = np.full(100_000, 0.5)

    def make(data):
        return lambda x: np.sum(x * data[0] + np.sin(x) * data[1])
    f = make(big)
    refs = (weakref.ref(f), weakref.ref(big))
    make_call(f)
    del f, big
    gc.collect()
    assert refs[0]() is None, "the function is kept alive"
    assert refs[1]() is None, "the array its closure holds is kept alive"


@pytest.mark.parametrize("how", ["grad", "grad_scalar", "value_and_grad", "jvp", "vjp", "explain", "source"])
def test_nothing_is_kept_alive(how):
    x = np.linspace(0.1, 1.0, 10)

    def call(f):
        if how == "grad":
            g = s2sad.grad(f)
            for _ in range(3):
                np.testing.assert_allclose(g(x), 0.5 + 0.5 * np.cos(x))
        elif how == "grad_scalar":
            assert s2sad.grad(f)(0.3) == pytest.approx(0.5 + 0.5 * math.cos(0.3))
        elif how == "value_and_grad":
            s2sad.value_and_grad(f)(x)
        elif how == "jvp":
            s2sad.jvp(f, (x,), (np.ones_like(x),))
        elif how == "vjp":
            _, pull = s2sad.vjp(f, x)
            pull(1.0)
        elif how == "explain":
            str(s2sad.explain(f))
        else:
            s2sad.source(s2sad.grad(f))
    _freed(call)


def test_nothing_is_kept_alive_array_program():
    big = np.ones((40_000, 3))

    def make(data):
        fn = lambda w: np.sum(np.tanh(data @ w))  # noqa: E731
        return fn
    f = make(big)
    refs = (weakref.ref(f), weakref.ref(big))
    g = s2sad.grad(f)
    np.testing.assert_allclose(g(np.zeros(3)), big.sum(axis=0))
    del f, big, g
    gc.collect()
    assert refs[0]() is None and refs[1]() is None


def test_nothing_is_kept_alive_broadcast():
    big = np.full(50_000, 2.0)

    def make(data):
        return lambda z: z * data[0]
    f = make(big)
    refs = (weakref.ref(f), weakref.ref(big))
    np.testing.assert_array_equal(s2sad.broadcast(f, np.array([1.0, 2.0])), [2.0, 4.0])
    del f, big
    gc.collect()
    assert refs[0]() is None and refs[1]() is None


def test_training_loop_keeps_memory_flat_and_plans_once():
    w = rng.random(1_000)

    def step():
        batch = rng.random(1_000)           # 8 kB a step: 16 MB if each were kept
        return s2sad.grad(lambda w: loss(w, batch))(w)
    for _ in range(20):
        step()
    gc.collect()
    made = plans.PLANS.made
    tracemalloc.start()
    try:
        for _ in range(200):
            step()
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        for _ in range(1_800):
            step()
        gc.collect()
        last, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert plans.PLANS.made == made, "planned again"
    assert last - first < 200_000, f"grew by {last - first} bytes over 1,800 steps"


def test_the_cache_is_bounded_per_code():
    x = np.array([1.0, 2.0])

    def make(c):
        return lambda x: np.sum(c * x)
    for i in range(40):
        np.testing.assert_array_equal(s2sad.grad(make(float(i)))(x), [float(i)] * 2)
    code = make(0.0).__code__
    assert len(plans.PLANS._plans[code]) <= plans.PLANS.PER_CODE


# ---------------------------------------------------------------- threads

def _module_of_96(make_module, values):
    lines = ["import numpy as np", ""]
    lines += [f"K{i} = {v!r}" for i, v in enumerate(values)]
    for i in range(len(values)):
        lines += ["", f"def f{i}(x):", f"    a = x * K{i}", f"    return np.sum(a + x * x)"]
    return make_module("\n".join(lines) + "\n")


@pytest.mark.parametrize("run", range(3))
def test_96_functions_planned_from_8_threads_record_their_own_globals(make_module, run):
    n = 96
    mod = _module_of_96(make_module, [float(i + 1) for i in range(n)])
    x = np.array([0.5, 1.5])
    barrier = threading.Barrier(8)
    errors = []

    def work(t):
        try:
            barrier.wait()
            for i in range(t, n, 8):
                np.testing.assert_allclose(s2sad.grad(getattr(mod, f"f{i}"))(x), i + 1 + 2 * x)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)           # threads switch often, inside planning
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors[0]
    for i in range(n):                       # the globals change: no gradient may stay stale
        setattr(mod, f"K{i}", -3.0 * (i + 1))
    stale = [i for i in range(n)
             if not np.allclose(s2sad.grad(getattr(mod, f"f{i}"))(x), -3.0 * (i + 1) + 2 * x)]
    assert not stale


def test_recording_is_per_thread():
    logs, barrier = {}, threading.Barrier(2)

    def work(name):
        def fn(x):
            return x
        r = frontend.Resolver(fn)
        with frontend.recording() as log:
            barrier.wait()
            for _ in range(200):
                r.lookup(name)
            barrier.wait()
        logs[name] = {n for _, n, _ in log}
    ts = [threading.Thread(target=work, args=(n,)) for n in ("np", "math")]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert logs == {"np": {"np"}, "math": {"math"}}


def test_first_call_from_8_threads_plans_once(monkeypatch):
    from s2sad.passes import elementwise
    made, plan_loss = [], elementwise.plan_loss
    monkeypatch.setattr(plans, "plan_loss", lambda pf: made.append(1) or plan_loss(pf))

    def make():
        return lambda x: np.sum(np.tanh(x) * 1.25 + x)
    fns = [make() for _ in range(8)]          # 8 closures of one new code
    x = np.linspace(-1, 1, 50)
    barrier, out, errors = threading.Barrier(8), [None] * 8, []

    def work(i):
        try:
            barrier.wait()
            out[i] = s2sad.grad(fns[i])(x)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]
    assert len(made) == 1
    for g in out:
        np.testing.assert_allclose(g, 1.25 * (1 - np.tanh(x) ** 2) + 1)


def test_closures_of_one_code_in_threads_read_their_own_values():
    """Bound per thread: 8 threads calling one plan with 8 different batches."""
    def make(batch):
        return lambda w: np.sum((w - batch) ** 2)
    w = np.zeros(64)
    batches = [np.full(64, float(i)) for i in range(8)]
    barrier, errors = threading.Barrier(8), []

    def work(i):
        try:
            barrier.wait()
            for _ in range(200):
                np.testing.assert_array_equal(s2sad.grad(make(batches[i]))(w), -2.0 * batches[i])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def test_assert_in_a_pytest_module_is_unsupported_syntax_not_stale():
    """pytest rewrites asserts, so this function's code is not its text's: it is still
    refused for what it is (assert is not differentiated)."""
    def with_assert(x):
        assert x.size > 0
        return np.sum(x * x)
    with pytest.raises(S2SADError) as info:
        s2sad.grad(with_assert)(np.array([1.0, 2.0]))
    assert not isinstance(info.value, StaleSourceError)
    assert "assert" in str(info.value)


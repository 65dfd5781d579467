"""The Python entry points of fused gradient drivers (codegen/llvm_entry.py).

Each entry gives what the runtime's general path gives, to the bit; declines
(NotImplemented) every argument it was not compiled for; and leaves reference counts
as they were.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from conftest import kernel
from s2sad.codegen import llvm_entry, llvm_jit
from s2sad.kernel import LoopSpec

pytestmark = pytest.mark.skipif(not llvm_entry.supported(), reason="entries are not supported in this process")


# value x*x*y + sin(x); partials (2xy + cos x, x*x)
K = '''
def f(x, y):
    return x * x * y + math.sin(x)
def f__dual(x, y):
    return (x * x * y + math.sin(x), 2.0 * x * y + math.cos(x), x * x)
'''


def driver(layouts, dtype=np.float64, value="sum", active=("x", "y")):
    spec = LoopSpec(layouts, value=value, partials=True, seed="scalar")
    return llvm_jit.compile_driver(kernel(K, "f", "f__dual", active), spec, dtype)


def through_cfunc(d, args, mean, scale=1.0):
    """The general path's call of the same driver (what fastpath.sum_dual_stub does)."""
    layouts, dt = d.spec.layouts, d.dtype
    arrays = [a for a, l in zip(args, layouts) if l == "contig"]
    n = arrays[0].size
    seed = scale / n if mean else scale
    accs = np.zeros(3, np.float64)      # sums are double for every dtype, rounded to it after
    grads = []
    call = [1, n] + [a.ctypes.data if l == "contig" else a for a, l in zip(args, layouts)]
    if d.spec.value == "sum":
        call.append(accs.ctypes.data)
    call.append(seed)
    idx = [("x", "y").index(a) for a in ("x", "y")][: len(d.argtypes) and 2]
    for k, i in enumerate(idx):
        if layouts[i] == "contig":
            grads.append(np.empty_like(arrays[0]))
            call.append(grads[-1].ctypes.data)
        else:
            grads.append(None)
            call.append(accs.ctypes.data + (1 + k) * accs.itemsize)
    d.cfunc(*call)
    accs = accs.astype(dt).astype(np.float64)
    out = [float(accs[1 + k]) if g is None else g for k, g in enumerate(grads)]
    return (float(accs[0]) * seed if d.spec.value == "sum" else None), out


@pytest.mark.parametrize("layouts", [("contig", "contig"), ("contig", "scalar"), ("scalar", "contig")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mean", [False, True])
@pytest.mark.parametrize("shape", [(2,), (37,), (5, 7), (3, 1, 4)])
def test_entry_gives_the_general_paths_results(layouts, dtype, mean, shape):
    d = driver(layouts, dtype)
    entry = d.python_entry()
    assert entry is not None
    rng = np.random.default_rng(sum(shape))
    args = [rng.uniform(-2, 2, shape).astype(dtype) if l == "contig" else float(rng.uniform(-2, 2))
            for l in layouts]
    got = entry(*args, 0.75, mean)
    value, grads = through_cfunc(d, args, mean, 0.75)
    assert type(got) is tuple and len(got) == 3
    assert type(got[0]) is float and got[0] == value
    for g, w, l in zip(got[1:], grads, layouts):
        if l == "contig":
            assert type(g) is np.ndarray and g.dtype == dtype and g.shape == shape and g.flags.c_contiguous
            assert np.array_equal(g, w)
        else:
            assert type(g) is float and g == w


def test_entry_of_a_grad_only_driver_returns_no_value():
    d = driver(("contig", "contig"), value="none")
    x, y = np.linspace(-1, 1, 9), np.linspace(0, 2, 9)
    got = d.python_entry()(x, y, 1.0, False)
    assert got[0] is None
    np.testing.assert_allclose(got[1], 2 * x * y + np.cos(x), rtol=1e-15)
    np.testing.assert_allclose(got[2], x * x, rtol=1e-15)


def test_entry_declines_what_it_was_not_compiled_for():
    d = driver(("contig", "scalar"))
    entry = d.python_entry()
    x = np.linspace(-1, 1, 12)

    class Sub(np.ndarray):
        pass

    declined = [
        (x,), (x, 0.5), (x, 0.5, 1.0), (x, 0.5, 1.0, False, 1),      # wrong counts
        (x.astype(np.float32), 0.5, 1.0, False),                      # another dtype
        (x.astype(">f8"), 0.5, 1.0, False),                           # another byte order
        (x[::2], 0.5, 1.0, False),                                    # not contiguous
        (x.reshape(3, 4).T, 0.5, 1.0, False),                         # Fortran order
        (x.view(Sub), 0.5, 1.0, False),                               # a subclass
        (list(x), 0.5, 1.0, False), (x[:1], 0.5, 1.0, False),         # a list; one element
        (np.zeros(llvm_entry.ENTRY_MAX + 1), 0.5, 1.0, False),        # too many elements
        (x, 1, 1.0, False), (x, np.float64(0.5), 1.0, False),         # not exact floats
        (x, 0.5, 1, False), (x, 0.5, 1.0, 0), (x, 0.5, 1.0, None),    # scale, mean
    ]
    for args in declined:
        assert entry(*args) is NotImplemented, args
    unaligned = np.frombuffer(np.zeros(8 * 12 + 1, np.uint8).data, np.float64, 12, 1)
    assert not unaligned.flags.aligned and entry(unaligned, 0.5, 1.0, False) is NotImplemented
    two = driver(("contig", "contig")).python_entry()
    assert two(x, x.reshape(3, 4), 1.0, False) is NotImplemented      # shapes differ
    assert two(x.reshape(3, 4), x.reshape(4, 3), 1.0, False) is NotImplemented
    assert two(x.reshape(3, 4), x.reshape(3, 4), 1.0, False) is not NotImplemented


def test_entry_keeps_reference_counts():
    d = driver(("contig", "scalar"))
    entry = d.python_entry()
    x, y = np.linspace(-1, 1, 50), 0.5
    before = [sys.getrefcount(o) for o in (x, y, NotImplemented, None, True, False)]
    for _ in range(1000):
        r = entry(x, y, 1.0, True)
        assert entry(x[::2], y, 1.0, False) is NotImplemented
    value, g, gy = r
    del r
    assert sys.getrefcount(value) == sys.getrefcount(g) == sys.getrefcount(gy) == 2   # theirs and the argument
    after = [sys.getrefcount(o) for o in (x, y, NotImplemented, None, True, False)]
    assert after[:2] == before[:2]
    # a leak (or a reference too few) per call would move these by about 1000 (other
    # code, pytest's included, moves them by a few; they are immortal from 3.12)
    assert all(abs(a - b) < 50 for a, b in zip(after[2:], before[2:])), (before, after)


def test_one_entry_serves_every_driver_of_a_shape_and_is_found_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("S2SAD_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("S2SAD_CACHE", raising=False)
    monkeypatch.setattr(llvm_jit, "_cache", {})
    monkeypatch.setattr(llvm_jit, "_entries", {})
    d = driver(("contig", "contig"))
    k2 = K.replace("math.sin(x), 2.0 * x * y + math.cos(x)", "math.cos(x), 2.0 * x * y - math.sin(x)")
    k2 = k2.replace("x * x * y + math.sin(x)\n", "x * x * y + math.cos(x)\n")
    other = llvm_jit.compile_driver(kernel(k2, "f", "f__dual", ("x", "y")), d.spec, np.float64)
    assert other.address != d.address
    x, y = np.linspace(-1, 1, 9), np.linspace(0, 2, 9)
    a, b = d.python_entry()(x, y, 1.0, False), other.python_entry()(x, y, 1.0, False)
    assert len(llvm_jit._entries) == 1                       # one entry module for both
    np.testing.assert_allclose(a[1], 2 * x * y + np.cos(x), atol=1e-15)
    np.testing.assert_allclose(b[1], 2 * x * y - np.sin(x), atol=1e-15)
    entry_files = [p for p in tmp_path.iterdir() if not p.name.startswith("rec-")]
    monkeypatch.setattr(llvm_jit, "_cache", {})
    monkeypatch.setattr(llvm_jit, "_entries", {})
    again = driver(("contig", "contig"))
    assert again.origin == "disk"
    c = again.python_entry()(x, y, 1.0, False)
    assert [p for p in tmp_path.iterdir() if not p.name.startswith("rec-")] == entry_files   # nothing new
    assert a[0] == c[0] and np.array_equal(a[1], c[1]) and np.array_equal(a[2], c[2])
    assert llvm_entry.qualifies(d.spec)
    assert not llvm_entry.qualifies(LoopSpec(("contig",), value="store"))
    assert not llvm_entry.qualifies(LoopSpec(("strided", "contig"), value="sum", partials=True, seed="scalar"))


def test_entry_module_is_valid_for_every_shape():
    """Every shape an entry is made for compiles (the IR is checked by LLVM's verifier)."""
    from s2sad.kernel import ScanSpec

    specs = [LoopSpec(l, value=v, partials=True, seed="scalar")
             for l in [("contig",), ("scalar", "contig"), ("contig", "contig", "scalar")] for v in ("sum", "none")]
    specs += [ScanSpec(("contig", "scalar"), k, value="sum", grads=True, seed="scalar") for k in (1, 2)]
    for spec in specs:
        for dt in (np.float64, np.float32):
            for active in [(0,), tuple(range(len(spec.layouts)))]:
                address, _, name = llvm_jit.entry_code(spec, dt, active)
                assert address and name == llvm_entry.entry_name(spec, dt, active)

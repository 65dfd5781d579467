"""Arithmetic elementwise loops at the host's full vector width (codegen/llvm_lower.wide_worth):
which drivers ask for it, and that the wider loops' remainders still give every element."""
import math

import numpy as np
import pytest

import s2sad
from s2sad.codegen import llvm_lower
from s2sad.kernel import LoopSpec, ScanSpec

COEFFS = tuple(0.5 / (k + 1) for k in range(16))


def horner(z):
    acc = 0.0
    for c in COEFFS:           # (unrolled by s2sad: a tuple of numbers)
        acc = acc * z + c
    return acc


def horner_loss(x):
    return np.sum(s2sad.broadcast(horner, x))


def horner_grad(x):
    n = len(COEFFS)
    return sum(COEFFS[k] * (n - 1 - k) * x ** (n - 2 - k) for k in range(n - 1))


def _body(ops: int, extra: str = "") -> list[str]:
    return ["define internal double @f(double %x) {\n" + "".join(f"  %a{i} = fmul double %x, %x\n" for i in range(ops))
            + extra + "  ret double %x\n}"]


SPEC = LoopSpec(("contig",), value="sum", partials=True, seed="scalar")


def test_arithmetic_loops_take_the_full_width():
    assert llvm_lower.wide_worth(_body(llvm_lower.WIDE_MIN_OPS), SPEC)
    assert not llvm_lower.wide_worth(_body(llvm_lower.WIDE_MIN_OPS - 1), SPEC)     # loads and stores: LLVM's choice


@pytest.mark.parametrize("extra", ["  %d = fdiv double %x, %x\n", "  %s = call double @llvm.sqrt.f64(double %x)\n",
                                   "  br label %for.head\n"])
def test_division_root_or_loop_keep_llvms_choice(extra):
    assert not llvm_lower.wide_worth(_body(4 * llvm_lower.WIDE_MIN_OPS, extra), SPEC)


def test_scan_drivers_keep_llvms_choice():
    spec = ScanSpec(("contig",), n_state=1, value="sum", grads=True, seed="scalar")
    assert not llvm_lower.wide_worth(_body(4 * llvm_lower.WIDE_MIN_OPS), spec)


@pytest.mark.parametrize("n", [1, 3, 7, 8, 15, 16, 17, 31, 33, 63, 65, 127, 129, 1000, 10007])
def test_wide_loop_gives_every_element(n):
    x = np.linspace(-1.3, 1.7, n)
    g = s2sad.grad(horner_loss)(x)
    np.testing.assert_allclose(g, horner_grad(x), rtol=1e-12, atol=1e-12)
    v, g2 = s2sad.value_and_grad(horner_loss)(x)
    assert math.isclose(v, float(sum(horner(z) for z in x)), rel_tol=1e-12, abs_tol=1e-12)
    np.testing.assert_array_equal(g, g2)


def _driver_ir(loss) -> str:
    """The lowered (host-independent) IR of loss's fused driver, as golden.py writes it."""
    from s2sad.codegen import llvm
    c = s2sad.grad(loss).__s2sad__.c
    active = c.active_for((0,))
    spec = LoopSpec(tuple("contig" for _ in c.kernel.params), value="sum", partials=True, seed="scalar")
    return llvm.lower(c.kernel.module(active), spec, np.float64)


def abs_loss(x):
    return np.sum(np.abs(x))


def test_the_polynomial_takes_the_full_width_and_abs_does_not():
    assert '"prefer-vector-width"="512"' in _driver_ir(horner_loss)
    assert "prefer-vector-width" not in _driver_ir(abs_loss)

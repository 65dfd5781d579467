"""Small batches (issue 17): a specialised copy whose recorded results needed no shaping
(each gradient an ndarray of its argument's dtype and shape, a tuple for a tuple of
argnums) has its results returned as they are by the hot path (array_hot.py, the
`as_is` flag of Specializer.specs); the results are still the full path's, bit for bit,
in type, dtype and shape, for grad and value_and_grad, an int or a tuple argnums, and
float64, float32, Fortran-ordered and strided signatures (grad's copies, all taken as
they are, are asserted so).
"""
from __future__ import annotations

import numpy as np
import pytest

import s2sad

from test_small_batch import CASES, full_path, same_bits, special_of


def _variants(make):
    args = make(32, seed=3)
    return [args, tuple(a.astype(np.float32) for a in args),
            tuple(np.asfortranarray(a) if a.ndim == 2 else a for a in args),
            tuple(np.repeat(a, 2, axis=-1)[..., ::2] if a.ndim == 2 else a for a in args)]


def _same_kinds(got, want):
    """Types, dtypes and shapes, level by level (same_bits compares the numbers)."""
    assert type(got) is type(want)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            _same_kinds(a, b)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape


def _leaves(r) -> list:
    return [x for part in r for x in _leaves(part)] if isinstance(r, tuple) else [r]


@pytest.mark.parametrize("what", ["grad", "value_and_grad"])
@pytest.mark.parametrize("loss,argnums,make", CASES, ids=[c[0].__name__ for c in CASES])
def test_results_returned_as_recorded_are_the_full_paths(loss, argnums, make, what):
    for nums in (argnums, argnums[0]):
        g = getattr(s2sad, what)(loss, argnums=nums)
        variants = _variants(make)
        for _ in range(4):
            for args in variants:
                got = g(*args)
                want = full_path(g, *args)
                _same_kinds(got, want)
                same_bits(_leaves(got), _leaves(want))
        if what == "grad":     # (value_and_grad's copies may keep the shaping: checked above to be right)
            sp = special_of(g)
            assert sp is not None
            for args in variants:       # every signature recorded, its results taken as they are
                assert sp.specialised(args)
                key = tuple(x for a in args for x in (a.shape, a.strides, a.dtype))
                assert sp.specs[key][1] is True

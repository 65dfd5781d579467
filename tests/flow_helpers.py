"""What the tests of array-level programs as people write them share
(tests/test_array_flow_*.py): value and gradients against the function itself and
central differences, on one backend, with the inputs left as they were."""
import numpy as np
import pytest

import s2sad
from conftest import assert_same_grads, central_fd


def check(f, args, argnums=0, backend="python", rtol=1e-6, atol=1e-8):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    before = [np.array(a, copy=True) for a in args]
    value, grads = s2sad.value_and_grad(f, argnums=nums, backend=backend)(*args)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b, err_msg="an input was changed")
    want = float(f(*args))
    if np.isnan(want):
        assert np.isnan(value)
    else:
        assert value == pytest.approx(want, rel=1e-12, abs=1e-12)
    for i, g in zip(nums, grads):
        fd = central_fd(lambda *a: float(f(*a)), args, i)
        assert np.shape(g) == np.shape(args[i])
        np.testing.assert_allclose(g, fd, rtol=rtol, atol=atol, err_msg=f"d/d arg {i}")
    assert_same_grads(s2sad.grad(f, argnums=nums, backend=backend)(*args), tuple(grads))
    return value, grads


def refused(f, args, needle, cls=s2sad.S2SADError, words=(), where=None):
    """f's derivative is a located refusal at the line holding `needle` (in f, or in
    the function `where`), whose message holds `words` and which has a hint."""
    import inspect
    with pytest.raises(cls) as e:
        s2sad.grad(f)(*args)
    lines, start = inspect.getsourcelines(where or f)
    line = start + next(i for i, l in enumerate(lines) if needle in l)
    msg = str(e.value)
    assert f":{line}:" in msg, msg
    assert e.value.hint, msg
    for w in words:
        assert w in msg, (w, msg)
    return e.value

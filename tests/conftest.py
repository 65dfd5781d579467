import numpy as np
import pytest

BACKENDS = ["python", "llvm"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def central_fd(f, args, i, h=1e-6):
    """Central finite differences of scalar f(*args) w.r.t. args[i] (array or float)."""
    args = list(args)
    a = args[i]
    if np.ndim(a) == 0 and not isinstance(a, np.ndarray):
        args[i] = a + h
        fp = f(*args)
        args[i] = a - h
        fm = f(*args)
        return (fp - fm) / (2 * h)
    a = np.asarray(a, dtype=float)
    out = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        ap, am = a.copy(), a.copy()
        ap[idx] += h
        am[idx] -= h
        args[i] = ap
        fp = f(*args)
        args[i] = am
        fm = f(*args)
        out[idx] = (fp - fm) / (2 * h)
    return out

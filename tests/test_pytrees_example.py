"""Issue 15's example, examples/oscillator_fit.py (parameters in a dict, the data on an
object, the loss a method returning aux, Adam stopping at a tolerance): it fits the
true parameters, and its gradient is central differences' on every backend."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import s2sad

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "oscillator_fit.py"


def _example():
    spec = importlib.util.spec_from_file_location("oscillator_fit", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_oscillator_example_fits_the_true_parameters(capsys):
    assert _example().main() == 0
    assert "omega" in capsys.readouterr().out


def test_the_oscillator_gradient_against_central_differences(backend):
    ex = _example()
    data = ex.simulate(np.random.default_rng(0), n=50)
    params = {"amp": 1.1, "log_gamma": -0.9, "omega": 1.8, "phase": 0.2}
    (value, residual), g = s2sad.value_and_grad(data.loss, has_aux=True, backend=backend)(params)
    assert value == pytest.approx(data.loss(params)[0], rel=1e-12)
    np.testing.assert_allclose(residual, data.loss(params)[1], rtol=1e-12)
    h = 1e-6
    for k in params:
        up, down = dict(params), dict(params)
        up[k] += h
        down[k] -= h
        fd = (data.loss(up)[0] - data.loss(down)[0]) / (2 * h)
        assert g[k] == pytest.approx(fd, rel=1e-6, abs=1e-9), k

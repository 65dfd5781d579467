"""s2sad: source-to-source automatic differentiation for numeric Python.

The gradient of sum(f(x)) for a plain scalar Python function f, computed with dual
numbers in one compiled pass. See docs/design.md for the pipeline.
"""
from .api import (broadcast, defrule, defvjp, differentiate, explain, grad, jvp, source, value_and_grad, vjp)
from .errors import (BackendUnavailableError, FreeVariableError, NonDifferentiableInputError,
                     NonScalarLossError, NoSourceError, RecursionNotSupportedError, S2SADError,
                     ShapeError, StaleSourceError, StatefulError, UnsupportedOperationError,
                     UnsupportedSyntaxError)
from .errors import HigherOrderNotSupportedError
from . import tree
from .higher import hessian, hvp, jacfwd, jacobian, jacrev

__version__ = "0.1.0"

__all__ = [
    "grad", "value_and_grad", "jvp", "vjp", "broadcast", "differentiate", "explain", "source", "defrule", "defvjp",
    "hessian", "jacfwd", "jacrev", "jacobian", "hvp",
    "S2SADError", "UnsupportedSyntaxError", "NoSourceError", "RecursionNotSupportedError",
    "FreeVariableError", "NonDifferentiableInputError", "NonScalarLossError", "ShapeError",
    "StatefulError", "StaleSourceError", "BackendUnavailableError", "UnsupportedOperationError",
    "HigherOrderNotSupportedError", "tree",
]

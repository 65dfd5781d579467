"""Backends: where kernels run (python, llvm, cuda), and the one registry that names them.

Each backend is one object behind the protocol of `base.Backend` (prepare, compile,
launch), in its own module; `codegen` does their lowering (core language -> Python,
LLVM IR, CUDA C). The user-facing API takes names ("auto", "python", "llvm", "cuda");
this registry is the only place that reads them:

    choose(name_or_backend)             the registry's object for a name ("auto": AUTO,
                                        a choice made per call); unknown names refused
    backend_for(name_or_backend, args)  the Backend that runs a call with `args`: "auto"
                                        is llvm for numpy arrays and numbers, cuda when a
                                        cupy array is among them; BackendUnavailableError
                                        where the backend cannot run them

A derivative chooses once (when it is made: `choose`) and resolves once per call, at
the runtime's entry points; below them, functions take a Backend object.

Layers: backends sit below the runtime (which imports them, never the reverse) and
above codegen, kernel and passes.
"""
from __future__ import annotations

from typing import Any, Sequence, Union

from ..errors import BackendUnavailableError
from .arraymodule import any_cupy, is_cupy
from .base import Backend
from .cuda import CUDA
from .llvm import LLVM
from .python import PYTHON


class Auto:
    """The choice "auto": llvm for numpy arrays and numbers, cuda where a cupy array is
    among a call's arguments. Not a backend: `resolve` gives one per call."""

    name = "auto"
    fast_path = True     # numpy calls may take the llvm backend's lean path

    def __repr__(self) -> str:
        return "<s2sad backend choice 'auto'>"

    def resolve(self, arrays: Sequence[Any]) -> Backend:
        return CUDA.resolve(arrays) if any_cupy(arrays) else LLVM


AUTO = Auto()
Choice = Union[Backend, Auto]
REGISTRY: dict[str, Choice] = {"auto": AUTO, "python": PYTHON, "llvm": LLVM, "cuda": CUDA}
NAMES = tuple(REGISTRY)


# names and the objects themselves: one dict lookup chooses (an entry point's cost)
_KNOWN: dict[Any, Choice] = {**REGISTRY, **{c: c for c in REGISTRY.values()}}


def choose(backend: str | Choice) -> Choice:
    """The registry's object for `backend` (a name, or an object it gave before)."""
    try:
        return _KNOWN[backend]
    except (KeyError, TypeError):    # TypeError: unhashable
        raise BackendUnavailableError(f"unknown backend {backend!r}",
                                      hint=f"Use one of {', '.join(NAMES)}.") from None


def backend_for(backend: str | Choice, arrays: Sequence[Any]) -> Backend:
    """The backend that runs a call with `arrays` (see the module docstring)."""
    return choose(backend).resolve(arrays)


__all__ = ["AUTO", "CUDA", "LLVM", "PYTHON", "NAMES", "REGISTRY", "Auto", "Backend", "Choice",
           "backend_for", "choose", "is_cupy"]

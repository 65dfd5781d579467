"""`Kernel`: a kernel's planned program (`passes.kernelplan.KernelPlan`) with the caches
of its launches.

What a kernel compiled or generated for a launch is kept on it, made once per key:
compiled drivers, launchers, the lean paths' plans and call stubs (`cached`), the
Python backend's functions (`python_functions`), the fused drivers' Python entries the
derivative's hot path calls (`entries`) and the launch plans of `runtime.launch`
(`launch_plans`, at most `runtime.LAUNCH_PLANS`), and what a plain signature's calls found out
(`kept`, as many).

Invariant: every cache is keyed by what its value depends on beyond the (unchanging)
program, so a kernel is compiled once per (program, LoopSpec, dtype), never per array
length.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .codegen import python as pybackend
from .passes.kernelplan import KernelPlan


@dataclass
class Kernel(KernelPlan):
    """A scalar program the runtime applies elementwise, and what its launches made."""

    _python: dict[tuple[str, ...], dict] = field(default_factory=dict)
    _drivers: dict[tuple, Any] = field(default_factory=dict)  # see `cached`
    # (value, active) -> the Python entry of the fused driver last made for them (see
    # llvm_entry): what derivative's hot path calls with the user's arguments
    entries: dict[tuple, Any] = field(default_factory=dict)
    # launch's per-signature work (index space, layouts, driver), at most LAUNCH_PLANS
    launch_plans: dict[tuple, Any] = field(default_factory=dict)
    # what a plain signature's calls found out, kept for the next call of that signature
    # (runtime.keep: whole launches, which inputs to materialize, a row pass's composed
    # call), at most LAUNCH_PLANS
    kept: dict[tuple, Any] = field(default_factory=dict)

    def cached(self, key: tuple, make: Callable[[], Any]) -> Any:
        """What this kernel compiled or generated, made once per key: compiled drivers,
        launchers, fast-path plans and call stubs (key[0] says which)."""
        value = self._drivers.get(key)
        if value is None:
            value = self._drivers[key] = make()
        return value

    def python_functions(self, active: tuple[str, ...]) -> dict:
        """The kernel module for `active` compiled to Python functions (the python backend)."""
        if active not in self._python:
            self._python[active] = pybackend.compile_module(self.module(active))
        return self._python[active]

"""A kernel's planned program: one scalar program and what is derived from it.

`KernelPlan` holds a `ScalarProgram` and makes, once each and on demand, the things the
compiler derives from it: the kernel module with the dual for a set of active params
(`forward.make_dual`, and the result kind `activity.result_kind` finds), the signature
that finds its compiled drivers on disk, its seeded form (the kernel times a seed
given as two factors), and whether the dual's partials are all the constant zero
(`zero_partials`: a comparison, floor, sign, round, a `where` between constants, whose
rules' partials are zero and which the dual folds to the constant). It compiles and
launches nothing: `runtime.Kernel` extends it with the caches of its launches.

Invariants: a plan's program never changes after it is made, so every derived form is
made at most once per key; the seeded form is a plan of the same class as the one it
was made from (a runtime kernel's seeded form is launched as one).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import gast

from ..kernel import KernelModule, KernelSignature, fresh_name
from ..kernel_text import unparse
from ..parsing import gast_parse
from .activity import result_kind
from .forward import make_dual
from .normalize import ScalarProgram


@dataclass
class KernelPlan:
    """A scalar program the runtime can apply elementwise, with duals made on demand."""

    program: ScalarProgram
    name: str
    _modules: dict[tuple[str, ...], KernelModule] = field(default_factory=dict)
    _derived: dict[tuple, Any] = field(default_factory=dict)   # signatures and the seeded form

    @property
    def params(self) -> tuple[str, ...]:
        return self.program.params

    def module(self, active: tuple[str, ...] = ()) -> KernelModule:
        """The kernel module with the dual for `active` params (none: primal only)."""
        if active not in self._modules:
            functions = dict(self.program.functions)
            dual_entry = None
            if active:
                dual_entry, duals = make_dual(self.program.functions, self.program.entry, active,
                                              self.program.custom_rules)
                functions.update(duals)
            self._modules[active] = KernelModule(
                name=self.name, functions=functions, entry=self.program.entry, params=self.params,
                result_kind=result_kind(self.program.functions, self.program.entry),
                dual_entry=dual_entry, active=active, origins=dict(self.program.origins))
        return self._modules[active]

    def signature(self, active: tuple[str, ...]) -> KernelSignature:
        """The kernel's name, params, `active` and a digest of its scalar program's source
        (primal functions and user rules; the dual is made from them): what finds its
        compiled drivers on disk without making the dual."""
        key = ("signature", active)
        got = self._derived.get(key)
        if got is None:
            text = [self.program.entry]
            for name, fn in self.program.functions.items():
                text += [name, self.program.origins.get(name, ""), unparse(fn)]
            for name, (params, partials) in sorted(self.program.custom_rules.items()):
                text += [name, repr(params)] + ["-" if p is None else unparse(p) for p in partials or ()]
            digest = hashlib.sha256("\0".join(text).encode()).hexdigest()
            got = self._derived[key] = KernelSignature(self.name, self.params, active, digest)
        return got

    def seeded(self) -> KernelPlan:
        """This kernel times a seed given as two factors, `entry__seeded(params..., a, b)
        = a * b * entry(params...)`: its partials are (a * b) * d entry / d p, the same
        bits as a partial times the seed a * b formed beforehand. `runtime.vjp` runs it
        when the seed is a `SeedProduct`, reading the two factors instead of their
        product. Of this plan's class (see the invariants)."""
        got = self._derived.get(("seeded",))
        if got is None:
            prog = self.program
            taken = set(prog.params) | set(prog.functions)
            a, b, name = (fresh_name(base, taken) for base in ("seed_a", "seed_b", f"{prog.entry}__seeded"))
            params = ", ".join(prog.params)
            fn = gast_parse(f"def {name}({params}, {a}, {b}):\n    return {a} * {b} * {prog.entry}({params})\n").body[0]
            program = ScalarProgram({**prog.functions, name: fn}, name, prog.params + (a, b),
                                    {**prog.origins, name: f"{prog.entry} times a seed given as two factors"},
                                    prog.custom_rules)
            got = self._derived[("seeded",)] = type(self)(program, f"{self.name}__seeded")
        return got

    def zero_partials(self, active: tuple[str, ...]) -> bool:
        """Is every partial of the dual for `active` the constant +0 on every path, so
        that a gradient of this kernel is zeros whatever the inputs (NaN and inf
        included: a constant partial does not read them)? A proof from the dual's text
        (`constant_zero_partials`), made once per `active`; False for no active param."""
        key = ("zero partials", active)
        got = self._derived.get(key)
        if got is None:
            got = False
            if active:
                module = self.module(active)
                got = constant_zero_partials(module.functions[module.dual_entry], len(active))
            self._derived[key] = got
        return got


def constant_zero_partials(dual: gast.FunctionDef, n_partials: int) -> bool:
    """Does every return of the dual entry `dual` give (value, 0, ..., 0), each partial
    the literal +0 (int or float; never -0.0, whose product with a seed has the other
    sign), and its body end in a return? Anything else (a partial computed, a return of
    a helper's dual, a nested function) is not proven: the kernel runs. The frontend
    refuses `raise` and a path that reaches the end without returning."""
    return literal_partials(dual, n_partials, _is_plus_zero)


def literal_partials(dual: gast.FunctionDef, n_partials: int, is_literal: Callable[[gast.AST], bool]) -> bool:
    """Does every return of the dual entry `dual` give (value, p1, ..., pn) with each
    partial a literal `is_literal` accepts, with no nested function, and its body end in
    a return (so every path returns one of them)?"""
    if not dual.body or not isinstance(dual.body[-1], gast.Return):
        return False
    found = False
    for node in gast.walk(dual):
        if node is not dual and isinstance(node, (gast.FunctionDef, gast.Lambda)):
            return False
        if isinstance(node, gast.Return):
            value = node.value
            if not isinstance(value, gast.Tuple) or len(value.elts) != 1 + n_partials:
                return False
            if not all(is_literal(e) for e in value.elts[1:]):
                return False
            found = True
    return found


def _is_plus_zero(node) -> bool:
    if not isinstance(node, gast.Constant) or type(node.value) not in (int, float):
        return False
    return node.value == 0 and math.copysign(1.0, node.value) > 0

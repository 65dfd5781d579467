"""What the two writers of one adjoint generation share (passes/reverse.py): the
program, the differentiated arguments and pullback mode, the names generation adds
(adjoints `x_bar`, partials, temporaries: one Namer, so no two collide), the values the
generated source runs with (`ns`: kernels and bound functions), and the generation's
pullback mode chosen for each kernel (`kernel_modes`) and the program's index. The
per-statement analyses are on the statements (adjoint_analysis.annotated).

One AdjointContext per generation; the program is never changed by it.
"""
from __future__ import annotations

from typing import Any

from .adjoint_analysis import ProgramIndex, active_names
from .arrayir import ArrayProgram, ArrayStmt, Namer


class AdjointContext:
    def __init__(self, prog: ArrayProgram, argnums: tuple[int, ...], mode: str):
        self.p = prog
        self.argnums = argnums
        self.mode = mode
        self.namer = Namer()                      # a copy: generation adds names of its own
        self.namer.used = set(prog.namer.used)
        self.namer.temps = prog.namer.temps
        self.ns: dict[str, Any] = {}              # name -> value, for the generated source
        self.kernel_modes: dict[str, tuple[str, str]] = {}   # kernel name -> (pullback mode, why)
        self.index = ProgramIndex.of(prog)
        self.active: set[str] = active_names(prog, argnums)
        self.bars: dict[str, str] = {}
        self.kernel_names: dict[int, str] = {}    # id(kernel) -> its name in `ns`
        # a stored partial -> (the forward lines binding it, the line binding it unstored)
        self.out_partials: dict[str, tuple[list, str]] = {}
        # a target of a joined lhs_bar_sums line -> (that line's JoinedSums, its position)
        self.joined_sums: dict[str, tuple] = {}

    def is_active(self, op) -> bool:
        """Does operand `op` (a name or a Const) carry a derivative?"""
        return isinstance(op, str) and op in self.active

    def bar(self, name: str) -> str:
        """The name of `name`'s adjoint."""
        b = self.bars.get(name)
        if b is None:
            b = self.bars[name] = self.namer.fresh(f"{name}_bar")
        return b

    def kernel_name(self, st: ArrayStmt) -> str:
        """The name the generated source calls `st`'s kernel by (bound in `ns`)."""
        k = st.op.kernel
        nm = self.kernel_names.get(id(k))
        if nm is None:
            nm = self.kernel_names[id(k)] = k.name
            self.ns[nm] = k
        return nm

    def kernel_active(self, st: ArrayStmt) -> list[tuple[int, str, str]]:
        """(position, kernel parameter, operand) of each active input."""
        k = st.op.kernel
        return [(i, k.params[i], a) for i, a in enumerate(st.args) if self.is_active(a)]

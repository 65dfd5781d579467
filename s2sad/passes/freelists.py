"""Free lists an array program converts itself: their numbers checked on that conversion.

A global or closure list the function reads (`np.array(L)`) is a free operand of the
array program, read at call time. Its elements can turn complex, long double or strings
between calls; the kernels would then drop or round them (freedata). The plan's per-call
test on the list (frontend.Assumptions) could convert the list to learn its dtype, but
the generated code converts it anyway: each statement that converts a free list,
`_1 = np.array(L)` or `np.asarray(L)`, is wrapped here in a checker bound at plan time
(`_1 = real_data(np.array(L))`, freedata.RealData) that refuses a lossy result at the
user's read, located, as the plan does on a first call. One conversion a call.

Invariants: a free list read by any other statement (`L[0]`, `sum(L)`,
`np.array(L, dtype=float)`, a primitive taking `L`: each may raise or compute before a
check could see the numbers) keeps the per-call test (it is not in `checked_lists`); a
wrapped statement's value is the unwrapped one's (the checker returns it as it is or
raises); every route's generated program writes that statement as `unparse(forward)`,
so each route runs the check.
"""
from __future__ import annotations

import gast

from .. import array_prims
from ..freedata import RealData
from .arrayir import ArrayStmt, Py, stmt_reads, walk_stmts
from .trees import name as name_expr


def check_free_lists(prog, builder) -> set:
    """Wrap each statement of `prog` that converts a free list (`np.array(L)`) in a
    RealData checker;
    -> the (id(resolver), user's name) pairs of the free lists read only by such statements
    (their plan needs no per-call test of their numbers)."""
    lists = {g: src for g, src in prog.free.items() if type(_value(src)) is list}
    if not lists:
        return set()
    elsewhere = set()
    for st in walk_stmts(prog.body):
        read = stmt_reads(st) & lists.keys()
        if not read:
            continue
        if len(read) == 1 and _converts(st, next(iter(read))):
            _wrap(st, next(iter(read)), lists, builder)
        else:
            elsewhere |= read
    return {(id(lists[g][0]), lists[g][1]) for g in lists.keys() - elsewhere}


def _converts(st, g: str) -> bool:
    """Is st `np.array(g)` or `np.asarray(g)`, as every generated program writes it
    (`unparse(st.forward)`)? Only that conversion: it cannot raise on lossy numbers
    (`np.array(L, dtype=float)`, `sum(L)` can: the per-call test stays for those)."""
    if not isinstance(st, ArrayStmt) or not st.target or not isinstance(st.op, Py) and not (
            array_prims.of(st.op) is not None and array_prims.of(st.op).forward is None):
        return False
    f = st.forward
    return (isinstance(f, gast.Call) and not f.keywords and len(f.args) == 1
            and isinstance(f.args[0], gast.Name) and f.args[0].id == g
            and isinstance(f.func, gast.Attribute) and f.func.attr in ("array", "asarray")
            and isinstance(f.func.value, gast.Name) and f.func.value.id == "np")


def user_forward(st, bound: dict):
    """st.forward as the user wrote it (the checker around it left out), for explain."""
    f = st.forward
    if isinstance(f, gast.Call) and isinstance(f.func, gast.Name) and isinstance(bound.get(f.func.id), RealData):
        return f.args[0]
    return f


def _value(src):
    resolver, nm = src
    try:
        return resolver.current(nm)
    except Exception:       # noqa: BLE001 (a default value's holder, or a function gone)
        return None


def _wrap(st: ArrayStmt, g: str, lists: dict, builder) -> None:
    """st.forward = checker(st.forward), the checker naming the list it reads and located
    at that read."""
    nm = lists[g][1]
    node = next((n for n in gast.walk(st.node) if isinstance(n, gast.Name) and n.id == nm), st.node)
    checker = builder.bind_value(RealData(nm, builder.loc(st.ctx, node)), "real_data")
    st.forward = gast.Call(func=name_expr(checker), args=[st.forward], keywords=[])

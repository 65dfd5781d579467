"""Does an array program decompose over blocks of rows? (for gradients over dask arrays)

Given which parameters hold rows of data (`chunked`: their axis 0 is the data's rows),
`row_split` proves that the loss has the form

    loss = a * S + b        S = sum over rows of e(row)   (kind "sum")
                            or the mean over rows          (kind "mean")

where e reads one row of each chunked parameter and the other (row-free) values, and
a, b read no row. Then the loss over all rows is a weighted sum of the loss over blocks
of rows (dask_grad): for "mean" each block of m of n rows weighs m / n (the weights sum
to 1, so b comes out once); for "sum" each block weighs 1 and, when b may be nonzero
(`offset`), the loss over no rows (which is b) is taken off once per extra block.

The proof is an abstract interpretation over the statements, each value one of
    F  row-free (reads no row)
    R  row-aligned: axis 0 is the rows, row r reads only row r of the chunked data
    L  a * S + b as above, with its kind and whether b may be nonzero
and it is conservative: an operation it has no rule for, given an R or L operand, is
refused (a `RowSplitRefusal` naming the statement), never guessed. Rules: elementwise
kernels (R with F broadcast; L only affinely: +, -, * and / by F, unary minus), full
sums and means (R -> L), reductions along an axis other than the rows, `R @ F` for 2-D
R, columns indexed with the rows kept (`x[:, j]`), joins along an axis other than the
rows, copies; loops and branches that carry R values row-wise. What reads the rows in
another way (`X.shape[0]`, `len(X)`, a max over rows, centring by a mean over rows, a
transpose) is refused: a global normalisation does not split.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gast

from ..array_prims import Copy, Index, Join, Product, Reduce
from ..array_prims.rowfused import RowFused
from .arrayir import ArrayProgram, ArrayStmt, Const, ForStmt, IfStmt, KernelSum, RunKernel


@dataclass(frozen=True)
class Kind:
    tag: str                     # "F" | "R" | "L"
    ndim: int | None = None      # R: its number of dimensions where known
    kind: str = ""               # L: "sum" | "mean"
    offset: bool = False         # L: b may be nonzero


F = Kind("F")


@dataclass(frozen=True)
class RowSplit:
    kind: str                    # "sum" | "mean"
    offset: bool


class RowSplitRefusal(Exception):
    def __init__(self, why: str, node: Any = None):
        super().__init__(why)
        self.why, self.node = why, node


def row_split(program: ArrayProgram, chunked: set[str], ndims: dict[str, int]) -> RowSplit:
    """`chunked`: the parameters (SSA names) holding rows; `ndims`: each parameter's
    number of dimensions in this call."""
    env: dict[str, Kind] = {p: Kind("R" if p in chunked else "F", ndims.get(p)) for p in program.params}
    _walk(program.body, env)
    res = _of(program.result, env)
    if res.tag != "L":
        raise RowSplitRefusal("the loss is not a sum or mean over the rows of the chunked data"
                              if res.tag == "F" else "the loss is not reduced over the rows to a scalar",
                              program.return_node)
    return RowSplit(res.kind, res.offset)


def _of(operand, env) -> Kind:
    if isinstance(operand, Const) or operand is None:
        return Kind("F", 0) if isinstance(getattr(operand, "value", None), (int, float)) else F
    return env.get(operand, F)


def _walk(body, env) -> None:
    for st in body:
        if isinstance(st, ArrayStmt):
            _read_guard(st, env)
            if st.target is not None:
                env[st.target] = _stmt(st, [_of(a, env) for a in st.args])
        elif isinstance(st, ForStmt):
            _loop(st, env)
        elif isinstance(st, IfStmt):
            if _of(st.test, env).tag != "F":
                raise RowSplitRefusal("a branch on a value computed from the rows", st.node)
            _walk(st.body, env)
            _walk(st.orelse, env)
            for phi in st.phis:
                env[phi.name] = _join(_of(phi.first, env), _of(phi.second, env), st.node)
        else:
            raise RowSplitRefusal(f"a statement s2sad has no row rule for ({type(st).__name__})", getattr(st, "node", None))


def _loop(st: ForStmt, env) -> None:
    for phi in st.phis:                 # the first iteration sees the values before the loop
        env[phi.name] = _of(phi.first, env)
    for name in st.reads:
        if env.get(name, F).tag != "F":
            raise RowSplitRefusal("a loop whose range reads the rows", st.node)
    _walk(st.body, env)
    for phi in st.phis:
        joined = _join(_of(phi.first, env), _of(phi.second, env), st.node)
        if joined != env[phi.name]:     # the kind changes across iterations: walk once more
            env[phi.name] = joined
            _walk(st.body, env)
            joined = _join(_of(phi.first, env), _of(phi.second, env), st.node)
        env[phi.name] = joined


def _join(a: Kind, b: Kind, node) -> Kind:
    if a == b:
        return a
    if a.tag == b.tag and a.tag in ("R", "F"):
        return Kind(a.tag, a.ndim if a.ndim == b.ndim else None)
    raise RowSplitRefusal("a value that reads the rows on one path and not on another", node)


def _read_guard(st: ArrayStmt, env) -> None:
    """Names read outside the operands (an axis, an index) must not read the rows."""
    for name in st.reads:
        if env.get(name, F).tag != "F":
            raise RowSplitRefusal("a static parameter computed from the rows", st.node)


def _stmt(st: ArrayStmt, kinds: list[Kind]) -> Kind:
    op = st.op
    if all(k.tag == "F" for k in kinds):
        return Kind("F", _broadcast_ndim(kinds)) if isinstance(op, RunKernel) else F
    if isinstance(op, RunKernel):
        return _kernel(st, kinds)
    if isinstance(op, KernelSum):
        if any(k.tag == "L" for k in kinds):
            raise RowSplitRefusal("a sum over rows of something computed from a sum over rows", st.node)
        return Kind("L", kind=op.reduction, offset=False)
    if isinstance(op, Reduce):
        return _reduce(st, op, kinds[0])
    if isinstance(op, RowFused) and kinds[0].tag == "R" and all(k.tag in ("R", "F") for k in kinds[1:]) \
            and _axis(op.axis) not in (None, 0):
        # row-wise softmax family, layer norm, sum(y log_softmax) (passes/rowfusion...): each
        # row from its own; the last drops the row axis' length (keepdims aside)
        return kinds[0] if op.kind != "row_dot_log_softmax" else Kind("R", None)
    if isinstance(op, Product) and op.kind in ("matmul", "dot") and len(kinds) == 2:
        a, b = kinds
        if a.tag == "R" and b.tag == "F" and a.ndim is not None and a.ndim >= 2:
            if b.ndim is None:
                return Kind("R", None)
            return Kind("R", a.ndim - 1 if b.ndim == 1 else max(a.ndim, b.ndim))
        raise RowSplitRefusal("a matrix product that mixes rows (only rows @ row-free, rows 2-D, splits)", st.node)
    if isinstance(op, Copy) and kinds[0].tag == "R":
        return kinds[0]
    if isinstance(op, Index) and kinds[0].tag == "R" and len(kinds) == 1 and _keeps_rows(op.index):
        return Kind("R", None)
    if isinstance(op, Join) and all(k.tag == "R" for k in kinds) and _axis(op.axis) is not None and _axis(op.axis) >= 1:
        return Kind("R", None)
    raise RowSplitRefusal(f"{getattr(op, 'name', type(op).__name__)} of a value computed from the rows "
                          "(it may mix rows: s2sad splits only row-wise work)", st.node)


def _reduce(st: ArrayStmt, op: Reduce, k: Kind) -> Kind:
    if k.tag == "L":
        raise RowSplitRefusal("a reduction of a sum over rows", st.node)
    if op.full:
        if op.kind in ("sum", "mean"):
            return Kind("L", kind=op.kind, offset=False)
        raise RowSplitRefusal(f"the {op.kind} over all rows does not split into blocks", st.node)
    axis = _axis(op.axis)
    if axis is not None and axis < 0 and k.ndim is not None:
        axis %= k.ndim
    if axis is None or axis == 0:
        raise RowSplitRefusal("a reduction along the rows' axis (or an axis s2sad cannot read): write "
                              "np.sum/np.mean without axis for the loss", st.node)
    keep = op.keepdims is not None and not (isinstance(op.keepdims, gast.Constant) and op.keepdims.value is False)
    return Kind("R", None if k.ndim is None else (k.ndim if keep else k.ndim - 1))


def _axis(e) -> int | None:
    if isinstance(e, gast.Constant) and type(e.value) is int:
        return e.value
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.USub) and isinstance(e.operand, gast.Constant) \
            and type(e.operand.value) is int:
        return -e.operand.value
    return None


def _keeps_rows(index) -> bool:
    """x[:, ...]: the first index is a full slice (the rows kept, in order)."""
    e = index
    if isinstance(e, gast.Subscript):        # np.s_[...]
        e = e.slice
    first = e.elts[0] if isinstance(e, gast.Tuple) and e.elts else e
    return isinstance(first, gast.Slice) and first.lower is None and first.upper is None and first.step is None


# ------------------------------------------------------------------ kernels


def _kernel(st: ArrayStmt, kinds: list[Kind]) -> Kind:
    tags = {k.tag for k in kinds}
    if "L" not in tags:
        return Kind("R", _broadcast_ndim(kinds))
    if "R" in tags:
        raise RowSplitRefusal("an elementwise operation between the rows and a sum or mean over them "
                              "(a normalisation over rows does not split into blocks)", st.node)
    lin = [k for k in kinds if k.tag == "L"]
    if len({k.kind for k in lin}) != 1:
        raise RowSplitRefusal("a sum over rows combined with a mean over rows", st.node)
    kernel = st.op.kernel
    fn = kernel.program.functions[kernel.program.entry]
    names = [a.id for a in fn.args.args]
    if len(names) != len(kinds):
        raise RowSplitRefusal("a kernel s2sad cannot read for the row split", st.node)
    linear = {n: k.offset for n, k in zip(names, kinds) if k.tag == "L"}
    offset = _affine(fn, linear)
    if offset is None:
        raise RowSplitRefusal("a sum or mean over rows used other than affinely (+, -, * or / by row-free "
                              "values)", st.node)
    return Kind("L", kind=lin[0].kind, offset=offset)


def _broadcast_ndim(kinds: list[Kind]) -> int | None:
    """An elementwise result's number of dimensions: its operands' most, where all are known."""
    ndims = [k.ndim for k in kinds]
    return None if any(d is None for d in ndims) else max(ndims, default=0)


class _NotAffine(Exception):
    pass


def _affine(fn: gast.FunctionDef, linear: dict[str, bool]) -> bool | None:
    """None if fn's result is not affine in the `linear` parameters; else whether it may
    add a term that does not read them (given each linear parameter's own offset)."""
    dep = dict(linear)       # name -> offset, for names affine in the linear parameters
    try:
        for s in fn.body:
            if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
                r = _cls(s.value, dep)
                dep.pop(s.targets[0].id, None)
                if r is not None:
                    dep[s.targets[0].id] = r
            elif isinstance(s, gast.Return) and s.value is not None:
                r = _cls(s.value, dep)
                return r if r is not None else None
            else:
                return None
    except _NotAffine:
        return None
    return None


def _cls(e, dep: dict[str, bool]):
    """None: e reads no linear name; else e is affine, with an offset or not."""
    if isinstance(e, gast.Name):
        return dep.get(e.id)
    if isinstance(e, gast.Constant):
        return None
    if isinstance(e, gast.UnaryOp) and isinstance(e.op, (gast.USub, gast.UAdd)):
        return _cls(e.operand, dep)
    if isinstance(e, gast.BinOp):
        a, b = _cls(e.left, dep), _cls(e.right, dep)
        if a is None and b is None:
            return None
        if isinstance(e.op, (gast.Add, gast.Sub)):
            return True if (a is None or b is None) else (a or b)
        if isinstance(e.op, gast.Mult) and (a is None or b is None):
            return a if b is None else b
        if isinstance(e.op, gast.Div) and b is None:
            return a
        raise _NotAffine
    if any(isinstance(n, gast.Name) and n.id in dep for n in gast.walk(e)):
        raise _NotAffine
    return None

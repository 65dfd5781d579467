"""LLVM IR for s2sad's own matrix product of thin shapes: C = A @ B where B has few
columns (a layer's weights, a gradient's right factor), as `X @ W1` and `X.T @ G` in
an MLP's gradient.

    void s2sad_gemm_<f64|f32>(A, sa_p, sa_q, B, sb_q, C, sc_p, P, Q, M, accumulate, p_lo, p_hi)
    void s2sad_gemm_bias_<f64|f32>(A, sa_p, sa_q, B, sb_q, C, sc_p, P, Q, M, accumulate, p_lo, p_hi, bias)

computes, for p in [p_lo, p_hi) and j in [0, M):

    C[p, j] (+)= sum over q in [0, Q) of A[p*sa_p + q*sa_q] * B[q*sb_q + j]   (+ bias[j])

the bias row (M contiguous values) added to the finished chain, in the tile's store after
the last q block: `(X @ W) + b`'s operations, one add after the product's own.

(strides in elements; B's and C's rows are contiguous; `accumulate` 0 starts from zero,
else from C). A's two strides make A and A.T the same call.

Invariants:
- Each C[p, j] is one chain of multiply-adds over q in order, from 0 (or C). Neither the
  tiling nor the q blocks nor the row range [p_lo, p_hi) change its operations, so the
  result does not depend on how rows are split between threads: the same bits on one
  thread or many. (`llvm.fmuladd` fuses where the host has FMA: per host, fixed.)
- A, B and C are read or written only inside the [p_lo, p_hi) rows and the M columns;
  the last vector of a row is masked, never read past M.

Shape of the code: a register tile of ROWS rows by VECTORS vectors of C (16 vector
accumulators with 32 vector registers, 8 with 16) runs over a block of q, loading one
row-vector of B per vector and broadcasting one element of A per row. q runs in blocks
of Q_BLOCK so that B's block stays in the L2 cache while every row tile passes over it.
Where A's rows are strided (A = X.T, its q step the long one), the q blocks are
SHORT_Q_BLOCK long instead, so that A's block (one cache line per q) and B's stay in L1.
(Measured, session 10, 10,000 rows, one thread, interleaved: 64 beats 8-48, 128 and 256
with the operands in cache; from memory, as in an MLP's gradient, `X.T @ G` runs at about
half its in-cache speed, bound by memory, and prefetching the next q block's A and B
rows into L2 or L1, one to eight blocks ahead, gained nothing.)
Rows that do not fill a tile run one at a time; columns that do not fill a tile run a
vector at a time, the last one masked. A product narrower than one tile (a 10-class
output layer) takes tiles of NARROW_ROWS rows by one vector instead: as many
accumulators, each B vector used by twice the rows; with 32 registers, by two vectors
(narrow_vectors), the second masked, so that up to two vectors' columns (10 classes: 8 +
2 of 8 float64 lanes) are one pass over A, not two. (Measured, session 11, one core, CPU
time: `h @ W3` and `h.T @ G` at 10,000 x 64 -> 10 from 25 to 32 GFMA/s; 12 rows instead
of 8 gained nothing; the MLP3's gradient 2-10% less CPU time.)
"""
from __future__ import annotations

import numpy as np

ROWS = 4
NARROW_ROWS = 8       # a product narrower than one wide tile: taller tiles of one vector
Q_BLOCK = 256
SHORT_Q_BLOCK = 64    # A's rows strided (A = X.T: `X.T @ G`): the q block of A and B within L1
PREFETCH_ROWS = 32    # A's rows this far ahead of a row tile are prefetched (where they are contiguous)
_TYPES = {np.dtype(np.float64): ("double", "f64"), np.dtype(np.float32): ("float", "f32")}


def symbol(dtype, bias: bool = False) -> str:
    return f"s2sad_gemm_{'bias_' if bias else ''}{_TYPES[np.dtype(dtype)][1]}"


def lanes_for(vector_bits: int | None, dtype) -> int:
    """Elements per vector register on this host (128-bit vectors where it is not known)."""
    return max(2, (vector_bits or 128) // (8 * np.dtype(dtype).itemsize))


def vectors_for(registers: int) -> int:
    """Vectors per tile row: a tile of ROWS x this many accumulators leaves room for B's
    vectors and the broadcast A element in `registers` vector registers."""
    return 4 if registers >= 32 else 2


def narrow_vectors(vectors: int) -> int:
    """Vectors per row of a narrow tile (NARROW_ROWS rows): two where the registers hold
    a wide tile of 4 (16 accumulators), so that a product of up to two vectors' columns
    (a 10-class layer: 8 + 2 of 8 float64 lanes) is one pass over A, not one per vector."""
    return 2 if vectors >= 4 else 1


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def text(self) -> str:
        return "\n".join(self.lines)


def gemm_ir(dtype, lanes: int, vectors: int, rows: int = ROWS, q_block: int = Q_BLOCK) -> str:
    """The module: tile kernels for (rows | 1) x (vectors | 1) and NARROW_ROWS x 1, a
    row-tile driver per row count, and the exported `symbol(dtype)`."""
    ty, suffix = _TYPES[np.dtype(dtype)]
    size = np.dtype(dtype).itemsize
    vt, mt = f"<{lanes} x {ty}>", f"<{lanes} x i1>"
    v = f"v{lanes}{suffix}"
    out = ["declare void @llvm.prefetch.p0(ptr, i32, i32, i32)", f"declare {vt} @llvm.fmuladd.{v}({vt}, {vt}, {vt})",
           f"declare {vt} @llvm.masked.load.{v}.p0(ptr, i32, {mt}, {vt})",
           f"declare void @llvm.masked.store.{v}.p0({vt}, ptr, i32, {mt})"]
    narrow = narrow_vectors(vectors)
    tiles = sorted({(r, n) for r in (rows, 1) for n in (vectors, 1)} | {(NARROW_ROWS, 1), (NARROW_ROWS, narrow)},
                   reverse=True)
    out += [_tile(ty, size, lanes, r, n, v) for r, n in tiles]
    out += [_row_driver(ty, lanes, r, vectors) for r in sorted({rows, 1}, reverse=True)]
    out.append(_row_driver(ty, lanes, NARROW_ROWS, narrow, pair=narrow == 2))
    out.append(_entry(ty, suffix, rows, lanes * vectors, q_block, bias=False))
    out.append(_entry(ty, suffix, rows, lanes * vectors, q_block, bias=True))
    return "\n\n".join(out) + "\n"


def _vector_access(a: _Lines, ty: str, size: int, vt: str, mt: str, v: str, what: str, ptr: str,
                   masked: bool, value: str | None = None) -> None:
    """Load `what` from, or store `value` to, the vector at `ptr`: masked by %mask where it
    is a row's last vector."""
    if value is None:
        a(f"  {what} = call {vt} @llvm.masked.load.{v}.p0(ptr {ptr}, i32 {size}, {mt} %mask, {vt} zeroinitializer)"
          if masked else f"  {what} = load {vt}, ptr {ptr}, align {size}")
    else:
        a(f"  call void @llvm.masked.store.{v}.p0({vt} {value}, ptr {ptr}, i32 {size}, {mt} %mask)"
          if masked else f"  store {vt} {value}, ptr {ptr}, align {size}")


def _tile(ty: str, size: int, lanes: int, rows: int, vectors: int, v: str) -> str:
    """@tile_R_V: C[0:R, 0:V*lanes] (+)= A[0:R, 0:qn] @ B[0:qn, 0:V*lanes], the last
    vector masked by %mask (all true where the tile is full)."""
    vt, mt = f"<{lanes} x {ty}>", f"<{lanes} x i1>"
    a = _Lines()
    cells = [(i, j) for i in range(rows) for j in range(vectors)]
    last = vectors - 1
    a(f"define internal void @tile_{rows}_{vectors}(ptr noalias %A, i64 %sap, i64 %saq, ptr noalias %B, i64 %sbq, "
      f"ptr noalias %C, i64 %scp, i64 %qn, i1 %init, {mt} %mask, ptr noalias %bias, i1 %addb) {{")
    a("entry:")
    for i in range(rows):
        a(f"  %co{i} = mul i64 %scp, {i}")
        a(f"  %cr{i} = getelementptr {ty}, ptr %C, i64 %co{i}")
        for j in range(vectors):
            a(f"  %cp{i}_{j} = getelementptr {ty}, ptr %cr{i}, i64 {j * lanes}")
    a("  br i1 %init, label %head, label %from_c")
    a("from_c:")
    for i, j in cells:
        _vector_access(a, ty, size, vt, mt, v, f"%c{i}_{j}", f"%cp{i}_{j}", j == last)
    a("  br label %head")
    a("head:")
    for i, j in cells:
        a(f"  %s{i}_{j} = phi {vt} [ zeroinitializer, %entry ], [ %c{i}_{j}, %from_c ]")
    a("  br label %loop")
    a("loop:")
    a("  %q = phi i64 [ 0, %head ], [ %q.next, %loop ]")
    for i, j in cells:
        a(f"  %acc{i}_{j} = phi {vt} [ %s{i}_{j}, %head ], [ %new{i}_{j}, %loop ]")
    a("  %bo = mul i64 %q, %sbq")
    a(f"  %brow = getelementptr {ty}, ptr %B, i64 %bo")
    for j in range(vectors):
        a(f"  %bp{j} = getelementptr {ty}, ptr %brow, i64 {j * lanes}")
        _vector_access(a, ty, size, vt, mt, v, f"%b{j}", f"%bp{j}", j == last)
    a("  %aq = mul i64 %q, %saq")
    for i in range(rows):
        a(f"  %ap.o{i} = mul i64 %sap, {i}")
        a(f"  %ao{i} = add i64 %aq, %ap.o{i}")
        a(f"  %ap{i} = getelementptr {ty}, ptr %A, i64 %ao{i}")
        a(f"  %a{i} = load {ty}, ptr %ap{i}, align {size}")
        a(f"  %a{i}.v = insertelement {vt} poison, {ty} %a{i}, i32 0")
        a(f"  %a{i}.s = shufflevector {vt} %a{i}.v, {vt} poison, <{lanes} x i32> zeroinitializer")
        for j in range(vectors):
            a(f"  %new{i}_{j} = call {vt} @llvm.fmuladd.{v}({vt} %a{i}.s, {vt} %b{j}, {vt} %acc{i}_{j})")
    a("  %q.next = add i64 %q, 1")
    a("  %more = icmp slt i64 %q.next, %qn")
    a("  br i1 %more, label %loop, label %done")
    a("done:")
    a("  br i1 %addb, label %epilogue, label %store")
    a("epilogue:")       # the epilogue: + bias[j] after the whole chain, as `(X @ W) + b` adds it
    for j in range(vectors):
        a(f"  %biasp{j} = getelementptr {ty}, ptr %bias, i64 {j * lanes}")
        _vector_access(a, ty, size, vt, mt, v, f"%bv{j}", f"%biasp{j}", j == last)
    for i, j in cells:
        a(f"  %nb{i}_{j} = fadd {vt} %new{i}_{j}, %bv{j}")
    a("  br label %store")
    a("store:")
    for i, j in cells:
        a(f"  %out{i}_{j} = phi {vt} [ %new{i}_{j}, %done ], [ %nb{i}_{j}, %epilogue ]")
    for i, j in cells:
        _vector_access(a, ty, size, vt, mt, v, "", f"%cp{i}_{j}", j == last, value=f"%out{i}_{j}")
    a("  ret void")
    a("}")
    return a.text()


def _row_driver(ty: str, lanes: int, rows: int, vectors: int, pair: bool = False) -> str:
    """@rows_R: C[0:R, 0:M] over the q block: full tiles of `vectors` vectors, then one
    vector at a time, the last one masked (with `pair`, vectors = 2: more than one
    vector's columns left are one two-vector tile, its second vector masked)."""
    mt = f"<{lanes} x i1>"
    width = lanes * vectors
    all_true = "<" + ", ".join(["i1 true"] * lanes) + ">"
    iota = "<" + ", ".join(f"i64 {k}" for k in range(lanes)) + ">"
    args = "i64 %sap, i64 %saq, ptr %B{}, i64 %sbq, ptr %C{}, i64 %scp, i64 %qn, i1 %init"
    a = _Lines()
    a(f"define internal void @rows_{rows}(ptr %A, i64 %sap, i64 %saq, ptr %B, i64 %sbq, ptr %C, i64 %scp, "
      f"i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb) {{")
    a("entry:")
    a(f"  %wide_end = sub i64 %M, {width - 1}")
    a("  br label %wide")
    a("wide:")
    a("  %j = phi i64 [ 0, %entry ], [ %j.next, %wide.body ]")
    a("  %wide.more = icmp slt i64 %j, %wide_end")
    a("  br i1 %wide.more, label %wide.body, label %narrow")
    a("wide.body:")
    a(f"  %Bw = getelementptr {ty}, ptr %B, i64 %j")
    a(f"  %Cw = getelementptr {ty}, ptr %C, i64 %j")
    a(f"  %biasw = getelementptr {ty}, ptr %bias, i64 %j")
    a(f"  call void @tile_{rows}_{vectors}(ptr %A, {args.format('w', 'w')}, {mt} {all_true}, ptr %biasw, i1 %addb)")
    a(f"  %j.next = add i64 %j, {width}")
    a("  br label %wide")
    one = "one.body" if pair else "narrow.body"
    a("narrow:")
    a(f"  %k = phi i64 [ %j, %wide ], [ %k.next, %{one} ]" + (", [ %k.next2, %pair.body ]" if pair else ""))
    a("  %narrow.more = icmp slt i64 %k, %M")
    a("  br i1 %narrow.more, label %narrow.body, label %done")
    a("narrow.body:")
    a("  %left = sub i64 %M, %k")
    a(f"  %Bn = getelementptr {ty}, ptr %B, i64 %k")
    a(f"  %Cn = getelementptr {ty}, ptr %C, i64 %k")
    a(f"  %biasn = getelementptr {ty}, ptr %bias, i64 %k")
    if pair:
        a(f"  %two = icmp sgt i64 %left, {lanes}")
        a("  br i1 %two, label %pair.body, label %one.body")
        a("pair.body:")
        a(f"  %left2 = sub i64 %left, {lanes}")
        _mask(a, lanes, iota, "%left2", "%mask2")
        a(f"  call void @tile_{rows}_2(ptr %A, {args.format('n', 'n')}, {mt} %mask2, ptr %biasn, i1 %addb)")
        a(f"  %k.next2 = add i64 %k, {2 * lanes}")
        a("  br label %narrow")
        a("one.body:")
    _mask(a, lanes, iota, "%left", "%mask")
    a(f"  call void @tile_{rows}_1(ptr %A, {args.format('n', 'n')}, {mt} %mask, ptr %biasn, i1 %addb)")
    a(f"  %k.next = add i64 %k, {lanes}")
    a("  br label %narrow")
    a("done:")
    a("  ret void")
    a("}")
    return a.text()


def _mask(a: _Lines, lanes: int, iota: str, left: str, name: str) -> None:
    """`name`: the lanes below `left` (i64) of a vector's columns."""
    a(f"  {name}.v = insertelement <{lanes} x i64> poison, i64 {left}, i32 0")
    a(f"  {name}.s = shufflevector <{lanes} x i64> {name}.v, <{lanes} x i64> poison, <{lanes} x i32> zeroinitializer")
    a(f"  {name} = icmp slt <{lanes} x i64> {iota}, {name}.s")


def _prefetch_rows(a: _Lines, ty: str, label: str, step: int) -> None:
    """In a row-tile loop's body (block {label}.body, tile row %{label}.p): where A's
    rows are contiguous (%pf.on), the q block's part of the `step` rows PREFETCH_ROWS
    ahead is prefetched, a line at a time (%pf.lines lines a row); then block
    {label}.run. (A prefetch never faults: rows past the last are harmless.)"""
    a(f"  br i1 %pf.on, label %{label}.pf.rows, label %{label}.run")
    a(f"{label}.pf.rows:")
    for r in range(step):
        a(f"  %{label}.pf.r{r} = add i64 %{label}.p, {PREFETCH_ROWS + r}")
        a(f"  %{label}.pf.o{r} = mul i64 %{label}.pf.r{r}, %sap")
        a(f"  %{label}.pf.a{r} = getelementptr {ty}, ptr %Aq, i64 %{label}.pf.o{r}")
    a(f"  br label %{label}.pf")
    a(f"{label}.pf:")
    a(f"  %{label}.pf.l = phi i64 [ 0, %{label}.pf.rows ], [ %{label}.pf.l.next, %{label}.pf ]")
    a(f"  %{label}.pf.b = shl i64 %{label}.pf.l, 6")
    for r in range(step):
        a(f"  %{label}.pf.p{r} = getelementptr i8, ptr %{label}.pf.a{r}, i64 %{label}.pf.b")
        a(f"  call void @llvm.prefetch.p0(ptr %{label}.pf.p{r}, i32 0, i32 3, i32 1)")
    a(f"  %{label}.pf.l.next = add i64 %{label}.pf.l, 1")
    a(f"  %{label}.pf.more = icmp slt i64 %{label}.pf.l.next, %pf.lines")
    a(f"  br i1 %{label}.pf.more, label %{label}.pf, label %{label}.run")
    a(f"{label}.run:")


def _entry(ty: str, suffix: str, rows: int, width: int, q_block: int, bias: bool) -> str:
    """The exported function: q blocks outside; inside, row tiles of [p_lo, p_hi): of
    `rows` rows where M fills a wide tile (`width` columns), else of NARROW_ROWS rows of
    one vector, each prefetching the rows PREFETCH_ROWS ahead (_prefetch_rows); then the
    rows left, one at a time."""
    size = 4 if ty == "float" else 8
    a = _Lines()
    name, extra = (f"s2sad_gemm_bias_{suffix}", ", ptr %bias") if bias else (f"s2sad_gemm_{suffix}", "")
    a(f"define void @{name}(ptr %A, i64 %sap, i64 %saq, ptr %B, i64 %sbq, ptr %C, i64 %scp, "
      f"i64 %P, i64 %Q, i64 %M, i64 %accumulate, i64 %p_lo, i64 %p_hi{extra}) {{")
    a("entry:")
    if not bias:
        a("  %bias = getelementptr i8, ptr null, i64 0")
    a("  %from_zero = icmp eq i64 %accumulate, 0")
    a("  %pf.on = icmp eq i64 %saq, 1")
    a(f"  %qblk = select i1 %pf.on, i64 {q_block}, i64 {min(q_block, SHORT_Q_BLOCK)}")
    a(f"  %narrow = icmp slt i64 %M, {width}")
    a(f"  %wide_end = sub i64 %p_hi, {rows - 1}")
    a(f"  %narrow_end = sub i64 %p_hi, {NARROW_ROWS - 1}")
    a("  br label %qblock")
    a("qblock:")
    a("  %q0 = phi i64 [ 0, %entry ], [ %q0.next, %single.done ]")
    a("  %q.more = icmp slt i64 %q0, %Q")
    a("  br i1 %q.more, label %qblock.body, label %exit")
    a("qblock.body:")
    a("  %q.left = sub i64 %Q, %q0")
    a("  %q.short = icmp slt i64 %q.left, %qblk")
    a("  %qn = select i1 %q.short, i64 %q.left, i64 %qblk")
    a("  %first = icmp eq i64 %q0, 0")
    a("  %init = and i1 %first, %from_zero")
    if bias:         # the row goes in with the last q block's store
        a("  %q.end = add i64 %q0, %qn")
        a("  %addb = icmp eq i64 %q.end, %Q")
    else:
        a("  %addb = and i1 false, %first")
    a("  %ao = mul i64 %q0, %saq")
    a(f"  %Aq = getelementptr {ty}, ptr %A, i64 %ao")
    a("  %bo = mul i64 %q0, %sbq")
    a(f"  %Bq = getelementptr {ty}, ptr %B, i64 %bo")
    a("  %pf.bytes = mul i64 %qn, " + str(size))
    a("  %pf.end = add i64 %pf.bytes, 63")
    a("  %pf.lines = lshr i64 %pf.end, 6")
    a("  br i1 %narrow, label %narrow_tiles, label %tiles")
    loops = (("tiles", rows, "single", "%wide_end", "[ %p_lo, %qblock.body ]"),
             ("narrow_tiles", NARROW_ROWS, "single", "%narrow_end", "[ %p_lo, %qblock.body ]"),
             ("single", 1, "single.done", "%p_hi", "[ %tiles.p, %tiles ], [ %narrow_tiles.p, %narrow_tiles ]"))
    for label, step, nxt, test, incoming in loops:
        back = f"{label}.run" if step > 1 else f"{label}.body"
        a(f"{label}:")
        a(f"  %{label}.p = phi i64 {incoming}, [ %{label}.p.next, %{back} ]")
        a(f"  %{label}.more = icmp slt i64 %{label}.p, {test}")
        a(f"  br i1 %{label}.more, label %{label}.body, label %{nxt}")
        a(f"{label}.body:")
        a(f"  %{label}.ao = mul i64 %{label}.p, %sap")
        a(f"  %{label}.A = getelementptr {ty}, ptr %Aq, i64 %{label}.ao")
        if step > 1:
            _prefetch_rows(a, ty, label, step)
        a(f"  %{label}.co = mul i64 %{label}.p, %scp")
        a(f"  %{label}.C = getelementptr {ty}, ptr %C, i64 %{label}.co")
        a(f"  call void @rows_{step}(ptr %{label}.A, i64 %sap, i64 %saq, ptr %Bq, i64 %sbq, ptr %{label}.C, "
          f"i64 %scp, i64 %qn, i1 %init, i64 %M, ptr %bias, i1 %addb)")
        a(f"  %{label}.p.next = add i64 %{label}.p, {step}")
        a(f"  br label %{label}")
    a("single.done:")
    a("  %q0.next = add i64 %q0, %qblk")
    a("  br label %qblock")
    a("exit:")
    a("  ret void")
    a("}")
    return a.text()

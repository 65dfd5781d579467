"""LLVM IR for s2sad's memory pool: the four functions of a NumPy memory handler (NEP 49).

    i8* s2sad_pool_malloc(ctx, size)            void s2sad_pool_free(ctx, ptr, size)
    i8* s2sad_pool_calloc(ctx, nelem, elsize)   i8* s2sad_pool_realloc(ctx, ptr, size)

Every block handed out starts on a 64-byte boundary (a cache line, and an AVX-512
vector: a block 32 bytes off one, as libc's mmapped chunks plus a 16-byte header were,
makes every full-width load of the generated kernels straddle two lines; measured
1.07-1.18x the time of the 10k MLP gradient against glibc's heap blocks, 0.73-0.78x
once aligned) and carries a 16-byte header just before it: libc's pointer (for free
and realloc) and the block's size. A block's size is read from its header, never
taken from numpy's `size` argument, so a block is reused only for a request of
exactly the size it was made for.

A freed block of at least `threshold` bytes is kept in one of `SLOTS` slots, stamped
with the pool's clock; a request of that exact size takes it back, warm (its pages
already faulted in). When no slot is empty or keeping the block would take the pool's
bytes over `cap`, the oldest kept blocks (least recently freed: smallest stamp) are
evicted to libc until it fits, so that sizes a program stopped using never fill the
pool for good; a block larger than `cap` alone is never kept. Everything else goes to
libc's malloc, calloc, realloc and free. The state lives in `ctx` (an array of i64 the
caller owns), never in the object, so the object has no writable data (what `objload`
maps):

    ctx[0] lock (0 free, 1 held; taken with cmpxchg, held only to scan the slots)
    ctx[1] bytes cached   ctx[2] cap   ctx[3] threshold   ctx[4] reuses   ctx[5] misses
    ctx[6] evictions      ctx[7] clock (the next stamp)
    ctx[8] huge: a block libc gives of at least this many bytes is advised to the kernel
           as one for huge pages (0: never)   ctx[9] that advice (madvise's MADV_HUGEPAGE)
    ctx[10 + 3 i], ctx[11 + 3 i], ctx[12 + 3 i]: slot i's pointer (0: empty), size, stamp

Huge pages: numpy's own allocator advises every block of at least 4 MiB for transparent
huge pages (madvise MADV_HUGEPAGE, Linux), which is what gets them where the system's
setting is "madvise" (Ubuntu's default, and this project's Intel VM). A handler that
replaces numpy's loses that unless it does the same: so a block this pool takes from libc
of at least ctx[8] bytes is advised as numpy's is (from its first page boundary to its
end; advice only: a refusal changes nothing). Measured on the Intel Xeon VM (session
13): a fresh 20 MB block faulted in 3.3 ms on huge pages against 7.0 on 4 KiB pages, and
a 2.5M-element gradient kernel writing into it ran 0.94-0.96x the time (per round). The
madvise call is in the IR only on Linux (`pool_ir(advise=...)`).

Invariants (with the lock free): ctx[1] is the sum of the full slots' sizes and at most
the cap; a kept block is in no array (it was freed), so evicting it touches no live
data; libc's free is called only with the lock released (victims are collected under
it, freed after). numpy calls these with the GIL held, but a block may be freed by any
thread (the lock makes the slots safe for that too).
"""
from __future__ import annotations

import sys

SLOTS = 32
HEADER = 16                  # libc's pointer, then the size, just before the block
ALIGN = 64                   # every block's address is a multiple of this
SLACK = HEADER + ALIGN - 1   # bytes asked of libc beyond the block's own
HUGE_WORD = 8                # ctx's word of the size from which a fresh block is advised (0: off)
ADVICE_WORD = 9              # ctx's word of madvise's advice for it
FIRST_SLOT = 10              # ctx's word of slot 0's pointer
SLOT_WORDS = 3               # a slot: pointer, size, stamp
CTX_WORDS = FIRST_SLOT + SLOT_WORDS * SLOTS
NAMES = ("s2sad_pool_malloc", "s2sad_pool_calloc", "s2sad_pool_realloc", "s2sad_pool_free")


def pool_ir(advise: bool | None = None) -> str:
    """The pool's module; `advise` (default: on Linux) puts the madvise call in it."""
    if advise is None:
        advise = sys.platform.startswith("linux")
    ir = _DECLS + (_ADVISE if advise else _NO_ADVICE) + _LOCK + _SLOTS + _TAKE + _PUT + _MALLOC + _CALLOC + \
        _REALLOC + _FREE
    return (ir.replace("SLACK", str(SLACK)).replace("ALIGN_MASK", str(-ALIGN))
            .replace("HUGE_WORD", str(HUGE_WORD)).replace("ADVICE_WORD", str(ADVICE_WORD)))


# a block libc gave, of `n` bytes from `raw`, advised for huge pages when ctx says so
_ADVISE = """
declare i32 @madvise(i8*, i64, i32)

define private void @advise(i8* %ctx, i8* %raw, i64 %n) {
entry:
  %mp = call i64* @word(i8* %ctx, i64 HUGE_WORD)
  %min = load i64, i64* %mp
  %on = icmp ne i64 %min, 0
  %big = icmp uge i64 %n, %min
  %some = icmp ne i8* %raw, null
  %both = and i1 %on, %big
  %go = and i1 %both, %some
  br i1 %go, label %yes, label %no
yes:
  %r = ptrtoint i8* %raw to i64
  %up = add i64 %r, 4095
  %start = and i64 %up, -4096
  %end = add i64 %r, %n
  %len = sub i64 %end, %start
  %sp = inttoptr i64 %start to i8*
  %ap = call i64* @word(i8* %ctx, i64 ADVICE_WORD)
  %adv64 = load i64, i64* %ap
  %adv = trunc i64 %adv64 to i32
  %rc = call i32 @madvise(i8* %sp, i64 %len, i32 %adv)
  ret void
no:
  ret void
}
"""

_NO_ADVICE = """
define private void @advise(i8* %ctx, i8* %raw, i64 %n) {
  ret void
}
"""


_DECLS = """
declare i8* @malloc(i64)
declare i8* @calloc(i64, i64)
declare i8* @realloc(i8*, i64)
declare void @free(i8*)
declare void @llvm.memset.p0i8.i64(i8*, i8, i64, i1)
declare {i64, i1} @llvm.umul.with.overflow.i64(i64, i64)

define private i64* @word(i8* %ctx, i64 %i) {
  %c = bitcast i8* %ctx to i64*
  %p = getelementptr i64, i64* %c, i64 %i
  ret i64* %p
}

; the header: libc's pointer, then the block's size, in the 16 bytes before the block,
; which starts at the first 64-byte boundary at least 16 bytes past libc's pointer
define private i8* @aligned(i8* %raw) {
  %r = ptrtoint i8* %raw to i64
  %up = add i64 %r, SLACK
  %a = and i64 %up, ALIGN_MASK
  %p = inttoptr i64 %a to i8*
  ret i8* %p
}

define private void @store_header(i8* %p, i8* %raw, i64 %size) {
  %rs = getelementptr i8, i8* %p, i64 -16
  %rp = bitcast i8* %rs to i8**
  store i8* %raw, i8** %rp
  %ss = getelementptr i8, i8* %p, i64 -8
  %sp = bitcast i8* %ss to i64*
  store i64 %size, i64* %sp
  ret void
}

define private i8* @with_header(i8* %raw, i64 %size) {
  %is_null = icmp eq i8* %raw, null
  br i1 %is_null, label %none, label %ok
none:
  ret i8* null
ok:
  %p = call i8* @aligned(i8* %raw)
  call void @store_header(i8* %p, i8* %raw, i64 %size)
  ret i8* %p
}

define private i8* @raw_of(i8* %p) {
  %rs = getelementptr i8, i8* %p, i64 -16
  %rp = bitcast i8* %rs to i8**
  %raw = load i8*, i8** %rp
  ret i8* %raw
}

define private i64 @size_of(i8* %p) {
  %ss = getelementptr i8, i8* %p, i64 -8
  %sp = bitcast i8* %ss to i64*
  %size = load i64, i64* %sp
  ret i64 %size
}
"""

_LOCK = """
define private void @lock(i8* %ctx) {
entry:
  %c = bitcast i8* %ctx to i64*
  br label %spin
spin:
  %r = cmpxchg i64* %c, i64 0, i64 1 acquire monotonic
  %got = extractvalue {i64, i1} %r, 1
  br i1 %got, label %done, label %spin
done:
  ret void
}

define private void @unlock(i8* %ctx) {
  %c = bitcast i8* %ctx to i64*
  store atomic i64 0, i64* %c release, align 8
  ret void
}

define private void @count(i8* %ctx, i64 %i) {
  %p = call i64* @word(i8* %ctx, i64 %i)
  %n = load i64, i64* %p
  %n1 = add i64 %n, 1
  store i64 %n1, i64* %p
  ret void
}
"""

# slot i's word k (0 pointer, 1 size, 2 stamp); the first empty slot; the oldest full one
_SLOTS = f"""
define private i64* @slot_word(i8* %ctx, i64 %i, i64 %k) {{
  %w = mul i64 %i, {SLOT_WORDS}
  %a = add i64 %w, {FIRST_SLOT}
  %b = add i64 %a, %k
  %p = call i64* @word(i8* %ctx, i64 %b)
  ret i64* %p
}}

; the first empty slot's index, or -1
define private i64 @empty_slot(i8* %ctx) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %next]
  %more = icmp ult i64 %i, {SLOTS}
  br i1 %more, label %body, label %none
body:
  %pp = call i64* @slot_word(i8* %ctx, i64 %i, i64 0)
  %ptr = load i64, i64* %pp
  %empty = icmp eq i64 %ptr, 0
  br i1 %empty, label %found, label %next
next:
  %i1 = add i64 %i, 1
  br label %loop
found:
  ret i64 %i
none:
  ret i64 -1
}}

; the index of the full slot with the smallest stamp (the least recently freed), or -1
define private i64 @oldest_slot(i8* %ctx) {{
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %body]
  %best = phi i64 [-1, %entry], [%best1, %body]
  %best_stamp = phi i64 [-1, %entry], [%best_stamp1, %body]
  %more = icmp ult i64 %i, {SLOTS}
  br i1 %more, label %body, label %done
body:
  %pp = call i64* @slot_word(i8* %ctx, i64 %i, i64 0)
  %tp = call i64* @slot_word(i8* %ctx, i64 %i, i64 2)
  %ptr = load i64, i64* %pp
  %stamp = load i64, i64* %tp
  %full = icmp ne i64 %ptr, 0
  %older = icmp ult i64 %stamp, %best_stamp
  %pick = and i1 %full, %older
  %best1 = select i1 %pick, i64 %i, i64 %best
  %best_stamp1 = select i1 %pick, i64 %stamp, i64 %best_stamp
  %i1 = add i64 %i, 1
  br label %loop
done:
  ret i64 %best
}}

; slot i emptied, its bytes taken off the pool's; its block (to free, after unlocking)
define private i64 @evict(i8* %ctx, i64 %i) {{
  %pp = call i64* @slot_word(i8* %ctx, i64 %i, i64 0)
  %sp = call i64* @slot_word(i8* %ctx, i64 %i, i64 1)
  %ptr = load i64, i64* %pp
  %size = load i64, i64* %sp
  store i64 0, i64* %pp
  %cp = call i64* @word(i8* %ctx, i64 1)
  %cached = load i64, i64* %cp
  %left = sub i64 %cached, %size
  store i64 %left, i64* %cp
  call void @count(i8* %ctx, i64 6)
  ret i64 %ptr
}}

; the first n blocks of `victims` given back to libc (called with the lock free)
define private void @release(i64* %victims, i64 %n) {{
entry:
  br label %loop
loop:
  %j = phi i64 [0, %entry], [%j1, %body]
  %more = icmp ult i64 %j, %n
  br i1 %more, label %body, label %done
body:
  %vp = getelementptr i64, i64* %victims, i64 %j
  %v = load i64, i64* %vp
  %p = inttoptr i64 %v to i8*
  %raw = call i8* @raw_of(i8* %p)
  call void @free(i8* %raw)
  %j1 = add i64 %j, 1
  br label %loop
done:
  ret void
}}
"""

# a cached block of exactly `size` bytes (its slot emptied), or null
_TAKE = f"""
define private i8* @take(i8* %ctx, i64 %size) {{
entry:
  call void @lock(i8* %ctx)
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %next]
  %more = icmp ult i64 %i, {SLOTS}
  br i1 %more, label %body, label %miss
body:
  %pp = call i64* @slot_word(i8* %ctx, i64 %i, i64 0)
  %sp = call i64* @slot_word(i8* %ctx, i64 %i, i64 1)
  %ptr = load i64, i64* %pp
  %sz = load i64, i64* %sp
  %full = icmp ne i64 %ptr, 0
  %same = icmp eq i64 %sz, %size
  %hit = and i1 %full, %same
  br i1 %hit, label %found, label %next
next:
  %i1 = add i64 %i, 1
  br label %loop
found:
  store i64 0, i64* %pp
  %cp = call i64* @word(i8* %ctx, i64 1)
  %cached = load i64, i64* %cp
  %left = sub i64 %cached, %size
  store i64 %left, i64* %cp
  call void @count(i8* %ctx, i64 4)
  call void @unlock(i8* %ctx)
  %block = inttoptr i64 %ptr to i8*
  ret i8* %block
miss:
  call void @count(i8* %ctx, i64 5)
  call void @unlock(i8* %ctx)
  ret i8* null
}}
"""

# keep a freed block, evicting the oldest kept ones until a slot is empty and the cap
# allows it: 1 if kept, 0 if the caller frees it (a block over the cap alone). Each
# eviction empties a full slot, so at most SLOTS of them; with every slot empty the
# pool holds 0 bytes and the block fits (refuse after evictions only if that broke)
_PUT = f"""
define private i1 @put(i8* %ctx, i8* %block, i64 %size) {{
entry:
  %victims = alloca [{SLOTS} x i64]
  %vs = getelementptr [{SLOTS} x i64], [{SLOTS} x i64]* %victims, i64 0, i64 0
  %capp = call i64* @word(i8* %ctx, i64 2)
  %cap = load i64, i64* %capp
  %alone = icmp ule i64 %size, %cap
  br i1 %alone, label %locked, label %too_big
too_big:
  ret i1 0
locked:
  call void @lock(i8* %ctx)
  %cp = call i64* @word(i8* %ctx, i64 1)
  br label %settle
settle:
  %n = phi i64 [0, %locked], [%n1, %evict]
  %cached = load i64, i64* %cp
  %after = add i64 %cached, %size
  %fits = icmp ule i64 %after, %cap
  br i1 %fits, label %find, label %make_room
find:
  %e = call i64 @empty_slot(i8* %ctx)
  %has = icmp sge i64 %e, 0
  br i1 %has, label %keep, label %make_room
make_room:
  %o = call i64 @oldest_slot(i8* %ctx)
  %any = icmp sge i64 %o, 0
  br i1 %any, label %evict, label %refuse
evict:
  %v = call i64 @evict(i8* %ctx, i64 %o)
  %vp = getelementptr i64, i64* %vs, i64 %n
  store i64 %v, i64* %vp
  %n1 = add i64 %n, 1
  br label %settle
keep:
  %pp = call i64* @slot_word(i8* %ctx, i64 %e, i64 0)
  %sp = call i64* @slot_word(i8* %ctx, i64 %e, i64 1)
  %tp = call i64* @slot_word(i8* %ctx, i64 %e, i64 2)
  %clockp = call i64* @word(i8* %ctx, i64 7)
  %now = load i64, i64* %clockp
  %addr = ptrtoint i8* %block to i64
  store i64 %addr, i64* %pp
  store i64 %size, i64* %sp
  store i64 %now, i64* %tp
  call void @count(i8* %ctx, i64 7)
  store i64 %after, i64* %cp
  call void @unlock(i8* %ctx)
  call void @release(i64* %vs, i64 %n)
  ret i1 1
refuse:
  call void @unlock(i8* %ctx)
  call void @release(i64* %vs, i64 %n)
  ret i1 0
}}
"""

_MALLOC = """
define i8* @s2sad_pool_malloc(i8* %ctx, i64 %size) {
entry:
  %tp = call i64* @word(i8* %ctx, i64 3)
  %threshold = load i64, i64* %tp
  %big = icmp uge i64 %size, %threshold
  br i1 %big, label %pool, label %libc
pool:
  %p = call i8* @take(i8* %ctx, i64 %size)
  %got = icmp ne i8* %p, null
  br i1 %got, label %done, label %libc
libc:
  %n = add i64 %size, SLACK
  %raw = call i8* @malloc(i64 %n)
  call void @advise(i8* %ctx, i8* %raw, i64 %n)
  %q = call i8* @with_header(i8* %raw, i64 %size)
  ret i8* %q
done:
  ret i8* %p
}
"""

_CALLOC = """
define i8* @s2sad_pool_calloc(i8* %ctx, i64 %nelem, i64 %elsize) {
entry:
  %m = call {i64, i1} @llvm.umul.with.overflow.i64(i64 %nelem, i64 %elsize)
  %size = extractvalue {i64, i1} %m, 0
  %over = extractvalue {i64, i1} %m, 1
  br i1 %over, label %fail, label %sized
fail:
  ret i8* null
sized:
  %tp = call i64* @word(i8* %ctx, i64 3)
  %threshold = load i64, i64* %tp
  %big = icmp uge i64 %size, %threshold
  br i1 %big, label %pool, label %libc
pool:
  %p = call i8* @take(i8* %ctx, i64 %size)
  %got = icmp ne i8* %p, null
  br i1 %got, label %zero, label %libc
zero:
  call void @llvm.memset.p0i8.i64(i8* %p, i8 0, i64 %size, i1 0)
  ret i8* %p
libc:
  %n = add i64 %size, SLACK
  %raw = call i8* @calloc(i64 1, i64 %n)
  call void @advise(i8* %ctx, i8* %raw, i64 %n)
  %q = call i8* @with_header(i8* %raw, i64 %size)
  ret i8* %q
}
"""

# libc's realloc keeps the bytes at their offset from its pointer, and the new pointer's
# 64-byte boundary may lie at another offset: the block's bytes are moved to it
_REALLOC = """
declare void @llvm.memmove.p0i8.p0i8.i64(i8*, i8*, i64, i1)

define i8* @s2sad_pool_realloc(i8* %ctx, i8* %p, i64 %size) {
entry:
  %is_null = icmp eq i8* %p, null
  br i1 %is_null, label %fresh, label %grow
fresh:
  %q = call i8* @s2sad_pool_malloc(i8* %ctx, i64 %size)
  ret i8* %q
grow:
  %raw = call i8* @raw_of(i8* %p)
  %old = call i64 @size_of(i8* %p)
  %pi = ptrtoint i8* %p to i64
  %ri = ptrtoint i8* %raw to i64
  %offset = sub i64 %pi, %ri
  %n = add i64 %size, SLACK
  %moved = call i8* @realloc(i8* %raw, i64 %n)
  %failed = icmp eq i8* %moved, null
  br i1 %failed, label %none, label %place
none:
  ret i8* null
place:
  ; the bytes first, then the header (which may lie where the bytes were)
  %r = call i8* @aligned(i8* %moved)
  %was = getelementptr i8, i8* %moved, i64 %offset
  %shorter = icmp ult i64 %old, %size
  %keep = select i1 %shorter, i64 %old, i64 %size
  call void @llvm.memmove.p0i8.p0i8.i64(i8* %r, i8* %was, i64 %keep, i1 0)
  call void @store_header(i8* %r, i8* %moved, i64 %size)
  ret i8* %r
}
"""

_FREE = """
define void @s2sad_pool_free(i8* %ctx, i8* %p, i64 %hint) {
entry:
  %is_null = icmp eq i8* %p, null
  br i1 %is_null, label %done, label %some
some:
  %size = call i64 @size_of(i8* %p)
  %tp = call i64* @word(i8* %ctx, i64 3)
  %threshold = load i64, i64* %tp
  %big = icmp uge i64 %size, %threshold
  br i1 %big, label %pool, label %libc
pool:
  %kept = call i1 @put(i8* %ctx, i8* %p, i64 %size)
  br i1 %kept, label %done, label %libc
libc:
  %raw = call i8* @raw_of(i8* %p)
  call void @free(i8* %raw)
  br label %done
done:
  ret void
}
"""

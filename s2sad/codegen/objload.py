"""Relocatable object code -> machine code in this process, without LLVM.

A warm start from the disk cache must not import llvmlite (its import alone costs
30-100 ms): this module maps an ELF relocatable object (`ET_REL`, what
`TargetMachine.emit_object` writes) into executable memory, as a linker would. It
knows x86-64 ELF only, the kind of object the llvm backend emits (reloc model PIC,
small code model): loadable sections are copied into one anonymous mapping, calls to
functions outside the object go through 16-byte jump stubs (libm and libmvec may lie
more than 2 GB away), GOT-relative loads through 8-byte slots, and the mapping is made
read-only and executable before anything runs. Anything else (another machine,
writable data, TLS, static constructors, a relocation type not listed in `_apply`)
raises `UnsupportedObject`, and the caller loads the object with LLVM's JIT instead.

This module checks an object's structure, not its origin: the code it maps runs. Its
callers hand it only objects LLVM emitted in this process or entries whose HMAC
`objcache` verified under the user's key.

    load(obj, exports, resolve) -> LoadedObject     .addresses[name] for each export
    supported() -> bool                             this host can use `load`
"""
from __future__ import annotations

import ctypes
import os
import struct
import sys
from typing import Callable, Iterable

__all__ = ["LoadedObject", "UnsupportedObject", "load", "supported"]


class UnsupportedObject(Exception):
    """The object is not one this loader can map; load it with LLVM instead."""


# ELF constants (System V ABI, x86-64 psABI)
_EM_X86_64 = 62
_ET_REL = 1
_SHT_SYMTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 2, 4, 8, 9
_SHT_INIT_ARRAY, _SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY = 14, 15, 16
_SHT_X86_64_UNWIND = 0x70000001
_SHF_WRITE, _SHF_ALLOC, _SHF_TLS = 0x1, 0x2, 0x400
_SHN_UNDEF, _SHN_LORESERVE, _SHN_ABS, _SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2
_STT_FUNC, _STT_SECTION, _STB_WEAK = 2, 3, 2
# relocation types
_R_NONE, _R_64, _R_PC32, _R_PLT32, _R_GOTPCREL, _R_PC64 = 0, 1, 2, 4, 9, 24
_R_GOTPCRELX, _R_REX_GOTPCRELX = 41, 42

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")

_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4
_MAP_PRIVATE, _MAP_ANONYMOUS = 0x02, 0x20
_STUB = 16          # jmp *0(%rip); .quad target; 2 bytes padding
_PAGE = 4096


def supported() -> bool:
    """Linux on x86-64, 64-bit: the only host `load` maps objects for."""
    return (sys.platform.startswith("linux") and os.uname().machine in ("x86_64", "amd64")
            and ctypes.sizeof(ctypes.c_void_p) == 8)


_libc: list = []


def _mem():
    """(mmap, mprotect, munmap) from the C library, typed once."""
    if not _libc:
        libc = ctypes.CDLL(None, use_errno=True)
        mmap, mprotect, munmap = libc.mmap, libc.mprotect, libc.munmap
        mmap.restype = ctypes.c_void_p
        mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                         ctypes.c_long]
        mprotect.restype = munmap.restype = ctypes.c_int
        mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc[:] = [mmap, mprotect, munmap]
    return _libc


class LoadedObject:
    """Code mapped into this process; unmapped when this object is collected, so keep
    it alive as long as any of its addresses may be called."""

    def __init__(self, base: int, size: int, addresses: dict[str, int],
                 functions: tuple = ()) -> None:
        self.base = base
        self.size = size
        self.addresses = addresses
        self.functions = functions      # (address, size, name) of each function it defines, if asked (load)

    def __del__(self) -> None:
        if self.base and _libc:
            _libc[2](self.base, self.size)
            self.base = 0


def _cstr(table: bytes, off: int) -> str:
    end = table.index(b"\0", off)
    return table[off:end].decode("utf-8", "replace")


class _Plan:
    """Where everything of an object goes in its mapping: the allocated sections, then
    jump stubs, then GOT slots (`_plan`). (A plain class: a dataclass would cost a warm
    start's import half a millisecond.)"""

    def __init__(self, shdrs: list, placed: dict[int, int], syms: list, strtab: bytes) -> None:
        self.shdrs = shdrs
        self.placed = placed                              # section index -> offset in the mapping
        self.syms = syms
        self.strtab = strtab
        self.relocs: list[tuple[int, list]] = []          # (target section, entries)
        self.stubs: dict[int, int] = {}                   # symbol index -> stub number
        self.slots: dict[int, int] = {}                   # symbol index -> GOT slot number
        self.stub_off = self.got_off = self.total = 0


def load(obj: bytes, exports: Iterable[str], resolve: Callable[[str], int | None],
         functions: bool = False) -> LoadedObject:
    """Map `obj` and return the addresses of `exports` (global symbols it defines);
    `resolve(name)` gives the address of a symbol it uses but does not define (None:
    not found, an error unless the reference is weak). `functions`: also list every
    function it defines (LoadedObject.functions, for a profiler's map; a warm start
    does not pay for it)."""
    plan = _plan(obj)
    mmap, mprotect, munmap = _mem()
    base = mmap(None, plan.total, _PROT_READ | _PROT_WRITE, _MAP_PRIVATE | _MAP_ANONYMOUS, -1, 0)
    if not base or base == ctypes.c_void_p(-1).value:
        raise OSError(ctypes.get_errno(), "mmap failed")
    ok = False
    try:
        sym_addr = _symbol_addresses(plan, base, resolve)
        image = _image(obj, plan, base, sym_addr)
        ctypes.memmove(base, bytes(image), plan.total)
        if mprotect(base, plan.total, _PROT_READ | _PROT_EXEC) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")
        out = _exported(plan, exports, sym_addr)
        ok = True
        return LoadedObject(base, plan.total, out, _functions(plan, sym_addr) if functions else ())
    finally:
        if not ok:
            munmap(base, plan.total)


def _section_headers(obj: bytes) -> tuple[list, bytes]:
    """The section headers of a 64-bit x86-64 relocatable ELF object, and the table of
    their names; anything else is refused."""
    if not supported():
        raise UnsupportedObject("this loader maps x86-64 Linux objects only")
    if len(obj) < _EHDR.size or obj[:4] != b"\x7fELF":
        raise UnsupportedObject("not an ELF object")
    (ident, e_type, e_machine, _v, _entry, _phoff, e_shoff, _flags, _ehsize, _phentsize, _phnum,
     e_shentsize, e_shnum, e_shstrndx) = _EHDR.unpack_from(obj, 0)
    if ident[4] != 2 or ident[5] != 1 or e_type != _ET_REL or e_machine != _EM_X86_64:
        raise UnsupportedObject("not a 64-bit little-endian x86-64 relocatable object")
    if e_shnum == 0 or e_shentsize != _SHDR.size or e_shoff + e_shnum * _SHDR.size > len(obj):
        raise UnsupportedObject("unexpected section header table")
    shdrs = [_SHDR.unpack_from(obj, e_shoff + k * _SHDR.size) for k in range(e_shnum)]
    shstr = obj[shdrs[e_shstrndx][4]:shdrs[e_shstrndx][4] + shdrs[e_shstrndx][5]]
    return shdrs, shstr


def _place_sections(obj: bytes, shdrs: list, shstr: bytes) -> tuple[dict[int, int], int]:
    """(section index -> offset in the mapping, end of the last) for the allocated
    sections; a section this loader cannot map is refused."""
    placed: dict[int, int] = {}
    size = 0
    for k, (name, stype, flags, _a, off, ssize, _l, _i, align, _e) in enumerate(shdrs):
        if not flags & _SHF_ALLOC or stype == _SHT_X86_64_UNWIND:
            continue                          # (.eh_frame: nothing unwinds through kernels)
        if stype in (_SHT_INIT_ARRAY, _SHT_FINI_ARRAY, _SHT_PREINIT_ARRAY):
            raise UnsupportedObject("static constructors or destructors")
        if flags & (_SHF_WRITE | _SHF_TLS):
            raise UnsupportedObject(f"writable or thread-local section {_cstr(shstr, name)!r}")
        if stype != _SHT_NOBITS and off + ssize > len(obj):
            raise UnsupportedObject("truncated section")
        align = max(1, align)
        size = -(-size // align) * align
        placed[k] = size
        size += ssize
    return placed, size


def _plan(obj: bytes) -> _Plan:
    """The checked layout of `obj`'s mapping: its sections, symbols and relocations, and
    the jump stubs and GOT slots those relocations need."""
    shdrs, shstr = _section_headers(obj)
    placed, size = _place_sections(obj, shdrs, shstr)

    symtabs = [k for k, s in enumerate(shdrs) if s[1] == _SHT_SYMTAB]
    if len(symtabs) != 1:
        raise UnsupportedObject("expected one symbol table")
    st = shdrs[symtabs[0]]
    strtab_h = shdrs[st[6]]
    strtab = obj[strtab_h[4]:strtab_h[4] + strtab_h[5]]
    syms = [_SYM.unpack_from(obj, st[4] + j * _SYM.size) for j in range(st[5] // _SYM.size)]

    plan = _Plan(shdrs, placed, syms, strtab)
    for k, s in enumerate(shdrs):
        if s[1] == _SHT_REL:
            raise UnsupportedObject("REL relocations")
        if s[1] != _SHT_RELA or s[7] not in placed:
            continue
        if s[6] != symtabs[0]:
            raise UnsupportedObject("relocations against another symbol table")
        entries = [_RELA.unpack_from(obj, s[4] + j * _RELA.size) for j in range(s[5] // _RELA.size)]
        for _off, info, _add in entries:
            rtype, sym = info & 0xFFFFFFFF, info >> 32
            if rtype == _R_PLT32 and syms[sym][3] == _SHN_UNDEF:
                plan.stubs.setdefault(sym, len(plan.stubs))
            elif rtype in (_R_GOTPCREL, _R_GOTPCRELX, _R_REX_GOTPCRELX):
                plan.slots.setdefault(sym, len(plan.slots))
        plan.relocs.append((s[7], entries))
    plan.stub_off = -(-size // _STUB) * _STUB
    plan.got_off = plan.stub_off + _STUB * len(plan.stubs)
    plan.total = max(_PAGE, -(-(plan.got_off + 8 * len(plan.slots)) // _PAGE) * _PAGE)
    return plan


def _symbol_addresses(plan: _Plan, base: int, resolve: Callable[[str], int | None]) -> Callable[[int], int]:
    """sym_addr(j): the address of symbol j once the object sits at `base` (memoised)."""
    addr: dict[int, int] = {}

    def sym_addr(j: int) -> int:
        if j in addr:
            return addr[j]
        name_off, info, _other, shndx, value, _size = plan.syms[j]
        if shndx == _SHN_UNDEF:
            name = _cstr(plan.strtab, name_off)
            a = resolve(name) if name else None
            if a is None:
                if info >> 4 != _STB_WEAK:
                    raise UnsupportedObject(f"undefined symbol {name!r}")
                a = 0
        elif shndx == _SHN_ABS:
            a = value
        elif shndx >= _SHN_LORESERVE or shndx not in plan.placed:
            raise UnsupportedObject(f"symbol in section {shndx}, which is not loaded")
        else:
            a = base + plan.placed[shndx] + value
        addr[j] = a
        return a

    return sym_addr


def _image(obj: bytes, plan: _Plan, base: int, sym_addr: Callable[[int], int]) -> bytearray:
    """The mapping's bytes: the sections copied, the stubs and GOT slots filled, every
    relocation applied for the object at `base`."""
    image = bytearray(plan.total)
    for k, off in plan.placed.items():
        s = plan.shdrs[k]
        if s[1] != _SHT_NOBITS:
            image[off:off + s[5]] = obj[s[4]:s[4] + s[5]]
    for j, n in plan.stubs.items():
        o = plan.stub_off + n * _STUB
        image[o:o + 6] = b"\xff\x25\x00\x00\x00\x00"          # jmp *0(%rip)
        struct.pack_into("<Q", image, o + 6, sym_addr(j))
    for j, n in plan.slots.items():
        struct.pack_into("<Q", image, plan.got_off + 8 * n, sym_addr(j))
    for target, entries in plan.relocs:
        sec = plan.placed[target]
        for r_off, info, addend in entries:
            _apply(image, base, sec + r_off, info & 0xFFFFFFFF, info >> 32, addend, sym_addr,
                   plan.stubs, plan.stub_off, plan.slots, plan.got_off)
    return image


def _exported(plan: _Plan, exports: Iterable[str], sym_addr: Callable[[int], int]) -> dict[str, int]:
    """name -> address of each of `exports` (global symbols the object defines)."""
    wanted = set(exports)
    out: dict[str, int] = {}
    for j, (name_off, info, _other, shndx, _value, _size) in enumerate(plan.syms):
        if info >> 4 and shndx != _SHN_UNDEF and name_off:
            name = _cstr(plan.strtab, name_off)
            if name in wanted:
                out[name] = sym_addr(j)
    missing = wanted - out.keys()
    if missing:
        raise UnsupportedObject(f"the object does not define {sorted(missing)}")
    return out


def _functions(plan: _Plan, sym_addr: Callable[[int], int]) -> tuple:
    """(address, size, name) of each function the object defines (local ones too: a
    driver's loop body), for a profiler's map of the mapping (llvm_jit.perf_map)."""
    got = []
    for j, (name_off, info, _other, shndx, _value, size) in enumerate(plan.syms):
        if info & 0xF == _STT_FUNC and size and name_off and _SHN_UNDEF < shndx < _SHN_LORESERVE:
            got.append((sym_addr(j), size, _cstr(plan.strtab, name_off)))
    return tuple(got)


def _apply(image: bytearray, base: int, where: int, rtype: int, sym: int, addend: int, sym_addr,
           stubs: dict[int, int], stub_off: int, slots: dict[int, int], got_off: int) -> None:
    """One RELA entry at offset `where` of the image (mapped at `base`)."""
    p = base + where
    if rtype == _R_NONE:
        return
    if rtype == _R_64:
        struct.pack_into("<Q", image, where, (sym_addr(sym) + addend) & 0xFFFFFFFFFFFFFFFF)
        return
    if rtype == _R_PC64:
        struct.pack_into("<q", image, where, sym_addr(sym) + addend - p)
        return
    if rtype == _R_PLT32:
        s = base + stub_off + _STUB * stubs[sym] if sym in stubs else sym_addr(sym)
    elif rtype == _R_PC32:
        s = sym_addr(sym)
    elif rtype in (_R_GOTPCREL, _R_GOTPCRELX, _R_REX_GOTPCRELX):
        s = base + got_off + 8 * slots[sym]      # the instruction is kept: it loads from the slot
    else:
        raise UnsupportedObject(f"relocation type {rtype}")
    v = s + addend - p
    if not -(1 << 31) <= v < (1 << 31):
        raise UnsupportedObject(f"relocation type {rtype} out of range")
    struct.pack_into("<i", image, where, v)

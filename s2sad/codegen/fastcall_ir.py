"""IR text shared by the METH_FASTCALL functions s2sad writes (codegen/llvm_launch.py's
launchers, llvm_program.py's program launchers, llvm_sigmatch.py's matcher): each reads
every address and number from its table `%t` (its `self`'s data) and returns a Python
object with a new reference. Text only: no import, so a module that writes IR for a warm
start loads nothing more (test_cache)."""

WORD_IR = """define private i64 @word(ptr %t, i64 %i) {
  %at = getelementptr inbounds i64, ptr %t, i64 %i
  %v = load i64, ptr %at
  ret i64 %v
}
"""


def return_ir(choices: str, incref_word: int) -> str:
    """The block `out:` that ends the function: it returns the object whose address the phi
    `choices` (e.g. "[%none, %run], [%ni, %no]") picks, after Py_IncRef (its address at
    table word `incref_word`) gives the caller its reference."""
    return (f"out:\n  %r.int = phi i64 {choices}\n  %r = inttoptr i64 %r.int to ptr\n"
            f"  %incref.int = call i64 @word(ptr %t, i64 {incref_word})\n"
            "  %incref = inttoptr i64 %incref.int to ptr\n  call void %incref(ptr %r)\n  ret ptr %r\n}\n")


ARG_TYPES = {"i": "i64", "w": "i32", "d": "double", "f": "float"}


def argument_ir(v: str, kind: str, added: str | None = None) -> tuple[list[str], str]:
    """(lines, the typed operand) making C argument `v` of `kind` ('i' an i64 or a pointer,
    'w' a C int: the low 32 bits, 'd' a double's bits, 'f' a double's bits rounded to a
    float) from the table word `{v}.w`; `added`: an i64 value the word is an offset from
    (a data pointer, a scratch buffer's address)."""
    if added is not None:
        lines = [f"  {v} = add i64 {added}, {v}.w"]
    elif kind == "i":
        lines = [f"  {v} = add i64 {v}.w, 0"]
    elif kind == "w":
        lines = [f"  {v} = trunc i64 {v}.w to i32"]
    else:
        lines = [f"  {v}{'.d' if kind == 'f' else ''} = bitcast i64 {v}.w to double"]
        if kind == "f":
            lines.append(f"  {v} = fptrunc double {v}.d to float")
    return lines, f"{ARG_TYPES[kind]} {v}"

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

"""Checks of generated CUDA C by NVIDIA's compilers: NVRTC to PTX, ptxas to machine code.

Neither needs a GPU. Each is optional: without NVRTC (`cuda.bindings`) `compile_ptx`
raises BackendUnavailableError with the package to install; without ptxas `check_ptxas`
returns False (nothing checked). A rejection is s2sad's bug, raised as CudaCompileError
with the compiler's log and the generated lines it points at.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from typing import Any

from ..errors import BackendUnavailableError, S2SADError


class CudaCompileError(S2SADError):
    """NVRTC or ptxas rejected generated CUDA code (a bug in s2sad: please report it)."""


def compile_ptx(source: str, name: str, arch: str = "sm_90") -> str:
    """PTX for `source` from NVRTC (no GPU needed). Raises CudaCompileError with NVRTC's
    log and the offending generated lines on failure."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise BackendUnavailableError(
            "NVRTC is not installed", hint='pip install "s2sad[nvrtc]"') from exc

    def check(res: Any, what: str) -> Any:
        err = res[0]
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CudaCompileError(f"NVRTC {what} failed: {err}")
        return res[1:] if len(res) > 2 else (res[1] if len(res) == 2 else None)

    prog_name = name if name.endswith(".cu") else name + ".cu"
    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), prog_name.encode(), 0, [], []), "create")
    try:
        opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17"]
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        size = check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = log.rstrip(b"\0").decode(errors="replace")
        if res != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CudaCompileError(_compile_message("NVRTC", prog_name, log_text, source))
        size = check(nvrtc.nvrtcGetPTXSize(prog), "PTX size")
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(prog, ptx)
        return ptx.rstrip(b"\0").decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _compile_message(tool: str, prog_name: str, log: str, source: str) -> str:
    lines = source.splitlines()
    nums = sorted({int(m) for m in re.findall(re.escape(prog_name) + r"\((\d+)\)", log)})
    parts = [f"{tool} rejected the generated CUDA source {prog_name}:", log.rstrip()]
    for ln in nums[:5]:
        parts.append(f"generated source around line {ln}:")
        for k in range(max(1, ln - 2), min(len(lines), ln + 2) + 1):
            parts.append(f"{'>' if k == ln else ' '} {k:5d} | {lines[k - 1]}")
    parts.append("This is a bug in s2sad's CUDA backend; please report it with the source above.")
    return "\n".join(parts)


def ptxas_path() -> str | None:
    for cand in (shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas"):
        if cand and os.path.exists(cand):
            return cand
    return None


def check_ptxas(ptx: str, arch: str = "sm_90") -> bool:
    """Assemble `ptx` with ptxas when it is installed. Returns False when there is no
    ptxas (nothing checked), True when it assembled; raises CudaCompileError otherwise."""
    exe = ptxas_path()
    if exe is None:
        return False
    with tempfile.TemporaryDirectory(prefix="s2sad-ptxas-") as d:
        src = os.path.join(d, "kernel.ptx")
        with open(src, "w") as fh:
            fh.write(ptx)
        proc = subprocess.run([exe, f"-arch={arch}", src, "-o", os.path.join(d, "kernel.cubin")],
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise CudaCompileError(f"ptxas -arch={arch} failed:\n{proc.stderr}{proc.stdout}")
    return True

"""The syntax check of generated MUSA code without the MUSA SDK: clang in CUDA mode.

mcc is clang-based and its device dialect is CUDA's (`__global__`, `__shared__`, `threadIdx`);
what differs is the SDK: MUSA's intrinsics and runtime header. So a plain clang >= 17 checks
a generated kernel with

    clang++-19 -x cuda --cuda-device-only -nocudainc -nocudalib --cuda-gpu-arch=sm_80
               -std=c++17 -fsyntax-only -D TL_MUSA_SYNTAX_CHECK -I <tilelang_musa/include> kernel.mu

where `TL_MUSA_SYNTAX_CHECK` makes tl_musa_common.h include `check/musa_sdk.h` instead of
<musa_runtime.h>: a header that declares exactly the SDK names the backend emits, each with the
signature of a public MUSA call site. A misspelled intrinsic, a wrong argument count or an
argument of the wrong type fails the check; so does any C++ error of ours. (`--cuda-gpu-arch`
only satisfies the CUDA driver of clang; no NVIDIA code is produced.)

Finding the checker imports no TVM (detection runs where only the runtime is installed).
This is the codegen-level evidence of the conformance suite for MUSA targets; the compile
level needs mcc (`compile.py`).
"""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SyntaxChecker", "find_checker", "check_syntax", "INCLUDE_DIR", "SDK_STANDIN"]

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
SDK_STANDIN = INCLUDE_DIR / "check" / "musa_sdk.h"
_CLANGS = ("clang++-19", "clang++-18", "clang++-17", "clang++")
_MIN_MAJOR = 17
_TIMEOUT_S = 120


@dataclass(frozen=True)
class SyntaxChecker:
    """A clang++ that can check MUSA device code in CUDA mode."""

    compiler: str
    version: str

    def command(self, path: str) -> list[str]:
        return [self.compiler, "-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
                "--cuda-gpu-arch=sm_80", "-std=c++17", "-fsyntax-only", "-Wno-unknown-cuda-version",
                "-ferror-limit=20", "-D", "TL_MUSA_SYNTAX_CHECK", "-I", str(INCLUDE_DIR), path]

    def describe(self) -> str:
        return f"{Path(self.compiler).name} -x cuda -fsyntax-only against {SDK_STANDIN.relative_to(INCLUDE_DIR.parent)}"


@functools.lru_cache(maxsize=None)
def find_checker() -> SyntaxChecker | None:
    """The first clang++ >= 17 on the PATH, or None."""
    for name in _CLANGS:
        path = shutil.which(name)
        if path is None:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        match = re.search(r"clang version (\d+)", out.stdout)
        if out.returncode == 0 and match and int(match.group(1)) >= _MIN_MAJOR:
            return SyntaxChecker(path, out.stdout.splitlines()[0].strip())
    return None


def check_syntax(source: str, entry: str = "kernel") -> str | None:
    """Check one generated file; returns what was done (for reports), or None when no clang
    is available. Raises CodegenError with clang's diagnostics, the file and the command."""
    from tilelang_core.codegen import CodegenError  # imports TVM: only when checking

    checker = find_checker()
    if checker is None:
        return None
    with tempfile.TemporaryDirectory(prefix="tl_musa_check_") as tmp:
        path = Path(tmp) / f"{entry}.mu"
        path.write_text(source)
        command = checker.command(str(path))
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise CodegenError(f"the MUSA syntax check of {entry} timed out after {_TIMEOUT_S} s") from exc
        if out.returncode != 0:
            numbered = "\n".join(f"{n + 1:4d}  {line}" for n, line in enumerate(source.splitlines()))
            raise CodegenError(
                f"generated MUSA code for {entry} fails the syntax check against the declared MUSA "
                f"intrinsics:\n{out.stderr.strip()[:4000]}\n\nreproduce with: {' '.join(command)}\n"
                f"(the file, numbered):\n{numbered[:20000]}")
    return checker.describe()

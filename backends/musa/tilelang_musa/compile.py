"""Device compile for Moore Threads GPUs: MUSA C++ -> a device binary for `muModuleLoadData`.

The compiler is the MUSA SDK's `mcc` (clang-based), called the way Moore Threads' TileLang
port calls it (`tilelang/contrib/mcc.py`: `mcc -O2 --cuda-device-only --cuda-gpu-arch <arch>
-std=c++17 -I ... -o kernel.mubin kernel.mu`). Without the SDK nothing is compiled and the
error says what is missing; nothing pretends to have produced a binary.

Every compile runs in its own temporary directory, so concurrent processes never collide.
"""
from __future__ import annotations

import functools
import hashlib
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping

from tilelang_core.runtime import CompileError

from . import sdk

__all__ = ["INCLUDE_DIR", "MUSAToolchainError", "compile_musa", "mcc_command", "cache_key", "include_digest",
           "SOURCE_ONLY_HEADER", "source_only", "is_source_only"]

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
_TIMEOUT_S = 600
_OPTIONS = ("flags", "fast_math", "line_map")


class MUSAToolchainError(CompileError):
    """No MUSA compiler here (not a problem of the kernel's source)."""


# The first line of a "binary" that is the MUSA C++ source itself: what `compile` returns where
# there is no mcc, so that the kernel still exports (its source) and runs after an mcc compile
# on a machine with the SDK. The line is a comment: the whole binary is a valid .mu file.
SOURCE_ONLY_HEADER = b"// tilelang-musa source-only kernel: compiled with mcc when loaded where the MUSA SDK is\n"


def source_only(source: str, arch: str, why: str) -> bytes:
    """The source-only binary of `source` for `arch`; `why` (no mcc here) is kept in it."""
    reason = " ".join(why.split())
    return SOURCE_ONLY_HEADER + f"// arch: {arch}; not compiled because: {reason}\n".encode() + source.encode()


def is_source_only(binary: bytes) -> bool:
    return binary.startswith(SOURCE_ONLY_HEADER)


def mcc_command(mcc: str, arch: str, source: str, output: str, flags=(), fast_math: bool = False) -> list[str]:
    command = [mcc, "-O2", "--cuda-device-only", "--cuda-gpu-arch", arch, "-std=c++17", "-I", str(INCLUDE_DIR)]
    home = sdk.musa_home()
    if home is not None:
        command += ["-I", str(home / "include")]
    if fast_math:
        command.append("-ffast-math")
    return command + list(flags) + ["-o", output, source]


@functools.lru_cache(maxsize=None)
def include_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(INCLUDE_DIR.rglob("*.h")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def _mcc_version(mcc: str) -> str:
    try:
        out = subprocess.run([mcc, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unusable ({type(exc).__name__})"
    return (out.stdout.splitlines() or ["unknown"])[0].strip()


def cache_key(arch: str) -> str:
    mcc = sdk.find_mcc()
    return f"mcc:{_mcc_version(mcc) if mcc else 'none'} arch:{arch} headers:{include_digest()}"


def compile_musa(source: str, arch: str, options: Mapping[str, Any] | None = None) -> bytes:
    """Compile `source` for `arch` with mcc; raises MUSAToolchainError when there is no mcc and
    CompileError with mcc's log, the file and the command when it refuses the source."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"unknown MUSA compile options {unknown}; valid: {', '.join(_OPTIONS)}")
    mcc = sdk.find_mcc()
    if mcc is None:
        raise MUSAToolchainError(
            f"cannot compile for musa/{arch}: no mcc here (set MUSA_HOME to the MUSA SDK, or put mcc on "
            f"PATH). The MUSA C++ source was generated; tilelang conformance --backend musa checks it at "
            f"the codegen level, and kernel.export() keeps it for a machine with the SDK")
    with tempfile.TemporaryDirectory(prefix="tl_musa_") as tmp:
        src, out = Path(tmp) / "kernel.mu", Path(tmp) / "kernel.mubin"
        src.write_text(source)
        command = mcc_command(mcc, arch, str(src), str(out), options.get("flags", ()), bool(options.get("fast_math")))
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise CompileError(f"mcc timed out after {_TIMEOUT_S} s: {shlex.join(command)}") from exc
        if result.returncode != 0 or not out.is_file():
            kept = Path(tempfile.mkdtemp(prefix="tl_musa_failed_")) / "kernel.mu"
            kept.write_text(source)
            raise CompileError(f"mcc failed for musa/{arch} (exit {result.returncode}):\n"
                               f"{(result.stdout + result.stderr).strip()[:8000]}\n"
                               f"source kept at {kept}; reproduce with: "
                               f"{shlex.join(command).replace(str(src), str(kept))}")
        return out.read_bytes()

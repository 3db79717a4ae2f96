"""The "binary" of a Metal kernel: its MSL source, compiled by Metal where it runs.

Metal builds a library from source at load time (torch.mps.compile_shader, or
`newLibraryWithSource:` through pyobjc) on the Mac that runs the kernel, so there is no
device binary to make ahead: `tilelang_compile` returns the source as UTF-8 and the runtime
compiles it. An error in the source then surfaces at load, with Metal's log. Off macOS the
generated source is checked with clang against the declared MSL subset instead (`check.py`,
the conformance suite's codegen level).
"""
from __future__ import annotations

from tilelang_core.runtime import CompileError

__all__ = ["FORMAT", "compile_metal", "cache_key"]

FORMAT = "msl-source-1"  # what a Metal binary is; enters the cache key


def compile_metal(source: str, entry: str) -> bytes:
    """`source` as the binary the runtime loads (UTF-8 MSL)."""
    if f" {entry}(" not in source:
        raise CompileError(f"the MSL source does not define its entry {entry!r}; this is a bug in tilelang-metal's "
                           f"printer (please report it with kernel.get_kernel_source())")
    return source.encode("utf-8")


def cache_key() -> str:
    return FORMAT

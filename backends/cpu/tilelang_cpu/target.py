"""CPU archs and their capability tables; the host's is read from the CPU's feature flags."""
from __future__ import annotations

import functools
import os
import platform

from tilelang_core.plugin import Capabilities, TargetKind

__all__ = ["CPU_ARCHS", "arch_family", "host_arch", "runs_on_host", "cpu_kind", "host_features"]

_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
           "float32", "float64")
_ATOMIC_INTS = ("int8", "uint8", "int16", "int32", "int64")
_ATOMICS = tuple(
    f"atomic_{op}.{dtype}"
    for op in ("add", "max", "min", "load", "store", "or")
    for dtype in (_ATOMIC_INTS if op == "or" else ("float16", "bfloat16", "float32", "float64") + _ATOMIC_INTS)
)


def _table(arch: str, vector_bytes: int, features: tuple[str, ...]) -> Capabilities:
    # A block runs as one thread of execution: its "shared memory" is the stack/heap of that
    # thread, so the limits are generous and the warp is one lane.
    return Capabilities(
        kind="cpu",
        arch=arch,
        execution_model="block-serial",
        warp_size=1,
        max_threads_per_block=1024,
        shared_memory_static=8 << 20,
        shared_memory_optin=64 << 20,
        vector_bytes=vector_bytes,
        processor_count=os.cpu_count(),
        dtypes=_DTYPES,
        atomics=_ATOMICS,
        features=("printf", "device_assert") + features,
    )


CPU_ARCHS = {
    "x86-64": _table("x86-64", 16, ("sse2",)),
    "x86-64-avx2": _table("x86-64-avx2", 32, ("sse2", "avx2", "fma")),
    "x86-64-avx512": _table("x86-64-avx512", 64, ("sse2", "avx2", "fma", "avx512f")),
    "aarch64": _table("aarch64", 16, ("neon",)),
    "generic": _table("generic", 16, ()),
}


@functools.lru_cache(maxsize=1)
def host_features() -> frozenset[str]:
    """The CPU flags of this machine (Linux /proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def arch_family(arch: str) -> str:
    """The instruction-set family of a declared arch ("x86-64", "aarch64", "generic")."""
    return "x86-64" if arch.startswith("x86-64") else arch


# x86-64 levels, each a superset of the one before: code for a lower level runs on a higher one
_X86_LEVELS = ("x86-64", "x86-64-avx2", "x86-64-avx512")


def runs_on_host(arch: str) -> bool:
    """Whether code built for `arch` runs on this machine: its own arch, a lower x86-64 level
    of an x86-64 host, or portable C ("generic")."""
    host = host_arch()
    if arch in (host, "generic"):
        return True
    if arch in _X86_LEVELS and host in _X86_LEVELS:
        return _X86_LEVELS.index(arch) <= _X86_LEVELS.index(host)
    return False


def host_arch() -> str:
    """This machine's arch: the highest x86-64 level its flags allow, aarch64, or "generic"
    (any other machine: portable C, built with no -march)."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        flags = host_features()
        if "avx512f" in flags:
            return "x86-64-avx512"
        if "avx2" in flags and "fma" in flags:
            return "x86-64-avx2"
        return "x86-64"
    if machine in ("aarch64", "arm64"):
        return "aarch64"
    return "generic"


def cpu_kind() -> TargetKind:
    return TargetKind(
        name="cpu",
        archs=CPU_ARCHS,
        default_arch=host_arch(),
        description="the host CPU: blocks spread over cores, tiles as vectorized loops",
        aliases={"host": host_arch()},
    )

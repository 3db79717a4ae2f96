"""Known gaps of the OpenCL backend, as strict xfails with reasons (conformance suite)."""
from __future__ import annotations

from .target import OPENCL_ARCHS

__all__ = ["expectations"]


def _local_memory_gap(arch: str) -> str:
    kib = OPENCL_ARCHS[arch].shared_memory_optin // 1024
    return (f"the kernel's 64x64 tiles need more than {kib} KiB of local memory, all opencl/{arch} promises "
            f"(the OpenCL minimum); the core refuses it with a CapabilityError naming the largest buffer")


# arch -> case name -> reason
_BY_ARCH = {
    arch: {"flash_attention.fwd": _local_memory_gap(arch), "flash_attention.fwd.causal": _local_memory_gap(arch)}
    for arch in ("generic", "subgroup32")
}


def expectations(arch: str) -> dict[str, str]:
    return dict(_BY_ARCH.get(arch, {}))

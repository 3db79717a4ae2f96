"""OpenCL archs and their capability tables; a detected device refines them.

OpenCL promises little about a device, so the archs are classes of devices rather than chips:

- `generic`: any OpenCL 1.2 device. Work-groups of up to 256 work-items, 32 KiB of local
  memory (the standard's minimum for a non-custom device), no sub-groups: reductions across
  threads go through `__local` memory.
- `pocl-cpu`: PoCL's CPU device ("pthread"), what CI runs on: 4096 work-items per group and
  large local memory (both are plain host memory), float64 and 64-bit atomics.
- `subgroup32`: a device with `cl_khr_subgroup_shuffle` whose sub-groups have 32 work-items:
  the core's register reductions use `sub_group_shuffle_xor` (feature `warp_shuffle`).

No arch declares matrix instructions, copy engines or device assertions: every tile op takes
the core's portable SIMT lowering.
"""
from __future__ import annotations

from tilelang_core.plugin import Capabilities, TargetKind

__all__ = ["OPENCL_ARCHS", "opencl_kind", "DEFAULT_ARCH"]

DEFAULT_ARCH = "pocl-cpu"

_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float16", "bfloat16", "float32")
_ATOMICS_32 = tuple(f"atomic_{kind}.{dtype}" for kind in ("add", "max", "min", "load", "store")
                    for dtype in ("int32", "uint32", "float32"))
_ATOMICS_64 = tuple(f"atomic_{kind}.{dtype}" for kind in ("add", "max", "min", "load", "store")
                    for dtype in ("int64", "uint64", "float64"))


def _table(arch: str, *, threads: int, local: int, warp: int, fp64: bool, atomics64: bool,
           features: tuple[str, ...] = ()) -> Capabilities:
    return Capabilities(
        kind="opencl",
        arch=arch,
        execution_model="simt",
        warp_size=warp,
        max_threads_per_block=threads,
        shared_memory_static=local,
        shared_memory_optin=local,
        vector_bytes=16,
        dtypes=_DTYPES + (("float64",) if fp64 else ()),
        atomics=_ATOMICS_32 + (_ATOMICS_64 if atomics64 else ()),
        features=("printf",) + features,
    )


OPENCL_ARCHS = {
    "generic": _table("generic", threads=256, local=32 * 1024, warp=32, fp64=False, atomics64=False),
    "pocl-cpu": _table("pocl-cpu", threads=4096, local=1 << 20, warp=32, fp64=True, atomics64=True),
    "subgroup32": _table("subgroup32", threads=256, local=32 * 1024, warp=32, fp64=False, atomics64=False,
                         features=("warp_shuffle",)),
}


def opencl_kind() -> TargetKind:
    return TargetKind(name="opencl", archs=OPENCL_ARCHS, default_arch=DEFAULT_ARCH,
                      description="OpenCL C on any OpenCL platform through pyopencl (PoCL on the CPU in CI)")

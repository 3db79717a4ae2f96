"""Metal archs (Apple GPU generations) and their capability tables.

Values are Apple's published limits, the same for every Apple-silicon Mac GPU (Metal Feature
Set Tables: 1024 threads per threadgroup, 32 KB of threadgroup memory, SIMD-groups of 32
threads) plus each generation's GPU-core count in its base configuration (a detected device
would refine it; this backend detects none on Linux).

| arch | GPU family | MSL the code needs | what it adds here |
|---|---|---|---|
| apple-m1 | Apple7 | 3.0 (atomic_float) | simdgroup matrices 8x8x8, half and float |
| apple-m2 | Apple8 | 3.1 | bfloat (`bfloat`, `simdgroup_bfloat8x8`) |
| apple-m3 | Apple9 | 3.1 | dynamic caching (no new instruction used here) |
| apple-m4 | Apple9 | 3.1 | as M3 |
| apple-m5 | Apple10 | 3.1 | Metal 4 tensor ops (`mpp::tensor_ops::matmul2d`); not used by this backend yet: its T.gemm runs on simdgroup matrices as on M1-M4 (`extra["tensor_ops"]` says so) |

bfloat is declared from M2 on, as the simdgroup bfloat matrices are documented for it; the
core counts are the base configuration of each chip.
"""
from __future__ import annotations

from tilelang_core.plugin import Capabilities, MatrixInstruction, TargetKind

__all__ = ["METAL_ARCHS", "SIMDGROUP_TILE", "metal_kind"]

SIMDGROUP_TILE = 8  # simdgroup_matrix<T, 8, 8>: every matrix instruction is 8x8x8

_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float16", "float32")
# MSL atomics on device memory: atomic_int/atomic_uint (add, max, min, or, load, store) and,
# since MSL 3.0, atomic_float (add, load, store). No 64-bit or half atomics.
_ATOMICS = ("atomic_add.int32", "atomic_add.uint32", "atomic_add.float32", "atomic_max.int32",
            "atomic_max.uint32", "atomic_min.int32", "atomic_min.uint32")
_MATRIX_PAIRS = (("float16", "float32"), ("float16", "float16"), ("float32", "float32"))


def _simdgroup(pairs) -> MatrixInstruction:
    return MatrixInstruction("simdgroup", shapes=((SIMDGROUP_TILE,) * 3,), dtypes=tuple(pairs),
                             scope="simdgroup")


def _table(arch: str, *, family: str, cores: int, bfloat: bool, tensor_ops: bool = False):
    pairs = _MATRIX_PAIRS + ((("bfloat16", "float32"),) if bfloat else ())
    return Capabilities(
        kind="metal",
        arch=arch,
        execution_model="simt",
        warp_size=32,  # threads per SIMD-group
        max_threads_per_block=1024,
        shared_memory_static=32 * 1024,
        shared_memory_optin=32 * 1024,
        registers_per_block=None,
        processor_count=cores,
        l2_size=None,
        vector_bytes=16,
        max_vector_lanes=4,  # MSL vectors: 2, 3 or 4 elements
        matrix_instructions=(_simdgroup(pairs),),
        copy_engines=(),
        barriers=("threadgroup_barrier", "simdgroup_barrier"),
        dtypes=_DTYPES + (("bfloat16",) if bfloat else ()),
        atomics=_ATOMICS,
        # no printf and no device-side assert in MSL: debug.* conformance cases are N/A
        features=("warp_shuffle",),
        extra={"gpu_family": family, "msl_version_needed": "3.1" if bfloat else "3.0",
               "tensor_ops": "Metal 4 (matmul2d): in the hardware, not used by tilelang-metal yet"
               if tensor_ops else "none"},
    )


METAL_ARCHS = {
    "apple-m1": _table("apple-m1", family="Apple7", cores=8, bfloat=False),
    "apple-m2": _table("apple-m2", family="Apple8", cores=10, bfloat=True),
    "apple-m3": _table("apple-m3", family="Apple9", cores=10, bfloat=True),
    "apple-m4": _table("apple-m4", family="Apple9", cores=10, bfloat=True),
    "apple-m5": _table("apple-m5", family="Apple10", cores=10, bfloat=True, tensor_ops=True),
}


def metal_kind() -> TargetKind:
    return TargetKind(name="metal", archs=METAL_ARCHS, default_arch="apple-m2",
                      description="Apple GPUs through Metal (MSL source, run by torch.mps or pyobjc on macOS)")

"""CUDA archs and their capability tables (datasheet values; a detected GPU refines them)."""
from __future__ import annotations

from tilelang_core.plugin import Capabilities, MatrixInstruction, TargetKind

__all__ = ["CUDA_ARCHS", "cuda_kind", "arch_for_compute_capability"]

_DTYPES_80 = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
              "bfloat16", "float32", "float64")
_DTYPES_89 = _DTYPES_80 + ("float8_e4m3fn", "float8_e5m2")
_ATOMICS = ("atomic_add.float32", "atomic_add.float64", "atomic_add.float16", "atomic_add.bfloat16",
            "atomic_add.int32", "atomic_max.int32", "atomic_min.int32", "atomic_max.float32",
            "atomic_min.float32")

_MMA_80 = MatrixInstruction(
    "mma.sync",
    shapes=((16, 8, 16), (16, 8, 8), (16, 8, 32)),
    dtypes=(("float16", "float32"), ("bfloat16", "float32"), ("float16", "float16"),
            ("tfloat32", "float32"), ("int8", "int32")),
)
_MMA_89 = MatrixInstruction(
    "mma.sync",
    shapes=_MMA_80.shapes,
    dtypes=_MMA_80.dtypes + (("float8_e4m3fn", "float32"), ("float8_e5m2", "float32")),
)
_WGMMA = MatrixInstruction(
    "wgmma",
    shapes=tuple((64, n, 16) for n in (8, 16, 32, 64, 128, 256)),
    dtypes=(("float16", "float32"), ("bfloat16", "float32"), ("float16", "float16"),
            ("tfloat32", "float32"), ("int8", "int32"), ("float8_e4m3fn", "float32"),
            ("float8_e5m2", "float32")),
    scope="warpgroup",
)


def _table(arch, *, sms, l2, smem_optin, mma, dtypes, copy, barriers, features=()):
    return Capabilities(
        kind="cuda",
        arch=arch,
        execution_model="simt",
        warp_size=32,
        max_threads_per_block=1024,
        shared_memory_static=48 * 1024,
        shared_memory_optin=smem_optin,
        registers_per_block=65536,
        processor_count=sms,
        l2_size=l2,
        vector_bytes=16,
        matrix_instructions=mma,
        copy_engines=copy,
        barriers=barriers,
        dtypes=dtypes,
        atomics=_ATOMICS,
        # cooperative_launch: a kernel that calls T.sync_grid is launched with
        # cuLaunchCooperativeKernel (its whole grid resident at once)
        features=("printf", "device_assert", "warp_shuffle", "ldmatrix", "cooperative_launch") + features,
        # a warp group: T.ws(k) is threads 128k .. 128k + 127, synchronized by a named barrier
        # (bar.sync id, 128); its mbarrier copies are cp.async + cp.async.mbarrier.arrive on
        # every arch here (TMA's cp.async.bulk.tensor with a host tensor map: not yet)
        thread_group_size=128,
    )


CUDA_ARCHS = {
    # A100: 108 SMs, 40 MB L2, 163 KB of opt-in shared memory per block.
    "sm_80": _table("sm_80", sms=108, l2=40 << 20, smem_optin=166912, mma=(_MMA_80,),
                    dtypes=_DTYPES_80, copy=("cp.async",), barriers=("bar.sync", "mbarrier")),
    # L40S / RTX 4090 class: 99 KB opt-in shared memory, fp8 mma.
    "sm_89": _table("sm_89", sms=142, l2=96 << 20, smem_optin=101376, mma=(_MMA_89,),
                    dtypes=_DTYPES_89, copy=("cp.async",), barriers=("bar.sync", "mbarrier")),
    # H100 SXM: 132 SMs, 50 MB L2, 227 KB opt-in shared memory, wgmma and TMA.
    "sm_90a": _table("sm_90a", sms=132, l2=50 << 20, smem_optin=232448, mma=(_MMA_89, _WGMMA),
                     dtypes=_DTYPES_89, copy=("cp.async", "tma"),
                     barriers=("bar.sync", "mbarrier", "async_barrier"),
                     features=("setmaxnreg", "cluster")),
}


def arch_for_compute_capability(major: int, minor: int) -> str | None:
    """The declared arch whose code runs on a device of this compute capability."""
    if major == 9:
        return "sm_90a"
    if (major, minor) == (8, 9):
        return "sm_89"
    if major == 8:
        return "sm_80"
    return None


def cuda_kind() -> TargetKind:
    return TargetKind(
        name="cuda",
        archs=CUDA_ARCHS,
        default_arch="sm_90a",
        description="NVIDIA GPUs through the driver API and NVRTC",
    )

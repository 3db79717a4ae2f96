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


def _table(arch, *, sms, l2, smem_optin, mma, dtypes, copy, barriers, atomics=_ATOMICS, features=(),
           ldmatrix=True):
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
        atomics=atomics,
        # cooperative_launch: a kernel that calls T.sync_grid is launched with
        # cuLaunchCooperativeKernel (its whole grid resident at once)
        features=("printf", "device_assert", "warp_shuffle", "cooperative_launch") + (("ldmatrix",) if ldmatrix else ())
        + features,
        # a warp group: T.ws(k) is threads 128k .. 128k + 127, synchronized by a named barrier
        # (bar.sync id, 128); its mbarrier copies are cp.async + cp.async.mbarrier.arrive on
        # every arch here (TMA's cp.async.bulk.tensor with a host tensor map: not yet)
        thread_group_size=128,
    )


# Shared by the tables below (CUDA C++ Programming Guide, "Compute Capabilities" tables, and
# the PTX ISA's per-instruction target requirements):
# - mma.sync m16n8k16 (what T.gemm's tensor-core lowering issues) needs sm_80; Volta's m8n8k4
#   and Turing's m16n8k8 have other fragment layouts, so sm_70 / sm_75 take the SIMT lowering.
# - cp.async and mbarrier need sm_80; bfloat16 mma and atomicAdd on bfloat16 need sm_80;
#   float8 mma needs sm_89.
# - wgmma and setmaxnreg are arch-specific to sm_90a (tcgen05 to sm_100a, not used yet): on
#   sm_90, sm_100 and sm_120 T.gemm takes mma.sync. TMA (cp.async.bulk.tensor) is sm_90+.
_SIMT_BARRIERS = ("bar.sync",)
_ASYNC_BARRIERS = ("bar.sync", "mbarrier")
_TMA_BARRIERS = ("bar.sync", "mbarrier", "async_barrier")
_DTYPES_70 = tuple(d for d in _DTYPES_80 if d != "bfloat16")
_ATOMICS_70 = tuple(a for a in _ATOMICS if a != "atomic_add.bfloat16")

CUDA_ARCHS = {
    # V100: 80 SMs, 6 MB L2, 96 KB opt-in shared memory. No bfloat16; SIMT gemm.
    "sm_70": _table("sm_70", sms=80, l2=6 << 20, smem_optin=98304, mma=(), dtypes=_DTYPES_70,
                    copy=(), barriers=_SIMT_BARRIERS, atomics=_ATOMICS_70, features=(), ldmatrix=False),
    # T4 / RTX 20xx: 40 SMs, 4 MB L2, 64 KB opt-in shared memory. SIMT gemm, ldmatrix.
    "sm_75": _table("sm_75", sms=40, l2=4 << 20, smem_optin=65536, mma=(), dtypes=_DTYPES_70,
                    copy=(), barriers=_SIMT_BARRIERS, atomics=_ATOMICS_70),
    # A100: 108 SMs, 40 MB L2, 163 KB of opt-in shared memory per block.
    "sm_80": _table("sm_80", sms=108, l2=40 << 20, smem_optin=166912, mma=(_MMA_80,),
                    dtypes=_DTYPES_80, copy=("cp.async",), barriers=_ASYNC_BARRIERS),
    # A10 / A40 / RTX 30xx (GA102): 84 SMs, 6 MB L2, 99 KB opt-in shared memory.
    "sm_86": _table("sm_86", sms=84, l2=6 << 20, smem_optin=101376, mma=(_MMA_80,),
                    dtypes=_DTYPES_80, copy=("cp.async",), barriers=_ASYNC_BARRIERS),
    # Jetson AGX Orin: 16 SMs, 4 MB L2, 163 KB opt-in shared memory.
    "sm_87": _table("sm_87", sms=16, l2=4 << 20, smem_optin=166912, mma=(_MMA_80,),
                    dtypes=_DTYPES_80, copy=("cp.async",), barriers=_ASYNC_BARRIERS),
    # L40S / RTX 4090 class: 99 KB opt-in shared memory, fp8 mma.
    "sm_89": _table("sm_89", sms=142, l2=96 << 20, smem_optin=101376, mma=(_MMA_89,),
                    dtypes=_DTYPES_89, copy=("cp.async",), barriers=_ASYNC_BARRIERS),
    # H100 code without the arch-specific features (runs on later archs' PTX JIT too):
    # mma.sync and TMA, no wgmma.
    "sm_90": _table("sm_90", sms=132, l2=50 << 20, smem_optin=232448, mma=(_MMA_89,),
                    dtypes=_DTYPES_89, copy=("cp.async", "tma"), barriers=_TMA_BARRIERS,
                    features=("cluster",)),
    # H100 SXM: 132 SMs, 50 MB L2, 227 KB opt-in shared memory, wgmma and TMA.
    "sm_90a": _table("sm_90a", sms=132, l2=50 << 20, smem_optin=232448, mma=(_MMA_89, _WGMMA),
                     dtypes=_DTYPES_89, copy=("cp.async", "tma"), barriers=_TMA_BARRIERS,
                     features=("setmaxnreg", "cluster")),
    # B200: 148 SMs, 126 MB L2, 227 KB opt-in shared memory. wgmma is sm_90a only; tcgen05
    # (sm_100a) is not lowered yet, so T.gemm takes mma.sync on both.
    "sm_100": _table("sm_100", sms=148, l2=126 << 20, smem_optin=232448, mma=(_MMA_89,),
                     dtypes=_DTYPES_89, copy=("cp.async", "tma"), barriers=_TMA_BARRIERS,
                     features=("cluster",)),
    "sm_100a": _table("sm_100a", sms=148, l2=126 << 20, smem_optin=232448, mma=(_MMA_89,),
                      dtypes=_DTYPES_89, copy=("cp.async", "tma"), barriers=_TMA_BARRIERS,
                      features=("setmaxnreg", "cluster")),
    # RTX 5090 / RTX PRO 6000 (GB202): 170 SMs, 96 MB L2, 99 KB opt-in shared memory.
    "sm_120": _table("sm_120", sms=170, l2=96 << 20, smem_optin=101376, mma=(_MMA_89,),
                     dtypes=_DTYPES_89, copy=("cp.async", "tma"), barriers=_TMA_BARRIERS,
                     features=("cluster",)),
}


def _capability(arch: str) -> tuple[int, int, bool]:
    """(major, minor, arch-specific) of "sm_90a" -> (9, 0, True)."""
    digits = arch[3:].rstrip("af")
    return int(digits[:-1]), int(digits[-1]), arch.endswith("a")


def arch_for_compute_capability(major: int, minor: int) -> str | None:
    """The declared arch whose code runs on a device of this compute capability.

    A cubin for sm_XY runs on sm_XZ with Z >= Y (same major): the highest such arch wins. An
    arch-specific one (sm_90a, sm_100a) runs only on exactly its capability, where it is
    preferred for its extra instructions.
    """
    best = None
    for arch in CUDA_ARCHS:
        a_major, a_minor, specific = _capability(arch)
        if a_major != major or a_minor > minor or (specific and a_minor != minor):
            continue
        if best is None or (a_minor, specific) > (_capability(best)[1], _capability(best)[2]):
            best = arch
    return best


def cuda_kind() -> TargetKind:
    return TargetKind(
        name="cuda",
        archs=CUDA_ARCHS,
        default_arch="sm_90a",
        description="NVIDIA GPUs through the driver API and NVRTC",
    )

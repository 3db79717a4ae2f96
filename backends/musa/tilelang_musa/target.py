"""MUSA archs and their capability tables (public facts; a detected GPU refines them).

Sources of the numbers (Moore Threads' public TileLang port, MooreThreads/tilelang_musa):
- warp width: 128 threads before mp_31, 32 on mp_31; a warp squad is 4 warps
  (`src/tl_templates/musa/common.h`: NumThreadsPerWarpBeforeMP31 = 128, NumThreadsPerWarp = 32,
  NumThreadsPerWarpSquad = 128);
- SQMMA (TCE) shapes on mp_31 and its dtypes: mutlass `mute/arch/mma_mp31_sqmma.hpp`
  (`MP31_<M>x<N>x<K>_<C><A><B>_SS` atoms, issued by a warp squad);
- fmma on mp_22: mutlass `mute/arch/mma_mp22.hpp` (`MP22_32x32x16_F32F16F16F32_*`,
  `__musa_fmma_m32n32k16_mma`), with the bf16 and tf32 forms named in the port's guide;
- async global -> shared copies (LDLMS, `__musa_memcpy_g2s`) on every arch here, TME bulk
  tensor copies and ASYNC barriers (ids 1..63) on mp_31 (`src/tl_templates/musa/copy.h`,
  `copy_mp31.h`, `barrier.h`);
- shared memory: 28 KB of static shared memory per block on mp_21/mp_22, 192 KB per SM on
  mp_31 (the port's guide). Processor counts and L2 sizes are not published per arch: they
  stay "unknown" until a device reports them.
"""
from __future__ import annotations

from tilelang_core.plugin import Capabilities, MatrixInstruction, TargetKind

__all__ = ["MUSA_ARCHS", "DEFAULT_ARCH", "SQMMA_SHAPES", "musa_kind", "warp_squad_threads"]

DEFAULT_ARCH = "mp_31"

_DTYPES_2X = ("bool", "int8", "uint8", "int16", "int32", "int64", "float16", "bfloat16",
              "float32", "float64")
_DTYPES_3X = _DTYPES_2X + ("float8_e4m3fn", "float8_e5m2")
# device atomics of tl_musa_common.h: the overloads the MUSA port calls (atomic.h); float
# max/min would need atomicCAS, whose MUSA signature is not confirmed by a public source here
_ATOMICS = ("atomic_add.float32", "atomic_add.int32", "atomic_max.int32", "atomic_min.int32")

_FMMA_MP22 = MatrixInstruction(
    "fmma",
    shapes=((32, 32, 16), (32, 32, 8)),
    dtypes=(("float16", "float32"), ("bfloat16", "float32"), ("tfloat32", "float32")),
    scope="warp",  # one 128-thread warp
)


# (M, N) of the 16-bit SQMMA atoms of mutlass (MP31_<M>x<N>x<K>_F32F16F16_SS, K 16..64)
SQMMA_SHAPES = ((64, 128), (64, 64), (64, 32), (64, 16), (32, 128), (32, 64), (32, 32), (16, 64))


_TCE_MP31 = MatrixInstruction(
    "tce",
    shapes=tuple((m, n, 16) for m, n in SQMMA_SHAPES),
    dtypes=(("float16", "float32"), ("bfloat16", "float32"), ("tfloat32", "float32"),
            ("int8", "int32"), ("float8_e4m3fn", "float32"), ("float8_e5m2", "float32")),
    scope="warpsquad",  # 4 warps of 32 threads issue one SQMMA together
)


def _table(arch, *, warp, smem_static, smem_optin, mma, dtypes, copy, barriers):
    return Capabilities(
        kind="musa",
        arch=arch,
        execution_model="simt",
        warp_size=warp,
        max_threads_per_block=1024,
        shared_memory_static=smem_static,
        shared_memory_optin=smem_optin,
        registers_per_block=None,
        processor_count=None,
        l2_size=None,
        vector_bytes=16,
        matrix_instructions=mma,
        copy_engines=copy,
        barriers=barriers,
        dtypes=dtypes,
        atomics=_ATOMICS,
        features=("printf", "device_assert", "warp_shuffle"),
        # T.ws needs a named (partial) barrier of the group; its MUSA spelling is not
        # verified here, so warp-specialized programs are refused rather than guessed
        thread_group_size=None,
        extra={"warp_squad_threads": 128},
    )


MUSA_ARCHS = {
    # MTT S80 / S3000: 128-thread warps, 28 KB static shared memory, async g2s copies.
    "mp_21": _table("mp_21", warp=128, smem_static=28 * 1024, smem_optin=28 * 1024, mma=(),
                    dtypes=_DTYPES_2X, copy=("ldlms",), barriers=("syncthreads",)),
    # MTT S4000 ("Quyuan"): + fmma tensor instructions.
    "mp_22": _table("mp_22", warp=128, smem_static=28 * 1024, smem_optin=28 * 1024, mma=(_FMMA_MP22,),
                    dtypes=_DTYPES_2X, copy=("ldlms",), barriers=("syncthreads",)),
    # MTT S5000 ("Pinghu"): 32-thread warps, 192 KB shared memory per SM, TCE (SQMMA), TME,
    # ASYNC barriers, fp8.
    "mp_31": _table("mp_31", warp=32, smem_static=48 * 1024, smem_optin=192 * 1024, mma=(_TCE_MP31,),
                    dtypes=_DTYPES_3X, copy=("ldlms", "tme"), barriers=("syncthreads", "async_barrier")),
}


def warp_squad_threads(caps: Capabilities) -> int:
    """Threads that issue one TCE instruction together (4 warps of 32 on mp_31)."""
    return int(caps.extra.get("warp_squad_threads", 128))


def musa_kind() -> TargetKind:
    return TargetKind(name="musa", archs=MUSA_ARCHS, default_arch=DEFAULT_ARCH,
                      description="Moore Threads GPUs through the MUSA driver API and mcc")

"""HIP archs and their capability tables (datasheet values; a detected GPU refines them)."""
from __future__ import annotations

from tilelang_core.plugin import Capabilities, MatrixInstruction, TargetKind

__all__ = ["HIP_ARCHS", "hip_kind"]

_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
           "float32", "float64")
_ATOMICS = ("atomic_add.float32", "atomic_add.float64", "atomic_add.int32", "atomic_max.int32",
            "atomic_min.int32", "atomic_max.float32", "atomic_min.float32")

_MFMA_90A = MatrixInstruction(
    "mfma",
    shapes=((16, 16, 16), (32, 32, 8), (16, 16, 4), (32, 32, 2)),
    dtypes=(("float16", "float32"), ("bfloat16", "float32"), ("int8", "int32"), ("float32", "float32")),
    scope="wavefront",
)
_MFMA_942 = MatrixInstruction(
    "mfma",
    shapes=_MFMA_90A.shapes + ((16, 16, 32), (32, 32, 16)),
    dtypes=_MFMA_90A.dtypes + (("float8_e4m3fnuz", "float32"), ("tfloat32", "float32")),
    scope="wavefront",
)


_MFMA_950 = MatrixInstruction(
    "mfma",
    shapes=_MFMA_942.shapes,
    dtypes=_MFMA_90A.dtypes + (("tfloat32", "float32"),),
    scope="wavefront",
)


def _table(arch, *, cus, l2, mfma, dtypes, wave=64, lds=64 * 1024):
    return Capabilities(
        kind="hip",
        arch=arch,
        execution_model="simt",
        warp_size=wave,
        max_threads_per_block=1024,
        shared_memory_static=lds,
        shared_memory_optin=lds,
        registers_per_block=512 * 64,
        processor_count=cus,
        l2_size=l2,
        vector_bytes=16,
        matrix_instructions=mfma,
        copy_engines=(),
        barriers=("s_barrier",),
        dtypes=dtypes,
        atomics=_ATOMICS,
        features=("printf", "device_assert", "warp_shuffle"),
    )


# CDNA (gfx9) runs wavefronts of 64 lanes with MFMA. RDNA 3 and 4 (gfx11, gfx12) run HIP code
# in wavefronts of 32 (the compiler's default there) and have WMMA, not MFMA: WMMA is not
# lowered yet, so T.gemm takes the SIMT path on them. Figures: AMD's CDNA 2/3/4 and RDNA 3/4
# whitepapers and the LLVM AMDGPU processor table.
HIP_ARCHS = {
    # MI250X, one GCD: 110 CUs, 8 MB L2, 64 KB LDS.
    "gfx90a": _table("gfx90a", cus=110, l2=8 << 20, mfma=(_MFMA_90A,), dtypes=_DTYPES),
    # MI300X: 304 CUs, 4 MB L2 per XCD, 64 KB LDS, fp8 (fnuz) MFMA.
    "gfx942": _table("gfx942", cus=304, l2=4 << 20, mfma=(_MFMA_942,),
                     dtypes=_DTYPES + ("float8_e4m3fnuz", "float8_e5m2fnuz")),
    # MI350X / MI355X: 256 CUs, 4 MB L2 per XCD, 160 KB LDS. Its float8 is OCP (e4m3fn/e5m2),
    # not gfx942's fnuz, and not declared until the storage types for it exist.
    "gfx950": _table("gfx950", cus=256, l2=4 << 20, mfma=(_MFMA_950,), dtypes=_DTYPES, lds=160 * 1024),
    # RX 7900 XTX (Navi 31): 96 CUs, 6 MB L2, 64 KB LDS per workgroup.
    "gfx1100": _table("gfx1100", cus=96, l2=6 << 20, mfma=(), dtypes=_DTYPES, wave=32),
    # RX 7800 XT (Navi 32): 60 CUs, 4 MB L2.
    "gfx1101": _table("gfx1101", cus=60, l2=4 << 20, mfma=(), dtypes=_DTYPES, wave=32),
    # RX 9060 XT (Navi 44): 32 CUs, 4 MB L2.
    "gfx1200": _table("gfx1200", cus=32, l2=4 << 20, mfma=(), dtypes=_DTYPES, wave=32),
    # RX 9070 XT (Navi 48): 64 CUs, 8 MB L2.
    "gfx1201": _table("gfx1201", cus=64, l2=8 << 20, mfma=(), dtypes=_DTYPES, wave=32),
}


def hip_kind() -> TargetKind:
    return TargetKind(name="hip", archs=HIP_ARCHS, default_arch="gfx942",
                      description="AMD GPUs through HIP (hipcc / clang offload)")

"""TileLang's `tilelang.rocm.intrinsics`, as far as this backend provides it: the register
layouts of MFMA operands (`mfma_layout`) and `get_mma_micro_size` (`utils`). TileLang's
hand-written MFMA emitters (`MatrixCoreIntrinEmitter`, ...) are not here: a HIP kernel reaches
MFMA through `T.gemm`."""
from __future__ import annotations

from . import mfma_layout as mfma_layout
from .utils import get_mma_micro_size

__all__ = ["get_mma_micro_size", "mfma_layout"]

# TileLang's names of this module that this backend does not provide
_NOT_PROVIDED = ("MatrixCoreIntrinEmitter", "MatrixCorePreshuffleIntrinEmitter", "WMMAIntrinEmitter",
                 "make_mfma_swizzle_layout", "mfma_store_index_map", "mfma_store_index_map_32x32")


def __getattr__(name: str):
    if name in _NOT_PROVIDED:
        # an ImportError, so that `from tilelang.rocm.intrinsics import NAME` shows this message
        raise ImportError(f"tilelang.rocm.intrinsics.{name} is not provided by tilelang-hip: its hand-written MFMA "
                          f"kernels are not supported yet; write the GEMM with T.gemm, which lowers to MFMA on "
                          f"gfx90a/gfx942", name=name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""TileLang's `tilelang.rocm.intrinsics.utils`: `get_mma_micro_size`."""
from __future__ import annotations

from typing import Any

from tilelang_core import language as T

__all__ = ["get_mma_micro_size"]


def get_mma_micro_size(dtype: Any) -> tuple[int, int, int]:
    """(x, y, k) of the 16 x 16 MFMA tile TileLang's HIP kernels build on: k is 16 for 16-bit
    operands and 32 for 8-bit ones (int8, float8)."""
    bits = T.dtype(dtype).bits
    if bits not in (8, 16):
        raise ValueError(f"get_mma_micro_size: no 16x16 MFMA tile for {bits}-bit operands ({T.dtype(dtype)}); "
                         f"use an 8- or 16-bit dtype")
    return 16, 16, 256 // bits

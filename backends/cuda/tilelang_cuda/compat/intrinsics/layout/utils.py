"""TileLang's `tilelang.cuda.intrinsics.layout.utils`: `get_mma_micro_size`, the tile one
warp's mma.sync instructions cover, and the names of `mma_layout` it re-exports."""
from __future__ import annotations

from typing import Any

from tilelang_core import language as T

from .mma_layout import get_swizzle_layout, make_mma_swizzle_layout

__all__ = ["get_mma_micro_size", "get_swizzle_layout", "make_mma_swizzle_layout"]


def get_mma_micro_size(dtype: Any) -> tuple[int, int, int]:
    """(x, y, k): the 16 x 16 output tile of a warp's instruction pair and its k extent, one
    register column of 32 bits per thread group: 32 for 8-bit types (int8, float8), 16 for
    16-bit ones, 8 for 32-bit (tf32)."""
    bits = T.dtype(dtype).bits
    if bits not in (8, 16, 32):
        raise ValueError(f"get_mma_micro_size: mma.sync has no {bits}-bit operands ({T.dtype(dtype)}); "
                         f"use an 8-, 16- or 32-bit dtype")
    return 16, 16, 256 // bits

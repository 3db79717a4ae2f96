"""TileLang's `tilelang.cuda.intrinsics.layout`."""
from __future__ import annotations

from .mma_layout import get_swizzle_layout, make_mma_swizzle_layout
from .utils import get_mma_micro_size

__all__ = ["get_mma_micro_size", "get_swizzle_layout", "make_mma_swizzle_layout"]

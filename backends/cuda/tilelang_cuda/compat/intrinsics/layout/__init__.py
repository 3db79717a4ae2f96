"""TileLang's `tilelang.cuda.intrinsics.layout`."""
from __future__ import annotations

from .mma_layout import get_swizzle_layout, make_mma_swizzle_layout

__all__ = ["get_swizzle_layout", "make_mma_swizzle_layout"]

"""Tile-op lowerings of the Metal backend (`tilelang_lower_tile_op`; None -> portable).

| tile op | Metal lowering | module |
|---|---|---|
| `T.gemm` | 8x8x8 simdgroup matrices; C in the accumulator layout, a fragment A in the A-operand layout (read from registers) | `lower_gemm.py` (layouts: `layout.py`) |
| `T.reduce_*` of fragments | the core's register reduction; its lane butterflies print as `simd_shuffle_xor` (the "warp_shuffle" feature) | core |
| everything else | the core's portable lowering | core |
"""
from __future__ import annotations

from .lower_gemm import lower_gemm

__all__ = ["LOWERINGS"]

# tile op -> its Metal lowering (each returns None to take the portable one)
LOWERINGS = {"gemm": lower_gemm}

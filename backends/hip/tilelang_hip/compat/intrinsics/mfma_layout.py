"""TileLang's `tilelang.rocm.intrinsics.mfma_layout`: where the 64 lanes of a wavefront hold
the operands of a 16 x 16 MFMA, as functions from a tile coordinate to (lane, register slot).

A (16 rows x K, K = 4, 16, 32 or 64): lane `row + 16 * (k // per_lane)` holds `per_lane = K / 4`
consecutive k elements of its row, slot `k % per_lane`. B (K x 16 columns) is the same with
rows and columns exchanged: lane `col + 16 * (k // per_lane)`. C (16 x 16): lane
`col + 16 * (row // 4)`, slot `row % 4`. (AMD's "AMD matrix instruction calculator" prints the
same maps for v_mfma_*_16x16x{4,16,32}.)
"""
from __future__ import annotations

__all__ = ["shared_16x4_to_local_64x1_layout_A", "shared_4x16_to_local_64x1_layout_B",
           "shared_16x16_to_local_64x4_layout_A", "shared_16x16_to_local_64x4_layout_B",
           "shared_16x16_to_local_64x4_layout_C", "shared_16x32_to_local_64x8_layout_A",
           "shared_16x32_to_local_64x8_layout_B", "shared_16x64_to_local_64x16_layout_A"]


def _a_layout(k: int):
    per_lane = k // 4

    def layout(row, kk):
        return row + 16 * (kk // per_lane), kk % per_lane

    return layout


def _b_layout(k: int):
    per_lane = k // 4

    def layout(kk, col):
        return col + 16 * (kk // per_lane), kk % per_lane

    return layout


shared_16x4_to_local_64x1_layout_A = _a_layout(4)
shared_4x16_to_local_64x1_layout_B = _b_layout(4)
shared_16x16_to_local_64x4_layout_A = _a_layout(16)
shared_16x16_to_local_64x4_layout_B = _b_layout(16)
shared_16x32_to_local_64x8_layout_A = _a_layout(32)
shared_16x32_to_local_64x8_layout_B = _b_layout(32)
shared_16x64_to_local_64x16_layout_A = _a_layout(64)


def shared_16x16_to_local_64x4_layout_C(row, col):
    """The accumulator: lane `col + 16 * (row // 4)`, slot `row % 4`."""
    return col + 16 * (row // 4), row % 4

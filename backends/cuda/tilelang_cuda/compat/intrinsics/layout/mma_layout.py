"""TileLang's `tilelang.cuda.intrinsics.layout.mma_layout`: the XOR swizzle of shared tiles that
ldmatrix / cp.async kernels read and write in 16-byte chunks.

`get_swizzle_layout(row, col, row_size, dtype)` places element (row, col) of a tile whose rows
hold `row_size` elements at (column tile, row, column in the tile) of a 3-D physical buffer:
columns are cut into tiles of `swizzle_bytes` (128 bytes by default, less for shorter rows),
and inside a tile the 16-byte chunk c of row r moves to chunk c ^ s(r), where s(r) is r % 8
for 8 chunks per tile, and r // (8 / chunks) otherwise (rows sharing one 128-byte line use
different halves of it). The 8 row addresses of one ldmatrix (one chunk column, 8 rows) then
fall in 8 different groups of 4 banks.

`make_mma_swizzle_layout(buf)` is that swizzle as a `T.Layout` for `T.annotate_layout`, or
the identity when `is_smooth` or when a row is not a multiple of 64 bytes. The CUDA backend
stores the buffer in exactly that placement (`tilelang_cuda.shared_layout`).
"""
from __future__ import annotations

from typing import Any

from tilelang_core import language as T
from tilelang_core.layout import xor

__all__ = ["get_swizzle_layout", "make_mma_swizzle_layout"]

CHUNK_BITS = 128  # 16 bytes: one ldmatrix row address, one cp.async vector


def _bits(dtype: Any) -> int:
    import tvm

    return tvm.runtime.DataType(str(dtype)).bits


def get_swizzle_layout(row_idx: Any, col_idx: Any, row_size: Any, dtype: Any, swizzle_bytes: Any = None) -> tuple:
    """(column tile, row, swizzled column) where element (row_idx, col_idx) of a tile with
    `row_size` elements per row is stored; indices may be ints or TIR expressions."""
    bits = _bits(dtype)
    row_bytes = bits * int(row_size) // 8
    if row_bytes % 32:
        raise ValueError(f"get_swizzle_layout: a row of {row_size} x {dtype} is {row_bytes} bytes; "
                         f"the swizzle needs a multiple of 32 bytes")
    if swizzle_bytes is None:
        swizzle_bytes = min(128, row_bytes)
    chunk = CHUNK_BITS // bits  # elements per 16-byte chunk
    chunks = int(swizzle_bytes) // 16  # chunks per column tile: 2, 4 or 8
    col_chunk = col_idx // chunk
    row_xor = (row_idx % 8) // (8 // chunks)
    swizzled = xor(col_chunk % chunks, row_xor) * chunk + col_idx % chunk
    return col_chunk // chunks, row_idx, swizzled


def make_mma_swizzle_layout(shared_buf: Any, is_smooth: bool = False) -> T.Layout:
    """The swizzled placement of shared tile `shared_buf` (a buffer of 2 or more dims; the
    last two are swizzled, leading dims pass through), as a `T.Layout`."""
    shape = list(shared_buf.shape)
    dtype = shared_buf.dtype
    if is_smooth or int(shape[-1]) * _bits(dtype) % 512:
        return T.Layout(shape, lambda *idx: idx)

    def place(*idx):
        *lead, i, j = idx
        return [*lead, *get_swizzle_layout(i, j, shape[-1], dtype)]

    return T.Layout(shape, place)

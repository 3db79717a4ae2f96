"""TileLang's `tilelang.cuda.intrinsics.layout.mma_layout`: the XOR swizzle of shared tiles that
ldmatrix / cp.async kernels read and write in 16-byte chunks.

`get_swizzle_layout(row, col, row_size, dtype)` places element (row, col) of a tile whose rows
hold `row_size` elements at (column tile, row, column in the tile) of a 3-D physical buffer:
columns are cut into tiles of `swizzle_bytes` (128 bytes by default, less for shorter rows),
and inside a tile the 16-byte chunk c of row r moves to chunk c ^ s(r), where s(r) is r % 8
for 8 chunks per tile, and r // (8 / chunks) otherwise (rows sharing one 128-byte line use
different halves of it). The 8 row addresses of one ldmatrix (one chunk column, 8 rows) then
fall in 8 different groups of 4 banks.

The register layouts of mma.sync operands, from a tile coordinate to (lane, register slot),
are here under TileLang's names too, for kernels and pictures that build fragments from them:
`shared_16x16_to_mma_32x8_layout_sr_a(i, j)` is where A element (row i, k j) of a 16 x 16
16-bit tile lives; `_sr_b` takes B as (n i, k j) over two m16n8 instructions; `_rs_` swap the
two coordinates. Shapes: 16x8 for 32-bit (tf32, m16n8k8), 16x16 for 16-bit, 16x32 for 8-bit.
They follow the PTX ISA "Matrix fragments for mma.m16n8k*": with g = lane // 4, t = lane % 4,
register r of a lane holds 32 / bits consecutive k elements, A's registers alternate rows g and
g + 8 before moving to the upper half of k, and B's step through k then the second n8 tile.

`make_mma_swizzle_layout(buf)` is that swizzle as a `T.Layout` for `T.annotate_layout`, or
the identity when `is_smooth` or when a row is not a multiple of 64 bytes. The CUDA backend
stores the buffer in exactly that placement (`tilelang_cuda.shared_layout`).
"""
from __future__ import annotations

from typing import Any

from tilelang_core import language as T
from tilelang_core.layout import xor

__all__ = ["get_swizzle_layout", "make_mma_swizzle_layout", *(
    f"shared_16x{k}_to_mma_32x{k // 2}_layout_{order}_{operand}"
    for k in (8, 16, 32) for order in ("sr", "rs") for operand in ("a", "b"))]

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


# -- register layouts of mma.sync operands --------------------------------------------------

def _operand_layout(k: int, operand: str):
    """(i, j) -> (lane, slot) of an A tile (row i, k j) or a B tile (n i, k j) of 16 x `k`
    elements, `k` the instruction's k extent for 8 / 16 / 32 (k = 32 / 16 / 8) bit types."""
    per_reg = k // 8  # elements in one 32-bit register: 4 (8-bit), 2 (16-bit), 1 (32-bit)
    half = k // 2  # k elements one register column covers: the upper half starts there

    def layout(i, j):
        lane = 4 * (i % 8) + (j % half) // per_reg
        if operand == "a":  # registers: rows g, g + 8 of the lower k half, then the upper half
            slot = per_reg * (i // 8) + 2 * per_reg * (j // half) + j % per_reg
        else:  # registers: the lower, upper k half of n tile 0, then of n tile 1
            slot = 2 * per_reg * (i // 8) + per_reg * (j // half) + j % per_reg
        return lane, slot

    return layout


def _swapped(layout):
    return lambda i, j: layout(j, i)


for _k in (8, 16, 32):
    for _operand in ("a", "b"):
        _layout = _operand_layout(_k, _operand)
        globals()[f"shared_16x{_k}_to_mma_32x{_k // 2}_layout_sr_{_operand}"] = _layout
        globals()[f"shared_16x{_k}_to_mma_32x{_k // 2}_layout_rs_{_operand}"] = _swapped(_layout)
del _k, _operand, _layout

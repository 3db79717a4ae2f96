"""Named shared-memory layouts (TileLang's `tilelang.layout.swizzle`): the 128/64/32-byte XOR
swizzles, the row-major layout, and the 8x8 fragments of ldmatrix/stmatrix.

The bank swizzles are the placements that TMA's and wgmma's 128B/64B/32B swizzle modes read
and write: the last two dims (rows, cols) of a buffer are cut into 16-byte vectors; rows go
in groups of 8; in a group, row `s`'s vector `c` (of 8, 4 or 2 per swizzle atom) is stored at
vector `c ^ f(s)` where f(s) = s, s // 2 and s // 4 for 128, 64 and 32 bytes. The physical
buffer is (column atom, row group, offset in the group); leading dims pass through. The
swizzled dims must hold whole atoms: rows a multiple of 8 (or exactly 4) and a row a whole
number of atoms (128, 64 or 32 bytes).

`SwizzleMode` names those modes with the facts of each that descriptors and allocations use
(NVIDIA PTX ISA, "Matrix Descriptor Format" and "Tensor Memory Accelerator" swizzle modes).
"""
from __future__ import annotations

import enum
from typing import Any

from tilelang_core.layout.fragment_model import xor

from .layout import Fragment, Layout

__all__ = ["SwizzleMode", "make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout",
           "make_quarter_bank_swizzled_layout", "make_linear_layout", "make_gemm_fragment_8x8",
           "make_gemm_fragment_8x8_transposed", "make_fully_replicated_layout_fragment"]

_VECTOR_BITS = 128  # one 16-byte vector, the unit the swizzle permutes


class SwizzleMode(enum.Enum):
    """A shared-memory swizzle mode: none, or an XOR of 16-byte vectors in 32/64/128-byte atoms."""

    NONE = 0
    SWIZZLE_32B = 1
    SWIZZLE_64B = 2
    SWIZZLE_128B = 3

    def is_none(self) -> bool:
        return self is SwizzleMode.NONE

    def is_swizzle_32b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_32B

    def is_swizzle_64b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_64B

    def is_swizzle_128b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_128B

    def swizzle_byte_size(self) -> int:
        """Bytes of one swizzle atom (1 for none)."""
        return (1, 32, 64, 128)[self.value]

    def swizzle_atom_size(self) -> int:
        """16-byte vectors in one atom (1 for none)."""
        return 1 if self.is_none() else self.swizzle_byte_size() // 16

    def wgmma_layout_type(self) -> int:
        """The wgmma matrix descriptor's layout-type field."""
        return (0, 3, 2, 1)[self.value]

    def tcgen05_layout_type(self) -> int:
        """The tcgen05 (sm_100) matrix descriptor's swizzle field."""
        return (0, 6, 4, 2)[self.value]

    def smem_alignment(self) -> int:
        """Bytes a swizzled shared buffer's base must be aligned to."""
        return (128, 256, 512, 1024)[self.value]

    @staticmethod
    def from_ordinal(ordinal: int) -> "SwizzleMode":
        return SwizzleMode(int(ordinal))


def _shape_and_bits(args: tuple, what: str) -> tuple[list, int]:
    """(shape, element bits) from `(buffer,)` (TileLang's signature; a load or region of one
    names its buffer) or `(rows, cols, element_bits)` (the form TileLang's plot_layout example
    calls)."""
    import tvm

    if len(args) == 3 and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return [args[0], args[1]], args[2]
    if len(args) != 1:
        raise TypeError(f"{what}: expected a buffer, or rows, cols, element_bits as ints; got "
                        f"{', '.join(type(a).__name__ for a in args) or 'nothing'}")
    buffer = args[0]
    buf = getattr(buffer, "buffer", buffer)  # a BufferLoad or BufferRegion names its buffer
    shape, dtype = getattr(buf, "shape", None), getattr(buf, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(f"{what}: expected a buffer (or a load or region of one), got {type(buffer).__name__}")
    return list(shape), tvm.runtime.DataType(str(dtype)).bits


def _bank_swizzle(args: tuple, atom_vectors: int, what: str) -> Layout:
    shape, bits = _shape_and_bits(args, what)
    if len(shape) < 2:
        raise ValueError(f"{what}: the buffer needs 2 or more dims (rows, cols), got shape {shape}")
    rows, cols = int(shape[-2]), int(shape[-1])
    vector = _VECTOR_BITS // bits  # elements per 16-byte vector
    if not (rows == 4 or rows % 8 == 0) or cols % (vector * atom_vectors):
        raise ValueError(f"{what}: a {rows} x {cols} tile of {bits}-bit elements does not hold whole "
                         f"{atom_vectors * 16}-byte swizzle atoms (rows a multiple of 8, a row a multiple of "
                         f"{vector * atom_vectors} elements); pick another swizzle or tile")
    row_shift = 8 // atom_vectors  # rows of a group that share one XOR value

    def place(*idx):
        *lead, i, j = idx
        group_row = i % 8
        column_atom = j // vector // atom_vectors
        swizzled = xor((j // vector) % atom_vectors, group_row // row_shift)
        offset = j % vector + (swizzled + group_row * atom_vectors) * vector
        return [*lead, column_atom, i // 8, offset]

    return Layout(shape, place)


def make_full_bank_swizzled_layout(*args: Any) -> Layout:
    """The 128-byte swizzle of `buffer` (8 vectors per atom, TMA/wgmma SWIZZLE_128B)."""
    return _bank_swizzle(args, 8, "make_full_bank_swizzled_layout")


def make_half_bank_swizzled_layout(*args: Any) -> Layout:
    """The 64-byte swizzle of `buffer` (4 vectors per atom, SWIZZLE_64B)."""
    return _bank_swizzle(args, 4, "make_half_bank_swizzled_layout")


def make_quarter_bank_swizzled_layout(*args: Any) -> Layout:
    """The 32-byte swizzle of `buffer` (2 vectors per atom, SWIZZLE_32B)."""
    return _bank_swizzle(args, 2, "make_quarter_bank_swizzled_layout")


def make_linear_layout(buffer: Any) -> Layout:
    """`buffer` stored row-major in one dimension."""
    shape, _ = _shape_and_bits((buffer,), "make_linear_layout")

    def place(*idx):
        offset = 0
        for index, extent in zip(idx, shape):
            offset = offset * extent + index
        return [offset]

    return Layout(shape, place)


def make_gemm_fragment_8x8() -> Fragment:
    """An 8x8 tile over a warp as ldmatrix/stmatrix hold it: lane 4 * i + j // 2 holds
    elements (i, j) and (i, j + 1) in its slots j % 2."""
    return Fragment((8, 8), forward_thread_fn=lambda i, j: j // 2 + 4 * i, forward_index_fn=lambda i, j: j % 2)


def make_gemm_fragment_8x8_transposed() -> Fragment:
    """The transposed 8x8 fragment: lane i // 2 + 4 * j holds (i, j) in slot i % 2."""
    return Fragment((8, 8), forward_thread_fn=lambda i, j: i // 2 + 4 * j, forward_index_fn=lambda i, j: i % 2)


def make_fully_replicated_layout_fragment(buffer: Any, threads: int) -> Fragment:
    """Every one of `threads` threads holds the whole of `buffer` (row-major in its slots)."""
    shape, _ = _shape_and_bits((buffer,), "make_fully_replicated_layout_fragment")

    def slot(*idx):
        offset = 0
        for index, extent in zip(idx, shape):
            offset = offset * extent + index
        return offset

    return Fragment(shape, forward_thread_fn=lambda *idx: idx[-1], replicate=int(threads),
                    forward_index_fn=slot)

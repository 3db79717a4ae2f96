"""TileLang's bank-swizzled shared-memory layouts, as `T.Layout`s: `make_full_bank_swizzled_layout`
(128-byte swizzle), `make_half_bank_swizzled_layout` (64 B), `make_quarter_bank_swizzled_layout`
(32 B) and `make_linear_layout` (row-major).

A shared tile of `rows x cols` elements is cut into 16-byte vectors. Rows go in groups of 8;
in each group, row `s` keeps its vectors in chunks of `width` (8 vectors for 128 B, 4 for 64 B,
2 for 32 B) and XORs the vector's position in its chunk with `s` (scaled down to the chunk:
`s`, `s // 2`, `s // 4`), so the 8 rows of a group read at one column hit different banks.
The placement is TileLang's, with three outputs: (column chunk, row group, position in the
chunk-group block); leading dims of a buffer of more than two pass through unchanged. Use the
result in `T.annotate_layout({buf: make_full_bank_swizzled_layout(buf)})` or draw it with
`tilelang.tools.plot_layout`.

Each takes a shared buffer (TileLang's signature) or `rows, cols, element_bits` (the form
TileLang's `plot_layout` example calls).
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx
from tvm.tirx import is_buffer_var

from .layout import Layout

__all__ = ["make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout", "make_quarter_bank_swizzled_layout",
           "make_linear_layout"]

_VECTOR_BITS = 128  # one 16-byte vector: the unit a swizzle moves


def _shape_and_bits(name: str, args: tuple) -> tuple[tuple[int, ...], int]:
    """(constant shape, element bits) from `(buffer,)` or `(rows, cols, element_bits)`."""
    if len(args) == 1 and is_buffer_var(args[0]):
        buffer = args[0]
        shape = []
        for extent in buffer.ty.shape:
            if not isinstance(extent, tirx.IntImm):
                raise ValueError(f"{name}: {buffer.name} has the symbolic extent {extent}; a swizzle needs "
                                 f"constant dims")
            shape.append(int(extent))
        if len(shape) < 2:
            raise ValueError(f"{name}: {buffer.name} has shape {tuple(shape)}; a swizzle needs at least 2 dims")
        return tuple(shape), int(ir.PrimType(str(buffer.ty.dtype)).dtype.bits)
    if len(args) == 3 and all(isinstance(a, int) for a in args):
        rows, cols, bits = args
        return (rows, cols), bits
    raise TypeError(f"{name}: expected a shared buffer, or rows, cols, element_bits as ints; got "
                    f"{', '.join(type(a).__name__ for a in args) or 'nothing'}")


def _bank_swizzle(name: str, width: int, args: tuple) -> Layout:
    """The swizzle whose chunks are `width` vectors (8: 128 B, 4: 64 B, 2: 32 B)."""
    shape, bits = _shape_and_bits(name, args)
    if bits <= 0 or _VECTOR_BITS % bits:
        raise ValueError(f"{name}: elements of {bits} bits do not divide a 16-byte vector")
    vector = _VECTOR_BITS // bits
    rows, cols = shape[-2], shape[-1]
    if not (rows == 4 or rows % 8 == 0):
        raise ValueError(f"{name}: {rows} rows; the swizzle repeats every 8 rows (4 is allowed as a truncated "
                         f"period): use a multiple of 8")
    if cols % (vector * width):
        raise ValueError(f"{name}: {cols} columns of {bits}-bit elements; a row must hold whole chunks of "
                         f"{vector * width} elements ({width} vectors of 16 bytes)")
    shift = {8: 1, 4: 2, 2: 4}[width]  # the row's bits that fit the chunk: s, s // 2, s // 4

    def place(*idx):
        *lead, i, j = idx
        group, s = i // 8, i % 8
        chunk, c, lane = j // vector // width, j // vector % width, j % vector
        swizzled = c ^ (s // shift)
        return [*lead, chunk, group, lane + (swizzled + s * width) * vector]

    return Layout(shape, place)


def make_full_bank_swizzled_layout(*args: Any) -> Layout:
    """The 128-byte swizzle: 8 vectors per chunk, XOR with the row in its group of 8."""
    return _bank_swizzle("make_full_bank_swizzled_layout", 8, args)


def make_half_bank_swizzled_layout(*args: Any) -> Layout:
    """The 64-byte swizzle: 4 vectors per chunk, XOR with the row's group-of-8 index // 2."""
    return _bank_swizzle("make_half_bank_swizzled_layout", 4, args)


def make_quarter_bank_swizzled_layout(*args: Any) -> Layout:
    """The 32-byte swizzle: 2 vectors per chunk, XOR with the row's group-of-8 index // 4."""
    return _bank_swizzle("make_quarter_bank_swizzled_layout", 2, args)


def make_linear_layout(buffer: Any) -> Layout:
    """The row-major layout of `buffer` (every element where it is)."""
    if not is_buffer_var(buffer):
        raise TypeError(f"make_linear_layout: expected a buffer, got {type(buffer).__name__}")
    return Layout(tuple(buffer.ty.shape), lambda *idx: list(idx))

"""TileLang's `TensorCoreIntrinEmitterWithLadderTransform`: the mma.sync emitter for operands
BitBLAS's ladder transform stored pre-permuted (`TransformKind`), as in TileLang's
`dequantize_gemm/example_dequant_gemm_fine_grained.py`.

An operand of transform kind 1, 2 or 3 is stored in shared memory as 4-D tiles
`[tile row, tile column, 16, 16]` of its (rows, k) matrix (A as (m, k), B as (n, k): A not
transposed, B transposed), one 16 x 16 instruction tile each, so a warp's tile is one
contiguous 512-byte block:

- kind 0 (`NonTransform`): a 2-D tile, as `TensorCoreIntrinEmitter` reads it;
- kind 1 (`InterWarpTransform`): the tiles are permuted, each kept as it was: ldmatrix at the
  same lane offsets inside the tile;
- kind 2 (`IntraWarpTransform`): each tile is also permuted so that lane `l` gives ldmatrix
  the row at flat element `l * local_size` of the tile (row `l * local_size // 16`);
- kind 3 (`LDMatrixTransform`): each tile holds the registers in lane order already: lane `l`
  reads its `local_size` elements from flat element `l * local_size`, no ldmatrix.

These are TileLang's addresses; the data layout they imply is BitBLAS's to produce. The
multiply and the store are `TensorCoreIntrinEmitter`'s. Supported: 16-bit A and B (k step
16), instruction tiles of 16 x 16 (`warp_col_tiles` a multiple of 16), `num_elems_per_byte` 1.
"""
from __future__ import annotations

from enum import IntEnum
from typing import Any

from tvm.tirx.script.builder import ir as _builder

from tilelang_core import language as T

from ....language import ptx_ldmatrix
from .mma_macro_generator import TensorCoreIntrinEmitter, _base, _bits

__all__ = ["TensorCoreIntrinEmitterWithLadderTransform", "TransformKind"]


class TransformKind(IntEnum):
    """BitBLAS's ladder transform stages."""

    NonTransform = 0
    InterWarpTransform = 1
    IntraWarpTransform = 2
    LDMatrixTransform = 3


class TensorCoreIntrinEmitterWithLadderTransform(TensorCoreIntrinEmitter):
    """`TensorCoreIntrinEmitter` reading ladder-transformed operands (see the module)."""

    def __init__(self, a_dtype: Any = "float16", b_dtype: Any = "float16", accum_dtype: Any = "float16",
                 a_transposed: bool = False, b_transposed: bool = False, block_row_warps: int = 2,
                 block_col_warps: int = 2, warp_row_tiles: int = 8, warp_col_tiles: int = 8, chunk: int = 16,
                 reduce_k: int = 1, num_elems_per_byte: int = 1, is_m_first: bool | None = False,
                 transform_kind_a: int = 0, transform_kind_b: int = 0, thread_var: Any = None) -> None:
        super().__init__(a_dtype, b_dtype, accum_dtype, a_transposed, b_transposed, block_row_warps,
                         block_col_warps, warp_row_tiles, warp_col_tiles, chunk, reduce_k, num_elems_per_byte,
                         is_m_first, thread_var)
        self.transform_kind_a = self._kind(transform_kind_a, "transform_kind_a")
        self.transform_kind_b = self._kind(transform_kind_b, "transform_kind_b")
        name = type(self).__name__
        if (self.transform_kind_a or self.transform_kind_b) and _bits(self.a_dtype) != 16:
            raise ValueError(f"{name}: ladder-transformed operands are read for 16-bit types, not {self.a_dtype}")
        if self.transform_kind_a and self.a_transposed:
            raise ValueError(f"{name}: transform_kind_a={int(self.transform_kind_a)} reads A stored (m, k); "
                             f"give a_transposed=False")
        if self.transform_kind_b and not self.b_transposed:
            raise ValueError(f"{name}: transform_kind_b={int(self.transform_kind_b)} reads B stored (n, k); "
                             f"give b_transposed=True")
        if self.transform_kind_b and self.n_dim != 16:
            raise ValueError(f"{name}: transformed B tiles are 16 x 16; give warp_col_tiles a multiple of 16")
        if num_elems_per_byte != 1:
            raise ValueError(f"{name}: num_elems_per_byte={num_elems_per_byte}: packed (sub-byte) B registers "
                             f"are not supported; decode into 16-bit tiles first")

    @staticmethod
    def _kind(value: Any, what: str) -> TransformKind:
        try:
            return TransformKind(int(value))
        except (TypeError, ValueError):
            raise ValueError(f"TensorCoreIntrinEmitterWithLadderTransform: {what} must be 0, 1, 2 or 3 "
                             f"(TransformKind), got {value!r}") from None

    def ldmatrix_a(self, A_local_buf: Any, A_shared_buf: Any, ki: Any, rk: Any = 0) -> None:  # noqa: N803
        """This warp's A tiles for k step `ki` (kind 0: the base emitter's read)."""
        if self.transform_kind_a == TransformKind.NonTransform:
            return super().ldmatrix_a(A_local_buf, A_shared_buf, ki, rk)
        self._check_local(A_local_buf, "ldmatrix_a", self.warp_rows * self.local_size_a)
        _, _, warp_m = self.extract_thread_binding(self.get_thread_binding())
        with T.unroll(self.warp_rows) as i:
            tile = (warp_m * self.warp_row_tiles + i * self.micro_size_x) // self.micro_size_x
            self._read(A_local_buf, i * self.local_size_a, A_shared_buf, tile, ki, rk, self.transform_kind_a,
                       self.local_size_a, False, "ldmatrix_a")

    def ldmatrix_b(self, B_local_buf: Any, B_shared_buf: Any, ki: Any, rk: Any = 0) -> None:  # noqa: N803
        """This warp's B tiles for k step `ki` (kind 0: the base emitter's read)."""
        if self.transform_kind_b == TransformKind.NonTransform:
            return super().ldmatrix_b(B_local_buf, B_shared_buf, ki, rk)
        self._check_local(B_local_buf, "ldmatrix_b", self.warp_cols * self.local_size_b)
        _, warp_n, _ = self.extract_thread_binding(self.get_thread_binding())
        with T.unroll(self.warp_cols) as j:
            tile = (warp_n * self.warp_col_tiles + j * self.micro_size_y) // self.micro_size_y
            self._read(B_local_buf, j * self.local_size_b, B_shared_buf, tile, ki, rk, self.transform_kind_b,
                       self.local_size_b, True, "ldmatrix_b")

    def _read(self, local: Any, dst: Any, shared: Any, tile_row: Any, ki: Any, rk: Any, kind: TransformKind,
              size: int, second_right: bool, what: str) -> None:
        """One 16 x 16 tile of a 4-D ladder-transformed operand into `local[dst:dst + size]`."""
        buf, base = _base(shared, what)
        if len(buf.shape) < 4 or [str(d) for d in buf.shape[-2:]] != ["16", "16"]:
            raise ValueError(f"{type(self).__name__}.{what}: a transformed operand is a 4-D shared tile "
                             f"[tile row, tile column, 16, 16], got {buf.name} of shape {tuple(buf.shape)}")
        lead = base[:-4]
        lane, _, _ = self.extract_thread_binding(self.get_thread_binding())
        tile_col = rk * (self.chunk // self.micro_size_k) + ki
        stride = int(buf.shape[-1])
        if kind == TransformKind.LDMatrixTransform:
            with T.unroll(size) as e:
                flat = lane * size + e
                _builder.buffer_store(local, buf[(*lead, base[-4] + tile_row, base[-3] + tile_col,
                                                  flat // stride, flat % stride)], [dst + e])
            return
        if kind == TransformKind.InterWarpTransform:
            row, col = self._ldmatrix_offsets(lane, second_right, str(buf.dtype))
        else:  # IntraWarpTransform
            row, col = (lane * size) // stride, (lane * size) % stride
        src = buf[(*lead, base[-4] + tile_row, base[-3] + tile_col, row, col)]
        _builder.evaluate(ptx_ldmatrix(False, 4, T.access_ptr(src, "r"), T.access_ptr(local[dst], "w")))

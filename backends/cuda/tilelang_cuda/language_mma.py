"""TileLang's helpers for hand-written mma.sync code, offered as `T.<name>` by the plugin:

- `T.get_mma_micro_size(dtype)`: (x, y, k) of the warp-level MMA tile the macro generators
  use: 16 x 16 x 16, k = 32 for 8-bit operands;
- `T.mma_store_index_map(lane, local)`: (row, col) in a 16 x 16 accumulator tile of value
  `local` (0..7) of `lane`: two m16n8 accumulators side by side (PTX ISA, "Matrix Fragments
  for mma.m16n8k16": c0,c1 in row groupID, c2,c3 eight rows below, columns 2 * (lane % 4));
- `T.get_ldmatrix_offset(matrix, lane, local, stride, dtype, transposed)`: (row, col) of the
  shared-memory element lane `lane` addresses for an `ldmatrix.x4` of a 16 x 16 (16-bit),
  16 x 32 (8-bit) or 16 x 8 (32-bit) operand tile, matrix i of the four being rows 8 * (i % 2),
  columns 8 * (i // 2) (A), or the transposed order (B);
- `T.mma_fill(dtype, local_size, local_ptr, offset)`: zero `local_size` accumulator values;
- `T.mma_store(dtype, m, n, dst_ptr, src_ptr, src_offset, dst_stride)`: the warp's 16 x 16
  accumulator tile (8 values a lane, as `mma_store_index_map`) to memory with row stride
  `dst_stride` (helpers of tl_cuda_threads.h);
- `T.ptx_mma_sp(...)`: one 2:4 sparse mma.sync (m16n8k16 / m16n8k32, f16 or bf16 into fp32).
"""
from __future__ import annotations

from typing import Any

from tvm import ir, tirx

__all__ = ["MMA_LANGUAGE_NAMES"]


def _bits(dtype: Any) -> int:
    return ir.PrimType(str(dtype).replace("float8_e4m3", "float8_e4m3fn").replace("fnfn", "fn")).dtype.bits


def get_mma_micro_size(dtype: Any = "float16") -> tuple[int, int, int]:
    """(16, 16, k): k = 32 for 8-bit operands, else 16."""
    return (16, 16, 32) if _bits(dtype) == 8 else (16, 16, 16)


def mma_store_index_map(thread_id: Any, local_id: Any) -> tuple[Any, Any]:
    """(row, col) of accumulator value `local_id` of lane `thread_id` in the 16 x 16 tile."""
    row = 8 * (local_id % 4 // 2) + thread_id // 4
    col = 8 * (local_id // 4) + thread_id % 4 * 2 + local_id % 2
    return row, col


def get_ldmatrix_offset(matrix: str, row_idx: Any, col_idx: Any, stride: Any = None, dtype: Any = "float16",
                        transposed: bool = False) -> tuple[Any, Any]:
    """(row, col) in the shared tile of element `col_idx` that lane `row_idx` loads with one
    ldmatrix.x4 (`stride` is accepted for TileLang's signature; the result is a coordinate)."""
    if matrix not in ("A", "B"):
        raise ValueError(f"T.get_ldmatrix_offset: matrix must be 'A' or 'B', got {matrix!r}")
    bits = _bits(dtype)
    lane, local = row_idx, col_idx
    if bits == 16:
        if transposed:
            return 8 * (lane // 16) + lane % 8, 8 * (lane % 16 // 8) + local % 8
        return lane % 16, 8 * (lane // 16) + local % 8
    if bits == 32 or bits <= 8:
        if (matrix, transposed) not in (("A", False), ("B", True)):
            raise ValueError(f"T.get_ldmatrix_offset: {bits}-bit operands load A untransposed or B transposed only")
        width = 4 if bits == 32 else 16  # values a lane gets per row segment
        if matrix == "A":
            row, col = lane % 16, (lane // 16) * width + local % width
        else:
            row, col = (lane // 16) * 8 + lane % 8, (lane % 16 // 8) * width + local % width
        return (row, col * (8 // bits)) if bits < 8 else (row, col)
    raise ValueError(f"T.get_ldmatrix_offset: unsupported dtype {dtype}")


def mma_fill(dtype: Any, local_size: Any, local_ptr: Any, offset: Any = 0) -> ir.Call:
    """Zero `local_size` values of the accumulator at `local_ptr` + `offset`."""
    return tirx.call_extern("handle", "tl::mma_fill", local_ptr, offset, local_size)


def mma_store(dtype: Any, m: Any, n: Any, dst_ptr: Any, src_ptr: Any, src_offset: Any, dst_stride: Any) -> ir.Call:
    """Store the warp's 16 x 16 accumulator tile (`src_ptr` + `src_offset`, 8 values a lane)
    to `dst_ptr` with row stride `dst_stride`."""
    sizes = tuple(int(v.value) if isinstance(v, tirx.IntImm) else v for v in (m, n))
    if sizes != (16, 16):
        raise ValueError(f"T.mma_store: stores 16 x 16 accumulator tiles, got {m} x {n}")
    return tirx.call_extern("handle", "tl::mma_store_16x16", dst_ptr, src_ptr, src_offset, dst_stride)


_SPARSE_TYPES = {"fp16": "f16", "float16": "f16", "f16": "f16", "bf16": "bf16", "bfloat16": "bf16"}


def _words(pointer: Any) -> ir.Expr:
    return tirx.call_extern("handle", "tl::as_words", pointer)


def _fragment(data: Any, index: Any, access: str) -> ir.Expr:
    from tvm.tirx import is_buffer_var

    from tilelang_core import language as T

    if isinstance(data, ir.Call) and str(getattr(data.op, "name", "")) == "tirx.buffer_data":
        data = data.args[0]
    if not is_buffer_var(data):
        raise TypeError(f"T.ptx_mma_sp: expects fragment buffers (or their .data), got {data}")
    flat = data if len(data.shape) == 1 else T.Tensor((1 << 20,), str(data.dtype), data=data.data,
                                                        scope=str(data.scope()))
    return T.access_ptr(flat[index], access, extent=1)


def ptx_mma_sp(dtype: Any, shape: Any, A_layout: Any, B_layout: Any, A_dtype: Any, B_dtype: Any,  # noqa: N803
               C_dtype: Any, multiplicand_a: Any, a_index: Any, multiplicand_b: Any, b_index: Any,
               accumulator: Any, c_index: Any, metadata: Any, meta_index: Any, sparse_selector: Any,
               saturate: Any = False) -> ir.Call:
    """One 2:4 sparse `mma.sp.sync.aligned.<shape>.row.col.f32.<t>.<t>.f32` of the warp:
    fragments at `multiplicand_a` + `a_index` (the kept half of A), `multiplicand_b` +
    `b_index`, `accumulator` + `c_index` (4 float32), metadata word at `metadata` +
    `meta_index`; `sparse_selector` (a constant 0..3) names the threads that supply it.
    Shapes m16n8k16 and m16n8k32, f16 or bf16 operands, float32 accumulators."""
    text = [str(v.value) if isinstance(v, ir.StringImm) else str(v) for v in (shape, A_layout, B_layout, A_dtype,
                                                                              B_dtype, C_dtype)]
    operand = _SPARSE_TYPES.get(text[3])
    if text[0] not in ("m16n8k16", "m16n8k32") or text[1:3] != ["row", "col"] or operand is None \
            or _SPARSE_TYPES.get(text[4]) != operand or text[5] not in ("fp32", "float32", "f32"):
        raise ValueError(f"T.ptx_mma_sp: {'.'.join(text)} is not a sparse mma this backend prints "
                         f"(m16n8k16 / m16n8k32, row.col, f16 or bf16 operands, fp32 accumulators)")
    selector = int(sparse_selector.value) if isinstance(sparse_selector, tirx.IntImm) else sparse_selector
    if selector not in (0, 1, 2, 3):
        raise ValueError(f"T.ptx_mma_sp: sparse_selector must be a constant 0..3, got {sparse_selector!r}")
    sat = bool(saturate.value) if isinstance(saturate, tirx.IntImm) else saturate
    if sat:
        raise ValueError("T.ptx_mma_sp: saturate=True is not supported for float accumulators; pass False")
    helper = f"tl::mma_sp_{text[0]}_{operand}_f32<{selector}>"
    return tirx.call_extern("handle", helper, _fragment(accumulator, c_index, "rw"),
                            _words(_fragment(multiplicand_a, a_index, "r")), _words(_fragment(multiplicand_b, b_index, "r")),
                            _words(_fragment(metadata, meta_index, "r")))


MMA_LANGUAGE_NAMES = {
    "ptx_mma_sp": ptx_mma_sp,
    "get_mma_micro_size": get_mma_micro_size,
    "mma_store_index_map": mma_store_index_map,
    "get_ldmatrix_offset": get_ldmatrix_offset,
    "mma_fill": mma_fill,
    "mma_store": mma_store,
}

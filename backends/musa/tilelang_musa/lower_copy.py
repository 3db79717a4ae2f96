"""`T.copy(global, shared)` as asynchronous LDLMS copies (`__musa_memcpy_g2s`), 16 bytes each.

The tile is cut into 16-byte vectors along its contiguous (last) dim. Every thread starts the
copies of its vectors (a `T.Parallel` nest over the vectors, so consecutive threads move
consecutive vectors), then waits for its own copies (`tl_musa_g2s_wait`), then a block barrier
publishes the tile (the copy places that barrier itself, after the wait; the shared pointer is
passed with the write bit of `tvm_access_ptr`, so the core still sees the write and opens the
enclosing loop with a barrier). A vector past the tensor's edge is zero-filled.

Applies when both sides have one dtype, the tile's last dim is the contiguous dim of both
buffers in whole vectors (constant shapes, provably aligned starts, rows of the global
tensor whole vectors) and the shared tile has a constant shape; anything else takes the
portable copy. Tensor base pointers are assumed 16-byte aligned (the caller's check says so).

A shared tile that a TCE gemm reads in slabs (`lower_tce.Slabs`) is written in that placement.
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx as tir

from tilelang_core.codegen import sync_threads
from tilelang_core.ir import Region, TileOp, dtype_of
from tilelang_core.ir import ATTR_SYNC_PLACED
from tilelang_core.transform import analyzer, in_bounds, seq, squeeze_extents

__all__ = ["CopyPlan", "plan_copy", "lower_copy", "VECTOR_BYTES", "SHARED_SCOPES"]

VECTOR_BYTES = 16
SHARED_SCOPES = ("shared", "shared.dyn")
_WRITE, _READ = 2, 1


def dtype_bytes(dtype: str) -> int:
    import tvm

    t = tvm.runtime.DataType(dtype)
    return t.bits * t.lanes // 8


@dataclass(frozen=True)
class CopyPlan:
    """A global -> shared copy as vectors of `lanes` elements; `shape` counts the tile's
    non-unit extents, the last one in vectors."""

    src: Region
    dst: Region
    shape: tuple
    lanes: int


def _divisible(expr, factor: int) -> bool:
    return bool(analyzer().can_prove(tir.floormod(expr, factor) == 0))


def plan_copy(op: TileOp) -> CopyPlan | None:
    """The vector plan of a global -> shared `T.copy`, or None for the portable copy."""
    if op.name != "copy":
        return None
    src, dst = op.regions[:2]
    if src.scope != "global" or dst.scope not in SHARED_SCOPES or src.dtype != dst.dtype:
        return None
    size = dtype_bytes(src.dtype)
    if size == 0 or size > VECTOR_BYTES or VECTOR_BYTES % size:
        return None
    lanes = VECTOR_BYTES // size
    s_dims, d_dims = squeeze_extents(src.extents), squeeze_extents(dst.extents)
    if not s_dims or len(s_dims) != len(d_dims):
        return None
    if s_dims[-1] != len(src.extents) - 1 or d_dims[-1] != len(dst.extents) - 1:
        return None
    extents = [dst.extents[d] for d in d_dims]
    if not all(isinstance(e, tir.IntImm) for e in extents) or int(extents[-1]) % lanes:
        return None
    if any(not analyzer().can_prove_equal(src.extents[s], dst.extents[d]) for s, d in zip(s_dims, d_dims)):
        return None
    shared_shape = dst.buffer.ty.shape
    if not all(isinstance(d, tir.IntImm) for d in shared_shape) or int(shared_shape[-1]) % lanes:
        return None
    if list(src.buffer.ty.strides) or not _divisible(src.buffer.ty.shape[-1], lanes) \
            or not _divisible(src.mins[-1], lanes) or not _divisible(dst.mins[-1], lanes):
        return None
    return CopyPlan(src, dst, tuple(int(e) for e in extents[:-1]) + (int(extents[-1]) // lanes,), lanes)


def _pointer(buffer, indices, dtype: str, lanes: int, mask: int):
    """The address of `buffer[indices]` for `lanes` elements, with its access mask."""
    address = tir.address_of(tir.BufferLoad(buffer, list(indices)))
    return tir.tvm_access_ptr(tir.type_annotation(dtype), address, 0, lanes, mask)


def _extern(name: str, *args) -> tir.Stmt:
    return tir.Evaluate(tir.call_extern("void", name, *args))


def lower_copy(op: TileOp, placement=None, ana=None) -> tir.Stmt | None:
    """The async copy of `op` (None: not eligible). `placement` (a `Slabs`) places the
    shared side; `ana` knows the launch ranges, so whole tiles need no bounds mask."""
    from tvm import ir

    plan = plan_copy(op)
    if plan is None:
        return None
    src, dst, lanes = plan.src, plan.dst, plan.lanes
    s_dims, d_dims = squeeze_extents(src.extents), squeeze_extents(dst.extents)
    loop_vars = [tir.Var(n, "int32") for n in "ijklmn"[:len(plan.shape)]]
    offsets = list(loop_vars[:-1]) + [loop_vars[-1] * lanes]
    s_idx, d_idx = list(src.mins), list(dst.mins)
    for d, off in zip(s_dims, offsets):
        s_idx[d] = s_idx[d] + off
    for d, off in zip(d_dims, offsets):
        d_idx[d] = d_idx[d] + off
    if placement is not None:
        d_idx = placement.physical(d_idx)
    if ana is not None:
        for var, extent in zip(loop_vars, plan.shape):
            ana.bind(var, ir.Range.from_min_extent(tir.const(0, "int32"), tir.const(extent, "int32")),
                     allow_override=True)
    valid = in_bounds(src.buffer, s_idx, ana)
    dst_ptr = _pointer(dst.buffer, d_idx, dst.dtype, lanes, _WRITE)
    if valid is None:
        body = _extern(f"tl_musa_g2s<{VECTOR_BYTES}>", dst_ptr, _pointer(src.buffer, s_idx, src.dtype, lanes, _READ))
    else:
        # out of bounds nothing is read, but the address handed over stays inside the tensor
        safe = [tir.if_then_else(valid, i, tir.const(0, dtype_of(i))) for i in s_idx]
        body = _extern(f"tl_musa_g2s_zfill<{VECTOR_BYTES}>", dst_ptr,
                       _pointer(src.buffer, safe, src.dtype, lanes, _READ), valid)
    for var, extent in reversed(list(zip(loop_vars, plan.shape))):
        body = tir.For(var, tir.const(0, "int32"), tir.const(extent, "int32"), tir.ForKind.PARALLEL, body,
                       span=op.stmt.span)
    # the block barrier must follow every thread's wait: placed here, not by the core
    return tir.AttrStmt(tir.const(0, "int32"), ATTR_SYNC_PLACED, tir.const(1, "int32"),
                        seq([body, _extern("tl_musa_g2s_wait"), tir.Evaluate(sync_threads())]))

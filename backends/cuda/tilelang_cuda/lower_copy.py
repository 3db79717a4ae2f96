"""`T.copy(global, shared)` with cp.async, 16 bytes per instruction (fewer into a tile whose
`T.Layout` splits 16-byte runs).

The tile is cut into 16-byte vectors along its contiguous (last) dim; each vector is one
`cp.async.cg` (L2 only), zero-filled when it lies outside the tensor, so masked tails need
no branch. Into a shared tile whose user placement keeps only 8- or 4-byte runs of a row
together (`lower_layout.SharedLayout.run_bytes`: a transposed tile keeps one float), the
vectors are that many bytes, each one `cp.async.ca` (through L1, which serves the
neighbouring elements of a row that other instructions copy). Outside a software pipeline
the copy also commits and waits for its group, so it reads as a synchronous copy; the
pipeline pass (`lower_pipeline.py`) issues the same vectors without waiting.

Applies when both sides have the same dtype, the global tensor's rows and the tile's first
column are whole 16-byte vectors (constant shapes, provable alignment) and the shared tile is
a row-major constant-shape buffer; anything else takes the portable copy. Tensor base
pointers are assumed 16-byte aligned (every allocator of torch and CUDA gives 256).
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx as tir

from tilelang_core.ir import Region, TileOp, dtype_of
from tilelang_core.transform import analyzer, in_bounds, squeeze_extents

from .lower_gemm import SHARED_SCOPES

__all__ = ["CopyPlan", "plan_copy", "vector_bytes", "lower_async_copy", "async_copy_nest", "launch_analyzer", "commit", "wait"]

VECTOR_BYTES = 16
WRITE = 2
READ = 1


def _bytes(dtype: str) -> int:
    import tvm

    t = tvm.runtime.DataType(dtype)
    return t.bits * t.lanes // 8


@dataclass(frozen=True)
class CopyPlan:
    """A global -> shared copy as vectors of `lanes` elements along the tile's last dim
    (16 bytes, or fewer where the shared tile's placement splits 16-byte runs)."""

    src: Region
    dst: Region
    shape: tuple  # the tile's non-unit extents, last one in vectors
    lanes: int


def _divisible(expr, factor: int) -> bool:
    return analyzer().can_prove(tir.floormod(expr, factor) == 0)


def vector_bytes(placed: dict, buf) -> int:
    """The bytes one cp.async may move into shared tile `buf`: 16, or the run its user
    placement keeps together (`placed`: the `SHARED_LAYOUTS` fact; 0: none)."""
    layout = placed.get(buf.__chandle__())
    return VECTOR_BYTES if layout is None else layout.run_bytes


def plan_copy(op: TileOp, vector: int = VECTOR_BYTES) -> CopyPlan | None:
    """The cp.async plan of `op` in vectors of `vector` bytes (16, 8 or 4), or None."""
    if op.name != "copy" or vector not in (4, 8, VECTOR_BYTES):
        return None
    src, dst = op.regions[:2]
    if src.scope != "global" or dst.scope not in SHARED_SCOPES or src.dtype != dst.dtype:
        return None
    size = _bytes(src.dtype)
    if size > vector or vector % size:
        return None
    lanes = vector // size
    s_dims, d_dims = squeeze_extents(src.extents), squeeze_extents(dst.extents)
    if not s_dims or len(s_dims) != len(d_dims):
        return None
    extents = [dst.extents[d] for d in d_dims]
    if not all(isinstance(e, tir.IntImm) for e in extents):
        return None
    if any(not analyzer().can_prove_equal(src.extents[s], dst.extents[d]) for s, d in zip(s_dims, d_dims)):
        return None
    # the tile's last dim must be each buffer's contiguous dim, in whole vectors
    if s_dims[-1] != len(src.extents) - 1 or d_dims[-1] != len(dst.extents) - 1:
        return None
    if int(extents[-1]) % lanes:
        return None
    g_shape, s_shape = src.buffer.ty.shape, dst.buffer.ty.shape
    if not all(isinstance(d, tir.IntImm) for d in s_shape) or int(s_shape[-1]) % lanes:
        return None
    if not _divisible(g_shape[-1], lanes) or not _divisible(src.mins[-1], lanes) \
            or not _divisible(dst.mins[-1], lanes):
        return None
    shape = tuple(int(e) for e in extents[:-1]) + (int(extents[-1]) // lanes,)
    return CopyPlan(src, dst, shape, lanes)


def _extern(name: str, *args) -> tir.Stmt:
    return tir.Evaluate(tir.call_extern("void", name, *args))


def _pointer(buf, indices, dtype: str, lanes: int, mask: int):
    """The address of `buf[indices]` for `lanes` elements, with its access mask: the core's
    barrier placement sees a write to shared memory in a call's `tvm_access_ptr(.., 2)`."""
    address = tir.address_of(tir.BufferLoad(buf, list(indices)))
    return tir.tvm_access_ptr(tir.type_annotation(dtype), address, 0, lanes, mask)


def launch_analyzer(func: tir.PrimFunc, ranges: dict | None = None):
    """An analyzer that knows the ranges of the kernel's block and thread indices (and of
    the variables in `ranges`, var -> extent), so that bounds of whole tiles are provable
    and their masks dropped."""
    from tvm import ir
    from tvm.sym import Analyzer

    from tilelang_core.transform import launch_info

    info = launch_info(func)
    ana = Analyzer()
    extents = {var: info.extents[tag] for tag, var in info.vars.items()}
    extents.update(ranges or {})
    for var, extent in extents.items():
        ana.bind(var, ir.Range.from_min_extent(tir.const(0, "int32"), extent))
    return ana




def async_copy_nest(plan: CopyPlan, swizzle=None, span=None, ana=None) -> tir.Stmt:
    """PARALLEL loops over the tile's vectors, one cp.async each (zero-filled out of bounds).
    `swizzle` (a `layout.Swizzle`) places the shared side; `ana` (an Analyzer that knows the
    enclosing ranges) drops masks it proves unnecessary."""
    src, dst, lanes = plan.src, plan.dst, plan.lanes
    s_dims, d_dims = squeeze_extents(src.extents), squeeze_extents(dst.extents)
    loop_vars = [tir.Var(n, "int32") for n in ("i", "j", "k", "l", "m", "n")[:len(plan.shape)]]
    offsets = list(loop_vars[:-1]) + [loop_vars[-1] * lanes]
    s_idx, d_idx = list(src.mins), list(dst.mins)
    for d, off in zip(s_dims, offsets):
        s_idx[d] = s_idx[d] + off
    for d, off in zip(d_dims, offsets):
        d_idx[d] = d_idx[d] + off
    if swizzle is not None:
        d_idx[-2], d_idx[-1] = swizzle.physical(d_idx[-2], d_idx[-1])
    if ana is not None:
        from tvm import ir

        ana = ana.clone() if hasattr(ana, "clone") else ana
        for var, extent in zip(loop_vars, plan.shape):
            ana.bind(var, ir.Range.from_min_extent(tir.const(0, "int32"), tir.const(extent, "int32")))
    valid = in_bounds(src.buffer, s_idx, ana)
    dst_ptr = _pointer(dst.buffer, d_idx, dst.dtype, lanes, WRITE)
    size = lanes * _bytes(src.dtype)
    name = "tl::cp_async_cg16" if size == VECTOR_BYTES else f"tl::cp_async_ca<{size}>"
    if valid is None:
        body = _extern(name, dst_ptr, _pointer(src.buffer, s_idx, src.dtype, lanes, READ))
    else:
        # out of bounds, nothing is read (src-size 0) but the address stays inside the tensor
        safe = [tir.if_then_else(valid, i, tir.const(0, dtype_of(i))) for i in s_idx]
        zfill = "tl::cp_async_cg16_zfill" if size == VECTOR_BYTES else f"tl::cp_async_ca_zfill<{size}>"
        body = _extern(zfill, dst_ptr, _pointer(src.buffer, safe, src.dtype, lanes, READ), valid)
    for var, extent in reversed(list(zip(loop_vars, plan.shape))):
        body = tir.For(var, tir.const(0, "int32"), tir.const(extent, "int32"), tir.ForKind.PARALLEL, body, span=span)
    return body


def commit() -> tir.Stmt:
    return _extern("tl::cp_async_commit")


def wait(groups_in_flight: int | None = None) -> tir.Stmt:
    """Wait until at most `groups_in_flight` committed groups are pending (None: all)."""
    if groups_in_flight is None:
        return _extern("tl::cp_async_wait_all")
    return _extern(f"tl::cp_async_wait<{int(groups_in_flight)}>")


def lower_async_copy(op: TileOp, swizzles: dict, ana=None, vector: int = VECTOR_BYTES) -> tir.Stmt | None:
    """A synchronous-looking cp.async copy: issue, commit, wait for it (None: not eligible).
    `ana` knows the launch ranges (see `launch_analyzer`); `vector`: bytes per cp.async.
    A `T.async_copy` (hint `async_copy`) is issued and committed only: the kernel waits for
    the group itself (`T.ptx_wait_group`); `publish_async_copies` moves the barrier after
    that wait."""
    from tilelang_core.transform import seq

    from .lower_pipeline import sync_placed

    plan = plan_copy(op, vector)
    if plan is None:
        return None
    swizzle = swizzles.get(plan.dst.buffer.__chandle__())
    if op.hints.get("async_copy"):
        from .lower_async_wait import mark_async_copy

        return mark_async_copy(sync_placed(seq([async_copy_nest(plan, swizzle, op.stmt.span, ana), commit()])))
    return sync_placed(seq([async_copy_nest(plan, swizzle, op.stmt.span, ana), commit(), wait()]))

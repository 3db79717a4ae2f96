"""Tile-op lowerings of the HIP backend (`tilelang_lower_tile_op`; None -> portable).

| tile op | HIP lowering | module |
|---|---|---|
| `T.gemm(A_shared or A_fragment, B_shared, C_fragment)` | 16x16xK MFMA; C in the accumulator layout, a fragment A in the A-operand layout (read from registers) | `lower_gemm.py` (layouts: `layout.py`) |
| `T.copy` global <-> LDS | 16-byte vectors when rows are whole vectors | here (`lower_copy`) |
| `T.reduce_*` outside registers | groups of lanes folding with `__shfl_xor` butterflies | here (`lower_reduce`) |

The gemm names are re-exported here for the callers that knew them in this module.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from tvm import tirx as tir

from tilelang_core.transform import reduce_init

from .layout import (GemmPlan, MFMAInstruction, a_element, a_fragment_element, a_operand_layout, accumulator_layout,
                     accumulator_slot, b_element, b_fragment_element, c_element, mfma_instruction, wave_grid,
                     wave_origin)
from .lower_gemm import infer_gemm_layout, lower_gemm, plan_gemm

__all__ = [
    "MFMAInstruction",
    "GemmPlan",
    "mfma_instruction",
    "a_element",
    "b_element",
    "c_element",
    "plan_gemm",
    "wave_grid",
    "wave_origin",
    "a_fragment_element",
    "b_fragment_element",
    "accumulator_slot",
    "accumulator_layout",
    "a_operand_layout",
    "infer_gemm_layout",
    "lower_gemm",
    "plan_copy",
    "lower_copy",
    "reduce_group",
    "lower_reduce",
    "LOWERINGS",
]


# -- T.copy between global memory and LDS in 16-byte vectors ----------------------------------


@dataclass(frozen=True)
class CopyPlan:
    """A copy of a tile between a global tensor and LDS as vectors of `lanes` elements along
    the tile's last (contiguous) dim; `shape` counts the tile's non-unit dims, the last in
    vectors."""

    src: object
    dst: object
    shape: tuple
    lanes: int


def _divisible(expr, factor: int) -> bool:
    from tilelang_core.transform import analyzer

    return bool(analyzer().can_prove(tir.floormod(expr, factor) == 0))


def plan_copy(op, target) -> CopyPlan | None:
    """The vector plan of a global <-> LDS `T.copy`, or None for the portable copy: both sides
    of one dtype, the tile's last dim the contiguous dim of both buffers in whole vectors,
    starting on a vector boundary, and rows of the global tensor whole vectors (so a vector
    is either inside the tensor or wholly past its edge). Tensor base addresses are assumed
    16-byte aligned (torch and hipMalloc give 256)."""
    from tilelang_core.transform import analyzer, squeeze_extents

    if op.name != "copy":
        return None
    src, dst = op.regions[:2]
    scopes = (src.buffer.scope(), dst.buffer.scope())
    if scopes not in (("global", "shared.dyn"), ("global", "shared"), ("shared.dyn", "global"), ("shared", "global")):
        return None
    dtype = str(src.buffer.dtype)
    if dtype != str(dst.buffer.dtype):
        return None
    import tvm

    size = tvm.runtime.DataType(dtype).bits // 8
    vector = target.capabilities.vector_bytes
    if size == 0 or vector % size:
        return None
    lanes = vector // size
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
    for region in (src, dst):
        ty = region.buffer.ty
        if list(ty.strides) or not _divisible(ty.shape[-1], lanes) or not _divisible(region.mins[-1], lanes):
            return None
    return CopyPlan(src, dst, tuple(int(e) for e in extents[:-1]) + (int(extents[-1]) // lanes,), lanes)


def lower_copy(op, ctx) -> tir.Stmt | None:
    """`T.copy` global <-> LDS as 16-byte vector loads and stores (`global_load_dwordx4`,
    `ds_write_b128`, ...), one vector per iteration of a `T.Parallel` nest, so consecutive
    threads move consecutive vectors. A vector past the tensor's edge reads zeros (loads) or
    is skipped (stores), as in the portable copy."""
    from tvm import ir
    from tvm.sym import Analyzer, ConstIntBound

    from tilelang_core.transform import loop_nest, squeeze_extents

    plan = plan_copy(op, ctx.target)
    if plan is None:
        return None
    src, dst, lanes = plan.src, plan.dst, plan.lanes
    loading = src.buffer.scope() == "global"
    tensor = src if loading else dst

    def indices(region, vs):
        out = list(region.mins)
        for d, v in zip(squeeze_extents(region.extents), vs):
            out[d] = out[d] + v
        return out

    def in_bounds(buf, idx, ana, loop_vars):
        # block indices and symbolic dims are never negative
        bound = {v.__chandle__() for v in loop_vars}
        for var in _free_vars(idx):
            if var.__chandle__() not in bound:
                ana.update(var, ConstIntBound(0, ConstIntBound.POS_INF), True)
        conds = [c for i, dim in zip(idx, buf.ty.shape) for c in (i < dim, i >= 0) if not ana.can_prove(c)]
        return None if not conds else functools.reduce(tir.And, conds)

    def body(loop_vars):
        ana = Analyzer()
        for v, extent in zip(loop_vars, plan.shape):
            ana.bind(v, ir.Range.from_min_extent(tir.const(0, "int32"), tir.const(extent, "int32")))
        offsets = list(loop_vars[:-1]) + [loop_vars[-1] * lanes]
        s_idx, d_idx = indices(src, offsets), indices(dst, offsets)
        vector = tir.BufferStore(dst.buffer, tir.BufferLoad(src.buffer, _vector(s_idx, lanes)),
                                 _vector(d_idx, lanes), span=op.stmt.span)
        cond = in_bounds(tensor.buffer, s_idx if loading else d_idx, ana, loop_vars)
        if cond is None:
            return vector
        if not loading:
            return tir.IfThenElse(cond, vector, None)
        zero = tir.Var("e", "int32")
        fill = tir.For(zero, tir.const(0, "int32"), tir.const(lanes, "int32"), tir.ForKind.SERIAL,
                       tir.BufferStore(dst.buffer, tir.const(0, str(dst.buffer.dtype)),
                                       d_idx[:-1] + [d_idx[-1] + zero]))
        return tir.IfThenElse(cond, vector, fill)

    return loop_nest(list(plan.shape), body, kind=tir.ForKind.PARALLEL, span=op.stmt.span)


def _free_vars(exprs) -> list:
    from tilelang_core.transform import walk

    found = {}
    for e in exprs:
        walk(e, lambda v: found.setdefault(v.__chandle__(), v), (tir.Var,))
    return list(found.values())


def _vector(idx, lanes: int):
    return list(idx[:-1]) + [tir.Ramp(idx[-1], tir.const(1, "int32"), lanes)]


# -- reductions with wavefront shuffles -------------------------------------------------------

_REDUCE_DTYPES = ("float32", "float64", "int32")


_GROUP_KINDS = ("max", "absmax", "min", "sum", "abssum")
"""The reduce kinds `_combine` folds."""


def _combine(kind: str, acc, value):
    if kind in ("max", "absmax"):
        return tir.max(acc, value)
    if kind == "min":
        return tir.min(acc, value)
    return acc + value




def reduce_group(rows: int, length: int, threads: int, wave: int) -> int:
    """Lanes that fold one output element together: the largest power of two that fits in a
    wave, in the reduced length and in the threads each output element can have (all
    outputs in one pass); 1 when that leaves nothing to gain over the portable loop."""
    group = 1
    while group * 2 <= min(wave, length) and rows * group * 2 <= threads:
        group *= 2
    return group


def lower_reduce(op, ctx) -> tir.Stmt | None:
    """`T.reduce_*` with a group of lanes per output element: each lane folds every
    `group`-th element of the reduced dim, then the group combines its partial results with
    `__shfl_xor` butterflies (a group never spans two wavefronts). For float32/float64/int32
    destinations and constant shapes; the source is read wherever it lives (a fragment read
    this way moves to LDS, as with the portable loop)."""
    from tilelang_core.transform import region_indices, squeeze_extents

    src, dst = op.regions[:2]
    if ctx.layouts.in_registers(src.buffer) or ctx.layouts.in_registers(dst.buffer):
        return None  # the core's register reduction follows the fragments' layouts
    kind, dim, clear = str(op.args[2].value), int(op.args[3]), bool(int(op.args[4]))
    if kind not in _GROUP_KINDS:
        return None  # bitwise and NaN-propagating kinds: the core's lowering knows their combine
    dtype = str(dst.buffer.dtype)
    src_shape = [src.extents[d] for d in squeeze_extents(src.extents)]
    if dtype not in _REDUCE_DTYPES or dim >= len(src_shape) \
            or not all(isinstance(e, tir.IntImm) for e in src_shape):
        return None
    kept = [int(e) for d, e in enumerate(src_shape) if d != dim]
    length = int(src_shape[dim])
    rows = 1
    for e in kept:
        rows *= e
    group = reduce_group(rows, length, ctx.threads, ctx.caps.warp_size)
    if group == 1:
        return None
    int32 = "int32"

    def body(thread):
        lane, row = thread % group, thread // group
        kept_idx, rest = [], row
        for e in reversed(kept):
            kept_idx.insert(0, rest % e)
            rest = rest // e
        acc = tir.decl_buffer((1,), dtype, name=f"{kind}_part", scope="local")
        part = tir.BufferLoad(acc, [0])
        step = tir.Var("step", int32)
        col = lane + step * group
        value = tir.BufferLoad(src.buffer, region_indices(src.mins, src.extents, kept_idx[:dim] + [col] + kept_idx[dim:]))
        if str(src.buffer.dtype) != dtype:
            value = tir.Cast(dtype, value)
        if kind in ("abssum", "absmax"):
            value = tir.abs(value)
        update = tir.BufferStore(acc, _combine(kind, part, value), [0])
        if length % group:
            update = tir.IfThenElse(col < length, update, None)
        fold = tir.For(step, tir.const(0, int32), tir.const((length + group - 1) // group, int32),
                       tir.ForKind.SERIAL, update)
        active = row < rows if rows * group < ctx.threads else None
        stmts = [tir.AllocBuffer(acc), tir.BufferStore(acc, reduce_init(kind, dtype), [0]),
                 fold if active is None else tir.IfThenElse(active, fold, None)]
        offset = group // 2
        while offset:  # every lane takes part, active or not: a shuffle reads the whole group
            other = tir.call_extern(dtype, "tl_shfl_xor", part, tir.const(offset, int32), tir.const(group, int32))
            stmts.append(tir.BufferStore(acc, _combine(kind, part, other), [0]))
            offset //= 2
        d_idx = region_indices(dst.mins, dst.extents, kept_idx)
        final = part if clear else _combine(kind, tir.BufferLoad(dst.buffer, d_idx), part)
        write = lane == 0 if active is None else tir.And(lane == 0, active)
        stmts.append(tir.IfThenElse(write, tir.BufferStore(dst.buffer, final, d_idx), None))
        return tir.SeqStmt(stmts)

    return ctx.per_thread(body, span=op.stmt.span)


# tile op -> its HIP lowering (each returns None to take the portable one)
LOWERINGS = {"gemm": lower_gemm, "copy": lower_copy, "reduce": lower_reduce}

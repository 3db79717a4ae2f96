"""The CPU backend's own tile-op lowerings:

- T.gemm on fp32 tiles calls a register-blocked micro-kernel (include/tl_cpu_gemm.h) instead
  of the core's plain loops (~3x faster);
- T.reduce_* over a tile's last (contiguous) dimension accumulates in a vector of lanes,
  folded by a tree at the end. The portable lowering's one serial accumulator is a loop-carried
  dependency the C compiler may not reorder without -ffast-math, so it runs one element per
  add latency; lanes vectorize (~10x on AVX-512). The order of a reduction is unspecified in
  the language (GPUs reduce by trees too)."""
from __future__ import annotations

from tvm import DataType
from tvm import tirx as tir

from tilelang_core.transform import reduce_combine, reduce_init

__all__ = ["lower_tile_op", "REDUCE_LANE_BYTES"]

# bytes of lane accumulators per reduction: two AVX-512 or four AVX2 registers, enough
# independent adds to cover the latency of one
REDUCE_LANE_BYTES = 128


def _matrix_operand(region):
    """(address of the region's first element, its row stride) for a row-major 2-D operand
    in block-local memory, or None when the micro-kernel cannot take it."""
    buf = region.buffer
    if buf.scope() == "global" or len(buf.shape) < 2 or str(buf.dtype) != "float32":
        return None
    row_stride = buf.shape[-1]
    if not isinstance(row_stride, tir.IntImm):
        return None
    if any(not (isinstance(e, tir.IntImm) and e.value == 1) for e in region.extents[:-2]):
        return None
    return tir.address_of(tir.BufferLoad(buf, list(region.mins))), row_stride


def lower_gemm(op, ctx):
    a, b, c = op.regions[:3]
    operands = [_matrix_operand(r) for r in (a, b, c)]
    if any(o is None for o in operands):
        return None
    trans_a, trans_b, _policy, clear = (op.int_arg(i) for i in range(3, 7))
    m, n, k = op.args[7:10]
    (pa, lda), (pb, ldb), (pc, ldc) = operands
    name = f"tl_cpu_gemm_f32_{'t' if trans_a else 'n'}{'t' if trans_b else 'n'}"
    call = tir.Evaluate(tir.call_extern("void", name, m, n, k, pa, lda, pb, ldb, pc, ldc))
    if not clear:
        return call
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    c_idx = list(c.mins[:-2]) + [c.mins[-2] + i, c.mins[-1] + j]
    zero = tir.For(i, 0, m, tir.ForKind.SERIAL,
                   tir.For(j, 0, n, tir.ForKind.VECTORIZED, tir.BufferStore(c.buffer, tir.const(0.0, "float32"), c_idx)))
    return tir.SeqStmt([zero, call])






def _seq(stmts):
    return stmts[0] if len(stmts) == 1 else tir.SeqStmt(stmts)


def _offset(base, var):
    return var if isinstance(base, tir.IntImm) and base.value == 0 else base + var


def lower_reduce(op, ctx):
    """Reduction over the source's last dimension with lane accumulators (see the module
    docstring); None (the portable lowering) for other dimensions and short rows."""
    src, dst = op.regions[:2]
    kind, dim, clear = op.str_arg(2), op.int_arg(3), bool(op.int_arg(4))
    ndim = len(src.extents)
    dtype = str(dst.buffer.dtype)
    bits = DataType(dtype).bits
    if not ctx.block_serial or dim != ndim - 1 or bits < 8 or len(dst.extents) not in (ndim, ndim - 1):
        return None
    lanes = REDUCE_LANE_BYTES * 8 // bits
    length = src.extents[dim]
    if isinstance(length, tir.IntImm) and length.value < 2 * lanes:
        return None
    itype = str(length.ty.dtype)
    kept = [tir.Var("ijklmn"[d % 6], itype) for d in range(ndim - 1)]
    acc = tir.decl_buffer((lanes,), dtype, name=f"{kind}_lanes", scope="local")
    lane, chunk = tir.Var("l", itype), tir.Var("c", itype)
    zero, n_lanes = tir.const(0, itype), tir.const(lanes, itype)

    def src_at(r):
        idx = [_offset(src.mins[d], kept[d]) for d in range(ndim - 1)] + [_offset(src.mins[dim], r)]
        value = tir.BufferLoad(src.buffer, idx)
        return value if str(src.buffer.dtype) == dtype else tir.Cast(dtype, value)

    def over_lanes(extent, value_of):
        """for l in [0, extent) (vectorized): lanes[l] = value_of(l)"""
        return tir.For(lane, zero, extent, tir.ForKind.VECTORIZED,
                       tir.BufferStore(acc, value_of(lane), [lane]))

    def fold(value_at):
        return lambda i: reduce_combine(kind, tir.BufferLoad(acc, [i]), value_at(i))

    if isinstance(length, tir.IntImm):
        done = tir.const(length.value // lanes * lanes, itype)
        chunks, tail = tir.const(length.value // lanes, itype), length.value % lanes
    else:
        chunks = tir.floordiv(length, n_lanes)
        done, tail = chunks * n_lanes, None
    body = [
        tir.AllocBuffer(acc),
        over_lanes(n_lanes, lambda i: reduce_init(kind, dtype)),
        tir.For(chunk, zero, chunks, tir.ForKind.SERIAL, over_lanes(n_lanes, fold(lambda i: src_at(chunk * n_lanes + i)))),
    ]
    if tail != 0:
        body.append(over_lanes(length - done if tail is None else tir.const(tail, itype), fold(lambda i: src_at(done + i))))
    half = lanes // 2
    while half > 1:  # a tree over the lanes, the result in lane 0
        body.append(over_lanes(tir.const(half, itype), fold(lambda i, h=half: tir.BufferLoad(acc, [i + h]))))
        half //= 2
    body.append(tir.BufferStore(acc, fold(lambda i: tir.BufferLoad(acc, [tir.const(1, itype)]))(zero), [zero]))
    if len(dst.extents) == ndim:  # keepdim form: the reduced dim has extent 1
        dst_idx = [_offset(dst.mins[d], kept[d]) for d in range(ndim - 1)] + [dst.mins[dim]]
    else:
        dst_idx = [_offset(dst.mins[d], kept[d]) for d in range(ndim - 1)]
    result = tir.BufferLoad(acc, [zero])
    if not clear:  # lane 0 already holds |x| terms: combine plainly
        result = reduce_combine({"abssum": "sum", "absmax": "max", "absmax_nan": "max_nan"}.get(kind, kind),
                                 tir.BufferLoad(dst.buffer, dst_idx), result)
    body.append(tir.BufferStore(dst.buffer, result, dst_idx))
    stmt = _seq(body)
    for d in reversed(range(ndim - 1)):
        stmt = tir.For(kept[d], zero, src.extents[d], tir.ForKind.SERIAL, stmt)
    return stmt


def lower_tile_op(op, ctx):
    if op.name == "gemm":
        return lower_gemm(op, ctx)
    if op.name == "reduce":
        return lower_reduce(op, ctx)
    return None

"""The CPU backend's own tile-op lowerings: T.gemm on fp32 tiles calls a register-blocked
micro-kernel (include/tl_cpu_gemm.h) instead of the core's plain loops (~3x faster)."""
from __future__ import annotations

from tvm import tirx as tir

__all__ = ["lower_tile_op"]


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


def lower_tile_op(op, ctx):
    if op.name == "gemm":
        return lower_gemm(op, ctx)
    return None

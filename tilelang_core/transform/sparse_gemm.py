"""expand_sparse_gemm: `T.gemm_sp` becomes a decompression of A followed by the ordinary `T.gemm`.

Before: `tl.gemm_sp(A_sparse, E, B, C, trans_A, trans_E, trans_B, policy, clear_accum, M, N, K)`
statements (format in `tilelang_core.language.sparse_gemm`).
After: each is

    A_dense = alloc (M, K) or (K, M) with trans_A, A_sparse's dtype and scope
    for i, j in T.Parallel(*A_dense.shape):
        A_dense[i, j] = the kept value of A_sparse whose metadata position is j's (i's) place
                        in its group, else 0
    tl.gemm(A_dense, B, C, trans_A, trans_B, policy, clear_accum, M, N, K)

with the source line of the `T.gemm_sp`. The dense tile lives where A_sparse lives (shared
memory or a fragment), so the GEMM keeps the operand form the user wrote (ss, rs, sr, rr) and
every target runs it with its own `T.gemm`; `hoist_allocations` then moves the allocation out
of loops. It runs first among the semantic passes (before `check`), so no later pass sees
`tl.gemm_sp`. A backend with a structured-sparse matrix instruction may replace this pass at
its point (`tilelang_pipeline`) and lower `tl.gemm_sp` itself.
"""
from __future__ import annotations

from tvm import DataType
from tvm import tirx as tir

from tilelang_core.ir.constants import ACCESS_READ, SCOPE_FRAGMENT, SCOPE_SHARED, SPARSE_GROUPS
from tilelang_core.ir.ops import make_call
from tilelang_core.ir.region import Region
from tilelang_core.ir.tileop import TileOp, is_tile_op

from .errors import TileLangCompileError
from .irutil import const, map_stmts, seq

__all__ = ["expand_sparse_gemm"]

_NIBBLE_BITS = 4  # one group's metadata: two 2-bit positions


def expand_sparse_gemm(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    def on_eval(stmt):
        if not is_tile_op(stmt, "gemm_sp"):
            return stmt
        return _expand(TileOp.from_stmt(stmt))

    return func.with_body(map_stmts(func.body, (tir.Evaluate,), on_eval))


def _matrix_index(region: Region, row, col) -> list:
    """Indices of element (row, col) of a region's last two dims; leading dims take their min."""
    mins = list(region.mins)
    return [*mins[:-2], mins[-2] + row, mins[-1] + col]


def _expand(op: TileOp) -> tir.Stmt:
    a, e, b, c = op.regions
    trans_a, trans_e, trans_b = (bool(op.int_arg(i)) for i in (4, 5, 6))
    policy, clear_accum = op.args[7], op.args[8]
    m, n, k = op.args[9], op.args[10], op.args[11]
    if a.scope not in (SCOPE_SHARED, SCOPE_FRAGMENT):
        raise TileLangCompileError(
            f"T.gemm_sp: A_sparse {a.buffer.name} is in scope {a.scope!r}; copy it to a shared tile "
            f"(T.alloc_shared) or a fragment (T.alloc_fragment) first", op.source)
    dense_shape = (k, m) if trans_a else (m, k)
    dense = tir.decl_buffer(dense_shape, a.dtype, name=f"{a.buffer.name}_dense", scope=a.scope)
    i, j = tir.Var("i", "int32"), tir.Var("j", "int32")
    row, kk = (j, i) if trans_a else (i, j)
    value = _dense_value(a, e, row, kk, trans_a, trans_e)
    store = tir.BufferStore(dense, value, [i, j])
    decode = tir.For(i, const(0), dense_shape[0], tir.ForKind.PARALLEL,
                     tir.For(j, const(0), dense_shape[1], tir.ForKind.PARALLEL, store), span=op.stmt.span)
    dense_region = Region.full(dense, ACCESS_READ)
    gemm = tir.Evaluate(make_call("gemm", dense_region.to_call(), b.to_call(), c.to_call(), trans_a, trans_b,
                                  policy, clear_accum, m, n, k), span=op.stmt.span)
    return seq([tir.AllocBuffer(dense, span=op.stmt.span), decode, gemm])


def _dense_value(a: Region, e: Region, row, kk, trans_a: bool, trans_e: bool) -> tir.PrimExpr:
    """Element (row, kk) of the dense A: group g = kk // group holds, at positions p0 (and p1)
    given by its metadata nibble, the kept values g * elem (+ 1) of A_sparse's row."""
    elem, group = SPARSE_GROUPS[a.dtype]
    nibbles = DataType(e.dtype).bits // _NIBBLE_BITS
    g = tir.floordiv(kk, group)
    place = tir.floormod(kk, group)
    e_col = tir.floordiv(g, nibbles)
    meta = tir.BufferLoad(e.buffer, _matrix_index(e, e_col, row) if trans_e else _matrix_index(e, row, e_col))
    shift = tir.floormod(g, nibbles) * _NIBBLE_BITS
    # (meta >> shift) & 0xF reads the nibble whatever the sign of the widened integer
    nibble = tir.bitwise_and(tir.shift_right(tir.Cast("int32", meta), shift), const(0xF))
    value = tir.const(0, a.dtype)
    for slot in reversed(range(elem)):
        position = tir.bitwise_and(tir.shift_right(nibble, const(2 * slot)), const(3))
        if group == 2:  # 32-bit types: positions count 16-bit halves (0b0100 keeps 0, 0b1110 keeps 1)
            position = tir.shift_right(position, const(1))
        col = g * elem + slot
        kept = tir.BufferLoad(a.buffer, _matrix_index(a, col, row) if trans_a else _matrix_index(a, row, col))
        value = tir.Select(position == place, kept, value)
    return value

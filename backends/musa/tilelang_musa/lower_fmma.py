"""`T.gemm(A_shared, B_shared, C_fragment)` on the fmma instructions of mp_22 ("Quyuan").

Facts this module is built on (Moore Threads' MUTLASS, mirror github.com/zhe-pang/mutlass at
6dd17cb6; none of its code is used here):
- one `__musa_fmma_m32n32k16_mma(d, a, b, c, 0, 0, 0, 0, 1, layout)` (f16; bf16:
  `__musa_bfmma_m32n32k16_mma`) is a collective of one 128-thread warp: D = A B + C for a
  32 x 32 x 16 tile, `layout` 0 for "TT", 1 for "TN" (`mute/arch/mma_mp22.hpp`); a, b point to
  two 32-bit registers (4 halves) each, c and d to eight (floats);
- fragment layouts (`mute/atom/mma_traits_mp22.hpp`, CuTe thread-value layouts over
  column-major tiles), for lane `l`:
  A (`MP22_32x16_Row`, 32 x 16): value v = v0 + 2 v1 of l = t0 + 4 t1 + 64 t2 is
  A[t1 + 16 v1][2 t0 + 8 t2 + v0];
  B of "TT" (`MP22_32x16_Col` over N x K): value v of l = t0 + 8 t1 is B[k = t1][n = 2 t0 + v0 + 16 v1];
  B of "TN" (`MP22_32x16_Row` over N x K): as A, with n for m;
  C (`MP22_32x32_32b`): value v = v0 + 2 v1 of l = l0 + 8 l1 + 32 l2 + 64 l3 is
  C[l1 + 4 l3 + 8 v1][l0 + 8 l2 + 16 v0].

Plan: the block's warps split C by the gemm's warp policy in 32 x 32 tiles; per k-step of 16
each thread gathers its A and B values from shared memory into registers and its warp issues
one fmma per (row tile, column tile). C is imposed the accumulator layout through
`tilelang_infer_layout`. A must not be transposed (A^T takes the portable gemm); B either way.
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx as tir

from tilelang_core.ir import TileOp
from tilelang_core.layout import Fragment
from tilelang_core.transform import seq

from .lower_copy import SHARED_SCOPES

__all__ = ["FMMAPlan", "plan_fmma", "accumulator_layout", "lower_fmma", "FMMA_CALLS"]

WARP = 128
TILE, K_STEP = 32, 16
LAYOUT_TT, LAYOUT_TN = 0, 1
FMMA_CALLS = {"float16": "tl_musa_fmma_m32n32k16", "bfloat16": "tl_musa_bfmma_m32n32k16"}


@dataclass(frozen=True)
class FMMAPlan:
    m: int
    n: int
    k: int
    dtype: str
    warps_m: int
    warps_n: int
    trans_b: bool
    threads: int

    @property
    def tiles_m(self) -> int:
        return self.m // self.warps_m // TILE

    @property
    def tiles_n(self) -> int:
        return self.n // self.warps_n // TILE

    @property
    def slots(self) -> int:
        return self.tiles_m * self.tiles_n * 8


def _shape(region) -> tuple | None:
    shape = region.buffer.ty.shape
    if len(shape) != 2 or not all(isinstance(d, tir.IntImm) for d in shape):
        return None
    if not all(isinstance(v, tir.IntImm) and int(v) == 0 for v in region.mins):
        return None
    if [int(e) for e in region.extents] != [int(d) for d in shape]:
        return None
    return tuple(int(d) for d in shape)


def _grid(m: int, n: int, warps: int, policy: int) -> tuple[int, int] | None:
    grids = [(wm, warps // wm) for wm in range(1, warps + 1) if warps % wm == 0
             and m % (wm * TILE) == 0 and n % ((warps // wm) * TILE) == 0]
    if not grids:
        return None
    if policy == 1:  # FullRow
        return max(grids)
    if policy == 2:  # FullCol
        return min(grids)
    return min(grids, key=lambda g: (abs(m // g[0] - n // g[1]), -g[0]))


def plan_fmma(op: TileOp, threads: int, caps) -> FMMAPlan | None:
    """The fmma plan of a `T.gemm`, or None for the portable gemm."""
    if op.name != "gemm" or not caps.has_matrix("fmma") or caps.warp_size != WARP:
        return None
    a, b, c = op.regions[:3]
    if a.scope not in SHARED_SCOPES or b.scope not in SHARED_SCOPES or c.scope != "local.fragment":
        return None
    if a.dtype != b.dtype or a.dtype not in FMMA_CALLS or c.dtype != "float32":
        return None
    if not any(mi.family == "fmma" and mi.supports(a.dtype, c.dtype) for mi in caps.matrix_instructions):
        return None
    shapes = [_shape(r) for r in (a, b, c)]
    if None in shapes or bool(int(op.args[3])) or threads % WARP:
        return None
    trans_b = bool(int(op.args[4]))
    (m, k), (n, k2) = shapes[0], (shapes[1] if trans_b else shapes[1][::-1])
    if k != k2 or shapes[2] != (m, n) or k % K_STEP:
        return None
    grid = _grid(m, n, threads // WARP, int(op.args[5]))
    if grid is None:
        return None
    return FMMAPlan(m, n, k, a.dtype, grid[0], grid[1], trans_b, threads)


def accumulator_layout(plan: FMMAPlan) -> Fragment:
    """C's registers: thread t (warp w = t // 128, lane l) holds in slot (tile * 8 + v) the
    element MP22_32x32_32b puts in value v of lane l, of its warp's tile."""
    rows, cols = plan.m // plan.warps_m, plan.n // plan.warps_n

    def element_of(thread, slot):
        warp, lane = thread // WARP, thread % WARP
        tile, v = slot // 8, slot % 8
        row = (warp // plan.warps_n) * rows + (tile // plan.tiles_n) * TILE \
            + (lane // 8) % 4 + 4 * (lane // 64) + 8 * (v // 2)
        col = (warp % plan.warps_n) * cols + (tile % plan.tiles_n) * TILE \
            + lane % 8 + 8 * ((lane // 32) % 2) + 16 * (v % 2)
        return [row, col]

    name = f"fmma.C.m32n32[{plan.warps_m}x{plan.warps_n} warps]"
    return Fragment((plan.m, plan.n), plan.threads, plan.slots, element_of, name)


def _row_operand(lane, v):
    """(row, k) of value v of `lane` in a 32 x 16 operand laid out as MP22_32x16_Row."""
    return lane // 4 % 16 + 16 * (v // 2), 2 * (lane % 4) + 8 * (lane // 64) + v % 2


def lower_fmma(op: TileOp, ctx) -> tir.Stmt | None:
    """The fmma lowering of `op`, or None (not eligible, or C did not get the layout)."""
    plan = plan_fmma(op, ctx.threads, ctx.caps)
    if plan is None:
        return None
    a, b, c = op.regions[:3]
    if ctx.layout_of(c.buffer) != accumulator_layout(plan):
        return None
    acc = ctx.register_buffer(c.buffer)
    tm, tn = plan.tiles_m, plan.tiles_n
    a_frag = tir.decl_buffer((tm * 4,), plan.dtype, name="A_frag", scope="local")
    b_frag = tir.decl_buffer((tn * 4,), plan.dtype, name="B_frag", scope="local")
    call = f"{FMMA_CALLS[plan.dtype]}<{LAYOUT_TN if plan.trans_b else LAYOUT_TT}>"
    rows, cols = plan.m // plan.warps_m, plan.n // plan.warps_n

    def unrolled(name, extent, body):
        var = tir.Var(name, "int32")
        return tir.For(var, tir.const(0, "int32"), tir.const(extent, "int32"), tir.ForKind.UNROLLED, body(var))

    def body(thread):
        warp, lane = thread // WARP, thread % WARP
        row0, col0 = (warp // plan.warps_n) * rows, (warp % plan.warps_n) * cols
        stmts = [tir.AllocBuffer(a_frag), tir.AllocBuffer(b_frag)]
        if bool(int(op.args[6])):
            stmts.append(unrolled("s", plan.slots, lambda s: tir.BufferStore(acc, tir.const(0.0, "float32"), [s])))

        def k_step(kk):
            k0 = kk * K_STEP

            def load_a(i, v):
                r, k = _row_operand(lane, v)
                return tir.BufferStore(a_frag, tir.BufferLoad(a.buffer, [row0 + i * TILE + r, k0 + k]), [i * 4 + v])

            def load_b(j, v):
                if plan.trans_b:  # B is (N, K): MP22_32x16_Row over N x K
                    n, k = _row_operand(lane, v)
                    index = [col0 + j * TILE + n, k0 + k]
                else:  # B is (K, N): MP22_32x16_Col over N x K
                    n, k = 2 * (lane % 8) + v % 2 + 16 * (v // 2), lane // 8
                    index = [k0 + k, col0 + j * TILE + n]
                return tir.BufferStore(b_frag, tir.BufferLoad(b.buffer, index), [j * 4 + v])

            def mma(i, j):
                return tir.Evaluate(tir.call_extern(
                    "void", call, tir.address_of(tir.BufferLoad(acc, [(i * tn + j) * 8])),
                    tir.address_of(tir.BufferLoad(a_frag, [i * 4])), tir.address_of(tir.BufferLoad(b_frag, [j * 4]))))

            return seq([unrolled("i", tm, lambda i: unrolled("v", 4, lambda v: load_a(i, v))),
                        unrolled("j", tn, lambda j: unrolled("v", 4, lambda v: load_b(j, v))),
                        unrolled("i", tm, lambda i: unrolled("j", tn, lambda j: mma(i, j)))])

        kind = tir.ForKind.SERIAL if plan.k // K_STEP > 4 else tir.ForKind.UNROLLED
        kk = tir.Var("kk", "int32")
        stmts.append(tir.For(kk, tir.const(0, "int32"), tir.const(plan.k // K_STEP, "int32"), kind, k_step(kk)))
        return seq(stmts)

    return ctx.per_thread(body, span=op.stmt.span)

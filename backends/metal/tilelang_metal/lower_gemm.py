"""`T.gemm` on simdgroup matrices (8x8x8), the Metal backend's lowering and layout rule.

`T.gemm(A, B, C)` runs on `simdgroup_multiply_accumulate` (`include/tl_metal_simdgroup.h`,
`layout.py`) for the dtype pairs the target declares (half -> float, half -> half,
float -> float, and bfloat -> float on M2 and later) when
- C is a whole (M, N) fragment and M, N, K are multiples of 8 over whole SIMD-groups;
- A and B are anywhere the lane can read (threadgroup memory, global memory, either
  orientation), or A is a whole (M, K) fragment, not transposed, read from registers (the
  "rs" form, FlashAttention's P @ V).
The block's SIMD-groups (32 threads each) split C's 8x8 tiles in a `groups_m x groups_n` grid
(by the gemm's policy); each keeps its tiles' accumulators in registers for the whole kernel,
two per lane per tile. The accumulator layout is imposed on C, and the A-operand layout on a
fragment A, through `tilelang_infer_layout`, so `T.clear`, `T.Parallel` epilogues, reductions,
casts and the final `T.copy` run in the same layouts.

Per k-step each lane reads its two elements of every A and B tile it needs (the layout MLX's
steel GEMM also reads threadgroup memory in), and each (row tile, column tile) pair is one
8x8x8 multiply-accumulate. When a gemm whose A comes from another gemm's accumulator of a
different SIMD-group grid cannot take A from registers, A goes through threadgroup memory
(the core decides; `_feeds_from_another_layout`) and both gemms still run on simdgroup
matrices. Anything else (shapes off the 8-grid, undeclared dtype pairs) is portable.
"""
from __future__ import annotations

from tvm import tirx as tir

from .layout import (ACCUMULATOR_NAME, TILE, GemmPlan, a_operand_layout, a_register_slot, accumulator_layout,
                     accumulator_slot, lane_col, lane_row, simdgroup_grid, simdgroup_origin)

__all__ = ["plan_gemm", "infer_gemm_layout", "lower_gemm"]

FRAGMENT = "local.fragment"
LANES = 32
_MAX_ROLLED_K_STEPS = 8  # longer k loops stay loops (operands not in registers)


def _const(expr) -> int | None:
    return int(expr.value) if isinstance(expr, tir.IntImm) else None


def _whole_fragment(region, shape: list[int]) -> bool:
    return region.scope == FRAGMENT and region.covers_constant_buffer() and \
        [_const(d) for d in region.buffer.shape] == shape


def plan_gemm(op, target, threads: int, a_registers: bool | None = None) -> GemmPlan | None:
    """The simdgroup plan of a `T.gemm` on `target` with `threads` threads per block, or None
    for the portable lowering (see the module docstring). `a_registers`: read a fragment A
    from registers (True), from its shared copy (False), or whichever the rs form allows (None)."""
    caps = target.capabilities
    instr = caps.matrix("simdgroup")
    if op.name != "gemm" or instr is None:
        return None
    a, b, c = op.regions[:3]
    trans_a = bool(int(op.args[3]))
    if c.scope != FRAGMENT or a.dtype != b.dtype or not instr.supports(a.dtype, c.dtype):
        return None
    if b.scope == FRAGMENT:
        return None  # B is read by every SIMD-group along M: a fragment B goes to shared memory
    m, n, k = (_const(x) for x in op.args[7:10])
    if None in (m, n, k) or threads % LANES or m % TILE or n % TILE or k % TILE:
        return None
    if not _whole_fragment(c, [m, n]):
        return None
    rs_form = a.scope == FRAGMENT and not trans_a and _whole_fragment(a, [m, k])
    if a_registers is None:
        a_registers = rs_form
    elif a_registers and not rs_form:
        return None
    grid = simdgroup_grid(m // TILE, n // TILE, threads // LANES, int(op.args[5]))
    if grid is None:
        return None
    return GemmPlan(a.dtype, c.dtype, m, n, k, grid[0], grid[1], a_registers)


def _feeds_from_another_layout(a, operand, layouts) -> bool:
    """Whether an earlier simdgroup accumulator of A's shape holds another layout than the
    operand layout A would get (A is then most likely cast from it; left to the core, A goes
    to threadgroup memory rather than moving the accumulator)."""
    shape = tuple(int(d) for d in a.buffer.shape)
    for decision in layouts.decisions():
        held = decision.layout
        if decision.pinned and held is not None and held.name.startswith(ACCUMULATOR_NAME) \
                and held.shape == shape and held != operand:
            return True
    return False


def infer_gemm_layout(op, ctx) -> dict | None:
    """`tilelang_infer_layout` for T.gemm: {C: accumulator layout} and, for the rs form,
    {A: A-operand layout}; None when the gemm is portable."""
    plan = plan_gemm(op, ctx.target, ctx.threads)
    if plan is None:
        return None
    layouts = {op.regions[2].buffer: accumulator_layout(plan)}
    if plan.a_registers:
        operand = a_operand_layout(plan)
        if not _feeds_from_another_layout(op.regions[0], operand, ctx.layouts):
            layouts[op.regions[0].buffer] = operand
    return layouts


# -- lowering -----------------------------------------------------------------------------------


def _operand(region, trans: bool, row, col):
    """Indices into `region` of logical element (row, col) of the (possibly transposed) operand."""
    r, c = (col, row) if trans else (row, col)
    mins = list(region.mins)
    return mins[:-2] + [mins[-2] + r, mins[-1] + c]


def _loop(var_name: str, extent: int, body_fn, kind=tir.ForKind.UNROLLED) -> tir.Stmt:
    var = tir.Var(var_name, "int32")
    return tir.For(var, tir.const(0, "int32"), tir.const(extent, "int32"), kind, body_fn(var))


def lower_gemm(op, ctx) -> tir.Stmt | None:
    """The simdgroup lowering of a `T.gemm`, or None for the portable one (also when C, or a
    fragment A, did not get the layout `infer_gemm_layout` asked for).

    Per thread (SIMD-group g, lane l) and k-step kk: the lane reads its two elements of each of
    its group's A row tiles (unless A is in registers) and B column tiles into `A_frag` /
    `B_frag`, then calls `tl_simdgroup_mma(&C[slot], &A_frag[2 i], &B_frag[2 j])` for every
    tile pair: one `simdgroup_multiply_accumulate` of the whole SIMD-group each."""
    a, b, c = op.regions[:3]
    in_registers = a.scope == FRAGMENT and ctx.layouts.in_registers(a.buffer)
    plan = plan_gemm(op, ctx.target, ctx.threads, in_registers)
    if plan is None:
        return None
    if ctx.layout_of(c.buffer) != accumulator_layout(plan):
        return None
    if plan.a_registers and ctx.layout_of(a.buffer) != a_operand_layout(plan):
        return None
    trans_a, trans_b, clear = bool(int(op.args[3])), bool(int(op.args[4])), bool(int(op.args[6]))
    acc = ctx.register_buffer(c.buffer)
    a_reg = ctx.register_buffer(a.buffer) if plan.a_registers else None
    tm, tn = plan.tiles_m, plan.tiles_n
    a_frag = tir.decl_buffer((tm * 2,), plan.in_dtype, name="A_frag", scope="local")
    b_frag = tir.decl_buffer((tn * 2,), plan.in_dtype, name="B_frag", scope="local")

    def body(thread):
        group, lane = thread // LANES, thread % LANES
        row0, col0 = simdgroup_origin(plan, group)
        stmts = [tir.AllocBuffer(b_frag)] + ([] if plan.a_registers else [tir.AllocBuffer(a_frag)])
        if clear:
            stmts.append(_loop("s", tm * tn * 2, lambda s: tir.BufferStore(acc, tir.const(0, plan.acc_dtype), [s])))

        def load(frag, region, trans, tiles, at):
            def one(tile, i):
                row, col = at(tile, i)
                return tir.BufferStore(frag, tir.BufferLoad(region.buffer, _operand(region, trans, row, col)),
                                       [tile * 2 + i])
            return _loop("t", tiles, lambda tile: _loop("e", 2, lambda i: one(tile, i)))

        def a_address(i, kk):
            if plan.a_registers:
                return tir.address_of(tir.BufferLoad(a_reg, [a_register_slot(plan, i, kk)]))
            return tir.address_of(tir.BufferLoad(a_frag, [i * 2]))

        def mma(i, j, kk):
            dst = tir.address_of(tir.BufferLoad(acc, [accumulator_slot(plan, i, j, 0)]))
            b_address = tir.address_of(tir.BufferLoad(b_frag, [j * 2]))
            return tir.Evaluate(tir.call_extern("void", "tl_simdgroup_mma", dst, a_address(i, kk), b_address))

        def k_step(kk):
            k0 = kk * TILE
            loads = [load(b_frag, b, trans_b, tn,
                          lambda tile, i: (k0 + lane_row(lane), col0 + tile * TILE + lane_col(lane, i)))]
            if not plan.a_registers:
                loads.insert(0, load(a_frag, a, trans_a, tm,
                                     lambda tile, i: (row0 + tile * TILE + lane_row(lane), k0 + lane_col(lane, i))))
            return tir.SeqStmt(loads + [_loop("mi", tm, lambda i: _loop("nj", tn, lambda j: mma(i, j, kk)))])

        # a register operand is addressed by k-step: its loop is unrolled so the slots are constants
        rolled = plan.k_steps > _MAX_ROLLED_K_STEPS and not plan.a_registers
        stmts.append(_loop("kk", plan.k_steps, k_step, tir.ForKind.SERIAL if rolled else tir.ForKind.UNROLLED))
        return tir.SeqStmt(stmts)

    return ctx.per_thread(body, span=op.stmt.span)

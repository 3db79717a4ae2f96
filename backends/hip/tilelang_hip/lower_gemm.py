"""`T.gemm` on MFMA (matrix fused multiply-add), the HIP backend's lowering and layout rule.

`T.gemm(A, B, C)` with float16/bfloat16/float8 operands and a float32 accumulator, or int8
operands and an int32 accumulator, runs on the 16x16 MFMA instructions of CDNA2/CDNA3
(`tl_hip_mfma.h`, `layout.py`) when
- B is in LDS (shared memory), either orientation;
- A is in LDS, either orientation, or a fragment: read from registers when it is a whole
  (M, K) fragment, not transposed (the "rs" form, FlashAttention's P @ V), else from the LDS
  copy layout inference gives it;
- C is a whole (M, N) fragment, and M, N, K are whole 16x16xK instruction tiles over a whole
  number of wavefronts.
The block's wavefronts (64 lanes each) split C's 16x16 tiles in a `waves_m x waves_n` grid
(`layout.wave_grid`, by the gemm's policy); each wave keeps its tiles' accumulators in
registers for the whole kernel. The accumulator layout is imposed on C, and the A-operand
layout on a fragment A, through `tilelang_infer_layout` (`infer_gemm_layout`), so `T.clear`,
`T.Parallel` epilogues, casts and the final `T.copy` run in the same layouts.

The MFMAs run with swapped operands, so that a gemm's accumulator has the ownership of the
next gemm's register A operand (`layout.py`): when both gemms stack their waves the same way
along M (FlashAttention's `FullRow`), the cast between them is register to register. When they
do not (the first gemm splits N over waves), a register A operand cannot be had without moving
data between lanes; the A layout is then not imposed (`_feeds_from_another_layout`), A goes
through LDS and both gemms still run on MFMA.

Anything else (global operands, float32 or mixed dtypes, tiles that are not whole instruction
tiles, layouts inference could not give) is portable.
"""
from __future__ import annotations

from tvm import tirx as tir

from .layout import (ACCUMULATOR_NAME, TILE, GemmPlan, a_fragment_element, a_operand_layout, a_register_slot,
                     accumulator_layout, accumulator_slot, b_fragment_element, mfma_instruction, wave_grid)

__all__ = ["SHARED", "plan_gemm", "infer_gemm_layout", "lower_gemm"]

SHARED = ("shared", "shared.dyn")
FRAGMENT = "local.fragment"
_MAX_ROLLED_K_STEPS = 8  # longer k loops stay loops (LDS operands only)


def _const(expr) -> int | None:
    return int(expr.value) if isinstance(expr, tir.IntImm) else None


def _whole_fragment(region, shape: list[int]) -> bool:
    """`region` is the whole fragment, and the fragment has this constant shape."""
    return region.scope == FRAGMENT and region.covers_constant_buffer() and \
        [_const(d) for d in region.buffer.shape] == shape


def plan_gemm(op, target, threads: int, a_registers: bool | None = None) -> GemmPlan | None:
    """The MFMA plan of a `T.gemm` tile op on `target` with `threads` threads per block, or
    None when it needs the portable lowering (see the module docstring).

    A fragment A is read from registers (`a_registers`) or from its shared-memory copy (when
    layout inference moved it there); None: from registers when the rs form allows it (a whole
    (M, K) fragment, not transposed)."""
    caps = target.capabilities
    if op.name != "gemm" or caps.execution_model != "simt" or not caps.has_matrix("mfma"):
        return None
    a, b, c = op.regions[:3]
    trans_a = bool(int(op.args[3]))
    if b.scope not in SHARED or c.scope != FRAGMENT or a.dtype != b.dtype:
        return None
    if a.scope not in SHARED and a.scope != FRAGMENT:
        return None
    instr = mfma_instruction(target.arch, a.dtype, c.dtype)
    m, n, k = (_const(x) for x in op.args[7:10])
    wave = caps.warp_size
    if instr is None or None in (m, n, k) or threads % wave:
        return None
    if m % TILE or n % TILE or k % instr.k:
        return None
    if not _whole_fragment(c, [m, n]):
        return None  # C's layout must cover the fragment
    rs_form = a.scope == FRAGMENT and not trans_a and _whole_fragment(a, [m, k])
    if a_registers is None:
        a_registers = rs_form
    elif a_registers and not rs_form:
        return None
    grid = wave_grid(m // TILE, n // TILE, threads // wave, int(op.args[5]))
    if grid is None:
        return None
    return GemmPlan(instr, m, n, k, grid[0], grid[1], wave, a_registers)


def _feeds_from_another_layout(a, operand, layouts) -> bool:
    """Whether an earlier MFMA accumulator of A's shape holds another layout than the operand
    layout A would get. Such an accumulator is most likely what A is cast from (FlashAttention's
    acc_s -> acc_s_cast); pinning A to the operand layout would make that cast non-local, and
    the core would then move the accumulator, not A, to shared memory. Left to the core, A goes
    to shared memory instead and this gemm reads it from there (one LDS round trip, both gemms
    on MFMA)."""
    shape = tuple(int(d) for d in a.buffer.shape)
    for decision in layouts.decisions():
        held = decision.layout
        if decision.pinned and held is not None and held.name.startswith(ACCUMULATOR_NAME) \
                and held.shape == shape and held != operand:
            return True
    return False


def infer_gemm_layout(op, ctx) -> dict | None:
    """`tilelang_infer_layout` for T.gemm: {C: its accumulator layout} and, when A is a
    fragment read from registers, {A: its A-operand layout}, when the gemm runs on MFMA; else
    None. A fragment A given no layout here is moved to shared memory by the core."""
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
    """The MFMA lowering of a `T.gemm` tile op, or None for the portable one (also when C, or
    a fragment A, did not get the layout `infer_gemm_layout` asked for).

    Per thread (wave w, lane l) and k-step: the lane loads its B fragments of the wave's
    column tiles and, from LDS, its A fragments of the wave's row tiles, then issues one MFMA
    per (row tile, column tile) with the operands swapped (B fragment first): the accumulator
    registers receive C in `accumulator_layout`. A register A operand is passed to the MFMA
    straight from its register array, `a_register_slot` by slot."""
    a, b, c = op.regions[:3]
    in_registers = a.scope == FRAGMENT and ctx.layouts.in_registers(a.buffer)
    plan = plan_gemm(op, ctx.target, ctx.threads, in_registers)
    if plan is None:
        return None
    if ctx.layout_of(c.buffer) != accumulator_layout(plan):
        return None  # C's registers hold another layout: the portable lowering follows it
    if plan.a_registers and ctx.layout_of(a.buffer) != a_operand_layout(plan):
        return None  # A lives in LDS or in other registers
    trans_a, trans_b, clear = bool(int(op.args[3])), bool(int(op.args[4])), bool(int(op.args[6]))
    acc = ctx.register_buffer(c.buffer)
    a_reg = ctx.register_buffer(a.buffer) if plan.a_registers else None
    instr, tm, tn, e = plan.instr, plan.tiles_m, plan.tiles_n, plan.instr.elems
    a_frag = tir.decl_buffer((tm * e,), instr.in_dtype, name="A_frag", scope="local")
    b_frag = tir.decl_buffer((tn * e,), instr.in_dtype, name="B_frag", scope="local")

    def body(thread):
        wave, lane = thread // plan.wave_size, thread % plan.wave_size
        stmts = [tir.AllocBuffer(b_frag)] + ([] if plan.a_registers else [tir.AllocBuffer(a_frag)])
        if clear:
            stmts.append(_loop("s", tm * tn * 4, lambda s: tir.BufferStore(acc, tir.const(0, instr.acc_dtype), [s])))

        def load(frag, region, trans, element, tiles, k0):
            def one(tile, i):
                row, col = element(plan, wave, lane, tile, i, k0)
                return tir.BufferStore(frag, tir.BufferLoad(region.buffer, _operand(region, trans, row, col)),
                                       [tile * e + i])
            return _loop("t", tiles, lambda tile: _loop("e", e, lambda i: one(tile, i)))

        def a_address(i, kk):
            if plan.a_registers:
                return tir.address_of(tir.BufferLoad(a_reg, [a_register_slot(plan, i, kk)]))
            return tir.address_of(tir.BufferLoad(a_frag, [i * e]))

        def mfma(i, j, kk):
            dst = tir.address_of(tir.BufferLoad(acc, [accumulator_slot(plan, i, j, 0)]))
            b_address = tir.address_of(tir.BufferLoad(b_frag, [j * e]))
            # swapped operands: the instruction computes C^T = B^T A^T (layout.py)
            return tir.Evaluate(tir.call_extern("void", instr.wrapper, dst, b_address, a_address(i, kk), dst))

        def k_step(kk):
            k0 = kk * instr.k
            loads = [load(b_frag, b, trans_b, b_fragment_element, tn, k0)]
            if not plan.a_registers:
                loads.insert(0, load(a_frag, a, trans_a, a_fragment_element, tm, k0))
            return tir.SeqStmt(loads + [_loop("mi", tm, lambda i: _loop("nj", tn, lambda j: mfma(i, j, kk)))])

        # a register operand is addressed by k-step: its loop is unrolled so the slots are constants
        rolled = plan.k_steps > _MAX_ROLLED_K_STEPS and not plan.a_registers
        stmts.append(_loop("kk", plan.k_steps, k_step, tir.ForKind.SERIAL if rolled else tir.ForKind.UNROLLED))
        return tir.SeqStmt(stmts)

    return ctx.per_thread(body, span=op.stmt.span)

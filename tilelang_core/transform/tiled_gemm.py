"""Planning, layout inference and lowering of a `T.gemm` on tiled matrix instructions.

The shared part of the `tilelang_infer_layout` and `tilelang_lower_tile_op` implementations
of targets whose matrix instructions tile C in squares, one instruction per group of lanes
(Metal's simdgroup matrices, AMD's MFMA): the layouts and index functions come from the
target's `tilelang_core.layout.TiledGemmPlan` subclass, the instruction call from a callback.
What is shared:
- `plan_tiled_gemm`: M, N, K constant and whole instruction tiles over a whole number of lane
  groups, C a whole fragment, the "rs" form (A a whole (M, K) fragment, not transposed, read
  from registers), and the split of C's tiles over the groups (`split_tiles`);
- `infer_tiled_gemm_layout`: C gets the accumulator layout and a register A the A-operand
  layout, unless an earlier accumulator of A's shape holds another layout (then A goes to
  shared memory: see `feeds_from_another_layout`);
- `lower_tiled_gemm`: per thread and k-step, load the lane's A and B operand elements into
  local arrays (A straight from its registers in the rs form), then one instruction per
  (row tile, column tile) of the group.
The target checks what its instruction takes (scopes, dtypes, arch) before calling
`plan_tiled_gemm`, and returns None (the portable lowering) for anything else.
"""
from __future__ import annotations

from typing import Any, Callable

from tvm import tirx as tir

from ..ir.constants import SCOPE_FRAGMENT
from ..layout.tiled_gemm import split_tiles

__all__ = ["plan_tiled_gemm", "infer_tiled_gemm_layout", "feeds_from_another_layout", "lower_tiled_gemm"]

MAX_ROLLED_K_STEPS = 8  # longer k loops stay loops (operands not in registers)


def _const(expr) -> int | None:
    return int(expr.value) if isinstance(expr, tir.IntImm) else None


def _whole_fragment(region, shape: list[int]) -> bool:
    """`region` is the whole fragment, and the fragment has this constant shape."""
    return region.scope == SCOPE_FRAGMENT and region.covers_constant_buffer() and \
        [_const(d) for d in region.buffer.shape] == shape


def plan_tiled_gemm(op, threads: int, *, lanes: int, tile: int, k_tile: int, a_registers: bool | None,
                    make: Callable[..., Any]) -> Any:
    """The plan of a `T.gemm` tile op on `tile x tile x k_tile` instructions of `lanes`-lane
    groups, with `threads` threads per block: `make(m, n, k, groups_m, groups_n, a_registers)`
    (the target's `TiledGemmPlan`), or None when the shape does not fit (see the module
    docstring). `a_registers`: read a fragment A from registers (True), from its shared copy
    (False), or whichever the rs form allows (None); True where the rs form does not apply
    gives None."""
    a, c = op.regions[0], op.regions[2]
    m, n, k = (_const(x) for x in op.args[7:10])
    if None in (m, n, k) or threads % lanes or m % tile or n % tile or k % k_tile:
        return None
    if not _whole_fragment(c, [m, n]):
        return None  # C's layout must cover the fragment
    rs_form = a.scope == SCOPE_FRAGMENT and not bool(int(op.args[3])) and _whole_fragment(a, [m, k])
    if a_registers is None:
        a_registers = rs_form
    elif a_registers and not rs_form:
        return None
    grid = split_tiles(m // tile, n // tile, threads // lanes, int(op.args[5]))
    if grid is None:
        return None
    return make(m, n, k, grid[0], grid[1], a_registers)


def feeds_from_another_layout(a, operand, layouts, accumulator_name: str) -> bool:
    """Whether an earlier accumulator (a pinned layout whose name starts with
    `accumulator_name`) of A's shape holds another layout than `operand`, the layout a
    register A would get. Such an accumulator is most likely what A is cast from
    (FlashAttention's acc_s -> acc_s_cast); pinning A to `operand` would make that cast
    non-local, and the core would then move the accumulator, not A, to shared memory. Left to
    the core, A goes to shared memory instead and the gemm reads it from there."""
    shape = tuple(int(d) for d in a.buffer.shape)
    for decision in layouts.decisions():
        held = decision.layout
        if decision.pinned and held is not None and held.name.startswith(accumulator_name) \
                and held.shape == shape and held != operand:
            return True
    return False


def infer_tiled_gemm_layout(op, ctx, plan) -> dict | None:
    """`tilelang_infer_layout` of a `T.gemm` with this plan (None: the gemm is portable, and so
    is the answer): {C: `plan.accumulator_layout()`} and, when A is read from registers,
    {A: `plan.a_operand_layout()`} (unless `feeds_from_another_layout`). A fragment A given no
    layout here is moved to shared memory by the core."""
    if plan is None:
        return None
    layouts = {op.regions[2].buffer: plan.accumulator_layout()}
    if plan.a_registers:
        operand = plan.a_operand_layout()
        if not feeds_from_another_layout(op.regions[0], operand, ctx.layouts, plan.accumulator_name):
            layouts[op.regions[0].buffer] = operand
    return layouts


def _operand(region, trans: bool, row, col):
    """Indices into `region` of logical element (row, col) of the (possibly transposed) operand."""
    r, c = (col, row) if trans else (row, col)
    mins = list(region.mins)
    return mins[:-2] + [mins[-2] + r, mins[-1] + c]


def _loop(var_name: str, extent: int, body_fn, kind=tir.ForKind.UNROLLED) -> tir.Stmt:
    var = tir.Var(var_name, "int32")
    return tir.For(var, tir.const(0, "int32"), tir.const(extent, "int32"), kind, body_fn(var))


def lower_tiled_gemm(op, ctx, plan_gemm: Callable[..., Any], mma: Callable[..., tir.PrimExpr]) -> tir.Stmt | None:
    """The lowering of a `T.gemm` tile op on tiled matrix instructions, or None for the
    portable one (also when C, or a fragment A, did not get the layout
    `infer_tiled_gemm_layout` asked for).

    `plan_gemm(op, target, threads, a_registers)` is the target's planner (its answer for the
    layouts inference decided: A from registers when A is a fragment kept in registers).
    `mma(plan, dst, a, b)` is the instruction call: addresses of the lane's accumulator
    elements of one tile, of its A elements and of its B elements (`operand_elems`
    consecutive each).

    Per thread (lane group g, lane l) and k-step kk: the lane reads its elements of each of
    the group's A row tiles (unless A is in registers) and B column tiles into `A_frag` /
    `B_frag`, then runs `mma` for every (row tile, column tile) pair."""
    a, b, c = op.regions[:3]
    in_registers = a.scope == SCOPE_FRAGMENT and ctx.layouts.in_registers(a.buffer)
    plan = plan_gemm(op, ctx.target, ctx.threads, in_registers)
    if plan is None:
        return None
    if ctx.layout_of(c.buffer) != plan.accumulator_layout():
        return None  # C's registers hold another layout: the portable lowering follows it
    if plan.a_registers and ctx.layout_of(a.buffer) != plan.a_operand_layout():
        return None  # A lives in shared memory or in other registers
    trans_a, trans_b, clear = bool(int(op.args[3])), bool(int(op.args[4])), bool(int(op.args[6]))
    acc = ctx.register_buffer(c.buffer)
    a_reg = ctx.register_buffer(a.buffer) if plan.a_registers else None
    tm, tn, e = plan.tiles_m, plan.tiles_n, plan.operand_elems
    a_frag = tir.decl_buffer((tm * e,), plan.in_dtype, name="A_frag", scope="local")
    b_frag = tir.decl_buffer((tn * e,), plan.in_dtype, name="B_frag", scope="local")

    def body(thread):
        group, lane = thread // plan.lanes, thread % plan.lanes
        stmts = [tir.AllocBuffer(b_frag)] + ([] if plan.a_registers else [tir.AllocBuffer(a_frag)])
        if clear:
            stmts.append(_loop("s", tm * tn * plan.acc_elems,
                               lambda s: tir.BufferStore(acc, tir.const(0, plan.acc_dtype), [s])))

        def load(frag, region, trans, element, tiles, k0):
            def one(tile, i):
                row, col = element(group, lane, tile, i, k0)
                return tir.BufferStore(frag, tir.BufferLoad(region.buffer, _operand(region, trans, row, col)),
                                       [tile * e + i])
            return _loop("t", tiles, lambda tile: _loop("e", e, lambda i: one(tile, i)))

        def a_address(i, kk):
            if plan.a_registers:
                return tir.address_of(tir.BufferLoad(a_reg, [plan.a_register_slot(i, kk)]))
            return tir.address_of(tir.BufferLoad(a_frag, [i * e]))

        def instruction(i, j, kk):
            dst = tir.address_of(tir.BufferLoad(acc, [plan.accumulator_slot(i, j, 0)]))
            b_address = tir.address_of(tir.BufferLoad(b_frag, [j * e]))
            return tir.Evaluate(mma(plan, dst, a_address(i, kk), b_address))

        def k_step(kk):
            k0 = kk * plan.k_tile
            loads = [load(b_frag, b, trans_b, plan.b_fragment_element, tn, k0)]
            if not plan.a_registers:
                loads.insert(0, load(a_frag, a, trans_a, plan.a_fragment_element, tm, k0))
            return tir.SeqStmt(loads + [_loop("mi", tm, lambda i: _loop("nj", tn, lambda j: instruction(i, j, kk)))])

        # a register operand is addressed by k-step: its loop is unrolled so the slots are constants
        rolled = plan.k_steps > MAX_ROLLED_K_STEPS and not plan.a_registers
        stmts.append(_loop("kk", plan.k_steps, k_step, tir.ForKind.SERIAL if rolled else tir.ForKind.UNROLLED))
        return tir.SeqStmt(stmts)

    return ctx.per_thread(body, span=op.stmt.span)

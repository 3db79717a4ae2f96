"""`T.gemm(A_shared, B_shared, C_fragment)` on the TCE of mp_31: SQMMA, issued per warp squad.

Facts this module is built on (Moore Threads' MUTLASS, mirror github.com/zhe-pang/mutlass at
6dd17cb6; none of its code is used here):
- an SQMMA is issued by a warp squad, 128 threads (`ThrID = Layout<_128>`), with both
  operands in shared memory through 32-bit descriptors and the accumulator in registers
  (`mute/arch/mma_mp31_sqmma.hpp`: `__musa_sqmma_m<M>n<N>_mma(d, &desc_a, &desc_b, d, tnspA,
  1 - tnspB, scaleA, scaleB, scaleD, sat, k, mma_type)`; F16F16 = 2, BF16BF16 = 3
  (`mma_mp31.hpp`), Major::K = 0, MN = 1 (`tce_desc.hpp`); f16/bf16 instructions take k of
  16, 32 or 64);
- the descriptor (`mma_mp31_desc.hpp`): bits 0..17 the operand's shared-memory byte address,
  bits 18..20 the leading stride (the byte distance between consecutive MN rows of a K-major
  operand, or between consecutive K rows of an MN-major one; 8 B -> 1, ..., 256 B -> 6), bits
  21..22 the swizzle granularity (0: none, which is what we use);
- the accumulator (`mma_traits_mp31_sqmma.hpp`, `CLayout<M, N>`): lane `l = l0 + 8 l1 + 32 l2`
  of the squad holds in value `v = v0 + 2 v1 + 2 (N/16) v2` element
  `(row, col) = (l1 + 4 l2 + 16 v2, l0 + 8 v0 + 16 v1)` of the M x N tile.

Plan: the squads of the block split C (M x N) by the gemm's warp policy; each squad covers its
part with SQMMA tiles of `inst_m x inst_n`; per k-step of `inst_k`, one instruction per tile.
C is imposed the accumulator layout through `tilelang_infer_layout` (the core's layout
inference then carries it through reductions and elementwise loops). After the last
instruction each thread commits the group and waits for it (`__musa_tce_commit_group`,
`__musa_tce_wait_group(0)`): the accumulators are final when T.gemm returns.

Shared operands are read in place, row-major, unswizzled, when a descriptor can address them:
the leading stride must be a power of two from 8 to 256 bytes. An MN-major operand whose rows
are longer (B of 64 x 256 halves: 512 bytes) is stored in slabs of 128 columns (`Slabs`), slab
after slab; that placement is applied only when every other access of the tile is a global ->
shared copy this backend lowers (`lower_copy`), which then writes the slabs. Anything else
takes the portable gemm (still correct, only slower).
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx as tir

from tilelang_core.ir import TileOp, collect_tile_ops, is_tile_op
from tilelang_core.layout import Fragment
from tilelang_core.transform import map_stmts, seq, walk

from .lower_copy import SHARED_SCOPES, dtype_bytes, plan_copy
from .target import SQMMA_SHAPES, warp_squad_threads

__all__ = ["TCEPlan", "Slabs", "plan_tce", "accumulator_layout", "lower_tce", "plan_operand_placement",
           "TCE_SLABS", "TCE_BLOCKED", "SQMMA_SHAPES", "MMA_TYPES"]

MMA_TYPES = {"float16": 2, "bfloat16": 3}
MAJOR_K, MAJOR_MN = 0, 1
_INST_K = (64, 32, 16)
_LEADING_STRIDES = {8: 1, 16: 2, 32: 3, 64: 4, 128: 5, 256: 6}
SLAB_BYTES = 256
POLICY_SQUARE, POLICY_FULL_ROW, POLICY_FULL_COL = 0, 1, 2

TCE_SLABS = "musa.tce_slabs"  # ctx.facts: buffer handle -> Slabs
TCE_BLOCKED = "musa.tce_blocked"  # ctx.facts: handles of shared tiles that cannot take slabs


@dataclass(frozen=True)
class Slabs:
    """A row-major (rows, cols) shared tile stored in slabs of `width` columns: element
    (r, c) at flat offset (c // width) * rows * width + r * width + c % width."""

    rows: int
    cols: int
    width: int

    def flat(self, r, c):
        return (c // self.width) * (self.rows * self.width) + r * self.width + c % self.width

    def physical(self, indices):
        """Indices of the same buffer (shape rows x cols) that hold logical `indices`."""
        *lead, r, c = indices
        f = self.flat(r, c)
        return [*lead, f // self.cols, f % self.cols]


@dataclass(frozen=True)
class TCEPlan:
    m: int
    n: int
    k: int
    dtype: str
    squads_m: int
    squads_n: int
    inst_m: int
    inst_n: int
    inst_k: int
    trans_a: bool
    trans_b: bool
    threads: int

    @property
    def tiles_m(self) -> int:
        return self.m // self.squads_m // self.inst_m

    @property
    def tiles_n(self) -> int:
        return self.n // self.squads_n // self.inst_n

    @property
    def values(self) -> int:
        """Accumulator registers per thread and instruction."""
        return self.inst_m * self.inst_n // 128

    @property
    def slots(self) -> int:
        return self.tiles_m * self.tiles_n * self.values


def _const_shape(region) -> tuple | None:
    """The (rows, cols) a 2-D operand region covers: constant extents over whole rows of a
    2-D buffer of constant shape (a pipelined tile reads one stage, a band of rows)."""
    shape = region.buffer.ty.shape
    if len(shape) != 2 or not all(isinstance(d, tir.IntImm) for d in shape):
        return None
    if not all(isinstance(e, tir.IntImm) for e in region.extents):
        return None
    if not isinstance(region.mins[1], tir.IntImm) or int(region.mins[1]) != 0 \
            or int(region.extents[1]) != int(shape[1]):
        return None
    return tuple(int(e) for e in region.extents)


def _squad_grid(m: int, n: int, squads: int, policy: int) -> list[tuple[int, int]]:
    grids = [(sm, squads // sm) for sm in range(1, squads + 1) if squads % sm == 0
             and m % sm == 0 and n % (squads // sm) == 0 and (m // sm) % 16 == 0 and (n // (squads // sm)) % 16 == 0]
    if policy == POLICY_FULL_ROW:
        return sorted(grids, key=lambda g: -g[0])
    if policy == POLICY_FULL_COL:
        return sorted(grids, key=lambda g: -g[1])
    return sorted(grids, key=lambda g: (abs(m // g[0] - n // g[1]), -g[0]))


def _instruction(rows: int, cols: int) -> tuple[int, int] | None:
    for shape in SQMMA_SHAPES:
        if rows % shape[0] == 0 and cols % shape[1] == 0:
            return shape
    return None


def operand_stride(shape: tuple, dtype: str, mn_major: bool) -> tuple[int, bool] | None:
    """(leading stride in bytes, stored in slabs) of an operand tile, or None when no
    descriptor reads it: K-major rows must fit one stride; MN-major rows may be slabbed."""
    row_bytes = shape[1] * dtype_bytes(dtype)
    if row_bytes in _LEADING_STRIDES:
        return row_bytes, False
    if mn_major and row_bytes % SLAB_BYTES == 0:
        return SLAB_BYTES, True
    return None


def plan_tce(op: TileOp, threads: int, caps) -> TCEPlan | None:
    """The TCE plan of a `T.gemm`, or None for the portable gemm."""
    if op.name != "gemm" or not caps.has_matrix("tce"):
        return None
    a, b, c = op.regions[:3]
    if a.scope not in SHARED_SCOPES or b.scope not in SHARED_SCOPES or c.scope != "local.fragment":
        return None
    if a.dtype != b.dtype or a.dtype not in MMA_TYPES or c.dtype != "float32":
        return None
    if not any(mi.family == "tce" and mi.supports(a.dtype, c.dtype) for mi in caps.matrix_instructions):
        return None
    shapes = [_const_shape(r) for r in (a, b, c)]
    if None in shapes:
        return None
    trans_a, trans_b = bool(int(op.args[3])), bool(int(op.args[4]))
    policy = int(op.args[5])
    m, n = shapes[2]
    k = shapes[0][0] if trans_a else shapes[0][1]
    if (shapes[0][1] if trans_a else shapes[0][0]) != m or (shapes[1][0] if trans_b else shapes[1][1]) != n:
        return None
    if operand_stride(shapes[0], a.dtype, trans_a) is None or operand_stride(shapes[1], b.dtype, not trans_b) is None:
        return None
    squad = warp_squad_threads(caps)
    if threads % squad:
        return None
    inst_k = next((ik for ik in _INST_K if k % ik == 0), None)
    if inst_k is None:
        return None
    for sm, sn in _squad_grid(m, n, threads // squad, policy):
        inst = _instruction(m // sm, n // sn)
        if inst is not None:
            return TCEPlan(m, n, k, a.dtype, sm, sn, inst[0], inst[1], inst_k, trans_a, trans_b, threads)
    return None


def accumulator_layout(plan: TCEPlan) -> Fragment:
    """C's registers: thread t (squad s = t // 128, lane l) holds, for each of its squad's
    instruction tiles and each value v, the element the SQMMA accumulator puts there."""
    values, tiles_n = plan.values, plan.tiles_n
    quarter = plan.inst_n // 16
    rows, cols = plan.m // plan.squads_m, plan.n // plan.squads_n

    def element_of(thread, slot):
        squad, lane = thread // 128, thread % 128
        tile, v = slot // values, slot % values
        row = (squad // plan.squads_n) * rows + (tile // tiles_n) * plan.inst_m \
            + (lane // 8) % 4 + 4 * (lane // 32) + 16 * (v // (2 * quarter))
        col = (squad % plan.squads_n) * cols + (tile % tiles_n) * plan.inst_n \
            + lane % 8 + 8 * (v % 2) + 16 * ((v // 2) % quarter)
        return [row, col]

    name = f"tce.sqmma.C.m{plan.inst_m}n{plan.inst_n}[{plan.squads_m}x{plan.squads_n} squads]"
    return Fragment((plan.m, plan.n), plan.threads, plan.slots, element_of, name)


def _key(buffer) -> int:
    return buffer.__chandle__()


def plan_operand_placement(func, ctx):
    """Pass (before layout inference): the slabs of shared tiles that TCE gemms read in slabs,
    when every other access of such a tile is a global -> shared copy this backend lowers
    (`facts[TCE_SLABS]`); the tiles that cannot take them (`facts[TCE_BLOCKED]`), whose gemms
    then take the portable path."""
    from tilelang_core.transform import launch_info

    threads = launch_info(func).threads
    slabs, blocked = {}, set()
    ops = collect_tile_ops(func)
    for op in ops:
        plan = plan_tce(op, threads, ctx.caps)
        if plan is None:
            continue
        for region, mn_major in ((op.regions[0], plan.trans_a), (op.regions[1], not plan.trans_b)):
            shape = _const_shape(region)
            stride, slabbed = operand_stride(shape, region.dtype, mn_major)
            if slabbed:
                slabs[_key(region.buffer)] = Slabs(shape[0], shape[1], SLAB_BYTES // dtype_bytes(region.dtype))
    for key in list(slabs):
        for op in ops:
            touches = [r for r in op.regions if _key(r.buffer) == key]
            if not touches:
                continue
            if op.name == "gemm" and plan_tce(op, threads, ctx.caps) is not None:
                continue
            if op.name == "copy" and plan_copy(op) is not None and _key(op.regions[1].buffer) == key:
                continue
            blocked.add(key)
        if key not in blocked and _accessed_outside_tile_ops(func, key):
            blocked.add(key)
    ctx.facts[TCE_SLABS] = {k: v for k, v in slabs.items() if k not in blocked}
    ctx.facts[TCE_BLOCKED] = blocked
    return func


def _accessed_outside_tile_ops(func, key: int) -> bool:
    from tvm import ir

    body = map_stmts(func.body, (tir.Evaluate,), lambda s: tir.Evaluate(tir.const(0, "int32")) if is_tile_op(s) else s)
    found = []

    def visit(node):
        buffer = node.buffer if isinstance(node, tir.BufferStore) else node.source
        if _key(buffer) == key:
            found.append(node)

    walk(body, visit, (tir.BufferStore, ir.TensorLoad))
    return bool(found)


def usable_plan(op: TileOp, threads: int, caps, facts: dict) -> TCEPlan | None:
    """`plan_tce`, unless an operand needs slabs it cannot have."""
    plan = plan_tce(op, threads, caps)
    if plan is None:
        return None
    if any(_key(r.buffer) in facts.get(TCE_BLOCKED, ()) for r in op.regions[:2]):
        return None
    return plan


def _extern(dtype: str, name: str, *args):
    return tir.call_extern(dtype, name, *args)


def _descriptor(region, slabs: Slabs | None, mn0, k0, mn_major: bool):
    """The SQMMA descriptor of the operand tile starting at (mn0, k0) of `region`."""
    cols = int(region.buffer.ty.shape[1])
    size = dtype_bytes(region.dtype)
    row0 = region.mins[0]
    if mn_major:  # rows are K, columns MN
        index = [row0 + k0, mn0] if slabs is None else slabs.physical([row0 + k0, mn0])
        stride = (slabs.width if slabs is not None else cols) * size
    else:  # rows are MN, columns K
        index, stride = [row0 + mn0, k0], cols * size
    address = tir.address_of(tir.BufferLoad(region.buffer, index))
    return _extern("int32", "tl_musa_tce_desc", address, tir.const(_LEADING_STRIDES[stride], "int32"))


def lower_tce(op: TileOp, ctx) -> tir.Stmt | None:
    """The SQMMA lowering of `op`, or None (not eligible, or C did not get the layout)."""
    plan = usable_plan(op, ctx.threads, ctx.caps, ctx.facts)
    if plan is None:
        return None
    a, b, c = op.regions[:3]
    if ctx.layout_of(c.buffer) != accumulator_layout(plan):
        return None  # C's registers hold another layout: the portable gemm follows it
    clear = bool(int(op.args[6]))
    # groups left in flight when T.gemm returns: 0, unless a pipeline overlaps the next
    # iteration's SQMMAs with this one's (`lower_tme`, which then waits for the rest)
    pending = int(op.args[10]) if len(op.args) > 10 else 0
    slabs = ctx.facts.get(TCE_SLABS, {})
    slab_a, slab_b = slabs.get(_key(a.buffer)), slabs.get(_key(b.buffer))
    acc = ctx.register_buffer(c.buffer)
    major_a = MAJOR_MN if plan.trans_a else MAJOR_K
    major_b = MAJOR_K if plan.trans_b else MAJOR_MN
    instruction = (f"tl_musa_tce_m{plan.inst_m}n{plan.inst_n}<{MMA_TYPES[plan.dtype]}, {major_a}, {major_b}, "
                   f"{plan.inst_k}>")
    rows, cols = plan.m // plan.squads_m, plan.n // plan.squads_n

    def body(thread):
        squad = thread // 128
        row0 = (squad // plan.squads_n) * rows
        col0 = (squad % plan.squads_n) * cols
        stmts = []
        if clear:
            s = tir.Var("s", "int32")
            stmts.append(tir.For(s, tir.const(0, "int32"), tir.const(plan.slots, "int32"), tir.ForKind.UNROLLED,
                                 tir.BufferStore(acc, tir.const(0.0, "float32"), [s])))
        kk, i, j = (tir.Var(name, "int32") for name in ("kk", "ti", "tj"))
        k0 = kk * plan.inst_k
        desc_a = _descriptor(a, slab_a, row0 + i * plan.inst_m, k0, plan.trans_a)
        desc_b = _descriptor(b, slab_b, col0 + j * plan.inst_n, k0, not plan.trans_b)
        slot = (i * plan.tiles_n + j) * plan.values
        issue = tir.Evaluate(_extern("void", instruction, tir.address_of(tir.BufferLoad(acc, [slot])), desc_a, desc_b))
        nest = tir.For(j, tir.const(0, "int32"), tir.const(plan.tiles_n, "int32"), tir.ForKind.UNROLLED, issue)
        nest = tir.For(i, tir.const(0, "int32"), tir.const(plan.tiles_m, "int32"), tir.ForKind.UNROLLED, nest)
        nest = tir.For(kk, tir.const(0, "int32"), tir.const(plan.k // plan.inst_k, "int32"), tir.ForKind.UNROLLED, nest)
        stmts += [nest, tir.Evaluate(_extern("void", "tl_musa_tce_commit")),
                  tir.Evaluate(_extern("void", f"tl_musa_tce_wait<{pending}>"))]
        return seq(stmts)

    return ctx.per_thread(body, span=op.stmt.span)

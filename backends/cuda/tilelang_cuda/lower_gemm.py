"""`T.gemm(A_shared, B_shared, C_fragment)` on tensor cores with mma.sync.

The block's warps split C by the gemm's policy (`layout.choose_warps`); C lives in registers
in the mma accumulator layout (`layout.accumulator_layout`, imposed through
`tilelang_infer_layout`, so `T.clear`, `T.Parallel` epilogues and `T.copy(C, ...)` follow
it). Per k-step each warp loads its A and B fragments from shared memory and issues
`mi * ni` mma.sync: with ldmatrix where the instruction allows it (row addresses of 16
bytes: always for A row-major / B column-major, and for the other two forms with 16-bit
operands through ldmatrix .trans), else element by element.

A plan exists only for what is implemented; anything else (operands outside shared memory,
shapes that do not tile into 16 x 8 x k, dtypes without an instruction) returns None and
the core's portable lowering runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx as tir

from tilelang_core.ir import Region, TileOp
from tilelang_core.transform import seq, squeeze_extents

from .layout import (
    WARP,
    MmaInstruction,
    WarpTiling,
    a_element,
    a_operand_layout,
    accumulator_layout,
    b_element,
    choose_warps,
    mma_instruction,
)

__all__ = ["GemmPlan", "Ldmatrix", "Packs", "plan_gemm", "gemm_layouts", "lower_gemm", "SHARED_SCOPES"]

SHARED_SCOPES = ("shared", "shared.dyn")
UNROLL = tir.ForKind.UNROLLED


@dataclass(frozen=True)
class Ldmatrix:
    """One ldmatrix of `count` 8x8 matrices into registers `reg`.. of the fragment: this
    lane's row address is element `coord` (row, col) of the operand's 2-D view."""

    count: int
    trans: bool
    coord: tuple
    reg: object


@dataclass(frozen=True)
class Packs:
    """Registers filled element by element: `regs[i]` = (register, [view coords of its
    elements, lowest bits first])."""

    regs: tuple


@dataclass(frozen=True)
class GemmPlan:
    """Everything the lowering and the emulator tests need to know about one T.gemm."""

    inst: MmaInstruction
    tiling: WarpTiling
    k: int
    trans_a: bool
    trans_b: bool
    a_ldmatrix: bool
    b_ldmatrix: bool
    a_registers: bool = False  # A is a fragment in `a_operand_layout` (the "rs" form)

    @property
    def k_steps(self) -> int:
        return self.k // self.inst.k

    @property
    def b_pairs(self) -> int:
        """B fragments come in pairs of n-blocks (one ldmatrix .x4); an odd one is alone."""
        return self.tiling.ni // 2

    def a_fragment(self, lane, row0, kk) -> Ldmatrix | Packs:
        """How `lane` loads A's 16 x k fragment whose first row is `row0`, at k-step `kk`;
        coordinates are in A's view: (m, k), or (k, m) when transposed."""
        inst, k0 = self.inst, kk * self.inst.k
        if self.a_ldmatrix:
            if not self.trans_a:
                return Ldmatrix(4, False, (row0 + lane % 16, k0 + (lane // 16) * inst.chunk), 0)
            return Ldmatrix(4, True, (k0 + (lane // 16) * 8 + lane % 8, row0 + ((lane // 8) % 2) * 8), 0)
        regs = []
        for reg in range(4):
            coords = []
            for e in range(inst.per_reg):
                m, k = a_element(inst, lane, reg, e)
                coords.append((k0 + k, row0 + m) if self.trans_a else (row0 + m, k0 + k))
            regs.append((reg, tuple(coords)))
        return Packs(tuple(regs))

    def b_fragment(self, lane, col0, kk, blocks: int) -> Ldmatrix | Packs:
        """How `lane` loads B's fragments of `blocks` (1 or 2) n-blocks from column `col0`;
        coordinates are in B's view: (k, n), or (n, k) when transposed. Registers: 2 per
        n-block, block after block."""
        inst, k0 = self.inst, kk * self.inst.k
        if self.b_ldmatrix:
            nblk = lane // 16 if blocks == 2 else 0
            if self.trans_b:
                return Ldmatrix(2 * blocks, False, (col0 + nblk * 8 + lane % 8, k0 + ((lane // 8) % 2) * inst.chunk), 0)
            return Ldmatrix(2 * blocks, True, (k0 + lane % 16, col0 + nblk * 8), 0)
        regs = []
        for blk in range(blocks):
            for reg in range(2):
                coords = []
                for e in range(inst.per_reg):
                    k, n = b_element(inst, lane, reg, e)
                    n = col0 + blk * 8 + n
                    coords.append((n, k0 + k) if self.trans_b else (k0 + k, n))
                regs.append((blk * 2 + reg, tuple(coords)))
        return Packs(tuple(regs))


# ---------------------------------------------------------------------------- planning


def _view_dims(region: Region) -> list[int] | None:
    """The two non-unit dims of a 2-D tile region, or None."""
    dims = squeeze_extents(region.extents)
    if len(dims) != 2 or not all(isinstance(region.extents[d], tir.IntImm) for d in dims):
        return None
    return dims


def _ldmatrix_aligned(region: Region, inst: MmaInstruction) -> bool:
    """Every 16-byte row ldmatrix reads starts 16-byte aligned: the tile's rows are whole
    16-byte chunks of a row-major buffer with constant shape, starting at a chunk boundary."""
    dims = _view_dims(region)
    shape = region.buffer.ty.shape
    if dims is None or dims[1] != len(shape) - 1:
        return False
    if not all(isinstance(d, tir.IntImm) for d in shape):
        return False
    low = region.mins[dims[1]]
    return int(shape[-1]) % inst.chunk == 0 and isinstance(low, tir.IntImm) and int(low) % inst.chunk == 0


def _whole_fragment(region: Region, m: int, k: int) -> bool:
    shape = region.buffer.ty.shape
    return (region.scope == "local.fragment" and len(shape) == 2
            and all(isinstance(d, tir.IntImm) for d in shape) and [int(d) for d in shape] == [m, k]
            and all(isinstance(lo, tir.IntImm) and int(lo) == 0 for lo in region.mins)
            and [int(e) if isinstance(e, tir.IntImm) else -1 for e in region.extents] == [m, k])


def plan_gemm(op: TileOp, threads: int) -> GemmPlan | None:
    """The mma.sync plan of a `tl.gemm`, or None when this lowering does not apply. A is read
    from shared memory, or from registers when it is a whole (M, K) fragment of a 16-bit
    dtype, not transposed."""
    a, b, c = op.regions[:3]
    trans_a, trans_b = bool(op.int_arg(3)), bool(op.int_arg(4))
    policy = op.int_arg(5)
    if b.scope not in SHARED_SCOPES or c.scope != "local.fragment":
        return None
    if a.dtype != b.dtype:
        return None
    inst = mma_instruction(a.dtype, c.dtype)
    if inst is None or threads % WARP or _view_dims(b) is None:
        return None
    c_shape = c.buffer.ty.shape
    if len(c_shape) != 2 or not all(isinstance(d, tir.IntImm) for d in c_shape):
        return None
    m, n = (int(d) for d in c_shape)
    full = all(isinstance(lo, tir.IntImm) and int(lo) == 0 for lo in c.mins) and \
        [int(e) if isinstance(e, tir.IntImm) else -1 for e in c.extents] == [m, n]
    k = op.args[9]
    if not full or not isinstance(k, tir.IntImm) or int(k) % inst.k:
        return None
    registers = a.scope not in SHARED_SCOPES
    if registers and (trans_a or inst.element_bits != 16 or not _whole_fragment(a, m, int(k))):
        return None
    if not registers and _view_dims(a) is None:
        return None
    tiling = choose_warps(m, n, threads // WARP, policy)
    if tiling is None:
        return None
    a_ld = not registers and _ldmatrix_aligned(a, inst) and (not trans_a or inst.ldmatrix_trans_ok)
    b_ld = _ldmatrix_aligned(b, inst) and (trans_b or inst.ldmatrix_trans_ok)
    return GemmPlan(inst, tiling, int(k), trans_a, trans_b, a_ld, b_ld, registers)


def gemm_layouts(op: TileOp, threads: int) -> dict | None:
    """{C: its accumulator layout} (and {A: its operand layout} when A is read from registers),
    the constraints this lowering imposes, or None."""
    plan = plan_gemm(op, threads)
    if plan is None:
        return None
    layouts = {op.regions[2].buffer: accumulator_layout(plan.tiling)}
    if plan.a_registers:
        layouts[op.regions[0].buffer] = a_operand_layout(plan.tiling, plan.inst, plan.k)
    return layouts


# ---------------------------------------------------------------------------- lowering


def _extern(name: str, *args) -> tir.Stmt:
    return tir.Evaluate(tir.call_extern("void", name, *args))


def _address(buf, indices):
    return tir.address_of(tir.BufferLoad(buf, list(indices)))


class _Operand:
    """Addresses of one operand's elements: view coords -> buffer element (swizzled)."""

    def __init__(self, region: Region, swizzle) -> None:
        self.region = region
        self.dims = _view_dims(region)
        self.swizzle = swizzle

    def address(self, row, col):
        idx = list(self.region.mins)
        r, c = self.dims
        idx[r] = idx[r] + row
        idx[c] = idx[c] + col
        if self.swizzle is not None:
            idx[-2], idx[-1] = self.swizzle.physical(idx[-2], idx[-1])
        return _address(self.region.buffer, idx)


_PACK = {16: "tl::mma_pack_b16", 8: "tl::mma_pack_b8", 32: "tl::mma_load_b32"}


def _load(load, frag, base, operand: _Operand, inst: MmaInstruction) -> list[tir.Stmt]:
    if isinstance(load, Ldmatrix):
        name = f"tl::ldmatrix_x{load.count}" + ("_trans" if load.trans else "")
        return [_extern(name, _address(frag, [base + load.reg]), operand.address(*load.coord))]
    out = []
    for reg, coords in load.regs:
        out.append(_extern(_PACK[inst.element_bits], _address(frag, [base + reg]),
                           *(operand.address(*xy) for xy in coords)))
    return out


def _pack_registers(a_reg, frag, mi, kk, plan: GemmPlan) -> list[tir.Stmt]:
    """A's registers for sub-tile `mi`, k-step `kk`, packed from the A fragment's slots
    (`a_operand_layout`: 4 registers of 2 elements each, in order)."""
    base = (mi * plan.k_steps + kk) * 8
    def bits(slot):
        return tir.reinterpret("uint16", tir.BufferLoad(a_reg, [slot]))

    return [tir.BufferStore(frag, tir.call_extern("uint32", "tl::pack_b16x2", bits(base + 2 * reg), bits(base + 2 * reg + 1)),
                            [mi * 4 + reg])
            for reg in range(4)]


def _convert(inst: MmaInstruction, frag, count: int, base=0) -> list[tir.Stmt]:
    """The instruction's operand conversion (fp32 -> tf32) of registers base .. base + count."""
    if inst.convert is None:
        return []
    i = tir.Var("r", "int32")
    return [_loop(i, count, _extern(inst.convert, _address(frag, [base + i])))]


def lower_gemm(op: TileOp, ctx, swizzles: dict) -> tir.Stmt | None:
    """The mma.sync lowering of `op`, or None when it does not apply (or C did not get the
    accumulator layout). `swizzles` maps shared buffer handles to their `Swizzle`."""
    plan = plan_gemm(op, ctx.threads)
    if plan is None:
        return None
    a, b, c = op.regions[:3]
    if ctx.layout_of(c.buffer) != accumulator_layout(plan.tiling):
        return None
    if plan.a_registers and ctx.layout_of(a.buffer) != a_operand_layout(plan.tiling, plan.inst, plan.k):
        return None
    inst, t = plan.inst, plan.tiling
    acc = ctx.register_buffer(c.buffer)
    a_op = None if plan.a_registers else _Operand(a, swizzles.get(a.buffer.__chandle__()))
    b_op = _Operand(b, swizzles.get(b.buffer.__chandle__()))
    a_frag = tir.decl_buffer((t.mi * 4,), "uint32", name="a_frag", scope="local")
    b_frag = tir.decl_buffer((t.ni * 2,), "uint32", name="b_frag", scope="local")
    # the mma reads and writes these 4 values; C's register array is touched element by
    # element only, so the core may still move C to shared memory (see simt.py)
    d_frag = tir.decl_buffer((4,), acc.dtype, name="d_frag", scope="local")
    lane, warp = tir.Var("lane", "int32"), tir.Var("warp", "int32")
    row0, col0 = tir.Var("warp_row", "int32"), tir.Var("warp_col", "int32")
    kk, mi, ni, nj, v = (tir.Var(name, "int32") for name in ("kk", "mi", "ni", "nj", "v"))
    wr, wc = t.warp_origin(warp)

    if plan.a_registers:
        a_load = _pack_registers(ctx.register_buffer(a.buffer), a_frag, mi, kk, plan)
    else:
        a_load = _load(plan.a_fragment(lane, row0 + mi * 16, kk), a_frag, mi * 4, a_op, inst)
    def mma(m_idx, n_idx):
        slot = t.slot(m_idx, n_idx, 0)
        return seq([
            _loop(v, 4, tir.BufferStore(d_frag, tir.BufferLoad(acc, [slot + v]), [v])),
            _extern(inst.function, _address(d_frag, [0]), _address(a_frag, [m_idx * 4]),
                    _address(b_frag, [n_idx * 2]), _address(d_frag, [0])),
            _loop(v, 4, tir.BufferStore(acc, tir.BufferLoad(d_frag, [v]), [slot + v])),
        ])

    # B is loaded a pair of n-blocks at a time and used at once: its registers live briefly
    # (a whole row of B fragments at once would hold 2 * ni registers through the k-step)
    h = tir.Var("h", "int32")
    b_steps = []
    if plan.b_pairs:
        pair = _load(plan.b_fragment(lane, col0 + nj * 16, kk, 2), b_frag, nj * 4, b_op, inst)
        b_steps.append(_loop(nj, plan.b_pairs, seq([
            *pair, *_convert(inst, b_frag, 4, nj * 4),
            _loop(mi, t.mi, _loop(h, 2, mma(mi, nj * 2 + h)))])))
    if t.ni % 2:
        last = t.ni - 1
        b_steps += _load(plan.b_fragment(lane, col0 + last * 8, kk, 1), b_frag, last * 2, b_op, inst)
        b_steps += _convert(inst, b_frag, 2, last * 2)
        b_steps.append(_loop(mi, t.mi, mma(mi, last)))
    k_step = seq([
        _loop(mi, t.mi, seq(a_load)),
        *_convert(inst, a_frag, t.mi * 4),
        *b_steps,
    ])

    def per_thread(thread):
        body = []
        if op.int_arg(6):  # clear_accum
            s = tir.Var("s", "int32")
            body.append(_loop(s, t.slots, tir.BufferStore(acc, tir.const(0, acc.dtype), [s])))
        body += [
            tir.Bind(lane, thread % WARP),
            tir.Bind(warp, thread // WARP),
            tir.Bind(row0, wr),
            tir.Bind(col0, wc),
            tir.AllocBuffer(a_frag),
            tir.AllocBuffer(b_frag),
            tir.AllocBuffer(d_frag),
            _loop(kk, plan.k_steps, k_step),
        ]
        return seq(body)

    return ctx.per_thread(per_thread, span=op.stmt.span)


def _loop(var, extent: int, body) -> tir.Stmt:
    return tir.For(var, tir.const(0, "int32"), tir.const(extent, "int32"), UNROLL, body)


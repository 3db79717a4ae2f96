"""Tile-op lowerings of the HIP backend (`tilelang_lower_tile_op`; None -> portable).

`T.gemm` on MFMA (matrix fused multiply-add). `T.gemm(A_shared, B_shared, C_local)` with
float16/bfloat16/float8 operands and a float32 accumulator, or int8 operands and an int32
accumulator, runs on the 16x16 MFMA instructions of CDNA2/CDNA3 (`tl_hip_mfma.h`): 16x16x16
f16/bf16 on gfx90a and gfx942, 16x16x16 i8 on gfx90a, 16x16x32 i8 and fnuz float8 (e4m3, e5m2)
on gfx942. The block's wavefronts (64 lanes each) split C's 16x16 tiles in a
`waves_m x waves_n` grid; each wave keeps its tiles' accumulators in registers for the whole
kernel: the accumulator layout is imposed on C through `tilelang_infer_layout`, so `T.clear`,
`T.Parallel` epilogues and the final `T.copy` of C run in the same layout. Anything else
(fragment or global operands, float32 or mixed dtypes, tiles that are not whole 16x16xK
instruction tiles, a thread count that is not a whole number of waves) is portable.

Lane layouts of one 16x16xK instruction, E = K / 4 elements per lane (AMD Matrix Instruction
Calculator, `--register-layout` for v_mfma_f32_16x16x16f16 / v_mfma_i32_16x16x32i8; the same
functions as TileLang's `tilelang/intrinsics/mfma_layout.py`):

    A (16 x K):  lane l, element i holds A[l % 16][E * (l // 16) + i]
    B (K x 16):  lane l, element i holds B[E * (l // 16) + i][l % 16]
    C (16 x 16): lane l, element i holds C[4 * (l // 16) + i][l % 16]

`T.copy` between a global tensor and LDS moves 16-byte vectors when rows are whole vectors
(`lower_copy`); `T.reduce_*` folds each output element with a group of lanes and
`__shfl_xor` butterflies within the wavefront (`lower_reduce`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from tvm import tirx as tir

from tilelang_core.layout import Fragment
from tilelang_core.transform.portable import reduce_init

__all__ = [
    "MFMAInstruction",
    "GemmPlan",
    "mfma_instruction",
    "a_element",
    "b_element",
    "c_element",
    "plan_gemm",
    "wave_origin",
    "a_fragment_element",
    "b_fragment_element",
    "accumulator_slot",
    "accumulator_layout",
    "infer_gemm_layout",
    "lower_gemm",
    "plan_copy",
    "lower_copy",
    "reduce_group",
    "lower_reduce",
    "LOWERINGS",
]

TILE = 16  # M and N of every instruction used here
SHARED = ("shared", "shared.dyn")


@dataclass(frozen=True)
class MFMAInstruction:
    """One 16x16xK MFMA: its wrapper in `tl_hip_mfma.h`, operand and accumulator dtypes."""

    wrapper: str
    in_dtype: str
    acc_dtype: str
    k: int

    @property
    def elems(self) -> int:
        """A and B elements per lane."""
        return self.k // 4


# arch -> (in dtype, accumulator dtype) -> instruction. gfx94x replaced the 16x16x16 i8 form
# with 16x16x32 (8 bytes per lane) and added the fnuz float8 forms (fp8 = e4m3, bf8 = e5m2);
# f16/bf16 are the same on both.
_COMMON = {
    ("float16", "float32"): MFMAInstruction("tl_mfma_16x16x16_f16", "float16", "float32", 16),
    ("bfloat16", "float32"): MFMAInstruction("tl_mfma_16x16x16_bf16", "bfloat16", "float32", 16),
}
_INSTRUCTIONS = {
    "gfx90a": {**_COMMON, ("int8", "int32"): MFMAInstruction("tl_mfma_16x16x16_i8", "int8", "int32", 16)},
    "gfx942": {
        **_COMMON,
        ("int8", "int32"): MFMAInstruction("tl_mfma_16x16x32_i8", "int8", "int32", 32),
        ("float8_e4m3fnuz", "float32"): MFMAInstruction("tl_mfma_16x16x32_fp8", "float8_e4m3fnuz", "float32", 32),
        ("float8_e5m2fnuz", "float32"): MFMAInstruction("tl_mfma_16x16x32_bf8", "float8_e5m2fnuz", "float32", 32),
    },
}


def mfma_instruction(arch: str, in_dtype: str, acc_dtype: str) -> MFMAInstruction | None:
    return _INSTRUCTIONS.get(arch, {}).get((in_dtype, acc_dtype))


# -- lane layouts (ints or TIR expressions) ---------------------------------------------------


def a_element(lane, i, elems: int):
    """(m, k) of element `i` of lane `lane`'s A fragment."""
    return lane % TILE, elems * (lane // TILE) + i


def b_element(lane, i, elems: int):
    """(k, n) of element `i` of lane `lane`'s B fragment."""
    return elems * (lane // TILE) + i, lane % TILE


def c_element(lane, i):
    """(m, n) of accumulator element `i` (0..3) of lane `lane`."""
    return 4 * (lane // TILE) + i, lane % TILE


# -- planning ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GemmPlan:
    """How one T.gemm runs on MFMA: C (m x n) in 16x16 tiles, waves in a waves_m x waves_n
    grid, each wave owning tiles_m x tiles_n neighbouring tiles; K in steps of `instr.k`."""

    instr: MFMAInstruction
    m: int
    n: int
    k: int
    waves_m: int
    waves_n: int
    wave_size: int

    @property
    def tiles_m(self) -> int:
        return self.m // TILE // self.waves_m

    @property
    def tiles_n(self) -> int:
        return self.n // TILE // self.waves_n

    @property
    def threads(self) -> int:
        return self.waves_m * self.waves_n * self.wave_size


def _wave_grid(tiles_m: int, tiles_n: int, waves: int, policy: int) -> tuple[int, int] | None:
    """(waves_m, waves_n) that split tiles_m x tiles_n evenly; the policy (0 Square, 1 FullRow:
    waves stacked along M, 2 FullCol: along N) orders the candidates."""
    grids = [(wm, waves // wm) for wm in range(1, waves + 1)
             if waves % wm == 0 and tiles_m % wm == 0 and tiles_n % (waves // wm) == 0]
    if not grids:
        return None
    if policy == 1:
        return max(grids)
    if policy == 2:
        return min(grids)
    # Square: per-wave blocks as square as possible, then fewer waves along M
    return min(grids, key=lambda g: (abs(tiles_m // g[0] - tiles_n // g[1]), g[0]))


def _const(expr) -> int | None:
    return int(expr.value) if isinstance(expr, tir.IntImm) else None


def plan_gemm(op, target, threads: int) -> GemmPlan | None:
    """The MFMA plan of a `T.gemm` tile op on `target`, or None when it needs the portable
    lowering (see the module docstring)."""
    caps = target.capabilities
    if op.name != "gemm" or caps.execution_model != "simt" or not caps.has_matrix("mfma"):
        return None
    a, b, c = op.regions[:3]
    if a.buffer.scope() not in SHARED or b.buffer.scope() not in SHARED or c.buffer.scope() != "local.fragment":
        return None
    if str(a.buffer.dtype) != str(b.buffer.dtype):
        return None
    instr = mfma_instruction(target.arch, str(a.buffer.dtype), str(c.buffer.dtype))
    m, n, k = (_const(x) for x in op.args[7:10])
    wave = caps.warp_size
    if instr is None or None in (m, n, k) or threads % wave:
        return None
    if m % TILE or n % TILE or k % instr.k:
        return None
    c_shape = [_const(d) for d in c.buffer.shape]
    if c_shape != [m, n] or any(_const(x) != 0 for x in c.mins):
        return None  # C must be the whole fragment: its layout covers the fragment
    grid = _wave_grid(m // TILE, n // TILE, threads // wave, int(op.args[5]))
    if grid is None:
        return None
    return GemmPlan(instr, m, n, k, grid[0], grid[1], wave)


# -- what each lane loads and accumulates (ints or TIR expressions) ---------------------------


def wave_origin(plan: GemmPlan, wave):
    """(row, col) of the first element of C that wave `wave` computes."""
    return ((wave % plan.waves_m) * (plan.tiles_m * TILE), (wave // plan.waves_m) * (plan.tiles_n * TILE))


def a_fragment_element(plan: GemmPlan, wave, lane, tile, i, k0):
    """(m, k) in the gemm's A (M x K) of element `i` of lane `lane`'s fragment for the wave's
    `tile`-th row of tiles, at K offset `k0`."""
    m, k = a_element(lane, i, plan.instr.elems)
    return wave_origin(plan, wave)[0] + tile * TILE + m, k0 + k


def b_fragment_element(plan: GemmPlan, wave, lane, tile, i, k0):
    """(k, n) in the gemm's B (K x N), as `a_fragment_element` for the wave's columns."""
    k, n = b_element(lane, i, plan.instr.elems)
    return k0 + k, wave_origin(plan, wave)[1] + tile * TILE + n


def accumulator_slot(plan: GemmPlan, tile_m, tile_n, i):
    """The register slot of accumulator element `i` of the wave's tile (tile_m, tile_n)."""
    return (tile_m * plan.tiles_n + tile_n) * 4 + i


# -- the accumulator layout -------------------------------------------------------------------


def accumulator_layout(plan: GemmPlan) -> Fragment:
    """C's register layout: thread `w * 64 + l` (wave w, lane l) holds, for each of its wave's
    tiles (a, b) and i in 0..3, element `c_element(l, i)` of that tile in slot
    `(a * tiles_n + b) * 4 + i`. Waves take tile blocks column-major: w = wave_m + waves_m * wave_n."""
    tm, tn, wm, ws = plan.tiles_m, plan.tiles_n, plan.waves_m, plan.wave_size

    def element_of(thread, slot):
        wave, lane = thread // ws, thread % ws
        tile_m = (wave % wm) * tm + slot // (4 * tn)
        tile_n = (wave // wm) * tn + (slot // 4) % tn
        row, col = c_element(lane, slot % 4)
        return [tile_m * TILE + row, tile_n * TILE + col]

    name = f"hip.mfma16x16.waves{plan.waves_m}x{plan.waves_n}.lanes{ws}"
    return Fragment((plan.m, plan.n), plan.threads, tm * tn * 4, element_of, name)


def infer_gemm_layout(op, ctx) -> dict | None:
    """`tilelang_infer_layout` for T.gemm: C's accumulator layout when the gemm runs on MFMA."""
    plan = plan_gemm(op, ctx.target, ctx.threads)
    if plan is None:
        return None
    return {op.regions[2].buffer: accumulator_layout(plan)}


# -- lowering ---------------------------------------------------------------------------------


def _operand(region, trans: bool, row, col):
    """Indices into `region` of logical element (row, col) of the (possibly transposed) operand."""
    r, c = (col, row) if trans else (row, col)
    mins = list(region.mins)
    return mins[:-2] + [mins[-2] + r, mins[-1] + c]


def lower_gemm(op, ctx) -> tir.Stmt | None:
    """The MFMA lowering of a `T.gemm` tile op, or None for the portable one."""
    plan = plan_gemm(op, ctx.target, ctx.threads)
    if plan is None:
        return None
    a, b, c = op.regions[:3]
    if ctx.layout_of(c.buffer) != accumulator_layout(plan):
        return None  # C's registers hold another layout: the portable lowering follows it
    trans_a, trans_b, clear = bool(int(op.args[3])), bool(int(op.args[4])), bool(int(op.args[6]))
    acc = ctx.register_buffer(c.buffer)
    instr, tm, tn, e = plan.instr, plan.tiles_m, plan.tiles_n, plan.instr.elems
    a_frag = tir.decl_buffer((tm * e,), instr.in_dtype, name="A_frag", scope="local")
    b_frag = tir.decl_buffer((tn * e,), instr.in_dtype, name="B_frag", scope="local")
    unrolled, serial = tir.ForKind.UNROLLED, tir.ForKind.SERIAL
    zero = tir.const(0, "int32")

    def loop(var_name, extent, body_fn, kind=unrolled):
        var = tir.Var(var_name, "int32")
        return tir.For(var, zero, tir.const(extent, "int32"), kind, body_fn(var))

    def body(thread):
        wave, lane = thread // plan.wave_size, thread % plan.wave_size
        stmts = [tir.AllocBuffer(a_frag), tir.AllocBuffer(b_frag)]
        if clear:
            stmts.append(loop("s", tm * tn * 4, lambda s: tir.BufferStore(acc, tir.const(0, instr.acc_dtype), [s])))

        def load(frag, region, trans, element, tiles, k0):
            def one(tile, i):
                row, col = element(plan, wave, lane, tile, i, k0)
                return tir.BufferStore(frag, tir.BufferLoad(region.buffer, _operand(region, trans, row, col)),
                                       [tile * e + i])
            return loop("t", tiles, lambda tile: loop("e", e, lambda i: one(tile, i)))

        def mfma(i, j):
            dst = tir.address_of(tir.BufferLoad(acc, [accumulator_slot(plan, i, j, 0)]))
            return tir.Evaluate(tir.call_extern(
                "void", instr.wrapper, dst, tir.address_of(tir.BufferLoad(a_frag, [i * e])),
                tir.address_of(tir.BufferLoad(b_frag, [j * e])), dst))

        def k_step(kk):
            k0 = kk * instr.k
            return tir.SeqStmt([
                load(a_frag, a, trans_a, a_fragment_element, tm, k0),
                load(b_frag, b, trans_b, b_fragment_element, tn, k0),
                loop("mi", tm, lambda i: loop("nj", tn, lambda j: mfma(i, j))),
            ])

        k_steps = plan.k // instr.k
        stmts.append(loop("kk", k_steps, k_step, unrolled if k_steps <= 8 else serial))
        return tir.SeqStmt(stmts)

    return ctx.per_thread(body, span=op.stmt.span)


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
    from tilelang_core.transform.irutil import analyzer

    return bool(analyzer().can_prove(tir.floormod(expr, factor) == 0))


def plan_copy(op, target) -> CopyPlan | None:
    """The vector plan of a global <-> LDS `T.copy`, or None for the portable copy: both sides
    of one dtype, the tile's last dim the contiguous dim of both buffers in whole vectors,
    starting on a vector boundary, and rows of the global tensor whole vectors (so a vector
    is either inside the tensor or wholly past its edge). Tensor base addresses are assumed
    16-byte aligned (torch and hipMalloc give 256)."""
    from tilelang_core.transform.irutil import analyzer, squeeze_extents

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

    from tilelang_core.transform.irutil import loop_nest, squeeze_extents

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
    from tilelang_core.transform.irutil import walk

    found = {}
    for e in exprs:
        walk(e, lambda v: found.setdefault(v.__chandle__(), v), (tir.Var,))
    return list(found.values())


def _vector(idx, lanes: int):
    return list(idx[:-1]) + [tir.Ramp(idx[-1], tir.const(1, "int32"), lanes)]


# -- reductions with wavefront shuffles -------------------------------------------------------

_REDUCE_DTYPES = ("float32", "float64", "int32")


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
    from tilelang_core.transform.irutil import region_indices, squeeze_extents

    src, dst = op.regions[:2]
    if ctx.layouts.in_registers(src.buffer) or ctx.layouts.in_registers(dst.buffer):
        return None  # the core's register reduction follows the fragments' layouts
    kind, dim, clear = str(op.args[2].value), int(op.args[3]), bool(int(op.args[4]))
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

"""`T.gemm(A, B_shared, C_fragment)` on wgmma (sm_90a): both operands in shared memory
through matrix descriptors (the "ss" form), or A from registers (the "rs" form).

Chosen at layout inference when the target declares the `wgmma` family for the operand and
accumulator dtypes (f16/bf16 -> f32; float32 as tf32, fp8 -> f32 and s8 -> s32 with both
operands K-major: A (M, K), B (N, K) with transpose_B; float32 with B (K, N) takes the
swapped form below), the block has whole warpgroups, C is a whole (M, N)
fragment that splits into m64nN instructions, and each operand is a whole 2-D shared tile
that a descriptor can read (`layout_wgmma.wgmma_tile`); the pass config
`tl.disable_wgmma` keeps mma.sync. Anything else takes the mma.sync lowering.

- `tilelang_infer_layout` imposes the wgmma D layout on C (`wgmma_accumulator_layout`).
- `place_wgmma_operands` (after the user's shared layouts are read) stores A and B in the
  swizzled placement the descriptors need, through the same machinery as `T.annotate_layout`
  (`ctx.facts[SHARED_LAYOUTS]`): every access, cp.async copies included, goes to the
  swizzled place. A tile that already has the user's placement cannot be read by a
  descriptor: that is a compile error naming the fix (B of the swapped form, read by plain
  loads, keeps the user's placement).
- The lowering, per thread of the warpgroup: `wgmma.fence`, for each k-step (32 bytes of K:
  16 f16/bf16, 8 tf32 or 32 fp8/s8 elements) and each
  of its instructions a descriptor pair and one `wgmma.mma_async`, then `commit_group` and
  `wait_group 0` (the accumulators are final when T.gemm returns).
- The rs form (A a whole (M, K) 16-bit fragment, as FlashAttention's P in P @ V): each
  warpgroup owns one m64 block of rows (warpgroups stacked along M), so A's registers are the
  wgmma A fragment, which is the layout of a wgmma accumulator of A's shape (and mma.sync's
  A layout with the warps stacked along M). It applies when layout inference gave A and C
  exactly those layouts (`rs_layouts`); the lowering packs A's 16-bit slots into 32-bit
  registers for every k-step, issues the k-steps, and keeps the packed registers pinned
  until `wait_group` (they are read asynchronously). A tf32 A fragment (B K-major) is passed
  as it is: its slots are the tf32 A fragment (`layout_wgmma.tf32_a_layout`).
- The swapped form (float32 as tf32, A (M, K) and B (K, N) both in shared memory: B is
  MN-major, which tf32 wgmma cannot read by descriptor): C^T = B^T A^T. B^T's elements are
  loaded from B's tile into registers, the instruction's A (the tf32 A fragment); A's tile,
  K-major, is the instruction's B through a descriptor; C takes the D layout transposed
  (`layout_wgmma.transposed_accumulator_layout`), so C[i, j] is D[j, i] of a warpgroup split
  of C^T (N, M). Both tiles get the swizzled placement (B's makes its TMA boxes and keeps the
  register loads at 2-way bank conflicts at most).

Shared memory written by cp.async (the generic proxy) is fenced (`fence.proxy.async`) by the
writing threads after their cp.async wait, before the barrier that precedes the gemm
(`needs_proxy_fence`, used by the copy and pipeline lowerings).
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import tirx as tir

from tilelang_core.ir import Region, TileOp, collect_tile_ops, dtype_bytes
from tilelang_core.ir import source_of
from tilelang_core.transform import TileLangCompileError
from tilelang_core.transform import seq
from tilelang_core.transform import launch_info
from tilelang_core.transform import ranges_of

from .layout_wgmma import K_MAJOR_ONLY, WARPGROUP, WGMMA_DTYPES, WGMMA_K_BYTES, WarpgroupTiling, WgmmaTile, choose_warpgroups, \
    tf32_a_element, tf32_a_layout, transposed_accumulator_layout, wgmma_accumulator_layout, wgmma_k, wgmma_tile

__all__ = ["WgmmaPlan", "WGMMA_OPERANDS", "has_wgmma", "plan_wgmma", "accumulator_of", "rs_layouts", "takes_wgmma",
           "wgmma_layouts", "place_wgmma_operands", "lower_wgmma", "needs_proxy_fence", "proxy_fence", "a_register_count",
           "WHOLE", "ISSUE", "WAIT"]

WGMMA_OPERANDS = "cuda.wgmma_operands"  # ctx.facts key: handles of shared tiles wgmma reads
SHARED_SCOPES = ("shared", "shared.dyn")
UNROLL = tir.ForKind.UNROLLED


@dataclass(frozen=True)
class WgmmaPlan:
    tiling: WarpgroupTiling
    k: int
    kind: str  # "f16" / "bf16" / "tf32" / "e4m3" / "e5m2" / "s8" (layout_wgmma.WGMMA_DTYPES)
    trans_a: bool  # A is (K, M): MN-major
    trans_b: bool  # B is (N, K): K-major
    a_tile: WgmmaTile | None  # None: A is read from registers (the rs form)
    b_tile: WgmmaTile
    # tf32 with B (K, N) MN-major (the swapped form): C^T = B^T A^T, B read from shared memory
    # into registers as the instruction's A, A_s the instruction's B; `tiling` splits C^T (N, M)
    swap: bool = False

    @property
    def k_step(self) -> int:
        return wgmma_k(self.kind)

    @property
    def k_steps(self) -> int:
        return self.k // self.k_step

    @property
    def a_registers(self) -> bool:
        return self.a_tile is None

    @property
    def registers(self) -> bool:
        """Whether the instruction's A comes from registers (the rs form or the swapped form)."""
        return self.a_registers or self.swap

    @property
    def function(self) -> str:
        if self.kind == "tf32" and self.registers:
            return f"tl::wgmma_m64n{self.tiling.inst_n}k8_rs_f32_tf32"
        if self.kind in K_MAJOR_ONLY:  # no transpose arguments
            acc = "s32" if self.kind == "s8" else "f32"
            return f"tl::wgmma_m64n{self.tiling.inst_n}k{self.k_step}_{acc}_{self.kind}"
        if self.a_registers:
            return f"tl::wgmma_m64n{self.tiling.inst_n}k16_rs_f32_{self.kind}<{int(not self.trans_b)}>"
        return f"tl::wgmma_m64n{self.tiling.inst_n}k16_f32_{self.kind}<{int(self.trans_a)}, {int(not self.trans_b)}>"


RS_KINDS = ("f16", "bf16", "tf32")  # operand types with an rs form here
# N of the s8 instructions (PTX ISA 9.7.15.5: integer wgmma stops at n224 and skips some N)
S8_N = (8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224)


def has_wgmma(caps, op) -> bool:
    a, _, c = op.regions[:3]
    operand = "tfloat32" if a.dtype == "float32" else a.dtype  # float32 operands run as tf32
    return any(mi.family == "wgmma" and mi.supports(operand, c.dtype) for mi in caps.matrix_instructions)


def _tile_dims(region: Region) -> tuple[int, int] | None:
    """(rows, cols) when the region is a whole 2-D shared tile (leading dims of extent 1, such
    as a pipeline stage), else None."""
    shape = region.buffer.ty.shape
    if region.scope not in SHARED_SCOPES or len(shape) < 2 or not all(isinstance(d, tir.IntImm) for d in shape):
        return None
    ext = [int(e) if isinstance(e, tir.IntImm) else -1 for e in region.extents]
    if ext[:-2] != [1] * (len(ext) - 2) or ext[-2:] != [int(shape[-2]), int(shape[-1])]:
        return None
    if not all(isinstance(lo, tir.IntImm) and int(lo) == 0 for lo in region.mins[-2:]):
        return None
    return int(shape[-2]), int(shape[-1])


def plan_wgmma(op: TileOp, threads: int) -> WgmmaPlan | None:
    """The wgmma plan of a `tl.gemm`, or None when this lowering does not apply."""
    a, b, c = op.regions[:3]
    kind = WGMMA_DTYPES.get((a.dtype, c.dtype))
    if kind is None or a.dtype != b.dtype or c.scope != "local.fragment" or threads % WARPGROUP:
        return None
    if a.scope == "local.fragment":
        return _plan_rs(op, threads, kind) if kind in RS_KINDS else None
    a_op, b_op = _operand(a), _operand(b)
    c_shape = c.buffer.ty.shape
    if a_op is None or b_op is None or len(c_shape) != 2 or not all(isinstance(d, tir.IntImm) for d in c_shape):
        return None
    (a_dims, a_view, _), (b_dims, b_view, _) = a_op, b_op
    m, n = (int(d) for d in c_shape)
    if [int(e) if isinstance(e, tir.IntImm) else -1 for e in c.extents] != [m, n] or \
            not all(isinstance(lo, tir.IntImm) and int(lo) == 0 for lo in c.mins):
        return None
    trans_a, trans_b = bool(op.int_arg(3)), bool(op.int_arg(4))
    k = op.args[9]
    if not isinstance(k, tir.IntImm) or int(k) % wgmma_k(kind):
        return None
    k = int(k)
    if kind == "tf32" and not trans_a and not trans_b:
        if a_view != a_dims or b_view != b_dims:
            return None
        return _plan_swap(threads, m, n, k, a_dims, b_dims)
    if kind in K_MAJOR_ONLY and (trans_a or not trans_b):
        return None  # these instructions read both operands K-major only: mma.sync takes it
    if a_view != ((k, m) if trans_a else (m, k)) or b_view != ((n, k) if trans_b else (k, n)):
        return None
    size = dtype_bytes(a.dtype)
    a_tile, b_tile = wgmma_tile(*a_dims, size), wgmma_tile(*b_dims, size)
    if a_tile is None or b_tile is None or not _slice_readable(a_op, a_tile, trans_a) \
            or not _slice_readable(b_op, b_tile, not trans_b):
        return None
    # an MN-major operand is read slab by slab: instructions and warpgroups start on slabs
    if trans_a and 64 % a_tile.slab:
        return None
    tiling = choose_warpgroups(m, n, threads // WARPGROUP, 8 if trans_b else b_tile.slab)
    if tiling is None or (kind == "s8" and tiling.inst_n not in S8_N):
        return None
    return WgmmaPlan(tiling, k, kind, trans_a, trans_b, a_tile, b_tile)



def _operand(region: Region):
    """(tile dims, view dims, first column) of a shared operand: the whole 2-D tile of its
    buffer (leading dims of extent 1, such as a pipeline stage), placed as one wgmma tile, and
    the region's view of it — every row, a range of columns (`Q_s[:, :256]` of a (64, 512)
    tile: TileLang's MLA splits the head dim so); None when the region is not of that form."""
    shape = region.buffer.ty.shape
    if region.scope not in SHARED_SCOPES or len(shape) < 2 or not all(isinstance(d, tir.IntImm) for d in shape):
        return None
    ext = [int(e) if isinstance(e, tir.IntImm) else -1 for e in region.extents]
    rows, cols = int(shape[-2]), int(shape[-1])
    if ext[:-2] != [1] * (len(ext) - 2) or ext[-2] != rows or ext[-1] < 1:
        return None
    lo_row, lo_col = region.mins[-2:]
    if not (isinstance(lo_row, tir.IntImm) and int(lo_row) == 0) or ext[-1] > cols:
        return None
    if isinstance(lo_col, tir.IntImm):
        if int(lo_col) + ext[-1] > cols:
            return None
        return (rows, cols), (rows, ext[-1]), int(lo_col)
    # a column start that varies (`j * 64` in an unrolled loop): its largest power-of-two
    # divisor stands for it in the alignment checks (the bounds check took its range)
    step = _known_multiple(lo_col)
    return ((rows, cols), (rows, ext[-1]), step) if step else None


def _known_multiple(expr) -> int:
    """The largest power of two (at most 1024) that `expr` is a known multiple of; 0 when the
    analyzer knows no such factor above 1."""
    from tvm.sym import Analyzer

    try:
        mod = Analyzer().modular_set(expr)
        coeff, base = int(mod.coeff), int(mod.base)
    except Exception:  # noqa: BLE001 - an expression the analyzer does not model
        return 0
    step = 1024
    while step > 1 and (coeff % step or base % step):
        step //= 2
    return step if step > 1 else 0


def _slice_readable(operand, tile: WgmmaTile, mn_major: bool) -> bool:
    """Whether descriptors read a column range of `tile`: the whole tile; K-major (columns are
    K), a range starting on a 32-byte step as the k-steps do; MN-major, whole slabs."""
    dims, view, first = operand
    if view == dims:
        return True
    if mn_major:
        return first % tile.slab == 0 and view[1] % tile.slab == 0
    return (first * tile.element_bytes) % WGMMA_K_BYTES == 0


def _plan_swap(threads: int, m: int, n: int, k: int, a_dims, b_dims) -> WgmmaPlan | None:
    """The swapped tf32 plan of C (M, N) = A (M, K) @ B (K, N): C^T = B^T A^T with B^T read
    into registers as the instruction's A (M of the instruction = N of C) and A_s, K-major, as
    its B by descriptor (module docstring)."""
    if a_dims != (m, k) or b_dims != (k, n):
        return None
    a_tile, b_tile = wgmma_tile(m, k, 4), wgmma_tile(k, n, 4)
    if a_tile is None or b_tile is None:
        return None
    tiling = choose_warpgroups(n, m, threads // WARPGROUP, 8)
    if tiling is None:
        return None
    return WgmmaPlan(tiling, k, "tf32", False, False, a_tile, b_tile, swap=True)


def _whole_2d(region: Region) -> tuple[int, int] | None:
    shape = region.buffer.ty.shape
    if len(shape) != 2 or not all(isinstance(d, tir.IntImm) for d in shape):
        return None
    dims = (int(shape[0]), int(shape[1]))
    if [int(e) if isinstance(e, tir.IntImm) else -1 for e in region.extents] != list(dims) or \
            not all(isinstance(lo, tir.IntImm) and int(lo) == 0 for lo in region.mins):
        return None
    return dims


def _plan_rs(op: TileOp, threads: int, kind: str) -> WgmmaPlan | None:
    """The rs plan: A a whole (M, K) register fragment, not transposed, M = 64 x warpgroups
    (tf32: B K-major, given as (N, K))."""
    a, b, c = op.regions[:3]
    trans_a, trans_b = bool(op.int_arg(3)), bool(op.int_arg(4))
    k = op.args[9]
    mn, a_dims, b_dims = _whole_2d(c), _whole_2d(a), _tile_dims(b)
    if trans_a or mn is None or b_dims is None or not isinstance(k, tir.IntImm) or int(k) % wgmma_k(kind):
        return None
    if kind in K_MAJOR_ONLY and not trans_b:
        return None
    (m, n), k, groups = mn, int(k), threads // WARPGROUP
    if a_dims != (m, k) or m != 64 * groups or b_dims != ((n, k) if trans_b else (k, n)):
        return None
    b_tile = wgmma_tile(*b_dims, dtype_bytes(b.dtype))
    if b_tile is None:
        return None
    tiling = choose_warpgroups(m, n, groups, 8 if trans_b else b_tile.slab)
    if tiling is None or tiling.groups_m != groups:
        return None
    return WgmmaPlan(tiling, k, kind, False, trans_b, None, b_tile)


def rs_layouts(plan: WgmmaPlan, op: TileOp) -> dict:
    """{A: its register layout, C: its accumulator layout} of an rs plan: for 16-bit A, A's
    registers are a wgmma accumulator of A's (M, K) shape; for tf32, the tf32 A fragment
    (`layout_wgmma.tf32_a_layout`) (module docstring)."""
    t = plan.tiling
    if plan.kind == "tf32":
        a_layout = tf32_a_layout(t.m, plan.k, t.groups_m)
    else:
        a_layout = wgmma_accumulator_layout(choose_warpgroups(t.m, plan.k, t.groups_m))
    return {op.regions[0].buffer: a_layout, op.regions[2].buffer: wgmma_accumulator_layout(t)}


def accumulator_of(plan: WgmmaPlan):
    """C's layout under `plan`: the D layout, transposed in the swapped form."""
    return transposed_accumulator_layout(plan.tiling) if plan.swap else wgmma_accumulator_layout(plan.tiling)


def takes_wgmma(plan: WgmmaPlan | None, op: TileOp, layouts: dict) -> bool:
    """Whether inferred `layouts` let `plan` run: C (and A, in the rs form) hold the layouts
    the instructions read and write."""
    if plan is None:
        return False
    if plan.a_registers:
        return all(layouts.get(buf) == want for buf, want in rs_layouts(plan, op).items())
    return layouts.get(op.regions[2].buffer) == accumulator_of(plan)


def wgmma_layouts(op: TileOp, threads: int, one_m64_per_warpgroup: bool = False, held=None,
                  required: bool = False) -> dict | None:
    """C's wgmma accumulator layout, or None when the gemm stays on mma.sync (no plan, or
    `one_m64_per_warpgroup` and a warpgroup would hold several m64 blocks of rows). A 16-bit
    rs gemm gives None too: it keeps mma.sync's layouts, which its wgmma form shares when the
    warps are stacked along M (the lowering checks, `takes_wgmma`) — unless an earlier gemm
    already gave C the wgmma accumulator layout (`held(buffer)`: the layout decided so far),
    as in `acc = C_s @ S_s; acc += frag @ X_s` (TileLang's mamba chunk scan): then A's and C's
    rs layouts, so both gemms accumulate in the same registers; or the gemm was written
    `T.wgmma_gemm` (`required`): then too. A tf32 rs gemm (mma.sync has no float32 A from
    registers) gives A's and C's layouts (`rs_layouts`)."""
    plan = plan_wgmma(op, threads)
    if plan is not None and plan.a_registers and plan.kind == "tf32":
        return rs_layouts(plan, op)
    if plan is not None and plan.a_registers and not plan.swap and (required or (
            held is not None and held(op.regions[2].buffer) == wgmma_accumulator_layout(plan.tiling))):
        return rs_layouts(plan, op)
    if plan is None or plan.a_registers or (one_m64_per_warpgroup and plan.tiling.mi > 1):
        return None
    return {op.regions[2].buffer: accumulator_of(plan)}


# ---------------------------------------------------------------------------- placement


def _index_map(tile: WgmmaTile):
    return tir.IndexMap.from_func(lambda r, c: list(tile.physical(r, c)), ndim=2, index_dtype="int32")


def place_wgmma_operands(func: tir.PrimFunc, ctx) -> tir.PrimFunc:
    """Give the shared operands of every wgmma gemm the swizzled placement (module docstring)."""
    from .lower_layout import CHUNK_BYTES, SHARED_LAYOUTS, SharedLayout

    placed = ctx.facts.setdefault(SHARED_LAYOUTS, {})
    operands = ctx.facts.setdefault(WGMMA_OPERANDS, set())
    layouts = ctx.facts.get("fragment_layouts")
    if layouts is None or getattr(ctx.options, "disable_wgmma", False):
        return func
    threads = launch_info(func).threads
    ranges = ranges_of(func.body, (tir.Evaluate,), ctx.caps, ctx.target, threads)
    for op in collect_tile_ops(func):
        if op.name != "gemm" or not has_wgmma(ctx.caps, op):
            continue
        here = ranges.get(op.stmt.__chandle__())
        if here is not None and not (whole_warpgroups(here) and ctx.facts.get("cuda.required_wgmma")):
            continue  # such T.ws scopes keep mma.sync (see lower.infer_layout)
        plan = plan_wgmma(op, threads if here is None else here.extent)
        if not takes_wgmma(plan, op, layouts):
            continue
        line = source_of(op.stmt)
        shared = [(op.regions[1], plan.b_tile)] if plan.a_registers else \
            [(op.regions[0], plan.a_tile), (op.regions[1], plan.b_tile)]
        for region, tile in shared:
            key = region.buffer.__chandle__()
            origin = f"T.gemm on wgmma at line {line[1]}" if line else "T.gemm on wgmma"
            old = placed.get(key)
            # the swapped form reads B with plain loads: any placement serves (it then keeps cp.async)
            if old is not None and not old.origin.startswith("T.gemm on wgmma") and \
                    not (plan.swap and region is op.regions[1]):
                raise TileLangCompileError(
                    f"T.gemm on wgmma reads {region.buffer.name} through a matrix descriptor, which needs its own "
                    f"swizzled placement, but {old.origin} places it otherwise; drop the annotation, or keep "
                    f"mma.sync with pass_configs={{'tl.disable_wgmma': True}}", line)
            if old is None:
                placed[key] = SharedLayout(_index_map(tile), (tile.rows, tile.cols), (tile.rows, tile.cols), CHUNK_BYTES,
                                           origin)
            operands.add(key)
    return func


def whole_warpgroups(here) -> bool:
    """Whether a `T.ws` thread range is made of whole warpgroups (it starts at a multiple of
    128 threads and spans a multiple of 128): wgmma runs there, each warpgroup indexed from
    the range's first thread."""
    return here.begin % WARPGROUP == 0 and here.extent % WARPGROUP == 0


def needs_proxy_fence(facts: dict, buffers) -> bool:
    """Whether any of `buffers` (shared tiles written through the generic proxy) is read by wgmma."""
    operands = facts.get(WGMMA_OPERANDS) or ()
    return any(b.__chandle__() in operands for b in buffers)


def proxy_fence() -> tir.Stmt:
    return tir.Evaluate(tir.call_extern("void", "tl::fence_proxy_async"))


# ---------------------------------------------------------------------------- lowering


def _extern(name: str, *args) -> tir.Stmt:
    return tir.Evaluate(tir.call_extern("void", name, *args))


def _loop(var, extent: int, body) -> tir.Stmt:
    return tir.For(var, tir.const(0, "int32"), tir.const(extent, "int32"), UNROLL, body)


def _descriptor(region: Region, tile: WgmmaTile, mn_major: bool, mn, kk, k_step: int = 16):
    """The descriptor of the `k_step`-wide k slice `kk` of `region` from row/column `mn` of M or N."""
    idx = list(region.mins)
    row, col = (kk * k_step, mn) if mn_major else (mn, kk * k_step)
    idx[-2], idx[-1] = idx[-2] + row, idx[-1] + col
    lbo, sbo = tile.descriptor_offsets(mn_major)
    address = tir.address_of(tir.BufferLoad(region.buffer, idx))
    return tir.call_extern("uint64", "tl::wgmma_desc", address, tir.const(lbo, "uint32"),
                           tir.const(sbo, "uint32"), tir.const(tile.mode, "uint32"))


def lower_wgmma(op: TileOp, ctx) -> tir.Stmt | None:
    """The wgmma lowering of `op` (C already in the D layout), or None when it does not apply."""
    plan = plan_wgmma(op, ctx.threads)
    if plan is None:
        return None
    a, b, c = op.regions[:3]
    if not takes_wgmma(plan, op, {r.buffer: ctx.layout_of(r.buffer) for r in (a, c)}):
        return None
    # C's D layout may also be an mma.sync layout (4 warps stacked along M): wgmma was chosen
    # only where its operands were placed for descriptors
    operands = ctx.facts.get(WGMMA_OPERANDS) or set()
    if not all(r.buffer.__chandle__() in operands for r in ((b,) if plan.a_registers else (a, b))):
        return None
    if plan.swap:
        return _lower_swapped(plan, op, ctx)
    t = plan.tiling
    acc = ctx.register_buffer(c.buffer)
    group = tir.Var("warpgroup", "int32")
    row0, col0 = tir.Var("group_row", "int32"), tir.Var("group_col", "int32")
    kk, mi, ni = (tir.Var(name, "int32") for name in ("kk", "mi", "ni"))
    gr, gc = t.group_origin(group)
    fence_acc = _extern(f"tl::wgmma_fence_operands<{t.slots}>", tir.address_of(tir.BufferLoad(acc, [0])))
    b_desc = _descriptor(b, plan.b_tile, not plan.trans_b, col0 + ni * t.inst_n, kk, plan.k_step)
    a_pack, fence_a = [], []
    if plan.a_registers and plan.kind == "tf32":
        # A's slots are the instruction's registers (4 float32 words per k-step, slot kk * 4 + j)
        a_slots = ctx.register_buffer(a.buffer)
        fence_a = [_extern(f"tl::wgmma_fence_operands<{plan.k_steps * 4}>",
                           tir.address_of(tir.BufferLoad(a_slots, [0])))]
        mma = _extern(plan.function, tir.address_of(tir.BufferLoad(acc, [t.slot(mi, ni)])),
                      tir.address_of(tir.BufferLoad(a_slots, [kk * 4])), b_desc, tir.const(1, "int32"))
    elif plan.a_registers:
        # the k-steps' A registers, packed from A's slots (8 per k-step: registers j = 0..3
        # of 2 elements each) and pinned until the wait (wgmma reads them asynchronously); a
        # split call (`phase`) gets them from the pipeline, which declares them where both
        # halves see them
        given = _given_a_registers(op)
        a_regs = given if given is not None else \
            tir.decl_buffer((a_register_count(plan),), "uint32", name="a_regs", scope="local")
        a_slots = ctx.register_buffer(a.buffer)
        j = tir.Var("j", "int32")

        def bits(slot):
            return tir.reinterpret("uint16", tir.BufferLoad(a_slots, [slot]))

        a_pack = [*([] if given is not None else [tir.AllocBuffer(a_regs)]),
                  _loop(kk, plan.k_steps, _loop(j, 4, tir.BufferStore(
                      a_regs, tir.call_extern("uint32", "tl::pack_b16x2", bits(kk * 8 + j * 2),
                                              bits(kk * 8 + j * 2 + 1)), [kk * 4 + j])))]
        fence_a = [_extern(f"tl::wgmma_fence_operands<{a_register_count(plan)}>",
                           tir.address_of(tir.BufferLoad(a_regs, [0])))]
        mma = _extern(plan.function, tir.address_of(tir.BufferLoad(acc, [t.slot(mi, ni)])),
                      tir.address_of(tir.BufferLoad(a_regs, [kk * 4])), b_desc, tir.const(1, "int32"))
    else:
        mma = _extern(plan.function, tir.address_of(tir.BufferLoad(acc, [t.slot(mi, ni)])),
                      _descriptor(a, plan.a_tile, plan.trans_a, row0 + mi * 64, kk, plan.k_step), b_desc,
                      tir.const(1, "int32"))

    pending = _pending(op)
    wait = _extern(f"tl::wgmma_wait<{pending}>")
    # `fenced` (set by the TMA pipeline for the gemms of a loop that writes no shared memory):
    # the pipeline fenced the tiles' generic-proxy writes once, before its loop
    fenced = len(op.args) > 11 and op.int_arg(11)

    phase = _phase(op)

    def per_thread(thread):
        if phase == WAIT:
            return seq([wait, fence_acc, *fence_a])
        body = []
        if op.int_arg(6):  # clear_accum
            s = tir.Var("s", "int32")
            body.append(_loop(s, t.slots, tir.BufferStore(acc, tir.const(0, acc.dtype), [s])))
        body += [
            tir.Bind(group, thread // WARPGROUP),
            tir.Bind(row0, gr),
            tir.Bind(col0, gc),
            *a_pack,
            *fence_a,
            fence_acc,
            # the tiles' writers fence too (after their cp.async wait); this one covers writers
            # that could not (cp.async completing on an mbarrier); TMA-fed gemms need none
            *([] if pending or fenced else [_extern("tl::fence_proxy_async")]),
            _extern("tl::wgmma_fence"),
            _loop(kk, plan.k_steps, _loop(mi, t.mi, _loop(ni, t.ni, mma))),
            _extern("tl::wgmma_commit"),
        ]
        if phase != ISSUE:
            body += [wait, fence_acc, *fence_a]
        return seq(body)

    return ctx.per_thread(per_thread, span=op.stmt.span)


# `phase` (gemm argument 12, set by the TMA pipeline's overlapped form, `lower_tma`): the whole
# call, only its issue (fences, instructions, commit: the group stays in flight), or only its
# wait (`wgmma_wait<wg_wait>`, then the accumulator and A's registers pinned again)
WHOLE, ISSUE, WAIT = 0, 1, 2


def _phase(op: TileOp) -> int:
    return op.int_arg(12) if len(op.args) > 12 else WHOLE


def _given_a_registers(op: TileOp):
    """The rs form's A registers the pipeline declared (gemm argument 13, a load of them), or None."""
    return op.args[13].source if len(op.args) > 13 else None


def a_register_count(plan: WgmmaPlan) -> int:
    """How many 32-bit registers the rs form packs A into (4 per k-step)."""
    return plan.k_steps * 4


def _pending(op: TileOp) -> int:
    """`wg_wait` (set by the TMA pipeline, `lower_tma`, which waits for the rest after its
    loop): the wgmma groups of earlier calls this one may leave in flight."""
    return op.int_arg(10) if len(op.args) > 10 else 0


def _lower_swapped(plan: WgmmaPlan, op: TileOp, ctx) -> tir.Stmt:
    """The swapped tf32 form, C^T = B^T A^T (module docstring): per k-step, each thread loads
    its 4 words of B^T per m64 block from B's shared tile (`tf32_a_element`; the tile's
    swizzled placement is applied to these accesses later), fences, issues the k-step's
    instructions with A_s as the instruction's B, and commits them as one group.

    The registers of k-step kk are written again only after the group that read them is
    complete: a call waits until at most k_steps - 1 groups are pending before writing them
    (the previous call's group kk is then done), and returns with `pending` calls' groups in
    flight (`wg_wait`)."""
    a, b, c = op.regions[:3]
    t = plan.tiling  # over C^T: rows are N of C, columns M of C
    acc = ctx.register_buffer(c.buffer)
    steps = plan.k_steps
    regs = tir.decl_buffer((steps * t.mi * 4,), "float32", name="bt_regs", scope="local")
    group = tir.Var("warpgroup", "int32")
    row0, col0 = tir.Var("group_row", "int32"), tir.Var("group_col", "int32")
    mi, ni, j = (tir.Var(name, "int32") for name in ("mi", "ni", "j"))
    gr, gc = t.group_origin(group)
    pending = _pending(op)

    def pin(count, buf, first=0):
        return _extern(f"tl::wgmma_fence_operands<{count}>", tir.address_of(tir.BufferLoad(buf, [first])))

    def per_thread(thread):
        local = thread % WARPGROUP
        body = []
        if op.int_arg(6):  # clear_accum
            s = tir.Var("s", "int32")
            body.append(_loop(s, t.slots, tir.BufferStore(acc, tir.const(0, acc.dtype), [s])))
        body += [tir.Bind(group, thread // WARPGROUP), tir.Bind(row0, gr), tir.Bind(col0, gc),
                 tir.AllocBuffer(regs), pin(t.slots, acc)]
        if not pending:
            body.append(_extern("tl::fence_proxy_async"))
        for kk in range(steps):
            first = kk * t.mi * 4
            row, col = tf32_a_element(local, j)
            idx = list(b.mins)
            idx[-2], idx[-1] = idx[-2] + kk * 8 + col, idx[-1] + row0 + mi * 64 + row
            load = _loop(mi, t.mi, _loop(j, 4, tir.BufferStore(regs, tir.BufferLoad(b.buffer, idx),
                                                                [first + mi * 4 + j])))
            mma = _extern(plan.function, tir.address_of(tir.BufferLoad(acc, [t.slot(mi, ni)])),
                          tir.address_of(tir.BufferLoad(regs, [first + mi * 4])),
                          _descriptor(a, plan.a_tile, False, col0 + ni * t.inst_n, kk, plan.k_step),
                          tir.const(1, "int32"))
            body += [
                *([_extern(f"tl::wgmma_wait<{steps - 1}>")] if pending else []),
                load,
                pin(t.mi * 4, regs, first),
                _extern("tl::wgmma_fence"),
                _loop(mi, t.mi, _loop(ni, t.ni, mma)),
                _extern("tl::wgmma_commit"),
            ]
        body += [_extern(f"tl::wgmma_wait<{pending * steps}>"), pin(t.slots, acc), pin(steps * t.mi * 4, regs)]
        return seq(body)

    return ctx.per_thread(per_thread, span=op.stmt.span)

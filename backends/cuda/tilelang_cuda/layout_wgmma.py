"""Layouts of `T.gemm` on wgmma (sm_90a): the warpgroup split of the accumulator, the wgmma
D-fragment, and the swizzled shared tiles that matrix descriptors can address.

Every index function takes Python ints and TIR expressions alike (`+ - * // %` and `xor`).

**D fragment** (PTX ISA "Register fragments and shared memory matrix layouts", wgmma
.m64nNk16 D, f32 accumulators): thread `t` of a warpgroup holds N/2 values; value `i` is at

    row = 16 * (t // 32) + (t % 32) // 4 + 8 * ((i // 2) % 2)
    col = 8 * (i // 4) + 2 * (t % 4) + i % 2

**tf32 A fragment** (PTX ISA "Register fragments", wgmma .m64nNk8 A, 32-bit types; CuTe's
`ALayout_64x8`): register `j` (0..3) of thread `t` holds one float32 word at

    row = 16 * (t // 32) + (t % 32) // 4 + 8 * (j % 2)
    col = (t % 4) + 4 * (j // 2)

which is mma.sync m16n8k8's tf32 A fragment with the 4 warps stacked along M.

**Shared tiles** (PTX ISA "Shared memory matrix layout", CuTe's `Layout_{K,MN}_SW{32,64,128}
_Atom`): a row-major (rows, cols) tile is cut along its columns into slabs of `width` bytes
(128, or the whole row when it is 64 or 32 bytes); each slab is stored whole, rows after rows,
slab after slab, and inside it the 16-byte chunks of row r are XOR-ed with bits 7.. of the
byte offset: chunk c of row r lands at c ^ ((r // (8 / chunks)) % chunks), `chunks` =
width / 16 (CuTe's Swizzle<log2 chunks, 4, 3>). With the tile aligned to 8 * width bytes,
the XOR is the one the hardware applies to the absolute shared address, so a descriptor
reads the tile:

- K-major operand (A not transposed, B transposed): rows are M (or N), columns K. One
  instruction reads 32 bytes of K (16 16-bit, 8 tf32 or 32 8-bit elements) inside one
  slab; SBO = 8 * width (8-row groups), LBO unused (16).
- MN-major operand (B not transposed, A transposed): rows are K, columns M (or N).
  SBO = 8 * width (8-k-row groups), LBO = rows * width (the next slab of M or N).

The same physical placement serves both majors, so a tile read both ways stays consistent.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.layout import Fragment
from tilelang_core.layout import xor

__all__ = [
    "WARPGROUP",
    "WGMMA_DTYPES",
    "WGMMA_K_BYTES",
    "K_MAJOR_ONLY",
    "wgmma_k",
    "WgmmaTile",
    "wgmma_tile",
    "WarpgroupTiling",
    "choose_warpgroups",
    "d_element",
    "tf32_a_element",
    "wgmma_accumulator_layout",
    "transposed_accumulator_layout",
    "tf32_a_layout",
]

WARPGROUP = 128
# (operand dtype, accumulator dtype) -> the instruction's operand type. float32 operands run
# as tf32: the unit reads the float32 words in shared memory as stored, with no rounding step
# (we model it as dropping their 13 low mantissa bits: tests/cuda/wgmma_emulator.py, checked on
# an H100 by test_tf32_operand_rounding_on_the_gpu); fp8 and int8 take k32 instructions.
WGMMA_DTYPES = {("float16", "float32"): "f16", ("bfloat16", "float32"): "bf16", ("float32", "float32"): "tf32",
                ("float8_e4m3fn", "float32"): "e4m3", ("float8_e5m2", "float32"): "e5m2", ("int8", "int32"): "s8"}
WGMMA_K_BYTES = 32  # one instruction reads 32 bytes of K per row: k16 (16-bit), k8 (tf32), k32 (8-bit)
# operand types whose instructions read A and B K-major only (no imm-trans, PTX ISA 9.7.15.5)
K_MAJOR_ONLY = ("tf32", "e4m3", "e5m2", "s8")
_ELEMENT_BYTES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1}
_SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}  # descriptor bits 62-63


def wgmma_k(kind: str) -> int:
    """The K of one instruction of operand type `kind` (16 for f16/bf16, 8 for tf32, 32 for 8-bit)."""
    return WGMMA_K_BYTES // _ELEMENT_BYTES[kind]


@dataclass(frozen=True)
class WgmmaTile:
    """The swizzled placement of a (rows, cols) shared tile of `element_bytes` elements."""

    rows: int
    cols: int
    element_bytes: int
    width: int  # swizzle width in bytes: 128, 64 or 32

    @property
    def slab(self) -> int:
        """Elements of a row inside one slab."""
        return self.width // self.element_bytes

    @property
    def chunk(self) -> int:
        return 16 // self.element_bytes

    @property
    def chunks(self) -> int:
        return self.width // 16

    @property
    def mode(self) -> int:
        return _SWIZZLE_MODE[self.width]

    @property
    def atom_bytes(self) -> int:
        """The alignment the tile needs: one swizzle pattern (8 rows of a slab)."""
        return 8 * self.width

    def flat(self, row, col):
        """Element offset of logical (row, col) from the tile's start."""
        slab, inner = col // self.slab, col % self.slab
        turn = xor(inner // self.chunk, (row // (8 // self.chunks)) % self.chunks)
        return slab * (self.rows * self.slab) + row * self.slab + turn * self.chunk + inner % self.chunk

    def physical(self, row, col):
        """(row, col) of a buffer of the tile's shape where logical (row, col) is stored."""
        flat = self.flat(row, col)
        return flat // self.cols, flat % self.cols

    def descriptor_offsets(self, mn_major: bool) -> tuple[int, int]:
        """(LBO, SBO) in bytes for a descriptor of this tile read K-major or MN-major."""
        sbo = 8 * self.width
        return (self.rows * self.width if mn_major else 16), sbo


def wgmma_tile(rows: int, cols: int, element_bytes: int) -> WgmmaTile | None:
    """The placement of a (rows, cols) tile, or None when no descriptor can read it (rows not
    a multiple of 8, a row of 16 bytes, a row that is neither 32, 64 nor a multiple of 128 bytes)."""
    row_bytes = cols * element_bytes
    if rows % 8 or row_bytes < 32:
        return None
    if row_bytes % 128 == 0:
        return WgmmaTile(rows, cols, element_bytes, 128)
    if row_bytes in (32, 64):
        return WgmmaTile(rows, cols, element_bytes, row_bytes)
    return None


# ---------------------------------------------------------------------------- accumulators


def d_element(t, i):
    """(row, col) in the 64 x N D tile of value `i` of thread `t` (0..127) of a warpgroup."""
    lane = t % 32
    return 16 * (t // 32) + lane // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (lane % 4) + i % 2


def tf32_a_element(t, j):
    """(row, k) in the 64 x 8 A tile of register `j` (0..3) of thread `t` of a warpgroup, for
    tf32 A read from registers (module docstring)."""
    lane = t % 32
    return 16 * (t // 32) + lane // 4 + 8 * (j % 2), lane % 4 + 4 * (j // 2)


@dataclass(frozen=True)
class WarpgroupTiling:
    """How the warpgroups of a block split an (M, N) accumulator: `groups_m` x `groups_n`,
    warpgroup `g` at row block `g % groups_m`, column block `g // groups_m`; each owns
    `mi` x `ni` instructions of m64 n`inst_n`."""

    m: int
    n: int
    groups_m: int
    groups_n: int
    inst_n: int

    @property
    def group_m(self) -> int:
        return self.m // self.groups_m

    @property
    def group_n(self) -> int:
        return self.n // self.groups_n

    @property
    def mi(self) -> int:
        return self.group_m // 64

    @property
    def ni(self) -> int:
        return self.group_n // self.inst_n

    @property
    def values(self) -> int:
        """Accumulator registers per thread of one instruction."""
        return self.inst_n // 2

    @property
    def slots(self) -> int:
        return self.mi * self.ni * self.values

    @property
    def threads(self) -> int:
        return self.groups_m * self.groups_n * WARPGROUP

    def group_origin(self, group):
        return (group % self.groups_m) * self.group_m, (group // self.groups_m) * self.group_n

    def slot(self, mi, ni):
        """First register slot of instruction (mi, ni): instructions in row-major order."""
        return (mi * self.ni + ni) * self.values


def _instruction_n(group_n: int, step: int) -> int | None:
    """The widest N <= 256 that is a multiple of `step` and divides `group_n`."""
    for n in range(min(group_n, 256), 0, -8):
        if group_n % n == 0 and n % step == 0:
            return n
    return None


def choose_warpgroups(m: int, n: int, groups: int, n_step: int = 8) -> WarpgroupTiling | None:
    """The split of `groups` warpgroups over (M, N): M first (each group whole m64 blocks),
    then N; None when no split gives whole instructions. `n_step` is the granularity an
    instruction's N (and each group's N offset) must keep (an MN-major B's slab)."""
    for gm in range(groups, 0, -1):
        if groups % gm or m % (gm * 64):
            continue
        gn = groups // gm
        if n % gn or (n // gn) % n_step:
            continue
        inst = _instruction_n(n // gn, n_step)
        if inst is not None:
            return WarpgroupTiling(m, n, gm, gn, inst)
    return None


def wgmma_accumulator_layout(tiling: WarpgroupTiling) -> Fragment:
    """The block's (M, N) accumulator in wgmma D fragments, warpgroup by warpgroup: slot
    `tiling.slot(mi, ni) + i` of a thread holds value i of instruction (mi, ni)."""
    t = tiling

    def element_of(thread, slot):
        group, local = thread // WARPGROUP, thread % WARPGROUP
        row0, col0 = t.group_origin(group)
        sub, value = slot // t.values, slot % t.values
        row, col = d_element(local, value)
        return row0 + (sub // t.ni) * 64 + row, col0 + (sub % t.ni) * t.inst_n + col

    return Fragment((t.m, t.n), t.threads, t.slots, element_of,
                    f"wgmma.D.m64n{t.inst_n}[{t.groups_m}x{t.groups_n} warpgroups]")


def transposed_accumulator_layout(tiling: WarpgroupTiling) -> Fragment:
    """An (N, M) tile C whose transpose C^T (M, N) is `tiling`'s accumulator: C[i, j] sits in
    the register that holds D[j, i] (a gemm computed as C^T = B^T A^T)."""
    d = wgmma_accumulator_layout(tiling)

    def element_of(thread, slot):
        row, col = d.element_of(thread, slot)
        return col, row

    return Fragment((tiling.n, tiling.m), d.threads, d.slots, element_of, f"transposed {d.name}")


def tf32_a_layout(m: int, k: int, groups: int) -> Fragment:
    """An (M, K) float32 tile held as the tf32 A operand of wgmma by `groups` warpgroups
    stacked along M (M = 64 * groups): slot `kk * 4 + j` of a thread holds register j of
    k-step kk (`tf32_a_element`)."""
    steps = k // 8

    def element_of(thread, slot):
        row, col = tf32_a_element(thread % WARPGROUP, slot % 4)
        return (thread // WARPGROUP) * 64 + row, (slot // 4) * 8 + col

    return Fragment((m, k), groups * WARPGROUP, steps * 4, element_of, f"wgmma.A.tf32.m64k8[{groups} warpgroups]")

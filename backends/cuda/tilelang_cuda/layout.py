"""Tensor-core layouts of the CUDA backend: mma.sync instruction shapes, their fragment
layouts, the split of a block's (M, N) tile over warps, and the XOR swizzle of shared tiles.

Every index function here takes Python ints and TIR expressions alike (`+ - * // %` and
`xor` only), so one definition serves the lowering (TIR) and the NumPy emulator tests (ints).

Fragment layouts are PTX ISA "Matrix fragments for mma.m16n8k{8,16,32}" (CuTe's
`MMA_Traits<SM80_16x8x{8,16,32}_...>` describe the same maps). With `gid = lane // 4` and
`tig = lane % 4`, register `r` of a lane holds `per_reg` consecutive k-elements:

    A (16 x K):  row = gid + 8 * (r % 2),  k = tig * per_reg + e + (K / 2) * (r // 2)
    B (K x 8):   col = gid,                k = tig * per_reg + e + (K / 2) * r
    C (16 x 8):  row = gid + 8 * (v // 2), col = 2 * tig + v % 2       (4 values, f32 / s32)

with `per_reg` = 32 bits / element bits (2 for f16/bf16, 4 for s8, 1 for tf32) and `e` the
element inside the register.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.layout import Fragment
from tilelang_core.layout import xor as xor

__all__ = [
    "MmaInstruction",
    "MMA_INSTRUCTIONS",
    "mma_instruction",
    "WarpTiling",
    "choose_warps",
    "accumulator_layout",
    "a_operand_layout",
    "a_element",
    "b_element",
    "c_element",
    "Swizzle",
    "swizzle_for",
    "xor",
]

WARP = 32
CHUNK_BYTES = 16  # one ldmatrix row, one cp.async vector, one swizzle unit


@dataclass(frozen=True)
class MmaInstruction:
    """One mma.sync shape m16n8k{k} for (operand dtype, accumulator dtype)."""

    k: int
    operand: str  # dtype of A and B in shared memory
    accumulator: str
    function: str  # the header's wrapper: fn(acc* d, const uint32_t* a, const uint32_t* b, const acc* c)
    element_bits: int
    convert: str | None = None  # applied to each loaded operand register (fp32 -> tf32)

    m: int = 16
    n: int = 8

    @property
    def per_reg(self) -> int:
        return 32 // self.element_bits

    @property
    def chunk(self) -> int:
        """Elements in 16 bytes: one ldmatrix row, one swizzle unit."""
        return CHUNK_BYTES * 8 // self.element_bits

    @property
    def ldmatrix_trans_ok(self) -> bool:
        """ldmatrix .trans moves 16-bit elements: only f16/bf16 operands may be transposed."""
        return self.element_bits == 16


MMA_INSTRUCTIONS = {
    ("float16", "float32"): MmaInstruction(16, "float16", "float32", "tl::mma_m16n8k16_f16_f32", 16),
    ("bfloat16", "float32"): MmaInstruction(16, "bfloat16", "float32", "tl::mma_m16n8k16_bf16_f32", 16),
    # f16 accumulator: one rounding to f16 per k16 step, as the instruction does in TileLang
    ("float16", "float16"): MmaInstruction(16, "float16", "float16", "tl::mma_m16n8k16_f16_f16_halves", 16),
    ("int8", "int32"): MmaInstruction(32, "int8", "int32", "tl::mma_m16n8k32_s8_s32", 8),
    # float32 operands run as tf32 (10-bit mantissa, rounded to nearest), as TileLang does
    ("float32", "float32"): MmaInstruction(8, "float32", "float32", "tl::mma_m16n8k8_tf32_f32", 32,
                                           convert="tl::mma_round_tf32"),
}


def mma_instruction(operand: str, accumulator: str) -> MmaInstruction | None:
    return MMA_INSTRUCTIONS.get((operand, accumulator))


# ---------------------------------------------------------------------------- fragments


def a_element(inst: MmaInstruction, lane, reg: int, e: int):
    """(row, k) in the 16 x K tile of A held by element `e` of register `reg` of `lane`."""
    gid, tig = lane // 4, lane % 4
    return gid + 8 * (reg % 2), tig * inst.per_reg + e + (inst.k // 2) * (reg // 2)


def b_element(inst: MmaInstruction, lane, reg: int, e: int):
    """(k, col) in the K x 8 tile of B held by element `e` of register `reg` of `lane`."""
    gid, tig = lane // 4, lane % 4
    return tig * inst.per_reg + e + (inst.k // 2) * reg, gid


def c_element(lane, value):
    """(row, col) in the 16 x 8 tile of C/D held by accumulator value `value` (0..3) of `lane`."""
    gid, tig = lane // 4, lane % 4
    return gid + 8 * (value // 2), 2 * tig + value % 2


# ---------------------------------------------------------------------------- warps


@dataclass(frozen=True)
class WarpTiling:
    """How the warps of a block split an (M, N) accumulator: `warps_m` x `warps_n` warps,
    warp `w` at row block `w % warps_m`, column block `w // warps_m`, each owning an
    (`mi` * 16) x (`ni` * 8) tile of mma sub-tiles."""

    m: int
    n: int
    warps_m: int
    warps_n: int

    @property
    def warp_m(self) -> int:
        return self.m // self.warps_m

    @property
    def warp_n(self) -> int:
        return self.n // self.warps_n

    @property
    def mi(self) -> int:
        return self.warp_m // 16

    @property
    def ni(self) -> int:
        return self.warp_n // 8

    @property
    def threads(self) -> int:
        return self.warps_m * self.warps_n * WARP

    @property
    def slots(self) -> int:
        return self.mi * self.ni * 4

    def warp_origin(self, warp):
        """(row, col) of the first element of `warp`'s tile."""
        return (warp % self.warps_m) * self.warp_m, (warp // self.warps_m) * self.warp_n

    def slot(self, mi, ni, value):
        """Register slot of accumulator value `value` of sub-tile (mi, ni): sub-tiles in
        row-major order, 4 consecutive slots each, as the mma wrapper takes them."""
        return (mi * self.ni + ni) * 4 + value


def choose_warps(m: int, n: int, warps: int, policy: int) -> WarpTiling | None:
    """The warp tiling for `policy` (0 Square, 1 FullRow, 2 FullCol), or None when no split
    of `warps` warps gives every warp whole 16 x 8 sub-tiles.

    FullRow stacks the warps along M, FullCol along N; Square keeps each warp's tile as close
    to square as the divisibility allows (more warps along M on ties). A policy the shape
    does not allow falls back to Square."""
    options = [WarpTiling(m, n, wm, warps // wm) for wm in range(1, warps + 1)
               if warps % wm == 0 and m % (wm * 16) == 0 and n % ((warps // wm) * 8) == 0]
    if not options:
        return None
    if policy == 1:
        for t in options:
            if t.warps_m == warps:
                return t
    if policy == 2:
        for t in options:
            if t.warps_n == warps:
                return t
    return min(options, key=lambda t: (abs(t.warp_m - t.warp_n), -t.warps_m))


def accumulator_layout(tiling: WarpTiling) -> Fragment:
    """The block's (M, N) accumulator in mma.sync's C fragments, warp by warp: slot
    `tiling.slot(mi, ni, v)` of a lane holds value v of its (mi, ni) sub-tile."""
    t = tiling

    def element_of(thread, slot):
        warp, lane = thread // WARP, thread % WARP
        row0, col0 = t.warp_origin(warp)
        sub, value = slot // 4, slot % 4
        row, col = c_element(lane, value)
        return row0 + (sub // t.ni) * 16 + row, col0 + (sub % t.ni) * 8 + col

    return Fragment((t.m, t.n), t.threads, t.slots, element_of,
                    f"mma.sync.C.m16n8[{t.warps_m}x{t.warps_n} warps]")


def a_operand_layout(tiling: WarpTiling, inst: MmaInstruction, k: int) -> Fragment:
    """An (M, K) A operand held in registers in mma.sync's A fragments (the "rs" form): the
    warps of a row block hold its rows (replicated over the warps along N); per 16-row sub-tile
    `mi` and k-step `kk`, register `reg` of a lane packs `per_reg` consecutive k-elements, slot
    `((mi * k_steps + kk) * 4 + reg) * per_reg + e` (PTX ISA "Matrix fragments for
    mma.m16n8k16", A)."""
    t, per = tiling, inst.per_reg
    steps = k // inst.k

    def element_of(thread, slot):
        warp, lane = thread // WARP, thread % WARP
        row0 = (warp % t.warps_m) * t.warp_m
        e, reg = slot % per, (slot // per) % 4
        kk, mi = (slot // (4 * per)) % steps, slot // (4 * per * steps)
        row, col = a_element(inst, lane, reg, e)
        return row0 + mi * 16 + row, kk * inst.k + col

    return Fragment((t.m, k), t.threads, t.mi * steps * 4 * per, element_of,
                    f"mma.sync.A.m16k{inst.k}[{t.warps_m}x{t.warps_n} warps]")


# ---------------------------------------------------------------------------- swizzle


@dataclass(frozen=True)
class Swizzle:
    """An XOR swizzle of 16-byte chunks inside the rows of a (rows, cols) shared tile, so the
    8 row addresses of one ldmatrix (same column, 8 consecutive rows) fall in 8 different
    bank groups. `chunk` elements make 16 bytes; a row has `chunks` of them (a power of 2).

    Row r's chunk c is stored at chunk c ^ s(r), s(r) = r % 8 for rows of 8 or more chunks,
    else (r // (8 / chunks)) % chunks: the rows that share a 128-byte line differ in the
    line half they use, the others in the XOR."""

    chunk: int
    chunks: int

    @property
    def key(self) -> str:
        return f"xor16B[{self.chunks} chunks of {self.chunk}]"

    def row_xor(self, row):
        if self.chunks >= 8:
            return row % 8
        return (row // (8 // self.chunks)) % self.chunks

    def physical(self, row, col):
        """(row, col) where logical element (row, col) is stored."""
        return row, xor(col // self.chunk, self.row_xor(row)) * self.chunk + col % self.chunk


def swizzle_for(cols: int, element_bits: int) -> Swizzle | None:
    """The swizzle of a tile whose rows hold `cols` elements, or None when there is none to
    make (rows of one chunk, or a chunk count that is not a power of 2)."""
    chunk = CHUNK_BYTES * 8 // element_bits
    if cols % chunk:
        return None
    chunks = cols // chunk
    if chunks < 2 or chunks & (chunks - 1):
        return None
    return Swizzle(chunk, chunks)

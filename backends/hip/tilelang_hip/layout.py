"""MFMA layouts of the HIP backend: the 16x16xK instructions, their lane layouts, the split of
a block's (M, N) tile over wavefronts, and the register layouts a `T.gemm` imposes.

Every index function here takes Python ints and TIR expressions alike (`+ - * // %` only), so
one definition serves the lowering (TIR), the layouts (NumPy tables) and the tests (ints).

Lane layouts of one 16x16xK instruction, E = K / 4 elements per lane (AMD Matrix Instruction
Calculator, `--register-layout` for v_mfma_f32_16x16x16f16 / v_mfma_i32_16x16x32i8; the same
functions as TileLang's `tilelang/intrinsics/mfma_layout.py`):

    A (16 x K):  lane l, element i holds A[l % 16][E * (l // 16) + i]
    B (K x 16):  lane l, element i holds B[E * (l // 16) + i][l % 16]
    D (16 x 16): lane l, element i holds D[4 * (l // 16) + i][l % 16]

A `T.gemm` issues every MFMA with its operands swapped: the instruction computes
C^T = B^T A^T, its first operand the B fragment and its second the A fragment. A's and B's lane
layouts are transposes of each other, so the fragments are loaded exactly as above, and D is
C^T: lane l, element i holds C[l % 16][4 * (l // 16) + i] (`accumulator_element`). That is the
layout of the instruction's A operand (E = 4): the accumulator of one gemm, cast, is the
register A operand of the next one, lane for lane (FlashAttention's P = softmax(Q K^T) feeding
P V never leaves registers). It also gives each lane 4 consecutive columns of a row (vector
stores, row reductions inside the lane and across 4 lanes).

For instructions with E = 8 (K = 32: int8 and float8 on gfx942), a register A operand keeps the
accumulator's ownership by permuting K inside the instruction: element i of lane l holds
k = 16 * (i // 4) + 4 * (l // 16) + i % 4 of A and of B (`register_k`). A dot product does
not depend on the order of its terms, so the MFMA computes the same sum.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilelang_core.layout import Fragment

__all__ = [
    "TILE",
    "ACCUMULATOR_NAME",
    "MFMAInstruction",
    "mfma_instruction",
    "a_element",
    "b_element",
    "c_element",
    "accumulator_element",
    "register_k",
    "GemmPlan",
    "wave_grid",
    "wave_origin",
    "a_fragment_element",
    "b_fragment_element",
    "accumulator_slot",
    "a_register_slot",
    "accumulator_layout",
    "a_operand_layout",
]

TILE = 16  # M and N of every instruction used here
ACCUMULATOR_NAME = "hip.mfma16x16.C"  # the name of every `accumulator_layout`, before its wave grid


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
    """The 16x16xK MFMA of `arch` for these dtypes, or None."""
    return _INSTRUCTIONS.get(arch, {}).get((in_dtype, acc_dtype))


# -- one instruction's lanes (ints or TIR expressions) -----------------------------------------


def a_element(lane, i, elems: int):
    """(m, k) of element `i` of lane `lane`'s A fragment (the instruction's documented layout)."""
    return lane % TILE, elems * (lane // TILE) + i


def b_element(lane, i, elems: int):
    """(k, n) of element `i` of lane `lane`'s B fragment (documented layout)."""
    return elems * (lane // TILE) + i, lane % TILE


def c_element(lane, i):
    """(m, n) of element `i` (0..3) of lane `lane`'s D registers (documented layout)."""
    return 4 * (lane // TILE) + i, lane % TILE


def accumulator_element(lane, i):
    """(m, n) of the gemm's C tile held in element `i` of lane `lane`: the MFMA runs with its
    operands swapped and returns C^T in D's layout (see the module docstring)."""
    n, m = c_element(lane, i)
    return m, n


def register_k(lane, i, elems: int):
    """The k (inside one instruction) of element `i` of lane `lane` when A comes from registers:
    the columns the lane's accumulator elements hold, 16 columns at a time. For E = 4 this is
    the documented `E * (lane // 16) + i`; for E = 8 a permutation of it."""
    return TILE * (i // 4) + 4 * (lane // TILE) + i % 4


# -- a block's gemm ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GemmPlan:
    """How one T.gemm runs on MFMA: C (m x n) in 16x16 tiles, waves in a waves_m x waves_n
    grid, each wave owning tiles_m x tiles_n neighbouring tiles; K in steps of `instr.k`.
    `a_registers`: A is an (m x k) fragment held in `a_operand_layout` (the "rs" form)."""

    instr: MFMAInstruction
    m: int
    n: int
    k: int
    waves_m: int
    waves_n: int
    wave_size: int
    a_registers: bool = False

    @property
    def tiles_m(self) -> int:
        return self.m // TILE // self.waves_m

    @property
    def tiles_n(self) -> int:
        return self.n // TILE // self.waves_n

    @property
    def k_steps(self) -> int:
        return self.k // self.instr.k

    @property
    def threads(self) -> int:
        return self.waves_m * self.waves_n * self.wave_size

    def k_of(self, lane, i):
        """The k (inside one instruction) that element `i` of `lane`'s A and B fragments hold."""
        if self.a_registers:
            return register_k(lane, i, self.instr.elems)
        return self.instr.elems * (lane // TILE) + i


def wave_grid(tiles_m: int, tiles_n: int, waves: int, policy: int) -> tuple[int, int] | None:
    """(waves_m, waves_n) that split tiles_m x tiles_n evenly; the policy (0 Square, 1 FullRow:
    waves stacked along M, 2 FullCol: along N) orders the candidates. None when no split gives
    every wave whole tiles."""
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


def wave_origin(plan: GemmPlan, wave):
    """(row, col) of the first element of C that wave `wave` computes; waves take tile blocks
    column-major: wave = wave_m + waves_m * wave_n."""
    return ((wave % plan.waves_m) * (plan.tiles_m * TILE), (wave // plan.waves_m) * (plan.tiles_n * TILE))


def a_fragment_element(plan: GemmPlan, wave, lane, tile, i, k0):
    """(m, k) in the gemm's A (M x K) of element `i` of lane `lane`'s fragment for the wave's
    `tile`-th row of tiles, at K offset `k0`."""
    return wave_origin(plan, wave)[0] + tile * TILE + lane % TILE, k0 + plan.k_of(lane, i)


def b_fragment_element(plan: GemmPlan, wave, lane, tile, i, k0):
    """(k, n) in the gemm's B (K x N), as `a_fragment_element` for the wave's columns."""
    return k0 + plan.k_of(lane, i), wave_origin(plan, wave)[1] + tile * TILE + lane % TILE


def accumulator_slot(plan: GemmPlan, tile_m, tile_n, i):
    """The register slot of accumulator element `i` of the wave's tile (tile_m, tile_n)."""
    return (tile_m * plan.tiles_n + tile_n) * 4 + i


def a_register_slot(plan: GemmPlan, tile, kk, i=0):
    """The slot of a register A operand (`a_operand_layout`) that holds element `i` of the
    lane's fragment for the wave's `tile`-th row of tiles at k-step `kk`; the E elements of
    one fragment are consecutive slots."""
    return (tile * plan.k_steps + kk) * plan.instr.elems + i


def accumulator_layout(plan: GemmPlan) -> Fragment:
    """C's register layout: thread `w * 64 + l` (wave w, lane l) holds, for each of its wave's
    tiles (a, b) and i in 0..3, element `accumulator_element(l, i)` of that tile in slot
    `accumulator_slot(plan, a, b, i)`."""
    tm, tn, ws = plan.tiles_m, plan.tiles_n, plan.wave_size

    def element_of(thread, slot):
        wave, lane = thread // ws, thread % ws
        row0, col0 = wave_origin(plan, wave)
        row, col = accumulator_element(lane, slot % 4)
        return [row0 + (slot // (4 * tn)) * TILE + row, col0 + ((slot // 4) % tn) * TILE + col]

    name = f"{ACCUMULATOR_NAME}[{plan.waves_m}x{plan.waves_n} waves]"
    return Fragment((plan.m, plan.n), plan.threads, tm * tn * 4, element_of, name)


def a_operand_layout(plan: GemmPlan) -> Fragment:
    """A (M x K) held in registers as the MFMA's A fragments (the "rs" form): the waves of a
    row block hold its rows (replicated over the waves along N); slot
    `a_register_slot(plan, tile, kk, i)` of lane l holds row `tile * 16 + l % 16` of the wave's
    rows and column `kk * K_instr + register_k(l, i)`. With one wave along N this is exactly the
    `accumulator_layout` of a gemm with the same waves_m and N = K (for K_instr = 16 and 32):
    the cast of one gemm's accumulator feeds the next gemm in place."""
    e, steps, ws = plan.instr.elems, plan.k_steps, plan.wave_size

    def element_of(thread, slot):
        wave, lane = thread // ws, thread % ws
        row0 = wave_origin(plan, wave)[0]
        i, kk, tile = slot % e, (slot // e) % steps, slot // (e * steps)
        return [row0 + tile * TILE + lane % TILE, kk * plan.instr.k + register_k(lane, i, e)]

    name = f"hip.mfma16x16.A[{plan.waves_m}x{plan.waves_n} waves, k{plan.instr.k}]"
    return Fragment((plan.m, plan.k), plan.threads, plan.tiles_m * steps * e, element_of, name)

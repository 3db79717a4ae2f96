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

from tilelang_core.layout import Fragment, TiledGemmPlan, split_tiles

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
class GemmPlan(TiledGemmPlan):
    """How one T.gemm runs on MFMA: C (m x n) in 16x16 tiles, waves (of `lanes` lanes) in a
    groups_m x groups_n grid, each wave owning tiles_m x tiles_n neighbouring tiles; K in steps
    of `instr.k` (`tilelang_core.layout.TiledGemmPlan`). `a_registers`: A is an (m x k)
    fragment held in `a_operand_layout` (the "rs" form)."""

    instr: MFMAInstruction
    m: int
    n: int
    k: int
    groups_m: int
    groups_n: int
    lanes: int
    a_registers: bool = False

    tile = TILE
    acc_elems = 4
    accumulator_name = ACCUMULATOR_NAME
    accumulator_element = staticmethod(accumulator_element)

    k_tile = property(lambda self: self.instr.k)
    operand_elems = property(lambda self: self.instr.elems)
    in_dtype = property(lambda self: self.instr.in_dtype)
    acc_dtype = property(lambda self: self.instr.acc_dtype)

    def k_of(self, lane, i):
        """The k (inside one instruction) that element `i` of `lane`'s A and B fragments hold."""
        if self.a_registers:
            return register_k(lane, i, self.instr.elems)
        return self.instr.elems * (lane // TILE) + i

    def a_operand_element(self, lane, i):
        """(m, k) inside an A tile and k-step of element `i` of a register A operand."""
        return lane % TILE, register_k(lane, i, self.instr.elems)

    def a_load_element(self, lane, i):
        """(m, k) inside an A tile and k-step of element `i` of the lane's A fragment."""
        return lane % TILE, self.k_of(lane, i)

    def b_load_element(self, lane, i):
        """(k, n) inside a B tile and k-step of element `i` of the lane's B fragment."""
        return self.k_of(lane, i), lane % TILE

    def accumulator_layout(self) -> Fragment:
        """C's register layout: thread `w * 64 + l` (wave w, lane l) holds, for each of its
        wave's tiles (a, b) and i in 0..3, element `accumulator_element(l, i)` of that tile in
        slot `accumulator_slot(a, b, i)`."""
        return self.accumulator_fragment(f"{ACCUMULATOR_NAME}[{self.groups_m}x{self.groups_n} waves]")

    def a_operand_layout(self) -> Fragment:
        """A (M x K) held in registers as the MFMA's A fragments (the "rs" form): slot
        `a_register_slot(tile, kk, i)` of lane l holds row `tile * 16 + l % 16` of the wave's
        rows and column `kk * K_instr + register_k(l, i)`. With one wave along N this is exactly
        the `accumulator_layout` of a gemm with the same groups_m and N = K (for K_instr = 16
        and 32): the cast of one gemm's accumulator feeds the next gemm in place."""
        return self.a_operand_fragment(f"hip.mfma16x16.A[{self.groups_m}x{self.groups_n} waves, k{self.instr.k}]")


# the plan's functions under the names this backend's callers know
wave_grid = split_tiles
wave_origin = GemmPlan.origin
a_fragment_element = GemmPlan.a_fragment_element
b_fragment_element = GemmPlan.b_fragment_element
accumulator_slot = GemmPlan.accumulator_slot
a_register_slot = GemmPlan.a_register_slot
accumulator_layout = GemmPlan.accumulator_layout
a_operand_layout = GemmPlan.a_operand_layout

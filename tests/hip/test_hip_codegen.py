"""The HIP dialect and the MFMA lowering, without a compiler or a GPU.

- what the printer writes (qualifiers, launch bounds, headers, LDS, barriers, types, atomics,
  printf, asserts) and the launch facts it hands the runtime;
- the MFMA fragment layouts against AMD's documented register layout, through a NumPy
  emulator of the instruction and of a whole block's T.gemm;
- which gemms take MFMA, and that the accumulator stays in registers through `T.clear`,
  element-wise epilogues and the final copy.
"""
from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core import language as T
from tilelang_core.codegen import CodegenError
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager
from tilelang_hip import layout as mfma_layout
from tilelang_hip import lower as mfma
from tilelang_hip.codegen import HIPCodegen

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.language import programs  # noqa: E402
from tests.run import kernels  # noqa: E402


def target(arch="gfx942"):
    return get_plugin_manager().parse_target(f"hip/{arch}")


def lowered(func, arch="gfx942"):
    return lower(func, target(arch), CompileOptions())


def render(func, arch="gfx942"):
    return HIPCodegen(target(arch), CompileOptions()).render(lowered(func, arch))


# ---------------------------------------------------------------------------------------------
# The dialect
# ---------------------------------------------------------------------------------------------


def test_kernel_signature_headers_and_launch():
    src = render(programs.elementwise_add(4096, block=256))
    assert src.language == "hip"
    assert src.source.index("#include <hip/hip_runtime.h>") < src.source.index('#include "tl_hip_common.h"')
    assert re.search(r'extern "C" __global__ __launch_bounds__\(256\) void \w+\(const float\* __restrict__ A, '
                     r'const float\* __restrict__ B, float\* __restrict__ C\)', src.source)
    assert "threadIdx.x" in src.source and "blockIdx.x" in src.source
    assert src.grid == (16, 1, 1) and src.block == (256, 1, 1) and src.shared_memory == 0
    assert "tl_hip_mfma.h" not in src.source


def test_lds_barriers_and_storage_types():
    src = render(programs.symbolic_copy())
    text = src.source
    assert "extern __shared__ __align__(128) unsigned char tl_dyn_smem[];" in text
    assert src.shared_memory == 32 * 64 * 2
    assert "__syncthreads();" in text
    assert "const half_t* __restrict__ A" in text and "half_t* __restrict__ B" in text
    # copies between global memory and LDS move 16-byte vectors of raw bits
    assert "typedef unsigned int tl_bits32x4 __attribute__((ext_vector_type(4)));" in text
    assert re.search(r"\(\*\(tl_bits32x4\*\)\(&S\[[^\n]*= \(\*\(tl_bits32x4\*\)\(&A\[", text)
    assert re.search(r"\(\*\(tl_bits32x4\*\)\(&B\[[^\n]*= \(\*\(tl_bits32x4\*\)\(&S\[", text)
    assert "flat % 8 * 8 < 64" not in text  # whole rows of the tile need no column mask
    # the symbolic dimension is a scalar parameter and shapes the grid
    from tilelang_core.runtime import eval_launch_expr

    assert "int32_t m" in text and eval_launch_expr(src.grid[0], {"m": 100}) == 4


def test_bfloat16_values_are_computed_in_float():
    text = render(kernels.elementwise(1000, "bfloat16")).source
    assert "bfloat16_t" in text and "tl_to_float(" in text and "tl_from_float<bfloat16_t>(" in text


def test_atomics_print_and_assert():
    text = render(programs.atomic_accumulate(256, 256, 32)).source
    assert "tl_atomic_add(&C[" in text and "tl_atomic_max(&C[" in text and "tl_atomic_min(&C[" in text
    text = render(programs.debug_ops(16)).source
    assert 'printf("[programs.py:' in text
    assert re.search(r'TL_DEVICE_ASSERT\(tx < 128, ".*too many threads"\);', text)


def test_math_and_min_max_follow_nan_semantics():
    text = render(kernels.math_ops(300)).source
    for fn in ("expf(", "logf(", "sqrtf(", "exp2f(", "tl_min("):
        assert fn in text


def test_too_many_threads_is_refused():
    @T.prim_func
    def wide(A: T.Tensor((2048,), "float32")):
        with T.Kernel(1, threads=2048) as bx:
            for i in T.Parallel(2048):
                A[i] = 0.0

    with pytest.raises(Exception, match="2048 threads per block.*max_threads_per_block"):
        render(wide)


def test_unsupported_atomic_names_the_supported_ones():
    @T.prim_func
    def half_atomic(A: T.Tensor((64,), "float16"), B: T.Tensor((64,), "float16")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                T.atomic_max(B[i], A[i])

    with pytest.raises(CodegenError, match="atomic max on float16.*supported: .*max.float32"):
        render(half_atomic)


# ---------------------------------------------------------------------------------------------
# MFMA fragment layouts against AMD's documentation
# ---------------------------------------------------------------------------------------------
#
# AMD Matrix Instruction Calculator (`matrix_calculator.py --register-layout`), 16x16xK MFMA
# with E = K / 4 inputs per lane: A[m][k] sits in lane m + 16 * (k // E), element k % E (for
# v_mfma_f32_16x16x16f16: A[0][0..3] in lane 0, A[0][4..7] in lane 16); B[k][n] in lane
# n + 16 * (k // E), element k % E; D[m][n] in lane n + 16 * (m // 4), element m % 4.
# These functions say where an element is; the backend's say what a lane holds, so the test
# checks one against the other rather than a formula against itself.


def doc_a_lane(m, k, elems):
    return m + 16 * (k // elems), k % elems


def doc_b_lane(k, n, elems):
    return n + 16 * (k // elems), k % elems


def doc_d_lane(m, n):
    return n + 16 * (m // 4), m % 4


def emulate_mfma(a_regs, b_regs, c_regs, elems):
    """One 16x16xK MFMA as the hardware runs it: registers (lane, element) in, D out."""
    k = 4 * elems
    a = np.array([[a_regs[doc_a_lane(m, kk, elems)] for kk in range(k)] for m in range(16)], np.float64)
    b = np.array([[b_regs[doc_b_lane(kk, n, elems)] for n in range(16)] for kk in range(k)], np.float64)
    c = np.array([[c_regs[doc_d_lane(m, n)] for n in range(16)] for m in range(16)], np.float64)
    d = a @ b + c
    out = np.zeros((64, 4))
    for m, n in itertools.product(range(16), range(16)):
        out[doc_d_lane(m, n)] = d[m, n]
    return out


@pytest.mark.parametrize("elems", [4, 8])  # K = 16 (f16, bf16, gfx90a i8), 32 (gfx942 i8)
def test_lane_layouts_match_the_documented_registers(elems):
    rng = np.random.default_rng(0)
    k = 4 * elems
    a, b, c = rng.normal(size=(16, k)), rng.normal(size=(k, 16)), rng.normal(size=(16, 16))
    # registers filled the way the generated code fills them
    a_regs = np.array([[a[mfma.a_element(l, i, elems)] for i in range(elems)] for l in range(64)])
    b_regs = np.array([[b[mfma.b_element(l, i, elems)] for i in range(elems)] for l in range(64)])
    c_regs = np.array([[c[mfma.c_element(l, i)] for i in range(4)] for l in range(64)])
    d_regs = emulate_mfma(a_regs, b_regs, c_regs, elems)
    d = np.zeros((16, 16))
    for lane, i in itertools.product(range(64), range(4)):
        d[mfma.c_element(lane, i)] = d_regs[lane, i]
    np.testing.assert_allclose(d, a @ b + c, rtol=1e-12)


@pytest.mark.parametrize("elems", [4, 8])
def test_swapped_operands_return_c_in_the_accumulator_layout(elems):
    """The lowering passes B's fragment as the instruction's A and A's as its B: the
    instruction computes C^T, so lane l, element i holds C[l % 16][4 * (l // 16) + i]."""
    rng = np.random.default_rng(10)
    k = 4 * elems
    a, b, c = rng.normal(size=(16, k)), rng.normal(size=(k, 16)), rng.normal(size=(16, 16))
    a_regs = np.array([[a[mfma.a_element(l, i, elems)] for i in range(elems)] for l in range(64)])
    b_regs = np.array([[b[mfma.b_element(l, i, elems)] for i in range(elems)] for l in range(64)])
    c_regs = np.array([[c[mfma_layout.accumulator_element(l, i)] for i in range(4)] for l in range(64)])
    d_regs = emulate_mfma(b_regs, a_regs, c_regs, elems)
    d = np.full((16, 16), np.nan)
    for lane, i in itertools.product(range(64), range(4)):
        d[mfma_layout.accumulator_element(lane, i)] = d_regs[lane, i]
    np.testing.assert_allclose(d, a @ b + c, rtol=1e-12)


def test_lane_layouts_are_bijections():
    for elems in (4, 8):
        assert sorted(mfma.a_element(l, i, elems) for l in range(64) for i in range(elems)) == \
            sorted(itertools.product(range(16), range(4 * elems)))
        assert sorted(mfma.b_element(l, i, elems) for l in range(64) for i in range(elems)) == \
            sorted(itertools.product(range(4 * elems), range(16)))
        # the register operand's k order is a permutation of each lane group's k
        assert sorted(mfma_layout.register_k(l, i, elems) for l in range(64) for i in range(elems)) == \
            sorted(list(range(4 * elems)) * 16)
    assert [mfma_layout.register_k(l, i, 4) for l in range(64) for i in range(4)] == \
        [4 * (l // 16) + i for l in range(64) for i in range(4)]
    for fn in (mfma.c_element, mfma_layout.accumulator_element):
        assert sorted(fn(l, i) for l in range(64) for i in range(4)) == sorted(itertools.product(range(16), range(16)))


PLANS = [  # (arch, in, acc, m, n, k, threads, policy)
    ("gfx942", "float16", "float32", 64, 64, 32, 128, 0),
    ("gfx942", "float16", "float32", 128, 64, 16, 256, 1),
    ("gfx90a", "bfloat16", "float32", 32, 128, 32, 256, 2),
    ("gfx942", "int8", "int32", 64, 32, 64, 128, 0),
    ("gfx90a", "int8", "int32", 16, 16, 16, 64, 0),
]


def make_plan(arch, in_dtype, acc, m, n, k, threads, policy, a_registers=False):
    instr = mfma.mfma_instruction(arch, in_dtype, acc)
    grid = mfma.wave_grid(m // 16, n // 16, threads // 64, policy)
    return mfma.GemmPlan(instr, m, n, k, grid[0], grid[1], 64, a_registers)


@pytest.mark.parametrize("plan_args", PLANS, ids=lambda p: "-".join(map(str, p)))
def test_accumulator_layout_is_a_bijection(plan_args):
    layout_ = mfma.accumulator_layout(make_plan(*plan_args))
    layout_.check()  # inverse covers the tile once, forward inverts it
    assert layout_.replicate == 1


def emulate_block_gemm(plan, a, b):
    """A whole block's T.gemm as the lowering schedules it: each wave loads its lanes'
    fragments with the lowering's index functions (or, in the rs form, takes A's from the
    register slots `a_operand_layout` gives them), the emulator runs each MFMA with the
    operands swapped, and the accumulator registers read back through C's layout."""
    e, ws = plan.instr.elems, plan.lanes
    acc_layout = mfma.accumulator_layout(plan)
    acc = np.zeros((plan.threads, acc_layout.slots))
    if plan.a_registers:
        a_layout = mfma.a_operand_layout(plan)
        a_held = np.array([[a[tuple(a_layout.element_of(t, s))] for s in range(a_layout.slots)]
                           for t in range(plan.threads)])
    for wave in range(plan.threads // ws):
        lanes = range(ws)
        rows = slice(wave * ws, (wave + 1) * ws)
        for kk in range(plan.k_steps):
            k0 = kk * plan.instr.k
            if plan.a_registers:
                a_regs = [a_held[rows, [mfma_layout.a_register_slot(plan, t, kk, i) for i in range(e)]]
                          for t in range(plan.tiles_m)]
            else:
                a_regs = [np.array([[a[mfma.a_fragment_element(plan, wave, l, t, i, k0)] for i in range(e)]
                                    for l in lanes]) for t in range(plan.tiles_m)]
            b_regs = [np.array([[b[mfma.b_fragment_element(plan, wave, l, t, i, k0)] for i in range(e)] for l in lanes])
                      for t in range(plan.tiles_n)]
            for tm, tn in itertools.product(range(plan.tiles_m), range(plan.tiles_n)):
                slot = mfma.accumulator_slot(plan, tm, tn, 0)
                acc[rows, slot:slot + 4] = emulate_mfma(b_regs[tn], a_regs[tm], acc[rows, slot:slot + 4], e)
    c = np.full((plan.m, plan.n), np.nan)
    for thread, slot in itertools.product(range(plan.threads), range(acc_layout.slots)):
        c[tuple(acc_layout.element_of(thread, slot))] = acc[thread, slot]
    return c


@pytest.mark.parametrize("a_registers", [False, True], ids=["ss", "rs"])
@pytest.mark.parametrize("plan_args", PLANS, ids=lambda p: "-".join(map(str, p)))
def test_block_gemm_emulation(plan_args, a_registers):
    plan = make_plan(*plan_args, a_registers=a_registers)
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 4, (plan.m, plan.k)).astype(np.float64)
    b = rng.integers(-4, 4, (plan.k, plan.n)).astype(np.float64)
    np.testing.assert_array_equal(emulate_block_gemm(plan, a, b), a @ b)


@pytest.mark.parametrize("arch,in_dtype,acc", [("gfx942", "float16", "float32"), ("gfx90a", "bfloat16", "float32"),
                                               ("gfx942", "int8", "int32"), ("gfx942", "float8_e4m3fnuz", "float32")])
@pytest.mark.parametrize("waves,policy", [(2, 1), (4, 1), (1, 0)])
def test_accumulator_is_the_next_gemms_register_operand(arch, in_dtype, acc, waves, policy):
    """FlashAttention's chain: the (M, N) accumulator of one gemm, cast, is the (M, K = N)
    register A operand of the next when both stack their waves along M: same threads, same
    slots, so the cast is register to register."""
    m, n = 64, 64
    first = make_plan(arch, in_dtype, acc, m, n, 32, waves * 64, policy)
    second = make_plan(arch, in_dtype, acc, m, 32, n, waves * 64, policy, a_registers=True)
    assert first.groups_n == second.groups_n == 1
    operand = mfma.a_operand_layout(second)
    operand.check()
    assert operand == mfma.accumulator_layout(first)


def test_register_operand_is_replicated_over_the_waves_along_n():
    plan = make_plan("gfx942", "float16", "float32", 32, 64, 32, 256, 0, a_registers=True)
    assert (plan.groups_m, plan.groups_n) == (1, 4)
    operand = mfma.a_operand_layout(plan).check()
    assert operand.replicate == 4 and operand.holders(5, 7) == (5 + 64 * 0 + 16, 5 + 64 + 16, 5 + 128 + 16,
                                                                 5 + 192 + 16)


# ---------------------------------------------------------------------------------------------
# Which gemms take MFMA, and where the accumulator lives
# ---------------------------------------------------------------------------------------------


def gemm_source(in_dtype="float16", acc="float32", out="float16", arch="gfx942", trans=(False, False),
                bm=64, bn=64, bk=32):
    func = kernels.gemm(128, 128, 128, bm, bn, bk, in_dtype, acc, out, *trans)
    return render(func, arch).source


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("in_dtype,acc,wrapper", [
    ("float16", "float32", "tl_mfma_16x16x16_f16"),
    ("bfloat16", "float32", "tl_mfma_16x16x16_bf16"),
    ("int8", "int32", None),
])
def test_gemm_takes_mfma(arch, in_dtype, acc, wrapper):
    wrapper = wrapper or {"gfx90a": "tl_mfma_16x16x16_i8", "gfx942": "tl_mfma_16x16x32_i8"}[arch]
    text = gemm_source(in_dtype, acc, acc, arch)
    assert '#include "tl_hip_mfma.h"' in text
    assert f"{wrapper}(&C_f_reg[" in text
    # the accumulator is a per-thread register array, written in its layout by T.clear and
    # read in it by the final copy: no shared-memory copy of C
    assert re.search(r"(float|int32_t) C_f_reg\[\d+\];", text)
    assert "C_f = (" not in text


@pytest.mark.parametrize("trans", [(True, False), (False, True), (True, True)])
def test_transposed_operands_take_mfma(trans):
    assert "tl_mfma_16x16x16_f16(" in gemm_source(trans=trans)


@pytest.mark.parametrize("case", ["float32", "tile", "k"])
def test_portable_fallback(case):
    if case == "float32":
        text = gemm_source("float32", "float32", "float32")
    elif case == "tile":  # a 24-row block is no whole number of 16x16 tiles
        text = gemm_source(bm=24)
    else:  # K = 8 per step is under the instruction's 16
        text = gemm_source(bk=8)
    assert "tl_mfma" not in text


def test_int8_on_gfx942_needs_k_of_32():
    assert "tl_mfma" not in gemm_source("int8", "int32", "int32", "gfx942", bk=16)
    assert "tl_mfma_16x16x16_i8(" in gemm_source("int8", "int32", "int32", "gfx90a", bk=16)


def test_wave_grid_follows_the_policy():
    assert mfma.wave_grid(8, 8, 4, 0) == (2, 2)  # Square
    assert mfma.wave_grid(8, 8, 4, 1) == (4, 1)  # FullRow: waves stacked along M
    assert mfma.wave_grid(8, 8, 4, 2) == (1, 4)  # FullCol
    assert mfma.wave_grid(1, 1, 2, 0) is None  # one tile cannot feed two waves


def test_epilogue_fragment_adopts_the_accumulator_layout():
    @T.prim_func
    def scaled(A: T.Tensor((64, 32), "bfloat16"), B: T.Tensor((64, 32), "bfloat16"),
               D: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(1, threads=256) as bx:
            A_s = T.alloc_shared((64, 32), "bfloat16")
            B_s = T.alloc_shared((64, 32), "bfloat16")
            C = T.alloc_fragment((64, 64), "float32")
            D_f = T.alloc_fragment((64, 64), "bfloat16")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C, transpose_B=True, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                D_f[i, j] = C[i, j] * 2.0
            T.copy(D_f, D)

    src = render(scaled)
    assert "tl_mfma_16x16x16_bf16(" in src.source
    assert re.search(r"float C_reg\[16\];", src.source) and re.search(r"bfloat16_t D_f_reg\[16\];", src.source)
    assert src.shared_memory == 2 * 64 * 32 * 2  # A_s and B_s only


def test_accumulator_reduces_in_registers():
    @T.prim_func
    def row_max(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"),
                R: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            C = T.alloc_fragment((64, 64), "float32")
            m = T.alloc_fragment((64,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C, clear_accum=True)
            T.reduce_max(C, m, dim=1)
            T.copy(m, R)

    text = render(row_max).source
    # C stays in the MFMA accumulator registers: a lane holds 4 columns of each of its rows per
    # tile, the 4 lanes 16 apart that share a row combine by shuffles, and the two waves that
    # share the row (1 x 2 waves) through one exchange in LDS
    assert "float* C = (float*)(tl_dyn_smem" not in text
    assert re.search(r"tl_mfma_16x16x16_f16\(&C_reg\[", text)
    assert text.count("tl_shfl_xor(") == 4 * 2  # 2 butterfly steps (16, 32) for each of m's 4 slots
    assert "tl_shfl_xor(max_acc[0], 16, 64)" in text and "tl_shfl_xor(max_acc[0], 32, 64)" in text
    assert "max_partials" in text


# ---------------------------------------------------------------------------------------------
# Copies and reductions
# ---------------------------------------------------------------------------------------------


def test_reduce_groups_fit_a_wave_the_row_and_the_block():
    assert mfma.reduce_group(rows=4, length=64, threads=128, wave=64) == 32
    assert mfma.reduce_group(rows=1, length=1000, threads=256, wave=64) == 64
    assert mfma.reduce_group(rows=8, length=3, threads=128, wave=64) == 2
    assert mfma.reduce_group(rows=128, length=64, threads=128, wave=64) == 1  # portable


def test_softmax_reduces_with_shuffles():
    import importlib.util

    spec = importlib.util.spec_from_file_location("examples_kernels", ROOT / "examples" / "kernels.py")
    examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(examples)
    text = render(examples.softmax(100, 64, 4)).source
    # a row of 64 lies in the 64 lanes of a wave: a 6-step butterfly, no LDS
    assert "tl_max(max_acc[0], tl_shfl_xor(max_acc[0], 32, 64))" in text
    assert "sum_acc[0] + tl_shfl_xor(sum_acc[0], 1, 64)" in text
    assert "tl_dyn_smem" not in text


@pytest.mark.parametrize("n,vector", [(64, True), (52, False)])
def test_copy_vectors_need_whole_vector_rows(n, vector):
    text = gemm_source(bn=32) if n == 64 else render(kernels.gemm(128, n, 128, 64, 32, 32, "float16", "float32", "float16")).source
    assert ("(*(tl_bits32x4*)(&B_s[" in text) == vector
    assert "(*(tl_bits32x4*)(&A_s[" in text  # A's rows (K = 128) are whole vectors either way


@pytest.mark.parametrize("arch,width", [("gfx942", 64), ("gfx950", 64), ("gfx1100", 32), ("gfx1201", 32)])
def test_warp_reductions_span_the_targets_wavefront(arch, width):
    source = render(kernels.reduce(8, 256, "max", 1, True), arch).source
    widths = set(re.findall(r"tl_shfl_xor\([^;]*, (\d+)\)", source))
    assert widths == {str(width)}, (arch, widths)

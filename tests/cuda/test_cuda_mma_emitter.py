"""TileLang's `TensorCoreIntrinEmitter` on the CUDA backend (`mma_emitter_programs.py`: the
example_gemm_intrinsics kernel) and the `T.ptx_mma` / `T.ptx_ldmatrix` it emits.

The lowered kernels run in the NumPy emulator (ldmatrix and mma.sync with the PTX ISA's
semantics) against a float64 / int64 reference, for the example's configuration and the
emitter's other forms (transposes, int8 gathers, warp tiles of 16 / 32 / 64, n = 8 tiles,
float16 accumulation); NVRTC compiles them for sm_80 and sm_90a and the SASS holds the
tensor-core instructions. TileLang's example itself runs through the import aliasing when its
checkout is present.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mma_emitter_programs as prog  # noqa: E402
from tir_emulator import run_kernel  # noqa: E402

from tilelang_cuda.compat.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter  # noqa: E402

TL_EXAMPLES = Path(os.environ.get("TILELANG_EXAMPLES", "/work/tl/examples"))


def _lowered(func, arch: str = "sm_90a"):
    return lower(func, get_plugin_manager().parse_target(f"cuda/{arch}"), CompileOptions())


def _run(M, N, K, in_dtype, out_dtype, accum_dtype, a_transposed=False, b_transposed=True, **tiles):
    func = prog.tl_matmul(M, N, K, in_dtype, out_dtype, accum_dtype, a_transposed, b_transposed, **tiles)
    a, b = prog.inputs(M, N, K, in_dtype, a_transposed, b_transposed)
    c = np.full((M, N), -7, out_dtype)  # any element the kernel leaves out shows
    run_kernel(_lowered(func), a, b, c)
    return c, prog.reference(a, b, a_transposed, b_transposed)


# --- the example's kernel in the emulator -------------------------------------------------------


@pytest.mark.parametrize("in_dtype,out_dtype,accum_dtype", [
    ("float16", "float16", "float32"),   # the example's main()
    ("float16", "float32", "float32"),
    ("int8", "int32", "int32"),          # its int8 path (micro k 32)
])
def test_example_kernel_matches_numpy(in_dtype, out_dtype, accum_dtype):
    c, ref = _run(128, 256, 64, in_dtype, out_dtype, accum_dtype)  # 2 x 1 blocks, 2 k tiles
    if in_dtype == "int8":
        np.testing.assert_array_equal(c, ref.astype(np.int32))
    else:
        tol = 2e-3 if out_dtype == "float16" else 1e-5
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=tol, atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("in_dtype,out_dtype,accum_dtype", [("float16", "float32", "float32"), ("int8", "int32", "int32")])
@pytest.mark.parametrize("a_transposed,b_transposed", [(False, False), (True, True), (True, False)])
def test_transposed_operands(in_dtype, out_dtype, accum_dtype, a_transposed, b_transposed):
    """ldmatrix .trans for 16-bit operands stored k-major; element gathers for int8 ones."""
    c, ref = _run(64, 64, 64, in_dtype, out_dtype, accum_dtype, a_transposed, b_transposed,
                  warp_row_tiles=32, warp_col_tiles=32)
    if in_dtype == "int8":
        np.testing.assert_array_equal(c, ref.astype(np.int32))
    else:
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("warp_row_tiles,warp_col_tiles,block_row_warps,block_col_warps", [
    (16, 16, 1, 2), (32, 16, 2, 1), (16, 8, 1, 1), (32, 24, 1, 2), (64, 32, 1, 1)])
@pytest.mark.parametrize("b_transposed", [True, False])
def test_warp_tiles(warp_row_tiles, warp_col_tiles, block_row_warps, block_col_warps, b_transposed):
    """Warp tiles of 16 / 32 / 64 rows; 8- and 24-column tiles use m16n8 tiles (ldmatrix .x2)."""
    M, N = 2 * block_row_warps * warp_row_tiles, block_col_warps * warp_col_tiles
    c, ref = _run(M, N, 64, "float16", "float32", "float32", False, b_transposed,
                  warp_row_tiles=warp_row_tiles, warp_col_tiles=warp_col_tiles,
                  block_row_warps=block_row_warps, block_col_warps=block_col_warps)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_float16_accumulation():
    c, ref = _run(64, 64, 64, "float16", "float16", "float16", warp_row_tiles=32, warp_col_tiles=32)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())


def test_emitted_code_is_per_thread_tensor_core_calls():
    source = tilelang_core.compile(prog.tl_matmul(256, 256, 64, "float16", "float16", "float32"),
                                   target="cuda/sm_90a").get_kernel_source()
    assert '#include "tl_cuda_mma.h"' in source
    assert "__align__(16) float C_local[128];" in source  # 4 x 4 tiles x 8 accumulators per thread
    assert source.count("tl::ldmatrix_x4(reinterpret_cast<uint32_t*>(&A_local[") == 1
    assert source.count("tl::ldmatrix_x4(reinterpret_cast<uint32_t*>(&B_local[") == 1
    assert source.count("tl::mma_m16n8k16_f16_f32(") == 2  # the two n = 8 halves, in unrolled loops
    # every thread clears its own 128 accumulators (T.clear of a T.alloc_local array)
    assert re.search(r"for \(int32_t (\w+) = 0; \1 < 128; \+\+\1\) \{\s+C_local\[\1\] = 0.0f;", source)


# --- NVRTC --------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("in_dtype,out_dtype,accum_dtype,hmma", [
    ("float16", "float16", "float32", r"HMMA\.16816\.F32\b"),
    ("float16", "float16", "float16", r"HMMA\.16816\.F16\b"),
    ("bfloat16", "float32", "float32", r"HMMA\.16816\.F32\.BF16"),
    ("int8", "int32", "int32", r"IMMA\.16832\.S8\.S8"),
])
def test_nvrtc_compiles_to_tensor_core_instructions(arch, in_dtype, out_dtype, accum_dtype, hmma):
    from tilelang_cuda.compile import disassemble

    kernel = tilelang_core.compile(prog.tl_matmul(256, 256, 64, in_dtype, out_dtype, accum_dtype),
                                   target=f"cuda/{arch}")
    sass = disassemble(kernel.binary)
    assert len(re.findall(hmma, sass)) >= 32  # 4 x 4 tiles x 2 halves per k step
    assert re.search(r"\bLDSM\.16\.M88\.4\b", sass)
    # the register arrays stay in registers: at most a spilled register or two, never the
    # hundreds of local-memory accesses of an array placed in local memory
    assert len(re.findall(r"\b(LDL|STL)\b", sass)) <= 4


# --- T.ptx_mma / T.ptx_ldmatrix written by hand -------------------------------------------------


def _hand_written(trans_b: bool):
    """One warp: A (16 x 16) and B through ldmatrix into registers, one m16n8k16 into C (16 x 8)."""
    b_shape = (16, 8) if trans_b else (8, 16)  # (k, n) read with .trans, or (n, k)

    @T.prim_func
    def main(A: T.Tensor((16, 16), "float16"), B: T.Tensor(b_shape, "float16"), C: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=32) as bx:
            A_shared = T.alloc_shared((16, 16), "float16")
            B_shared = T.alloc_shared(b_shape, "float16")
            A_local = T.alloc_local((8,), "float16")
            B_local = T.alloc_local((4,), "float16")
            C_local = T.alloc_local((4,), "float32")
            T.copy(A, A_shared)
            T.copy(B, B_shared)
            T.clear(C_local)
            tx = T.get_thread_binding()
            T.ptx_ldmatrix(False, 4, T.access_ptr(A_shared[tx % 16, tx // 16 * 8], "r"), T.access_ptr(A_local[0], "w"))
            if trans_b:
                T.ptx_ldmatrix(True, 2, T.access_ptr(B_shared[tx % 16, 0], "r"), T.access_ptr(B_local[0], "w"))
            else:
                T.ptx_ldmatrix(False, 2, T.access_ptr(B_shared[tx % 8, tx // 8 % 2 * 8], "r"), T.access_ptr(B_local[0], "w"))
            T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", A_local.data, 0, B_local.data, 0,
                      C_local.data, 0, T.bool(False))
            for v in T.serial(4):
                C[tx // 4 + v // 2 * 8, tx % 4 * 2 + v % 2] = C_local[v]

    return main


@pytest.mark.parametrize("trans_b", [False, True])
def test_hand_written_ptx_calls_run_and_print(trans_b):
    func = _hand_written(trans_b)
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    b = rng.uniform(-1, 1, (16, 8) if trans_b else (8, 16)).astype(np.float16)
    c = np.full((16, 8), np.nan, np.float32)
    run_kernel(_lowered(func), a, b, c)
    ref = a.astype(np.float64) @ (b.astype(np.float64) if trans_b else b.astype(np.float64).T)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)
    source = tilelang_core.compile(func, target="cuda/sm_80").get_kernel_source()
    assert f"tl::ldmatrix_x2{'_trans' if trans_b else ''}(reinterpret_cast<uint32_t*>(&B_local[0])" in source
    assert ("tl::mma_m16n8k16_f16_f32(reinterpret_cast<float*>(C_local), reinterpret_cast<const uint32_t*>(A_local), "
            "reinterpret_cast<const uint32_t*>(B_local), reinterpret_cast<const float*>(C_local));") in source


def test_tvm_spelling_prints_the_same_helper():
    """TVM's own `T.ptx_legacy.mma` with an element offset into the accumulator."""
    @T.prim_func
    def main(C: T.Tensor((32, 8), "int32")):
        with T.Kernel(1, threads=32) as bx:
            A_local = T.alloc_local((16,), "int8")
            B_local = T.alloc_local((8,), "int8")
            C_local = T.alloc_local((8,), "int32")
            T.clear(A_local)
            T.clear(B_local)
            T.clear(C_local)
            T.ptx_legacy.mma("m16n8k32", "row", "col", "int8", "int8", "int32", A_local.data, 0, B_local.data, 0,
                             C_local.data, 4, T.bool(False))
            for v in T.serial(8):
                C[T.get_thread_binding(), v] = C_local[v]

    source = tilelang_core.compile(main, target="cuda/sm_90a").get_kernel_source()
    assert "tl::mma_m16n8k32_s8_s32(reinterpret_cast<int32_t*>(C_local + 4)," in source


# --- errors -------------------------------------------------------------------------------------


def test_unsupported_types_name_the_supported_ones():
    with pytest.raises(ValueError, match=r"a_dtype=float32, b_dtype=float32, accum_dtype=float32 is not supported; "
                                         r"supported: float16 x float16 -> float32, .*int8 x int8 -> int32"):
        TensorCoreIntrinEmitter("float32", "float32", "float32", warp_row_tiles=16, warp_col_tiles=16, chunk=16)
    with pytest.raises(ValueError, match="m16n8k8.fp16.fp16.fp32 .* is not supported on CUDA; supported: m16n8k16"):
        T.ptx_mma("float32", "m16n8k8", "row", "col", "fp16", "fp16", "fp32", 0, 0, 0, 0, 0, 0, False)
    with pytest.raises(ValueError, match="ldmatrix loads 1, 2 or 4 matrices"):
        T.ptx_ldmatrix(False, 3, 0, 0)


@pytest.mark.parametrize("kwargs,message", [
    (dict(warp_row_tiles=24), "warp_row_tiles=24 must be a positive multiple of 16"),
    (dict(warp_col_tiles=12), "warp_col_tiles=12 must be a positive multiple of 8"),
    (dict(chunk=8), "chunk=8 must be a multiple of the m16n8k16 k step 16"),
])
def test_bad_tiles_are_refused(kwargs, message):
    args = dict(a_dtype="float16", b_dtype="float16", accum_dtype="float32", warp_row_tiles=32,
                warp_col_tiles=32, chunk=32)
    with pytest.raises(ValueError, match=re.escape(message)):
        TensorCoreIntrinEmitter(**{**args, **kwargs})


def test_fragment_registers_are_refused():
    emitter = TensorCoreIntrinEmitter("float16", "float16", "float32", warp_row_tiles=16, warp_col_tiles=16, chunk=16)
    with pytest.raises(Exception, match="has scope 'local.fragment'; .* allocate them with T.alloc_local"):
        @T.prim_func
        def main(A: T.Tensor((16, 16), "float16")):
            with T.Kernel(1, threads=32) as bx:
                A_shared = T.alloc_shared((16, 16), "float16")
                A_frag = T.alloc_fragment((16, 16), "float16")
                emitter.ldmatrix_a(A_frag, A_shared, 0)


# --- TileLang's example, unchanged --------------------------------------------------------------

EXAMPLE_DRIVER = """
    import sys
    sys.path[:0] = [{examples!r}, {tests!r}]
    import numpy as np
    import example_gemm_intrinsics as ex
    from tilelang_core.jit.api import lower
    from tilelang_core.jit.options import CompileOptions
    from tilelang_core.plugin import get_plugin_manager
    from tir_emulator import run_kernel
    M, N, K = 128, 128, 64
    prim = ex.tl_matmul.get_tir(M=M, N=N, K=K, in_dtype="float16", out_dtype="float16", accum_dtype="float32")
    lowered = lower(prim, get_plugin_manager().parse_target("cuda/sm_90a"), CompileOptions())
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (N, K)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    run_kernel(lowered, a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    print("max_error", float(np.abs(c - ref).max() / np.abs(ref).max()))
"""


@pytest.mark.skipif(not (TL_EXAMPLES / "gemm" / "example_gemm_intrinsics.py").is_file(),
                    reason="TileLang's examples are not checked out (set TILELANG_EXAMPLES)")
def test_tilelang_example_runs_unchanged_through_the_aliasing(tmp_path):
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(EXAMPLE_DRIVER.format(examples=str(TL_EXAMPLES / "gemm"),
                                                            tests=str(Path(__file__).resolve().parent))))
    out = subprocess.run([sys.executable, "-m", "tilelang_core.compat.run", str(driver)], capture_output=True,
                         text=True, timeout=600, cwd=TL_EXAMPLES / "gemm")
    assert out.returncode == 0, out.stderr[-3000:]
    error = float(out.stdout.split("max_error")[1])
    assert error < 2e-3

"""The CUDA dialect of the C-family printer (`CUDACodegen`): what the generated CUDA C++
looks like for each construct, checked on the text (no toolchain needed), plus NVRTC where
the text alone proves too little (dynamic shared memory past 48 KB, fp8)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tilelang_core
from tilelang_core import language as T
from tilelang_core.codegen import CodegenError
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager, hooks_for
from tilelang_core.runtime import eval_launch_expr

if str(Path(__file__).resolve().parents[2]) not in sys.path:  # `tests.language` from any working directory
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.language import programs as lp  # noqa: E402

ELF_MAGIC = b"\x7fELF"


def render(func, target: str = "cuda/sm_80", **pass_configs):
    """The `KernelSource` the CUDA backend's codegen hook gives for `func`."""
    tgt = get_plugin_manager().parse_target(target)
    options = CompileOptions.from_pass_configs(pass_configs)
    return hooks_for(tgt).codegen(lower(func, tgt, options), options)


def elementwise(fn, dtype="float32", n=1000, block=256, threads=128):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=threads) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = fn(A[bx * block + i])

    return main


# ---------------------------------------------------------------------------------------------
# Kernel shape: signature, launch, includes
# ---------------------------------------------------------------------------------------------


def test_signature_launch_bounds_and_header():
    src = render(lp.elementwise_add(4096))
    text = src.source
    assert src.language == "cuda"
    assert '#include "tl_cuda_common.h"' in text and "tl_cuda_mma.h" not in text
    assert (f'extern "C" __global__ void __launch_bounds__(256) {src.entry}('
            "const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C)") in text
    assert "int32_t bx = blockIdx.x;" in text and "threadIdx.x" in text
    assert src.grid == (16, 1, 1) and src.block == (256, 1, 1)
    assert src.shared_memory == 0 and "tl_dyn_smem" not in text


def test_two_dimensional_block_and_three_dimensional_grid():
    src = render(lp.matmul_transposed(256, 256, 256, 64, 64, 32))
    assert src.block == (32, 4, 1) and "__launch_bounds__(128)" in src.source
    assert "threadIdx.y" in src.source
    src = render(lp.atomic_accumulate(256, 256, 32))
    assert src.grid == (8, 8, 2)
    assert "blockIdx.y" in src.source and "blockIdx.z" not in src.source  # bz is unused: not declared


def test_symbolic_grid_is_a_launch_expression():
    src = render(lp.symbolic_copy())
    assert isinstance(src.grid[0], str)
    assert eval_launch_expr(src.grid[0], {"m": 100}) == 4
    assert ", int32_t m)" in src.source  # the symbolic dim is the last parameter


def test_too_many_threads_is_refused_with_the_limit():
    from tvm.script import tirx as TS

    from tilelang_cuda.codegen import CUDACodegen

    @TS.prim_func
    def wide(A: TS.Buffer((4096,), "float32")):
        bx = TS.launch_thread("blockIdx.x", 2)
        tx = TS.launch_thread("threadIdx.x", 2048)
        A[bx * 2048 + tx] = TS.float32(1)

    target = get_plugin_manager().parse_target("cuda/sm_80")
    with pytest.raises(CodegenError, match="2048 threads per block.*allows 1024"):
        CUDACodegen(target).render(wide)


def test_tensor_core_header_only_when_used():
    from tests.run import kernels

    src = render(kernels.gemm(64, 64, 64, 32, 32, 16, "float16", "float32", "float16"))
    if "tl::mma_" not in src.source:
        pytest.skip("the GEMM was not lowered to tensor cores (tilelang_cuda.lower)")
    assert '#include "tl_cuda_mma.h"' in src.source


# ---------------------------------------------------------------------------------------------
# Memory: dynamic shared memory, registers, names
# ---------------------------------------------------------------------------------------------


def test_shared_buffers_pack_into_one_dynamic_array():
    src = render(lp.layouts())
    text = src.source
    assert text.count("extern __shared__ __align__(128) unsigned char tl_dyn_smem[];") == 1
    assert "half_t* S = (half_t*)(tl_dyn_smem + 0);" in text
    assert "half_t* R = (half_t*)(tl_dyn_smem + 8192);" in text
    assert src.shared_memory == 2 * 64 * 64 * 2
    assert src.extra["dyn_shared_offsets"] == {"S": 0, "R": 8192}


def big_shared(kib: int):
    n = kib * 1024 // 4

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=256) as bx:
            S = T.alloc_shared((n,), "float32")
            T.copy(A, S)
            for i in T.Parallel(n):
                B[i] = S[n - 1 - i]

    return main


def test_dynamic_shared_memory_past_48_kib_compiles_and_is_reported():
    kernel = tilelang_core.compile(big_shared(96), target="cuda/sm_90a")
    assert kernel.meta.shared_memory == 96 * 1024  # the runtime opts in past 48 KB
    assert kernel.binary[:4] == ELF_MAGIC
    assert "__shared__ float" not in kernel.get_kernel_source()  # no static array past 48 KB


def test_local_buffers_are_per_thread_arrays_with_readable_names():
    text = render(lp.loop_kinds(64)).source
    assert "float L[8];" in text
    assert "(float* __restrict__ A, int32_t n)" in text


def test_register_fragments_and_unroll_budget():
    text = render(lp.matmul(256, 256, 256, 128, 128, 32)).source
    assert "C_local_reg[" in text
    # a counted loop inside the unrolled per-thread slot loops may not be unrolled past the
    # budget: without this cap ptxas took minutes on the portable GEMM
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#pragma unroll ") and stripped != "#pragma unroll":
            assert int(stripped.split()[-1]) <= 512


# ---------------------------------------------------------------------------------------------
# Types and math
# ---------------------------------------------------------------------------------------------


def test_half_and_bfloat16_compute_in_float_and_copy_raw():
    text = render(elementwise(lambda x: x * T.float16(2.0) + x, dtype="float16")).source
    assert "const half_t* __restrict__ A" in text
    assert "__half2float(A[" in text and "__float2half_rn(" in text
    text = render(elementwise(lambda x: x * T.bfloat16(2.0), dtype="bfloat16")).source
    assert "bfloat16_t" in text and "__bfloat162float(A[" in text and "__float2bfloat16_rn(" in text
    # a copy of a storage-only dtype is a 16-bit move, not a trip through float
    text = render(lp.layouts()).source
    assert "R[r_1 * 128 + tx" in text and "= S[r_1 * 128 + tx]" in text


def test_fp8_compiles_on_sm_90a():
    kernel = tilelang_core.compile(elementwise(lambda x: x, dtype="float8_e4m3fn", n=512), target="cuda/sm_90a")
    assert "fp8_e4_t" in kernel.get_kernel_source()
    assert kernel.binary[:4] == ELF_MAGIC


def test_math_is_precise_unless_fast_math():
    precise = render(elementwise(lambda x: T.exp(x) + T.exp2(x) + T.log(T.abs(x) + 1.0))).source
    assert "expf(" in precise and "exp2f(" in precise and "logf(" in precise
    assert "__expf" not in precise and "__logf" not in precise
    fast = render(elementwise(lambda x: T.exp(x) + T.log(T.abs(x) + 1.0)), **{"tl.enable_fast_math": True}).source
    assert "__expf(" in fast and "__logf(" in fast


def test_min_max_and_literals():
    text = render(elementwise(lambda x: T.max(T.min(x, 0.5), T.if_then_else(x > 0.9, T.infinity("float32"), -1.0)))).source
    assert "fminf(" in text and "fmaxf(" in text
    assert "__int_as_float(0x7f800000)" in text  # NVRTC has no INFINITY macro
    text = render(elementwise(lambda x: T.max(x, 3), dtype="int64")).source
    assert "tl::max<int64_t>(" in text


# ---------------------------------------------------------------------------------------------
# Builtins: barriers, atomics, printf, device assert
# ---------------------------------------------------------------------------------------------


def test_atomics_use_the_header_overloads():
    text = render(lp.atomic_accumulate(256, 256, 32)).source
    assert "tl_atomic_add(&C[" in text
    assert "tl_atomic_max(&C[" in text and "tl_atomic_min(&C[" in text


def test_barriers_printf_and_device_assert():
    src = render(lp.debug_ops(16))
    text = src.source
    assert "__syncthreads();" in text
    assert 'printf("[programs.py:' in text and "(double)" in text
    assert "tl_device_assert(tx < 128, " in text and f'"{src.entry}");' in text


def test_barrier_before_shared_write_after_read():
    """debug_ops prints the shared tile (thread 0 reads it) and then cumsums it in place
    (every thread writes): the writes must wait for the reads."""
    lines = render(lp.debug_ops(16)).source.splitlines()
    last_print = max(n for n, line in enumerate(lines) if "printf(" in line)
    first_cumsum = min(n for n, line in enumerate(lines) if "cumsum_acc" in line)
    assert any(line.strip() == "__syncthreads();" for line in lines[last_print:first_cumsum])


def test_loop_step_survives_thread_partitioning():
    """`for i in T.serial(0, N, 2)` keeps its step through the SIMT passes."""
    assert " += 2) {" in render(lp.loop_kinds(64)).source


# ---------------------------------------------------------------------------------------------
# Source lines, and the plugin hook
# ---------------------------------------------------------------------------------------------


def test_line_map_points_at_the_users_source():
    src = render(lp.atomic_accumulate(256, 256, 32))
    lines = src.source.splitlines()
    atomic_line = lp.line_of("marker: atomic_elem")
    (origin,) = {src.line_map[n] for n, text in enumerate(lines, 1) if "tl_atomic_add" in text}
    # the statement's own line, or its T.Parallel loop's (lowering keeps the loop's span)
    assert origin[0] == lp.__file__ and origin[1] in (atomic_line - 1, atomic_line)


def test_plugin_imports_without_tvm():
    code = ("import sys; sys.modules['tvm'] = None\n"
            "import tilelang_cuda.plugin as p\n"
            "assert callable(p.tilelang_codegen)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_let_in_an_unrolled_parallel_body_is_declared_once_per_copy():
    # TileLang's layernorm: `norm = ...` in a T.Parallel nest that the SIMT placement unrolls
    # over a thread's slots; each copy must get its own C name (it did not: a redeclaration)
    import re

    @T.prim_func
    def main(X: T.Tensor((4, 1024), "float32"), Y: T.Tensor((4, 1024), "float32")):
        with T.Kernel(4, threads=256) as bx:
            X_smem = T.alloc_shared((1, 1024), "float32")
            X_local = T.alloc_fragment((1, 1024), "float32")
            row = T.alloc_fragment((1,), "float32")
            T.copy(X[bx, 0], X_smem)
            T.copy(X_smem, X_local)
            T.reduce_sum(X_local, row, dim=1)
            for i, j in T.Parallel(1, 1024):
                norm = X_local[i, j] - row[i]
                X_smem[i, j] = norm * 2.0
            T.copy(X_smem, Y[bx, 0])

    source = render(main, "cuda/sm_90a").source
    declared = re.findall(r"\bfloat (norm\w*)\s*[;=]", source)
    assert len(declared) > 1 and len(set(declared)) == len(declared), declared


def test_min_blocks_per_sm_keyword_caps_registers_through_launch_bounds():
    """`T.Kernel(..., min_blocks_per_sm=2)` (a CUDA backend keyword): `__launch_bounds__(threads, 2)`;
    a bad value names the keyword; other backends compile the kernel as without it."""
    import pytest
    import tilelang_core
    from tilelang_core import language as T

    def kernel(**hints):
        @T.prim_func
        def main(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
            with T.Kernel(2, threads=128, **hints) as bx:
                for i in T.Parallel(128):
                    B[bx * 128 + i] = A[bx * 128 + i] * 2.0

        return main

    source = tilelang_core.compile(kernel(min_blocks_per_sm=2), target="cuda/sm_90a", cache=False).get_kernel_source()
    assert "__launch_bounds__(128, 2)" in source
    plain = tilelang_core.compile(kernel(), target="cuda/sm_90a", cache=False).get_kernel_source()
    assert "__launch_bounds__(128)" in plain and "__launch_bounds__(128, " not in plain
    from tilelang_core.language.parser import KernelSyntaxError

    with pytest.raises(KernelSyntaxError, match=r"min_blocks_per_sm=0\), a keyword of backend 'cuda': must be an int"):
        kernel(min_blocks_per_sm=0)

"""The OpenCL dialect, without an OpenCL platform: what the printer writes for each arch.

Work-groups and work-items for blocks and threads, `__local` memory declared at kernel scope
only, the barrier, `__global` parameters, 16-bit floats as ushort words, integer min/max with
one argument type, sub-group shuffles only where the arch declares them, and clear errors
for what OpenCL cannot do.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("tilelang_opencl")

from tilelang_core import language as T  # noqa: E402
from tilelang_core.codegen import CodegenError  # noqa: E402
from tilelang_core.jit.api import lower  # noqa: E402
from tilelang_core.jit.options import CompileOptions  # noqa: E402
from tilelang_core.plugin import get_plugin_manager  # noqa: E402
from tilelang_opencl.codegen import OpenCLCodegen  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.run import kernels  # noqa: E402


def render(func, arch="generic"):
    target = get_plugin_manager().parse_target(f"opencl/{arch}")
    options = CompileOptions()
    return OpenCLCodegen(target, options).render(lower(func, target, options))


def kernel_scope_lines(source: str) -> list[str]:
    """Lines of the kernel body at its outermost scope (one indentation unit)."""
    body = source.split(") {", 1)[1]
    return [line for line in body.split("\n") if line.startswith("  ") and not line.startswith("   ")]


def test_gemm_is_opencl_c_with_local_memory_at_kernel_scope():
    ks = render(kernels.gemm(64, 64, 64, 32, 32, 16, "float16", "float32", "float32"))
    src = ks.source
    assert src.splitlines()[1] == '#include "tl_opencl.h"'
    assert re.search(r"__kernel __attribute__\(\(reqd_work_group_size\(128, 1, 1\)\)\) void main_kernel\(", src)
    assert "__global const ushort* restrict A" in src and "__global float* restrict C" in src
    assert "get_group_id(0)" in src and "get_local_id(0)" in src
    assert "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);" in src
    assert "tl_half_to_float(" in src
    for cuda_word in ("__syncthreads", "__shared__", "blockIdx", "threadIdx", "__global__", "__restrict__"):
        assert cuda_word not in src, cuda_word
    # every __local declaration (not a pointer into the dynamic array) is at kernel scope
    local_arrays = [line for line in src.split("\n") if line.strip().startswith("__local") and "*" not in line]
    assert local_arrays and all(line in kernel_scope_lines(src) for line in local_arrays)
    assert ks.block == (128, 1, 1) and ks.grid == (2, 2, 1)


@T.prim_func
def shared_in_a_branch(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=64) as bx:
        tx = T.get_thread_binding()
        if A[0] > 0:
            S = T.alloc_shared((64,), "float32", scope="shared")
            S[tx] = A[tx]
            B[tx] = S[63 - tx]


def test_a_shared_buffer_declared_in_a_branch_moves_to_kernel_scope():
    src = render(shared_in_a_branch).source
    decl = next(line for line in src.split("\n") if re.search(r"__local float S\[64\]", line))
    assert decl in kernel_scope_lines(src)
    assert src.index(decl) < src.index("if (")


@T.prim_func
def int_minmax(A: T.Tensor((64,), "int64"), B: T.Tensor((64,), "int16"), C: T.Tensor((64,), "int64")):
    with T.Kernel(1, threads=64) as bx:
        for i in T.Parallel(64):
            C[i] = T.max(A[i], T.int64(3)) + T.cast(T.min(B[i], T.int16(2)), "int64")


def test_integer_min_max_cast_both_arguments():
    src = render(int_minmax).source
    # A and B are read as 16-byte vectors into registers (A_vec, B_vec), then element by element
    assert re.search(r"max\(\(long\)\(A(_vec)?\[", src) and ", (long)(3LL))" in src
    assert re.search(r"min\(\(short\)\(B(_vec)?\[", src)


def test_sub_group_shuffles_only_where_the_arch_declares_them():
    program = kernels.reduce(64, 128, "max", 1, True, block_M=8)
    plain = render(program, "generic").source
    assert "sub_group_shuffle_xor" not in plain and "cl_khr_subgroups" not in plain
    shuffled = render(program, "subgroup32").source
    assert "sub_group_shuffle_xor(" in shuffled
    assert "#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable" in shuffled
    assert "intel_reqd_sub_group_size(32)" in shuffled


@T.prim_func
def wide(A: T.Tensor((512,), "float32")):
    with T.Kernel(1, threads=512) as bx:
        tx = T.get_thread_binding()
        A[tx] = A[tx] * 2.0


def test_too_many_work_items_is_refused_with_the_capability():
    assert "reqd_work_group_size(512, 1, 1)" in render(wide, "pocl-cpu").source
    with pytest.raises(Exception, match=r"512 threads per block; opencl/generic allows at most 256 \(capability "
                                        r"max_threads_per_block\).*\n.*test_opencl_codegen.py"):
        render(wide, "generic")


@T.prim_func
def asserting(A: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=64) as bx:
        for i in T.Parallel(64):
            A[i] = A[i] + 1.0
        T.device_assert(A[0] > 0, "positive")


def test_a_device_assertion_names_the_missing_capability():
    with pytest.raises(Exception, match="device_assert"):
        render(asserting)

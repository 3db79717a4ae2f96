"""T.async_copy on CUDA: cp.async and a commit without a wait; the barrier that publishes the
tile after the kernel's own T.ptx_wait_group (a barrier before the wait would let a thread
read another thread's part before it landed)."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang_core as tilelang
from tilelang_core import language as T

M = N = 256
K = 128
BM = BN = 128
BK = 32


def gemm(use_async: bool, wait: bool = True):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
            A_s = T.alloc_shared((BM, BK), "float16")
            B_s = T.alloc_shared((BK, BN), "float16")
            C_l = T.alloc_fragment((BM, BN), "float32")
            T.clear(C_l)
            for ko in T.serial(T.ceildiv(K, BK)):
                if use_async:
                    T.async_copy(A[by * BM, ko * BK], A_s)
                    if wait:
                        T.ptx_wait_group(0)
                    T.async_copy(B[ko * BK, bx * BN], B_s)
                    if wait:
                        T.ptx_wait_group(0)
                else:
                    T.copy(A[by * BM, ko * BK], A_s)
                    T.copy(B[ko * BK, bx * BN], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * BM, bx * BN])

    return main


def _source(func, target="cuda/sm_80") -> str:
    return tilelang.compile(func, target=target, cache=False).get_kernel_source()


def test_async_copy_and_its_wait_give_the_source_of_t_copy():
    explicit, implicit = _source(gemm(True)), _source(gemm(False))
    # T.copy waits for all groups, the kernel here for all but 0 pending: the same wait
    assert explicit.replace("tl::cp_async_wait<0>()", "tl::cp_async_wait_all()") == implicit
    lines = [line.strip() for line in explicit.splitlines()]
    at = lines.index("tl::cp_async_commit();")
    assert lines[at:at + 3] == ["tl::cp_async_commit();", "tl::cp_async_wait<0>();", "__syncthreads();"]


def test_without_a_wait_a_barrier_still_comes_before_the_tile_is_read():
    lines = [line.strip() for line in _source(gemm(True, wait=False)).splitlines()]
    assert not any("cp_async_wait" in line for line in lines)
    last_commit = max(i for i, line in enumerate(lines) if line == "tl::cp_async_commit();")
    first_read = next(i for i, line in enumerate(lines) if line.startswith("tl::ldmatrix"))
    assert "__syncthreads();" in lines[last_commit:first_read]


def test_async_copy_takes_cp_async_not_tma_on_sm90a():
    source = _source(gemm(True), "cuda/sm_90a")
    assert "tl::cp_async_cg16" in source and "tma_load" not in source


@pytest.mark.gpu
def test_async_copy_gemm_runs_like_numpy():
    torch = pytest.importorskip("torch")
    kernel = tilelang.compile(gemm(True), target="cuda", cache=False)
    a = torch.randn(M, K, dtype=torch.float16, device="cuda")
    b = torch.randn(K, N, dtype=torch.float16, device="cuda")
    c = torch.empty(M, N, dtype=torch.float16, device="cuda")
    kernel(a, b, c)
    ref = a.float().cpu().numpy() @ b.float().cpu().numpy()
    np.testing.assert_allclose(c.float().cpu().numpy(), ref, rtol=1e-2, atol=1e-1)


def test_a_loop_of_async_copies_waited_for_after_it_gets_its_barrier_after_the_wait():
    @T.prim_func
    def main(A: T.Tensor((4, 128), "float16"), B: T.Tensor((4, 128), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((4, 128), "float16")
            for s in T.serial(4):
                T.async_copy(A[s, 0:128], S[s, 0:128])
            T.ptx_wait_group(0)
            for s, i in T.Parallel(4, 128):
                B[s, i] = S[s, (i + 8) % 128]

    lines = [line.strip() for line in _source(main).splitlines()]
    wait = lines.index("tl::cp_async_wait<0>();")
    assert lines[wait + 1] == "__syncthreads();"
    assert "__syncthreads();" not in lines[wait - 2:wait]  # not between the loop and the wait

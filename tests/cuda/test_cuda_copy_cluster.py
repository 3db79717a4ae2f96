"""T.copy_cluster(src, dst, dst_block=r) on sm_90a: block 0's shared tile stored into block r's
through distributed shared memory, published by T.cluster_sync or by an arrival on block r's
mbarrier (TileLang's tests/cuda/test_tma_dsmem.py kernels). NVRTC compiles them; the GPU tests
run them."""
from __future__ import annotations

import pytest

import tilelang_core
from tilelang_core import language as T

N = 128


def cluster_copy(with_barrier: bool):
    @T.prim_func
    def kernel(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.ClusterKernel(2, threads=128, cluster_dims=(2, 1, 1)) as pid:
            s_src = T.alloc_shared((N,), "float32")
            s_dst = T.alloc_shared((N,), "float32")
            s_barrier = T.alloc_cluster_barrier([1])
            T.fill(s_src, 0.0)
            T.fill(s_dst, 0.0)
            T.cluster_sync()
            if pid == 0:
                for i in T.Parallel(N):
                    s_src[i] = A[i]
                if with_barrier:
                    T.copy_cluster(s_src, s_dst, dst_block=1, remote_barrier=s_barrier[0])
                else:
                    T.copy_cluster(s_src, s_dst, dst_block=1)
            if not with_barrier:
                T.cluster_sync()
            if pid == 1:
                if with_barrier:
                    T.mbarrier_wait_parity(s_barrier[0], 0)
                for i in T.Parallel(N):
                    B[i] = s_dst[i]

    return kernel


def _lines(with_barrier: bool) -> list[str]:
    source = tilelang_core.compile(cluster_copy(with_barrier), target="cuda/sm_90a", cache=False).get_kernel_source()
    return [line.strip() for line in source.splitlines()]


def test_each_thread_stores_its_elements_into_block_1():
    lines = _lines(False)
    stores = [line for line in lines if line.startswith("tl::st_cluster(")]
    assert stores == ["tl::st_cluster(&s_dst[tx], s_src[tx], 1U);"]
    assert lines.count("tl::cluster_sync();") == 2


def test_with_a_remote_barrier_thread_0_arrives_after_a_block_barrier():
    lines = _lines(True)
    at = next(i for i, line in enumerate(lines) if line.startswith("tl::st_cluster("))
    arrive = next(i for i, line in enumerate(lines) if line.startswith("tl::mbarrier_arrive_cluster("))
    assert "__syncthreads();" in lines[at:arrive]
    assert lines[arrive] == "tl::mbarrier_arrive_cluster(&s_barrier[0], 1U);" and "tx == 0" in lines[arrive - 1]


def test_multicast_is_refused_saying_so():
    with pytest.raises(Exception, match="cluster_mask= .* is not supported yet"):
        @T.prim_func
        def kernel(A: T.Tensor((N,), "float32")):
            with T.ClusterKernel(2, threads=128, cluster_dims=(2, 1, 1)):
                s = T.alloc_shared((N,), "float32")
                T.copy_cluster(A, s, cluster_mask=3)


@pytest.mark.gpu
@pytest.mark.parametrize("with_barrier", [False, True])
def test_block_1_reads_what_block_0_stored(with_barrier):
    torch = pytest.importorskip("torch")
    kernel = tilelang_core.compile(cluster_copy(with_barrier), target="cuda", cache=False)
    a = torch.arange(N, dtype=torch.float32, device="cuda")
    b = torch.zeros_like(a)
    kernel(a, b)
    torch.cuda.synchronize()
    assert torch.equal(a, b)

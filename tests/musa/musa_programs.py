"""Programs the MUSA tests compile: the seed 003 GEMM (Moore Threads' TileLang guide) and a
FlashAttention forward, in the public language, as a user writes them."""
from __future__ import annotations

from tilelang_core import language as T


def seed_gemm(M, N, K, block_M=256, block_N=256, block_K=64, threads=512, dtype="float16",  # noqa: N803
              accum_dtype="float32", stages=3):
    """The seed 003 GEMM: 256 x 256 x 64 tiles, 512 threads, column-major block rasterization
    in panels of 4, warps split squarely."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):  # noqa: N803
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel_size=4, order="col")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, policy=T.GemmWarpPolicy.Square)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def flash_attention(batch, heads, seq_len, dim, block_M=64, block_N=64, threads=128, stages=1):  # noqa: N803
    """FlashAttention forward, full attention: the conformance suite's (TileLang's
    example_mha_fwd_bshd, only the imports changed)."""
    from tilelang_conformance.cases.attention import flashattn

    return flashattn(batch, heads, seq_len, dim, False, block_M, block_N, stages, threads)

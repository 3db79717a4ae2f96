"""Kernels the Metal tests share."""
from __future__ import annotations

from tilelang_core import language as T


def gemm(M, N, K, bM=64, bN=64, bK=32, dtype="float16", acc="float32", trans_b=False, threads=128):
    b_shape = (N, K) if trans_b else (K, N)
    b_block = (bN, bK) if trans_b else (bK, bN)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), acc)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared(b_block, dtype)
            C_l = T.alloc_fragment((bM, bN), acc)
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, ko * bK], A_s)
                if trans_b:
                    T.copy(B[bx * bN, ko * bK], B_s)
                else:
                    T.copy(B[ko * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=trans_b)
            T.copy(C_l, C[by * bM, bx * bN])
    return main

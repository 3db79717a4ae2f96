"""A GQA decode step in the language: one query per head, the query heads that share a kv
head processed together as the rows of one FlashAttention tile (rows past the group are
padding: computed, never stored)."""
from __future__ import annotations

from tilelang_core import language as T


def gqa_decode(batch, heads, groups, seqlen_kv, dim, block_N, block_H, num_stages, threads):  # noqa: N803
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    per_group = heads // groups
    dtype, accum = "float16", "float32"

    @T.prim_func
    def main(Q: T.Tensor((batch, heads, dim), dtype), K: T.Tensor((batch, seqlen_kv, groups, dim), dtype),  # noqa: N803
             V: T.Tensor((batch, seqlen_kv, groups, dim), dtype), Output: T.Tensor((batch, heads, dim), dtype)):  # noqa: N803
        with T.Kernel(batch, groups, threads=threads) as (bx, by):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum)
            acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum)
            scores_max = T.alloc_fragment([block_H], accum)
            scores_max_prev = T.alloc_fragment([block_H], accum)
            scores_scale = T.alloc_fragment([block_H], accum)
            scores_sum = T.alloc_fragment([block_H], accum)
            logsum = T.alloc_fragment([block_H], accum)

            T.copy(Q[bx, by * per_group:by * per_group + block_H, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            for k in T.Pipelined(T.ceildiv(seqlen_kv, block_N), num_stages=num_stages):
                T.copy(K[bx, k * block_N:(k + 1) * block_N, by, :], K_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bx, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(block_H, dim):
                if i < per_group:
                    Output[bx, by * per_group + i, j] = acc_o[i, j] / logsum[i]

    return main

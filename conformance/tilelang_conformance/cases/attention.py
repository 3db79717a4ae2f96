"""FlashAttention forward (online softmax over K/V tiles), causal and not: TileLang's
`example_mha_fwd_bshd`, with only the imports changed."""
from __future__ import annotations

import numpy as np

from tilelang_core import language as T

from ..case import Arg, Case, Spec, add

BATCH, SEQ, HEADS, DIM = 1, 128, 2, 64
BLOCK_M, BLOCK_N = 64, 64
# Targets whose blocks have less than 32 KB of shared memory (Moore Threads mp_21/mp_22: 28 KB)
# take query tiles of 32 rows (twice as many blocks): Q, O and P tiles of 32 x 64 halves fit in
# 28 KB with K and V. (Not K/V tiles of 32: with block_N < block_M a causal row can be fully
# masked in a tile, and the example's running max is then -inf - -inf = NaN.)
SMALL_SHARED_MEMORY, SMALL_BLOCK_M = 32 * 1024, 32


def flashattn(batch, heads, seq_len, dim, is_causal, block_M, block_N, num_stages=1, threads=128):  # noqa: N803
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, seq_len, heads, dim]
    dtype = "float16"
    accum_dtype = "float"

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),  # noqa: N803
             Output: T.Tensor(shape, dtype)):  # noqa: N803
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (
                T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if is_causal else T.ceildiv(seq_len, block_N))

            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0,
                                                     -T.infinity(acc_s.dtype))
                else:
                    T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return main


def attention_reference(causal: bool):
    def reference(Q, K, V):  # noqa: N803
        q, k, v = (x.transpose(0, 2, 1, 3) for x in (Q, K, V))  # (batch, heads, seq, dim)
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
        if causal:
            seq = scores.shape[-1]
            scores = np.where(np.tril(np.ones((seq, seq), bool)), scores, -np.inf)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        out = (p / p.sum(-1, keepdims=True)) @ v
        return {"Output": out.transpose(0, 2, 1, 3)}

    return reference


def attention_case(causal: bool, stages: int) -> Case:
    shape = (BATCH, SEQ, HEADS, DIM)

    def make(target):
        args = [Arg("Q", shape, "float16"), Arg("K", shape, "float16"), Arg("V", shape, "float16"),
                Arg("Output", shape, "float16", "out")]
        block_m = SMALL_BLOCK_M if target.capabilities.shared_memory_optin < SMALL_SHARED_MEMORY else BLOCK_M
        # P is rounded to float16 before P @ V, as in TileLang
        return Spec(flashattn(BATCH, HEADS, SEQ, DIM, causal, block_m, BLOCK_N, stages), args,
                    attention_reference(causal), {"Output": (1e-2, 5e-3)})

    name = "flash_attention.fwd" + (".causal" if causal else "")
    return add(Case(name, "attention", ("float16", "float32"), make,
                    f"FlashAttention forward, {'causal' if causal else 'full'}, "
                    f"seq {SEQ}, dim {DIM}, {stages} stage(s)"))


attention_case(False, 2)
attention_case(True, 1)

"""Programs of several launches (`with T.Kernel` one after another) and their float64
references: what `test_multi_launch.py` runs on the CPU and `tests/cuda/export_programs.py`
compiles (and exports for a GPU run). Written as for TileLang, imports changed."""
from __future__ import annotations

import numpy as np

import tilelang_core as tilelang  # noqa: F401  (as a TileLang user would import it)
from tilelang_core import language as T


def split_decode(batch, heads, groups, seqlen, dim, num_split, block_N, dtype="float32", threads=32):
    """Flash decoding (grouped-query attention of one query token) in two launches, as in
    TileLang's flash_decoding example: one block per (batch, kv head, split) writes its
    partial output and log-sum-exp to `T.alloc_global` workspaces; a kernel of another grid
    combines the splits."""
    block_H = heads // groups
    chunk = seqlen // num_split
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    accum = "float32"

    @T.prim_func
    def decode(Q: T.Tensor((batch, heads, dim), dtype), K: T.Tensor((batch, seqlen, groups, dim), dtype),
               V: T.Tensor((batch, seqlen, groups, dim), dtype), Output: T.Tensor((batch, heads, dim), dtype)):
        glse = T.alloc_global([batch, heads, num_split], accum)
        Output_partial = T.alloc_global([batch, heads, num_split, dim], accum)
        with T.Kernel(batch, groups, num_split, threads=threads) as (bx, by, bz):
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
            T.copy(Q[bx, by * block_H:(by + 1) * block_H, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            for k in T.Pipelined(chunk // block_N, num_stages=1):
                T.copy(K[bx, bz * chunk + k * block_N:bz * chunk + (k + 1) * block_N, by, :], K_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bx, bz * chunk + k * block_N:bz * chunk + (k + 1) * block_N, by, :], V_shared)
                T.copy(acc_s, acc_s_cast)
                T.gemm(acc_s_cast, V_shared, acc_o)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            for i in T.Parallel(block_H):
                glse[bx, by * block_H + i, bz] = T.log2(logsum[i]) + scores_max[i] * scale
            T.copy(acc_o, Output_partial[bx, by * block_H:(by + 1) * block_H, bz, :])
        with T.Kernel(heads, batch, threads=threads) as (hid, bid):
            o_acc = T.alloc_fragment([dim], accum)
            lse_max = T.alloc_var(accum)
            lse_sum = T.alloc_var(accum, init=0.0)
            lse_max = -T.infinity(accum)
            for k in T.serial(num_split):
                lse_max = T.max(lse_max, glse[bid, hid, k])
            for k in T.serial(num_split):
                lse_sum += T.exp2(glse[bid, hid, k] - lse_max)
            lse_total = T.log2(lse_sum) + lse_max
            T.clear(o_acc)
            for k in T.serial(num_split):
                for i in T.Parallel(dim):
                    o_acc[i] += Output_partial[bid, hid, k, i] * T.exp2(glse[bid, hid, k] - lse_total)
            for i in T.Parallel(dim):
                Output[bid, hid, i] = o_acc[i]

    return decode


SHAPE = dict(batch=2, heads=8, groups=2, seqlen=64, dim=16, num_split=4, block_N=8)


def decode_reference(q, k, v):
    """softmax(q k^T / sqrt(dim)) v per head, the kv heads shared by groups of query heads."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    heads, groups = q.shape[1], k.shape[2]
    k, v = np.repeat(k, heads // groups, axis=2), np.repeat(v, heads // groups, axis=2)
    s = np.einsum("bhd,bshd->bhs", q, k) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhs,bshd->bhd", p / p.sum(-1, keepdims=True), v)


def decode_inputs(seed=0):
    rng = np.random.default_rng(seed)
    b, h, g, s, d = (SHAPE[n] for n in ("batch", "heads", "groups", "seqlen", "dim"))
    return (rng.standard_normal((b, h, d)).astype(np.float32), rng.standard_normal((b, s, g, d)).astype(np.float32),
            rng.standard_normal((b, s, g, d)).astype(np.float32))


def symbolic_workspace():
    """Workspaces sized from a symbolic dim, one of them by an expression over it."""
    n = T.symbolic("n")

    @T.prim_func
    def main(A: T.Tensor((n, 4), "float32"), B: T.Tensor((n,), "float32")):
        rows = T.alloc_global((n,), "float32")
        padded = T.alloc_global(((n + 7) // 8 * 8,), "float32")
        with T.Kernel(T.ceildiv(n, 8), threads=8) as bx:
            for i in T.serial(8):
                if bx * 8 + i < n:
                    rows[bx * 8 + i] = A[bx * 8 + i, 0] + A[bx * 8 + i, 3]
                padded[bx * 8 + i] = T.float32(bx)
        with T.Kernel(n, threads=4) as bx:
            B[bx] = rows[bx] * 10.0 + padded[bx]

    return main


def handoff(N, M, block=32):
    """Two launches of different grids, the second reading a tensor parameter the first wrote
    (as TileLang's fused MoE example hands its up-projection to the down-projection)."""

    @T.prim_func
    def main(A: T.Tensor((N, M), "float32"), tmp: T.Tensor((N, M), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(N, block), M, threads=block) as (bx, by):
            for i in T.Parallel(block):
                if bx * block + i < N:
                    tmp[bx * block + i, by] = A[bx * block + i, by] * 2.0
        with T.Kernel(M, threads=32) as bx:
            acc = T.alloc_var("float32", init=0.0)
            for i in T.serial(N):
                acc += tmp[i, bx]
            B[bx] = acc

    return main

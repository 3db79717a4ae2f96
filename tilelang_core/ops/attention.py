"""Attention: flash_attention (forward; causal; GQA/MQA), flash_attention_varlen (packed
sequences of different lengths) and attention_decode (one query per head against a KV cache).

All three run the online softmax over key/value tiles: a block owns `block_M` query rows (for
decode: the query heads that share one KV head), multiplies them with a K tile on the matrix
units, keeps a running row maximum and sum in registers, rescales its output accumulator and
adds P @ V. P is rounded to the inputs' dtype before the second product. A causal mask is
top-left aligned (query i sees keys 0..i), as `torch.nn.functional.scaled_dot_product_attention`.
"""
from __future__ import annotations

import math

from .. import language as T
from .launch import OpError, check_dtype, contiguous, dtype_of, filled, kernel_for, target_for
from .registry import ConfigRule, Operator, get, register

__all__ = ["flash_attention", "flash_attention_varlen", "attention_decode"]

DTYPES = ("float16", "bfloat16")
LOG2E = 1.4426950408889634

ATTENTION_TABLE = (
    ConfigRule("block-serial", {"block_M": 32, "block_N": 32, "stages": 1, "threads": 1}),
    # fast_math: exp2 as one ex2.approx.ftz (NVRTC's --use_fast_math keeps inf and NaN), half the
    # instructions of the softmax; HIP's -ffast-math assumes finite values, so only this row has it
    # causal_stages: the stages of a causal problem with dim <= 128 (3 x 64 KB of K and V tiles at
    # 128, 224 KB of shared memory in all); TileLang's causal example on the H100
    # (bench/attention.py, 2026-11-26): 3 stages 0.97x SDPA, 2 stages 0.96x
    ConfigRule("wgmma", {"block_M": 128, "block_N": 128, "stages": 2, "causal_stages": 3, "warps": 8,
                         "fast_math": True}),
    ConfigRule("simt", {"block_M": 64, "block_N": 64, "stages": 2, "warps": 4}),
)
ATTENTION_TUNE = {"block_M": (64, 128), "block_N": (32, 64, 128), "stages": (1, 2), "warps": (4, 8)}


def _fit(block: int, size: int, least: int = 16) -> int:
    while block > least and block // 2 >= size:
        block //= 2
    return block


def _softmax_scale(problem: dict) -> tuple[float, bool]:
    """(the factor on raw scores inside exp2, whether scores are scaled before the max).

    With a positive scale the row maximum of the raw scores is the maximum of the scaled ones,
    so exp2(s * c - m * c) folds the scale into one multiply-add per score (as TileLang's
    FlashAttention example); a scale <= 0 scales the scores first (masked ones stay -inf)
    and uses c = log2(e).
    """
    scale = problem["scale"]
    return (scale * LOG2E, False) if scale > 0 else (LOG2E, True)


@T.macro
def _online_softmax_step(s, p, o, m, m_prev, alpha, l, row_sum, c, scale, prescale):  # noqa: E741
    """One key tile of the online softmax, after the scores `s` (rows x keys, masked ones
    -inf) were computed: `m` becomes the running row maximum (`m_prev` the one before),
    `alpha` = exp2(m_prev * c - m * c) the factor on what came before, `s` the tile's
    exp2(s * c - m * c) (the scores times `scale` first when `prescale`: see
    `_softmax_scale`), `l` the running row sum, `p` the tile in the inputs' dtype, and the
    output accumulator `o` rescaled by `alpha`; the caller adds p @ V to `o`."""
    rows, cols = s.shape
    width = o.shape[1]
    if prescale:  # a masked score stays -inf (times a negative scale it would be +inf)
        for i, j in T.Parallel(rows, cols):
            s[i, j] = T.if_then_else(s[i, j] == -T.infinity("float32"), s[i, j], s[i, j] * scale)
    T.copy(m, m_prev)
    T.reduce_max(s, m, dim=1, clear=False)
    for i in T.Parallel(rows):
        alpha[i] = T.exp2(m_prev[i] * c - m[i] * c)
    for i, j in T.Parallel(rows, cols):
        s[i, j] = T.exp2(s[i, j] * c - m[i] * c)
    T.reduce_sum(s, row_sum, dim=1)
    for i in T.Parallel(rows):
        l[i] = l[i] * alpha[i] + row_sum[i]
    T.copy(s, p)
    for i, j in T.Parallel(rows, width):
        o[i, j] = o[i, j] * alpha[i]


def _fwd_kernel(problem: dict, config: dict):
    B, Hq, Hkv, Sq, Skv, D, dtype, causal = (problem[k] for k in (
        "batch", "heads", "kv_heads", "seq_q", "seq_kv", "dim", "dtype", "causal"))
    group = Hq // Hkv
    bM, bN = _fit(config["block_M"], Sq), _fit(config["block_N"], Skv)
    c, prescale = _softmax_scale(problem)
    scale = problem["scale"]
    ragged = Skv % bN != 0
    # a causal problem may take more stages (the table's causal_stages), sized for dim <= 128
    stages = config.get("causal_stages", config["stages"]) if causal and D <= 128 else config["stages"]

    @T.prim_func
    def main(Q: T.Tensor((B, Hq, Sq, D), dtype), K: T.Tensor((B, Hkv, Skv, D), dtype),
             V: T.Tensor((B, Hkv, Skv, D), dtype), O: T.Tensor((B, Hq, Sq, D), dtype)):
        with T.Kernel(T.ceildiv(Sq, bM), Hq, B, threads=config["threads"]) as (bx, by, bz):
            Q_s = T.alloc_shared((bM, D), dtype)
            K_s = T.alloc_shared((bN, D), dtype)
            V_s = T.alloc_shared((bN, D), dtype)
            s = T.alloc_fragment((bM, bN), "float32")
            p = T.alloc_fragment((bM, bN), dtype)
            o = T.alloc_fragment((bM, D), "float32")
            m = T.alloc_fragment((bM,), "float32")
            m_prev = T.alloc_fragment((bM,), "float32")
            alpha = T.alloc_fragment((bM,), "float32")
            l = T.alloc_fragment((bM,), "float32")  # noqa: E741
            row_sum = T.alloc_fragment((bM,), "float32")
            T.copy(Q[bz, by, bx * bM, 0], Q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            # causal: the loop stops at the block of the diagonal instead of masking the rest
            steps = T.min(T.ceildiv(Skv, bN), T.ceildiv((bx + 1) * bM, bN)) if causal else T.ceildiv(Skv, bN)
            for k in T.Pipelined(steps, num_stages=stages):
                T.copy(K[bz, by // group, k * bN, 0], K_s)
                # the mask is the product's starting value (0 or -inf): no pass over the scores after it
                if causal:
                    if (k + 1) * bN > T.min(bx * bM, Skv // bN * bN):  # a block of the diagonal, or a ragged last one
                        for i, j in T.Parallel(bM, bN):
                            s[i, j] = T.if_then_else((k * bN + j < Skv) and (bx * bM + i >= k * bN + j), 0,
                                                     -T.infinity("float32"))
                    else:
                        T.clear(s)
                elif ragged:
                    for i, j in T.Parallel(bM, bN):
                        s[i, j] = T.if_then_else(k * bN + j < Skv, 0, -T.infinity("float32"))
                else:
                    T.clear(s)
                T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                _online_softmax_step(s, p, o, m, m_prev, alpha, l, row_sum, c, scale, prescale)
                T.copy(V[bz, by // group, k * bN, 0], V_s)
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i in T.Parallel(bM):  # 1 / l, and 0 for a row without keys (seq_kv 0), as FlashAttention
                l[i] = T.if_then_else(l[i] > 0, 1 / l[i], 0)
            for i, j in T.Parallel(bM, D):
                o[i, j] = o[i, j] * l[i]
            T.copy(o, O[bz, by, bx * bM, 0])

    return main


def _varlen_kernel(problem: dict, config: dict):
    """Sequences packed along the first axis, sequence b at rows cu[b]..cu[b+1]-1.

    Two launches. The first copies each sequence's keys and values to rows b * Lk .. of
    padded workspaces (zeros after them up to a whole tile; Lk = max_seq_kv rounded up to
    block_N: the workspaces hold 2 x batch x Lk x kv_heads x dim elements), so the
    main loop's tiles start at offsets made of block indices alone: the backends' pipelines
    (cp.async, TMA) take no load whose offset is read from memory. The second is the
    fixed-length kernel per (query tile, head, sequence): a block past its sequence's queries
    runs no step, a causal block stops at its diagonal, and only a block that crosses the
    diagonal or the sequence's last keys is masked."""
    batch, Hq, Hkv, Tq, Tk, D, dtype, causal, max_q, max_k = (problem[k] for k in (
        "batch", "heads", "kv_heads", "total_q", "total_kv", "dim", "dtype", "causal", "max_seq_q", "max_seq_kv"))
    group = Hq // Hkv
    bM, bN = _fit(config["block_M"], max_q), _fit(config["block_N"], max_k)
    Lk = max(1, -(-max_k // bN)) * bN
    W = Hkv * D
    rows = max(1, 8192 // W)  # rows of the padding copy per block
    lanes = config.get("vector_bytes", 2) // 2  # float16 / bfloat16 elements per piece
    vec = lanes if lanes > 1 and W % lanes == 0 else 1
    c, prescale = _softmax_scale(problem)
    scale = problem["scale"]

    @T.prim_func
    def main(Q: T.Tensor((Tq, Hq * D), dtype), K: T.Tensor((Tk, Hkv * D), dtype), V: T.Tensor((Tk, Hkv * D), dtype),
             CuQ: T.Tensor((batch + 1,), "int32"), CuK: T.Tensor((batch + 1,), "int32"),
             O: T.Tensor((Tq, Hq * D), dtype)):
        K_pad = T.alloc_global((batch * Lk, W), dtype)
        V_pad = T.alloc_global((batch * Lk, W), dtype)
        with T.Kernel(T.ceildiv(Lk, rows), batch, threads=128) as (px, pb):
            zero = T.alloc_local((vec,), dtype)
            for v in T.serial(vec):
                zero[v] = T.cast(0, dtype)
            p_start = CuK[pb]
            p_len = CuK[pb + 1] - p_start
            # rows up to the end of the sequence's last tile: zeros after its keys (the main
            # loop never reads further)
            for i, t in T.Parallel(rows, W // vec):  # vec-element pieces (16 bytes where configured)
                if px * rows + i < T.min(T.ceildiv(p_len, bN) * bN, Lk):
                    if px * rows + i < p_len:
                        if vec > 1:
                            K_pad[pb * Lk + px * rows + i, T.Ramp(t * vec, 1, vec)] = \
                                K[p_start + px * rows + i, T.Ramp(t * vec, 1, vec)]
                            V_pad[pb * Lk + px * rows + i, T.Ramp(t * vec, 1, vec)] = \
                                V[p_start + px * rows + i, T.Ramp(t * vec, 1, vec)]
                        else:
                            K_pad[pb * Lk + px * rows + i, t] = K[p_start + px * rows + i, t]
                            V_pad[pb * Lk + px * rows + i, t] = V[p_start + px * rows + i, t]
                    else:
                        if vec > 1:
                            K_pad[pb * Lk + px * rows + i, T.Ramp(t * vec, 1, vec)] = zero[T.Ramp(0, 1, vec)]
                            V_pad[pb * Lk + px * rows + i, T.Ramp(t * vec, 1, vec)] = zero[T.Ramp(0, 1, vec)]
                        else:
                            K_pad[pb * Lk + px * rows + i, t] = zero[0]
                            V_pad[pb * Lk + px * rows + i, t] = zero[0]
        with T.Kernel(T.ceildiv(max_q, bM), Hq, batch, threads=config["threads"]) as (bx, by, bz):
            Q_s = T.alloc_shared((bM, D), dtype)
            K_s = T.alloc_shared((bN, D), dtype)
            V_s = T.alloc_shared((bN, D), dtype)
            s = T.alloc_fragment((bM, bN), "float32")
            p = T.alloc_fragment((bM, bN), dtype)
            o = T.alloc_fragment((bM, D), "float32")
            m = T.alloc_fragment((bM,), "float32")
            m_prev = T.alloc_fragment((bM,), "float32")
            alpha = T.alloc_fragment((bM,), "float32")
            l = T.alloc_fragment((bM,), "float32")  # noqa: E741
            row_sum = T.alloc_fragment((bM,), "float32")
            q_start = CuQ[bz]
            q_len = CuQ[bz + 1] - q_start
            k_len = CuK[bz + 1] - CuK[bz]
            T.copy(Q[q_start + bx * bM:q_start + bx * bM + bM, by * D:by * D + D], Q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            # no step for a tile past this sequence's queries; causal: none past the diagonal
            # (never past Lk: a max_seqlen_k shorter than a sequence reads no other sequence's keys)
            tiles = T.min(T.min(T.ceildiv(k_len, bN), Lk // bN), T.ceildiv((bx + 1) * bM, bN)) if causal \
                else T.min(T.ceildiv(k_len, bN), Lk // bN)
            steps = T.if_then_else(bx * bM < q_len, tiles, 0)
            for k in T.Pipelined(steps, num_stages=config["stages"]):
                T.copy(K_pad[bz * Lk + k * bN:bz * Lk + k * bN + bN, by // group * D:by // group * D + D], K_s)
                if causal:
                    if (k + 1) * bN > T.min(bx * bM, k_len - k_len % bN):  # the diagonal's or the last keys
                        for i, j in T.Parallel(bM, bN):
                            s[i, j] = T.if_then_else((k * bN + j < k_len) and (bx * bM + i >= k * bN + j), 0,
                                                     -T.infinity("float32"))
                    else:
                        T.clear(s)
                else:
                    if (k + 1) * bN > k_len:
                        for i, j in T.Parallel(bM, bN):
                            s[i, j] = T.if_then_else(k * bN + j < k_len, 0, -T.infinity("float32"))
                    else:
                        T.clear(s)
                T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                _online_softmax_step(s, p, o, m, m_prev, alpha, l, row_sum, c, scale, prescale)
                T.copy(V_pad[bz * Lk + k * bN:bz * Lk + k * bN + bN, by // group * D:by // group * D + D], V_s)
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i in T.Parallel(bM):  # 1 / l, and 0 for a sequence without keys, as FlashAttention
                l[i] = T.if_then_else(l[i] > 0, 1 / l[i], 0)
            for i, j in T.Parallel(bM, D):
                if bx * bM + i < q_len:
                    O[q_start + bx * bM + i, by * D + j] = T.cast(o[i, j] * l[i], dtype)

    return main


def decode_chunk(seq_kv: int, splits: int, block_N: int) -> tuple[int, int]:
    """(keys per split, a whole number of `block_N` tiles; the number of non-empty splits).

    The split count is raised to a divisor of the tile count where one lies within twice the
    request, so that every chunk is whole (no masks, no bounds checks in the main loop)."""
    tiles = -(-seq_kv // block_N)
    splits = max(1, min(splits, tiles))
    exact = [n for n in range(splits, min(2 * splits, tiles) + 1) if tiles % n == 0]
    chunk = -(-tiles // (exact[0] if exact else splits)) * block_N
    return chunk, -(-seq_kv // chunk)


def _decode_kernel(problem: dict, config: dict):
    """Flash decoding: the KV sequence is cut into chunks; a block takes the `group` query
    heads of one KV head (its rows, padded to `block_H`) over one chunk and writes its
    normalised output and log2-sum-exp to workspaces; a second launch, one block per (batch,
    query head), combines the chunks.

    The split count is the problem's "splits" when nonzero, else `decode_splits` with the
    config's "blocks_per_processor" (default 4) and the problem's "processors". On a GPU the
    config's one warp per block keeps the score tile's row max and sum in registers (warp
    shuffles); with several warps the key columns of a tile are spread over warps and the
    reductions go through shared memory."""
    B, Hq, Hkv, S, D, dtype = (problem[k] for k in ("batch", "heads", "kv_heads", "seq_kv", "dim", "dtype"))
    group = Hq // Hkv
    bH = max(config["block_H"], 1 << (group - 1).bit_length())
    bN = _fit(config["block_N"], S)
    requested = decode_splits(B * Hkv, S, problem.get("processors"), problem["splits"] or None,
                              config.get("blocks_per_processor", 4))
    chunk, splits = decode_chunk(S, requested, bN)
    c, prescale = _softmax_scale(problem)
    scale = problem["scale"]
    ragged = chunk * splits != S  # the last chunk ends past the keys: its tail is masked

    @T.prim_func
    def main(Q: T.Tensor((B, Hq, D), dtype), K: T.Tensor((B, Hkv, S, D), dtype), V: T.Tensor((B, Hkv, S, D), dtype),
             O: T.Tensor((B, Hq, D), dtype)):
        lse_part = T.alloc_global((B, Hq, splits), "float32")
        o_part = T.alloc_global((B, Hq, splits, D), "float32")
        with T.Kernel(Hkv, splits, B, threads=config["threads"]) as (bx, bs, bz):
            Q_s = T.alloc_shared((bH, D), dtype)
            K_s = T.alloc_shared((bN, D), dtype)
            V_s = T.alloc_shared((bN, D), dtype)
            s = T.alloc_fragment((bH, bN), "float32")
            p = T.alloc_fragment((bH, bN), dtype)
            o = T.alloc_fragment((bH, D), "float32")
            m = T.alloc_fragment((bH,), "float32")
            m_prev = T.alloc_fragment((bH,), "float32")
            alpha = T.alloc_fragment((bH,), "float32")
            l = T.alloc_fragment((bH,), "float32")  # noqa: E741
            row_sum = T.alloc_fragment((bH,), "float32")
            for i, j in T.Parallel(bH, D):
                Q_s[i, j] = T.if_then_else(i < group, Q[bz, T.min(bx * group + i, Hq - 1), j], T.cast(0, dtype))
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            # a trip count known at compile time (the pipeline needs it; a short last chunk masks)
            for k in T.Pipelined(chunk // bN, num_stages=config["stages"]):
                T.copy(K[bz, bx, bs * chunk + k * bN, 0], K_s)
                if ragged:
                    for i, j in T.Parallel(bH, bN):
                        s[i, j] = T.if_then_else(bs * chunk + k * bN + j < S, 0, -T.infinity("float32"))
                else:
                    T.clear(s)
                T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                _online_softmax_step(s, p, o, m, m_prev, alpha, l, row_sum, c, scale, prescale)
                T.copy(V[bz, bx, bs * chunk + k * bN, 0], V_s)
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(bH, D):
                if i < group:
                    o_part[bz, bx * group + i, bs, j] = o[i, j] / l[i]
            for i in T.Parallel(bH):
                if i < group:
                    lse_part[bz, bx * group + i, bs] = m[i] * c + T.log2(l[i])
        with T.Kernel(Hq, B, threads=D) as (hq, b):
            acc = T.alloc_fragment((D,), "float32")
            top = T.alloc_var("float32")
            total = T.alloc_var("float32", init=0.0)
            top = -T.infinity("float32")
            for j in T.serial(splits):
                top = T.max(top, lse_part[b, hq, j])
            for j in T.serial(splits):
                total += T.exp2(lse_part[b, hq, j] - top)
            T.clear(acc)
            for j in T.serial(splits):
                for d in T.Parallel(D):
                    acc[d] += o_part[b, hq, j, d] * (T.exp2(lse_part[b, hq, j] - top) / total)
            for d in T.Parallel(D):
                O[b, hq, d] = T.cast(acc[d], dtype)

    return main


# -- references -----------------------------------------------------------------------------


def reference_attention(q, k, v, is_causal=False, scale=None):
    """Softmax attention in float64 on (batch, heads, seq, dim) arrays; KV heads repeated for GQA;
    queries with no keys give 0."""
    import numpy as np

    q, k, v = (np.asarray(t, dtype="float64") for t in (q, k, v))
    if k.shape[2] == 0:  # no keys to attend: 0 (as FlashAttention)
        return np.zeros(q.shape[:3] + v.shape[3:])
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if is_causal:
        sq, sk = s.shape[-2], s.shape[-1]
        s = np.where(np.tril(np.ones((sq, sk), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def reference_attention_varlen(q, k, v, cu_q, cu_k, is_causal=False, scale=None):
    import numpy as np

    out = np.zeros(np.shape(q), dtype="float64")
    cu_q, cu_k = np.asarray(cu_q), np.asarray(cu_k)
    for b in range(len(cu_q) - 1):
        qs = np.asarray(q)[cu_q[b]:cu_q[b + 1]].transpose(1, 0, 2)[None]
        ks = np.asarray(k)[cu_k[b]:cu_k[b + 1]].transpose(1, 0, 2)[None]
        vs = np.asarray(v)[cu_k[b]:cu_k[b + 1]].transpose(1, 0, 2)[None]
        if qs.shape[2]:
            out[cu_q[b]:cu_q[b + 1]] = reference_attention(qs, ks, vs, is_causal, scale)[0].transpose(1, 0, 2)
    return out


def reference_decode(q, k, v, scale=None):
    import numpy as np

    return reference_attention(np.asarray(q)[:, :, None, :], k, v, False, scale)[:, :, 0, :]


_ATT = {"batch": 8, "heads": 16, "kv_heads": 16, "seq_q": 4096, "seq_kv": 4096, "dim": 128, "dtype": "float16",
        "causal": False, "scale": 1 / math.sqrt(128)}
register(Operator("flash_attention", "softmax(Q K^T * scale [causal]) V; GQA/MQA by fewer KV heads",
                  {"online_softmax": _fwd_kernel}, ATTENTION_TABLE, reference_attention, (3,), _ATT, ATTENTION_TUNE))
register(Operator("flash_attention_varlen", "flash_attention over packed sequences of different lengths",
                  {"online_softmax": _varlen_kernel},
                  (ConfigRule("block-serial", {"block_M": 32, "block_N": 32, "stages": 1, "threads": 1}),
                   ConfigRule("wgmma", {"block_M": 128, "block_N": 128, "stages": 2, "warps": 8, "fast_math": True,
                                        "vector_bytes": 16}),
                   ConfigRule("simt", {"block_M": 64, "block_N": 64, "stages": 2, "warps": 4, "vector_bytes": 16})),
                  reference_attention_varlen, (5,),
                  {"batch": 8, "heads": 16, "kv_heads": 16, "total_q": 16384, "total_kv": 16384, "dim": 128,
                   "dtype": "float16", "causal": True, "max_seq_q": 4096, "max_seq_kv": 4096,
                   "scale": 1 / math.sqrt(128)},
                  {"block_M": (64, 128), "block_N": (32, 64, 128), "stages": (1, 2)}))
register(Operator("attention_decode", "one query token per head against a KV cache (GQA groups per block)",
                  {"online_softmax": _decode_kernel},
                  # block_H 1: MHA's one query row per block (2 padded it: 1.8x slower on the CPU)
                  (ConfigRule("block-serial", {"block_H": 1, "block_N": 64, "stages": 1, "threads": 1}),
                   ConfigRule("warp_size=64", {"block_H": 16, "block_N": 64, "stages": 1, "warps": 4}),
                   # one warp: the scores' row max and sum by shuffles (4 warps split a tile's keys,
                   # and the reductions went through shared memory: 0.55x SDPA on the H100);
                   # 32-key tiles, 3 stages: 52 KB shared, 4 blocks per SM, no spills (ptxas);
                   # fast_math: exp2 as one ex2.approx.ftz (NVRTC keeps inf and NaN); 4 blocks
                   # per SM (bench/decode_variants.py on the H100, 2026-11-26: 0.95x SDPA, 8: 0.93x,
                   # 16: 0.91x; 4 warps: 0.44x; the 4-warp kernel before: 0.56x)
                   ConfigRule("mma.sync", {"block_H": 16, "block_N": 32, "stages": 3, "warps": 1, "fast_math": True,
                                           "blocks_per_processor": 4}),
                   ConfigRule("simt", {"block_H": 16, "block_N": 128, "stages": 3, "warps": 4})),
                  reference_decode, (3,),
                  {"batch": 16, "heads": 32, "kv_heads": 8, "seq_kv": 8192, "dim": 128, "dtype": "float16",
                   "scale": 1 / math.sqrt(128), "splits": 0, "processors": 132},
                  {"block_N": (32, 64), "stages": (2, 3, 4), "blocks_per_processor": (4, 8, 16)}))


# -- calls ----------------------------------------------------------------------------------


def _heads(op: str, hq: int, hkv: int) -> None:
    if hkv < 1 or hq % hkv:
        raise OpError(f"{op}: {hq} query heads cannot share {hkv} key/value heads; the query heads must be a "
                      f"multiple of the KV heads (GQA), or equal (MHA), or the KV heads 1 (MQA)")


def _same(op: str, dtype: str, **arrays) -> None:
    for name, a in arrays.items():
        if dtype_of(a) != dtype:
            raise OpError(f"{op}: {name} is {dtype_of(a)}, q is {dtype}; give q, k and v one dtype")


def flash_attention(q, k, v, is_causal: bool = False, scale: float | None = None, target=None):
    """Attention of `q` (batch, heads, seq_q, dim) over `k`, `v` (batch, kv_heads, seq_kv,
    dim): softmax(q k^T * scale) v, scale 1/sqrt(dim) by default; `is_causal` masks keys after
    each query (top-left aligned). kv_heads dividing heads gives GQA (1: MQA)."""
    dtype = check_dtype("flash_attention", "q", q, DTYPES)
    _same("flash_attention", dtype, k=k, v=v)
    if len(q.shape) != 4 or len(k.shape) != 4 or tuple(k.shape) != tuple(v.shape) \
            or k.shape[0] != q.shape[0] or k.shape[3] != q.shape[3]:
        raise OpError(f"flash_attention: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} must be "
                      f"(batch, heads, seq, dim) with k and v of one shape and q's batch and dim")
    b, hq, sq, d = (int(x) for x in q.shape)
    hkv, skv = int(k.shape[1]), int(k.shape[2])
    _heads("flash_attention", hq, hkv)
    if not (b and hq and sq and d and skv):  # as torch's SDPA: empty, or zeros without keys
        return filled(q, (b, hq, sq, d))
    problem = {"batch": b, "heads": hq, "kv_heads": hkv, "seq_q": sq, "seq_kv": skv, "dim": d, "dtype": dtype,
               "causal": bool(is_causal), "scale": float(1 / math.sqrt(d) if scale is None else scale)}
    kernel, _, _ = kernel_for(get("flash_attention"), target_for([q, k, v], target, "flash_attention"), problem)
    return kernel(contiguous(q), contiguous(k), contiguous(v))


def flash_attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q: int, is_causal: bool = False,
                           scale: float | None = None, target=None, max_seqlen_k: int | None = None):
    """Attention over packed sequences: `q` (total_q, heads, dim), `k`, `v` (total_kv,
    kv_heads, dim); sequence b holds rows cu_seqlens_q[b]..cu_seqlens_q[b+1]-1 of q (and
    likewise of k, v); `cu_seqlens_*` are int32 of length batch + 1 on q's device;
    `max_seqlen_q` and `max_seqlen_k` bound the lengths (they size the grid and the padded
    keys): checked where `cu_seqlens_*` live on the host; on a device a longer sequence is
    not covered past them, as in FlashAttention. `max_seqlen_k` left out:
    `max_seqlen_q` when `cu_seqlens_k` is `cu_seqlens_q`, else read from `cu_seqlens_k`
    (a copy to the host: pass it to avoid the wait). A query of a sequence without keys
    gives 0."""
    dtype = check_dtype("flash_attention_varlen", "q", q, DTYPES)
    _same("flash_attention_varlen", dtype, k=k, v=v)
    if len(q.shape) != 3 or len(k.shape) != 3 or tuple(k.shape) != tuple(v.shape) or k.shape[2] != q.shape[2]:
        raise OpError(f"flash_attention_varlen: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} "
                      f"must be (total, heads, dim) with k and v of one shape")
    for name, cu in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        check_dtype("flash_attention_varlen", name, cu, ("int32",))
    if tuple(cu_seqlens_q.shape) != tuple(cu_seqlens_k.shape) or len(cu_seqlens_q.shape) != 1:
        raise OpError("flash_attention_varlen: cu_seqlens_q and cu_seqlens_k must be 1-D of one length (batch + 1)")
    tq, hq, d = (int(x) for x in q.shape)
    tk, hkv = int(k.shape[0]), int(k.shape[1])
    _heads("flash_attention_varlen", hq, hkv)
    if max_seqlen_k is None:
        max_seqlen_k = max_seqlen_q if cu_seqlens_k is cu_seqlens_q else _longest(cu_seqlens_k)
    for name, value, cu in (("max_seqlen_q", max_seqlen_q, cu_seqlens_q), ("max_seqlen_k", max_seqlen_k, cu_seqlens_k)):
        # lengths on the host are checked here; on a device that would cost a copy and a wait
        longest = _longest(cu) if not _on_device(cu) else None
        if int(value) < 0 or (longest is not None and longest > int(value)):
            raise OpError(f"flash_attention_varlen: {name}={value}, but the longest sequence has "
                          f"{longest if longest is not None else 'more'} rows; give the longest length")
    batch = int(cu_seqlens_q.shape[0]) - 1
    if batch < 0:
        raise OpError("flash_attention_varlen: cu_seqlens_q and cu_seqlens_k are empty; they hold batch + 1 "
                      "offsets, at least [0]")
    if not (batch and tq and hq and d and tk):  # empty, or zeros for queries without keys
        return filled(q, (tq, hq, d))
    problem = {"batch": batch, "heads": hq, "kv_heads": hkv, "total_q": tq,
               "total_kv": tk, "dim": d, "dtype": dtype, "causal": bool(is_causal), "max_seq_q": int(max_seqlen_q),
               "max_seq_kv": int(max_seqlen_k), "scale": float(1 / math.sqrt(d) if scale is None else scale)}
    tgt = target_for([q, k, v, cu_seqlens_q, cu_seqlens_k], target, "flash_attention_varlen")
    kernel, _, _ = kernel_for(get("flash_attention_varlen"), tgt, problem)
    # heads and dim as one axis: each tile is then the last two axes of a 2-D tensor (TMA's box)
    out = kernel(contiguous(q).reshape(tq, hq * d), contiguous(k).reshape(tk, hkv * d),
                 contiguous(v).reshape(tk, hkv * d), contiguous(cu_seqlens_q), contiguous(cu_seqlens_k))
    return out.reshape(tq, hq, d)


def _on_device(x) -> bool:
    """Whether `x` lives off the host (a DLPack device type other than kDLCPU, 1): reading it
    on the host would copy it and wait."""
    from ..runtime.tensors import view_of

    view = view_of(x)
    return view is not None and view.device_type != 1


def _longest(cu) -> int:
    """The longest sequence of cumulative lengths `cu` (read on the host)."""
    import numpy as np

    host = cu.detach().cpu().numpy() if hasattr(cu, "detach") else np.asarray(cu)
    return int(np.diff(host).max()) if host.size > 1 else 0


def decode_splits(batch_heads: int, seq_kv: int, processors: int | None, num_splits: int | None = None,
                  blocks_per_processor: int = 4) -> int:
    """How many chunks the KV sequence of a decode step is cut into: `num_splits` when given,
    else enough (batch x KV head x chunk) blocks for about `blocks_per_processor` per
    processor, at most one chunk per 64 keys (1 on a target that does not say how many
    processors it has). `decode_chunk` then rounds it to whole tiles."""
    if num_splits is not None:
        return num_splits
    if not processors:
        return 1
    return max(1, min(-(-blocks_per_processor * processors // batch_heads), -(-seq_kv // 64)))


def attention_decode(q, k, v, scale: float | None = None, num_splits: int | None = None, target=None):
    """One decoding step: `q` (batch, heads, dim) against a KV cache `k`, `v` (batch,
    kv_heads, seq_kv, dim); kv_heads dividing heads gives GQA. Returns (batch, heads, dim).
    The KV sequence is cut into `num_splits` chunks combined at the end (default: enough
    to fill the device). A cache without keys (seq_kv = 0) gives zeros, as torch's SDPA."""
    dtype = check_dtype("attention_decode", "q", q, DTYPES)
    _same("attention_decode", dtype, k=k, v=v)
    if len(q.shape) != 3 or len(k.shape) != 4 or tuple(k.shape) != tuple(v.shape) \
            or k.shape[0] != q.shape[0] or k.shape[3] != q.shape[2]:
        raise OpError(f"attention_decode: q {tuple(q.shape)} must be (batch, heads, dim) and k, v "
                      f"{tuple(k.shape)}, {tuple(v.shape)} (batch, kv_heads, seq_kv, dim)")
    b, hq, d = (int(x) for x in q.shape)
    hkv, s = int(k.shape[1]), int(k.shape[2])
    _heads("attention_decode", hq, hkv)
    if num_splits is not None and (not isinstance(num_splits, int) or num_splits < 1):
        raise OpError(f"attention_decode: num_splits={num_splits!r}; give a positive int, or None for the default")
    if not (b and hq and d and s):  # as torch's SDPA: empty, or zeros for a cache without keys
        return filled(q, (b, hq, d))
    tgt = target_for([q, k, v], target, "attention_decode")
    # splits 0: the kernel's config chooses them for the target's processor count
    problem = {"batch": b, "heads": hq, "kv_heads": hkv, "seq_kv": s, "dim": d, "dtype": dtype,
               "scale": float(1 / math.sqrt(d) if scale is None else scale),
               "splits": num_splits or 0, "processors": tgt.capabilities.processor_count or 0}
    kernel, _, _ = kernel_for(get("attention_decode"), tgt, problem)
    return kernel(contiguous(q), contiguous(k), contiguous(v))

"""Matrix operators: gemm (transposes, bias, activation epilogue), batched_gemm, grouped_gemm,
dequantize_gemv (int8 / int4 weights) and conv2d (implicit GEMM: the im2col tile is gathered
into shared memory, never written out).

A GEMM block computes a (block_M, block_N) tile over `T.Pipelined` K steps with `T.gemm`,
which each backend lowers to its matrix instructions (wgmma, mma.sync, MFMA, ...) or to the
portable loops; the table picks tile sizes by the matrix family the target declares.

float32 precision follows torch. A float32 `T.gemm` may run on TF32 matrix units (operands
rounded to a 10-bit mantissa) on a target whose matrix instructions take ("tfloat32",
"float32"), as mma.sync does on sm_80 and sm_90a. Each float32 op of this module takes
`precision=`: "highest" (float32 products summed in float32: on a target with TF32 units
the kernel multiplies with FMA loops instead of `T.gemm`), "high" or "medium" (TF32 allowed:
`T.gemm` on the matrix units). Left out, it is torch's own setting for torch tensors
(`torch.get_float32_matmul_precision()`, which `torch.backends.cuda.matmul.allow_tf32`
sets; for conv2d `torch.backends.cudnn.allow_tf32`, as `torch.nn.functional.conv2d` reads)
and "highest" for NumPy arrays. 16-bit operands ignore it.
"""
from __future__ import annotations

import math

from .. import language as T
from ..ir import dtype_bytes
from .launch import OpError, check_dtype, contiguous, dtype_of, filled, kernel_for, library, target_for
from .registry import ConfigRule, Operator, get, register

__all__ = ["gemm", "batched_gemm", "grouped_gemm", "dequantize_gemv", "conv2d", "PRECISIONS",
           "float32_precision", "float32_math", "tf32_units"]

MATRIX_DTYPES = ("float16", "bfloat16", "float32")
ACTIVATIONS = ("none", "relu", "gelu", "silu")
PRECISIONS = ("highest", "high", "medium")

# The FMA-loop tile ("fma_*": float32 at precision "highest" on targets with TF32 units).
# gemm / batched_gemm run a thread per fma_thread_M x fma_thread_N block of it (8 x 8 unless
# the row says); grouped_gemm and conv2d run fma_warps warps over it.
_FMA = {"fma_block_M": 128, "fma_block_N": 128, "fma_block_K": 16, "fma_warps": 8}
_FMA_SERIAL = {"fma_block_M": 64, "fma_block_N": 64, "fma_block_K": 32, "fma_threads": 1}
# gemm / batched_gemm's FMA kernel where cp.async feeds it (`_gemm_fma_kernel` says what each
# key does; bench/sgemm_variants.py times the alternatives on the GPU). On the H100 (2026-11-26,
# cuBLAS SGEMM ms / ours, paired): these keys (16-wide K slabs, 2 stages, warps of 2 x 16
# threads, no skew, scalar stores) 0.89x at 4096^3 and 0.90x at 8192^3; every variant tried was
# slower: 8-wide slabs in 4 stages with a 16-byte skew and 16-byte stores 0.78x, 32-wide slabs
# 0.83x, 8 x 16 thread tiles 0.76x, 256-wide blocks 0.80x, 3 or 6 stages 0.77x.
# "fma_min_blocks" 2: NVRTC 13.0 (the H100 image's) gave this kernel 167 registers (one block per
# SM, 0.41x in bench/ops.py) where NVRTC 13.5 gives 128 (two blocks, the 0.89x above); with the
# cap 13.0 kept 128 registers with stack (0.75x). "fma_offset_loop": the cause was 13.0 unrolling
# the K loop 8 times (142 KB of SASS) where the prefetch guard repeated the loop's exit test; the
# loop counted from fma_stages - 1 stays rolled (NVRTC 13.0.88 here: 128 registers, no stack, an
# 18 KB loop, as 13.5 builds it); without the cap 13.0 still takes 151 registers, so the cap stays.
# "fma_transpose_a" (A's tile stored K-major, one float per cp.async): 0.91x at 4096^3 and 8192^3
# built by NVRTC 13.0 and by 13.5, against 0.80x / 0.82x (13.0) and 0.85x / 0.86x (13.5) with
# A's tile K-minor (H100, 2026-11-26, bench/sgemm_variants.py). "fma_prefetch" with 16 x 8 per
# thread (128 threads): 0.91x / 0.92x there; A handed over as (K, M) (`trans_a`, 16-byte copies)
# 0.98x / 0.96x, against 0.93x / 0.91x without the prefetch (NVRTC 13.0). "fma_pretranspose"
# (plain a @ b: a first launch writes A as (K, M), the tile loop then reads it as trans_a does):
# 0.98x / 1.00x in bench/sgemm_variants.py, 0.98x in bench/ops.py (built there by NVRTC 13.0)
_FMA_GEMM = {**_FMA, "fma_block_K": 16, "fma_thread_M": 8, "fma_thread_N": 8, "fma_lanes_n": 16,
             "fma_skew": False, "fma_swizzle_a": False, "fma_stages": 2, "fma_panel": 0, "fma_vector_store": False,
             "fma_min_blocks": 2, "fma_offset_loop": True, "fma_transpose_a": True, "fma_prefetch": True,
             "fma_prefetch_thread_M": 16, "fma_prefetch_thread_N": 8, "fma_pretranspose": True}
GEMM_TABLE = (
    ConfigRule("block-serial", {"block_M": 64, "block_N": 64, "block_K": 32, "stages": 1, "threads": 1,
                                **_FMA_SERIAL}),
    # 4 stages: with sm_90a's epilogue through shared memory and a TMA store, 0.92-0.94x cuBLAS
    # at 4096^3 against 0.79-0.89x with 3 (bench/gemm.py on the H100, 2026-11-26).
    # "tf32_nn_transposed_tile": float32 with B as (K, N) on TF32 units runs as C^T = B^T A^T
    # (tf32 wgmma reads B only K-major), so the instructions' M runs along the tile's N: the
    # tile is block_N x block_M (256 x 128: one m64n256 per warpgroup, B^T's register loads
    # 16 KB a k-tile instead of 32 KB)
    ConfigRule("wgmma", {"block_M": 128, "block_N": 256, "block_K": 64, "stages": 4, "warps": 8,
                         "epilogue": "registers", "tf32_nn_transposed_tile": True, **_FMA_GEMM}),
    ConfigRule("mma.sync", {"block_M": 128, "block_N": 128, "block_K": 32, "stages": 3, "warps": 4, **_FMA_GEMM}),
    ConfigRule("simt", {"block_M": 128, "block_N": 128, "block_K": 32, "stages": 2, "warps": 4, **_FMA}),
)
# grouped_gemm's tile table: "exact" has one entry per tile that holds rows (a kernel per tile
# count, at most `groups` of them for one number of rows), so every tile runs the whole K loop:
# a constant trip count over a constant grid, which a backend may run as persistent blocks
# (sm_90a does, as for the gemm). "padded" has a fixed length per (rows, groups) (one kernel
# for every split); its empty tiles skip the K loop, a trip count read from memory.
# The C tile through shared memory (16-byte row stores) in 3 stages, persistent: 1.04x torch on
# the H100 against 0.85x with the gemm's register epilogue in 4 stages (bench/gemm_class_variants.py,
# 2026-11-26; 0.81x with the padded table)
GROUPED_WGMMA = ConfigRule("wgmma", {**GEMM_TABLE[1].config, "tile_table": "exact", "vector_bytes": 16,
                                     "epilogue": "shared", "stages": 3})
GEMM_TUNE = {"block_M": (64, 128), "block_N": (64, 128, 256), "block_K": (32, 64), "stages": (2, 3, 4),
             "warps": (4, 8)}


# -- float32 precision ----------------------------------------------------------------------


def tf32_units(target) -> bool:
    """Whether a float32 `T.gemm` may run on TF32 matrix units on `target`: one of its matrix
    instruction families declares ("tfloat32", "float32")."""
    return any(m.supports("tfloat32", "float32") for m in target.capabilities.matrix_instructions)


def float32_precision(op: str, precision, arrays, conv: bool = False) -> str:
    """The float32 matmul precision a call runs at: `precision` when given, else torch's
    setting for torch tensors (`torch.get_float32_matmul_precision()`; for a convolution
    `torch.backends.cudnn.allow_tf32`), else "highest"."""
    if precision is not None:
        if precision not in PRECISIONS:
            raise OpError(f"{op}: precision={precision!r} is not one of {PRECISIONS} (torch's names: "
                          f"'highest' = float32 products summed in float32, 'high'/'medium' allow TF32)")
        return precision
    if any(a is not None and library(a) == "torch" for a in arrays):
        import torch

        if conv:
            return "high" if torch.backends.cudnn.allow_tf32 else "highest"
        return torch.get_float32_matmul_precision()
    return "highest"


def float32_math(precision: str, target) -> str:
    """How a float32 op of this module multiplies on `target` at `precision`: "tf32" (operands
    rounded to TF32 on the matrix units: precision "high"/"medium" where the target has them)
    or "ieee" (float32 products summed in float32)."""
    return "tf32" if precision != "highest" and tf32_units(target) else "ieee"


def _precision_key(op: str, dtype: str, precision, arrays, target, conv: bool = False) -> dict:
    """The problem entry that picks the kernel's multiply: {"fma": True} where float32 must
    not go to TF32 units `T.gemm` would use, else nothing (the precision is validated anyway)."""
    if dtype != "float32":
        if precision is not None:
            float32_precision(op, precision, arrays, conv)
        return {}
    level = float32_precision(op, precision, arrays, conv)
    return {"fma": True} if level == "highest" and tf32_units(target) else {}


def _activate(v, activation: str):
    if activation == "relu":
        return T.max(v, 0.0)
    if activation == "gelu":
        return v * 0.5 * (1.0 + T.erf(v * (1.0 / math.sqrt(2.0))))
    if activation == "silu":
        return v / (1.0 + T.exp(-v))
    return v


def _tile(config: dict, M: int, N: int, K: int, dtype: str = "float16", fma: bool = False) -> tuple[int, int, int]:
    """The config's tile (its "fma_" tile for the FMA loops), shrunk (powers of two, at least
    16) for problems smaller than it; a 4-byte dtype halves block_K of the matrix-unit tile,
    so a stage takes the shared memory the table planned for 16-bit operands."""
    def fit(block, size):
        while block > 16 and block // 2 >= size:
            block //= 2
        return block
    pre = "fma_" if fma else ""
    block_k = config[pre + "block_K"]
    if not fma and dtype == "float32":
        block_k = max(16, block_k // 2)
    return fit(config[pre + "block_M"], M), fit(config[pre + "block_N"], N), fit(block_k, K)


def _launch(config: dict, fma: bool) -> tuple[int, int]:
    """(threads, stages) of a GEMM-family kernel: the FMA loops run two stages."""
    return (config["fma_threads"], 2) if fma else (config["threads"], config["stages"])


def _gemm_kernel(problem: dict, config: dict):
    B, M, N, K = problem["batch"], problem["M"], problem["N"], problem["K"]
    dtype, ta, tb = problem["dtype"], problem["trans_a"], problem["trans_b"]
    has_bias, activation = problem["bias"], problem["activation"]
    fma = problem.get("fma", False)
    if fma:
        return _gemm_fma_kernel(problem, config)
    if dtype == "float32" and not ta and not tb and config.get("tf32_nn_transposed_tile"):
        config = {**config, "block_M": config["block_N"], "block_N": config["block_M"]}
    bM, bN, bK = _tile(config, M, N, K, dtype, fma)
    threads, stages = _launch(config, fma)
    a_shape = (B, K, M) if ta else (B, M, K)
    b_shape = (B, N, K) if tb else (B, K, N)
    a_tile = (bK, bM) if ta else (bM, bK)
    b_tile = (bN, bK) if tb else (bK, bN)
    accum = "float32"
    through_shared = config.get("epilogue") == "shared"

    @T.prim_func
    def main(A: T.Tensor(a_shape, dtype), Bm: T.Tensor(b_shape, dtype), Bias: T.Tensor((N if has_bias else 1,), dtype),
             C: T.Tensor((B, M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), B, threads=threads) as (bx, by, bz):
            A_s = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            C_f = T.alloc_fragment((bM, bN), accum)
            T.use_swizzle(panel_size=10)
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                if ta:
                    T.copy(A[bz, ko * bK, by * bM], A_s)
                else:
                    T.copy(A[bz, by * bM, ko * bK], A_s)
                if tb:
                    T.copy(Bm[bz, bx * bN, ko * bK], B_s)
                else:
                    T.copy(Bm[bz, ko * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=ta, transpose_B=tb)
            if has_bias or activation != "none":
                for i, j in T.Parallel(bM, bN):
                    if has_bias:  # a clamped column only where the last column tile is partial
                        C_f[i, j] = _activate(C_f[i, j] + T.cast(
                            Bias[bx * bN + j if N % bN == 0 else T.min(bx * bN + j, N - 1)], accum), activation)
                    else:
                        C_f[i, j] = _activate(C_f[i, j], activation)
            if through_shared:  # one tile store from shared memory (TMA where the target has it)
                C_s = T.alloc_shared((bM, bN), dtype)  # the stages' memory, free by now
                T.copy(C_f, C_s)
                T.copy(C_s, C[bz, by * bM, bx * bN])
            else:
                T.copy(C_f, C[bz, by * bM, bx * bN])

    return main


def _fma_threads(config: dict, bM: int, bN: int, prefetch: bool = False) -> tuple[int, int, int, int]:
    """(TM, TN, gm, gn) of the FMA GEMM: a thread's block of C (fma_thread_M x fma_thread_N,
    or fma_prefetch_thread_M x _N in the prefetch form; multiples of 4) and the grid of
    threads over the (bM, bN) tile (gm x gn threads)."""
    tm, tn = config.get("fma_thread_M", 8), config.get("fma_thread_N", 8)
    keys = "fma_thread_M, fma_thread_N"
    if prefetch:
        tm, tn = config.get("fma_prefetch_thread_M", tm), config.get("fma_prefetch_thread_N", tn)
        keys = "fma_prefetch_thread_M, fma_prefetch_thread_N"
    if tm % 4 or tn % 4 or bM % tm or bN % tn:
        raise OpError(f"gemm: the FMA config's thread tile {tm} x {tn} must be multiples of 4 that divide the "
                      f"block tile {bM} x {bN} ({keys})")
    lanes = config.get("fma_lanes_n", 16)
    if lanes not in (1, 2, 4, 8, 16, 32):
        raise OpError(f"gemm: the FMA config's fma_lanes_n={lanes!r} must be a power of two up to 32 "
                      f"(a warp's threads along N)")
    return tm, tn, bM // tm, bN // tn


def _gemm_fma_kernel(problem: dict, config: dict):
    """float32 products summed in float32 without the matrix units. The tiles arrive through
    `T.Pipelined` copies (cp.async; `fma_stages` slabs in flight) in the operands' own
    orientation. Each thread owns a TM x TN block of C in registers (`fma_thread_M` x
    `fma_thread_N`, 8 x 8 by default): TM / 4 runs of 4 rows, run p at rows p (bM / (TM / 4))
    + 4 ti .. + 3, and likewise TN / 4 runs of 4 columns, so the 4-wide runs neighbouring
    threads read from one shared row lie side by side and every read is 16 bytes. Per 4 k a
    thread reads 4 values of each of its TM rows of A and TN columns of B (runs along K where
    the tile is K-minor, along M or N where it is K-major: TM + TN 16-byte reads) and does
    4 TM TN multiply-adds.

    Threads are placed in groups of 32 (a warp) of `fma_lanes_n` along N by 32 / fma_lanes_n
    along M; the groups tile the block N first. A warp's 16-byte read of a K-minor tile (A as
    (M, K); B as (N, K), `trans_b`) touches one row per distinct thread index on that side,
    rows 4 apart: `fma_skew` shifts every 4 rows of such a tile by 16 bytes, so those rows
    fall in distinct bank groups at no register cost; `fma_swizzle_a` instead XOR-swizzles
    A's 16-byte chunks by row / 4. `fma_transpose_a` (over both) stores A's tile K-major
    instead, as a (K, M) tile would arrive: a thread's 4-row runs of A are then 16 contiguous
    bytes of one k row, each feeding 32 FFMA, and the copy moves one float per cp.async
    (`T.Layout` transposing the tile; rows bM + 4 floats apart, so the copy's 16 k of a row
    fall in 8 bank groups). `fma_prefetch`, where both tiles are K-major in shared memory
    (A transposed or handed over as (K, M); B as (K, N)), reads k's fragments (one row of
    each tile) into one half of two register buffers while k - 1's, in the other half, are
    multiplied: the compiler then keeps every shared read well ahead of its use (NVRTC 13.0
    otherwise scheduled a quarter of them within 20 instructions of it); that form takes its
    own thread tile, `fma_prefetch_thread_M` x `fma_prefetch_thread_N`. Without the skew, a
    K-minor B tile in 16-wide K slabs is read with thread tj owning columns tj + gn n, its
    chunks XOR-swizzled by row pair (8 rows in 8 bank groups).
    `fma_offset_loop` counts the K loop from `fma_stages` - 1 instead of 0 (the slab is the
    counter minus that): a pipeline's guard on its prefetch, `ko + stages - 1 < n` over a
    loop from 0, reads `ko + 1` against the bound when stages is 2, the loop's own exit test,
    and NVVM 13.0 then unrolls the loop 8 times (8 copies of 1024 FFMA; ptxas needs 169
    registers); from stages - 1 the guard reads the counter, `ko < n`, and the loop stays
    rolled. NVRTC 13.5 keeps it rolled either way.
    `fma_pretranspose` (plain `a @ b` only) makes the kernel two launches: the first writes A
    as (K, M) into a workspace (64 x 64 tiles through shared memory), the second is the tile
    loop reading that as `trans_a` reads A: 16-byte copies of a K-major tile and, with
    `fma_prefetch`, the prefetch form (the transpose costs one pass over A: 2 % of the GEMM at
    4096^3 on the H100).
    `fma_min_blocks` (a backend keyword: CUDA's `min_blocks_per_sm`) caps the registers so
    that many blocks share an SM.
    `fma_panel` > 0 rasterizes the blocks in panels of that many (`T.use_swizzle`). Where the
    tiles are whole and C is stored as computed (float32, no bias, no activation),
    `fma_vector_store` stores each 4-column run with one 16-byte store; otherwise every
    element is stored alone under its bounds guard."""
    B, M, N, K = problem["batch"], problem["M"], problem["N"], problem["K"]
    dtype, ta, tb = problem["dtype"], problem["trans_a"], problem["trans_b"]
    # "fma_pretranspose": a first launch writes A as (K, M); the tile loop then reads it K-major
    pretranspose = config.get("fma_pretranspose", False) and not ta and not tb
    ta = ta or pretranspose  # from here on: whether the tile loop reads A as (K, M)
    has_bias, activation = problem["bias"], problem["activation"]
    bM, bN, bK = _tile(config, M, N, K, dtype, True)
    transpose_a = config.get("fma_transpose_a", False) and not ta
    prefetch = config.get("fma_prefetch", False) and (ta or transpose_a) and not tb
    TM, TN, gm, gn = _fma_threads(config, bM, bN, prefetch)
    stages = config.get("fma_stages", 2)
    base = stages - 1 if config.get("fma_offset_loop", False) else 0
    panel = config.get("fma_panel", 0)
    rasterize = panel > 0
    KV = 4  # k per register refill: one 16-byte read of a K-minor row
    threads = gm * gn
    lanes_n = min(config.get("fma_lanes_n", 16), gn)  # a warp's threads along N ...
    lanes_m = min(32 // lanes_n, gm)  # ... and along M
    groups_n = gn // lanes_n
    a_shape = (B, K, M) if ta else (B, M, K)
    b_shape = (B, N, K) if tb else (B, K, N)
    a_tile = (bK, bM) if ta else (bM, bK)
    b_tile = (bN, bK) if tb else (bK, bN)

    def thread_m(t):
        return t // (lanes_m * lanes_n) // groups_n * lanes_m + t % (lanes_m * lanes_n) // lanes_n

    def thread_n(t):
        return t // (lanes_m * lanes_n) % groups_n * lanes_n + t % lanes_n

    def row_of(t, m, g):  # the m-th of a thread's rows (or columns), thread index t of g
        return (m // 4) * 4 * g + t * 4 + m % 4

    swizzle_a = config.get("fma_swizzle_a", False) and not ta and not transpose_a
    skew_a = config.get("fma_skew", False) and not ta and not swizzle_a and not transpose_a
    skew_b = config.get("fma_skew", False) and tb
    chunks_a = bK // 4  # 16-byte chunks of a K-minor A row
    swizzle_b = tb and bK == 16 and not skew_b  # 4 chunks of 16 bytes a row; 2 rows per 128-byte bank cycle
    vector_store = (config.get("fma_vector_store", False) and M % bM == 0 and N % bN == 0 and dtype == "float32"
                    and not swizzle_b and not has_bias and activation == "none")

    def col_of(t, n):
        return t + gn * n if swizzle_b else row_of(t, n, gn)

    # "fma_min_blocks": a backend keyword (CUDA's `min_blocks_per_sm`) that caps the registers
    # so that many blocks share an SM; only rows of targets whose backend offers it carry it
    hints = {"min_blocks_per_sm": config["fma_min_blocks"]} if config.get("fma_min_blocks") else {}

    @T.macro
    def fragments(A_s, B_s, a_r, b_r, t, k):
        """The prefetch form: thread t's rows of A and columns of B at k, into half k % 2."""
        for m in T.unroll(TM):
            if ta:
                a_r[k % 2 * TM + m] = A_s[k, row_of(thread_m(t), m, gm)]
            else:
                a_r[k % 2 * TM + m] = A_s[row_of(thread_m(t), m, gm), k]
        for n in T.unroll(TN):
            b_r[k % 2 * TN + n] = B_s[k, col_of(thread_n(t), n)]

    @T.macro
    def multiply(acc, a_r, b_r, k):
        """The prefetch form: the outer product of half k % 2 of the fragments into acc."""
        for e in T.unroll(TM * TN):
            acc[e] += a_r[k % 2 * TM + e // TN] * b_r[k % 2 * TN + e % TN]

    @T.macro
    def tiles(A, Bm, Bias, C):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), B, threads=threads, **hints) as (bx, by, bz):
            A_s = T.alloc_shared(a_tile, "float32")
            B_s = T.alloc_shared(b_tile, "float32")
            acc = T.alloc_local((TM * TN,), "float32")
            a_r = T.alloc_local((2 * TM if prefetch else TM * KV,), "float32")
            b_r = T.alloc_local((2 * TN if prefetch else TN * KV,), "float32")
            if rasterize:
                T.use_swizzle(panel_size=panel)
            if swizzle_a:
                T.annotate_layout({A_s: T.Layout(a_tile, lambda r, c: (
                    r, T.bitwise_xor(c // 4, r // 4 % chunks_a) * 4 + c % 4))})
            if skew_a:
                T.annotate_layout({A_s: T.Layout(a_tile, lambda r, c: (r * bK + r // 4 * 4 + c,))})
            if transpose_a:
                T.annotate_layout({A_s: T.Layout(a_tile, lambda r, c: (c * (bM + 4) + r,))})
            if skew_b:
                T.annotate_layout({B_s: T.Layout(b_tile, lambda r, c: (r * bK + r // 4 * 4 + c,))})
            if swizzle_b:
                T.annotate_layout({B_s: T.Layout(b_tile, lambda r, c: (r, T.bitwise_xor(c // 4, r // 2 % 4) * 4
                                                                         + c % 4))})
            for t in T.Parallel(threads):
                for e in T.unroll(TM * TN):
                    acc[e] = 0.0
            for ko in T.Pipelined(base, T.ceildiv(K, bK) + base, num_stages=stages):
                if ta:
                    T.copy(A[bz, (ko - base) * bK, by * bM], A_s)
                else:
                    T.copy(A[bz, by * bM, (ko - base) * bK], A_s)
                if tb:
                    T.copy(Bm[bz, bx * bN, (ko - base) * bK], B_s)
                else:
                    T.copy(Bm[bz, (ko - base) * bK, bx * bN], B_s)
                if prefetch:  # both tiles K-major: k's fragments read while k - 1's are multiplied
                    for t in T.Parallel(threads):
                        fragments(A_s, B_s, a_r, b_r, t, 0)
                        for k in T.unroll(bK - 1):
                            fragments(A_s, B_s, a_r, b_r, t, k + 1)
                            multiply(acc, a_r, b_r, k)
                        multiply(acc, a_r, b_r, bK - 1)
                else:
                    for t in T.Parallel(threads):
                        for k4 in T.unroll(bK // KV):
                            for m in T.unroll(TM):
                                for kk in T.unroll(KV):
                                    if ta:
                                        a_r[m * KV + kk] = A_s[k4 * KV + kk, row_of(thread_m(t), m, gm)]
                                    else:
                                        a_r[m * KV + kk] = A_s[row_of(thread_m(t), m, gm), k4 * KV + kk]
                            for n in T.unroll(TN):
                                for kk in T.unroll(KV):
                                    if tb:
                                        b_r[n * KV + kk] = B_s[col_of(thread_n(t), n), k4 * KV + kk]
                                    else:
                                        b_r[n * KV + kk] = B_s[k4 * KV + kk, col_of(thread_n(t), n)]
                            for kk in T.unroll(KV):
                                for e in T.unroll(TM * TN):
                                    acc[e] += a_r[(e // TN) * KV + kk] * b_r[(e % TN) * KV + kk]
            if vector_store:  # whole float32 tiles, no epilogue math: a 16-byte store per 4-column run
                for t in T.Parallel(threads):
                    for run in T.unroll(TM * TN // 4):
                        C[bz, by * bM + row_of(thread_m(t), run * 4 // TN, gm),
                          T.Ramp(bx * bN + row_of(thread_n(t), run * 4 % TN, gn), 1, 4)] = acc[T.Ramp(run * 4, 1, 4)]
            else:
                for t in T.Parallel(threads):
                    for e in T.unroll(TM * TN):
                        row = by * bM + row_of(thread_m(t), e // TN, gm)
                        col = bx * bN + col_of(thread_n(t), e % TN)
                        if row < M and col < N:
                            if has_bias:
                                C[bz, row, col] = T.cast(
                                    _activate(acc[e] + T.cast(Bias[col], "float32"), activation), dtype)
                            else:
                                C[bz, row, col] = T.cast(_activate(acc[e], activation), dtype)

    if pretranspose:
        @T.prim_func
        def main(A: T.Tensor((B, M, K), dtype), Bm: T.Tensor(b_shape, dtype),
                 Bias: T.Tensor((N if has_bias else 1,), dtype), C: T.Tensor((B, M, N), dtype)):
            At = T.alloc_global((B, K, M), dtype)
            with T.Kernel(T.ceildiv(K, 64), T.ceildiv(M, 64), B, threads=256) as (kx, my, bz):
                S = T.alloc_shared((64, 65), dtype)  # a 64 x 64 tile of A, rows padded: column reads conflict-free
                for i, j in T.Parallel(64, 64):
                    if my * 64 + i < M and kx * 64 + j < K:
                        S[i, j] = A[bz, my * 64 + i, kx * 64 + j]
                for j, i in T.Parallel(64, 64):
                    if my * 64 + i < M and kx * 64 + j < K:
                        At[bz, kx * 64 + j, my * 64 + i] = S[i, j]
            tiles(At, Bm, Bias, C)
    else:
        @T.prim_func
        def main(A: T.Tensor(a_shape, dtype), Bm: T.Tensor(b_shape, dtype),
                 Bias: T.Tensor((N if has_bias else 1,), dtype), C: T.Tensor((B, M, N), dtype)):
            tiles(A, Bm, Bias, C)

    return main


def reference_gemm(a, b, trans_a=False, trans_b=False, bias=None, activation="none"):
    import numpy as np

    a, b = np.asarray(a, dtype="float64"), np.asarray(b, dtype="float64")
    if trans_a:
        a = np.swapaxes(a, -1, -2)
    if trans_b:
        b = np.swapaxes(b, -1, -2)
    c = a @ b
    if bias is not None:
        c = c + np.asarray(bias, dtype="float64")
    if activation == "relu":
        c = np.maximum(c, 0)
    elif activation == "gelu":
        from .elementwise import reference_gelu

        c = reference_gelu(c)
    elif activation == "silu":
        c = c / (1 + np.exp(-c))
    return c


_GEMM_EXAMPLE = {"batch": 1, "M": 4096, "N": 4096, "K": 4096, "dtype": "float16", "trans_a": False,
                 "trans_b": False, "bias": False, "activation": "none"}
register(Operator("gemm", "C = act(op(A) @ op(B) + bias): transposes, bias, relu/gelu/silu epilogue",
                  {"tiled": _gemm_kernel}, GEMM_TABLE, reference_gemm, (3,), _GEMM_EXAMPLE, GEMM_TUNE))
register(Operator("batched_gemm", "a batch of GEMMs of one shape (3-D A and B)", {"tiled": _gemm_kernel},
                  GEMM_TABLE, reference_gemm, (3,),
                  {**_GEMM_EXAMPLE, "batch": 8, "M": 1024, "N": 1024, "K": 1024}, GEMM_TUNE))


def _matmul(name: str, a, b, trans_a: bool, trans_b: bool, bias, activation: str, precision, target):
    dtype = check_dtype(name, "a", a, MATRIX_DTYPES)
    if dtype_of(b) != dtype:
        raise OpError(f"{name}: a is {dtype}, b is {dtype_of(b)}; give both one dtype")
    if activation not in ACTIVATIONS:
        raise OpError(f"{name}: activation {activation!r} is not one of {ACTIVATIONS}")
    batched = len(a.shape) == 3
    if len(a.shape) != len(b.shape) or len(a.shape) != (3 if name == "batched_gemm" else 2):
        want = "3-D (batch, rows, cols)" if name == "batched_gemm" else "2-D"
        raise OpError(f"{name}: a {tuple(a.shape)} and b {tuple(b.shape)} must both be {want}")
    a3 = a if batched else a.reshape(1, *a.shape)
    b3 = b if batched else b.reshape(1, *b.shape)
    batch = int(a3.shape[0])
    m, ka = (int(a3.shape[2]), int(a3.shape[1])) if trans_a else (int(a3.shape[1]), int(a3.shape[2]))
    kb, n = (int(b3.shape[2]), int(b3.shape[1])) if trans_b else (int(b3.shape[1]), int(b3.shape[2]))
    if ka != kb or int(b3.shape[0]) != batch:
        raise OpError(f"{name}: shapes do not multiply: a {tuple(a.shape)} (trans_a={trans_a}) and b "
                      f"{tuple(b.shape)} (trans_b={trans_b}) give K = {ka} and {kb}")
    if bias is not None:
        if tuple(bias.shape) != (n,) or dtype_of(bias) != dtype:
            raise OpError(f"{name}: bias {tuple(bias.shape)} {dtype_of(bias)} must be ({n},) {dtype}")
    tgt = target_for([a, b, bias], target, name)
    if not (batch and m and n and ka):  # as torch: an empty product, or zeros (+ bias) for K = 0
        c = _empty_product(a, (batch, m, n), bias, activation)
        return c if batched else c.reshape(m, n)
    problem = {"batch": batch, "M": m, "N": n, "K": ka, "dtype": dtype, "trans_a": bool(trans_a),
               "trans_b": bool(trans_b), "bias": bias is not None, "activation": activation,
               **_precision_key(name, dtype, precision, [a, b], tgt)}
    kernel, _, _ = kernel_for(get(name), tgt, problem)
    a3, b3 = contiguous(a3), contiguous(b3)
    c = kernel(a3, b3, contiguous(bias) if bias is not None else b3.reshape(-1)[:1])
    return c if batched else c.reshape(m, n)


def _empty_product(a, shape: tuple[int, int, int], bias, activation: str):
    """act(op(a) @ op(b) + bias) where a dim is 0: an empty result, or for K = 0 the sum over
    nothing (zeros), plus the bias, through the activation."""
    c = filled(a, shape)
    if bias is None or not all(shape):
        return c  # relu, gelu and silu of 0 are 0
    import numpy as np

    host = bias.detach().float().cpu().numpy() if library(bias) == "torch" else np.asarray(bias, dtype="float64")
    values = reference_gemm(np.zeros(shape[:2] + (0,)), np.zeros((shape[0], 0, shape[2])), bias=host,
                            activation=activation)
    if library(a) == "torch":
        import torch

        return torch.from_numpy(values).to(dtype=a.dtype, device=a.device)
    return values.astype(a.dtype)


def gemm(a, b, trans_a: bool = False, trans_b: bool = False, bias=None, activation: str = "none",
         precision: str | None = None, target=None):
    """act(op(a) @ op(b) + bias) for 2-D `a`, `b` of one dtype (float16, bfloat16, float32),
    op = transpose where asked; `bias` (N,) is added per column; `activation` is "none",
    "relu", "gelu" or "silu". Accumulates in float32; the result has the inputs' dtype.

    float32 `precision`, as torch names it: "highest" (float32 products summed in float32),
    "high" / "medium" (TF32 matrix units allowed where the target has them: operands rounded to
    a 10-bit mantissa). None: torch's `get_float32_matmul_precision()` for torch tensors,
    "highest" for NumPy arrays."""
    return _matmul("gemm", a, b, trans_a, trans_b, bias, activation, precision, target)


def batched_gemm(a, b, trans_a: bool = False, trans_b: bool = False, bias=None, activation: str = "none",
                 precision: str | None = None, target=None):
    """`gemm` over a batch: `a` (batch, M, K), `b` (batch, K, N) (transposed where asked);
    `precision` as in `gemm`."""
    return _matmul("batched_gemm", a, b, trans_a, trans_b, bias, activation, precision, target)


# -- grouped GEMM ---------------------------------------------------------------------------


def _grouped_kernel(problem: dict, config: dict):
    """Rows of A belong to groups one after another; group g multiplies B[g]. A host-built
    table gives each row tile its (group, first row, end row). With the config's "tile_table"
    "exact" every entry holds rows and runs the whole K loop (a constant trip count); with
    "padded" the entries past the live ones have first row == end row, skip the K loop and
    write nothing. The epilogue keeps the row guard `first + i < end` (a tile's rows past its
    group belong to the next group); the column guard only where N is not whole tiles."""
    total, G, N, K, dtype, tiles = (problem[k] for k in ("rows", "groups", "N", "K", "dtype", "tiles"))
    fma = problem.get("fma", False)
    bM = problem["tile_rows"]  # the host cut its tile table with the table's block_M
    _, bN, bK = _tile(config, bM, N, K, dtype, fma)
    threads, stages = _launch(config, fma)
    exact = config.get("tile_table", "padded") == "exact"
    through_shared = config.get("epilogue") == "shared" and not fma
    # its stores: rows of vector_bytes pieces where the columns are whole tiles
    vec = max(1, config.get("vector_bytes", 0) // dtype_bytes(dtype)) if N % bN == 0 else 1

    @T.prim_func
    def main(A: T.Tensor((total, K), dtype), Bm: T.Tensor((G, K, N), dtype), Tiles: T.Tensor((tiles, 3), "int32"),
             C: T.Tensor((total, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), tiles, threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bK, bN), dtype)
            C_f = T.alloc_fragment((bM, bN), "float32")
            g = Tiles[by, 0]
            first = Tiles[by, 1]
            end = Tiles[by, 2]
            # "padded": padding tiles skip the K loop; "exact": the trip count is a constant
            steps = T.ceildiv(K, bK) if exact else T.if_then_else(first < end, T.ceildiv(K, bK), 0)
            T.clear(C_f)
            for ko in T.Pipelined(steps, num_stages=stages):
                T.copy(A[first, ko * bK], A_s)
                T.copy(Bm[g, ko * bK, bx * bN], B_s)
                if fma:  # float32 products summed in float32 (never the TF32 units)
                    for k in T.serial(bK):
                        for i, j in T.Parallel(bM, bN):
                            C_f[i, j] += A_s[i, k] * B_s[k, j]
                else:
                    T.gemm(A_s, B_s, C_f)
            if through_shared:  # rows of 16-byte stores from a staging tile, under the row guard
                C_s = T.alloc_shared((bM, bN), dtype)
                if vec > 1:  # rows 16 bytes apart in the banks: the staging writes of 8 rows meet no conflict
                    T.annotate_layout({C_s: T.Layout((bM, bN), lambda r, c: r * (bN + vec) + c)})
                T.copy(C_f, C_s)
                for i, v in T.Parallel(bM, bN // vec):
                    if vec > 1:
                        if first + i < end:
                            C[first + i, T.Ramp(bx * bN + v * vec, 1, vec)] = C_s[i, T.Ramp(v * vec, 1, vec)]
                    elif first + i < end and bx * bN + v < N:
                        C[first + i, bx * bN + v] = C_s[i, v]
            else:
                for i, j in T.Parallel(bM, bN):
                    if N % bN == 0:  # whole column tiles: only the group's row guard
                        if first + i < end:
                            C[first + i, bx * bN + j] = T.cast(C_f[i, j], dtype)
                    elif first + i < end and bx * bN + j < N:
                        C[first + i, bx * bN + j] = T.cast(C_f[i, j], dtype)

    return main


def reference_grouped_gemm(a, b, group_sizes):
    import numpy as np

    a, b = np.asarray(a, dtype="float64"), np.asarray(b, dtype="float64")
    out, start = [], 0
    for g, m in enumerate(int(s) for s in group_sizes):
        out.append(a[start:start + m] @ b[g])
        start += m
    return np.concatenate(out, axis=0) if out else np.zeros((0, b.shape[-1]))


register(Operator("grouped_gemm", "GEMMs of groups of rows of A, each with its own B (mixture of experts)",
                  {"tiled": _grouped_kernel},
                  (ConfigRule("block-serial", {"block_M": 32, "block_N": 64, "block_K": 32, "stages": 1,
                                               "threads": 1, "tile_table": "padded", "vector_bytes": 0,
                                               **_FMA_SERIAL}),
                   GROUPED_WGMMA, ConfigRule("mma.sync", {**GEMM_TABLE[2].config, "tile_table": "padded",
                                                                    "vector_bytes": 16}),
                   ConfigRule("simt", {"block_M": 64, "block_N": 128, "block_K": 32, "stages": 2, "warps": 4,
                                       "tile_table": "padded", "vector_bytes": 16, **_FMA})),
                  reference_grouped_gemm, (3,),
                  {"rows": 8192, "groups": 8, "N": 4096, "K": 4096, "dtype": "float16", "tiles": 72, "tile_rows": 128},
                  {"block_N": (64, 128, 256), "stages": (2, 3, 4)}))


def grouped_gemm(a, b, group_sizes, precision: str | None = None, target=None):
    """Grouped GEMM: `a` (rows, K) holds the groups' rows one after another (group g has
    group_sizes[g] rows), `b` (groups, K, N); row r of group g gives a[r] @ b[g].
    `precision` as in `gemm`."""
    dtype = check_dtype("grouped_gemm", "a", a, MATRIX_DTYPES)
    sizes = [int(s) for s in (group_sizes.tolist() if hasattr(group_sizes, "tolist") else group_sizes)]
    if len(b.shape) != 3 or len(a.shape) != 2 or int(b.shape[1]) != int(a.shape[1]) or dtype_of(b) != dtype:
        raise OpError(f"grouped_gemm: a {tuple(a.shape)} {dtype} must be (rows, K) and b {tuple(b.shape)} "
                      f"{dtype_of(b)} (groups, K, N) of the same dtype")
    if len(sizes) != int(b.shape[0]) or any(s < 0 for s in sizes) or sum(sizes) != int(a.shape[0]):
        raise OpError(f"grouped_gemm: group_sizes {sizes} must give one non-negative size per group of b "
                      f"({int(b.shape[0])}) summing to a's rows ({int(a.shape[0])})")
    tgt = target_for([a, b], target, "grouped_gemm")
    op = get("grouped_gemm")
    total, groups = int(a.shape[0]), len(sizes)
    if not (total and b.shape[2] and a.shape[1]):  # no rows or columns, or zeros for K = 0
        return filled(a, (total, int(b.shape[2])))
    from .registry import resolve_config

    config = resolve_config(op, tgt, {})[0]
    bM = config["block_M"]
    if config.get("tile_table", "padded") == "exact":  # one entry per tile with rows (at least one entry)
        tiles = max(1, sum(-(-s // bM) for s in sizes))
    else:  # a length that depends only on (rows, groups): one kernel for every split
        tiles = -(-total // bM) + groups
    problem = {"rows": total, "groups": groups, "N": int(b.shape[2]), "K": int(a.shape[1]), "dtype": dtype,
               "tiles": tiles, "tile_rows": bM, **_precision_key("grouped_gemm", dtype, precision, [a, b], tgt)}
    kernel, _, _ = kernel_for(op, tgt, problem)
    return kernel(contiguous(a), contiguous(b), _tile_table(sizes, bM, tiles, a))


_TABLES: dict = {}  # (sizes, tile rows, tiles, device) -> a tile table on that device


def _tile_table(sizes: list[int], rows: int, tiles: int, like):
    """grouped_gemm's tile table, (tiles, 3) int32 (group, first row, end row), tiles of `rows`
    rows cut group by group, padded with empty tiles; on `like`'s device. A table on a device
    is kept per split and stream (the last 64): a repeated split costs no copy, and a new one
    is copied from pinned memory without waiting for the device (a blocking copy would wait
    for every kernel queued before it)."""
    def cut() -> list:
        table, start = [], 0
        for g, m in enumerate(sizes):
            table += [(g, first, min(first + rows, start + m)) for first in range(start, start + m, rows)]
            start += m
        return table + [(0, 0, 0)] * (tiles - len(table))

    if library(like) != "torch":
        import numpy as np

        return np.asarray(cut(), dtype="int32")
    import torch

    if like.device == torch.empty(0).device:  # on the host
        return torch.tensor(cut(), dtype=torch.int32)
    # per stream: the copy is ordered before the kernels of the stream it was issued on only
    key = (tuple(sizes), rows, tiles, str(like.device), torch.accelerator.current_stream(like.device))
    hit = _TABLES.get(key)
    if hit is None:
        hit = torch.tensor(cut(), dtype=torch.int32).pin_memory().to(like.device, non_blocking=True)
        if len(_TABLES) >= 64:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[key] = hit
    return hit


# -- dequantize + GEMV ----------------------------------------------------------------------


def _gemv_kernel(problem: dict, config: dict):
    """y[m, n] = sum_k x[m, k] * (q[n, k] * scale[n, k // group]); int4 weights are packed
    two per byte along K (low nibble first), stored with an offset of 8."""
    M, N, K, dtype, bits, group = (problem[k] for k in ("M", "N", "K", "dtype", "bits", "group"))
    sdtype = problem["scale_dtype"]
    bN, bK = config["block_N"], config["block_K"]
    packed = K // 2 if bits == 4 else K
    wdtype = "uint8" if bits == 4 else "int8"

    @T.prim_func
    def main(X: T.Tensor((M, K), dtype), W: T.Tensor((N, packed), wdtype), S: T.Tensor((N, K // group), sdtype),
             Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), M, threads=config["threads"]) as (bx, by):
            acc = T.alloc_fragment((bN, bK), "float32")
            red = T.alloc_fragment((bN,), "float32")
            T.clear(acc)
            for ko in T.serial(T.ceildiv(K, bK)):
                for n, k in T.Parallel(bN, bK):
                    if bx * bN + n < N and ko * bK + k < K:
                        if bits == 4:
                            acc[n, k] += T.cast(X[by, ko * bK + k], "float32") * T.cast(
                                T.cast(T.bitwise_and(T.shift_right(W[bx * bN + n, (ko * bK + k) // 2],
                                                                   T.cast(((ko * bK + k) % 2) * 4, "uint8")),
                                                     T.cast(15, "uint8")), "int32") - 8, "float32") \
                                * T.cast(S[bx * bN + n, (ko * bK + k) // group], "float32")
                        else:
                            acc[n, k] += T.cast(X[by, ko * bK + k], "float32") \
                                * T.cast(W[bx * bN + n, ko * bK + k], "float32") \
                                * T.cast(S[bx * bN + n, (ko * bK + k) // group], "float32")
            T.reduce_sum(acc, red, dim=1)
            for n in T.Parallel(bN):
                if bx * bN + n < N:
                    Y[by, bx * bN + n] = T.cast(red[n], dtype)

    return main


def _gemv_vector(problem: dict, config: dict):
    """The same product with 16-byte weight loads: a block takes `block_N` rows of W, each row
    `threads / block_N` consecutive threads that step along K one 16-byte piece of W at a time
    (16 int8 or 32 int4 weights, the matching x read 16 bytes at a time, one scale per piece),
    then sum their partials with the target's reduction. K that is no whole number of pieces,
    or groups that split a piece, take "rows"."""
    M, N, K, dtype, bits, group = (problem[k] for k in ("M", "N", "K", "dtype", "bits", "group"))
    sdtype = problem["scale_dtype"]
    from ..ir import dtype_bytes

    piece = config["vector_bytes"] * (2 if bits == 4 else 1)  # weights in 16 bytes of W
    xvec = max(1, config["vector_bytes"] // dtype_bytes(dtype))  # x elements per 16-byte load
    bN, threads = config["block_N"], config["threads"]
    lanes = threads // bN
    if K % piece or group % piece or piece % xvec or threads % bN or lanes < 1:
        return _gemv_kernel(problem, config)
    packed = K // 2 if bits == 4 else K
    wdtype = "uint8" if bits == 4 else "int8"
    wbytes = config["vector_bytes"]
    steps = -(-(K // piece) // lanes)

    @T.prim_func
    def main(X: T.Tensor((M, K), dtype), W: T.Tensor((N, packed), wdtype), S: T.Tensor((N, K // group), sdtype),
             Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), M, threads=threads) as (bx, by):
            wv = T.alloc_local((wbytes,), wdtype)
            xv = T.alloc_local((piece,), dtype)
            acc = T.alloc_local((1,), "float32")
            sub = T.alloc_local((1,), "float32")  # one piece's sum, scaled once
            part = T.alloc_fragment((bN, lanes), "float32")
            red = T.alloc_fragment((bN,), "float32")
            for n, lane in T.Parallel(bN, lanes):
                acc[0] = 0.0
                if bx * bN + n < N:
                    for i in T.serial(steps):
                        q = i * lanes + lane
                        if q * piece < K:
                            wv[T.Ramp(0, 1, wbytes)] = W[bx * bN + n, T.Ramp(q * wbytes, 1, wbytes)]
                            for c in T.unroll(piece // xvec):
                                xv[T.Ramp(c * xvec, 1, xvec)] = X[by, T.Ramp(q * piece + c * xvec, 1, xvec)]
                            sub[0] = 0.0
                            for e in T.unroll(piece):
                                if bits == 4:
                                    sub[0] += T.cast(xv[e], "float32") * T.cast(
                                        T.cast(T.bitwise_and(T.shift_right(wv[e // 2], T.cast((e % 2) * 4, "uint8")),
                                                             T.cast(15, "uint8")), "int32") - 8, "float32")
                                else:
                                    sub[0] += T.cast(xv[e], "float32") * T.cast(wv[e], "float32")
                            acc[0] += sub[0] * T.cast(S[bx * bN + n, q * piece // group], "float32")
                part[n, lane] = acc[0]
            T.reduce_sum(part, red, dim=1)
            for n in T.Parallel(bN):
                if bx * bN + n < N:
                    Y[by, bx * bN + n] = T.cast(red[n], dtype)

    return main


def unpack_int4(w):
    """Signed int4 values (as int8, -8..7) of weights packed two per byte (low nibble first,
    offset 8), (N, K // 2) uint8 -> (N, K)."""
    import numpy as np

    w = np.asarray(w).astype("int16")
    low, high = (w & 15) - 8, (w >> 4) - 8
    return np.stack([low, high], axis=-1).reshape(w.shape[0], -1).astype("int8")


def reference_dequantize_gemv(x, w, scales, bits=8):
    import numpy as np

    q = unpack_int4(w) if bits == 4 else np.asarray(w)
    s = np.asarray(scales, dtype="float64")
    group = q.shape[1] // s.shape[1]
    dq = q.astype("float64") * np.repeat(s, group, axis=1)
    return np.asarray(x, dtype="float64") @ dq.T


register(Operator("dequantize_gemv", "y = x @ dequant(W).T for int8 or packed int4 weights with group scales",
                  {"rows": _gemv_kernel, "vector": _gemv_vector},
                  (ConfigRule("block-serial", {"kernel": "rows", "block_N": 16, "block_K": 512, "threads": 1}),
                   ConfigRule("simt", {"kernel": "vector", "block_N": 8, "block_K": 256, "warps": 8,
                                       "vector_bytes": 16})),
                  reference_dequantize_gemv, (3,),
                  {"M": 1, "N": 4096, "K": 4096, "dtype": "float16", "bits": 4, "group": 128,
                   "scale_dtype": "float16"},
                  {"block_N": (4, 8, 16), "block_K": (128, 256, 512)}))


def dequantize_gemv(x, w, scales, bits: int = 8, target=None):
    """x @ dequant(w).T for a few rows x (M, K) (or a vector (K,)): `w` (N, K) int8 for
    bits=8, or (N, K // 2) uint8 holding two int4 per byte (low nibble first, value + 8) for
    bits=4; `scales` (N, K // group) per output row and group of K."""
    dtype = check_dtype("dequantize_gemv", "x", x, MATRIX_DTYPES)
    vector = len(x.shape) == 1
    x2 = x.reshape(1, -1) if vector else x
    m, k = (int(v) for v in x2.shape)
    if bits not in (4, 8):
        raise OpError(f"dequantize_gemv: bits={bits}; 8 (int8 weights) and 4 (packed int4) are supported")
    check_dtype("dequantize_gemv", "w", w, ("uint8",) if bits == 4 else ("int8",))
    n = int(w.shape[0])
    if int(w.shape[1]) != (k // 2 if bits == 4 else k) or (bits == 4 and k % 2):
        raise OpError(f"dequantize_gemv: w {tuple(w.shape)} does not match x's K={k} for bits={bits} "
                      f"(expected ({n}, {k // 2 if bits == 4 else k}))")
    sdtype = check_dtype("dequantize_gemv", "scales", scales, MATRIX_DTYPES)
    groups = int(scales.shape[1]) if len(scales.shape) == 2 else 0
    if len(scales.shape) != 2 or int(scales.shape[0]) != n or (k and (groups < 1 or k % groups)):
        raise OpError(f"dequantize_gemv: scales {tuple(scales.shape)} must be ({n}, groups) with groups (at least 1) "
                      f"dividing K={k}")
    if not (m and n and k):  # as torch: an empty product, or zeros for K = 0
        y = filled(x, (m, n))
        return y.reshape(n) if vector else y
    problem = {"M": m, "N": n, "K": k, "dtype": dtype, "bits": bits, "group": k // groups,
               "scale_dtype": sdtype}
    kernel, _, _ = kernel_for(get("dequantize_gemv"), target_for([x, w, scales], target, "dequantize_gemv"), problem)
    y = kernel(contiguous(x2), contiguous(w), contiguous(scales))
    return y.reshape(n) if vector else y


# -- conv2d ---------------------------------------------------------------------------------


@T.macro
def _multiply_nt(A_s, B_s, C_f, fma, bM, bN, bK):
    """C_f += A_s @ B_s.T for tiles (bM, bK) and (bN, bK): `T.gemm`, or FMA loops where `fma`
    (float32 products summed in float32, never the TF32 units)."""
    if fma:
        for k in T.serial(bK):
            for i, j in T.Parallel(bM, bN):
                C_f[i, j] += A_s[i, k] * B_s[j, k]
    else:
        T.gemm(A_s, B_s, C_f, transpose_B=True)


@T.macro
def _store_pixels(Y, C_f, bM, bN, row0, col0, rows, o, image, line, oh, ow, dtype):
    """Store the tile C_f (bM pixels x bN output channels) into NCHW `Y`: row r = row0 + i is
    pixel (r // image, r % image // line, r % line) of a grid of `image` pixels per image and
    `line` per image row, kept where r < rows, y < oh and x < ow. Each row's pixel is found
    once, in the accumulator's row layout (three int32 fragments of the tile's rows; y = -1
    marks a dropped row), so the element loop does no division."""
    R_img = T.alloc_fragment((bM,), "int32")
    R_y = T.alloc_fragment((bM,), "int32")
    R_x = T.alloc_fragment((bM,), "int32")
    for i in T.Parallel(bM):
        R_img[i] = (row0 + i) // image
        R_y[i] = T.if_then_else(row0 + i < rows and (row0 + i) % image // line < oh and (row0 + i) % line < ow,
                                (row0 + i) % image // line, -1)
        R_x[i] = (row0 + i) % line
    for i, j in T.Parallel(bM, bN):
        if R_y[i] >= 0 and col0 + j < o:
            Y[R_img[i], col0 + j, R_y[i], R_x[i]] = T.cast(C_f[i, j], dtype)


def _conv_kernel(problem: dict, config: dict):
    """Implicit GEMM: rows = (image, out_y, out_x), columns = out channels, K = (in channel,
    ky, kx); the A tile is gathered from the NCHW image (zero outside), B is the OIHW weight
    seen as (O, K)."""
    n, c, h, w, o, kh, kw, stride, pad, dtype = (problem[k] for k in (
        "N", "C", "H", "W", "O", "KH", "KW", "stride", "padding", "dtype"))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    M, K = n * oh * ow, c * kh * kw
    fma = problem.get("fma", False)
    bM, bN, bK = _tile(config, M, o, K, dtype, fma)
    threads, stages = _launch(config, fma)

    @T.prim_func
    def main(X: T.Tensor((n, c, h, w), dtype), Wt: T.Tensor((o, K), dtype), Y: T.Tensor((n, o, oh, ow), dtype)):
        with T.Kernel(T.ceildiv(o, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bN, bK), dtype)
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                for i, kk in T.Parallel(bM, bK):
                    row = by * bM + i
                    col = ko * bK + kk
                    img = row // (oh * ow)
                    y = (row % (oh * ow)) // ow * stride - pad + (col % (kh * kw)) // kw
                    x = row % ow * stride - pad + col % kw
                    A_s[i, kk] = T.if_then_else(
                        (row < M) and (col < K) and (y >= 0) and (y < h) and (x >= 0) and (x < w),
                        X[T.min(img, n - 1), T.min(col // (kh * kw), c - 1), T.max(T.min(y, h - 1), 0),
                          T.max(T.min(x, w - 1), 0)],
                        T.cast(0, dtype))
                T.copy(Wt[bx * bN, ko * bK], B_s)
                _multiply_nt(A_s, B_s, C_f, fma, bM, bN, bK)
            _store_pixels(Y, C_f, bM, bN, by * bM, bx * bN, M, o, oh * ow, ow, oh, ow, dtype)

    return main


def _conv_shifted(problem: dict, config: dict):
    """A stride-1 convolution as one GEMM over the zero-padded NHWC image, in two launches:

    1. `Xp` (N * Hp * Wp, Cp): x moved to channels-last, padded with zeros (a border of
       `padding` around each image, channels up to Cp, a multiple of block_K), through a
       shared tile so reads and writes are both coalesced; the same blocks write
       `Wr` (O, KH * KW * Cp): the weight with K ordered (ky, kx, c), zero where c >= C;
    2. the GEMM. A row r = (img * Hp + y) * Wp + x of the padded grid is output pixel (img, y,
       x) when y < OH and x < OW (else computed and dropped: (Hp Wp) / (OH OW) - 1 extra work,
       7 % at 56 x 56 with a 3 x 3 kernel). Its input at tap (ky, kx) is row r + ky * Wp + kx
       of Xp, so the A tile of K step (tap, channel block) is the 2-D block Xp[by * bM + ky *
       Wp + kx, cb * bK] (a plain `T.copy`: TMA or cp.async, zero past the last row), B the
       matching block of Wr. The epilogue writes NCHW.

    Strides other than 1 take the gathering kernel ("implicit_gemm")."""
    n, c, h, w, o, kh, kw, stride, pad, dtype = (problem[k] for k in (
        "N", "C", "H", "W", "O", "KH", "KW", "stride", "padding", "dtype"))
    if stride != 1:
        return _conv_kernel(problem, config)
    hp, wp = h + 2 * pad, w + 2 * pad
    oh, ow = hp - kh + 1, wp - kw + 1
    fma = problem.get("fma", False)
    rows = n * hp * wp
    bM, bN, bK = _tile(config, rows, o, c, dtype, fma)
    cp = -(-c // bK) * bK
    cblocks, taps = cp // bK, kh * kw
    K = taps * cp
    threads, stages = _launch(config, fma)
    lt = config["layout_threads"]
    zero = T.cast(0, dtype)
    # the layout pass in pieces of the config's vector_bytes (0: the target moves no vectors)
    # where the image's rows and the channels are whole pieces: a thread loads vec channels x vec
    # columns (vec loads along x), transposes them in registers and stores vec pixels (vec
    # channels each); the zero border is stored as zero pieces
    vec = max(1, config.get("vector_bytes", 0) // dtype_bytes(dtype))
    pieces = vec > 1 and w % vec == 0 and c % vec == 0
    groups, xblocks = cp // vec, w // vec
    items = n * hp * xblocks * groups
    # else through a shared tile: channels x padded columns, 64 x 64 or the image's own size
    bc, bw = min(64, 1 << (cp - 1).bit_length()), min(64, 1 << (wp - 1).bit_length())
    layout_x = -(-wp // bw) * -(-cp // bc)
    layout_blocks = -(-items // lt) if pieces else layout_x * hp * n
    weight_passes = -(-(o * K) // (layout_blocks * lt))

    @T.macro
    def reorder_weight(Wt, Wr, block):
        """The weight reorder, spread over the layout launch's blocks: element q of Wr per
        thread and pass."""
        for p in T.serial(weight_passes):
            for e in T.Parallel(lt):
                q = (p * layout_blocks + block) * lt + e
                if q < o * K:
                    Wr[q // K, q % K] = T.if_then_else(
                        q % cp < c, Wt[q // K, T.min(q % cp, c - 1), q % K // cp // kw, q % K // cp % kw], zero)

    @T.prim_func
    def main(X: T.Tensor((n, c, h, w), dtype), Wt: T.Tensor((o, c, kh, kw), dtype), Y: T.Tensor((n, o, oh, ow), dtype)):
        Xp = T.alloc_global((rows, cp), dtype)
        Wr = T.alloc_global((o, K), dtype)
        if pieces:
            with T.Kernel(layout_blocks, threads=lt) as bx:
                V = T.alloc_local((vec * vec,), dtype)  # V[e * vec + k]: channel e, column k
                P = T.alloc_local((vec * vec,), dtype)  # P[k * vec + e]: the same, transposed
                Z = T.alloc_local((vec,), dtype)
                for k in T.unroll(vec):
                    Z[k] = zero
                for t in T.Parallel(lt):
                    # item (img, yp, xb, g), g fastest: a warp's stores of one pixel are contiguous
                    if bx * lt + t < items:
                        g = (bx * lt + t) % groups
                        xb = (bx * lt + t) // groups % xblocks
                        yp = (bx * lt + t) // (groups * xblocks) % hp
                        base = ((bx * lt + t) // (groups * xblocks * hp) * hp + yp) * wp + pad + xb * vec
                        if yp >= pad and yp < h + pad and g * vec < c:
                            for e in T.unroll(vec):
                                V[T.Ramp(e * vec, 1, vec)] = X[(bx * lt + t) // (groups * xblocks * hp), g * vec + e,
                                                               yp - pad, T.Ramp(xb * vec, 1, vec)]
                            for k in T.unroll(vec):
                                for e in T.unroll(vec):
                                    P[k * vec + e] = V[e * vec + k]
                            for k in T.unroll(vec):
                                Xp[base + k, T.Ramp(g * vec, 1, vec)] = P[T.Ramp(k * vec, 1, vec)]
                        else:
                            for k in T.unroll(vec):
                                Xp[base + k, T.Ramp(g * vec, 1, vec)] = Z[T.Ramp(0, 1, vec)]
                        if pad > 0:  # the border columns: left of the first piece, right of the last
                            if xb == 0:
                                for k in T.unroll(pad):
                                    Xp[base - pad + k, T.Ramp(g * vec, 1, vec)] = Z[T.Ramp(0, 1, vec)]
                            if xb == xblocks - 1:
                                for k in T.unroll(pad):
                                    Xp[base + vec + k, T.Ramp(g * vec, 1, vec)] = Z[T.Ramp(0, 1, vec)]
                reorder_weight(Wt, Wr, bx)
        else:
            with T.Kernel(layout_x, hp, n, threads=lt) as (bx, by, bz):
                S = T.alloc_shared((bc, bw + 2), dtype)  # + 2: a column of it spans all 32 banks
                for cc, xx in T.Parallel(bc, bw):
                    ch = bx // T.ceildiv(wp, bw) * bc + cc
                    xi = bx % T.ceildiv(wp, bw) * bw + xx - pad
                    S[cc, xx] = T.if_then_else(ch < c and by >= pad and by - pad < h and xi >= 0 and xi < w,
                                               X[bz, T.min(ch, c - 1), T.max(T.min(by - pad, h - 1), 0),
                                                 T.max(T.min(xi, w - 1), 0)], zero)
                for xx, cc in T.Parallel(bw, bc):
                    if bx % T.ceildiv(wp, bw) * bw + xx < wp and bx // T.ceildiv(wp, bw) * bc + cc < cp:
                        Xp[(bz * hp + by) * wp + bx % T.ceildiv(wp, bw) * bw + xx,
                           bx // T.ceildiv(wp, bw) * bc + cc] = S[cc, xx]
                reorder_weight(Wt, Wr, (bz * hp + by) * layout_x + bx)
        with T.Kernel(T.ceildiv(o, bN), T.ceildiv(rows, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bN, bK), dtype)
            C_f = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(taps * cblocks, num_stages=stages):
                T.copy(Xp[by * bM + ko // cblocks // kw * wp + ko // cblocks % kw, ko % cblocks * bK], A_s)
                T.copy(Wr[bx * bN, ko * bK], B_s)
                _multiply_nt(A_s, B_s, C_f, fma, bM, bN, bK)
            _store_pixels(Y, C_f, bM, bN, by * bM, bx * bN, rows, o, hp * wp, wp, oh, ow, dtype)

    return main


def reference_conv2d(x, w, stride=1, padding=0):
    import numpy as np

    x, w = np.asarray(x, dtype="float64"), np.asarray(w, dtype="float64")
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky:ky + stride * oh:stride, kx:kx + stride * ow:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    return out


_CONV = {"kernel": "shifted"}
register(Operator("conv2d", "2-D convolution, NCHW x OIHW, stride and zero padding (implicit GEMM)",
                  {"shifted": _conv_shifted, "implicit_gemm": _conv_kernel},
                  (ConfigRule("block-serial", {**_CONV, "block_M": 64, "block_N": 64, "block_K": 32, "stages": 1,
                                               "threads": 1, "layout_threads": 1, "vector_bytes": 0,
                                               **_FMA_SERIAL}),
                   # 128 x 128 tiles (841 tiles, 6.4 waves): 1.14x torch on the H100 against 1.07x with
                   # 256 x 128 (3.2 waves; bench/gemm_class_variants.py, 2026-11-26)
                   ConfigRule("wgmma", {**_CONV, "block_M": 128, "block_N": 128, "block_K": 64, "stages": 4,
                                        "warps": 8, "layout_warps": 8, "vector_bytes": 16, **_FMA}),
                   ConfigRule("mma.sync", {**_CONV, "block_M": 128, "block_N": 128, "block_K": 32, "stages": 3,
                                           "warps": 4, "layout_warps": 8, "vector_bytes": 16, **_FMA}),
                   ConfigRule("simt", {**_CONV, "block_M": 128, "block_N": 128, "block_K": 32, "stages": 2,
                                       "warps": 4, "layout_warps": 8, "vector_bytes": 16, **_FMA})),
                  reference_conv2d, (2,),
                  {"N": 16, "C": 128, "H": 56, "W": 56, "O": 128, "KH": 3, "KW": 3, "stride": 1, "padding": 1,
                   "dtype": "float16"},
                  {"block_M": (128, 256), "block_N": (64, 128), "block_K": (32, 64), "stages": (3, 4)}))


def conv2d(x, weight, stride: int = 1, padding: int = 0, precision: str | None = None, target=None):
    """2-D convolution of `x` (N, C, H, W) with `weight` (O, C, KH, KW), as
    `torch.nn.functional.conv2d` with an int stride and zero padding (no dilation, no groups).
    float32 `precision` as in `gemm`; None follows `torch.backends.cudnn.allow_tf32` for torch
    tensors (what torch's conv2d reads: TF32 allowed by default), "highest" for NumPy arrays."""
    dtype = check_dtype("conv2d", "x", x, MATRIX_DTYPES)
    if len(x.shape) != 4 or len(weight.shape) != 4 or int(weight.shape[1]) != int(x.shape[1]) \
            or dtype_of(weight) != dtype:
        raise OpError(f"conv2d: x {tuple(x.shape)} must be (N, C, H, W) and weight {tuple(weight.shape)} "
                      f"(O, C, KH, KW) of x's dtype {dtype}")
    n, c, h, w = (int(v) for v in x.shape)
    o, _, kh, kw = (int(v) for v in weight.shape)
    if stride < 1 or padding < 0 or h + 2 * padding < kh or w + 2 * padding < kw:
        raise OpError(f"conv2d: stride={stride}, padding={padding} and a {kh}x{kw} kernel leave no output "
                      f"for a {h}x{w} image")
    if o == 0:
        raise OpError(f"conv2d: weight {tuple(weight.shape)} has no output channels (O = 0; torch's conv2d refuses "
                      "it too); give at least one")
    tgt = target_for([x, weight], target, "conv2d")
    if not (n and c * kh * kw and h and w):
        # no images: an empty result, as torch. No input channels or an empty kernel (a sum
        # of length 0), or an image of no pixels whose output is all padding: zeros, as gemm
        # gives for K = 0 (torch returns (N, 0, ...) for C = 0 and refuses H = 0)
        return filled(x, (n, o, (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1))
    problem = {"N": n, "C": c, "H": h, "W": w, "O": o, "KH": kh, "KW": kw, "stride": int(stride),
               "padding": int(padding), "dtype": dtype,
               **_precision_key("conv2d", dtype, precision, [x, weight], tgt, conv=True)}
    kernel, config, _ = kernel_for(get("conv2d"), tgt, problem)
    if config.get("kernel") == "shifted" and stride == 1:  # it reads the OIHW weight itself
        return kernel(contiguous(x), contiguous(weight))
    return kernel(contiguous(x), contiguous(weight).reshape(o, c * kh * kw))  # the gathering kernel: (O, K)

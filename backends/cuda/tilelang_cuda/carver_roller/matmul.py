"""The tile configurations `MatmulTemplate.recommend_hints` ranks: a roofline estimate over
the tiles that fit the device, not TileLang's roller (which searches over the TIR of any
computation); for a GEMM the two answer the same question.

A candidate is a block tile (bm x bn), its split over 1 to 8 warps (warp tiles of whole
m16n8 instructions), a k step and a pipeline depth. It fits when its shared staging
((bm + bn) x k step x bytes x stages) fits the device's shared memory per block and its
accumulators leave registers for the rest (at most 128 32-bit registers a thread). Its cost
is the time of the busiest SM: ceil(tiles / SMs) tiles sharing its throughput, each limited by the larger of its tensor-core work (2 bm bn per k) and the operand
bytes it loads ((bm + bn) bytes per k, at an L2 ridge of 64 FLOP/byte), with the padding of
ragged edges counted as work, and a latency penalty when nothing overlaps the loads (one
stage and one block on the SM).
"""
from __future__ import annotations

import math
from itertools import product
from typing import Any

from .hint import Hint
from .rasterization import NoRasterization, Rasterization2DRow

__all__ = ["recommend_matmul_hints"]

_TILES = (16, 32, 64, 128, 256)
_WARPS = ((1, 1), (1, 2), (2, 1), (2, 2), (1, 4), (4, 1), (2, 4), (4, 2))
_STAGES = (1, 2, 3, 4)
_RIDGE = 64.0  # FLOP per byte the SM sustains from L2 (an estimate, same for every candidate)
_MAX_ACCUMULATOR_REGISTERS = 128
_REGISTERS_PER_SM = 65536
_MAX_THREADS_PER_SM = 2048


def _device(arch: Any) -> tuple[int, int]:
    """(SMs, shared bytes per block) of `arch` (its `sm_count` and `smem_cap`)."""
    missing = [name for name in ("sm_count", "smem_cap") if getattr(arch, name, None) is None]
    if missing:
        raise ValueError(f"MatmulTemplate: the arch {arch!r} lacks {', '.join(missing)}; pass "
                         f"tilelang.carver.arch.CUDA('cuda') (a CUDA device must be present)")
    return int(arch.sm_count), int(arch.smem_cap)


def _k_steps(in_bits: int) -> tuple[int, ...]:
    """k steps: whole instruction k extents (256 bits of a row), up to 128 elements."""
    unit = 256 // in_bits
    return tuple(k for k in (16, 32, 64, 128) if k % unit == 0)


def recommend_matmul_hints(M: int, N: int, K: int, in_bits: int, accum_bits: int, arch: Any,
                           topk: int = 10) -> list[Hint]:
    """The `topk` cheapest configurations of an M x N x K GEMM on `arch`, cheapest first."""
    sms, smem_cap = _device(arch)
    in_bytes = in_bits / 8
    ranked = []
    for bm, bn, (wr, wc), bk, stages in product(_TILES, _TILES, _WARPS, _k_steps(in_bits), _STAGES):
        wm, wn = bm // wr, bn // wc
        if bm % wr or bn % wc or wm % 16 or wn % 8 or bk > max(K, 16) or stages > max(1, math.ceil(K / bk)):
            continue
        threads = 32 * wr * wc
        smem = (bm + bn) * bk * in_bytes * stages
        accumulators = bm * bn * accum_bits / 32 / threads
        if smem > smem_cap or accumulators > _MAX_ACCUMULATOR_REGISTERS:
            continue
        resident = max(1, min(int(smem_cap // smem), _MAX_THREADS_PER_SM // threads,
                              int(_REGISTERS_PER_SM // (threads * (accumulators + 64)))))
        tiles = math.ceil(M / bm) * math.ceil(N / bn)
        per_sm = math.ceil(tiles / sms)  # tiles the busiest SM runs, sharing its throughput
        per_tile = max(2.0 * bm * bn, _RIDGE * (bm + bn) * in_bytes) * K
        penalty = 1.5 if stages == 1 and min(resident, per_sm) == 1 else 1.0
        estimate = per_sm * per_tile * penalty
        plan = Rasterization2DRow(panel_width=4) if tiles > sms else NoRasterization()
        ranked.append(Hint(block=[bm, bn], warp=[wm, wn], rstep=[bk], pipeline_stage=stages,
                           use_async=stages > 1, use_tc=True, rasterization_plan=plan, estimate=estimate))
    # ties: deeper k steps and pipelines first (fewer barriers), then fewer threads
    ranked.sort(key=lambda h: (h.estimate, -h.rstep[0], -h.pipeline_stage, h.threads))
    return ranked[:topk]

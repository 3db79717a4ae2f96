"""Two chained wgmma gemms of a warp-specialized TMA pipeline in the overlapped form
(`tilelang_cuda.lower_tma.plan_overlap`): FlashAttention's S = Q K^T and O += P V, where each
iteration issues Q K^T(k) and P V(k - 1), runs the softmax of k beside P V(k - 1), and the two
consumer warpgroups take turns issuing (named barriers 3 and 4).

Without a GPU: the lowered kernel in the emulator (`tma_emulator.py`, named barriers' arrivals
included; its wgmma completes at issue, so this checks the reordering and the barriers, not
the asynchrony) against NumPy, the form's markers in the generated source, and the cases it
must leave alone. Speed: `bench/attention.py` on the device.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cuda_lowering import _target  # noqa: E402
from tma_emulator import run_kernel  # noqa: E402


def flash_attention(seq_q, seq_kv, dim, causal, block_M=128, block_N=128, stages=2, threads=256, rescale_late=True):
    """TileLang's FlashAttention example (forward, BHSD) in its own statement order."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    q_shape, kv_shape = [1, 1, seq_q, dim], [1, 1, seq_kv, dim]
    past = seq_kv - seq_q

    @T.prim_func
    def main(Q: T.Tensor(q_shape, "float16"), K: T.Tensor(kv_shape, "float16"), V: T.Tensor(kv_shape, "float16"),
             Output: T.Tensor(q_shape, "float16")):
        with T.Kernel(T.ceildiv(seq_q, block_M), 1, 1, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], "float16")
            K_shared = T.alloc_shared([block_N, dim], "float16")
            V_shared = T.alloc_shared([block_N, dim], "float16")
            O_shared = T.alloc_shared([block_M, dim], "float16")
            acc_s = T.alloc_fragment([block_M, block_N], "float32")
            acc_s_cast = T.alloc_fragment([block_M, block_N], "float16")
            acc_o = T.alloc_fragment([block_M, dim], "float32")
            scores_max = T.alloc_fragment([block_M], "float32")
            scores_max_prev = T.alloc_fragment([block_M], "float32")
            scores_scale = T.alloc_fragment([block_M], "float32")
            scores_sum = T.alloc_fragment([block_M], "float32")
            logsum = T.alloc_fragment([block_M], "float32")
            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity("float32"))
            loop_range = T.min(T.ceildiv(seq_kv, block_N), T.ceildiv((bx + 1) * block_M + past, block_N)) \
                if causal else T.ceildiv(seq_kv, block_N)
            for k in T.Pipelined(loop_range, num_stages=stages):
                T.copy(K[bz, by, k * block_N:(k + 1) * block_N, :], K_shared)
                if causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i + past >= k * block_N + j, 0,
                                                     -T.infinity("float32"))
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_kv, -T.infinity("float32"), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                if not rescale_late:
                    for i, j in T.Parallel(block_M, dim):
                        acc_o[i, j] *= scores_scale[i]
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity("float32"))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                if rescale_late:
                    for i, j in T.Parallel(block_M, dim):
                        acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, by, k * block_N:(k + 1) * block_N, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M:(bx + 1) * block_M, :])

    return main


def _lower(func, **options):
    return lower(func, _target("sm_90a"), CompileOptions(**options))


def _reference(q, k, v, causal):
    s = q.astype(np.float64) @ k.astype(np.float64).T / np.sqrt(q.shape[-1])
    if causal:
        past = k.shape[0] - q.shape[0]
        s = np.where(np.arange(q.shape[0])[:, None] + past >= np.arange(k.shape[0])[None, :], s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)


def _overlapped(script: str) -> bool:
    return "tl::named_barrier_sync" in script and "tl::wgmma_wait<1>" in script


@pytest.mark.parametrize("seq_q,seq_kv,causal", [(128, 512, False), (256, 256, True)])
def test_overlapped_flash_attention_in_emulator(seq_q, seq_kv, causal):
    """Non-causal: 4 iterations (the peeled first, two in the loop, the drained last). Causal:
    block 0 runs 1 iteration (no turns are passed), block 1 runs 2 with the mask."""
    dim = 64
    lowered = _lower(flash_attention(seq_q, seq_kv, dim, causal))
    assert _overlapped(lowered.script())
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((n, dim)).astype(np.float16) for n in (seq_q, seq_kv, seq_kv))
    out = np.full((1, 1, seq_q, dim), np.nan, np.float16)
    run_kernel(lowered, q[None, None], k[None, None], v[None, None], out, mode="late")
    ref = _reference(q, k, v, causal)
    assert np.isfinite(out).all()
    assert np.abs(out[0, 0].astype(np.float64) - ref).max() < 2e-2


def test_overlapped_form_markers_and_pass_config():
    """Two barrier groups (K's and V's stages apart), the turn barriers, gemm1 waited with one
    group pending; `tl.disable_overlap` keeps each iteration's order."""
    func = flash_attention(128, 512, 64, False)
    script = _lower(func).script()
    assert _overlapped(script)
    assert "tl::named_barrier_arrive" in script and "a_regs" in script
    plain = _lower(func, disable_overlap=True).script()
    assert not _overlapped(plain) and "tl::wgmma_wait<1>" not in plain
    from tilelang_core.jit.options import CompileOptions as Options

    assert Options.from_pass_configs({"tl.disable_overlap": True}).disable_overlap


def test_rescale_before_the_softmax_is_not_overlapped():
    """The rescale of O placed right after Q K^T reads scores_scale before the softmax writes
    it: it cannot move after those statements, so the form is not taken."""
    lowered = _lower(flash_attention(128, 384, 64, False, rescale_late=False))
    assert not _overlapped(lowered.script())


@pytest.mark.parametrize("threads", [128])
def test_one_consumer_warpgroup_keeps_each_iterations_order(threads):
    lowered = _lower(flash_attention(64, 256, 64, False, block_M=64, threads=threads))
    assert not _overlapped(lowered.script())


def test_negative_control_accumulator_touched_while_in_flight(monkeypatch):
    """The emulator's wgmma lands at the wait that covers it: the rescale of O run before the
    wait of P V(k - 1) (moved among the statements that run beside it) gives a wrong result."""
    import dataclasses

    import tilelang_cuda.lower_tma as lt

    real = lt.plan_overlap

    def rescale_early(*args, **kwargs):
        found = real(*args, **kwargs)
        return None if found is None else dataclasses.replace(found, middle=found.middle + found.late, late=[])

    monkeypatch.setattr(lt, "plan_overlap", rescale_early)
    seq_q, seq_kv, dim = 128, 384, 64
    lowered = _lower(flash_attention(seq_q, seq_kv, dim, False))
    assert _overlapped(lowered.script())
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((n, dim)).astype(np.float16) for n in (seq_q, seq_kv, seq_kv))
    out = np.full((1, 1, seq_q, dim), np.nan, np.float16)
    run_kernel(lowered, q[None, None], k[None, None], v[None, None], out)
    assert np.abs(out[0, 0].astype(np.float64) - _reference(q, k, v, False)).max() > 5e-2


def test_epilogue_tile_takes_the_swizzled_placement():
    """O_shared, written only from the accumulator and stored only by TMA, is placed in
    wgmma's swizzled slabs (its writes meet no bank conflicts) and stored one slab per box;
    the emulator runs above check the values."""
    import json

    lowered = _lower(flash_attention(128, 256, 64, False))
    maps = json.loads(str(lowered.attrs["cuda.tensor_maps"]))
    store = [m for m in maps if m["param"] == 3]  # Output
    assert store and store[0]["swizzle"] == 128, maps

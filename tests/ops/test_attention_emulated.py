"""The attention kernels the operators pick for cuda/sm_90a, lowered for it and run in the
TIR emulator of tests/cuda (wgmma, TMA, mbarriers, warp specialization, cp.async): the
generated schedule computes the right numbers, not only compiles. Outputs and workspaces
poisoned with NaN, every element compared with the float64 reference."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core import ops
from tilelang_core.ops.attention import _fit, decode_chunk
from tilelang_core.ops.registry import resolve_config
from tilelang_core.plugin import get_plugin_manager

pytest.importorskip("tilelang_cuda")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cuda"))
from tir_emulator import run_kernel as run_plain  # noqa: E402
from tma_emulator import run_kernel as run_tma  # noqa: E402

pytestmark = pytest.mark.slow


def _run(op_name: str, problem: dict, *arrays: np.ndarray) -> None:
    """Each launch of the operator's sm_90a kernel for `problem`, in order, over `arrays`
    (parameters, then workspaces)."""
    from tilelang_core.jit.api import lower
    from tilelang_core.jit.options import CompileOptions
    from tilelang_core.transform.launches import split_launches

    target = get_plugin_manager().parse_target("cuda/sm_90a")
    op = ops.get(op_name)
    config, _ = resolve_config(op, target, problem)
    func = op.kernels[config["kernel"]](dict(problem), config)
    plan = split_launches(func)
    for part in plan.launches if plan is not None else (func,):
        lowered = lower(part, target, CompileOptions())
        maps = lowered.attrs is not None and "cuda.tensor_maps" in lowered.attrs
        (run_tma if maps else run_plain)(lowered, *arrays)


def test_varlen_on_hopper_with_empty_sequences():
    """Two launches (the padding copy, then TMA tiles under warp specialization): an empty
    query sequence, a sequence without keys (0), causal tiles of a ragged sequence."""
    cq, ck = np.array([0, 5, 5, 40, 45], "int32"), np.array([0, 9, 20, 20, 50], "int32")
    heads, kv_heads, dim = 2, 1, 16
    problem = {"batch": 4, "heads": heads, "kv_heads": kv_heads, "total_q": 45, "total_kv": 50, "dim": dim,
               "dtype": "float16", "causal": True, "max_seq_q": 35, "max_seq_kv": 30, "scale": 1 / math.sqrt(dim)}
    rng = np.random.default_rng(3)
    q = rng.standard_normal((45, heads, dim)).astype(np.float16)
    k, v = (rng.standard_normal((50, kv_heads, dim)).astype(np.float16) for _ in range(2))
    out = np.full((45, heads * dim), np.nan, np.float16)
    target = get_plugin_manager().parse_target("cuda/sm_90a")
    config, _ = resolve_config(ops.get("flash_attention_varlen"), target, problem)
    assert config["fast_math"] and config["block_M"] == 128  # the wgmma row of the table
    block_N = _fit(config["block_N"], 30)
    padded = [np.full((4 * -(-30 // block_N) * block_N, kv_heads * dim), np.nan, np.float16) for _ in range(2)]
    _run("flash_attention_varlen", problem, q.reshape(45, -1), k.reshape(50, -1), v.reshape(50, -1), cq, ck, out,
         *padded)
    expected = ops.get("flash_attention_varlen").reference(q, k, v, cq, ck, True)
    got = out.reshape(expected.shape).astype(np.float64)
    assert not np.isnan(got).any() and np.abs(got - expected).max() < 1e-2
    assert (got[5:40] == 0).all()  # the sequence without keys


@pytest.mark.parametrize("heads, kv_heads, seq, requested", [
    # three chunks, the last one ragged (at 32-key tiles: 7 tiles in chunks of 3, so the last
    # chunk has a tile wholly past the keys)
    (4, 2, 210, 3),
    # MQA, a group of 3 padded to the 16 rows of an mma tile, fewer keys than one tile, one split
    (3, 1, 20, 1),
])
def test_decode_on_hopper_in_splits(heads, kv_heads, seq, requested):
    """The sm_90a kernel (one warp per block) over chunks of the keys, combined by the
    second launch; workspaces poisoned."""
    batch, dim = 1, 16
    problem = {"batch": batch, "heads": heads, "kv_heads": kv_heads, "seq_kv": seq, "dim": dim, "dtype": "float16",
               "scale": 1 / math.sqrt(dim), "splits": requested}
    target = get_plugin_manager().parse_target("cuda/sm_90a")
    config, _ = resolve_config(ops.get("attention_decode"), target, problem)
    assert config["threads"] == 32  # the row max and sum of the scores by shuffles within the warp
    _, splits = decode_chunk(seq, requested, _fit(config["block_N"], seq))
    assert splits == requested
    rng = np.random.default_rng(4)
    q = rng.standard_normal((batch, heads, dim)).astype(np.float16)
    k, v = (rng.standard_normal((batch, kv_heads, seq, dim)).astype(np.float16) for _ in range(2))
    out = np.full((batch, heads, dim), np.nan, np.float16)
    lse = np.full((batch, heads, splits), np.nan, np.float32)
    partial = np.full((batch, heads, splits, dim), np.nan, np.float32)
    _run("attention_decode", problem, q, k, v, out, lse, partial)
    assert not np.isnan(out).any()
    assert np.abs(out.astype(np.float64) - ops.get("attention_decode").reference(q, k, v)).max() < 1e-2


def test_causal_tiles_below_the_diagonal_on_hopper():
    """200 queries and keys in 128-tiles: query tile 1 reads key tile 0 unmasked (wholly
    below its diagonal) and key tile 1 masked (the diagonal, past the last key)."""
    seq, dim = 200, 32
    problem = {"batch": 1, "heads": 1, "kv_heads": 1, "seq_q": seq, "seq_kv": seq, "dim": dim, "dtype": "float16",
               "causal": True, "scale": 1 / math.sqrt(dim)}
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((1, 1, seq, dim)).astype(np.float16) for _ in range(3))
    out = np.full((1, 1, seq, dim), np.nan, np.float16)
    _run("flash_attention", problem, q, k, v, out)
    assert np.abs(out.astype(np.float64) - ops.get("flash_attention").reference(q, k, v, True)).max() < 1e-2

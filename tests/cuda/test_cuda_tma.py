"""T.Pipelined on Hopper (`tilelang_cuda.lower_tma`): TMA loads on full/empty mbarriers, a
loading warp of its own, wgmma overlapped across iterations; the tensor maps' metadata and
their runtime half (`tilelang_cuda.tensor_maps`).

Without a GPU: whole lowered kernels in the emulator (`tma_emulator.py`, where TMA's bytes
land as late or as early as the hardware allows) against NumPy, NVRTC's SASS for sm_90a, and
the descriptor slots' caching and errors. Speed: `bench/gemm.py` on the device.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.runtime import KernelCallError, KernelMeta, ParamSpec
from tilelang_cuda.tensor_maps import TensorMapSlot, tensor_map_slots

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_cuda_lowering import _operands, _sass_ops, _target, gemm_kernel  # noqa: E402
from tma_emulator import run_kernel  # noqa: E402


def _lower(func, **options):
    return lower(func, _target("sm_90a"), CompileOptions(**options))


def _emulate(M, N, K, dtype="float16", trans_a=False, trans_b=False, mode="late", options=None,
             expect_store=None, **kw):
    func = gemm_kernel(M, N, K, dtype=dtype, trans_a=trans_a, trans_b=trans_b, **kw)
    lowered = _lower(func, **(options or {}))
    assert "tl::tma_load" in lowered.script()
    if expect_store is not None:
        assert ("tl::tma_store" in lowered.script()) == expect_store
    rng = np.random.default_rng(7)
    a_shape, b_shape = ((K, M) if trans_a else (M, K)), ((N, K) if trans_b else (K, N))
    a, b, av, bv = _operands(dtype, a_shape, b_shape, rng)
    c = np.full((M, N), np.nan, np.float32)  # poisoned: every element must be written
    run_kernel(lowered, a, b, c, mode=mode)
    ref = (av.T if trans_a else av) @ (bv.T if trans_b else bv)
    assert np.isfinite(c).all()
    return float(np.abs(c - ref).max() / max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("mode", ["late", "early"])
@pytest.mark.parametrize("case", [
    dict(M=128, N=128, K=256, bm=128, bn=128, bk=64, stages=3),  # 4 k-tiles through 3 stages
    dict(M=100, N=72, K=200, bm=64, bn=64, bk=64, stages=2),  # ragged: TMA fills the tails with 0
    dict(M=128, N=256, K=128, bm=128, bn=256, bk=32, stages=4, threads=256),  # 64B swizzle, 2 warpgroups
    dict(M=128, N=128, K=64, bm=128, bn=128, bk=64, stages=4),  # fewer k-tiles than stages
    dict(M=128, N=128, K=192, bm=128, bn=128, bk=64, stages=2, dtype="bfloat16", trans_b=True),
])
def test_tma_pipeline_in_emulator(case, mode):
    args = dict(threads=128)
    args.update(case)
    assert _emulate(mode=mode, **args) < 1e-5


def test_tma_pipeline_without_a_loading_warp_in_emulator():
    err = _emulate(128, 128, 256, bm=128, bn=128, bk=64, stages=3, threads=128, mode="early",
                   options={"disable_warp_specialized": True})
    assert err < 1e-5


def test_loading_warp_shape_of_the_kernel():
    kernel = tilelang_core.compile(gemm_kernel(1024, 1024, 1024, 128, 256, 64, stages=4, threads=256),
                                   target="cuda/sm_90a", cache=False)
    src = kernel.get_kernel_source()
    assert tuple(kernel.meta.block)[:1] == (384,), "the consumers' 256 threads and a loading warpgroup"
    assert "__launch_bounds__(384, 1)" in src and "bar.sync 2, 384;" in src
    assert "__syncthreads" not in src, "no block barrier may wait for the loading warpgroup"
    assert "tl::warp_index() < 8" in src and "tl::wgmma_wait<1>" in src
    # registers move from the loaders to the consumers: 256 * 232 + 128 * 40 <= 65536
    assert src.count("tl::setmaxnreg_inc<232>()") == 1 and src.count("tl::setmaxnreg_dec<40>()") == 1
    maps = json.loads(kernel.meta.extra["tensor_maps"])
    assert maps == [
        {"param": 0, "dtype": "float16", "shape": [1024, 1024], "box": [128, 64], "swizzle": 128},
        {"param": 1, "dtype": "float16", "shape": [1024, 1024], "box": [64, 64], "swizzle": 128},
        # the epilogue, staged through shared memory in 128-byte swizzled slabs of 32 floats
        {"param": 2, "dtype": "float32", "shape": [1024, 1024], "box": [128, 32], "swizzle": 128},
    ]
    assert src.count("const __grid_constant__ tl::tensor_map") == 3


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_tma_gemm_sass(dtype):
    kernel = tilelang_core.compile(gemm_kernel(2048, 2048, 2048, 128, 256, 64, dtype, stages=4, threads=256),
                                   target="cuda/sm_90a", cache=False)
    ops = _sass_ops(kernel)
    assert ops.get("UTMALDG", 0) >= 5 and ops.get("HGMMA", 0) >= 4 and ops.get("SYNCS", 0) > 0, ops
    assert ops.get("LDL", 0) == 0 and ops.get("STL", 0) == 0, "the accumulator must stay in registers"
    # serialized wgmma (ptxas C7518) waits after every HGMMA; ours waits once per k-tile
    assert ops.get("WARPGROUP", 0) <= ops["HGMMA"], ops


def test_fallbacks_keep_cp_async():
    base = dict(M=1024, N=1024, K=1024, bm=128, bn=128, bk=64, stages=3)
    off = _lower(gemm_kernel(**base), disable_tma=True).script()
    assert "tl::tma_load" not in off and "cp_async" in off
    int8 = _lower(gemm_kernel(**base, dtype="int8")).script()  # mma.sync operands: no descriptors
    assert "tl::tma_load" not in int8


def test_symbolic_row_stride_keeps_cp_async():
    k = T.symbolic("k")

    @T.prim_func
    def main(A: T.Tensor((256, k), "float16"), B: T.Tensor((k, 256), "float16"), C: T.Tensor((256, 256), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(T.ceildiv(k, 64), num_stages=3):
                T.copy(A[by * 128, ko * 64], A_s)
                T.copy(B[ko * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 128, bx * 128])

    script = _lower(main).script()
    # A's rows are k elements apart: no 16-byte stride TMA can be promised; B's rows are 512 bytes
    assert "tl::tma_load" not in script and "cp_async" in script


# ---------------------------------------------------------------------------- runtime half


def _meta(shape):
    spec = {"param": 0, "dtype": "float16", "shape": shape, "box": [128, 64], "swizzle": 128}
    return KernelMeta(target="cuda/sm_90a", entry="k", params=(
        ParamSpec(name="A", kind="tensor", dtype="float16", shape=tuple(shape)),
        ParamSpec(name="m", kind="scalar", dtype="int32")), extra={"tensor_maps": json.dumps([spec])})


def test_tensor_map_slot_encodes_once_per_address_and_shape(monkeypatch):
    slot, = tensor_map_slots(_meta(["m", 64]))
    assert slot.address % 64 == 0
    seen = []
    monkeypatch.setattr(slot, "_encode", lambda pointer, shape: seen.append((pointer, shape)))
    slot.update(0x1000, [0x1000, 256])
    slot.update(0x1000, [0x1000, 256])  # same tensor: no new descriptor
    slot.update(0x2000, [0x2000, 256])
    slot.update(0x2000, [0x2000, 512])  # the symbolic dim comes from the launch arguments
    assert seen == [(0x1000, [256, 64]), (0x2000, [256, 64]), (0x2000, [512, 64])]


def test_tensor_map_slot_refuses_misaligned_data():
    slot, = tensor_map_slots(_meta([256, 64]))
    with pytest.raises(KernelCallError, match=r"'A'.*not 16-byte aligned.*tl.disable_tma_lower"):
        slot.update(0x1008, [0x1008, 0])


def test_no_tensor_maps_no_slots():
    assert tensor_map_slots(KernelMeta(target="cuda/sm_90a", entry="k", params=())) == []
    with pytest.raises(KernelCallError, match="no TMA data type"):
        TensorMapSlot({"param": 0, "dtype": "bool", "shape": [4], "box": [4], "swizzle": 0}, {}, "k", ["A"])


def test_loading_warp_computes_the_trip_count_it_reads():
    """A causal attention's trip count (`steps = T.min(...)` of the block index, stored before
    the loop) is computed by the loading warp too: it used to be computed by the consumers
    only, and the loaders read an unset value (a hang on the H100)."""
    import math

    from tilelang_core import ops
    from tilelang_core.ops.registry import resolve_config

    target = _target("sm_90a")
    op = ops.get("flash_attention")
    problem = {"batch": 1, "heads": 2, "kv_heads": 1, "seq_q": 37, "seq_kv": 45, "dim": 32, "dtype": "float16",
               "causal": True, "scale": 1 / math.sqrt(32)}
    config, _ = resolve_config(op, target, problem)
    lowered = _lower(op.kernels[config["kernel"]](dict(problem), config))
    assert "setmaxnreg" in lowered.script(), "the pipeline must be warp-specialized for this test to mean anything"
    rng = np.random.default_rng(5)
    q = rng.standard_normal((1, 2, 37, 32)).astype(np.float16)
    k, v = (rng.standard_normal((1, 1, 45, 32)).astype(np.float16) for _ in range(2))
    o = np.full((1, 2, 37, 32), np.nan, np.float16)
    run_kernel(lowered, q, k, v, o)
    assert np.abs(o.astype(np.float64) - op.reference(q, k, v, True)).max() < 1e-2


# ---------------------------------------------------------------------------- TMA stores


def _scale_kernel(M, N, bm, bn, dtype="float16", guarded=False):
    """Each block doubles one tile of A into a shared tile, then copies it to B."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), dtype)
            for i, j in T.Parallel(bm, bn):
                if by * bm + i < M and bx * bn + j < N:
                    S[i, j] = A[by * bm + i, bx * bn + j] * 2
            if guarded:
                if bx > 0:
                    T.copy(S, B[by * bm, bx * bn])
            else:
                T.copy(S, B[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("mode", ["late", "early"])
@pytest.mark.parametrize("M, N, bm, bn", [(128, 128, 64, 64), (100, 72, 64, 64), (64, 256, 32, 256)])
def test_tma_store_in_emulator(M, N, bm, bn, mode):
    lowered = _lower(_scale_kernel(M, N, bm, bn))
    script = lowered.script()
    assert script.count("\"tl::tma_store\"") == 1 and "tl::tma_store_wait_read" in script
    spec = json.loads(str(lowered.attrs["cuda.tensor_maps"]))[0]
    assert spec["box"] == [bm, bn] and spec["swizzle"] == 0 and spec["param"] == 1
    a = np.random.default_rng(3).standard_normal((M, N)).astype(np.float16)
    b = np.full((M, N), np.nan, np.float16)  # poisoned: the ragged tiles' boxes must be clipped, not dropped
    run_kernel(lowered, a, b, mode=mode)
    np.testing.assert_array_equal(b, a * np.float16(2))


def test_tma_store_is_not_taken_where_it_cannot_apply():
    assert "tl::tma_store" not in _lower(_scale_kernel(128, 128, 64, 64), disable_tma=True).script()
    # under a condition not every thread reaches the store's barriers
    assert "tl::tma_store" not in _lower(_scale_kernel(128, 128, 64, 64, guarded=True)).script()
    # a row of 8 bytes is not a multiple of TMA's 16
    assert "tl::tma_store" not in _lower(_scale_kernel(128, 128, 64, 4)).script()


def test_gemm_epilogue_is_staged_through_shared_memory_when_it_fits(monkeypatch):
    staged = _lower(gemm_kernel(256, 256, 256, 128, 256, 64, stages=4, threads=256, out_dtype="float16"))
    script = staged.script()
    # four boxes of 64 columns: the stage tile takes wgmma's 128-byte swizzle
    assert "C_l_stage" in script and script.count("\"tl::tma_store\"") == 4
    # the stage tile reuses the main loop's bytes: 4 stages of A and B, nothing more
    assert tilelang_core.compile(gemm_kernel(256, 256, 256, 128, 256, 64, stages=4, threads=256,
                                             out_dtype="float16"), target="cuda/sm_90a",
                                 cache=False).meta.shared_memory == 4 * (128 * 64 + 64 * 256) * 2
    assert "tl::tma_store" not in _lower(gemm_kernel(256, 256, 256, 128, 256, 64, stages=4, threads=256,
                                                     out_dtype="float16"), disable_tma=True).script()
    # a stage tile the kernel's shared memory cannot hold: thread stores stay
    import tilelang_cuda.lower_tma_store as stores

    monkeypatch.setattr(stores, "shared_bytes", lambda func: 1 << 20)
    full = _lower(gemm_kernel(256, 256, 256, 128, 256, 64, stages=4, threads=256, out_dtype="float16")).script()
    assert "tl::tma_store" not in full and "C_l_stage" not in full


@pytest.mark.parametrize("mode", ["late", "early"])
def test_staged_epilogue_of_a_ragged_gemm_in_emulator(mode):
    # 100 x 72 does not fill the 64 x 64 tiles: TMA drops the stored box's outside part
    assert _emulate(100, 72, 128, bm=64, bn=64, bk=64, stages=2, threads=128, mode=mode,
                    expect_store=True) < 1e-5


def test_tma_store_epilogue_sass():
    """TileLang's GEMM epilogue (registers -> shared -> global) ends in TMA stores: C_s, written
    only from the accumulator and stored only by TMA, takes wgmma's swizzled slabs
    (`place_store_tiles`), one UTMASTG per 128-byte slab: 2 for 128 fp16 columns."""

    @T.prim_func
    def main(A: T.Tensor((1024, 1024), "float16"), B: T.Tensor((1024, 1024), "float16"),
             C: T.Tensor((1024, 1024), "float16")):
        with T.Kernel(8, 8, threads=256) as (bx, by):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            C_s = T.alloc_shared((128, 128), "float16")
            T.clear(C_l)
            for ko in T.Pipelined(16, num_stages=3):
                T.copy(A[by * 128, ko * 64], A_s)
                T.copy(B[ko * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * 128, bx * 128])

    kernel = tilelang_core.compile(main, target="cuda/sm_90a", cache=False)
    ops = _sass_ops(kernel)
    assert ops.get("UTMASTG", 0) == 2 and ops.get("UTMALDG", 0) >= 2 and ops.get("HGMMA", 0) >= 4, ops


def _offset_rows_kernel(M=256, K=128, N=64, bm=64, bk=64):
    """Each block's first row comes from a name computed from a `T.alloc_var` before the loop,
    as TileLang's grouped GEMM computes `m_start`: the loading warp of a warp-specialized
    pipeline cannot compute it."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), starts: T.Tensor((M // bm,), "int32"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(M // bm, threads=128) as bx:
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, N), "float16")
            C_l = T.alloc_fragment((bm, N), "float32")
            chosen = T.alloc_var("int32")
            chosen = starts[bx]
            row = chosen + 0
            T.clear(C_l)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[row, k * bk], A_s)
                T.copy(B[k * bk, 0], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[bx * bm, 0])
    return main


def test_warp_specialization_that_cannot_take_a_program_falls_back_with_the_reason():
    kernel = tilelang_core.compile(_offset_rows_kernel(), target="cuda/sm_90a")
    assert "fallback: not warp-specialized" in kernel.explain() and "row" in kernel.explain()
    lowered = _lower(_offset_rows_kernel())
    assert "setmaxnreg" not in lowered.script()
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 128)).astype(np.float16)
    b = rng.standard_normal((128, 64)).astype(np.float16)
    starts = np.array([192, 0, 128, 64], np.int32)
    c = np.full((256, 64), np.nan, np.float32)
    run_kernel(lowered, a, b, starts, c, mode="early")
    ref = np.concatenate([a[s:s + 64].astype(np.float64) @ b for s in starts])
    assert np.abs(c - ref).max() < 1e-2

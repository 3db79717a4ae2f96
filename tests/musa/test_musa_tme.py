"""TME loads and ASYNC barriers on mp_31: golden tests of the mapping for the seed 003 GEMM and
a FlashAttention (structure, not snapshots), pipelined kernels run in the emulator against
NumPy, the barrier-id budget, `T.alloc_barrier` on ASYNC barriers, and the runtime's
descriptors against a stand-in driver."""
from __future__ import annotations

import ctypes
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core import language as T
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import Target, hooks_for
from tilelang_core.transform import TileLangCompileError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from musa_programs import flash_attention, seed_gemm  # noqa: E402
from musa_tce_emulator import run_kernel  # noqa: E402

MP31 = Target.parse("musa/mp_31")


def _source(func, target=MP31, options=None):
    options = options or CompileOptions()
    return hooks_for(target).codegen(lower(func, target, options), options)


def _check(source, target=MP31):
    from tilelang_musa.check import find_checker

    if find_checker() is None:
        pytest.skip("no clang >= 17 here (scripts/install_hip_toolchain.sh installs clang-19)")
    assert "clang++" in hooks_for(target).check_source(source)


def _loop(src: str) -> str:
    """The text of the kernel's k loop."""
    start = src.index("for (int32_t k = 0;")
    return src[start:src.index("\n  }\n", start)]


def test_seed_gemm_maps_to_tme_async_barriers_and_tce():
    """The seed 003 GEMM (3 stages): 6 ASYNC barriers (full: 1 warp, empty: the 16 warps of
    512 threads); thread 0 loads A (one 64 x 256 box) and B (two 128-column slabs of 64 rows)
    per stage; in the loop: wait full -> SQMMA -> commit, wait until 1 group is in flight ->
    release the previous stage -> refill it; the last group is waited for after the loop."""
    source = _source(seed_gemm(8192, 7168, 16384))
    src = source.source
    assert '#include "tl_musa_tme.h"' in src and "tl_musa_barrier_record<6>();" in src
    assert src.count("__attribute__((grid_constant)) const MUtensorDescriptor tl_musa_desc_") == 2
    inits = re.findall(r"tl_musa_barrier_init\((\d)U, (\d+)U\);", src)
    assert inits == [("1", "1"), ("2", "1"), ("3", "1"), ("4", "16"), ("5", "16"), ("6", "16")]
    assert "tl_musa_g2s" not in src  # every copy of the loop is a TME load
    prologue = src[src.index("tl_musa_barrier_init(6U"):src.index("for (int32_t k = 0;")]
    assert prologue.count("tl_musa_tme_load_2d(&tl_musa_desc_0") == 2  # stages 0 and 1 (lag 1)
    assert "tl_musa_tme_load_2d(&tl_musa_desc_0, 1U, &A_shared[0], 0 * 64, by * 256, 64, 256);" in prologue
    assert "tl_musa_tme_load_2d(&tl_musa_desc_1, 1U, &B_shared[24576], bx * 256 + 128, 0 * 64, 128, 64);" in prologue
    loop = _loop(src)
    order = [loop.index(s) for s in ("tl_musa_barrier_wait((uint32_t)(1 + k % 3), (uint32_t)(k / 3 % 2));",
                                     "tl_musa_tce_m64n128<2, 0, 1, 64>", "tl_musa_tce_commit();",
                                     "tl_musa_tce_wait<1>();", "tl_musa_barrier_arrive((uint32_t)(4 +",
                                     "tl_musa_barrier_wait((uint32_t)(4 +", "tl_musa_barrier_expect(",
                                     "tl_musa_tme_load_2d(", "tl_musa_barrier_arrive((uint32_t)(1 +")]
    assert order == sorted(order), loop
    assert re.search(r"tl_musa_barrier_expect\(\(uint32_t\)\(1 \+ \(k \+ 2\) % 3\), 65536U\);", loop)
    assert src.index("tl_musa_tce_wait<0>();") > src.index("for (int32_t k = 0;")
    # the SQMMA descriptors read the stage being consumed
    assert "tl_musa_tce_desc(&A_shared[k % 3 * 16384" in loop
    assert json.loads(source.extra["tensor_descriptors"]) == [
        {"param": 0, "dtype": "float16", "shape": [8192, 16384]},
        {"param": 1, "dtype": "float16", "shape": [16384, 7168]}]
    _check(source)


def test_flash_attention_maps_k_and_v_to_tme():
    """K and V (B, S, H, D tensors) arrive as 4-D TME boxes (D x 1 x block_N x 1) on the
    pipeline's barriers; Q K^T runs on the TCE and reads K's current stage."""
    source = _source(flash_attention(1, 2, 256, 64, stages=2))
    src = source.source
    loop = _loop(src)
    assert "tl_musa_tme_load_4d(&tl_musa_desc_0, 1U, &K_shared[0], 0, by, 0 * 64, bz, 64, 1, 64, 1);" in src
    assert "tl_musa_tme_load_4d(&tl_musa_desc_1, 1U, &V_shared[0], 0, by, 0 * 64, bz, 64, 1, 64, 1);" in src
    assert loop.index("tl_musa_barrier_wait((uint32_t)(1 + k % 2)") < loop.index("tl_musa_tce_m64n64<2, 0, 0, 64>")
    assert "tl_musa_tce_desc(&K_shared[k % 2 * 4096], 5)" in loop
    assert "tl_musa_barrier_arrive((uint32_t)(3 + k % 2));" in loop  # lag 0: two gemms in the loop
    assert [d["shape"] for d in json.loads(source.extra["tensor_descriptors"])] == [[1, 256, 2, 64]] * 2
    _check(source)


@pytest.mark.parametrize("stages,k", [(2, 256), (3, 320)])
def test_pipelined_tce_gemm_runs_in_the_emulator(stages, k):
    """One squad, B in slabs, TME loads landing only when their phase completes: every
    element against NumPy (float64), for a trip count that is and is not a multiple of S."""
    m, n = 64, 256
    lowered = lower(seed_gemm(m, n, k, 64, 256, 64, 128, stages=stages), MP31, CompileOptions())
    assert "tl_musa_tme_load_2d" in str(lowered)
    rng = np.random.default_rng(stages)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    run_kernel(lowered, a, b, c)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=2e-3, atol=2e-2)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # stale shared memory is garbage
def test_the_emulator_catches_a_consumer_that_does_not_wait(monkeypatch):
    """Negative control: without the wait on the full barrier the SQMMA reads a stage before
    its bytes land, and the result is wrong."""
    import tvm_ffi
    from tvm import tirx as tir

    from tilelang_musa import lower_tme

    build = lower_tme._TMEPipeline.build

    def without_full_wait(self, slabs):
        stmt = build(self, slabs)
        self.full_waits = 0

        def drop(s):
            value = s.value
            if getattr(value, "op", None) is not None and value.op.name == "tirx.call_extern" \
                    and str(value.args[0].value) == "tl_musa_barrier_wait" and "k" in str(value.args[2]) \
                    and "-" not in str(value.args[2]):
                self.full_waits += 1
                return tir.Evaluate(tir.const(0, "int32"))
            return s

        out = tvm_ffi.structural_map(stmt, ((tir.Evaluate, drop),))
        assert self.full_waits == 1  # the consumers' wait, not the refill's (phase (j - S) / S)
        return out

    monkeypatch.setattr(lower_tme._TMEPipeline, "build", without_full_wait)
    lowered = lower(seed_gemm(64, 256, 192, 64, 256, 64, 128, stages=1), MP31, CompileOptions())
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 192)).astype(np.float16)
    b = rng.standard_normal((192, 256)).astype(np.float16)
    c = np.zeros((64, 256), np.float16)
    with pytest.raises(AssertionError):
        run_kernel(lowered, a, b, c)
        np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=2e-3,
                                   atol=2e-2)


def test_disable_tma_keeps_ldlms_and_other_archs_never_see_tme():
    assert "tl_musa_tme" not in _source(seed_gemm(1024, 1024, 1024), options=CompileOptions(disable_tma=True)).source
    mp22 = Target.parse("musa/mp_22")
    src = _source(seed_gemm(1024, 1024, 1024, 64, 64, 32, 256), mp22).source
    assert "tl_musa_tme" not in src and "tl_musa_barrier" not in src and "tl_musa_g2s" in src


def test_barrier_ids_past_63_are_refused():
    with pytest.raises(TileLangCompileError, match=r"ASYNC barriers 1\.\.64.*ids 1\.\.63.*async_barrier"):
        lower(seed_gemm(256, 256, 2048, 64, 64, 32, 128, stages=32), MP31, CompileOptions())


def _barrier_kernel(count):
    @T.prim_func
    def main(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):  # noqa: N803
        with T.Kernel(1, threads=128) as bx:
            s = T.alloc_shared((128,), "float32")
            bars = T.alloc_barrier([count, count])
            for i in T.Parallel(128):
                s[i] = X[i] * 2.0
            T.barrier_arrive(bars[1])
            T.barrier_wait(bars[1], 0)
            for i in T.Parallel(128):
                Y[i] = s[127 - i]

    return main


def test_alloc_barrier_maps_to_async_barrier_ids():
    """T.alloc_barrier([128, 128]): ids 1 and 2, 4 warps each; bars[1] is id 2."""
    source = _source(_barrier_kernel(128))
    src = source.source
    assert "tl_musa_barrier_init(1U, 4U);" in src and "tl_musa_barrier_init(2U, 4U);" in src
    assert "tl_musa_barrier_arrive((uint32_t)2);\n  tl_musa_barrier_wait((uint32_t)2, (uint32_t)0);" in src, src
    assert "tl_musa_barrier_record<2>();" in src
    _check(source)
    x = np.arange(128, dtype=np.float32)
    y = np.full(128, np.nan, np.float32)
    run_kernel(lower(_barrier_kernel(128), MP31, CompileOptions()), x, y)
    np.testing.assert_array_equal(y, x[::-1] * 2)


def test_alloc_barrier_counts_whole_warps():
    with pytest.raises(TileLangCompileError, match=r"counts whole warps of 32 threads.*arrive count is 100"):
        lower(_barrier_kernel(100), MP31, CompileOptions())


class _FakeDriver:
    """Records muTensorDescriptorEncode's arguments (a stand-in for libmusa)."""

    def __init__(self):
        self.calls = []

    def muTensorDescriptorEncode(self, desc, dtype, rank, address, dims, strides, interleave, fill):  # noqa: N802
        r = rank.value
        self.calls.append((dtype.value, r, address.value, list(dims)[:r], list(strides)[:r - 1], interleave.value,
                           fill.value))
        return 0


def test_runtime_encodes_descriptors_innermost_first_and_caches_them():
    from tilelang_core.runtime import KernelMeta, ParamSpec
    from tilelang_musa.descriptors import descriptor_slots

    source = _source(flash_attention(1, 2, 256, 64, stages=2))
    meta = KernelMeta(entry="main_kernel", target="musa/mp_31", params=tuple(
        ParamSpec(**p) for p in source.extra["params"]), extra={"tensor_descriptors": source.extra["tensor_descriptors"]})
    slots = descriptor_slots(meta)
    assert [s.name for s in slots] == ["K", "V"] and all(s.address % 64 == 0 for s in slots)
    lib = _FakeDriver()
    args = [ctypes.c_void_p(4096 * (i + 1)) for i in range(4)]
    for _ in range(2):
        for slot in slots:
            slot.update(lib, args[slot.param].value, args)
    # float16 = 4; dims (D, H, S, B) innermost first; byte strides of H, S, B; once per tensor
    assert lib.calls == [(4, 4, 8192, [64, 2, 256, 1], [128, 256, 65536], 0, 0),
                         (4, 4, 12288, [64, 2, 256, 1], [128, 256, 65536], 0, 0)]
    with pytest.raises(Exception, match="not 16-byte aligned"):
        slots[0].update(lib, 8200, args)


def test_a_load_whose_start_the_iteration_computes_is_not_issued_ahead():
    """`off` is bound inside the loop body: A's load cannot move ahead of it (the iteration
    copies A itself); the kernel still computes the GEMM."""
    m, n, k = 64, 128, 128

    @T.prim_func
    def main(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"), C: T.Tensor((m, n), "float16")):  # noqa: N803
        with T.Kernel(1, 1, threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((64, 128), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(2, num_stages=2):
                off = T.bind(ko * 64)
                T.copy(A[0, off], A_s)
                T.copy(B[ko * 64, 0], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[0, 0])

    from tilelang_musa.lower_tme import tensor_descriptors_of

    lowered = lower(main, MP31, CompileOptions())
    assert [d["param"] for d in tensor_descriptors_of(lowered)] == [1]  # B by TME; A by the iteration
    rng = np.random.default_rng(2)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    run_kernel(lowered, a, b, c)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=2e-3, atol=2e-2)

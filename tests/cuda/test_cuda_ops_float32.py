"""The float32 GEMMs of `tilelang_core.ops` as the CUDA backend lowers them for sm_90a.

"highest" (FMA loops, no matrix units): the table's config and variants of it run in the
TIR emulator at a ragged size (partial tiles on every side, bias and relu) and on a whole
tile, and its SASS at the bench's size (cp.async slabs, 16-byte shared reads, 16 FFMA per
read, 16-byte stores of C, no local memory). "high": wgmma tf32, B as (N, K) by descriptors
and B as (K, N) swapped (C^T = B^T A^T), in the wgmma emulator through cp.async (K rows not
16-byte aligned) and through TMA."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tilelang_core import ops
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.ops.registry import resolve_config
from tilelang_core.plugin import get_plugin_manager

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tir_emulator import run_kernel  # noqa: E402
from tma_emulator import run_kernel as run_tma_kernel  # noqa: E402
from wgmma_emulator import run_kernel as run_wgmma_kernel  # noqa: E402


def _kernel(M, N, K, ta, tb, bias, fma=True, changes=None):
    target = get_plugin_manager().parse_target("cuda/sm_90a")
    problem = {"batch": 1, "M": M, "N": N, "K": K, "dtype": "float32", "trans_a": ta, "trans_b": tb,
               "bias": bias, "activation": "relu" if bias else "none", **({"fma": True} if fma else {})}
    op = ops.get("gemm")
    config, _ = resolve_config(op, target, problem)
    config.update(changes or {})
    return op, problem, op.kernels[config["kernel"]](problem, config), target


# the table's FMA config in one launch (the emulator runs one: the table's plain a @ b writes
# A as (K, M) first, `fma_pretranspose`, whose two launches tests/opencl runs on PoCL; here A's
# tile is transposed on its way in) and for A handed over as (K, M), and variants of bench/sgemm_variants.py: the 8 x 8 loop
# without prefetch, the prefetch form's thread tile, the warp's arrangement, the A tile as it
# arrives (K-minor) with its XOR swizzle, 8 x 16 per thread, 16- and 32-wide K slabs, the K loop
# counted from fma_stages - 1 (the table's fma_offset_loop: 1 and 2) and from 0
FMA_VARIANTS = [
    (False, False, {"fma_pretranspose": False}), (True, True, {}),
    (False, False, {"fma_prefetch": False, "fma_pretranspose": False}),
    (True, False, {"fma_prefetch_thread_M": 8, "fma_prefetch_thread_N": 16}),
    (False, False, {"fma_lanes_n": 4, "fma_skew": False, "fma_swizzle_a": True, "fma_transpose_a": False,
                    "fma_pretranspose": False}),
    (False, True, {"fma_thread_N": 16, "fma_lanes_n": 2, "fma_stages": 2}),
    (True, False, {"fma_thread_M": 16, "fma_block_K": 16, "fma_stages": 3}),
    (False, False, {"fma_skew": False, "fma_block_K": 32, "fma_stages": 2, "fma_panel": 2, "fma_offset_loop": False,
                    "fma_pretranspose": False}),
]


@pytest.mark.parametrize("ta, tb, changes", FMA_VARIANTS)
@pytest.mark.parametrize("M, N, K", [(21, 30, 37), (32, 32, 24)])
def test_fma_gemm_computes_float32_products_in_the_emulator(ta, tb, changes, M, N, K):
    """21 x 30 x 37: 32 x 32 tiles, every edge partial (guarded scalar stores); 32 x 32 x 24:
    one whole tile, with `fma_vector_store` (16-byte stores of C where there is no bias)."""
    if (M, N, K) == (32, 32, 24):
        if (ta, tb, changes) != FMA_VARIANTS[0]:
            pytest.skip("whole tiles: the table's config with 16-byte stores, plain a @ b, suffices")
        changes = {"fma_vector_store": True, "fma_pretranspose": False}
    op, problem, func, target = _kernel(M, N, K, ta, tb, bias=ta, changes=changes)
    lowered = lower(func, target, CompileOptions())
    assert ("= acc[T.Ramp(" in lowered.script()) is (M == 32), "16-byte stores of C exactly where tiles are whole"
    rng = np.random.default_rng()
    a = rng.standard_normal((K, M) if ta else (M, K)).astype("float32")
    b = rng.standard_normal((N, K) if tb else (K, N)).astype("float32")
    bias = rng.standard_normal(N if ta else 1).astype("float32")
    c = np.full((1, M, N), np.nan, "float32")
    run_kernel(lowered, a[None], b[None], bias, c)
    ref = op.reference(a, b, trans_a=ta, trans_b=tb, bias=bias if ta else None, activation=problem["activation"])
    magnitude = op.reference(np.abs(a), np.abs(b), trans_a=ta, trans_b=tb, bias=np.abs(bias) if ta else None)
    assert not np.isnan(c).any(), "elements never written"
    # a float32 rounding per step (tests/ops/cases.py float32_bound): TF32 products would fail it
    assert (np.abs(c[0] - ref) <= 2 * (K + 2) * 2.0 ** -24 * magnitude).all()


def _opcodes(sass: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in sass.splitlines():
        match = re.match(r"\s+/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]+(\.[A-Z0-9_.]+)?)", line)
        if match:
            counts[match.group(2)] = counts.get(match.group(2), 0) + 1
    return counts


@pytest.mark.parametrize("pretranspose", [True, False])
def test_fma_gemm_sass_reads_shared_memory_16_bytes_at_a_time(pretranspose):
    """The table's kernel: a launch writing A as (K, M), then the tile loop (`fma_pretranspose`);
    without it, one launch whose copy transposes A's tile (a float per cp.async)."""
    import tilelang_core
    from tilelang_cuda.compile import disassemble

    _, _, func, target = _kernel(4096, 4096, 4096, False, False, bias=False,
                                 changes={"fma_pretranspose": pretranspose})
    kernel = tilelang_core.compile(func, target=target, cache=False)
    binaries = kernel.binary if isinstance(kernel.binary, tuple) else (kernel.binary,)
    assert len(binaries) == (2 if pretranspose else 1)
    counts = _opcodes(disassemble(binaries[-1]))
    ffma, lds128 = counts.get("FFMA", 0), counts.get("LDS.128", 0)
    # a 16-wide K slab (the table's) of 16 x 8 outer products of float4 runs (the prefetch form,
    # 128 threads), every shared read 16 bytes
    assert ffma >= 2048 and lds128 >= 96 and ffma >= 16 * lds128, counts
    assert [k for k in counts if k.startswith("LDS") and k != "LDS.128"] in ([], ["LDS"]), counts
    assert counts.get("LDS", 0) <= 8, counts  # only `@!PT LDS RZ, [RZ]` padding (never executed)
    # the table stores C a float at a time (16-byte stores measured slower on the H100)
    assert counts.get("STG.E.128", 0) == 0 and counts.get("STG.E", 0) == 128, counts
    assert any(k.startswith("LDGSTS") and k.endswith(".128") for k in counts), "B's slabs should come through cp.async"
    if pretranspose:  # A arrives as (K, M): 16 bytes per cp.async too
        assert counts.get("LDGSTS.E", 0) == 0, counts
    else:
        assert counts.get("LDGSTS.E", 0) >= 16, "A's slabs should come through cp.async, a float each (transposed)"
    assert counts.get("LDL", 0) == 0 and counts.get("STL", 0) == 0, "the 16 x 8 accumulators must stay in registers"


@pytest.mark.parametrize("offset", [True, False])
def test_fma_gemm_built_by_nvcc_13_0(offset):
    """The H100 image compiles with NVRTC 13.0; nvcc 13.0 (of this image) unrolls as it does
    (NVRTC 13.0 itself: `bench/sgemm_variants.py --nvrtc`). With the K loop counted from 0, the
    pipeline's prefetch guard (`ko + 1 < 256`) is the loop's own exit test, and 13.0 unrolls
    the loop 8 times (8192 FFMA, 142 KB) at the 128-register cap; counted from
    `fma_stages - 1` (`fma_offset_loop`, the table's) the guard reads the counter itself and
    the loop stays one 16-wide slab: 1024 FFMA, 128 registers, no stack. (The 8 x 8 loop with
    A's tile as it arrives, K-minor: the table's prefetch form is another loop.)"""
    import subprocess
    import tempfile

    import tilelang_core
    from tilelang_cuda import compile as cuda_compile

    if not cuda_compile.toolchain_version("nvcc").startswith("nvcc 13.0."):
        pytest.skip(f"needs nvcc 13.0 (found {cuda_compile.toolchain_version('nvcc')})")
    _, _, func, target = _kernel(4096, 4096, 4096, False, False, bias=False, changes={"fma_offset_loop": offset, "fma_transpose_a": False,
                                                                             "fma_pretranspose": False})
    source = tilelang_core.compile(func, target=target, cache=False).get_kernel_source()
    binary = cuda_compile.compile_cuda(source, "sm_90a", {"compiler": "nvcc"})
    counts = _opcodes(cuda_compile.disassemble(binary))
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(binary)
        f.flush()
        usage = subprocess.run([cuda_compile._find_tool("cuobjdump"), "-res-usage", f.name], capture_output=True,
                               text=True, check=True).stdout
    registers, stack = (int(v) for v in re.search(r"REG:(\d+) STACK:(\d+)", usage).groups())
    if offset:
        assert counts["FFMA"] == 1024 and registers <= 128 and stack == 0, (counts["FFMA"], usage)
        assert counts.get("LDL", 0) == counts.get("STL", 0) == 0
    else:  # the failure the key avoids (a later nvcc may not need it: then this reproduction fails)
        # (with the thread's copy indices split into constant offsets, 13.0 no longer spills it)
        assert counts["FFMA"] >= 8 * 1024 and registers == 128, (counts["FFMA"], usage)


def _truncate(x):
    return (x.view("uint32") & np.uint32(0xFFFFE000)).view("float32")


@pytest.mark.parametrize("M, N, K, loads, tb", [(70, 52, 45, "cp.async", True), (130, 72, 64, "tma", True),
                                               (70, 52, 45, "cp.async", False), (70, 36, 44, "tma", False)])
def test_tf32_gemm_on_wgmma_in_the_emulator(M, N, K, loads, tb):
    """precision "high" with bias and relu at ragged sizes: B (N, K) on wgmma tf32 by
    descriptors, B (K, N) swapped (C^T = B^T A^T, B^T from registers; the table's transposed
    tile); the result is the float32 sum of products of truncated operands (within the
    float32 bound)."""
    op, problem, func, target = _kernel(M, N, K, False, tb, bias=True, fma=False)
    lowered = lower(func, target, CompileOptions())
    assert ("k8_f32_tf32" if tb else "k8_rs_f32_tf32") in lowered.script()
    assert "mma_m16n8k8" not in lowered.script()
    tma = lowered.attrs is not None and "cuda.tensor_maps" in lowered.attrs
    assert tma is (loads == "tma")  # TMA needs 16-byte aligned rows (K % 4 == 0)
    rng = np.random.default_rng()
    a = rng.standard_normal((M, K)).astype("float32")
    b = rng.standard_normal((N, K) if tb else (K, N)).astype("float32")
    bias = rng.standard_normal(N).astype("float32")
    c = np.full((1, M, N), np.nan, "float32")
    (run_tma_kernel if tma else run_wgmma_kernel)(lowered, a[None], b[None], bias, c)
    at, bt = _truncate(a), _truncate(b)
    ref = op.reference(at, bt, trans_b=tb, bias=bias, activation="relu")
    magnitude = op.reference(np.abs(at), np.abs(bt), trans_b=tb, bias=np.abs(bias))
    assert not np.isnan(c).any(), "elements never written"
    assert (np.abs(c[0] - ref) <= 2 * (K + 2) * 2.0 ** -24 * magnitude).all()


@pytest.mark.parametrize("changes, message", [
    ({"fma_thread_N": 6, "fma_prefetch": False}, r"thread tile 8 x 6 must be multiples of 4 .*\(fma_thread_M, fma_thread_N\)"),
    ({"fma_prefetch_thread_N": 6}, r"thread tile 16 x 6 must be .*\(fma_prefetch_thread_M, fma_prefetch_thread_N\)"),
    ({"fma_lanes_n": 3}, "fma_lanes_n=3 must be a power of two")])
def test_fma_gemm_config_errors_name_the_key(changes, message):
    from tilelang_core.ops.launch import OpError

    with pytest.raises(OpError, match=message):
        _kernel(256, 256, 64, False, False, bias=False, changes=changes)

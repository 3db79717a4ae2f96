"""Every operator compiles for cuda/sm_90a (NVRTC) and hip/gfx942 (clang) at its example
problem, with the config the target's table picks, no GPU needed (evidence level "compile");
the memory-bound elementwise kernels move 16 bytes per access there; a backend's
`tilelang_op_config` changes the config an operator runs with, end to end.
"""
from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest

from tilelang_core import ops
from tilelang_core.ops.launch import kernel_for
from tilelang_core.plugin import get_plugin_manager

ELF_MAGIC = b"\x7fELF"
TARGETS = ("cuda/sm_90a", "hip/gfx942")
# the memory-bound operators: 16-byte kernels on both targets
VECTOR_OPS = ("gelu", "silu", "bias_gelu", "swiglu", "rope", "softmax", "log_softmax", "layer_norm", "rms_norm",
              "add_rms_norm", "cross_entropy", "quantize_per_token", "sum", "mean", "max", "min", "cumsum",
              "dequantize_gemv")


def _target(spec: str):
    manager = get_plugin_manager()
    kind = spec.split("/")[0]
    if kind not in manager.registry.kinds:
        pytest.skip(f"backend of {kind} not installed")
    return manager.parse_target(spec)


def _problem(op, target) -> dict:
    problem = dict(op.example)
    qdtype = problem.get("qdtype")
    if qdtype and not target.capabilities.supports_dtype(qdtype):
        problem["qdtype"] = qdtype + "uz"  # the fnuz form AMD's fp8 units use
    return problem


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory, monkeypatch):
    """Each session compiles into its own cache, so the toolchain runs every time."""
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.mark.parametrize("spec", TARGETS)
@pytest.mark.parametrize("name", sorted(ops.operators()))
def test_operator_compiles(name, spec):
    target = _target(spec)
    op = ops.get(name)
    kernel, config, source = kernel_for(op, target, _problem(op, target))
    binaries = kernel.binary if kernel.meta.launches else (kernel.binary,)
    assert all(b[:4] == ELF_MAGIC for b in binaries), f"{name} on {spec}: not a device binary"
    assert source.startswith("table[") and config["kernel"] in op.kernels
    assert kernel.meta.shared_memory <= target.capabilities.shared_memory_optin
    text = kernel.get_kernel_source()
    if name in VECTOR_OPS:
        assert config["kernel"] == "vector"
    if config["kernel"] == "vector":  # 16-byte loads (and stores), one pass over memory
        hip16 = "(*(tl_bits32x4*)" in text or "(*(tl_float32x4*)" in text
        assert ("(*(uint4*)" in text) if spec.startswith("cuda") else hip16, text


# The hottest memory-bound operators at bench/ops.py's sizes on sm_90a: every access of the
# tensors they stream is a vector of 8 or 16 bytes (no scalar path left but the labelled
# exceptions), and the grid is many times the H100's 132 SMs.
_ROWS = {"M": 16384, "N": 8192, "dtype": "float16"}
HOT = {
    "softmax": ({**_ROWS, "log": False}, "XY"),
    "rms_norm": ({**_ROWS, "kind": "rms", "eps": 1e-6, "residual": False}, "XWY"),
    "add_rms_norm": ({**_ROWS, "kind": "rms", "eps": 1e-6, "residual": True}, "XRWYS"),
    "layer_norm": ({**_ROWS, "kind": "layer", "eps": 1e-5, "residual": False}, "XWBY"),
    "sum": ({**_ROWS, "kind": "sum"}, "X"),
    "cumsum": ({"M": 4096, "N": 8192, "dtype": "float32", "reverse": False}, "XY"),
    "quantize_per_token": ({**_ROWS, "qdtype": "float8_e4m3fn"}, "XQ"),
    "cross_entropy": ({"M": 8192, "N": 16384, "dtype": "float16", "ignore_index": -100}, "X"),  # + the label's logit
    "rope": ({"rows": 8 * 2048 * 32, "dim": 128, "seq": 2048, "heads": 32, "dtype": "float16"}, "XY"),
    "dequantize_gemv": ({"M": 1, "N": 16384, "K": 8192, "dtype": "float16", "bits": 4, "group": 128,
                         "scale_dtype": "float16"}, "WX"),
}


@pytest.mark.parametrize("name", sorted(HOT))
def test_memory_bound_kernels_move_vectors_on_hopper(name):
    import re

    target = _target("cuda/sm_90a")
    problem, streamed = HOT[name]
    kernel, config, _ = kernel_for(ops.get(name), target, problem)
    text = kernel.get_kernel_source()
    assert config["kernel"] == "vector"
    for buf in streamed:
        every = len(re.findall(rf"\b{buf}\[", text))
        vector = len(re.findall(rf"\(\*\(uint[24]\*\)\(&{buf}\[", text))
        scalar = every - vector - (1 if (name, buf) == ("cross_entropy", "X") else 0)
        assert vector >= 1 and scalar == 0, f"{name}: {buf} has {scalar} scalar accesses of {every}\n{text}"
    assert kernel.meta.grid[0] * kernel.meta.grid[1] >= 8 * target.capabilities.processor_count


def test_gemm_and_attention_use_the_matrix_units_on_hopper():
    target = _target("cuda/sm_90a")
    for name in ("gemm", "flash_attention"):
        op = ops.get(name)
        kernel, _, source = kernel_for(op, target, op.example)
        assert source == "table[wgmma]" and "wgmma" in kernel.get_kernel_source()


def test_gemm_class_operators_use_wgmma_and_tma_on_hopper():
    """grouped_gemm, batched_gemm and conv2d (stride 1) at their example problems on sm_90a:
    the gemm's tile (128 x 256 x 64, 8 consumer warps; conv2d 128 x 128 x 64) on wgmma, operands loaded by TMA
    from a warp-specialized loading warpgroup; grouped_gemm's A tile starts at the row the
    tile table gives and its epilogue keeps the group's row guard; conv2d's GEMM is the
    second of its launches (layout pass with the weight reorder, then the GEMM). Each GEMM runs
    as persistent blocks, one per SM, walking the tiles: batched_gemm on the gemm's row (its C
    staged in chunks and TMA-stored), grouped_gemm over an exact tile table (a constant K trip
    count)."""
    import re

    target = _target("cuda/sm_90a")
    wgmma = {"grouped_gemm": ("m64n256k16", 128), "batched_gemm": ("m64n256k16", 128), "conv2d": ("m64n128k16", 128)}
    for name, (shape, block_m) in wgmma.items():
        op = ops.get(name)
        kernel, config, source = kernel_for(op, target, op.example)
        text = kernel.get_kernel_source()
        assert source == "table[wgmma]" and (config["block_M"], config["block_K"]) == (block_m, 64), (name, config)
        gemm_part = text.split("main_launch1")[-1] if name == "conv2d" else text
        assert f"tl::wgmma_{shape}_f32_f16" in gemm_part, f"{name}: no wgmma {shape}\n{text}"
        assert "tl::tma_load(" in gemm_part and "setmaxnreg_dec" in gemm_part, f"{name}: no TMA loading warp\n{text}"
        assert "cp_async" not in gemm_part, name
        if name == "grouped_gemm":
            assert re.search(r"tl::tma_load\(&tl_tensor_map_0, [^;]*, first\);", text), text
            assert re.search(r"if \(first \+ .* < end\)", text), "the row guard of the group must stay"
        if name == "conv2d":
            assert kernel.meta.launches and len(kernel.meta.launches) == 2
            # the epilogue finds each row's output pixel once (not per element): no division by
            # the padded grid (58 x 58) where Y is stored; 5768 SASS instructions before, ~860 now
            stores = [line for line in gemm_part.splitlines() if re.search(r"\bY\[", line)]
            assert stores and not any(re.search(r"[/%] (58|3364)\b", line) for line in stores), stores
            assert sum(_sass_ops(kernel.binary[1]).values()) < 2000
            # the layout launch moves 16-byte pieces (8 channels x 8 columns a thread, transposed
            # in registers): 160 SASS instructions, 1144 through the shared tile before
            layout = text.split("main_launch1")[0]
            assert re.search(r"\(\*\(uint4\*\)\(&V\[.*\(\*\(uint4\*\)\(&X\[", layout), layout
            assert re.search(r"\(\*\(uint4\*\)\(&Xp\[.*\(\*\(uint4\*\)\(&P\[", layout), layout
            counts = _sass_ops(kernel.binary[0])
            assert sum(counts.values()) < 400 and not counts.get("LDL") and not counts.get("STL"), counts
        processors = target.capabilities.processor_count
        assert re.search(rf"for \(int32_t wave = 0; wave < \(\d+ - bx\) / {processors};", gemm_part), \
            f"{name}: not persistent\n{text}"
        if name == "batched_gemm":
            assert config["epilogue"] == "registers" and "tl::tma_store(" in text, text
        if name == "grouped_gemm":
            assert config["tile_table"] == "exact" and re.search(r"steps = 64;|ko < 64", text), text


def _sass_ops(binary) -> dict[str, int]:
    import re

    from tilelang_cuda.compile import disassemble

    counts: dict[str, int] = {}
    for line in disassemble(binary).splitlines():
        match = re.match(r"\s+/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]+)", line)
        if match:
            counts[match.group(2)] = counts.get(match.group(2), 0) + 1
    return counts


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_softmax_is_lean_on_hopper(causal):
    """At the bench's size the kernel has TileLang's example's instruction mix: both products
    on HGMMA, exp2 as one MUFU each (fast math: no denormal fix-up compares), the scale
    folded into one FFMA per score, no local memory. In the overlapped form (`lower_tma`) the
    softmax is written twice: the peeled first iteration and the loop's."""
    target = _target("cuda/sm_90a")
    op = ops.get("flash_attention")
    kernel, config, _ = kernel_for(op, target, {**op.example, "causal": causal})
    assert config["fast_math"] is True
    counts = _sass_ops(kernel.binary)
    scores = config["block_M"] * config["block_N"] // 256  # per thread of the two consumer warpgroups
    copies = 2 if "tl::named_barrier_sync" in kernel.get_kernel_source() else 1
    assert counts.get("HGMMA", 0) >= 16 and counts.get("LDL", 0) == counts.get("STL", 0) == 0, counts
    # without fast math: 72 FSETP (exp2's denormal fix-ups) and 132 MUFU a copy; 2 are the epilogue's l > 0
    assert counts.get("FSETP", 0) <= 4 and counts["MUFU"] <= copies * (scores + 4), counts
    assert counts.get("FFMA", 0) >= copies * scores, counts
    # a causal problem takes the table's causal_stages (3 against 2): a third stage of K and V tiles
    assert (config["stages"], config["causal_stages"]) == (2, 3)
    tile = config["block_N"] * op.example["dim"] * 2  # one fp16 K or V tile
    assert (kernel.meta.shared_memory >= 3 * 2 * tile) == causal, (kernel.meta.shared_memory, config)


# -- a vendor's config through tilelang_op_config, end to end ------------------------------


def _vendor_backend(calls: list) -> types.ModuleType:
    """A backend of kind "vendorcpu": the CPU backend's targets and hooks under another name,
    plus its own `tilelang_op_config` (what a vendor package ships)."""
    import tilelang_cpu.plugin as cpu
    import tilelang_cpu.target as cpu_target

    from tilelang_core.plugin import TargetKind, hookimpl

    mod = types.ModuleType(__name__)  # importable: the cache key fingerprints its package
    base = cpu_target.cpu_kind()

    @hookimpl
    def tilelang_register_targets(registry):
        archs = {arch: dataclasses.replace(caps, kind="vendorcpu") for arch, caps in base.archs.items()}
        registry.add_kind(TargetKind("vendorcpu", archs, base.default_arch))

    @hookimpl
    def tilelang_op_config(target, op, problem, config):
        calls.append((op, dict(config)))
        if op == "softmax":
            return {"block_M": 3}
        if op == "rms_norm":
            return {"tile_size": 3}  # not a key of the operator: refused, naming the valid ones
        return None

    for name in ("tilelang_codegen", "tilelang_compile", "tilelang_runtime", "tilelang_cache_key",
                 "tilelang_lower_tile_op", "tilelang_pipeline", "tilelang_infer_layout"):
        if hasattr(cpu, name):
            setattr(mod, name, getattr(cpu, name))
    mod.tilelang_register_targets = tilelang_register_targets
    mod.tilelang_op_config = tilelang_op_config
    return mod


def test_backend_config_reaches_the_kernel(fresh_manager):
    from tilelang_core.ops.launch import explain
    from tilelang_core.ops.registry import OpConfigError
    from tilelang_core.plugin.manager import BackendInfo

    calls: list = []
    manager = get_plugin_manager()
    info = BackendInfo("vendorcpu", "tilelang-vendorcpu", "1.0", "vendorcpu")
    manager.backends["vendorcpu"] = info
    manager.register_plugin(info, _vendor_backend(calls))
    assert not info.broken, info.error
    target = str(manager.parse_target("vendorcpu"))
    x = np.random.default_rng().standard_normal((7, 50)).astype("float32")
    y = ops.softmax(x, target=target)
    np.testing.assert_allclose(y, ops.get("softmax").reference(x), atol=1e-6)
    assert calls[0][0] == "softmax" and calls[0][1]["block_M"] == 8  # it saw the table's config
    row = [r for r in explain() if r["op"] == "softmax" and r["target"] == target][0]
    assert row["config"]["block_M"] == 3 and row["source"] == "table[block-serial]+backend"
    with pytest.raises(OpConfigError, match=r"unknown config keys \['tile_size'\]; valid keys: .*block_M"):
        ops.rms_norm(x, np.ones(50, "float32"), target=target)


# -- float32 precision: FMA loops for "highest", the TF32 units for "high" ---------------------


@pytest.mark.parametrize("name, call, wgmma", [
    ("gemm", lambda a, p, t: ops.gemm(a, a, precision=p, target=t), True),
    ("gemm", lambda a, p, t: ops.gemm(a, a, trans_a=True, trans_b=True, bias=a[0], activation="relu", precision=p,
                                      target=t), False),
    ("gemm", lambda a, p, t: ops.gemm(a, a, trans_b=True, precision=p, target=t), True),
    ("batched_gemm", lambda a, p, t: ops.batched_gemm(a[None], a[None], precision=p, target=t), True),
    ("grouped_gemm", lambda a, p, t: ops.grouped_gemm(a, np.stack([a, a]), [40, 56], precision=p, target=t), True),
    ("conv2d", lambda a, p, t: ops.conv2d(a.reshape(2, 3, 32, 48), a.reshape(-1)[:135].reshape(5, 3, 3, 3), padding=1,
                                          precision=p, target=t), True),
])
def test_float32_precision_picks_the_multiply_on_hopper(name, call, wgmma):
    """sm_90a runs float32 T.gemm on the TF32 units: wgmma tf32 where A is (M, K): B (N, K)
    (gemm with trans_b, conv2d's im2col tile and weights) by descriptors, B (K, N) (plain
    gemm, batched and grouped gemm) swapped, C^T = B^T A^T with B^T from registers; else
    (A as (K, M)) mma.sync (operands rounded by cvt.rna); "highest" multiplies with FMA
    loops (no matrix instruction, no TF32 in the source)."""
    from tilelang_core.ops.launch import capture

    target = _target("cuda/sm_90a")
    a = np.zeros((96, 96), "float32")
    for precision, tf32 in (("high", True), ("medium", True), ("highest", False)):
        recorded = capture(call, a, precision, str(target))
        assert recorded.op.name == name and recorded.problem.get("fma", False) is not tf32
        kernel, config, _ = kernel_for(recorded.op, target, recorded.problem)
        text = kernel.get_kernel_source()
        on_wgmma = "_f32_tf32(" in text and "mma_m16n8k8" not in text
        on_mma = "mma_m16n8k8_tf32" in text and "tl::wgmma_" not in text
        assert (on_wgmma if wgmma else on_mma) is tf32, (name, precision)
        assert "cvt.rna.tf32" not in text and ("tf32" in text) is tf32, (name, precision)
        if not tf32:  # each thread sums its products in registers, one multiply-add at a time
            assert "wgmma" not in text and ("acc[" in text or "C_f_reg[" in text) and "] * " in text, text


def test_float16_gemm_ignores_the_precision_but_checks_it():
    target = _target("cuda/sm_90a")
    from tilelang_core.ops.launch import capture

    a = np.zeros((64, 64), "float16")
    assert "fma" not in capture(ops.gemm, a, a, precision="highest", target=str(target)).problem
    with pytest.raises(ops.OpError, match=r"precision='fast' is not one of \('highest', 'high', 'medium'\)"):
        ops.gemm(a, a, precision="fast", target=str(target))


def test_varlen_and_decode_pipeline_on_hopper():
    """At the bench's sizes: varlen's main loop takes TMA tiles under warp specialization
    (its keys and values padded first, 16 bytes at a time); decode's KV chunks are
    double-buffered cp.async tiles over a grid of at least four blocks per SM."""
    target = _target("cuda/sm_90a")
    varlen = ops.get("flash_attention_varlen")
    kernel, _, source = kernel_for(varlen, target, varlen.example)
    text = kernel.get_kernel_source()
    assert source == "table[wgmma]" and len(kernel.meta.launches) == 2
    assert text.count("tl::tma_load(") >= 2 and "setmaxnreg" in text and "wgmma_m64n" in text, text
    assert "(*(uint4*)(&K_pad[" in text and "(*(uint4*)(&V_pad[" in text
    decode = ops.get("attention_decode")
    kernel, _, _ = kernel_for(decode, target, decode.example)
    split, combine = kernel.meta.launches
    text = kernel.get_kernel_source()
    assert split.grid[0] * split.grid[1] * split.grid[2] >= 4 * target.capabilities.processor_count
    assert combine.grid[:2] == (decode.example["heads"], decode.example["batch"])
    assert "cp_async_wait_all" not in text and "tl::cp_async_wait<" in text, text


def test_decode_keeps_the_scores_in_registers_on_hopper():
    """At the bench's problem: one warp per block, so the row max and sum of the score tile
    are warp shuffles (no shared score buffer, one barrier per key tile: with 4 warps the
    tile's keys were spread over warps and every reduction went through shared memory), and
    four blocks fit in an SM's shared memory (H100: 228 KB an SM, 1 KB kept per block)."""
    target = _target("cuda/sm_90a")
    decode = ops.get("attention_decode")
    kernel, config, _ = kernel_for(decode, target, decode.example)
    split = kernel.meta.launches[0]
    assert split.block[0] == target.capabilities.warp_size and config["fast_math"]
    assert 4 * (split.shared_memory + 1024) <= 228 * 1024, split.shared_memory
    text = kernel.get_kernel_source()
    start = text.index("  for (int32_t k = 0;")
    main_loop = text[start:text.index("\n  }\n", start)]  # to the loop's closing brace
    assert "__shfl_xor_sync" in main_loop and "float* s = " not in text, main_loop
    assert main_loop.count("__syncthreads()") == 1, main_loop

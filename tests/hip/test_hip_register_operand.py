"""`T.gemm(A_fragment, B_shared, C_fragment)` on MFMA: the "rs" form, A read from registers.

- where layout inference places the fragments (registers or LDS), and what the generated
  source reads;
- numbers: kernels run on the host emulation of a HIP device (hip_emulator.py: the generated
  source, threads of a block as std::threads, MFMA emulated after AMD's documented register
  layout), random inputs, outputs poisoned with NaN first, every element against a float64
  reference; FlashAttention forward among them;
- machine code (clang for gfx90a/gfx942, `llvm-objdump`): FlashAttention's main loop runs both
  gemms on MFMA and never stores P to LDS.
"""
from __future__ import annotations

import os
import re
from collections import Counter

import numpy as np
import pytest

import tilelang_core as tilelang
from hip_emulator import emulate, host_compiler
from tilelang_core import language as T
from tilelang_hip.compile import disassemble, find_toolchain


def needs_toolchain(arch: str) -> None:
    if find_toolchain(arch) is None:
        pytest.skip(f"no HIP compiler for {arch} here: run scripts/install_hip_toolchain.sh")


@pytest.fixture(scope="module", autouse=True)
def module_cache(tmp_path_factory):
    """A fresh kernel cache for this module, restored afterwards."""
    old = os.environ.get("TILELANG_CACHE_DIR")
    os.environ["TILELANG_CACHE_DIR"] = str(tmp_path_factory.mktemp("hip-rs-cache"))
    yield
    if old is None:
        os.environ.pop("TILELANG_CACHE_DIR", None)
    else:
        os.environ["TILELANG_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def emu_dir(tmp_path_factory):
    if host_compiler() is None:
        pytest.skip("no host C++20 compiler for the HIP emulation")
    return tmp_path_factory.mktemp("hip-rs-emu")


def np_dtype(dtype):
    if dtype in ("bfloat16", "float8_e4m3fnuz", "float8_e5m2fnuz"):
        import ml_dtypes

        return getattr(ml_dtypes, dtype)
    return np.dtype(dtype)


class Built:
    """A kernel lowered and rendered for a HIP arch without the device compile (the tests that
    need machine code compile): what `hip_emulator.emulate` reads (`meta`,
    `get_kernel_source()`) and where inference placed each fragment (`placements`)."""

    def __init__(self, func, arch: str) -> None:
        from tvm import tirx as tir

        from tilelang_core.jit.api import lower
        from tilelang_core.jit.options import CompileOptions
        from tilelang_core.plugin import get_plugin_manager
        from tilelang_core.runtime.base import KernelMeta, ParamSpec
        from tilelang_hip.codegen import HIPCodegen

        target = get_plugin_manager().parse_target(f"hip/{arch}")
        facts: dict = {}
        source = HIPCodegen(target, CompileOptions()).render(lower(func, target, CompileOptions(), facts))
        params = tuple(ParamSpec(name=p.name, kind="tensor", dtype=str(p.dtype), shape=tuple(int(d) for d in p.shape))
                       for p in func.params if tir.is_buffer_var(p))
        assert len(params) == len(func.params), "these tests pass tensors only"
        self.meta = KernelMeta(target=f"hip/{arch}", entry=source.entry, params=params, grid=tuple(source.grid),
                               block=tuple(source.block), shared_memory=int(source.shared_memory))
        self.source = source.source
        self.placements = {d.buffer.name: "registers" if d.in_registers and d.layout is not None else "shared"
                           for d in facts["fragment_layouts"].decisions()}

    def get_kernel_source(self) -> str:
        return self.source


# ---------------------------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------------------------


def fragment_a_gemm(m, n, k, bm, bn, dtype, trans_b, threads=128, policy=T.GemmWarpPolicy.FullRow):
    """C = (2 * A) @ B (B transposed when `trans_b`), with 2 * A computed into a fragment that
    feeds T.gemm as its A operand."""
    b_shape = (n, k) if trans_b else (k, n)
    b_tile = (bn, k) if trans_b else (k, bn)

    @T.prim_func
    def main(A: T.Tensor((m, k), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=threads) as (bx, by):
            B_s = T.alloc_shared(b_tile, dtype)
            A_f = T.alloc_fragment((bm, k), dtype)
            C_f = T.alloc_fragment((bm, bn), "float32")
            if trans_b:
                T.copy(B[bx * bn, 0], B_s)
            else:
                T.copy(B[0, bx * bn], B_s)
            for i, j in T.Parallel(bm, k):
                A_f[i, j] = A[by * bm + i, j] * T.cast(2, dtype)
            T.gemm(A_f, B_s, C_f, transpose_B=trans_b, clear_accum=True, policy=policy)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def chained_gemms(m, n, k, dtype, policy):
    """C = cast(max(A @ B1 * 0.125, 0)) @ B2: the first gemm's accumulator, scaled, clamped and
    cast, is the second gemm's A operand (FlashAttention's shape of chain)."""

    @T.prim_func
    def main(A: T.Tensor((m, k), dtype), B1: T.Tensor((k, n), dtype), B2: T.Tensor((n, n), dtype),
             C: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((m, k), dtype)
            B1_s = T.alloc_shared((k, n), dtype)
            B2_s = T.alloc_shared((n, n), dtype)
            S = T.alloc_fragment((m, n), "float32")
            P = T.alloc_fragment((m, n), dtype)
            acc = T.alloc_fragment((m, n), "float32")
            T.copy(A, A_s)
            T.copy(B1, B1_s)
            T.copy(B2, B2_s)
            T.gemm(A_s, B1_s, S, clear_accum=True, policy=policy)
            for i, j in T.Parallel(m, n):
                S[i, j] = T.max(S[i, j] * 0.125, 0)
            T.copy(S, P)
            T.gemm(P, B2_s, acc, clear_accum=True, policy=policy)
            T.copy(acc, C)

    return main


# ---------------------------------------------------------------------------------------------
# Layouts and source
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_b", [False, True])
def test_fragment_a_is_read_from_registers(dtype, trans_b):
    kernel = Built(fragment_a_gemm(64, 96, 64, 32, 48, dtype, trans_b), "gfx942")
    text = kernel.get_kernel_source()
    assert kernel.placements == {"A_f": "registers", "C_f": "registers"}
    wrapper = {"float16": "tl_mfma_16x16x16_f16", "bfloat16": "tl_mfma_16x16x16_bf16"}[dtype]
    # the MFMA takes its second operand straight from A_f's registers; only B is loaded
    assert re.search(rf"{wrapper}\(&C_f_reg\[[^\]]+\], &B_frag\[[^\]]+\], &A_f_reg\[", text)
    assert "A_frag" not in text and "tl_dyn_smem" in text  # B_s only
    assert kernel.meta.shared_memory == 48 * 64 * np.dtype(np.float16).itemsize


def test_flash_attention_keeps_p_in_registers():
    from tilelang_conformance.cases.attention import flashattn

    kernel = Built(flashattn(1, 2, 128, 64, False, 64, 64, 2), "gfx942")
    where = kernel.placements
    assert set(where.values()) == {"registers"}, where
    text = kernel.get_kernel_source()
    assert re.search(r"tl_mfma_16x16x16_f16\(&acc_o_reg\[[^\]]+\], &B_frag_?\d*\[[^\]]+\], &acc_s_cast_reg\[", text)
    assert re.search(r"acc_s_cast_reg\[\w+\] = tl_from_float<half_t>\(acc_s_reg\[\w+\]\);", text)
    # the LDS holds at most the Q, K, V and output tiles (the output may reuse Q's space)
    assert kernel.meta.shared_memory <= 4 * 64 * 64 * 2


def test_a_cast_of_an_accumulator_in_another_wave_split_goes_through_lds():
    """With the Square policy the first gemm splits its columns over the two waves; the second
    gemm's waves each need whole rows of P. P goes to LDS, and both gemms still run on MFMA
    with S in registers (the second reads P's LDS copy)."""
    kernel = Built(chained_gemms(64, 64, 32, "float16", T.GemmWarpPolicy.Square), "gfx942")
    assert kernel.placements == {"S": "registers", "P": "shared", "acc": "registers"}
    text = kernel.get_kernel_source()
    assert text.count("tl_mfma_16x16x16_f16(") == 2


# ---------------------------------------------------------------------------------------------
# Numbers, on the host emulation
# ---------------------------------------------------------------------------------------------


RS_RUNS = [  # (arch, dtype, trans_b, threads, policy). FullCol over 3 waves replicates A_f x3;
    # float8 runs the 16x16x32 MFMA, whose register operand permutes K (layout.register_k).
    # float16 with B not transposed: the chained gemms and FlashAttention's P @ V below.
    ("gfx90a", "bfloat16", True, 192, T.GemmWarpPolicy.FullCol),
    ("gfx942", "float8_e4m3fnuz", False, 128, T.GemmWarpPolicy.FullRow),
]


@pytest.mark.parametrize("arch,dtype,trans_b,threads,policy", RS_RUNS, ids=lambda v: str(v))
def test_emulated_fragment_a_gemm(arch, dtype, trans_b, threads, policy, emu_dir):
    m, n, k = 64, 96, 64
    rng = np.random.default_rng(20)
    a = rng.standard_normal((m, k)).astype(np_dtype(dtype))
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np_dtype(dtype))
    c = np.full((m, n), np.nan, np.float32)
    kernel = Built(fragment_a_gemm(m, n, k, 32, 48, dtype, trans_b, threads, policy), arch)
    assert kernel.placements["A_f"] == "registers"
    emulate(kernel, emu_dir)(a, b, c)
    b64 = b.astype(np.float64)
    ref = (2 * a.astype(np.float64)) @ (b64.T if trans_b else b64)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def test_emulated_chained_gemms(emu_dir):
    """Both gemms stack their waves along M: P = cast(S) is register to register. Integer
    inputs keep every intermediate exact (S * 0.125 in float16 included), so the result equals
    the float64 reference exactly. (The Square split, P through LDS, is conformance's
    layout.rs_gemm: tests/hip/emulate_conformance.py runs it.)"""
    m, n, k = 64, 64, 32
    rng = np.random.default_rng(21)
    a, b1, b2 = (rng.integers(-4, 5, shape).astype(np.float16) for shape in ((m, k), (k, n), (n, n)))
    c = np.full((m, n), np.nan, np.float32)
    kernel = Built(chained_gemms(m, n, k, "float16", T.GemmWarpPolicy.FullRow), "gfx942")
    assert kernel.placements == {"S": "registers", "P": "registers", "acc": "registers"}
    emulate(kernel, emu_dir)(a, b1, b2, c)
    p = np.maximum((a.astype(np.float64) @ b1) * 0.125, 0)
    np.testing.assert_array_equal(c, p @ b2.astype(np.float64))


def test_emulated_transposed_fragment_a_is_read_from_its_lds_copy(emu_dir):
    """A transposed fragment A is no register operand: inference moves it to LDS and the gemm
    reads that copy on MFMA."""
    m, n, k = 64, 32, 64

    @T.prim_func
    def main(A: T.Tensor((k, m), "float16"), B: T.Tensor((k, n), "float16"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=128) as bx:
            B_s = T.alloc_shared((k, n), "float16")
            A_f = T.alloc_fragment((k, m), "float16")
            C_f = T.alloc_fragment((m, n), "float32")
            T.copy(B, B_s)
            T.copy(A, A_f)
            T.gemm(A_f, B_s, C_f, transpose_A=True, clear_accum=True)
            T.copy(C_f, C)

    kernel = Built(main, "gfx942")
    assert kernel.placements == {"A_f": "shared", "C_f": "registers"}
    assert "tl_mfma_16x16x16_f16(&C_f_reg[" in kernel.source
    rng = np.random.default_rng(23)
    a, b = rng.standard_normal((k, m)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    emulate(kernel, emu_dir)(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64).T @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def attention_reference(q, k, v, causal):
    q, k, v = (x.astype(np.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if causal:
        seq = scores.shape[-1]
        scores = np.where(np.tril(np.ones((seq, seq), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3)


@pytest.mark.parametrize("arch,causal", [("gfx942", False), ("gfx90a", True)])
def test_emulated_flash_attention(arch, causal, emu_dir):
    """TileLang's FlashAttention forward (conformance's `flashattn`), 2 heads, 128 tokens, dim
    64, 64 x 64 tiles: P = softmax(Q K^T) stays in registers and feeds P V. P is rounded to
    float16 before P V, as in TileLang: the reference is float64 throughout."""
    from tilelang_conformance.cases.attention import flashattn

    batch, seq, heads, dim = 1, 128, 2, 64
    rng = np.random.default_rng(22)
    q, k, v = (rng.uniform(-2, 2, (batch, seq, heads, dim)).astype(np.float16) for _ in range(3))
    out = np.full((batch, seq, heads, dim), np.nan, np.float16)
    kernel = Built(flashattn(batch, heads, seq, dim, causal, 64, 64, 1), arch)
    assert kernel.placements["acc_s_cast"] == "registers"
    emulate(kernel, emu_dir)(q, k, v, out)
    np.testing.assert_allclose(out.astype(np.float64), attention_reference(q, k, v, causal), rtol=1e-2, atol=2e-3)


# ---------------------------------------------------------------------------------------------
# Machine code
# ---------------------------------------------------------------------------------------------


def main_loop_ops(text: str) -> Counter:
    """Mnemonic counts inside the kernel's main loop: the innermost backward branch whose span
    holds every MFMA of the kernel (llvm-objdump text: `mnemonic ... // ADDRESS: ...`, branch
    targets as `<kernel+0xOFFSET>`)."""
    ins, base = [], 0
    for line in text.splitlines():
        head = re.match(r"([0-9a-f]+) <\w+>:", line)
        if head:
            base = int(head.group(1), 16)
        match = re.match(r"\s+([a-z_][a-z0-9_]*)\b.*?//\s*([0-9A-Fa-f]+):", line)
        if match:
            target = re.search(r"<\w+\+0x([0-9a-f]+)>", line)
            ins.append((int(match.group(2), 16), match.group(1), base + int(target.group(1), 16) if target else None))
    mfma = [at for at, op, _ in ins if op.startswith("v_mfma")]
    assert mfma, "no MFMA in the kernel"
    loops = [(to, at) for at, op, to in ins
             if op.startswith(("s_cbranch", "s_branch")) and to is not None and to <= min(mfma) and at >= max(mfma)]
    assert loops, "no loop holds the MFMAs"
    lo, hi = min(loops, key=lambda span: span[1] - span[0])
    return Counter(op for at, op, _ in ins if lo <= at <= hi)


def lds_read_bytes(op: str) -> int:
    """Bytes one lane reads with an LDS load: `ds_read_b64` 8, `ds_read2_b64` 16 (two of them),
    `ds_read_u16` 2, ..."""
    match = re.fullmatch(r"ds_read(2(?:st64)?)?_[bui](8|16|32|64|96|128)(?:_d16(?:_hi)?)?", op)
    assert match, f"an LDS read this test does not know: {op}"
    return int(match.group(2)) // 8 * (2 if match.group(1) else 1)


MFMA_F16 = {"gfx90a": "v_mfma_f32_16x16x16f16", "gfx942": "v_mfma_f32_16x16x16_f16"}


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a"])
def test_flash_attention_main_loop_has_no_lds_round_trip_for_p(arch):
    """Per k-step of the main loop: both gemms on MFMA (each: 4 k-steps x 2 x 4 tiles per
    wave), the only LDS stores the 16-byte vectors of the K and V tile copies (4 per thread
    each, and their zero-filled tails), no private (scratch) memory. Before the rs form, P went
    to LDS (`ds_write_b16`) and P V ran on scalar FMAs reading it back (`ds_read_u16`)."""
    from tilelang_conformance.cases.attention import flashattn

    needs_toolchain(arch)
    kernel = tilelang.compile(flashattn(1, 2, 256, 64, False, 64, 64, 2), target=f"hip/{arch}")
    text = disassemble(kernel.binary, arch)
    ops = main_loop_ops(text)
    assert ops[MFMA_F16[arch]] == 2 * 4 * 2 * 4, ops
    lds_stores = {op: count for op, count in ops.items() if op.startswith("ds_write")}
    assert set(lds_stores) == {"ds_write_b128"} and lds_stores["ds_write_b128"] <= 2 * 4 * 2, ops
    # LDS reads: each lane's MFMA fragments of Q (2 row tiles x 4 halves x 4 k-steps), K and V
    # (4 column tiles x 4 halves x 4 k-steps each), 2 bytes a half; none of P
    read_bytes = sum(count * lds_read_bytes(op) for op, count in ops.items() if op.startswith("ds_read"))
    assert read_bytes == (2 + 4 + 4) * 4 * 4 * 2, ops
    assert not any(op.startswith("scratch_") for op in re.findall(r"^\s+([a-z_0-9]+)", text, re.M))

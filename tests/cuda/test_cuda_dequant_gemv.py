"""TileLang's dequantizing GEMV on the CUDA backend (`dequant_programs.py`): an imported CUDA
helper with inline PTX (`T.import_source` + `T.call_extern` + `T.access_ptr`), `T.dp4a`, the
example's `T.thread_binding` indices and a warp allreduce. NVRTC compiles each variant for sm_80
and sm_90a and the SASS holds the instructions the kernel asks for; the variants without inline
PTX run in the NumPy emulator of lowered TIR against a float64 reference (the lop3 variant runs
on a GPU through the export set: `export_programs.py`)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tilelang_core
from tilelang_core.jit.api import lower
from tilelang_core.jit.options import CompileOptions
from tilelang_core.plugin import get_plugin_manager

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dequant_programs as dq  # noqa: E402
from tir_emulator import run_kernel  # noqa: E402

N, K = 64, 1024


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_lop3_decoder_is_imported_once_ahead_of_the_kernel_and_reaches_the_sass(arch):
    from tilelang_cuda.compile import disassemble

    kernel = tilelang_core.compile(dq.gemv(N, K, "float16", decode="lop3"), target=f"cuda/{arch}")
    source = kernel.get_kernel_source()
    assert source.count("__device__ void decode_u4x8_to_f16(") == 1
    assert source.index('#include "tl_cuda_common.h"') < source.index("decode_u4x8_to_f16(") \
        < source.index("main_kernel(")
    # the helper reads int8[4] as one uint and writes half[8] as uint[4]: both arrays aligned
    assert "__align__(16) int8_t B_quant_local[4];" in source
    assert "__align__(16) half_t B_dequantize_local[8];" in source
    assert "decode_u4x8_to_f16(&B_quant_local[0], &B_dequantize_local[0]);" in source
    sass = disassemble(kernel.binary)
    assert sass.count("LOP3.LUT") >= 4  # one lop3.b32 per half2 of the 8 outputs
    assert len(re.findall(r"SHFL\.BFLY", sass)) == 5  # the 32-lane allreduce


def test_dp4a_becomes_one_instruction_per_four_bytes():
    from tilelang_cuda.compile import disassemble

    kernel = tilelang_core.compile(dq.gemv(N, K, "int8", decode="tir"), target="cuda/sm_90a")
    assert "tl_dp4a(&A_local[" in kernel.get_kernel_source()
    sass = disassemble(kernel.binary)
    assert len(re.findall(r"IDP\.4A\.S8\.S8", sass)) == (K // 32) // 4  # 16 bytes per thread -> 4


@pytest.mark.parametrize("in_dtype", ["float16", "int8"])
def test_unpacked_in_tir_runs_in_the_emulator(in_dtype):
    target = get_plugin_manager().parse_target("cuda/sm_90a")
    lowered = lower(dq.gemv(N, K, in_dtype, decode="tir"), target, CompileOptions())
    rng = np.random.default_rng(11)
    if in_dtype == "int8":
        a = rng.integers(-128, 128, (1, K)).astype(np.int8)
        c = np.full((1, N), np.iinfo(np.int32).min, np.int32)
    else:
        a = rng.uniform(-1, 1, (1, K)).astype(np.float16)
        c = np.full((1, N), np.nan, np.float16)
    b = rng.integers(-128, 128, (N, K // 2)).astype(np.int8)
    run_kernel(lowered, a, b, c)
    ref = dq.reference(a, b, decode="tir")
    if in_dtype == "int8":
        np.testing.assert_array_equal(c, ref.astype(np.int32))
    else:
        np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-3, atol=2e-3 * np.abs(ref).max())


def test_reference_decodes_the_lop3_order():
    """The lop3 helper puts nibble i of a word at 2i and nibble i + 4 at 2i + 1."""
    word = np.array([[0x10, 0x32, 0x54, 0x76]], np.uint8).view(np.int8)  # nibbles 0..7 in order
    assert dq.unpack(word, "lop3").tolist() == [[0, 4, 1, 5, 2, 6, 3, 7]]
    assert dq.unpack(word, "tir").tolist() == [[0, 1, 2, 3, 4, 5, 6, 7]]

"""compile_cuda: NVRTC to cubin for sm_80/sm_89/sm_90a, the nvcc fallback, SASS through
cuobjdump, and compile errors that quote the generated line and say how to reproduce."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tilelang_core.runtime import CompileError
from tilelang_cuda import compile as cuda_compile
from tilelang_cuda.compile import compile_cuda, disassemble, include_digest, toolchain_version

ELF_MAGIC = b"\x7fELF"

BROKEN = """#include "tl_cuda_common.h"
extern "C" __global__ void broken(float* out) {
  float x = 1.0f
  out[threadIdx.x] = x;
}
"""


@pytest.fixture
def without_nvrtc(monkeypatch):
    """Pretend NVRTC did not load, as on a machine with only a toolkit."""
    monkeypatch.setattr(cuda_compile, "_nvrtc", lambda: None)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_nvrtc_compiles_mma_gemm_to_cubin_with_hmma(arch, smoke_source):
    cubin = compile_cuda(smoke_source, arch, {"name": "smoke"})
    assert cubin[:4] == ELF_MAGIC
    sass = disassemble(cubin)
    assert "HMMA" in sass, "mma.sync m16n8k16 should become HMMA"
    assert "LDSM" in sass, "ldmatrix should become LDSM"
    assert "LDGSTS" in sass, "cp.async should become LDGSTS"
    for entry in ("tl_smoke_axpby", "tl_smoke_gemm", "tl_smoke_fault"):
        assert f"Function : {entry}" in sass
    assert f"code for {arch}" in sass


def test_sass_is_for_the_requested_arch(smoke_source):
    sass80 = disassemble(compile_cuda(smoke_source, "sm_80"))
    sass90 = disassemble(compile_cuda(smoke_source, "sm_90a"))
    assert "code for sm_80" in sass80 and "code for sm_90a" in sass90


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90a"])
def test_every_header_helper_compiles(arch, headers_source):
    sass = disassemble(compile_cuda(headers_source, arch, {"name": "headers"}))
    assert "HMMA" in sass  # f16 and bf16 mma.sync
    assert "IMMA" in sass  # s8 mma.sync m16n8k32
    assert "ATOM" in sass or "RED" in sass


def test_fp8_types_are_available(headers_source):
    source = '#include "tl_cuda_common.h"\n#ifndef TL_HAS_FP8\n#error no fp8\n#endif\n' \
             'extern "C" __global__ void k(fp8_e4_t* p, fp8_e5_t* q) { p[0] = fp8_e4_t(static_cast<float>(q[0])); }\n'
    assert compile_cuda(source, "sm_90a")[:4] == ELF_MAGIC


def test_cccl_headers_are_found():
    source = '#include <cuda/std/cstdint>\n#include <cuda/std/limits>\n' \
             'extern "C" __global__ void k(int* out) { out[0] = cuda::std::numeric_limits<int>::max(); }\n'
    assert compile_cuda(source, "sm_80")[:4] == ELF_MAGIC


def test_defines_reach_the_compiler():
    source = '#ifndef TILE\n#error TILE is not defined\n#endif\n' \
             'extern "C" __global__ void k(int* out) { out[0] = TILE; }\n'
    assert compile_cuda(source, "sm_80", {"defines": {"TILE": 64}})[:4] == ELF_MAGIC
    with pytest.raises(CompileError, match="TILE is not defined"):
        compile_cuda(source, "sm_80")


TILELANG_NVCC_FLAGS = ["-O3", "-Wno-deprecated-declarations", "-U__CUDA_NO_HALF_OPERATORS__",
                       "--expt-relaxed-constexpr", "--expt-extended-lambda",
                       "--ptxas-options=-v,--register-usage-level=10", "-DNDEBUG"]


def test_nvcc_flags_of_tilelang_programs_reach_nvrtc_as_it_takes_them():
    """TileLang's examples pass nvcc flags (`compile_flags=`); NVRTC refuses -O3, -W... and the
    --expt-* relaxations and reads a comma list of ptxas options as one option."""
    assert cuda_compile.nvrtc_flags(TILELANG_NVCC_FLAGS) == [
        "-U__CUDA_NO_HALF_OPERATORS__", "--ptxas-options=-v", "--ptxas-options=--register-usage-level=10",
        "-DNDEBUG"]
    source = 'extern "C" __global__ void k(int* out) { out[0] = 1; }\n'
    assert compile_cuda(source, "sm_90a", {"compiler": "nvrtc", "flags": tuple(TILELANG_NVCC_FLAGS)})[:4] == ELF_MAGIC


def test_nvcc_compiles_the_same_kernel(nvcc_path, smoke_source):
    cubin = compile_cuda(smoke_source, "sm_90a", {"compiler": "nvcc", "name": "smoke"})
    assert cubin[:4] == ELF_MAGIC
    assert "HMMA" in disassemble(cubin)


def test_falls_back_to_nvcc_without_nvrtc(nvcc_path, without_nvrtc, smoke_source):
    assert toolchain_version().startswith("nvcc ")
    assert compile_cuda(smoke_source, "sm_80")[:4] == ELF_MAGIC
    with pytest.raises(CompileError, match="NVRTC is not available"):
        compile_cuda(smoke_source, "sm_80", {"compiler": "nvrtc"})


def test_no_toolchain_says_what_to_install(without_nvrtc, monkeypatch, smoke_source):
    monkeypatch.setattr(cuda_compile, "_find_tool", lambda name: None)
    assert toolchain_version() == "none"
    with pytest.raises(CompileError, match="pip install"):
        compile_cuda(smoke_source, "sm_90a")


def _compile_error(source: str, **options) -> str:
    with pytest.raises(CompileError) as info:
        compile_cuda(source, "sm_90a", {"name": "broken", **options})
    return str(info.value)


def test_syntax_error_quotes_the_line_and_gives_a_repro_command():
    message = _compile_error(BROKEN, line_map={4: ("my_kernel.py", 12)})
    assert "NVRTC" in message and "failed to compile broken.cu for sm_90a" in message
    assert 'expected a ";"' in message  # the toolchain's log
    assert ">     4 |   out[threadIdx.x] = x;" in message  # the blamed generated line
    assert "3 |   float x = 1.0f" in message  # with the line before it
    assert "(from my_kernel.py:12)" in message  # and the user's line, where known
    kept = Path(re.search(r"Generated source kept at: (\S+)", message).group(1))
    assert kept.read_text() == BROKEN
    assert "Reproduce with nvcc:" in message
    command = message.split("Reproduce with nvcc:\n", 1)[1].strip()
    assert "-cubin" in command and "arch=compute_90a,code=sm_90a" in command and str(kept) in command


def test_repro_command_reproduces_the_failure(nvcc_path):
    message = _compile_error(BROKEN)
    command = message.split("Reproduce with nvcc:\n", 1)[1].strip()
    done = subprocess.run(command, shell=True, capture_output=True, text=True)
    assert done.returncode != 0
    assert 'expected a ";"' in done.stdout + done.stderr


def test_nvcc_errors_have_the_same_shape(nvcc_path):
    message = _compile_error(BROKEN, compiler="nvcc")
    assert message.startswith("nvcc ")
    assert ">     4 |   out[threadIdx.x] = x;" in message
    assert "tilelang_cuda_" not in message.split("Generated source kept at")[0]  # no temp paths in the log
    assert "Reproduce with nvcc:" in message


def test_error_in_header_use_still_points_at_generated_line():
    source = '#include "tl_cuda_mma.h"\nextern "C" __global__ void k(float* d) {\n' \
             '  tl::mma_m16n8k16_f16_f32(d, d, d, d);\n}\n'
    message = _compile_error(source)
    assert ">     3 |   tl::mma_m16n8k16_f16_f32(d, d, d, d);" in message


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown CUDA compile option.*'fastmath'.*valid options: .*fast_math"):
        compile_cuda("", "sm_80", {"fastmath": True})


@pytest.mark.parametrize("arch", ["sm90a", "90", "compute_90a", "sm_90x"])
def test_malformed_arch_is_refused(arch):
    with pytest.raises(ValueError, match="is not of the form sm_XY"):
        compile_cuda("", arch)


def test_versions_for_cache_keys():
    assert re.fullmatch(r"nvrtc \d+\.\d+", toolchain_version())
    digest = include_digest()
    assert re.fullmatch(r"[0-9a-f]{16}", digest) and digest == include_digest()


def test_include_dirs_start_with_ours_and_find_cuda_headers():
    dirs = cuda_compile.include_dirs({"include_dirs": ["/extra"]})
    assert dirs[0] == str(cuda_compile.INCLUDE_DIR) and dirs[1] == "/extra"
    assert any((Path(d) / "cuda_fp16.h").is_file() for d in dirs[2:])
    assert (cuda_compile.INCLUDE_DIR / "tl_cuda_common.h").is_file()
    assert (cuda_compile.INCLUDE_DIR / "tl_cuda_mma.h").is_file()

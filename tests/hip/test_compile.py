"""HIP device compile: code objects for gfx90a and gfx942, MFMA in the machine code, errors.

These run without an AMD GPU. They need the toolchain that scripts/install_hip_toolchain.sh
installs (CI runs it first) and skip, with that reason, where it is absent.
"""
from __future__ import annotations

import concurrent.futures
import os
import re
import shlex
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tilelang_core.runtime import CompileError
from tilelang_hip import compile as hip_compile
from tilelang_hip.compile import HIPToolchainError, compile_hip, disassemble, find_toolchain

KERNELS = Path(__file__).parent / "kernels"
ARCHS = ("gfx90a", "gfx942")
EM_AMDGPU = 224
EF_AMDGPU_MACH = {"gfx90a": 0x3F, "gfx942": 0x4C}
# The 16x16x16 f16 MFMA as each arch's disassembler spells it.
MFMA_F16 = {"gfx90a": "v_mfma_f32_16x16x16f16", "gfx942": "v_mfma_f32_16x16x16_f16"}
MFMA_ALL = {
    "gfx90a": ["v_mfma_f32_16x16x16f16", "v_mfma_f32_32x32x8f16", "v_mfma_f32_16x16x16bf16_1k",
               "v_mfma_f32_32x32x8bf16_1k", "v_mfma_i32_16x16x16i8"],
    "gfx942": ["v_mfma_f32_16x16x16_f16", "v_mfma_f32_32x32x8_f16", "v_mfma_f32_16x16x16_bf16",
               "v_mfma_f32_32x32x8_bf16", "v_mfma_i32_16x16x32_i8"],
}


def needs_toolchain(arch: str) -> None:
    if find_toolchain(arch) is None:
        pytest.skip(f"no HIP compiler for {arch} here: run scripts/install_hip_toolchain.sh")


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    """A fresh cache per test, so the gfx942 device-library overlay is built, not found; and
    temporary directories (kept ones of failed compiles too) under the test's own."""
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)


def elf_mach(code: bytes) -> tuple[int, int]:
    """(e_machine, EF_AMDGPU_MACH) of a 64-bit little-endian ELF."""
    assert code[:4] == b"\x7fELF", code[:16]
    (machine,) = struct.unpack_from("<H", code, 18)
    (flags,) = struct.unpack_from("<I", code, 48)
    return machine, flags & 0xFF


@pytest.mark.parametrize("arch", ARCHS)
def test_vector_add_compiles_to_a_code_object(arch):
    needs_toolchain(arch)
    code = compile_hip((KERNELS / "vector_add.hip").read_text(), arch)
    assert elf_mach(code) == (EM_AMDGPU, EF_AMDGPU_MACH[arch])
    text = disassemble(code, arch)
    assert "<vector_add>:" in text
    assert "v_add_f32" in text and "global_store_dword" in text


@pytest.mark.parametrize("arch", ARCHS)
def test_mfma_tile_uses_the_16x16x16_f16_mfma(arch):
    needs_toolchain(arch)
    code = compile_hip((KERNELS / "mfma_tile.hip").read_text(), arch)
    assert elf_mach(code) == (EM_AMDGPU, EF_AMDGPU_MACH[arch])
    text = disassemble(code, arch)
    assert "v_mfma" in text
    assert MFMA_F16[arch] in text


@pytest.mark.parametrize("arch", ARCHS)
def test_every_header_helper_compiles_with_its_instruction(arch):
    needs_toolchain(arch)
    source = (KERNELS / "headers.hip").read_text()
    text = disassemble(compile_hip(source, arch, {"flags": ["-Wall", "-Wextra", "-Werror"]}), arch)
    mnemonics = set(re.findall(r"^\s+(v_mfma\w+)", text, re.M))
    assert mnemonics == set(MFMA_ALL[arch])
    assert "s_trap" in text  # device_assert traps
    assert "global_atomic_smax" in text and "global_atomic_cmpswap" in text


def test_hipcc_builds_gfx90a_when_present():
    """Debian's hipcc (ROCm 5.2, clang 15) is a fallback for gfx90a; it knows no gfx942."""
    tc = find_toolchain("gfx90a", "hipcc")
    if tc is None:
        pytest.skip("hipcc is not installed (optional: apt-get install hipcc)")
    code = compile_hip((KERNELS / "headers.hip").read_text(), "gfx90a", {"compiler": "hipcc"})
    assert set(re.findall(r"^\s+(v_mfma\w+)", disassemble(code, "gfx90a"), re.M)) == set(MFMA_ALL["gfx90a"])
    if find_toolchain("gfx942", "hipcc") is None:
        with pytest.raises(HIPToolchainError, match=r"builds gfx942.*hipcc \(clang 1[0-6]\)"):
            compile_hip("", "gfx942", {"compiler": "hipcc"})


def test_floor_division_follows_python_on_the_host(tmp_path):
    """tl_floordiv/tl_floormod/tl_ceildiv are __host__ __device__: check them against Python."""
    tc = find_toolchain("gfx942")
    if tc is None or tc.is_hipcc:
        pytest.skip("needs clang >= 17 with the HIP headers: run scripts/install_hip_toolchain.sh")
    source = tmp_path / "floordiv.hip"
    source.write_text(
        '#include "tl_hip_common.h"\n#include <cstdio>\n'
        "int main() {\n"
        "  for (long long a = -9; a <= 9; ++a)\n"
        "    for (long long b : {-4LL, -3LL, -1LL, 1LL, 2LL, 5LL})\n"
        '      printf("%lld %lld %lld %lld %lld\\n", a, b, tl_floordiv(a, b), tl_floormod(a, b),\n'
        "             tl_ceildiv(a, b));\n"
        "}\n"
    )
    exe = tmp_path / "floordiv"
    subprocess.run([tc.compiler, "-x", "hip", "--cuda-host-only", "--offload-arch=gfx942",
                    f"--rocm-path={tc.rocm_path}", "-std=c++17", "-I", str(hip_compile.INCLUDE_DIR),
                    str(source), "-o", str(exe)], check=True, capture_output=True)
    rows = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    for row in filter(None, rows):
        a, b, q, r, c = map(int, row.split())
        assert (q, r, c) == (a // b, a % b, -(-a // b)), row


def test_gfx942_device_library_overlay(tmp_path):
    """Older device libraries (Debian 12's ROCm 5.2) lack oclc_isa_version_942.bc: we add it."""
    tc = find_toolchain("gfx942")
    if tc is None or tc.is_hipcc:
        pytest.skip("no clang for gfx942 here: run scripts/install_hip_toolchain.sh")
    libs = Path(hip_compile._device_libs_for(tc, "gfx942"))
    made = libs / "oclc_isa_version_942.bc"
    assert made.is_file() and (libs / "ocml.bc").is_file()
    if libs != Path(tc.device_lib_path):
        assert libs.is_relative_to(tmp_path / "cache")
        text = subprocess.run([tc.tool("llvm-dis"), str(made), "-o", "-"], capture_output=True, text=True).stdout
        assert "@__oclc_ISA_version = " in text and "constant i32 9402" in text
        assert hip_compile._device_libs_for(tc, "gfx942") == str(libs)  # laid once, then found


def test_syntax_error_names_the_line_and_reproduces(tmp_path):
    needs_toolchain("gfx942")
    source = '#include "tl_hip_common.h"\nextern "C" __global__ void broken(float* a) {\n  a[0] = 1.0f\n}\n'
    with pytest.raises(CompileError) as info:
        compile_hip(source, "gfx942", {"line_map": {3: ("my_kernel.py", 12)}})
    message = str(info.value)
    assert "expected ';'" in message
    assert "kernel.hip:3: a[0] = 1.0f" in message
    assert "(from my_kernel.py:12)" in message
    kept = Path(info.value.source_path)
    assert kept.is_file() and kept.read_text() == source
    assert f"generated source kept at {kept}" in message
    assert "reproduce: " in message and info.value.lines == [3]
    repro = subprocess.run(shlex.split(message.rsplit("reproduce: ", 1)[1]), capture_output=True, text=True)
    assert repro.returncode != 0 and "expected ';'" in repro.stderr


def test_successful_compile_leaves_no_files(tmp_path):
    needs_toolchain("gfx90a")
    compile_hip((KERNELS / "vector_add.hip").read_text(), "gfx90a")
    assert not list(tmp_path.glob("tilelang-hip-*"))
    compile_hip((KERNELS / "vector_add.hip").read_text(), "gfx90a", {"keep_files": True})
    assert [p.name for p in tmp_path.glob("tilelang-hip-*/kernel.hip")] == ["kernel.hip"]


def test_concurrent_compiles_do_not_collide():
    needs_toolchain("gfx942")
    needs_toolchain("gfx90a")
    sources = [(KERNELS / name).read_text() for name in ("vector_add.hip", "mfma_tile.hip")]
    jobs = [(src, arch) for src in sources for arch in ARCHS] * 2
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        codes = list(pool.map(lambda job: compile_hip(*job), jobs))
    assert all(elf_mach(code)[1] == EF_AMDGPU_MACH[arch] for code, (_, arch) in zip(codes, jobs))


def test_options_are_strict():
    with pytest.raises(ValueError, match="unknown HIP compile option.*'optimize'.*compiler"):
        compile_hip("", "gfx942", {"optimize": 3})
    with pytest.raises(ValueError, match="list of strings"):
        compile_hip("", "gfx942", {"flags": "-O2"})
    with pytest.raises(ValueError, match="unknown HIP arch 'gfx803'; valid: gfx90a, gfx942, gfx950, gfx1100"):
        compile_hip("", "gfx803")


def test_missing_compiler_says_how_to_install():
    with pytest.raises(HIPToolchainError, match="install_hip_toolchain.sh"):
        compile_hip("", "gfx942", {"compiler": "/nonexistent/clang-19"})


def test_cache_key_names_toolchain_headers_and_flags():
    key = hip_compile.cache_key("gfx942")
    assert "headers " in key and "flags=" in key
    assert hip_compile.cache_key("gfx942", {"fast_math": True}) != key
    if find_toolchain("gfx942") is not None:
        assert "clang version" in hip_compile.toolchain_version("gfx942")
    else:
        assert hip_compile.toolchain_version("gfx942") == "gfx942: none"


def test_module_cli_reproduces_a_compile(tmp_path):
    needs_toolchain("gfx942")
    out = tmp_path / "k.hsaco"
    proc = subprocess.run([sys.executable, "-m", "tilelang_hip.compile", str(KERNELS / "mfma_tile.hip"),
                           "--arch", "gfx942", "-o", str(out), "--disassemble"],
                          capture_output=True, text=True, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    assert MFMA_F16["gfx942"] in proc.stdout and out.read_bytes()[:4] == b"\x7fELF"


# ---------------------------------------------------------------------------------------------
# hiprtc, through a stand-in for hip-python's module (no ROCm here)
# ---------------------------------------------------------------------------------------------


class FakeHiprtc:
    """Mimics hip-python's hiprtc: (error, values...) tuples, bytearray out-parameters."""

    def __init__(self, fail: bool = False):
        self.fail = fail
        self.options: list[bytes] = []
        self.destroyed = False

    def hiprtcCreateProgram(self, src, name, num_headers, headers, names):
        self.source = src
        return 0, "prog"

    def hiprtcCompileProgram(self, prog, count, options):
        assert count == len(options)
        self.options = options
        return (6 if self.fail else 0,)

    def hiprtcGetProgramLogSize(self, prog):
        return 0, 32 if self.fail else 0

    def hiprtcGetProgramLog(self, prog, log):
        text = b"kernel.hip:2:1: error: boom\0"
        log[: len(text)] = text

    def hiprtcGetCodeSize(self, prog):
        return 0, 8

    def hiprtcGetCode(self, prog, code):
        code[:] = b"\x7fELFcode"

    def hiprtcDestroyProgram(self, prog):
        self.destroyed = True
        return (0,)


def test_hiprtc_is_preferred_when_it_loads(monkeypatch):
    fake = FakeHiprtc()
    monkeypatch.setattr(hip_compile, "_hiprtc", lambda: (fake, "6.4"))
    assert compile_hip("int x;\n", "gfx942") == b"\x7fELFcode"
    assert b"--offload-arch=gfx942" in fake.options and f"-I{hip_compile.INCLUDE_DIR}".encode() in fake.options
    assert fake.destroyed
    assert hip_compile.toolchain_version("gfx942") == "gfx942: hiprtc 6.4"


def test_hiprtc_failure_is_a_compile_error(monkeypatch):
    monkeypatch.setattr(hip_compile, "_hiprtc", lambda: (FakeHiprtc(fail=True), "6.4"))
    with pytest.raises(CompileError) as info:
        compile_hip("int x;\nbroken here\n", "gfx90a")
    message = str(info.value)
    assert "hiprtc 6.4" in message and "error: boom" in message
    assert "kernel.hip:2: broken here" in message
    assert "-m tilelang_hip.compile" in message and "--compiler hiprtc" in message


def test_asking_for_hiprtc_without_it_is_clear(monkeypatch):
    monkeypatch.setattr(hip_compile, "_hiprtc", lambda: None)
    with pytest.raises(HIPToolchainError, match="hiprtc does not load here"):
        compile_hip("", "gfx942", {"compiler": "hiprtc"})

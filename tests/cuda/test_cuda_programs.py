"""Every program of the CUDA test set (`export_programs.PROGRAMS`: the examples, the language
test programs, GEMMs in every dtype and transpose, reductions, cumsum, atomics, symbolic dims,
T.print / T.device_assert) compiles through `tilelang_core.compile` for sm_80 and sm_90a with
NVRTC, no GPU needed; tensor cores reach the SASS; a toolchain error names the generated line
and the user's; exports load without TVM.

One test per (program, arch), each a fraction of a second, so `-n 2` spreads them evenly; the
whole file takes well under two minutes on two cores.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tilelang_core
from tilelang_core import language as T
from tilelang_core.runtime import CompileError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import export_programs  # noqa: E402  (tests/cuda/export_programs.py, also a script)

ELF_MAGIC = b"\x7fELF"
ARCHS = ("sm_80", "sm_90a")
PROGRAMS = export_programs.programs()


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_compiles(name, arch):
    program = PROGRAMS[name]
    kernel = tilelang_core.compile(program.build(), out_idx=list(program.out_idx) or None,
                                   target=f"cuda/{arch}")
    assert kernel.meta.target == f"cuda/{arch}" and kernel.meta.extra["language"] == "cuda"
    # a function of several launches has a binary and a meta per launch
    launches = kernel.meta.launches or (kernel.meta,)
    binaries = kernel.binary if kernel.meta.launches else (kernel.binary,)
    assert len(binaries) == len(launches)
    for meta, binary in zip(launches, binaries):
        assert binary[:4] == ELF_MAGIC
        threads = 1
        for extent in meta.block:
            threads *= extent
        assert 0 < threads <= 1024
        assert meta.shared_memory <= (166912 if arch == "sm_80" else 232448)
        # `(threads, 1)` where a loading warpgroup hands its registers over (setmaxnreg)
        source = kernel.get_kernel_source()
        assert any(f'extern "C" __global__ void __launch_bounds__({threads}{bound}) {meta.entry}(' in source
                   for bound in ("", ", 1"))


@pytest.mark.parametrize("dtype,instruction", [("float16", "HMMA"), ("bfloat16", "HMMA")])
def test_sm80_gemm_runs_on_tensor_cores(dtype, instruction):
    from tests.run import kernels
    from tilelang_cuda.compile import disassemble

    kernel = tilelang_core.compile(kernels.gemm(128, 128, 64, 64, 64, 32, dtype, "float32", "float32"),
                                   target="cuda/sm_80")
    sass = disassemble(kernel.binary)
    assert "code for sm_80" in sass
    assert instruction in sass, "T.gemm on 16-bit inputs should become mma.sync (HMMA) on sm_80"


def bad_extern():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(128):
                B[i] = T.call_extern("float32", "tl_no_such_function", A[i])  # marker: bad extern

    return main


def test_toolchain_error_names_the_generated_and_the_users_line():
    with pytest.raises(CompileError) as caught:
        tilelang_core.compile(bad_extern(), target="cuda/sm_80")
    message = str(caught.value)
    user_line = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                     if "marker: bad extern" in text and "tl_no_such_function" in text)
    assert 'identifier "tl_no_such_function" is undefined' in message
    assert "Offending generated line(s):" in message
    assert "B[tx] = tl_no_such_function(A[tx]);" in message
    # the kernel's own line or its T.Parallel loop's (the lowering keeps the loop's span)
    assert f"(from {__file__}:{user_line})" in message or f"(from {__file__}:{user_line - 1})" in message
    assert "Reproduce with nvcc:" in message


def test_exports_load_without_tvm(tmp_path):
    """export_programs.py writes loadable exports; run_exported.py loads them with TVM blocked
    and, without a GPU, says so and exits 2 (with one, it runs them and must pass)."""
    from tilelang_cuda.runtime import device_available

    names = ["lang_symbolic_copy", "gemm_bfloat16_NT", "reduce_sum_dim0_accumulate", "print_and_assert",
             "multi_launch_decode_float16"]
    export_programs.export_all(tmp_path, "sm_90a", names, verbose=False)
    for name in names:
        files = {p.name for p in (tmp_path / name).iterdir()}
        binaries = {"decode_launch0.bin", "decode_launch1.bin"} if name.startswith("multi_launch") else {"kernel.bin"}
        assert {"kernel.json", "kernel.src", "case.json", "arg0.npy"} | binaries <= files
    done = subprocess.run([sys.executable, str(HERE / "run_exported.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TILELANG_BACKENDS": "cpu"})  # no entry point: registers itself
    output = done.stdout + done.stderr
    assert f"loaded {len(names)} of {len(names)} exports" in output, output
    if device_available()[0]:
        assert done.returncode == 0, output
    else:
        assert done.returncode == 2 and "no GPU" in output, output


def test_compare_checks_every_element():
    import numpy as np

    ref = np.array([1.0, -2.0, np.inf, 4.0])
    assert export_programs.compare(ref + 1e-7, ref, 1e-5, 1e-5)[0]
    ok, detail = export_programs.compare(np.array([1.0, -2.0, np.inf, 4.1]), ref, 1e-5, 1e-5)
    assert not ok and "first at (3,)" in detail
    assert not export_programs.compare(np.array([1.0, np.nan, np.inf, 4.0]), ref, 1e-5, 1e-5)[0]
    assert not export_programs.compare(np.array([1.0, -2.0, -np.inf, 4.0]), ref, 1e-5, 1e-5)[0]

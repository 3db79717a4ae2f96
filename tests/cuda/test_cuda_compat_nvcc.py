"""TileLang's `tilelang.contrib.nvcc` and `tilelang.carver.arch.driver.cuda_driver` as the CUDA
backend provides them (`tilelang_cuda.compat.nvcc`, `tilelang_cuda.carver_driver`)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tilelang_cuda.compat import nvcc

KERNEL = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n'


def test_arch_spellings():
    assert nvcc._arch("9.0") == "sm_90" and nvcc._arch(80) == "sm_80" and nvcc._arch("sm_90a") == "sm_90a"
    assert nvcc._arch("-arch=sm_89") == "sm_89"


def test_only_cubins():
    with pytest.raises(ValueError, match="target_format='ptx' is not supported"):
        nvcc.compile_cuda(KERNEL, target_format="ptx", arch="sm_80")


def test_version_and_cubin_when_a_toolchain_is_here(tmp_path):
    try:
        major, minor = nvcc.get_cuda_version()
    except RuntimeError as exc:
        pytest.skip(f"no CUDA toolchain here: {exc}")
    assert major >= 11 and minor >= 0
    out = tmp_path / "k.cubin"
    binary = nvcc.compile_cuda(KERNEL, arch="sm_80", path_target=str(out))
    assert binary[:4] == b"\x7fELF" and out.read_bytes() == binary


def test_tilelang_paths():
    code = textwrap.dedent("""
        import json
        from tilelang_core.compat import install
        install()
        from tilelang.contrib import nvcc
        import tilelang.contrib.nvcc as nvcc_again
        from tilelang.carver.arch.driver.cuda_driver import get_num_sms
        from tilelang.carver.arch.driver import get_num_sms as from_package
        print(json.dumps([nvcc.__name__, nvcc_again is nvcc, get_num_sms is from_package]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["tilelang_cuda.compat.nvcc", True, True]


def test_target_compute_version_as_tilelang_spells_it():
    """TileLang's GQA backward examples check `float(nvcc.get_target_compute_version()) >= 9.0`."""
    assert nvcc.get_target_compute_version("sm_90a") == "9.0"
    assert nvcc.get_target_compute_version("cuda/sm_86") == "8.6"
    assert nvcc.get_target_compute_version(type("Target", (), {"arch": "sm_120"})()) == "12.0"


def test_carver_cuda_device_facts_for_a_roofline(monkeypatch):
    """`CUDA("cuda")` (TileLang's `tilelang.carver.arch.CUDA`, read by its analyze examples):
    bandwidth from the memory clock and bus width, the generation's peak, the SM count."""
    from types import SimpleNamespace

    from tilelang_cuda import carver_arch

    props = SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132,
                            shared_memory_per_block_optin=232448)
    monkeypatch.setattr(carver_arch.driver, "get_cuda_device_properties", lambda device_id=0: props)
    attributes = {36: 3_201_000, 37: 6144}  # kHz, bits: the H200's HBM3e
    monkeypatch.setattr(carver_arch.driver, "get_device_attribute", lambda attr, device_id=0: attributes[attr])
    device = carver_arch.CUDA("cuda")
    assert device.compute_capability == "90" and device.sm_count == 132
    assert abs(device.bandwidth[1] - 2 * 3_201_000e3 * 6144 / 8 / 1e6) < 1  # ~4.9 TB/s in MB/s
    assert device.peak_tflops == round(7.49 * 132, 1)
    monkeypatch.setattr(carver_arch.driver, "get_cuda_device_properties", lambda device_id=0: None)
    with pytest.raises(RuntimeError, match="no CUDA device"):
        carver_arch.CUDA("cuda")

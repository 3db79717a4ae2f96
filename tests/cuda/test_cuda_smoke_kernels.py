"""The smoke-kernel bundle the lead carries to a GPU machine: built here without a GPU,
readable there with only torch + cuda-python."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from smoke_kernels import build, smoke_metas
from tilelang_core.runtime import KernelMeta

HERE = Path(__file__).resolve().parent


def test_build_writes_cubins_and_metas(tmp_path):
    written = {p.name for p in build(tmp_path, "sm_90a", with_nvcc=False)}
    assert {"smoke.cubin", "smoke.cu", "tl_smoke_axpby.json", "tl_smoke_gemm.json", "tl_smoke_fault.json"} <= written
    assert (tmp_path / "smoke.cubin").read_bytes()[:4] == b"\x7fELF"
    for entry, meta in smoke_metas("sm_90a").items():
        loaded = KernelMeta.from_json((tmp_path / f"{entry}.json").read_text())
        assert loaded == meta
        assert loaded.target == "cuda/sm_90a"


def test_symbols_are_the_trailing_params():
    # tilelang_core's Kernel appends bound symbols after the user's arguments
    for meta in smoke_metas("sm_80").values():
        names = [p.name for p in meta.params]
        assert names[len(names) - len(meta.symbols):] == list(meta.symbols)


def test_gemm_asks_for_opt_in_shared_memory():
    assert smoke_metas("sm_90a")["tl_smoke_gemm"].shared_memory > 48 * 1024


def test_gpu_smoke_script_skips_cleanly_without_a_device(tmp_path):
    from tilelang_cuda.runtime import device_available

    if device_available()[0]:
        return  # test_cuda_runtime.py runs it for real
    build(tmp_path, "sm_90a", with_nvcc=False)
    done = subprocess.run([sys.executable, str(HERE / "gpu_smoke.py"), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "SKIP: no usable CUDA device" in done.stdout


def test_carried_bundle_is_complete():
    bundle = HERE / "data" / "smoke_sm_90a"
    assert (bundle / "smoke.cubin").read_bytes()[:4] == b"\x7fELF"
    for entry in smoke_metas("sm_90a"):
        assert KernelMeta.from_json((bundle / f"{entry}.json").read_text()) == smoke_metas("sm_90a")[entry]

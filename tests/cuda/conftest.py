"""Fixtures of the CUDA backend's tests: the hand-written kernels, nvcc, and the skip of
`@pytest.mark.gpu` tests where no device answers (a failed cuInit is a skip, never an
error). NVRTC is a dependency of tilelang-cuda: compile tests fail, not skip, without it."""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parent / "kernels"


@functools.lru_cache(maxsize=None)
def _device() -> tuple[bool, str]:
    from tilelang_cuda.runtime import device_available

    return device_available()


@pytest.fixture(autouse=True)
def _skip_without_gpu(request):
    if request.node.get_closest_marker("gpu") is not None:
        available, why = _device()
        if not available:
            pytest.skip(f"needs a CUDA GPU: {why}")


@pytest.fixture(scope="session")
def nvcc_path() -> str:
    """nvcc, the optional fallback compiler; tests of it skip where there is none."""
    from tilelang_cuda.compile import _find_tool

    path = _find_tool("nvcc")
    if path is None:
        pytest.skip("no nvcc here (the fallback compiler is optional)")
    return path


@pytest.fixture(scope="session")
def smoke_source() -> str:
    return (KERNELS / "smoke.cu").read_text()


@pytest.fixture(scope="session")
def headers_source() -> str:
    return (KERNELS / "headers.cu").read_text()


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory, monkeypatch):
    """Kept copies of failed sources go to a temporary cache, not the user's."""
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))

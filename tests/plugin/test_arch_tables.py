"""The CUDA and HIP capability tables: a tensor-core path only where the arch has it."""
from __future__ import annotations

import pytest

from tilelang_cuda.target import CUDA_ARCHS, arch_for_compute_capability
from tilelang_hip.target import HIP_ARCHS


def families(caps) -> set[str]:
    return {m.family for m in caps.matrix_instructions}


def test_cuda_matrix_families_follow_the_arch():
    assert families(CUDA_ARCHS["sm_70"]) == families(CUDA_ARCHS["sm_75"]) == set()  # SIMT gemm
    for arch in ("sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_100a", "sm_120"):
        assert families(CUDA_ARCHS[arch]) == {"mma.sync"}, arch  # wgmma is sm_90a only
    assert families(CUDA_ARCHS["sm_90a"]) == {"mma.sync", "wgmma"}
    assert not CUDA_ARCHS["sm_75"].has("cp.async") and CUDA_ARCHS["sm_80"].has("cp.async")
    assert not CUDA_ARCHS["sm_70"].supports_dtype("bfloat16")
    assert CUDA_ARCHS["sm_89"].supports_dtype("float8_e4m3fn") and not CUDA_ARCHS["sm_86"].supports_dtype("float8_e4m3fn")


@pytest.mark.parametrize("capability,arch", [
    ((7, 0), "sm_70"), ((7, 2), "sm_70"), ((7, 5), "sm_75"), ((8, 0), "sm_80"), ((8, 6), "sm_86"),
    ((8, 7), "sm_87"), ((8, 9), "sm_89"), ((9, 0), "sm_90a"), ((10, 0), "sm_100a"), ((10, 3), "sm_100"),
    ((12, 0), "sm_120"), ((12, 1), "sm_120"), ((6, 1), None), ((11, 0), None),
])
def test_a_device_gets_the_arch_whose_code_runs_on_it(capability, arch):
    assert arch_for_compute_capability(*capability) == arch


def test_hip_cdna_has_mfma_and_wave64_rdna_is_simt_wave32():
    for arch in ("gfx90a", "gfx942", "gfx950"):
        assert families(HIP_ARCHS[arch]) == {"mfma"} and HIP_ARCHS[arch].warp_size == 64
    for arch in ("gfx1100", "gfx1101", "gfx1200", "gfx1201"):
        assert families(HIP_ARCHS[arch]) == set() and HIP_ARCHS[arch].warp_size == 32
    assert HIP_ARCHS["gfx950"].shared_memory_optin == 160 * 1024

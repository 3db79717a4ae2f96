"""Parsing targets, their errors, and capability queries."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tilelang_core.plugin import Target, TargetError, get_plugin_manager


@pytest.mark.parametrize("spec,kind,arch", [
    ("cuda/sm_90a", "cuda", "sm_90a"),
    ("cuda/sm_80", "cuda", "sm_80"),
    ("cuda", "cuda", "sm_90a"),
    ("hip/gfx942", "hip", "gfx942"),
    ("hip/gfx90a", "hip", "gfx90a"),
])
def test_parse(spec, kind, arch):
    target = Target.parse(spec)
    assert (target.kind, target.arch) == (kind, arch)
    assert str(target) == f"{kind}/{arch}"
    assert target.capabilities.kind == kind and target.capabilities.arch == arch


def test_cpu_host_alias_and_auto(fresh_manager):
    host = Target.parse("cpu")
    assert Target.parse("cpu/host").arch == host.arch
    assert host.capabilities.execution_model == "block-serial"
    # no GPU on CI machines: auto falls back to the CPU, which is always last
    auto = get_plugin_manager().parse_target("auto")
    assert auto.kind in get_plugin_manager().registry.kinds


def test_default_target_env(monkeypatch, fresh_manager):
    monkeypatch.setenv("TILELANG_TARGET", "hip/gfx90a")
    assert str(get_plugin_manager().parse_target(None)) == "hip/gfx90a"


def test_unknown_kind_lists_valid_kinds():
    with pytest.raises(TargetError) as err:
        Target.parse("vulkan/foo")
    msg = str(err.value)
    assert "'vulkan'" in msg and "cuda" in msg and "hip" in msg and "cpu" in msg


def test_unknown_arch_lists_valid_archs():
    with pytest.raises(TargetError) as err:
        Target.parse("cuda/sm_61")
    msg = str(err.value)
    assert "'sm_61'" in msg and "sm_70" in msg and "sm_80" in msg and "sm_90a" in msg


def test_options_are_kept():
    target = Target.parse("cuda/sm_80", options={"fast_math": True})
    assert target.option("fast_math") is True
    assert target.option("missing", 3) == 3


def test_capabilities_cuda():
    caps = Target.parse("cuda/sm_90a").capabilities
    assert caps.warp_size == 32
    assert caps.has_matrix("wgmma") and caps.has_matrix("mma.sync")
    assert caps.matrix("mma.sync").supports("float16", "float32")
    assert caps.has_copy_engine("tma") and caps.has_copy_engine("cp.async")
    assert caps.has_barrier("mbarrier")
    assert caps.shared_memory_optin > caps.shared_memory_static
    sm80 = Target.parse("cuda/sm_80").capabilities
    assert not sm80.has_matrix("wgmma") and not sm80.has_copy_engine("tma")
    assert not sm80.supports_dtype("float8_e4m3fn")
    assert Target.parse("cuda/sm_89").capabilities.supports_dtype("float8_e4m3fn")


def test_capabilities_hip_wavefront_64():
    for arch in ("gfx90a", "gfx942"):
        caps = Target.parse(f"hip/{arch}").capabilities
        assert caps.warp_size == 64
        assert caps.has_matrix("mfma")
        assert caps.matrix("mfma").scope == "wavefront"
    assert (16, 16, 32) in Target.parse("hip/gfx942").capabilities.matrix("mfma").shapes


def test_capabilities_cpu_vector_width_from_host():
    from tilelang_cpu.target import host_arch, host_features

    caps = Target.parse("cpu").capabilities
    assert caps.arch == host_arch()
    flags = host_features()
    if "avx512f" in flags:
        assert caps.vector_bytes == 64
    elif "avx2" in flags:
        assert caps.vector_bytes == 32
    assert caps.supports_atomic("atomic_add.float32")


def test_capabilities_are_frozen_and_refinable():
    caps = Target.parse("cuda/sm_90a").capabilities
    with pytest.raises(Exception):
        caps.warp_size = 64  # type: ignore[misc]
    refined = caps.refine(processor_count=114)
    assert refined.processor_count == 114 and refined.refined_from_device
    assert caps.processor_count == 132
    assert caps.schema_version >= 1
    assert caps.has("tma") and caps.has("float16") and not caps.has("mfma")


def test_cli_info():
    out = subprocess.run([sys.executable, "-m", "tilelang_core.cli.main", "info", "cuda/sm_90a"],
                         capture_output=True, text=True, check=True).stdout
    assert "wgmma" in out and "227 KiB" in out and "132" in out
    out = subprocess.run([sys.executable, "-m", "tilelang_core.cli.main", "info", "hip/gfx942"],
                         capture_output=True, text=True, check=True).stdout
    assert "mfma" in out and "64" in out
    bad = subprocess.run([sys.executable, "-m", "tilelang_core.cli.main", "info", "cuda/sm_61"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "Valid archs for cuda" in bad.stderr

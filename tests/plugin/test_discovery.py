"""Backends are found through real installed entry points, one by one."""
from __future__ import annotations

import json
import subprocess
import sys

import os
from pathlib import Path

import pytest

from tilelang_core.plugin import get_plugin_manager

# A backend whose import raises, visible as a distribution (a .dist-info with an entry point)
# only to the tests that put this folder on sys.path: it is never installed into the venv,
# so `tilelang backends` of a developer's checkout shows no fixture.
BROKEN_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "broken_backend"


@pytest.fixture
def broken_backend_on_path(monkeypatch, fresh_manager):
    monkeypatch.syspath_prepend(str(BROKEN_FIXTURE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(BROKEN_FIXTURE),
                                                                   os.environ.get("PYTHONPATH")])))


def test_installed_backends_load(fresh_manager):
    manager = get_plugin_manager()
    for name in ("cpu", "cuda", "hip"):
        info = manager.backends[name]
        assert not info.broken, info.error
        assert info.distribution == f"tilelang-{name}"
        assert info.version == "0.2.0"
        assert info.kinds == [name]
    assert set(manager.registry.kinds) >= {"cpu", "cuda", "hip"}


def test_broken_backend_is_listed_and_others_work(broken_backend_on_path):
    manager = get_plugin_manager()
    broken = manager.backends["broken_fixture"]
    assert broken.broken
    assert "libfake_vendor_runtime.so" in broken.error
    assert broken.distribution == "tilelang-broken-fixture"
    # the others still declare their targets
    assert str(manager.parse_target("cuda/sm_90a")) == "cuda/sm_90a"


def test_import_never_breaks_and_loads_no_backend():
    code = (
        "import sys, tilelang_core;"
        "bad=[m for m in sys.modules if m.startswith(('tvm','tilelang_cpu','tilelang_cuda','tilelang_hip','cuda','torch','pluggy'))];"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_backends_filter_env(monkeypatch, fresh_manager):
    monkeypatch.setenv("TILELANG_BACKENDS", "cpu,cuda")
    manager = get_plugin_manager()
    assert set(manager.backends) == {"cpu", "cuda"}
    assert "hip" not in manager.registry.kinds


def test_fixture_backend_is_not_installed_in_this_environment(fresh_manager):
    assert "broken_fixture" not in get_plugin_manager().backends


def test_cli_backends_json_shows_broken_and_usable(broken_backend_on_path):
    out = subprocess.run([sys.executable, "-m", "tilelang_core.cli.main", "backends", "--json"],
                         capture_output=True, text=True, check=True)
    data = {b["backend"]: b for b in json.loads(out.stdout)["backends"]}
    assert data["broken_fixture"]["status"] == "broken"
    assert data["cpu"]["status"] == "loaded"
    usable = {t["target"]: t["usable"] for t in data["cpu"]["targets"]}
    assert "device found" in usable.values()
    cuda = {t["target"]: t for t in data["cuda"]["targets"]}
    assert set(cuda) == {f"cuda/{arch}" for arch in ("sm_70", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90",
                                                     "sm_90a", "sm_100", "sm_100a", "sm_120")}
    assert all(t["reason"] for t in cuda.values())
    hip = {t["target"] for t in data["hip"]["targets"]}
    assert hip == {f"hip/{arch}" for arch in ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1200", "gfx1201")}


def test_cli_backends_table_names_every_backend(broken_backend_on_path):
    out = subprocess.run([sys.executable, "-m", "tilelang_core.cli.main", "backends"],
                         capture_output=True, text=True, check=True)
    for word in ("tilelang-cpu", "tilelang-cuda", "tilelang-hip", "broken", "cuda/sm_90a", "hip/gfx942"):
        assert word in out.stdout


def test_auto_names_a_gpu_it_cannot_use_when_it_falls_back_to_the_cpu(fresh_manager, monkeypatch):
    from tilelang_core.plugin import Detection, UnusableDeviceWarning
    from tilelang_cuda import detect as cuda_detect

    monkeypatch.setattr(cuda_detect, "_query_device", lambda: (
        None, None, "NVIDIA GeForce GTX 1080 (sm_61): tilelang-cuda has no arch whose code runs on compute "
                    "capability 6.1", True))
    found = cuda_detect.detect()
    assert all(not d.device and "GTX 1080" in d.unusable_device for d in found)
    manager = get_plugin_manager()
    manager._detections = [*found, Detection("cpu", "x86-64", device=True, toolchain=True, reason="host")]
    with pytest.warns(UnusableDeviceWarning, match=r"picked cpu/x86-64, but this machine has NVIDIA GeForce GTX 1080 "
                                                   r"\(sm_61\).*Name a target"):
        assert str(manager.best_detected_target()) == "cpu/x86-64"

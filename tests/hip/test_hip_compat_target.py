"""TileLang's `tilelang.rocm.target` as the HIP backend provides it (`tilelang_hip.compat.target`)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tilelang_core import get_plugin_manager
from tilelang_hip.compat import target as rocm


def test_arch_names_and_wavefronts():
    assert rocm.normalize_rocm_arch("gfx1151:sramecc+:xnack-") == "gfx1151"
    assert rocm.normalize_rocm_arch("gfx90a") == "gfx90a"
    assert rocm.normalize_rocm_arch("sm_90") is None and rocm.normalize_rocm_arch("") is None
    assert [rocm.rocm_warp_size_for_arch(a) for a in ("gfx1030", "gfx1151", "gfx1200", "gfx942", "gfx90a")] == \
        [32, 32, 32, 64, 64]
    with pytest.raises(ValueError, match="'sm_90' is not an AMD arch"):
        rocm.rocm_warp_size_for_arch("sm_90")


def test_targets_of_every_spelling():
    ours = get_plugin_manager().parse_target("hip/gfx942")
    assert rocm.target_get_mcpu(ours) == "gfx942" and rocm.target_is_cdna(ours) and not rocm.target_is_rdna(ours)
    assert rocm.target_get_warp_size(ours) == 64 and rocm.target_get_rdna_generation(ours) is None

    class TVMStyle:  # what a tvm.target.Target offers: attrs with "mcpu"
        attrs = {"mcpu": "gfx1100:xnack-"}

    assert rocm.target_get_rdna_generation(TVMStyle()) == 11 and rocm.target_get_warp_size(TVMStyle()) == 32
    assert isinstance(rocm.check_hip_availability(), bool)


def test_tilelang_path():
    code = textwrap.dedent("""
        import json
        from tilelang_core.compat import install
        install()
        from tilelang.rocm.target import normalize_rocm_arch
        import tilelang.rocm
        print(json.dumps([normalize_rocm_arch.__module__, tilelang.rocm.__name__]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["tilelang_hip.compat.target", "tilelang_hip.compat"]

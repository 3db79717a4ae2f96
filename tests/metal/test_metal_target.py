"""The Metal targets and their capability tables, as the core reads them."""
from __future__ import annotations

import pytest

from tilelang_core.plugin import TargetError, get_plugin_manager


def caps(arch):
    return get_plugin_manager().parse_target(f"metal/{arch}").capabilities


def test_archs_and_default():
    manager = get_plugin_manager()
    assert str(manager.parse_target("metal")) == "metal/apple-m2"
    for arch in ("apple-m1", "apple-m2", "apple-m3", "apple-m4", "apple-m5"):
        c = caps(arch)
        assert (c.warp_size, c.max_threads_per_block, c.shared_memory_static) == (32, 1024, 32 * 1024)
        assert c.matrix("simdgroup").shapes == ((8, 8, 8),) and c.matrix("simdgroup").scope == "simdgroup"
        assert "float64" not in c.dtypes and "printf" not in c.features and "device_assert" not in c.features
    with pytest.raises(TargetError):
        manager.parse_target("metal/apple-a7")


def test_bfloat_from_m2_and_tensor_ops_named_on_m5():
    assert "bfloat16" not in caps("apple-m1").dtypes
    assert caps("apple-m2").matrix("simdgroup").supports("bfloat16", "float32")
    assert caps("apple-m1").extra["msl_version_needed"] == "3.0"
    assert "not used" in caps("apple-m5").extra["tensor_ops"] and caps("apple-m4").extra["tensor_ops"] == "none"

"""The disk-cache key covers the owning backend's own files: a changed lowering in a backend
never hits kernels its old code built."""
from __future__ import annotations

import os
import sys

from tilelang_core.jit.cache import package_fingerprint, source_fingerprint


def test_a_changed_backend_file_changes_the_fingerprint(tmp_path):
    pkg = tmp_path / "toy_backend_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text("X = 1\n")
    (pkg / "lower.py").write_text("def lower(): return 1\n")
    before = source_fingerprint(pkg)
    (pkg / "lower.py").write_text("def lower(): return 22\n")
    os.utime(pkg / "lower.py", ns=(1, 1))
    assert source_fingerprint(pkg) != before
    sys.path.insert(0, str(tmp_path))
    try:
        assert package_fingerprint("toy_backend_pkg.plugin") == source_fingerprint(pkg)
    finally:
        sys.path.remove(str(tmp_path))


def test_the_target_hooks_put_the_backend_fingerprint_in_the_key():
    from tilelang_core.jit.options import CompileOptions
    from tilelang_core.plugin import get_plugin_manager, hooks_for

    parts = hooks_for(get_plugin_manager().parse_target("cpu")).cache_key(CompileOptions())
    assert parts[0].startswith("backend:") and len(parts[0]) > len("backend:")

"""TileLang's top-level conveniences at the paths its programs use (`tilelang.cdiv`,
`tilelang.DataType`, `tilelang.layout.make_swizzled_layout`, ...) and
`tilelang.language.fp8`."""
from __future__ import annotations

import pytest

import tilelang_core as tilelang


def test_small_helpers():
    assert tilelang.cdiv(7, 2) == 4 and tilelang.cdiv(8, 2) == 4
    assert tilelang.next_power_of_2(33) == 64 and tilelang.next_power_of_2(1) == 1
    assert tilelang.DataType("float16").bits == 16 and tilelang.DataType("int8").bits == 8


def test_layout_names_and_classes():
    from tilelang_core.language import layout as language_layout

    assert tilelang.layout.make_swizzled_layout is language_layout.make_swizzled_layout
    assert tilelang.Layout is language_layout.Layout and tilelang.Fragment is language_layout.Fragment
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        tilelang.layout.nonsense  # noqa: B018


def test_cache_switch_and_profiler():
    from tilelang_core.runtime.profiler import Profiler

    assert tilelang.Profiler is Profiler
    was = tilelang.is_cache_enabled()
    try:
        tilelang.disable_cache()
        assert not tilelang.is_cache_enabled()
        tilelang.enable_cache()
        assert tilelang.is_cache_enabled()
    finally:
        (tilelang.enable_cache if was else tilelang.disable_cache)()


def test_fp8_type_follows_the_default_targets_capabilities(monkeypatch):
    from tilelang_core.language import fp8

    monkeypatch.setattr(fp8, "_default_target_dtypes", lambda: ("float16", "float8_e4m3fnuz", "float8_e5m2fnuz"))
    assert fp8.determine_fp8_type() == "float8_e4m3fnuz" and fp8.determine_fp8_type("e5m2") == "float8_e5m2fnuz"
    monkeypatch.setattr(fp8, "_default_target_dtypes", lambda: ("float16", "float8_e4m3fn", "float8_e5m2"))
    assert fp8.determine_fp8_type() == "float8_e4m3fn" and fp8.determine_fp8_type("e5m2") == "float8_e5m2"
    monkeypatch.setattr(fp8, "_default_target_dtypes", lambda: ())
    assert fp8.determine_fp8_type() == "float8_e4m3fn"
    with pytest.raises(ValueError, match="'e4m3' or 'e5m2'"):
        fp8.determine_fp8_type("e3m4")


def test_dtype_as_torch():
    torch = pytest.importorskip("torch")
    from tilelang_core import language as T

    assert T.dtype("float8_e4m3fn").as_torch() is torch.float8_e4m3fn
    assert T.float16.as_torch() is torch.float16 and T.dtype("int4").as_torch() is torch.int8


def test_renamed_tvm_classes_keep_their_old_names_under_the_aliasing(tmp_path):
    import subprocess
    import sys

    program = tmp_path / "prog.py"
    program.write_text("from tvm import tirx\nimport tvm\nassert tirx.PrimExpr is tvm.ir.Expr\nprint('ok')\n")
    done = subprocess.run([sys.executable, "-m", "tilelang_core.compat.run", str(program)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_tvm_is_an_attribute_and_stays_out_of_star_imports():
    import tvm

    assert tilelang.tvm is tvm  # TileLang's `tilelang.tvm.tirx.FloatImm(...)`
    assert "tvm" not in tilelang.__all__
